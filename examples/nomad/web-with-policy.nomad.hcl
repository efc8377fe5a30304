# Job "web" with its scaling policy in the jobspec, read by the agent's
# Nomad policy source (agent-job-policies.hcl) instead of a policy file: the
# same job as web.nomad.hcl and the same split policy as
# policies/split/web.hcl, in the scaling block of the first host's group.
#
# What differs from a policy file:
#  - The check needs `source` (and no `query`): the agent's Nomad policy
#    source refuses a check with neither ("strategy requires a query"), and
#    with a query it would run that query every evaluation, and skip the
#    check when it returns nothing; the strategy reads usage from Nomad and
#    does not use it. "nomad-apm" is the agent's built-in APM.
#  - Numbers may be written as numbers: the agent hands them to the
#    plugins as text ("60", "0.5").
#  - The target takes the job and the group from where the block sits (the
#    agent's Job and Group keys): only the second host's group is named.
#  - The second group's scaling block is disabled and has no policy: Nomad
#    still bounds its count to [min, max]; an enabled block without a policy
#    fails the agent's validation.
#
# After an edit, run the job with `nomad job run -preserve-counts` (a plain
# run sets both groups back to count = 2) and check the agent's log: a
# policy that fails its validation is logged once ("policy validation
# failed") and the last valid version keeps running. Nomad 1.10.2 and later
# disable a job's scaling policies while it is stopped; running it again
# enables them.
job "web" {
  type      = "service"
  node_pool = "all"

  update {
    max_parallel      = 1
    min_healthy_time  = "5s"
    healthy_deadline  = "1m"
    progress_deadline = "2m"
    auto_revert       = false
  }

  group "front" {
    count = 2

    constraint {
      attribute = "${node.pool}"
      value     = "activation-first"
    }

    scaling {
      enabled = true
      min     = 0
      max     = 96 # the split's sum: first_max + second_max

      policy {
        evaluation_interval = "10s"
        cooldown            = "30s"

        check "activation" {
          source = "nomad-apm"

          strategy "activation-quota" {
            role = "split"
            job  = "web"

            first_node_pool  = "activation-first"
            first_group      = "front"
            second_node_pool = "activation-second"
            second_group     = "back"

            window      = 60
            max_age     = "15m"
            min_samples = 3
            warmup      = "2m"

            # A limit down (max_scale_down) keeps replicas on a host whose usage
            # bursts; unset, a scale-down is not limited (docs/nomad/activation-quota.md).
            max_scale_up   = 4
            max_scale_down = "25%"
            hysteresis     = 2

            placement = "cap"

            first_max       = 48
            second_max      = 48
            second_rounding = "floor"
          }
        }

        target "host-quota" {
          second_group = "back"
          first_max    = 48
          second_max   = 48
        }
      }
    }

    task "app" {
      driver = "docker"
      config {
        image = "nginx:1.27"
      }
      resources {
        cpu    = 2000 # MHz: the replica demand the strategy uses by default
        memory = 512
      }
    }
  }

  group "back" {
    count = 2

    constraint {
      attribute = "${node.pool}"
      value     = "activation-second"
    }

    scaling {
      enabled = false
      min     = 0
      max     = 48
    }

    task "app" {
      driver = "docker"
      config {
        image = "nginx:1.27"
      }
      resources {
        cpu    = 2000
        memory = 512
      }
    }
  }
}
