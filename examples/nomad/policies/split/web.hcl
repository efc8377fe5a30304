# Split mode: one policy scales both groups of job "web". The strategy
# returns first + second; the host-quota target applies each count to its
# group. Keep the policy's min/max within
# [first_min + second_min, first_max + second_max] (here [0, 96]): when the
# agent clamps the sum, the target splits the clamped sum in proportion,
# keeping each group within its host's quota; a sum no split can reach is
# refused and changes nothing.
scaling "web-split" {
  enabled = true
  type    = "horizontal"
  min     = 0
  max     = 96

  policy {
    evaluation_interval = "10s"
    cooldown            = "30s"

    check "activation" {
      strategy "activation-quota" {
        role = "split"
        job  = "web"

        first_node_pool  = "activation-first"
        first_group      = "front"
        second_node_pool = "activation-second"
        second_group     = "back"

        window  = "60"
        max_age = "15m"

        first_max         = "48"
        second_max        = "48"
        second_rounding   = "floor"
      }
    }

    target "host-quota" {
      job          = "web"
      first_group  = "front"
      second_group = "back"
      # Shadow mode: record decisions as scaling events, change nothing.
      dry_run      = "false"
    }
  }
}
