# The root module names the provider's source in required_providers (see the
# provider's page): without it OpenTofu looks for hashicorp/activation.
# Counts from two host observations. Each observation has the engine's JSON
# shape (but stopped_replicas, which the strategy alone keeps: a plan's
# reads last seconds), so it can come from a file, from
# activation_host_usage, or be written inline as here.
data "activation_container_counts" "pools" {
  first = {
    host                   = "pool-a-1"
    cpu_capacity_mhz       = 20000 # allocatable
    memory_capacity_mb     = 65536
    requested_cpu_mhz      = 12000
    requested_memory_mb    = 3072
    running_replicas       = 6
    warming_replicas       = 1 # just started: counts at the warm ones' usage
    replica_cpu_demand_mhz = 2000
    usage_samples = [
      { time = 1700000000, cpu_mhz = 2300, memory_mb = 3000 },
      { time = 1700000060, cpu_mhz = 2600, memory_mb = 3010 },
      { time = 1700000120, cpu_mhz = 2450, memory_mb = 3020 },
    ]
    # New replicas queued after the running ones, each with its own demand.
    queued_replicas = [
      { cpu_mhz = 2000, memory_mb = 512 },
      { cpu_mhz = 6000, memory_mb = 4096 },
    ]
    # What other jobs reserve on the host.
    other_reserved_cpu_mhz   = 4000
    other_reserved_memory_mb = 8192
  }

  # Or an observation in a file, for example written by a monitoring export
  # (the JSON of an engine observation: the same attribute names).
  second = jsondecode(file(var.second_host_file))

  # Optional: models, quotas (every field optional: the engine fills in
  # min 0, max the model's slots, per_branch 1, rounding nearest) and the
  # fewest samples a window must hold (default 3).
  second_model = "builtin:capacity"
  first_quota  = { min = 1, max = 24 }
  second_quota = { max = 12, per_branch = 0.5, rounding = "floor" }
  min_samples  = 3

  # Optional: also read each host's hold range (logits; 0 or unset: off).
  hold_band = 1

  # Optional: how cautious the counts are, in logits over the models' own
  # thresholds (above 0 stricter): `margin` for both hosts, or one per host
  # in its place. `activation simulate` on your own usage series prints the
  # margins that hold each host within a violation budget (these are the
  # held-out Bitbrains series' at 1%, a family the models never trained
  # on; docs/benchmarks.md).
  first_margin  = 0.125
  second_margin = 0.5
}

output "first_containers" {
  value = data.activation_container_counts.pools.first_containers
}

output "second_containers" {
  value = data.activation_container_counts.pools.second_containers
}

# What bounded each count, and a per-task reservation with which Nomad can
# place it (see the provider's operating mode).
output "first_host" {
  value = {
    limit     = data.activation_container_counts.pools.first_decision.limit
    refused   = data.activation_container_counts.pools.first_decision.refused
    evidence  = data.activation_container_counts.pools.first_decision.evidence.note
    placement = data.activation_container_counts.pools.first_decision.placement
  }
}

output "why" {
  value = data.activation_container_counts.pools.explanation
}

# With hold_band: a count already inside [hold.low, hold.high] may stay
# instead of following every small move; outside it, the count moves to the
# engine's (the Nomad strategy's hold_band).
output "first_count_held" {
  value = (
    var.first_current_count >= data.activation_container_counts.pools.first_decision.hold.low &&
    var.first_current_count <= data.activation_container_counts.pools.first_decision.hold.high
  ) ? var.first_current_count : data.activation_container_counts.pools.first_containers
}

variable "first_current_count" {
  type        = number
  description = "How many replicas the first host runs now."
}

variable "second_host_file" {
  type        = string
  description = "Path of the second host's observation, in JSON (examples/demo/second-host.json is one)."
}
