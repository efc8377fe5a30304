# Split mode: one policy scales both groups of job "web". The strategy
# returns first + second; the host-quota target applies each count to its
# group. Set the policy's max to first_max + second_max and its min within
# [first_min + second_min, max] (here max 96, min 0; a lower max would undo
# a split that keeps the sum, whose first step raises it): when the
# agent clamps the sum, the target splits the clamped sum in proportion,
# keeping each group within its host's quota; a sum no split can reach is
# refused and changes nothing. The target sets both groups in one job
# register under check-and-set, the job otherwise as Nomad has it: a change
# made to the job since the strategy read it is never overwritten
# (docs/nomad/host-quota.md). The token needs submit-job on the job's
# namespace (acl-policy.hcl).
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

        window      = "60"
        max_age     = "15m"
        min_samples = "3"  # fewer samples keep the current count
        warmup      = "2m" # young replicas count at the warm ones' usage (when none is warm, at no less than their request) until then

        # At most 4 more or a quarter fewer per evaluation; hold a change
        # of one replica (hysteresis). A limit down keeps replicas running
        # on a host whose usage bursts (unset, a scale-down is not limited):
        # set one where stopping many replicas at once costs more than an
        # overloaded host (docs/nomad/activation-quota.md).
        max_scale_up   = "4"
        max_scale_down = "25%"
        hysteresis     = "2"

        # Never ask for more replicas than Nomad can place on a host, unless
        # a quota's min says more: the quota wins ("report" asks anyway and
        # says how many will queue).
        placement = "cap"

        # The models' own output thresholds (margin 0) meet no violation
        # budget: a margin of m logits keeps about m/10 of the host free
        # (above 0 stricter). `activation simulate --traces DIR` on your own
        # usage series prints the margins that meet a budget; in the
        # project's held-out replay one margin of 0.375 to 0.75, by family,
        # chosen in hindsight and without step limits, held each host within
        # 1%; step limits need their own (docs/nomad/activation-quota.md,
        # `margin`).
        # first_margin  = "0.75"
        # second_margin = "0.75"

        # A quota min of 0 lets a group stop when its replicas do not fit;
        # it then starts again only when the host has room for one at what
        # they used (the plugin logs "group stays at 0" at WARN): set
        # first_min / second_min to "1" to keep one running.
        first_max       = "48"
        second_max      = "48"
        second_rounding = "floor"
      }
    }

    target "host-quota" {
      job          = "web"
      first_group  = "front"
      second_group = "back"
      # Shadow mode: record decisions as scaling events, change nothing.
      dry_run      = "false"
      # The hosts' quotas for the agent's own actions (such as "current
      # count below the policy's min"), which carry none.
      first_max  = "48"
      second_max = "48"
    }
  }
}
