package nomadstandin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Defaults Nomad's api canonicalization gives a job (api/jobs.go,
// api/tasks.go, api/resources.go).
const (
	defaultTaskCPU       = 100
	defaultTaskMemoryMB  = 300
	defaultMinHealthy    = 10 * time.Second
	defaultStagger       = 30 * time.Second
	defaultHealthyDeadln = 5 * time.Minute
)

// registerErrPrefix is Nomad's structs.RegisterEnforceIndexErrPrefix.
const registerErrPrefix = "Enforcing job modify index"

// apiJob is the job as GET /v1/job/:id shows it; cached per change.
func (s *Server) apiJob(j *job) *api.Job {
	if c := j.cached.Load(); c != nil {
		return c
	}
	out := s.renderJob(j)
	j.cached.Store(out)
	return out
}

func renderUpdate(maxParallel int, minHealthy time.Duration) *api.UpdateStrategy {
	return &api.UpdateStrategy{
		Stagger:          new(defaultStagger),
		MaxParallel:      new(maxParallel),
		HealthCheck:      new("checks"),
		MinHealthyTime:   new(minHealthy),
		HealthyDeadline:  new(defaultHealthyDeadln),
		ProgressDeadline: new(defaultProgressWindow),
		AutoRevert:       new(false),
		AutoPromote:      new(false),
		Canary:           new(0),
	}
}

func renderConstraints(cs []constraint) []*api.Constraint {
	if len(cs) == 0 {
		return nil
	}
	out := make([]*api.Constraint, len(cs))
	for i, c := range cs {
		out[i] = &api.Constraint{LTarget: c.LTarget, RTarget: c.RTarget, Operand: c.Operand}
	}
	return out
}

// renderJob builds the job as Nomad shows a canonicalized job: a group
// without an update block has one with max_parallel = 0 (no deployments),
// as the job-level block the stand-in shows sets.
func (s *Server) renderJob(j *job) *api.Job {
	status := "pending"
	if j.stopped {
		status = "dead"
	} else {
		for _, g := range j.groups {
			if len(g.live) > 0 {
				status = "running"
				break
			}
		}
	}
	stable := j.deployment == nil || j.deployment.d.Status == api.DeploymentStatusSuccessful
	out := &api.Job{
		Region:            new("global"),
		Namespace:         new(j.namespace),
		ID:                new(j.id),
		Name:              new(j.id),
		Type:              new(api.JobTypeService),
		Priority:          new(j.conf.Priority),
		AllAtOnce:         new(false),
		Datacenters:       append([]string(nil), j.conf.Datacenters...),
		NodePool:          new(j.conf.NodePool),
		Constraints:       renderConstraints(j.conf.Constraints),
		Update:            renderUpdate(0, defaultMinHealthy),
		Stop:              new(j.stopped),
		Status:            new(status),
		StatusDescription: new(""),
		Stable:            new(stable),
		Version:           new(j.version),
		SubmitTime:        new(j.submitTime),
		CreateIndex:       new(j.createIndex),
		ModifyIndex:       new(j.modifyIndex),
		JobModifyIndex:    new(j.jobModifyIndex),
	}
	for _, g := range j.groups {
		tg := &api.TaskGroup{
			Name:          new(g.name),
			Count:         new(g.count),
			Constraints:   renderConstraints(g.conf.Constraints),
			Tasks:         renderTasks(&g.conf),
			EphemeralDisk: &api.EphemeralDisk{Sticky: new(false), Migrate: new(false), SizeMB: new(300)},
			Update:        renderUpdate(0, defaultMinHealthy),
		}
		if u := g.conf.Update; u != nil {
			tg.Update = renderUpdate(u.MaxParallel, u.MinHealthyTime)
		}
		if g.policy != nil {
			tg.Scaling = apiPolicy(j, g)
		}
		out.TaskGroups = append(out.TaskGroups, tg)
	}
	return out
}

// renderTasks is the group's tasks as Nomad returns them.
func renderTasks(c *groupConf) []*api.Task {
	task := func(name string, cpu, cores, mem int) *api.Task {
		return &api.Task{
			Name:   name,
			Driver: "docker",
			Config: map[string]any{"image": "nomad-standin/" + name},
			Resources: &api.Resources{
				CPU:         new(cpu),
				Cores:       new(cores),
				MemoryMB:    new(mem),
				MemoryMaxMB: new(0),
			},
		}
	}
	out := []*api.Task{task(c.Task, c.CPU, c.Cores, c.Mem)}
	for _, t := range c.Extra {
		at := task(t.Name, t.CPUMHz, 0, t.MemoryMB)
		if t.Hook != "" {
			at.Lifecycle = &api.TaskLifecycle{Hook: t.Hook, Sidecar: t.Sidecar}
		}
		out = append(out, at)
	}
	return out
}

// parseConstraints turns api constraints into the model, refusing operands
// the stand-in does not evaluate.
func parseConstraints(in []*api.Constraint) ([]constraint, error) {
	var out []constraint
	for _, c := range in {
		if c == nil {
			continue
		}
		if !supportedOperands[c.Operand] {
			return nil, errorf(http.StatusBadRequest, "the Nomad stand-in does not model constraint operand %q (it evaluates =, ==, is, !=, not, is_set, is_not_set, regexp, distinct_hosts)", c.Operand)
		}
		if c.Operand == "regexp" {
			if _, err := cachedRegexp(c.RTarget); err != nil {
				return nil, validationError("Constraint regexp %q is invalid: %v", c.RTarget, err)
			}
		}
		out = append(out, constraint{LTarget: c.LTarget, RTarget: c.RTarget, Operand: c.Operand})
	}
	return out, nil
}

// DefaultJobMaxCount is Nomad's default job_max_count (server config,
// since Nomad 1.11): the most allocations a job's groups may ask for in
// all.
const DefaultJobMaxCount = 50000

// SetJobMaxCount sets the server's job_max_count (0: no limit, as Nomad
// before 1.11): a registration or a scale whose groups' counts add up to
// more is refused with Nomad's text, a 500 (see README, Scaling).
func (s *Server) SetJobMaxCount(n int) error {
	if n < 0 {
		return fmt.Errorf("nomadstandin: job_max_count %d < 0", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobMaxCount = n
	return nil
}

// checkMaxCountLocked refuses a job whose groups' counts add up to total,
// as Nomad's Job.Scale and its register's admission validator do.
func (s *Server) checkMaxCountLocked(total int) error {
	if s.jobMaxCount > 0 && total > s.jobMaxCount {
		return errorf(http.StatusInternalServerError, "total count was greater than configured job_max_count: %d > %d", total, s.jobMaxCount)
	}
	return nil
}

// validationError is how Nomad answers a job that fails validation: a
// multierror, status 500.
func validationError(format string, args ...any) error {
	return errorf(http.StatusInternalServerError, "1 error occurred:\n\t* %s\n\n", fmt.Sprintf(format, args...))
}

// parseJob turns a registered api.Job into the model, as Nomad's agent
// canonicalizes it: count 1 (or the scaling minimum) when unset, task
// resources 100 MHz / 300 MB when unset, the update block merged from the
// job's (Nomad's default max_parallel 1 when the job has none).
func parseJob(aj *api.Job, existing *job) (jobConf, []*group, bool, error) {
	var conf jobConf
	if aj.Type != nil && *aj.Type != "" && *aj.Type != api.JobTypeService {
		return conf, nil, false, errorf(http.StatusBadRequest, "the Nomad stand-in models service jobs only, not %q", *aj.Type)
	}
	if aj.Periodic != nil || aj.ParameterizedJob != nil || aj.Multiregion != nil {
		return conf, nil, false, errorf(http.StatusBadRequest, "the Nomad stand-in does not model periodic, parameterized or multiregion jobs")
	}
	if *aj.ID == "" {
		return conf, nil, false, validationError("Missing job ID")
	}
	conf.NodePool = "default"
	if aj.NodePool != nil && *aj.NodePool != "" {
		conf.NodePool = *aj.NodePool
	}
	conf.Datacenters = append([]string(nil), aj.Datacenters...)
	if len(conf.Datacenters) == 0 {
		conf.Datacenters = []string{"*"}
	}
	conf.Priority = 50
	if aj.Priority != nil && *aj.Priority != 0 {
		conf.Priority = *aj.Priority
	}
	var err error
	if conf.Constraints, err = parseConstraints(aj.Constraints); err != nil {
		return conf, nil, false, err
	}
	if len(aj.TaskGroups) == 0 {
		return conf, nil, false, validationError("Missing job task groups")
	}
	// The job-level update block, canonicalized (Nomad's default when none).
	jobMax, jobMinHealthy := 1, defaultMinHealthy
	if u := aj.Update; u != nil {
		if u.MaxParallel != nil {
			jobMax = *u.MaxParallel
		}
		if u.MinHealthyTime != nil {
			jobMinHealthy = *u.MinHealthyTime
		}
	}
	var groups []*group
	seen := map[string]bool{}
	for _, tg := range aj.TaskGroups {
		if tg == nil || tg.Name == nil || *tg.Name == "" {
			return conf, nil, false, validationError("Job task group is missing a name")
		}
		name := *tg.Name
		if seen[name] {
			return conf, nil, false, validationError("Job task group %d redefines '%s'", len(groups)+1, name)
		}
		seen[name] = true
		count := 1
		if tg.Count != nil {
			count = *tg.Count
		} else if tg.Scaling != nil && tg.Scaling.Min != nil {
			count = int(*tg.Scaling.Min)
		}
		if count < 0 {
			return conf, nil, false, validationError("Task group %s validation failed: Task group count can't be negative", name)
		}
		if len(tg.Tasks) == 0 || slices.Contains(tg.Tasks, nil) {
			return conf, nil, false, validationError("Task group %s validation failed: Missing tasks for task group", name)
		}
		c := groupConf{}
		var taskConstraints []*api.Constraint
		for i, task := range tg.Tasks {
			if task.Name == "" {
				return conf, nil, false, validationError("Task group %s validation failed: Task %d missing name", name, i+1)
			}
			taskConstraints = append(taskConstraints, task.Constraints...)
			hook := ""
			if lc := task.Lifecycle; lc != nil && lc.Hook != "" {
				switch hook = lc.Hook; hook {
				case api.TaskLifecycleHookPrestart, api.TaskLifecycleHookPoststart, api.TaskLifecycleHookPoststop:
				default:
					return conf, nil, false, validationError("Task group %s validation failed: Task %s validation failed: Lifecycle validation failed: invalid hook: %s", name, task.Name, hook)
				}
				if i == 0 {
					return conf, nil, false, errorf(http.StatusBadRequest, "the Nomad stand-in models a group's first task as a main task; task %q has the %s hook", task.Name, hook)
				}
			}
			cpu, mem, cores := defaultTaskCPU, defaultTaskMemoryMB, 0
			if r := task.Resources; r != nil {
				if r.CPU != nil {
					cpu = *r.CPU
				}
				if r.MemoryMB != nil {
					mem = *r.MemoryMB
				}
				if r.Cores != nil && *r.Cores > 0 {
					if r.CPU != nil && *r.CPU > 0 {
						return conf, nil, false, validationError("Task group %s validation failed: Task %s validation failed: Task can only ask for 'cpu' or 'cores' resource, not both.", name, task.Name)
					}
					if i > 0 {
						return conf, nil, false, errorf(http.StatusBadRequest, "the Nomad stand-in models reserved cores on a group's first task only (task %q)", task.Name)
					}
					cpu, cores = 0, *r.Cores
				}
			}
			if i == 0 {
				c.Task, c.CPU, c.Mem, c.Cores = task.Name, cpu, mem, cores
				continue
			}
			ts := TaskSpec{Name: task.Name, CPUMHz: cpu, MemoryMB: mem, Hook: hook}
			if hook != "" {
				ts.Sidecar = task.Lifecycle.Sidecar
			}
			c.Extra = append(c.Extra, ts)
		}
		gc, err := parseConstraints(tg.Constraints)
		if err != nil {
			return conf, nil, false, err
		}
		tc, err := parseConstraints(taskConstraints)
		if err != nil {
			return conf, nil, false, err
		}
		c.Constraints = append(gc, tc...)
		maxPar, minHealthy := jobMax, jobMinHealthy
		if u := tg.Update; u != nil {
			if u.MaxParallel != nil {
				maxPar = *u.MaxParallel
			}
			if u.MinHealthyTime != nil {
				minHealthy = *u.MinHealthyTime
			}
		}
		var old *group
		if existing != nil {
			old = existing.group(name)
		}
		if maxPar > 0 {
			c.Update = &UpdateSpec{MaxParallel: maxPar, MinHealthyTime: minHealthy, AutoComplete: max(minHealthy, time.Nanosecond)}
			if old != nil && old.conf.Update != nil {
				// keep what the test set for this group's deployments
				c.Update.AutoComplete = old.conf.Update.AutoComplete
			}
		}
		if sp := tg.Scaling; sp != nil {
			if sp.Type != "" && sp.Type != api.ScalingPolicyTypeHorizontal {
				return conf, nil, false, errorf(http.StatusBadRequest, "the Nomad stand-in models horizontal scaling policies only, not %q (group %s)", sp.Type, name)
			}
			c.Scaling = true
			c.ScalingMin, c.ScalingMax = sp.Min, sp.Max
			c.ScalingPolicy = sp.Policy // nil without a policy block, {} for an empty one, as Nomad keeps them
			c.ScalingDisabled = sp.Enabled != nil && !*sp.Enabled
			if c.ScalingMin == nil {
				// Nomad's canonicalization: min defaults to the count.
				c.ScalingMin = new(int64(count))
			}
			// Nomad's ScalingPolicy.Validate and
			// TaskGroup.validateScalingPolicy, at every register.
			if c.ScalingMax == nil || *c.ScalingMax < 0 {
				return conf, nil, false, validationError("Task group %s validation failed: Scaling policy invalid: maximum count must be specified and non-negative", name)
			}
			if int64(count) > *c.ScalingMax {
				return conf, nil, false, validationError("Task group %s validation failed: Scaling policy invalid: task group count must not be greater than maximum count in scaling policy", name)
			}
			if int64(count) < *c.ScalingMin {
				return conf, nil, false, validationError("Task group %s validation failed: Scaling policy invalid: task group count must not be less than minimum count in scaling policy", name)
			}
		}
		if old != nil {
			c.Warmup = old.conf.Warmup
		}
		g := &group{name: name, count: count, conf: c}
		g.pinned = pinnedNode(c.Constraints)
		groups = append(groups, g)
	}
	stopped := aj.Stop != nil && *aj.Stop
	return conf, groups, stopped, nil
}

func namespaceForJob(jobNS *string, queryNS, bodyNS string) string {
	switch {
	case queryNS != "":
		return queryNS
	case bodyNS != "":
		return bodyNS
	case jobNS != nil && *jobNS != "":
		return *jobNS
	}
	return DefaultNamespace
}

// jobRegister answers PUT/POST /v1/jobs and /v1/job/:id with an
// api.JobRegisterRequest, as Nomad's agent and Job.Register do.
func (s *Server) jobRegister(w http.ResponseWriter, r *http.Request, urlID string, body []byte) {
	var req api.JobRegisterRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, errorf(http.StatusBadRequest, "%v", err))
		return
	}
	if req.Job == nil {
		writeError(w, errorf(http.StatusBadRequest, "Job must be specified"))
		return
	}
	if req.Job.ID == nil {
		writeError(w, errorf(http.StatusBadRequest, "Job ID hasn't been provided"))
		return
	}
	if urlID != "" && *req.Job.ID != urlID {
		writeError(w, errorf(http.StatusBadRequest, "Job ID does not match name"))
		return
	}
	ns := namespaceForJob(req.Job.Namespace, r.URL.Query().Get("namespace"), req.Namespace)
	resp, idx, err := s.register(ns, &req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, idx, resp)
}

// jobDeregister answers DELETE /v1/job/:id as Nomad's Job.Deregister: the
// job stops (its allocations stop, a new version, an evaluation); with
// ?purge=true it is then removed with its allocations. An unknown job is no
// error: Nomad's Job.Deregister returns before it creates anything, so its
// answer is all zero (no evaluation), and nothing changes.
func (s *Server) jobDeregister(w http.ResponseWriter, r *http.Request, ns, id string) {
	purge, err := queryBool(r, "purge")
	if err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[jobKey{ns, id}]
	if !ok {
		writeJSON(w, 0, &api.JobDeregisterResponse{})
		return
	}
	j.stopped = true
	s.newVersionLocked(j)
	ev := s.evaluateLocked(j, "job-deregister", true)
	s.unblockLocked()
	if purge {
		s.purgeLocked(j)
	}
	writeJSON(w, s.index, &api.JobDeregisterResponse{EvalID: ev.ID, EvalCreateIndex: ev.CreateIndex, JobModifyIndex: j.jobModifyIndex})
}

// purgeLocked removes a stopped job and its allocations. Allocations
// still stopping (SetAllocStopping) end with it and give their room back.
func (s *Server) purgeLocked(j *job) {
	for _, g := range append(append([]*group(nil), j.groups...), j.retired...) {
		for _, a := range append(append([]*alloc(nil), g.live...), g.terminal...) {
			delete(s.allocs, a.id)
			if n, ok := s.nodes[a.nodeID]; ok {
				delete(n.allocs, a.id)
			}
		}
		for _, a := range g.stopping {
			delete(s.allocs, a.id)
			if n, ok := s.nodes[a.nodeID]; ok {
				delete(n.allocs, a.id)
				n.usedCPU -= int64(a.cpuReq)
				n.usedMem -= int64(a.memReq)
			}
		}
		g.stopping = nil
	}
	for _, d := range j.deployments {
		if d.timer != nil {
			d.timer.Stop()
		}
	}
	delete(s.jobs, j.key())
	delete(s.blockedJobs, j.key())
	idx := s.bump()
	s.jobsIndex, s.allocsIndex = idx, idx
	s.dropPoliciesLocked(j)
}

// queryBool reads an optional boolean query parameter as Nomad's agent
// does (strconv.ParseBool), naming it when malformed.
func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errorf(http.StatusBadRequest, "Failed to parse value of %q (%v) as a bool: %v", name, v, err)
	}
	return b, nil
}

// enforceIndex is Nomad's Job.EnforceIndex (nomad/structs/job.go).
func enforceIndex(existing *job, index uint64) error {
	if existing != nil {
		if index == 0 {
			return errorf(http.StatusInternalServerError, "%s 0: job already exists", registerErrPrefix)
		}
		if index != existing.jobModifyIndex {
			return errorf(http.StatusInternalServerError, "%s %d: job exists with conflicting job modify index: %d", registerErrPrefix, index, existing.jobModifyIndex)
		}
	} else if index != 0 {
		return errorf(http.StatusInternalServerError, "%s %d: job does not exist", registerErrPrefix, index)
	}
	return nil
}

func (s *Server) register(ns string, req *api.JobRegisterRequest) (*api.JobRegisterResponse, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := jobKey{ns, *req.Job.ID}
	existing := s.jobs[key]
	// Nomad's admission controllers (the job's validation, job_max_count)
	// run before the index is enforced.
	conf, groups, stopped, err := parseJob(req.Job, existing)
	if err != nil {
		return nil, 0, err
	}
	total := 0
	for _, g := range groups {
		total += g.count
	}
	if err := s.checkMaxCountLocked(total); err != nil {
		return nil, 0, validationError("%v", err)
	}
	if req.EnforceIndex {
		if err := enforceIndex(existing, req.JobModifyIndex); err != nil {
			return nil, 0, err
		}
	}
	resp := &api.JobRegisterResponse{}
	if existing == nil {
		j := &job{id: key.id, namespace: ns, conf: conf, groups: groups, stopped: stopped, submitTime: time.Now().UnixNano()}
		for _, g := range groups {
			if g.conf.Scaling {
				g.scalingID = s.newID("5ca1")
			}
		}
		idx := s.bump()
		j.createIndex, j.modifyIndex, j.jobModifyIndex = idx, idx, idx
		s.jobs[key] = j
		s.jobsIndex = idx
		s.syncPoliciesLocked(j)
		ev := s.evaluateLocked(j, "job-register", true)
		s.unblockLocked()
		resp.EvalID, resp.EvalCreateIndex, resp.JobModifyIndex = ev.ID, ev.CreateIndex, j.jobModifyIndex
		return resp, s.index, nil
	}
	j := existing
	if req.PreserveCounts {
		for _, g := range groups {
			if old := j.group(g.name); old != nil {
				g.count = old.count
			}
		}
	}
	if req.PreserveResources {
		for _, g := range groups {
			if old := j.group(g.name); old != nil {
				g.conf.CPU, g.conf.Mem, g.conf.Cores, g.conf.Extra = old.conf.CPU, old.conf.Mem, old.conf.Cores, old.conf.Extra
			}
		}
	}
	if !jobChanged(j, conf, groups, stopped) {
		// Nomad: the spec did not change, no new version; an evaluation
		// is still created, and JobModifyIndex answers the job's
		// ModifyIndex.
		ev := s.evaluateLocked(j, "job-register", false)
		s.unblockLocked()
		resp.EvalID, resp.EvalCreateIndex, resp.JobModifyIndex = ev.ID, ev.CreateIndex, j.modifyIndex
		return resp, ev.CreateIndex, nil
	}
	// A new version: groups keep their allocations, events and usage.
	now := time.Now()
	p := &plan{s: s}
	var kept []*group
	for _, ng := range groups {
		old := j.group(ng.name)
		if old == nil {
			if ng.conf.Scaling {
				ng.scalingID = s.newID("5ca1")
			}
			kept = append(kept, ng)
			continue
		}
		old.conf, old.count, old.pinned = ng.conf, ng.count, ng.pinned
		if old.conf.Scaling && old.scalingID == "" {
			old.scalingID = s.newID("5ca1")
		}
		kept = append(kept, old)
	}
	for _, og := range j.groups {
		if !contains(kept, og) {
			for _, a := range og.live {
				s.stopAllocLocked(j, og, a, p, now, "alloc not needed as task group was removed")
			}
			og.live, og.queued = nil, 0
			j.retired = append(j.retired, og)
		}
	}
	if len(j.retired) > 10 {
		j.retired = j.retired[len(j.retired)-10:]
	}
	j.groups, j.conf, j.stopped = kept, conf, stopped
	s.newVersionLocked(j)
	ev := s.evaluateLocked(j, "job-register", true)
	s.unblockLocked()
	resp.EvalID, resp.EvalCreateIndex, resp.JobModifyIndex = ev.ID, ev.CreateIndex, j.jobModifyIndex
	return resp, s.index, nil
}

func contains(gs []*group, g *group) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// jobChanged says whether a registration changes the job's spec.
func jobChanged(j *job, conf jobConf, groups []*group, stopped bool) bool {
	if stopped != j.stopped || !reflect.DeepEqual(conf, j.conf) || len(groups) != len(j.groups) {
		return true
	}
	for i, g := range groups {
		old := j.groups[i]
		if g.name != old.name || g.count != old.count || !reflect.DeepEqual(g.conf, old.conf) {
			return true
		}
	}
	return false
}

func (s *Server) jobScale(w http.ResponseWriter, ns, id string, body []byte) {
	var req api.ScalingRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, errorf(http.StatusBadRequest, "%v", err))
		return
	}
	// The agent's checks, then JobScaleRequest.Validate's (nomad/structs).
	if tj := req.Target["Job"]; tj != "" && tj != id {
		writeError(w, errorf(http.StatusBadRequest, "job ID in payload did not match URL"))
		return
	}
	if tns := req.Target["Namespace"]; tns != "" && tns != ns {
		writeError(w, errorf(http.StatusBadRequest, "namespace in payload did not match header"))
		return
	}
	groupName := req.Target["Group"]
	if groupName == "" {
		writeError(w, errorf(http.StatusBadRequest, "missing task group name for scaling action"))
		return
	}
	if req.Count != nil {
		if *req.Count < 0 {
			writeError(w, errorf(http.StatusBadRequest, "scaling action count can't be negative"))
			return
		}
		if req.Error {
			writeError(w, errorf(http.StatusBadRequest, "scaling action should not contain count if error is true"))
			return
		}
	}
	resp, idx, err := s.scaleLocked(ns, id, groupName, &req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, idx, resp)
}

// scaleLocked applies a scale request as Nomad's Job.Scale does
// (nomad/job_endpoint.go): with a count, the scaling policy's bounds, then
// an active deployment, then JobModifyIndex are checked; the job gets a new
// version and an evaluation, and the event carries its ID. Without a count
// only the event is written: the job, its version and JobModifyIndex do
// not change, and the answer's JobModifyIndex is the job's ModifyIndex.
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
	resp := &api.JobRegisterResponse{}
	ev := api.ScalingEvent{
		Count:         req.Count,
		PreviousCount: int64(g.count),
		Error:         req.Error,
		Message:       req.Message,
		Meta:          req.Meta,
		Time:          uint64(time.Now().UnixNano()),
	}
	if req.Count != nil {
		if g.conf.Scaling {
			if g.conf.ScalingMin != nil && *req.Count < *g.conf.ScalingMin {
				return nil, 0, errorf(http.StatusBadRequest, "group count was less than scaling policy minimum: %d < %d", *req.Count, *g.conf.ScalingMin)
			}
			if g.conf.ScalingMax != nil && *req.Count > *g.conf.ScalingMax {
				return nil, 0, errorf(http.StatusBadRequest, "group count was greater than scaling policy maximum: %d > %d", *req.Count, *g.conf.ScalingMax)
			}
		}
		total := int(*req.Count)
		for _, og := range j.groups {
			if og != g {
				total += og.count
			}
		}
		if err := s.checkMaxCountLocked(total); err != nil {
			return nil, 0, err // a plain error: Nomad's HTTP agent answers it 500
		}
		if j.deployment != nil && j.deployment.active() && j.deployment.d.JobCreateIndex == j.createIndex {
			return nil, 0, errorf(http.StatusBadRequest, "job scaling blocked due to active deployment")
		}
		if req.JobModifyIndex > 0 && req.JobModifyIndex != j.jobModifyIndex {
			return nil, 0, errorf(http.StatusInternalServerError, "%s %d: job exists with conflicting job modify index: %d",
				registerErrPrefix, req.JobModifyIndex, j.jobModifyIndex)
		}
		g.count = int(*req.Count)
		s.newVersionLocked(j)
		eval := s.evaluateLocked(j, "job-scaling", true)
		resp.JobModifyIndex = j.jobModifyIndex
		resp.EvalID = eval.ID
		resp.EvalCreateIndex = eval.CreateIndex
		ev.EvalID = new(eval.ID)
	} else {
		resp.JobModifyIndex = j.modifyIndex
	}
	idx := s.bump()
	ev.CreateIndex = idx
	j.eventsIndex = idx
	g.events = append([]api.ScalingEvent{ev}, g.events...)
	if len(g.events) > maxEvents {
		g.events = g.events[:maxEvents]
	}
	s.unblockLocked()
	resp.LastIndex = idx
	return resp, idx, nil
}

// nodeDrain answers POST /v1/node/:id/drain (api.NodeUpdateDrainRequest):
// a DrainSpec starts a drain, none cancels it (and MarkEligible marks the
// node eligible again, as Nomad's state store does).
func (s *Server) nodeDrain(w http.ResponseWriter, id string, body []byte) {
	var req api.NodeUpdateDrainRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, errorf(http.StatusBadRequest, "%v", err))
		return
	}
	s.mu.Lock()
	n, ok := s.nodes[id]
	if !ok {
		s.mu.Unlock()
		writeError(w, errorf(http.StatusInternalServerError, "node not found"))
		return
	}
	now := time.Now()
	if req.DrainSpec != nil {
		n.drain, n.lastDrain = newDrain(now)
		n.drain.DrainSpec = *req.DrainSpec
		if req.DrainSpec.Deadline > 0 {
			n.drain.ForceDeadline = now.Add(req.DrainSpec.Deadline)
		}
		n.spec.Eligibility = api.NodeSchedulingIneligible
	} else {
		if n.drain != nil && n.lastDrain != nil {
			n.lastDrain.Status = api.DrainStatusCanceled
			n.lastDrain.UpdatedAt = now
		}
		n.drain = nil
		if req.MarkEligible {
			n.spec.Eligibility = api.NodeSchedulingEligible
		}
	}
	n.modifyIndex = s.bump()
	s.nodesIndex = n.modifyIndex
	s.unblockLocked()
	idx := n.modifyIndex
	s.mu.Unlock()
	writeJSON(w, idx, &api.NodeDrainUpdateResponse{NodeModifyIndex: idx, EvalIDs: []string{}})
}

// nodeEligibility answers POST /v1/node/:id/eligibility.
func (s *Server) nodeEligibility(w http.ResponseWriter, id string, body []byte) {
	var req api.NodeUpdateEligibilityRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, errorf(http.StatusBadRequest, "%v", err))
		return
	}
	if req.Eligibility != api.NodeSchedulingEligible && req.Eligibility != api.NodeSchedulingIneligible {
		writeError(w, errorf(http.StatusInternalServerError, "invalid scheduling eligibility %q", req.Eligibility))
		return
	}
	s.mu.Lock()
	n, ok := s.nodes[id]
	if !ok {
		s.mu.Unlock()
		writeError(w, errorf(http.StatusInternalServerError, "node not found"))
		return
	}
	err := s.setEligibilityLocked(n, req.Eligibility == api.NodeSchedulingEligible)
	idx := n.modifyIndex
	s.mu.Unlock()
	if err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "%v", err))
		return
	}
	writeJSON(w, idx, &api.NodeEligibilityUpdateResponse{NodeModifyIndex: idx, EvalIDs: []string{}})
}
