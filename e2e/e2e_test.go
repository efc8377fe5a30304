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

	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/engine/golden"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

const (
	hostCPU = int64(testsupport.HostMHz)      // MHz per host
	hostMem = int64(testsupport.HostMemoryMB) // MB per host
	reqCPU  = 2000                            // MHz a replica requests: 10% of a host
	reqMem  = int(testsupport.ReplicaMemMB)
	// allocMem is the memory (MB) each replayed allocation uses.
	allocMem = 256
)

// noSteps are the strategy keys that leave only the placement cap
// between the engine's decision and the action: no step limit, no
// hysteresis and no warm-up (the stand-in's allocations all start with the
// test). noLimits adds placement reported, not capped: the action is the
// engine's decision.
const (
	noSteps = `        max_scale_up   = "none"
        max_scale_down = "none"
        hysteresis     = "none"
        warmup         = "0"
`
	noLimits = noSteps + `        placement      = "report"
`
)

// loadSeries returns a bundled real series normalised so that one
// replica's p99 is 10% of a host (the yardstick's setup), as per-replica
// CPU MHz: the whole series, for replaying.
func loadSeries(t testing.TB, name string) []float64 {
	t.Helper()
	s, err := traces.ReadFile(filepath.Join(testsupport.CraneDir(), name+".csv"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := traces.Normalize(s, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(n.Values))
	for i, v := range n.Values {
		out[i] = v * float64(hostCPU)
	}
	return out
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

// eventCount is the count a scaling event set: its Count (the built-in
// Nomad target) or, for the host-quota target's count-less events that
// record a split it registered, meta activation.count.new.
func eventCount(ev api.ScalingEvent) (int, bool) {
	if ev.Count != nil {
		return int(*ev.Count), true
	}
	return metaNum(ev.Meta, nomadplugin.MetaNewCount)
}

// eventParity checks every scaling event of a group that set a count: it
// carries the digest of a logged engine request, its decided count of each
// host the check decides (both for role "split", the role's host
// otherwise) equals the engine's on that request, the strategy asked for
// want on that request (the engine's count under the case's limits), and
// the count set is the one the strategy asked for that group. It returns
// how many events it checked.
func eventParity(t testing.TB, events []api.ScalingEvent, reqs map[string]*engine.Request, job, group string, host int, role string, want func(testing.TB, *engine.Request) [2]int) int {
	t.Helper()
	keys := [][2]string{{nomadplugin.MetaFirstDecided, nomadplugin.MetaFirstCount}, {nomadplugin.MetaSecondDecided, nomadplugin.MetaSecondCount}}
	decides := []int{host}
	if role == nomadplugin.RoleSplit {
		decides = []int{0, 1}
	}
	checked := 0
	for _, ev := range events {
		set, ok := eventCount(ev)
		if !ok {
			continue
		}
		dg, _ := ev.Meta[nomadplugin.MetaRequestDigest].(string)
		if dg == "" {
			t.Errorf("%s/%s: scaling event to %d (%q) carries no request digest", job, group, set, ev.Message)
			continue
		}
		req, ok := reqs[dg]
		if !ok {
			continue // logged after we read the log; the next check sees it
		}
		decided, asks := decide(t, req), want(t, req)
		for _, h := range decides {
			if got, _ := metaNum(ev.Meta, keys[h][0]); got != decided[h] {
				t.Errorf("%s/%s event %s: decided host %d = %d, the engine says %d", job, group, dg, h, got, decided[h])
			}
		}
		applied := asks[host]
		if role == nomadplugin.RoleSplit {
			a, _ := metaNum(ev.Meta, keys[host][1])
			if _, step := ev.Meta[nomadplugin.MetaStep]; !step && a != asks[host] {
				t.Errorf("%s/%s event %s: applied %d without a step, the strategy should ask %d (engine %d)", job, group, dg, a, asks[host], decided[host])
			}
			applied = a
		}
		if set != applied {
			t.Errorf("%s/%s event %s: count %d, the strategy asked %d", job, group, dg, set, applied)
		}
		checked++
	}
	return checked
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
		Host: label, CPUCapacityMHz: float64(hostCPU), MemoryCapacityMB: float64(hostMem),
		RequestedCPUMHz: float64(reqCPU * running), RequestedMemoryMB: float64(reqMem * running),
		RunningReplicas: running, ReplicaCPUDemandMHz: reqCPU, ReplicaMemoryDemandMB: float64(reqMem),
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
		MinSamples: 1,
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
	case got.RunningReplicas != want.RunningReplicas || got.WarmingReplicas != want.WarmingReplicas:
		return fmt.Sprintf("running %d (%d warming), want %d (%d)", got.RunningReplicas, got.WarmingReplicas, want.RunningReplicas, want.WarmingReplicas)
	case got.RequestedCPUMHz != want.RequestedCPUMHz || got.RequestedMemoryMB != want.RequestedMemoryMB:
		return fmt.Sprintf("requested %v MHz %v MB, want %v, %v", got.RequestedCPUMHz, got.RequestedMemoryMB, want.RequestedCPUMHz, want.RequestedMemoryMB)
	case got.OtherReservedCPUMHz != want.OtherReservedCPUMHz || got.OtherReservedMemoryMB != want.OtherReservedMemoryMB:
		return fmt.Sprintf("others reserve %v MHz %v MB, want %v, %v", got.OtherReservedCPUMHz, got.OtherReservedMemoryMB, want.OtherReservedCPUMHz, want.OtherReservedMemoryMB)
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

// decision is the engine's decision on r; the test fails without one.
func decision(t testing.TB, r *engine.Request) *engine.Decision {
	t.Helper()
	d, err := r.Decide()
	if err != nil {
		t.Fatalf("engine decision: %v", err)
	}
	return d
}

func decide(t testing.TB, r *engine.Request) [2]int {
	t.Helper()
	d := decision(t, r)
	return [2]int{d.First.Containers, d.Second.Containers}
}

// fits is how many replicas of reqCPU MHz and reqMem MB the stand-in
// places on a host of hostCPU and hostMem that runs nothing else: from the
// stand-in's set-up and its placement by reservations, not from the
// engine's placement estimate, which the strategy's cap uses.
const fits = min(hostCPU/reqCPU, hostMem/int64(reqMem))

// asked is what the strategy must ask for on r in placement cap mode with
// no steps, on hosts that run nothing but the group: each host's engine
// count, at most what the stand-in can place there.
func asked(t testing.TB, r *engine.Request) [2]int {
	t.Helper()
	d := decide(t, r)
	return [2]int{min(d[0], int(fits)), min(d[1], int(fits))}
}

// fixedPoint follows the strategy (placement capped, no steps) from
// counts c with per-allocation usage v and a full window of n samples
// (frozen usage) until the counts stop changing; ok is false when they do
// not settle in 30 steps.
func fixedPoint(t testing.TB, v [2]float64, c [2]int, n int) ([2]int, bool) {
	t.Helper()
	times := make([]int64, n)
	for i := range times {
		times[i] = int64(1_700_000_000 + i)
	}
	for range 30 {
		d := asked(t, expectedRequest(v, c, [2][]int64{times, times}))
		if d == c {
			return c, true
		}
		c = d
	}
	return c, false
}

func policyFile(name, check, config, target string) string {
	return policyFileWith(name, check, config, target, "200ms", "1s")
}

func policyFileWith(name, check, config, target, cooldown, interval string) string {
	return fmt.Sprintf(`scaling %q {
  enabled = true
  type    = "horizontal"
  min     = 0
  max     = 100
  policy {
    cooldown            = %q
    evaluation_interval = %q
    check %q {
      strategy "activation-quota" {
%s
      }
    }
    target %s
  }
}
`, name, cooldown, interval, check, config, target)
}

// agentCase is the state TestE2EAgent's phases share.
type agentCase struct {
	s     *nomadstandin.Server
	rp    *replay
	a     *agent
	token string

	regs *registerLog // web's registers
}

type groupRef struct {
	job, group, check, role string
	host                    int
}

var agentGroups = []groupRef{
	{"web", "front", "web-split", nomadplugin.RoleSplit, 0},
	{"web", "back", "web-split", nomadplugin.RoleSplit, 1},
	{"api", "g1", "api-first", nomadplugin.RoleFirst, 0},
	{"api", "g2", "api-second", nomadplugin.RoleSecond, 1},
}

var agentChecks = []struct {
	name, job, role string
	groups          [2]string
	window          int
}{
	{"web-split", "web", nomadplugin.RoleSplit, [2]string{"front", "back"}, 1},
	{"api-first", "api", nomadplugin.RoleFirst, [2]string{"g1", "g2"}, 3},
	{"api-second", "api", nomadplugin.RoleSecond, [2]string{"g1", "g2"}, 3},
}

// decidedHosts are the hosts a check with role decides: both for role
// "split", the role's host otherwise.
func decidedHosts(role string) []int {
	switch role {
	case nomadplugin.RoleFirst:
		return []int{0}
	case nomadplugin.RoleSecond:
		return []int{1}
	}
	return []int{0, 1}
}

func (c *agentCase) jobCounts(t testing.TB, job string) [2]int {
	cs := counts(t, c.s, job, map[string][]string{"web": {"front", "back"}, "api": {"g1", "g2"}}[job]...)
	return [2]int{cs[0], cs[1]}
}

func (c *agentCase) parity(t testing.TB) map[string]int {
	t.Helper()
	reqs, _ := c.a.requests(t)
	out := map[string]int{}
	for _, g := range agentGroups {
		gs, err := c.s.Group("", g.job, g.group)
		if err != nil {
			t.Fatal(err)
		}
		out[g.job+"/"+g.group] = eventParity(t, gs.Events, reqs, g.job, g.group, g.host, g.role, asked)
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// mark counts each check's logged decisions so far.
func (c *agentCase) mark(t testing.TB) map[string]int {
	_, byCheck := c.a.requests(t)
	m := map[string]int{}
	for k, ds := range byCheck {
		m[k] = len(ds)
	}
	return m
}

// settled waits until, with the replay frozen, every check's latest logged
// request (made after since) equals, for each host it decides, the one
// built independently from the replay and the stand-in's current counts,
// every group has the count the engine gives for that independent request
// capped at what the stand-in can place, and none is queued.
func (c *agentCase) settled(t *testing.T, what string, timeout time.Duration, since map[string]int) {
	t.Helper()
	eventually(t, timeout, what, func() (bool, string) {
		reqs, byCheck := c.a.requests(t)
		v := [2]float64{c.rp.value(0), c.rp.value(1)}
		for _, ch := range agentChecks {
			ds := byCheck[ch.name]
			if len(ds) <= since[ch.name] {
				return false, fmt.Sprintf("no decision of %s since the phase began (%d logged)", ch.name, len(ds))
			}
			logged := reqs[ds[len(ds)-1]]
			cur := c.jobCounts(t, ch.job)
			want := expectedRequest(v, cur, [2][]int64{sampleTimes(logged.First), sampleTimes(logged.Second)})
			want.MinSamples = ch.window
			d := asked(t, want)
			pairs := [2][2]engine.Observation{{logged.First, want.First}, {logged.Second, want.Second}}
			for _, h := range decidedHosts(ch.role) {
				if n := len(pairs[h][0].Samples); n != ch.window {
					return false, fmt.Sprintf("%s host %d: window of %d samples, not yet full (%d)", ch.name, h, n, ch.window)
				}
				if diff := sameObs(pairs[h][0], pairs[h][1]); diff != "" {
					return false, fmt.Sprintf("%s host %d: the latest logged observation differs from the replay's: %s", ch.name, h, diff)
				}
				if gs, _ := c.s.Group("", ch.job, ch.groups[h]); gs.Queued != 0 {
					t.Fatalf("%s/%s has %d queued allocations in placement cap mode", ch.job, ch.groups[h], gs.Queued)
				}
				if cur[h] != d[h] {
					return false, fmt.Sprintf("%s/%s is %d, the strategy on the replay's observation asks %d", ch.job, ch.groups[h], cur[h], d[h])
				}
			}
			if logged.FirstQuota != nil || logged.SecondQuota != nil || logged.FirstModel != want.FirstModel || logged.SecondModel != want.SecondModel {
				t.Fatalf("%s: logged models %q, %q and quotas %v, %v; the policies set the defaults", ch.name, logged.FirstModel, logged.SecondModel, logged.FirstQuota, logged.SecondQuota)
			}
		}
		return true, ""
	})
	c.parity(t)
}

// noScalingSince says whether each check logged a no-scaling reason
// containing what, among the log entries after from.
func (c *agentCase) noScalingSince(t testing.TB, from int, what string) (bool, string) {
	es := c.a.entries(t)
	for _, ch := range agentChecks {
		found := false
		for _, e := range es[from:] {
			if e.str("@message") == "no scaling" && e.str("check") == ch.name && strings.Contains(e.str("reason"), what) {
				found = true
				break
			}
		}
		if !found {
			return false, fmt.Sprintf("check %s logged no no-scaling reason with %q yet", ch.name, what)
		}
	}
	return true, ""
}

func (c *agentCase) writesSince(from int) int {
	n := 0
	for _, r := range c.s.Requests()[from:] {
		if (r.Method == http.MethodPut || r.Method == http.MethodPost) && strings.HasPrefix(r.Path, "/v1/job/") {
			n++
		}
	}
	return n
}

// startCounts are counts for which the engine changes both groups on the
// replay's frozen usage, so that every policy scales at least once.
func startCounts(t *testing.T, rp *replay) [2]int {
	v := [2]float64{rp.value(0), rp.value(1)}
	var tried []string
	for _, c := range [][2]int{{2, 2}, {1, 1}, {4, 4}, {8, 8}, {1, 6}, {6, 1}, {12, 12}} {
		d := asked(t, expectedRequest(v, c, [2][]int64{{1_700_000_000}, {1_700_000_000}}))
		tried = append(tried, fmt.Sprintf("%v -> %v", c, d))
		if d[0] != c[0] && d[1] != c[1] {
			t.Logf("start counts %v (the strategy moves both groups: %s)", c, tried[len(tried)-1])
			return c
		}
	}
	t.Fatalf("no start counts make the engine change both groups on the replayed usage %v MHz per replica; tried %s", v, strings.Join(tried, ", "))
	return [2]int{}
}

// setupAgentCase starts the stand-in (ACLs on), the two jobs, the replay,
// the policies and the agent: job web is scaled by one split policy
// (host-quota target, window 1) on hosts A and B; job api by two per-host
// policies (built-in Nomad target, window 3) on hosts C and D.
func setupAgentCase(t *testing.T) *agentCase {
	testsupport.StandinOnly(t, "four nodes, two jobs and replayed usage set from Go")
	pdir := pluginDir(t)
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		t.Fatal(err)
	}
	c := &agentCase{s: s, token: "e2e-" + hex.EncodeToString(tok)}
	s.RequireToken(c.token, nomadstandin.TokenPolicy{Write: true})
	var nodes [4]string
	for i, n := range []struct{ name, pool string }{{"host-a", "first"}, {"host-b", "second"}, {"host-c", "first-api"}, {"host-d", "second-api"}} {
		if nodes[i], err = s.AddNode(nomadstandin.NodeSpec{Name: n.name, CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: n.pool}); err != nil {
			t.Fatal(err)
		}
	}
	c.rp = &replay{s: s, a: loadSeries(t, "series3"), b: loadSeries(t, "series9"), burst: 1, idx: 3000, frozen: true,
		groups: [2][][2]string{{{"web", "front"}, {"api", "g1"}}, {{"web", "back"}, {"api", "g2"}}}}
	start := startCounts(t, c.rp)
	for _, j := range []nomadstandin.JobSpec{
		{ID: "web", Groups: []nomadstandin.GroupSpec{
			{Name: "front", Count: start[0], CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodes[0]},
			{Name: "back", Count: start[1], CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodes[1]}}},
		{ID: "api", Groups: []nomadstandin.GroupSpec{
			{Name: "g1", Count: start[0], CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodes[2]},
			{Name: "g2", Count: start[1], CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: nodes[3]}}},
	} {
		if err := s.AddJob(j); err != nil {
			t.Fatal(err)
		}
	}
	// Web's registers as they arrive (only web's host-quota target
	// registers jobs): the state the previous writes left.
	c.regs = newRegisterLog(s, "web", [2]string{"front", "back"})
	c.rp.start(500 * time.Millisecond)
	t.Cleanup(c.rp.close)

	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := func(first, second string, window int) string {
		return fmt.Sprintf(`        first_node_name  = %q
        second_node_pool = %q
        window           = "%d"
        min_samples      = "%d"
`, first, second, window, window) + noSteps
	}
	files := map[string]string{
		"web.hcl": policyFile("web", "web-split", `        role         = "split"
        job          = "web"
        first_group  = "front"
        second_group = "back"
`+hosts("host-a", "second", 1), `"host-quota" {
      job          = "web"
      first_group  = "front"
      second_group = "back"
    }`),
		"api-first.hcl": policyFile("api-first", "api-first", `        role        = "first"
        job         = "api"
        first_group = "g1"
        second_group = "g2"
`+hosts("host-c", "second-api", 3), `"nomad-target" {
      Job   = "api"
      Group = "g1"
    }`),
		// The second host through the host-quota target's single-group
		// mode (check-and-set scale requests); its check names only its
		// own host.
		"api-second.hcl": policyFile("api-second", "api-second", `        role         = "second"
        job          = "api"
        second_group = "g2"
        second_node_pool = "second-api"
        window           = "3"
        min_samples      = "3"
`+noSteps, `"host-quota" {
      job   = "api"
      group = "g2"
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
`, pdir, s.URL(), c.token, pol)
	c.a = startAgent(t, dir, cfg)
	return c
}

// TestE2EAgent runs the real agent with both plugins against the stand-in,
// whose hosts replay real usage, phase by phase. In the frozen phases the
// expected observations are built from the replay and the stand-in's
// set-up, and the groups must sit at the engine's counts for them.
func TestE2EAgent(t *testing.T) {
	testsupport.StandinOnly(t, "real usage series replayed into its allocations phase by phase, the expected observations built from its set-up")
	autoscalerPath(t)
	c := setupAgentCase(t)
	var before, apiBefore, webBurst, apiBurst [2]int
	var burst float64
	phases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"every group scales at the engine's counts", func(t *testing.T) {
			eventually(t, 60*time.Second, "first scaling of every group", func() (bool, string) {
				for k, v := range c.parity(t) {
					if v == 0 {
						return false, "no checked scaling event yet for " + k
					}
				}
				return true, ""
			})
		}},
		{"the groups follow the moving series", func(t *testing.T) {
			m := c.mark(t)
			c.rp.set(false, 1)
			eventually(t, 30*time.Second, "three decisions per check on the moving series", func() (bool, string) {
				_, byCheck := c.a.requests(t)
				for _, ch := range agentChecks {
					if len(byCheck[ch.name]) < m[ch.name]+3 {
						return false, fmt.Sprintf("%s: %d decisions since the series started moving", ch.name, len(byCheck[ch.name])-m[ch.name])
					}
				}
				return true, ""
			})
			c.parity(t)
		}},
		{"frozen, they settle where the strategy asks (the engine's counts, capped at what Nomad can place)", func(t *testing.T) {
			c.rp.set(true, 1)
			c.settled(t, "settled on the real series", 30*time.Second, c.mark(t))
			before, apiBefore = c.jobCounts(t, "web"), c.jobCounts(t, "api")
			t.Logf("settled on the series: web front/back = %v, api g1/g2 = %v", before, apiBefore)
		}},
		{"a burst moves both jobs; a failed register changes neither of web's groups", func(t *testing.T) {
			burst = chooseBurst(t, c.rp, before, apiBefore)
			// A refusal (a 4xx: Nomad did not apply it); a 5xx other than
			// Nomad's own refusals leaves the outcome unknown (target_test).
			const faultMsg = "injected: register refused"
			c.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: jobPath("web"), Times: 1, Status: http.StatusBadRequest, Message: faultMsg})
			m := c.mark(t)
			snapsBefore := len(c.regs.list())
			c.rp.set(true, burst)
			var failure logEntry
			eventually(t, 30*time.Second, "the target's error for the failed register in the agent log", func() (bool, string) {
				for _, e := range c.a.entries(t) {
					if strings.Contains(fmt.Sprint(map[string]any(e)), faultMsg) {
						failure = e
						return true, ""
					}
				}
				return false, "not logged yet"
			})
			if txt := fmt.Sprint(map[string]any(failure)); !strings.Contains(txt, "neither group was changed") {
				t.Errorf("the logged error does not say neither group changed: %s", txt)
			}
			// The failed register found web at its settled state, and the
			// next register (the repair) found it there too: a failure
			// leaves the pair where the last decision put it.
			eventually(t, 30*time.Second, "the next evaluation registers web's split", func() (bool, string) {
				rs := c.regs.list()
				if len(rs) < snapsBefore+2 {
					return false, fmt.Sprintf("%d registers of web since the burst", len(rs)-snapsBefore)
				}
				for i, r := range rs[snapsBefore : snapsBefore+2] {
					if snap := r.found; snap != before {
						t.Fatalf("register %d after the burst found web at %v, want the settled %v", i+1, snap, before)
					}
				}
				return true, ""
			})
			c.settled(t, "settled after the burst", 45*time.Second, m)
			webBurst, apiBurst = c.jobCounts(t, "web"), c.jobCounts(t, "api")
			t.Logf("after the burst x%g: web front/back = %v, api g1/g2 = %v", burst, webBurst, apiBurst)
			if apiBurst[0] == apiBefore[0] || apiBurst[1] == apiBefore[1] {
				t.Errorf("the burst did not move both api groups: %v -> %v", apiBefore, apiBurst)
			}
			// Every register of web moved both groups from one decided
			// state to the next: check each event pair.
			checkWebEventsPaired(t, c.s)
		}},
		{"a deployment holds web while api moves", func(t *testing.T) {
			if err := c.s.SetDeploymentActive("", "web", true); err != nil {
				t.Fatal(err)
			}
			c.rp.set(true, 1)
			eventually(t, 40*time.Second, "api moves back while web is held", func() (bool, string) {
				if cur := c.jobCounts(t, "web"); cur != webBurst {
					t.Fatalf("web moved from %v to %v during a deployment", webBurst, cur)
				}
				cur := c.jobCounts(t, "api")
				return cur[0] != apiBurst[0] && cur[1] != apiBurst[1], fmt.Sprintf("api g1/g2 %v, in the burst %v", cur, apiBurst)
			})
			// While the target is not ready the agent does not evaluate
			// web at all; web moving once the deployment ends shows it had
			// been held.
			m := c.mark(t)
			if err := c.s.SetDeploymentActive("", "web", false); err != nil {
				t.Fatal(err)
			}
			eventually(t, 40*time.Second, "web moves after the deployment", func() (bool, string) {
				cur := c.jobCounts(t, "web")
				return cur[0] != webBurst[0] && cur[1] != webBurst[1], fmt.Sprintf("web front/back %v, in the burst %v", cur, webBurst)
			})
			c.settled(t, "settled after the deployment", 30*time.Second, m)
		}},
		{"5xx answers to the strategy's reads change nothing", func(t *testing.T) {
			held := [2][2]int{c.jobCounts(t, "web"), c.jobCounts(t, "api")}
			fromLog, fromReq := len(c.a.entries(t)), len(c.s.Requests())
			// A proxy that echoes the request's token in its error answer
			// (the first answers to node reads), then Nomad without a
			// leader.
			c.s.InjectFault(nomadstandin.Fault{Method: http.MethodGet, Path: "/v1/node*", Status: 503, Times: 3, Message: tokenEcho + c.token})
			for _, p := range []string{"/v1/node*", "/v1/client/*"} {
				c.s.InjectFault(nomadstandin.Fault{Method: http.MethodGet, Path: p, Status: 503, Message: "injected: no leader"})
			}
			c.rp.set(true, burst)
			eventually(t, 30*time.Second, "every check refuses to scale while Nomad answers 503", func() (bool, string) {
				return c.noScalingSince(t, fromLog, "503")
			})
			if n := c.writesSince(fromReq); n > 0 {
				t.Fatalf("%d scale writes reached Nomad while its reads answered 503", n)
			}
			if cur := [2][2]int{c.jobCounts(t, "web"), c.jobCounts(t, "api")}; cur != held {
				t.Fatalf("counts moved from %v to %v while Nomad answered 503", held, cur)
			}
			m := c.mark(t)
			c.s.ClearFaults()
			c.settled(t, "recovered after 5xx", 40*time.Second, m)
		}},
		{"the agent recovers after a stand-in restart", func(t *testing.T) {
			if err := c.s.Restart(3 * time.Second); err != nil {
				t.Fatal(err)
			}
			m := c.mark(t)
			c.rp.set(true, 1)
			c.settled(t, "recovered after a restart", 60*time.Second, m)
			t.Logf("after the restart: web front/back = %v, api g1/g2 = %v", c.jobCounts(t, "web"), c.jobCounts(t, "api"))
			select {
			case err := <-c.a.done:
				c.a.done <- err
				t.Fatalf("the agent exited: %v", err)
			default:
			}
		}},
		{"the ACL token worked and appears nowhere", func(t *testing.T) {
			forbidden := 0
			for _, r := range c.s.Requests() {
				if r.Status == http.StatusForbidden || !r.HadToken {
					forbidden++
				}
			}
			if forbidden > 0 {
				t.Errorf("%d requests came without the token or were refused", forbidden)
			}
			c.a.stop(t)
			logs := c.a.log(t)
			if strings.Contains(string(logs), c.token) {
				t.Errorf("the ACL token appears in the agent's log")
			}
			// The echoed token reached the plugins, redacted: the check
			// above could fail.
			echoed := false
			for _, e := range c.a.entries(t) {
				echoed = echoed || strings.Contains(fmt.Sprint(map[string]any(e)), tokenEcho+nomadconn.Redacted)
			}
			if !echoed {
				t.Errorf("the agent's log has no redacted echo of the token (%q): the stand-in's echo did not reach the plugins", tokenEcho+nomadconn.Redacted)
			}
			if !strings.Contains(string(logs), "decision request") {
				t.Errorf("the agent's log has no trace of the strategy's decisions")
			}
			for _, g := range agentGroups {
				gs, err := c.s.Group("", g.job, g.group)
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range gs.Events {
					if strings.Contains(fmt.Sprint(ev.Meta)+ev.Message, c.token) {
						t.Errorf("the token appears in a scaling event of %s/%s", g.job, g.group)
					}
				}
			}
		}},
	}
	for _, p := range phases {
		if !t.Run(p.name, p.run) {
			return
		}
	}
}

// tokenEcho starts an error answer that quotes the request's ACL token, as
// a proxy in front of Nomad may.
const tokenEcho = "injected: proxy refused X-Nomad-Token "

// chooseBurst picks a burst size from the engine's answers: web's first
// evaluation in the burst (window 1) must change both groups and their
// sum, api must end elsewhere in both groups, and both jobs must move
// again when the burst ends.
func chooseBurst(t *testing.T, rp *replay, before, apiBefore [2]int) float64 {
	t.Helper()
	var tried []string
	for _, b := range []float64{3, 2, 4, 1.5, 6, 8, 0.5, 0.25} {
		vb := [2]float64{rp.valueAt(0, b), rp.valueAt(1, b)}
		d := asked(t, expectedRequest(vb, before, [2][]int64{{1_700_000_000}, {1_700_000_000}}))
		wb, okW := fixedPoint(t, vb, before, 1)
		ab, okA := fixedPoint(t, vb, apiBefore, 3)
		vBack := [2]float64{rp.valueAt(0, 1), rp.valueAt(1, 1)}
		wBack, okWB := fixedPoint(t, vBack, wb, 1)
		aBack, okAB := fixedPoint(t, vBack, ab, 3)
		tried = append(tried, fmt.Sprintf("x%g: web first %v, web %v -> %v -> %v, api %v -> %v -> %v", b, d, before, wb, wBack, apiBefore, ab, aBack))
		if okW && okA && okWB && okAB && d[0] != before[0] && d[1] != before[1] && d[0]+d[1] != before[0]+before[1] && d[0]+d[1] <= 100 &&
			ab[0] != apiBefore[0] && ab[1] != apiBefore[1] && aBack[0] != ab[0] && aBack[1] != ab[1] && wBack[0] != wb[0] && wBack[1] != wb[1] {
			t.Logf("burst x%g: %s", b, tried[len(tried)-1])
			return b
		}
	}
	t.Fatalf("no burst size moves both groups of both jobs (and back) for the engine; tried:\n%s", strings.Join(tried, "\n"))
	return 0
}

// checkWebEventsPaired: the host-quota target records one event per group
// it changed in a register, with the index it registered at: each such
// event's new count is the split's count for its group (both groups were
// set in that one register).
func checkWebEventsPaired(t *testing.T, s *nomadstandin.Server) {
	t.Helper()
	registers := map[int]bool{}
	for _, g := range []string{"front", "back"} {
		gs, err := s.Group("", "web", g)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range gs.Events {
			idx, ok := metaNum(ev.Meta, nomadplugin.MetaRegisteredIndex)
			if !ok {
				continue
			}
			registers[idx] = true
			next, _ := metaNum(ev.Meta, nomadplugin.MetaNewCount)
			f, _ := metaNum(ev.Meta, nomadplugin.MetaFirstCount)
			sc, _ := metaNum(ev.Meta, nomadplugin.MetaSecondCount)
			if want := map[string]int{"front": f, "back": sc}[g]; next != want {
				t.Errorf("web/%s event at index %d: new count %d, the split asked %d", g, idx, next, want)
			}
		}
	}
	if len(registers) == 0 {
		t.Fatalf("web has no registered split among its events: the check proves nothing")
	}
}

// TestE2EGoldenDryRun: through the real agent, the strategy decides a golden
// vector's counts, and the host-quota target in dry_run records them as
// scaling events with a null count. The stand-in serves the vector's
// observations: once per evaluation (at the strategy's one listing of the
// job's allocations, before any stats read) both hosts advance to the
// vector's next sample.
func TestE2EGoldenDryRun(t *testing.T) {
	testsupport.StandinOnly(t, "a golden vector's observations served as usage, advanced at each evaluation")
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
		// default models and quotas apply, nothing is queued, warming or
		// reserved by others, and the window is short.
		defaultModels := (r.FirstModel == "" || r.FirstModel == engine.DefaultFirstModel) && (r.SecondModel == "" || r.SecondModel == engine.DefaultSecondModel)
		plain := func(o *engine.Observation) bool {
			return o.RunningReplicas == 2 && o.WantedReplicas == 0 && o.QueuedReplicas == nil && o.WarmingReplicas == 0 && o.OtherReservedCPUMHz == 0 && o.OtherReservedMemoryMB == 0
		}
		if defaultModels && len(r.First.Samples) <= 16 && len(r.First.Samples) >= engine.DefaultMinSamples && plain(&r.First) && plain(&r.Second) &&
			r.FirstQuota == nil && r.SecondQuota == nil && len(r.Second.Samples) == len(r.First.Samples) {
			v = &vs[i]
			break
		}
	}
	if v == nil {
		t.Fatal("no golden vector the stand-in can serve exactly (default models and quotas, short window, 2 replicas per host, nothing queued or warming)")
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
		if method == http.MethodGet && path == "/v1/job/web/allocations" {
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
	// Evaluations 2 s apart: a sample's time is whole seconds, and two
	// evaluations within one second (a 1 s interval after a slow one) gave
	// one sample, so the window lost the vector's order.
	body := policyFileWith("golden", "golden", fmt.Sprintf(`        role             = "split"
        job              = "web"
        first_node_name  = "host-1"
        first_group      = "front"
        second_node_name = "host-2"
        second_group     = "back"
        window           = "%d"
`, n)+noLimits, `"host-quota" {
      job          = "web"
      first_group  = "front"
      second_group = "back"
      dry_run      = "true"
    }`, "200ms", "2s")
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
	eventually(t, 4*time.Duration(n+4)*time.Second, "a dry-run event for the golden window", func() (bool, string) {
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
