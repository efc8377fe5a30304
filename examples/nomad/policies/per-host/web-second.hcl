# Per-host mode, second host: group "back" gets the second host's count.
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

        first_node_pool  = "activation-first"
        first_group      = "front"
        second_node_pool = "activation-second"
        second_group     = "back"

        max_scale_up   = "4"
        max_scale_down = "25%"
      }
    }

    target "nomad-target" {
      Job   = "web"
      Group = "back"
    }
  }
}
