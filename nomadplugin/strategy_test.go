package nomadplugin

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/sdk"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/engine/golden"
)

// runWindow feeds a strategy one reading per sample of the request's
// observations (the window then holds exactly those samples) and returns
// the last evaluation.
func runWindow(t testing.TB, r *engine.Request, role string, count int64) *sdk.ScalingCheckEvaluation {
	t.Helper()
	n := len(r.First.Samples)
	if len(r.Second.Samples) != n {
		t.Fatalf("the two observations have %d and %d samples; this test feeds them in step and needs equal windows", n, len(r.Second.Samples))
	}
	clk := &clock{}
	st := NewStrategy(hclog.NewNullLogger(), WithReader(newMemReader(r.First, r.Second)), WithClock(clk.now))
	cfg := configFor(r, role, n)
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

// TestGoldenVectors: the strategy's counts equal the golden decisions.
func TestGoldenVectors(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			for _, role := range []string{RoleFirst, RoleSecond, RoleSplit} {
				ev := runWindow(t, &v.Request, role, 0)
				a := ev.Action
				want := map[string]int{RoleFirst: v.Want.First.Containers, RoleSecond: v.Want.Second.Containers, RoleSplit: v.Want.First.Containers + v.Want.Second.Containers}[role]
				if a.Count != int64(want) {
					t.Errorf("role %s: count %d, golden %d (reason %s)", role, a.Count, want, a.Reason)
				}
				if a.Meta[MetaFirstDecided] != v.Want.First.Containers || a.Meta[MetaSecondDecided] != v.Want.Second.Containers {
					t.Errorf("role %s: decided %v + %v, golden %d + %d", role, a.Meta[MetaFirstDecided], a.Meta[MetaSecondDecided], v.Want.First.Containers, v.Want.Second.Containers)
				}
				// The reason is the engine's, with the host labelled by role.
				wf, ws := v.Want.First, v.Want.Second
				wf.Host, ws.Host = engine.RoleFirst, engine.RoleSecond
				if got := a.Meta[MetaFirstReason]; got != wf.Reason() {
					t.Errorf("first reason\n got %v\nwant %s", got, wf.Reason())
				}
				if got := a.Meta[MetaSecondReason]; got != ws.Reason() {
					t.Errorf("second reason\n got %v\nwant %s", got, ws.Reason())
				}
				if strings.Contains(a.Reason, "\n") {
					t.Errorf("reason is more than one line: %q", a.Reason)
				}
			}
		})
	}
}

// TestRunMatchesDecideRequest: on the real series the strategy's action is
// exactly one engine.DecideRequest of the same observations.
func TestRunMatchesDecideRequest(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	r := vs[0].Request
	d, err := engine.DecideRequest(&r)
	if err != nil {
		t.Fatal(err)
	}
	cur := int64(d.First.Containers + d.Second.Containers + 3)
	ev := runWindow(t, &r, RoleSplit, cur)
	if ev.Action.Count != int64(d.First.Containers+d.Second.Containers) || ev.Action.Direction != sdk.ScaleDirectionDown {
		t.Errorf("split action %d %s, want %d down", ev.Action.Count, ev.Action.Direction, d.First.Containers+d.Second.Containers)
	}
	if ev.Action.Meta[MetaFirstCount] != d.First.Containers || ev.Action.Meta[MetaSecondCount] != d.Second.Containers {
		t.Errorf("meta split %v + %v", ev.Action.Meta[MetaFirstCount], ev.Action.Meta[MetaSecondCount])
	}
}

func TestSplitAction(t *testing.T) {
	cases := []struct {
		name             string
		f, s, curF, curS int
		count            int64
		wantF, wantS     int
		wantStep         bool
		wantDir          sdk.ScaleDirection
	}{
		{"sum changes", 4, 3, 2, 2, 4, 4, 3, false, sdk.ScaleDirectionUp},
		{"same split", 4, 3, 4, 3, 7, 4, 3, false, sdk.ScaleDirectionNone},
		{"same sum, first grows", 5, 2, 3, 4, 7, 5, 4, true, sdk.ScaleDirectionUp},
		{"same sum, second grows", 2, 5, 4, 3, 7, 4, 5, true, sdk.ScaleDirectionUp},
		{"down", 1, 1, 4, 3, 7, 1, 1, false, sdk.ScaleDirectionDown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := NewStrategy(nil)
			ev := newEval("x", nil)
			d := &engine.Decision{
				First:  engine.HostDecision{Role: engine.RoleFirst, Layer: engine.LayerInput, Containers: c.f, Quota: engine.DefaultQuota(8), BranchTotal: "1"},
				Second: engine.HostDecision{Role: engine.RoleSecond, Layer: engine.LayerOutput, Containers: c.s, Quota: engine.DefaultQuota(8), BranchTotal: "1"},
			}
			obs := [2]engine.Observation{{RunningReplicas: c.curF}, {RunningReplicas: c.curS}}
			st.act(ev, &strategyConfig{role: RoleSplit}, d, obs, c.count)
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
		})
	}
}

func TestNoScaling(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	base := vs[0].Request
	now := time.Unix(base.First.Samples[len(base.First.Samples)-1].Time, 0)
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
			r.err[engine.RoleSecond] = errors.New(`host name="host-b": no node matches among 3 nodes`)
		}, want: "second host"},
		{name: "NaN from APM", cfg: func(m map[string]string) { m[PrefixFirst+KeyUsage] = UsageAPM },
			metrics: metrics(100, math.NaN(), 120), want: "NaN"},
		{name: "no APM metrics", cfg: func(m map[string]string) { m[PrefixFirst+KeyUsage] = UsageAPM },
			want: "no usage metrics"},
		{name: "stale APM metrics", cfg: func(m map[string]string) { m[PrefixFirst+KeyUsage] = UsageAPM; m[KeyMaxAge] = "30s" },
			metrics: metrics(100, 120), at: now.Add(time.Hour), want: "stale"},
		{name: "negative usage from Nomad", reader: func(r *memReader) {
			o := r.obs[engine.RoleFirst]
			o.Samples = append([]engine.Sample(nil), o.Samples...)
			o.Samples[0].CPUMHz = -5
			r.obs[engine.RoleFirst] = o
		}, want: "usage refused"},
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
			st := NewStrategy(hclog.NewNullLogger(), WithReader(rd), WithClock(func() time.Time { return at }))
			cfg := configFor(&base, RoleSplit, 60)
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

func TestAPMUsage(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	r := vs[0].Request
	now := time.Unix(r.First.Samples[len(r.First.Samples)-1].Time, 0)
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
	want.Second.Samples = r.Second.Samples[len(r.Second.Samples)-1:]
	d, err := engine.DecideRequest(&want)
	if err != nil {
		t.Fatal(err)
	}
	cfg := configFor(&r, RoleFirst, len(r.First.Samples))
	cfg[PrefixFirst+KeyUsage] = UsageAPM
	rd := newMemReader(r.First, r.Second)
	rd.next[engine.RoleSecond] = len(r.Second.Samples) - 1
	st := NewStrategy(hclog.NewNullLogger(), WithReader(rd), WithClock(func() time.Time { return now }))
	ev := newEval("apm", cfg)
	ev.Metrics = ms
	out, err := st.Run(ev, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out.Action.Count != int64(d.First.Containers) {
		t.Errorf("APM count %d, DecideRequest %d", out.Action.Count, d.First.Containers)
	}
}

func TestConfigErrors(t *testing.T) {
	ok := func() map[string]string {
		return map[string]string{KeyRole: RoleSplit, KeyJob: "web", PrefixFirst + KeyNodeName: "a", PrefixSecond + KeyNodeName: "b",
			PrefixFirst + KeyGroup: "front", PrefixSecond + KeyGroup: "back"}
	}
	if _, err := parseStrategyConfig(ok(), ""); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	cases := []struct {
		name, key, value, wantKey string
	}{
		{"no role", KeyRole, "", KeyRole},
		{"bad role", KeyRole, "both", KeyRole},
		{"unknown key", "first_nodename", "a", "first_nodename"},
		{"bad window", KeyWindow, "0", KeyWindow},
		{"bad max age", KeyMaxAge, "soon", KeyMaxAge},
		{"no host", PrefixFirst + KeyNodeName, "", PrefixFirst + KeyNodeID},
		{"id with filter", PrefixFirst + KeyNodeID, "abc", PrefixFirst + KeyNodeID},
		{"split without group", PrefixSecond + KeyGroup, "", PrefixSecond + KeyGroup},
		{"split without job", KeyJob, "", KeyJob},
		{"bad demand", PrefixFirst + KeyReplicaCPU, "-1", PrefixFirst + KeyReplicaCPU},
		{"NaN demand", PrefixFirst + KeyReplicaCPU, "NaN", PrefixFirst + KeyReplicaCPU},
		{"bad wanted", PrefixSecond + KeyWantedReplicas, "x", PrefixSecond + KeyWantedReplicas},
		{"missing model file", PrefixFirst + KeyModel, "/nonexistent/model.json", PrefixFirst + KeyModel},
		{"unknown builtin", PrefixSecond + KeyModel, "builtin:nope", PrefixSecond + KeyModel},
		{"min above max", PrefixFirst + KeyMin, "9", PrefixFirst + KeyMax},
		{"bad per branch", PrefixSecond + KeyPerBranch, "0", PrefixSecond + KeyPerBranch},
		{"bad rounding", PrefixFirst + KeyRounding, "up", PrefixFirst + KeyRounding},
		{"bad usage", PrefixFirst + KeyUsage, "prometheus", PrefixFirst + KeyUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ok()
			if c.name == "min above max" {
				m[PrefixFirst+KeyMax] = "3"
			}
			if c.value == "" {
				delete(m, c.key)
			} else {
				m[c.key] = c.value
			}
			_, err := parseStrategyConfig(m, "")
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
			if ce.Key != c.wantKey {
				t.Errorf("error names %q, want %q: %v", ce.Key, c.wantKey, err)
			}
		})
	}
	// Both hosts from the APM is refused.
	m := ok()
	m[PrefixFirst+KeyUsage], m[PrefixSecond+KeyUsage] = UsageAPM, UsageAPM
	if _, err := parseStrategyConfig(m, ""); err == nil {
		t.Error("two APM hosts accepted")
	}
	// A config error from Run is an error, and changes nothing.
	st := NewStrategy(nil, WithReader(newMemReader(engine.Observation{}, engine.Observation{})))
	m = ok()
	m[KeyRole] = "both"
	if _, err := st.Run(newEval("bad", m), 3); err == nil || !strings.Contains(err.Error(), `"role"`) {
		t.Errorf("Run with a bad role: %v", err)
	}
}

// BenchmarkStrategyRun: Run with a 60-sample window and the default models,
// Nomad reads served from memory.
func BenchmarkStrategyRun(b *testing.B) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		b.Fatal(err)
	}
	r := vs[0].Request
	r.FirstModel, r.SecondModel, r.FirstQuota, r.SecondQuota = "", "", nil, nil
	clk := &clock{}
	st := NewStrategy(hclog.NewNullLogger(), WithReader(newMemReader(r.First, r.Second)), WithClock(clk.now))
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
