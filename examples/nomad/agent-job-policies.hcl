# Nomad Autoscaler agent (v0.4.6) reading the scaling policies from the
# jobspecs (web-with-policy.nomad.hcl) through its Nomad policy source, with
# no policy files. Run it as agent.hcl (which says more), from this
# directory:
#
#   nomad-autoscaler agent -config agent-job-policies.hcl
#
# The agent evaluates every enabled scaling policy of its namespace
# (NOMAD_NAMESPACE, or the nomad block's namespace): jobs scaled by other
# agents belong in another namespace. The agent's token also needs
# list-scaling-policies and read-scaling-policy on that namespace, to list
# and read the policies (see acl-policy.hcl).

log_level  = "INFO"
plugin_dir = "./plugins"

nomad {
  # address = "https://nomad.example.com:4646"
}

policy {
  source "nomad" {
    enabled = true
  }
  default_evaluation_interval = "10s"
  default_cooldown            = "30s"
}

strategy "activation-quota" {
  driver = "activation-quota"
  # With policies in jobspecs, whoever may submit a job writes its checks'
  # model paths, read with the agent's rights: to use model files, keep
  # them in one directory and confine the checks to it.
  # config = {
  #   model_dir = "/etc/nomad-autoscaler/models"
  # }
}

target "host-quota" {
  driver = "host-quota"
}
