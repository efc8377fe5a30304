package nomadstandin

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// fixture is a stand-in with two nodes and a job with one group on each.
type fixture struct {
	s             *Server
	c             *api.Client
	first, second string
	job, g1, g2   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	f := &fixture{s: s, job: "web", g1: "front", g2: "back"}
	if f.first, err = s.AddNode(NodeSpec{Name: "host-a", CPUMHz: 8000, MemoryMB: 16384, ReservedCPUMHz: 500, ReservedMemoryMB: 1024, NodeClass: "big", NodePool: "edge"}); err != nil {
		t.Fatal(err)
	}
	if f.second, err = s.AddNode(NodeSpec{Name: "host-b", CPUMHz: 4000, MemoryMB: 8192}); err != nil {
		t.Fatal(err)
	}
	err = s.AddJob(JobSpec{ID: f.job, Groups: []GroupSpec{
		{Name: f.g1, Count: 2, CPUMHz: 500, MemoryMB: 256, NodeID: f.first},
		{Name: f.g2, Count: 1, CPUMHz: 300, MemoryMB: 128, NodeID: f.second},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if f.c, err = s.Client(""); err != nil {
		t.Fatal(err)
	}
	return f
}

// queuedOnFirst registers job, one replica of cpuMHz (and 64 MB) on the
// first host, and returns how many of it Nomad left queued.
func (f *fixture) queuedOnFirst(t *testing.T, job string, cpuMHz int) int {
	t.Helper()
	if err := f.s.AddJob(JobSpec{ID: job, Groups: []GroupSpec{{Name: "g", Count: 1, CPUMHz: cpuMHz, MemoryMB: 64, NodeID: f.first}}}); err != nil {
		t.Fatal(err)
	}
	return f.s.Queued("", job, "g")
}

// arrival returns a channel closed when the next request with this method
// and path reaches the stand-in (its hook runs before the handler).
func (f *fixture) arrival(method, path string) chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	f.s.SetHook(func(m, p string) {
		if m == method && p == path {
			once.Do(func() { close(ch) })
		}
	})
	return ch
}

// await waits for an arrival; it fails after 5s. A change made after the
// arrival but before the handler blocks still answers the query (its index
// is then already past WaitIndex), so the tests hold either way.
func (f *fixture) await(t *testing.T, ch chan struct{}) {
	t.Helper()
	select {
	case <-ch:
		f.s.SetHook(nil)
	case <-time.After(5 * time.Second):
		t.Fatal("the blocking request did not reach the stand-in in 5s")
	}
}

func statusOf(err error) int {
	var ue api.UnexpectedResponseError
	if errors.As(err, &ue) {
		return ue.StatusCode()
	}
	return 0
}

func TestNodesAndStats(t *testing.T) {
	f := newFixture(t)
	stubs, meta, err := f.c.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(stubs) != 2 || meta.LastIndex == 0 {
		t.Fatalf("got %d nodes, index %d; want 2 nodes and an index", len(stubs), meta.LastIndex)
	}
	for _, n := range stubs {
		if n.NodeResources == nil || n.NodeResources.Cpu.CpuShares == 0 {
			t.Errorf("node %s: resources=true gave no NodeResources", n.Name)
		}
	}
	plain, _, err := f.c.Nodes().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain[0].NodeResources != nil {
		t.Errorf("without resources=true the list carries NodeResources")
	}
	n, _, err := f.c.Nodes().Info(f.first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "host-a" || n.NodeResources.Cpu.CpuShares != 8000 || n.ReservedResources.Cpu.CpuShares != 500 || n.NodePool != "edge" || n.NodeClass != "big" {
		t.Errorf("node info = %+v", n)
	}
	if _, _, err := f.c.Nodes().Info("nope", nil); statusOf(err) != 404 || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown node: err = %v, want 404 not found", err)
	}

	ids := f.s.AllocIDs("", f.job, f.g1)
	if len(ids) != 2 {
		t.Fatalf("group %s runs %d allocations, want 2", f.g1, len(ids))
	}
	if err := f.s.SetGroupUsage("", f.job, f.g1, 120, 64); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetAllocUsage(ids[1], 200, 100); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetNodeUsage(f.first, 50, 500); err != nil {
		t.Fatal(err)
	}
	allocs, _, err := f.c.Nodes().Allocations(f.first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(allocs) != 2 || allocs[0].AllocatedResources.Tasks["app"].Cpu.CpuShares != 500 || allocs[0].Job == nil {
		t.Fatalf("node allocations = %d, first %+v", len(allocs), allocs[0])
	}
	// Nomad's Job.Allocations answers stubs without resources
	// (alloc.Stub(nil)); the allocation list carries them.
	jobStubs, _, err := f.c.Jobs().Allocations(f.job, false, nil)
	if err != nil || len(jobStubs) != 3 {
		t.Fatalf("job allocations: %d, %v; want 3", len(jobStubs), err)
	}
	for _, st := range jobStubs {
		if st.AllocatedResources != nil {
			t.Errorf("job allocation stub %s carries AllocatedResources; Nomad's job allocation list has none", st.Name)
		}
	}
	// The allocation list carries them only when asked for
	// (resources=true), as Nomad's Alloc.List with its stub fields.
	listed, _, err := f.c.Allocations().List(nil)
	if err != nil || len(listed) != 3 || listed[0].AllocatedResources != nil {
		t.Errorf("allocation list: %d stubs, %v; want 3 without AllocatedResources", len(listed), err)
	}
	listed, _, err = f.c.Allocations().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
	if err != nil || len(listed) != 3 || listed[0].AllocatedResources == nil {
		t.Errorf("allocation list with resources=true: %d stubs, %v; want 3 with AllocatedResources", len(listed), err)
	}
	if _, _, err := f.c.Allocations().List(&api.QueryOptions{Params: map[string]string{"resources": "yes"}}); err == nil || !strings.Contains(err.Error(), `Failed to parse value of "resources" (yes) as a bool`) {
		t.Errorf("resources=yes: %v; want Nomad's parse error", err)
	}
	// Nomad's Job.LatestDeployment never looks the job up: 200, null.
	if d, _, err := f.c.Jobs().LatestDeployment("no-such-job", nil); err != nil || d != nil {
		t.Errorf("latest deployment of an unknown job: %v, %v; want none and no error", d, err)
	}
	var cpu float64
	for _, a := range allocs {
		st, err := f.c.Allocations().Stats(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		cpu += st.ResourceUsage.CpuStats.TotalTicks
	}
	if cpu != 320 {
		t.Errorf("allocation CPU sum = %v, want 120+200", cpu)
	}
	hs, err := f.c.Nodes().Stats(f.first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hs.CPUTicksConsumed != 370 || hs.Memory.Used != uint64(664*mib) {
		t.Errorf("host stats cpu %v mem %v, want 370 MHz and 664 MiB", hs.CPUTicksConsumed, hs.Memory.Used)
	}
	if _, err := f.c.Nodes().Stats("nope", nil); statusOf(err) != 404 {
		t.Errorf("stats of unknown node: %v, want 404", err)
	}
	if _, err := f.c.Allocations().Stats(&api.Allocation{ID: "nope"}, nil); statusOf(err) != 404 {
		t.Errorf("stats of unknown alloc: %v, want 404", err)
	}
}

func TestScaleEventsAndDeployment(t *testing.T) {
	f := newFixture(t)
	three := 3
	if _, _, err := f.c.Jobs().Scale(f.job, f.g1, &three, "more", false, map[string]any{"k": 1}, nil); err != nil {
		t.Fatal(err)
	}
	st, _, err := f.c.Jobs().ScaleStatus(f.job, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := st.TaskGroups[f.g1]
	if g.Desired != 3 || g.Running != 3 || len(g.Events) != 1 || *g.Events[0].Count != 3 || g.Events[0].PreviousCount != 2 || g.Events[0].Message != "more" {
		t.Fatalf("after scale: %+v", g)
	}
	// Count null: an event only.
	if _, _, err := f.c.Jobs().Scale(f.job, f.g1, nil, "dry run", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	gs, _ := f.s.Group("", f.job, f.g1)
	if gs.Count != 3 || len(gs.Events) != 2 || gs.Events[0].Count != nil || gs.Events[0].Message != "dry run" {
		t.Fatalf("after null-count scale: %+v", gs)
	}
	if gs.Events[0].Time < gs.Events[1].Time {
		t.Errorf("events not newest first")
	}
	// A scale down stops allocations; they stay listed as terminal.
	one := 1
	if _, _, err := f.c.Jobs().Scale(f.job, f.g1, &one, "less", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	allocs, _, _ := f.c.Nodes().Allocations(f.first, nil)
	running := 0
	for _, a := range allocs {
		if a.ClientStatus == api.AllocClientStatusRunning {
			running++
		}
	}
	if len(allocs) != 3 || running != 1 {
		t.Errorf("after scale to 1: %d allocations listed, %d running; want 3 and 1", len(allocs), running)
	}
	// Deployment in progress blocks a count change, not an event.
	if err := f.s.SetDeploymentActive("", f.job, true); err != nil {
		t.Fatal(err)
	}
	d, _, err := f.c.Jobs().LatestDeployment(f.job, nil)
	if err != nil || d == nil || d.Status != api.DeploymentStatusRunning {
		t.Fatalf("latest deployment = %+v, %v", d, err)
	}
	_, _, err = f.c.Jobs().Scale(f.job, f.g1, &three, "blocked", false, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "job scaling blocked due to active deployment") {
		t.Fatalf("scale during deployment: %v", err)
	}
	if _, _, err := f.c.Jobs().Scale(f.job, f.g1, nil, "event", false, nil, nil); err != nil {
		t.Fatalf("event during deployment: %v", err)
	}
	_ = f.s.SetDeploymentActive("", f.job, false)
	if _, _, err := f.c.Jobs().Scale(f.job, f.g1, &three, "after", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	// Errors.
	cases := []struct {
		name, job, group string
		count            int
		code             int
		text             string
	}{
		{"unknown job", "nope", f.g1, 1, 404, "not found"},
		{"unknown group", f.job, "nope", 1, 400, "does not exist"},
		{"negative", f.job, f.g1, -1, 400, "negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := f.c.Jobs().Scale(c.job, c.group, &c.count, "", false, nil, nil)
			if statusOf(err) != c.code || !strings.Contains(err.Error(), c.text) {
				t.Errorf("err = %v, want %d %q", err, c.code, c.text)
			}
		})
	}
	if _, _, err := f.c.Jobs().Info("nope", nil); statusOf(err) != 404 {
		t.Errorf("job info of unknown job: %v", err)
	}
	j, _, err := f.c.Jobs().Info(f.job, nil)
	if err != nil || *j.TaskGroups[0].Count != 3 || *j.TaskGroups[0].Tasks[0].Resources.CPU != 500 {
		t.Fatalf("job info: %+v %v", j, err)
	}
	if err := f.s.SetJobStopped("", f.job, true); err != nil {
		t.Fatal(err)
	}
	st, _, _ = f.c.Jobs().ScaleStatus(f.job, nil)
	if !st.JobStopped || st.TaskGroups[f.g1].Running != 0 {
		t.Errorf("stopped job: %+v", st)
	}
}

func TestScalingPolicyBounds(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, _ := s.AddNode(NodeSpec{CPUMHz: 1000, MemoryMB: 1000})
	lo, hi := int64(1), int64(4)
	if err := s.AddJob(JobSpec{ID: "j", Groups: []GroupSpec{{Name: "g", Count: 1, CPUMHz: 100, NodeID: n, ScalingMin: &lo, ScalingMax: &hi}}}); err != nil {
		t.Fatal(err)
	}
	c, _ := s.Client("")
	five := 5
	if _, _, err := c.Jobs().Scale("j", "g", &five, "", false, nil, nil); statusOf(err) != 400 || !strings.Contains(err.Error(), "maximum") {
		t.Errorf("scale above max: %v", err)
	}
}

func TestBlockingQuery(t *testing.T) {
	f := newFixture(t)
	_, meta, err := f.c.Jobs().ScaleStatus(f.job, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing changes: the query holds for the wait and answers the same index.
	start := time.Now()
	_, m2, err := f.c.Jobs().ScaleStatus(f.job, &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || m2.LastIndex != meta.LastIndex {
		t.Errorf("idle blocking query returned after %v with index %d (asked %d)", d, m2.LastIndex, meta.LastIndex)
	}
	// A change releases it early with a higher index.
	done := make(chan uint64, 1)
	arrived := f.arrival(http.MethodGet, "/v1/job/"+f.job+"/scale")
	go func() {
		_, m, err := f.c.Jobs().ScaleStatus(f.job, &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 10 * time.Second})
		if err != nil {
			done <- 0
			return
		}
		done <- m.LastIndex
	}()
	f.await(t, arrived)
	four := 4
	if _, _, err := f.c.Jobs().Scale(f.job, f.g2, &four, "", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case idx := <-done:
		if idx <= meta.LastIndex {
			t.Errorf("released blocking query has index %d, want > %d", idx, meta.LastIndex)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocking query not released by a change")
	}
}

func TestACL(t *testing.T) {
	f := newFixture(t)
	f.s.RequireToken("secret-rw", TokenPolicy{Write: true})
	f.s.RequireToken("secret-ro", TokenPolicy{})
	one := 1
	cases := []struct {
		name, token string
		readOK      bool
		writeOK     bool
	}{
		{"none", "", false, false},
		{"wrong", "bogus", false, false},
		{"read-only", "secret-ro", true, false},
		{"read-write", "secret-rw", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, err := f.s.Client(c.token)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = cl.Nodes().List(nil)
			if (err == nil) != c.readOK {
				t.Errorf("read: err = %v, want ok=%v", err, c.readOK)
			}
			if err != nil && (statusOf(err) != 403 || !strings.Contains(err.Error(), "Permission denied")) {
				t.Errorf("read refused with %v, want 403 Permission denied", err)
			}
			_, _, err = cl.Jobs().Scale(f.job, f.g1, &one, "", false, nil, nil)
			if (err == nil) != c.writeOK {
				t.Errorf("write: err = %v, want ok=%v", err, c.writeOK)
			}
		})
	}
	for _, r := range f.s.Requests() {
		if strings.Contains(r.Query, "secret") {
			t.Errorf("token leaked into the query string: %s", r.Query)
		}
	}
}

func TestFaults(t *testing.T) {
	f := newFixture(t)
	// Two 503s on reads, then normal answers.
	f.s.InjectFault(Fault{Method: http.MethodGet, Path: "/v1/job/*", Status: 503, Times: 2})
	for i := 0; i < 2; i++ {
		if _, _, err := f.c.Jobs().ScaleStatus(f.job, nil); statusOf(err) != 503 {
			t.Errorf("read %d: %v, want 503", i, err)
		}
	}
	if _, _, err := f.c.Jobs().ScaleStatus(f.job, nil); err != nil {
		t.Errorf("after the fault ran out: %v", err)
	}
	// The second scale write of group g2 fails, others pass.
	f.s.InjectFault(Fault{Method: http.MethodPut, Path: "/v1/job/web/scale", Group: f.g2, Skip: 1, Times: 1, Status: 500})
	two := 2
	for i, want := range []int{0, 500, 0} {
		_, _, err := f.c.Jobs().Scale(f.job, f.g2, &two, "", false, nil, nil)
		if statusOf(err) != want {
			t.Errorf("write %d: %v, want status %d", i, err, want)
		}
	}
	// 404 injected: a read of Nomad's state answers it with the query
	// meta, as Nomad's "not found".
	f.s.InjectFault(Fault{Path: "/v1/node/" + f.first, Status: 404, Times: 1})
	if resp, err := http.Get(f.s.URL() + "/v1/node/" + f.first); err != nil || resp.StatusCode != 404 || resp.Header.Get("X-Nomad-Index") == "" {
		t.Errorf("injected 404: %v, %v; want a 404 with X-Nomad-Index", resp, err)
	} else {
		resp.Body.Close()
	}
	// Slow answer.
	f.s.InjectFault(Fault{Path: "/v1/nodes", Delay: 200 * time.Millisecond, Times: 1})
	start := time.Now()
	if _, _, err := f.c.Nodes().List(nil); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 180*time.Millisecond {
		t.Errorf("slow fault answered in %v", time.Since(start))
	}
	f.s.InjectFault(Fault{Status: 500})
	f.s.ClearFaults()
	if _, _, err := f.c.Nodes().List(nil); err != nil {
		t.Errorf("after ClearFaults: %v", err)
	}
}

func TestRestart(t *testing.T) {
	f := newFixture(t)
	url := f.s.URL()
	done := make(chan error, 1)
	_, meta, _ := f.c.Jobs().ScaleStatus(f.job, nil)
	arrived := f.arrival(http.MethodGet, "/v1/job/"+f.job+"/scale")
	go func() {
		_, _, err := f.c.Jobs().ScaleStatus(f.job, &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 30 * time.Second})
		done <- err
	}()
	f.await(t, arrived)
	f.s.Stop()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("blocking query survived a stop without error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not end a blocking query")
	}
	if _, _, err := f.c.Nodes().List(nil); err == nil {
		t.Errorf("a stopped stand-in answered")
	}
	if err := f.s.Start(); err != nil {
		t.Fatal(err)
	}
	if f.s.URL() != url {
		t.Errorf("restarted on %s, want %s", f.s.URL(), url)
	}
	st, _, err := f.c.Jobs().ScaleStatus(f.job, nil)
	if err != nil || st.TaskGroups[f.g1].Running != 2 {
		t.Errorf("after restart: %+v, %v", st, err)
	}
	if err := f.s.Restart(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.c.Nodes().List(nil); err != nil {
		t.Errorf("after Restart: %v", err)
	}
}

// With a stats interval, reads between two refreshes carry the same
// Timestamp (the latest refresh), as a Nomad client's collection_interval
// makes them; without one every answer is fresh.
func TestStatsInterval(t *testing.T) {
	f := newFixture(t)
	allocs, _, err := f.c.Nodes().Allocations(f.first, nil)
	if err != nil || len(allocs) == 0 {
		t.Fatalf("node allocations: %d, %v", len(allocs), err)
	}
	stamps := func() (node, alloc int64) {
		t.Helper()
		var hs struct{ Timestamp int64 }
		if _, err := f.c.Raw().Query("/v1/client/stats?node_id="+f.first, &hs, nil); err != nil {
			t.Fatal(err)
		}
		st, err := f.c.Allocations().Stats(allocs[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		return hs.Timestamp, st.Timestamp
	}
	n1, a1 := stamps()
	time.Sleep(5 * time.Millisecond)
	if n2, a2 := stamps(); n2 == n1 || a2 == a1 {
		t.Fatalf("without an interval, reads 5 ms apart repeat a Timestamp: node %d %d, allocation %d %d", n1, n2, a1, a2)
	}
	f.s.SetStatsInterval(time.Hour)
	n1, a1 = stamps()
	time.Sleep(5 * time.Millisecond)
	if n2, a2 := stamps(); n2 != n1 || a2 != a1 {
		t.Fatalf("within one refresh the Timestamps moved: node %d %d, allocation %d %d", n1, n2, a1, a2)
	}
	if age := time.Since(time.Unix(0, n1)); age < 0 || age > time.Second {
		t.Fatalf("the first refresh is %v old; it is when the interval was set", age)
	}
}

// An allocation held in its shutdown_delay: listed as running with desired
// status stop, its stats still answer, the group's count drops by one, and
// it keeps its room on the node until it stops, as Nomad's scheduler counts
// it (a replica of 7000 MHz does not fit beside it; 6500 MHz does).
func TestAllocStopping(t *testing.T) {
	f := newFixture(t)
	ids := f.s.AllocIDs("", f.job, f.g1)
	if err := f.s.SetAllocStopping(ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetAllocStopping(ids[0]); err == nil {
		t.Fatal("an allocation already stopping was stopped again")
	}
	stubs, _, err := f.c.Jobs().Allocations(f.job, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, st := range stubs {
		if st.ID == ids[0] {
			found = true
			if st.ClientStatus != api.AllocClientStatusRunning || st.DesiredStatus != api.AllocDesiredStatusStop {
				t.Errorf("stopping allocation listed as %s / %s, want running / stop", st.ClientStatus, st.DesiredStatus)
			}
		}
	}
	if !found {
		t.Fatal("the stopping allocation is not in the job's allocation list")
	}
	if _, err := f.c.Allocations().Stats(&api.Allocation{ID: ids[0]}, nil); err != nil {
		t.Errorf("a stopping allocation's stats: %v", err)
	}
	gs, err := f.s.Group("", f.job, f.g1)
	if err != nil || gs.Count != 1 || gs.Running != 1 {
		t.Fatalf("group %+v, %v: want count 1, 1 running", gs, err)
	}
	// host-a: 7500 MHz allocatable, 500 reserved by the one replica left
	// and 500 by the stopping one.
	if q := f.queuedOnFirst(t, "big", 7000); q != 1 {
		t.Errorf("7000 MHz placed beside a stopping allocation's 500 and a replica's 500 on 7500: %d queued, want 1", q)
	}
	if q := f.queuedOnFirst(t, "fits", 6500); q != 0 {
		t.Errorf("6500 MHz queued on a node with 6500 free")
	}
}

// A job purged while one of its allocations is still stopping gives the
// allocation's room back with it (the room stayed taken for good).
func TestAllocStoppingPurged(t *testing.T) {
	f := newFixture(t)
	ids := f.s.AllocIDs("", f.job, f.g1)
	if err := f.s.SetAllocStopping(ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.c.Jobs().Deregister(f.job, true, nil); err != nil {
		t.Fatal(err)
	}
	// host-a: 7500 MHz allocatable, nothing left on it.
	if q := f.queuedOnFirst(t, "whole", 7500); q != 0 {
		t.Errorf("7500 MHz queued on an empty 7500 MHz node: the purged job's stopping allocation still holds its room")
	}
}

// TestRequestLoggedBeforeAnswered: a request is in Requests (and
// RequestCounts) once its caller has the answer. It was logged as the
// handler returned, after a large answer could be read in full, so a test
// that counted requests right after its reads missed some now and then.
func TestRequestLoggedBeforeAnswered(t *testing.T) {
	f := newFixture(t)
	// A long answer: many allocations, each listed with its job.
	if err := f.s.AddJob(JobSpec{ID: "many", Groups: []GroupSpec{{Name: "g", Count: 60, CPUMHz: 10, MemoryMB: 16, NodeID: f.first}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		before := len(f.s.Requests())
		total := f.s.RequestCounts().Total
		if _, _, err := f.c.Nodes().Allocations(f.first, nil); err != nil {
			t.Fatal(err)
		}
		if got := len(f.s.Requests()) - before; got != 1 {
			t.Fatalf("read %d: %d requests logged once its answer was read, want 1", i, got)
		}
		if got := f.s.RequestCounts().Total - total; got != 1 {
			t.Fatalf("read %d: %d requests counted once its answer was read, want 1", i, got)
		}
	}
	if r := f.s.Requests(); r[len(r)-1].Status != http.StatusOK {
		t.Errorf("logged status %d, want 200", r[len(r)-1].Status)
	}
}

// TestNotFoundCarriesQueryMeta: as Nomad, a read of a job, node, allocation
// or deployment it does not have answers 404 with the read's query meta
// (X-Nomad-Index); a path it does not serve answers 404 without it.
func TestNotFoundCarriesQueryMeta(t *testing.T) {
	f := newFixture(t)
	for path, meta := range map[string]bool{
		"/v1/job/nope":       true,
		"/v1/job/nope/scale": true,
		"/v1/node/6f1e2d3c-0000-4000-8000-000000000001":       true,
		"/v1/allocation/6f1e2d3c-0000-4000-8000-000000000001": true,
		"/v1/deployment/6f1e2d3c-0000-4000-8000-000000000001": true,
		"/v1/nope": false,
	} {
		resp, err := http.Get(f.s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || (resp.Header.Get("X-Nomad-Index") != "") != meta {
			t.Errorf("GET %s: %d, X-Nomad-Index %q; want 404 with the header %v", path, resp.StatusCode, resp.Header.Get("X-Nomad-Index"), meta)
		}
	}
}

// TestControlUsage: PUT /_standin/usage sets a group's usage per
// allocation, as SetGroupUsage does; a bad body, a negative figure or an
// unknown group is refused and changes nothing.
func TestControlUsage(t *testing.T) {
	f := newFixture(t)
	put := func(body string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPut, f.s.URL()+"/_standin/usage", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	cpu := func() float64 {
		t.Helper()
		var sum float64
		for _, id := range f.s.AllocIDs("", f.job, f.g1) {
			st, err := f.c.Allocations().Stats(&api.Allocation{ID: id, NodeID: f.first}, nil)
			if err != nil {
				t.Fatal(err)
			}
			sum += st.ResourceUsage.CpuStats.TotalTicks
		}
		return sum
	}
	for _, c := range []struct {
		name   string
		body   string
		status int
		cpu    float64 // the group's CPU summed over its 2 allocations after
	}{
		{"set", `{"Job":"web","Group":"front","CPUMHz":300,"MemoryMB":100}`, 200, 600},
		{"negative", `{"Job":"web","Group":"front","CPUMHz":-1}`, 400, 600},
		{"unknown field", `{"Job":"web","Group":"front","cpu":5}`, 400, 600},
		{"not JSON", `cpu=5`, 400, 600},
		{"unknown group", `{"Job":"web","Group":"nope","CPUMHz":5}`, 404, 600},
		{"again", `{"Job":"web","Group":"front","CPUMHz":50}`, 200, 100},
	} {
		if got := put(c.body); got != c.status {
			t.Errorf("%s: status %d, want %d", c.name, got, c.status)
		}
		if got := cpu(); got != c.cpu {
			t.Errorf("%s: the group's CPU is %v, want %v", c.name, got, c.cpu)
		}
	}
}
