package nomadusage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// pair is a stand-in with two hosts and a job whose group "front" runs n
// allocations on host-a and group "back" n on host-b, plus another job
// "other" with one allocation on host-a, and a client whose transport
// counts requests in flight.
type pair struct {
	s            *nomadstandin.Server
	nodeA, nodeB string
	client       *api.Client
	inFlight     atomic.Int64
	maxInFlight  atomic.Int64
}

func newPair(t *testing.T, n int) *pair {
	t.Helper()
	testsupport.StandinOnly(t, "two nodes, two jobs and their usage set from Go")
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	p := &pair{s: s}
	if p.nodeA, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 20000, MemoryMB: 65536, NodePool: "first"}); err != nil {
		t.Fatal(err)
	}
	if p.nodeB, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-b", CPUMHz: 20000, MemoryMB: 65536, NodePool: "second"}); err != nil {
		t.Fatal(err)
	}
	must(t, s.AddJob(nomadstandin.JobSpec{ID: jobID, Groups: []nomadstandin.GroupSpec{
		{Name: groupA, Count: n, CPUMHz: 500, MemoryMB: 256, NodeID: p.nodeA},
		{Name: groupB, Count: n, CPUMHz: 250, MemoryMB: 128, NodeID: p.nodeB},
	}}))
	must(t, s.AddJob(nomadstandin.JobSpec{ID: "other", Groups: []nomadstandin.GroupSpec{
		{Name: "x", Count: 1, CPUMHz: 3000, MemoryMB: 4096, NodeID: p.nodeA},
	}}))
	must(t, s.SetGroupUsage("", jobID, groupA, 100, 64))
	must(t, s.SetGroupUsage("", jobID, groupB, 50, 32))
	p.client, err = api.NewClient(&api.Config{Address: s.URL(), TLSConfig: &api.TLSConfig{},
		HttpClient: &http.Client{Transport: countingTransport{p: p, next: http.DefaultTransport}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type countingTransport struct {
	p    *pair
	next http.RoundTripper
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	n := c.p.inFlight.Add(1)
	defer c.p.inFlight.Add(-1)
	for {
		m := c.p.maxInFlight.Load()
		if n <= m || c.p.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	return c.next.RoundTrip(r)
}

func (p *pair) queries() []Query {
	return []Query{
		{Host: HostSelector{Name: "host-a"}, Job: jobID, Group: groupA, Label: "first"},
		{Host: HostSelector{Pool: "second"}, Job: jobID, Group: groupB, Label: "second"},
	}
}

// slowListing delays every listing of node's allocations by delay until
// the test ends; the channel closes when the first one is asked for.
func (p *pair) slowListing(t *testing.T, node string, delay time.Duration) <-chan struct{} {
	t.Helper()
	path := "/v1/node/" + node + "/allocations"
	p.s.InjectFault(nomadstandin.Fault{Path: path, Delay: delay})
	asked := make(chan struct{})
	var once sync.Once
	p.s.SetHook(func(_, got string) {
		if got == path {
			once.Do(func() { close(asked) })
		}
	})
	t.Cleanup(func() { p.s.SetHook(nil); p.s.ClearFaults() })
	return asked
}

// requests counts the stand-in's requests since from, by kind.
func (p *pair) requests(from int) map[string]int {
	out := map[string]int{}
	for _, r := range p.s.Requests()[from:] {
		kind := r.Path
		switch {
		case strings.HasPrefix(r.Path, "/v1/client/allocation/"):
			kind = "alloc stats"
		case strings.HasSuffix(r.Path, "/allocations") && strings.HasPrefix(r.Path, "/v1/node/"):
			kind = "node allocations"
		case strings.HasPrefix(r.Path, "/v1/node/"):
			kind = "node"
		}
		out[kind]++
	}
	return out
}

// TestReadHosts reads both hosts of one job in one call, phase by phase.
func TestReadHosts(t *testing.T) {
	if testsupport.ClusterEnv().Real() {
		t.Run("real cluster: a running allocation's group", testReadHostsReal)
		return
	}
	p := newPair(t, 12)
	now := time.Now().Add(time.Hour) // every allocation older than the warm-up
	rd := &Reader{Client: p.client, Now: func() time.Time { return now }}
	opts := Options{Concurrency: 4, Warmup: 2 * time.Minute}

	t.Run("one job read and one allocation listing for both hosts", func(t *testing.T) {
		from := len(p.s.Requests())
		rs, err := rd.ReadHosts(context.Background(), p.queries(), opts)
		if err != nil {
			t.Fatal(err)
		}
		got := p.requests(from)
		want := map[string]int{"/v1/job/" + jobID: 1, "/v1/job/" + jobID + "/allocations": 1, "/v1/nodes": 2, "alloc stats": 24, "node allocations": 2}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("requests %v, want %v", got, want)
		}
		a, b := rs[0].Observation, rs[1].Observation
		if a.RunningReplicas != 12 || b.RunningReplicas != 12 || !near(a.Samples[0].CPUMHz, 1200) || !near(b.Samples[0].CPUMHz, 600) {
			t.Errorf("first %d replicas %v MHz, second %d replicas %v MHz", a.RunningReplicas, a.Samples[0].CPUMHz, b.RunningReplicas, b.Samples[0].CPUMHz)
		}
		if a.OtherReservedCPUMHz != 3000 || a.OtherReservedMemoryMB != 4096 || b.OtherReservedCPUMHz != 0 {
			t.Errorf("other reserved: first %v MHz %v MB, second %v MHz", a.OtherReservedCPUMHz, a.OtherReservedMemoryMB, b.OtherReservedCPUMHz)
		}
		if rs[0].JobModifyIndex == 0 || rs[0].JobModifyIndex != rs[1].JobModifyIndex || rs[0].DesiredCount != 12 {
			t.Errorf("job index %d / %d, desired %d", rs[0].JobModifyIndex, rs[1].JobModifyIndex, rs[0].DesiredCount)
		}
		for _, r := range rs {
			if r.Observation.WarmingReplicas != 0 || r.StatsAnswered != 12 || r.StatsAsked != 12 {
				t.Errorf("%s: warming %d, stats %d of %d", r.Observation.Host, r.Observation.WarmingReplicas, r.StatsAnswered, r.StatsAsked)
			}
			if err := r.Observation.Validate("test"); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("reads of one job at once share its listing", func(t *testing.T) {
		// (a plan's instances over many nodes: a user trial counted 600
		// listings of 3.4 MB for 200 nodes of a 2,000-allocation job)
		p.s.InjectFault(nomadstandin.Fault{Path: "/v1/job/" + jobID + "/allocations", Delay: 300 * time.Millisecond, Times: 1})
		t.Cleanup(p.s.ClearFaults)
		from := len(p.s.Requests())
		const readers = 8
		errs := make(chan error, readers)
		for range readers {
			go func() {
				_, err := rd.Read(context.Background(), p.queries()[0])
				errs <- err
			}()
		}
		for range readers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		got := p.requests(from)
		if n := got["/v1/job/"+jobID+"/allocations"]; n != 1 {
			t.Errorf("%d reads at once listed the job's allocations %d times, want once: %v", readers, n, got)
		}
		if n := got["alloc stats"]; n != readers*12 {
			t.Errorf("stats reads %d, want %d: each read reads its own usage", n, readers*12)
		}
	})

	t.Run("node filters are server-side", func(t *testing.T) {
		var filters []string
		for _, r := range p.s.Requests() {
			if r.Path == "/v1/nodes" {
				filters = append(filters, r.Query)
			}
		}
		if len(filters) == 0 {
			t.Fatal("no node listing")
		}
		for _, f := range filters {
			if !strings.Contains(f, "filter=") || !strings.Contains(f, "resources=true") {
				t.Errorf("node listing %q: want a filter expression and resources", f)
			}
		}
	})

	t.Run("what other jobs reserve is cached for NodeCacheTTL", func(t *testing.T) {
		from := len(p.s.Requests())
		if _, err := rd.ReadHosts(context.Background(), p.queries(), opts); err != nil {
			t.Fatal(err)
		}
		if n := p.requests(from)["node allocations"]; n != 0 {
			t.Errorf("a second read within the TTL listed node allocations %d times", n)
		}
		now = now.Add(DefaultNodeCacheTTL + time.Second)
		from = len(p.s.Requests())
		if _, err := rd.ReadHosts(context.Background(), p.queries(), opts); err != nil {
			t.Fatal(err)
		}
		if n := p.requests(from)["node allocations"]; n != 2 {
			t.Errorf("after the TTL node allocations were listed %d times, want 2", n)
		}
	})

	t.Run("one node listing serves every group read on the node", func(t *testing.T) {
		// host-a's listing is cached by the reads above; the other job's
		// group there reads what the first group reserves from it.
		other := []Query{{Host: HostSelector{Name: "host-a"}, Job: "other", Group: "x", Label: "other", NoStats: true}}
		from := len(p.s.Requests())
		rs, err := rd.ReadHosts(context.Background(), other, opts)
		if err != nil {
			t.Fatal(err)
		}
		if n := p.requests(from)["node allocations"]; n != 0 {
			t.Errorf("another group on a node listed within the TTL listed its allocations %d times, want 0", n)
		}
		if o := rs[0].Observation; o.OtherReservedCPUMHz != 12*500 || o.OtherReservedMemoryMB != 12*256 {
			t.Errorf("the other job's group sees %v MHz, %v MB reserved by others, want %d and %d (the first group's)", o.OtherReservedCPUMHz, o.OtherReservedMemoryMB, 12*500, 12*256)
		}
	})

	t.Run("reads of one node at once share one listing", func(t *testing.T) {
		now = now.Add(DefaultNodeCacheTTL + time.Second)
		// host-a's listing is slow; the second read starts once the first
		// has asked for it, so it needs the listing while it is in flight
		// (nothing cached yet).
		asked := p.slowListing(t, p.nodeA, 300*time.Millisecond)
		from := len(p.s.Requests())
		both := p.queries() // both hosts: the next subtests find both listings fresh
		for i := range both {
			both[i].NoStats = true
		}
		queries := [][]Query{both, {{Host: HostSelector{Name: "host-a"}, Job: "other", Group: "x", Label: "other", NoStats: true}}}
		got := make([][]*Reading, len(queries))
		var wg sync.WaitGroup
		for i, q := range queries {
			if i == 1 {
				select {
				case <-asked:
				case <-time.After(10 * time.Second):
					t.Fatal("the first read never listed host-a's allocations")
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rs, err := rd.ReadHosts(context.Background(), q, opts)
				if err != nil {
					t.Error(err)
				}
				got[i] = rs
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if n := p.requests(from)["node allocations"]; n != 2 {
			t.Errorf("two reads of host-a at once, one of them of host-b too, listed node allocations %d times, want 2 (one per node)", n)
		}
		if a, o := got[0][0].Observation, got[1][0].Observation; a.OtherReservedCPUMHz != 3000 || o.OtherReservedCPUMHz != 12*500 {
			t.Errorf("reserved by others: first group %v MHz (want 3000), other job %v MHz (want %d)", a.OtherReservedCPUMHz, o.OtherReservedCPUMHz, 12*500)
		}
		if g := got[1][0].NodeGroups; len(g) != 2 {
			t.Errorf("the reading shows %d groups on host-a, want 2 (%v)", len(g), g)
		}
	})

	t.Run("stats reads stay within the concurrency", func(t *testing.T) {
		p.s.InjectFault(nomadstandin.Fault{Path: "/v1/client/allocation/*", Delay: 20 * time.Millisecond})
		defer p.s.ClearFaults()
		p.maxInFlight.Store(0)
		start := time.Now()
		if _, err := rd.ReadHosts(context.Background(), p.queries(), opts); err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		if m := p.maxInFlight.Load(); m > int64(opts.Concurrency) || m < 2 {
			t.Errorf("%d requests in flight at most, want between 2 and %d", m, opts.Concurrency)
		}
		// 24 reads of 20 ms, 4 at a time: at least 6 rounds.
		if el < 6*20*time.Millisecond {
			t.Errorf("24 delayed reads at concurrency 4 took %s: fewer than 6 rounds of 20 ms", el)
		}
	})

	t.Run("a read with time left is not failed by a shared listing's shorter deadline", func(t *testing.T) {
		now = now.Add(DefaultNodeCacheTTL + time.Second)
		// The short read must reach the listing before its deadline, so
		// the deadline leaves room for a loaded machine under -race.
		asked := p.slowListing(t, p.nodeA, 2*time.Second)
		q := []Query{{Host: HostSelector{Name: "host-a"}, Job: "other", Group: "x", Label: "other", NoStats: true}}
		short, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		shortErr := make(chan error, 1)
		go func() {
			_, err := rd.ReadHosts(short, q, opts)
			shortErr <- err
		}()
		select {
		case <-asked:
		case <-time.After(10 * time.Second):
			t.Fatal("the short read never listed host-a's allocations")
		}
		long, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		rs, err := rd.ReadHosts(long, q, opts)
		if err != nil {
			t.Fatalf("the read with 10 s failed: %v", err)
		}
		if o := rs[0].Observation; o.OtherReservedCPUMHz != 12*500 {
			t.Errorf("reserved by others %v MHz, want %d", o.OtherReservedCPUMHz, 12*500)
		}
		if err := <-shortErr; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the read with 1 s: %v, want its deadline", err)
		}
	})

	t.Run("usage from elsewhere: no stats reads", func(t *testing.T) {
		qs := p.queries()
		qs[0].NoStats = true
		from := len(p.s.Requests())
		rs, err := rd.ReadHosts(context.Background(), qs, opts)
		if err != nil {
			t.Fatal(err)
		}
		if n := p.requests(from)["alloc stats"]; n != 12 {
			t.Errorf("%d stats reads, want only the second host's 12", n)
		}
		if o := rs[0].Observation; o.RunningReplicas != 12 || o.Samples[0].CPUMHz != 0 || rs[0].StatsAsked != 0 {
			t.Errorf("first host without stats: %+v", o)
		}
	})

	t.Run("a share of failed stats reads: decided on the rest, extrapolated", func(t *testing.T) {
		p.s.InjectFault(nomadstandin.Fault{Path: "/v1/client/allocation/*", Status: 500, Times: 2})
		defer p.s.ClearFaults()
		rs, err := rd.ReadHosts(context.Background(), p.queries(), opts)
		if err != nil {
			t.Fatal(err)
		}
		answered := rs[0].StatsAnswered + rs[1].StatsAnswered
		if answered != 22 {
			t.Errorf("%d stats answered, want 22 of 24", answered)
		}
		// Every allocation uses the same: the extrapolated sum is exact.
		if !near(rs[0].Observation.Samples[0].CPUMHz, 1200) || !near(rs[1].Observation.Samples[0].CPUMHz, 600) {
			t.Errorf("extrapolated samples %v, %v; want 1200, 600", rs[0].Observation.Samples[0].CPUMHz, rs[1].Observation.Samples[0].CPUMHz)
		}
	})

	t.Run("too many failed stats reads: no reading, the first failure said", func(t *testing.T) {
		p.s.InjectFault(nomadstandin.Fault{Path: "/v1/client/allocation/*", Status: 503, Message: "injected: client unreachable", Times: 6})
		defer p.s.ClearFaults()
		_, err := rd.ReadHosts(context.Background(), p.queries(), Options{Concurrency: 1, Warmup: opts.Warmup})
		if !errors.Is(err, ErrTooFewAnswered) || !matchErr(err, errStatus(503)) || !strings.Contains(err.Error(), "client unreachable") {
			t.Fatalf("err = %v, want ErrTooFewAnswered wrapping the 503", err)
		}
	})

	t.Run("a deadline says which read it cut", func(t *testing.T) {
		// The stats reads hang until the deadline; the reads before them
		// (nodes, allocations) have ample time on a loaded machine, so
		// the deadline cuts a stats read and no other.
		p.s.InjectFault(nomadstandin.Fault{Path: "/v1/client/allocation/*", Hang: true})
		defer p.s.ClearFaults()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := rd.ReadHosts(ctx, p.queries(), opts)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "read stats of allocation") {
			t.Fatalf("err = %v, want a deadline naming the stats read", err)
		}
	})

	t.Run("node state is reported, not refused", func(t *testing.T) {
		// A down node's client answers no stats (Nomad: 404 "No path to
		// node", as the stand-in answers): its reading says so and carries
		// no usage, and no stats read is made for it.
		must(t, p.s.SetNodeStatus(p.nodeB, "down"))
		defer func() { must(t, p.s.SetNodeStatus(p.nodeB, "ready")) }()
		// Reads the subtests before cut short may still reach the stand-in:
		// start counting once none has for a while.
		from := len(p.s.Requests())
		for quiet := 0; quiet < 5; {
			time.Sleep(20 * time.Millisecond)
			if n := len(p.s.Requests()); n != from {
				from, quiet = n, 0
			} else {
				quiet++
			}
		}
		rs, err := rd.ReadHosts(context.Background(), p.queries(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if rs[1].Node.Schedulable() || !strings.Contains(rs[1].Node.Why(), "down") || !rs[0].Node.Schedulable() {
			t.Errorf("node states %+v, %+v", rs[0].Node, rs[1].Node)
		}
		if b := rs[1]; len(b.Observation.Samples) != 0 || !strings.Contains(b.NoUsage, "host-b is down: its client answers no stats") || b.Observation.RunningReplicas != 12 {
			t.Errorf("down host: %d samples, %d running, NoUsage %q; want no sample, 12 running and why", len(b.Observation.Samples), b.Observation.RunningReplicas, b.NoUsage)
		}
		if a := rs[0]; len(a.Observation.Samples) == 0 || a.NoUsage != "" {
			t.Errorf("ready host: %d samples, NoUsage %q", len(a.Observation.Samples), a.NoUsage)
		}
		onB, _, err := p.client.Nodes().Allocations(p.nodeB, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.s.Requests()[from:] {
			for _, a := range onB {
				if strings.Contains(r.Path, a.ID) {
					t.Errorf("a stats read of an allocation on the down node: %s", r.Path)
				}
			}
		}
	})
}

func testReadHostsReal(t *testing.T) {
	c := newCluster(t)
	if c.alloc == nil {
		t.Skipf("no running allocation on node %s of the real cluster", c.node.Name)
	}
	q := Query{Host: HostSelector{NodeID: c.node.ID}, Namespace: c.alloc.Namespace, Job: c.alloc.JobID, Group: c.alloc.TaskGroup, ReplicaCPUDemandMHz: 1}
	rs, err := (&Reader{Client: c.client}).ReadHosts(context.Background(), []Query{q, q}, Options{Warmup: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Observation.RunningReplicas < 1 || r.JobModifyIndex == 0 || r.Region == "" || r.Node.Status == "" {
			t.Errorf("reading %+v", r)
		}
		if err := r.Observation.Validate("test"); err != nil {
			t.Error(err)
		}
	}
}

// TestReadHostsWarming: allocations younger than the warm-up, or with no
// CPU ticks yet, are warming; the sample is the warm ones' usage, or all
// of it when none is warm; without a warm-up no allocation is warming.
func TestReadHostsWarming(t *testing.T) {
	testsupport.StandinOnly(t, "allocation usage set from Go, a fake clock")
	p := newPair(t, 4)
	ids := p.s.AllocIDs("", jobID, groupA)
	must(t, p.s.SetAllocUsage(ids[3], 0, 0)) // no ticks yet
	q := p.queries()[:1]
	for _, tc := range []struct {
		name        string
		age         time.Duration
		warmup      time.Duration
		wantWarming int
		wantCPU     float64
	}{
		{"old allocations, one without ticks", time.Hour, 2 * time.Minute, 1, 300},
		{"every allocation young", 0, 2 * time.Minute, 4, 300},
		{"no warm-up rule", time.Hour, 0, 0, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now().Add(tc.age)
			rs, err := (&Reader{Client: p.client, Now: func() time.Time { return now }}).ReadHosts(context.Background(), q, Options{Warmup: tc.warmup})
			if err != nil {
				t.Fatal(err)
			}
			o := rs[0].Observation
			if o.RunningReplicas != 4 || o.WarmingReplicas != tc.wantWarming || !near(o.Samples[0].CPUMHz, tc.wantCPU) {
				t.Errorf("running %d warming %d sample %v MHz; want 4, %d, %v", o.RunningReplicas, o.WarmingReplicas, o.Samples[0].CPUMHz, tc.wantWarming, tc.wantCPU)
			}
		})
	}
}

// TestReadHostsNoStatsYet: allocations started after their client's latest
// stats refresh answer zeroed stats with Timestamp 0; they are warming,
// even without a warm-up rule, and never read as idle replicas.
func TestReadHostsNoStatsYet(t *testing.T) {
	testsupport.StandinOnly(t, "the clients' stats interval set from Go")
	p := newPair(t, 2)
	p.s.SetStatsInterval(time.Hour)
	time.Sleep(2 * time.Millisecond) // the new allocations start after the refresh
	must(t, p.s.SetGroupCount("", jobID, groupA, 4))
	rs, err := (&Reader{Client: p.client}).ReadHosts(context.Background(), p.queries()[:1], Options{Warmup: 0})
	if err != nil {
		t.Fatal(err)
	}
	o := rs[0].Observation
	if o.RunningReplicas != 4 || o.WarmingReplicas != 2 || !near(o.Samples[0].CPUMHz, 200) {
		t.Errorf("running %d warming %d sample %v MHz; want 4, 2 and the two measured replicas' 200", o.RunningReplicas, o.WarmingReplicas, o.Samples[0].CPUMHz)
	}
}

// TestReadHostsStopping: an allocation Nomad is stopping (desired status
// stop) that runs on through its shutdown_delay is not a replica: neither
// its request nor its usage (it gets no traffic) is the group's, in the
// job mode and the whole-node mode alike. Its reservation holds until it
// stops (Nomad places nothing in its room), so it is reserved by others:
// both modes left it out, and counted its room as free.
func TestReadHostsStopping(t *testing.T) {
	testsupport.StandinOnly(t, "an allocation held in its shutdown_delay")
	p := newPair(t, 4)
	ids := p.s.AllocIDs("", jobID, groupA)
	must(t, p.s.SetAllocUsage(ids[0], 5, 1)) // no traffic while it stops
	must(t, p.s.SetAllocStopping(ids[0]))
	now := time.Now().Add(time.Hour) // every allocation warm
	rd := &Reader{Client: p.client, Now: func() time.Time { return now }}
	rs, err := rd.ReadHosts(context.Background(), p.queries()[:1], Options{Warmup: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	o := rs[0].Observation
	if o.RunningReplicas != 3 || o.RequestedCPUMHz != 1500 || !near(o.Samples[0].CPUMHz, 300) || rs[0].StatsAsked != 3 {
		t.Errorf("job mode: running %d, requested %v MHz, sample %v MHz, %d stats asked; want 3, 1500, 300 (3 x 100), 3", o.RunningReplicas, o.RequestedCPUMHz, o.Samples[0].CPUMHz, rs[0].StatsAsked)
	}
	if o.OtherReservedCPUMHz != 3000+500 {
		t.Errorf("job mode: others reserve %v MHz; want 3500 (the other job's 3000 and the stopping allocation's 500)", o.OtherReservedCPUMHz)
	}
	// The whole node: the other job's allocation and the three replicas.
	whole, err := rd.Read(context.Background(), Query{Host: HostSelector{NodeID: p.nodeA}, ReplicaCPUDemandMHz: 500})
	if err != nil {
		t.Fatal(err)
	}
	if o := whole.Observation; o.RunningReplicas != 4 || o.RequestedCPUMHz != 3*500+3000 || o.OtherReservedCPUMHz != 500 {
		t.Errorf("whole node: running %d, requested %v MHz, others %v MHz; want 4, 4500 and the stopping allocation's 500", o.RunningReplicas, o.RequestedCPUMHz, o.OtherReservedCPUMHz)
	}
}

// TestReadHostsStoppingAfterListing: a replica Nomad starts stopping after
// the node's listing was read (and remembered) is still counted: not as a
// replica (the job's allocation list says it is stopping) but as reserved
// room, from that fresher list. It counted nowhere until the next listing.
func TestReadHostsStoppingAfterListing(t *testing.T) {
	testsupport.StandinOnly(t, "an allocation held in its shutdown_delay")
	p := newPair(t, 4)
	now := time.Now().Add(time.Hour) // every allocation warm
	rd := &Reader{Client: p.client, Now: func() time.Time { return now }}
	opts := Options{Warmup: 2 * time.Minute, NodeCacheTTL: time.Minute}
	rs, err := rd.ReadHosts(context.Background(), p.queries()[:1], opts)
	if err != nil {
		t.Fatal(err)
	}
	if o := rs[0].Observation; o.RunningReplicas != 4 || o.OtherReservedCPUMHz != 3000 {
		t.Fatalf("before: running %d, others %v MHz; want 4 and the other job's 3000", o.RunningReplicas, o.OtherReservedCPUMHz)
	}
	ids := p.s.AllocIDs("", jobID, groupA)
	must(t, p.s.SetAllocStopping(ids[0]))
	now = now.Add(10 * time.Second) // the listing is still fresh
	rs, err = rd.ReadHosts(context.Background(), p.queries()[:1], opts)
	if err != nil {
		t.Fatal(err)
	}
	o := rs[0].Observation
	if o.RunningReplicas != 3 || o.RequestedCPUMHz != 1500 {
		t.Errorf("after: running %d requesting %v MHz; want 3 and 1500", o.RunningReplicas, o.RequestedCPUMHz)
	}
	if o.OtherReservedCPUMHz != 3000+500 || o.OtherReservedMemoryMB != 4096+256 {
		t.Errorf("after: others reserve %v MHz %v MB; want 3500 MHz 4352 MB (the other job's and the stopping replica's)", o.OtherReservedCPUMHz, o.OtherReservedMemoryMB)
	}
}

// TestReadHostsStoppingOfAnEarlierJob: an allocation of the group on the
// node that the job's allocation list leaves out (Nomad's job list, without
// all=true, leaves out the allocations of an earlier registration of the
// job: stopped, purged and registered again, they run on through their
// shutdown_delay) is no replica, and its room is reserved; one of the
// current registration missing from the job's list was placed after it was
// read: a new replica, not reserved room. A proxy drops one stopping
// allocation from the job's list and, for the first case, gives it an
// earlier registration in the node's listing.
func TestReadHostsStoppingOfAnEarlierJob(t *testing.T) {
	testsupport.StandinOnly(t, "a proxy rewriting the job's allocation list")
	for _, c := range []struct {
		name            string
		earlier         bool
		othersCPU, oMem float64
	}{
		{"an earlier registration's", true, 3000 + 500, 4096 + 256},
		{"the current registration's", false, 3000, 4096},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPair(t, 4)
			ids := p.s.AllocIDs("", jobID, groupA)
			must(t, p.s.SetAllocStopping(ids[0]))
			rewrite := func(path string) bool {
				return path == "/v1/job/"+jobID+"/allocations" || path == "/v1/node/"+p.nodeA+"/allocations"
			}
			client := rewritingClient(t, p.s.URL(), rewrite, func(path string, body []byte) ([]byte, error) {
				if strings.HasPrefix(path, "/v1/node/") {
					var allocs []*api.Allocation
					if err := json.Unmarshal(body, &allocs); err != nil {
						return nil, err
					}
					for _, a := range allocs {
						if a.ID == ids[0] && c.earlier {
							a.Job.CreateIndex = new(*a.Job.CreateIndex - 1)
						}
					}
					return json.Marshal(allocs)
				}
				var stubs []*api.AllocationListStub
				if err := json.Unmarshal(body, &stubs); err != nil {
					return nil, err
				}
				stubs = slices.DeleteFunc(stubs, func(a *api.AllocationListStub) bool { return a.ID == ids[0] })
				return json.Marshal(stubs)
			})
			now := time.Now().Add(time.Hour)
			rd := &Reader{Client: client, Now: func() time.Time { return now }}
			rs, err := rd.ReadHosts(context.Background(), p.queries()[:1], Options{Warmup: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			o := rs[0].Observation
			if o.RunningReplicas != 3 || o.OtherReservedCPUMHz != c.othersCPU || o.OtherReservedMemoryMB != c.oMem {
				t.Errorf("running %d, others %v MHz %v MB; want 3 and %v MHz %v MB", o.RunningReplicas, o.OtherReservedCPUMHz, o.OtherReservedMemoryMB, c.othersCPU, c.oMem)
			}
		})
	}
}

// TestReadHostsRequestsOfOlderVersion: during a rolling update (or after a
// deployment that failed without reverting) the job answers its newest
// version while the running replicas hold their own version's resources.
// The group's request is the replicas' own, from the node's listing; it was
// the newest version's times the replicas. A new replica's demand is the
// newest version's. A proxy raises the job's request to 1000 MHz; the
// allocations hold 500.
func TestReadHostsRequestsOfOlderVersion(t *testing.T) {
	testsupport.StandinOnly(t, "a proxy rewriting the job's answer")
	p := newPair(t, 4)
	u, err := url.Parse(p.s.URL())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		if r.Request.URL.Path != "/v1/job/"+jobID {
			return nil
		}
		var j api.Job
		if err := json.NewDecoder(r.Body).Decode(&j); err != nil {
			return err
		}
		for _, g := range j.TaskGroups {
			if *g.Name == groupA {
				for _, tk := range g.Tasks {
					tk.Resources.CPU = new(1000)
				}
			}
		}
		b, err := json.Marshal(&j)
		if err != nil {
			return err
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		r.Header.Del("Content-Length")
		r.Header.Del("Content-Encoding")
		return nil
	}
	srv := httptest.NewServer(rp)
	defer srv.Close()
	c, err := api.NewClient(&api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := (&Reader{Client: c}).ReadHosts(context.Background(), p.queries()[:1], Options{})
	if err != nil {
		t.Fatal(err)
	}
	if o := rs[0].Observation; o.RunningReplicas != 4 || o.RequestedCPUMHz != 4*500 || o.ReplicaCPUDemandMHz != 1000 {
		t.Errorf("running %d, requested %v MHz, demand %v MHz; want 4, 2000 (the replicas' own 500 each) and the newest version's 1000",
			o.RunningReplicas, o.RequestedCPUMHz, o.ReplicaCPUDemandMHz)
	}
}

// TestReaderNamedNodeReplaced: a node named by the selector goes down and a
// new one takes its name; the next read, within ResolveTTL of the cached
// resolution, reads the new one (it read the down node until the cache
// entry aged out).
func TestReaderNamedNodeReplaced(t *testing.T) {
	testsupport.StandinOnly(t, "a node replaced under its name")
	p := newPair(t, 1)
	rd := &Reader{Client: p.client}
	q := Query{Host: HostSelector{Name: "host-a"}, ReplicaCPUDemandMHz: 1}
	first, err := rd.Read(context.Background(), q)
	if err != nil || first.NodeID != p.nodeA {
		t.Fatalf("first read: node %v, %v; want %s", first, err, p.nodeA)
	}
	must(t, p.s.SetNodeStatus(p.nodeA, api.NodeStatusDown))
	id, err := p.s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 8000, MemoryMB: 16384})
	if err != nil {
		t.Fatal(err)
	}
	again, err := rd.Read(context.Background(), q)
	if err != nil || again.NodeID != id {
		t.Fatalf("after the replacement: %v, %v; want the new host-a %s", again, err, id)
	}
}

// TestWindowClientClockBehind: a group at 0 gives readings stamped with the
// reader's clock (no stats, no Timestamp); once it runs, its readings carry
// the Nomad client's Timestamp, which may be behind the reader's clock. The
// window takes the first measured reading, dropping the unmeasured samples
// stamped after it; it refused it ("older than the newest sample") until
// the client's clock caught up, and the host had no decision meanwhile.
func TestWindowClientClockBehind(t *testing.T) {
	testsupport.StandinOnly(t, "the client's clock set behind")
	p := newPair(t, 0)
	p.s.SetStatsAge(30 * time.Second)
	rd := &Reader{Client: p.client}
	w, err := NewWindow(10, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	q := p.queries()[:1]
	for i := range 2 {
		rs, err := rd.ReadHosts(context.Background(), q, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !rs[0].ReadTime || rs[0].Observation.RunningReplicas != 0 {
			t.Fatalf("read %d at 0: read time %v, %d running; want the reader's clock, 0 running", i, rs[0].ReadTime, rs[0].Observation.RunningReplicas)
		}
		must(t, w.Add(rs[0]))
		time.Sleep(1100 * time.Millisecond) // samples are whole seconds apart
	}
	must(t, p.s.SetGroupCount("", jobID, groupA, 1))
	rs, err := rd.ReadHosts(context.Background(), q, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].ReadTime || !rs[0].Time.Before(time.Now().Add(-20*time.Second)) {
		t.Fatalf("a measured reading at %v (read time %v): want the client's clock, 30 s behind", rs[0].Time, rs[0].ReadTime)
	}
	if err := w.Add(rs[0]); err != nil {
		t.Fatalf("the first measured reading was refused: %v", err)
	}
	if w.Len() != 1 {
		t.Fatalf("the window holds %d samples, want the measured one alone", w.Len())
	}
}

// TestReadHostsBadInput: bad queries and options are refused before any
// request. On a real cluster the client's transport counts the requests,
// and a good query read last must be counted.
func TestReadHostsBadInput(t *testing.T) {
	var (
		client   *api.Client
		requests func() int
		good     []Query // queries the cluster answers
		node     string  // a node's ID
	)
	if testsupport.ClusterEnv().Real() {
		c := newCluster(t)
		var n atomic.Int64
		client = c.realClient(t, func(next http.RoundTripper) http.RoundTripper { return requestCounter{n: &n, next: next} })
		requests, good, node = func() int { return int(n.Load()) }, []Query{c.anyNode()}, c.node.ID
	} else {
		p := newPair(t, 1)
		client, requests, good, node = p.client, func() int { return len(p.s.Requests()) }, p.queries(), p.nodeA
	}
	rd := &Reader{Client: client}
	from := requests()
	for _, tc := range []struct {
		name string
		qs   []Query
		opts Options
		want string
	}{
		{"no selector", []Query{{Job: jobID}}, Options{}, "no host selector"},
		{"negative concurrency", good, Options{Concurrency: -1}, "concurrency"},
		{"share above 1", good, Options{MinAnswered: 1.5}, "min_answered"},
		// The API client puts a node ID into the path as it is: a path
		// would read another endpoint with the client's token.
		{"a node ID that is a path", []Query{{Host: HostSelector{NodeID: "../job/secret?namespace=other"}, Job: jobID}}, Options{}, `node_id "../job/secret?namespace=other": a Nomad node ID is a UUID`},
		{"a node ID with a slash", []Query{{Host: HostSelector{NodeID: node + "/allocations"}, Job: jobID}}, Options{}, "a Nomad node ID is a UUID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rd.ReadHosts(context.Background(), tc.qs, tc.opts)
			if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrBadQuery saying %q", err, tc.want)
			}
		})
	}
	if n := requests() - from; n != 0 {
		t.Errorf("bad input made %d requests", n)
	}
	// The count sees requests: the good queries make some.
	if _, err := rd.ReadHosts(context.Background(), good, Options{}); err != nil {
		t.Fatalf("the good queries: %v", err)
	}
	if requests() == from {
		t.Error("the good queries made no request that was counted: the count above proves nothing")
	}
}

// TestReadHostsCoLocatedGroup: a third group of the same job on the first
// host reserves room there, and the reading counts it among what others
// reserve. Nomad's job allocation list carries no resources (the stand-in
// answers as Nomad does), so only the node's allocation list can tell.
func TestReadHostsCoLocatedGroup(t *testing.T) {
	testsupport.StandinOnly(t, "jobs placed from Go, the reserved room compared with their figures")
	p := newPair(t, 4)
	must(t, p.s.AddJob(nomadstandin.JobSpec{ID: "batch", Groups: []nomadstandin.GroupSpec{
		{Name: "y", Count: 1, CPUMHz: 700, MemoryMB: 512, NodeID: p.nodeB},
	}}))
	// Job web gets a third group, "side", next to "front" on host-a.
	job, _, err := p.client.Jobs().Info(jobID, nil)
	must(t, err)
	side := *job.TaskGroups[0]
	side.Name, side.Count = new("side"), new(3)
	side.Tasks = []*api.Task{{Name: "app", Driver: "docker", Resources: &api.Resources{CPU: new(1000), MemoryMB: new(768)}}}
	job.TaskGroups = append(job.TaskGroups, &side)
	_, _, err = p.client.Jobs().Register(job, nil)
	must(t, err)
	if st, _ := p.s.Group("", jobID, "side"); st.Running != 3 {
		t.Fatalf("the premise fails: group side runs %d allocations, want 3 on host-a", st.Running)
	}
	qs := append(p.queries(), Query{Host: HostSelector{Name: "host-a"}, Job: jobID, Group: "side", Label: "side"})
	rs, err := (&Reader{Client: p.client}).ReadHosts(context.Background(), qs, Options{})
	must(t, err)
	for _, tc := range []struct {
		host     string
		cpu, mem float64
	}{
		// front: job other's 3000 MHz / 4096 MB and side's 3 x 1000 / 768.
		{"first", 3000 + 3*1000, 4096 + 3*768},
		// back: job batch's allocation; back's own never counts.
		{"second", 700, 512},
		// side: job other's and front's 4 x 500 / 256.
		{"side", 3000 + 4*500, 4096 + 4*256},
	} {
		var o engine.Observation
		for _, r := range rs {
			if r.Observation.Host == tc.host {
				o = r.Observation
			}
		}
		if o.OtherReservedCPUMHz != tc.cpu || o.OtherReservedMemoryMB != tc.mem {
			t.Errorf("%s: others reserve %v MHz %v MB, want %v, %v", tc.host, o.OtherReservedCPUMHz, o.OtherReservedMemoryMB, tc.cpu, tc.mem)
		}
	}
}

// TestReadHostsNoStatsWithoutJob: a whole-node host whose usage comes from
// elsewhere (an APM) reads no client stats.
func TestReadHostsNoStatsWithoutJob(t *testing.T) {
	if testsupport.ClusterEnv().Real() {
		testReadHostsNoStatsWithoutJobReal(t)
		return
	}
	p := newPair(t, 2)
	from := len(p.s.Requests())
	rs, err := (&Reader{Client: p.client}).ReadHosts(context.Background(),
		[]Query{{Host: HostSelector{Name: "host-a"}, NoStats: true, ReplicaCPUDemandMHz: 100}}, Options{})
	must(t, err)
	if n := p.requests(from)["/v1/client/stats"]; n != 0 {
		t.Errorf("%d client stats reads for a host whose usage comes from elsewhere", n)
	}
	if o := rs[0].Observation; o.RunningReplicas != 3 || len(o.Samples) != 1 || o.Samples[0].CPUMHz != 0 {
		t.Errorf("observation %+v: want the node's 3 running allocations and one sample without usage", o)
	}
}

// testReadHostsNoStatsWithoutJobReal is TestReadHostsNoStatsWithoutJob on
// the real cluster at NOMAD_ADDR: a ready node of it, the requests seen by
// the client's transport, the running allocations by a direct read before
// and after.
func testReadHostsNoStatsWithoutJobReal(t *testing.T) {
	c := newCluster(t)
	var mu sync.Mutex
	paths := map[string]int{}
	client := c.realClient(t, func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			paths[r.URL.Path]++
			mu.Unlock()
			return next.RoundTrip(r)
		})
	})
	running := func() int {
		allocs, _, err := c.client.Nodes().Allocations(c.node.ID, nil)
		if err != nil {
			t.Fatalf("list allocations of node %s: %v", c.node.Name, err)
		}
		n := 0
		for _, a := range allocs {
			// as the reader counts a replica: running, and not being
			// stopped (desired stop while its shutdown delay runs)
			if a.ClientStatus == api.AllocClientStatusRunning && (a.DesiredStatus == "" || a.DesiredStatus == api.AllocDesiredStatusRun) {
				n++
			}
		}
		return n
	}
	before := running()
	rs, err := (&Reader{Client: client}).ReadHosts(context.Background(),
		[]Query{{Host: HostSelector{NodeID: c.node.ID}, NoStats: true, ReplicaCPUDemandMHz: 100}}, Options{})
	must(t, err)
	after := running()
	mu.Lock()
	defer mu.Unlock()
	if n := paths["/v1/client/stats"]; n != 0 {
		t.Errorf("%d client stats reads for a host whose usage comes from elsewhere", n)
	}
	if len(paths) == 0 {
		t.Error("no request was seen: the check above proves nothing")
	}
	if o := rs[0].Observation; o.RunningReplicas < min(before, after) || o.RunningReplicas > max(before, after) || len(o.Samples) != 1 || o.Samples[0].CPUMHz != 0 {
		t.Errorf("observation %+v: want the node's %d (then %d) running allocations and one sample without usage", o, before, after)
	}
}

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestReadNodeUsagePending: without a job, what a pending allocation
// (placed, not running yet) reserves is reserved by others; the running
// ones are the replicas. The stand-in starts allocations at once, so a
// proxy shows one of them as pending.
func TestReadNodeUsagePending(t *testing.T) {
	testsupport.StandinOnly(t, "a proxy showing an allocation as pending, fixed reservations")
	p := newPair(t, 2)
	client := pendingProxy(t, p.s.URL(), "other")
	rs, err := (&Reader{Client: client}).ReadHosts(context.Background(),
		[]Query{{Host: HostSelector{Name: "host-a"}, ReplicaCPUDemandMHz: 100}}, Options{})
	must(t, err)
	o := rs[0].Observation
	if o.RunningReplicas != 2 || o.RequestedCPUMHz != 2*500 || o.OtherReservedCPUMHz != 3000 || o.OtherReservedMemoryMB != 4096 {
		t.Errorf("running %d requesting %v MHz, others %v MHz %v MB; want 2, 1000, and job other's pending 3000 MHz 4096 MB",
			o.RunningReplicas, o.RequestedCPUMHz, o.OtherReservedCPUMHz, o.OtherReservedMemoryMB)
	}
}

// pendingProxy is a client for the stand-in at target whose node
// allocation lists show job's allocations as pending.
func pendingProxy(t *testing.T, target, job string) *api.Client {
	t.Helper()
	isNodeAllocs := func(path string) bool {
		return strings.HasPrefix(path, "/v1/node/") && strings.HasSuffix(path, "/allocations")
	}
	return rewritingClient(t, target, isNodeAllocs, func(_ string, body []byte) ([]byte, error) {
		var allocs []*api.Allocation
		if err := json.Unmarshal(body, &allocs); err != nil {
			return nil, err
		}
		for _, a := range allocs {
			if a.JobID == job {
				a.ClientStatus = api.AllocClientStatusPending
			}
		}
		return json.Marshal(allocs)
	})
}

// rewritingClient is a client for the stand-in at target through a proxy
// that passes the answers to the paths match picks through edit.
func rewritingClient(t *testing.T, target string, match func(path string) bool, edit func(path string, body []byte) ([]byte, error)) *api.Client {
	t.Helper()
	u, err := url.Parse(target)
	must(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		if !match(resp.Request.URL.Path) {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if body, err = edit(resp.Request.URL.Path, body); err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	c, err := api.NewClient(&api.Config{Address: srv.URL, TLSConfig: &api.TLSConfig{}})
	must(t, err)
	return c
}

// TestReadStatsWorkerPool: the stats reads of a host run on a pool of at
// most Concurrency workers, not one goroutine per allocation waiting for a
// slot.
func TestReadStatsWorkerPool(t *testing.T) {
	testsupport.StandinOnly(t, "400 allocations placed from Go, a delay injected on stats reads")
	p := newPair(t, 1)
	const n = 400
	must(t, p.s.AddJob(nomadstandin.JobSpec{ID: "many", Groups: []nomadstandin.GroupSpec{
		{Name: "g", Count: n, CPUMHz: 10, MemoryMB: 16, NodeID: p.nodeB},
	}}))
	p.s.InjectFault(nomadstandin.Fault{Path: "/v1/client/allocation/*", Delay: 5 * time.Millisecond})
	rd := &Reader{Client: p.client}
	base := runtime.NumGoroutine()
	done := make(chan error, 1)
	var rs []*Reading
	go func() {
		var err error
		rs, err = rd.ReadHosts(context.Background(), []Query{{Host: HostSelector{NodeID: p.nodeB}, Job: "many", Group: "g"}}, Options{Concurrency: 2, StatsSample: n})
		done <- err
	}()
	peak := 0
	for {
		select {
		case err := <-done:
			must(t, err)
			if rs[0].StatsAnswered != n {
				t.Fatalf("the premise fails: %d stats reads answered, want %d", rs[0].StatsAnswered, n)
			}
			// The plugin's two workers and the client's and the stand-in's
			// connections: far below one goroutine per allocation.
			if peak-base > n/4 {
				t.Errorf("%d goroutines above the baseline while %d stats reads ran 2 at a time", peak-base, n)
			}
			return
		case <-time.After(2 * time.Millisecond):
			peak = max(peak, runtime.NumGoroutine())
		}
	}
}

// TestReadHostsStatsSample: a host with more allocations than StatsSample
// has that many stats read, a new random draw each call, and the ones read
// stand for the others: the usage is the whole group's.
func TestReadHostsStatsSample(t *testing.T) {
	if testsupport.ClusterEnv().Real() {
		t.Run("real cluster: a sample of one", func(t *testing.T) {
			c := newCluster(t)
			if c.alloc == nil {
				t.Skipf("no running allocation on node %s of the real cluster", c.node.Name)
			}
			q := Query{Host: HostSelector{NodeID: c.node.ID}, Namespace: c.alloc.Namespace, Job: c.alloc.JobID, Group: c.alloc.TaskGroup, ReplicaCPUDemandMHz: 1}
			rs, err := (&Reader{Client: c.client}).ReadHosts(context.Background(), []Query{q}, Options{StatsSample: 1})
			if err != nil {
				t.Fatal(err)
			}
			if r := rs[0]; r.StatsAsked != 1 || r.Observation.RunningReplicas < 1 {
				t.Errorf("stats asked %d of %d running, want 1", r.StatsAsked, r.Observation.RunningReplicas)
			}
		})
		return
	}
	p := newPair(t, 1)
	const n, k = 60, 16
	must(t, p.s.AddJob(nomadstandin.JobSpec{ID: "many", Groups: []nomadstandin.GroupSpec{
		{Name: "g", Count: n, CPUMHz: 100, MemoryMB: 64, NodeID: p.nodeB},
	}}))
	must(t, p.s.SetGroupUsage("", "many", "g", 40, 20))
	q := []Query{{Host: HostSelector{NodeID: p.nodeB}, Job: "many", Group: "g"}}
	now := time.Now().Add(time.Hour)
	read := func(opts Options) (*Reading, map[string]bool) {
		t.Helper()
		from := len(p.s.Requests())
		rd := &Reader{Client: p.client, Now: func() time.Time { return now }}
		rs, err := rd.ReadHosts(context.Background(), q, opts)
		must(t, err)
		ids := map[string]bool{}
		for _, r := range p.s.Requests()[from:] {
			if strings.HasPrefix(r.Path, "/v1/client/allocation/") {
				ids[r.Path] = true
			}
		}
		return rs[0], ids
	}
	cases := []struct {
		name        string
		opts        Options
		wantStats   int
		wantWarming int
	}{
		{"the default reads all of 60 (up to 256)", Options{}, n, 0},
		{"a sample of 16 of 60", Options{StatsSample: k}, k, 0},
		{"a sample of 16 of 60 with a warm-up", Options{StatsSample: k, Warmup: time.Minute}, k, 0},
		{"a sample at the group's size reads all", Options{StatsSample: n}, n, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ids := read(c.opts)
			o := r.Observation
			if len(ids) != c.wantStats || r.StatsAsked != c.wantStats || r.StatsAnswered != c.wantStats {
				t.Errorf("%d allocations' stats requested (asked %d, answered %d), want %d", len(ids), r.StatsAsked, r.StatsAnswered, c.wantStats)
			}
			if o.RunningReplicas != n || o.WarmingReplicas != c.wantWarming {
				t.Errorf("running %d warming %d, want %d and %d", o.RunningReplicas, o.WarmingReplicas, n, c.wantWarming)
			}
			if !near(o.Samples[0].CPUMHz, 40*n) || !near(o.Samples[0].MemoryMB, 20*n) {
				t.Errorf("usage %v MHz %v MB, want the group's %d MHz %d MB", o.Samples[0].CPUMHz, o.Samples[0].MemoryMB, 40*n, 20*n)
			}
			if o.RequestedCPUMHz != 100*n {
				t.Errorf("requested %v MHz, want every allocation's %d", o.RequestedCPUMHz, 100*n)
			}
		})
	}
	t.Run("a new draw each evaluation", func(t *testing.T) {
		seen := map[string]bool{}
		for i := range 8 {
			now = now.Add(time.Duration(i+1) * time.Second)
			_, ids := read(Options{StatsSample: k})
			for id := range ids {
				seen[id] = true
			}
		}
		if len(seen) <= k {
			t.Errorf("8 evaluations read %d distinct allocations, the same %d each time; want new draws", len(seen), k)
		}
	})
	t.Run("out of range", func(t *testing.T) {
		for _, v := range []int{-1, MaxStatsSample + 1} {
			_, err := Options{StatsSample: v}.Resolve()
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Option != OptionStatsSample {
				t.Errorf("StatsSample %d: %v, want an OptionError naming %s", v, err, OptionStatsSample)
			}
		}
	})
}

// TestReadHostsTaskRules: a replica reserves what Nomad's scheduler makes
// of its tasks: reserved cores at the node's MHz per core, a prestart
// sidecar beside the main task, an init task and a poststop task in their
// own phases (the larger phase counts, resource by resource). The reading's
// requests agree with what the stand-in reserves, and the engine's
// placement with what it places.
func TestReadHostsTaskRules(t *testing.T) {
	testsupport.StandinOnly(t, "reserved cores and task lifecycles set from Go, placement compared with the stand-in's")
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	node, err := s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 20000, MemoryMB: 65536, Cores: 4}) // 5000 MHz a core
	must(t, err)
	// One replica: 1 core (5000) + max(prestart 100 + 3000, main 100) =
	// 8100 MHz; max(prestart 128 + 64, main 512 + 128) = 640 MB.
	must(t, s.AddJob(nomadstandin.JobSpec{ID: "web", Groups: []nomadstandin.GroupSpec{{Name: "g", Count: 2, Cores: 1, MemoryMB: 512, NodeID: node,
		Tasks: []nomadstandin.TaskSpec{
			{Name: "envoy", CPUMHz: 100, MemoryMB: 128, Hook: "prestart", Sidecar: true},
			{Name: "migrate", CPUMHz: 3000, MemoryMB: 64, Hook: "prestart"},
		}}}}))
	// Another job: max(main 1000, poststop 2000) MHz, max(256, 64) MB.
	must(t, s.AddJob(nomadstandin.JobSpec{ID: "other", Groups: []nomadstandin.GroupSpec{{Name: "x", Count: 1, CPUMHz: 1000, MemoryMB: 256, NodeID: node,
		Tasks: []nomadstandin.TaskSpec{{Name: "cleanup", CPUMHz: 2000, MemoryMB: 64, Hook: "poststop"}}}}}))
	must(t, s.SetGroupUsage("", "web", "g", 400, 300))
	c, err := s.Client("")
	must(t, err)
	rs, err := (&Reader{Client: c}).ReadHosts(context.Background(), []Query{{Host: HostSelector{NodeID: node}, Job: "web", Group: "g"}}, Options{Warmup: 0})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	o := r.Observation
	if r.ReplicaCPUMHz != 8100 || r.ReplicaMemoryMB != 640 || o.ReplicaCPUDemandMHz != 8100 {
		t.Errorf("one replica: %v MHz, %v MB, demand %v MHz; want 8100, 640, 8100", r.ReplicaCPUMHz, r.ReplicaMemoryMB, o.ReplicaCPUDemandMHz)
	}
	if o.RequestedCPUMHz != 16200 || o.RequestedMemoryMB != 1280 {
		t.Errorf("requested %v MHz, %v MB; want 16200, 1280", o.RequestedCPUMHz, o.RequestedMemoryMB)
	}
	if o.OtherReservedCPUMHz != 2000 || o.OtherReservedMemoryMB != 256 {
		t.Errorf("others reserve %v MHz, %v MB; want 2000, 256", o.OtherReservedCPUMHz, o.OtherReservedMemoryMB)
	}
	// The engine's placement and the stand-in's agree: 18000 MHz free
	// hold 2 replicas of 8100; a third queues.
	d, err := engine.Decide(engine.HostInput{Observation: &o, MinSamples: 1}, engine.HostInput{Observation: &o, MinSamples: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p := d.First.Placement.Placeable; p != 2 {
		t.Errorf("the engine places %d; want 2", p)
	}
	must(t, s.SetGroupCount("", "web", "g", 3))
	if q := s.Queued("", "web", "g"); q != 1 {
		t.Errorf("the stand-in queues %d of 3; want 1", q)
	}
}

// A core's MHz is the node's compute over every core: Nomad's CpuShares
// covers every core while TotalCpuCores counts only the usable ones, so the
// node's cpu.numcores divides when known.
func TestCoreMHz(t *testing.T) {
	for _, tc := range []struct {
		name             string
		shares           int64
		usable, numCores int
		want             float64
	}{
		{"every core usable", 16000, 8, 8, 2000},
		{"4 of 8 cores withheld (reserved.cores)", 16000, 4, 8, 2000},
		{"no cpu.numcores attribute: the usable count", 16000, 8, 0, 2000},
		{"no core count at all", 16000, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &node{res: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: tc.shares, TotalCpuCores: uint16(tc.usable)}}, numCores: tc.numCores}
			if got := n.coreMHz(); got != tc.want {
				t.Fatalf("coreMHz = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReaderCoreMHzAcrossRefreshes: a host named by a filter is read by
// ID while its resolution is fresh and listed again after ResolveTTL. A
// node listing never carries cpu.numcores (Nomad's stubs hold os.name at
// most), so on a node with cores withheld (reserved.cores: Nomad 1.7+
// counts the usable ones in TotalCpuCores) a core's MHz read 2,000 by ID
// and 4,000 at each refresh, and a replica's reservation for cores moved
// with it once a minute. The refresh keeps the count the read by ID gave.
func TestReaderCoreMHzAcrossRefreshes(t *testing.T) {
	testsupport.StandinOnly(t, "a node with cores withheld, its answers rewritten")
	p := newPair(t, 1)
	// 16,000 MHz over 8 cores, 4 of them usable.
	withheld := func(res map[string]any) {
		if res == nil {
			return
		}
		cpu, _ := res["Cpu"].(map[string]any)
		cpu["CpuShares"], cpu["TotalCpuCores"] = 16000, 4
	}
	client := rewritingClient(t, p.s.URL(), func(path string) bool {
		return path == "/v1/nodes" || path == "/v1/node/"+p.nodeA
	}, func(path string, body []byte) ([]byte, error) {
		if path == "/v1/nodes" {
			var stubs []map[string]any
			if err := json.Unmarshal(body, &stubs); err != nil {
				return nil, err
			}
			for _, n := range stubs {
				res, _ := n["NodeResources"].(map[string]any)
				withheld(res)
				if attrs, ok := n["Attributes"].(map[string]any); ok {
					if _, has := attrs["cpu.numcores"]; has {
						return nil, fmt.Errorf("the stand-in's listing carries cpu.numcores: Nomad's does not")
					}
				}
			}
			return json.Marshal(stubs)
		}
		var n map[string]any
		if err := json.Unmarshal(body, &n); err != nil {
			return nil, err
		}
		res, _ := n["NodeResources"].(map[string]any)
		withheld(res)
		n["Attributes"].(map[string]any)["cpu.numcores"] = "8"
		return json.Marshal(n)
	})
	now := time.Unix(1_700_000_000, 0)
	rd := &Reader{Client: client, Now: func() time.Time { return now }}
	sel := HostSelector{Name: "host-a"}
	var got []float64
	for i := range 6 {
		n, err := rd.node(context.Background(), sel)
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if n.id != p.nodeA {
			t.Fatalf("read %d: node %s, want %s", i, n.id, p.nodeA)
		}
		got = append(got, n.coreMHz())
		now = now.Add(ResolveTTL / 2) // a listing every other read
	}
	// The first read lists the node before any read by ID: it cannot know
	// every core yet. From the first read by ID on, every read agrees.
	want := []float64{4000, 2000, 2000, 2000, 2000, 2000}
	if !slices.Equal(got, want) {
		t.Errorf("a core's MHz over the reads (listing, by ID, listing...): %v, want %v", got, want)
	}
}

// statsEditingClient is a client for p's stand-in whose answers to the
// stats reads of the allocations ids pass through edit (decoded as JSON
// objects), the allocation's ID given.
func statsEditingClient(t *testing.T, p *pair, ids []string, edit func(id string, m map[string]any)) *api.Client {
	t.Helper()
	byPath := make(map[string]string, len(ids))
	for _, id := range ids {
		byPath["/v1/client/allocation/"+id+"/stats"] = id
	}
	return rewritingClient(t, p.s.URL(), func(path string) bool { _, ok := byPath[path]; return ok },
		func(path string, body []byte) ([]byte, error) {
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				return nil, err
			}
			edit(byPath[path], m)
			return json.Marshal(m)
		})
}

// TestReadHostsOneBadFigure: an allocation whose stats answer a
// figure no allocation can show counts as not answered; the others read
// the host. Before, the bad figure went into the sample (and stayed in the
// strategy's window until it aged out).
func TestReadHostsOneBadFigure(t *testing.T) {
	testsupport.StandinOnly(t, "a proxy rewriting stats answers, fixed usage")
	const n = 5
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
		want error
	}{
		{"negative CPU ticks", func(m map[string]any) {
			m["ResourceUsage"].(map[string]any)["CpuStats"].(map[string]any)["TotalTicks"] = -1e6
		}, ErrBadUsage},
		// Figures beyond any host (a garbage cgroup counter): a user
		// trial saw one answer stop every decision for max_age.
		{"CPU ticks beyond any host", func(m map[string]any) {
			m["ResourceUsage"].(map[string]any)["CpuStats"].(map[string]any)["TotalTicks"] = 1e300
		}, ErrBadUsage},
		{"a memory RSS beyond any host", func(m map[string]any) {
			m["ResourceUsage"].(map[string]any)["MemoryStats"].(map[string]any)["RSS"] = uint64(18e18)
		}, ErrBadUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, n)
			edit := func(_ string, m map[string]any) { tc.edit(m) }
			c := statsEditingClient(t, p, p.s.AllocIDs("", jobID, groupA)[:1], edit)
			before := time.Now()
			rs, err := (&Reader{Client: c}).ReadHosts(context.Background(), p.queries()[:1], Options{})
			must(t, err)
			rd := rs[0]
			if rd.StatsAsked != n || rd.StatsAnswered != n-1 {
				t.Errorf("%d of %d stats reads answered, want %d of %d", rd.StatsAnswered, rd.StatsAsked, n-1, n)
			}
			// Four replicas at 100 MHz stand for five.
			if got := rd.Observation.Samples[0].CPUMHz; math.Abs(got-n*100) > 1e-6 {
				t.Errorf("sample CPU %v MHz, want %v (the four others for five)", got, n*100)
			}
			if rd.Time.Before(before.Add(-5 * time.Second)) {
				t.Errorf("reading time %s, %s before the read: the odd answer's, not the others'", rd.Time, before.Sub(rd.Time))
			}
			// A decision needs 80% answered: with 2 of 5 out of line the
			// read fails, and says why.
			c = statsEditingClient(t, p, p.s.AllocIDs("", jobID, groupA)[:2], edit)
			_, err = (&Reader{Client: c}).ReadHosts(context.Background(), p.queries()[:1], Options{})
			if !errors.Is(err, ErrTooFewAnswered) || !errors.Is(err, tc.want) {
				t.Errorf("two of five out of line: err %v, want ErrTooFewAnswered wrapping %v", err, tc.want)
			}
		})
	}
}

// TestReadHostsMemoryUnmeasured: an allocation whose stats measure no
// memory (a driver that measures none) counts at its memory reservation,
// not at 0 MB: no evidence is not low usage. Its CPU is still read. Before,
// it added 0 MB to the sample (a review found it).
func TestReadHostsMemoryUnmeasured(t *testing.T) {
	testsupport.StandinOnly(t, "a proxy rewriting stats answers, fixed usage")
	const n = 5
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
	}{
		{"no MemoryStats", func(m map[string]any) { delete(m["ResourceUsage"].(map[string]any), "MemoryStats") }},
		{"MemoryStats null", func(m map[string]any) { m["ResourceUsage"].(map[string]any)["MemoryStats"] = nil }},
		{"RSS and Usage 0", func(m map[string]any) {
			ms := m["ResourceUsage"].(map[string]any)["MemoryStats"].(map[string]any)
			ms["RSS"], ms["Usage"], ms["Measured"] = 0, 0, []string{}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, n)
			edit := func(_ string, m map[string]any) { tc.edit(m) }
			c := statsEditingClient(t, p, p.s.AllocIDs("", jobID, groupA)[:2], edit)
			rs, err := (&Reader{Client: c}).ReadHosts(context.Background(), p.queries()[:1], Options{})
			must(t, err)
			rd := rs[0]
			if rd.StatsAnswered != n || rd.MemoryUnmeasured != 2 {
				t.Errorf("%d answered, %d with memory unmeasured; want %d and 2", rd.StatsAnswered, rd.MemoryUnmeasured, n)
			}
			// Three measured at 64 MB, two at their 256 MB reservation.
			if got, want := rd.Observation.Samples[0].MemoryMB, 3*64.0+2*256; math.Abs(got-want) > 1e-6 {
				t.Errorf("sample memory %v MB, want %v (the unmeasured two at their reservation)", got, want)
			}
			if got := rd.Observation.Samples[0].CPUMHz; math.Abs(got-n*100) > 1e-6 {
				t.Errorf("sample CPU %v MHz, want %v (every replica's CPU measured)", got, n*100)
			}
			if rd.Observation.WarmingReplicas != 0 {
				t.Errorf("%d warming replicas, want 0 (their CPU is measured)", rd.Observation.WarmingReplicas)
			}
		})
	}
	// No CPU ticks either: no stats yet. With a warm-up it is warming
	// (counted by the engine, at the warm ones' usage); with the warm-up
	// off, as here, it counts at what it shows, CPU and memory alike, as
	// warmup = "0" says: its memory is not put at the reservation.
	t.Run("no CPU ticks either", func(t *testing.T) {
		p := newPair(t, n)
		edit := func(_ string, m map[string]any) {
			ru := m["ResourceUsage"].(map[string]any)
			ru["CpuStats"].(map[string]any)["TotalTicks"] = 0
			delete(ru, "MemoryStats")
		}
		c := statsEditingClient(t, p, p.s.AllocIDs("", jobID, groupA)[:2], edit)
		rs, err := (&Reader{Client: c}).ReadHosts(context.Background(), p.queries()[:1], Options{})
		must(t, err)
		if rd := rs[0]; rd.MemoryUnmeasured != 0 || math.Abs(rd.Observation.Samples[0].MemoryMB-3*64) > 1e-6 {
			t.Errorf("memory unmeasured %d, sample %v MB; want 0 and %v (the three with stats)", rd.MemoryUnmeasured, rd.Observation.Samples[0].MemoryMB, 3*64.0)
		}
	})
	t.Run("measured", func(t *testing.T) {
		p := newPair(t, n)
		rs, err := (&Reader{Client: p.client}).ReadHosts(context.Background(), p.queries()[:1], Options{})
		must(t, err)
		if rd := rs[0]; rd.MemoryUnmeasured != 0 || math.Abs(rd.Observation.Samples[0].MemoryMB-n*64) > 1e-6 {
			t.Errorf("memory unmeasured %d, sample %v MB; want 0 and %v", rd.MemoryUnmeasured, rd.Observation.Samples[0].MemoryMB, n*64.0)
		}
	})
}

// TestReadNodeUsageBadFigure: a node's client stats with a CPU or memory figure no
// host can show fail the read, naming the field. On a real cluster the
// client's transport edits the node's own answer.
func TestReadNodeUsageBadFigure(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(m map[string]any)
	}{
		{"CPUTicksConsumed", func(m map[string]any) { m["CPUTicksConsumed"] = -5 }},
		{"Memory.Used", func(m map[string]any) { m["Memory"].(map[string]any)["Used"] = uint64(18e18) }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			isStats := func(path string) bool { return path == "/v1/client/stats" }
			edit := func(_ string, body []byte) ([]byte, error) {
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					return nil, err
				}
				tc.edit(m)
				return json.Marshal(m)
			}
			var c *api.Client
			var node string
			if testsupport.ClusterEnv().Real() {
				cl := newCluster(t)
				c = cl.realClient(t, func(next http.RoundTripper) http.RoundTripper {
					return answerEditor{next: next, match: isStats, edit: edit}
				})
				node = cl.node.ID
			} else {
				p := newPair(t, 1)
				c, node = rewritingClient(t, p.s.URL(), isStats, edit), p.nodeA
			}
			_, err := (&Reader{Client: c}).Read(context.Background(), Query{Host: HostSelector{NodeID: node}, ReplicaCPUDemandMHz: 500})
			if !errors.Is(err, ErrBadUsage) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("err %v, want ErrBadUsage naming %s", err, tc.field)
			}
		})
	}
}

// TestReadHostsStatsTimesSpread: a reading's time is the median of its
// answers' stats times (the older middle one of an even count). A Nomad
// client collects each task's stats every collection_interval from the
// task's start, so healthy stats times on a node spread over one interval,
// evenly or in batches; every allocation answers whatever the pattern. An
// allocation whose stats stopped refreshing StatsLag or more before the
// median (the newer middle one) counts as not answered, so neither its
// time nor its last figure stays in the reading (the oldest time held the
// window still until the usage read as stale); with half of them stopped,
// too few answered.
func TestReadHostsStatsTimesSpread(t *testing.T) {
	testsupport.StandinOnly(t, "a proxy rewriting stats times, fixed usage")
	now := time.Now()
	for _, tc := range []struct {
		name     string
		ago      []time.Duration // each allocation's stats age, in AllocIDs order
		answered int             // 0: too few answered
		at       time.Duration   // the reading's time, as an age
	}{
		{"a 60 s collection interval", []time.Duration{0, 12 * time.Second, 24 * time.Second, 36 * time.Second, 48 * time.Second}, 5, 24 * time.Second},
		{"a 60 s interval, two batches", []time.Duration{0, 500 * time.Millisecond, 40 * time.Second, 40500 * time.Millisecond}, 4, 40 * time.Second},
		{"a 60 s interval, three of five together", []time.Duration{0, 200 * time.Millisecond, 400 * time.Millisecond, 40 * time.Second, 40200 * time.Millisecond}, 5, 400 * time.Millisecond},
		{"a 4 minute collection interval", []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute}, 5, 2 * time.Minute},
		{"one stopped ten minutes ago", []time.Duration{10 * time.Minute, 0, time.Second, 2 * time.Second, 3 * time.Second}, 4, 2 * time.Second},
		{"one stopped before a clock set back an hour", []time.Duration{-time.Hour, 0, time.Second, 2 * time.Second, 3 * time.Second}, 4, 2 * time.Second},
		{"half of them stopped", []time.Duration{0, time.Second, 10 * time.Minute, 10 * time.Minute}, 0, 0},
		{"one just under StatsLag from the median", []time.Duration{StatsLag - time.Second, 0, 0, 0, 0}, 5, 0},
		{"one StatsLag from the median", []time.Duration{StatsLag, 0, 0, 0, 0}, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, len(tc.ago))
			ids := p.s.AllocIDs("", jobID, groupA)
			c := statsEditingClient(t, p, ids, func(id string, m map[string]any) {
				age := tc.ago[slices.Index(ids, id)]
				m["Timestamp"] = now.Add(-age).UnixNano()
				if age >= StatsLag || age < 0 {
					// What it showed when its stats stopped: idle.
					m["ResourceUsage"].(map[string]any)["CpuStats"].(map[string]any)["TotalTicks"] = 1
				}
			})
			rs, err := (&Reader{Client: c}).ReadHosts(context.Background(), p.queries()[:1], Options{})
			if tc.answered == 0 {
				if !errors.Is(err, ErrTooFewAnswered) || !errors.Is(err, ErrStatsOutOfLine) || !strings.Contains(err.Error(), "before the median") {
					t.Errorf("err %v, want too few answered, the first failure a stopped allocation's", err)
				}
				return
			}
			must(t, err)
			rd := rs[0]
			if rd.StatsAnswered != tc.answered {
				t.Errorf("%d of %d answered, want %d", rd.StatsAnswered, rd.StatsAsked, tc.answered)
			}
			if want := now.Add(-tc.at); rd.Time.Sub(want).Abs() > time.Millisecond {
				t.Errorf("reading time %s, want the answers' median %s", rd.Time, want)
			}
			// The live ones, 100 MHz each, stand for every replica: no
			// stopped figure in the sample.
			if got, want := rd.Observation.Samples[0].CPUMHz, 100*float64(len(tc.ago)); math.Abs(got-want) > 1e-6 {
				t.Errorf("sample CPU %v MHz, want %v", got, want)
			}
		})
	}
}

// TestReadHostsGroupElsewhere: a group with running allocations on other
// nodes than the one read says where, by node, so that a controller
// setting the group's count from this host's reading can refuse; a group
// on its node alone says nothing.
func TestReadHostsGroupElsewhere(t *testing.T) {
	testsupport.StandinOnly(t, "a group placed on two nodes from Go")
	s, err := nomadstandin.New()
	must(t, err)
	t.Cleanup(s.Close)
	for _, name := range []string{"host-a", "host-b"} {
		_, err := s.AddNode(nomadstandin.NodeSpec{Name: name, CPUMHz: 20000, MemoryMB: 65536})
		must(t, err)
	}
	// "spread" has no constraint: the scheduler places each allocation on
	// the node with the most free CPU, so two go one on each node.
	must(t, s.AddJob(nomadstandin.JobSpec{ID: "spread", Groups: []nomadstandin.GroupSpec{{Name: "g", Count: 2, CPUMHz: 1000, MemoryMB: 256}}}))
	must(t, s.AddJob(nomadstandin.JobSpec{ID: "pinned", Groups: []nomadstandin.GroupSpec{{Name: "g", Count: 2, CPUMHz: 100, MemoryMB: 64, NodeName: "host-a"}}}))
	client, err := api.NewClient(&api.Config{Address: s.URL(), TLSConfig: &api.TLSConfig{}})
	must(t, err)
	rs, err := (&Reader{Client: client}).ReadHosts(context.Background(), []Query{
		{Host: HostSelector{Name: "host-a"}, Job: "spread", Group: "g", Label: "spread"},
		{Host: HostSelector{Name: "host-a"}, Job: "pinned", Group: "g", Label: "pinned"},
	}, Options{})
	must(t, err)
	if got, want := rs[0].RunningElsewhere, []NodeCount{{Node: "host-b", Count: 1}}; !slices.Equal(got, want) || rs[0].Observation.RunningReplicas != 1 {
		t.Errorf("spread: %d running on host-a, elsewhere %v; want 1 and %v", rs[0].Observation.RunningReplicas, got, want)
	}
	if got := rs[1].RunningElsewhere; got != nil || rs[1].Observation.RunningReplicas != 2 {
		t.Errorf("pinned: %d running on host-a, elsewhere %v; want 2 and none", rs[1].Observation.RunningReplicas, got)
	}
}

// TestReadNotNomad: an address that reaches another HTTP server (a 404
// for every path, a web page, another API's JSON, an empty list), without
// Nomad's index headers, reads as neither a missing job nor a missing
// node nor a JSON error, whichever selector names the host, but as an
// address that may not be Nomad's API.
func TestReadNotNomad(t *testing.T) {
	for name, h := range map[string]http.Handler{
		"404":  http.NotFoundHandler(),
		"page": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<!DOCTYPE html><html>Sign in</html>") }),
		"json": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"hello":"world"}`) }),
		"[]":   http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `[]`) }),
	} {
		srv := httptest.NewServer(h)
		conn, err := nomadconn.New(nomadconn.Settings{Address: srv.URL}, nomadconn.MapEnv(nil))
		if err != nil {
			t.Fatal(err)
		}
		rd := &Reader{Client: conn.Client()}
		for _, q := range []Query{
			{Host: HostSelector{NodeID: "6f1e2d3c-0000-4000-8000-000000000001"}, Job: "web", Group: "front", ReplicaCPUDemandMHz: 1},
			{Host: HostSelector{Name: "host-a"}, Job: "web", Group: "front", ReplicaCPUDemandMHz: 1},
			{Host: HostSelector{Name: "host-a"}, ReplicaCPUDemandMHz: 1},
		} {
			_, err := rd.ReadHosts(context.Background(), []Query{q}, Options{})
			if !errors.Is(err, nomadconn.ErrNotNomad) || errors.Is(err, ErrJobNotFound) || errors.Is(err, ErrNodeNotFound) {
				t.Errorf("%s, %+v: %v; want ErrNotNomad, neither a missing job nor a missing node", name, q, err)
			}
		}
		srv.Close()
	}
}

// TestReadJobSharedDeadline: a job read that callers share runs to the
// deadline of the caller that started it. A caller with time left reads
// the job again when the shared read failed on that deadline, and not when
// it succeeded at it.
func TestReadJobSharedDeadline(t *testing.T) {
	q := []Query{{Host: HostSelector{Name: "host-a"}, Job: "other", Group: "x", Label: "other", NoStats: true}}
	const list = "/v1/job/other/allocations"
	// joined starts a read with 1 s, then, once it has asked for the
	// job's allocations, one with 10 s, and returns their errors. (1 s
	// leaves the short read room to reach the listing on a loaded machine
	// under -race.)
	joined := func(t *testing.T, p *pair, rd *Reader) (short, long error) {
		t.Helper()
		asked := make(chan struct{})
		var once sync.Once
		p.s.SetHook(func(_, got string) {
			if got == list {
				once.Do(func() { close(asked) })
			}
		})
		t.Cleanup(func() { p.s.SetHook(nil) })
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		shortErr := make(chan error, 1)
		go func() {
			_, err := rd.ReadHosts(ctx, q, Options{})
			shortErr <- err
		}()
		select {
		case <-asked:
		case <-time.After(10 * time.Second):
			t.Fatal("the short read never listed the job's allocations")
		}
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		_, long = rd.ReadHosts(ctx2, q, Options{})
		return <-shortErr, long
	}

	t.Run("failed on the starter's deadline: read again", func(t *testing.T) {
		p := newPair(t, 1)
		p.s.InjectFault(nomadstandin.Fault{Path: list, Delay: 2 * time.Second})
		short, long := joined(t, p, &Reader{Client: p.client, Now: func() time.Time { return time.Now().Add(time.Hour) }})
		if long != nil {
			t.Errorf("the read with 10 s failed: %v", long)
		}
		if !errors.Is(short, context.DeadlineExceeded) {
			t.Errorf("the read with 1 s: %v, want its deadline", short)
		}
	})

	t.Run("answered at the starter's deadline: not read again", func(t *testing.T) {
		p := newPair(t, 1)
		// A transport that hands the listing's answer over 1.5 s late
		// whatever the request's context: the shared read succeeds
		// after its starter's deadline.
		late := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path != list {
				return http.DefaultTransport.RoundTrip(r)
			}
			resp, err := http.DefaultTransport.RoundTrip(r.WithContext(context.WithoutCancel(r.Context())))
			time.Sleep(1500 * time.Millisecond) // the joiner joins meanwhile
			return resp, err
		})
		client, err := api.NewClient(&api.Config{Address: p.s.URL(), TLSConfig: &api.TLSConfig{}, HttpClient: &http.Client{Transport: late}})
		if err != nil {
			t.Fatal(err)
		}
		from := len(p.s.Requests())
		_, long := joined(t, p, &Reader{Client: client, Now: func() time.Time { return time.Now().Add(time.Hour) }})
		if long != nil {
			t.Errorf("the read with 10 s failed: %v", long)
		}
		if got := p.requests(from); got["/v1/job/other"] != 1 || got[list] != 1 {
			t.Errorf("requests %v: the job was read again after the shared read succeeded", got)
		}
	})
}

// TestReadHostsSharedReadUnanswered: when a read several callers share
// (a job and its allocations, a node's allocations) gets no answer within
// the request timeout, each caller has the timeout at once. Only a shared
// read that ran out of its starter's deadline is asked again (see
// "a read with time left is not failed by a shared listing's shorter
// deadline" in TestReadHosts): asked again after a request timeout, a
// listing that hangs cost every caller four request timeouts, the whole
// default read deadline of a plan (2 minutes for 4 x 30 s).
func TestReadHostsSharedReadUnanswered(t *testing.T) {
	for _, tc := range []struct{ name, path string }{
		{"the job", "/v1/job/" + jobID},
		{"the job's allocations", "/v1/job/" + jobID + "/allocations"},
		{"the node's allocations", "/v1/node/%s/allocations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, 3)
			hung := tc.path
			if strings.Contains(hung, "%s") {
				hung = fmt.Sprintf(hung, p.nodeA)
			}
			p.s.InjectFault(nomadstandin.Fault{Path: hung, Hang: true})
			asked := make(chan struct{})
			var once sync.Once
			p.s.SetHook(func(_, got string) {
				if got == hung {
					once.Do(func() { close(asked) })
				}
			})
			client, err := api.NewClient(&api.Config{Address: p.s.URL(), TLSConfig: &api.TLSConfig{}, HttpClient: &http.Client{Timeout: time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			rd := &Reader{Client: client, Now: func() time.Time { return time.Now().Add(time.Hour) }}
			q := []Query{{Host: HostSelector{Name: "host-a"}, Job: jobID, Group: groupA, Label: "first", NoStats: true}}
			const callers = 3
			errs := make(chan error, callers)
			read := func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, err := rd.ReadHosts(ctx, q, Options{})
				errs <- err
			}
			go read()
			select {
			case <-asked:
			case <-time.After(10 * time.Second):
				t.Fatalf("the first read never asked for %s", hung)
			}
			for range callers - 1 {
				go read() // they join the held read
			}
			for range callers {
				var ne net.Error
				if err := <-errs; !errors.As(err, &ne) || !ne.Timeout() {
					t.Errorf("a read: %v, want the request's timeout", err)
				}
			}
			// The stand-in logs a held request once its client hangs up,
			// and every caller has hung up by now.
			for deadline := time.Now().Add(5 * time.Second); p.s.RequestCounts().ByPath["GET "+hung] == 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			if n := p.s.RequestCounts().ByPath["GET "+hung]; n != 1 {
				t.Errorf("%d requests for %s by %d reads sharing it, want 1: a caller asked again after a request timeout", n, hung, callers)
			}
		})
	}
}

// TestReadHostsTimeoutNamesTheUnfinishedCall: a read whose deadline ends
// while its job's allocations are listed names that listing, also when it
// looks at the shared read's progress only after the read ended with it,
// on the same deadline: with both calls ended and the progress not yet
// dropped, with it dropped (the job's read was named in CI once), and with
// a later read of the job under way, which another caller of the read,
// with time left, started again (its job read not yet done). The hooks
// hold the read's result until the caller has seen its context end, and
// the caller until the shared read is in the window.
func TestReadHostsTimeoutNamesTheUnfinishedCall(t *testing.T) {
	const (
		bothEnded = "both calls ended"
		dropped   = "progress dropped"
		later     = "a later read under way"
	)
	for _, window := range []string{bothEnded, dropped, later} {
		t.Run(window, func(t *testing.T) {
			p := newPair(t, 3)
			p.s.InjectFault(nomadstandin.Fault{Path: "/v1/job/" + jobID + "/allocations", Hang: true})
			rd := &Reader{Client: p.client, Now: func() time.Time { return time.Now().Add(time.Hour) }}
			wait := func(c <-chan struct{}) bool {
				select {
				case <-c:
					return true
				case <-time.After(10 * time.Second):
					return false
				}
			}
			entered, inWindow, firstStarted := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var waits, starts atomic.Int32
			var held atomic.Bool
			rd.hooks.jobWaitEnded = func() {
				if waits.Add(1) > 1 {
					return // the second caller's
				}
				close(entered)
				held.Store(wait(inWindow))
			}
			rd.hooks.jobReadEnding = func(d bool) {
				if (window == bothEnded && !d || window == dropped && d) && starts.Load() == 1 {
					wait(entered)
					close(inWindow)
					time.Sleep(100 * time.Millisecond) // the caller looks at the progress
				}
				if window == later && !d && starts.Load() == 1 {
					wait(entered) // the result only once the caller saw its deadline
				}
			}
			rd.hooks.jobReadStarted = func() {
				switch starts.Add(1) {
				case 1:
					close(firstStarted)
				case 2:
					if window == later {
						close(inWindow)
						time.Sleep(100 * time.Millisecond) // the caller looks at the progress
					}
				}
			}
			q := []Query{{Host: HostSelector{Name: "host-a"}, Job: jobID, Group: groupA, Label: "first", NoStats: true}}
			read := func(timeout time.Duration) error {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				_, err := rd.ReadHosts(ctx, q, Options{})
				return err
			}
			other := make(chan error, 1)
			if window == later {
				// A second caller with time left joins the read, and
				// starts it again when it runs out of the first's
				// deadline.
				go func() {
					if !wait(firstStarted) {
						other <- errors.New("the first read never started")
						return
					}
					other <- read(2 * time.Second)
				}()
			}
			err := read(500 * time.Millisecond)
			if !held.Load() {
				t.Fatal("the caller was not held until the shared read was in the window")
			}
			if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "list allocations of job") {
				t.Fatalf("error %v, want the deadline, naming the allocations' list", err)
			}
			if window == later {
				if n := starts.Load(); n != 2 {
					t.Fatalf("the job was read %d times, want 2: the second caller did not start it again", n)
				}
				if err := <-other; err == nil {
					t.Fatal("the second caller read the job, whose allocations' list hangs")
				}
			}
		})
	}
}
