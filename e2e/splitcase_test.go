package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
)

// registerLog records every register of one job as it reaches the
// stand-in (its hook runs before the stand-in answers): when it arrived and
// the counts of the job's two groups it found. on, if set, runs at the
// next request it matches, once.
type registerLog struct {
	s      *nomadstandin.Server
	job    string
	groups [2]string

	mu        sync.Mutex
	registers []register
	on        *trigger
}

type register struct {
	at    time.Time
	found [2]int
}

// trigger runs f once, at the first request match accepts.
type trigger struct {
	match func(method, path string) bool
	f     func()
}

// jobPath is a job's path: GET reads it, PUT registers it (the host-quota
// target's register).
func jobPath(job string) string { return "/v1/job/" + job }

func newRegisterLog(s *nomadstandin.Server, job string, groups [2]string) *registerLog {
	l := &registerLog{s: s, job: job, groups: groups}
	s.SetHook(l.hook)
	return l
}

func (l *registerLog) hook(method, path string) {
	l.mu.Lock()
	on := l.on
	if on != nil && on.match(method, path) {
		l.on = nil
	} else {
		on = nil
	}
	l.mu.Unlock()
	if method == http.MethodPut && path == jobPath(l.job) {
		// Not t.Fatal: this runs on the stand-in's handler goroutine; a
		// failed read leaves -1, which no assertion accepts.
		found := [2]int{-1, -1}
		for h, g := range l.groups {
			if gs, err := l.s.Group("", l.job, g); err == nil {
				found[h] = gs.Count
			}
		}
		l.mu.Lock()
		l.registers = append(l.registers, register{at: time.Now(), found: found})
		l.mu.Unlock()
	}
	if on != nil {
		on.f()
	}
}

// onNext runs f at the next request match accepts.
func (l *registerLog) onNext(match func(method, path string) bool, f func()) {
	l.mu.Lock()
	l.on = &trigger{match: match, f: f}
	l.mu.Unlock()
}

func (l *registerLog) list() []register {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.registers)
}

// splitCase is a stand-in with hosts host-a (pool first) and host-b (pool
// second) and job web (front on host-a, back on host-b), the real agent
// with one split policy through the host-quota target, and a log of web's
// registers.
type splitCase struct {
	s            *nomadstandin.Server
	a            *agent
	nodeA, nodeB string
	regs         *registerLog
}

// splitSetup says what a splitCase runs.
type splitSetup struct {
	start  [2]int
	reqCPU int // MHz each replica of web requests (and 128 MB)
	update *nomadstandin.UpdateSpec
	// others is how many replicas of 2000 MHz another job runs on host-a;
	// side how many web runs there in a third group.
	others, side int
	usage        float64 // MHz each allocation uses
	policy       string  // the check's keys beside its hosts and window
	target       string  // the host-quota plugin block's config lines
	strategy     string  // the activation-quota plugin block's config lines
	cooldown     string
	// ghost adds a second policy, alike but for a job Nomad does not know
	// (ghostJob), to the same plugins.
	ghost bool
	// trace runs the agent at TRACE, where the strategy logs each engine
	// request (agent.requests); DEBUG otherwise.
	trace bool
}

// ghostJob is the job of splitSetup.ghost's policy.
const ghostJob = "ghost"

func startSplitCase(t *testing.T, ss splitSetup) *splitCase {
	t.Helper()
	testsupport.StandinOnly(t, "two nodes, a job, reservations and usage set from Go")
	pdir := pluginDir(t)
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c := &splitCase{s: s}
	if c.nodeA, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "first"}); err != nil {
		t.Fatal(err)
	}
	if c.nodeB, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-b", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "second"}); err != nil {
		t.Fatal(err)
	}
	if ss.others > 0 {
		if err := s.AddOtherJob(nomadstandin.OtherJobSpec{ID: "tenant", NodeID: c.nodeA, Count: ss.others, CPUMHz: 2000, MemoryMB: 512}); err != nil {
			t.Fatal(err)
		}
	}
	groups := []nomadstandin.GroupSpec{
		{Name: "front", Count: ss.start[0], CPUMHz: ss.reqCPU, MemoryMB: 128, NodeID: c.nodeA, Update: ss.update},
		{Name: "back", Count: ss.start[1], CPUMHz: ss.reqCPU, MemoryMB: 128, NodeID: c.nodeB, Update: ss.update},
	}
	if ss.side > 0 {
		groups = append(groups, nomadstandin.GroupSpec{Name: "side", Count: ss.side, CPUMHz: 2000, MemoryMB: 512, NodeID: c.nodeA})
	}
	if err := s.AddJob(nomadstandin.JobSpec{ID: "web", Groups: groups}); err != nil {
		t.Fatal(err)
	}
	c.setUsage(t, ss.usage, ss.usage)
	c.regs = newRegisterLog(s, "web", [2]string{"front", "back"})
	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	jobs := []string{"web"}
	if ss.ghost {
		jobs = append(jobs, ghostJob)
	}
	for _, job := range jobs {
		body := policyFileWith(job, job, `        role             = "split"
        job              = "`+job+`"
        first_node_name  = "host-a"
        first_group      = "front"
        second_node_pool = "second"
        second_group     = "back"
        window           = "1"
        min_samples      = "1"
`+ss.policy, `"host-quota" {
      job          = "`+job+`"
      first_group  = "front"
      second_group = "back"
    }`, ss.cooldown, "1s")
		if err := os.WriteFile(filepath.Join(pol, job+".hcl"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	level := "DEBUG"
	if ss.trace {
		level = "TRACE"
	}
	cfg := agentConfig(level, pdir, s.URL(), pol)
	cfg = withPluginConfig(t, cfg, "target", "host-quota", ss.target)
	cfg = withPluginConfig(t, cfg, "strategy", "activation-quota", ss.strategy)
	c.a = startAgent(t, dir, cfg)
	return c
}

// withPluginConfig gives the plugin block kind "name" of an agent config
// these config lines ("" leaves it as it is).
func withPluginConfig(t testing.TB, cfg, kind, name, lines string) string {
	t.Helper()
	if lines == "" {
		return cfg
	}
	block := fmt.Sprintf("%s %q { driver = %q }", kind, name, name)
	if !strings.Contains(cfg, block) {
		t.Fatalf("the agent config has no %s to give config lines to:\n%s", block, cfg)
	}
	return strings.Replace(cfg, block, fmt.Sprintf("%s %q {\n  driver = %q\n  config = {\n%s\n  }\n}", kind, name, name, lines), 1)
}

func (c *splitCase) setUsage(t testing.TB, front, back float64) {
	t.Helper()
	for g, v := range map[string]float64{"front": front, "back": back} {
		if err := c.s.SetGroupUsage("", "web", g, v, 64); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *splitCase) group(t testing.TB, g string) nomadstandin.GroupStatus {
	t.Helper()
	gs, err := c.s.Group("", "web", g)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

func (c *splitCase) counts(t testing.TB) [2]int {
	return [2]int{c.group(t, "front").Count, c.group(t, "back").Count}
}

// logged returns the agent's log entries after from whose message is msg
// (any when "") and whose text contains what.
func (c *splitCase) logged(t testing.TB, from int, msg, what string) []logEntry {
	var out []logEntry
	for _, e := range c.a.entries(t)[from:] {
		if (msg == "" || e.str("@message") == msg) && strings.Contains(fmt.Sprint(map[string]any(e)), what) {
			out = append(out, e)
		}
	}
	return out
}

// registeredMoves are the moves web's scaling events say the target
// registered, by the index they were registered at, oldest first: each
// group's count before and after (a group the register did not change
// has no event; its entries are -1).
func (c *splitCase) registeredMoves(t testing.TB) (prev, next [][2]int) {
	type move struct{ prev, next [2]int }
	byIndex := map[int]*move{}
	var order []int
	for h, g := range []string{"front", "back"} {
		for _, ev := range c.group(t, g).Events {
			idx, ok := metaNum(ev.Meta, nomadplugin.MetaRegisteredIndex)
			if !ok {
				continue
			}
			m := byIndex[idx]
			if m == nil {
				m = &move{prev: [2]int{-1, -1}, next: [2]int{-1, -1}}
				byIndex[idx] = m
				order = append(order, idx)
			}
			m.prev[h], _ = metaNum(ev.Meta, nomadplugin.MetaPreviousCount)
			m.next[h], _ = metaNum(ev.Meta, nomadplugin.MetaNewCount)
		}
	}
	slices.Sort(order)
	for _, idx := range order {
		prev, next = append(prev, byIndex[idx].prev), append(next, byIndex[idx].next)
	}
	return prev, next
}

// threeDecisions waits up to 40 s for the strategy's first three decided
// lines of the case's first check, and returns every one logged by then.
func (c *splitCase) threeDecisions(t *testing.T) []logEntry {
	t.Helper()
	var entries []logEntry
	eventually(t, 40*time.Second, "three decisions", func() (bool, string) {
		entries = c.logged(t, 0, "decided", "")
		return len(entries) >= 3, fmt.Sprintf("%d decisions so far", len(entries))
	})
	return entries
}

// loggedRequests are the decision requests the strategy logged, by
// digest; none fails the test.
func (c *splitCase) loggedRequests(t *testing.T) map[string]*engine.Request {
	t.Helper()
	reqs, _ := c.a.requests(t)
	if len(reqs) == 0 {
		t.Fatal("the strategy logged no decision request")
	}
	return reqs
}
