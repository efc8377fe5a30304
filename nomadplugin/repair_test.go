package nomadplugin

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/sdk"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// agentEval is one policy evaluation as the agent does it: target status,
// strategy run, clamp to the policy's [min, max], skip when the count does
// not change, meta through JSON as over gRPC, target scale. between, if
// set, runs after the strategy and before the target.
func agentEval(t *testing.T, st *Strategy, tg *Target, cfg map[string]string, lo, hi int64, between func()) (*sdk.ScalingAction, error) {
	t.Helper()
	return agentEvalWith(t, st, tg, tcfg, cfg, lo, hi, between)
}

// agentEvalWith is agentEval with the target's config.
func agentEvalWith(t *testing.T, st *Strategy, tg *Target, target, cfg map[string]string, lo, hi int64, between func()) (*sdk.ScalingAction, error) {
	t.Helper()
	status, err := tg.Status(target)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	ev, err := st.Run(newEval("repair", cfg), status.Count)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	a := *ev.Action
	if a.Direction == sdk.ScaleDirectionNone {
		return &a, nil
	}
	a.Canonicalize()
	a.CapCount(lo, hi)
	if a.Count == status.Count {
		return &a, nil
	}
	b, err := json.Marshal(a.Meta)
	if err != nil {
		t.Fatal(err)
	}
	a.Meta = nil
	if err := json.Unmarshal(b, &a.Meta); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		between()
	}
	return &a, tg.Scale(a, target)
}

// splitConfig is a split check on the world's two hosts that decides from
// its first reading, with no limit between the engine's counts and the
// action.
func splitConfig() map[string]string {
	return map[string]string{
		KeyRole: RoleSplit, KeyJob: wJob, KeyWindow: "5", KeyMinSamples: "1", KeyWarmup: "0",
		KeyMaxScaleUp: StepNone, KeyMaxScaleDown: StepNone, KeyHysteresis: StepNone, KeyPlacement: PlacementReport,
		PrefixFirst + KeyNodeName: "host-a", PrefixFirst + KeyGroup: wFirst,
		PrefixSecond + KeyNodeName: "host-b", PrefixSecond + KeyGroup: wSecond,
	}
}

// TestConcurrentChangeNotOverwritten: a person changes the job between the
// strategy's read and the target's write. The target does not overwrite
// it and says so; the next evaluation decides again on the person's state.
func TestConcurrentChangeNotOverwritten(t *testing.T) {
	w := newWorld(t, 2, 2)
	if err := w.s.SetGroupUsage("", wJob, wFirst, 600, 200); err != nil {
		t.Fatal(err)
	}
	if err := w.s.SetGroupUsage("", wJob, wSecond, 500, 200); err != nil {
		t.Fatal(err)
	}
	st := NewStrategy(hclog.NewNullLogger())
	if err := st.SetConfig(w.agentConfig); err != nil {
		t.Fatal(err)
	}
	tg := w.target(t)
	person := [2]int{5, 1}
	a, err := agentEval(t, st, tg, splitConfig(), 0, 100, func() {
		if err := w.s.SetGroupCount("", wJob, wFirst, person[0]); err != nil {
			t.Error(err)
		}
		if err := w.s.SetGroupCount("", wJob, wSecond, person[1]); err != nil {
			t.Error(err)
		}
	})
	if a.Direction == sdk.ScaleDirectionNone {
		t.Fatalf("the premise fails: the first evaluation does not scale (%s)", a.Reason)
	}
	if !errors.Is(err, ErrJobChanged) {
		t.Fatalf("err = %v, want ErrJobChanged", err)
	}
	if got := w.counts(t); got != person {
		t.Fatalf("counts %v after the conflict, want the person's %v", got, person)
	}
	// The next evaluation reads the person's state and decides on it.
	a, err = agentEval(t, st, tg, splitConfig(), 0, 100, nil)
	if err != nil {
		t.Fatalf("the next evaluation: %v", err)
	}
	if a.Direction == sdk.ScaleDirectionNone {
		t.Fatalf("the premise fails: the next evaluation keeps the person's %v (%s)", person, a.Reason)
	}
	cur := [2]int64{}
	for h, role := range []string{RoleFirst, RoleSecond} {
		cur[h], _, _ = metaInt(a.Meta, HostMeta(role, MetaCurrent))
	}
	if cur != [2]int64{int64(person[0]), int64(person[1])} {
		t.Errorf("the next evaluation started from %v, not the person's %v", cur, person)
	}
	f, _, _ := metaInt(a.Meta, MetaFirstCount)
	sc, _, _ := metaInt(a.Meta, MetaSecondCount)
	if got := w.counts(t); got != [2]int{int(f), int(sc)} {
		t.Errorf("after the next evaluation the groups are %v, its decision %d + %d", got, f, sc)
	}
}

// TestQueuedAtStartIsRepaired (issue B1): a group whose count Nomad cannot
// place in full (queued allocations) at an unchanged split sum is brought
// to what Nomad can place: the target reports the desired counts, so the
// strategy's cap is a change the agent acts on. Both modes: split, and a
// per-host check through the single-group target.
func TestQueuedAtStartIsRepaired(t *testing.T) {
	testsupport.StandinOnly(t, "allocations queued by the stand-in's placement, usage set from Go")
	for _, tc := range []struct {
		name     string
		target   map[string]string
		check    map[string]string
		wantSum  int64
		wantBack int
	}{
		// The second group is at its max, 2: the sum the strategy asks,
		// 10 + 2, is the running sum.
		{"split", tcfg, withKeys(splitConfig(), KeyPlacement, PlacementCap, PrefixSecond+KeyMax, "2"), 12, 2},
		{"per host, single-group target", gcfg, withKeys(splitConfig(), KeyRole, RoleFirst, KeyPlacement, PlacementCap), 10, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, st, tg := queuedAtStart(t, 12)
			a, err := agentEvalWith(t, st, tg, tc.target, tc.check, 0, 100, nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.Count != tc.wantSum || a.Direction != sdk.ScaleDirectionDown {
				t.Fatalf("action %s to %d, want down to %d (Nomad places 10 front replicas): %s", a.Direction, a.Count, tc.wantSum, a.Reason)
			}
			if got, gs := w.counts(t), w.group(t, wFirst); got != [2]int{10, tc.wantBack} || gs.Queued != 0 {
				t.Errorf("groups %v with %d of front queued, want [10 %d] and none queued", got, gs.Queued, tc.wantBack)
			}
		})
	}
}

// TestTokenNeverLogged: with ACLs on and the plugins logging at trace level,
// the token reaches Nomad and appears in no log line, reason, error or
// scaling event.
func TestTokenNeverLogged(t *testing.T) {
	w := newWorld(t, 1, 1)
	const token = "tok-0123456789abcdef"
	w.s.RequireToken(token, nomadstandin.TokenPolicy{Write: true})
	var buf strings.Builder
	var mu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})})
	st := NewStrategy(logger)
	tg := NewTarget(logger)
	cfg := map[string]string{AgentKeyNomadAddress: w.s.URL(), AgentKeyNomadToken: token}
	if err := st.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if err := tg.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if err := w.s.SetGroupUsage("", wJob, wFirst, 600, 200); err != nil {
		t.Fatal(err)
	}
	if err := w.s.SetGroupUsage("", wJob, wSecond, 500, 200); err != nil {
		t.Fatal(err)
	}
	a, err := agentEval(t, st, tg, splitConfig(), 0, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A refused token: the errors and reasons do not show it either.
	bad := map[string]string{AgentKeyNomadAddress: w.s.URL(), AgentKeyNomadToken: "wrong-" + token}
	st2, tg2 := NewStrategy(logger), NewTarget(logger)
	if err := st2.SetConfig(bad); err != nil {
		t.Fatal(err)
	}
	if err := tg2.SetConfig(bad); err != nil {
		t.Fatal(err)
	}
	ev, err := st2.Run(newEval("bad-token", splitConfig()), 2)
	if err != nil {
		t.Fatal(err)
	}
	_, statusErr := tg2.Status(tcfg)
	if statusErr == nil || !strings.Contains(statusErr.Error(), "403") {
		t.Errorf("status with a wrong token: %v, want a 403", statusErr)
	}
	if !strings.Contains(ev.Action.Reason, "Permission denied") {
		t.Errorf("reason with a wrong token: %q", ev.Action.Reason)
	}
	// Nomad answers 500 with the token in the body (a proxy echoing the
	// request, say): neither the strategy's reason nor the target's errors
	// carry it.
	w.s.InjectFault(nomadstandin.Fault{Status: 500, Message: "upstream failed for X-Nomad-Token: " + token})
	ev500, err := st.Run(newEval("echo", splitConfig()), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ev500.Action.Reason, "no scaling: ") || !strings.Contains(ev500.Action.Reason, "upstream failed") {
		t.Errorf("reason for a 500: %q, want a no-scaling reason quoting Nomad's error", ev500.Action.Reason)
	}
	_, status500 := tg.Status(tcfg)
	scale500 := tg.Scale(sdk.ScalingAction{Count: 3, Meta: quotaMeta(2, 1, 0, 10, 0, 10)}, tcfg)
	if status500 == nil || scale500 == nil || !strings.Contains(status500.Error()+scale500.Error(), "upstream failed") {
		t.Errorf("status and scale under a 500: %v; %v; want errors quoting Nomad's answer", status500, scale500)
	}
	w.s.ClearFaults()
	// A reason and meta carrying the token (a strategy that did not
	// redact) never reach Nomad's scaling events.
	leaky := sdk.ScalingAction{Count: 5, Reason: "reason " + token, Meta: withMeta(quotaMeta(3, 2, 0, 10, 0, 10), "note", "meta "+token,
		"nested", map[string]any{"list": []any{"in a list " + token, 1.0}, "key " + token: "in a map " + token})}
	if err := tg.Scale(leaky, tcfg); err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, g := range []string{wFirst, wSecond} {
		gs, err := w.s.Group("", wJob, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range gs.Events {
			events++
			if strings.Contains(e.Message+fmt.Sprint(e.Meta), token) {
				t.Errorf("the token appears in a scaling event of %s: %q %v", g, e.Message, e.Meta)
			}
		}
	}
	if events == 0 {
		t.Fatalf("no scaling events were written: the event check proves nothing")
	}

	mu.Lock()
	logs := buf.String()
	mu.Unlock()
	if !strings.Contains(logs, "decision request") {
		t.Fatalf("no trace logs were written: the check proves nothing")
	}
	for what, text := range map[string]string{"logs": logs, "reason": a.Reason + ev.Action.Reason + ev500.Action.Reason,
		"error": fmt.Sprint(statusErr) + fmt.Sprint(status500) + fmt.Sprint(scale500)} {
		if strings.Contains(text, token) {
			t.Errorf("the token appears in the %s", what)
		}
	}
	for _, r := range w.s.Requests() {
		if r.Status == http.StatusForbidden && r.HadToken {
			continue // the wrong token's requests
		}
		if !r.HadToken {
			t.Errorf("request %s %s came without a token", r.Method, r.Path)
		}
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestStaleNomadStats: usage = "nomad" takes the sample time from Nomad's
// stats Timestamp; stats older than max_age scale nothing, and the reason
// says why.
func TestStaleNomadStats(t *testing.T) {
	w := newWorld(t, 2, 2)
	st := NewStrategy(hclog.NewNullLogger())
	if err := st.SetConfig(w.agentConfig); err != nil {
		t.Fatal(err)
	}
	cfg := withKeys(splitConfig(), KeyMaxAge, "5m")
	for _, tc := range []struct {
		name  string
		age   time.Duration
		stale bool
	}{
		{"a minute old", time.Minute, false},
		{"fresh", 0, false},
		{"older than max_age", 10 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.s.SetStatsAge(tc.age)
			ev, err := st.Run(newEval("stale-"+tc.name, cfg), 4)
			if err != nil {
				t.Fatal(err)
			}
			r := ev.Action.Reason
			isStale := strings.HasPrefix(r, "no scaling: ") && strings.Contains(r, "usage is stale") && strings.Contains(r, KeyMaxAge)
			if isStale != tc.stale {
				t.Errorf("stats %s old, max_age 5m: reason %q (stale: %v, want %v)", tc.age, r, isStale, tc.stale)
			}
			if !tc.stale && strings.HasPrefix(r, "no scaling: ") {
				t.Errorf("stats %s old: %q", tc.age, r)
			}
			if tc.stale && ev.Action.Direction != sdk.ScaleDirectionNone {
				t.Errorf("stale usage scaled %s", ev.Action.Direction)
			}
		})
	}
}

// TestColdStartNeverMaximum (issue 9): replicas with no CPU ticks yet, a
// one-sample window and a group that just started never raise a count to
// its maximum.
func TestColdStartNeverMaximum(t *testing.T) {
	testsupport.StandinOnly(t, "allocations without CPU ticks yet, fixed usage")
	for _, tc := range []struct {
		name string
		cfg  []string
		prep func(t *testing.T, w *world)
		// fresh: the strategy's clock is the stand-in's (every allocation
		// just started); otherwise an hour later.
		fresh bool
	}{
		{name: "allocations with no CPU ticks", cfg: []string{KeyWarmup, "2m"}, prep: func(t *testing.T, w *world) {
			for _, g := range []string{wFirst, wSecond} {
				if err := w.s.SetGroupUsage("", wJob, g, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "a group that just started", cfg: []string{KeyWarmup, "2m"}, fresh: true, prep: func(t *testing.T, w *world) {
			for _, g := range []string{wFirst, wSecond} {
				if err := w.s.SetGroupUsage("", wJob, g, 5, 10); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{name: "a one-sample window", cfg: []string{KeyMinSamples, "3"}, prep: func(t *testing.T, w *world) {
			for _, g := range []string{wFirst, wSecond} {
				if err := w.s.SetGroupUsage("", wJob, g, 1, 10); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 3, 3)
			tc.prep(t, w)
			now := time.Now
			if !tc.fresh {
				now = func() time.Time { return time.Now().Add(time.Hour) }
			}
			st := newStrategy(hclog.NewNullLogger(), withClock(now))
			if err := st.SetConfig(w.agentConfig); err != nil {
				t.Fatal(err)
			}
			cfg := withKeys(splitConfig(), append([]string{KeyMaxAge, "2h"}, tc.cfg...)...)
			ev, err := st.Run(newEval("cold", cfg), 6)
			if err != nil {
				t.Fatal(err)
			}
			a := ev.Action
			if tc.name != "a one-sample window" && strings.HasPrefix(a.Reason, "no scaling") {
				t.Fatalf("no decision, so nothing to check: %s", a.Reason)
			}
			for _, h := range []struct{ decided, max string }{{MetaFirstDecided, MetaFirstMax}, {MetaSecondDecided, MetaSecondMax}} {
				d, okD, _ := metaInt(a.Meta, h.decided)
				m, okM, _ := metaInt(a.Meta, h.max)
				if tc.name != "a one-sample window" && (!okD || !okM) {
					t.Fatalf("the action carries no %s / %s", h.decided, h.max)
				}
				if okD && okM && d >= m {
					t.Errorf("%s = %d reaches the maximum %d: %s", h.decided, d, m, a.Reason)
				}
			}
			if a.Count >= 2*110 {
				t.Errorf("count %d: %s", a.Count, a.Reason)
			}
			if tc.name == "a one-sample window" && (a.Direction != sdk.ScaleDirectionNone || !strings.Contains(a.Reason, "keeping the current count")) {
				t.Errorf("one sample: %s %d %q, want no scaling, keeping the count", a.Direction, a.Count, a.Reason)
			}
		})
	}
}

// TestQueuedRepairedWithDefaultHysteresis: a count Nomad cannot place in
// full is brought down to what it can with the documented defaults too.
// The default 10% hysteresis held the one queued replica of 11 (its band
// at 11 is 2 replicas) for good; TestQueuedAtStartIsRepaired turns
// hysteresis off.
func TestQueuedRepairedWithDefaultHysteresis(t *testing.T) {
	w, st, tg := queuedAtStart(t, 11)
	// The steps, hysteresis and placement at their defaults.
	check := withKeys(splitConfig(), KeyMaxScaleUp, "", KeyMaxScaleDown, "", KeyHysteresis, "", KeyPlacement, "", PrefixSecond+KeyMax, "2")
	var reasons []string
	for i := 0; i < 3; i++ {
		a, err := agentEvalWith(t, st, tg, tcfg, check, 0, 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		reasons = append(reasons, a.Reason)
	}
	if gs := w.group(t, wFirst); gs.Queued != 0 || gs.Count != 10 {
		t.Errorf("front: count %d, %d running, %d queued after 3 evaluations; want 10, none queued: %q", gs.Count, gs.Running, gs.Queued, reasons)
	}
	if !strings.Contains(reasons[0], "the 1 of the current 11 that Nomad cannot place go at once; the hold band, step limits and hysteresis apply from 10") {
		t.Errorf("first reason %q does not say why the band did not hold", reasons[0])
	}
}

// TestSplitOnOneNodeNeverOvercommits: a split whose two hosts are one node
// (a one-node cluster) asks for no more than the node places: the first
// host's new replicas count as reserved for the second. Each host was
// capped against the same free room (8 + 8 asked for where 10 fit).
func TestSplitOnOneNodeNeverOvercommits(t *testing.T) {
	s := oneNodeSplit(t)
	agent := map[string]string{AgentKeyNomadAddress: s.URL()}
	st := NewStrategy(hclog.NewNullLogger())
	must(t, st.SetConfig(agent))
	check := withKeys(splitConfig(), PrefixSecond+KeyNodeName, "host-a", KeyPlacement, PlacementCap)
	a, err := agentEvalWith(t, st, targetAt(t, agent), tcfg, check, 0, 100, nil)
	must(t, err)
	f, _ := s.Group("", wJob, wFirst)
	b, _ := s.Group("", wJob, wSecond)
	if f.Queued+b.Queued > 0 || f.Count+b.Count != 10 {
		t.Errorf("front %d (%d queued), back %d (%d queued) on a node that places 10: %s", f.Count, f.Queued, b.Count, b.Queued, a.Reason)
	}
	if !strings.Contains(a.Reason, "the first host's 6 new replicas on the same node host-a count as reserved") {
		t.Errorf("the reason does not say the first host's replicas were counted: %s", a.Reason)
	}
}

// TestNoJobRefusesANodeOfSeveralGroups: without `job`, every running
// allocation on the node is a replica of the scaled group; on a node that
// also runs another job's allocations the count would ask the group for
// their room (3 queued of 10), so nothing scales and the reason says
// why. On a node the group has to itself it still decides.
func TestNoJobRefusesANodeOfSeveralGroups(t *testing.T) {
	eval := func(other bool) (*sdk.ScalingAction, nomadstandin.GroupStatus, nomadstandin.GroupStatus) {
		others := 0
		if other {
			others = 3
		}
		return evalWithoutJob(t, 2, others)
	}
	if a, _, after := eval(false); a.Direction != sdk.ScaleDirectionUp || after.Queued > 0 {
		t.Fatalf("the group alone on its node: %s %d (%d queued): %s", a.Direction, a.Count, after.Queued, a.Reason)
	}
	a, before, after := eval(true)
	if a.Direction != sdk.ScaleDirectionNone || after.Count != before.Count || after.Queued > 0 {
		t.Errorf("beside another job: %s %d (count %d -> %d, %d queued): %s", a.Direction, a.Count, before.Count, after.Count, after.Queued, a.Reason)
	}
	if !strings.Contains(a.Reason, "without job, every running allocation on node host-a counts as a replica of the scaled group, but it runs 5 allocations of 2 groups (default/logs/") || !strings.Contains(a.Reason, "set job and first_group") {
		t.Errorf("reason %q", a.Reason)
	}
}

// TestNoJobRefusesOneOtherGroup: a node that runs one other group's
// allocations and none of the scaled group's (its count 0) passed the
// several-groups check; more running allocations than the group's count
// tell the others apart.
func TestNoJobRefusesOneOtherGroup(t *testing.T) {
	a, _, after := evalWithoutJob(t, 0, 3)
	if a.Direction != sdk.ScaleDirectionNone || after.Count != 0 || !strings.Contains(a.Reason, "runs 3 allocations of 1 groups (default/logs/other) for a group count of 0") {
		t.Errorf("%s %d: count %d, %d queued: %s", a.Direction, a.Count, after.Count, after.Queued, a.Reason)
	}
}

// TestSplitOnOneNodeCountsEachReplicaOnce: on one node, replicas an earlier
// evaluation added that are placed but still pending are in the node's
// listing (or the claims) already; counting them again as the first
// host's new ones scaled the second host down at every evaluation.
func TestSplitOnOneNodeCountsEachReplicaOnce(t *testing.T) {
	s := oneNodeSplit(t)
	initial := map[string]bool{}
	for _, g := range []string{wFirst, wSecond} {
		for _, id := range s.AllocIDs("", wJob, g) {
			initial[id] = true
		}
	}
	p := newProxy(t, s.URL())
	agent := map[string]string{AgentKeyNomadAddress: p.srv.URL}
	st := NewStrategy(hclog.NewNullLogger())
	must(t, st.SetConfig(agent))
	tg := targetAt(t, map[string]string{AgentKeyNomadAddress: s.URL()})
	check := withKeys(splitConfig(), PrefixSecond+KeyNodeName, "host-a", KeyPlacement, PlacementCap, PrefixFirst+KeyMax, "4")
	var counts [][2]int
	for i := 0; i < 3; i++ {
		if i == 1 { // from now on every replica placed since the start is pending
			p.rewrite(func(_, path string, body []byte) []byte {
				if !strings.HasSuffix(path, "/allocations") {
					return body
				}
				var list []map[string]any
				if json.Unmarshal(body, &list) != nil {
					return body
				}
				for _, a := range list {
					if id, _ := a["ID"].(string); !initial[id] {
						a["ClientStatus"] = "pending"
					}
				}
				return marshalAsNomad(t, list)
			})
		}
		_, err := agentEvalWith(t, st, tg, tcfg, check, 0, 100, nil)
		must(t, err)
		f, _ := s.Group("", wJob, wFirst)
		b, _ := s.Group("", wJob, wSecond)
		counts = append(counts, [2]int{f.Count, b.Count})
	}
	for i, c := range counts {
		if c != [2]int{4, 6} {
			t.Errorf("evaluation %d: front %d, back %d; want 4 + 6, the node's 10, every time (all: %v)", i, c[0], c[1], counts)
			break
		}
	}
}

// oneNodeSplit is a stand-in whose one 20000 MHz node host-a runs both
// groups of the job, 2 replicas of 2000 MHz each, at 50% of their CPU.
func oneNodeSplit(t *testing.T) *nomadstandin.Server {
	t.Helper()
	s, node := bigNode(t)
	must(t, s.AddJob(nomadstandin.JobSpec{ID: wJob, Groups: []nomadstandin.GroupSpec{
		{Name: wFirst, Count: 2, CPUMHz: 2000, MemoryMB: 512, NodeID: node},
		{Name: wSecond, Count: 2, CPUMHz: 2000, MemoryMB: 512, NodeID: node},
	}}))
	for _, g := range []string{wFirst, wSecond} {
		must(t, s.SetGroupUsage("", wJob, g, 50, 100))
	}
	return s
}

// evalWithoutJob evaluates a first-host check without job on a 20000 MHz
// node host-a running count replicas of the scaled group (2000 MHz each)
// and, with others > 0, that many of another job's: the action, and the
// group before and after.
func evalWithoutJob(t *testing.T, count int64, others int) (*sdk.ScalingAction, nomadstandin.GroupStatus, nomadstandin.GroupStatus) {
	t.Helper()
	s, node := bigNode(t)
	must(t, s.AddJob(nomadstandin.JobSpec{ID: wJob, Groups: []nomadstandin.GroupSpec{
		{Name: wFirst, Count: int(count), CPUMHz: 2000, MemoryMB: 512, NodeID: node},
	}}))
	if others > 0 {
		must(t, s.AddOtherJob(nomadstandin.OtherJobSpec{ID: "logs", Count: others, CPUMHz: 2000, MemoryMB: 512, NodeID: node}))
	}
	must(t, s.SetNodeUsage(node, 100, 100))
	before, _ := s.Group("", wJob, wFirst)
	agent := map[string]string{AgentKeyNomadAddress: s.URL()}
	st := NewStrategy(hclog.NewNullLogger())
	must(t, st.SetConfig(agent))
	check := map[string]string{KeyRole: RoleFirst, PrefixFirst + KeyNodeName: "host-a", PrefixFirst + KeyReplicaCPU: "2000",
		KeyWindow: "5", KeyMinSamples: "1", KeyWarmup: "0", KeyMaxScaleUp: StepNone, KeyPlacement: PlacementCap}
	a, err := agentEvalWith(t, st, targetAt(t, agent), gcfg, check, count, 100, nil)
	must(t, err)
	after, _ := s.Group("", wJob, wFirst)
	return a, before, after
}

// queuedAtStart is a world whose front group asks for count replicas where
// host-a places 10 (the rest queued), back 2, both at 50% of their CPU,
// with a strategy and a target on it.
func queuedAtStart(t *testing.T, count int) (*world, *Strategy, *Target) {
	t.Helper()
	w := newWorld(t, count, 2)
	if gs := w.group(t, wFirst); gs.Queued != count-10 || gs.Running != 10 {
		t.Fatalf("the premise fails: front runs %d with %d queued, want 10 and %d", gs.Running, gs.Queued, count-10)
	}
	for _, g := range []string{wFirst, wSecond} {
		must(t, w.s.SetGroupUsage("", wJob, g, 50, 100))
	}
	st := NewStrategy(hclog.NewNullLogger())
	must(t, st.SetConfig(w.agentConfig))
	return w, st, w.target(t)
}

// bigNode is a stand-in with one node, host-a: 20000 MHz, 65536 MB.
func bigNode(t *testing.T) (*nomadstandin.Server, string) {
	t.Helper()
	testsupport.StandinOnly(t, "a node and the jobs placed on it set from Go, their usage and state set and read back on the stand-in")
	s, err := nomadstandin.New()
	must(t, err)
	t.Cleanup(s.Close)
	node, err := s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 20000, MemoryMB: 65536})
	must(t, err)
	return s, node
}

// TestBusyReplicaNotRestarted: a group whose one replica uses more than
// its host can safely give it is scaled to zero; at the next evaluation,
// with none running, the usage that replica showed still stands for a new
// one, so the group is not started again at its request (found by a user
// trial: 1, 0, 1, 0... at every evaluation, each a register).
//
// With the default warm-up the replica is young throughout (a group just
// started, or one restarted by the flap itself): it is stopped while
// warming, and what the engine read then (the larger of its peak and its
// request) stands for the new one.
func TestBusyReplicaNotRestarted(t *testing.T) {
	for _, tc := range []struct {
		minSamples int
		warmup     string // "": the default (the replicas are warming)
		// window: "" is the default; a window no larger than min_samples
		// is filled with readings of none running within as many
		// evaluations, and what the stopped replicas used still stands.
		window string
	}{
		{1, "0", ""}, {engine.DefaultMinSamples, "0", ""}, {1, "", ""}, {engine.DefaultMinSamples, "", ""},
		{engine.DefaultMinSamples, "0", strconv.Itoa(engine.DefaultMinSamples)},
		{engine.DefaultMinSamples, "", strconv.Itoa(engine.DefaultMinSamples)},
	} {
		minSamples := tc.minSamples
		name := fmt.Sprintf("min_samples %d warmup %s window %s", minSamples, cmp.Or(tc.warmup, "default"), cmp.Or(tc.window, "default"))
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, 1, 1)
			must(t, w.s.SetGroupUsage("", wJob, wFirst, 20000, 300))
			must(t, w.s.SetGroupUsage("", wJob, wSecond, 500, 200))
			st := NewStrategy(hclog.NewNullLogger())
			must(t, st.SetConfig(w.agentConfig))
			tg := w.target(t)
			cfg := withKeys(splitConfig(), KeyMaxAge, "10m", KeyMinSamples, strconv.Itoa(minSamples), KeyWarmup, tc.warmup, KeyWindow, tc.window, PrefixFirst+KeyMargin, busyMargin)
			eval := func() *sdk.ScalingAction {
				t.Helper()
				a, err := agentEvalWith(t, st, tg, tcfg, cfg, 0, 100, nil)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(1100 * time.Millisecond) // a new Unix second: readings within one fold into one sample
				return a
			}
			// The window fills (min_samples readings), then the busy group is
			// scaled to 0.
			var a *sdk.ScalingAction
			for i := 0; i < minSamples; i++ {
				a = eval()
			}
			if got := w.counts(t)[0]; got != 0 {
				t.Fatalf("the premise fails: the busy first group is at %d, not 0, after %d evaluations (%s)", got, minSamples, a.Reason)
			}
			after := 2
			if tc.window != "" {
				after = minSamples + 2 // past the window's size
			}
			for i := 1; i <= after; i++ {
				a = eval()
				if got := w.counts(t)[0]; got != 0 {
					t.Fatalf("evaluation %d after the scale-down started the busy group again: %d replicas (%s)", i, got, a.Reason)
				}
				if !strings.Contains(a.Reason, "first refused slot_0 (new replica, counted at what the replicas that stopped used, ") || !strings.Contains(a.Reason, "): cpu: the processor's predicted usage of this replica alone") {
					t.Errorf("evaluation %d after the scale-down: the reason does not say a new replica was refused for its CPU: %s", i, a.Reason)
				}
			}
		})
	}
}

// TestDecisionChangeLoggedAtInfo: the agent logs no action it skips, so a
// group held at 0 for its usage is explained at info level when that
// starts, once, and a repeat of the same decision is at debug level
// (found by a user trial: nothing at info said why the group stayed at 0).
func TestDecisionChangeLoggedAtInfo(t *testing.T) {
	w := newWorld(t, 1, 1)
	must(t, w.s.SetGroupUsage("", wJob, wFirst, 20000, 300))
	must(t, w.s.SetGroupUsage("", wJob, wSecond, 500, 200))
	var logs testsupport.SyncBuffer
	st := NewStrategy(hclog.New(&hclog.LoggerOptions{Level: hclog.Info, JSONFormat: true, Output: &logs}))
	must(t, st.SetConfig(w.agentConfig))
	tg := w.target(t)
	cfg := withKeys(splitConfig(), KeyMaxAge, "10m", KeyMinSamples, "1", KeyWarmup, "0", PrefixFirst+KeyMargin, busyMargin)
	var infos []string // the reasons of the "decided" lines at info level, one slice per evaluation
	for i := 0; i < 3; i++ {
		before := len(logs.String())
		if _, err := agentEvalWith(t, st, tg, tcfg, cfg, 0, 100, nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // a new Unix second: readings within one fold into one sample
		var reasons []string
		for _, line := range strings.Split(logs.String()[before:], "\n") {
			var rec struct {
				Level, Message, Reason string
			}
			if json.Unmarshal([]byte(line), &struct {
				Level   *string `json:"@level"`
				Message *string `json:"@message"`
				Reason  *string `json:"reason"`
			}{&rec.Level, &rec.Message, &rec.Reason}) == nil && rec.Message == "decided" {
				if rec.Level != "info" {
					t.Errorf("evaluation %d: a decided line at %s level with the logger at info", i+1, rec.Level)
				}
				reasons = append(reasons, rec.Reason)
			}
		}
		infos = append(infos, strings.Join(reasons, " | "))
	}
	if got := w.counts(t)[0]; got != 0 {
		t.Fatalf("the premise fails: the busy first group is at %d, not 0", got)
	}
	// 1: the scale-down; 2: held at 0 (another direction), saying why;
	// 3: the same decision again.
	if infos[0] == "" {
		t.Errorf("evaluation 1 (the scale-down): no decided line at info level")
	}
	if !strings.Contains(infos[1], "first refused slot_0 (new replica, counted at what the replicas that stopped used") {
		t.Errorf("evaluation 2 (held at 0): the info line does not say why: %q", infos[1])
	}
	if infos[2] != "" {
		t.Errorf("evaluation 3 repeats evaluation 2's decision, yet logged it at info level: %q", infos[2])
	}
}

// TestQueuedHostNotReadAsStopped: a host given a queue of new replicas
// (<host>_queued) is not read from the replicas that stopped (the queue
// gives each new replica's size): the request the decision logs carries
// no stopped_replicas for it, while the other host's does.
func TestQueuedHostNotReadAsStopped(t *testing.T) {
	w := newWorld(t, 1, 1)
	must(t, w.s.SetGroupUsage("", wJob, wFirst, 20000, 300))
	must(t, w.s.SetGroupUsage("", wJob, wSecond, 500, 200))
	var buf strings.Builder
	var mu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, JSONFormat: true, Output: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})})
	st := NewStrategy(logger)
	must(t, st.SetConfig(w.agentConfig))
	tg := w.target(t)
	// Both groups are stopped: the first for its usage, the second by
	// hand.
	cfg := withKeys(splitConfig(), KeyMaxAge, "10m", PrefixFirst+KeyQueued, "300", PrefixFirst+KeyMargin, busyMargin)
	if _, err := agentEvalWith(t, st, tg, tcfg, cfg, 0, 100, nil); err != nil {
		t.Fatal(err)
	}
	must(t, w.s.SetGroupCount("", wJob, wSecond, 0))
	time.Sleep(1100 * time.Millisecond) // a new Unix second: readings within one fold into one sample
	mu.Lock()
	buf.Reset()
	mu.Unlock()
	if _, err := st.Run(newEval("repair", cfg), 0); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	logs := buf.String()
	mu.Unlock()
	var req *engine.Request
	var reqDigest, decisionJob, decisionDigest string
	for _, line := range strings.Split(logs, "\n") {
		var rec struct {
			Message string `json:"@message"`
			Request string `json:"request"`
			Job     string `json:"job"`
			Digest  string `json:"digest"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch rec.Message {
		case "decision request":
			req = new(engine.Request)
			must(t, json.Unmarshal([]byte(rec.Request), req))
			reqDigest = rec.Digest
		case "decision":
			decisionJob, decisionDigest = rec.Job, rec.Digest
		}
	}
	if req == nil {
		t.Fatalf("no decision request was logged:\n%s", logs)
	}
	// The explanation's line names the job and the request it explains
	// (two policies' checks may share a name; a user trial could not
	// tell their explanations apart).
	if decisionJob != wJob || decisionDigest == "" || decisionDigest != reqDigest {
		t.Errorf("the decision line: job %q, digest %q; want job %q and the request's digest %q", decisionJob, decisionDigest, wJob, reqDigest)
	}
	if req.First.RunningReplicas != 0 || req.Second.RunningReplicas != 0 {
		t.Fatalf("the premise fails: %d and %d running, want both stopped", req.First.RunningReplicas, req.Second.RunningReplicas)
	}
	if req.First.StoppedReplicas != 0 || len(req.First.QueuedReplicas) != 1 {
		t.Errorf("the queued first host: stopped_replicas %d, queue %v; want none beside its queue", req.First.StoppedReplicas, req.First.QueuedReplicas)
	}
	if req.Second.StoppedReplicas != 1 {
		t.Errorf("the second host: stopped_replicas %d, want 1 (its replicas ran in the window)", req.Second.StoppedReplicas)
	}
}

// TestCheckMemo: a check's decisions are remembered by its hosts as well
// as its name (two policies whose checks share a name, reading other
// groups, do not take turns at info level), a decision the agent did not
// apply is said at info level once when it is decided again, and a
// split's lowering step not applied at the same counts is not preferred
// again.
func TestCheckMemo(t *testing.T) {
	st := NewStrategy(hclog.NewNullLogger())
	a, err := parseStrategyConfig(splitConfig(), "", "")
	must(t, err)
	b, err := parseStrategyConfig(withKeys(splitConfig(), PrefixSecond+KeyGroup, "other"), "", "")
	must(t, err)
	ka, kb := decisionKey("activation", a), decisionKey("activation", b)
	if ka == kb {
		t.Fatalf("two checks named alike, reading other groups, share the key %q", ka)
	}
	act := func(count int64, dir sdk.ScaleDirection, refused string) *sdk.ScalingAction {
		return &sdk.ScalingAction{Count: count, Direction: dir, Meta: map[string]any{MetaFirstCount: 0, MetaSecondCount: int(count),
			HostMeta(RoleFirst, MetaRefused): refused}}
	}
	var up, none sdk.ScaleDirection = sdk.ScaleDirectionUp, sdk.ScaleDirectionNone
	for i, c := range []struct {
		key                string
		count              int64
		dir                sdk.ScaleDirection
		refused            string
		changed, unapplied bool
	}{
		{ka, 2, up, "slot_0 (running replica): cpu", true, false}, {kb, 3, up, "", true, false},
		{ka, 2, none, "slot_0 (running replica): cpu", false, false}, // applied: the same decision
		{kb, 3, none, "", false, false},
		{ka, 2, none, "slot_0 (new replica): cpu", true, false},  // held, now for a new replica
		{ka, 2, none, "slot_3 (new replica): cpu", false, false}, // the slot moved under a clamp
		{ka, 4, up, "slot_3 (new replica): cpu", true, false},
		{ka, 4, up, "slot_3 (new replica): cpu", false, true},  // decided again: not applied, said once
		{ka, 4, up, "slot_3 (new replica): cpu", false, false}, // and not again
		{ka, 4, none, "slot_3 (new replica): cpu", false, false},
		{ka, 4, up, "slot_3 (new replica): cpu", false, false}, // after none: the count moved away, not unapplied
		{ka, 4, up, "slot_3 (new replica): cpu", false, true},  // then left unapplied: said again
		{kb, 3, none, "", false, false},
		{kb, 3, up, "", false, false}, // the first after none, as after a restart
	} {
		changed, unapplied := st.decisionChanged(c.key, act(c.count, c.dir, c.refused))
		if changed != c.changed || unapplied != c.unapplied {
			t.Errorf("decision %d: changed %v, unapplied %v; want %v, %v", i+1, changed, unapplied, c.changed, c.unapplied)
		}
	}
	if st.loweredBefore(ka, []int{4, 3}) {
		t.Error("lowered before with nothing recorded")
	}
	st.noteLowered(ka, []int{4, 3}, true)
	if !st.loweredBefore(ka, []int{4, 3}) || st.loweredBefore(ka, []int{2, 3}) || st.loweredBefore(kb, []int{4, 3}) {
		t.Error("a lowering step is remembered for its check and counts only")
	}
	st.noteLowered(ka, []int{4, 3}, false)
	if st.loweredBefore(ka, []int{4, 3}) {
		t.Error("a decision that did not lower still reads as lowered")
	}
}

// TestReasonSaysQuotaClamped: a count the quota's min made is not given
// as the engine's own: the reason says the engine clamped it, and from
// what (a user trial read "first 1 (engine 1" for a group the models
// would stop).
func TestReasonSaysQuotaClamped(t *testing.T) {
	w := newWorld(t, 1, 1)
	must(t, w.s.SetGroupUsage("", wJob, wFirst, 20000, 300))
	must(t, w.s.SetGroupUsage("", wJob, wSecond, 500, 200))
	st := NewStrategy(hclog.NewNullLogger())
	must(t, st.SetConfig(w.agentConfig))
	cfg := withKeys(splitConfig(), KeyMinSamples, "1", KeyWarmup, "0", PrefixFirst+KeyMin, "1", PrefixFirst+KeyMargin, busyMargin)
	a, err := agentEvalWith(t, st, w.target(t), tcfg, cfg, 0, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Reason, "first 1 (engine 1 = the models' 0 clamped to the quota; theirs bound by cpu") {
		t.Errorf("the reason does not say the quota's min made the first host's 1: %s", a.Reason)
	}
}
