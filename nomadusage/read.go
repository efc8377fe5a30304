package nomadusage

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"
	"golang.org/x/sync/singleflight"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadreserve"
)

// Reader reads hosts' usage through a Nomad API client. It remembers for
// ResolveTTL which node a name/pool/class/datacenter selector resolved to,
// and for Options.NodeCacheTTL what other workloads reserve on a node; see
// the package documentation for what each read costs. It is safe for
// concurrent use.
type Reader struct {
	Client *api.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Options apply to Read (ReadHosts takes its own); the zero value is
	// the defaults, with no warm-up rule.
	Options Options

	resolved sync.Map // selector string -> resolvedNode
	others   sync.Map // node ID -> *nodeReserves
	othersMu sync.Mutex
	othersN  int
	listing  singleflight.Group // node ID: one allocation listing at a time
	jobs     singleflight.Group // namespace and job: one job read at a time
	// jobProgress holds the *jobProgress of each job read in flight.
	jobProgress sync.Map
	hooks       readHooks
}

// readHooks, for tests, open the windows of a shared job read (readJob)
// in which a caller whose context ends finds no call of its read under
// way.
type readHooks struct {
	// jobReadStarted runs in a shared job read once its progress is
	// stored, before its calls start.
	jobReadStarted func()
	// jobReadEnding runs in a shared job read once both its calls have
	// ended, before its progress is dropped (dropped false) and after.
	jobReadEnding func(dropped bool)
	// jobWaitEnded runs when a caller's context ends as it waits for a
	// shared job read, before it looks at the read's progress.
	jobWaitEnded func()
}

// ResolveTTL is how long a Reader trusts a selector's resolution before it
// lists the matching nodes again.
const ResolveTTL = time.Minute

type resolvedNode struct {
	id string
	at time.Time
	// numCores is the node's cpu.numcores from its last read by ID: a
	// node listing never carries it (Nomad's stubs hold os.name at most),
	// so a refresh by listing keeps it, and a replica's reservation for
	// cores does not change with each refresh.
	numCores int
}

func (r *Reader) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// node reads the node sel names, whatever its state. A node ID is read
// directly. A filter selector's node ID is remembered for ResolveTTL: while
// fresh, the node itself is read (GET /v1/node/:id: current resources and
// state) and must still match; a stale, vanished or no longer matching
// entry is refreshed with one filtered node listing, whose answer carries
// the resources and state, so every use costs one request.
func (r *Reader) node(ctx context.Context, sel HostSelector) (*node, error) {
	if sel.NodeID != "" || sel.IsZero() {
		return findNode(ctx, r.Client, sel)
	}
	key := sel.String()
	var prev resolvedNode
	if v, ok := r.resolved.Load(key); ok {
		rn, _ := v.(resolvedNode)
		prev = rn
		if r.now().Sub(rn.at) < ResolveTTL {
			n, _, err := r.Client.Nodes().Info(rn.id, (&api.QueryOptions{}).WithContext(ctx))
			switch {
			case err == nil && sel.matches(n.Name, n.NodePool, n.NodeClass, n.Datacenter) && (sel.Name == "" || n.Status != api.NodeStatusDown):
				// A named node that went down may have been replaced under
				// its name: the listing below finds the one that is not
				// down, as findNode does.
				out := nodeFromInfo(n)
				if out.numCores > 0 && out.numCores != rn.numCores {
					rn.numCores = out.numCores
					r.resolved.Store(key, rn)
				}
				return out, nil
			case err != nil && !nomadconn.IsStatus(err, http.StatusNotFound):
				return nil, fmt.Errorf("read node %s for host %s: %w", rn.id, sel, err)
			}
		}
		r.resolved.Delete(key)
	}
	n, err := findNode(ctx, r.Client, sel)
	if err != nil {
		return nil, err
	}
	if n.numCores == 0 && n.id == prev.id {
		n.numCores = prev.numCores // the listing does not carry it
	}
	r.resolved.Store(key, resolvedNode{id: n.id, at: r.now(), numCores: n.numCores})
	return n, nil
}

// Read reads one host once.
func Read(ctx context.Context, c *api.Client, q Query) (*Reading, error) {
	return (&Reader{Client: c}).Read(ctx, q)
}

// Read reads one host once: capacity from the node's resources; with a
// job, the group's usage from its allocations' stats (readJobHosts), else
// the whole node's from its client stats (readNodeUsage). A node that is
// not ready is ErrNodeNotReady.
func (r *Reader) Read(ctx context.Context, q Query) (*Reading, error) {
	if r.Client == nil {
		return nil, fmt.Errorf("%w: no Nomad API client", ErrBadQuery)
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if q.NoStats {
		return nil, fmt.Errorf("%w: Read always reads stats; use ReadHosts", ErrBadQuery)
	}
	n, err := r.node(ctx, q.Host)
	if err != nil {
		return nil, err
	}
	if n.state.Status != api.NodeStatusReady {
		return nil, fmt.Errorf("host %s: %w: node %s (%s) is %q", q.Host, ErrNodeNotReady, n.name, n.id, n.state.Status)
	}
	if q.Job == "" {
		return r.readNodeUsage(ctx, n, &q)
	}
	opts, err := r.Options.Resolve()
	if err != nil {
		return nil, err
	}
	ev := r.newEvaluation(opts)
	h := &hostRead{q: &q, node: n}
	ev.readJobHosts(ctx, q.Namespace, q.Job, []*hostRead{h})
	if h.err != nil {
		return nil, h.err
	}
	return h.rd, nil
}

// newReading starts a reading of node n for q: capacity, label, demand
// and the node's state.
func (r *Reader) newReading(n *node, q *Query, at time.Time) (*Reading, error) {
	if n.capacityErr != nil {
		return nil, fmt.Errorf("node %s (%s): %w", n.name, n.id, n.capacityErr)
	}
	rd := &Reading{NodeID: n.id, NodeName: n.name, Node: n.state, Job: q.Job, Group: q.Group, Time: at, ReadTime: true}
	o := &rd.Observation
	o.Host = q.Label
	if o.Host == "" {
		o.Host = n.name
	}
	o.CPUCapacityMHz, o.MemoryCapacityMB = n.capCPU, n.capMem
	o.WantedReplicas = q.WantedReplicas
	o.QueuedReplicas = q.QueuedReplicas
	o.ReplicaCPUDemandMHz, o.ReplicaMemoryDemandMB = q.ReplicaCPUDemandMHz, q.ReplicaMemoryDemandMB
	return rd, nil
}

// readNodeUsage is the whole-node mode: one sample of the node's client
// stats (CPUTicksConsumed, Memory.Used), none with q.NoStats; requests and
// replicas over every running allocation on the node; what pending ones
// (placed, not running yet) and stopping ones (still running through their
// shutdown_delay) reserve is reserved by others.
func (r *Reader) readNodeUsage(ctx context.Context, n *node, q *Query) (*Reading, error) {
	rd, err := r.newReading(n, q, r.now())
	if err != nil {
		return nil, err
	}
	qo := (&api.QueryOptions{}).WithContext(ctx)
	o := &rd.Observation
	allocs, _, err := r.Client.Nodes().Allocations(n.id, qo)
	if err != nil {
		return nil, fmt.Errorf("list allocations of node %s (%s): %w", n.name, n.id, err)
	}
	groups := map[string]bool{} // RunningGroups as a set: a node may list thousands of allocations
	for _, a := range allocs {
		cpu, mem := requested(a.AllocatedResources, a.Resources, allocGroup(a)) //nolint:staticcheck // Nomads before 0.9 report only Resources
		switch {
		case running(a.ClientStatus, a.DesiredStatus):
			o.RequestedCPUMHz += cpu
			o.RequestedMemoryMB += mem
			o.RunningReplicas++
			if g := a.Namespace + "/" + a.JobID + "/" + a.TaskGroup; !groups[g] {
				groups[g] = true
				rd.RunningGroups = append(rd.RunningGroups, g)
			}
		case reserves(a.ClientStatus): // placed, not running yet, or being stopped
			o.OtherReservedCPUMHz += cpu
			o.OtherReservedMemoryMB += mem
		}
	}
	slices.Sort(rd.RunningGroups)
	if q.NoStats {
		o.Samples = []engine.Sample{{Time: rd.Time.Unix()}}
		return rd, nil
	}
	if !n.state.clientAnswers() {
		rd.NoUsage = n.state.noUsage(n.name)
		return rd, nil
	}
	// Nomad's answer carries the stats' Timestamp (Unix ns), which
	// api.HostStats does not decode: read it alongside.
	var hs hostStats
	if _, err := r.Client.Raw().Query("/v1/client/stats?node_id="+url.QueryEscape(n.id), &hs, qo); err != nil {
		return nil, fmt.Errorf("read client stats of node %s (%s): %w", n.name, n.id, err)
	}
	if hs.Memory == nil {
		return nil, fmt.Errorf("client stats of node %s (%s): %w: Memory", n.name, n.id, ErrMissingData)
	}
	if c := hs.CPUTicksConsumed; !usableFigure(c) {
		return nil, fmt.Errorf("client stats of node %s (%s): %w: CPUTicksConsumed is %v; %s", n.name, n.id, ErrBadUsage, c, figureRange)
	}
	if m := float64(hs.Memory.Used) / mib; !usableFigure(m) {
		return nil, fmt.Errorf("client stats of node %s (%s): %w: Memory.Used is %v MB; %s", n.name, n.id, ErrBadUsage, m, figureRange)
	}
	if hs.Timestamp > 0 {
		rd.Time, rd.ReadTime = time.Unix(0, int64(hs.Timestamp)), false
	}
	o.Samples = []engine.Sample{{Time: rd.Time.Unix(), CPUMHz: hs.CPUTicksConsumed, MemoryMB: float64(hs.Memory.Used) / mib}}
	return rd, nil
}

const mib = 1024 * 1024

// hostStats is a node's client stats with the Timestamp Nomad sends.
type hostStats struct {
	api.HostStats
	Timestamp uint64
}

// requested is the CPU (MHz) and memory (MB) an allocation reserves: its
// tasks' allocated resources by Nomad's rule (nomadreserve.Allocation, the
// lifecycles read from tg, the allocation's task group; nil: every task a
// main one), or the deprecated Resources of Nomads before 0.9 (callers pass
// the allocation's deprecated field for those on purpose).
func requested(ar *api.AllocatedResources, legacy *api.Resources, tg *api.TaskGroup) (cpu, mem float64) {
	if ar != nil {
		tasks := make([]nomadreserve.Task, 0, len(ar.Tasks))
		for name, t := range ar.Tasks {
			if t == nil {
				continue
			}
			rt := nomadreserve.Task{CPUMHz: float64(t.Cpu.CpuShares), MemoryMB: float64(t.Memory.MemoryMB), Cores: len(t.Cpu.ReservedCores) > 0}
			rt.Hook, rt.Sidecar = lifecycle(tg, name)
			tasks = append(tasks, rt)
		}
		return nomadreserve.Allocation(tasks)
	}
	if legacy != nil {
		if legacy.CPU != nil {
			cpu = float64(*legacy.CPU)
		}
		if legacy.MemoryMB != nil {
			mem = float64(*legacy.MemoryMB)
		}
	}
	return cpu, mem
}

// lifecycle is the lifecycle hook and sidecar flag of tg's task named name
// ("", false for a main task, or when tg does not have it).
func lifecycle(tg *api.TaskGroup, name string) (hook string, sidecar bool) {
	if tg == nil {
		return "", false
	}
	for _, t := range tg.Tasks {
		if t != nil && t.Name == name && t.Lifecycle != nil {
			return t.Lifecycle.Hook, t.Lifecycle.Sidecar
		}
	}
	return "", false
}

// allocGroup is the task group of an allocation listed with its job (a
// node's allocation list), or nil.
func allocGroup(a *api.Allocation) *api.TaskGroup {
	if a.Job == nil || a.TaskGroup == "" {
		return nil
	}
	g, err := pickGroup(a.Job, a.TaskGroup)
	if err != nil {
		return nil
	}
	return g
}

func pickGroup(job *api.Job, name string) (*api.TaskGroup, error) {
	id := ""
	if job.ID != nil {
		id = *job.ID
	}
	var names []string
	for _, g := range job.TaskGroups {
		if g.Name == nil {
			continue
		}
		if *g.Name == name {
			return g, nil
		}
		names = append(names, *g.Name)
	}
	if name == "" && len(names) == 1 {
		return job.TaskGroups[0], nil
	}
	if name == "" {
		return nil, fmt.Errorf("%w: job %q has %d groups (%s): name one", ErrBadQuery, id, len(names), strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("job %q: %w: no task group %q (it has %s)", id, ErrJobNotFound, name, strings.Join(names, ", "))
}

// groupRequest is what one allocation of the task group reserves, from
// its tasks' requests and lifecycles by Nomad's rule
// (nomadreserve.Allocation). A task's reserved cores count at coreMHz each,
// the node's MHz per core; with cores asked and coreMHz 0 (the node
// reports no core count) it is an error.
func groupRequest(g *api.TaskGroup, coreMHz float64) (cpu, mem float64, err error) {
	tasks := make([]nomadreserve.Task, 0, len(g.Tasks))
	for _, t := range g.Tasks {
		if t == nil || t.Resources == nil {
			continue
		}
		var rt nomadreserve.Task
		if r := t.Resources; r.Cores != nil && *r.Cores > 0 {
			if coreMHz <= 0 {
				return 0, 0, fmt.Errorf("%w: task %q reserves %d cores, but the node reports no core count (NodeResources.Cpu.TotalCpuCores) to size them", ErrMissingData, t.Name, *r.Cores)
			}
			rt.CPUMHz, rt.Cores = float64(*r.Cores)*coreMHz, true
		} else if r.CPU != nil {
			rt.CPUMHz = float64(*r.CPU)
		}
		if t.Resources.MemoryMB != nil {
			rt.MemoryMB = float64(*t.Resources.MemoryMB)
		}
		if lc := t.Lifecycle; lc != nil {
			rt.Hook, rt.Sidecar = lc.Hook, lc.Sidecar
		}
		tasks = append(tasks, rt)
	}
	cpu, mem = nomadreserve.Allocation(tasks)
	return cpu, mem, nil
}
