# Per-host mode, first host: an ordinary policy with the built-in Nomad
# target scales group "front" to the first host's count. Use this pair of
# policies (web-first.hcl, web-second.hcl) or split/web.hcl for a job, never
# both: point the agent's policy dir at one of the two folders.
scaling "web-first" {
  enabled = true
  type    = "horizontal"
  min     = 0
  max     = 48

  policy {
    evaluation_interval = "10s"
    cooldown            = "30s"

    check "activation" {
      strategy "activation-quota" {
        role = "first"
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
      Group = "front"
    }
  }
}
