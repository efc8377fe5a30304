package nomadstandin

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func newStandin(t testing.TB) (*Server, *api.Client) {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c, err := s.Client("")
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// evalsOf returns the job's evaluations split into the newest non-blocked
// one and the blocked ones.
func evalsOf(t *testing.T, c *api.Client, job string) (latest *api.Evaluation, blocked []*api.Evaluation) {
	t.Helper()
	evs, _, err := c.Jobs().Evaluations(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Status == "blocked" {
			blocked = append(blocked, e)
		} else if e.TriggeredBy != "queued-allocs" && (latest == nil || e.CreateIndex > latest.CreateIndex) {
			latest = e
		}
	}
	return latest, blocked
}

func TestPlacementByRequestedResources(t *testing.T) {
	cases := []struct {
		name        string
		node        NodeSpec
		other       *OtherJobSpec // fills the node first
		group       GroupSpec
		wantRunning int
		wantQueued  int
		wantDim     string // the exhausted dimension when queued
	}{
		{name: "all fit", node: NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192},
			group: GroupSpec{Name: "g", Count: 4, CPUMHz: 1000, MemoryMB: 256}, wantRunning: 4},
		{name: "cpu exhausted", node: NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192},
			group: GroupSpec{Name: "g", Count: 6, CPUMHz: 1000, MemoryMB: 256}, wantRunning: 4, wantQueued: 2, wantDim: "cpu"},
		{name: "memory exhausted", node: NodeSpec{Name: "n", CPUMHz: 40000, MemoryMB: 1000},
			group: GroupSpec{Name: "g", Count: 5, CPUMHz: 100, MemoryMB: 300}, wantRunning: 3, wantQueued: 2, wantDim: "memory"},
		{name: "reserved resources count", node: NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192, ReservedCPUMHz: 1500},
			group: GroupSpec{Name: "g", Count: 4, CPUMHz: 1000, MemoryMB: 256}, wantRunning: 2, wantQueued: 2, wantDim: "cpu"},
		{name: "other jobs' reservations count", node: NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192},
			other: &OtherJobSpec{ID: "tenant", Count: 3, CPUMHz: 1000, MemoryMB: 100},
			group: GroupSpec{Name: "g", Count: 3, CPUMHz: 1000, MemoryMB: 256}, wantRunning: 1, wantQueued: 2, wantDim: "cpu"},
		{name: "ineligible node", node: NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192, Eligibility: api.NodeSchedulingIneligible},
			group: GroupSpec{Name: "g", Count: 2, CPUMHz: 100, MemoryMB: 10}, wantQueued: 2},
		{name: "draining node", node: NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192, Drain: true},
			group: GroupSpec{Name: "g", Count: 2, CPUMHz: 100, MemoryMB: 10}, wantQueued: 2},
		{name: "down node", node: NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192, Status: api.NodeStatusDown},
			group: GroupSpec{Name: "g", Count: 1, CPUMHz: 100, MemoryMB: 10}, wantQueued: 1},
		{name: "zero count", node: NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192},
			group: GroupSpec{Name: "g", Count: 0, CPUMHz: 100, MemoryMB: 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, cl := newStandin(t)
			// a second, unrelated node the pinned group may not use
			must[string](t)(s.AddNode(NodeSpec{Name: "other", CPUMHz: 100000, MemoryMB: 100000}))
			id := must[string](t)(s.AddNode(c.node))
			if c.other != nil {
				o := *c.other
				o.NodeID = id
				if err := s.AddOtherJob(o); err != nil {
					t.Fatal(err)
				}
			}
			g := c.group
			g.NodeID = id
			if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{g}}); err != nil {
				t.Fatal(err)
			}
			st := must[GroupStatus](t)(s.Group("", "web", "g"))
			if st.Running != c.wantRunning || st.Queued != c.wantQueued || s.Queued("", "web", "g") != c.wantQueued {
				t.Fatalf("running %d queued %d (Queued() %d), want %d and %d", st.Running, st.Queued, s.Queued("", "web", "g"), c.wantRunning, c.wantQueued)
			}
			sum, _, err := cl.Jobs().Summary("web", nil)
			if err != nil {
				t.Fatal(err)
			}
			if ts := sum.Summary["g"]; ts.Queued != c.wantQueued || ts.Running != c.wantRunning {
				t.Errorf("summary %+v, want queued %d running %d", ts, c.wantQueued, c.wantRunning)
			}
			sc, _, err := cl.Jobs().ScaleStatus("web", nil)
			if err != nil {
				t.Fatal(err)
			}
			if ts := sc.TaskGroups["g"]; ts.Desired != c.group.Count || ts.Placed != c.wantRunning || ts.Running != c.wantRunning {
				t.Errorf("scale status %+v, want desired %d placed/running %d", ts, c.group.Count, c.wantRunning)
			}
			latest, blocked := evalsOf(t, cl, "web")
			if latest == nil || latest.Status != api.EvalStatusComplete || latest.TriggeredBy != "job-register" {
				t.Fatalf("latest eval %+v", latest)
			}
			if latest.QueuedAllocations["g"] != c.wantQueued {
				t.Errorf("eval QueuedAllocations %v, want g=%d", latest.QueuedAllocations, c.wantQueued)
			}
			if c.wantQueued == 0 {
				if len(blocked) != 0 || latest.BlockedEval != "" || latest.FailedTGAllocs != nil {
					t.Errorf("nothing queued but blocked evals %d, BlockedEval %q, failed %v", len(blocked), latest.BlockedEval, latest.FailedTGAllocs)
				}
				return
			}
			if len(blocked) != 1 || latest.BlockedEval != blocked[0].ID {
				t.Fatalf("blocked evals %d, eval.BlockedEval %q", len(blocked), latest.BlockedEval)
			}
			b := blocked[0]
			if b.TriggeredBy != "queued-allocs" || b.StatusDescription != "created to place remaining allocations" || b.PreviousEval != latest.ID {
				t.Errorf("blocked eval %+v", b)
			}
			m := latest.FailedTGAllocs["g"]
			if m == nil || b.FailedTGAllocs["g"] == nil {
				t.Fatalf("FailedTGAllocs %v / %v", latest.FailedTGAllocs, b.FailedTGAllocs)
			}
			if m.CoalescedFailures != c.wantQueued-1 {
				t.Errorf("CoalescedFailures %d, want %d", m.CoalescedFailures, c.wantQueued-1)
			}
			if c.wantDim != "" {
				if m.NodesExhausted != 1 || m.DimensionExhausted[c.wantDim] != 1 || m.NodesEvaluated != 2 || m.NodesFiltered != 1 {
					t.Errorf("metric %+v, want node exhausted on %s, 2 evaluated, 1 filtered", m, c.wantDim)
				}
				if m.ConstraintFiltered["${node.unique.id} = "+id] != 1 {
					t.Errorf("ConstraintFiltered %v", m.ConstraintFiltered)
				}
			} else if m.NodesExhausted != 0 {
				t.Errorf("metric %+v: the node is not ready, it must not be evaluated", m)
			}
		})
	}
}

func TestUnblockWhenRoomAppears(t *testing.T) {
	type world struct {
		s    *Server
		c    *api.Client
		node string
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, w *world) // makes 2 of "web.g" queued
		room  func(t *testing.T, w *world) // makes room for them
	}{
		{name: "another job scales down",
			setup: func(t *testing.T, w *world) {
				if err := w.s.AddOtherJob(OtherJobSpec{ID: "tenant", NodeID: w.node, Count: 2, CPUMHz: 1000}); err != nil {
					t.Fatal(err)
				}
			},
			room: func(t *testing.T, w *world) {
				zero := 0
				if _, _, err := w.c.Jobs().Scale("tenant", "other", &zero, "", false, nil, nil); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the group's own count goes down",
			setup: func(t *testing.T, w *world) {},
			room: func(t *testing.T, w *world) {
				two := 2
				if _, _, err := w.c.Jobs().Scale("web", "g", &two, "", false, nil, nil); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "node becomes eligible",
			setup: func(t *testing.T, w *world) {
				if err := w.s.SetNodeEligibility(w.node, false); err != nil {
					t.Fatal(err)
				}
			},
			room: func(t *testing.T, w *world) {
				if err := w.s.SetNodeEligibility(w.node, true); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "drain cancelled through the API",
			setup: func(t *testing.T, w *world) {
				if _, err := w.c.Nodes().UpdateDrain(w.node, &api.DrainSpec{Deadline: time.Hour}, false, nil); err != nil {
					t.Fatal(err)
				}
			},
			room: func(t *testing.T, w *world) {
				if _, err := w.c.Nodes().UpdateDrain(w.node, nil, true, nil); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "node ready again",
			setup: func(t *testing.T, w *world) {
				if err := w.s.SetNodeStatus(w.node, api.NodeStatusDown); err != nil {
					t.Fatal(err)
				}
			},
			room: func(t *testing.T, w *world) {
				if err := w.s.SetNodeStatus(w.node, api.NodeStatusReady); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, cl := newStandin(t)
			w := &world{s: s, c: cl}
			w.node = must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192}))
			c.setup(t, w)
			// web.g wants 4 × 1000 MHz; whatever the set-up left, 2 of
			// them must be queued: fill the node up to that.
			free := 0
			s.mu.RLock()
			n := s.nodes[w.node]
			if n.ready() {
				free = int(n.freeCPU() / 1000)
			}
			s.mu.RUnlock()
			count := free + 2
			if free == 4 { // nothing set up: the group itself overflows
				count = 4 + 2
			}
			if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{{Name: "g", Count: count, CPUMHz: 1000, MemoryMB: 100, NodeID: w.node}}}); err != nil {
				t.Fatal(err)
			}
			if q := s.Queued("", "web", "g"); q != 2 {
				t.Fatalf("queued %d before making room, want 2", q)
			}
			_, blocked := evalsOf(t, cl, "web")
			if len(blocked) != 1 {
				t.Fatalf("%d blocked evals, want 1", len(blocked))
			}
			c.room(t, w)
			if q := s.Queued("", "web", "g"); q != 0 {
				t.Fatalf("queued %d after making room, want 0", q)
			}
			b, _, err := cl.Evaluations().Info(blocked[0].ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if b.Status == "blocked" {
				t.Errorf("the blocked eval is still blocked: %+v", b)
			}
			if b.Status == api.EvalStatusComplete && (b.QueuedAllocations["g"] != 0 || b.FailedTGAllocs != nil) {
				t.Errorf("completed blocked eval %+v", b)
			}
			sum, _, _ := cl.Jobs().Summary("web", nil)
			if sum.Summary["g"].Queued != 0 {
				t.Errorf("summary still queued: %+v", sum.Summary["g"])
			}
		})
	}
}

func TestUnblockPartially(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 2000, MemoryMB: 8192}))
	if err := s.AddOtherJob(OtherJobSpec{ID: "tenant", NodeID: n, Count: 2, CPUMHz: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{{Name: "g", Count: 2, CPUMHz: 1000, NodeID: n}}}); err != nil {
		t.Fatal(err)
	}
	one := 1
	if _, _, err := cl.Jobs().Scale("tenant", "other", &one, "", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	if q := s.Queued("", "web", "g"); q != 1 {
		t.Fatalf("queued %d, want 1", q)
	}
	_, blocked := evalsOf(t, cl, "web")
	if len(blocked) != 1 || blocked[0].QueuedAllocations["g"] != 1 || blocked[0].FailedTGAllocs["g"] == nil {
		t.Fatalf("reblocked eval %+v", blocked)
	}
	// A new evaluation that still fails replaces the blocked one.
	three := 3
	if _, _, err := cl.Jobs().Scale("web", "g", &three, "", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	evs, _, _ := cl.Jobs().Evaluations("web", nil)
	var nBlocked, nCancelled int
	for _, e := range evs {
		switch e.Status {
		case "blocked":
			nBlocked++
		case "canceled":
			nCancelled++
			if !strings.Contains(e.StatusDescription, `existing blocked evaluation exists for job "web"`) {
				t.Errorf("cancelled eval description %q", e.StatusDescription)
			}
		}
	}
	if nBlocked != 1 || nCancelled != 1 {
		t.Errorf("%d blocked, %d cancelled evals; want 1 and 1", nBlocked, nCancelled)
	}
}

func TestPoolTargetingSpreadAndBinpack(t *testing.T) {
	for _, algo := range []api.SchedulerAlgorithm{api.SchedulerAlgorithmSpread, api.SchedulerAlgorithmBinpack} {
		t.Run(string(algo), func(t *testing.T) {
			s, cl := newStandin(t)
			if err := s.SetSchedulerAlgorithm(algo); err != nil {
				t.Fatal(err)
			}
			// IDs sort in the order added.
			a := must[string](t)(s.AddNode(NodeSpec{Name: "a", CPUMHz: 3000, MemoryMB: 8192, NodePool: "edge"}))
			b := must[string](t)(s.AddNode(NodeSpec{Name: "b", CPUMHz: 3000, MemoryMB: 8192, NodePool: "edge"}))
			cn := must[string](t)(s.AddNode(NodeSpec{Name: "c", CPUMHz: 2000, MemoryMB: 8192, NodePool: "edge"}))
			must[string](t)(s.AddNode(NodeSpec{Name: "elsewhere", CPUMHz: 90000, MemoryMB: 90000, NodePool: "core"}))
			must[string](t)(s.AddNode(NodeSpec{Name: "ineligible", CPUMHz: 90000, MemoryMB: 90000, NodePool: "edge", Eligibility: api.NodeSchedulingIneligible}))
			if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{{Name: "g", Count: 9, CPUMHz: 1000, MemoryMB: 10, NodePool: "edge"}}}); err != nil {
				t.Fatal(err)
			}
			allocs, _, err := cl.Jobs().Allocations("web", false, nil)
			if err != nil {
				t.Fatal(err)
			}
			per := map[string]int{}
			var order []string
			sortByCreate(allocs)
			for _, al := range allocs {
				per[al.NodeID]++
				order = append(order, al.NodeName)
			}
			if per[a] != 3 || per[b] != 3 || per[cn] != 2 || len(allocs) != 8 {
				t.Fatalf("placement %v over a/b/c = %d/%d/%d, want 3/3/2 and 1 queued", order, per[a], per[b], per[cn])
			}
			if q := s.Queued("", "web", "g"); q != 1 {
				t.Errorf("queued %d, want 1", q)
			}
			want := "a b a b c a b c"
			if algo == api.SchedulerAlgorithmBinpack {
				want = "c c a a a b b b"
			}
			if got := strings.Join(order, " "); got != want {
				t.Errorf("placement order %q, want %q", got, want)
			}
			j, _, err := cl.Jobs().Info("web", nil)
			if err != nil {
				t.Fatal(err)
			}
			if *j.NodePool != "edge" || len(j.TaskGroups[0].Constraints) != 0 {
				t.Errorf("job pool %q, constraints %v: want pool edge and no constraint", *j.NodePool, j.TaskGroups[0].Constraints)
			}
		})
	}
}

func sortByCreate(as []*api.AllocationListStub) {
	for i := 1; i < len(as); i++ {
		for k := i; k > 0 && (as[k].CreateIndex < as[k-1].CreateIndex || as[k].CreateIndex == as[k-1].CreateIndex && as[k].ID < as[k-1].ID); k-- {
			as[k], as[k-1] = as[k-1], as[k]
		}
	}
}

func TestDatacenterAndMixedPools(t *testing.T) {
	s, cl := newStandin(t)
	a := must[string](t)(s.AddNode(NodeSpec{Name: "a", CPUMHz: 4000, MemoryMB: 8192, NodePool: "first", Datacenter: "dc1"}))
	b := must[string](t)(s.AddNode(NodeSpec{Name: "b", CPUMHz: 4000, MemoryMB: 8192, NodePool: "second", Datacenter: "dc2"}))
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{
		{Name: "front", Count: 2, CPUMHz: 100, NodeID: a},
		{Name: "back", Count: 2, CPUMHz: 100, Datacenter: "dc2"},
	}}); err != nil {
		t.Fatal(err)
	}
	j, _, err := cl.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *j.NodePool != "all" {
		t.Errorf("a job over two pools has pool %q, want all", *j.NodePool)
	}
	if c := j.TaskGroups[1].Constraints; len(c) != 1 || c[0].LTarget != "${node.datacenter}" || c[0].RTarget != "dc2" {
		t.Errorf("back constraints %v", c)
	}
	back := s.AllocIDs("", "web", "back")
	if len(back) != 2 {
		t.Fatalf("back runs %d allocations, want 2", len(back))
	}
	for _, al := range back {
		ai, _, err := cl.Allocations().Info(al, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ai.NodeID != b {
			t.Errorf("back alloc on %s, want %s", ai.NodeName, "b")
		}
	}
}

func TestDrainAndEligibility(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192}))
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{{Name: "g", Count: 1, CPUMHz: 100, NodeID: n}}}); err != nil {
		t.Fatal(err)
	}
	check := func(step string, drain bool, elig string) {
		t.Helper()
		stubs, _, err := cl.Nodes().List(nil)
		if err != nil {
			t.Fatal(err)
		}
		if stubs[0].Drain != drain || stubs[0].SchedulingEligibility != elig {
			t.Errorf("%s: stub Drain %v eligibility %q, want %v %q", step, stubs[0].Drain, stubs[0].SchedulingEligibility, drain, elig)
		}
		info, _, err := cl.Nodes().Info(n, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (info.DrainStrategy != nil) != drain || info.SchedulingEligibility != elig || info.Drain {
			t.Errorf("%s: node DrainStrategy %+v eligibility %q Drain %v", step, info.DrainStrategy, info.SchedulingEligibility, info.Drain)
		}
	}
	two := 2
	scaleTo := func(k int) {
		t.Helper()
		if _, _, err := cl.Jobs().Scale("web", "g", &k, "", false, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	check("start", false, api.NodeSchedulingEligible)
	if err := s.SetNodeDrain(n, true); err != nil {
		t.Fatal(err)
	}
	check("draining", true, api.NodeSchedulingIneligible)
	scaleTo(two)
	if st, _ := s.Group("", "web", "g"); st.Running != 1 || st.Queued != 1 {
		t.Errorf("scale up on a draining node: %+v, want 1 running (kept) and 1 queued", st)
	}
	if err := s.SetNodeEligibility(n, true); err == nil || !strings.Contains(err.Error(), "while it is draining") {
		t.Errorf("eligible while draining: %v", err)
	}
	if err := s.SetNodeDrain(n, false); err != nil {
		t.Fatal(err)
	}
	check("drain cancelled", false, api.NodeSchedulingEligible)
	if st, _ := s.Group("", "web", "g"); st.Running != 2 || st.Queued != 0 {
		t.Errorf("after the drain: %+v", st)
	}
	if _, err := cl.Nodes().ToggleEligibility(n, false, nil); err != nil {
		t.Fatal(err)
	}
	check("ineligible (API)", false, api.NodeSchedulingIneligible)
	scaleTo(3)
	if q := s.Queued("", "web", "g"); q != 1 {
		t.Errorf("ineligible node took an allocation: queued %d", q)
	}
	if _, err := cl.Nodes().ToggleEligibility(n, true, nil); err != nil {
		t.Fatal(err)
	}
	if q := s.Queued("", "web", "g"); q != 0 {
		t.Errorf("eligible again: queued %d", q)
	}
}

func TestAddNodesBulk(t *testing.T) {
	s, cl := newStandin(t)
	ids, err := s.AddNodes(50, NodeSpec{Name: "w", CPUMHz: 1000, MemoryMB: 1000, NodePool: "bulk", Meta: map[string]string{"rack": "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 50 {
		t.Fatalf("%d IDs", len(ids))
	}
	stubs, _, err := cl.Nodes().List(&api.QueryOptions{Filter: `Name == "w-50" and NodePool == "bulk"`})
	if err != nil || len(stubs) != 1 || stubs[0].ID != ids[49] {
		t.Fatalf("w-50: %v %v", stubs, err)
	}
	if _, err := s.AddNodes(1, NodeSpec{ID: "x", CPUMHz: 1}); err == nil {
		t.Errorf("a template with an ID was accepted")
	}
	if _, err := s.AddNodes(1, NodeSpec{}); err == nil {
		t.Errorf("a template without CPU was accepted")
	}
}
