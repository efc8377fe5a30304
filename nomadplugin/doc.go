// Package nomadplugin holds the two Nomad Autoscaler (v0.4.6 plugin SDK)
// plugins of the activation method:
//
//   - Strategy, served as "activation-quota" (cmd/activation-quota): reads
//     the first and second host's real usage through the Nomad API (package
//     nomadusage) or the check's APM metrics, keeps a usage window per host,
//     makes one engine.DecideRequest call per evaluation and returns the
//     first host's count, the second's, or their sum with both in the
//     action's meta (role "first", "second" or "split").
//   - Target, served as "host-quota" (cmd/host-quota): applies a split to a
//     job's two task groups, honouring the agent's final count.
//
// Configuration keys are the Key*, Prefix* and TargetKey* constants; meta
// keys the Meta* constants. docs/nomad/activation-quota.md and
// docs/nomad/host-quota.md describe every key with its default.
package nomadplugin
