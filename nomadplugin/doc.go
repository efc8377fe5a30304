// Package nomadplugin holds the two Nomad Autoscaler (v0.4.6 plugin SDK)
// plugins of the activation method, thin adapters over one engine call:
//
//   - Strategy, served as "activation-quota" (cmd/activation-quota): reads
//     the hosts' real usage in one nomadusage ReadHosts call (both hosts
//     for role "split", the role's host for role "first" or "second"; or
//     the check's APM metrics), keeps a usage window per host, makes one
//     engine.Decide call per evaluation, limits each host's count
//     (placement, node state, engine.Steps) and returns the first host's
//     count, the second's, or their sum with both in the action's meta.
//   - Target, served as "host-quota" (cmd/host-quota): in split mode
//     applies a split to a job's two task groups in one check-and-set job
//     register of the job as Nomad answered it, each group within its
//     host's quota, honouring the agent's final count; in single-group mode
//     applies a per-host count to one group with a check-and-set scale
//     request. Its Status reports the groups' desired counts.
//
// Both connect to Nomad through internal/nomadconn, from the agent's
// nomad_* settings as the SDK's sdk/helper/nomad reads them; Nomad's
// answers are redacted there, once, and the target redacts the action it
// writes. Configuration keys are the Key*, Prefix*, PluginKey* and
// TargetKey* constants; meta keys the Meta* constants. docs/nomad/
// describes every key with its default.
package nomadplugin
