package nomadstandin

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

func (s *Server) route(w http.ResponseWriter, r *http.Request, body []byte, stop chan struct{}) {
	path := r.URL.EscapedPath()
	get := r.Method == http.MethodGet
	switch {
	case path == "/v1/nodes" && get:
		s.listNodes(w, r, stop)
	case strings.HasPrefix(path, "/v1/node/") && get:
		rest := strings.TrimPrefix(path, "/v1/node/")
		id, sub, _ := strings.Cut(rest, "/")
		id, _ = url.PathUnescape(id)
		switch sub {
		case "":
			s.nodeInfo(w, r, stop, id)
		case "allocations":
			s.nodeAllocs(w, r, stop, id)
		default:
			writeError(w, errorf(http.StatusNotFound, "Invalid URL path %q: not found", r.URL.Path))
		}
	case path == "/v1/client/stats" && get:
		s.clientStats(w, r)
	case strings.HasPrefix(path, "/v1/client/allocation/") && strings.HasSuffix(path, "/stats") && get:
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/v1/client/allocation/"), "/stats")
		id, _ = url.PathUnescape(id)
		s.allocStats(w, id)
	case strings.HasPrefix(path, "/v1/job/"):
		rest := strings.TrimPrefix(path, "/v1/job/")
		id, sub, _ := strings.Cut(rest, "/")
		id, err := url.PathUnescape(id)
		if err != nil || id == "" {
			writeError(w, errorf(http.StatusBadRequest, "missing or invalid job ID"))
			return
		}
		ns := r.URL.Query().Get("namespace")
		if ns == "" {
			ns = DefaultNamespace
		}
		switch {
		case sub == "" && get:
			s.jobInfo(w, r, stop, ns, id)
		case sub == "scale" && get:
			s.jobScaleStatus(w, r, stop, ns, id)
		case sub == "scale" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
			s.jobScale(w, ns, id, body)
		case sub == "deployment" && get:
			s.jobDeployment(w, r, stop, ns, id)
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
		"cpu.numcores":      strconv.Itoa(n.spec.Cores),
		"cpu.totalcompute":  strconv.FormatInt(n.spec.CPUMHz, 10),
		"memory.totalbytes": strconv.FormatInt(n.spec.MemoryMB*1024*1024, 10),
		"unique.hostname":   n.spec.Name,
		"nomad.version":     "1.10.0",
	}
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request, stop chan struct{}) {
	q := r.URL.Query()
	if q.Get("filter") != "" {
		writeError(w, errorf(http.StatusBadRequest, "the stand-in does not evaluate filter expressions; filter on the client side"))
		return
	}
	prefix := q.Get("prefix")
	withRes := q.Get("resources") == "true"
	s.blocking(w, r, stop, func() (uint64, any, error) {
		out := []*api.NodeListStub{}
		var idx uint64
		for _, n := range s.nodes {
			if !strings.HasPrefix(n.spec.ID, prefix) {
				continue
			}
			idx = max(idx, n.modifyIndex)
			stub := &api.NodeListStub{
				Address:               "127.0.0.1",
				ID:                    n.spec.ID,
				Datacenter:            n.spec.Datacenter,
				Name:                  n.spec.Name,
				NodeClass:             n.spec.NodeClass,
				NodePool:              n.spec.NodePool,
				Version:               "1.10.0",
				SchedulingEligibility: api.NodeSchedulingEligible,
				Status:                n.spec.Status,
				Drivers:               map[string]*api.DriverInfo{},
				CreateIndex:           n.createIndex,
				ModifyIndex:           n.modifyIndex,
			}
			if withRes {
				stub.NodeResources, stub.ReservedResources = n.resources()
			}
			out = append(out, stub)
		}
		sort.Slice(out, func(i, k int) bool { return out[i].ID < out[k].ID })
		return idx, out, nil
	})
}

func (s *Server) nodeInfo(w http.ResponseWriter, r *http.Request, stop chan struct{}, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		n, ok := s.nodes[id]
		if !ok {
			return 0, nil, errorf(http.StatusNotFound, "node not found")
		}
		res, reserved := n.resources()
		return n.modifyIndex, &api.Node{
			ID:                    n.spec.ID,
			Datacenter:            n.spec.Datacenter,
			Name:                  n.spec.Name,
			HTTPAddr:              "127.0.0.1:4646",
			Attributes:            n.attributes(),
			NodeResources:         res,
			ReservedResources:     reserved,
			Meta:                  n.spec.Meta,
			NodeClass:             n.spec.NodeClass,
			NodePool:              n.spec.NodePool,
			SchedulingEligibility: api.NodeSchedulingEligible,
			Status:                n.spec.Status,
			Drivers:               map[string]*api.DriverInfo{},
			CreateIndex:           n.createIndex,
			ModifyIndex:           n.modifyIndex,
		}, nil
	})
}

func (s *Server) apiAlloc(a *alloc, withJob bool) *api.Allocation {
	out := &api.Allocation{
		ID:        a.id,
		Namespace: a.namespace,
		EvalID:    a.id,
		Name:      a.name,
		NodeID:    a.nodeID,
		JobID:     a.jobID,
		TaskGroup: a.group,
		AllocatedResources: &api.AllocatedResources{
			Tasks: map[string]*api.AllocatedTaskResources{
				a.task: {
					Cpu:    api.AllocatedCpuResources{CpuShares: int64(a.cpuReq)},
					Memory: api.AllocatedMemoryResources{MemoryMB: int64(a.memReq)},
				},
			},
			Shared: api.AllocatedSharedResources{DiskMB: 300},
		},
		DesiredStatus:    a.desiredStatus,
		ClientStatus:     a.clientStatus,
		CreateIndex:      a.createIndex,
		ModifyIndex:      a.modifyIndex,
		AllocModifyIndex: a.modifyIndex,
		CreateTime:       a.createTime,
		ModifyTime:       a.modifyTime,
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

func (s *Server) nodeAllocs(w http.ResponseWriter, r *http.Request, stop chan struct{}, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		// Like Nomad, an unknown node simply has no allocations.
		out := []*api.Allocation{}
		var idx uint64
		for _, a := range s.allocs {
			if a.nodeID == id {
				idx = max(idx, a.modifyIndex)
				out = append(out, s.apiAlloc(a, true))
			}
		}
		sort.Slice(out, func(i, k int) bool { return out[i].CreateIndex < out[k].CreateIndex })
		return idx, out, nil
	})
}

func (s *Server) jobAllocs(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		if _, ok := s.jobs[jobKey{ns, id}]; !ok {
			return 0, nil, errorf(http.StatusNotFound, "job not found")
		}
		out := []*api.AllocationListStub{}
		var idx uint64
		for _, a := range s.allocs {
			if a.namespace == ns && a.jobID == id {
				idx = max(idx, a.modifyIndex)
				full := s.apiAlloc(a, false)
				out = append(out, &api.AllocationListStub{
					ID: a.id, Namespace: a.namespace, EvalID: a.id, Name: a.name, NodeID: a.nodeID, NodeName: full.NodeName,
					JobID: a.jobID, TaskGroup: a.group, AllocatedResources: full.AllocatedResources,
					DesiredStatus: a.desiredStatus, ClientStatus: a.clientStatus,
					CreateIndex: a.createIndex, ModifyIndex: a.modifyIndex, CreateTime: a.createTime, ModifyTime: a.modifyTime,
				})
			}
		}
		sort.Slice(out, func(i, k int) bool { return out[i].CreateIndex < out[k].CreateIndex })
		return idx, out, nil
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
	s.mu.Lock()
	n, ok := s.nodes[id]
	var stats *hostStats
	if ok {
		cpu, mem := n.cpuMHz, n.memMB
		for _, a := range s.allocs {
			if a.nodeID == id && a.clientStatus == api.AllocClientStatusRunning {
				cpu += a.cpuMHz
				mem += a.memMB
			}
		}
		total := uint64(n.spec.MemoryMB) * mib
		used := min(uint64(mem*mib), total)
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
		}, Timestamp: uint64(time.Now().Add(-s.statsAge).UnixNano())}
	}
	idx := s.index
	s.mu.Unlock()
	if id == "" {
		writeError(w, errorf(http.StatusBadRequest, "missing node_id: the stand-in serves client stats only through a server (node_id is required)"))
		return
	}
	if !ok {
		writeError(w, errorf(http.StatusNotFound, "Unknown node %q: node not found", id))
		return
	}
	writeJSON(w, idx, stats)
}

func (s *Server) allocStats(w http.ResponseWriter, id string) {
	s.mu.Lock()
	a, ok := s.allocs[id]
	var usage *api.AllocResourceUsage
	if ok && a.clientStatus == api.AllocClientStatusRunning {
		now := time.Now().Add(-s.statsAge).UnixNano()
		cores := 4
		var coreMHz float64 = 1
		if n, ok := s.nodes[a.nodeID]; ok {
			cores = n.spec.Cores
			coreMHz = float64(n.spec.CPUMHz) / float64(cores)
		}
		ru := &api.ResourceUsage{
			MemoryStats: &api.MemoryStats{RSS: uint64(a.memMB * mib), Usage: uint64(a.memMB * mib), Measured: []string{"RSS", "Usage"}},
			CpuStats: &api.CpuStats{
				TotalTicks: a.cpuMHz,
				Percent:    100 * a.cpuMHz / coreMHz,
				UserMode:   80 * a.cpuMHz / coreMHz,
				SystemMode: 20 * a.cpuMHz / coreMHz,
				Measured:   []string{"System Mode", "User Mode", "Percent", "Total Ticks"},
			},
		}
		usage = &api.AllocResourceUsage{
			ResourceUsage: ru,
			Tasks:         map[string]*api.TaskResourceUsage{a.task: {ResourceUsage: ru, Timestamp: now}},
			Timestamp:     now,
		}
	}
	idx := s.index
	s.mu.Unlock()
	if usage == nil {
		writeError(w, errorf(http.StatusNotFound, "Unknown allocation %q: not found", id))
		return
	}
	writeJSON(w, idx, usage)
}

func (s *Server) apiJob(j *job) *api.Job {
	status := "running"
	if j.stopped {
		status = "dead"
	}
	out := &api.Job{
		Region:         new("global"),
		Namespace:      new(j.namespace),
		ID:             new(j.id),
		Name:           new(j.id),
		Type:           new(api.JobTypeService),
		Priority:       new(50),
		Datacenters:    []string{"*"},
		NodePool:       new("default"),
		Stop:           new(j.stopped),
		Status:         new(status),
		Stable:         new(true),
		Version:        new(j.version),
		SubmitTime:     new(j.submitTime),
		CreateIndex:    new(j.createIndex),
		ModifyIndex:    new(j.modifyIndex),
		JobModifyIndex: new(j.jobModifyIndex),
	}
	for _, g := range j.groups {
		tg := &api.TaskGroup{
			Name:  new(g.spec.Name),
			Count: new(g.count),
			Constraints: []*api.Constraint{{
				LTarget: "${node.unique.id}", RTarget: g.spec.NodeID, Operand: "=",
			}},
			Tasks: []*api.Task{{
				Name:   g.spec.Task,
				Driver: "docker",
				Resources: &api.Resources{
					CPU:      new(g.spec.CPUMHz),
					MemoryMB: new(g.spec.MemoryMB),
				},
			}},
		}
		if g.spec.ScalingMin != nil || g.spec.ScalingMax != nil {
			tg.Scaling = &api.ScalingPolicy{
				Min: g.spec.ScalingMin, Max: g.spec.ScalingMax, Enabled: new(true), Type: api.ScalingPolicyTypeHorizontal,
				Namespace: j.namespace, Target: map[string]string{"Namespace": j.namespace, "Job": j.id, "Group": g.spec.Name},
			}
		}
		out.TaskGroups = append(out.TaskGroups, tg)
	}
	return out
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
			return 0, nil, errorf(http.StatusNotFound, "job not found")
		}
		if j.deployment == nil {
			// Nomad answers null when the job never had a deployment.
			return j.modifyIndex, nil, nil
		}
		d := *j.deployment
		return max(j.modifyIndex, d.ModifyIndex), &d, nil
	})
}

func (s *Server) jobScaleStatus(w http.ResponseWriter, r *http.Request, stop chan struct{}, ns, id string) {
	s.blocking(w, r, stop, func() (uint64, any, error) {
		j, ok := s.jobs[jobKey{ns, id}]
		if !ok {
			return 0, nil, errorf(http.StatusNotFound, "job not found")
		}
		idx := j.modifyIndex
		if j.deployment != nil {
			idx = max(idx, j.deployment.ModifyIndex)
		}
		out := &api.JobScaleStatusResponse{
			JobID:          j.id,
			Namespace:      j.namespace,
			JobCreateIndex: j.createIndex,
			JobModifyIndex: j.jobModifyIndex,
			JobStopped:     j.stopped,
			TaskGroups:     map[string]api.TaskGroupScaleStatus{},
		}
		for _, g := range j.groups {
			st := api.TaskGroupScaleStatus{Desired: g.count, Events: append([]api.ScalingEvent(nil), g.events...)}
			for _, a := range s.allocs {
				if a.namespace == j.namespace && a.jobID == j.id && a.group == g.spec.Name {
					idx = max(idx, a.modifyIndex)
					if a.clientStatus == api.AllocClientStatusRunning {
						st.Placed++
						st.Running++
						st.Healthy++
					}
				}
			}
			for _, e := range g.events {
				idx = max(idx, e.CreateIndex)
			}
			out.TaskGroups[g.spec.Name] = st
		}
		return idx, out, nil
	})
}

func (s *Server) jobScale(w http.ResponseWriter, ns, id string, body []byte) {
	var req api.ScalingRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, errorf(http.StatusBadRequest, "Failed to decode request body: %v", err))
		return
	}
	groupName := req.Target["Group"]
	if groupName == "" {
		writeError(w, errorf(http.StatusBadRequest, "missing task group name for scaling action"))
		return
	}
	if tj, ok := req.Target["Job"]; ok && tj != id {
		writeError(w, errorf(http.StatusBadRequest, "job ID in payload did not match URL"))
		return
	}
	if req.Count != nil && *req.Count < 0 {
		writeError(w, errorf(http.StatusBadRequest, "scaling action count can't be negative"))
		return
	}
	resp, idx, err := s.scaleLocked(ns, id, groupName, &req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, idx, resp)
}

// scaleLocked applies a scale request under the lock.
func (s *Server) scaleLocked(ns, id, groupName string, req *api.ScalingRequest) (*api.JobRegisterResponse, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[jobKey{ns, id}]
	if !ok {
		return nil, 0, errorf(http.StatusNotFound, "job %q not found", id)
	}
	g := j.group(groupName)
	if g == nil {
		return nil, 0, errorf(http.StatusBadRequest, "task group %q specified for scaling does not exist in job", groupName)
	}
	if req.Count != nil {
		if j.deployment != nil && j.deployment.Status == api.DeploymentStatusRunning {
			return nil, 0, errorf(http.StatusBadRequest, "job scaling blocked due to active deployment")
		}
		if g.spec.ScalingMin != nil && *req.Count < *g.spec.ScalingMin {
			return nil, 0, errorf(http.StatusBadRequest, "group count was less than scaling policy minimum: %d < %d", *req.Count, *g.spec.ScalingMin)
		}
		if g.spec.ScalingMax != nil && *req.Count > *g.spec.ScalingMax {
			return nil, 0, errorf(http.StatusBadRequest, "group count was greater than scaling policy maximum: %d > %d", *req.Count, *g.spec.ScalingMax)
		}
	}
	idx := s.bump()
	ev := api.ScalingEvent{
		Count:         req.Count,
		PreviousCount: int64(g.count),
		Error:         req.Error,
		Message:       req.Message,
		Meta:          req.Meta,
		Time:          uint64(time.Now().UnixNano()),
		CreateIndex:   idx,
	}
	resp := &api.JobRegisterResponse{}
	if req.Count != nil {
		s.seq++
		evalID := new(strings.Repeat("e", 8) + "-" + strconv.FormatUint(s.seq, 10))
		ev.EvalID = evalID
		g.count = int(*req.Count)
		j.version++
		j.modifyIndex = idx
		j.jobModifyIndex = idx
		s.reconcileLocked(j)
		resp.EvalID = *evalID
		resp.EvalCreateIndex = idx
		resp.JobModifyIndex = idx
	}
	g.events = append([]api.ScalingEvent{ev}, g.events...)
	if len(g.events) > maxEvents {
		g.events = g.events[:maxEvents]
	}
	resp.LastIndex = s.index
	return resp, s.index, nil
}
