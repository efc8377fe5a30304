package nomadstandin

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func TestPathMatches(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"", "/v1/nodes", true},
		{"/v1/nodes", "/v1/nodes", true},
		{"/v1/nodes", "/v1/node/x", false},
		{"/v1/job/*", "/v1/job/web/scale", true},
		{"/v1/job/*", "/v1/jobs", false},
		{"/v1/client/allocation/*/stats", "/v1/client/allocation/abc/stats", true},
		{"/v1/client/allocation/*/stats", "/v1/client/allocation/abc/def/stats", false},
		{"/v1/client/allocation/*/stats", "/v1/client/stats", false},
		{"/v1/job/*/scale", "/v1/job/web/scale", true},
		{"/v1/job/*/scale", "/v1/job/web", false},
	}
	for _, c := range cases {
		if got := PathMatches(c.pattern, c.path); got != c.want {
			t.Errorf("PathMatches(%q, %q) = %v", c.pattern, c.path, got)
		}
	}
}

func TestLatencyAppliesToEveryMatchingRequest(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 8000, MemoryMB: 8192}))
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{{Name: "g", Count: 3, CPUMHz: 100, NodeID: n}}}); err != nil {
		t.Fatal(err)
	}
	const lat = 110 * time.Millisecond
	s.AddLatency(Latency{Method: http.MethodGet, Path: "/v1/client/allocation/*/stats", Delay: lat})
	allocs, _, err := cl.Nodes().Allocations(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every request to the stats route is slow, sequentially...
	for round := 0; round < 2; round++ {
		for _, a := range allocs {
			start := time.Now()
			if _, err := cl.Allocations().Stats(a, nil); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d < lat {
				t.Errorf("stats of %s took %v, want >= %v", a.Name, d, lat)
			}
		}
	}
	// ...and concurrently: 30 in flight take about one latency, not 30.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func(a *api.Allocation) {
			defer wg.Done()
			_, err := cl.Allocations().Stats(a, nil)
			errs <- err
		}(allocs[i%len(allocs)])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < lat || d > 10*lat {
		t.Errorf("30 concurrent slow requests took %v; want about %v (served concurrently)", d, lat)
	}
	// Other routes are not slowed.
	start = time.Now()
	if _, _, err := cl.Nodes().List(nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= lat {
		t.Errorf("an unmatched route took %v", d)
	}
	if rc := s.RequestCounts(); rc.ByRoute["GET /v1/client/allocation/:id/stats"] != 36 {
		t.Errorf("request counts %v, want 36 stats requests", rc.ByRoute)
	}
	s.ClearLatency()
	start = time.Now()
	if _, err := cl.Allocations().Stats(allocs[0], nil); err != nil || time.Since(start) >= lat {
		t.Errorf("after ClearLatency: %v in %v", err, time.Since(start))
	}
}

// settleGoroutines waits for the goroutine count to come back to at most
// want (the HTTP server's idle connections close in their own time).
func settleGoroutines(want int) int {
	var n int
	for i := 0; i < 100; i++ {
		n = runtime.NumGoroutine()
		if n <= want {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

func TestHungRequests(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 8000, MemoryMB: 8192}))
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{{Name: "g", Count: 1, CPUMHz: 100, NodeID: n}}}); err != nil {
		t.Fatal(err)
	}
	// warm the client's connection pool, then count goroutines
	if _, _, err := cl.Nodes().List(nil); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	s.InjectFault(Fault{Method: http.MethodPut, Path: "/v1/job/*", Hang: true})
	two := 2
	t.Run("released by the client's context", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
				defer cancel()
				start := time.Now()
				_, _, err := cl.Jobs().Scale("web", "g", &two, "", false, nil, (&api.WriteOptions{}).WithContext(ctx))
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("hung write: %v, want the context's deadline", err)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("hung write returned after %v", d)
				}
			}()
		}
		wg.Wait()
		if st, _ := s.Group("", "web", "g"); st.Count != 1 {
			t.Errorf("a hung write was applied: count %d", st.Count)
		}
		// reads are not hung
		if _, _, err := cl.Jobs().Info("web", nil); err != nil {
			t.Errorf("read during hung writes: %v", err)
		}
		if got := settleGoroutines(base + 4); got > base+4 {
			t.Errorf("goroutines %d after the clients gave up, %d before: leaked", got, base)
		}
	})
	t.Run("released by a stop", func(t *testing.T) {
		done := make(chan error, 1)
		arrived := make(chan struct{})
		var once sync.Once
		s.SetHook(func(m, p string) {
			if m == http.MethodPut {
				once.Do(func() { close(arrived) })
			}
		})
		go func() {
			_, _, err := cl.Jobs().Scale("web", "g", &two, "", false, nil, nil)
			done <- err
		}()
		select {
		case <-arrived:
		case <-time.After(5 * time.Second):
			t.Fatal("the write did not arrive")
		}
		s.SetHook(nil)
		stopped := make(chan struct{})
		go func() { s.Stop(); close(stopped) }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("a hung write succeeded across a stop")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Stop did not release a hung write")
		}
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			t.Fatal("Stop did not return")
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
	})
}
