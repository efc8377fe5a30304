package nomadstandin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func TestScenarioJSON(t *testing.T) {
	const text = `{
	  "Token": "t0k",
	  "Nodes": [{"Name": "host-a", "CPUMHz": 4000, "MemoryMB": 8192, "NodePool": "edge"}],
	  "NodeSets": [{"Count": 3, "Template": {"Name": "bulk", "CPUMHz": 1000, "MemoryMB": 1024}}],
	  "Jobs": [{"ID": "web", "Groups": [{"Name": "g", "Count": 2, "CPUMHz": 500, "MemoryMB": 256, "NodeName": "host-a",
	            "Warmup": "5s", "Update": {"MaxParallel": 1, "AutoComplete": "1s", "MinHealthyTime": 2000000000}}]}],
	  "OtherJobs": [{"ID": "tenant", "Count": 1, "CPUMHz": 100}],
	  "GroupUsage": [{"Job": "web", "Group": "g", "CPUMHz": 120, "MemoryMB": 64}],
	  "NodeUsage": [{"Node": "host-a", "CPUMHz": 300, "MemoryMB": 512}],
	  "Latency": [{"Method": "GET", "Path": "/v1/client/allocation/*/stats", "Delay": "110ms"}, {"Path": "/v1/nodes", "Delay": 1000000}],
	  "Faults": [{"Path": "/v1/job/web/allocations", "Delay": "20s", "Times": 2}, {"Path": "/v1/jobs", "Status": 500, "Delay": 3000}]
	}`
	var sc Scenario
	if err := json.Unmarshal([]byte(text), &sc); err != nil {
		t.Fatal(err)
	}
	g := sc.Jobs[0].Groups[0]
	if g.Warmup != 5*time.Second || g.Update.AutoComplete != time.Second || g.Update.MinHealthyTime != 2*time.Second || g.NodeName != "host-a" || g.CPUMHz != 500 {
		t.Errorf("group %+v update %+v", g, g.Update)
	}
	if sc.Latency[0].Delay != 110*time.Millisecond || sc.Latency[1].Delay != time.Millisecond {
		t.Errorf("latency %+v", sc.Latency)
	}
	if f := sc.Faults; len(f) != 2 || f[0].Delay != 20*time.Second || f[0].Times != 2 || f[0].Path != "/v1/job/web/allocations" || f[1].Delay != 3000 || f[1].Status != 500 {
		t.Errorf("faults %+v", sc.Faults)
	}
	sc.OtherJobs[0].NodeID = "host-a" // a name resolves
	s, err := NewFromScenario(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st, _ := s.Group("", "web", "g"); st.Running != 2 {
		t.Errorf("web.g runs %d", st.Running)
	}
	if st, _ := s.Group("", "tenant", "other"); st.Running != 1 {
		t.Errorf("the other job runs %d", st.Running)
	}
	// The scenario round-trips through JSON (StartProcess writes it).
	b, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	var back Scenario
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Jobs[0].Groups[0].Warmup != 5*time.Second || back.Latency[0].Delay != 110*time.Millisecond || back.Faults[0].Delay != 20*time.Second || back.Faults[0].Times != 2 {
		t.Errorf("round trip lost durations: %+v", back)
	}
}

func TestProcessMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const token = "process-token"
	sc := Scenario{
		Token:    token,
		Nodes:    []NodeSpec{{Name: "host-a", CPUMHz: 4000, MemoryMB: 8192, NodePool: "edge"}},
		NodeSets: []NodeSet{{Count: 200, Template: NodeSpec{Name: "bulk", CPUMHz: 1000, MemoryMB: 1024}}},
		Jobs: []JobSpec{{ID: "web", Groups: []GroupSpec{
			{Name: "g", Count: 9, CPUMHz: 500, MemoryMB: 256, NodeName: "host-a", Warmup: time.Hour},
		}}},
		GroupUsage: []GroupUsage{{Job: "web", Group: "g", CPUMHz: 120, MemoryMB: 64}},
		Latency:    []Latency{{Method: "GET", Path: "/v1/client/allocation/*/stats", Delay: 60 * time.Millisecond}},
	}
	url, stop, err := StartProcess(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("url %q", url)
	}
	cl, err := api.NewClient(&api.Config{Address: url, SecretID: token, TLSConfig: &api.TLSConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	stubs, _, err := cl.Nodes().List(&api.QueryOptions{Filter: `NodePool == "edge"`})
	if err != nil || len(stubs) != 1 || stubs[0].Name != "host-a" {
		t.Fatalf("filtered node list: %v %v", stubs, err)
	}
	all, _, err := cl.Nodes().List(nil)
	if err != nil || len(all) != 201 {
		t.Fatalf("node list: %d %v", len(all), err)
	}
	st, _, err := cl.Jobs().ScaleStatus("web", nil)
	if err != nil || st.TaskGroups["g"].Running != 8 {
		t.Fatalf("scale status %+v %v: want 8 of 9 placed (4000 MHz / 500)", st, err)
	}
	allocs, _, err := cl.Jobs().Allocations("web", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := cl.Allocations().Info(allocs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	us, err := cl.Allocations().Stats(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 60*time.Millisecond || us.ResourceUsage.CpuStats.TotalTicks != 0 {
		t.Errorf("stats in %v with %v ticks: want >= 60ms and 0 (warming up)", d, us.ResourceUsage.CpuStats.TotalTicks)
	}
	anon, _ := api.NewClient(&api.Config{Address: url, TLSConfig: &api.TLSConfig{}})
	if _, _, err := anon.Nodes().List(nil); statusOf(err) != 403 {
		t.Errorf("no token: %v, want 403", err)
	}
	rc, err := FetchRequestCounts(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"GET /v1/nodes": 3, "GET /v1/job/:id/scale": 1, "GET /v1/job/:id/allocations": 1,
		"GET /v1/allocation/:id": 1, "GET /v1/client/allocation/:id/stats": 1}
	for k, v := range want {
		if rc.ByRoute[k] != v {
			t.Errorf("count of %s = %d, want %d (all: %v)", k, rc.ByRoute[k], v, rc.ByRoute)
		}
	}
	if rc.Total != 7 {
		t.Errorf("total %d, want 7", rc.Total)
	}
	stop()
	if _, _, err := cl.Nodes().List(nil); err == nil {
		t.Errorf("the stand-in still answers after stop")
	}
	stop() // idempotent
}

func TestProcessModeBadScenario(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, _, err := StartProcess(ctx, Scenario{Jobs: []JobSpec{{ID: "web", Groups: []GroupSpec{{Name: "g", NodeID: "missing"}}}}})
	if err == nil || !strings.Contains(err.Error(), `node "missing" not found`) {
		t.Errorf("bad scenario: %v", err)
	}
}

// TestScaleSetupAndListing builds 5000 nodes and a job of 2500 allocations
// spread over them and times the set-up and the listings (the figures in
// README.md come from the benchmarks below).
func TestScaleSetupAndListing(t *testing.T) {
	s, cl := newStandin(t)
	start := time.Now()
	if _, err := s.AddNodes(5000, NodeSpec{Name: "w", CPUMHz: 16000, MemoryMB: 32768, NodePool: "big"}); err != nil {
		t.Fatal(err)
	}
	tNodes := time.Since(start)
	start = time.Now()
	if err := s.AddJob(JobSpec{ID: "huge", Groups: []GroupSpec{{Name: "g", Count: 2500, CPUMHz: 100, MemoryMB: 64, NodePool: "big"}}}); err != nil {
		t.Fatal(err)
	}
	tJob := time.Since(start)
	start = time.Now()
	stubs, _, err := cl.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
	if err != nil || len(stubs) != 5000 {
		t.Fatalf("%d nodes, %v", len(stubs), err)
	}
	tList := time.Since(start)
	start = time.Now()
	allocs, _, err := cl.Jobs().Allocations("huge", false, nil)
	if err != nil || len(allocs) != 2500 {
		t.Fatalf("%d allocations, %v", len(allocs), err)
	}
	tAllocs := time.Since(start)
	start = time.Now()
	one, _, err := cl.Nodes().List(&api.QueryOptions{Filter: `Name == "w-4321"`})
	if err != nil || len(one) != 1 {
		t.Fatalf("filtered: %d, %v", len(one), err)
	}
	tFilter := time.Since(start)
	start = time.Now()
	ten := 10
	if _, _, err := cl.Jobs().Scale("huge", "g", &ten, "", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	tScale := time.Since(start)
	t.Logf("5000 nodes %v; job of 2500 allocations %v; node list (resources) %v; 2500-allocation list %v; filtered node list %v; scale 2500 -> 10 %v",
		tNodes, tJob, tList, tAllocs, tFilter, tScale)
	// Generous bounds (race detector, shared machine): each is well under
	// a second without -race.
	for name, d := range map[string]time.Duration{"nodes": tNodes, "job": tJob, "node list": tList, "alloc list": tAllocs, "scale": tScale} {
		if d > 15*time.Second {
			t.Errorf("%s took %v", name, d)
		}
	}
}

func BenchmarkListNodes5000(b *testing.B) {
	s, cl := newStandin(b)
	if _, err := s.AddNodes(5000, NodeSpec{Name: "w", CPUMHz: 16000, MemoryMB: 32768}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		q    *api.QueryOptions
	}{
		{"plain", nil},
		{"resources", &api.QueryOptions{Params: map[string]string{"resources": "true"}}},
		{"filter-one", &api.QueryOptions{Filter: `Name == "w-2500" and NodePool == "default"`}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, _, err := cl.Nodes().List(c.q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJobAllocations2000(b *testing.B) {
	s, cl := newStandin(b)
	if _, err := s.AddNodes(100, NodeSpec{Name: "w", CPUMHz: 64000, MemoryMB: 262144}); err != nil {
		b.Fatal(err)
	}
	if err := s.AddJob(JobSpec{ID: "huge", Groups: []GroupSpec{{Name: "g", Count: 2000, CPUMHz: 100, MemoryMB: 64}}}); err != nil {
		b.Fatal(err)
	}
	b.Run("job-allocations", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, err := cl.Jobs().Allocations("huge", false, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("node-allocations-20", func(b *testing.B) {
		stubs, _, _ := cl.Nodes().List(nil)
		for i := 0; i < b.N; i++ {
			if _, _, err := cl.Nodes().Allocations(stubs[i%len(stubs)].ID, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSetup(b *testing.B) {
	for i := 0; i < b.N; i++ {
		s, err := New()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.AddNodes(5000, NodeSpec{Name: "w", CPUMHz: 16000, MemoryMB: 32768}); err != nil {
			b.Fatal(err)
		}
		for k := 0; k < 5; k++ {
			if err := s.AddJob(JobSpec{ID: fmt.Sprint("job-", k), Groups: []GroupSpec{{Name: "g", Count: 2000, CPUMHz: 100, MemoryMB: 64}}}); err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
	}
}
