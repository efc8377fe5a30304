# Per-host mode, second host: group "back" gets the second host's count
# (see web-first.hcl).
scaling "web-second" {
  enabled = true
  type    = "horizontal"
  min     = 0
  max     = 48

  policy {
    evaluation_interval = "10s"
    cooldown            = "30s"

    check "activation" {
      strategy "activation-quota" {
        role = "second"
        job  = "web"

        second_node_pool = "activation-second"
        second_group     = "back"
        second_max       = "48"

        # A limit down (max_scale_down) keeps replicas on a host whose usage
        # bursts; unset, a scale-down is not limited (docs/nomad/activation-quota.md).
        max_scale_up   = "4"
        max_scale_down = "25%"
      }
    }

    target "host-quota" {
      job   = "web"
      group = "back"
    }
  }
}
