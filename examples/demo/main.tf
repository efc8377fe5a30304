# The demo: two bundled host observations made from real usage series
# (first-host.json, second-host.json: an hour of one-minute samples each),
# the container counts the activation method gives for them at plan time,
# and a Nomad jobspec with one task group per host whose counts come from
# the data source. `make demo` runs `tofu plan` and `tofu apply` on a copy
# of this directory.
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
  jobspec = templatefile("${path.module}/web.nomad.hcl.tftpl", {
    job = "web"
    groups = [
      {
        name       = "pool-a"
        node       = local.first.host
        containers = local.counts.first_containers
        cpu_mhz    = local.first.replica_cpu_demand_mhz
        memory_mb  = local.first.replica_memory_demand_mb
        reason     = local.counts.first_decision.reason
      },
      {
        name       = "pool-b"
        node       = local.second.host
        containers = local.counts.second_containers
        cpu_mhz    = local.second.replica_cpu_demand_mhz
        memory_mb  = local.second.replica_memory_demand_mb
        reason     = local.counts.second_decision.reason
      },
    ]
    models = "${data.activation_model.admission.name} ${data.activation_model.admission.digest}, ${data.activation_model.capacity.name} ${data.activation_model.capacity.digest}"
  })
}

# Apply records the rendered jobspec (a real setup would hand it to the
# Nomad provider's nomad_job resource or to `nomad job run`).
resource "terraform_data" "jobspec" {
  input = local.jobspec
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

output "jobspec" {
  value = terraform_data.jobspec.output
}
