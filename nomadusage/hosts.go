package nomadusage

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/nomad/api"
	"golang.org/x/sync/singleflight"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
)

// Options tune how ReadHosts (and a Reader's Read) read.
type Options struct {
	// Concurrency bounds the allocation stats reads in flight, over all the
	// hosts of one call; 0 is DefaultConcurrency.
	Concurrency int
	// MinAnswered is the share of a host's running allocations whose stats
	// must answer for the host to be read, in (0, 1]; 0 is
	// DefaultMinAnswered. Below it the read fails (ErrTooFewAnswered,
	// wrapping the first failure).
	MinAnswered float64
	// Warmup, when > 0, marks a running allocation as warming while it is
	// younger than Warmup (from its tasks' latest StartedAt, else its
	// CreateTime) or while its stats show no CPU ticks yet. 0 marks none.
	Warmup time.Duration
	// NodeCacheTTL is how long what other jobs reserve on a node is
	// remembered; 0 is DefaultNodeCacheTTL.
	NodeCacheTTL time.Duration
	// StatsSample bounds the stats reads per host: when a host runs more
	// allocations of the group, this many are drawn at random (a new draw
	// every call) and read, and the warm ones read stand for the warm ones
	// not read, as they do for allocations that did not answer. 0 is
	// DefaultStatsSample; set it above the allocations per host to read
	// every one.
	StatsSample int
}

// Defaults of Options.
const (
	DefaultConcurrency  = 32
	DefaultMinAnswered  = 0.8
	DefaultNodeCacheTTL = 30 * time.Second
	// DefaultStatsSample reads every allocation of a host up to 256 and a
	// random 256 of more: the standard error of the mean usage of 256
	// replicas of one group is a sixteenth of the spread between them, and
	// an evaluation's requests stop growing with the group.
	DefaultStatsSample = 256
	// MaxConcurrency bounds Options.Concurrency.
	MaxConcurrency = 1024
	// MaxStatsSample bounds Options.StatsSample.
	MaxStatsSample = 1 << 20
)

// Names of the options, as OptionError gives them.
const (
	OptionConcurrency  = "concurrency"
	OptionMinAnswered  = "min_answered"
	OptionWarmup       = "warmup"
	OptionNodeCacheTTL = "node_cache_ttl"
	OptionStatsSample  = "stats_sample"
)

// OptionError names the option that is out of range and why.
type OptionError struct {
	Option string
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrBadQuery, e.Option, e.Reason)
}

// Unwrap makes errors.Is(err, ErrBadQuery) true.
func (e *OptionError) Unwrap() error { return ErrBadQuery }

// Resolve fills the defaults and checks the ranges; the error is an
// *OptionError.
func (o Options) Resolve() (Options, error) {
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.MinAnswered == 0 {
		o.MinAnswered = DefaultMinAnswered
	}
	if o.NodeCacheTTL == 0 {
		o.NodeCacheTTL = DefaultNodeCacheTTL
	}
	if o.StatsSample == 0 {
		o.StatsSample = DefaultStatsSample
	}
	switch {
	case o.Concurrency < 1 || o.Concurrency > MaxConcurrency:
		return o, &OptionError{OptionConcurrency, fmt.Sprintf("is %d; it must be from 1 to %d", o.Concurrency, MaxConcurrency)}
	case !(o.MinAnswered > 0 && o.MinAnswered <= 1):
		return o, &OptionError{OptionMinAnswered, fmt.Sprintf("is %v; it must be a share > 0 and <= 1", o.MinAnswered)}
	case o.Warmup < 0:
		return o, &OptionError{OptionWarmup, fmt.Sprintf("is %s; it must not be negative", o.Warmup)}
	case o.NodeCacheTTL < 0:
		return o, &OptionError{OptionNodeCacheTTL, fmt.Sprintf("is %s; it must not be negative", o.NodeCacheTTL)}
	case o.StatsSample < 1 || o.StatsSample > MaxStatsSample:
		return o, &OptionError{OptionStatsSample, fmt.Sprintf("is %d; it must be from 1 to %d", o.StatsSample, MaxStatsSample)}
	}
	return o, nil
}

// ReadHosts reads several hosts at once, as one policy evaluation needs
// them, and returns one reading per query, in order. What it costs:
//
//   - per job (namespace and job shared by queries): one GET /v1/job/:job
//     and one GET /v1/job/:job/allocations, whatever the number of hosts;
//   - per host: one node read (GET /v1/node/:id, or a filtered
//     GET /v1/nodes), and, at most once per NodeCacheTTL per node
//     whatever the groups the Reader reads there (concurrent calls share
//     one listing), the node's allocations (GET /v1/node/:id/allocations:
//     what every allocation there but the group's own reserves, the job's
//     other groups included; the job's allocation list carries no
//     resources);
//   - per running allocation of the host's group, up to StatsSample of
//     them drawn at random: one GET /v1/client/allocation/:id/stats, at
//     most Concurrency in flight over all hosts (none with Query.NoStats);
//   - per host without a job: the node's allocations and, unless
//     Query.NoStats, its client stats (GET /v1/client/stats).
//
// Everything that does not depend on another answer is read at once: the
// job, its allocations and the nodes, then the hosts' stats.
//
// A node is read whatever its state (Reading.Node says it); ReadHosts never
// fails for a node that is down, draining or ineligible. A down or
// disconnected node's client answers no stats (Nomad: 404 "No path to
// node"), so none is read there: its reading has no usage sample and
// Reading.NoUsage says why. A host whose share
// of answered stats reads is below MinAnswered fails the call; above it,
// the sample extrapolates: the warm allocations that answered stand for
// the warm ones that did not, or were not drawn (Reading.StatsAsked,
// StatsAnswered).
//
// With Warmup set, warming allocations (young, or no CPU ticks yet) are
// counted in Observation.WarmingReplicas and their usage is left out of the
// sample while any allocation is warm, so that the engine's per-replica
// usage (the sample over the warm replicas) is the warm replicas' own;
// when every allocation is warming the sample is all of their usage.
//
// The first host that fails fails the call, and the reads still in flight
// are cancelled.
func (r *Reader) ReadHosts(ctx context.Context, qs []Query, opts Options) ([]*Reading, error) {
	if r.Client == nil {
		return nil, fmt.Errorf("%w: no Nomad API client", ErrBadQuery)
	}
	opts, err := opts.Resolve()
	if err != nil {
		return nil, err
	}
	hosts := make([]*hostRead, len(qs))
	for i := range qs {
		if err := qs[i].Validate(); err != nil {
			return nil, fmt.Errorf("host %s: %w", qs[i].Host, err)
		}
		hosts[i] = &hostRead{q: &qs[i]}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ev := r.newEvaluation(opts)
	ev.cancel = cancel
	type jobKey struct{ ns, job string }
	byJob := map[jobKey][]*hostRead{}
	var order []jobKey
	var wg sync.WaitGroup
	for _, h := range hosts {
		if h.q.Job == "" {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := r.node(ctx, h.q.Host)
				if err == nil {
					h.rd, err = r.readNodeUsage(ctx, n, h.q)
				}
				ev.done(h, err)
			}()
			continue
		}
		k := jobKey{h.q.Namespace, h.q.Job}
		if _, ok := byJob[k]; !ok {
			order = append(order, k)
		}
		byJob[k] = append(byJob[k], h)
	}
	for _, k := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev.readJobHosts(ctx, k.ns, k.job, byJob[k])
		}()
	}
	wg.Wait()
	out := make([]*Reading, len(hosts))
	for i, h := range hosts {
		out[i] = h.rd
	}
	if err := ev.firstErr(); err != nil {
		return nil, err
	}
	return out, nil
}

// evaluation is one call's shared state.
type evaluation struct {
	r      *Reader
	opts   Options
	sem    chan struct{}
	now    time.Time
	cancel context.CancelFunc

	mu    sync.Mutex
	first error
}

// newEvaluation starts an evaluation with resolved options.
func (r *Reader) newEvaluation(opts Options) *evaluation {
	return &evaluation{r: r, opts: opts, sem: make(chan struct{}, opts.Concurrency), now: r.now()}
}

// hostRead is one host's part of an evaluation.
type hostRead struct {
	q    *Query
	node *node
	rd   *Reading
	err  error
}

// done records a host's outcome; the first failure cancels the rest.
func (ev *evaluation) done(h *hostRead, err error) {
	if err == nil {
		return
	}
	h.err, h.rd = err, nil
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.first == nil {
		ev.first = err
		if ev.cancel != nil {
			ev.cancel()
		}
	}
}

func (ev *evaluation) firstErr() error {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.first
}

// readJobHosts reads the hosts of one job: the job, its allocation list and
// the hosts' nodes at once, then each host's group.
func (ev *evaluation) readJobHosts(ctx context.Context, ns, jobID string, hosts []*hostRead) {
	var (
		job             *api.Job
		stubs           []*api.AllocationListStub
		jobErr, listErr error
		wg              sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		jr := ev.readJob(ctx, ns, jobID)
		job, stubs, jobErr, listErr = jr.job, jr.stubs, jr.jobErr, jr.listErr
	}()
	nodeErr := make([]error, len(hosts))
	for i, h := range hosts {
		if h.node != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.node, nodeErr[i] = ev.r.node(ctx, h.q.Host)
		}()
	}
	wg.Wait()
	// The namespace looked in, named: one taken from NOMAD_NAMESPACE or a
	// provider default is otherwise invisible in a "not found".
	where := cmp.Or(ns, api.DefaultNamespace)
	switch {
	case jobErr != nil && nomadconn.IsStatus(jobErr, http.StatusNotFound):
		jobErr = fmt.Errorf("read job %q in namespace %q: %w: %w", jobID, where, ErrJobNotFound, jobErr)
	case jobErr != nil:
		jobErr = fmt.Errorf("read job %q in namespace %q: %w", jobID, where, jobErr)
	case listErr != nil:
		jobErr = fmt.Errorf("list allocations of job %q in namespace %q: %w", jobID, where, listErr)
	}
	if job != nil && job.Namespace != nil && *job.Namespace != "" {
		ns = *job.Namespace
	}
	for i, h := range hosts {
		if err := cmp.Or(nodeErr[i], jobErr); err != nil {
			ev.done(h, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			h.rd, err = ev.readGroup(ctx, h, job, ns, stubs)
			ev.done(h, err)
		}()
	}
	wg.Wait()
}

// jobRead is a job and its allocations' list, as readJob read them.
type jobRead struct {
	job             *api.Job
	stubs           []*api.AllocationListStub
	jobErr, listErr error
	// expired: the read failed, and ran out of the deadline of the caller
	// that started it (not a request's own timeout: Nomad did not answer,
	// and asking again would wait as long).
	expired bool
}

// readJob reads job jobID of namespace ns and lists its allocations. The
// list grows with the job (3.4 MB for 2,000 allocations), so reads of the
// same job at once (a plan's activation_host_usage instances over many
// nodes, the policies of one evaluation tick) share one, as nodeReserves
// shares a node's listing: it runs on a context no caller's cancellation
// ends, bounded by the deadline of the caller that started it, each caller
// waits within its own context, and one with time left when the shared
// read ran out of its starter's deadline starts it again, up to three
// times (not when a request timed out: each caller would wait the request
// timeout again for an answer that did not come). What they share is only
// read.
func (ev *evaluation) readJob(ctx context.Context, ns, jobID string) jobRead {
	c := ev.r.Client
	key := ns + "\x00" + jobID
	for attempt := 0; ; attempt++ {
		ch := ev.r.jobs.DoChan(key, func() (any, error) {
			prog := &jobProgress{}
			ev.r.jobProgress.Store(key, prog)
			if h := ev.r.hooks.jobReadStarted; h != nil {
				h()
			}
			defer func() {
				ev.r.jobProgress.CompareAndDelete(key, prog)
				if h := ev.r.hooks.jobReadEnding; h != nil {
					h(true)
				}
			}()
			shared, cancel := sharedContext(ctx)
			defer cancel()
			var jr jobRead
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				jr.job, _, jr.jobErr = c.Jobs().Info(jobID, (&api.QueryOptions{Namespace: ns}).WithContext(shared))
				prog.job.Store(true)
			}()
			go func() {
				defer wg.Done()
				jr.stubs, _, jr.listErr = c.Jobs().Allocations(jobID, false, (&api.QueryOptions{Namespace: ns}).WithContext(shared))
				prog.list.Store(true)
			}()
			wg.Wait()
			if h := ev.r.hooks.jobReadEnding; h != nil {
				h(false)
			}
			jr.expired = shared.Err() != nil && (jr.jobErr != nil || jr.listErr != nil)
			return jr, nil
		})
		select {
		case <-ctx.Done():
			// The error names the call still under way, as each call
			// on the caller's own context did.
			if h := ev.r.hooks.jobWaitEnded; h != nil {
				h()
			}
			var jr jobRead
			listing := false
			v, _ := ev.r.jobProgress.Load(key)
			select {
			case res := <-ch:
				// The read has ended: its result says which call did
				// not finish. The progress found may be a later read's
				// of the same job, which a caller with time left
				// started again, and is not this read's; it was read
				// first, and singleflight sends a read's result before
				// a later read can start, so this read's is here then.
				listing = listFailed(res)
			default:
				switch p, _ := v.(*jobProgress); {
				case p != nil && !p.job.Load():
					// the job's read is under way
				case p != nil && !p.list.Load():
					listing = true
				default:
					// Both calls have ended, and the shared read with
					// them, most often on this caller's own deadline,
					// which it shares (its progress is dropped just
					// before its result is sent): its result says
					// which call did not finish. (A read not yet under
					// way has no progress either; it is not waited for
					// past jobResultWait.)
					t := time.NewTimer(jobResultWait)
					select {
					case res := <-ch:
						listing = listFailed(res)
					case <-t.C:
					}
					t.Stop()
				}
			}
			if listing {
				jr.listErr = ctx.Err()
			} else {
				jr.jobErr = ctx.Err()
			}
			return jr
		case res := <-ch:
			jr, _ := res.Val.(jobRead)
			if jr.expired && attempt < 3 && res.Shared && timeLeft(ctx) {
				continue
			}
			if jr.expired && !timeLeft(ctx) {
				// The caller's own deadline, which the shared read
				// had too: let the caller's context say so (a caller
				// tells its deadline from one request's timeout by it).
				<-ctx.Done()
			}
			return jr
		}
	}
}

// jobResultWait bounds how long a caller whose context ended waits for a
// shared job read that has no progress to show (see readJob).
const jobResultWait = 250 * time.Millisecond

// listFailed says whether a shared job read's result is the allocations'
// list failing after the job was read.
func listFailed(res singleflight.Result) bool {
	done, _ := res.Val.(jobRead)
	return done.jobErr == nil && done.listErr != nil
}

// sharedContext is the context of a read that callers share: no caller's
// cancellation ends it, the deadline of the caller that starts it does.
func sharedContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), dl)
	}
	return context.WithoutCancel(ctx), func() {}
}

// jobProgress is which calls of a shared job read have finished.
type jobProgress struct{ job, list atomic.Bool }

// statsResult is one allocation's stats read.
type statsResult struct {
	cpu, mem float64
	ts       int64
	gone     bool
	// skipped: not drawn for the stats sample (Options.StatsSample).
	skipped bool
	// memUnmeasured: the answer measured no memory (no MemoryStats, or
	// RSS and Usage both 0, as a driver that measures none answers).
	memUnmeasured bool
	err           error
}

// readGroup reads one host's group from the job, its allocation list and
// the node: replicas, requests, what every other allocation on the node
// reserves, and the usage sample from the allocations' stats.
func (ev *evaluation) readGroup(ctx context.Context, h *hostRead, job *api.Job, ns string, stubs []*api.AllocationListStub) (*Reading, error) {
	q, n := h.q, h.node
	rd, err := ev.r.newReading(n, q, ev.now)
	if err != nil {
		return nil, err
	}
	group, err := pickGroup(job, q.Group)
	if err != nil {
		return nil, err
	}
	groupCPU, groupMem, err := rd.fromJob(job, group, ns, n.coreMHz())
	if err != nil {
		return nil, err
	}
	o := &rd.Observation
	listed, err := ev.nodeReserves(ctx, n)
	if err != nil {
		return nil, err
	}
	o.OtherReservedCPUMHz, o.OtherReservedMemoryMB = listed.others(allocKey{ns: ns, job: q.Job, group: rd.Group})
	var jobCreate uint64
	if job.CreateIndex != nil {
		jobCreate = *job.CreateIndex
	}
	stopCPU, stopMem := stoppingOn(stubs, n.id, ns, rd.Group, listed.ids(allocKey{ns: ns, job: q.Job, group: rd.Group}), jobCreate, listed, groupCPU, groupMem)
	o.OtherReservedCPUMHz += stopCPU
	o.OtherReservedMemoryMB += stopMem
	rd.NodeGroups = listed.shown()
	mine, elsewhere := runningOn(stubs, n.id, ns, rd.Group)
	rd.RunningElsewhere = elsewhere
	results := make([]statsResult, len(mine))
	stats := !q.NoStats
	if stats && !n.state.clientAnswers() {
		stats, rd.NoUsage = false, n.state.noUsage(n.name)
	}
	if stats {
		drawn := ev.draw(n, len(mine))
		sub := make([]*api.AllocationListStub, len(drawn))
		for j, i := range drawn {
			sub[j] = mine[i]
		}
		read := make([]statsResult, len(drawn))
		ev.readStats(ctx, n, sub, read)
		for i := range results {
			results[i].skipped = true
		}
		for j, i := range drawn {
			results[i] = read[j]
		}
	}
	return rd, ev.sample(rd, n, mine, results, stats, group, groupCPU, groupMem, listed)
}

// fromJob fills the reading's job facts (namespace, group, JobModifyIndex,
// desired count, one replica's reservation, the demand the query leaves to
// the group) and returns the group's request.
func (rd *Reading) fromJob(job *api.Job, group *api.TaskGroup, ns string, coreMHz float64) (cpu, mem float64, err error) {
	rd.Namespace, rd.Group = ns, *group.Name
	if job.JobModifyIndex != nil {
		rd.JobModifyIndex = *job.JobModifyIndex
	}
	if job.Region != nil {
		rd.Region = *job.Region
	}
	if group.Count != nil {
		rd.DesiredCount = *group.Count
	}
	if cpu, mem, err = groupRequest(group, coreMHz); err != nil {
		return 0, 0, fmt.Errorf("job %q group %q: %w", rd.Job, rd.Group, err)
	}
	rd.ReplicaCPUMHz, rd.ReplicaMemoryMB = cpu, mem
	o := &rd.Observation
	if o.ReplicaCPUDemandMHz == 0 {
		if cpu <= 0 {
			return 0, 0, fmt.Errorf("job %q group %q: %w, so replica_cpu_demand_mhz must be given", rd.Job, rd.Group, ErrNoCPURequest)
		}
		o.ReplicaCPUDemandMHz = cpu
	}
	if o.ReplicaMemoryDemandMB == 0 {
		o.ReplicaMemoryDemandMB = mem
	}
	return cpu, mem, nil
}

// runningOn is the group's running allocations on the node, from the job's
// allocation list: running and meant to run (one Nomad is stopping runs on
// through its shutdown_delay and kill_timeout and gets no traffic: no
// replica, though its reservation holds until it stops; see reserves); and
// how many run on other nodes, by node name (the ID when the listing gives
// no name), sorted (nil when none does).
func runningOn(stubs []*api.AllocationListStub, nodeID, ns, group string) (mine []*api.AllocationListStub, elsewhere []NodeCount) {
	by := map[string]int{}
	for _, a := range stubs {
		if a.TaskGroup != group || !running(a.ClientStatus, a.DesiredStatus) || !sameNamespace(a.Namespace, ns) {
			continue
		}
		if a.NodeID == nodeID {
			mine = append(mine, a)
		} else {
			by[cmp.Or(a.NodeName, a.NodeID)]++
		}
	}
	for node, n := range by {
		elsewhere = append(elsewhere, NodeCount{Node: node, Count: n})
	}
	slices.SortFunc(elsewhere, func(a, b NodeCount) int { return cmp.Compare(a.Node, b.Node) })
	return mine, elsewhere
}

// stoppingOn is what the group's allocations on the node reserve that are
// not its replicas: those the job's allocation list shows Nomad stopping
// (told to stop, not yet reported terminal by their client: see reserves),
// and those of the node's listing (listedIDs, the group's reserving ones)
// that the job's list does not show at all: a previous incarnation of the
// job (stopped, purged and registered again), whose allocations Nomad's job
// list leaves out while they run through their shutdown_delay. The job's
// list is read at every evaluation, the node's listing up to NodeCacheTTL
// ago, which may show a replica stopped since as running: the job's list
// says which are replicas now. An allocation of the job's current
// registration (jobCreate, its CreateIndex) that the listing shows and the
// job's list does not was placed between the two reads: a new replica, not
// reserved room. Each one's reservation is the listing's, else (placed
// after the listing) the job's request.
func stoppingOn(stubs []*api.AllocationListStub, nodeID, ns, group string, listedIDs []string, jobCreate uint64, listed *nodeReserves, groupCPU, groupMem float64) (cpu, mem float64) {
	inJob := make(map[string]bool, len(listedIDs))
	for _, a := range stubs {
		if a.NodeID != nodeID || a.TaskGroup != group || !sameNamespace(a.Namespace, ns) {
			continue
		}
		inJob[a.ID] = true
		if meantToRun(a.DesiredStatus) || !reserves(a.ClientStatus) {
			continue
		}
		c, m := groupCPU, groupMem
		if r, ok := listed.byAlloc[a.ID]; ok {
			c, m = r.cpu, r.mem
		}
		cpu += c
		mem += m
	}
	for _, id := range listedIDs {
		r := listed.byAlloc[id]
		if inJob[id] || (jobCreate != 0 && r.jobCreate == jobCreate) {
			continue
		}
		cpu += r.cpu
		mem += r.mem
	}
	return cpu, mem
}

// sameNamespace says whether an allocation's namespace is ns. An unset ns
// is Nomad's default namespace; an allocation without one (an old Nomad)
// matches any.
func sameNamespace(allocNS, ns string) bool {
	if ns == "" {
		ns = api.DefaultNamespace
	}
	return allocNS == "" || allocNS == ns
}

// draw returns the indices, in order, of the allocations of a host of n
// whose stats are read: all of them up to StatsSample, else StatsSample
// drawn uniformly at random, a new draw each evaluation (seeded by its
// time and the node) so that over evaluations every allocation is read.
func (ev *evaluation) draw(nd *node, n int) []int {
	k := ev.opts.StatsSample
	if n <= k {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	h := fnv.New64a()
	h.Write([]byte(nd.id))
	rng := rand.New(rand.NewPCG(uint64(ev.now.UnixNano()), h.Sum64()))
	idx := rng.Perm(n)[:k]
	slices.Sort(idx)
	return idx
}

// readStats reads the allocations' stats with a pool of at most
// Concurrency workers; the evaluation's semaphore keeps at most Concurrency
// reads in flight over every host.
func (ev *evaluation) readStats(ctx context.Context, n *node, allocs []*api.AllocationListStub, out []statsResult) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(ev.opts.Concurrency, len(allocs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = ev.readOne(ctx, n, allocs[i])
			}
		}()
	}
	for i := range allocs {
		next <- i
	}
	close(next)
	wg.Wait()
}

// readOne reads one allocation's stats, holding one of the evaluation's
// Concurrency slots.
func (ev *evaluation) readOne(ctx context.Context, n *node, a *api.AllocationListStub) statsResult {
	select {
	case ev.sem <- struct{}{}:
	case <-ctx.Done():
		return statsResult{err: fmt.Errorf("read stats of allocation %s on node %s: not started: %w", a.ID, n.name, ctx.Err())}
	}
	defer func() { <-ev.sem }()
	st, err := ev.r.Client.Allocations().Stats(&api.Allocation{ID: a.ID, NodeID: a.NodeID, Namespace: a.Namespace}, (&api.QueryOptions{}).WithContext(ctx))
	switch {
	case err != nil && nomadconn.IsStatus(err, http.StatusNotFound) && strings.Contains(strings.ToLower(err.Error()), unknownAllocation):
		// Stopped (and collected) between the listing and the stats read:
		// it no longer runs, so it is not a replica.
		return statsResult{gone: true}
	case err != nil && nomadconn.IsStatus(err, http.StatusNotFound):
		// Nomad answers 404 for a client it has no connection to ("No
		// path to node") as well: the allocation may run, unread.
		return statsResult{err: fmt.Errorf("read stats of allocation %s on node %s: %w (not an unknown allocation: the node's client may be unreachable)", a.ID, n.name, err)}
	case err != nil:
		return statsResult{err: fmt.Errorf("read stats of allocation %s on node %s: %w", a.ID, n.name, err)}
	case st.ResourceUsage == nil || st.ResourceUsage.CpuStats == nil:
		return statsResult{err: fmt.Errorf("stats of allocation %s on node %s: %w: ResourceUsage.CpuStats", a.ID, n.name, ErrMissingData)}
	}
	r := statsResult{cpu: st.ResourceUsage.CpuStats.TotalTicks, ts: st.Timestamp}
	if !usableFigure(r.cpu) {
		// An answer no allocation can give (a negative figure: JSON
		// carries no NaN, but a proxy or a driver's arithmetic can give
		// one): not a measurement.
		return statsResult{err: fmt.Errorf("stats of allocation %s on node %s: %w: ResourceUsage.CpuStats.TotalTicks is %v; %s", a.ID, n.name, ErrBadUsage, r.cpu, figureRange)}
	}
	if ms := st.ResourceUsage.MemoryStats; ms != nil {
		// cgroups v2 reports Usage and may leave RSS at zero.
		used, name := ms.RSS, "RSS"
		if used == 0 {
			used, name = ms.Usage, "Usage"
		}
		r.mem = float64(used) / mib
		if !usableFigure(r.mem) {
			return statsResult{err: fmt.Errorf("stats of allocation %s on node %s: %w: ResourceUsage.MemoryStats.%s is %v MB; %s", a.ID, n.name, ErrBadUsage, name, r.mem, figureRange)}
		}
	}
	// A running task uses some memory: none at all is a driver that
	// measures none (or no MemoryStats), not free memory. The sample
	// counts such a replica's memory at its reservation (see sample).
	r.memUnmeasured = r.mem == 0
	return r
}

// unknownAllocation starts Nomad's answer (404) for an allocation its
// client no longer has (structs.ErrUnknownAllocationPrefix), lower case.
const unknownAllocation = "unknown allocation"

// tally is what the stats reads of one host's group showed.
type tally struct {
	firstErr                error
	running, youngNoStats   int
	asked, answered         int
	warmAnswered, warmTotal int
	warmCPU, warmMem        float64
	allCPU, allMem          float64
	// times are the answers' stats times (Unix ns), where Nomad gave one.
	times []int64
}

// add counts one allocation and its stats result.
func (t *tally) add(r *statsResult, young, stats, zeroTicksWarm bool) {
	if !stats {
		if young {
			t.youngNoStats++
		}
		return
	}
	if r.skipped {
		// Not drawn: a warm one is stood for by the warm ones read; a
		// young one is warming.
		if !young {
			t.warmTotal++
		}
		return
	}
	t.asked++
	if r.err != nil {
		if t.firstErr == nil {
			t.firstErr = r.err
		}
		if !young {
			t.warmTotal++
		}
		return
	}
	t.answered++
	t.allCPU += r.cpu
	t.allMem += r.mem
	if r.ts > 0 {
		t.times = append(t.times, r.ts)
	}
	if young || (zeroTicksWarm && r.cpu == 0) {
		return
	}
	t.warmAnswered++
	t.warmTotal++
	t.warmCPU += r.cpu
	t.warmMem += r.mem
}

// sample fills the reading's replicas, requests, warming replicas and
// usage sample from the stats results (see ReadHosts).
//
// A replica's request is its own reservation, from the node's listing
// (the job's allocation list carries no resources): during a rolling
// update, or after a deployment that failed without reverting, replicas of
// an older job version hold their version's resources. A replica placed
// after the listing was read counts at the job's request, as will every
// new one.
func (ev *evaluation) sample(rd *Reading, n *node, allocs []*api.AllocationListStub, res []statsResult, stats bool, group *api.TaskGroup, groupCPU, groupMem float64, listed *nodeReserves) error {
	o := &rd.Observation
	markOutOfLine(allocs, res, n)
	var t tally
	for i, a := range allocs {
		if res[i].gone {
			continue
		}
		t.running++
		cpu, mem := groupCPU, groupMem // not in the listing: the job's request
		switch r, ok := listed.byAlloc[a.ID]; {
		case a.AllocatedResources != nil:
			cpu, mem = requested(a.AllocatedResources, nil, group)
		case ok:
			cpu, mem = r.cpu, r.mem
		}
		o.RequestedCPUMHz += cpu
		o.RequestedMemoryMB += mem
		young := ev.opts.Warmup > 0 && ev.now.Sub(startedAt(a)) < ev.opts.Warmup
		if r := &res[i]; stats && !r.skipped && r.err == nil && r.ts == 0 {
			// Nomad answers zeroed stats with Timestamp 0 while no task
			// has stats (before the client's first collection after a
			// start, or a driver that reports none): no measurement, so
			// warming, whatever the warm-up.
			young = true
		}
		if r := &res[i]; stats && !r.skipped && r.err == nil && r.ts != 0 && r.memUnmeasured && r.cpu > 0 {
			// Its CPU measured, its memory not (a driver that measures
			// none): no evidence is not low usage, so its memory counts at
			// its reservation. With no CPU ticks either, it has no stats
			// yet: the warm-up reads it, or, turned off ("0"), it counts
			// at what it shows, its CPU and memory alike.
			r.mem = mem
			rd.MemoryUnmeasured++
		}
		t.add(&res[i], young, stats, ev.opts.Warmup > 0)
	}
	o.RunningReplicas = t.running
	rd.StatsAsked, rd.StatsAnswered = t.asked, t.answered
	if t.asked > 0 && float64(t.answered) < ev.opts.MinAnswered*float64(t.asked) {
		return fmt.Errorf("host %s: %w: %d of %d running allocations of group %q on node %s answered, fewer than the share %v a decision needs; first failure: %w",
			o.Host, ErrTooFewAnswered, t.answered, t.asked, rd.Group, n.name, ev.opts.MinAnswered, t.firstErr)
	}
	if len(t.times) > 0 {
		// The answers' median time: a few allocations whose stats stopped
		// refreshing do not hold it (the oldest held it still until the
		// usage read as stale), and it never goes back while the same
		// allocations answer (every allocation's time only moves forward).
		rd.Time, rd.ReadTime = time.Unix(0, medianTime(t.times)), false
	}
	cpu, mem := ev.usage(&t, o, stats)
	if rd.NoUsage != "" {
		return nil // no sample: the node's client answers no stats
	}
	o.Samples = []engine.Sample{{Time: rd.Time.Unix(), CPUMHz: cpu, MemoryMB: mem}}
	return nil
}

// markOutOfLine turns the answers whose stats were taken StatsLag or more
// from the median time of the node's answers into failed reads
// (ErrStatsOutOfLine): stats that stopped refreshing (a stuck driver stats
// stream) would otherwise put their last figure into every sample for as
// long as the allocation runs. The allocations of one node share its
// client's clock, and a healthy one's stats are at most one
// collection_interval old, so no healthy answer lies that far from the
// median, whatever the pattern of their times; the reader's own clock is
// not involved.
func markOutOfLine(allocs []*api.AllocationListStub, res []statsResult, n *node) {
	var times []int64
	for i := range res {
		if r := &res[i]; r.err == nil && !r.gone && !r.skipped && r.ts > 0 {
			times = append(times, r.ts)
		}
	}
	if len(times) == 0 {
		return
	}
	// The newer middle one of an even count: with as many stopped as
	// fresh, the stopped ones are out of line.
	slices.Sort(times)
	med := times[len(times)/2]
	for i := range res {
		r := &res[i]
		if r.err != nil || r.gone || r.skipped || r.ts <= 0 {
			continue
		}
		d, where := med-r.ts, "before"
		if d < 0 {
			d, where = -d, "after"
		}
		if d < int64(StatsLag) {
			continue
		}
		r.err = fmt.Errorf("stats of allocation %s on node %s: %w: taken at %s, %s %s the median of the node's answers (%s): stats that stopped refreshing (this allocation's, or most of the others'), a node clock set back, or a collection_interval of %s or more",
			allocs[i].ID, n.name, ErrStatsOutOfLine, time.Unix(0, r.ts).UTC().Format(time.RFC3339), time.Duration(d).Round(time.Second), where, time.Unix(0, med).UTC().Format(time.RFC3339), StatsLag)
	}
}

// medianTime is the median of times (the older middle one of an even
// count); it sorts times.
func medianTime(times []int64) int64 {
	slices.Sort(times)
	return times[(len(times)-1)/2]
}

// usage is the sample's usage from the tally, and the warming replicas:
// the warm ones that answered stand for every warm one; with no warm
// evidence every replica counts as warming, with all the usage the
// answered ones showed, extrapolated to all.
func (ev *evaluation) usage(t *tally, o *engine.Observation, stats bool) (cpu, mem float64) {
	switch {
	case !stats:
		o.WarmingReplicas = t.youngNoStats
	case t.warmAnswered > 0:
		f := float64(t.warmTotal) / float64(t.warmAnswered)
		cpu, mem = t.warmCPU*f, t.warmMem*f
		o.WarmingReplicas = t.running - t.warmTotal
	case t.answered > 0:
		// No warm replica answered: with a warm-up, or when the answers
		// measured nothing (Timestamp 0), every replica is warming.
		f := float64(t.running) / float64(t.answered)
		cpu, mem = t.allCPU*f, t.allMem*f
		o.WarmingReplicas = t.running
	}
	return cpu, mem
}

// startedAt is when an allocation started running: its tasks' latest
// StartedAt, else its CreateTime.
func startedAt(a *api.AllocationListStub) time.Time {
	var t time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && ts.StartedAt.After(t) {
			t = ts.StartedAt
		}
	}
	if t.IsZero() && a.CreateTime > 0 {
		t = time.Unix(0, a.CreateTime)
	}
	return t
}

// running says whether an allocation runs and is meant to: a replica.
func running(clientStatus, desiredStatus string) bool {
	return clientStatus == api.AllocClientStatusRunning && meantToRun(desiredStatus)
}

// reserves says whether an allocation holds its reservation on its node:
// until its client reports it terminal (complete, failed or lost), whatever
// its desired status, as Nomad's scheduler counts it (a stopping one runs
// on through its shutdown_delay and kill_timeout, and nothing is placed in
// its room meanwhile).
func reserves(clientStatus string) bool {
	switch clientStatus {
	case api.AllocClientStatusComplete, api.AllocClientStatusFailed, api.AllocClientStatusLost:
		return false
	}
	return true
}

// meantToRun says whether an allocation's desired status is to run.
func meantToRun(desiredStatus string) bool {
	return desiredStatus == "" || desiredStatus == api.AllocDesiredStatusRun
}

// allocKey names the allocations a reading covers: those of group in job
// (in namespace ns).
type allocKey struct{ ns, job, group string }

// nodeReserves is what the allocations on one node reserve, by group, from
// one listing of the node's allocations.
type nodeReserves struct {
	at     time.Time
	groups []groupReserve // sorted by key, so that sums are in one order
	// byAlloc is what each reserving allocation reserves, by ID: its own
	// resources (those of its job version), which the job's allocation
	// list does not carry.
	byAlloc map[string]reservation
}

// reservation is one allocation's CPU (MHz) and memory (MB) reservation,
// and the CreateIndex of its job's registration (0 when not known).
type reservation struct {
	cpu, mem  float64
	jobCreate uint64
}

// groupReserve is what the reserving allocations of one group (its key's
// namespace as Nomad gives it) reserve on a node: those meant to run, and
// how many they are, and those being stopped.
type groupReserve struct {
	key              allocKey
	cpu, mem         float64
	allocs           int
	stopCPU, stopMem float64
	// ids are the group's reserving allocations, in the listing's order.
	ids []string
}

// is says whether a listed group's key (its namespace as Nomad gives it) is
// the group k names (see sameNamespace).
func (g allocKey) is(k allocKey) bool {
	return g.job == k.job && g.group == k.group && sameNamespace(g.ns, k.ns)
}

// ids is the reserving allocations of the group k names.
func (e *nodeReserves) ids(k allocKey) []string {
	var out []string
	for _, g := range e.groups {
		if g.key.is(k) {
			out = append(out, g.ids...)
		}
	}
	return out
}

// shown is every group's reserving allocations meant to run on the node.
func (e *nodeReserves) shown() []GroupOnNode {
	out := make([]GroupOnNode, 0, len(e.groups))
	for _, g := range e.groups {
		if g.allocs == 0 {
			continue // only allocations being stopped
		}
		ns := g.key.ns
		if ns == "" {
			ns = api.DefaultNamespace
		}
		out = append(out, GroupOnNode{Namespace: ns, Job: g.key.job, Group: g.key.group, Allocations: g.allocs})
	}
	return out
}

// others is what every group but k reserves, its allocations being
// stopped included. k's own allocations that are not its replicas (being
// stopped: their room is not free yet) are not in it: the job's allocation
// list, fresher than the listing, tells which they are (see stoppingOn).
func (e *nodeReserves) others(k allocKey) (cpu, mem float64) {
	for _, g := range e.groups {
		if g.key.is(k) {
			continue
		}
		cpu += g.cpu + g.stopCPU
		mem += g.mem + g.stopMem
	}
	return cpu, mem
}

// maxOthers bounds the node cache; past it the cache starts afresh.
const maxOthers = 4096

// nodeReserves is what the allocations on node n reserve, by group (its
// others gives what every group but one reserves: other jobs, and the
// job's other groups), from the node's allocation list. Nomad's job
// allocation list carries no resources (Job.Allocations answers stubs
// without them), so the node's list, which does, is the one source of what
// the job's other groups on the node reserve.
//
// The list is long (every allocation with its job), so one listing per node
// serves every group read on it for NodeCacheTTL, and evaluations that need
// the same node at once (policies on one evaluation interval tick together)
// share one listing.
func (ev *evaluation) nodeReserves(ctx context.Context, n *node) (*nodeReserves, error) {
	if v, ok := ev.r.others.Load(n.id); ok {
		if e, _ := v.(*nodeReserves); e != nil && ev.now.Sub(e.at) < ev.opts.NodeCacheTTL && !e.at.After(ev.now) {
			return e, nil
		}
	}
	// The listing is shared: it runs on a context no caller's
	// cancellation ends, bounded by the deadline of the caller that
	// started it, and each caller waits for it within its own context. A
	// caller with time left when the listing ran out of its starter's
	// deadline starts it again (or joins a new one), up to three times;
	// not when the listing's request timed out (Nomad did not answer).
	for attempt := 0; ; attempt++ {
		ch := ev.r.listing.DoChan(n.id, func() (any, error) {
			shared, cancel := sharedContext(ctx)
			defer cancel()
			e, err := ev.listReserves(shared, n)
			return sharedListing{e, shared.Err() != nil}, err
		})
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("list allocations of node %s (%s) for what other allocations reserve there: %w", n.name, n.id, ctx.Err())
		case res := <-ch:
			l, _ := res.Val.(sharedListing)
			if res.Err != nil {
				if attempt < 3 && res.Shared && l.expired && timeLeft(ctx) {
					continue
				}
				if l.expired && !timeLeft(ctx) {
					// The caller's own deadline, which the shared
					// listing had too: let the caller's context say so,
					// as readJob does.
					<-ctx.Done()
				}
				return nil, res.Err
			}
			return l.reserves, nil
		}
	}
}

// sharedListing is a node's listing as nodeReserves shares it; expired:
// it ran out of the deadline of the caller that started it.
type sharedListing struct {
	reserves *nodeReserves
	expired  bool
}

// listReserves lists node n's allocations and remembers what each group
// reserves there.
func (ev *evaluation) listReserves(ctx context.Context, n *node) (*nodeReserves, error) {
	allocs, _, err := ev.r.Client.Nodes().Allocations(n.id, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("list allocations of node %s (%s) for what other allocations reserve there: %w", n.name, n.id, err)
	}
	at := map[allocKey]int{} // index in e.groups
	e := &nodeReserves{at: ev.now, byAlloc: make(map[string]reservation, len(allocs))}
	for _, a := range allocs {
		if !reserves(a.ClientStatus) {
			continue
		}
		k := allocKey{ns: a.Namespace, job: a.JobID, group: a.TaskGroup}
		i, ok := at[k]
		if !ok {
			i = len(e.groups)
			at[k] = i
			e.groups = append(e.groups, groupReserve{key: k})
		}
		c, m := requested(a.AllocatedResources, a.Resources, allocGroup(a)) //nolint:staticcheck // Nomads before 0.9 report only Resources
		r := reservation{cpu: c, mem: m}
		if a.Job != nil && a.Job.CreateIndex != nil {
			r.jobCreate = *a.Job.CreateIndex
		}
		e.byAlloc[a.ID] = r
		e.groups[i].ids = append(e.groups[i].ids, a.ID)
		if meantToRun(a.DesiredStatus) {
			e.groups[i].cpu += c
			e.groups[i].mem += m
			e.groups[i].allocs++
		} else {
			e.groups[i].stopCPU += c
			e.groups[i].stopMem += m
		}
	}
	slices.SortFunc(e.groups, func(x, y groupReserve) int {
		return cmp.Or(cmp.Compare(x.key.ns, y.key.ns), cmp.Compare(x.key.job, y.key.job), cmp.Compare(x.key.group, y.key.group))
	})
	ev.r.othersMu.Lock()
	if ev.r.othersN >= maxOthers {
		ev.r.others.Clear()
		ev.r.othersN = 0
	}
	if _, loaded := ev.r.others.Swap(n.id, e); !loaded {
		ev.r.othersN++
	}
	ev.r.othersMu.Unlock()
	return e, nil
}

// timeLeft says whether ctx has time left: not done, and its deadline (if
// any) not passed (a deadline just passed may not have ended ctx yet).
func timeLeft(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || time.Now().Before(dl)
}
