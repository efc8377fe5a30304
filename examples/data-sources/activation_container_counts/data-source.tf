# Counts from two host observations. Each observation has the engine's JSON
# shape, so it can come from a file, from activation_host_usage, or be
# written inline as here.
data "activation_container_counts" "pools" {
  first = {
    host                   = "pool-a-1"
    cpu_capacity_mhz       = 20000
    memory_capacity_mb     = 65536
    requested_cpu_mhz      = 12000
    requested_memory_mb    = 3072
    running_replicas       = 6
    replica_cpu_demand_mhz = 2000
    usage_samples = [
      { time = 1700000000, cpu_mhz = 2300, memory_mb = 3000 },
      { time = 1700000060, cpu_mhz = 2600, memory_mb = 3010 },
      { time = 1700000120, cpu_mhz = 2450, memory_mb = 3020 },
    ]
  }

  # Or an observation in a file, for example written by a monitoring export
  # (the JSON of an engine observation: the same attribute names).
  second = jsondecode(file(var.second_host_file))

  # Optional: models and quotas for each host.
  second_model = "builtin:capacity"
  first_quota  = { min = 1, max = 24 }
  second_quota = { min = 0, max = 12, per_branch = 0.5, rounding = "floor" }
}

output "first_containers" {
  value = data.activation_container_counts.pools.first_containers
}

output "second_containers" {
  value = data.activation_container_counts.pools.second_containers
}

output "why" {
  value = data.activation_container_counts.pools.explanation
}

variable "second_host_file" {
  type        = string
  description = "Path of the second host's observation, in JSON."
}
