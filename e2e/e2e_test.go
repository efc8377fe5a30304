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
			_ = r.s.SetGroupUsage("", jg[0], jg[1], v, 256)
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

// latestDecision is DecideRequest on the check's most recent logged request.
func latestDecision(t testing.TB, a *agent, check string) (*engine.Decision, string) {
	reqs, byCheck := a.requests(t)
	ds := byCheck[check]
	if len(ds) == 0 {
		return nil, ""
	}
	d, err := engine.DecideRequest(reqs[ds[len(ds)-1]])
	if err != nil {
		t.Fatalf("check %s: latest logged request: %v", check, err)
	}
	return d, ds[len(ds)-1]
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
// whose two hosts replay real usage, and checks what issue 4 asks.
func TestE2EAgent(t *testing.T) {
	autoscalerPath(t)
	pdir := pluginDir(t)
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
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
	for _, j := range []nomadstandin.JobSpec{
		{ID: "web", Groups: []nomadstandin.GroupSpec{
			{Name: "front", Count: 2, CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodeA},
			{Name: "back", Count: 2, CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodeB}}},
		{ID: "api", Groups: []nomadstandin.GroupSpec{
			{Name: "g1", Count: 2, CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodeA},
			{Name: "g2", Count: 2, CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodeB}}},
	} {
		if err := s.AddJob(j); err != nil {
			t.Fatal(err)
		}
	}
	rp := &replay{s: s, a: loadSeries(t, "series3"), b: loadSeries(t, "series9"), burst: 1, idx: 3000,
		groups: [2][][2]string{{{"web", "front"}, {"api", "g1"}}, {{"web", "back"}, {"api", "g2"}}}}
	rp.start(500 * time.Millisecond)
	defer rp.close()

	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := `        first_node_name  = "host-a"
        second_node_pool = "second"
        window           = "10"
`
	files := map[string]string{
		"web.hcl": policyFile("web", "web-split", `        role         = "split"
        job          = "web"
        first_group  = "front"
        second_group = "back"
`+hosts, `"host-quota" {
      job          = "web"
      first_group  = "front"
      second_group = "back"
    }`),
		"api-first.hcl": policyFile("api-first", "api-first", `        role        = "first"
        job         = "api"
        first_group = "g1"
        second_group = "g2"
`+hosts, `"nomad-target" {
      Job   = "api"
      Group = "g1"
    }`),
		"api-second.hcl": policyFile("api-second", "api-second", `        role        = "second"
        job         = "api"
        first_group = "g1"
        second_group = "g2"
`+hosts, `"nomad-target" {
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
	// settled: every group has the count engine.DecideRequest gives for
	// its check's latest observations, decided after since.
	settled := func(what string, timeout time.Duration, since map[string]int) {
		eventually(t, timeout, what, func() (bool, string) {
			_, byCheck := a.requests(t)
			for _, g := range groups {
				if n := len(byCheck[g.check]); n <= since[g.check] {
					return false, fmt.Sprintf("no decision of %s since the phase began (%d logged)", g.check, n)
				}
				d, dg := latestDecision(t, a, g.check)
				if d == nil {
					return false, "no decision logged yet for " + g.check
				}
				want := []int{d.First.Containers, d.Second.Containers}[g.host]
				if got := counts(t, s, g.job, g.group)[0]; got != want {
					return false, fmt.Sprintf("%s/%s is %d, the latest decision (%s) says %d", g.job, g.group, got, dg, want)
				}
			}
			return true, ""
		})
		parity()
	}

	// 1. The groups follow the real series, at the engine's counts.
	eventually(t, 60*time.Second, "first scaling of every group", func() (bool, string) {
		n := parity()
		for k, v := range n {
			if v == 0 {
				return false, "no checked scaling event yet for " + k
			}
		}
		return true, ""
	})
	rp.set(true, 1)
	settled("settled on the real series", 30*time.Second, mark())
	before := counts(t, s, "web", "front", "back")
	t.Logf("settled on the series: web front/back = %v, api g1/g2 = %v", before, counts(t, s, "api", "g1", "g2"))

	// 2. A burst of usage on both hosts moves the counts; a failure of the
	// second write of a split is repaired by the next evaluation.
	s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: "/v1/job/web/scale", Skip: 1, Times: 1, Status: 500, Message: "injected: second write fails"})
	m := mark()
	rp.set(true, 3)
	eventually(t, 30*time.Second, "burst moves web", func() (bool, string) {
		c := counts(t, s, "web", "front", "back")
		return c[0] != before[0] && c[1] != before[1], fmt.Sprintf("web front/back %v, before the burst %v", c, before)
	})
	settled("settled after the burst", 30*time.Second, m)
	burst := counts(t, s, "web", "front", "back")
	t.Logf("after the burst: web front/back = %v, api g1/g2 = %v", burst, counts(t, s, "api", "g1", "g2"))
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
	apiBurst := counts(t, s, "api", "g1", "g2")
	rp.set(true, 1)
	eventually(t, 40*time.Second, "api moves back while web is held", func() (bool, string) {
		if c := counts(t, s, "web", "front", "back"); c[0] != burst[0] || c[1] != burst[1] {
			t.Fatalf("web moved from %v to %v during a deployment", burst, c)
		}
		c := counts(t, s, "api", "g1", "g2")
		return c[0] != apiBurst[0] && c[1] != apiBurst[1], fmt.Sprintf("api g1/g2 %v, in the burst %v", c, apiBurst)
	})
	// While the target is not ready the agent does not evaluate web at
	// all; web moving once the deployment ends shows it had been held.
	m = mark()
	if err := s.SetDeploymentActive("", "web", false); err != nil {
		t.Fatal(err)
	}
	// web's window still holds burst samples from before the hold: it
	// moves once newer readings have replaced them.
	eventually(t, 40*time.Second, "web moves after the deployment", func() (bool, string) {
		c := counts(t, s, "web", "front", "back")
		return c[0] != burst[0] && c[1] != burst[1], fmt.Sprintf("web front/back %v, in the burst %v", c, burst)
	})
	settled("settled after the deployment", 30*time.Second, m)

	// 4. 5xx answers change nothing; the agent recovers.
	s.InjectFault(nomadstandin.Fault{Status: 503, Message: "injected: no leader"})
	all := func() string {
		return fmt.Sprint(counts(t, s, "web", "front", "back"), counts(t, s, "api", "g1", "g2"))
	}
	held := all()
	rp.set(true, 3)
	time.Sleep(4 * time.Second)
	if c := all(); c != held {
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
	t.Logf("after the restart: web front/back = %v, api g1/g2 = %v", counts(t, s, "web", "front", "back"), counts(t, s, "api", "g1", "g2"))

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
		gs, _ := s.Group("", g.job, g.group)
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
// observations: each strategy read of a host's node (one per evaluation and
// host) advances that host to the vector's next sample.
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
		if len(r.First.Samples) <= 16 && r.First.RunningReplicas == 2 && r.Second.RunningReplicas == 2 && r.FirstQuota == nil && r.SecondQuota == nil &&
			r.First.WantedReplicas == 0 && r.Second.WantedReplicas == 0 && len(r.Second.Samples) == len(r.First.Samples) {
			v = &vs[i]
			break
		}
	}
	if v == nil {
		t.Fatal("no golden vector the stand-in can serve exactly (short window, 2 replicas per host, default quotas)")
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
	next := [2]int{}
	s.SetHook(func(method, path string) {
		for h, o := range []engine.Observation{r.First, r.Second} {
			if method == http.MethodGet && path == "/v1/node/"+ids[h] {
				mu.Lock()
				smp := o.Samples[next[h]%n]
				next[h]++
				mu.Unlock()
				k := float64(o.RunningReplicas)
				_ = s.SetGroupUsage("", "web", groups[h], smp.CPUMHz/k, smp.MemoryMB/k)
			}
		}
	})

	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	_ = os.MkdirAll(pol, 0o755)
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
	a := startAgent(t, dir, fmt.Sprintf(`log_level = "TRACE"
log_json = true
plugin_dir = %q
nomad { address = %q }
policy {
  dir = %q
  source "nomad" { enabled = false }
}
strategy "activation-quota" { driver = "activation-quota" }
target "host-quota" { driver = "host-quota" }
`, pdir, s.URL(), pol))

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
			gs, _ := s.Group("", "web", g)
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
