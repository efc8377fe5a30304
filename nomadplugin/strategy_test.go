package nomadplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/sdk"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/engine/golden"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// runWindow feeds a strategy one reading per sample of the request's
// observations (the window then holds exactly those samples) and returns
// the last evaluation.
func runWindow(t testing.TB, r *engine.Request, cfg map[string]string, count int64) *sdk.ScalingCheckEvaluation {
	t.Helper()
	n := len(r.First.Samples)
	if len(r.Second.Samples) != n {
		t.Fatalf("the two observations have %d and %d samples; this test feeds them in step and needs equal windows", n, len(r.Second.Samples))
	}
	clk := &clock{}
	st := newStrategy(hclog.NewNullLogger(), withReader(newMemReader(r.First, r.Second)), withClock(clk.now))
	var ev *sdk.ScalingCheckEvaluation
	for i := 0; i < n; i++ {
		clk.set(time.Unix(max(r.First.Samples[i].Time, r.Second.Samples[i].Time), 0))
		var err error
		ev, err = st.Run(newEval("golden", cfg), count)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	return ev
}

// queuedConfig writes replicas as the queued key's value.
func queuedConfig(rs []engine.Replica) string {
	items := make([]string, len(rs))
	for i, r := range rs {
		items[i] = strconv.FormatFloat(r.CPUMHz, 'g', -1, 64) + ":" + strconv.FormatFloat(r.MemoryMB, 'g', -1, 64)
	}
	return strings.Join(items, ",")
}

// goldenConfig is configFor plus the golden request's queued replicas,
// which the strategy takes from its config (the reader passes them on).
func goldenConfig(r *engine.Request, role string) map[string]string {
	cfg := configFor(r, role, len(r.First.Samples))
	for _, h := range []struct {
		prefix string
		o      engine.Observation
	}{{PrefixFirst, r.First}, {PrefixSecond, r.Second}} {
		if h.o.QueuedReplicas != nil {
			cfg[h.prefix+KeyQueued] = queuedConfig(h.o.QueuedReplicas)
		}
	}
	return cfg
}

// unlabelled is the request with the hosts labelled by role, as the
// strategy labels them.
func unlabelled(r engine.Request) engine.Request {
	r.First.Host, r.Second.Host = "", ""
	return r
}

// TestGoldenVectors: the strategy's counts and reasons equal the golden
// decisions.
func TestGoldenVectors(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			r := unlabelled(v.Request)
			for _, role := range []string{RoleFirst, RoleSecond, RoleSplit} {
				ev := runWindow(t, &r, goldenConfig(&r, role), 0)
				a := ev.Action
				if strings.HasPrefix(a.Reason, "no scaling") {
					t.Fatalf("role %s: %s", role, a.Reason)
				}
				want := map[string]int{RoleFirst: v.Want.First.Containers, RoleSecond: v.Want.Second.Containers, RoleSplit: v.Want.First.Containers + v.Want.Second.Containers}[role]
				if a.Count != int64(want) {
					t.Errorf("role %s: count %d, golden %d (reason %s)", role, a.Count, want, a.Reason)
				}
				wf, ws := v.Want.First, v.Want.Second
				wf.Host, ws.Host = engine.RoleFirst, engine.RoleSecond
				for _, h := range []struct {
					role string
					want engine.HostDecision
				}{{RoleFirst, wf}, {RoleSecond, ws}} {
					k := hostMetaKeys[h.role]
					if role != RoleSplit && role != h.role {
						// A per-host check decides its own host only.
						if _, ok := a.Meta[k.decided]; ok {
							t.Errorf("role %s: the action carries the %s host's decision %v", role, h.role, a.Meta[k.decided])
						}
						continue
					}
					if a.Meta[k.decided] != h.want.Containers || a.Meta[k.reason] != h.want.Reason() || a.Meta[HostMeta(h.role, MetaLimit)] != h.want.Limit {
						t.Errorf("role %s, %s host: decided %v, limit %v, reason\n got %v\nwant %d, %s, %s", role, h.role,
							a.Meta[k.decided], a.Meta[HostMeta(h.role, MetaLimit)], a.Meta[k.reason], h.want.Containers, h.want.Limit, h.want.Reason())
					}
				}
				if wf.Refused != nil && role != RoleSecond && !strings.Contains(a.Reason, "first refused "+wf.Refused.Name) {
					t.Errorf("the reason does not name the first refused slot %s: %s", wf.Refused.Name, a.Reason)
				}
				if strings.Contains(a.Reason, "\n") {
					t.Errorf("reason is more than one line: %q", a.Reason)
				}
			}
		})
	}
}

// TestRunMatchesDecide: on the real series the strategy's action is
// exactly one engine decision of the same observations.
func TestRunMatchesDecide(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	r := unlabelled(vs[0].Request)
	d, err := r.Decide()
	if err != nil {
		t.Fatal(err)
	}
	cur := int64(d.First.Containers + d.Second.Containers + 3)
	ev := runWindow(t, &r, goldenConfig(&r, RoleSplit), cur)
	if ev.Action.Count != int64(d.First.Containers+d.Second.Containers) || ev.Action.Direction != sdk.ScaleDirectionDown {
		t.Errorf("split action %d %s, want %d down", ev.Action.Count, ev.Action.Direction, d.First.Containers+d.Second.Containers)
	}
	if ev.Action.Meta[MetaFirstCount] != d.First.Containers || ev.Action.Meta[MetaSecondCount] != d.Second.Containers {
		t.Errorf("meta split %v + %v", ev.Action.Meta[MetaFirstCount], ev.Action.Meta[MetaSecondCount])
	}
	if ev.Action.Meta[MetaJobModifyIndex] != uint64(42) {
		t.Errorf("the action does not carry the job's modify index the reader saw: %v", ev.Action.Meta[MetaJobModifyIndex])
	}
	if ev.Action.Meta[MetaRegion] != "eu-west" {
		t.Errorf("the action does not carry the region of the job the reader saw: %v", ev.Action.Meta[MetaRegion])
	}
}

// TestSplitAction: the split's sum, the two-step split at an unchanged sum
// and its direction. A group held for the first step is held within its
// quota (issue S1: current [2, 14] with the second host's max 5 held the
// second group at 14, and the target then set [20, 5]).
func TestSplitAction(t *testing.T) {
	cases := []struct {
		name             string
		f, s, curF, curS int
		runF, runS       int // running replicas
		noLower          bool
		sMax             int
		count            int64
		wantF, wantS     int
		wantStep         bool
		wantDir          sdk.ScaleDirection
	}{
		{"sum changes", 4, 3, 2, 2, 0, 0, false, 8, 4, 4, 3, false, sdk.ScaleDirectionUp},
		{"same split", 4, 3, 4, 3, 0, 0, false, 8, 7, 4, 3, false, sdk.ScaleDirectionNone},
		{"same sum, first grows", 5, 2, 3, 4, 0, 0, false, 8, 7, 5, 4, true, sdk.ScaleDirectionUp},
		{"same sum, second grows", 2, 5, 4, 3, 0, 0, false, 8, 7, 4, 5, true, sdk.ScaleDirectionUp},
		{"down", 1, 1, 4, 3, 0, 0, false, 8, 7, 1, 1, false, sdk.ScaleDirectionDown},
		// The second group at 14 is outside its quota [0, 5]: it is never
		// held there. Growing the first with the second at 5 keeps the
		// sum, so the first step shrinks the second, the first held.
		{"same sum, the group to hold is above its quota", 11, 5, 2, 14, 0, 0, false, 5, 16, 2, 5, true, sdk.ScaleDirectionDown},
		// The first group's engine count is below its running replicas
		// (its host cannot safely keep them): it shrinks first, the sum
		// falls for one step, rather than the second growing first and
		// the overloaded replicas running one more cooldown.
		{"same sum, the shrinking group is overloaded", 2, 5, 4, 3, 4, 3, false, 8, 7, 2, 3, true, sdk.ScaleDirectionDown},
		{"same sum, the second shrinks overloaded", 5, 2, 3, 4, 3, 4, false, 8, 7, 3, 2, true, sdk.ScaleDirectionDown},
		// That step at these counts was not applied (the agent raised
		// it to the policy's min and skipped it): the growing group
		// first, or both would be held for good.
		{"same sum, overloaded, the lowering step not applied", 2, 5, 4, 3, 4, 3, true, 8, 7, 4, 5, true, sdk.ScaleDirectionUp},
		// Shrinking below the current count, but not below what runs
		// (queued replicas go): the growing group first, as before.
		{"same sum, the shrinking group's excess is not running", 2, 5, 4, 3, 2, 3, false, 8, 7, 4, 5, true, sdk.ScaleDirectionUp},
		// The split is the current counts clamped into the quotas: no step
		// changes the sum, so the agent skips it.
		{"same sum, only the quota moves the counts", 11, 5, 11, 5, 0, 0, false, 8, 16, 11, 5, false, sdk.ScaleDirectionNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := newEval("x", nil)
			ev.Action.Canonicalize()
			plans := []hostPlan{
				{role: RoleFirst, decided: c.f, final: c.f, current: c.curF, start: c.curF, running: c.runF, lo: 0, hi: 20},
				{role: RoleSecond, decided: c.s, final: c.s, current: c.curS, start: c.curS, running: c.runS, lo: 0, hi: c.sMax},
			}
			act(ev.Action, &strategyConfig{role: RoleSplit}, plans, c.count, c.noLower)
			a := ev.Action
			if a.Meta[MetaFirstCount] != c.wantF || a.Meta[MetaSecondCount] != c.wantS || a.Count != int64(c.wantF+c.wantS) {
				t.Errorf("applies %v + %v (count %d), want %d + %d", a.Meta[MetaFirstCount], a.Meta[MetaSecondCount], a.Count, c.wantF, c.wantS)
			}
			if _, step := a.Meta[MetaStep]; step != c.wantStep {
				t.Errorf("step meta %v, want %v", a.Meta[MetaStep], c.wantStep)
			}
			if a.Direction != c.wantDir {
				t.Errorf("direction %s, want %s", a.Direction, c.wantDir)
			}
			if a.Meta[MetaFirstDecided] != c.f || a.Meta[MetaSecondDecided] != c.s {
				t.Errorf("decided meta %v + %v", a.Meta[MetaFirstDecided], a.Meta[MetaSecondDecided])
			}
			if s, _ := a.Meta[MetaSecondCount].(int); s > c.sMax {
				t.Errorf("the second group is asked %d, above its quota's max %d", s, c.sMax)
			}
			// What the target makes of it: never a group above its quota
			// or above both its strategy count and its current count.
			q := Quota{{0, 20}, {0, int64(c.sMax)}}
			if a.Direction != sdk.ScaleDirectionNone {
				got, _, err := SplitWithin(a.Count, a.Meta, [2]int64{int64(c.curF), int64(c.curS)}, q)
				if err != nil || got != [2]int64{int64(c.wantF), int64(c.wantS)} {
					t.Errorf("the target splits the action into %v (%v), want %d + %d", got, err, c.wantF, c.wantS)
				}
			}
		})
	}
}

// flatPair is two hosts of 20000 MHz running `running` replicas at per
// MHz each, requesting 2000 MHz and 512 MB each, 10 one-minute samples.
func flatPair(running int, per float64) (engine.Observation, engine.Observation) {
	o := testsupport.Flat(testsupport.HostMHz, running, per, 2000, 10)
	o.MemoryCapacityMB = testsupport.HostMemoryMB
	o.RequestedMemoryMB = float64(running) * testsupport.ReplicaMemMB
	o.ReplicaMemoryDemandMB = testsupport.ReplicaMemMB
	for i := range o.Samples {
		o.Samples[i].Time += 1_700_000_000
		o.Samples[i].MemoryMB = float64(running) * 256
	}
	return o, o
}

// runFlat runs the strategy on flat observations for every sample (a
// full window) and returns the last action.
func runFlat(t *testing.T, rd *memReader, cfg map[string]string, count int64) *sdk.ScalingAction {
	t.Helper()
	clk := &clock{}
	st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(clk.now))
	var a *sdk.ScalingAction
	for _, s := range rd.obs[engine.RoleFirst].Samples {
		clk.set(time.Unix(s.Time, 0))
		ev, err := st.Run(newEval("flat", cfg), count)
		if err != nil {
			t.Fatal(err)
		}
		a = ev.Action
	}
	return a
}

func flatConfig(role string) map[string]string {
	return map[string]string{
		KeyRole: role, KeyJob: "web", KeyWindow: "10", KeyMaxAge: "10000h",
		PrefixFirst + KeyNodeName: "host-a", PrefixFirst + KeyGroup: "front",
		PrefixSecond + KeyNodeName: "host-b", PrefixSecond + KeyGroup: "back",
	}
}

// claimRig is a strategy whose checks "web" and "api" (per-host, first
// host, both on node-first) read a flat low usage with 2 replicas running,
// the group's count in the job being desired; run evaluates a check with
// the agent's count at 2 (the built-in nomad-target's running
// allocations), each evaluation 10 s after the one before, as the
// reader's samples are.
func claimRig(t *testing.T, desired int, webKeys ...string) (rd *memReader, run func(check string) *sdk.ScalingAction) {
	first, second := flatPair(2, 10)
	// Samples 10 s apart, as the evaluations (a reading is never stamped
	// ahead of the clock: the strategy would not take it).
	first.Samples = append([]engine.Sample(nil), first.Samples...)
	for i := range first.Samples {
		first.Samples[i].Time = first.Samples[0].Time + 10*int64(i)
	}
	second.Samples = first.Samples
	rd = newMemReader(first, second)
	rd.desired[engine.RoleFirst] = desired
	clk := &clock{}
	st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(clk.now))
	cfg := map[string]map[string]string{
		"web": withKeys(withKeys(flatConfig(RoleFirst), PrefixFirst+KeyMax, "8", KeyPlacement, PlacementReport), webKeys...),
		"api": withKeys(flatConfig(RoleFirst), KeyJob, "api", PrefixFirst+KeyMax, "8", KeyPlacement, PlacementReport),
	}
	at := time.Unix(first.Samples[0].Time, 0)
	return rd, func(check string) *sdk.ScalingAction {
		t.Helper()
		at = at.Add(10 * time.Second)
		clk.set(at)
		ev, err := st.Run(newEval(check, cfg[check]), 2)
		if err != nil {
			t.Fatal(err)
		}
		return ev.Action
	}
}

// claimed is how many replicas of other groups a's evaluation counted as
// claimed on its node.
func claimed(a *sdk.ScalingAction) int {
	n, _ := a.Meta[HostMeta(RoleFirst, MetaClaimed)].(int)
	return n
}

// TestClaimSettledOnTheJobsCount: with the built-in nomad-target the
// agent's count is the group's running allocations, which stay behind the
// job's count while new replicas start. A claim carried out (the job's
// count reached it) keeps counting for the other groups on the node at the
// group's next evaluations; it was taken for a claim not carried out (the
// agent's count still at its start), and after two such evaluations the
// node's other groups saw none.
func TestClaimSettledOnTheJobsCount(t *testing.T) {
	rd, run := claimRig(t, 2)
	for range 3 { // api's window fills
		run("api")
	}
	var a *sdk.ScalingAction
	for i := 0; i < 10 && (a == nil || a.Direction != sdk.ScaleDirectionUp); i++ {
		a = run("web")
	}
	if a.Direction != sdk.ScaleDirectionUp {
		t.Fatalf("web never scaled up: %s", a.Reason)
	}
	rd.desired[engine.RoleFirst] = int(a.Count) // the target wrote it; the replicas are starting
	run("web")
	run("web")
	if b := run("api"); claimed(b) == 0 {
		t.Fatalf("api's evaluation on the node sees no claimed replicas, though web's scale-up to %d was carried out: %s", a.Count, b.Reason)
	}
}

// TestClaimNotCarriedOutWithPendingReplicas: with the built-in nomad-target
// the agent's count (running allocations, 2) may be below the job's (4,
// two pending). Scale-ups to 6 never written (a dry run) are not carried
// out: the first claims, and after two misses in a row the group's claims
// stop counting. A claim started at the agent's count (2), so the job's 4
// already passed for its target of 4, 2 more replicas were claimed at each
// scale-up, and the claims grew for ever.
func TestClaimNotCarriedOutWithPendingReplicas(t *testing.T) {
	_, run := claimRig(t, 4, KeyMaxScaleUp, "4")
	for range 3 { // api's window fills
		run("api")
	}
	up := func() {
		t.Helper()
		for range 10 {
			if a := run("web"); a.Direction == sdk.ScaleDirectionUp {
				if a.Count != 6 {
					t.Fatalf("web scaled up to %d, want 6 (max_scale_up 4 from the agent's 2)", a.Count)
				}
				return
			}
		}
		t.Fatal("web did not scale up")
	}
	up()
	if b := run("api"); claimed(b) != 2 {
		t.Fatalf("after web's first scale-up api sees %d claimed replicas, want 2 (6 asked for, 4 in the job): %s", claimed(b), b.Reason)
	}
	up() // web's evaluation finds the job at 4: one miss, forgiven
	up() // two misses in a row
	if b := run("api"); claimed(b) != 0 {
		t.Fatalf("api sees %d replicas claimed by web, whose scale-ups were never carried out: %s", claimed(b), b.Reason)
	}
}

// TestStepLimits: issue 9's jump, 2 -> 78 in one evaluation, is held to
// max_scale_up; hysteresis holds a one-replica wobble; a percentage
// limits a scale-down; the reason says what held the count back and by
// how much.
func TestStepLimits(t *testing.T) {
	// Two replicas at 10 MHz each: the capacity processor's every slot
	// holds data, and a quota max of 78 makes the engine's count 78.
	first, second := flatPair(2, 10)
	cases := []struct {
		name      string
		role      string
		cfg       []string
		desired   int
		count     int64
		wantFinal int
		wantInWhy string
		// wantNotInWhy, when set, must not be in the reason.
		wantNotInWhy string
		wantHeld     int
		wantEngine   int
	}{
		{name: "2 -> 78 under max_scale_up 4 gives 6", role: RoleSecond, desired: 2, count: 2,
			cfg:       []string{KeyMaxScaleUp, "4", PrefixSecond + KeyMax, "78", KeyPlacement, PlacementReport, KeyHysteresis, StepNone},
			wantFinal: 6, wantInWhy: "max_scale_up 4: at most +4 from 2 (held back 72)", wantHeld: 72, wantEngine: 78},
		{name: "the default max_scale_up doubles at most", role: RoleSecond, desired: 2, count: 2,
			cfg:       []string{PrefixSecond + KeyMax, "78", KeyPlacement, PlacementReport},
			wantFinal: 4, wantInWhy: "max_scale_up 100%: at most +2 from 2", wantHeld: 74, wantEngine: 78},
		{name: "hysteresis holds a one-replica wobble", role: RoleSecond, desired: 77, count: 77,
			cfg:       []string{KeyHysteresis, "2", PrefixSecond + KeyMax, "78", KeyPlacement, PlacementReport},
			wantFinal: 77, wantInWhy: "hysteresis: a change of 1 is within the band of 2", wantHeld: 1, wantEngine: 78},
		{name: "a two-replica move passes a band of 2", role: RoleSecond, desired: 76, count: 76,
			cfg:       []string{KeyHysteresis, "2", PrefixSecond + KeyMax, "78", KeyPlacement, PlacementReport},
			wantFinal: 78, wantEngine: 78},
		{name: "max_scale_down 25% from 40", role: RoleSecond, desired: 40, count: 40,
			cfg:       []string{KeyMaxScaleDown, "25%", PrefixSecond + KeyMax, "10", KeyPlacement, PlacementReport},
			wantFinal: 10, wantEngine: 10}, // outside the quota [0, 10]: the quota wins over the step limit
		{name: "max_scale_down 25% inside the quota", role: RoleSecond, desired: 40, count: 40,
			cfg:       []string{KeyMaxScaleDown, "25%", PrefixSecond + KeyMax, "60", PrefixSecond + KeyPerBranch, "0.1", KeyPlacement, PlacementReport},
			wantFinal: 30, wantInWhy: "max_scale_down 25%: at most -10 from 40 (held back 19)", wantHeld: -19, wantEngine: 11},
		// A scale-down is not limited unless the policy asks (mostly the
		// host's safe move).
		{name: "the default max_scale_down holds nothing back", role: RoleSecond, desired: 40, count: 40,
			cfg:       []string{PrefixSecond + KeyMax, "60", PrefixSecond + KeyPerBranch, "0.1", KeyPlacement, PlacementReport},
			wantFinal: 11, wantNotInWhy: "max_scale_down", wantEngine: 11},
		{name: "max_scale_down 50% halves at most", role: RoleSecond, desired: 40, count: 40,
			cfg:       []string{KeyMaxScaleDown, "50%", PrefixSecond + KeyMax, "60", PrefixSecond + KeyPerBranch, "0.1", KeyPlacement, PlacementReport},
			wantFinal: 20, wantInWhy: "max_scale_down 50%: at most -20 from 40 (held back 9)", wantHeld: -9, wantEngine: 11},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rd := newMemReader(first, second)
			rd.desired[engine.RoleSecond] = tc.desired
			a := runFlat(t, rd, withKeys(flatConfig(tc.role), tc.cfg...), tc.count)
			if strings.HasPrefix(a.Reason, "no scaling") {
				t.Fatal(a.Reason)
			}
			if got := a.Meta[MetaSecondDecided]; got != tc.wantEngine {
				t.Fatalf("the engine decided %v, the case needs %d: %s", got, tc.wantEngine, a.Reason)
			}
			if a.Count != int64(tc.wantFinal) {
				t.Errorf("count %d, want %d: %s", a.Count, tc.wantFinal, a.Reason)
			}
			if !strings.Contains(a.Reason, tc.wantInWhy) {
				t.Errorf("reason does not say %q: %s", tc.wantInWhy, a.Reason)
			}
			if tc.wantNotInWhy != "" && strings.Contains(a.Reason, tc.wantNotInWhy) {
				t.Errorf("reason says %q: %s", tc.wantNotInWhy, a.Reason)
			}
			if got := a.Meta[HostMeta(RoleSecond, MetaHeld)]; got != tc.wantHeld {
				t.Errorf("held meta %v, want %d", got, tc.wantHeld)
			}
		})
	}
}

// TestHoldBand: with hold_band, a current count within the engine's hold
// range stays (the reason says so, and held is the engine's count less
// it); a count outside it moves to the engine's count.
func TestHoldBand(t *testing.T) {
	first, second := flatPair(8, 900)
	cfg := withKeys(flatConfig(RoleSecond), KeyHoldBand, "3", KeyMaxScaleUp, StepNone, KeyMaxScaleDown, StepNone,
		KeyHysteresis, StepNone, KeyPlacement, PlacementReport, PrefixSecond+KeyMax, "100")
	run := func(count int) *sdk.ScalingAction {
		rd := newMemReader(first, second)
		rd.desired[engine.RoleSecond] = count
		a := runFlat(t, rd, cfg, int64(count))
		if strings.HasPrefix(a.Reason, "no scaling") {
			t.Fatal(a.Reason)
		}
		return a
	}
	a := run(8)
	decided, _ := a.Meta[MetaSecondDecided].(int)
	lo, okLo := a.Meta[HostMeta(RoleSecond, MetaHoldLow)].(int)
	hi, okHi := a.Meta[HostMeta(RoleSecond, MetaHoldHigh)].(int)
	if !okLo || !okHi || lo > decided || hi < decided || hi-lo < 2 {
		t.Fatalf("engine %d, hold range [%v, %v]: the test needs a range of 3 or more around it: %v", decided, a.Meta[HostMeta(RoleSecond, MetaHoldLow)], a.Meta[HostMeta(RoleSecond, MetaHoldHigh)], a.Meta)
	}
	inside := lo
	if inside == decided {
		inside = hi
	}
	a = run(inside)
	if a.Count != int64(inside) || !strings.Contains(a.Reason, "hold band 3: "+strconv.Itoa(inside)+" stays") {
		t.Errorf("from %d inside [%d, %d]: count %d, reason %s", inside, lo, hi, a.Count, a.Reason)
	}
	if got := a.Meta[HostMeta(RoleSecond, MetaHeld)]; got != decided-inside {
		t.Errorf("held meta %v, want %d", got, decided-inside)
	}
	for _, outside := range []int{lo - 1, hi + 1} {
		if outside < 0 {
			continue
		}
		if a = run(outside); a.Count != int64(decided) || strings.Contains(a.Reason, "stays (the models find") {
			t.Errorf("from %d outside [%d, %d]: count %d, want the engine's %d: %s", outside, lo, hi, a.Count, decided, a.Reason)
		}
	}
	// Without the key there is no hold range.
	rd := newMemReader(first, second)
	rd.desired[engine.RoleSecond] = 8
	if a = runFlat(t, rd, withKeys(cfg, KeyHoldBand, ""), 8); a.Meta[HostMeta(RoleSecond, MetaHoldLow)] != nil {
		t.Errorf("hold range without hold_band: %v", a.Meta)
	}
}

// TestMargin: margin moves both hosts' counts as the engine's margin does
// (the decided meta is the engine's count at that margin), stricter with a
// larger margin, and the reason says it.
func TestMargin(t *testing.T) {
	first, second := flatPair(8, 900)
	for _, role := range []string{RoleFirst, RoleSecond} {
		cfg := withKeys(flatConfig(role), KeyMaxScaleUp, StepNone, KeyMaxScaleDown, StepNone,
			KeyHysteresis, StepNone, KeyPlacement, PlacementReport, PrefixFirst+KeyMax, "100", PrefixSecond+KeyMax, "100")
		metas := map[float64]map[string]any{}
		metaAt := func(role string, m float64) (float64, bool) {
			v, ok := metas[m][HostMeta(role, MetaMargin)].(float64)
			return v, ok
		}
		decidedAt := func(margin string) (int, string) {
			rd := newMemReader(first, second)
			a := runFlat(t, rd, withKeys(cfg, KeyMargin, margin), 8)
			if strings.HasPrefix(a.Reason, "no scaling") {
				t.Fatal(a.Reason)
			}
			m, _ := strconv.ParseFloat(margin, 64)
			metas[m] = a.Meta
			return decidedMeta(t, a.Meta, role), a.Reason
		}
		// The engine's own counts at each margin, from the observations
		// the reader serves.
		engineAt := func(m float64) int {
			in := [2]engine.HostInput{{Observation: &first, Margin: m}, {Observation: &second, Margin: m}}
			d, err := engine.Decide(in[0], in[1])
			if err != nil {
				t.Fatal(err)
			}
			if role == RoleFirst {
				return d.First.Containers
			}
			return d.Second.Containers
		}
		prev, distinct := math.MaxInt, map[int]bool{}
		for _, m := range []float64{-2, 0, 2, 5} {
			got, reason := decidedAt(strconv.FormatFloat(m, 'g', -1, 64))
			if want := engineAt(m); got != want {
				t.Errorf("%s, margin %v: decided %d, the engine gives %d", role, m, got, want)
			}
			if m != 0 && !strings.Contains(reason, "margin of "+strconv.FormatFloat(m, 'g', -1, 64)+" logits") {
				t.Errorf("%s, margin %v: the reason does not say it: %s", role, m, reason)
			}
			if got > prev {
				t.Errorf("%s, margin %v: %d, more than at a smaller margin (%d)", role, m, got, prev)
			}
			if mm, ok := metaAt(role, m); m != 0 && (!ok || mm != m) || m == 0 && ok {
				t.Errorf("%s, margin %v: meta %s is %v (set %v)", role, m, HostMeta(role, MetaMargin), mm, ok)
			}
			prev = got
			distinct[got] = true
		}
		if len(distinct) < 2 {
			t.Errorf("%s: every margin gave the same count: the test needs observations that move", role)
		}
	}
}

// TestHostMarginConfig: <host>_margin is that host's margin in place of
// margin; unset, the host takes margin (then 0); an explicit 0 replaces
// margin. An engine error about a host's margin names the key that set it.
func TestHostMarginConfig(t *testing.T) {
	fm, sm := PrefixFirst+KeyMargin, PrefixSecond+KeyMargin
	for _, tc := range []struct {
		name                string
		kv                  []string
		first, second       float64
		firstKey, secondKey string
	}{
		{"no margin", nil, 0, 0, KeyMargin, KeyMargin},
		{"margin alone", []string{KeyMargin, "2"}, 2, 2, KeyMargin, KeyMargin},
		{"first_margin alone", []string{fm, "3"}, 3, 0, fm, KeyMargin},
		{"second_margin alone", []string{sm, "-1.5"}, 0, -1.5, KeyMargin, sm},
		{"both", []string{fm, "3", sm, "-1"}, 3, -1, fm, sm},
		{"first_margin with margin", []string{KeyMargin, "2", fm, "5"}, 5, 2, fm, KeyMargin},
		{"second_margin with margin", []string{KeyMargin, "2", sm, "7.25"}, 2, 7.25, KeyMargin, sm},
		{"both with margin", []string{KeyMargin, "2", fm, "-10", sm, "10"}, -10, 10, fm, sm},
		{"explicit 0 replaces margin", []string{KeyMargin, "2", sm, "0"}, 2, 0, KeyMargin, sm},
		{"explicit 0 on both", []string{KeyMargin, "-3", fm, "0", sm, " 0 "}, 0, 0, fm, sm},
		{"a jobspec number", []string{fm, fmt.Sprintf("%v", 1.0)}, 1, 0, fm, KeyMargin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, role := range []string{RoleSplit, RoleFirst, RoleSecond} {
				cfg := withKeys(flatConfig(role), tc.kv...)
				c, err := parseStrategyConfig(cfg, "", "")
				if err != nil {
					t.Fatalf("%s: %v", role, err)
				}
				if got := c.marginOf(&c.first); got != tc.first {
					t.Errorf("%s: first host's margin %v, want %v", role, got, tc.first)
				}
				if got := c.marginOf(&c.second); got != tc.second {
					t.Errorf("%s: second host's margin %v, want %v", role, got, tc.second)
				}
				if got := c.marginKey(&c.first); got != tc.firstKey {
					t.Errorf("%s: first host's margin key %q, want %q", role, got, tc.firstKey)
				}
				if got := c.marginKey(&c.second); got != tc.secondKey {
					t.Errorf("%s: second host's margin key %q, want %q", role, got, tc.secondKey)
				}
			}
		})
	}
	if !slices.Contains(StrategyKeys(), PrefixFirst+KeyMargin) || !slices.Contains(StrategyKeys(), PrefixSecond+KeyMargin) {
		t.Errorf("StrategyKeys lacks first_margin or second_margin: %v", StrategyKeys())
	}
	// A margin on a model without sigmoid outputs is refused naming the
	// key that set the margin of that host: its own, else margin.
	path := identityOutputsModel(t)
	for _, tc := range []struct {
		name    string
		kv      []string
		wantKey string // "": accepted
	}{
		{"second_margin", []string{sm, "1"}, sm},
		{"second_margin beside margin", []string{KeyMargin, "1", sm, "2"}, sm},
		{"margin, the second host's own unset", []string{KeyMargin, "-1", fm, "0"}, KeyMargin},
		{"first_margin only: the second host at 0", []string{fm, "1"}, ""},
		{"second_margin 0 replaces margin", []string{KeyMargin, "1", sm, "0"}, ""},
	} {
		_, err := parseStrategyConfig(withKeys(flatConfig(RoleSplit), append([]string{PrefixSecond + KeyModel, path}, tc.kv...)...), "", "")
		var ce *ConfigError
		switch {
		case tc.wantKey == "" && err != nil:
			t.Errorf("%s: identity outputs refused: %v", tc.name, err)
		case tc.wantKey != "" && (!errors.As(err, &ce) || ce.Key != tc.wantKey || !strings.Contains(ce.Reason, "sigmoid")):
			t.Errorf("%s: identity outputs: %v, want an error naming %s", tc.name, err, tc.wantKey)
		}
	}
}

// TestHostMarginRefused: a <host>_margin out of the engine's range, NaN or
// not a number is a config error naming the key and the reason, and Run
// reads nothing and returns no action; the other host's, in a per-host
// check, is still judged.
func TestHostMarginRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		role string
		kv   []string
		key  string
		want string
	}{
		{"first_margin past the engine's", RoleSplit, []string{PrefixFirst + KeyMargin, "11"}, PrefixFirst + KeyMargin, "is 11; it must be a number of logits from -10 to 10"},
		{"second_margin NaN", RoleSplit, []string{PrefixSecond + KeyMargin, "NaN"}, PrefixSecond + KeyMargin, "is NaN; it must be a number of logits from -10 to 10"},
		{"first_margin not a number", RoleSplit, []string{PrefixFirst + KeyMargin, "abc"}, PrefixFirst + KeyMargin, `is "abc"; it must be a number`},
		{"first_margin past the engine's, looser, beside a valid margin", RoleSplit, []string{KeyMargin, "1", PrefixFirst + KeyMargin, "-10.5"}, PrefixFirst + KeyMargin, "is -10.5; it must be a number of logits from -10 to 10"},
		{"second_margin below float64's range", RoleSplit, []string{PrefixSecond + KeyMargin, "1e-400"}, PrefixSecond + KeyMargin, "closer to 0 than"},
		{"the other host's, in a per-host check", RoleFirst, []string{PrefixSecond + KeyMargin, "12"}, PrefixSecond + KeyMargin, "is 12; it must be a number of logits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := withKeys(flatConfig(tc.role), tc.kv...)
			_, err := parseStrategyConfig(cfg, "", "")
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(ce.Reason, tc.want) {
				t.Fatalf("err = %v; want key %q saying %q", err, tc.key, tc.want)
			}
			first, second := flatPair(8, 900)
			rd := newMemReader(first, second)
			st := newStrategy(hclog.NewNullLogger(), withReader(rd))
			ev, err := st.Run(newEval("bad", cfg), 8)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("config %q: %s", tc.key, ce.Reason)) {
				t.Errorf("Run: %v; want the config error %v", err, ce)
			}
			if ev != nil {
				t.Errorf("Run returned an evaluation with a bad %s: %+v", tc.key, ev.Action)
			}
			if rd.calls != 0 {
				t.Errorf("a bad %s read Nomad %d times", tc.key, rd.calls)
			}
		})
	}
}

// TestHostMarginRun: first_margin = "10" lowers the first host's count
// below its count at margin 0 and leaves the second host's as it was
// (at margin 0, or at margin when one is set), each host's decided margin
// in the action's meta, and the logged request carries first_margin and
// reproduces the counts.
func TestHostMarginRun(t *testing.T) {
	first, second := flatPair(8, 900)
	cfg := withKeys(flatConfig(RoleSplit), KeyMaxScaleUp, StepNone, KeyMaxScaleDown, StepNone,
		KeyHysteresis, StepNone, KeyPlacement, PlacementReport, PrefixFirst+KeyMax, "100", PrefixSecond+KeyMax, "100")
	type run struct {
		meta map[string]any
		req  *engine.Request
		dig  string
	}
	runLogged := func(kv ...string) run {
		t.Helper()
		var logs testsupport.SyncBuffer
		logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, JSONFormat: true, Output: &logs})
		rd := newMemReader(first, second)
		clk := &clock{}
		st := newStrategy(logger, withReader(rd), withClock(clk.now))
		var a *sdk.ScalingAction
		for _, s := range rd.obs[engine.RoleFirst].Samples {
			clk.set(time.Unix(s.Time, 0))
			ev, err := st.Run(newEval("flat", withKeys(cfg, kv...)), 8)
			if err != nil {
				t.Fatal(err)
			}
			a = ev.Action
		}
		if strings.HasPrefix(a.Reason, "no scaling") {
			t.Fatal(a.Reason)
		}
		var r run
		r.meta = a.Meta
		digest, _ := a.Meta[MetaRequestDigest].(string)
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec struct {
				Message string `json:"@message"`
				Request string `json:"request"`
				Digest  string `json:"digest"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil || rec.Message != "decision request" || rec.Digest != digest {
				continue
			}
			r.req, r.dig = new(engine.Request), rec.Digest
			must(t, json.Unmarshal([]byte(rec.Request), r.req))
		}
		if r.req == nil {
			t.Fatalf("no decision request with the action's digest %q was logged", digest)
		}
		return r
	}
	decided := func(r run, role string) int {
		t.Helper()
		return decidedMeta(t, r.meta, role)
	}
	engineAt := func(fm, sm float64) *engine.Decision {
		t.Helper()
		f, s := first, second
		d, err := engine.Decide(engine.HostInput{Observation: &f, Margin: fm}, engine.HostInput{Observation: &s, Margin: sm})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := runLogged()
	for _, tc := range []struct {
		name                string
		kv                  []string
		margin              float64 // the request's margin
		first, second       float64 // each host's margin
		firstOwn, secondOwn bool    // the request carries the host's own
	}{
		{"first_margin alone", []string{PrefixFirst + KeyMargin, "10"}, 0, 10, 0, true, false},
		{"first_margin beside margin", []string{KeyMargin, "2", PrefixFirst + KeyMargin, "10"}, 2, 10, 2, true, false},
		{"first_margin beside an explicit second_margin 0", []string{KeyMargin, "2", PrefixFirst + KeyMargin, "10", PrefixSecond + KeyMargin, "0"}, 2, 10, 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runLogged(tc.kv...)
			want := engineAt(tc.first, tc.second)
			if got, at0 := decided(r, RoleFirst), decided(base, RoleFirst); got >= at0 || got != want.First.Containers {
				t.Errorf("first host at margin %v: decided %d; want the engine's %d, below its %d at margin 0", tc.first, got, want.First.Containers, at0)
			}
			if got := decided(r, RoleSecond); got != want.Second.Containers {
				t.Errorf("second host at margin %v: decided %d, the engine gives %d", tc.second, got, want.Second.Containers)
			}
			if tc.second == 0 {
				if got, at0 := decided(r, RoleSecond), decided(base, RoleSecond); got != at0 {
					t.Errorf("second host: decided %d, %d without first_margin", got, at0)
				}
			}
			for _, h := range []struct {
				role string
				m    float64
			}{{RoleFirst, tc.first}, {RoleSecond, tc.second}} {
				v, ok := r.meta[HostMeta(h.role, MetaMargin)].(float64)
				if h.m != 0 && (!ok || v != h.m) || h.m == 0 && ok {
					t.Errorf("meta %s is %v (set %v), want %v", HostMeta(h.role, MetaMargin), v, ok, h.m)
				}
			}
			req := r.req
			if req.Margin != tc.margin || (req.FirstMargin != nil) != tc.firstOwn || (req.SecondMargin != nil) != tc.secondOwn {
				t.Fatalf("request margin %v, first_margin %v, second_margin %v; want %v, own first %t, own second %t", req.Margin, req.FirstMargin, req.SecondMargin, tc.margin, tc.firstOwn, tc.secondOwn)
			}
			if fm, sm := req.HostMargins(); fm != tc.first || sm != tc.second {
				t.Errorf("request host margins %v and %v, want %v and %v", fm, sm, tc.first, tc.second)
			}
			d, err := req.Decide()
			if err != nil {
				t.Fatal(err)
			}
			if d.First.Containers != decided(r, RoleFirst) || d.Second.Containers != decided(r, RoleSecond) {
				t.Errorf("the logged request decides %d and %d; the action %d and %d", d.First.Containers, d.Second.Containers, decided(r, RoleFirst), decided(r, RoleSecond))
			}
		})
	}
	if base.req.FirstMargin != nil || base.req.SecondMargin != nil || base.req.Margin != 0 {
		t.Errorf("without margins the request carries %v, %v, %v", base.req.Margin, base.req.FirstMargin, base.req.SecondMargin)
	}
}

// Two wrong model keys (the two models swapped) are named together when
// the config is read, each with its reason, not the first alone.
func TestBothModelKeysWrong(t *testing.T) {
	cfg := withKeys(flatConfig(RoleSplit), PrefixFirst+KeyModel, "builtin:"+engine.BuiltinCapacity, PrefixSecond+KeyModel, "builtin:"+engine.BuiltinAdmission)
	_, err := parseStrategyConfig(cfg, "", "")
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want ConfigErrors", err)
	}
	for _, key := range []string{PrefixFirst + KeyModel, PrefixSecond + KeyModel} {
		if !strings.Contains(err.Error(), `config "`+key+`"`) {
			t.Errorf("the error does not name %s: %v", key, err)
		}
	}
	// A wrong model and a pin the other model fails: both.
	cfg = withKeys(flatConfig(RoleSplit), PrefixFirst+KeyModel, "builtin:"+engine.BuiltinCapacity, PrefixSecond+KeyModelDigest, "sha256:"+strings.Repeat("0", 64))
	if _, err := parseStrategyConfig(cfg, "", ""); err == nil || !strings.Contains(err.Error(), PrefixFirst+KeyModel) || !strings.Contains(err.Error(), PrefixSecond+KeyModelDigest) {
		t.Errorf("a wrong model and a wrong pin: %v, want both named", err)
	}
}

// TestModelPin: <host>_model_digest pins a host's model. With the pin
// right the check decides, and each action's meta carries the model's full
// digest; a model file changed under the pin is refused, naming the key,
// and nothing is decided; without a pin the change is logged at INFO
// level, naming the check, the host and both digests.
func TestModelPin(t *testing.T) {
	path, b, p := testsupport.BuiltinModelFile(t, engine.BuiltinCapacity, engine.RoleSecond)
	pinned := p.Digest()
	other := *b.Model()
	thr := 0.6
	other.OutputThreshold = &thr
	otherPath := filepath.Join(t.TempDir(), "other.json")
	if err := engine.WriteModelFile(otherPath, &other); err != nil {
		t.Fatal(err)
	}
	q, err := engine.Models.LoadFor(engine.RoleSecond, otherPath)
	if err != nil {
		t.Fatal(err)
	}
	changed := q.Digest()
	if changed == pinned {
		t.Fatal("premise: the two models share a digest")
	}

	first, second := flatPair(8, 900)
	var logs testsupport.SyncBuffer
	clk := &clock{}
	st := newStrategy(hclog.New(&hclog.LoggerOptions{Level: hclog.Info, JSONFormat: true, Output: &logs}), withReader(newMemReader(first, second)), withClock(clk.now))
	at := time.Unix(first.Samples[len(first.Samples)-1].Time, 0)
	run := func(cfg map[string]string) (*sdk.ScalingCheckEvaluation, error) {
		t.Helper()
		at = at.Add(time.Second)
		clk.set(at)
		return st.Run(newEval("pin", cfg), 8)
	}
	base := withKeys(flatConfig(RoleSplit), KeyMinSamples, "1", PrefixSecond+KeyModel, path)

	ev, err := run(withKeys(base, PrefixSecond+KeyModelDigest, pinned))
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.Action.Meta[HostMeta(RoleSecond, MetaModelDigest)]; got != pinned {
		t.Fatalf("second host's model digest meta %v, want %s", got, pinned)
	}
	adm, err := engine.Builtin(engine.BuiltinAdmission)
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.Action.Meta[HostMeta(RoleFirst, MetaModelDigest)]; got != adm.Digest() {
		t.Fatalf("first host's model digest meta %v, want the built-in admission model's", got)
	}

	// The file replaced under the pin: refused, naming the pin's key.
	data, err := os.ReadFile(otherPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run(withKeys(base, PrefixSecond+KeyModelDigest, pinned))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != PrefixSecond+KeyModelDigest || !strings.Contains(ce.Reason, "is "+pinned+", but the model "+path+" is "+changed+": not the pinned model") {
		t.Fatalf("a model changed under its pin: %v, want an error naming %s%s with both digests", err, PrefixSecond, KeyModelDigest)
	}

	// Without the pin: decided, and the change from the last evaluation's
	// model (the pinned one, read before) is logged at INFO level.
	if _, err := run(base); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["@message"] != "model changed" {
			continue
		}
		found = true
		if rec["@level"] != "info" || rec["check"] != "pin" || rec["host"] != RoleSecond || rec["source"] != path || rec["from"] != pinned || rec["to"] != changed {
			t.Errorf("model changed line %v", rec)
		}
	}
	if !found {
		t.Fatalf("no \"model changed\" line at INFO level:\n%s", logs.String())
	}
	// Once: the next evaluation with the same model logs no change.
	before := len(logs.String())
	if _, err := run(base); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String()[before:], "model changed") {
		t.Errorf("an unchanged model logged as changed:\n%s", logs.String()[before:])
	}

	// A pin that is no digest is refused when the config is read.
	for _, bad := range []string{"9d3c5315", "sha256:" + strings.ToUpper(pinned[7:]), "md5:" + pinned[7:], pinned + "0"} {
		_, err := parseStrategyConfig(withKeys(base, PrefixSecond+KeyModelDigest, bad), "", "")
		if !errors.As(err, &ce) || ce.Key != PrefixSecond+KeyModelDigest || !strings.Contains(ce.Reason, "64 lower-case hex digits") {
			t.Errorf("pin %q: %v, want an error naming %s%s", bad, err, PrefixSecond, KeyModelDigest)
		}
	}
}

// TestHoldBandWithLimits: the hold band keeps a current count only where
// the placement cap and the node's state would keep it too, and the reason
// and the held meta say what happened.
func TestHoldBandWithLimits(t *testing.T) {
	ready := nomadusage.NodeState{Status: "ready", Eligibility: "eligible"}
	draining := ready
	draining.Drain = true
	for _, tc := range []struct {
		name            string
		placement       string
		node            nomadusage.NodeState
		decided, place  int
		current         int
		hold            [2]int
		wantFinal       int
		wantHeld        int
		wantStays, want string
	}{
		{name: "kept in report mode", placement: PlacementReport, node: ready, decided: 10, place: 6, current: 8, hold: [2]int{7, 11},
			wantFinal: 8, wantHeld: 2, wantStays: "hold band 1: 8 stays"},
		{name: "kept under the cap", placement: PlacementCap, node: ready, decided: 5, place: 6, current: 6, hold: [2]int{4, 7},
			wantFinal: 6, wantHeld: -1, wantStays: "hold band 1: 6 stays"},
		{name: "queued replicas above the cap are not kept", placement: PlacementCap, node: ready, decided: 10, place: 6, current: 8, hold: [2]int{7, 11},
			wantFinal: 6, want: "placement cap"},
		{name: "a draining node follows the engine down", placement: PlacementReport, node: draining, decided: 7, place: 20, current: 8, hold: [2]int{6, 9},
			wantFinal: 7},
		{name: "outside the range the engine's count", placement: PlacementReport, node: ready, decided: 10, place: 20, current: 5, hold: [2]int{7, 11},
			wantFinal: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &strategyConfig{placement: tc.placement}
			hd := &engine.HostDecision{Role: engine.RoleSecond, Containers: tc.decided, Quota: engine.Quota{Min: 0, Max: 100},
				Placement: engine.Placement{Placeable: tc.place}, Hold: &engine.HoldRange{Band: 1, Low: tc.hold[0], High: tc.hold[1]}}
			rd := &nomadusage.Reading{NodeName: "n1", Node: tc.node}
			p := c.plan(&hostConfig{role: engine.RoleSecond}, hd, rd, &engine.Observation{RunningReplicas: min(tc.current, tc.place)}, tc.current)
			notes := strings.Join(p.notes, "; ")
			if p.final != tc.wantFinal || p.held != tc.wantHeld {
				t.Errorf("final %d held %d, want %d and %d: %s", p.final, p.held, tc.wantFinal, tc.wantHeld, notes)
			}
			if stays := strings.Contains(notes, "stays"); stays != (tc.wantStays != "") || !strings.Contains(notes, tc.wantStays) || !strings.Contains(notes, tc.want) {
				t.Errorf("notes %q, want %q and %q", notes, tc.wantStays, tc.want)
			}
		})
	}
}

// TestPlacement: in cap mode the strategy never asks for more than Nomad
// can place (running replicas aside); in report mode it asks and says how
// many will queue.
func TestPlacement(t *testing.T) {
	// 2 replicas at 100 MHz each reserving 2000 MHz on a 20000 MHz host,
	// others reserving 12000: Nomad can place 4 of this size.
	first, second := flatPair(2, 100)
	second.OtherReservedCPUMHz = 12000
	cfg := withKeys(flatConfig(RoleSecond), KeyMaxScaleUp, StepNone, KeyHysteresis, StepNone)
	for _, tc := range []struct {
		mode        string
		wantCount   int64
		wantQueued  int
		wantInWhy   string
		wantNotCaps bool
	}{
		{PlacementCap, 4, 0, "placement cap: Nomad can place 4", false},
		{PlacementReport, -1, -1, "will stay queued: Nomad can place 4", true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			rd := newMemReader(first, second)
			a := runFlat(t, rd, withKeys(cfg, KeyPlacement, tc.mode), 2)
			decided := a.Meta[MetaSecondDecided].(int)
			if decided <= 4 {
				t.Fatalf("the engine decided %d; the case needs more than Nomad can place (4): %s", decided, a.Reason)
			}
			if got := a.Meta[HostMeta(RoleSecond, MetaPlaceable)]; got != 4 {
				t.Fatalf("placeable %v, want 4", got)
			}
			want, queued := tc.wantCount, tc.wantQueued
			if tc.mode == PlacementReport {
				want, queued = int64(decided), decided-4
			}
			if a.Count != want {
				t.Errorf("count %d, want %d: %s", a.Count, want, a.Reason)
			}
			if got := a.Meta[HostMeta(RoleSecond, MetaQueued)]; got != queued {
				t.Errorf("queued meta %v, want %d", got, queued)
			}
			if !strings.Contains(a.Reason, tc.wantInWhy) {
				t.Errorf("reason does not say %q: %s", tc.wantInWhy, a.Reason)
			}
			if a.Meta[MetaPlacement] != tc.mode {
				t.Errorf("placement meta %v", a.Meta[MetaPlacement])
			}
		})
	}
}

// TestNodeState: a host whose node is draining, ineligible or down is
// never scaled up, not even into its quota (issue S2: a draining node went
// from 2 to the quota's min 5); the reason says why. An engine count below
// the current one is made.
func TestNodeState(t *testing.T) {
	idle, _ := flatPair(2, 10)   // the engine wants the quota's max
	busy, _ := flatPair(2, 1800) // the engine wants about ten
	draining := nomadusage.NodeState{Status: "ready", Drain: true, Eligibility: "ineligible"}
	cfg := withKeys(flatConfig(RoleSecond), KeyMaxScaleUp, StepNone, KeyMaxScaleDown, StepNone, KeyHysteresis, StepNone, KeyPlacement, PlacementReport)
	for _, tc := range []struct {
		name     string
		obs      engine.Observation
		state    nomadusage.NodeState
		current  int
		min, max string
		want     int64 // -1: the engine's count
		why      []string
	}{
		{"draining: no scale up", idle, draining, 2, "0", "40", 2, []string{"is draining", "not scaled up from 2"}},
		{"ineligible: no scale up", idle, nomadusage.NodeState{Status: "ready", Eligibility: "ineligible"}, 2, "0", "40", 2, []string{"is ineligible for scheduling", "not scaled up from 2"}},
		// With usage = "nomad" a down node's reading has no usage (its
		// client answers no stats: TestNodeWithoutUsage); with apm usage it
		// is decided, and held here.
		{"down: no scale up", idle, nomadusage.NodeState{Status: "down", Eligibility: "eligible"}, 2, "0", "40", 2, []string{"is down", "not scaled up from 2"}},
		{"draining below the quota's min: not raised into it", idle, draining, 2, "5", "40", 2, []string{"the quota's min 5 is not enforced, the count stays at 2"}},
		{"draining: the engine's scale-down is made", busy, draining, 30, "0", "40", -1, nil},
		{"ready: scale up", idle, nomadusage.NodeState{Status: "ready", Eligibility: "eligible"}, 2, "0", "40", 40, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := newMemReader(tc.obs, tc.obs)
			rd.node[engine.RoleSecond] = tc.state
			a := runFlat(t, rd, withKeys(cfg, PrefixSecond+KeyMin, tc.min, PrefixSecond+KeyMax, tc.max), int64(tc.current))
			decided, _ := a.Meta[MetaSecondDecided].(int)
			want := tc.want
			if want < 0 {
				want = int64(decided)
				if decided >= tc.current || decided <= 0 {
					t.Fatalf("the premise fails: the engine decided %d, not a scale-down from %d within the quota: %s", decided, tc.current, a.Reason)
				}
			}
			if a.Count != want {
				t.Errorf("count %d, want %d: %s", a.Count, want, a.Reason)
			}
			if a.Count > int64(tc.current) && tc.state.Why() != "" {
				t.Errorf("a node that %s went from %d to %d", tc.state.Why(), tc.current, a.Count)
			}
			for _, why := range tc.why {
				if !strings.Contains(a.Reason, why) {
					t.Errorf("reason does not say %q: %s", why, a.Reason)
				}
			}
			// The quota in meta is the one applied: the target never
			// raises the group into the configured one.
			if lo, _ := a.Meta[MetaSecondMin].(int); int64(lo) > a.Count {
				t.Errorf("meta %s = %d, above the count %d", MetaSecondMin, lo, a.Count)
			}
		})
	}
}

// TestNodeWithoutUsage: a host whose reading carries no usage because its
// node's client answers no stats (a node down) is no decision, and the
// reason says why.
func TestNodeWithoutUsage(t *testing.T) {
	first, second := flatPair(2, 100)
	rd := newMemReader(first, second)
	rd.node[engine.RoleSecond] = nomadusage.NodeState{Status: "down", Eligibility: "eligible"}
	rd.noUsage = map[string]string{engine.RoleSecond: "node node-second is down: its client answers no stats"}
	st := newStrategy(nil, withReader(rd))
	ev, err := st.Run(newEval("c", flatConfig(RoleSecond)), 2)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Action.Direction != sdk.ScaleDirectionNone || !strings.Contains(ev.Action.Reason, "no usage to decide on: node node-second is down") {
		t.Fatalf("action %v %d: %s; want no scaling saying the node is down", ev.Action.Direction, ev.Action.Count, ev.Action.Reason)
	}
}

// TestPlacementQuotaWins (issue S10): in cap mode a quota min above what
// Nomad can place wins, and the reason says so.
func TestPlacementQuotaWins(t *testing.T) {
	first, second := flatPair(2, 100)
	second.OtherReservedCPUMHz = 12000 // Nomad can place 4 of this size
	cfg := withKeys(flatConfig(RoleSecond), KeyMaxScaleUp, StepNone, KeyHysteresis, StepNone, PrefixSecond+KeyMin, "6", PrefixSecond+KeyMax, "40")
	a := runFlat(t, newMemReader(first, second), cfg, 2)
	if a.Count != 6 || a.Meta[HostMeta(RoleSecond, MetaQueued)] != 2 {
		t.Errorf("count %d, queued %v; want the quota's min 6, 2 of them queued: %s", a.Count, a.Meta[HostMeta(RoleSecond, MetaQueued)], a.Reason)
	}
	if !strings.Contains(a.Reason, "the quota's min 6 is above what Nomad can place (4): the quota wins over the placement cap") {
		t.Errorf("the reason does not say the quota won: %s", a.Reason)
	}
}

// TestActionRegion: an action names the region of the job the strategy
// read, which the target compares with its own read; a reading without one
// (a Nomad that gives none) names none, so the target does not compare.
func TestActionRegion(t *testing.T) {
	first, second := flatPair(2, 100)
	for _, region := range []string{"eu-west", ""} {
		rd := newMemReader(first, second)
		rd.region = region
		a := runFlat(t, rd, flatConfig(RoleSplit), 4)
		got, ok := a.Meta[MetaRegion]
		if want := region != ""; ok != want || ok && got != region {
			t.Errorf("region %q read: meta %s = %v (set %v)", region, MetaRegion, got, ok)
		}
	}
}

// TestPerHostReadsItsHost (issue S4): a per-host check reads and decides
// its own host only: the other host's failure does not stop it, and the
// other host costs no Nomad read. An error in its observation names its
// host, whatever slot engine.Decide judged it in.
func TestPerHostReadsItsHost(t *testing.T) {
	first, second := flatPair(2, 100)
	for _, role := range []string{RoleFirst, RoleSecond} {
		t.Run(role, func(t *testing.T) {
			other := otherRole(role)
			rd := newMemReader(first, second)
			rd.err[other] = fmt.Errorf("host %s: %w", other, nomadusage.ErrNodeNotFound)
			a := runFlat(t, rd, flatConfig(role), 2)
			if strings.HasPrefix(a.Reason, noScalingPrefix) {
				t.Fatalf("the other host's failure stopped the %s check: %s", role, a.Reason)
			}
			for _, qs := range rd.queries {
				if len(qs) != 1 || qs[0].Label != role {
					t.Fatalf("the %s check read %+v, want its own host alone", role, qs)
				}
			}
			if _, ok := a.Meta[hostMetaKeys[other].decided]; ok {
				t.Errorf("the action carries the %s host's decision", other)
			}
			// The job and the group decided for, which the target checks.
			group := map[string]string{RoleFirst: "front", RoleSecond: "back"}
			if a.Meta[MetaJob] != "web" || a.Meta[MetaNamespace] != "default" || a.Meta[HostMeta(role, MetaGroup)] != group[role] || a.Meta[HostMeta(other, MetaGroup)] != nil {
				t.Errorf("meta job %v in %v, %s group %v, %s group %v; want web in default, %s, none", a.Meta[MetaJob], a.Meta[MetaNamespace], role, a.Meta[HostMeta(role, MetaGroup)],
					other, a.Meta[HostMeta(other, MetaGroup)], group[role])
			}
			// A negative usage sample, read last: refused as it is read,
			// naming the role's host and the figure.
			bad := first
			bad.Samples = append([]engine.Sample(nil), first.Samples...)
			bad.Samples[len(bad.Samples)-1].CPUMHz = -5
			a = runFlat(t, newMemReader(bad, bad), flatConfig(role), 2)
			if want := role + ` host (name="host-`; !strings.Contains(a.Reason, want) || !strings.Contains(a.Reason, "cpu_mhz is -5") {
				t.Errorf("reason %q does not name %q", a.Reason, want)
			}
		})
	}
}

// TestPerHostPlansFromTheAgentsCount (issue B1): a per-host check's steps
// start from the agent's count (the target's Status), which the agent
// compares the action with; a split check's from each group's count in the
// job (Status is their sum).
func TestPerHostPlansFromTheAgentsCount(t *testing.T) {
	first, second := flatPair(2, 10)
	rd := newMemReader(first, second)
	rd.desired[engine.RoleSecond] = 12 // the job's count: queued allocations beyond the running ones
	cfg := withKeys(flatConfig(RoleSecond), KeyMaxScaleUp, "4", KeyHysteresis, StepNone, KeyPlacement, PlacementReport, PrefixSecond+KeyMax, "40")
	a := runFlat(t, rd, cfg, 8)
	if a.Count != 12 || a.Meta[HostMeta(RoleSecond, MetaCurrent)] != 8 || a.Direction != sdk.ScaleDirectionUp {
		t.Errorf("count %d (%s) from current %v: want 8 + 4 = 12 up from the agent's 8: %s", a.Count, a.Direction, a.Meta[HostMeta(RoleSecond, MetaCurrent)], a.Reason)
	}
}

// TestNoScaling: what keeps the current count, and says why.
func TestNoScaling(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	base := unlabelled(vs[0].Request)
	now := newest(&base)
	metrics := func(vals ...float64) sdk.TimestampedMetrics {
		var ms sdk.TimestampedMetrics
		for i, v := range vals {
			ms = append(ms, sdk.TimestampedMetric{Timestamp: now.Add(time.Duration(i-len(vals)+1) * time.Second), Value: v})
		}
		return ms
	}
	cases := []struct {
		name    string
		cfg     func(m map[string]string)
		reader  func(r *memReader)
		metrics sdk.TimestampedMetrics
		at      time.Time
		want    string
	}{
		{name: "unknown host", reader: func(r *memReader) {
			r.err[engine.RoleSecond] = fmt.Errorf(`host name="host-b": %w`, nomadusage.ErrNodeNotFound)
		}, want: "no node matches"},
		{name: "NaN from APM: the engine names the sample", cfg: func(m map[string]string) { m[PrefixFirst+KeyUsage] = UsageAPM },
			metrics: metrics(100, math.NaN(), 120), want: "first host observation: usage_samples[1].cpu_mhz: is NaN"},
		{name: "negative from APM", cfg: func(m map[string]string) { m[PrefixFirst+KeyUsage] = UsageAPM },
			metrics: metrics(100, 90, -1), want: "usage_samples[2].cpu_mhz: is -1"},
		{name: "no APM metrics", cfg: func(m map[string]string) { m[PrefixFirst+KeyUsage] = UsageAPM },
			want: "no usage metrics"},
		{name: "stale APM metrics", cfg: func(m map[string]string) { m[PrefixFirst+KeyUsage] = UsageAPM; m[KeyMaxAge] = "30s" },
			metrics: metrics(100, 120), at: now.Add(time.Hour), want: "stale"},
		{name: "negative usage from Nomad", reader: func(r *memReader) {
			o := r.obs[engine.RoleFirst]
			o.Samples = append([]engine.Sample(nil), o.Samples...)
			o.Samples[0].CPUMHz = -5
			r.obs[engine.RoleFirst] = o
		}, want: `first host (name="host-a"): usage out of range: the reading's sample at `},
		{name: "one sample: too few to judge", cfg: func(m map[string]string) { m[KeyMinSamples] = "5" },
			want: "keeping the current count: first host observation: usage_samples: has 1 sample(s); at least 5 are needed"},
		{name: "a refusal on one host is not hidden by a window filling on the other",
			cfg:     func(m map[string]string) { m[KeyMinSamples] = "3"; m[PrefixSecond+KeyUsage] = UsageAPM },
			metrics: metrics(100, math.NaN(), 120), want: "the engine refused the usage read: second host observation: usage_samples[1].cpu_mhz: is NaN"},
		{name: "the group runs on another node too", reader: func(r *memReader) {
			r.elsewhere = map[string][]nomadusage.NodeCount{engine.RoleFirst: {{Node: "host-b", Count: 2}}}
		}, want: `first host (name="host-a"): group "front" of job "web" runs 2 allocation(s) on other nodes (2 on host-b) and `},
		{name: "read deadline", reader: func(r *memReader) {
			r.err[engine.RoleFirst] = fmt.Errorf("read stats of allocation a1 on node host-a: %w", errors.New("context deadline exceeded"))
		}, want: "read stats of allocation a1 on node host-a: context deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rd := newMemReader(base.First, base.Second)
			if tc.reader != nil {
				tc.reader(rd)
			}
			at := tc.at
			if at.IsZero() {
				at = now
			}
			st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(func() time.Time { return at }))
			cfg := withKeys(goldenConfig(&base, RoleSplit), KeyWindow, "60", KeyMinSamples, "1")
			if tc.cfg != nil {
				tc.cfg(cfg)
			}
			ev := newEval("c", cfg)
			ev.Metrics = tc.metrics
			out, err := st.Run(ev, 7)
			if err != nil {
				t.Fatalf("Run returned an error, want no scaling with a reason: %v", err)
			}
			a := out.Action
			if a.Direction != sdk.ScaleDirectionNone || a.Count != 7 {
				t.Errorf("action %s count %d, want none at the current count 7", a.Direction, a.Count)
			}
			if !strings.HasPrefix(a.Reason, "no scaling: ") || !strings.Contains(a.Reason, tc.want) {
				t.Errorf("reason %q does not say %q", a.Reason, tc.want)
			}
		})
	}
}

// TestWindowsPerJob: the agent sends a strategy no policy ID over gRPC
// (its action is empty), so two policies whose checks share a name must be
// told apart by what they read: another job, group or node keeps its own
// usage window, and one job's samples never decide for another.
func TestWindowsPerJob(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	base := unlabelled(vs[0].Request)
	now := newest(&base)
	const tooFew = "has 1 sample(s); at least 2 are needed"
	for _, tc := range []struct {
		name  string
		other []string
	}{
		{"another job", []string{KeyJob, "api"}},
		{"another namespace", []string{KeyNamespace, "batch"}},
		{"another group on the first host", []string{PrefixFirst + KeyGroup, "front-canary"}},
		{"another node for the first host", []string{PrefixFirst + KeyNodeName, "host-c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := newMemReader(base.First, base.Second)
			st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(func() time.Time { return now }))
			cfg := withKeys(goldenConfig(&base, RoleSplit), KeyWindow, "60", KeyMinSamples, "2")
			run := func(cfg map[string]string) string {
				out, err := st.Run(newEval("activation", cfg), 7)
				if err != nil {
					t.Fatal(err)
				}
				return out.Action.Reason
			}
			if r := run(cfg); !strings.Contains(r, tooFew) {
				t.Fatalf("the first policy's first evaluation: %q, want %q", r, tooFew)
			}
			if r := run(withKeys(cfg, tc.other...)); !strings.Contains(r, tooFew) {
				t.Fatalf("the other policy's first evaluation, same check name: %q; want %q (it read the first policy's window)", r, tooFew)
			}
			// The first policy's window does fill: its second read decides.
			if r := run(cfg); strings.HasPrefix(r, "no scaling: ") {
				t.Fatalf("the first policy's second evaluation: %q, want a decision", r)
			}
		})
	}
	// Tuning how the reads are made keeps the window: the evaluation after
	// it decides on the samples before it.
	t.Run("read options tuned", func(t *testing.T) {
		rd := newMemReader(base.First, base.Second)
		st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(func() time.Time { return now }))
		cfg := withKeys(goldenConfig(&base, RoleSplit), KeyWindow, "60", KeyMinSamples, "2")
		if out, err := st.Run(newEval("activation", cfg), 7); err != nil || !strings.Contains(out.Action.Reason, tooFew) {
			t.Fatalf("first evaluation: %v, %v", out, err)
		}
		tuned := withKeys(cfg, KeyReadConcurrency, "4", KeyStatsSample, "64", KeyMinAnswered, "0.9")
		if out, err := st.Run(newEval("activation", tuned), 7); err != nil || strings.HasPrefix(out.Action.Reason, "no scaling: ") {
			t.Fatalf("the evaluation after tuning the reads: %v, %v; want a decision on both samples", out.Action.Reason, err)
		}
	})
}

// TestInvalidInputs runs the engine's rule book through the strategy's
// input forms. Observation fields that come from Nomad are fed through a
// fake usageReader, sample by sample into the strategy's window: no
// scaling, and the reason names the field. Fields the check's config sets
// (demands, wanted and queued replicas) and quotas are fed as config keys:
// a *ConfigError naming the key, and nothing read or scaled.
func TestInvalidInputs(t *testing.T) {
	byConfig := map[string]func(m map[string]string, prefix string, r *engine.Request, o *engine.Observation){
		"replica_cpu_demand_mhz": func(m map[string]string, p string, _ *engine.Request, o *engine.Observation) {
			m[p+KeyReplicaCPU] = strconv.FormatFloat(o.ReplicaCPUDemandMHz, 'g', -1, 64)
		},
		"replica_memory_demand_mb": func(m map[string]string, p string, _ *engine.Request, o *engine.Observation) {
			m[p+KeyReplicaMemory] = strconv.FormatFloat(o.ReplicaMemoryDemandMB, 'g', -1, 64)
		},
		"wanted_replicas": func(m map[string]string, p string, _ *engine.Request, o *engine.Observation) {
			m[p+KeyWantedReplicas] = strconv.Itoa(o.WantedReplicas)
			if o.QueuedReplicas != nil {
				m[p+KeyQueued] = queuedConfig(o.QueuedReplicas)
			}
		},
		"queued_replicas": func(m map[string]string, p string, _ *engine.Request, o *engine.Observation) {
			m[p+KeyQueued] = queuedConfig(o.QueuedReplicas)
		},
	}
	configKey := map[string]string{"replica_cpu_demand_mhz": KeyReplicaCPU, "replica_memory_demand_mb": KeyReplicaMemory,
		"wanted_replicas": KeyWantedReplicas, "queued_replicas": KeyQueued}
	for _, tc := range testsupport.InvalidInputs() {
		t.Run(tc.Name, func(t *testing.T) {
			s1 := testsupport.SeriesObservation(t, "series3", 3000, 8, 4, 0.1)
			s2 := testsupport.SeriesObservation(t, "series9", 3000, 8, 4, 0.1)
			r := engine.Request{First: s1, Second: s2}
			r.First.Host, r.Second.Host = "", ""
			valid := r
			tc.Edit(&r)
			prefix := PrefixFirst
			o := &r.First
			if tc.Host == engine.RoleSecond {
				prefix, o = PrefixSecond, &r.Second
			}
			// max_age spans every sample time (a negative one included), so
			// that the engine, not the staleness rule, judges the samples.
			cfg := withKeys(configFor(&valid, RoleSplit, 8), KeyMinSamples, "3", KeyMaxAge, "1000000h")
			base, _, _ := strings.Cut(tc.Field, "[")
			switch {
			case tc.Part == engine.PartQuota:
				spec := r.FirstQuota
				if tc.Host == engine.RoleSecond {
					spec = r.SecondQuota
				}
				setQuota(cfg, prefix, spec)
				st := newStrategy(nil, withReader(newMemReader(valid.First, valid.Second)))
				_, err := st.Run(newEval("bad", cfg), 3)
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Key != prefix+tc.Field {
					t.Fatalf("err = %v, want a ConfigError for %q", err, prefix+tc.Field)
				}
			case byConfig[base] != nil:
				byConfig[base](cfg, prefix, &r, o)
				rd := newMemReader(valid.First, valid.Second)
				st := newStrategy(nil, withReader(rd))
				_, err := st.Run(newEval("bad", cfg), 3)
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Key != prefix+configKey[base] {
					t.Fatalf("err = %v, want a ConfigError for %q", err, prefix+configKey[base])
				}
				if rd.calls != 0 {
					t.Errorf("a refused config read Nomad %d times", rd.calls)
				}
			case base == "usage_samples" && len(o.Samples) == 0:
				// The strategy's window is fed one reading at a time: an
				// empty window cannot come from Nomad. A reading without
				// a sample is refused before the engine, and nothing
				// scales.
				a := runInvalid(t, &valid, &r, cfg)
				if !strings.Contains(a.Reason, "second host (name=\"host-b\"): Nomad's reading carries no usage sample") {
					t.Errorf("reason %q", a.Reason)
				}
			case tc.Field == "usage_samples[5].time" && o.Samples[5].Time == o.Samples[4].Time:
				// Two readings in the same second: the window keeps the
				// later one (Nomad's stats are one-second samples), so a
				// repeated time never reaches the engine; the decision is
				// made on the window without the repeat.
				a := runInvalid(t, &valid, &r, cfg)
				if strings.HasPrefix(a.Reason, "no scaling") {
					t.Fatalf("a repeated second stopped the decision: %s", a.Reason)
				}
				d := decideWithout(t, r, tc.Host, 4)
				if a.Meta[MetaFirstDecided] != d.First.Containers || a.Meta[MetaSecondDecided] != d.Second.Containers {
					t.Errorf("decided %v + %v, the engine on the window without the repeat %d + %d", a.Meta[MetaFirstDecided], a.Meta[MetaSecondDecided], d.First.Containers, d.Second.Containers)
				}
			case strings.HasSuffix(tc.Field, ".time") && o.Samples[0].Time >= engine.MaxSampleTime:
				// A time past the year 5138 cannot come from Nomad, whose
				// stats carry nanoseconds since 1970 in an int64 (up to
				// the year 2262); fed in anyway, nothing scales.
				if a := runInvalid(t, &valid, &r, cfg); !strings.HasPrefix(a.Reason, "no scaling: ") {
					t.Errorf("reason %q: want no scaling", a.Reason)
				}
			case base == "usage_samples" && refusedAsRead(o, tc.Field):
				// A sample no host can show (not a number, infinite,
				// negative, beyond 1e9) is refused as it is read, naming the figure,
				// and never enters the window: the evaluations after it
				// decide on the window without it.
				i, _ := sampleIndex(tc.Field)
				actions := runInvalidAll(t, &valid, &r, cfg)
				_, figure, _ := strings.Cut(tc.Field, "].")
				if a := actions[i]; !strings.HasPrefix(a.Reason, "no scaling: ") || !strings.Contains(a.Reason, "usage out of range") || !strings.Contains(a.Reason, figure+" is ") {
					t.Errorf("the evaluation that read the bad sample: reason %q does not refuse it naming %s", a.Reason, figure)
				}
				d := decideWithout(t, r, tc.Host, i)
				last := actions[len(actions)-1]
				if last.Meta[MetaFirstDecided] != d.First.Containers || last.Meta[MetaSecondDecided] != d.Second.Containers {
					t.Errorf("decided %v + %v, the engine on the window without the bad sample %d + %d: %s", last.Meta[MetaFirstDecided], last.Meta[MetaSecondDecided], d.First.Containers, d.Second.Containers, last.Reason)
				}
			default:
				a := runInvalid(t, &valid, &r, cfg)
				want := fmt.Sprintf("%s host observation: %s: ", tc.Host, tc.Field)
				if !strings.HasPrefix(a.Reason, "no scaling: ") || !strings.Contains(a.Reason, want) {
					t.Errorf("reason %q does not name %q", a.Reason, want)
				}
			}
		})
	}
}

// decideWithout is the engine's decision on r (min_samples 3) with sample
// i of host's window left out, as the strategy's window leaves it out.
func decideWithout(t *testing.T, r engine.Request, host string, i int) *engine.Decision {
	t.Helper()
	r.MinSamples = 3
	o := &r.First
	if host == engine.RoleSecond {
		o = &r.Second
	}
	o.Samples = append(append([]engine.Sample(nil), o.Samples[:i]...), o.Samples[i+1:]...)
	d, err := r.Decide()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runInvalid feeds the edited request's observations through a fake
// reader, one sample per evaluation, and returns the last action: it must
// be no action at the current count.
func runInvalid(t *testing.T, valid, bad *engine.Request, cfg map[string]string) *sdk.ScalingAction {
	t.Helper()
	all := runInvalidAll(t, valid, bad, cfg)
	return all[len(all)-1]
}

// runInvalidAll is runInvalid's every action, one per sample.
func runInvalidAll(t *testing.T, valid, bad *engine.Request, cfg map[string]string) []*sdk.ScalingAction {
	t.Helper()
	rd := newMemReader(bad.First, bad.Second)
	n := max(len(bad.First.Samples), len(bad.Second.Samples), 1)
	clk := &clock{t: newest(valid)}
	st := newStrategy(nil, withReader(rd), withClock(clk.now))
	var all []*sdk.ScalingAction
	for range n {
		ev, err := st.Run(newEval("bad", cfg), 3)
		if err != nil {
			t.Fatalf("Run returned an error, want no scaling with a reason: %v", err)
		}
		a := ev.Action
		if strings.HasPrefix(a.Reason, "no scaling") && (a.Direction != sdk.ScaleDirectionNone || a.Count != 3) {
			t.Errorf("no-scaling action %s to %d, want none at 3", a.Direction, a.Count)
		}
		all = append(all, a)
	}
	return all
}

// sampleIndex is the sample a field "usage_samples[i].cpu_mhz" (or
// .memory_mb) names, and the figure.
func sampleIndex(field string) (int, string) {
	_, idx, _ := strings.Cut(field, "[")
	idx, figure, _ := strings.Cut(idx, "].")
	i, err := strconv.Atoi(idx)
	if err != nil {
		return -1, ""
	}
	return i, figure
}

// refusedAsRead says whether the field names a sample figure the usage
// window refuses as it is read (not a number, infinite, negative).
func refusedAsRead(o *engine.Observation, field string) bool {
	i, figure := sampleIndex(field)
	if i < 0 || i >= len(o.Samples) {
		return false
	}
	var v float64
	switch figure {
	case "cpu_mhz":
		v = o.Samples[i].CPUMHz
	case "memory_mb":
		v = o.Samples[i].MemoryMB
	default:
		return false
	}
	return !(v >= 0 && v <= engine.MaxResource) // nomadusage's usableFigure
}

func TestAPMUsage(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	r := unlabelled(vs[0].Request)
	now := newest(&r)
	// The check's metrics carry the first host's samples.
	var ms sdk.TimestampedMetrics
	for _, s := range r.First.Samples {
		ms = append(ms, sdk.TimestampedMetric{Timestamp: time.Unix(s.Time, 0), Value: s.CPUMHz})
	}
	// The APM has no memory: the engine sees no memory samples there.
	want := r
	want.First.Samples = make([]engine.Sample, len(r.First.Samples))
	for i, s := range r.First.Samples {
		want.First.Samples[i] = engine.Sample{Time: s.Time, CPUMHz: s.CPUMHz}
	}
	want.Second.Samples = r.Second.Samples[len(r.Second.Samples)-3:]
	d, err := want.Decide()
	if err != nil {
		t.Fatal(err)
	}
	cfg := withKeys(configFor(&r, RoleFirst, len(r.First.Samples)), PrefixFirst+KeyUsage, UsageAPM)
	rd := newMemReader(r.First, r.Second)
	rd.next[engine.RoleSecond] = len(r.Second.Samples) - 3
	clk := &clock{}
	st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(clk.now))
	var out *sdk.ScalingCheckEvaluation
	for i := 3; i > 0; i-- {
		clk.set(time.Unix(r.Second.Samples[len(r.Second.Samples)-i].Time, 0).Add(time.Duration(now.Unix()-r.Second.Samples[len(r.Second.Samples)-1].Time) * time.Second))
		ev := newEval("apm", cfg)
		ev.Metrics = ms
		if out, err = st.Run(ev, 0); err != nil {
			t.Fatal(err)
		}
	}
	if out.Action.Count != int64(d.First.Containers) {
		t.Errorf("APM count %d, engine %d (%s)", out.Action.Count, d.First.Containers, out.Action.Reason)
	}
	// With usage from the APM, the reader reads no allocation stats for
	// that host; a per-host check reads its own host only.
	if last := rd.queries[len(rd.queries)-1]; len(last) != 1 || last[0].Label != engine.RoleFirst || !last[0].NoStats {
		t.Errorf("queries %+v; want the first host alone, without stats reads", last)
	}
}

// TestRunErrorSaysWhatTheAgentDoes: a check's error says that the agent
// leaves the check out and lets the policy's other checks decide alone
// (scale-downs included) unless on_error, or on_check_error with on_error
// unset, is "fail" (the agent sends neither key to a plugin: the check as
// the plugin receives it carries no on_error); the configuration error
// stays what errors.As finds.
func TestRunErrorSaysWhatTheAgentDoes(t *testing.T) {
	_, err := NewStrategy(nil).Run(newEval("activation", map[string]string{KeyRole: "both"}), 2)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != KeyRole || !strings.Contains(err.Error(), `config "role": is "both"`) {
		t.Fatalf("%v; want the configuration error on %s", err, KeyRole)
	}
	if !strings.Contains(err.Error(), `the agent leaves an erring check out and the policy's other checks decide alone, scale-downs included, unless the check's on_error is "fail", or it is unset and the policy's on_check_error is "fail"`) {
		t.Errorf("%v; want what the agent does with an erring check", err)
	}
}

func TestConfigErrors(t *testing.T) {
	ok := func() map[string]string {
		return map[string]string{KeyRole: RoleSplit, KeyJob: "web", PrefixFirst + KeyNodeName: "a", PrefixSecond + KeyNodeName: "b",
			PrefixFirst + KeyGroup: "front", PrefixSecond + KeyGroup: "back"}
	}
	if _, err := parseStrategyConfig(ok(), "", ""); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	// A per-host check scales one group: the other host's group key may
	// name the same one (a split's may not, below).
	for _, role := range []string{RoleFirst, RoleSecond} {
		m := ok()
		m[KeyRole], m[PrefixSecond+KeyGroup] = role, m[PrefixFirst+KeyGroup]
		if _, err := parseStrategyConfig(m, "", ""); err != nil {
			t.Errorf("role %s with one group named twice refused: %v", role, err)
		}
	}
	cases := []struct {
		name    string
		kv      []string
		agentNS string
		wantKey string
		want    string
	}{
		{"no role", []string{KeyRole, ""}, "", KeyRole, "is required"},
		{"bad role", []string{KeyRole, "both"}, "", KeyRole, `is "both"`},
		{"unknown key", []string{"first_nodename", "a"}, "", "first_nodename", `unknown key: did you mean "first_node_name"?`},
		{"the start of five keys", []string{"first_node", "a"}, "", "first_node", `unknown key: did you mean "first_node_id", "first_node_name", "first_node_pool", "first_node_class" or "first_node_datacenter"?`},
		{"the start of a key, not at a _", []string{"max_scale_d", "1"}, "", "max_scale_d", `unknown key: did you mean "max_scale_down"?`},
		{"the start of a key, with its _", []string{"first_model_dig", "x"}, "", "first_model_dig", `unknown key: did you mean "first_model_digest"?`},
		{"a job pattern", []string{KeyJob, "*"}, "", KeyJob, `is "*": the key names one job, not a pattern`},
		{"a typo", []string{"max_scale_dwon", "1"}, "", "max_scale_dwon", `unknown key: did you mean "max_scale_down"?`},
		{"nothing near", []string{"zzzz_unrelated", "1"}, "", "zzzz_unrelated", "unknown key (the strategy accepts"},
		{"bad window", []string{KeyWindow, "0"}, "", KeyWindow, "from 1"},
		{"window below min_samples", []string{KeyWindow, "2", KeyMinSamples, "5"}, "", KeyWindow, "fewer than min_samples 5"},
		{"window below the default min_samples", []string{KeyWindow, "1"}, "", KeyWindow, "default min_samples 3"},
		{"min_samples out of the engine's range", []string{KeyMinSamples, "-2"}, "", KeyMinSamples, "from 1 to"},
		{"min_samples negative: 0 is not offered", []string{KeyMinSamples, "-1"}, "", KeyMinSamples, "is -1; it must be a whole number from 1 to 10080 (unset: 3)"},
		{"wanted and queued: the keys named", []string{PrefixFirst + KeyWantedReplicas, "3", PrefixFirst + KeyQueued, "500"}, "", PrefixFirst + KeyWantedReplicas,
			"is given with first_queued: give first_wanted_replicas (replicas of one size) or first_queued (each with its own demand), not both"},
		{"wanted and queued on the second host: refused as a queue", []string{PrefixSecond + KeyWantedReplicas, "3", PrefixSecond + KeyQueued, "500"}, "", PrefixSecond + KeyQueued, "is the first host's alone"},
		{"queued item out of range: the item named", []string{PrefixFirst + KeyQueued, "500:256,500:-1"}, "", PrefixFirst + KeyQueued, "item 2, its memory_mb: is -1"},
		{"min_samples not a number", []string{KeyMinSamples, "few"}, "", KeyMinSamples, "whole number"},
		{"bad max age", []string{KeyMaxAge, "soon"}, "", KeyMaxAge, "Go duration"},
		{"bad warmup", []string{KeyWarmup, "-1m"}, "", KeyWarmup, ">= 0"},
		{"bad step", []string{KeyMaxScaleUp, "0"}, "", KeyMaxScaleUp, "whole number of replicas"},
		{"bad percent", []string{KeyMaxScaleDown, "-5%"}, "", KeyMaxScaleDown, "percentage"},
		{"bad hysteresis", []string{KeyHysteresis, "lots"}, "", KeyHysteresis, `or "none"`},
		// engine.ParseStep reads "" as no limit: written (a template's
		// unset variable) it lifted the default limit. (withKeys drops a
		// key given "": white space reads as empty too.)
		{"empty max_scale_up", []string{KeyMaxScaleUp, " "}, "", KeyMaxScaleUp, `is empty; it must be a whole number of replicas, a percentage such as "50%", or "none" for no limit (unset: 100%)`},
		{"empty max_scale_down", []string{KeyMaxScaleDown, " "}, "", KeyMaxScaleDown, "is empty"},
		{"empty hysteresis", []string{KeyHysteresis, "\t"}, "", KeyHysteresis, "is empty"},
		{"min_samples 0", []string{KeyMinSamples, "0"}, "", KeyMinSamples, "is 0; it must be a whole number from 1 to 10080 (unset: 3)"},
		{"empty model", []string{PrefixSecond + KeyModel, " "}, "", PrefixSecond + KeyModel, "is empty; name a model"},
		// An empty group read as the job's only group, an empty node name
		// as no condition.
		{"empty group", []string{KeyRole, RoleFirst, PrefixFirst + KeyGroup, " "}, "", PrefixFirst + KeyGroup, "is empty; give a value, or leave the key out"},
		{"empty node name", []string{PrefixSecond + KeyNodeName, " "}, "", PrefixSecond + KeyNodeName, "is empty"},
		{"empty node pool beside a name", []string{PrefixFirst + KeyNodePool, " "}, "", PrefixFirst + KeyNodePool, "is empty"},
		{"empty node id", []string{PrefixFirst + KeyNodeID, " "}, "", PrefixFirst + KeyNodeID, "is empty"},
		{"empty job on a per-host check", []string{KeyRole, RoleFirst, PrefixFirst + KeyGroup, "", PrefixSecond + KeyGroup, "", KeyJob, " "}, "", KeyJob, "is empty; give a value, or leave the key out"},
		{"empty namespace", []string{KeyNamespace, "\t"}, "", KeyNamespace, "is empty"},
		{"bad placement", []string{KeyPlacement, "maybe"}, "", KeyPlacement, `"cap" or "report"`},
		{"negative hold band", []string{KeyHoldBand, "-1"}, "", KeyHoldBand, "from 0 (off)"},
		{"hold band past the engine's", []string{KeyHoldBand, "11"}, "", KeyHoldBand, "from 0 (off) to 10"},
		{"NaN hold band", []string{KeyHoldBand, "NaN"}, "", KeyHoldBand, "logits"},
		{"hold band not a number", []string{KeyHoldBand, "wide"}, "", KeyHoldBand, "a number"},
		{"margin past the engine's", []string{KeyMargin, "11"}, "", KeyMargin, "it must be a number of logits from -10 to 10"},
		{"margin past the engine's, looser", []string{KeyMargin, "-10.5"}, "", KeyMargin, "from -10 to 10"},
		{"NaN margin", []string{KeyMargin, "NaN"}, "", KeyMargin, "logits"},
		{"margin not a number", []string{KeyMargin, "safe"}, "", KeyMargin, "a number"},
		{"first_margin past the engine's", []string{PrefixFirst + KeyMargin, "11"}, "", PrefixFirst + KeyMargin, "is 11; it must be a number of logits from -10 to 10"},
		{"NaN second_margin", []string{PrefixSecond + KeyMargin, "NaN"}, "", PrefixSecond + KeyMargin, "is NaN; it must be a number of logits"},
		{"first_margin not a number", []string{PrefixFirst + KeyMargin, "abc"}, "", PrefixFirst + KeyMargin, `is "abc"; it must be a number`},
		{"negative concurrency", []string{KeyReadConcurrency, "-1"}, "", KeyReadConcurrency, "from 1"},
		{"concurrency beyond the reader's limit", []string{KeyReadConcurrency, "5000"}, "", KeyReadConcurrency, "from 1 to 1024"},
		{"bad min answered", []string{KeyMinAnswered, "1.5"}, "", KeyMinAnswered, "share"},
		// 0 written is not the default: min_answered 0 would read as 0.8.
		{"concurrency 0", []string{KeyReadConcurrency, "0"}, "", KeyReadConcurrency, "is 0; it must be a whole number from 1 to 1024 (unset: 32)"},
		{"min answered 0", []string{KeyMinAnswered, "0"}, "", KeyMinAnswered, "is 0; it must be a share > 0 and <= 1 (unset: 0.8)"},
		{"stats sample 0", []string{KeyStatsSample, "0"}, "", KeyStatsSample, "is 0; it must be a whole number from 1 to 1048576 (unset: 256)"},
		{"bad read timeout", []string{KeyReadTimeout, "0s"}, "", KeyReadTimeout, "positive"},
		{"namespace *", []string{KeyNamespace, "*"}, "", KeyNamespace, "every namespace"},
		{"agent namespace *", nil, "*", KeyNamespace, "from nomad_namespace"},
		{"no host", []string{PrefixFirst + KeyNodeName, ""}, "", PrefixFirst + KeyNodeID, "needs"},
		{"id with filter", []string{PrefixFirst + KeyNodeID, "abc"}, "", PrefixFirst + KeyNodeID, "alone"},
		{"an id that is a path", []string{PrefixFirst + KeyNodeName, "", PrefixFirst + KeyNodeID, "../job/secret"}, "", PrefixFirst + KeyNodeID, "a Nomad node ID is a UUID"},
		{"a pool no filter can express", []string{PrefixSecond + KeyNodePool, "a\"b`c"}, "", PrefixSecond + KeyNodePool, "cannot express"},
		{"split without group", []string{PrefixSecond + KeyGroup, ""}, "", PrefixSecond + KeyGroup, "required"},
		{"split without job", []string{KeyJob, ""}, "", KeyJob, "required"},
		{"split with one group twice", []string{PrefixSecond + KeyGroup, "front"}, "", PrefixSecond + KeyGroup, `is "front", the same as first_group: a split check scales two groups`},
		{"demand not a number", []string{PrefixFirst + KeyReplicaCPU, "lots"}, "", PrefixFirst + KeyReplicaCPU, "a number"},
		{"negative demand: the engine's rule", []string{PrefixFirst + KeyReplicaCPU, "-1"}, "", PrefixFirst + KeyReplicaCPU, "finite number > 0"},
		{"NaN demand: the engine's rule", []string{PrefixFirst + KeyReplicaCPU, "NaN"}, "", PrefixFirst + KeyReplicaCPU, "finite"},
		{"wanted not a number", []string{PrefixFirst + KeyWantedReplicas, "x"}, "", PrefixFirst + KeyWantedReplicas, "whole number"},
		{"queued malformed", []string{PrefixFirst + KeyQueued, "500:256,big"}, "", PrefixFirst + KeyQueued, "item 2 is \"big\""},
		{"queued without CPU: the engine's rule", []string{PrefixFirst + KeyQueued, "500:256,0:128"}, "", PrefixFirst + KeyQueued, "> 0"},
		{"missing model file", []string{PrefixFirst + KeyModel, "/nonexistent/model.json"}, "", PrefixFirst + KeyModel, "loading model /nonexistent/model.json: no such file or directory"},
		{"unknown builtin", []string{PrefixSecond + KeyModel, "builtin:nope"}, "", PrefixSecond + KeyModel, "no built-in model"},
		{"min above the default max: the engine's rule", []string{PrefixFirst + KeyMin, "999"}, "", PrefixFirst + KeyMin, "set max as well"},
		{"min above max: the engine's rule", []string{PrefixFirst + KeyMin, "9", PrefixFirst + KeyMax, "3"}, "", PrefixFirst + KeyMax, "below min"},
		{"zero per branch: the engine's rule", []string{PrefixSecond + KeyPerBranch, "0"}, "", PrefixSecond + KeyPerBranch, "> 0"},
		{"bad rounding: the engine's rule", []string{PrefixFirst + KeyRounding, "up"}, "", PrefixFirst + KeyRounding, `"up"`},
		{"bad usage", []string{PrefixFirst + KeyUsage, "prometheus"}, "", PrefixFirst + KeyUsage, `"nomad" or "apm"`},
		{"two APM hosts", []string{PrefixFirst + KeyUsage, UsageAPM, PrefixSecond + KeyUsage, UsageAPM}, "", PrefixSecond + KeyUsage, "one query"},
	}
	// and the empty string itself, as a template writes it
	empty := ok()
	empty[KeyMaxScaleUp] = ""
	if _, err := parseStrategyConfig(empty, "", ""); err == nil || !strings.Contains(err.Error(), `config "max_scale_up": is empty`) {
		t.Errorf("max_scale_up \"\": %v, want it refused", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseStrategyConfig(withKeys(ok(), c.kv...), c.agentNS, "")
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
			if ce.Key != c.wantKey || !strings.Contains(ce.Reason, c.want) {
				t.Errorf("error %v; want key %q saying %q", err, c.wantKey, c.want)
			}
		})
	}
	// A hold band needs sigmoid outputs: a model without them is refused
	// when the config is read, naming hold_band.
	path := identityOutputsModel(t)
	_, err := parseStrategyConfig(withKeys(ok(), PrefixSecond+KeyModel, path, KeyHoldBand, "1"), "", "")
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != KeyHoldBand || !strings.Contains(ce.Reason, "sigmoid") {
		t.Errorf("identity outputs with hold_band: %v, want an error naming %s", err, KeyHoldBand)
	}
	if _, err := parseStrategyConfig(withKeys(ok(), PrefixSecond+KeyModel, path), "", ""); err != nil {
		t.Errorf("identity outputs without a hold band: %v", err)
	}
	_, err = parseStrategyConfig(withKeys(ok(), PrefixSecond+KeyModel, path, KeyMargin, "-1"), "", "")
	if !errors.As(err, &ce) || ce.Key != KeyMargin || !strings.Contains(ce.Reason, "sigmoid") {
		t.Errorf("identity outputs with a margin: %v, want an error naming %s", err, KeyMargin)
	}
	// A config error from Run is an error, and reads nothing.
	rd := newMemReader(engine.Observation{}, engine.Observation{})
	st := newStrategy(nil, withReader(rd))
	if _, err := st.Run(newEval("bad", withKeys(ok(), KeyRole, "both")), 3); err == nil || !strings.Contains(err.Error(), `"role"`) {
		t.Errorf("Run with a bad role: %v", err)
	}
	if rd.calls != 0 {
		t.Errorf("a bad config read Nomad %d times", rd.calls)
	}
}

// TestReadOptions: the check's read settings reach the reader.
func TestReadOptions(t *testing.T) {
	first, second := flatPair(2, 100)
	rd := newMemReader(first, second)
	cfg := withKeys(flatConfig(RoleSplit), KeyReadConcurrency, "7", KeyMinAnswered, "0.5", KeyWarmup, "90s", PrefixFirst+KeyNodeDatacenter, "dc2")
	runFlat(t, rd, cfg, 4)
	o := rd.opts[len(rd.opts)-1]
	if o.Concurrency != 7 || o.MinAnswered != 0.5 || o.Warmup != 90*time.Second {
		t.Errorf("options %+v", o)
	}
	q := rd.queries[len(rd.queries)-1][0]
	if q.Host.Datacenter != "dc2" || q.Host.Name != "host-a" {
		t.Errorf("first host selector %+v", q.Host)
	}
	// Defaults.
	rd = newMemReader(first, second)
	runFlat(t, rd, flatConfig(RoleSplit), 4)
	if o := rd.opts[0]; o.Concurrency != 0 || o.MinAnswered != 0 || o.Warmup != DefaultWarmup {
		t.Errorf("default options %+v: want the reader's defaults and a %s warm-up", o, DefaultWarmup)
	}
}

// TestModelFileReload: a model file is read through the engine's model
// cache, and a new file is used from the next evaluation on.
func TestModelFileReload(t *testing.T) {
	p, err := engine.Models.LoadFor(engine.RoleSecond, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "capacity.json")
	m := *p.Model()
	if err := engine.WriteModelFile(path, &m); err != nil {
		t.Fatal(err)
	}
	first, second := flatPair(4, 1500)
	rd := newMemReader(first, second)
	clk := &clock{}
	st := newStrategy(nil, withReader(rd), withClock(clk.now))
	cfg := withKeys(flatConfig(RoleSecond), PrefixSecond+KeyModel, path, KeyMinSamples, "1", KeyWindow, "10")
	run := func() *sdk.ScalingAction {
		t.Helper()
		clk.set(time.Unix(first.Samples[0].Time, 0).Add(time.Duration(rd.calls) * time.Minute))
		ev, err := st.Run(newEval("model", cfg), 4)
		if err != nil {
			t.Fatal(err)
		}
		return ev.Action
	}
	digest := func(m *engine.Model) string {
		d, err := m.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d[:len("sha256:")+12]
	}
	if a := run(); !strings.Contains(a.Meta[MetaSecondReason].(string), digest(&m)) {
		t.Fatalf("reason %v does not carry the file's digest %s", a.Meta[MetaSecondReason], digest(&m))
	}
	threshold := 0.9
	m2 := m
	m2.OutputThreshold = &threshold
	if err := engine.WriteModelFile(path, &m2); err != nil {
		t.Fatal(err)
	}
	if a := run(); !strings.Contains(a.Meta[MetaSecondReason].(string), digest(&m2)) {
		t.Errorf("after the file changed, reason %v does not carry the new digest %s", a.Meta[MetaSecondReason], digest(&m2))
	}
}

// BenchmarkStrategyRun: Run with a 60-sample window and the default models,
// Nomad reads served from memory.
func BenchmarkStrategyRun(b *testing.B) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		b.Fatal(err)
	}
	r := unlabelled(vs[0].Request)
	r.FirstModel, r.SecondModel, r.FirstQuota, r.SecondQuota = "", "", nil, nil
	clk := &clock{}
	st := newStrategy(hclog.NewNullLogger(), withReader(newMemReader(r.First, r.Second)), withClock(clk.now))
	cfg := configFor(&r, RoleSplit, 60)
	t0 := time.Unix(r.First.Samples[0].Time, 0)
	evs := [2]*sdk.ScalingCheckEvaluation{}
	run := func(i int) {
		clk.set(t0.Add(time.Duration(i) * time.Minute))
		ev := newEval("bench", cfg)
		evs[i%2] = ev
		if _, err := st.Run(ev, 10); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 60; i++ { // fill the window
		run(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run(60 + i)
	}
	b.StopTimer()
	for _, ev := range evs {
		if _, ok := ev.Action.Meta[MetaFirstDecided]; !ok || strings.HasPrefix(ev.Action.Reason, "no scaling") {
			b.Fatalf("the benchmark did not decide: %s", ev.Action.Reason)
		}
	}
}

// TestNoScalingLogLevels: a window still filling is an expected state,
// logged at info level; a failed read is logged at warn level.
func TestNoScalingLogLevels(t *testing.T) {
	first, second := flatPair(2, 100)
	for _, tc := range []struct {
		name  string
		cfg   map[string]string
		err   error
		level string
	}{
		{"too few samples", withKeys(flatConfig(RoleSplit), KeyMinSamples, "5", KeyWindow, "10"), nil, "[INFO]"},
		{"a failed read", flatConfig(RoleSplit), errors.New("injected: read failed"), "[WARN]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testsupport.SyncBuffer
			rd := newMemReader(first, second)
			rd.err[engine.RoleFirst] = tc.err
			st := newStrategy(hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs}), withReader(rd),
				withClock(func() time.Time { return time.Unix(first.Samples[0].Time, 0) }))
			ev, err := st.Run(newEval("levels", tc.cfg), 4)
			if err != nil || !strings.HasPrefix(ev.Action.Reason, noScalingPrefix) {
				t.Fatalf("the premise fails: %v, %q; want no scaling", err, ev.Action.Reason)
			}
			if line := logs.String(); !strings.Contains(line, tc.level) || !strings.Contains(line, " no scaling:") {
				t.Errorf("log %q: want %s no scaling", line, tc.level)
			}
		})
	}
}

// TestAPMWithoutJob: a host whose usage comes from the APM reads no usage
// from Nomad without a job either (no client stats read to throw away).
func TestAPMWithoutJob(t *testing.T) {
	c, err := parseStrategyConfig(map[string]string{KeyRole: RoleFirst, PrefixFirst + KeyNodeName: "host-a",
		PrefixFirst + KeyUsage: UsageAPM, PrefixFirst + KeyReplicaCPU: "500"}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if q := c.first.query; q.Job != "" || !q.NoStats {
		t.Errorf("query %+v: want no job and no stats read", q)
	}
}

// TestCapNotHeldByHysteresis: per host, with the default hysteresis, a
// desired count above what Nomad can place comes down to it (11 wanted
// where 10 fit was held by the 10% band).
func TestCapNotHeldByHysteresis(t *testing.T) {
	first, second := flatPair(2, 100)
	second.OtherReservedCPUMHz = 0 // 20000 MHz host, 2000 MHz per replica: 10 fit
	second.CPUCapacityMHz = 20000
	cfg := withKeys(flatConfig(RoleSecond), PrefixSecond+KeyMax, "40")
	rd := newMemReader(first, second)
	rd.desired[engine.RoleSecond] = 11
	a := runFlat(t, rd, cfg, 11)
	pl, ok := a.Meta[HostMeta(RoleSecond, MetaPlaceable)].(int)
	if !ok || pl != 10 {
		t.Fatalf("premise: placeable %v, want 10", a.Meta[HostMeta(RoleSecond, MetaPlaceable)])
	}
	if a.Count != 10 || a.Direction != sdk.ScaleDirectionDown {
		t.Errorf("count %d (%v), want down to the 10 Nomad can place: %s", a.Count, a.Direction, a.Reason)
	}
}

// TestCapStartsFromWhatNomadPlaces: read with a job, above what Nomad can
// place the queued excess goes at once and the band, the hold band and the
// step limits apply from what it places (40 where 39 place, the engine at
// 37 within the 10% band: 39; dropping the band for the whole move went to
// 37); without a job the group's pending replicas read as others'
// reservations, so the limits apply from the current count; a quota min
// above the current count is not called a drop; step 1 of a split at an
// unchanged sum holds the other group at what Nomad places, not at its
// queued excess.
func TestCapStartsFromWhatNomadPlaces(t *testing.T) {
	rd := &nomadusage.Reading{Node: nomadusage.NodeState{Status: "ready", Eligibility: "eligible"}}
	withJob := &hostConfig{role: RoleFirst, query: nomadusage.Query{Job: "web"}}
	band := &strategyConfig{placement: PlacementCap, steps: engine.Steps{Hysteresis: engine.Step{Percent: 10}}}
	decide := func(n, placeable, lo, hi int, hold *engine.HoldRange) *engine.HostDecision {
		return &engine.HostDecision{Containers: n, Quota: engine.Quota{Min: lo, Max: hi}, Placement: engine.Placement{Placeable: placeable}, Hold: hold}
	}
	for _, tc := range []struct{ decided, want int }{{37, 39}, {20, 20}, {39, 39}} {
		p := band.plan(withJob, decide(tc.decided, 39, 0, 100, nil), rd, &engine.Observation{RunningReplicas: 39}, 40)
		if p.final != tc.want {
			t.Errorf("hysteresis, engine %d: final %d, want %d: %s", tc.decided, p.final, tc.want, p.summary())
		}
	}
	hold := &strategyConfig{placement: PlacementCap, holdBand: 0.5}
	for _, cur := range []int{39, 40} {
		p := hold.plan(withJob, decide(37, 39, 0, 100, &engine.HoldRange{Band: 0.5, Low: 36, High: 41}), rd, &engine.Observation{RunningReplicas: 39}, cur)
		if p.final != 39 {
			t.Errorf("hold band, current %d: final %d, want 39: %s", cur, p.final, p.summary())
		}
	}
	// Without a job: 10 placed, 6 running (4 pending read as reserved),
	// max_scale_down 1.
	down1 := &strategyConfig{placement: PlacementCap, steps: engine.Steps{MaxDown: engine.Step{Replicas: 1}}}
	if p := down1.plan(&hostConfig{role: RoleFirst}, decide(11, 6, 0, 100, nil), rd, &engine.Observation{RunningReplicas: 6}, 10); p.final != 9 {
		t.Errorf("without a job: final %d, want 9 (max_scale_down 1 from 10): %s", p.final, p.summary())
	}
	if p := band.plan(withJob, decide(14, 10, 15, 20, nil), rd, &engine.Observation{RunningReplicas: 10}, 12); p.final != 15 || strings.Contains(p.summary(), "go at once") {
		t.Errorf("quota min 15 above a current 12: final %d: %s", p.final, p.summary())
	}
	split := &strategyConfig{role: RoleSplit, placement: PlacementCap}
	f := split.plan(withJob, decide(7, 20, 0, 20, nil), rd, &engine.Observation{RunningReplicas: 5}, 5)
	sp := split.plan(&hostConfig{role: RoleSecond, query: nomadusage.Query{Job: "web"}}, decide(10, 10, 0, 20, nil), rd, &engine.Observation{RunningReplicas: 10}, 12)
	a := &sdk.ScalingAction{Meta: map[string]any{}}
	splitAction(a, &f, &sp, 17, false)
	// 7 + 10 keeps the sum, which the agent skips: step 1 drops the
	// second's queued excess, the first held.
	if n, _ := a.Meta[MetaSecondCount].(int); n != 10 || a.Count != 15 {
		t.Errorf("split at an unchanged sum: second %v, count %d; want 5 + 10: %s", a.Meta[MetaSecondCount], a.Count, a.Reason)
	}
}

// TestRunRefuses: what the agent could pass that no evaluation can start
// from is an error naming it, and no action.
func TestRunRefuses(t *testing.T) {
	first, second := flatPair(2, 10)
	for _, c := range []struct {
		name  string
		cfg   map[string]string
		query string
		count int64
		want  string
	}{
		{"a negative count", flatConfig(RoleFirst), "usage", -1, "the target's current count is -1; a count is >= 0"},
		{"APM usage without a query", withKeys(flatConfig(RoleFirst), PrefixFirst+KeyUsage, UsageAPM), "", 2,
			`config "first_usage": is "apm", but the check has no query`},
		{"APM usage on the second host without a query", withKeys(flatConfig(RoleSplit), PrefixSecond+KeyUsage, UsageAPM), " ", 2,
			`config "second_usage": is "apm", but the check has no query`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rd := newMemReader(first, second)
			st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(func() time.Time { return time.Unix(first.Samples[0].Time, 0) }))
			ev := newEval("c", c.cfg)
			ev.Check.Query = c.query
			out, err := st.Run(ev, c.count)
			if err == nil || !strings.Contains(err.Error(), c.want) || out != nil {
				t.Errorf("Run: %v, %v; want no evaluation and an error naming %q", out, err, c.want)
			}
			if rd.calls != 0 {
				t.Errorf("%d reads of Nomad, want none", rd.calls)
			}
		})
	}
}

// TestFutureReadingNotTaken: stats stamped 5 minutes or more ahead of the
// agent's clock (a client's clock set ahead) are not taken: taken, they
// became the window's newest sample and every correctly stamped reading
// after them was refused as older until real time passed them (a day, in
// the review's case), so nothing scaled.
func TestFutureReadingNotTaken(t *testing.T) {
	first, second := flatPair(2, 10)
	rd := newMemReader(first, second)
	clk := &clock{}
	st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(clk.now))
	cfg := withKeys(flatConfig(RoleFirst), KeyMinSamples, "2")
	at := func(i int) time.Time { return time.Unix(first.Samples[i].Time, 0) }
	run := func(now time.Time) *sdk.ScalingAction {
		t.Helper()
		clk.set(now)
		ev, err := st.Run(newEval("c", cfg), 2)
		if err != nil {
			t.Fatal(err)
		}
		return ev.Action
	}
	// The first reading (sample 0) comes a day ahead of the clock.
	if a := run(at(0).Add(-24 * time.Hour)); a.Direction != sdk.ScaleDirectionNone || !strings.Contains(a.Reason, "usage is stamped ahead of this agent's clock") || !strings.Contains(a.Reason, "24h0m0s ahead") {
		t.Fatalf("a reading a day ahead: %s %q; want no scaling, naming how far ahead", a.Direction, a.Reason)
	}
	// Less than 5 minutes ahead is taken (clocks differ a little).
	if a := run(at(1).Add(-4 * time.Minute)); strings.Contains(a.Reason, "ahead of this agent's clock") {
		t.Fatalf("a reading 4 minutes ahead was refused: %q", a.Reason)
	}
	// The window was not held: the next readings, on time, decide.
	if a := run(at(2)); strings.HasPrefix(a.Reason, "no scaling") {
		t.Errorf("after the reading from ahead, a reading on time: %q; want a decision", a.Reason)
	}
}

// TestWindowThatNeverFills: a max_age shorter than the evaluation interval
// times (min_samples - 1) loses every sample before enough gather; each
// evaluation said "keeping the current count" at info level, as for a
// window still filling, forever. After twice min_samples evaluations in a
// row it is a failure (warn level) saying what to raise.
func TestWindowThatNeverFills(t *testing.T) {
	first, second := flatPair(2, 10) // one-minute samples
	rd := newMemReader(first, second)
	clk := &clock{}
	var logs testsupport.SyncBuffer
	st := newStrategy(hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info, JSONFormat: true}), withReader(rd), withClock(clk.now))
	cfg := withKeys(flatConfig(RoleFirst), KeyMaxAge, "15s")
	for i := range 8 {
		clk.set(time.Unix(first.Samples[i].Time, 0))
		ev, err := st.Run(newEval("c", cfg), 2)
		if err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(ev.Action.Reason, "raise max_age above the time between new stats times (the larger of the evaluation interval and the clients' stats collection interval) x 2")
		if want := i+1 > 6; warned != want || !strings.Contains(ev.Action.Reason, "has 1 sample(s); at least 3 are needed") {
			t.Errorf("evaluation %d: reason %q; want the advice %v", i+1, ev.Action.Reason, want)
		}
	}
	if !strings.Contains(logs.String(), `"@level":"warn"`) {
		t.Errorf("no warning logged:\n%s", logs.String())
	}
	// Stats collected less often than the agent evaluates (every 60 s,
	// evaluations every 10 s): readings repeat a stats time, or carry one
	// a little older (another allocation's), and add no sample; the
	// window fills slowly, and max_age is not to blame. In a split, the
	// other host's full window is not starved either.
	slowStats := func(older bool) engine.Observation {
		o, _ := flatPair(2, 10)
		o.Samples = nil
		for i := range 20 {
			at := 1_700_000_000 + 60*int64(i/6)
			if older && i%6 != 0 && i%2 == 1 {
				at -= 2
			}
			o.Samples = append(o.Samples, engine.Sample{Time: at, CPUMHz: 20, MemoryMB: 512})
		}
		return o
	}
	fast, _ := flatPair(2, 10)
	fast.Samples = nil
	for i := range 20 {
		fast.Samples = append(fast.Samples, engine.Sample{Time: 1_700_000_000 + 10*int64(i), CPUMHz: 20, MemoryMB: 512})
	}
	for _, c := range []struct {
		name          string
		role          string
		first, second engine.Observation
	}{
		{"per host, a repeated stats time", RoleFirst, slowStats(false), slowStats(false)},
		{"per host, stats times a little older between", RoleFirst, slowStats(true), slowStats(true)},
		{"split, the other host's window full", RoleSplit, fast, slowStats(false)},
	} {
		srd := newMemReader(c.first, c.second)
		sclk := &clock{}
		sst := newStrategy(hclog.NewNullLogger(), withReader(srd), withClock(sclk.now))
		decidedAt := 0
		for i := range 20 {
			sclk.set(time.Unix(1_700_000_000+10*int64(i), 0))
			ev, err := sst.Run(newEval("c", flatConfig(c.role)), 4)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(ev.Action.Reason, "raise max_age") {
				t.Fatalf("%s, evaluation %d: %q; want no advice on max_age", c.name, i+1, ev.Action.Reason)
			}
			if decidedAt == 0 && !strings.HasPrefix(ev.Action.Reason, "no scaling") {
				decidedAt = i + 1
			}
		}
		if decidedAt != 13 {
			t.Errorf("%s: first decision at evaluation %d, want 13 (the third stats time)", c.name, decidedAt)
		}
	}
	// A decision restarts the count: a window that decided, emptied over
	// a pause (a cooldown longer than max_age) and fills again in
	// min_samples readings gets no advice.
	prd := newMemReader(fast, fast)
	pclk := &clock{}
	pst := newStrategy(hclog.NewNullLogger(), withReader(prd), withClock(pclk.now))
	pcfg := withKeys(flatConfig(RoleFirst), KeyMaxAge, "25s")
	at := time.Unix(1_700_000_000, 0)
	decisions := 0
	for i := range 20 {
		if i%5 == 0 && i > 0 {
			// a pause: the window empties; the reader's next sample
			// comes with the clock
			at = at.Add(time.Minute)
			prd.next[engine.RoleFirst] = int(at.Sub(time.Unix(1_700_000_000, 0)) / (10 * time.Second))
		}
		pclk.set(at)
		ev, err := pst.Run(newEval("c", pcfg), 4)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ev.Action.Reason, "raise max_age") {
			t.Fatalf("refilling after a pause, evaluation %d: %q; want no advice", i+1, ev.Action.Reason)
		}
		if !strings.HasPrefix(ev.Action.Reason, "no scaling") {
			decisions++
		}
		at = at.Add(10 * time.Second)
	}
	if decisions < 4 {
		t.Errorf("%d decisions over 4 refills, want the window to fill and decide in each", decisions)
	}
}

// TestReloadWhileParsing: an agent reload (SetConfig) between parsing a
// check's config and caching it left the config parsed with the old
// agent namespace in the new configuration's cache, so the check read the
// job in the old namespace until the next reload.
func TestReloadWhileParsing(t *testing.T) {
	first, second := flatPair(2, 10)
	st := newStrategy(hclog.NewNullLogger(), withReader(newMemReader(first, second)))
	agent := func(ns string) map[string]string {
		return map[string]string{AgentKeyNomadAddress: "http://127.0.0.1:1", AgentKeyNomadNamespace: ns}
	}
	must(t, st.SetConfig(agent("old")))
	reloaded := false
	st.afterParse = func() {
		if !reloaded {
			reloaded = true
			must(t, st.SetConfig(agent("new")))
		}
	}
	check := flatConfig(RoleFirst)
	c, _, err := st.config(check)
	if err != nil {
		t.Fatal(err)
	}
	if !reloaded || c.first.query.Namespace != "old" {
		t.Fatalf("reloaded %v, namespace %q: the reload did not come between parse and cache", reloaded, c.first.query.Namespace)
	}
	c, _, err = st.config(check)
	if err != nil {
		t.Fatal(err)
	}
	if c.first.query.Namespace != "new" {
		t.Errorf("after the reload the check reads namespace %q, want the agent's new one", c.first.query.Namespace)
	}
}

func TestNReplicas(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 new replicas count"}, {1, "1 new replica counts"}, {6, "6 new replicas count"}} {
		if got := nReplicas(c.n, "new replica") + " " + verb(c.n, "counts", "count"); got != c.want {
			t.Errorf("n %d: %q, want %q", c.n, got, c.want)
		}
	}
}

// TestWindowEmptiedByCooldown: when the samples read before a scaling
// action aged out before the next evaluation (a cooldown longer than
// max_age), the reason says so and what to change, at warn level, instead
// of reading as a window still filling (found by a user trial: two such
// lines after every action); not after a decision that changed nothing.
func TestWindowEmptiedByCooldown(t *testing.T) {
	first, second := flatPair(2, 10) // samples 60 s apart
	cfg := withKeys(flatConfig(RoleSplit), KeyMaxAge, "5m")
	// rig runs a strategy's evaluations at the first three samples' times
	// with the agent's count at count, then one at the tenth's (a 7-minute
	// gap), and returns the first decision and the last reason.
	rig := func(count int64) (*sdk.ScalingAction, string) {
		rd := newMemReader(first, second)
		clk := &clock{}
		st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(clk.now))
		run := func(at int64) *sdk.ScalingAction {
			t.Helper()
			clk.set(time.Unix(at, 0))
			ev, err := st.Run(newEval("cooldown", cfg), count)
			if err != nil {
				t.Fatal(err)
			}
			return ev.Action
		}
		var a *sdk.ScalingAction
		for _, s := range first.Samples[:3] {
			a = run(s.Time)
		}
		if strings.HasPrefix(a.Reason, noScalingPrefix) {
			t.Fatalf("the premise fails: no decision on a full window: %s", a.Reason)
		}
		rd.mu.Lock()
		rd.next[engine.RoleFirst], rd.next[engine.RoleSecond] = 9, 9
		rd.mu.Unlock()
		return a, run(first.Samples[9].Time).Reason
	}
	// A scaling action, then a 7-minute cooldown.
	a, r := rig(4)
	if a.Direction == sdk.ScaleDirectionNone {
		t.Fatalf("the premise fails: no scaling action from 4: %s", a.Reason)
	}
	want := "the last scaling action was 7m0s ago and the samples read before it aged out (max_age 5m0s)"
	if !strings.HasPrefix(r, noScalingPrefix+"keeping the current count") || !strings.Contains(r, want) {
		t.Errorf("reason %q: want it to say %q", r, want)
	}
	// No action (the count stays), then 7 minutes without a reading (an
	// outage, a paused policy): no cooldown to blame.
	if _, r := rig(a.Count); !strings.HasPrefix(r, noScalingPrefix+"keeping the current count") || strings.Contains(r, "aged out") {
		t.Errorf("after a decision that kept the count: %q", r)
	}
}

// apmRig is a strategy reading first and second, the first host's usage
// from the APM; run evaluates cfg at Unix time at, the agent's count at
// count, with three APM points a minute apart of cpu MHz, the last at at.
func apmRig(t *testing.T, first, second engine.Observation, cfg map[string]string) (*memReader, func(at int64, cpu float64, count int64) *sdk.ScalingAction) {
	return apmRigLogged(t, first, second, cfg, hclog.NewNullLogger())
}

// apmRigLogged is apmRig with the strategy's logger.
func apmRigLogged(t *testing.T, first, second engine.Observation, cfg map[string]string, logger hclog.Logger) (*memReader, func(at int64, cpu float64, count int64) *sdk.ScalingAction) {
	rd := newMemReader(first, second)
	clk := &clock{}
	st := newStrategy(logger, withReader(rd), withClock(clk.now))
	return rd, func(at int64, cpu float64, count int64) *sdk.ScalingAction {
		t.Helper()
		clk.set(time.Unix(at, 0))
		ev := newEval("apm", cfg)
		for i := int64(2); i >= 0; i-- {
			ev.Metrics = append(ev.Metrics, sdk.TimestampedMetric{Timestamp: time.Unix(at-60*i, 0), Value: cpu})
		}
		out, err := st.Run(ev, count)
		if err != nil {
			t.Fatal(err)
		}
		return out.Action
	}
}

// TestAPMStoppedGroupNotRestarted: with usage = "apm", a group stopped for
// its usage is not started again at its request: the APM's points read
// while a replica ran stand for a new one (as the Nomad-read window's
// do), until a job version with another demand.
func TestAPMStoppedGroupNotRestarted(t *testing.T) {
	busy, second := flatPair(1, 20000) // one replica using all 20,000 MHz of its host
	cfg := withKeys(flatConfig(RoleFirst), PrefixFirst+KeyUsage, UsageAPM, KeyMaxScaleUp, StepNone, KeyMaxScaleDown, StepNone, KeyHysteresis, StepNone, PrefixFirst+KeyMargin, busyMargin)
	var logs testsupport.SyncBuffer
	rd, run := apmRigLogged(t, busy, second, cfg, hclog.New(&hclog.LoggerOptions{Level: hclog.Info, JSONFormat: true, Output: &logs}))
	// count counts the log lines with message msg at level.
	count := func(msg, level string) int {
		n := 0
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["@message"] == msg && rec["@level"] == level {
				n++
			}
		}
		return n
	}
	t0 := busy.Samples[0].Time
	if a := run(t0+120, 20000, 1); a.Count != 0 {
		t.Fatalf("the premise fails: the busy replica is kept: %d (%s)", a.Count, a.Reason)
	}
	// Stopped: none runs, the APM reads no usage.
	stopped := stoppedCopy(busy)
	rd.setFirst(stopped)
	for i, at := range []int64{t0 + 600, t0 + 7200} {
		a := run(at, 0, 0)
		if a.Count != 0 || !strings.Contains(a.Reason, "counted at what the replicas that stopped used") {
			t.Errorf("evaluation %d after the stop: count %d (%s); want 0, refused on what the stopped replica used", i+1, a.Count, a.Reason)
		}
	}
	// Held at 0 by what it used: one WARN over both evaluations, not one
	// each (a soak trial saw a group parked for 17 minutes with debug
	// lines only).
	if n := count("group stays at 0", "warn"); n != 1 {
		t.Errorf("%d \"group stays at 0\" WARN lines over two evaluations held at 0, want 1:\n%s", n, logs.String())
	}
	// A job version with another request: the new replicas count at it.
	stopped.ReplicaCPUDemandMHz = 1000
	rd.setFirst(stopped)
	if a := run(t0+7300, 0, 0); a.Count == 0 {
		t.Errorf("a job version with a 1000 MHz request: still 0 (%s)", a.Reason)
	}
	if n := count("group no longer held at 0", "info"); n != 1 {
		t.Errorf("%d \"group no longer held at 0\" INFO lines after it started again, want 1:\n%s", n, logs.String())
	}
}

// TestAPMRefusedPointsNotKept: with usage = "apm", points the engine
// refuses (a NaN from a query's division by zero, an infinite or
// impossible figure) are not kept to stand for the replicas once none run:
// that evaluation is refused, naming the sample, and once the group is at
// 0 and the query reads clean points it decides again (before, the refused
// points came back at every evaluation with none running, and a group at
// 0 was never started again). A refused evaluation after a clean one
// leaves the clean one's points standing.
func TestAPMRefusedPointsNotKept(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bad       float64
		goodFirst bool
	}{
		{"NaN", math.NaN(), false},
		{"+Inf", math.Inf(1), false},
		{"above the bound", 5e9, false},
		{"NaN after a clean evaluation", math.NaN(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idle, second := flatPair(1, 500)
			cfg := withKeys(flatConfig(RoleFirst), PrefixFirst+KeyUsage, UsageAPM, KeyMaxScaleUp, StepNone, KeyMaxScaleDown, StepNone, KeyHysteresis, StepNone)
			if tc.goodFirst { // its premise: a replica using the whole host refused
				cfg = withKeys(cfg, PrefixFirst+KeyMargin, busyMargin)
			}
			rd, run := apmRig(t, idle, second, cfg)
			t0 := idle.Samples[0].Time
			if tc.goodFirst {
				if a := run(t0+60, 20000, 1); a.Count != 0 {
					t.Fatalf("the premise fails: a replica using the whole host is kept: %d (%s)", a.Count, a.Reason)
				}
			}
			a := run(t0+120, tc.bad, 1)
			if a.Count != 1 || !strings.Contains(a.Reason, "no scaling") || !strings.Contains(a.Reason, "usage_samples[0].cpu_mhz") {
				t.Fatalf("evaluation on %v: count %d (%s); want it refused, naming the sample, the count kept", tc.bad, a.Count, a.Reason)
			}
			stopped := stoppedCopy(idle)
			rd.setFirst(stopped)
			for i, at := range []int64{t0 + 600, t0 + 1200} {
				a := run(at, 0, 0)
				if strings.Contains(a.Reason, "no scaling") {
					t.Fatalf("evaluation %d with none running, the query clean: %s; the refused points came back", i+1, a.Reason)
				}
				if tc.goodFirst {
					// The clean evaluation's points stand: the replica
					// that used the whole host is not started again.
					if a.Count != 0 || !strings.Contains(a.Reason, "counted at what the replicas that stopped used") {
						t.Errorf("evaluation %d with none running: count %d (%s); want 0, on what the stopped replica used", i+1, a.Count, a.Reason)
					}
				} else if a.Count == 0 {
					t.Errorf("evaluation %d with none running, the query clean: still 0 (%s)", i+1, a.Reason)
				}
			}
		})
	}
}

// TestSplitLoweringNotAppliedThroughRun: through Run, a split at an
// unchanged sum whose shrinking group is overloaded lowers the sum first;
// evaluated again at the same counts (the agent did not apply it: a policy
// min above the lowered sum), it raises the sum instead.
func TestSplitLoweringNotAppliedThroughRun(t *testing.T) {
	busy, _ := flatPair(4, 7000) // four replicas at 7,000 MHz on a 20,000 MHz host
	idle, _ := flatPair(3, 10)
	keys := []string{KeyMaxScaleUp, StepNone, KeyMaxScaleDown, StepNone, KeyHysteresis, StepNone, KeyPlacement, PlacementReport}
	// evaluate runs a fresh strategy until its first decision, then once
	// more at the same counts, with the agent's count at 7 (4 + 3).
	evaluate := func(cfg map[string]string) (first, again *sdk.ScalingAction) {
		rd := newMemReader(busy, idle)
		clk := &clock{}
		st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(clk.now))
		for _, s := range busy.Samples {
			clk.set(time.Unix(s.Time, 0))
			ev, err := st.Run(newEval("lower", cfg), 7)
			if err != nil {
				t.Fatal(err)
			}
			if first != nil {
				return first, ev.Action
			}
			if !strings.HasPrefix(ev.Action.Reason, noScalingPrefix) {
				first = ev.Action
			}
		}
		t.Fatal("the premise fails: fewer than two decisions over the window")
		return nil, nil
	}
	a, _ := evaluate(withKeys(flatConfig(RoleSplit), keys...))
	f, _ := a.Meta[MetaFirstDecided].(int)
	if f >= 4 || f < 1 {
		t.Fatalf("the premise fails: the engine keeps %d of the 4 busy replicas (%s)", f, a.Reason)
	}
	// The second host's quota max makes the split's sum 7, unchanged.
	cfg := withKeys(flatConfig(RoleSplit), append(keys, PrefixSecond+KeyMax, strconv.Itoa(7-f))...)
	first, again := evaluate(cfg)
	if first.Count != int64(f+3) || first.Meta[MetaStep] != stepFirstOfTwo {
		t.Fatalf("first step: count %d (%v), want %d + 3 = %d, lowering (%s)", first.Count, first.Meta[MetaStep], f, f+3, first.Reason)
	}
	if again.Count != int64(4+7-f) || again.Meta[MetaStep] != stepFirstOfTwo {
		t.Errorf("at the same counts again: count %d (%v), want 4 + %d = %d, raising (%s)", again.Count, again.Meta[MetaStep], 7-f, 4+7-f, again.Reason)
	}
}

// TestAPMStampedAhead: the check's metrics stamped StatsLag or more ahead
// of the agent's clock (an APM's clock set ahead, or times in another
// unit) are not used, the reason naming both times; they passed max_age
// for as long as they were ahead. A little ahead, they are used.
func TestAPMStampedAhead(t *testing.T) {
	busy, second := flatPair(1, 20000) // one replica using all 20,000 MHz of its host
	cfg := withKeys(flatConfig(RoleFirst), PrefixFirst+KeyUsage, UsageAPM, KeyMaxScaleUp, StepNone, KeyMaxScaleDown, StepNone, KeyHysteresis, StepNone, PrefixFirst+KeyMargin, busyMargin)
	now := time.Unix(busy.Samples[0].Time+120, 0)
	for _, tc := range []struct {
		name  string
		ahead time.Duration
		used  bool
	}{
		{"a minute ahead", time.Minute, true},
		{"just under the lag", nomadusage.StatsLag - time.Second, true},
		{"at the lag", nomadusage.StatsLag, false},
		{"an hour ahead", time.Hour, false},
		{"a year ahead", 365 * 24 * time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{}
			clk.set(now)
			st := newStrategy(hclog.NewNullLogger(), withReader(newMemReader(busy, second)), withClock(clk.now))
			ev := newEval("apm", cfg)
			newest := now.Add(tc.ahead)
			for _, back := range []time.Duration{2 * time.Minute, time.Minute, 0} { // oldest first, as the agent sorts them
				ev.Metrics = append(ev.Metrics, sdk.TimestampedMetric{Timestamp: newest.Add(-back), Value: 20000})
			}
			out, err := st.Run(ev, 1)
			if err != nil {
				t.Fatal(err)
			}
			a := out.Action
			if tc.used {
				if a.Count != 0 || strings.HasPrefix(a.Reason, noScalingPrefix) {
					t.Fatalf("count %d (%s); want the busy replica refused on the metrics", a.Count, a.Reason)
				}
				return
			}
			want := fmt.Sprintf("usage is stamped ahead of this agent's clock: the check's query gave a metric at %s, %s ahead of %s",
				newest.UTC().Format(time.RFC3339), tc.ahead, now.UTC().Format(time.RFC3339))
			if a.Count != 1 || !strings.HasPrefix(a.Reason, noScalingPrefix) || !strings.Contains(a.Reason, want) {
				t.Fatalf("count %d (%s); want the count kept, no scaling: %s", a.Count, a.Reason, want)
			}
		})
	}
}

// TestTraceExplainsTheChecksHosts: the trace-level account of a decision
// explains the hosts the check scales: a per-host check's its own host
// alone (the other slot's decision is discarded, and read as another
// host's), a split check's both.
func TestTraceExplainsTheChecksHosts(t *testing.T) {
	busy, second := flatPair(1, 500)
	for _, tc := range []struct {
		role string
		want []string // the hosts explained, in order
	}{
		{RoleFirst, []string{"first"}},
		{RoleSecond, []string{"second"}},
		{RoleSplit, []string{"first", "second"}},
	} {
		t.Run(tc.role, func(t *testing.T) {
			var logs testsupport.SyncBuffer
			usage := PrefixFirst + KeyUsage
			if tc.role == RoleSecond {
				usage = PrefixSecond + KeyUsage
			}
			cfg := withKeys(flatConfig(tc.role), usage, UsageAPM)
			_, run := apmRigLogged(t, busy, second, cfg, hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, JSONFormat: true, Output: &logs}))
			// (a split's other host is read from Nomad: its window fills
			// over evaluations)
			for i := int64(0); ; i++ {
				a := run(busy.Samples[0].Time+120+60*i, 500, 1)
				if !strings.HasPrefix(a.Reason, noScalingPrefix) {
					break
				}
				if i == 5 {
					t.Fatalf("the premise fails: no decision (%s)", a.Reason)
				}
			}
			var explains []string
			for _, line := range strings.Split(logs.String(), "\n") {
				var rec map[string]any
				if json.Unmarshal([]byte(line), &rec) == nil && rec["@message"] == "decision" {
					e, _ := rec["explain"].(string)
					explains = append(explains, e)
				}
			}
			if len(explains) != 1 {
				t.Fatalf("%d decision lines, want 1:\n%s", len(explains), logs.String())
			}
			var hosts []string
			for _, l := range strings.Split(explains[0], "\n") {
				if role, _, ok := strings.Cut(l, " host "); ok && !strings.HasPrefix(l, " ") {
					hosts = append(hosts, role)
				}
			}
			if !slices.Equal(hosts, tc.want) {
				t.Errorf("the account explains hosts %q, want %q:\n%s", hosts, tc.want, explains[0])
			}
		})
	}
}

// TestAPMStoppedHorizon: the APM's points stand for a stopped replica
// only when the first evaluation with none running comes within ten max
// ages of the last with replicas running (not after a policy paused for
// hours); once taken, they stand past that.
func TestAPMStoppedHorizon(t *testing.T) {
	busy, second := flatPair(1, 20000)
	stopped := stoppedCopy(busy)
	cfg := withKeys(flatConfig(RoleFirst), PrefixFirst+KeyUsage, UsageAPM, KeyMaxAge, "5m",
		KeyMaxScaleUp, StepNone, KeyMaxScaleDown, StepNone, KeyHysteresis, StepNone, PrefixFirst+KeyMargin, busyMargin)
	t0 := busy.Samples[0].Time
	for _, tc := range []struct {
		name     string
		stops    []int64 // evaluations with none running, seconds after the busy one
		restarts bool    // at the last of them
	}{
		{"within ten max ages, and hours after", []int64{600, 3 * 3600}, false},
		{"more than ten max ages after", []int64{51 * 60}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd, run := apmRig(t, busy, second, cfg)
			busyAt := t0 + 120
			if a := run(busyAt, 20000, 1); a.Count != 0 {
				t.Fatalf("the premise fails: the busy replica is kept: %d (%s)", a.Count, a.Reason)
			}
			rd.setFirst(stopped)
			var a *sdk.ScalingAction
			for _, d := range tc.stops {
				a = run(busyAt+d, 0, 0)
			}
			if restarted := a.Count > 0; restarted != tc.restarts {
				t.Errorf("count %d, restarted %v, want %v (%s)", a.Count, restarted, tc.restarts, a.Reason)
			}
		})
	}
}

// TestNoCooldownHintAfterScaleUpFromZero: after a scale-up from 0, the
// readings taken while none ran are left out of the window whatever their
// age; too few samples then is no max_age to raise.
func TestNoCooldownHintAfterScaleUpFromZero(t *testing.T) {
	idle, _ := flatPair(0, 0)
	running, second := flatPair(2, 10)
	rd := newMemReader(idle, second)
	clk := &clock{}
	st := newStrategy(hclog.NewNullLogger(), withReader(rd), withClock(clk.now))
	cfg := withKeys(flatConfig(RoleFirst), KeyMaxAge, "5m")
	var a *sdk.ScalingAction
	for _, s := range idle.Samples[:8] { // 7 minutes at 0, each decision a scale-up
		clk.set(time.Unix(s.Time, 0))
		ev, err := st.Run(newEval("from-zero", cfg), 0)
		if err != nil {
			t.Fatal(err)
		}
		a = ev.Action
	}
	if a.Direction != sdk.ScaleDirectionUp {
		t.Fatalf("the premise fails: no scale-up from 0: %s", a.Reason)
	}
	rd.setFirst(running)
	clk.set(time.Unix(running.Samples[8].Time, 0))
	ev, err := st.Run(newEval("from-zero", cfg), 2)
	if err != nil {
		t.Fatal(err)
	}
	if r := ev.Action.Reason; !strings.HasPrefix(r, noScalingPrefix+"keeping the current count") || strings.Contains(r, "aged out") {
		t.Errorf("after a scale-up from 0: %q; want a window filling, no max_age advice", r)
	}
}

// TestHysteresisHoldsNoSafetyMove: a replica band ("2") holds a wobble,
// but not a scale-down the engine made because the running replicas do
// not fit (a user trial saw one overloaded replica kept running for
// good), nor a group's first replica from 0 (it would never start).
func TestHysteresisHoldsNoSafetyMove(t *testing.T) {
	c := &strategyConfig{placement: PlacementReport, steps: engine.Steps{Hysteresis: engine.Step{Replicas: 2}}}
	rd := &nomadusage.Reading{Node: nomadusage.NodeState{Status: "ready", Eligibility: "eligible"}}
	for _, tc := range []struct {
		name            string
		engine, running int
		current         int
		limit           string
		want            int
		note            string
	}{
		{"one overloaded replica", 0, 1, 1, engine.LimitCPU, 0, "hysteresis 2 not applied: the running replicas do not fit"},
		{"one of eight overloaded", 7, 8, 8, engine.LimitMemory, 7, "hysteresis 2 not applied"},
		{"the first replica", 1, 0, 0, engine.LimitCPU, 1, "hysteresis 2 not applied: the group's first replica"},
		{"a wobble up", 9, 8, 8, engine.LimitCPU, 8, "hysteresis: a change of 1"},
		{"fewer wanted", 7, 8, 8, engine.LimitDemand, 8, "hysteresis: a change of -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hd := &engine.HostDecision{Containers: tc.engine, Limit: tc.limit, Quota: engine.Quota{Min: 0, Max: 20}, Placement: engine.Placement{Placeable: 20}}
			p := c.plan(&hostConfig{role: RoleFirst}, hd, rd, &engine.Observation{RunningReplicas: tc.running}, tc.current)
			if p.final != tc.want || !strings.Contains(p.summary(), tc.note) {
				t.Errorf("final %d, want %d; summary %q, want it to say %q", p.final, tc.want, p.summary(), tc.note)
			}
		})
	}
}

// TestDecidedLineNamesItsHosts: the "decided" line gives the count of each
// host the check decided, and no other: a per-host role's line had the
// other host as <nil> (user trial).
func TestDecidedLineNamesItsHosts(t *testing.T) {
	for _, tc := range []struct {
		role       string
		meta       map[string]any
		want, none []string
	}{
		{RoleFirst, map[string]any{MetaFirstCount: 6}, []string{`"first":6`}, []string{`"second"`}},
		{RoleSecond, map[string]any{MetaSecondCount: 4}, []string{`"second":4`}, []string{`"first"`}},
		{RoleSplit, map[string]any{MetaFirstCount: 6, MetaSecondCount: 4}, []string{`"first":6`, `"second":4`}, nil},
	} {
		t.Run(tc.role, func(t *testing.T) {
			keys := map[string]string{KeyRole: tc.role, KeyJob: "web"}
			for _, p := range []string{PrefixFirst, PrefixSecond} {
				if tc.role == RoleSplit || p == tc.role+"_" {
					keys[p+KeyNodeName], keys[p+KeyGroup] = "host", "g"+p
				}
			}
			c, err := parseStrategyConfig(keys, "", "")
			if err != nil {
				t.Fatal(err)
			}
			var logs testsupport.SyncBuffer
			s := NewStrategy(hclog.New(&hclog.LoggerOptions{Level: hclog.Info, JSONFormat: true, Output: &logs}))
			eval := &sdk.ScalingCheckEvaluation{Check: &sdk.ScalingPolicyCheck{Name: "activation"},
				Action: &sdk.ScalingAction{Count: 6, Direction: sdk.ScaleDirectionUp, Reason: "r", Meta: tc.meta}}
			s.log(eval, c, outcomeDecided)
			line := logs.String()
			if !strings.Contains(line, `"@message":"decided"`) {
				t.Fatalf("no decided line: %s", line)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %s lacks %s", line, w)
				}
			}
			for _, n := range tc.none {
				if strings.Contains(line, n) {
					t.Errorf("line %s has %s", line, n)
				}
			}
		})
	}
}

// identityOutputsModel writes the built-in capacity processor with
// identity outputs (no logits for a margin or a hold band to move) to a
// file, and returns its path.
func identityOutputsModel(t *testing.T) string {
	t.Helper()
	b, err := engine.Builtin(engine.BuiltinCapacity)
	if err != nil {
		t.Fatal(err)
	}
	m := *b.Model()
	m.Layers = append([]engine.Layer(nil), m.Layers...)
	m.Layers[len(m.Layers)-1].Activation = engine.ActivationIdentity
	path := filepath.Join(t.TempDir(), "identity.json")
	if err := engine.WriteModelFile(path, &m); err != nil {
		t.Fatal(err)
	}
	return path
}

// decidedMeta is the count the engine decided for the host of role, from
// an action's meta (MetaFirstDecided, MetaSecondDecided).
func decidedMeta(t *testing.T, meta map[string]any, role string) int {
	t.Helper()
	key := MetaFirstDecided
	if role == RoleSecond {
		key = MetaSecondDecided
	}
	d, ok := meta[key].(int)
	if !ok {
		t.Fatalf("no %s meta: %v", key, meta)
	}
	return d
}
