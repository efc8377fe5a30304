package nomadusage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// Sentinel errors; test with errors.Is. Every error the package returns
// wraps one of these or an error of the Nomad API client, with context.
var (
	// ErrNoSelector: the host selector names no node ID, name, pool or class.
	ErrNoSelector = errors.New("no host selector: set a node ID, a node name, or a node pool and/or class")
	// ErrNodeNotFound: no node matches the selector.
	ErrNodeNotFound = errors.New("no node matches")
	// ErrAmbiguous: several nodes match the selector.
	ErrAmbiguous = errors.New("several nodes match")
	// ErrJobNotFound: the named job or task group does not exist.
	ErrJobNotFound = errors.New("job or task group not found")
	// ErrNodeNotReady: the node matched but is not ready (down, initializing...).
	ErrNodeNotReady = errors.New("node is not ready")
	// ErrMissingData: Nomad answered without a field the read needs.
	ErrMissingData = errors.New("missing data")
	// ErrBadQuery: the query itself is wrong (a field is missing or invalid).
	ErrBadQuery = errors.New("bad usage query")
)

// HostSelector says which Nomad node is a host. NodeID alone picks the node
// by ID; otherwise Name, Pool and Class filter the node list, every one set
// must match, and exactly one node must remain.
type HostSelector struct {
	NodeID string
	Name   string
	Pool   string
	Class  string
}

// IsZero reports whether no field is set.
func (h HostSelector) IsZero() bool {
	return h.NodeID == "" && h.Name == "" && h.Pool == "" && h.Class == ""
}

// String describes the selector, e.g. `name="host-a" pool="edge"`.
func (h HostSelector) String() string {
	var parts []string
	for _, kv := range []struct{ k, v string }{{"node_id", h.NodeID}, {"name", h.Name}, {"pool", h.Pool}, {"class", h.Class}} {
		if kv.v != "" {
			parts = append(parts, fmt.Sprintf("%s=%q", kv.k, kv.v))
		}
	}
	if len(parts) == 0 {
		return "(empty selector)"
	}
	return strings.Join(parts, " ")
}

func (h HostSelector) matches(name, pool, class string) bool {
	return (h.Name == "" || h.Name == name) && (h.Pool == "" || h.Pool == pool) && (h.Class == "" || h.Class == class)
}

// Query says what to read for one host.
type Query struct {
	Host HostSelector
	// Job, when set, restricts usage to the running allocations of this job
	// (and of Group, when set) on the node, read from allocation stats.
	// When empty, usage is the node's client stats (everything on it) and
	// the replicas are all running allocations on the node.
	Namespace string // the job's namespace; empty = the client's namespace
	Job       string
	Group     string
	// ReplicaCPUDemandMHz and ReplicaMemoryDemandMB are one replica's
	// expected demand; 0 takes the task group's request from the job (the
	// sum over its tasks). Without a job the CPU demand is required.
	ReplicaCPUDemandMHz   float64
	ReplicaMemoryDemandMB float64
	// WantedReplicas is passed through to the observation (0 = every slot).
	WantedReplicas int
	// Label names the host in the observation; default the node's name.
	Label string
}

// Validate checks the query's own fields.
func (q *Query) Validate() error {
	if q.Host.IsZero() {
		return fmt.Errorf("%w: %w", ErrBadQuery, ErrNoSelector)
	}
	if q.Group != "" && q.Job == "" {
		return fmt.Errorf("%w: group %q is set without a job", ErrBadQuery, q.Group)
	}
	if q.Job == "" && q.ReplicaCPUDemandMHz <= 0 {
		return fmt.Errorf("%w: replica_cpu_demand_mhz must be > 0 when no job is named (there is no task group to take the request from)", ErrBadQuery)
	}
	if q.ReplicaCPUDemandMHz < 0 {
		return fmt.Errorf("%w: replica_cpu_demand_mhz is %v; it must be >= 0 (0 = the task group's request)", ErrBadQuery, q.ReplicaCPUDemandMHz)
	}
	if q.ReplicaMemoryDemandMB < 0 {
		return fmt.Errorf("%w: replica_memory_demand_mb is %v; it must be >= 0 (0 = the task group's request)", ErrBadQuery, q.ReplicaMemoryDemandMB)
	}
	if q.WantedReplicas < 0 {
		return fmt.Errorf("%w: wanted_replicas must be >= 0", ErrBadQuery)
	}
	return nil
}

// Reading is one read of a host: an observation with one usage sample.
type Reading struct {
	NodeID   string
	NodeName string
	// Namespace, Job and Group are what the usage covers (empty for the
	// whole node).
	Namespace, Job, Group string
	// Time is when Nomad took the stats the sample comes from: the oldest
	// Timestamp of the allocations' stats, or the node's client stats
	// Timestamp without a job; the read's own time when Nomad gives none
	// (no running allocation, or a zero Timestamp).
	// Observation.Samples[0].Time is its Unix second.
	Time        time.Time
	Observation engine.Observation
}

// Reader reads hosts' usage through a Nomad API client. It remembers for
// ResolveTTL which node a name/pool/class selector resolved to, so that a
// read costs no node listing; the node is still read every time and a
// node that no longer matches is resolved afresh.
type Reader struct {
	Client *api.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	resolved sync.Map // selector string -> resolvedNode
}

// ResolveTTL is how long a Reader trusts a selector's resolution.
const ResolveTTL = time.Minute

type resolvedNode struct {
	id string
	at time.Time
}

func (r *Reader) resolve(ctx context.Context, sel HostSelector) (*api.Node, error) {
	if sel.NodeID != "" || sel.IsZero() {
		return ResolveNode(ctx, r.Client, sel)
	}
	key := sel.String()
	if v, ok := r.resolved.Load(key); ok {
		rn := v.(resolvedNode)
		if r.now().Sub(rn.at) < ResolveTTL {
			node, _, err := r.Client.Nodes().Info(rn.id, (&api.QueryOptions{}).WithContext(ctx))
			if err == nil && sel.matches(node.Name, node.NodePool, node.NodeClass) && node.Status == api.NodeStatusReady {
				return node, nil
			}
			if err != nil && !isNotFound(err) {
				return nil, fmt.Errorf("read node %s for host %s: %w", rn.id, sel, err)
			}
		}
		r.resolved.Delete(key)
	}
	node, err := ResolveNode(ctx, r.Client, sel)
	if err != nil {
		return nil, err
	}
	r.resolved.Store(key, resolvedNode{id: node.ID, at: r.now()})
	return node, nil
}

func (r *Reader) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Read reads one host once.
func Read(ctx context.Context, c *api.Client, q Query) (*Reading, error) {
	return (&Reader{Client: c}).Read(ctx, q)
}

// Read reads one host once: capacity from the node's resources, usage from
// allocation stats (or client stats), requested resources and running
// replicas from the node's running allocations, demand from the task group.
func (r *Reader) Read(ctx context.Context, q Query) (*Reading, error) {
	if r.Client == nil {
		return nil, fmt.Errorf("%w: no Nomad API client", ErrBadQuery)
	}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	node, err := r.resolve(ctx, q.Host)
	if err != nil {
		return nil, err
	}
	capCPU, capMem, err := capacity(node)
	if err != nil {
		return nil, fmt.Errorf("node %s (%s): %w", node.Name, node.ID, err)
	}
	qo := (&api.QueryOptions{}).WithContext(ctx)
	rd := &Reading{NodeID: node.ID, NodeName: node.Name, Job: q.Job, Group: q.Group, Time: r.now()}
	o := &rd.Observation
	o.Host = q.Label
	if o.Host == "" {
		o.Host = node.Name
	}
	o.CPUCapacityMHz, o.MemoryCapacityMB = capCPU, capMem
	o.WantedReplicas = q.WantedReplicas
	o.ReplicaCPUDemandMHz, o.ReplicaMemoryDemandMB = q.ReplicaCPUDemandMHz, q.ReplicaMemoryDemandMB

	var sample engine.Sample
	sample.Time = rd.Time.Unix()
	if q.Job == "" {
		allocs, _, err := r.Client.Nodes().Allocations(node.ID, qo)
		if err != nil {
			return nil, fmt.Errorf("list allocations of node %s (%s): %w", node.Name, node.ID, err)
		}
		for _, a := range allocs {
			if a.ClientStatus != api.AllocClientStatusRunning {
				continue
			}
			cpu, mem := requested(a)
			o.RequestedCPUMHz += cpu
			o.RequestedMemoryMB += mem
			o.RunningReplicas++
		}
		// Nomad's answer carries the stats' Timestamp (Unix ns), which
		// api.HostStats does not decode: read it alongside.
		var hs hostStats
		_, err = r.Client.Raw().Query("/v1/client/stats?node_id="+url.QueryEscape(node.ID), &hs, qo)
		if err != nil {
			return nil, fmt.Errorf("read client stats of node %s (%s): %w", node.Name, node.ID, err)
		}
		if hs.Memory == nil {
			return nil, fmt.Errorf("client stats of node %s (%s): %w: Memory", node.Name, node.ID, ErrMissingData)
		}
		sample.CPUMHz = hs.CPUTicksConsumed
		sample.MemoryMB = float64(hs.Memory.Used) / mib
		if hs.Timestamp > 0 {
			rd.Time = time.Unix(0, int64(hs.Timestamp))
		}
		sample.Time = rd.Time.Unix()
		o.Samples = []engine.Sample{sample}
		return rd, nil
	}

	job, _, err := r.Client.Jobs().Info(q.Job, (&api.QueryOptions{Namespace: q.Namespace}).WithContext(ctx))
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("read job %q: %w: %w", q.Job, ErrJobNotFound, err)
		}
		return nil, fmt.Errorf("read job %q: %w", q.Job, err)
	}
	ns := q.Namespace
	if job.Namespace != nil && *job.Namespace != "" {
		ns = *job.Namespace
	}
	rd.Namespace = ns
	group, err := pickGroup(job, q.Group)
	if err != nil {
		return nil, err
	}
	rd.Group = *group.Name
	if o.ReplicaCPUDemandMHz == 0 || o.ReplicaMemoryDemandMB == 0 {
		cpu, mem := groupRequest(group)
		if o.ReplicaCPUDemandMHz == 0 {
			if cpu <= 0 {
				return nil, fmt.Errorf("job %q group %q: %w: no task requests CPU, so replica_cpu_demand_mhz must be given", q.Job, rd.Group, ErrMissingData)
			}
			o.ReplicaCPUDemandMHz = cpu
		}
		if o.ReplicaMemoryDemandMB == 0 {
			o.ReplicaMemoryDemandMB = mem
		}
	}
	// The job's allocations (list stubs: lighter than the node's full
	// allocations, which embed the job), those of the group on this node.
	groupCPU, groupMem := groupRequest(group)
	stubs, _, err := r.Client.Jobs().Allocations(q.Job, false, (&api.QueryOptions{Namespace: ns}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("list allocations of job %q: %w", q.Job, err)
	}
	var oldest int64 // the oldest allocation stats Timestamp, Unix ns
	for _, a := range stubs {
		if a.ClientStatus != api.AllocClientStatusRunning || a.NodeID != node.ID || a.TaskGroup != rd.Group {
			continue
		}
		if ns != "" && a.Namespace != "" && a.Namespace != ns {
			continue
		}
		st, err := r.Client.Allocations().Stats(&api.Allocation{ID: a.ID, NodeID: a.NodeID, Namespace: a.Namespace}, qo)
		if err != nil {
			if isNotFound(err) {
				// Stopped between the listing and the stats read: it no
				// longer runs, so it is not a replica.
				continue
			}
			return nil, fmt.Errorf("read stats of allocation %s on node %s: %w", a.ID, node.Name, err)
		}
		if st.ResourceUsage == nil || st.ResourceUsage.CpuStats == nil {
			return nil, fmt.Errorf("stats of allocation %s on node %s: %w: ResourceUsage.CpuStats", a.ID, node.Name, ErrMissingData)
		}
		if st.Timestamp > 0 && (oldest == 0 || st.Timestamp < oldest) {
			oldest = st.Timestamp
		}
		sample.CPUMHz += st.ResourceUsage.CpuStats.TotalTicks
		if ms := st.ResourceUsage.MemoryStats; ms != nil {
			// cgroups v2 reports Usage and may leave RSS at zero.
			used := ms.RSS
			if used == 0 {
				used = ms.Usage
			}
			sample.MemoryMB += float64(used) / mib
		}
		if a.AllocatedResources != nil {
			cpu, mem := requested(&api.Allocation{AllocatedResources: a.AllocatedResources})
			o.RequestedCPUMHz += cpu
			o.RequestedMemoryMB += mem
		} else {
			// Stubs without resources: the group's request.
			o.RequestedCPUMHz += groupCPU
			o.RequestedMemoryMB += groupMem
		}
		o.RunningReplicas++
	}
	if oldest > 0 {
		rd.Time = time.Unix(0, oldest)
	}
	sample.Time = rd.Time.Unix()
	o.Samples = []engine.Sample{sample}
	return rd, nil
}

const mib = 1024 * 1024

// hostStats is a node's client stats with the Timestamp Nomad sends.
type hostStats struct {
	api.HostStats
	Timestamp uint64
}

func isNotFound(err error) bool {
	var ue api.UnexpectedResponseError
	return errors.As(err, &ue) && ue.StatusCode() == http.StatusNotFound
}

// ResolveNode finds the one node the selector names.
func ResolveNode(ctx context.Context, c *api.Client, sel HostSelector) (*api.Node, error) {
	if sel.IsZero() {
		return nil, ErrNoSelector
	}
	qo := (&api.QueryOptions{}).WithContext(ctx)
	id := sel.NodeID
	if id == "" {
		stubs, _, err := c.Nodes().List(qo)
		if err != nil {
			return nil, fmt.Errorf("list nodes to find %s: %w", sel, err)
		}
		var found []*api.NodeListStub
		for _, n := range stubs {
			if sel.matches(n.Name, n.NodePool, n.NodeClass) {
				found = append(found, n)
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("host %s: %w among %d nodes", sel, ErrNodeNotFound, len(stubs))
		case 1:
			id = found[0].ID
		default:
			sort.Slice(found, func(i, k int) bool { return found[i].Name < found[k].Name })
			var names []string
			for i, n := range found {
				if i == 5 {
					names = append(names, fmt.Sprintf("and %d more", len(found)-5))
					break
				}
				names = append(names, fmt.Sprintf("%s (%s)", n.Name, n.ID))
			}
			return nil, fmt.Errorf("host %s: %w: %s; narrow the selector or give a node ID", sel, ErrAmbiguous, strings.Join(names, ", "))
		}
	}
	node, _, err := c.Nodes().Info(id, qo)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("host %s: %w: node %s: %w", sel, ErrNodeNotFound, id, err)
		}
		return nil, fmt.Errorf("read node %s for host %s: %w", id, sel, err)
	}
	if !sel.matches(node.Name, node.NodePool, node.NodeClass) {
		return nil, fmt.Errorf("host %s: %w: node %s is named %q in pool %q class %q", sel, ErrNodeNotFound, id, node.Name, node.NodePool, node.NodeClass)
	}
	if node.Status != api.NodeStatusReady {
		return nil, fmt.Errorf("host %s: %w: node %s (%s) is %q", sel, ErrNodeNotReady, node.Name, node.ID, node.Status)
	}
	return node, nil
}

// capacity is the node's allocatable CPU (MHz) and memory (MB): its
// resources less what is reserved for the OS.
func capacity(n *api.Node) (cpu, mem float64, err error) {
	switch {
	case n.NodeResources != nil:
		cpu = float64(n.NodeResources.Cpu.CpuShares)
		mem = float64(n.NodeResources.Memory.MemoryMB)
		if r := n.ReservedResources; r != nil {
			cpu -= float64(r.Cpu.CpuShares)
			mem -= float64(r.Memory.MemoryMB)
		}
	case n.Resources != nil && n.Resources.CPU != nil:
		// Nomad before 0.9 reports only the deprecated Resources.
		cpu = float64(*n.Resources.CPU)
		if n.Resources.MemoryMB != nil {
			mem = float64(*n.Resources.MemoryMB)
		}
		if r := n.Reserved; r != nil {
			if r.CPU != nil {
				cpu -= float64(*r.CPU)
			}
			if r.MemoryMB != nil {
				mem -= float64(*r.MemoryMB)
			}
		}
	default:
		return 0, 0, fmt.Errorf("%w: NodeResources (the node reports no resources)", ErrMissingData)
	}
	if cpu <= 0 {
		return 0, 0, fmt.Errorf("%w: allocatable CPU is %v MHz after reservations", ErrMissingData, cpu)
	}
	return cpu, max(mem, 0), nil
}

// requested is the CPU (MHz) and memory (MB) an allocation asked for.
func requested(a *api.Allocation) (cpu, mem float64) {
	if ar := a.AllocatedResources; ar != nil {
		for _, t := range ar.Tasks {
			cpu += float64(t.Cpu.CpuShares)
			mem += float64(t.Memory.MemoryMB)
		}
		return cpu, mem
	}
	if r := a.Resources; r != nil {
		if r.CPU != nil {
			cpu = float64(*r.CPU)
		}
		if r.MemoryMB != nil {
			mem = float64(*r.MemoryMB)
		}
	}
	return cpu, mem
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

// groupRequest sums the task group's tasks' requested CPU and memory.
func groupRequest(g *api.TaskGroup) (cpu, mem float64) {
	for _, t := range g.Tasks {
		if t.Resources == nil {
			continue
		}
		if t.Resources.CPU != nil {
			cpu += float64(*t.Resources.CPU)
		}
		if t.Resources.MemoryMB != nil {
			mem += float64(*t.Resources.MemoryMB)
		}
	}
	return cpu, mem
}
