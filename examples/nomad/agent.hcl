# Nomad Autoscaler agent (v0.4.6) with the activation plugins. Run it from
# this directory: the agent reads plugin_dir and the policy dir below from
# its working directory, not from this file's.
#
#   make build        # at the repository's root: bin/activation-quota, bin/host-quota
#   cd examples/nomad
#   mkdir -p plugins && cp ../../bin/activation-quota ../../bin/host-quota plugins/
#   nomad-autoscaler agent -config agent.hcl
#
# The token is best given as NOMAD_TOKEN in the agent's environment (or
# -nomad-token); the plugins inherit it and never log it. acl-policy.hcl is
# the ACL policy it needs.

log_level  = "INFO"
plugin_dir = "./plugins"

nomad {
  # The agent takes NOMAD_ADDR (and NOMAD_TOKEN, NOMAD_CACERT, ...) from its
  # environment, and Nomad's default address without it; an address set here
  # wins over NOMAD_ADDR.
  # address = "https://nomad.example.com:4646"
}

policy {
  # File policies: the split mode (one policy, host-quota target in split
  # mode) in policies/split; the per-host mode (two policies, host-quota
  # target in single-group mode) in policies/per-host. Use one folder per
  # job, never both (host-quota warns when it sees both modes scale a group).
  dir                         = "./policies/split"
  default_evaluation_interval = "10s"
  default_cooldown            = "30s"

  # The jobspec's scaling blocks are disabled (enabled = false: these file
  # policies drive the groups, not the Nomad policy source), but Nomad still
  # enforces their min/max bounds on every scale request. To keep the policy
  # in the jobspec instead, see web-with-policy.nomad.hcl and
  # agent-job-policies.hcl. The Nomad policy source stays on here, as the
  # agent's default: it also picks up any enabled scaling block of the
  # namespace (a jobspec's policy and these files on one job would both
  # scale it).
}

strategy "activation-quota" {
  driver = "activation-quota"
}

target "host-quota" {
  driver = "host-quota"
  config = {
    # A Scale call's Nomad requests end within this (its scaling events
    # within request_timeout more; Status has its own status_timeout).
    scale_timeout = "20s"
    # Run inside a Nomad allocation? Ignore the task's own NOMAD_* (its
    # NOMAD_NAMESPACE, say): only the agent's nomad block applies.
    # ignore_env_vars = "true"
    # A proxy in front of Nomad that wants its own header:
    # "header.X-Proxy-Auth" = "..."
  }
}
