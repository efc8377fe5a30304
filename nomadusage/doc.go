// Package nomadusage reads a Nomad node's real usage through the Nomad API
// (github.com/hashicorp/nomad/api) and turns it into an engine.Observation.
//
// # One read
//
//	r, err := nomadusage.Read(ctx, client, nomadusage.Query{
//		Host:  nomadusage.HostSelector{Name: "host-a"}, // or NodeID, or Pool and/or Class
//		Job:   "web", Group: "front",                  // optional: whose usage
//		Namespace: "default",                          // optional: the job's namespace
//	})
//	obs := r.Observation // one usage sample
//
// A Reader remembers a name/pool/class selector's node for ResolveTTL (the
// node itself is read on every call). The host selector must name exactly
// one node: NodeID alone, or any of
// Name, Pool and Class (all that are set must match). None set is
// ErrNoSelector; no match ErrNodeNotFound; several ErrAmbiguous (the error
// lists them); a node that is not "ready" ErrNodeNotReady.
//
// What the observation holds:
//   - CPUCapacityMHz, MemoryCapacityMB: the node's NodeResources less its
//     ReservedResources.
//   - With a Job: one sample, the sum over the job/group's running
//     allocations on the node (from the job's allocation list) of allocation stats (CpuStats.TotalTicks in
//     MHz; MemoryStats.RSS, or Usage when RSS is 0, in MB);
//     RequestedCPUMHz/MemoryMB: the sum of those allocations' allocated
//     resources (the group's request for a stub that carries none); RunningReplicas: how many there are; replica demand: the
//     query's, or else the task group's request (sum over its tasks). An
//     unknown job or group is ErrJobNotFound; a job with several groups
//     needs Group.
//   - Without a Job: one sample of the node's client stats
//     (CPUTicksConsumed, Memory.Used), requests and replicas over every
//     running allocation on the node; ReplicaCPUDemandMHz is then required.
//   - Host: the query's Label, or the node's name. WantedReplicas: passed
//     through.
//
// Errors wrap context (which node, which allocation) and either one of the
// sentinel errors above or the API client's error, so callers can test
// api.UnexpectedResponseError's StatusCode (403 for a refused token, 5xx).
// The package never logs and never puts the token in an error.
//
// # A window of reads
//
// A Window accumulates one host's readings (Add) into the usage window the
// engine wants (Observation(now)): a ring of at most Size samples, none
// older than MaxAge; ErrEmpty before the first reading and a *StaleError
// (errors.Is(err, ErrStale)) when even the newest sample is too old. Keep
// one Window per host. See Window for how replica-count changes and
// same-second reads are handled.
package nomadusage
