# Nomad ACL policy for the autoscaler agent's token when it runs the
# activation plugins (docs/nomad/host-quota.md#the-nomad-acl-policy-the-plugins-need):
#
#   nomad acl policy apply -description "nomad-autoscaler with activation plugins" \
#     activation-autoscaler acl-policy.hcl
#   nomad acl token create -name nomad-autoscaler -policy activation-autoscaler
#
# Replace "default" with the namespace of the jobs the policies scale.

# The scaled job's namespace: read the job, its allocations, their stats and
# its deployments (read-job), its scaling status (read-job-scaling); write
# the scaling events and single-group mode's counts (scale-job) and split
# mode's one job register (submit-job).
namespace "default" {
  capabilities = ["read-job", "read-job-scaling", "scale-job", "submit-job"]
  # With the policies in the jobspecs (agent-job-policies.hcl), the agent
  # lists and reads them too:
  # capabilities = ["read-job", "read-job-scaling", "scale-job", "submit-job",
  #                 "list-scaling-policies", "read-scaling-policy"]
}

# Every namespace whose allocations share the two hosts: what they reserve
# there. Nomad leaves the allocations the token may not read out of a
# node's allocation list, and the placement estimate would miss their
# reservations. A glob covers them all; a list of namespaces works too.
namespace "*" {
  capabilities = ["read-job"]
}

# The hosts: node reads and the nodes' client stats.
node {
  policy = "read"
}
