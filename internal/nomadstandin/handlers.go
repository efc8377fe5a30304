package nomadstandin

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

const nomadVersion = "1.10.0"

// jobSubpaths are the job endpoints the stand-in serves, matched on the
// path's end as Nomad's agent does (a job ID may hold a "/").
var jobSubpaths = []string{"/allocations", "/evaluations", "/summary", "/deployments", "/deployment", "/scale"}

func (s *Server) route(w http.ResponseWriter, r *http.Request, body []byte, stop chan struct{}) {
	p := r.URL.EscapedPath()
	get := r.Method == http.MethodGet
	write := r.Method == http.MethodPut || r.Method == http.MethodPost
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = DefaultNamespace
	}
	idOf := func(prefix, suffix string) string {
		id, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(p, prefix), suffix))
		return id
	}
	switch {
	case p == "/v1/nodes" && get:
		s.listNodes(w, r, stop)
	case strings.HasPrefix(p, "/v1/node/"):
		rest := strings.TrimPrefix(p, "/v1/node/")
		id, sub, _ := strings.Cut(rest, "/")
		id, _ = url.PathUnescape(id)
		switch {
		case sub == "" && get:
			s.nodeInfo(w, r, stop, id)
		case sub == "allocations" && get:
			s.nodeAllocs(w, r, stop, id)
		case sub == "drain" && write:
			s.nodeDrain(w, id, body)
		case sub == "eligibility" && write:
			s.nodeEligibility(w, id, body)
		case sub == "" || sub == "allocations" || sub == "drain" || sub == "eligibility":
			writeError(w, errorf(http.StatusMethodNotAllowed, "Invalid method"))
		default:
			writeError(w, errorf(http.StatusNotFound, "Invalid URL path %q: not found (the stand-in does not serve it)", r.URL.Path))
		}
	case p == "/v1/client/stats" && get:
		s.clientStats(w, r)
	case strings.HasPrefix(p, "/v1/client/allocation/") && strings.HasSuffix(p, "/stats") && get:
		s.allocStats(w, idOf("/v1/client/allocation/", "/stats"))
	case p == "/v1/allocations" && get:
		s.listAllocs(w, r, stop)
	case strings.HasPrefix(p, "/v1/allocation/") && get:
		s.allocInfo(w, r, stop, idOf("/v1/allocation/", ""))
	case strings.HasPrefix(p, "/v1/evaluation/") && get:
		s.evalInfo(w, r, stop, idOf("/v1/evaluation/", ""))
	case strings.HasPrefix(p, "/v1/deployment/") && get:
		s.deploymentInfo(w, r, stop, idOf("/v1/deployment/", ""))
	case p == "/v1/scaling/policies" && get:
		s.listPolicies(w, r, stop, ns)
	case strings.HasPrefix(p, "/v1/scaling/policy/") && get:
		s.policyInfo(w, r, stop, idOf("/v1/scaling/policy/", ""))
	case p == "/v1/jobs" && get:
		s.listJobs(w, r, stop, ns)
	case p == "/v1/jobs" && write:
		s.jobRegister(w, r, "", body)
	case strings.HasPrefix(p, "/v1/job/"):
		rest := strings.TrimPrefix(p, "/v1/job/")
		sub := ""
		for _, sp := range jobSubpaths {
			if strings.HasSuffix(rest, sp) {
				sub, rest = sp[1:], strings.TrimSuffix(rest, sp)
				break
			}
		}
		id, err := url.PathUnescape(rest)
		if err != nil || id == "" {
			writeError(w, errorf(http.StatusBadRequest, "missing or invalid job ID"))
			return
		}
		switch {
		case sub == "" && get:
			s.jobInfo(w, r, stop, ns, id)
		case sub == "" && write:
			s.jobRegister(w, r, id, body)
		case sub == "" && r.Method == http.MethodDelete:
			s.jobDeregister(w, r, ns, id)
		case sub == "scale" && get:
			s.jobScaleStatus(w, r, stop, ns, id)
		case sub == "scale" && write:
			s.jobScale(w, ns, id, body)
		case sub == "summary" && get:
			s.jobSummary(w, r, stop, ns, id)
		case sub == "evaluations" && get:
			s.jobEvals(w, r, stop, ns, id)
		case sub == "deployment" && get:
			s.jobDeployment(w, r, stop, ns, id)
		case sub == "deployments" && get:
			s.jobDeployments(w, r, stop, ns, id)
		case sub == "allocations" && get:
			s.jobAllocs(w, r, stop, ns, id)
		default:
			writeError(w, errorf(http.StatusMethodNotAllowed, "Invalid method %s for %s", r.Method, r.URL.Path))
		}
	default:
		writeError(w, errorf(http.StatusNotFound, "Invalid URL path %q: not found (the stand-in does not serve it)", r.URL.Path))
	}
}

func (n *node) resources() (*api.NodeResources, *api.NodeReservedResources) {
	return &api.NodeResources{
			Cpu:            api.NodeCpuResources{CpuShares: n.spec.CPUMHz, TotalCpuCores: uint16(n.spec.Cores)},
			Memory:         api.NodeMemoryResources{MemoryMB: n.spec.MemoryMB},
			Disk:           api.NodeDiskResources{DiskMB: 100 * 1024},
			MinDynamicPort: 20000,
			MaxDynamicPort: 32000,
		}, &api.NodeReservedResources{
			Cpu:    api.NodeReservedCpuResources{CpuShares: uint64(n.spec.ReservedCPUMHz)},
			Memory: api.NodeReservedMemoryResources{MemoryMB: uint64(n.spec.ReservedMemoryMB)},
		}
}

func (n *node) attributes() map[string]string {
	return map[string]string{
		"kernel.name":       "linux",
		"os.name":           "ubuntu",
		"cpu.numcores":      strconv.Itoa(n.spec.Cores),
		"cpu.totalcompute":  strconv.FormatInt(n.spec.CPUMHz, 10),
		"memory.totalbytes": strconv.FormatInt(n.spec.MemoryMB*1024*1024, 10),
		"unique.hostname":   n.spec.Name,
		"nomad.version":     nomadVersion,
	}
}

// nodeFilterFields are the node fields a filter may name.
const nodeFilterFields = "ID, Name, Datacenter, NodePool, NodeClass, Status, StatusDescription, SchedulingEligibility, " +
	"HTTPAddr, TLSEnabled, CreateIndex, ModifyIndex, Meta, Attributes, DrainStrategy (is nil / is not nil)"

// nomadNodeFields are structs.Node's other fields: Nomad filters on them,
// the stand-in does not.
var nomadNodeFields = map[string]bool{
	"SecretID": true, "CgroupParent": true, "NodeResources": true, "ReservedResources": true, "Links": true,
	"ComputedClass": true, "StatusUpdatedAt": true, "IdentitySigningKeyID": true, "Events": true, "Drivers": true,
	"CSIControllerPlugins": true, "CSINodePlugins": true, "HostVolumes": true, "GCVolumesOnNodeGC": true,
	"HostNetworks": true, "LastDrain": true, "NodeMaxAllocs": true, "LastMissedHeartbeatIndex": true,
	"LastAllocUpdateIndex": true, "Resources": true, "Reserved": true,
}

func nodeSchema(p []string) error {
	switch p[0] {
	case "ID", "Name", "Datacenter", "NodePool", "NodeClass", "Status", "StatusDescription", "SchedulingEligibility",
		"HTTPAddr", "TLSEnabled", "CreateIndex", "ModifyIndex":
		if len(p) > 1 {
			return unknownField(p, 1)
		}
	case "Meta", "Attributes":
		if len(p) > 2 {
			return unsupportedField(p, nodeFilterFields)
		}
	case "DrainStrategy":
		if len(p) > 1 {
			return unsupportedField(p, nodeFilterFields)
		}
	default:
		if nomadNodeFields[p[0]] {
			return unsupportedField(p, nodeFilterFields)
		}
		return unknownField(p, 0)
	}
	return nil
}

func nodeResolver(n *node) resolver {
	return func(p []string) (fieldValue, error) {
		switch p[0] {
		case "ID":
			return strField(n.spec.ID), nil
		case "Name":
			return strField(n.spec.Name), nil
		case "Datacenter":
			return strField(n.spec.Datacenter), nil
		case "NodePool":
			return strField(n.spec.NodePool), nil
		case "NodeClass":
			return strField(n.spec.NodeClass), nil
		case "Status":
			return strField(n.spec.Status), nil
		case "StatusDescription":
			return strField(""), nil
		case "SchedulingEligibility":
			return strField(n.spec.Eligibility), nil
		case "HTTPAddr":
			return strField("127.0.0.1:4646"), nil
		case "TLSEnabled":
			return boolField(false), nil
		case "CreateIndex":
			return uintField(n.createIndex), nil
		case "ModifyIndex":
			return uintField(n.modifyIndex), nil
		case "Meta", "Attributes":
			m := n.spec.Meta
			if p[0] == "Attributes" {
				m = n.attributes()
			}
			if len(p) == 2 {
				return mapKey(m, p[1]), nil
			}
			return mapField(m), nil
		case "DrainStrategy":
			return ptrField(n.drain == nil), nil
		}
		return fieldValue{}, unknownField(p, 0)
	}
}

func (s *Server) nodeStub(n *node, withRes, withOS bool) *api.NodeListStub {
	stub := &api.NodeListStub{
		Address:               "127.0.0.1",
		ID:                    n.spec.ID,
		Datacenter:            n.spec.Datacenter,
		Name:                  n.spec.Name,
		NodeClass:             n.spec.NodeClass,
		NodePool:              n.spec.NodePool,
		Version:               nomadVersion,
		Drain:                 n.drain != nil,
		SchedulingEligibility: n.spec.Eligibility,
		Status:                n.spec.Status,
		Drivers:               map[string]*api.DriverInfo{},
		LastDrain:             copyDrainMeta(n.lastDrain),
		CreateIndex:           n.createIndex,
		ModifyIndex:           n.modifyIndex,
	}
	if withRes {
		stub.NodeResources, stub.ReservedResources = n.resources()
	}
	if withOS {
		stub.Attributes = map[string]string{"os.name": "ubuntu"}
	}
	return stub
}

func copyDrainMeta(m *api.DrainMetadata) *api.DrainMetadata {
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request, stop chan struct{}) {
	q := r.URL.Query()
	f, err := parseFilterFor(q.Get("filter"), nodeSchema)
	if err != nil {
		writeError(w, err)
		return
	}
	prefix := q.Get("prefix")
	withRes := q.Get("resources") == "true"
	withOS := q.Get("os") == "true"
	s.blocking(w, r, stop, func() (uint64, any, error) {
		out := []*api.NodeListStub{}
		start := sort.SearchStrings(s.nodeOrder, prefix)
		for _, id := range s.nodeOrder[start:] {
			if !strings.HasPrefix(id, prefix) {
				break
			}
			n := s.nodes[id]
			ok, err := f.match(nodeResolver(n))
			if err != nil {
				return 0, nil, err
			}
			if ok {
				out = append(out, s.nodeStub(n, withRes, withOS))
			}
		}
		return s.nodesIndex, out, nil
	})
}

func (s *Server) apiNode(n *node) *api.Node {
	res, reserved := n.resources()
	var drain *api.DrainStrategy
	if n.drain != nil {
		d := *n.drain
		drain = &d
	}
	return &api.Node{
		ID:         n.spec.ID,
		Datacenter: n.spec.Datacenter,
		Name:       n.spec.Name,
		HTTPAddr:   "127.0.0.1:4646",
		Attributes: n.attributes(),
		// Nomad's node has no Drain field any more (the api's is
		// deprecated and stays false); DrainStrategy tells.
		DrainStrategy:         drain,
		NodeResources:         res,
		ReservedResources:     reserved,
		Meta:                  n.spec.Meta,
		NodeClass:             n.spec.NodeClass,
		NodePool:              n.spec.NodePool,
		SchedulingEligibility: n.spec.Eligibility,
		Status:                n.spec.Status,
		Drivers:               map[string]*api.DriverInfo{},
		LastDrain:             copyDrainMeta(n.lastDrain),
		CreateIndex:           n.createIndex,
		ModifyIndex:           n.modifyIndex,
	}
}

func (s *Server) nodeInfo(w http.ResponseWriter, r *http.Request, stop chan struct{}, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		n, ok := s.nodes[id]
		if !ok {
			return 0, nil, errorf(http.StatusNotFound, "node not found")
		}
		return n.modifyIndex, s.apiNode(n), nil
	})
}

func (a *alloc) resources() *api.AllocatedResources {
	out := &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{}, Shared: api.AllocatedSharedResources{DiskMB: 300}}
	for _, t := range a.tasks {
		out.Tasks[t.name] = &api.AllocatedTaskResources{
			Cpu:    api.AllocatedCpuResources{CpuShares: t.cpu, ReservedCores: slices.Clone(t.cores)},
			Memory: api.AllocatedMemoryResources{MemoryMB: t.mem},
		}
	}
	return out
}

func (a *alloc) taskStates() map[string]*api.TaskState {
	st := &api.TaskState{
		State:     "running",
		StartedAt: time.Unix(0, a.startedAt).UTC(),
		Events: []*api.TaskEvent{
			{Type: "Received", Time: a.createTime, DisplayMessage: "Task received by client"},
			{Type: "Started", Time: a.startedAt, DisplayMessage: "Task started by client"},
		},
	}
	if !a.live() {
		st.State = "dead"
		st.FinishedAt = time.Unix(0, a.finishedAt).UTC()
		st.Events = append(st.Events, &api.TaskEvent{Type: "Killed", Time: a.finishedAt, DisplayMessage: "Task successfully killed"})
	}
	return map[string]*api.TaskState{a.task: st}
}

func (a *alloc) deploymentStatus() *api.AllocDeploymentStatus {
	if a.healthy == nil {
		return nil
	}
	return &api.AllocDeploymentStatus{Healthy: new(*a.healthy), Timestamp: time.Unix(0, a.modifyTime).UTC(), ModifyIndex: a.modifyIndex}
}

func (s *Server) apiAlloc(a *alloc, withJob bool) *api.Allocation {
	out := &api.Allocation{
		ID:                 a.id,
		Namespace:          a.namespace,
		EvalID:             a.evalID,
		Name:               a.name,
		NodeID:             a.nodeID,
		JobID:              a.jobID,
		TaskGroup:          a.group,
		AllocatedResources: a.resources(),
		DesiredStatus:      a.desiredStatus,
		DesiredDescription: a.desiredDesc,
		ClientStatus:       a.clientStatus,
		TaskStates:         a.taskStates(),
		DeploymentID:       a.deploymentID,
		DeploymentStatus:   a.deploymentStatus(),
		CreateIndex:        a.createIndex,
		ModifyIndex:        a.modifyIndex,
		AllocModifyIndex:   a.modifyIndex,
		CreateTime:         a.createTime,
		ModifyTime:         a.modifyTime,
	}
	if a.live() {
		out.ClientDescription = "Tasks are running"
	} else {
		out.ClientDescription = "All tasks have completed"
	}
	if n, ok := s.nodes[a.nodeID]; ok {
		out.NodeName = n.spec.Name
	}
	if withJob {
		if j, ok := s.jobs[jobKey{a.namespace, a.jobID}]; ok {
			out.Job = s.apiJob(j)
		}
	}
	return out
}

// allocStub is an allocation's list stub; withResources adds its
// AllocatedResources, as Nomad's Allocation.Stub does only when asked
// (Job.Allocations asks for none: alloc.Stub(nil)).
func (s *Server) allocStub(a *alloc, withResources bool) *api.AllocationListStub {
	stub := &api.AllocationListStub{
		ID: a.id, Namespace: a.namespace, EvalID: a.evalID, Name: a.name, NodeID: a.nodeID,
		JobID: a.jobID, JobType: api.JobTypeService, JobVersion: a.jobVersion, TaskGroup: a.group,
		DesiredStatus: a.desiredStatus, DesiredDescription: a.desiredDesc,
		ClientStatus: a.clientStatus, TaskStates: a.taskStates(), DeploymentStatus: a.deploymentStatus(),
		CreateIndex: a.createIndex, ModifyIndex: a.modifyIndex, CreateTime: a.createTime, ModifyTime: a.modifyTime,
	}
	if withResources {
		stub.AllocatedResources = a.resources()
	}
	if n, ok := s.nodes[a.nodeID]; ok {
		stub.NodeName = n.spec.Name
	}
	return stub
}

func sortAllocs(as []*alloc) {
	sort.Slice(as, func(i, k int) bool {
		if as[i].createIndex != as[k].createIndex {
			return as[i].createIndex < as[k].createIndex
		}
		return as[i].seq < as[k].seq
	})
}

// nodeAllocs answers GET /v1/node/:id/allocations. Like Nomad
// (Node.GetAllocs), it ignores a filter parameter.
func (s *Server) nodeAllocs(w http.ResponseWriter, r *http.Request, stop chan struct{}, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		// Like Nomad, an unknown node simply has no allocations.
		out := []*api.Allocation{}
		n, ok := s.nodes[id]
		if !ok || len(n.allocs) == 0 {
			return s.allocsIndex, out, nil
		}
		as := make([]*alloc, 0, len(n.allocs))
		var idx uint64
		for _, a := range n.allocs {
			idx = max(idx, a.modifyIndex)
			as = append(as, a)
		}
		sortAllocs(as)
		for _, a := range as {
			out = append(out, s.apiAlloc(a, true))
		}
		return idx, out, nil
	})
}

func (j *job) allAllocs() []*alloc {
	var as []*alloc
	for _, g := range append(j.groups, j.retired...) {
		as = append(as, g.terminal...)
		as = append(as, g.stopping...)
		as = append(as, g.live...)
	}
	sortAllocs(as)
	return as
}

// jobAllocs answers GET /v1/job/:id/allocations. Like Nomad
// (Job.Allocations), it ignores a filter parameter (filter with
// GET /v1/allocations) and answers stubs without AllocatedResources.
func (s *Server) jobAllocs(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		j, ok := s.jobs[jobKey{ns, id}]
		if !ok {
			// Nomad answers an empty list for an unknown job.
			return s.allocsIndex, []*api.AllocationListStub{}, nil
		}
		as := j.allAllocs()
		out := make([]*api.AllocationListStub, len(as))
		for i, a := range as {
			out[i] = s.allocStub(a, false)
		}
		return s.allocsIndex, out, nil
	})
}

const allocFilterFields = "ID, Name, Namespace, EvalID, NodeID, NodeName, JobID, TaskGroup, DesiredStatus, ClientStatus, " +
	"DeploymentID, CreateIndex, ModifyIndex, CreateTime, ModifyTime"

var nomadAllocFields = map[string]bool{
	"Job": true, "Resources": true, "AllocatedResources": true, "TaskResources": true, "SharedResources": true,
	"Metrics": true, "DesiredDescription": true, "DesiredTransition": true, "ClientDescription": true, "TaskStates": true,
	"AllocStates": true, "PreviousAllocation": true, "NextAllocation": true, "DeploymentStatus": true,
	"RescheduleTracker": true, "NetworkStatus": true, "FollowupEvalID": true, "PreemptedAllocations": true,
	"PreemptedByAllocation": true, "SignedIdentities": true, "SigningKeyID": true, "AllocModifyIndex": true,
}

func allocSchema(p []string) error {
	switch p[0] {
	case "ID", "Name", "Namespace", "EvalID", "NodeID", "NodeName", "JobID", "TaskGroup", "DesiredStatus", "ClientStatus",
		"DeploymentID", "CreateIndex", "ModifyIndex", "CreateTime", "ModifyTime":
		if len(p) > 1 {
			return unknownField(p, 1)
		}
		return nil
	}
	if nomadAllocFields[p[0]] {
		return unsupportedField(p, allocFilterFields)
	}
	return unknownField(p, 0)
}

func (s *Server) allocResolver(a *alloc) resolver {
	return func(p []string) (fieldValue, error) {
		switch p[0] {
		case "ID":
			return strField(a.id), nil
		case "Name":
			return strField(a.name), nil
		case "Namespace":
			return strField(a.namespace), nil
		case "EvalID":
			return strField(a.evalID), nil
		case "NodeID":
			return strField(a.nodeID), nil
		case "NodeName":
			name := ""
			if n, ok := s.nodes[a.nodeID]; ok {
				name = n.spec.Name
			}
			return strField(name), nil
		case "JobID":
			return strField(a.jobID), nil
		case "TaskGroup":
			return strField(a.group), nil
		case "DesiredStatus":
			return strField(a.desiredStatus), nil
		case "ClientStatus":
			return strField(a.clientStatus), nil
		case "DeploymentID":
			return strField(a.deploymentID), nil
		case "CreateIndex":
			return uintField(a.createIndex), nil
		case "ModifyIndex":
			return uintField(a.modifyIndex), nil
		case "CreateTime":
			return intField(a.createTime), nil
		case "ModifyTime":
			return intField(a.modifyTime), nil
		}
		return fieldValue{}, unknownField(p, 0)
	}
}

// listAllocs answers GET /v1/allocations (namespace, prefix, filter),
// Nomad's allocation list, which does evaluate filters.
func (s *Server) listAllocs(w http.ResponseWriter, r *http.Request, stop chan struct{}) {
	q := r.URL.Query()
	f, err := parseFilterFor(q.Get("filter"), allocSchema)
	if err != nil {
		writeError(w, err)
		return
	}
	ns := q.Get("namespace")
	if ns == "" {
		ns = DefaultNamespace
	}
	prefix := q.Get("prefix")
	// Resources only when asked for (resources=true), as Nomad's stubs.
	withResources := false
	if v := q.Get("resources"); v != "" {
		if withResources, err = strconv.ParseBool(v); err != nil {
			writeError(w, errorf(http.StatusInternalServerError, "Failed to parse value of %q (%v) as a bool: %v", "resources", v, err)) // a plain error in Nomad: 500
			return
		}
	}
	s.blocking(w, r, stop, func() (uint64, any, error) {
		var as []*alloc
		for _, a := range s.allocs {
			if (ns == "*" || a.namespace == ns) && strings.HasPrefix(a.id, prefix) {
				as = append(as, a)
			}
		}
		sortAllocs(as)
		out := []*api.AllocationListStub{}
		for _, a := range as {
			ok, err := f.match(s.allocResolver(a))
			if err != nil {
				return 0, nil, err
			}
			if ok {
				out = append(out, s.allocStub(a, withResources))
			}
		}
		return s.allocsIndex, out, nil
	})
}

func (s *Server) allocInfo(w http.ResponseWriter, r *http.Request, stop chan struct{}, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		a, ok := s.allocs[id]
		if !ok {
			return 0, nil, errorf(http.StatusNotFound, "alloc not found")
		}
		return a.modifyIndex, s.apiAlloc(a, true), nil
	})
}

const mib = 1024 * 1024

// hostStats is client stats as Nomad sends them: api.HostStats does not
// decode the Timestamp (Unix ns) Nomad includes.
type hostStats struct {
	api.HostStats
	Timestamp uint64
}

func (s *Server) clientStats(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("node_id")
	s.mu.RLock()
	n, ok := s.nodes[id]
	var stats *hostStats
	connected := ok && n.connected()
	if ok {
		cpu, mem := n.cpuMHz, n.memMB
		for _, a := range n.allocs {
			if a.live() {
				cpu += a.cpuMHz
				mem += a.memMB
			}
		}
		total := uint64(n.spec.MemoryMB) * mib
		used := min(uint64(max(mem, 0)*mib), total)
		busy := 100 * cpu / float64(n.spec.CPUMHz)
		cpus := make([]*api.HostCPUStats, n.spec.Cores)
		for i := range cpus {
			cpus[i] = &api.HostCPUStats{CPU: "cpu" + strconv.Itoa(i), User: busy * 0.8, System: busy * 0.2, Idle: max(0, 100-busy)}
		}
		stats = &hostStats{HostStats: api.HostStats{
			Memory:           &api.HostMemoryStats{Total: total, Used: used, Available: total - used, Free: total - used},
			CPU:              cpus,
			Uptime:           3600,
			CPUTicksConsumed: cpu,
		}, Timestamp: uint64(s.statsTime(time.Now()))}
	}
	idx := s.index
	s.mu.RUnlock()
	if id == "" {
		writeError(w, errorf(http.StatusBadRequest, "missing node_id: the stand-in serves client stats only through a server (node_id is required)"))
		return
	}
	if !ok {
		writeError(w, errorf(http.StatusNotFound, "Unknown node %q: node not found", id))
		return
	}
	if !connected {
		writeError(w, errorf(http.StatusNotFound, "No path to node"))
		return
	}
	writeJSON(w, idx, stats)
}

// allocStats answers an allocation's stats: the allocation's usage, or zero
// CPU ticks and zero memory while it is within its group's Warmup after it
// started (a just-started task's first stats); with a stats interval
// (SetStatsInterval), an allocation started after the latest refresh has no
// stats yet: zeroed, with Timestamp 0 and no task, as Nomad answers.
func (s *Server) allocStats(w http.ResponseWriter, id string) {
	s.mu.RLock()
	a, ok := s.allocs[id]
	var usage *api.AllocResourceUsage
	if n := s.nodeOf(a, ok); n != nil && !n.connected() {
		s.mu.RUnlock()
		writeError(w, errorf(http.StatusNotFound, "No path to node"))
		return
	}
	if ok && a.live() {
		now := time.Now()
		cpuMHz, memMB := a.cpuMHz, a.memMB
		if a.warmup > 0 && now.Before(time.Unix(0, a.startedAt).Add(a.warmup)) {
			cpuMHz, memMB = 0, 0
		}
		ts := s.statsTime(now)
		noStats := s.statsEvery > 0 && ts < a.startedAt
		if noStats {
			// Started after the client's latest stats refresh: no task has
			// stats yet, and Nomad answers zeroed stats with Timestamp 0.
			cpuMHz, memMB, ts = 0, 0, 0
		}
		var coreMHz float64 = 1
		if n, ok := s.nodes[a.nodeID]; ok {
			coreMHz = float64(n.spec.CPUMHz) / float64(n.spec.Cores)
		}
		ru := &api.ResourceUsage{
			MemoryStats: &api.MemoryStats{RSS: uint64(max(memMB, 0) * mib), Usage: uint64(max(memMB, 0) * mib), Measured: []string{"RSS", "Usage"}},
			CpuStats: &api.CpuStats{
				TotalTicks: cpuMHz,
				Percent:    100 * cpuMHz / coreMHz,
				UserMode:   80 * cpuMHz / coreMHz,
				SystemMode: 20 * cpuMHz / coreMHz,
				Measured:   []string{"System Mode", "User Mode", "Percent", "Total Ticks"},
			},
		}
		usage = &api.AllocResourceUsage{
			ResourceUsage: ru,
			Tasks:         map[string]*api.TaskResourceUsage{a.task: {ResourceUsage: ru, Timestamp: ts}},
			Timestamp:     ts,
		}
		if noStats {
			usage.Tasks = map[string]*api.TaskResourceUsage{}
		}
	}
	idx := s.index
	s.mu.RUnlock()
	if usage == nil {
		writeError(w, errorf(http.StatusNotFound, "Unknown allocation %q: not found", id))
		return
	}
	writeJSON(w, idx, usage)
}

func (s *Server) evalInfo(w http.ResponseWriter, r *http.Request, stop chan struct{}, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		ev, ok := s.evals[id]
		if !ok {
			return 0, nil, errorf(http.StatusNotFound, "eval not found")
		}
		return ev.ModifyIndex, copyEval(ev), nil
	})
}

// jobEvals answers GET /v1/job/:id/evaluations, newest first.
func (s *Server) jobEvals(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		out := []*api.Evaluation{}
		j, ok := s.jobs[jobKey{ns, id}]
		if !ok {
			return s.evalsIndex, out, nil
		}
		for i := len(j.evals) - 1; i >= 0; i-- {
			out = append(out, copyEval(j.evals[i]))
		}
		return s.evalsIndex, out, nil
	})
}

func (s *Server) jobSummary(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		j, ok := s.jobs[jobKey{ns, id}]
		if !ok {
			return 0, nil, errorf(http.StatusNotFound, "job not found")
		}
		out := &api.JobSummary{JobID: j.id, Namespace: j.namespace, Summary: map[string]api.TaskGroupSummary{},
			CreateIndex: j.createIndex, ModifyIndex: max(j.summaryIndex, j.allocIndex, j.createIndex)}
		for _, g := range j.groups {
			out.Summary[g.name] = api.TaskGroupSummary{Queued: g.queued, Running: len(g.live), Complete: g.complete}
		}
		return out.ModifyIndex, out, nil
	})
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns string) {
	q := r.URL.Query()
	if q.Get("filter") != "" {
		writeError(w, errorf(http.StatusBadRequest, "the Nomad stand-in does not evaluate filters on the job list; filter on the client side"))
		return
	}
	prefix := q.Get("prefix")
	s.blocking(w, r, stop, func() (uint64, any, error) {
		out := []*api.JobListStub{}
		for _, j := range s.jobs {
			if (ns == "*" || j.namespace == ns) && strings.HasPrefix(j.id, prefix) {
				aj := s.apiJob(j)
				out = append(out, &api.JobListStub{
					ID: j.id, Name: j.id, Namespace: j.namespace, Datacenters: aj.Datacenters, Type: api.JobTypeService,
					Priority: j.conf.Priority, Status: *aj.Status, Stop: j.stopped,
					SubmitTime: j.submitTime, CreateIndex: j.createIndex, ModifyIndex: j.modifyIndex, JobModifyIndex: j.jobModifyIndex,
				})
			}
		}
		sort.Slice(out, func(i, k int) bool { return out[i].ID < out[k].ID })
		return s.jobsIndex, out, nil
	})
}

func (s *Server) jobInfo(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		j, ok := s.jobs[jobKey{ns, id}]
		if !ok {
			return 0, nil, errorf(http.StatusNotFound, "job not found")
		}
		return j.modifyIndex, s.apiJob(j), nil
	})
}

func (s *Server) jobDeployment(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		j, ok := s.jobs[jobKey{ns, id}]
		if !ok {
			// Nomad's Job.LatestDeployment never looks the job up: an
			// unknown job has no deployment (200, null).
			return s.deploymentsIndex, nil, nil
		}
		if j.deployment == nil {
			// Nomad answers null when the job never had a deployment.
			return max(j.modifyIndex, s.deploymentsIndex), nil, nil
		}
		d := copyDeployment(j.deployment.d)
		return max(j.modifyIndex, d.ModifyIndex), d, nil
	})
}

func (s *Server) jobDeployments(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		out := []*api.Deployment{}
		j, ok := s.jobs[jobKey{ns, id}]
		if !ok {
			return s.deploymentsIndex, out, nil
		}
		for _, d := range j.deployments {
			out = append(out, copyDeployment(d.d))
		}
		return s.deploymentsIndex, out, nil
	})
}

func (s *Server) deploymentInfo(w http.ResponseWriter, r *http.Request, stop chan struct{}, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		d, ok := s.deployments[id]
		if !ok {
			return 0, nil, errorf(http.StatusNotFound, "deployment not found")
		}
		return d.d.ModifyIndex, copyDeployment(d.d), nil
	})
}

func (s *Server) jobScaleStatus(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		j, ok := s.jobs[jobKey{ns, id}]
		if !ok {
			return 0, nil, errorf(http.StatusNotFound, "job not found")
		}
		idx := max(j.modifyIndex, j.allocIndex, j.eventsIndex)
		out := &api.JobScaleStatusResponse{
			JobID:          j.id,
			Namespace:      j.namespace,
			JobCreateIndex: j.createIndex,
			// Nomad's Job.ScaleStatus reports the job's ModifyIndex here.
			JobModifyIndex: j.modifyIndex,
			JobStopped:     j.stopped,
			TaskGroups:     map[string]api.TaskGroupScaleStatus{},
		}
		for _, g := range j.groups {
			st := api.TaskGroupScaleStatus{Desired: g.count, Events: append([]api.ScalingEvent(nil), g.events...)}
			for _, a := range g.live {
				st.Placed++
				st.Running++
				if a.healthy != nil {
					if *a.healthy {
						st.Healthy++
					} else {
						st.Unhealthy++
					}
				}
			}
			out.TaskGroups[g.name] = st
		}
		return idx, out, nil
	})
}

// nodeOf is the node of alloc a (nil when there is no such alloc, ok false,
// or node). Callers hold s.mu.
func (s *Server) nodeOf(a *alloc, ok bool) *node {
	if !ok || a == nil {
		return nil
	}
	return s.nodes[a.nodeID]
}
