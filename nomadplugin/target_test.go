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

func (w *world) target(t *testing.T) *Target {
	t.Helper()
	tg := NewTarget(hclog.NewNullLogger())
	if err := tg.SetConfig(w.agentConfig); err != nil {
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

var tcfg = map[string]string{TargetKeyJob: wJob, TargetKeyFirstGroup: wFirst, TargetKeySecondGroup: wSecond}

func withKey(m map[string]string, k, v string) map[string]string {
	out := map[string]string{}
	for kk, vv := range m {
		out[kk] = vv
	}
	if v == "" {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

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
	// An event gives the cooldown its last event time.
	before := uint64(time.Now().UnixNano())
	if err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: map[string]any{MetaFirstCount: 4, MetaSecondCount: 2}, Reason: "r"}, tcfg); err != nil {
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
	// Deployment in progress: not ready. Stopped job: not ready.
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
	if st, err := tg.Status(withKey(tcfg, TargetKeyJob, "nope")); st != nil || err != nil {
		t.Errorf("unknown job: %+v, %v; want nil, nil", st, err)
	}
	if _, err := tg.Status(withKey(tcfg, TargetKeySecondGroup, "nope")); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown group: %v", err)
	}
	// 5xx is an error.
	w.s.InjectFault(nomadstandin.Fault{Status: 503, Times: 1})
	if _, err := tg.Status(tcfg); err == nil {
		t.Errorf("5xx gave no error")
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := withKey(tcfg, c.key, c.value)
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
}

func TestTargetScale(t *testing.T) {
	cases := []struct {
		name   string
		start  [2]int
		action sdk.ScalingAction
		cfg    map[string]string
		prep   func(w *world)
		want   [2]int
		noop   bool
		events int // new events per group (dry run)
	}{
		{name: "split from strategy (ints)", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: map[string]any{MetaFirstCount: 4, MetaSecondCount: 3}}, want: [2]int{4, 3}},
		{name: "split over gRPC (float64)", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: map[string]any{MetaFirstCount: 4.0, MetaSecondCount: 3.0}}, want: [2]int{4, 3}},
		{name: "agent clamped the sum down", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 5, Meta: map[string]any{MetaFirstCount: 6.0, MetaSecondCount: 4.0,
				"nomad_autoscaler.count.capped": true, "nomad_autoscaler.count.original": 10.0}}, want: [2]int{3, 2}},
		{name: "agent clamped the sum up", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 4, Meta: map[string]any{MetaFirstCount: 0.0, MetaSecondCount: 1.0}}, want: [2]int{0, 4}},
		{name: "agent action without split", start: [2]int{2, 6},
			action: sdk.ScalingAction{Count: 4, Meta: map[string]any{}}, want: [2]int{1, 3}},
		{name: "deployment in progress", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: map[string]any{MetaFirstCount: 4, MetaSecondCount: 3}},
			prep:   func(w *world) { _ = w.s.SetDeploymentActive("", wJob, true) }, want: [2]int{1, 1}, noop: true},
		{name: "dry_run records null-count events", start: [2]int{1, 1}, cfg: withKey(tcfg, TargetKeyDryRun, "true"),
			action: sdk.ScalingAction{Count: 7, Reason: "why", Meta: map[string]any{MetaFirstCount: 4, MetaSecondCount: 3}}, want: [2]int{1, 1}, events: 1},
		{name: "agent dry-run", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: -1, Reason: "why", Meta: map[string]any{MetaFirstCount: 4.0, MetaSecondCount: 3.0, "nomad_autoscaler.dry_run": true, "nomad_autoscaler.dry_run.count": 7.0}},
			want:   [2]int{1, 1}, events: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, c.start[0], c.start[1])
			tg := w.target(t)
			if c.prep != nil {
				c.prep(w)
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
			if !c.noop && err != nil {
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

// TestTargetWriteOrder: the growing group is written first.
func TestTargetWriteOrder(t *testing.T) {
	w := newWorld(t, 5, 1)
	tg := w.target(t)
	if err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: map[string]any{MetaFirstCount: 2, MetaSecondCount: 4}}, tcfg); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range w.s.Requests() {
		if r.Method == http.MethodPut {
			order = append(order, r.Path)
		}
	}
	a, _ := w.s.Group("", wJob, wFirst)
	b, _ := w.s.Group("", wJob, wSecond)
	if len(order) != 2 || a.Count != 2 || b.Count != 4 || a.Events[0].CreateIndex < b.Events[0].CreateIndex {
		t.Errorf("writes %v; first group event index %d, second %d: the growing (second) group must be written first", order, a.Events[0].CreateIndex, b.Events[0].CreateIndex)
	}
}

// quotaMeta is a split f + s with each host's quota [fMin, fMax], [sMin, sMax].
func quotaMeta(f, s, fMin, fMax, sMin, sMax int) map[string]any {
	return map[string]any{MetaFirstCount: float64(f), MetaSecondCount: float64(s),
		MetaFirstMin: float64(fMin), MetaFirstMax: float64(fMax), MetaSecondMin: float64(sMin), MetaSecondMax: float64(sMax)}
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
		})
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
