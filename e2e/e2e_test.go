package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/engine/golden"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

const (
	hostCPU = 20000 // MHz per host
	hostMem = 65536 // MB per host
	reqCPU  = 2000  // MHz a replica requests: 10% of a host
	reqMem  = 512
	// allocMem is the memory (MB) each replayed allocation uses.
	allocMem = 256
)

// tracePath is the real usage series the hosts replay.
func tracePath() string { return filepath.Join(moduleRoot(), "engine", "testdata", "traces", "crane") }

// loadSeries returns a series normalised so that one replica's p99 is 10%
// of a host (the yardstick's setup), as per-replica CPU MHz.
func loadSeries(t testing.TB, name string) []float64 {
	t.Helper()
	all, err := traces.LoadDir(tracePath())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Name == name || strings.TrimSuffix(s.Name, ".csv") == name {
			n, err := traces.Normalize(s, 0.1)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float64, len(n.Values))
			for i, v := range n.Values {
				out[i] = v * hostCPU
			}
			return out
		}
	}
	t.Fatalf("series %s not in %s", name, tracePath())
	return nil
}

// replay feeds the series to the stand-in's allocations: every step the
// groups on host A take the next value of series a, those on host B the
// next value of series b, both times burst.
type replay struct {
	s      *nomadstandin.Server
	a, b   []float64
	groups [2][][2]string // per host: {job, group}

	mu     sync.Mutex
	idx    int
	frozen bool
	burst  float64
	stop   chan struct{}
	wg     sync.WaitGroup
}

func (r *replay) apply() {
	r.mu.Lock()
	i, burst := r.idx, r.burst
	r.mu.Unlock()
	for h, series := range [][]float64{r.a, r.b} {
		v := series[i%len(series)] * burst
		for _, jg := range r.groups[h] {
			if err := r.s.SetGroupUsage("", jg[0], jg[1], v, allocMem); err != nil {
				panic(fmt.Sprintf("replay: set usage of %s/%s: %v", jg[0], jg[1], err))
			}
		}
	}
}

func (r *replay) start(step time.Duration) {
	r.stop = make(chan struct{})
	r.apply()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		tk := time.NewTicker(step)
		defer tk.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-tk.C:
				r.mu.Lock()
				if !r.frozen {
					r.idx++
				}
				r.mu.Unlock()
				r.apply()
			}
		}
	}()
}

func (r *replay) set(frozen bool, burst float64) {
	r.mu.Lock()
	r.frozen, r.burst = frozen, burst
	r.mu.Unlock()
	r.apply()
}

func (r *replay) close() { close(r.stop); r.wg.Wait() }

func counts(t testing.TB, s *nomadstandin.Server, job string, groups ...string) []int {
	t.Helper()
	out := make([]int, len(groups))
	for i, g := range groups {
		gs, err := s.Group("", job, g)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = gs.Count
	}
	return out
}

func metaNum(m map[string]any, k string) (int, bool) {
	switch v := m[k].(type) {
	case float64:
		return int(v), true
	case int:
		return v, true
	}
	return 0, false
}

// eventParity checks every scaling event of a group that set a count: it
// carries the digest of a logged engine request, its decided counts equal
// engine.DecideRequest on that request, and the count it set is the one the
// strategy asked for that group. It returns how many events it checked.
func eventParity(t testing.TB, s *nomadstandin.Server, reqs map[string]*engine.Request, job, group string, host int, role string) int {
	t.Helper()
	gs, err := s.Group("", job, group)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, ev := range gs.Events {
		if ev.Count == nil {
			continue
		}
		dg, _ := ev.Meta[nomadplugin.MetaRequestDigest].(string)
		if dg == "" {
			t.Errorf("%s/%s: scaling event to %d (%q) carries no request digest", job, group, *ev.Count, ev.Message)
			continue
		}
		req, ok := reqs[dg]
		if !ok {
			continue // logged after we read the log; the next check sees it
		}
		d, err := engine.DecideRequest(req)
		if err != nil {
			t.Fatalf("%s/%s: logged request %s: %v", job, group, dg, err)
		}
		want := []int{d.First.Containers, d.Second.Containers}
		keys := [][2]string{{nomadplugin.MetaFirstDecided, nomadplugin.MetaFirstCount}, {nomadplugin.MetaSecondDecided, nomadplugin.MetaSecondCount}}
		for h := 0; h < 2; h++ {
			if got, _ := metaNum(ev.Meta, keys[h][0]); got != want[h] {
				t.Errorf("%s/%s event %s: decided host %d = %d, engine.DecideRequest says %d", job, group, dg, h, got, want[h])
			}
		}
		applied := want[host]
		if role == nomadplugin.RoleSplit {
			a, _ := metaNum(ev.Meta, keys[host][1])
			if _, step := ev.Meta[nomadplugin.MetaStep]; !step && a != want[host] {
				t.Errorf("%s/%s event %s: applied %d without a step, decided %d", job, group, dg, a, want[host])
			}
			applied = a
		}
		if int(*ev.Count) != applied {
			t.Errorf("%s/%s event %s: count %d, the strategy asked %d", job, group, dg, *ev.Count, applied)
		}
		checked++
	}
	return checked
}

// value is what one allocation of host h's groups uses now (MHz).
func (r *replay) value(h int) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	series := [][]float64{r.a, r.b}[h]
	return series[r.idx%len(series)] * r.burst
}

// valueAt is what one allocation of host h uses at the current step with
// burst b.
func (r *replay) valueAt(h int, b float64) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	series := [][]float64{r.a, r.b}[h]
	return series[r.idx%len(series)] * b
}

// expectedObs is the observation a check must log for one host while the
// replay is frozen and the host's group runs `running` replicas, built
// from how the stand-in is set up (not from what the strategy logged):
// the host's capacity, the group's requests, and a full window of samples,
// each the allocation usage summed over the replicas. times are the
// sample times (the stats' timestamps, which only the reads know).
func expectedObs(label string, perAlloc float64, running int, times []int64) engine.Observation {
	var cpu float64
	for range running {
		cpu += perAlloc
	}
	o := engine.Observation{
		Host: label, CPUCapacityMHz: hostCPU, MemoryCapacityMB: hostMem,
		RequestedCPUMHz: float64(reqCPU * running), RequestedMemoryMB: float64(reqMem * running),
		RunningReplicas: running, ReplicaCPUDemandMHz: reqCPU, ReplicaMemoryDemandMB: reqMem,
	}
	for _, tm := range times {
		o.Samples = append(o.Samples, engine.Sample{Time: tm, CPUMHz: cpu, MemoryMB: float64(allocMem * running)})
	}
	return o
}

// expectedRequest is the request for a job's two groups at counts c with
// per-allocation usage v, window samples at times.
func expectedRequest(v [2]float64, c [2]int, times [2][]int64) *engine.Request {
	return &engine.Request{
		First:      expectedObs(engine.RoleFirst, v[0], c[0], times[0]),
		Second:     expectedObs(engine.RoleSecond, v[1], c[1], times[1]),
		FirstModel: engine.DefaultFirstModel, SecondModel: engine.DefaultSecondModel,
	}
}

// sameObs compares the fields that matter; "" when they agree.
func sameObs(got, want engine.Observation) string {
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	switch {
	case got.Host != want.Host:
		return fmt.Sprintf("host %q, want %q", got.Host, want.Host)
	case got.CPUCapacityMHz != want.CPUCapacityMHz || got.MemoryCapacityMB != want.MemoryCapacityMB:
		return fmt.Sprintf("capacity %v MHz %v MB, want %v, %v", got.CPUCapacityMHz, got.MemoryCapacityMB, want.CPUCapacityMHz, want.MemoryCapacityMB)
	case got.RunningReplicas != want.RunningReplicas:
		return fmt.Sprintf("running %d, want %d", got.RunningReplicas, want.RunningReplicas)
	case got.RequestedCPUMHz != want.RequestedCPUMHz || got.RequestedMemoryMB != want.RequestedMemoryMB:
		return fmt.Sprintf("requested %v MHz %v MB, want %v, %v", got.RequestedCPUMHz, got.RequestedMemoryMB, want.RequestedCPUMHz, want.RequestedMemoryMB)
	case got.ReplicaCPUDemandMHz != want.ReplicaCPUDemandMHz || got.ReplicaMemoryDemandMB != want.ReplicaMemoryDemandMB || got.WantedReplicas != want.WantedReplicas:
		return fmt.Sprintf("demand %v MHz %v MB wanted %d, want %v, %v, %d", got.ReplicaCPUDemandMHz, got.ReplicaMemoryDemandMB, got.WantedReplicas, want.ReplicaCPUDemandMHz, want.ReplicaMemoryDemandMB, want.WantedReplicas)
	case len(got.Samples) != len(want.Samples):
		return fmt.Sprintf("%d samples, want %d", len(got.Samples), len(want.Samples))
	}
	for i := range got.Samples {
		g, w := got.Samples[i], want.Samples[i]
		if !near(g.CPUMHz, w.CPUMHz) || !near(g.MemoryMB, w.MemoryMB) {
			return fmt.Sprintf("sample %d is %v MHz %v MB, want %v, %v", i, g.CPUMHz, g.MemoryMB, w.CPUMHz, w.MemoryMB)
		}
	}
	return ""
}

func sampleTimes(o engine.Observation) []int64 {
	out := make([]int64, len(o.Samples))
	for i, s := range o.Samples {
		out[i] = s.Time
	}
	return out
}

func decide(t testing.TB, r *engine.Request) [2]int {
	t.Helper()
	d, err := engine.DecideRequest(r)
	if err != nil {
		t.Fatalf("engine.DecideRequest: %v", err)
	}
	return [2]int{d.First.Containers, d.Second.Containers}
}

// fixedPoint follows the engine from counts c with per-allocation usage v
// and a full window of n samples (frozen usage) until the counts stop
// changing; ok is false when they do not settle in 30 steps.
func fixedPoint(t testing.TB, v [2]float64, c [2]int, n int) ([2]int, bool) {
	t.Helper()
	times := make([]int64, n)
	for i := range times {
		times[i] = int64(1_700_000_000 + i)
	}
	for range 30 {
		d := decide(t, expectedRequest(v, c, [2][]int64{times, times}))
		if d == c {
			return c, true
		}
		c = d
	}
	return c, false
}

func policyFile(name, check, config, target string) string {
	return fmt.Sprintf(`scaling %q {
  enabled = true
  type    = "horizontal"
  min     = 0
  max     = 100
  policy {
    cooldown            = "200ms"
    evaluation_interval = "1s"
    check %q {
      strategy "activation-quota" {
%s
      }
    }
    target %s
  }
}
`, name, check, config, target)
}

// TestE2EAgent runs the real agent with both plugins against the stand-in,
// whose two hosts replay real usage, and checks what issue 4 asks. Job web
// is scaled by one split policy (host-quota target, window 1); job api by
// two per-host policies (built-in Nomad target, window 3). In the frozen
// phases the expected observations are built from the replay and the
// stand-in's set-up, and the groups must sit at engine.DecideRequest's
// counts for them.
func TestE2EAgent(t *testing.T) {
	autoscalerPath(t)
	pdir := pluginDir(t)
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		t.Fatal(err)
	}
	token := "e2e-" + hex.EncodeToString(tok)
	s.RequireToken(token, nomadstandin.TokenPolicy{Write: true})

	nodeA, err := s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "first"})
	if err != nil {
		t.Fatal(err)
	}
	nodeB, err := s.AddNode(nomadstandin.NodeSpec{Name: "host-b", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "second"})
	if err != nil {
		t.Fatal(err)
	}
	rp := &replay{s: s, a: loadSeries(t, "series3"), b: loadSeries(t, "series9"), burst: 1, idx: 3000, frozen: true,
		groups: [2][][2]string{{{"web", "front"}, {"api", "g1"}}, {{"web", "back"}, {"api", "g2"}}}}
	const webWindow, apiWindow = 1, 3

	// Start counts for which the engine changes every group at once, so
	// that every policy scales at least once.
	v1 := [2]float64{rp.value(0), rp.value(1)}
	var start [2]int
	var tried []string
	for _, c := range [][2]int{{2, 2}, {1, 1}, {4, 4}, {8, 8}, {1, 6}, {6, 1}, {12, 12}} {
		d := decide(t, expectedRequest(v1, c, [2][]int64{{1_700_000_000}, {1_700_000_000}}))
		tried = append(tried, fmt.Sprintf("%v -> %v", c, d))
		if d[0] != c[0] && d[1] != c[1] {
			start = c
			break
		}
	}
	if start == [2]int{} {
		t.Fatalf("no start counts make the engine change both groups on the replayed usage %v MHz per replica; tried %s", v1, strings.Join(tried, ", "))
	}
	t.Logf("start counts %v (the engine moves both groups: %s)", start, tried[len(tried)-1])
	for _, j := range []nomadstandin.JobSpec{
		{ID: "web", Groups: []nomadstandin.GroupSpec{
			{Name: "front", Count: start[0], CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodeA},
			{Name: "back", Count: start[1], CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodeB}}},
		{ID: "api", Groups: []nomadstandin.GroupSpec{
			{Name: "g1", Count: start[0], CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodeA},
			{Name: "g2", Count: start[1], CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodeB}}},
	} {
		if err := s.AddJob(j); err != nil {
			t.Fatal(err)
		}
	}
	// Snapshots of web's groups as each scale write to web arrives: the
	// state the previous writes left.
	var snapMu sync.Mutex
	var webSnaps [][2]int
	s.SetHook(func(method, path string) {
		if method == http.MethodPut && path == "/v1/job/web/scale" {
			// Not t.Fatal: this runs on the stand-in's handler goroutine;
			// a failed read leaves -1, which no assertion accepts.
			var c [2]int
			for h, g := range []string{"front", "back"} {
				c[h] = -1
				if gs, err := s.Group("", "web", g); err == nil {
					c[h] = gs.Count
				}
			}
			snapMu.Lock()
			webSnaps = append(webSnaps, c)
			snapMu.Unlock()
		}
	})
	rp.start(500 * time.Millisecond)
	defer rp.close()

	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := func(window int) string {
		return fmt.Sprintf(`        first_node_name  = "host-a"
        second_node_pool = "second"
        window           = "%d"
`, window)
	}
	files := map[string]string{
		"web.hcl": policyFile("web", "web-split", `        role         = "split"
        job          = "web"
        first_group  = "front"
        second_group = "back"
`+hosts(webWindow), `"host-quota" {
      job          = "web"
      first_group  = "front"
      second_group = "back"
    }`),
		"api-first.hcl": policyFile("api-first", "api-first", `        role        = "first"
        job         = "api"
        first_group = "g1"
        second_group = "g2"
`+hosts(apiWindow), `"nomad-target" {
      Job   = "api"
      Group = "g1"
    }`),
		"api-second.hcl": policyFile("api-second", "api-second", `        role        = "second"
        job         = "api"
        first_group = "g1"
        second_group = "g2"
`+hosts(apiWindow), `"nomad-target" {
      Job   = "api"
      Group = "g2"
    }`),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(pol, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`log_level  = "TRACE"
log_json   = true
plugin_dir = %q
nomad {
  address = %q
  token   = %q
}
policy {
  dir = %q
  default_evaluation_interval = "1s"
  source "nomad" {
    enabled = false
  }
}
strategy "activation-quota" {
  driver = "activation-quota"
}
target "host-quota" {
  driver = "host-quota"
}
`, pdir, s.URL(), token, pol)
	a := startAgent(t, dir, cfg)

	type groupRef struct {
		job, group, check, role string
		host                    int
	}
	groups := []groupRef{
		{"web", "front", "web-split", nomadplugin.RoleSplit, 0},
		{"web", "back", "web-split", nomadplugin.RoleSplit, 1},
		{"api", "g1", "api-first", nomadplugin.RoleFirst, 0},
		{"api", "g2", "api-second", nomadplugin.RoleSecond, 1},
	}
	checks := []struct {
		name, job string
		groups    [2]string
		window    int
	}{
		{"web-split", "web", [2]string{"front", "back"}, webWindow},
		{"api-first", "api", [2]string{"g1", "g2"}, apiWindow},
		{"api-second", "api", [2]string{"g1", "g2"}, apiWindow},
	}
	jobCounts := func(job string) [2]int {
		c := counts(t, s, job, map[string][]string{"web": {"front", "back"}, "api": {"g1", "g2"}}[job]...)
		return [2]int{c[0], c[1]}
	}
	parity := func() map[string]int {
		reqs, _ := a.requests(t)
		out := map[string]int{}
		for _, g := range groups {
			out[g.job+"/"+g.group] = eventParity(t, s, reqs, g.job, g.group, g.host, g.role)
		}
		if t.Failed() {
			t.FailNow()
		}
		return out
	}
	// mark counts each check's logged decisions so far.
	mark := func() map[string]int {
		_, byCheck := a.requests(t)
		m := map[string]int{}
		for c, ds := range byCheck {
			m[c] = len(ds)
		}
		return m
	}
	// settled: the replay is frozen; every check's latest logged request
	// (made after since) equals the one built independently from the
	// replay and the stand-in's current counts, and every group has the
	// count engine.DecideRequest gives for that independent request.
	settled := func(what string, timeout time.Duration, since map[string]int) {
		t.Helper()
		eventually(t, timeout, what, func() (bool, string) {
			reqs, byCheck := a.requests(t)
			v := [2]float64{rp.value(0), rp.value(1)}
			for _, c := range checks {
				ds := byCheck[c.name]
				if len(ds) <= since[c.name] {
					return false, fmt.Sprintf("no decision of %s since the phase began (%d logged)", c.name, len(ds))
				}
				logged := reqs[ds[len(ds)-1]]
				cur := jobCounts(c.job)
				want := expectedRequest(v, cur, [2][]int64{sampleTimes(logged.First), sampleTimes(logged.Second)})
				if len(logged.First.Samples) != c.window || len(logged.Second.Samples) != c.window {
					return false, fmt.Sprintf("%s: window of %d + %d samples, not yet full (%d)", c.name, len(logged.First.Samples), len(logged.Second.Samples), c.window)
				}
				for h, pair := range [][2]engine.Observation{{logged.First, want.First}, {logged.Second, want.Second}} {
					if diff := sameObs(pair[0], pair[1]); diff != "" {
						return false, fmt.Sprintf("%s host %d: the latest logged observation differs from the replay's: %s", c.name, h, diff)
					}
				}
				if logged.FirstModel != want.FirstModel || logged.SecondModel != want.SecondModel || logged.FirstQuota != nil || logged.SecondQuota != nil {
					t.Fatalf("%s: logged models %q, %q and quotas %v, %v; the policies set the defaults", c.name, logged.FirstModel, logged.SecondModel, logged.FirstQuota, logged.SecondQuota)
				}
				d := decide(t, want)
				for h, g := range c.groups {
					if c.name == "api-first" && h == 1 || c.name == "api-second" && h == 0 {
						continue // the other policy scales that group
					}
					if cur[h] != d[h] {
						return false, fmt.Sprintf("%s/%s is %d, engine.DecideRequest on the replay's observation says %d", c.job, g, cur[h], d[h])
					}
				}
			}
			return true, ""
		})
		parity()
	}
	// noScalingSince: each check logged a no-scaling reason containing
	// what, among the log entries after from.
	noScalingSince := func(from int, what string) (bool, string) {
		es := a.entries(t)
		for _, c := range checks {
			found := false
			for _, e := range es[from:] {
				if e.str("@message") == "no scaling" && e.str("check") == c.name && strings.Contains(e.str("reason"), what) {
					found = true
					break
				}
			}
			if !found {
				return false, fmt.Sprintf("check %s logged no no-scaling reason with %q yet", c.name, what)
			}
		}
		return true, ""
	}
	putScales := func(from int) int {
		n := 0
		for _, r := range s.Requests()[from:] {
			if r.Method == http.MethodPut && strings.HasSuffix(r.Path, "/scale") {
				n++
			}
		}
		return n
	}

	// 1. Every group scales at the engine's counts; then the groups follow
	// the real series for a while; then, frozen, they settle.
	eventually(t, 60*time.Second, "first scaling of every group", func() (bool, string) {
		n := parity()
		for k, v := range n {
			if v == 0 {
				return false, "no checked scaling event yet for " + k
			}
		}
		return true, ""
	})
	m := mark()
	rp.set(false, 1)
	eventually(t, 30*time.Second, "three decisions per check on the moving series", func() (bool, string) {
		_, byCheck := a.requests(t)
		for _, c := range checks {
			if len(byCheck[c.name]) < m[c.name]+3 {
				return false, fmt.Sprintf("%s: %d decisions since the series started moving", c.name, len(byCheck[c.name])-m[c.name])
			}
		}
		return true, ""
	})
	parity()
	rp.set(true, 1)
	settled("settled on the real series", 30*time.Second, mark())
	before, apiBefore := jobCounts("web"), jobCounts("api")
	t.Logf("settled on the series: web front/back = %v, api g1/g2 = %v", before, apiBefore)

	// Choose the burst from the engine's answers: web's first evaluation
	// in the burst (window 1) must change both groups and their sum (two
	// writes in one Scale); api must end elsewhere in both groups, and
	// both jobs must move again when the burst ends.
	var burst float64
	var d1, webBurstPred, apiBurstPred [2]int
	tried = nil
	for _, b := range []float64{3, 2, 4, 1.5, 6, 8, 0.5, 0.25} {
		vb := [2]float64{rp.valueAt(0, b), rp.valueAt(1, b)}
		d := decide(t, expectedRequest(vb, before, [2][]int64{{1_700_000_000}, {1_700_000_000}}))
		wb, okW := fixedPoint(t, vb, before, webWindow)
		ab, okA := fixedPoint(t, vb, apiBefore, apiWindow)
		vBack := [2]float64{rp.valueAt(0, 1), rp.valueAt(1, 1)}
		wBack, okWB := fixedPoint(t, vBack, wb, webWindow)
		aBack, okAB := fixedPoint(t, vBack, ab, apiWindow)
		tried = append(tried, fmt.Sprintf("x%g: web first %v, web %v -> %v -> %v, api %v -> %v -> %v", b, d, before, wb, wBack, apiBefore, ab, aBack))
		if okW && okA && okWB && okAB && d[0] != before[0] && d[1] != before[1] && d[0]+d[1] != before[0]+before[1] && d[0]+d[1] <= 100 &&
			ab[0] != apiBefore[0] && ab[1] != apiBefore[1] && aBack[0] != ab[0] && aBack[1] != ab[1] && wBack[0] != wb[0] && wBack[1] != wb[1] {
			burst, d1, webBurstPred, apiBurstPred = b, d, wb, ab
			break
		}
	}
	if burst == 0 {
		t.Fatalf("no burst size moves both groups of both jobs (and back) for the engine; tried:\n%s", strings.Join(tried, "\n"))
	}
	t.Logf("burst x%g: %s", burst, tried[len(tried)-1])

	// 2. The burst moves the counts. The second of web's two writes fails
	// once: the growing group is written first, so the fault goes on the
	// other one.
	firstIdx, secondIdx := 0, 1
	if d1[1]-before[1] > d1[0]-before[0] {
		firstIdx, secondIdx = 1, 0
	}
	webGroups := [2]string{"front", "back"}
	const faultMsg = "injected: second write fails"
	s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: "/v1/job/web/scale", Group: webGroups[secondIdx], Times: 1, Status: 500, Message: faultMsg})
	m = mark()
	reqsBefore := len(s.Requests())
	snapMu.Lock()
	snapsBefore := len(webSnaps)
	snapMu.Unlock()
	rp.set(true, burst)
	var failure logEntry
	eventually(t, 30*time.Second, "the target's error for the failed second write in the agent log", func() (bool, string) {
		for _, e := range a.entries(t) {
			if strings.Contains(fmt.Sprint(map[string]any(e)), faultMsg) {
				failure = e
				return true, ""
			}
		}
		return false, "not logged yet"
	})
	if txt := fmt.Sprint(map[string]any(failure)); !strings.Contains(txt, "already changed: "+webGroups[firstIdx]) {
		t.Errorf("the logged error does not say %s was already changed: %s", webGroups[firstIdx], txt)
	}
	// The state right after the failure is the one the failing write
	// found (a failed write changes nothing).
	var webPuts []nomadstandin.Request
	for _, r := range s.Requests()[reqsBefore:] {
		if r.Method == http.MethodPut && r.Path == "/v1/job/web/scale" {
			webPuts = append(webPuts, r)
		}
	}
	failedAt := -1
	for i, r := range webPuts {
		if r.Status == http.StatusInternalServerError {
			failedAt = i
			break
		}
	}
	if failedAt < 0 {
		t.Fatalf("no failed write to web among %d scale writes since the burst", len(webPuts))
	}
	// One snapshot per web scale write, in arrival order (the target
	// writes one group after the other).
	snapMu.Lock()
	if snapsBefore+failedAt >= len(webSnaps) {
		snapMu.Unlock()
		t.Fatalf("no snapshot for web's scale write %d since the burst", failedAt)
	}
	after := webSnaps[snapsBefore+failedAt]
	snapMu.Unlock()
	want := d1
	want[secondIdx] = before[secondIdx]
	if after != want {
		t.Fatalf("right after the failed write web is %v; want %v: %s at the decision %d, %s still at %d (decision %v)",
			after, want, webGroups[firstIdx], d1[firstIdx], webGroups[secondIdx], before[secondIdx], d1)
	}
	diff := 0
	for h := range 2 {
		if after[h] != d1[h] {
			diff++
		}
	}
	if diff != 1 {
		t.Fatalf("right after the failure %d groups differ from the decision %v (state %v), want exactly 1", diff, d1, after)
	}
	// The next evaluation repairs: the group left behind gets a scaling
	// event from a decision made on the partial state.
	eventually(t, 30*time.Second, "the next evaluation repairs the split", func() (bool, string) {
		reqs, _ := a.requests(t)
		gs, err := s.Group("", "web", webGroups[secondIdx])
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range gs.Events {
			dg, _ := ev.Meta[nomadplugin.MetaRequestDigest].(string)
			r := reqs[dg]
			if ev.Count == nil || r == nil || r.First.RunningReplicas != after[0] || r.Second.RunningReplicas != after[1] {
				continue
			}
			if want := decide(t, r)[secondIdx]; int(*ev.Count) != want {
				t.Fatalf("the repairing event sets %s to %d, its decision says %d", webGroups[secondIdx], *ev.Count, want)
			}
			return true, ""
		}
		return false, fmt.Sprintf("no scaling event of %s from a decision on the partial state %v yet", webGroups[secondIdx], after)
	})
	settled("settled after the burst", 45*time.Second, m)
	webBurst, apiBurst := jobCounts("web"), jobCounts("api")
	t.Logf("after the burst: web front/back = %v (predicted %v), api g1/g2 = %v (predicted %v)", webBurst, webBurstPred, apiBurst, apiBurstPred)
	if apiBurst[0] == apiBefore[0] || apiBurst[1] == apiBefore[1] {
		t.Errorf("the burst did not move both api groups: %v -> %v", apiBefore, apiBurst)
	}
	failed := 0
	for _, r := range s.Requests() {
		if r.Method == http.MethodPut && r.Status == 500 {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("the injected write failure answered %d times, want 1", failed)
	}

	// 3. A deployment in progress holds the job while the other job, on
	// the same hosts, moves when the burst ends.
	if err := s.SetDeploymentActive("", "web", true); err != nil {
		t.Fatal(err)
	}
	rp.set(true, 1)
	eventually(t, 40*time.Second, "api moves back while web is held", func() (bool, string) {
		if c := jobCounts("web"); c != webBurst {
			t.Fatalf("web moved from %v to %v during a deployment", webBurst, c)
		}
		c := jobCounts("api")
		return c[0] != apiBurst[0] && c[1] != apiBurst[1], fmt.Sprintf("api g1/g2 %v, in the burst %v", c, apiBurst)
	})
	// While the target is not ready the agent does not evaluate web at
	// all; web moving once the deployment ends shows it had been held.
	m = mark()
	if err := s.SetDeploymentActive("", "web", false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 40*time.Second, "web moves after the deployment", func() (bool, string) {
		c := jobCounts("web")
		return c[0] != webBurst[0] && c[1] != webBurst[1], fmt.Sprintf("web front/back %v, in the burst %v", c, webBurst)
	})
	settled("settled after the deployment", 30*time.Second, m)

	// 4. 5xx answers to the strategy's reads change nothing: each check
	// says why it does not scale, and no scale write reaches Nomad. The
	// targets' own reads still answer, so the agent keeps evaluating.
	held := [2][2]int{jobCounts("web"), jobCounts("api")}
	fromLog, fromReq := len(a.entries(t)), len(s.Requests())
	for _, p := range []string{"/v1/node*", "/v1/client/*"} {
		s.InjectFault(nomadstandin.Fault{Method: http.MethodGet, Path: p, Status: 503, Message: "injected: no leader"})
	}
	rp.set(true, burst)
	eventually(t, 30*time.Second, "every check refuses to scale while Nomad answers 503", func() (bool, string) {
		return noScalingSince(fromLog, "503")
	})
	if n := putScales(fromReq); n > 0 {
		t.Fatalf("%d scale writes reached Nomad while its reads answered 503", n)
	}
	if c := [2][2]int{jobCounts("web"), jobCounts("api")}; c != held {
		t.Fatalf("counts moved from %v to %v while Nomad answered 503", held, c)
	}
	m = mark()
	s.ClearFaults()
	settled("recovered after 5xx", 40*time.Second, m)

	// 5. A stand-in restart: the agent recovers.
	if err := s.Restart(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	m = mark()
	rp.set(true, 1)
	settled("recovered after a restart", 60*time.Second, m)
	t.Logf("after the restart: web front/back = %v, api g1/g2 = %v", jobCounts("web"), jobCounts("api"))

	// The agent is still running.
	select {
	case err := <-a.done:
		a.done <- err
		t.Fatalf("the agent exited: %v", err)
	default:
	}

	// 6. The ACL token worked and never appears in any log.
	forbidden := 0
	for _, r := range s.Requests() {
		if r.Status == http.StatusForbidden || !r.HadToken {
			forbidden++
		}
	}
	if forbidden > 0 {
		t.Errorf("%d requests came without the token or were refused", forbidden)
	}
	a.stop(t)
	logs := a.log(t)
	if strings.Contains(string(logs), token) {
		t.Errorf("the ACL token appears in the agent's log")
	}
	if !strings.Contains(string(logs), "decision request") {
		t.Errorf("the agent's log has no trace of the strategy's decisions")
	}
	for _, g := range groups {
		gs, err := s.Group("", g.job, g.group)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range gs.Events {
			if strings.Contains(fmt.Sprint(ev.Meta)+ev.Message, token) {
				t.Errorf("the token appears in a scaling event of %s/%s", g.job, g.group)
			}
		}
	}
}

// TestE2EGoldenDryRun: through the real agent, the strategy decides a golden
// vector's counts, and the host-quota target in dry_run records them as
// scaling events with a null count. The stand-in serves the vector's
// observations: once per evaluation (at the strategy's read of the first
// host's node, which comes before the second host's) both hosts advance to
// the vector's next sample.
func TestE2EGoldenDryRun(t *testing.T) {
	autoscalerPath(t)
	pdir := pluginDir(t)
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	var v *golden.Vector
	for i := range vs {
		r := &vs[i].Request
		// The stand-in can serve a vector exactly when replicas are a
		// power of two (per-allocation usage x replicas is exact), the
		// default models and quotas apply, and the window is short.
		defaultModels := (r.FirstModel == "" || r.FirstModel == engine.DefaultFirstModel) && (r.SecondModel == "" || r.SecondModel == engine.DefaultSecondModel)
		if defaultModels && len(r.First.Samples) <= 16 && r.First.RunningReplicas == 2 && r.Second.RunningReplicas == 2 && r.FirstQuota == nil && r.SecondQuota == nil &&
			r.First.WantedReplicas == 0 && r.Second.WantedReplicas == 0 && len(r.Second.Samples) == len(r.First.Samples) {
			v = &vs[i]
			break
		}
	}
	if v == nil {
		t.Fatal("no golden vector the stand-in can serve exactly (default models and quotas, short window, 2 replicas per host)")
	}
	r := v.Request
	n := len(r.First.Samples)
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids [2]string
	for h, o := range []engine.Observation{r.First, r.Second} {
		if ids[h], err = s.AddNode(nomadstandin.NodeSpec{Name: fmt.Sprintf("host-%d", h+1), CPUMHz: int64(o.CPUCapacityMHz), MemoryMB: int64(o.MemoryCapacityMB)}); err != nil {
			t.Fatal(err)
		}
	}
	groups := [2]string{"front", "back"}
	err = s.AddJob(nomadstandin.JobSpec{ID: "web", Groups: []nomadstandin.GroupSpec{
		{Name: groups[0], Count: r.First.RunningReplicas, CPUMHz: int(r.First.ReplicaCPUDemandMHz), MemoryMB: int(r.First.ReplicaMemoryDemandMB), NodeID: ids[0]},
		{Name: groups[1], Count: r.Second.RunningReplicas, CPUMHz: int(r.Second.ReplicaCPUDemandMHz), MemoryMB: int(r.Second.ReplicaMemoryDemandMB), NodeID: ids[1]},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	next := 0
	serve := func(i int) error {
		for h, o := range []engine.Observation{r.First, r.Second} {
			smp := o.Samples[i%n]
			k := float64(o.RunningReplicas)
			if err := s.SetGroupUsage("", "web", groups[h], smp.CPUMHz/k, smp.MemoryMB/k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := serve(0); err != nil {
		t.Fatal(err)
	}
	s.SetHook(func(method, path string) {
		if method == http.MethodGet && path == "/v1/node/"+ids[0] {
			mu.Lock()
			next++
			i := next
			mu.Unlock()
			// The job exists: SetGroupUsage cannot fail here.
			_ = serve(i - 1)
		}
	})

	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	body := policyFile("golden", "golden", fmt.Sprintf(`        role             = "split"
        job              = "web"
        first_node_name  = "host-1"
        first_group      = "front"
        second_node_name = "host-2"
        second_group     = "back"
        window           = "%d"
`, n), `"host-quota" {
      job          = "web"
      first_group  = "front"
      second_group = "back"
      dry_run      = "true"
    }`)
	if err := os.WriteFile(filepath.Join(pol, "golden.hcl"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, dir, agentConfig("TRACE", pdir, s.URL(), pol))

	same := func(got, want []engine.Sample) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if math.Abs(got[i].CPUMHz-want[i].CPUMHz) > 1e-9 || math.Abs(got[i].MemoryMB-want[i].MemoryMB) > 1e-6 {
				return false
			}
		}
		return true
	}
	eventually(t, 3*time.Duration(n+4)*time.Second, "a dry-run event for the golden window", func() (bool, string) {
		reqs, _ := a.requests(t)
		seen := 0
		var matched [2]bool
		for h, g := range groups {
			gs, err := s.Group("", "web", g)
			if err != nil {
				t.Fatal(err)
			}
			if gs.Count != []int{r.First.RunningReplicas, r.Second.RunningReplicas}[h] {
				t.Fatalf("dry run changed group %s to %d", g, gs.Count)
			}
			for _, ev := range gs.Events {
				if ev.Count != nil {
					t.Fatalf("dry run wrote a count to group %s: %d", g, *ev.Count)
				}
				dg, _ := ev.Meta[nomadplugin.MetaRequestDigest].(string)
				req := reqs[dg]
				if req == nil {
					continue
				}
				seen++
				if !same(req.First.Samples, r.First.Samples) || !same(req.Second.Samples, r.Second.Samples) {
					continue
				}
				want := []int{v.Want.First.Containers, v.Want.Second.Containers}
				got, _ := metaNum(ev.Meta, nomadplugin.MetaDryRunCount)
				if got != want[h] {
					t.Fatalf("golden %q through the agent: group %s would be set to %d, golden %d", v.Name, g, got, want[h])
				}
				matched[h] = true
			}
		}
		if matched[0] && matched[1] {
			return true, ""
		}
		return false, fmt.Sprintf("%d dry-run events seen, none yet for the golden window on both groups", seen)
	})
}
