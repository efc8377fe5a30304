package nomadstandin

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadreserve"
)

// DefaultNamespace is the namespace used when a request or a spec names none.
const DefaultNamespace = "default"

// NodeSpec describes a node (a Nomad client) to add to the stand-in.
type NodeSpec struct {
	// ID is the node's ID; generated when empty.
	ID string
	// Name is the node's name; defaults to the ID.
	Name string
	// Datacenter defaults to "dc1", NodePool to "default".
	Datacenter string
	NodePool   string
	NodeClass  string
	// CPUMHz and MemoryMB are the node's total resources (NodeResources);
	// Cores is the number of CPU cores (default 4).
	CPUMHz   int64
	MemoryMB int64
	Cores    int
	// ReservedCPUMHz and ReservedMemoryMB are set aside for the OS
	// (ReservedResources). An allocation is placed on the node only while
	// the reservations of its allocations fit in what is left.
	ReservedCPUMHz   int64
	ReservedMemoryMB int64
	// Status defaults to "ready".
	Status string
	// Eligibility is the scheduling eligibility, "eligible" (default) or
	// "ineligible".
	Eligibility string
	// Drain starts the node draining (and so ineligible), as
	// SetNodeDrain(id, true) does.
	Drain bool
	// Meta is the node's metadata.
	Meta map[string]string
}

// UpdateSpec is a task group's update block. A group with one gets a
// deployment whenever its job gets a new version (a scale with a count or
// a job registration that changes the job), and Nomad refuses scale
// requests that set a count while that deployment runs.
type UpdateSpec struct {
	// MaxParallel is the update block's max_parallel; 0 is taken as 1
	// (leave Update nil for a group without deployments).
	MaxParallel int
	// MinHealthyTime is shown in the job (default 10s).
	MinHealthyTime time.Duration
	// AutoComplete makes a deployment succeed this long after it started
	// (once every allocation it wants is placed); 0 keeps it running until
	// SetDeploymentActive(namespace, job, false).
	AutoComplete time.Duration
}

// GroupSpec describes one task group of a job.
type GroupSpec struct {
	Name string
	// Count is the initial count.
	Count int
	// Task is the name of the group's only task (default "app").
	Task string
	// CPUMHz and MemoryMB are the task's requested resources; Cores,
	// when set, reserves that many of the node's cores instead of CPUMHz
	// (Nomad reserves their bandwidth: the node's MHz per core each).
	CPUMHz   int
	MemoryMB int
	Cores    int
	// Tasks are the group's other tasks (sidecars, prestart, poststart
	// and poststop tasks), after the first: an allocation reserves what
	// Nomad's rule makes of them all (nomadreserve.Allocation).
	Tasks []TaskSpec
	// NodeID pins every allocation of the group to that node (the job
	// carries a matching ${node.unique.id} constraint); NodeName pins to
	// the node(s) of that name (${node.unique.name}). NodePool and
	// Datacenter, when set, restrict the group to nodes of that pool
	// (${node.pool}) or datacenter (${node.datacenter}); among the nodes
	// that qualify, the scheduler picks the one with the most free CPU. A
	// group with none of these may run on any node of the job's pool.
	NodeID     string
	NodeName   string
	NodePool   string
	Datacenter string
	// ScalingMin and ScalingMax, when set, add a scaling block: Nomad
	// refuses scale requests outside [min, max]. ScalingPolicy, when set,
	// adds one too, with that policy body (as a jobspec's policy block
	// decodes: see GET /v1/scaling/policy/:id); ScalingDisabled is its
	// enabled = false.
	ScalingMin      *int64
	ScalingMax      *int64
	ScalingPolicy   map[string]any
	ScalingDisabled bool
	// Update, when set, is the group's update block (deployments).
	Update *UpdateSpec
	// Warmup makes a new allocation's stats report zero CPU ticks and zero
	// memory for this long after it started, as Nomad shows for a task
	// whose first stats sample is not in yet.
	Warmup time.Duration
}

// TaskSpec is a task of a group beside its first one.
type TaskSpec struct {
	Name             string
	CPUMHz, MemoryMB int
	// Hook is the task's lifecycle hook ("" for a main task, "prestart",
	// "poststart" or "poststop"); Sidecar keeps a prestart task running
	// beside the main ones.
	Hook    string
	Sidecar bool
}

// JobSpec describes a service job.
type JobSpec struct {
	ID        string
	Namespace string
	Groups    []GroupSpec
	// NodePool is the job's node pool. When empty: the one pool every
	// group's pinned node or NodePool is in, "default" when no group names
	// one, and "all" (every node) when they differ.
	NodePool string
	// Datacenters defaults to ["*"].
	Datacenters []string
	// Priority defaults to 50.
	Priority int
}

// OtherJobSpec is another tenant's job: one group of Count allocations,
// each reserving CPUMHz and MemoryMB, pinned to NodeID. Tests use it to
// fill a node with reservations the job under test competes with; its
// allocations are placed and stopped by the same rules as any job's.
type OtherJobSpec struct {
	ID        string
	Namespace string
	NodeID    string
	Count     int
	CPUMHz    int
	MemoryMB  int
}

type node struct {
	spec        NodeSpec
	createIndex uint64
	modifyIndex uint64
	// background usage of the node besides the allocations
	cpuMHz, memMB float64
	drain         *api.DrainStrategy
	lastDrain     *api.DrainMetadata
	// reservations of the node's non-terminal allocations
	usedCPU, usedMem int64
	allocs           map[string]*alloc
}

func (n *node) eligible() bool {
	return n.spec.Eligibility == api.NodeSchedulingEligible && n.drain == nil
}

// connected says whether the node's client answers the servers' RPCs: a
// node down or disconnected does not, and Nomad answers a client endpoint
// for it (stats) with 404 "No path to node" (command/agent's
// IsErrNoNodeConn mapping).
func (n *node) connected() bool {
	return n.spec.Status != api.NodeStatusDown && n.spec.Status != api.NodeStatusDisconnected
}

// ready is Nomad's Node.Ready: status ready, not draining, eligible.
func (n *node) ready() bool { return n.spec.Status == api.NodeStatusReady && n.eligible() }

func (n *node) allocCPU() int64 { return n.spec.CPUMHz - n.spec.ReservedCPUMHz }

// coreMHz is the bandwidth of one of the node's cores.
func (n *node) coreMHz() int64 { return n.spec.CPUMHz / int64(n.spec.Cores) }

// tasks are the tasks of one allocation of the group on node n, with what
// each reserves there: the first task's cores at n's MHz per core. Cores are
// reserved by their bandwidth only: which cores is not modelled (every
// allocation lists cores from 0), nor running out of them.
func (c *groupConf) tasks(n *node) []allocTask {
	first := allocTask{name: c.Task, cpu: int64(c.CPU), mem: int64(c.Mem)}
	if c.Cores > 0 {
		first.cpu = int64(c.Cores) * n.coreMHz()
		for k := range c.Cores {
			first.cores = append(first.cores, uint16(k))
		}
	}
	out := []allocTask{first}
	for _, t := range c.Extra {
		out = append(out, allocTask{name: t.Name, cpu: int64(t.CPUMHz), mem: int64(t.MemoryMB), hook: t.Hook, sidecar: t.Sidecar})
	}
	return out
}

// request is what one allocation of the group reserves on node n, by
// Nomad's rule over its tasks.
func (c *groupConf) request(n *node) (cpu, mem int) {
	ts := c.tasks(n)
	rt := make([]nomadreserve.Task, len(ts))
	for i, t := range ts {
		rt[i] = nomadreserve.Task{CPUMHz: float64(t.cpu), MemoryMB: float64(t.mem), Cores: len(t.cores) > 0, Hook: t.hook, Sidecar: t.sidecar}
	}
	c2, m2 := nomadreserve.Allocation(rt)
	return int(c2), int(m2)
}

// allocTask is one task of an allocation and what it reserves.
type allocTask struct {
	name     string
	cpu, mem int64
	cores    []uint16
	hook     string
	sidecar  bool
}

func (n *node) allocMem() int64 { return n.spec.MemoryMB - n.spec.ReservedMemoryMB }
func (n *node) freeCPU() int64  { return n.allocCPU() - n.usedCPU }

// fits reports whether cpu and mem more fit, or the first dimension that
// does not ("cpu", "memory"), as Nomad's AllocsFit names them.
func (n *node) fits(cpu, mem int) (bool, string) {
	if n.usedCPU+int64(cpu) > n.allocCPU() {
		return false, "cpu"
	}
	if n.usedMem+int64(mem) > n.allocMem() {
		return false, "memory"
	}
	return true, ""
}

type alloc struct {
	id, namespace, jobID, group, task, nodeID, name, evalID string
	seq                                                     uint64
	nameIndex                                               int
	cpuReq, memReq                                          int
	tasks                                                   []allocTask
	clientStatus, desiredStatus, desiredDesc                string
	createIndex, modifyIndex                                uint64
	createTime, modifyTime                                  int64
	startedAt, finishedAt                                   int64
	warmup                                                  time.Duration
	jobVersion                                              uint64
	deploymentID                                            string
	healthy                                                 *bool
	cpuMHz, memMB                                           float64
}

func (a *alloc) live() bool { return a.clientStatus == api.AllocClientStatusRunning }

// constraint is a job or group constraint as the stand-in evaluates it.
type constraint struct {
	LTarget, RTarget, Operand string
}

func (c constraint) String() string {
	if c.Operand == "distinct_hosts" {
		return "distinct_hosts"
	}
	return fmt.Sprintf("%s %s %s", c.LTarget, c.Operand, c.RTarget)
}

// groupConf is what a registration sets for a group, besides its count.
type groupConf struct {
	Task        string
	CPU, Mem    int
	Cores       int        // the first task's reserved cores (CPU is then 0)
	Extra       []TaskSpec // the other tasks
	Constraints []constraint
	Update      *UpdateSpec
	ScalingMin  *int64
	ScalingMax  *int64
	Scaling     bool
	// ScalingPolicy is the scaling block's policy body as registered
	// (opaque to Nomad); ScalingDisabled its enabled = false.
	ScalingPolicy   map[string]any
	ScalingDisabled bool
	Warmup          time.Duration
}

type group struct {
	name   string
	conf   groupConf
	count  int
	pinned string // node ID when a ${node.unique.id} = constraint pins it
	// scalingID is the scaling policy's ID (stable across versions);
	// policy is the policy as last written (nil: none).
	scalingID string
	policy    *policyState
	live      []*alloc // running allocations, oldest first
	terminal  []*alloc // stopped allocations still listed, oldest first
	stopping  []*alloc // desired stop, still running (SetAllocStopping)
	queued    int
	complete  int                // stopped allocations, for the job summary
	events    []api.ScalingEvent // newest first
	// usage given to new allocations of the group
	cpuMHz, memMB float64
}

// jobConf is what a registration sets for a job, besides its groups.
type jobConf struct {
	NodePool    string
	Datacenters []string
	Priority    int
	Constraints []constraint
}

type job struct {
	id, namespace            string
	conf                     jobConf
	groups                   []*group
	retired                  []*group // groups a registration removed
	stopped                  bool
	policyIDs                map[string]bool // the scaling policies last written
	version                  uint64
	createIndex, modifyIndex uint64
	jobModifyIndex           uint64
	// indexes of the last change of the job's allocations, summary and
	// scaling events (for blocking queries)
	allocIndex, summaryIndex, eventsIndex uint64
	submitTime                            int64
	deployment                            *deploy   // latest
	deployments                           []*deploy // newest first
	evals                                 []*api.Evaluation
	blocked                               *api.Evaluation
	cached                                atomic.Pointer[api.Job]
}

type deploy struct {
	d     *api.Deployment
	job   *job
	timer *time.Timer
	due   bool
}

func (d *deploy) active() bool {
	switch d.d.Status {
	case api.DeploymentStatusRunning, api.DeploymentStatusPaused, api.DeploymentStatusPending,
		api.DeploymentStatusBlocked, api.DeploymentStatusUnblocking, "initializing":
		return true
	}
	return false
}

func (j *job) group(name string) *group {
	for _, g := range j.groups {
		if g.name == name {
			return g
		}
	}
	return nil
}

func (j *job) key() jobKey { return jobKey{j.namespace, j.id} }

// changed drops the cached api.Job; callers hold s.mu.
func (j *job) changed() { j.cached.Store(nil) }

type jobKey struct{ namespace, id string }

// maxTerminalAllocs is how many stopped allocations a group keeps listed
// before they are garbage collected, as Nomad keeps terminal allocations
// until GC.
const maxTerminalAllocs = 20

// maxEvents is how many scaling events a group keeps (Nomad keeps 20).
const maxEvents = 20

// maxEvals and maxDeployments are how many a job keeps listed.
const (
	maxEvals       = 50
	maxDeployments = 10
)

// bump advances the state index; callers hold s.mu.
func (s *Server) bump() uint64 {
	s.index++
	close(s.changed)
	s.changed = make(chan struct{})
	return s.index
}

// newID returns a UUID-shaped ID whose second group tells the kind.
func (s *Server) newID(kind string) string {
	s.seq++
	return fmt.Sprintf("%08x-%s-4%03x-8%03x-%012x", s.seq, kind, s.seq>>12&0xfff, s.seq&0xfff, s.seq)
}

func (s *Server) normalizeNodeLocked(spec *NodeSpec) error {
	if spec.CPUMHz <= 0 {
		return fmt.Errorf("nomadstandin: node %q: CPUMHz must be > 0", spec.Name)
	}
	if spec.ID == "" {
		s.seq++
		spec.ID = fmt.Sprintf("%08x-aaaa-4bbb-8ccc-%012x", s.seq, s.seq)
	}
	if _, dup := s.nodes[spec.ID]; dup {
		return fmt.Errorf("nomadstandin: node %s already exists", spec.ID)
	}
	if spec.Name == "" {
		spec.Name = spec.ID
	}
	if spec.Datacenter == "" {
		spec.Datacenter = "dc1"
	}
	if spec.NodePool == "" {
		spec.NodePool = "default"
	}
	if spec.Cores <= 0 {
		spec.Cores = 4
	}
	if spec.Status == "" {
		spec.Status = api.NodeStatusReady
	}
	switch spec.Eligibility {
	case "":
		spec.Eligibility = api.NodeSchedulingEligible
	case api.NodeSchedulingEligible, api.NodeSchedulingIneligible:
	default:
		return fmt.Errorf("nomadstandin: node %q: eligibility %q is neither %q nor %q", spec.Name, spec.Eligibility, api.NodeSchedulingEligible, api.NodeSchedulingIneligible)
	}
	return nil
}

func (s *Server) insertNodeLocked(spec NodeSpec, idx uint64) {
	if spec.Meta != nil {
		m := make(map[string]string, len(spec.Meta))
		for k, v := range spec.Meta {
			m[k] = v
		}
		spec.Meta = m
	}
	n := &node{spec: spec, createIndex: idx, modifyIndex: idx, allocs: map[string]*alloc{}}
	if spec.Drain {
		n.drain, n.lastDrain = newDrain(time.Now())
		n.spec.Eligibility = api.NodeSchedulingIneligible
	}
	n.spec.Drain = false
	s.nodes[spec.ID] = n
	s.nodesIndex = idx
}

// AddNode adds a node (ready and eligible unless the spec says otherwise)
// and returns its ID. Queued allocations that fit on it are placed.
func (s *Server) AddNode(spec NodeSpec) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.normalizeNodeLocked(&spec); err != nil {
		return "", err
	}
	idx := s.bump()
	s.insertNodeLocked(spec, idx)
	i := sort.SearchStrings(s.nodeOrder, spec.ID)
	s.nodeOrder = append(s.nodeOrder, "")
	copy(s.nodeOrder[i+1:], s.nodeOrder[i:])
	s.nodeOrder[i] = spec.ID
	s.unblockLocked()
	return spec.ID, nil
}

// AddNodes adds n nodes made from template in one state change and returns
// their IDs. IDs are generated (template.ID must be empty); names are
// template.Name + "-<i>" (i from 1), or the IDs when template.Name is
// empty. It is the cheap way to set up thousands of nodes.
func (s *Server) AddNodes(n int, template NodeSpec) ([]string, error) {
	if template.ID != "" {
		return nil, fmt.Errorf("nomadstandin: AddNodes: the template must not have an ID")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	specs := make([]NodeSpec, n)
	for i := range specs {
		spec := template
		if template.Name != "" {
			spec.Name = fmt.Sprintf("%s-%d", template.Name, i+1)
		}
		if err := s.normalizeNodeLocked(&spec); err != nil {
			return nil, err
		}
		specs[i] = spec
	}
	idx := s.bump()
	ids := make([]string, n)
	for i, spec := range specs {
		s.insertNodeLocked(spec, idx)
		ids[i] = spec.ID
	}
	s.nodeOrder = append(s.nodeOrder, ids...)
	sort.Strings(s.nodeOrder)
	s.unblockLocked()
	return ids, nil
}

func (s *Server) nodeLocked(nodeID string) (*node, error) {
	n, ok := s.nodes[nodeID]
	if !ok {
		return nil, fmt.Errorf("nomadstandin: node %s not found", nodeID)
	}
	return n, nil
}

// SetNodeStatus changes a node's status ("ready", "down", ...). Only ready
// nodes get new allocations; allocations already on a node that goes down
// keep running (Nomad would mark them lost: not modelled).
func (s *Server) SetNodeStatus(nodeID, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.nodeLocked(nodeID)
	if err != nil {
		return err
	}
	n.spec.Status = status
	n.modifyIndex = s.bump()
	s.nodesIndex = n.modifyIndex
	s.unblockLocked()
	return nil
}

func newDrain(now time.Time) (*api.DrainStrategy, *api.DrainMetadata) {
	return &api.DrainStrategy{
			DrainSpec:     api.DrainSpec{Deadline: time.Hour},
			ForceDeadline: now.Add(time.Hour),
			StartedAt:     now,
		}, &api.DrainMetadata{
			StartedAt: now,
			UpdatedAt: now,
			Status:    api.DrainStatusDraining,
		}
}

// SetNodeDrain starts (drain) or cancels a drain of the node, as `nomad
// node drain -enable` / `-disable` do: a draining node has a DrainStrategy
// and is ineligible; cancelling marks it eligible again. A draining node
// gets no new allocation. Allocations already on it keep running (the
// drainer's migrations are not modelled).
func (s *Server) SetNodeDrain(nodeID string, drain bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.nodeLocked(nodeID)
	if err != nil {
		return err
	}
	now := time.Now()
	if drain {
		if n.drain != nil {
			return nil
		}
		n.drain, n.lastDrain = newDrain(now)
		n.spec.Eligibility = api.NodeSchedulingIneligible
	} else {
		if n.drain == nil {
			return nil
		}
		n.drain = nil
		if n.lastDrain != nil {
			n.lastDrain.Status = api.DrainStatusCanceled
			n.lastDrain.UpdatedAt = now
		}
		n.spec.Eligibility = api.NodeSchedulingEligible
	}
	n.modifyIndex = s.bump()
	s.nodesIndex = n.modifyIndex
	s.unblockLocked()
	return nil
}

// SetNodeEligibility marks the node eligible or ineligible for scheduling.
// As in Nomad, a draining node cannot be marked eligible.
func (s *Server) SetNodeEligibility(nodeID string, eligible bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.nodeLocked(nodeID)
	if err != nil {
		return err
	}
	if err := s.setEligibilityLocked(n, eligible); err != nil {
		return fmt.Errorf("nomadstandin: %w", err)
	}
	return nil
}

func (s *Server) setEligibilityLocked(n *node, eligible bool) error {
	if eligible && n.drain != nil {
		return fmt.Errorf("can not set node's scheduling eligibility to eligible while it is draining")
	}
	e := api.NodeSchedulingIneligible
	if eligible {
		e = api.NodeSchedulingEligible
	}
	if n.spec.Eligibility == e {
		return nil
	}
	n.spec.Eligibility = e
	n.modifyIndex = s.bump()
	s.nodesIndex = n.modifyIndex
	s.unblockLocked()
	return nil
}

// SetNodeUsage sets the node's background usage: what runs on it besides
// the allocations the stand-in knows. The node's client stats report this
// plus the usage of its running allocations. Usage is not state: it does
// not advance the index, as stats are not raft writes in Nomad.
func (s *Server) SetNodeUsage(nodeID string, cpuMHz, memoryMB float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.nodeLocked(nodeID)
	if err != nil {
		return err
	}
	n.cpuMHz, n.memMB = cpuMHz, memoryMB
	return nil
}

// groupFromSpec checks a group spec and turns it into the model.
func (s *Server) groupFromSpec(jobID string, gs GroupSpec, jobPool string) (*group, error) {
	if gs.Name == "" {
		return nil, fmt.Errorf("nomadstandin: job %s: a group has no name", jobID)
	}
	if gs.Count < 0 {
		return nil, fmt.Errorf("nomadstandin: job %s group %s: count %d < 0", jobID, gs.Name, gs.Count)
	}
	if gs.Task == "" {
		gs.Task = "app"
	}
	c := groupConf{Task: gs.Task, CPU: gs.CPUMHz, Mem: gs.MemoryMB, Cores: gs.Cores, Extra: slices.Clone(gs.Tasks), ScalingMin: gs.ScalingMin, ScalingMax: gs.ScalingMax,
		Scaling: gs.ScalingMin != nil || gs.ScalingMax != nil || gs.ScalingPolicy != nil || gs.ScalingDisabled, ScalingDisabled: gs.ScalingDisabled, Warmup: gs.Warmup}
	if c.Scaling {
		// As a registration would give it: Nomad requires a max and sets
		// an unset min to the count; the body as the API carries it (JSON
		// numbers, lists and maps), a copy of the caller's.
		if c.ScalingMax == nil {
			return nil, fmt.Errorf("nomadstandin: job %s group %s: a scaling block needs ScalingMax (Nomad requires a max)", jobID, gs.Name)
		}
		if c.ScalingMin == nil {
			c.ScalingMin = new(int64(gs.Count))
		}
		if gs.ScalingPolicy != nil {
			b, err := json.Marshal(gs.ScalingPolicy)
			if err == nil {
				err = json.Unmarshal(b, &c.ScalingPolicy)
			}
			if err != nil {
				return nil, fmt.Errorf("nomadstandin: job %s group %s: ScalingPolicy: %w", jobID, gs.Name, err)
			}
		}
	}
	if gs.Cores > 0 {
		c.CPU = 0
	}
	if gs.NodeID != "" {
		if _, ok := s.nodes[gs.NodeID]; !ok {
			return nil, fmt.Errorf("nomadstandin: job %s group %s: node %q not found", jobID, gs.Name, gs.NodeID)
		}
		c.Constraints = append(c.Constraints, constraint{LTarget: "${node.unique.id}", RTarget: gs.NodeID, Operand: "="})
	}
	if gs.NodeName != "" {
		found := false
		for _, n := range s.nodes {
			if n.spec.Name == gs.NodeName {
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("nomadstandin: job %s group %s: no node is named %q", jobID, gs.Name, gs.NodeName)
		}
		c.Constraints = append(c.Constraints, constraint{LTarget: "${node.unique.name}", RTarget: gs.NodeName, Operand: "="})
	}
	if gs.NodePool != "" && gs.NodePool != jobPool {
		c.Constraints = append(c.Constraints, constraint{LTarget: "${node.pool}", RTarget: gs.NodePool, Operand: "="})
	}
	if gs.Datacenter != "" {
		c.Constraints = append(c.Constraints, constraint{LTarget: "${node.datacenter}", RTarget: gs.Datacenter, Operand: "="})
	}
	if gs.Update != nil {
		u := *gs.Update
		if u.MaxParallel <= 0 {
			u.MaxParallel = 1
		}
		if u.MinHealthyTime == 0 {
			u.MinHealthyTime = 10 * time.Second
		}
		c.Update = &u
	}
	g := &group{name: gs.Name, count: gs.Count, conf: c}
	g.pinned = pinnedNode(c.Constraints)
	return g, nil
}

// pinnedNode is the node a ${node.unique.id} = constraint names, if any.
func pinnedNode(cs []constraint) string {
	for _, c := range cs {
		if c.LTarget == "${node.unique.id}" && (c.Operand == "=" || c.Operand == "==" || c.Operand == "is") {
			return c.RTarget
		}
	}
	return ""
}

// jobPool is the node pool a JobSpec without one gets.
func (s *Server) jobPool(spec JobSpec) string {
	if spec.NodePool != "" {
		return spec.NodePool
	}
	pools := map[string]bool{}
	for _, gs := range spec.Groups {
		switch {
		case gs.NodeID != "":
			if n, ok := s.nodes[gs.NodeID]; ok {
				pools[n.spec.NodePool] = true
			}
		case gs.NodeName != "":
			for _, n := range s.nodes {
				if n.spec.Name == gs.NodeName {
					pools[n.spec.NodePool] = true
				}
			}
		case gs.NodePool != "":
			pools[gs.NodePool] = true
		default:
			pools["default"] = true
		}
	}
	switch len(pools) {
	case 0:
		return "default"
	case 1:
		for p := range pools {
			return p
		}
	}
	return "all"
}

// AddJob registers a running service job and places its allocations (those
// that do not fit stay queued, with a blocked evaluation). A group with an
// update block starts as if its first deployment had succeeded.
func (s *Server) AddJob(spec JobSpec) error {
	if spec.ID == "" {
		return fmt.Errorf("nomadstandin: job ID is required")
	}
	if spec.Namespace == "" {
		spec.Namespace = DefaultNamespace
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := jobKey{spec.Namespace, spec.ID}
	if _, dup := s.jobs[key]; dup {
		return fmt.Errorf("nomadstandin: job %s/%s already exists", spec.Namespace, spec.ID)
	}
	conf := jobConf{NodePool: s.jobPool(spec), Datacenters: spec.Datacenters, Priority: spec.Priority}
	if len(conf.Datacenters) == 0 {
		conf.Datacenters = []string{"*"}
	}
	if conf.Priority == 0 {
		conf.Priority = 50
	}
	j := &job{id: spec.ID, namespace: spec.Namespace, conf: conf, submitTime: time.Now().UnixNano()}
	seen := map[string]bool{}
	for _, gs := range spec.Groups {
		g, err := s.groupFromSpec(spec.ID, gs, conf.NodePool)
		if err != nil {
			return err
		}
		if seen[g.name] {
			return fmt.Errorf("nomadstandin: job %s: two groups are named %q", spec.ID, g.name)
		}
		seen[g.name] = true
		if g.conf.Scaling {
			g.scalingID = s.newID("5ca1")
		}
		j.groups = append(j.groups, g)
	}
	idx := s.bump()
	j.createIndex, j.modifyIndex, j.jobModifyIndex = idx, idx, idx
	s.jobs[key] = j
	s.jobsIndex = idx
	s.syncPoliciesLocked(j)
	s.evaluateLocked(j, "job-register", false)
	s.initialDeploymentLocked(j)
	s.unblockLocked()
	return nil
}

// AddOtherJob adds another tenant's job (see OtherJobSpec): one group
// "other" with task "other".
func (s *Server) AddOtherJob(spec OtherJobSpec) error {
	return s.AddJob(JobSpec{ID: spec.ID, Namespace: spec.Namespace, Groups: []GroupSpec{{
		Name: "other", Task: "other", Count: spec.Count, CPUMHz: spec.CPUMHz, MemoryMB: spec.MemoryMB, NodeID: spec.NodeID,
	}}})
}

// newVersionLocked records a new version of j (an operator's submission).
func (s *Server) newVersionLocked(j *job) {
	j.version++
	idx := s.bump()
	j.modifyIndex, j.jobModifyIndex = idx, idx
	j.submitTime = time.Now().UnixNano()
	s.jobsIndex = idx
	s.syncPoliciesLocked(j)
	j.changed()
}

// SetJobStopped stops (or starts again) a job: a stopped job runs no
// allocation and its scale status says JobStopped.
func (s *Server) SetJobStopped(namespace, jobID string, stopped bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.jobLocked(namespace, jobID)
	if err != nil {
		return err
	}
	j.stopped = stopped
	s.newVersionLocked(j)
	s.evaluateLocked(j, "job-register", true)
	s.unblockLocked()
	return nil
}

// SetDeploymentActive starts (active) or ends a deployment of the job.
// While one is running, Nomad refuses scale requests that set a count with
// "job scaling blocked due to active deployment". A deployment started
// here (or by an update block with AutoComplete 0) runs until
// SetDeploymentActive(..., false), which marks it successful.
func (s *Server) SetDeploymentActive(namespace, jobID string, active bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.jobLocked(namespace, jobID)
	if err != nil {
		return err
	}
	idx := s.bump()
	if active {
		s.startDeploymentLocked(j, idx, j.groups, true)
		return nil
	}
	if j.deployment != nil && j.deployment.active() {
		s.completeDeploymentLocked(j.deployment, idx)
	}
	return nil
}

// SetGroupUsage sets the usage of every running allocation of the group,
// per allocation, and the usage new allocations of the group start with.
func (s *Server) SetGroupUsage(namespace, jobID, groupName string, cpuMHzPerAlloc, memoryMBPerAlloc float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, _, err := s.groupLocked(namespace, jobID, groupName)
	if err != nil {
		return err
	}
	g.cpuMHz, g.memMB = cpuMHzPerAlloc, memoryMBPerAlloc
	for _, a := range g.live {
		a.cpuMHz, a.memMB = cpuMHzPerAlloc, memoryMBPerAlloc
	}
	return nil
}

// SetAllocUsage sets one allocation's usage.
func (s *Server) SetAllocUsage(allocID string, cpuMHz, memoryMB float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.allocs[allocID]
	if !ok {
		return fmt.Errorf("nomadstandin: allocation %s not found", allocID)
	}
	a.cpuMHz, a.memMB = cpuMHz, memoryMB
	return nil
}

// GroupStatus is the stand-in's view of a task group, for assertions.
type GroupStatus struct {
	// Count is the group's desired count; Running the running allocations;
	// Queued the allocations the scheduler could not place.
	Count   int
	Running int
	Queued  int
	// Events are the group's scaling events, newest first.
	Events []api.ScalingEvent
}

// Group returns the group's current status.
func (s *Server) Group(namespace, jobID, groupName string) (GroupStatus, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, _, err := s.groupLocked(namespace, jobID, groupName)
	if err != nil {
		return GroupStatus{}, err
	}
	return GroupStatus{Count: g.count, Running: len(g.live), Queued: g.queued, Events: append([]api.ScalingEvent(nil), g.events...)}, nil
}

// Queued is the number of the group's allocations the scheduler could not
// place (what the job summary shows as Queued); 0 for an unknown group.
func (s *Server) Queued(namespace, jobID, groupName string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, _, err := s.groupLocked(namespace, jobID, groupName)
	if err != nil {
		return 0
	}
	return g.queued
}

// SetGroupCount sets a group's count directly, as an operator's job
// submission would (no scaling event): a new job version, allocations
// placed or stopped, and a deployment for groups with an update block.
func (s *Server) SetGroupCount(namespace, jobID, groupName string, count int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, j, err := s.groupLocked(namespace, jobID, groupName)
	if err != nil {
		return err
	}
	if count < 0 {
		return fmt.Errorf("nomadstandin: count %d < 0", count)
	}
	g.count = count
	s.newVersionLocked(j)
	s.evaluateLocked(j, "job-register", true)
	s.unblockLocked()
	return nil
}

// SetAllocStopping scales the allocation's group down by one by stopping
// this allocation, which keeps running, as a task in its shutdown_delay
// (or kill_timeout) does: its desired status is stop, its client status
// stays running (its stats still answer), the group's count and running
// allocations drop by one, and it keeps its room on the node: Nomad's
// scheduler counts every allocation its client has not reported terminal
// (scheduler/feasible/context.go, ProposedAllocs). It stays so: the
// stand-in does not end it.
func (s *Server) SetAllocStopping(allocID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.allocs[allocID]
	if !ok || !a.live() || a.desiredStatus != api.AllocDesiredStatusRun {
		return fmt.Errorf("nomadstandin: allocation %s is not running", allocID)
	}
	g, j, err := s.groupLocked(a.namespace, a.jobID, a.group)
	if err != nil {
		return err
	}
	i := slices.Index(g.live, a)
	if i < 0 {
		return fmt.Errorf("nomadstandin: allocation %s is not among its group's running ones", allocID)
	}
	g.live = slices.Delete(g.live, i, i+1)
	g.stopping = append(g.stopping, a)
	g.count--
	s.newVersionLocked(j)
	idx := s.bump()
	a.desiredStatus, a.desiredDesc = api.AllocDesiredStatusStop, "alloc not needed due to job update"
	a.modifyIndex, a.modifyTime = idx, time.Now().UnixNano()
	j.allocIndex, s.allocsIndex = idx, idx
	return nil
}

// AllocIDs lists the running allocations of a group, oldest first.
func (s *Server) AllocIDs(namespace, jobID, groupName string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	g, _, err := s.groupLocked(namespace, jobID, groupName)
	if err != nil {
		return nil
	}
	ids := make([]string, len(g.live))
	for i, a := range g.live {
		ids[i] = a.id
	}
	return ids
}

func (s *Server) jobLocked(namespace, jobID string) (*job, error) {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	j, ok := s.jobs[jobKey{namespace, jobID}]
	if !ok {
		return nil, fmt.Errorf("nomadstandin: job %s/%s not found", namespace, jobID)
	}
	return j, nil
}

func (s *Server) groupLocked(namespace, jobID, groupName string) (*group, *job, error) {
	j, err := s.jobLocked(namespace, jobID)
	if err != nil {
		return nil, nil, err
	}
	g := j.group(groupName)
	if g == nil {
		return nil, nil, fmt.Errorf("nomadstandin: job %s has no group %q", jobID, groupName)
	}
	return g, j, nil
}

// durationJSON reads a duration given as nanoseconds or as a string
// ("110ms").
func durationJSON(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		return time.ParseDuration(strings.TrimSpace(s))
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, err
	}
	return time.Duration(n), nil
}

// UnmarshalJSON accepts durations as nanoseconds or strings ("30s").
func (u *UpdateSpec) UnmarshalJSON(b []byte) error {
	var aux struct {
		MaxParallel                  int
		MinHealthyTime, AutoComplete json.RawMessage
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	var err error
	u.MaxParallel = aux.MaxParallel
	if u.MinHealthyTime, err = durationJSON(aux.MinHealthyTime); err != nil {
		return fmt.Errorf("MinHealthyTime: %w", err)
	}
	if u.AutoComplete, err = durationJSON(aux.AutoComplete); err != nil {
		return fmt.Errorf("AutoComplete: %w", err)
	}
	return nil
}

// UnmarshalJSON accepts Warmup as nanoseconds or a string ("5s").
func (g *GroupSpec) UnmarshalJSON(b []byte) error {
	type plain GroupSpec
	aux := struct {
		*plain
		Warmup json.RawMessage
	}{plain: (*plain)(g)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	d, err := durationJSON(aux.Warmup)
	if err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	g.Warmup = d
	return nil
}
