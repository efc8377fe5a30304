// Package nomadusage reads Nomad nodes' real usage through the Nomad API
// (github.com/hashicorp/nomad/api) and turns it into engine.Observations.
//
// # One evaluation: ReadHosts
//
//	rd := &nomadusage.Reader{Client: conn.Client()}
//	rs, err := rd.ReadHosts(ctx, []nomadusage.Query{
//		{Host: nomadusage.HostSelector{Name: "host-a"}, Job: "web", Group: "front"},
//		{Host: nomadusage.HostSelector{Pool: "second"}, Job: "web", Group: "back"},
//	}, nomadusage.Options{Concurrency: 32, Warmup: 2 * time.Minute})
//
// ReadHosts reads every host of one evaluation at once: per job one job
// read and one allocation listing shared by its hosts, per host one node
// read and (at most once per Options.NodeCacheTTL, one listing per node for
// every group a Reader reads there) the node's allocations,
// and per running allocation of the host's group one stats read, at most
// Options.Concurrency in flight. A host whose share of answered stats reads
// is below Options.MinAnswered fails the call (ErrTooFewAnswered); above
// it, the answered ones stand for the rest. Query.NoStats reads no usage
// from Nomad (usage from an APM). A node's state (down, draining, ineligible) is
// reported in Reading.Node, never refused: the caller decides what it
// allows. See ReadHosts for the details.
//
// # One host: Read
//
//	r, err := nomadusage.Read(ctx, client, nomadusage.Query{
//		Host:  nomadusage.HostSelector{Name: "host-a"}, // or NodeID, or Pool, Class, Datacenter
//		Job:   "web", Group: "front",                  // optional: whose usage
//		Namespace: "default",                          // optional: the job's namespace
//	})
//	obs := r.Observation // one usage sample
//
// Read reads one host and refuses a node that is not ready
// (ErrNodeNotReady). It has two modes, one function each: with a job, the
// group's allocation stats (the ReadHosts path for one host); without, the
// node's client stats (CPUTicksConsumed, Memory.Used) and every running
// allocation on it, ReplicaCPUDemandMHz then required.
//
// # Host selectors
//
// NodeID reads GET /v1/node/:id, and Name, Pool, Class and Datacenter
// given with it are conditions the node must meet. Without it they
// become one server-side filter expression on GET /v1/nodes
// (`Name == "host-a" and NodePool == "edge"`), so Nomad, not the client,
// scans the nodes; exactly one node must match (ErrNodeNotFound,
// ErrAmbiguous listing them, ErrNoSelector). A Reader remembers a
// selector's node for ResolveTTL and reads that node directly while the
// entry is fresh; a stale or no longer matching entry is refreshed on use.
//
// What an observation holds:
//   - CPUCapacityMHz, MemoryCapacityMB: the node's NodeResources less its
//     ReservedResources.
//   - With a job: one sample, the usage of the group's running allocations
//     on the node (CpuStats.TotalTicks in MHz; MemoryStats.RSS, or Usage
//     when RSS is 0, in MB); RequestedCPUMHz/MemoryMB their allocated
//     resources; RunningReplicas how many there are, WarmingReplicas how
//     many of those are warming (Options.Warmup); OtherReservedCPUMHz and
//     OtherReservedMemoryMB what every other allocation placed on the node
//     (pending or running, until its client reports it terminal) reserves:
//     other jobs, this job's other groups, and this group's allocations
//     that Nomad is stopping (still running through their shutdown_delay),
//     as the job's allocation list, read at every evaluation, tells, or
//     that list leaves out as an earlier registration of the job (purged
//     and registered again). The group's pending allocations are neither:
//     they are among the replicas its count asks for. They come from the node's allocation list
//     (GET /v1/node/:id/allocations, remembered for NodeCacheTTL by group,
//     so one listing serves every group read on the node), the one
//     listing that carries allocations' resources: Nomad's job allocation
//     list answers stubs without them. The token sees only the allocations
//     of namespaces it may read-job: give it read-job on every namespace
//     whose allocations share the hosts, or their reservations are missed.
//     The replica demand is the query's, else the task group's request.
//     The reading adds the job's JobModifyIndex, the group's count and one
//     replica's reservation.
//   - Without a job: one sample of the node's client stats (none with
//     Query.NoStats); RunningReplicas and the requests over every running
//     allocation on the node; what pending and stopping ones reserve is
//     OtherReservedCPUMHz/MemoryMB.
//   - Host: the query's Label, or the node's name. WantedReplicas and
//     QueuedReplicas: passed through.
//
// Errors wrap context (which node, which allocation, which read) and
// either one of the sentinel errors above or the API client's error, so
// callers can test api.UnexpectedResponseError's StatusCode (403 for a
// refused token, 5xx) and context.DeadlineExceeded. The package never logs
// and never puts the token in an error.
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
