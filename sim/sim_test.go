package sim

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// handReplay builds a replay from per-replica usage given directly (no
// normalisation), one sample a minute.
func handReplay(t *testing.T, usage []float64, sc Scenario, request float64) *Replay {
	t.Helper()
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	a := &App{Name: "hand", Usage: usage, Request: request}
	for i := range usage {
		a.Times = append(a.Times, int64(60*i))
	}
	r := &Replay{Name: "hand", Scenario: sc, apps: []*App{a}, samples: len(usage), period: 60, maxRepl: sc.MaxReplicas}
	if r.maxRepl == 0 {
		r.maxRepl = noCap
	}
	r.build()
	return r
}

func handScenario(window, interval int) Scenario {
	return Scenario{Name: "hand", P99: 0.1, Window: window, Interval: interval, Hosts: 2, Correlated: true, RequestQuantile: 0.99}
}

// seq sets every host to counts[d] at decision d.
type seq struct{ counts []int }

func (s seq) Name() string { return "seq" }
func (s seq) Knob() Knob   { return Knob{Values: []float64{0}} }
func (s seq) New(*Replay, float64) (Decider, error) {
	return s, nil
}
func (s seq) Decide(d int, _, out []int) error {
	for h := range out {
		out[h] = s.counts[d]
	}
	return nil
}

func TestCountFor(t *testing.T) {
	for _, c := range []struct {
		est   float64
		limit int
		want  int
	}{
		{0.1, noCap, 10},
		{0.3, noCap, 3},
		{1.0 / 3, noCap, 3},
		{0.5, noCap, 2},
		{2, noCap, 0},
		{0, 110, 110},
		{1e-12, 110, 110},
		{0.001, 110, 110},
		{math.NaN(), 110, 0},
		{-1, 110, 110},
	} {
		if got := countFor(c.est, c.limit); got != c.want {
			t.Errorf("countFor(%v, %d) = %d, want %d", c.est, c.limit, got, c.want)
		}
	}
}

// Window 2, interval 2: decisions at samples 2, 4 and 6 govern the blocks
// (0.2, 0.5), (0.25, 0.1) and (0.3, 0.3). The oracle runs 2, 4 and 3.
func TestMetricsOnHandSeries(t *testing.T) {
	usage := []float64{0.1, 0.1, 0.2, 0.5, 0.25, 0.1, 0.3, 0.3}
	r := handReplay(t, usage, handScenario(2, 2), 0.1)
	if r.Decisions() != 3 {
		t.Fatalf("%d decisions, want 3", r.Decisions())
	}
	for d, want := range []int{2, 4, 3} {
		for h := 0; h < 2; h++ {
			if got := r.Oracle(h, d); got != want {
				t.Errorf("oracle host %d decision %d = %d, want %d", h, d, got, want)
			}
		}
	}
	// 0.1 h of trace (6 samples a minute apart) on 2 hosts.
	if got := r.Hours(); math.Abs(got-0.1) > 1e-12 {
		t.Errorf("hours %v, want 0.1", got)
	}
	for _, c := range []struct {
		name                         string
		counts                       []int
		density, viol, sev, changesH float64
	}{
		// 3 everywhere: usage 0.6 1.5 | 0.75 0.3 | 0.9 0.9 per host: one
		// violation of 0.5 per host; mean 3 = the oracle's mean 3.
		{"steady", []int{3, 3, 3}, 1, 2.0 / 12, 0.5, 0},
		// 3, 1, 3: two changes per host in 0.2 host-hours; mean 7/3.
		{"changing", []int{3, 1, 3}, (14.0 / 6) / 3, 2.0 / 12, 0.5, 20},
		// The oracle's own counts: no violation.
		{"oracle", []int{2, 4, 3}, 1, 0, 0, 20},
		// 5, 5, 5: 1.0 2.5 | 1.25 0.5 | 1.5 1.5: 1.0 is not over capacity.
		{"heavy", []int{5, 5, 5}, 5.0 / 3, 8.0 / 12, (1.5 + 0.25 + 0.5 + 0.5) / 4, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tl, err := Evaluate(r, seq{c.counts}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if tl.HostSamples != 12 {
				t.Errorf("host-samples %d, want 12", tl.HostSamples)
			}
			check := func(what string, got, want float64) {
				t.Helper()
				if !(math.Abs(got-want) <= 1e-9) { // NaN fails too
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			check("density", tl.Density(), c.density)
			check("violation rate", tl.ViolationRate(), c.viol)
			check("severity", tl.Severity(), c.sev)
			check("changes per hour", tl.ChangesPerHour(), c.changesH)
			// Both hosts run the same counts: each role has half of it.
			for i, rt := range tl.Roles {
				if 2*rt.Violations != tl.Violations || 2*rt.HostSamples != tl.HostSamples {
					t.Errorf("role %d: %d violations in %d host-samples, want half of %d in %d", i, rt.Violations, rt.HostSamples, tl.Violations, tl.HostSamples)
				}
				check("role density", rt.Density(), c.density)
			}
		})
	}
}

// Per-replica window 0.1 0.2 0.3 0.4: mean 0.25, std sqrt(0.0125), p90
// 0.37, p95 0.385, max 0.4 (quantiles interpolate between order statistics).
func TestBaselinesOnHandWindow(t *testing.T) {
	r := handReplay(t, []float64{0.1, 0.2, 0.3, 0.4, 0.05}, handScenario(4, 1), 0.125)
	st := r.Stats(0, 0)
	want := WindowStats{Mean: 0.25, Std: 0.11180339887498948 /* sqrt(0.0125) */, P50: 0.25, P90: 0.37, P95: 0.385, P99: 0.397, Max: 0.4, MeanLast5: 0.25, MaxLast5: 0.4}
	got := []float64{st.Mean, st.Std, st.P50, st.P90, st.P95, st.P99, st.Max, st.MeanLast5, st.MaxLast5}
	exp := []float64{want.Mean, want.Std, want.P50, want.P90, want.P95, want.P99, want.Max, want.MeanLast5, want.MaxLast5}
	for i := range got {
		if math.Abs(got[i]-exp[i]) > 1e-12 {
			t.Fatalf("window stats %+v, want %+v", *st, want)
		}
	}
	for _, c := range []struct {
		p    Policy
		knob float64
		want int
	}{
		{RequestSum(), 1, 8},       // 1 / 0.125
		{RequestSum(), 0.5, 4},     // 0.5 / 0.125
		{P95Window(), 0, 2},        // 1 / 0.385 = 2.6
		{P95Window(), 1, 1},        // 1 / 0.77
		{MaxWindow(), 0, 2},        // 1 / 0.4 = 2.5
		{MaxWindow(), 0.25, 2},     // 1 / 0.5 = 2 exactly
		{MaxWindow(), 2, 0},        // 1 / 1.2
		{NSigma(), 0, 2},           // max(0.25, p90 0.37)
		{NSigma(), 10, 0},          // 0.25 + 1.118
		{NSigma(), 1, 2},           // 0.25 + 0.1118 < p90: p90
		{UsageThreshold(), 0.5, 2}, // 0.25 / 0.5
		{UsageThreshold(), 1, 4},   // 0.25
	} {
		d, err := c.p.New(r, c.knob)
		if err != nil {
			t.Fatal(err)
		}
		out := []int{-1, -1}
		if err := d.Decide(0, []int{0, 0}, out); err != nil {
			t.Fatal(err)
		}
		if out[0] != c.want || out[1] != c.want {
			t.Errorf("%s knob %g: counts %v, want %d on both hosts", c.p.Name(), c.knob, out, c.want)
		}
	}
}

// The oracle's count fits every sample of its block, and one replica more
// would not, on phase-shifted replicas of a real series.
func TestOracleIsTheLargestSafeCount(t *testing.T) {
	all := loadCrane(t)
	r, err := Prepare(all[6], Shifted(), 1) // series3: the shortest window of variety
	if err != nil {
		t.Fatal(err)
	}
	for h := 0; h < r.Hosts(); h++ {
		for d := 0; d < r.Decisions(); d += 7 {
			n := r.Oracle(h, d)
			lo, hi := r.Block(d)
			over := func(n int) bool {
				for s := lo; s < hi; s++ {
					if r.HostUsage(h, n, s) > 1 {
						return true
					}
				}
				return false
			}
			if over(n) {
				t.Fatalf("host %d decision %d: oracle %d overloads", h, d, n)
			}
			if n < r.MaxReplicas() && !over(n+1) {
				t.Fatalf("host %d decision %d: oracle %d, but %d fit", h, d, n, n+1)
			}
		}
	}
}

// With phase-shifted replicas, replica n's usage is the series, shifted by
// at most MaxShift samples and scaled within ScaleJitter.
func TestShiftedReplicasFollowTheSeries(t *testing.T) {
	all := loadCrane(t)
	sc := Shifted()
	r, err := Prepare(all[0], sc, 1)
	if err != nil {
		t.Fatal(err)
	}
	for h := 0; h < r.Hosts(); h++ {
		u := r.App(h).Usage
		for s := sc.MaxShift; s < len(u); s += 97 {
			lo, hi := math.Inf(1), 0.0
			for _, v := range u[s-sc.MaxShift : s+1] {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
			for n := 1; n <= r.MaxReplicas(); n++ {
				one := r.HostUsage(h, n, s) - r.HostUsage(h, n-1, s)
				if one < (1-sc.ScaleJitter)*lo*(1-1e-5)-1e-5 || one > (1+sc.ScaleJitter)*hi*(1+1e-5)+1e-5 {
					t.Fatalf("host %d sample %d replica %d uses %v, outside [%v, %v]", h, s, n, one, (1-sc.ScaleJitter)*lo, (1+sc.ScaleJitter)*hi)
				}
			}
		}
	}
}

// Policies must see what the hosts' replicas showed up to the decision, not
// the unshifted series: replicas lag the series by up to MaxShift samples,
// so the series' present is some replicas' future. On a step series, just
// after the step the observed window has not yet risen to the new level,
// and every observed value is the replicas' own mean usage at that sample.
func TestPoliciesSeeOnlyThePast(t *testing.T) {
	sc := Shifted()
	step := traces.Series{Name: "step"}
	const n, at = 600, 400
	for i := 0; i < n; i++ {
		step.Times = append(step.Times, int64(60*i))
		v := 1.0
		if i >= at {
			v = 3
		}
		step.Values = append(step.Values, v)
	}
	r, err := Prepare(step, sc, 1)
	if err != nil {
		t.Fatal(err)
	}
	M := r.MaxReplicas()
	for d := 0; d < r.Decisions(); d++ {
		_, w := r.Window(0, d)
		end := r.At(d)
		for i, v := range w {
			tt := end - len(w) + i
			var want float64
			for h := 0; h < r.Hosts(); h++ {
				want += r.HostUsage(h, M, tt) / float64(M*r.Hosts())
			}
			if math.Abs(v-want) > 1e-6*want {
				t.Fatalf("decision %d sample %d: window shows %v, the replicas used %v", d, tt, v, want)
			}
		}
	}
	// Right after the step most replicas still lag: the newest observed
	// value is well below the series' new level (3 x the old one).
	d := (at-sc.Window)/sc.Interval + 1
	_, w := r.Window(1, d)
	last := w[len(w)-1]
	high := r.App(1).Usage[at]
	if r.At(d) <= at || last > 0.5*high {
		t.Fatalf("at decision %d (sample %d) the newest observed value is %v against the series' %v: the window leaks the lagging replicas' future", d, r.At(d), last, high)
	}
}

func TestCalibratedSlack(t *testing.T) {
	all := loadCrane(t)
	sc := Shifted()
	f, err := CalibrateRequests(all, sc)
	if err != nil {
		t.Fatal(err)
	}
	var rs []*Replay
	for _, s := range all {
		r, err := Prepare(s, sc, f)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	med, _ := SlackStats(rs)
	if math.Abs(med-sc.TargetSlack) > 1e-3 {
		t.Fatalf("median slack %v after calibration (factor %v), want %v", med, f, sc.TargetSlack)
	}
}

// TestCalibrateOn: with Options.CalibrateOn the request factor is the one
// those series give, not the replayed ones' (a held-out replay calibrates
// on its family's training series); the slack reported is the replayed
// series' at that factor, and the replayed series' usage does not move it.
func TestCalibrateOn(t *testing.T) {
	all := loadCrane(t)
	replayed, others := all[:3], all[3:]
	sc := Shifted()
	want, err := CalibrateRequests(others, sc)
	if err != nil {
		t.Fatal(err)
	}
	own, err := CalibrateRequests(replayed, sc)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(want-own) < 1e-3 {
		t.Fatalf("the two sets calibrate alike (%v, %v): the test shows nothing", want, own)
	}
	pols := []Policy{RequestSum(), Oracle()}
	rep, err := Run(context.Background(), replayed, sc, pols, Options{CalibrateOn: FromSeries(others)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RequestFactor != want || rep.CalibratedOn != len(others) {
		t.Errorf("factor %v set on %d series; want %v (the other series') on %d", rep.RequestFactor, rep.CalibratedOn, want, len(others))
	}
	if math.Abs(rep.MedianSlack-sc.TargetSlack) < 1e-3 {
		t.Errorf("median slack %v: the replayed series' slack at the other series' factor is not the target", rep.MedianSlack)
	}
	// None of the series to calibrate on can be replayed (too short): the
	// replayed series set the factor.
	short := []traces.Series{{Name: "short", Times: []int64{0, 60}, Values: []float64{1, 2}}}
	fallback, err := Run(context.Background(), replayed, sc, pols, Options{CalibrateOn: FromSeries(short)})
	if err != nil {
		t.Fatal(err)
	}
	if fallback.RequestFactor != own || fallback.CalibratedOn != 0 {
		t.Errorf("nothing to calibrate on: factor %v on %d series; want the replayed series' %v", fallback.RequestFactor, fallback.CalibratedOn, own)
	}
	plain, err := Run(context.Background(), replayed, sc, pols, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.RequestFactor != own || plain.CalibratedOn != 0 {
		t.Errorf("without CalibrateOn: factor %v on %d series; want the replayed series' %v", plain.RequestFactor, plain.CalibratedOn, own)
	}
}

func TestRunIsDeterministicAcrossWorkers(t *testing.T) {
	all := loadCrane(t)[:3]
	pols := []Policy{RequestSum(), NSigma(), Oracle()}
	a, err := Run(context.Background(), all, Shifted(), pols, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), all, Shifted(), pols, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Curves, b.Curves) {
		t.Fatal("one worker and two workers gave different curves")
	}
}

func TestTraceAgreesWithEvaluate(t *testing.T) {
	all := loadCrane(t)
	r, err := Prepare(all[0], Shifted(), 1)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Evaluate(r, NSigma(), 3)
	if err != nil {
		t.Fatal(err)
	}
	_, hosts, err := Trace(r, NSigma(), 3)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	viol := 0
	for _, h := range hosts {
		for i, n := range h.Counts {
			sum += float64(n)
			if h.Usage[i] > 1 {
				viol++
			}
		}
	}
	if sum != tl.Replicas || viol != tl.Violations {
		t.Fatalf("trace: %v replicas, %d violations; evaluate: %v, %d", sum, viol, tl.Replicas, tl.Violations)
	}
}

func TestScenarioValidation(t *testing.T) {
	for _, c := range []struct {
		field string
		edit  func(*Scenario)
	}{
		{"p99", func(s *Scenario) { s.P99 = 0 }},
		{"window", func(s *Scenario) { s.Window = 1 }},
		{"interval", func(s *Scenario) { s.Interval = 0 }},
		{"hosts", func(s *Scenario) { s.Hosts = 0 }},
		{"max_replicas", func(s *Scenario) { s.MaxReplicas = 0 }},
		{"max_shift", func(s *Scenario) { s.MaxShift = -1 }},
		{"scale_jitter", func(s *Scenario) { s.ScaleJitter = 1 }},
		{"request_quantile", func(s *Scenario) { s.RequestQuantile = 0 }},
		{"target_slack", func(s *Scenario) { s.TargetSlack = 1 }},
	} {
		s := Shifted()
		c.edit(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: error %v, want one naming the field", c.field, err)
		}
	}
	if _, err := ScenarioByName("nope"); err == nil || !strings.Contains(err.Error(), "shifted") {
		t.Errorf("unknown scenario: %v", err)
	}
	if err := Yardstick().Validate(); err != nil {
		t.Error(err)
	}
}

func TestSummarize(t *testing.T) {
	pt := func(d, v float64) []Point {
		return []Point{{Density: d, ViolationRate: v}, {Density: d + 0.5, ViolationRate: 0.5}}
	}
	rep := &Report{Curves: []Curve{
		{Policy: PolicyRequestSum, Points: pt(0.3, 0.001)},
		{Policy: PolicyP95Window, Points: pt(0.6, 0.009)},
		{Policy: PolicyMaxWindow, Points: pt(0.5, 0.0)},
		{Policy: PolicyNSigma, Points: pt(0.9, 0.02)}, // nothing within 1%
		{Policy: PolicyOracle, Points: []Point{{Density: 1}}},
		{Policy: PolicyActivation, Points: pt(0.7, 0.01)},
		{Policy: PolicyLinear, Points: pt(0.95, 0.0)}, // not a baseline
	}}
	s := rep.Summarize(0.01)
	if s.BestBaseline != PolicyP95Window || s.BestBaselineDensity != 0.6 || s.RequestSumDensity != 0.3 || s.ActivationDensity != 0.7 || s.OracleDensity != 1 {
		t.Fatalf("summary %+v", s)
	}
	for what, c := range map[string]struct {
		got  *float64
		want float64
	}{
		"gain vs request-sum":   {s.GainVsRequestSum, 0.7/0.3 - 1},
		"gain vs best baseline": {s.GainVsBestBaseline, 0.7/0.6 - 1},
		"gap closed":            {s.GapClosed, 0.25},
	} {
		if c.got == nil || math.Abs(*c.got-c.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", what, c.got, c.want)
		}
	}
	// With no request-sum setting within budget the gain is undefined.
	rep.Curves[0].Points = pt(0.3, 0.5)
	if s := rep.Summarize(0.01); s.GainVsRequestSum != nil {
		t.Errorf("gain vs request-sum %v with request-sum at density 0, want undefined", *s.GainVsRequestSum)
	}
}

// TestHoldings: the three ways a budget holds a pair choose different
// settings from the same curve, and the per-host holding sets each host
// apart (the first host's best and the second's from different points).
func TestHoldings(t *testing.T) {
	pt := func(knob, d1, v1, d2, v2 float64) Point {
		return Point{Knob: knob, Density: (d1 + d2) / 2, ViolationRate: (v1 + v2) / 2,
			FirstDensity: d1, FirstViolationRate: v1, SecondDensity: d2, SecondViolationRate: v2}
	}
	act := Curve{Policy: PolicyActivation, Points: []Point{
		pt(1, 0.50, 0.000, 0.60, 0.002),
		pt(2, 0.70, 0.004, 0.80, 0.009),
		pt(3, 0.90, 0.008, 0.95, 0.011), // the first host's own best within 1%; the pair's rate 0.0095
		pt(4, 0.95, 0.020, 0.99, 0.050),
		// Denser pairs than 3's and 2's whose own host is less dense: a
		// host's setting is chosen by its own density, not the pair's.
		pt(2.5, 0.88, 0.006, 0.99, 0.5),
		pt(1.5, 0.99, 0.5, 0.78, 0.008),
		// As dense a first host as 3's at a lower rate: the tie goes to it.
		pt(6, 0.90, 0.002, 0.10, 0.9),
	}}
	first, second, ok := act.BestPerHost(0.01)
	if !ok || first.Knob != 6 || second.Knob != 2 {
		t.Fatalf("BestPerHost(0.01) = knobs %v / %v (%v), want 6 / 2", first.Knob, second.Knob, ok)
	}
	if _, _, ok := act.BestPerHost(0.001); ok {
		t.Errorf("BestPerHost(0.001): the second host has no setting within 0.1%%, want none")
	}
	// The worst series' own rate, at least the mean: within 1% up to
	// knob 2 (knob 3's pair is within it, one of its series is not).
	for i, worst := range []float64{0.002, 0.008, 0.015, 0.06, 0.3, 0.3, 0.5} {
		act.Points[i].WorstSeriesViolationRate = worst
	}
	usage := Curve{Policy: PolicyUsageThreshold, Points: []Point{pt(0.1, 0.6, 0.005, 0.6, 0.005), pt(0.2, 0.75, 0.012, 0.72, 0.006)}}
	usage.Points[0].WorstSeriesViolationRate, usage.Points[1].WorstSeriesViolationRate = 0.009, 0.02
	rep := &Report{Curves: []Curve{
		act,
		usage,
		{Policy: PolicyOracle, Points: []Point{pt(0, 1, 0, 0.98, 0)}},
	}}
	cases := []struct {
		h              Holding
		act, base, orc float64
	}{
		{HoldPair, (0.90 + 0.95) / 2, (0.75 + 0.72) / 2, 0.99}, // usage-threshold's pair rate 0.009
		{HoldEachHost, 0.75, 0.6, 0.99},
		{HoldPerHost, (0.90 + 0.80) / 2, (0.6 + 0.72) / 2, 0.99},
		{HoldEverySeries, 0.75, 0.6, 0.99},
	}
	for _, tc := range cases {
		got := func(name string) float64 { return rep.BestDensity(name, 0.01, tc.h) }
		if math.Abs(got(PolicyActivation)-tc.act) > 1e-12 || math.Abs(got(PolicyUsageThreshold)-tc.base) > 1e-12 || math.Abs(got(PolicyOracle)-tc.orc) > 1e-12 {
			t.Errorf("holding %v: activation %v, usage-threshold %v, oracle %v; want %v, %v, %v",
				tc.h, got(PolicyActivation), got(PolicyUsageThreshold), got(PolicyOracle), tc.act, tc.base, tc.orc)
		}
		s := rep.SummarizeHeld(0.01, tc.h)
		if s.BestBaseline != PolicyUsageThreshold || math.Abs(s.ActivationDensity-tc.act) > 1e-12 || s.GapClosed == nil ||
			math.Abs(*s.GapClosed-(tc.act-tc.base)/(tc.orc-tc.base)) > 1e-12 {
			t.Errorf("holding %v: summary %+v", tc.h, s)
		}
	}
	if s, want := rep.Summarize(0.01), rep.SummarizeHeld(0.01, HoldPair); s.ActivationDensity != want.ActivationDensity || s.BestBaselineDensity != want.BestBaselineDensity {
		t.Errorf("Summarize %+v, want the pair's holding %+v", s, want)
	}
	if e := act.EdgeHeld(0.001, HoldEverySeries, 2); len(e) != 1 || !strings.Contains(e[0], "with every series within it") {
		t.Errorf("EdgeHeld(0.001, every series) = %q, want no setting with every series within it", e)
	}
	// A series' own rate is not among the figures a setting chosen on
	// another replay reads.
	if _, err := rep.SummarizeChosenOn(rep, 0.01, HoldEverySeries); err == nil {
		t.Error("SummarizeChosenOn took every series within the budget")
	}
	// One host per series: no second host to average in.
	one := &Report{Scenario: Scenario{Hosts: 1}, Curves: []Curve{{Policy: PolicyActivation, Points: []Point{
		pt(1, 0.6, 0.004, 0, 0), pt(2, 0.8, 0.02, 0, 0),
	}}}}
	if got := one.BestDensity(PolicyActivation, 0.01, HoldPerHost); got != 0.6 {
		t.Errorf("one host per series: per-host density %v, want the first host's 0.6", got)
	}
}

func TestBestWithinBudget(t *testing.T) {
	c := Curve{Points: []Point{
		{Knob: 1, Density: 0.5, ViolationRate: 0.001},
		{Knob: 2, Density: 0.7, ViolationRate: 0.01},
		{Knob: 3, Density: 0.7, ViolationRate: 0.005},
		{Knob: 4, Density: 0.9, ViolationRate: 0.0101},
	}}
	for _, tc := range []struct {
		budget float64
		knob   float64
		ok     bool
	}{{0.01, 3, true}, {0.002, 1, true}, {0.0005, 0, false}, {0.02, 4, true}} {
		p, _, ok := c.Best(tc.budget)
		if ok != tc.ok || (ok && p.Knob != tc.knob) {
			t.Errorf("budget %g: knob %g ok %v, want knob %g ok %v", tc.budget, p.Knob, ok, tc.knob, tc.ok)
		}
	}
}

func TestPrepareRejectsShortAndFlatSeries(t *testing.T) {
	short := traces.Series{Name: "short", Times: []int64{1, 2, 3}, Values: []float64{1, 2, 3}}
	if _, err := Prepare(short, Shifted(), 1); err == nil || !strings.Contains(err.Error(), "window") {
		t.Errorf("short series: %v", err)
	}
	flat := traces.Series{Name: "zero"}
	for i := 0; i < 200; i++ {
		flat.Times = append(flat.Times, int64(i))
		flat.Values = append(flat.Values, 0)
	}
	if _, err := Prepare(flat, Shifted(), 1); err == nil {
		t.Error("all-zero series accepted")
	}
	// One sample a million times the rest (an outlier, or a unit change
	// inside the file): the series is left out with a reason that says
	// so, where the engine refused it in the middle of the replay.
	spike := traces.Series{Name: "spike"}
	for i := 0; i < 400; i++ {
		spike.Times = append(spike.Times, 1600000000+60*int64(i))
		spike.Values = append(spike.Values, 0.003+0.001*float64(i%7))
	}
	spike.Values[250] = 1e6
	_, err := Prepare(spike, Shifted(), 1)
	var u *UnusableError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "outlier") || !strings.Contains(err.Error(), "1600015000") {
		t.Errorf("a series with a 1e6 spike: %v, want it unusable, naming the sample's time and an outlier", err)
	}
	// Memory in use above the memory provisioned (columns swapped, or in
	// other units) is left out, naming the sample; a capacity column of
	// zeros is said to be one, not missing.
	mem := spike
	mem.Values = slices.Clone(spike.Values)
	mem.Values[250] = 0.005
	mem.Memory = make([]float64, len(mem.Values))
	for i := range mem.Memory {
		mem.Memory[i] = 100
	}
	mem.MemoryProvisionedMB = 400
	if _, err := Prepare(mem, MemoryScenario(), 1); err != nil {
		t.Fatalf("a series with memory: %v", err)
	}
	mem.Memory[10] = 500 // 1.25x: an overcommit a trace may show
	if _, err := Prepare(mem, MemoryScenario(), 1); err != nil {
		t.Fatalf("memory a little above the provisioned: %v", err)
	}
	mem.Memory[10] = 5000
	if _, err := Prepare(mem, MemoryScenario(), 1); !errors.As(err, &u) || !strings.Contains(err.Error(), "more than twice the most memory provisioned") {
		t.Errorf("memory above the provisioned: %v, want the series unusable, saying so", err)
	}
	mem.Memory[10], mem.MemoryProvisionedMB = 100, 0
	if _, err := Prepare(mem, MemoryScenario(), 1); err == nil || !strings.Contains(err.Error(), "0 or empty in every row") {
		t.Errorf("a capacity column of zeros: %v, want it named", err)
	}
	// A series whose peak is a few hundred times its p99 still replays.
	spike.Values[250] = 0.5
	if _, err := Prepare(spike, Shifted(), 1); err != nil {
		t.Errorf("a spike of 100x the usage: %v", err)
	}
}

// Edge flags a best setting at either end of a sweep, and a sweep with no
// setting within budget; a best setting inside the sweep, and a curve of
// one setting, are not flagged.
func TestCurveEdge(t *testing.T) {
	c := &Curve{Policy: "p", KnobName: "N", Points: []Point{
		{Knob: 0, Density: 0.9, ViolationRate: 0.05},
		{Knob: 1, Density: 0.8, ViolationRate: 0.02},
		{Knob: 2, Density: 0.7, ViolationRate: 0.009},
		{Knob: 3, Density: 0.6, ViolationRate: 0.004},
	}}
	for _, tc := range []struct {
		budget float64
		want   string
	}{
		{0.01, ""},
		{0.1, "at its sweep's edge (N 0, of 0 to 3)"},
		{0.005, "at its sweep's edge (N 3, of 0 to 3)"},
		{0.001, "no setting within budget 0.001 in its sweep (N 0 to 3)"},
	} {
		got := c.Edge(tc.budget)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("budget %g: %q, want %q", tc.budget, got, tc.want)
		}
	}
	if got := (&Curve{Policy: "oracle", Points: []Point{{Density: 1}}}).Edge(0.001); got != "" {
		t.Errorf("a one-setting curve flagged: %q", got)
	}
}

func TestCurveEdgeHeld(t *testing.T) {
	// Within 1%: the pair's best is knob 3 and each host's at one setting
	// knob 2, both inside the sweep; the first host alone picks knob 4
	// (the sweep's last), the second host knob 2.
	c := &Curve{Policy: "p", KnobName: "N", Points: []Point{
		pairPoint(1, 0.5, 0.001, 0.5, 0.001),
		pairPoint(2, 0.7, 0.004, 0.7, 0.008),
		pairPoint(3, 0.8, 0.006, 0.8, 0.013),
		pairPoint(4, 0.9, 0.009, 0.6, 0.05),
	}}
	firstAtEdge := []string{"p: its best setting within budget 0.01 for the first host at its own setting is at its sweep's edge (N 4, of 1 to 4)"}
	cases := []struct {
		budget float64
		h      Holding
		hosts  int
		want   []string
	}{
		{0.01, HoldPair, 2, nil},
		{0.01, HoldEachHost, 2, nil},
		{0.01, HoldPerHost, 2, firstAtEdge},
		{0.01, HoldPerHost, 1, firstAtEdge},
		{0.002, HoldEachHost, 2, []string{"p: its best setting within budget 0.002 with each host within it is at its sweep's edge (N 1, of 1 to 4)"}},
		{0.001, HoldPerHost, 2, []string{
			"p: its best setting within budget 0.001 for the first host at its own setting is at its sweep's edge (N 1, of 1 to 4)",
			"p: its best setting within budget 0.001 for the second host at its own setting is at its sweep's edge (N 1, of 1 to 4)",
		}},
		// A scenario of one host per series has no second host to flag.
		{0.001, HoldPerHost, 1, []string{"p: its best setting within budget 0.001 for the first host at its own setting is at its sweep's edge (N 1, of 1 to 4)"}},
		{0.0005, HoldPerHost, 2, []string{
			"p: no setting within budget 0.0005 for the first host at its own setting in its sweep (N 1 to 4)",
			"p: no setting within budget 0.0005 for the second host at its own setting in its sweep (N 1 to 4)",
		}},
		{0.0005, HoldPair, 2, []string{"p: no setting within budget 0.0005 in its sweep (N 1 to 4)"}},
	}
	for _, tc := range cases {
		if got := c.EdgeHeld(tc.budget, tc.h, tc.hosts); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%g, %v, %d hosts: %q, want %q", tc.budget, tc.h, tc.hosts, got, tc.want)
		}
	}
	if got := c.EdgeHeld(0.0005, HoldPair, 2); got[0] != c.Edge(0.0005) {
		t.Errorf("the pair's holding %q, Edge %q", got, c.Edge(0.0005))
	}
}
