# Job "web": group "front" runs on the first host, group "back" on the
# second, each pinned to its node pool by a constraint (create the pools and
# put one node in each: `nomad node pool apply`, client
# `node_pool = "activation-first"`; node_pool is a job-level setting, so the
# job runs in "all" and the groups choose with ${node.pool}).
#
# The scaling blocks bound each group's count: Nomad refuses any scale
# request outside [min, max], whoever sends it. Their policies are left
# empty here because the autoscaler's file policies (policies/) drive the
# groups; enable them only if you use the Nomad policy source instead.
job "web" {
  type      = "service"
  node_pool = "all"

  # Every count change starts a deployment (Nomad's default update strategy
  # when a job has none), and host-quota waits for it before the next
  # evaluation: keep it short. A count Nomad cannot place in full keeps its
  # deployment running until progress_deadline (10m by default).
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
