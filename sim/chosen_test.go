package sim

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// pairPoint is a point of a pair whose hosts have the given figures.
func pairPoint(knob, d1, v1, d2, v2 float64) Point {
	return Point{Knob: knob, Density: (d1 + d2) / 2, ViolationRate: (v1 + v2) / 2,
		FirstDensity: d1, FirstViolationRate: v1, SecondDensity: d2, SecondViolationRate: v2}
}

// sweptReport is a report of two hosts per series with the activation,
// usage-threshold, p95-window and oracle curves given (their sweeps are
// fixed: knobs 1, 2, 3, 6; 0.1, 0.2; 0.5; none).
func sweptReport(act [4][4]float64, usage [2][4]float64, p95, oracle [4]float64) *Report {
	points := func(knobs []float64, figs ...[4]float64) []Point {
		var ps []Point
		for i, f := range figs {
			ps = append(ps, pairPoint(knobs[i], f[0], f[1], f[2], f[3]))
		}
		return ps
	}
	return &Report{Scenario: Scenario{Hosts: 2}, Curves: []Curve{
		{Policy: PolicyActivation, KnobName: "output_threshold", Points: points([]float64{1, 2, 3, 6}, act[:]...)},
		{Policy: PolicyUsageThreshold, KnobName: "theta", Points: points([]float64{0.1, 0.2}, usage[:]...)},
		{Policy: PolicyP95Window, KnobName: "m", Points: points([]float64{0.5}, p95)},
		{Policy: PolicyOracle, Points: points([]float64{0}, oracle)},
	}}
}

// choosingReport is where the settings are chosen (each point's first
// host's density and violation rate, then the second's): at a 1% budget
// the activation's pair setting is knob 3, its each-host one knob 2, and
// its per-host ones 6 (first) and 2 (second); usage-threshold's are 0.2,
// 0.1, and 0.1 / 0.2; p95-window has none within 1%.
func choosingReport() *Report {
	return sweptReport(
		[4][4]float64{{0.50, 0.000, 0.60, 0.002}, {0.70, 0.004, 0.80, 0.009}, {0.90, 0.008, 0.95, 0.011}, {0.90, 0.002, 0.10, 0.9}},
		[2][4]float64{{0.6, 0.005, 0.6, 0.005}, {0.75, 0.012, 0.72, 0.006}},
		[4]float64{0.9, 0.05, 0.9, 0.05}, [4]float64{1, 0, 1, 0})
}

// readingReport has the same sweeps as choosingReport with other figures,
// as held-out series would give.
func readingReport() *Report {
	return sweptReport(
		[4][4]float64{{0.40, 0.001, 0.50, 0.001}, {0.60, 0.003, 0.70, 0.009}, {0.80, 0.009, 0.85, 0.020}, {0.85, 0.004, 0.05, 0.8}},
		[2][4]float64{{0.55, 0.0095, 0.5, 0.002}, {0.70, 0.015, 0.65, 0.009}},
		[4]float64{0.95, 0.001, 0.95, 0.001}, [4]float64{0.99, 0, 0.97, 0})
}

func TestSummarizeChosenOn(t *testing.T) {
	on, rep := choosingReport(), readingReport()
	const act, theta = "output_threshold", "theta"
	cases := []struct {
		h Holding
		// want: the activation's and usage-threshold's chosen knobs and
		// the figures read at them.
		act, base Chosen
		over      []string
	}{
		// Over the budget here: no gain or gap closed.
		{HoldPair,
			Chosen{PolicyActivation, act, 3, 3, (0.80 + 0.85) / 2, (0.009 + 0.020) / 2, false},
			Chosen{PolicyUsageThreshold, theta, 0.2, 0.2, (0.70 + 0.65) / 2, 0.012, false},
			[]string{PolicyActivation, PolicyUsageThreshold}},
		{HoldEachHost,
			Chosen{PolicyActivation, act, 2, 2, (0.60 + 0.70) / 2, 0.009, true},
			Chosen{PolicyUsageThreshold, theta, 0.1, 0.1, (0.55 + 0.5) / 2, 0.0095, true},
			nil},
		{HoldPerHost,
			// The first host at knob 6 (0.85, 0.4%), the second at 2 (0.70, 0.9%).
			Chosen{PolicyActivation, act, 6, 2, (0.85 + 0.70) / 2, 0.009, true},
			// The worse host is the first (0.95%).
			Chosen{PolicyUsageThreshold, theta, 0.1, 0.2, (0.55 + 0.65) / 2, 0.0095, true},
			nil},
	}
	near := func(a, b Chosen) bool {
		return a.Policy == b.Policy && a.KnobName == b.KnobName && a.FirstKnob == b.FirstKnob && a.SecondKnob == b.SecondKnob &&
			math.Abs(a.Density-b.Density) < 1e-12 && math.Abs(a.ViolationRate-b.ViolationRate) < 1e-12 && a.WithinBudget == b.WithinBudget
	}
	for _, tc := range cases {
		t.Run(tc.h.String(), func(t *testing.T) {
			s, err := rep.SummarizeChosenOn(on, 0.01, tc.h)
			if err != nil {
				t.Fatal(err)
			}
			if s.Activation == nil || !near(*s.Activation, tc.act) {
				t.Errorf("activation %+v, want %+v", s.Activation, tc.act)
			}
			var base *Chosen
			for i := range s.Policies {
				if s.Policies[i].Policy == PolicyUsageThreshold {
					base = &s.Policies[i]
				}
			}
			if base == nil || !near(*base, tc.base) {
				t.Errorf("usage-threshold %+v, want %+v", base, tc.base)
			}
			// p95-window has no setting within 1% where it is chosen,
			// though it would read well here: no figure is read for it.
			if !reflect.DeepEqual(s.Unset, []string{PolicyP95Window}) || s.BestBaseline != PolicyUsageThreshold {
				t.Errorf("unset %v, best baseline %s; want [p95-window], usage-threshold", s.Unset, s.BestBaseline)
			}
			wantWithin := ""
			if tc.base.WithinBudget {
				wantWithin = PolicyUsageThreshold
			}
			if s.BestWithinBudget != wantWithin || (wantWithin != "" && math.Abs(s.BestWithinBudgetDensity-tc.base.Density) > 1e-12) {
				t.Errorf("best baseline within the budget %q (%v), want %q", s.BestWithinBudget, s.BestWithinBudgetDensity, wantWithin)
			}
			if !reflect.DeepEqual(s.OverBudget, tc.over) {
				t.Errorf("over budget %v, want %v", s.OverBudget, tc.over)
			}
			if s.OracleDensity != 0.98 {
				t.Errorf("oracle %v, want the reading report's 0.98", s.OracleDensity)
			}
			if !tc.act.WithinBudget {
				if s.GainVsBestBaseline != nil || s.GapClosed != nil {
					t.Errorf("the activation over the budget: gain %v, gap closed %v; want none", deref(s.GainVsBestBaseline), deref(s.GapClosed))
				}
				return
			}
			wantGain := tc.act.Density/tc.base.Density - 1
			wantGap := (tc.act.Density - tc.base.Density) / (0.98 - tc.base.Density)
			if s.GainVsBestBaseline == nil || math.Abs(*s.GainVsBestBaseline-wantGain) > 1e-12 || s.GapClosed == nil || math.Abs(*s.GapClosed-wantGap) > 1e-12 {
				t.Errorf("gain %v, gap closed %v; want %v, %v", deref(s.GainVsBestBaseline), deref(s.GapClosed), wantGain, wantGap)
			}
		})
	}
}

// Settings chosen on the replay they are read on are the replay's own
// best: the figures of SummarizeHeld, under every holding.
func TestSummarizeChosenOnItself(t *testing.T) {
	for _, rep := range []*Report{choosingReport(), readingReport()} {
		for _, h := range []Holding{HoldPair, HoldEachHost, HoldPerHost} {
			for _, budget := range []float64{0.001, 0.005, 0.01, 0.02} {
				s, err := rep.SummarizeChosenOn(rep, budget, h)
				if err != nil {
					t.Fatal(err)
				}
				held := rep.SummarizeHeld(budget, h)
				act := 0.0
				if s.Activation != nil {
					act = s.Activation.Density
				}
				if act != held.ActivationDensity || s.BestBaselineDensity != held.BestBaselineDensity || s.OracleDensity != held.OracleDensity {
					t.Errorf("%v at %g: chosen on itself activation %v, best baseline %v, oracle %v; SummarizeHeld %v, %v, %v",
						h, budget, act, s.BestBaselineDensity, s.OracleDensity, held.ActivationDensity, held.BestBaselineDensity, held.OracleDensity)
				}
				if len(s.OverBudget) > 0 {
					t.Errorf("%v at %g: over budget %v on the replay that chose them", h, budget, s.OverBudget)
				}
			}
		}
	}
}

func TestSummarizeChosenOnRefusesOtherSweeps(t *testing.T) {
	cases := []struct {
		name   string
		change func(on *Report)
		want   string
	}{
		{"a policy not replayed there", func(on *Report) { on.Curves = on.Curves[1:] }, "policy activation: not replayed"},
		{"other knob values", func(on *Report) { on.Curves[0].Points[2].Knob = 3.5 }, "policy activation: swept 4 settings here (1 to 6) and 4 there (1 to 6), not the same values"},
		{"fewer settings", func(on *Report) { on.Curves[1].Points = on.Curves[1].Points[:1] }, "policy usage-threshold: swept 2 settings here (0.1 to 0.2) and 1 there (0.1 to 0.1)"},
		{"another knob", func(on *Report) { on.Curves[0].KnobName = "per_branch" }, `policy activation: swept "output_threshold" here and "per_branch"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			on := choosingReport()
			tc.change(on)
			_, err := readingReport().SummarizeChosenOn(on, 0.01, HoldPair)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// In a scenario of one host per series the per-host figures are the
// first host's.
func TestSummarizeChosenOnOneHost(t *testing.T) {
	one := func(d1, d2 float64) *Report {
		return &Report{Scenario: Scenario{Hosts: 1}, Curves: []Curve{{Policy: PolicyActivation, Points: []Point{
			pairPoint(1, d1, 0.004, 0, 0), pairPoint(2, d2, 0.02, 0, 0),
		}}}}
	}
	s, err := one(0.5, 0.7).SummarizeChosenOn(one(0.6, 0.8), 0.01, HoldPerHost)
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Activation; a == nil || a.FirstKnob != 1 || a.SecondKnob != 1 || a.Density != 0.5 || a.ViolationRate != 0.004 {
		t.Errorf("one host per series: %+v, want the first host's figures at knob 1 (0.5, 0.004)", a)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestWorstFamilyRates: each point's rates are the worst family's, its
// densities the pooled report's, and the pooled report is left as it was;
// a setting chosen on it keeps every family within the budget.
func TestWorstFamilyRates(t *testing.T) {
	pooled, a, b := choosingReport(), choosingReport(), readingReport()
	a.Family, b.Family = "a", "b"
	// The pooled report's own rates are the families' mean, never above
	// the worse: make them higher here to see that they are not used.
	for i := range pooled.Curves {
		for j := range pooled.Curves[i].Points {
			p := &pooled.Curves[i].Points[j]
			p.ViolationRate, p.FirstViolationRate, p.SecondViolationRate = 1, 1, 1
		}
	}
	before := choosingReport()
	for i := range before.Curves {
		for j := range before.Curves[i].Points {
			p := &before.Curves[i].Points[j]
			p.ViolationRate, p.FirstViolationRate, p.SecondViolationRate = 1, 1, 1
		}
	}
	w, err := WorstFamilyRates(pooled, []*Report{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pooled, before) {
		t.Fatal("WorstFamilyRates changed the pooled report")
	}
	// Everything but the curves is the pooled report's: its series name
	// what the settings were chosen on (overlap, fitted).
	named := *pooled
	named.Family, named.Series = PooledFamily, []string{"a/s1", "b/s2"}
	w2, err := WorstFamilyRates(&named, []*Report{a, b})
	if err != nil {
		t.Fatal(err)
	}
	rest, wantRest := *w2, named
	rest.Curves, wantRest.Curves = nil, nil
	if !reflect.DeepEqual(rest, wantRest) {
		t.Errorf("the report but its curves: %+v, want the pooled one's %+v", rest, wantRest)
	}
	for i, c := range w.Curves {
		for j, p := range c.Points {
			pa, pb, pp := a.Curves[i].Points[j], b.Curves[i].Points[j], pooled.Curves[i].Points[j]
			want := pp
			want.ViolationRate = max(pa.ViolationRate, pb.ViolationRate)
			want.FirstViolationRate = max(pa.FirstViolationRate, pb.FirstViolationRate)
			want.SecondViolationRate = max(pa.SecondViolationRate, pb.SecondViolationRate)
			if p != want {
				t.Errorf("%s, point %d: %+v, want %+v", c.Policy, j, p, want)
			}
		}
	}
	// The pooled choice at 1% is knob 3 for the pair (choosingReport);
	// b runs over there (1.45%), so the worst family's choice is knob 2.
	s, err := b.SummarizeChosenOn(w, 0.01, HoldPair)
	if err != nil {
		t.Fatal(err)
	}
	if s.Activation == nil || s.Activation.FirstKnob != 2 || !s.Activation.WithinBudget {
		t.Errorf("activation chosen on the worst family's rates: %+v, want knob 2, within the budget", s.Activation)
	}

	for _, tc := range []struct {
		name string
		edit func(*Report)
		want string
	}{
		{"a policy missing", func(r *Report) { r.Curves = r.Curves[:2] }, "family b: policy p95-window was not replayed"},
		{"another sweep", func(r *Report) { r.Curves[1].Points = r.Curves[1].Points[:1] }, "family b: policy usage-threshold: swept 2 settings here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := readingReport()
			b.Family = "b"
			tc.edit(b)
			if _, err := WorstFamilyRates(choosingReport(), []*Report{a, b}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := WorstFamilyRates(choosingReport(), nil); err == nil {
		t.Error("no families: no error")
	}
}
