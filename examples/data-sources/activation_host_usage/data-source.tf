# The root module names the provider's source in required_providers (see the
# provider's page): without it OpenTofu looks for hashicorp/activation.
# Read the real usage of the "web" job's task groups on two Nomad nodes
# (the provider's nomad block, or NOMAD_ADDR/NOMAD_TOKEN, says where Nomad is),
# and feed the observations straight into activation_container_counts.
data "activation_host_usage" "first" {
  node_name = "pool-a-1"
  job       = "web"
  group     = "front"

  # Nomad keeps no usage history: read 6 samples, 5 seconds apart (a
  # decision needs min_samples of them, 3 by default).
  samples                 = 6
  sample_interval_seconds = 5

  # Allocations younger than this, or with no CPU ticks yet, are warming:
  # counted at the warm replicas' usage, never at zero (default "2m", as
  # the activation-quota strategy; "0s" turns the rule off).
  warmup = "90s"

  # The whole read, waits included, may take at most this long (default:
  # 2 minutes plus the longest the waits between samples can take).
  timeouts {
    read = "3m"
  }
}

data "activation_host_usage" "second" {
  node_pool  = "batch"
  node_class = "large" # pool and class must select exactly one node
  job        = "web"
  group      = "back"
  samples    = 3
}

data "activation_container_counts" "web" {
  first  = data.activation_host_usage.first.observation
  second = data.activation_host_usage.second.observation
}

# One data source per node of a pool: every instance shares the provider's
# one Nomad connection, and a node is found by a server-side filter.
data "activation_host_usage" "pool" {
  for_each = toset(["pool-b-1", "pool-b-2", "pool-b-3"])

  node_name = each.key
  job       = "web"
  group     = "back"
  samples   = 3
}

# A count for each node of the pool. activation_container_counts decides a
# first and a second host together; for a capacity read of each node alone,
# pass its observation as both and read the second host's count (the first
# host's is then the same node's admission read, which this ignores). An
# observation with wanted_replicas set is a first host's: the second host
# refuses it.
data "activation_container_counts" "per_node" {
  for_each = data.activation_host_usage.pool

  first  = each.value.observation
  second = each.value.observation
}

output "back_containers_per_node" {
  value = { for node, c in data.activation_container_counts.per_node : node => c.second_containers }
}
