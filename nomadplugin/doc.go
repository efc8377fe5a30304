// Package nomadplugin holds the two Nomad Autoscaler (v0.4.6 plugin SDK)
// plugins of the activation method, thin adapters over one engine call:
//
//   - Strategy, served as "activation-quota" (cmd/activation-quota): reads
//     the first and second host's real usage in one nomadusage ReadHosts
//     call (or the check's APM metrics), keeps a usage window per host,
//     makes one engine.Decide call per evaluation, limits each host's count
//     (placement, node state, engine.Steps) and returns the first host's
//     count, the second's, or their sum with both in the action's meta
//     (role "first", "second" or "split").
//   - Target, served as "host-quota" (cmd/host-quota): applies a split to
//     a job's two task groups in one check-and-set job register, each group
//     within its host's quota, honouring the agent's final count.
//
// Both connect to Nomad through internal/nomadconn, and redact what they
// return and write once, at the plugin boundary. Configuration keys are
// the Key*, Prefix*, PluginKey* and TargetKey* constants; meta keys the
// Meta* constants. docs/nomad/ describes every key with its default.
package nomadplugin
