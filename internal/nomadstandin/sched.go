package nomadstandin

import (
	"container/heap"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"
)

// This file is the stand-in's scheduler: evaluations, placement by
// requested resources, blocked evaluations, and deployments. It follows
// Nomad's generic (service) scheduler where the project's code can see it
// (see README.md for the sources), without preemption, spreads, affinities,
// canaries, reschedules or migrations.

// Nomad's texts (nomad/structs, scheduler/structs).
const (
	descBlockedEval       = "created to place remaining allocations"
	descDeployRunning     = "Deployment is running"
	descDeploySuccessful  = "Deployment completed successfully"
	descDeployNewerJob    = "Cancelled due to newer version of job"
	descDeployStoppedJob  = "Cancelled because job is stopped"
	descAllocStopped      = "alloc not needed due to job update"
	descAllocUpdated      = "alloc is being updated due to job update"
	defaultProgressWindow = 10 * time.Minute
)

// SetSchedulerAlgorithm picks how a group that may run on several nodes
// chooses one: api.SchedulerAlgorithmSpread (the default here: the node
// with the most free CPU, ties broken by the lower node ID) or
// api.SchedulerAlgorithmBinpack (Nomad's default: the node with the least
// free CPU that fits).
func (s *Server) SetSchedulerAlgorithm(algorithm api.SchedulerAlgorithm) error {
	switch algorithm {
	case api.SchedulerAlgorithmSpread, api.SchedulerAlgorithmBinpack:
	default:
		return fmt.Errorf("nomadstandin: unknown scheduler algorithm %q", algorithm)
	}
	s.mu.Lock()
	s.algorithm = algorithm
	s.mu.Unlock()
	return nil
}

// plan collects the changes of one scheduler pass under one index, as
// Nomad applies a plan in one raft write.
type plan struct {
	s   *Server
	idx uint64
}

func (p *plan) index() uint64 {
	if p.idx == 0 {
		p.idx = p.s.bump()
	}
	return p.idx
}

// evaluateLocked creates and processes an evaluation of j, as Nomad does
// for a job registration or a scale: stop what is too many, place what is
// missing, and block what does not fit. newVersion says the job got a new
// version (a deployment may start).
func (s *Server) evaluateLocked(j *job, trigger string, newVersion bool) *api.Evaluation {
	now := time.Now()
	idx := s.bump()
	ev := &api.Evaluation{
		ID:             s.newID("e7a1"),
		Namespace:      j.namespace,
		Priority:       j.conf.Priority,
		Type:           api.JobTypeService,
		TriggeredBy:    trigger,
		JobID:          j.id,
		JobModifyIndex: j.jobModifyIndex,
		Status:         api.EvalStatusPending,
		CreateIndex:    idx,
		ModifyIndex:    idx,
		CreateTime:     now.UnixNano(),
		ModifyTime:     now.UnixNano(),
	}
	p := &plan{s: s}
	if newVersion {
		s.deploymentForVersionLocked(j, p.index())
	}
	failed, queued := s.placeLocked(j, p, ev.ID, now)
	upd := p.index()
	ev.Status = api.EvalStatusComplete
	ev.ModifyIndex = upd
	ev.QueuedAllocations = queued
	if j.deployment != nil && j.deployment.active() {
		ev.DeploymentID = j.deployment.d.ID
	}
	s.addEvalLocked(j, ev)
	if len(failed) > 0 {
		ev.FailedTGAllocs = failed
		if j.blocked != nil {
			s.cancelEvalLocked(j.blocked, fmt.Sprintf("existing blocked evaluation exists for job %q", j.id), upd)
		}
		b := &api.Evaluation{
			ID:                s.newID("b10c"),
			Namespace:         j.namespace,
			Priority:          j.conf.Priority,
			Type:              api.JobTypeService,
			TriggeredBy:       "queued-allocs",
			JobID:             j.id,
			JobModifyIndex:    j.jobModifyIndex,
			Status:            "blocked",
			StatusDescription: descBlockedEval,
			PreviousEval:      ev.ID,
			FailedTGAllocs:    failed,
			CreateIndex:       upd,
			ModifyIndex:       upd,
			CreateTime:        now.UnixNano(),
			ModifyTime:        now.UnixNano(),
		}
		ev.BlockedEval = b.ID
		j.blocked = b
		s.blockedJobs[j.key()] = j
		s.addEvalLocked(j, b)
	} else if j.blocked != nil {
		s.cancelEvalLocked(j.blocked, fmt.Sprintf("evaluation %q successful", ev.ID), upd)
		j.blocked = nil
		delete(s.blockedJobs, j.key())
	}
	j.summaryIndex = upd
	s.checkDeploymentLocked(j)
	return ev
}

func (s *Server) addEvalLocked(j *job, ev *api.Evaluation) {
	j.evals = append(j.evals, ev)
	s.evals[ev.ID] = ev
	if len(j.evals) > maxEvals {
		drop := j.evals[0]
		j.evals = append([]*api.Evaluation(nil), j.evals[1:]...)
		if drop != j.blocked {
			delete(s.evals, drop.ID)
		}
	}
	s.evalsIndex = max(s.evalsIndex, ev.ModifyIndex)
}

func (s *Server) cancelEvalLocked(ev *api.Evaluation, desc string, idx uint64) {
	ev.Status = "canceled"
	ev.StatusDescription = desc
	ev.ModifyIndex = idx
	ev.ModifyTime = time.Now().UnixNano()
	s.evalsIndex = max(s.evalsIndex, idx)
}

// placeLocked brings every group of j to its count: allocations of an older
// spec (task or resources changed) are replaced, extra ones stopped
// (highest name index first), missing ones placed on nodes where they fit.
// It returns the failed placement metrics and the queued allocations per
// group.
func (s *Server) placeLocked(j *job, p *plan, evalID string, now time.Time) (map[string]*api.AllocationMetric, map[string]int) {
	var failed map[string]*api.AllocationMetric
	queued := map[string]int{}
	for _, g := range j.groups {
		want := g.count
		if j.stopped {
			want = 0
		}
		keep := g.live[:0:0]
		for _, a := range g.live {
			if n := s.nodes[a.nodeID]; n == nil || a.task != g.conf.Task || !reflect.DeepEqual(a.tasks, g.conf.tasks(n)) {
				s.stopAllocLocked(j, g, a, p, now, descAllocUpdated)
			} else {
				keep = append(keep, a)
			}
		}
		g.live = keep
		if len(g.live) > want {
			byName := append([]*alloc(nil), g.live...)
			sort.Slice(byName, func(i, k int) bool { return byName[i].nameIndex > byName[k].nameIndex })
			stop := map[*alloc]bool{}
			for _, a := range byName[:len(g.live)-want] {
				stop[a] = true
				s.stopAllocLocked(j, g, a, p, now, descAllocStopped)
			}
			keep := g.live[:0:0]
			for _, a := range g.live {
				if !stop[a] {
					keep = append(keep, a)
				}
			}
			g.live = keep
		}
		missing := want - len(g.live)
		placed := 0
		if missing > 0 {
			used := make(map[int]bool, len(g.live))
			for _, a := range g.live {
				used[a.nameIndex] = true
			}
			next := 0
			pick := s.pickerLocked(j, g)
			for placed < missing {
				n := pick()
				if n == nil {
					break
				}
				for used[next] {
					next++
				}
				used[next] = true
				s.placeAllocLocked(j, g, n, p, evalID, next, now)
				placed++
			}
		}
		g.queued = max(0, missing-placed)
		if g.queued > 0 {
			if failed == nil {
				failed = map[string]*api.AllocationMetric{}
			}
			failed[g.name] = s.metricLocked(j, g, g.queued)
		}
		if !j.stopped {
			queued[g.name] = g.queued
		}
	}
	return failed, queued
}

func (s *Server) stopAllocLocked(j *job, g *group, a *alloc, p *plan, now time.Time, desc string) {
	idx := p.index()
	a.clientStatus, a.desiredStatus, a.desiredDesc = api.AllocClientStatusComplete, api.AllocDesiredStatusStop, desc
	a.modifyIndex, a.modifyTime, a.finishedAt = idx, now.UnixNano(), now.UnixNano()
	if n, ok := s.nodes[a.nodeID]; ok {
		n.usedCPU -= int64(a.cpuReq)
		n.usedMem -= int64(a.memReq)
	}
	g.terminal = append(g.terminal, a)
	g.complete++
	if len(g.terminal) > maxTerminalAllocs {
		for _, old := range g.terminal[:len(g.terminal)-maxTerminalAllocs] {
			delete(s.allocs, old.id)
			if n, ok := s.nodes[old.nodeID]; ok {
				delete(n.allocs, old.id)
			}
		}
		g.terminal = append([]*alloc(nil), g.terminal[len(g.terminal)-maxTerminalAllocs:]...)
	}
	j.allocIndex, s.allocsIndex = idx, idx
}

func (s *Server) placeAllocLocked(j *job, g *group, n *node, p *plan, evalID string, nameIndex int, now time.Time) {
	idx := p.index()
	s.allocSeq++
	a := &alloc{
		id:            s.newID("a110"),
		namespace:     j.namespace,
		jobID:         j.id,
		group:         g.name,
		task:          g.conf.Task,
		nodeID:        n.spec.ID,
		name:          fmt.Sprintf("%s.%s[%d]", j.id, g.name, nameIndex),
		evalID:        evalID,
		seq:           s.allocSeq,
		nameIndex:     nameIndex,
		tasks:         g.conf.tasks(n),
		clientStatus:  api.AllocClientStatusRunning,
		desiredStatus: api.AllocDesiredStatusRun,
		createIndex:   idx,
		modifyIndex:   idx,
		createTime:    now.UnixNano(),
		modifyTime:    now.UnixNano(),
		startedAt:     now.UnixNano(),
		warmup:        g.conf.Warmup,
		jobVersion:    j.version,
		cpuMHz:        g.cpuMHz,
		memMB:         g.memMB,
	}
	if d := j.deployment; d != nil && d.active() && d.d.TaskGroups[g.name] != nil {
		a.deploymentID = d.d.ID
		d.d.TaskGroups[g.name].PlacedAllocs++
	} else if g.conf.Update != nil {
		a.healthy = new(true)
		if d != nil {
			a.deploymentID = d.d.ID
		}
	}
	a.cpuReq, a.memReq = g.conf.request(n)
	n.usedCPU += int64(a.cpuReq)
	n.usedMem += int64(a.memReq)
	n.allocs[a.id] = a
	s.allocs[a.id] = a
	g.live = append(g.live, a)
	j.allocIndex, s.allocsIndex = idx, idx
}

// eligibleNode is Nomad's ready-node set of a job: ready, eligible, not
// draining, in the job's node pool and datacenters.
func eligibleNode(j *job, n *node) bool {
	return n.ready() && inPool(j, n) && inDatacenters(j, n)
}

func inPool(j *job, n *node) bool {
	return j.conf.NodePool == "all" || j.conf.NodePool == n.spec.NodePool
}

func inDatacenters(j *job, n *node) bool {
	for _, dc := range j.conf.Datacenters {
		if globMatch(dc, n.spec.Datacenter) {
			return true
		}
	}
	return false
}

// globMatch matches s against a pattern where "*" matches any run of
// characters, as Nomad's datacenter globs do.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// pickNodeLocked chooses a node for one more allocation of g, or nil.
func (s *Server) pickNodeLocked(j *job, g *group) *node {
	if g.pinned != "" {
		n := s.nodes[g.pinned]
		if n == nil || !eligibleNode(j, n) {
			return nil
		}
		if ok, _ := n.fits(g.conf.request(n)); !ok {
			return nil
		}
		if ok, _ := s.constraintsOK(j, g, n); !ok {
			return nil
		}
		return n
	}
	binpack := s.algorithm == api.SchedulerAlgorithmBinpack
	var best *node
	for _, id := range s.nodeOrder {
		n := s.nodes[id]
		if !eligibleNode(j, n) {
			continue
		}
		if ok, _ := n.fits(g.conf.request(n)); !ok {
			continue
		}
		if ok, _ := s.constraintsOK(j, g, n); !ok {
			continue
		}
		if best == nil || (!binpack && n.freeCPU() > best.freeCPU()) || (binpack && n.freeCPU() < best.freeCPU()) {
			best = n
		}
	}
	return best
}

// pickerLocked returns a function that picks the node for each next
// allocation of g in one scheduler pass, as pickNodeLocked would, in
// O(log n) per allocation: the feasible nodes are found once and kept in a
// heap ordered by free CPU (most free first for spread, least for binpack,
// then by node ID). A node that no longer fits is dropped: within a pass
// free resources only shrink.
func (s *Server) pickerLocked(j *job, g *group) func() *node {
	if g.pinned != "" {
		return func() *node { return s.pickNodeLocked(j, g) }
	}
	distinct := false
	for _, c := range append(append([]constraint(nil), j.conf.Constraints...), g.conf.Constraints...) {
		if c.Operand == "distinct_hosts" {
			distinct = true
		}
	}
	h := &nodeHeap{binpack: s.algorithm == api.SchedulerAlgorithmBinpack}
	for _, id := range s.nodeOrder {
		n := s.nodes[id]
		if !eligibleNode(j, n) {
			continue
		}
		if ok, _ := s.constraintsOK(j, g, n); ok {
			h.nodes = append(h.nodes, n)
		}
	}
	heap.Init(h)
	var last *node
	return func() *node {
		if last != nil {
			if distinct {
				heap.Remove(h, 0) // last is still on top: it was just used
			} else {
				heap.Fix(h, 0)
			}
			last = nil
		}
		for h.Len() > 0 {
			n := h.nodes[0]
			if ok, _ := n.fits(g.conf.request(n)); ok {
				last = n
				return n
			}
			heap.Pop(h)
		}
		return nil
	}
}

type nodeHeap struct {
	nodes   []*node
	binpack bool
}

func (h *nodeHeap) Len() int      { return len(h.nodes) }
func (h *nodeHeap) Swap(i, k int) { h.nodes[i], h.nodes[k] = h.nodes[k], h.nodes[i] }
func (h *nodeHeap) Less(i, k int) bool {
	a, b := h.nodes[i].freeCPU(), h.nodes[k].freeCPU()
	if a != b {
		return (a > b) != h.binpack
	}
	return h.nodes[i].spec.ID < h.nodes[k].spec.ID
}
func (h *nodeHeap) Push(x any) {
	n, ok := x.(*node)
	if !ok {
		panic(fmt.Sprintf("nodeHeap.Push: %T, want *node", x))
	}
	h.nodes = append(h.nodes, n)
}
func (h *nodeHeap) Pop() any {
	n := h.nodes[len(h.nodes)-1]
	h.nodes = h.nodes[:len(h.nodes)-1]
	return n
}

// constraintsOK checks the job's and the group's constraints on n; when
// one fails it is returned as Nomad names it in ConstraintFiltered.
func (s *Server) constraintsOK(j *job, g *group, n *node) (bool, string) {
	for _, c := range j.conf.Constraints {
		if !s.checkConstraint(j, g, n, c, true) {
			return false, c.String()
		}
	}
	for _, c := range g.conf.Constraints {
		if !s.checkConstraint(j, g, n, c, false) {
			return false, c.String()
		}
	}
	return true, ""
}

// supportedOperands are the constraint operands the stand-in evaluates.
var supportedOperands = map[string]bool{
	"=": true, "==": true, "is": true, "!=": true, "not": true,
	"is_set": true, "is_not_set": true, "regexp": true, "distinct_hosts": true,
}

func (s *Server) checkConstraint(j *job, g *group, n *node, c constraint, jobLevel bool) bool {
	if c.Operand == "distinct_hosts" {
		if c.RTarget != "" && c.RTarget != "true" {
			return true
		}
		for _, a := range n.allocs {
			if a.live() && a.desiredStatus == api.AllocDesiredStatusRun && a.namespace == j.namespace && a.jobID == j.id && (jobLevel || a.group == g.name) {
				return false
			}
		}
		return true
	}
	l, lok := resolveTarget(c.LTarget, n)
	r, rok := resolveTarget(c.RTarget, n)
	switch c.Operand {
	case "=", "==", "is":
		return lok && rok && l == r
	case "!=", "not":
		return !lok || !rok || l != r
	case "is_set":
		return lok
	case "is_not_set":
		return !lok
	case "regexp":
		if !lok || !rok {
			return false
		}
		re, err := cachedRegexp(r)
		return err == nil && re.MatchString(l)
	}
	return false
}

var regexps sync.Map

func cachedRegexp(pattern string) (*regexp.Regexp, error) {
	if v, ok := regexps.Load(pattern); ok {
		if re, ok := v.(*regexp.Regexp); ok {
			return re, nil
		}
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	regexps.Store(pattern, re)
	return re, nil
}

// resolveTarget interpolates a constraint target on a node, as Nomad's
// scheduler does (scheduler/feasible/feasible.go resolveTarget).
func resolveTarget(target string, n *node) (string, bool) {
	if !strings.HasPrefix(target, "${") {
		return target, true
	}
	switch {
	case target == "${node.unique.id}":
		return n.spec.ID, true
	case target == "${node.datacenter}":
		return n.spec.Datacenter, true
	case target == "${node.unique.name}":
		return n.spec.Name, true
	case target == "${node.class}":
		return n.spec.NodeClass, true
	case target == "${node.pool}":
		return n.spec.NodePool, true
	case strings.HasPrefix(target, "${attr.") && strings.HasSuffix(target, "}"):
		v, ok := n.attributes()[strings.TrimSuffix(strings.TrimPrefix(target, "${attr."), "}")]
		return v, ok
	case strings.HasPrefix(target, "${meta.") && strings.HasSuffix(target, "}"):
		v, ok := n.spec.Meta[strings.TrimSuffix(strings.TrimPrefix(target, "${meta."), "}")]
		return v, ok
	}
	return "", false
}

// metricLocked is the AllocMetric Nomad reports for a group whose
// allocations could not all be placed: every ready node of the job's pool
// and datacenters is evaluated, filtered by a constraint or exhausted in a
// dimension; the further failed allocations are coalesced.
func (s *Server) metricLocked(j *job, g *group, failedCount int) *api.AllocationMetric {
	m := &api.AllocationMetric{NodePool: j.conf.NodePool, NodesAvailable: map[string]int{}, AllocationTime: 25 * time.Microsecond}
	for _, id := range s.nodeOrder {
		n := s.nodes[id]
		if !eligibleNode(j, n) {
			continue
		}
		m.NodesInPool++
		m.NodesAvailable[n.spec.Datacenter]++
		m.NodesEvaluated++
		if ok, c := s.constraintsOK(j, g, n); !ok {
			m.NodesFiltered++
			if n.spec.NodeClass != "" {
				if m.ClassFiltered == nil {
					m.ClassFiltered = map[string]int{}
				}
				m.ClassFiltered[n.spec.NodeClass]++
			}
			if m.ConstraintFiltered == nil {
				m.ConstraintFiltered = map[string]int{}
			}
			m.ConstraintFiltered[c]++
			continue
		}
		if ok, dim := n.fits(g.conf.request(n)); !ok {
			m.NodesExhausted++
			if n.spec.NodeClass != "" {
				if m.ClassExhausted == nil {
					m.ClassExhausted = map[string]int{}
				}
				m.ClassExhausted[n.spec.NodeClass]++
			}
			if m.DimensionExhausted == nil {
				m.DimensionExhausted = map[string]int{}
			}
			m.DimensionExhausted[dim]++
		}
	}
	m.CoalescedFailures = failedCount - 1
	if m.DimensionExhausted != nil {
		r := &api.Resources{CPU: new(0), MemoryMB: new(0)}
		if m.DimensionExhausted["cpu"] > 0 {
			*r.CPU = g.conf.CPU * failedCount
		}
		if m.DimensionExhausted["memory"] > 0 {
			*r.MemoryMB = g.conf.Mem * failedCount
		}
		m.ResourcesExhausted = map[string]*api.Resources{g.conf.Task: r}
	}
	return m
}

// unblockLocked retries the blocked evaluations (oldest first) once room
// may have appeared, as Nomad's blocked-evals tracker unblocks them on
// capacity changes. A blocked evaluation that places everything completes;
// one that places some is reblocked with the new queued counts.
func (s *Server) unblockLocked() {
	if len(s.blockedJobs) == 0 {
		return
	}
	jobs := make([]*job, 0, len(s.blockedJobs))
	for _, j := range s.blockedJobs {
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].blocked.CreateIndex < jobs[k].blocked.CreateIndex })
	for _, j := range jobs {
		s.retryBlockedLocked(j)
	}
}

func (s *Server) retryBlockedLocked(j *job) {
	b := j.blocked
	if b == nil {
		return
	}
	room := false
	for _, g := range j.groups {
		if g.queued > 0 && s.pickNodeLocked(j, g) != nil {
			room = true
			break
		}
	}
	if !room {
		return
	}
	now := time.Now()
	p := &plan{s: s}
	failed, queued := s.placeLocked(j, p, b.ID, now)
	idx := p.index()
	b.QueuedAllocations = queued
	b.ModifyIndex, b.ModifyTime = idx, now.UnixNano()
	if len(failed) == 0 {
		b.Status = api.EvalStatusComplete
		b.StatusDescription = ""
		b.FailedTGAllocs = nil
		j.blocked = nil
		delete(s.blockedJobs, j.key())
	} else {
		b.FailedTGAllocs = failed
	}
	s.evalsIndex = max(s.evalsIndex, idx)
	j.summaryIndex = idx
	s.checkDeploymentLocked(j)
}

// --- deployments ---

// deploymentForVersionLocked handles a new version of j: an active
// deployment of the older version is cancelled, and the groups with an
// update block (and a count) get a new deployment, as Nomad's reconciler
// does (every allocation of the older version is updated, in place for a
// count change).
func (s *Server) deploymentForVersionLocked(j *job, idx uint64) {
	if j.deployment != nil && j.deployment.active() {
		desc := descDeployNewerJob
		if j.stopped {
			desc = descDeployStoppedJob
		}
		s.cancelDeploymentLocked(j.deployment, desc, idx)
	}
	if j.stopped {
		return
	}
	var gs []*group
	for _, g := range j.groups {
		if g.conf.Update != nil && g.count > 0 {
			gs = append(gs, g)
		}
	}
	if len(gs) > 0 {
		s.startDeploymentLocked(j, idx, gs, false)
	}
}

func (s *Server) newDeploymentLocked(j *job, idx uint64, gs []*group, now time.Time) *deploy {
	d := &api.Deployment{
		ID:                 s.newID("d3d1"),
		Namespace:          j.namespace,
		JobID:              j.id,
		JobVersion:         j.version,
		JobModifyIndex:     j.modifyIndex,
		JobSpecModifyIndex: j.jobModifyIndex,
		JobCreateIndex:     j.createIndex,
		TaskGroups:         map[string]*api.DeploymentState{},
		Status:             api.DeploymentStatusRunning,
		StatusDescription:  descDeployRunning,
		CreateIndex:        idx,
		ModifyIndex:        idx,
		CreateTime:         now.UnixNano(),
		ModifyTime:         now.UnixNano(),
	}
	for _, g := range gs {
		d.TaskGroups[g.name] = &api.DeploymentState{
			ProgressDeadline:  defaultProgressWindow,
			RequireProgressBy: now.Add(defaultProgressWindow),
			DesiredTotal:      g.count,
		}
	}
	dep := &deploy{d: d, job: j}
	j.deployment = dep
	j.deployments = append([]*deploy{dep}, j.deployments...)
	if len(j.deployments) > maxDeployments {
		for _, old := range j.deployments[maxDeployments:] {
			delete(s.deployments, old.d.ID)
		}
		j.deployments = j.deployments[:maxDeployments]
	}
	s.deployments[d.ID] = dep
	s.deploymentsIndex = idx
	j.changed()
	return dep
}

// startDeploymentLocked starts a running deployment of j over gs. It
// completes after the groups' AutoComplete (the longest), or on
// SetDeploymentActive(false) when manual or when a group has none.
func (s *Server) startDeploymentLocked(j *job, idx uint64, gs []*group, manual bool) {
	if j.deployment != nil && j.deployment.active() {
		s.cancelDeploymentLocked(j.deployment, descDeployNewerJob, idx)
	}
	dep := s.newDeploymentLocked(j, idx, gs, time.Now())
	var auto time.Duration
	for _, g := range gs {
		if g.conf.Update == nil || g.conf.Update.AutoComplete <= 0 {
			manual = true
		} else {
			auto = max(auto, g.conf.Update.AutoComplete)
		}
	}
	if !manual {
		dep.timer = time.AfterFunc(auto, func() { s.deploymentDue(dep) })
	}
}

// initialDeploymentLocked records, for a job added with AddJob, the
// deployment of its first version as already successful.
func (s *Server) initialDeploymentLocked(j *job) {
	var gs []*group
	for _, g := range j.groups {
		if g.conf.Update != nil && g.count > 0 {
			gs = append(gs, g)
		}
	}
	if len(gs) == 0 || j.stopped {
		return
	}
	idx := s.bump()
	dep := s.newDeploymentLocked(j, idx, gs, time.Now())
	for _, g := range gs {
		for _, a := range g.live {
			a.deploymentID = dep.d.ID
		}
	}
	s.completeDeploymentLocked(dep, idx)
}

func (s *Server) deploymentDue(dep *deploy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dep.due = true
	s.tryCompleteLocked(dep)
}

func (s *Server) checkDeploymentLocked(j *job) {
	if d := j.deployment; d != nil && d.due && d.active() {
		s.tryCompleteLocked(d)
	}
}

// tryCompleteLocked completes a due deployment once every group it covers
// runs its desired total.
func (s *Server) tryCompleteLocked(dep *deploy) {
	if !dep.due || !dep.active() {
		return
	}
	for name, st := range dep.d.TaskGroups {
		if g := dep.job.group(name); g != nil && len(g.live) < st.DesiredTotal {
			return
		}
	}
	s.completeDeploymentLocked(dep, s.bump())
}

func (s *Server) completeDeploymentLocked(dep *deploy, idx uint64) {
	if dep.timer != nil {
		dep.timer.Stop()
	}
	now := time.Now().UnixNano()
	d := dep.d
	d.Status = api.DeploymentStatusSuccessful
	d.StatusDescription = descDeploySuccessful
	d.ModifyIndex, d.ModifyTime = idx, now
	for name, st := range d.TaskGroups {
		g := dep.job.group(name)
		if g == nil {
			continue
		}
		healthy := 0
		for _, a := range g.live {
			if a.deploymentID == d.ID {
				if a.healthy == nil || !*a.healthy {
					a.healthy = new(true)
					a.modifyIndex = idx
				}
				healthy++
			}
		}
		st.PlacedAllocs = max(st.PlacedAllocs, healthy)
		st.HealthyAllocs = healthy
	}
	dep.job.allocIndex, s.allocsIndex = idx, idx
	s.deploymentsIndex = idx
	dep.job.changed()
}

func (s *Server) cancelDeploymentLocked(dep *deploy, desc string, idx uint64) {
	if dep.timer != nil {
		dep.timer.Stop()
	}
	dep.d.Status = api.DeploymentStatusCancelled
	dep.d.StatusDescription = desc
	dep.d.ModifyIndex, dep.d.ModifyTime = idx, time.Now().UnixNano()
	s.deploymentsIndex = idx
}

// copyDeployment copies d for an answer (encoded outside the lock).
func copyDeployment(d *api.Deployment) *api.Deployment {
	out := *d
	out.TaskGroups = make(map[string]*api.DeploymentState, len(d.TaskGroups))
	for k, v := range d.TaskGroups {
		st := *v
		out.TaskGroups[k] = &st
	}
	return &out
}

// copyEval copies ev for an answer: maps are replaced, never changed in
// place, so a shallow copy is enough.
func copyEval(ev *api.Evaluation) *api.Evaluation {
	out := *ev
	return &out
}
