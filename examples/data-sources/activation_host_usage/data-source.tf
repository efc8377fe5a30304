# Read the real usage of the "web" job's task groups on two Nomad nodes
# (the provider's nomad block, or NOMAD_ADDR/NOMAD_TOKEN, says where Nomad is),
# and feed the observations straight into activation_container_counts.
data "activation_host_usage" "first" {
  node_name = "pool-a-1"
  job       = "web"
  group     = "front"

  # Nomad keeps no usage history: read 6 samples, 5 seconds apart.
  samples                 = 6
  sample_interval_seconds = 5
}

data "activation_host_usage" "second" {
  node_pool  = "batch"
  node_class = "large" # pool and class must select exactly one node
  job        = "web"
  group      = "back"
}

data "activation_container_counts" "web" {
  first  = data.activation_host_usage.first.observation
  second = data.activation_host_usage.second.observation
}
