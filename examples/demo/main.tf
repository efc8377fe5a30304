# The demo: two bundled host observations made from real usage series
# (first-host.json, second-host.json: an hour of one-minute samples each,
# with each host's allocatable resources and, on the second, what other
# jobs reserve there), the container counts the activation method gives for
# them at plan time, and a Nomad jobspec with one task group per host whose
# count and per-task reservation come from the data source: reserve by real
# usage, gate the count by the activation engine, and Nomad can place every
# replica. `make demo` runs `tofu plan` and `tofu apply` on a copy of this
# directory.
terraform {
  required_providers {
    activation = {
      source = "activation-scheduler/activation"
    }
  }
}

provider "activation" {}

locals {
  first  = jsondecode(file("${path.module}/first-host.json"))
  second = jsondecode(file("${path.module}/second-host.json"))
}

data "activation_model" "admission" {
  source = "builtin:admission"
}

data "activation_model" "capacity" {
  source = "builtin:capacity"
}

data "activation_container_counts" "pools" {
  first  = local.first
  second = local.second

  # At least one replica on each pool, at most 24.
  first_quota  = { min = 1, max = 24 }
  second_quota = { min = 1, max = 24 }
}

locals {
  counts = data.activation_container_counts.pools
  # One task group per host: its count from the engine, its reservation
  # from the decision's placement (never more than today's, small enough
  # that count x reservation fits what the host has left).
  groups = [
    for g in [
      { name = "pool-a", node = local.first.host, decision = local.counts.first_decision },
      { name = "pool-b", node = local.second.host, decision = local.counts.second_decision },
      ] : {
      name          = g.name
      node          = g.node
      containers    = g.decision.containers
      cpu_mhz       = g.decision.placement.cpu_mhz
      memory_mb     = g.decision.placement.memory_mb
      memory_max_mb = g.decision.placement.memory_max_mb
      fits          = g.decision.placement.fits
      reason        = g.decision.reason
      placement = (g.decision.placement.fits
        ? "today's reservation places ${g.decision.placement.placeable}; this one places all ${g.decision.containers}"
      : "even Nomad's smallest reservation does not place all ${g.decision.containers}: lower the quota's max")
    }
  ]
  jobspec = templatefile("${path.module}/web.nomad.hcl.tftpl", {
    job    = "web"
    groups = local.groups
    models = "${data.activation_model.admission.name} ${data.activation_model.admission.digest}, ${data.activation_model.capacity.name} ${data.activation_model.capacity.digest}"
  })
}

# Apply records the rendered jobspec (a real setup would hand it to the
# Nomad provider's nomad_job resource or to `nomad job run`).
resource "terraform_data" "jobspec" {
  input = local.jobspec

  lifecycle {
    # placement.fits is false only when even Nomad's smallest reservation
    # times the count does not fit the host: such a count would leave
    # replicas queued, so it is refused here rather than handed to Nomad.
    precondition {
      condition     = alltrue([for g in local.groups : g.fits])
      error_message = "A count does not fit its host at any reservation: ${join("; ", [for g in local.groups : "${g.name}: ${g.placement}" if !g.fits])}."
    }
  }
}

output "first_containers" {
  description = "Containers for the first host (pool-a), from the admission processor's input layer."
  value       = local.counts.first_containers
}

output "second_containers" {
  description = "Containers for the second host (pool-b), from the capacity processor's output layer."
  value       = local.counts.second_containers
}

output "explanation" {
  value = local.counts.explanation
}

output "placement" {
  description = "Per host: the count, and the per-task reservation that lets Nomad place it."
  value = { for g in local.groups : g.node => {
    count = g.containers, cpu = g.cpu_mhz, memory = g.memory_mb, memory_max = g.memory_max_mb, fits = g.fits
  } }
}

output "jobspec" {
  value = terraform_data.jobspec.output
}
