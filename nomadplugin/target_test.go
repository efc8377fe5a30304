package nomadplugin

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/sdk"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
)

// world is a stand-in with two hosts and a job with one group on each.
type world struct {
	s            *nomadstandin.Server
	nodeA, nodeB string
	agentConfig  map[string]string
}

const (
	wJob    = "web"
	wFirst  = "front"
	wSecond = "back"
)

func newWorld(t *testing.T, first, second int) *world {
	t.Helper()
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	w := &world{s: s}
	if w.nodeA, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 20000, MemoryMB: 65536}); err != nil {
		t.Fatal(err)
	}
	if w.nodeB, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-b", CPUMHz: 20000, MemoryMB: 65536}); err != nil {
		t.Fatal(err)
	}
	err = s.AddJob(nomadstandin.JobSpec{ID: wJob, Groups: []nomadstandin.GroupSpec{
		{Name: wFirst, Count: first, CPUMHz: 2000, MemoryMB: 512, NodeID: w.nodeA},
		{Name: wSecond, Count: second, CPUMHz: 2000, MemoryMB: 512, NodeID: w.nodeB},
	}})
	if err != nil {
		t.Fatal(err)
	}
	w.agentConfig = map[string]string{AgentKeyNomadAddress: s.URL()}
	return w
}

func (w *world) target(t *testing.T, kv ...string) *Target {
	t.Helper()
	tg := NewTarget(hclog.NewNullLogger())
	if err := tg.SetConfig(withKeys(w.agentConfig, kv...)); err != nil {
		t.Fatal(err)
	}
	return tg
}

func (w *world) counts(t *testing.T) [2]int {
	t.Helper()
	a, err := w.s.Group("", wJob, wFirst)
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.s.Group("", wJob, wSecond)
	if err != nil {
		t.Fatal(err)
	}
	return [2]int{a.Count, b.Count}
}

// puts lists the stand-in's writes since from: path and status.
func (w *world) puts(from int) []nomadstandin.Request {
	var out []nomadstandin.Request
	for _, r := range w.s.Requests()[from:] {
		if r.Method == http.MethodPut || r.Method == http.MethodPost {
			out = append(out, r)
		}
	}
	return out
}

var tcfg = map[string]string{TargetKeyJob: wJob, TargetKeyFirstGroup: wFirst, TargetKeySecondGroup: wSecond}

func TestTargetStatus(t *testing.T) {
	w := newWorld(t, 3, 2)
	tg := w.target(t)
	st, err := tg.Status(tcfg)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Ready || st.Count != 5 || st.Meta[MetaGroupRunningPrefix+wFirst] != "3" {
		t.Fatalf("status %+v", st)
	}
	if _, ok := st.Meta[sdk.TargetStatusMetaKeyLastEvent]; ok {
		t.Errorf("last event reported before any event")
	}
	// The scaling events the target records give the cooldown its last
	// event time.
	before := uint64(time.Now().UnixNano())
	if err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(4, 2, 0, 10, 0, 10), Reason: "r"}, tcfg); err != nil {
		t.Fatal(err)
	}
	st, err = tg.Status(tcfg)
	if err != nil {
		t.Fatal(err)
	}
	if st.Count != 6 {
		t.Errorf("after scaling: count %d, want 6 (%+v)", st.Count, st)
	}
	last, err := strconv.ParseUint(st.Meta[sdk.TargetStatusMetaKeyLastEvent], 10, 64)
	if err != nil {
		t.Errorf("after scaling: last event meta %q: %v", st.Meta[sdk.TargetStatusMetaKeyLastEvent], err)
	} else if last < before {
		t.Errorf("last event %d is before the scale (%d)", last, before)
	}
	status := func(what string) *sdk.TargetStatus {
		t.Helper()
		st, err := tg.Status(tcfg)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return st
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Deployment in progress: not ready. Stopped job: not ready.
	must(w.s.SetDeploymentActive("", wJob, true))
	if status("deployment").Ready {
		t.Errorf("ready during a deployment")
	}
	must(w.s.SetDeploymentActive("", wJob, false))
	if !status("after the deployment").Ready {
		t.Errorf("not ready after the deployment")
	}
	must(w.s.SetJobStopped("", wJob, true))
	if st := status("stopped"); st.Ready || st.Count != 0 {
		t.Errorf("stopped job: %+v", st)
	}
	// Unknown job: no target.
	if st, err := tg.Status(withKeys(tcfg, TargetKeyJob, "nope")); st != nil || err != nil {
		t.Errorf("unknown job: %+v, %v; want nil, nil", st, err)
	}
	if _, err := tg.Status(withKeys(tcfg, TargetKeySecondGroup, "nope")); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown group: %v", err)
	}
	// 5xx is an error.
	w.s.InjectFault(nomadstandin.Fault{Status: 503, Times: 1})
	if _, err := tg.Status(tcfg); err == nil {
		t.Errorf("5xx gave no error")
	}
}

// TestTargetDeadlines: Status and Scale end within their budgets when
// Nomad does not answer, and say which call ran out.
func TestTargetDeadlines(t *testing.T) {
	w := newWorld(t, 2, 2)
	tg := w.target(t, PluginKeyStatusTimeout, "300ms", PluginKeyScaleTimeout, "500ms")
	for _, tc := range []struct {
		name   string
		fault  nomadstandin.Fault
		call   func() error
		budget time.Duration
		want   string
	}{
		{"status: a hung scale status read", nomadstandin.Fault{Method: http.MethodGet, Path: "/v1/job/" + wJob + "/scale", Hang: true},
			func() error { _, err := tg.Status(tcfg); return err }, 300 * time.Millisecond, "read scale status of job \"web\": the status_timeout budget of 300ms ran out"},
		{"status: the agent's gRPC deadline is shorter", nomadstandin.Fault{Method: http.MethodGet, Path: "/v1/job/" + wJob + "/scale", Hang: true},
			func() error { _, err := tg.Status(withKeys(tcfg, agentKeyGRPC, "200ms")); return err }, 180 * time.Millisecond, "status_timeout budget of 180ms"},
		{"scale: a hung write", nomadstandin.Fault{Method: http.MethodPut, Hang: true},
			func() error { return tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(4, 2, 0, 10, 0, 10)}, tcfg) }, 500 * time.Millisecond, "the scale_timeout budget of 500ms ran out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.s.InjectFault(tc.fault)
			defer w.s.ClearFaults()
			start := time.Now()
			err := tc.call()
			el := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if el > tc.budget+2*time.Second {
				t.Errorf("the call took %s with a budget of %s", el, tc.budget)
			}
			if got := w.counts(t); got != [2]int{2, 2} {
				t.Errorf("counts %v after a call that ran out of time", got)
			}
		})
	}
}

func TestTargetConfigErrors(t *testing.T) {
	w := newWorld(t, 1, 1)
	tg := w.target(t)
	cases := []struct{ name, key, value, wantKey string }{
		{"no job", TargetKeyJob, "", TargetKeyJob},
		{"no first group", TargetKeyFirstGroup, "", TargetKeyFirstGroup},
		{"no second group", TargetKeySecondGroup, "", TargetKeySecondGroup},
		{"same groups", TargetKeySecondGroup, wFirst, TargetKeySecondGroup},
		{"bad dry run", TargetKeyDryRun, "maybe", TargetKeyDryRun},
		{"unknown key", "frist_group", "x", "frist_group"},
		{"namespace *", TargetKeyNamespace, "*", TargetKeyNamespace},
		{"agent namespace *", agentKeyNamespace, "*", TargetKeyNamespace},
		{"quota not a number", TargetKeyFirstMax, "lots", TargetKeyFirstMax},
		{"negative quota min: the engine's rule", TargetKeySecondMin, "-1", TargetKeySecondMin},
		{"quota max above the engine's limit", TargetKeyFirstMax, "99999999", TargetKeyFirstMax},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := withKeys(tcfg, c.key, c.value)
			for _, call := range []func() error{
				func() error { _, err := tg.Status(cfg); return err },
				func() error { return tg.Scale(sdk.ScalingAction{Count: 9}, cfg) },
			} {
				var ce *ConfigError
				if err := call(); !errors.As(err, &ce) || ce.Key != c.wantKey {
					t.Errorf("err = %v, want a ConfigError for %q", err, c.wantKey)
				}
			}
			if got := w.counts(t); got != [2]int{1, 1} {
				t.Errorf("a bad config changed the counts to %v", got)
			}
		})
	}
	// The agent's own target keys are defaults the policy's keys override.
	agent := map[string]string{agentKeyJob: wJob, agentKeyGroup: wFirst, agentKeyNamespace: "default", TargetKeySecondGroup: wSecond}
	if st, err := tg.Status(agent); err != nil || st == nil || st.Count != 2 {
		t.Errorf("status from the agent's Job/Group/Namespace keys: %+v, %v", st, err)
	}
	if st, err := tg.Status(withKeys(agent, TargetKeyJob, "nope")); st != nil || err != nil {
		t.Errorf("the policy's job did not override the agent's Job: %+v, %v", st, err)
	}
	// A plugin config key the target does not know is refused.
	if err := NewTarget(nil).SetConfig(withKeys(w.agentConfig, "scale_timout", "5s")); err == nil || !strings.Contains(err.Error(), "scale_timout") {
		t.Errorf("SetConfig with a misspelt key: %v", err)
	}
}

// quotaMeta is a split f + s with each host's quota [fMin, fMax], [sMin, sMax].
func quotaMeta(f, s, fMin, fMax, sMin, sMax int) map[string]any {
	return map[string]any{MetaFirstCount: float64(f), MetaSecondCount: float64(s),
		MetaFirstMin: float64(fMin), MetaFirstMax: float64(fMax), MetaSecondMin: float64(sMin), MetaSecondMax: float64(sMax)}
}

func TestTargetScale(t *testing.T) {
	cases := []struct {
		name   string
		start  [2]int
		action sdk.ScalingAction
		cfg    map[string]string
		prep   func(t *testing.T, w *world)
		want   [2]int
		noop   bool
		errHas string
		events int // new events per group (dry run)
	}{
		{name: "split from the strategy (ints)", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: map[string]any{MetaFirstCount: 4, MetaSecondCount: 3, MetaFirstMax: 10, MetaSecondMax: 10}}, want: [2]int{4, 3}},
		{name: "split over gRPC (float64)", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: quotaMeta(4, 3, 0, 10, 0, 10)}, want: [2]int{4, 3}},
		{name: "agent clamped the sum down", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(6, 4, 0, 10, 0, 10), "nomad_autoscaler.count.capped", true)}, want: [2]int{3, 2}},
		{name: "agent clamped the sum up", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 4, Meta: quotaMeta(0, 1, 0, 10, 0, 10)}, want: [2]int{0, 4}},
		{name: "agent action without split, quotas from the target config", start: [2]int{2, 6},
			cfg:    withKeys(tcfg, TargetKeyFirstMax, "10", TargetKeySecondMax, "10"),
			action: sdk.ScalingAction{Count: 4, Meta: map[string]any{}}, want: [2]int{1, 3}},
		{name: "agent action without split and no known quota: refused", start: [2]int{2, 6},
			action: sdk.ScalingAction{Count: 4, Meta: map[string]any{}, Reason: "current count (8) above limit (4)"}, want: [2]int{2, 6}, errHas: "no host quota is known"},
		{name: "deployment in progress", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: quotaMeta(4, 3, 0, 10, 0, 10)},
			prep: func(t *testing.T, w *world) {
				if err := w.s.SetDeploymentActive("", wJob, true); err != nil {
					t.Fatal(err)
				}
			}, want: [2]int{1, 1}, noop: true},
		{name: "dry_run records null-count events", start: [2]int{1, 1}, cfg: withKeys(tcfg, TargetKeyDryRun, "true"),
			action: sdk.ScalingAction{Count: 7, Reason: "why", Meta: quotaMeta(4, 3, 0, 10, 0, 10)}, want: [2]int{1, 1}, events: 1},
		{name: "agent dry-run", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: -1, Reason: "why", Meta: withMeta(quotaMeta(4, 3, 0, 10, 0, 10), "nomad_autoscaler.dry_run", true, "nomad_autoscaler.dry_run.count", 7.0)},
			want:   [2]int{1, 1}, events: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, c.start[0], c.start[1])
			tg := w.target(t)
			if c.prep != nil {
				c.prep(t, w)
			}
			cfg := c.cfg
			if cfg == nil {
				cfg = tcfg
			}
			err := tg.Scale(c.action, cfg)
			var noop *sdk.TargetScalingNoOpError
			if c.noop != errors.As(err, &noop) {
				t.Fatalf("err = %v, want no-op %v", err, c.noop)
			}
			switch {
			case c.errHas != "":
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("err = %v, want %q", err, c.errHas)
				}
			case !c.noop && err != nil:
				t.Fatal(err)
			}
			if got := w.counts(t); got != c.want {
				t.Errorf("counts %v, want %v", got, c.want)
			}
			if c.events > 0 {
				for _, g := range []string{wFirst, wSecond} {
					gs, _ := w.s.Group("", wJob, g)
					if len(gs.Events) != c.events || gs.Events[0].Count != nil || !strings.Contains(gs.Events[0].Message, "why") {
						t.Errorf("group %s events %+v, want one with a null count and the reason", g, gs.Events)
						continue
					}
					if _, ok := gs.Events[0].Meta[MetaDryRunCount]; !ok {
						t.Errorf("group %s dry-run event has no %s", g, MetaDryRunCount)
					}
				}
			}
		})
	}
}

func withMeta(m map[string]any, kv ...any) map[string]any {
	out := copyMeta(m)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// TestTargetScaleIsOneRegister: both counts change in one job register
// under check-and-set; then each changed group gets one count-less scaling
// event with its previous and new count.
func TestTargetScaleIsOneRegister(t *testing.T) {
	w := newWorld(t, 5, 1)
	tg := w.target(t)
	from := len(w.s.Requests())
	if err := tg.Scale(sdk.ScalingAction{Count: 6, Reason: "because", Meta: quotaMeta(2, 4, 0, 10, 0, 10)}, tcfg); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range w.puts(from) {
		paths = append(paths, r.Path)
	}
	want := []string{"/v1/jobs", "/v1/job/" + wJob + "/scale", "/v1/job/" + wJob + "/scale"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("writes %v, want %v: one register, then one event per group", paths, want)
	}
	if got := w.counts(t); got != [2]int{2, 4} {
		t.Fatalf("counts %v, want [2 4]", got)
	}
	for g, prev := range map[string]float64{wFirst: 5, wSecond: 1} {
		gs, _ := w.s.Group("", wJob, g)
		if len(gs.Events) != 1 || gs.Events[0].Count != nil || !strings.Contains(gs.Events[0].Message, "because") {
			t.Errorf("group %s events %+v: want one count-less event with the reason", g, gs.Events)
			continue
		}
		if gs.Events[0].Meta[MetaPreviousCount] != prev || gs.Events[0].Meta[MetaNewCount] == nil {
			t.Errorf("group %s event meta %v: want previous %v and the new count", g, gs.Events[0].Meta, prev)
		}
	}
	// Already at the split: nothing is written.
	from = len(w.s.Requests())
	if err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(2, 4, 0, 10, 0, 10)}, tcfg); err != nil {
		t.Fatal(err)
	}
	if n := len(w.puts(from)); n != 0 {
		t.Errorf("a split equal to the groups' counts wrote %d times", n)
	}
}

// TestTargetCheckAndSet: a job changed after the strategy read it, or
// between the target's read and its write, is not overwritten.
func TestTargetCheckAndSet(t *testing.T) {
	t.Run("changed since the strategy read it", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		st, err := tg.Status(tcfg)
		if err != nil || st == nil {
			t.Fatal(st, err)
		}
		if err := w.s.SetGroupCount("", wJob, wFirst, 7); err != nil { // a person's `nomad job run`
			t.Fatal(err)
		}
		stale := withMeta(quotaMeta(3, 3, 0, 10, 0, 10), MetaJobModifyIndex, float64(1))
		err = tg.Scale(sdk.ScalingAction{Count: 6, Meta: stale}, tcfg)
		if !errors.Is(err, ErrJobChanged) || !strings.Contains(err.Error(), "job changed since it was read: not overwritten; the next evaluation decides again") {
			t.Fatalf("err = %v, want ErrJobChanged", err)
		}
		if got := w.counts(t); got != [2]int{7, 2} {
			t.Errorf("counts %v, want the person's [7 2]", got)
		}
	})
	t.Run("changed between the target's read and its write", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		w.s.SetHook(func(method, path string) {
			if method == http.MethodPut && path == "/v1/jobs" {
				w.s.SetHook(nil)
				_ = w.s.SetGroupCount("", wJob, wSecond, 9) // checked below
			}
		})
		err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(3, 3, 0, 10, 0, 10)}, tcfg)
		if !errors.Is(err, ErrJobChanged) {
			t.Fatalf("err = %v, want ErrJobChanged", err)
		}
		if got := w.counts(t); got != [2]int{2, 9} {
			t.Errorf("counts %v, want the concurrent change [2 9] kept", got)
		}
		for _, g := range []string{wFirst, wSecond} {
			if gs, _ := w.s.Group("", wJob, g); len(gs.Events) != 0 {
				t.Errorf("group %s got events %+v for a write that did not happen", g, gs.Events)
			}
		}
	})
}

// TestTargetQuotaForAgentActions: an action the agent makes itself carries
// no quota; the target takes each host's from its config or from the
// newest scaling event of the strategy, and never sets a group above it
// (issue 13: "below limit" split [5 5] past first_max = 3).
func TestTargetQuotaForAgentActions(t *testing.T) {
	below := sdk.ScalingAction{Count: 10, Direction: sdk.ScaleDirectionUp, Reason: "current count (4) below limit (10)", Meta: map[string]any{}}
	t.Run("from the newest scaling event", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		// The strategy's last action, with first_max 3.
		if err := tg.Scale(sdk.ScalingAction{Count: 4, Meta: quotaMeta(3, 1, 0, 3, 0, 20)}, tcfg); err != nil {
			t.Fatal(err)
		}
		if err := tg.Scale(below, tcfg); err != nil {
			t.Fatal(err)
		}
		if got := w.counts(t); got[0] > 3 || got[0]+got[1] != 10 {
			t.Errorf("counts %v: the first group above its max 3, or not the agent's 10", got)
		}
	})
	t.Run("from the target config", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		if err := tg.Scale(below, withKeys(tcfg, TargetKeyFirstMax, "3", TargetKeySecondMax, "20")); err != nil {
			t.Fatal(err)
		}
		if got := w.counts(t); got != [2]int{3, 7} {
			t.Errorf("counts %v, want [3 7]", got)
		}
	})
}

func TestSplit(t *testing.T) {
	cases := []struct {
		name    string
		total   int64
		meta    map[string]any
		current [2]int64
		want    [2]int64
		wantErr string
	}{
		{"as decided, ints", 7, map[string]any{MetaFirstCount: 4, MetaSecondCount: 3}, [2]int64{1, 1}, [2]int64{4, 3}, ""},
		{"as decided, float64 over gRPC", 7, map[string]any{MetaFirstCount: 4.0, MetaSecondCount: 3.0}, [2]int64{1, 1}, [2]int64{4, 3}, ""},
		{"json.Number", 7, map[string]any{MetaFirstCount: json.Number("4"), MetaSecondCount: json.Number("3")}, [2]int64{}, [2]int64{4, 3}, ""},
		{"clamped down, proportional", 5, map[string]any{MetaFirstCount: 6.0, MetaSecondCount: 4.0}, [2]int64{}, [2]int64{3, 2}, ""},
		{"clamped up from zero", 3, map[string]any{MetaFirstCount: 0.0, MetaSecondCount: 0.0}, [2]int64{}, [2]int64{2, 1}, ""},
		{"no split: current proportions", 6, map[string]any{}, [2]int64{1, 2}, [2]int64{2, 4}, ""},
		{"no split, nothing running", 1, nil, [2]int64{}, [2]int64{1, 0}, ""},
		{"fraction refused", 7, map[string]any{MetaFirstCount: 3.5, MetaSecondCount: 3.5}, [2]int64{}, [2]int64{}, "whole number"},
		{"negative refused", 7, map[string]any{MetaFirstCount: -1.0, MetaSecondCount: 8.0}, [2]int64{}, [2]int64{}, ">= 0"},
		{"NaN refused", 7, map[string]any{MetaFirstCount: math.NaN(), MetaSecondCount: 8.0}, [2]int64{}, [2]int64{}, "whole number"},
		{"wrong type refused", 7, map[string]any{MetaFirstCount: true, MetaSecondCount: 8.0}, [2]int64{}, [2]int64{}, "want a number"},
		// The agent clamped the sum; each group stays within its host's quota.
		{"clamped down, first at its min", 5, quotaMeta(1, 9, 4, 8, 0, 8), [2]int64{}, [2]int64{4, 1}, ""},
		{"clamped down, second at its min", 5, quotaMeta(8, 1, 0, 8, 3, 8), [2]int64{}, [2]int64{2, 3}, ""},
		{"clamped up, first at its max", 12, quotaMeta(2, 2, 0, 4, 0, 10), [2]int64{}, [2]int64{4, 8}, ""},
		{"clamped up, second at its max", 13, quotaMeta(6, 6, 0, 12, 0, 2), [2]int64{}, [2]int64{11, 2}, ""},
		{"below both mins", 3, quotaMeta(4, 4, 2, 8, 2, 8), [2]int64{}, [2]int64{}, "within [4, 16]"},
		{"above both maxes", 20, quotaMeta(4, 4, 0, 8, 0, 8), [2]int64{}, [2]int64{}, "within [0, 16]"},
		{"min above max refused", 5, quotaMeta(4, 4, 9, 8, 0, 8), [2]int64{}, [2]int64{}, MetaFirstMin},
		// Issue 13: a split whose sum is the total but whose first count is
		// above the first host's max gave [10 0].
		{"regression: the split's sum is right but first is past its max", 10,
			map[string]any{MetaFirstCount: 10.0, MetaSecondCount: 0.0, MetaFirstMax: 5.0}, [2]int64{}, [2]int64{5, 5}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := Split(c.total, c.meta, c.current)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || got[0]+got[1] != c.total {
				t.Errorf("Split = %v, want %v (total %d)", got, c.want, c.total)
			}
			q, _, _ := metaQuota(c.meta)
			for i := range got {
				if got[i] < q[i][0] || got[i] > q[i][1] {
					t.Errorf("group %d at %d, outside its quota %v", i, got[i], q[i])
				}
			}
		})
	}
}

// TestSplitWithinNeverLeavesTheQuota: for every total a quota pair allows
// and every basis, each group stays within its quota and the sum is the
// total.
func TestSplitWithinNeverLeavesTheQuota(t *testing.T) {
	quotas := []Quota{{{0, 3}, {0, 20}}, {{2, 5}, {1, 4}}, {{0, 0}, {0, 9}}, {{4, 8}, {0, 8}}}
	for _, q := range quotas {
		for total := q[0][0] + q[1][0]; total <= q[0][1]+q[1][1]; total++ {
			for f := int64(0); f <= 12; f += 3 {
				for s := int64(0); s <= 12; s += 4 {
					for _, meta := range []map[string]any{{MetaFirstCount: f, MetaSecondCount: s}, {}} {
						got, _, err := SplitWithin(total, meta, [2]int64{s, f}, q)
						if err != nil {
							t.Fatalf("quota %v total %d split %d+%d: %v", q, total, f, s, err)
						}
						if got[0]+got[1] != total || got[0] < q[0][0] || got[0] > q[0][1] || got[1] < q[1][0] || got[1] > q[1][1] {
							t.Fatalf("quota %v total %d split %d+%d meta %v: got %v", q, total, f, s, meta, got)
						}
					}
				}
			}
		}
	}
}

// TestTargetBadMetaChangesNothing: a malformed split is an error and no
// group is written.
func TestTargetBadMetaChangesNothing(t *testing.T) {
	w := newWorld(t, 2, 2)
	tg := w.target(t)
	err := tg.Scale(sdk.ScalingAction{Count: 7, Meta: map[string]any{MetaFirstCount: "four", MetaSecondCount: 3.0}}, tcfg)
	if err == nil || !strings.Contains(err.Error(), MetaFirstCount) {
		t.Fatalf("err = %v, want one naming %s", err, MetaFirstCount)
	}
	if got := w.counts(t); got != [2]int{2, 2} {
		t.Errorf("counts %v after a refused action", got)
	}
}
