package nomadstandin

import (
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/nomad/api"
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
	// (ReservedResources).
	ReservedCPUMHz   int64
	ReservedMemoryMB int64
	// Status defaults to "ready".
	Status string
	// Meta is the node's metadata.
	Meta map[string]string
}

// GroupSpec describes one task group of a job.
type GroupSpec struct {
	Name string
	// Count is the initial count.
	Count int
	// Task is the name of the group's only task (default "app").
	Task string
	// CPUMHz and MemoryMB are the task's requested resources.
	CPUMHz   int
	MemoryMB int
	// NodeID places every allocation of the group on that node (the job
	// carries a matching ${node.unique.id} constraint). Required.
	NodeID string
	// ScalingMin and ScalingMax, when set, add a scaling block: Nomad
	// refuses scale requests outside [min, max].
	ScalingMin *int64
	ScalingMax *int64
}

// JobSpec describes a service job.
type JobSpec struct {
	ID        string
	Namespace string
	Groups    []GroupSpec
}

type node struct {
	spec        NodeSpec
	createIndex uint64
	modifyIndex uint64
	// background usage of the node besides the allocations
	cpuMHz, memMB float64
}

type alloc struct {
	id, namespace, jobID, group, task, nodeID, name string
	index                                           int
	cpuReq, memReq                                  int
	clientStatus, desiredStatus                     string
	createIndex, modifyIndex                        uint64
	createTime, modifyTime                          int64
	cpuMHz, memMB                                   float64
}

type group struct {
	spec   GroupSpec
	count  int
	events []api.ScalingEvent // newest first
	// usage given to new allocations of the group
	cpuMHz, memMB float64
	nextIndex     int
}

type job struct {
	id, namespace            string
	groups                   []*group
	stopped                  bool
	version                  uint64
	createIndex, modifyIndex uint64
	jobModifyIndex           uint64
	submitTime               int64
	deployment               *api.Deployment
}

func (j *job) group(name string) *group {
	for _, g := range j.groups {
		if g.spec.Name == name {
			return g
		}
	}
	return nil
}

type jobKey struct{ namespace, id string }

// maxTerminalAllocs is how many stopped allocations a group keeps listed
// before they are garbage collected, as Nomad keeps terminal allocations
// until GC.
const maxTerminalAllocs = 20

// maxEvents is how many scaling events a group keeps (Nomad keeps 20).
const maxEvents = 20

// bump advances the state index; callers hold s.mu.
func (s *Server) bump() uint64 {
	s.index++
	close(s.changed)
	s.changed = make(chan struct{})
	return s.index
}

// AddNode adds a ready node and returns its ID.
func (s *Server) AddNode(spec NodeSpec) (string, error) {
	if spec.CPUMHz <= 0 {
		return "", fmt.Errorf("nomadstandin: node %q: CPUMHz must be > 0", spec.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if spec.ID == "" {
		s.seq++
		spec.ID = fmt.Sprintf("%08x-aaaa-4bbb-8ccc-%012x", s.seq, s.seq)
	}
	if _, dup := s.nodes[spec.ID]; dup {
		return "", fmt.Errorf("nomadstandin: node %s already exists", spec.ID)
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
	idx := s.bump()
	s.nodes[spec.ID] = &node{spec: spec, createIndex: idx, modifyIndex: idx}
	return spec.ID, nil
}

// SetNodeStatus changes a node's status ("ready", "down", ...).
func (s *Server) SetNodeStatus(nodeID, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[nodeID]
	if !ok {
		return fmt.Errorf("nomadstandin: node %s not found", nodeID)
	}
	n.spec.Status = status
	n.modifyIndex = s.bump()
	return nil
}

// SetNodeUsage sets the node's background usage: what runs on it besides
// the allocations the stand-in knows. The node's client stats report this
// plus the usage of its running allocations. Usage is not state: it does
// not advance the index, as stats are not raft writes in Nomad.
func (s *Server) SetNodeUsage(nodeID string, cpuMHz, memoryMB float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[nodeID]
	if !ok {
		return fmt.Errorf("nomadstandin: node %s not found", nodeID)
	}
	n.cpuMHz, n.memMB = cpuMHz, memoryMB
	return nil
}

// AddJob registers a running service job and places its allocations.
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
	j := &job{id: spec.ID, namespace: spec.Namespace, submitTime: time.Now().UnixNano()}
	for _, gs := range spec.Groups {
		if gs.Name == "" {
			return fmt.Errorf("nomadstandin: job %s: a group has no name", spec.ID)
		}
		if _, ok := s.nodes[gs.NodeID]; !ok {
			return fmt.Errorf("nomadstandin: job %s group %s: node %q not found", spec.ID, gs.Name, gs.NodeID)
		}
		if gs.Task == "" {
			gs.Task = "app"
		}
		if gs.Count < 0 {
			return fmt.Errorf("nomadstandin: job %s group %s: count %d < 0", spec.ID, gs.Name, gs.Count)
		}
		j.groups = append(j.groups, &group{spec: gs, count: gs.Count})
	}
	idx := s.bump()
	j.createIndex, j.modifyIndex, j.jobModifyIndex = idx, idx, idx
	s.jobs[key] = j
	s.reconcileLocked(j)
	return nil
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
	j.version++
	j.modifyIndex = s.bump()
	j.jobModifyIndex = j.modifyIndex
	s.reconcileLocked(j)
	return nil
}

// SetDeploymentActive starts (active) or ends a deployment of the job.
// While one is running, Nomad refuses scale requests that change a count
// with "job scaling blocked due to active deployment".
func (s *Server) SetDeploymentActive(namespace, jobID string, active bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.jobLocked(namespace, jobID)
	if err != nil {
		return err
	}
	idx := s.bump()
	now := time.Now().UnixNano()
	if active {
		s.seq++
		j.deployment = &api.Deployment{
			ID:                fmt.Sprintf("%08x-dddd-4ddd-8ddd-%012x", s.seq, s.seq),
			Namespace:         j.namespace,
			JobID:             j.id,
			JobVersion:        j.version,
			JobModifyIndex:    j.modifyIndex,
			JobCreateIndex:    j.createIndex,
			TaskGroups:        map[string]*api.DeploymentState{},
			Status:            api.DeploymentStatusRunning,
			StatusDescription: "Deployment is running",
			CreateIndex:       idx,
			ModifyIndex:       idx,
			CreateTime:        now,
			ModifyTime:        now,
		}
		for _, g := range j.groups {
			j.deployment.TaskGroups[g.spec.Name] = &api.DeploymentState{DesiredTotal: g.count}
		}
		return nil
	}
	if j.deployment != nil {
		j.deployment.Status = api.DeploymentStatusSuccessful
		j.deployment.StatusDescription = "Deployment completed successfully"
		j.deployment.ModifyIndex = idx
		j.deployment.ModifyTime = now
	}
	return nil
}

// SetGroupUsage sets the usage of every running allocation of the group,
// per allocation, and the usage new allocations of the group start with.
func (s *Server) SetGroupUsage(namespace, jobID, groupName string, cpuMHzPerAlloc, memoryMBPerAlloc float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.jobLocked(namespace, jobID)
	if err != nil {
		return err
	}
	g := j.group(groupName)
	if g == nil {
		return fmt.Errorf("nomadstandin: job %s has no group %q", jobID, groupName)
	}
	g.cpuMHz, g.memMB = cpuMHzPerAlloc, memoryMBPerAlloc
	for _, a := range s.allocs {
		if a.namespace == j.namespace && a.jobID == j.id && a.group == groupName && a.clientStatus == api.AllocClientStatusRunning {
			a.cpuMHz, a.memMB = cpuMHzPerAlloc, memoryMBPerAlloc
		}
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
	// Count is the group's desired count; Running the running allocations.
	Count   int
	Running int
	// Events are the group's scaling events, newest first.
	Events []api.ScalingEvent
}

// Group returns the group's current status.
func (s *Server) Group(namespace, jobID, groupName string) (GroupStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.jobLocked(namespace, jobID)
	if err != nil {
		return GroupStatus{}, err
	}
	g := j.group(groupName)
	if g == nil {
		return GroupStatus{}, fmt.Errorf("nomadstandin: job %s has no group %q", jobID, groupName)
	}
	st := GroupStatus{Count: g.count, Events: append([]api.ScalingEvent(nil), g.events...)}
	for _, a := range s.allocs {
		if a.namespace == j.namespace && a.jobID == j.id && a.group == groupName && a.clientStatus == api.AllocClientStatusRunning {
			st.Running++
		}
	}
	return st, nil
}

// SetGroupCount sets a group's count directly, as an operator's job
// submission would (no scaling event), and places or stops allocations.
func (s *Server) SetGroupCount(namespace, jobID, groupName string, count int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.jobLocked(namespace, jobID)
	if err != nil {
		return err
	}
	g := j.group(groupName)
	if g == nil {
		return fmt.Errorf("nomadstandin: job %s has no group %q", jobID, groupName)
	}
	if count < 0 {
		return fmt.Errorf("nomadstandin: count %d < 0", count)
	}
	g.count = count
	j.version++
	j.modifyIndex = s.bump()
	j.jobModifyIndex = j.modifyIndex
	s.reconcileLocked(j)
	return nil
}

// AllocIDs lists the running allocations of a group, oldest first.
func (s *Server) AllocIDs(namespace, jobID, groupName string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if namespace == "" {
		namespace = DefaultNamespace
	}
	var as []*alloc
	for _, a := range s.allocs {
		if a.namespace == namespace && a.jobID == jobID && a.group == groupName && a.clientStatus == api.AllocClientStatusRunning {
			as = append(as, a)
		}
	}
	sort.Slice(as, func(i, k int) bool { return as[i].index < as[k].index })
	ids := make([]string, len(as))
	for i, a := range as {
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

// reconcileLocked places or stops allocations so that each group of j runs
// its count (none when the job is stopped). Placement is immediate: a new
// allocation is running at once.
func (s *Server) reconcileLocked(j *job) {
	now := time.Now().UnixNano()
	for _, g := range j.groups {
		var running []*alloc
		var terminal []*alloc
		for _, a := range s.allocs {
			if a.namespace == j.namespace && a.jobID == j.id && a.group == g.spec.Name {
				if a.clientStatus == api.AllocClientStatusRunning {
					running = append(running, a)
				} else {
					terminal = append(terminal, a)
				}
			}
		}
		sort.Slice(running, func(i, k int) bool { return running[i].index < running[k].index })
		want := g.count
		if j.stopped {
			want = 0
		}
		for len(running) > want {
			a := running[len(running)-1]
			running = running[:len(running)-1]
			a.clientStatus, a.desiredStatus = api.AllocClientStatusComplete, api.AllocDesiredStatusStop
			a.modifyIndex, a.modifyTime = s.bump(), now
			terminal = append(terminal, a)
		}
		for len(running) < want {
			s.seq++
			idx := s.bump()
			a := &alloc{
				id:            fmt.Sprintf("%08x-a110-4c00-8000-%012x", s.seq, s.seq),
				namespace:     j.namespace,
				jobID:         j.id,
				group:         g.spec.Name,
				task:          g.spec.Task,
				nodeID:        g.spec.NodeID,
				name:          fmt.Sprintf("%s.%s[%d]", j.id, g.spec.Name, g.nextIndex),
				index:         g.nextIndex,
				cpuReq:        g.spec.CPUMHz,
				memReq:        g.spec.MemoryMB,
				clientStatus:  api.AllocClientStatusRunning,
				desiredStatus: api.AllocDesiredStatusRun,
				createIndex:   idx,
				modifyIndex:   idx,
				createTime:    now,
				modifyTime:    now,
				cpuMHz:        g.cpuMHz,
				memMB:         g.memMB,
			}
			g.nextIndex++
			s.allocs[a.id] = a
			running = append(running, a)
		}
		if len(terminal) > maxTerminalAllocs {
			sort.Slice(terminal, func(i, k int) bool { return terminal[i].modifyIndex < terminal[k].modifyIndex })
			for _, a := range terminal[:len(terminal)-maxTerminalAllocs] {
				delete(s.allocs, a.id)
			}
		}
	}
}
