# Per-host mode, first host: group "front" gets the first host's count.
# Use this pair of policies (web-first.hcl, web-second.hcl) or
# split/web.hcl for a job, never both: point the agent's policy dir at one
# of the two folders.
#
# A per-host check reads and decides its own host only. The host-quota
# target in single-group mode (group = "...") writes the count with a
# check-and-set scale request (a job changed since the strategy read it is
# not overwritten) and reports the group's desired count, queued
# allocations included. The built-in "nomad-target" also works, but it has
# no check-and-set and reports the running count: a count Nomad could not
# place in full then stays queued (docs/nomad/host-quota.md).
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

        first_node_pool = "activation-first"
        first_group     = "front"
        first_max       = "48"

        # A limit down (max_scale_down) keeps replicas on a host whose usage
        # bursts; unset, a scale-down is not limited (docs/nomad/activation-quota.md).
        max_scale_up   = "4"
        max_scale_down = "25%"

        # The models' own output thresholds (margin 0) meet no violation
        # budget: a margin of m logits keeps about m/10 of the host free
        # (above 0 stricter). `activation simulate --traces DIR` on your own
        # usage series prints the margins that meet a budget; in the
        # project's held-out replay one margin of 0.375 to 0.75, by family,
        # chosen in hindsight and without step limits, held each host within
        # 1%; step limits need their own (docs/nomad/activation-quota.md,
        # `margin`).
        # first_margin = "0.75"
      }
    }

    target "host-quota" {
      job   = "web"
      group = "front"
    }
  }
}
