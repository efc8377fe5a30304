package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/stats"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// memSeries is a synthetic series with memory: CPU from Synthetic, memory
// a slow wave around a share of the provisioned memory, with bursts.
func memSeries(t testing.TB, name string, seed uint64, samples int) traces.Series {
	t.Helper()
	c := DefaultSynth()
	c.Samples = samples
	s, err := Synthetic(name, seed, c)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 77))
	s.MemoryProvisionedMB = 4096
	s.Memory = make([]float64, samples)
	for i := range s.Memory {
		s.Memory[i] = 4096 * (0.35 + 0.2*math.Sin(float64(i)/300+float64(seed)) + 0.05*rng.Float64())
		if rng.Float64() < 0.003 {
			s.Memory[i] *= 1.8
		}
	}
	return s
}

// The streaming calibration's pooled median (counted in passes over the
// series) is exactly the median of every sample held at once, also when
// many samples are equal and when the median's bin is too large to keep
// and is counted again by finer bits.
func TestPooledMedianIsExact(t *testing.T) {
	crane := loadCrane(t)
	var percents []traces.Series // PlanetLab-like: integer percentages, many ties
	for i := 0; i < 7; i++ {
		rng := rand.New(rand.NewPCG(uint64(i), 5))
		s := traces.Series{Name: fmt.Sprintf("vm%d", i)}
		for j := 0; j < 700+97*i; j++ {
			s.Times = append(s.Times, int64(300*j))
			s.Values = append(s.Values, float64(rng.IntN(12)*rng.IntN(3)))
		}
		percents = append(percents, s)
	}
	for _, c := range []struct {
		name   string
		series []traces.Series
		limit  int
	}{
		{"crane", crane, 1 << 22},
		{"ties", percents, 1 << 22},
		{"crane, bins refined", crane[:5], 50},
		{"ties, bins refined", percents, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := collectLimit
			collectLimit = c.limit
			defer func() { collectLimit = old }()
			sc := Shifted()
			cal, err := calibrate(context.Background(), FromSeries(c.series), sc, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			var pooled []float64
			var medians float64
			for _, s := range c.series {
				a, err := normalise(s, sc)
				if err != nil {
					t.Fatal(err)
				}
				x := usageOverRequest(a.Usage, a.Request)
				pooled = append(pooled, x...)
				medians += stats.Quantile(x, 0.5)
			}
			if want := stats.Quantile(pooled, 0.5); cal.median != want {
				t.Fatalf("streaming median %v, in memory %v", cal.median, want)
			}
			if want := medians / float64(len(c.series)); math.Abs(cal.meanMedian-want) > 1e-12 {
				t.Fatalf("mean of medians %v, want %v", cal.meanMedian, want)
			}
			if want := cal.median / (1 - sc.TargetSlack); cal.factor != want {
				t.Fatalf("factor %v, want %v", cal.factor, want)
			}
		})
	}
}

// A sweep replays every knob value in one pass: its tallies must be
// exactly those of one replay per knob value, in every scenario and for
// both knobs, with and without step limits.
func TestSweepEqualsOneReplayPerKnob(t *testing.T) {
	crane := loadCrane(t)
	for i := range crane { // a day and a half of each, to keep the test short
		crane[i].Times, crane[i].Values = crane[i].Times[:2200], crane[i].Values[:2200]
	}
	mem := []traces.Series{memSeries(t, "m1", 1, 2200), memSeries(t, "m2", 2, 2200)}
	hyst, _ := engine.ParseStep("2")
	down, _ := engine.ParseStep("10%")
	for _, c := range []struct {
		name   string
		series []traces.Series
		sc     Scenario
		cfg    ActivationConfig
	}{
		{"shifted, thresholds", crane[6:7], Shifted(), ActivationConfig{Values: []float64{0.1, 0.3, 0.5, 0.7, 0.9}}},
		{"yardstick, thresholds", crane[6:7], Yardstick(), ActivationConfig{Values: []float64{0.2, 0.5, 0.8}}},
		{"shifted, per_branch", crane[6:7], Shifted(), ActivationConfig{Knob: KnobPerBranch, Values: []float64{0.5, 0.8, 1, 1.3}}},
		{"shifted, steps", crane[6:7], Shifted(), ActivationConfig{Values: []float64{0.2, 0.5, 0.8}, Steps: engine.Steps{Hysteresis: hyst, MaxDown: down}}},
		{"two apps", crane[6:8], TwoApps(), ActivationConfig{Values: []float64{0.3, 0.6}}},
		{"memory", mem, MemoryScenario(), ActivationConfig{Values: []float64{0.3, 0.6}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Activation(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := PrepareApps(c.series, c.sc, 1)
			if err != nil {
				t.Fatal(err)
			}
			all, err := EvaluateAll(context.Background(), r, p)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range p.Knob().Values {
				one, err := Evaluate(r, p, v)
				if err != nil {
					t.Fatal(err)
				}
				if one != all[k] {
					t.Fatalf("knob %v: sweep %+v, one replay %+v", v, all[k], one)
				}
				if one.Replicas == 0 {
					t.Fatalf("knob %v: no replicas placed", v)
				}
			}
		})
	}
}

// In the memory scenario the oracle never overloads either resource, a
// sample over the memory capacity is a memory violation (and not a CPU
// one), and memory bounds every baseline.
func TestMemoryScenario(t *testing.T) {
	sc := MemoryScenario()
	s := memSeries(t, "m1", 3, 2000)
	r, err := Prepare(s, sc, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !r.HasMemory() || r.App(0).HostMemoryMB != 10*4096 || r.App(0).MemoryRequest != 0.1 {
		t.Fatalf("memory: %v, host %v MB, request share %v", r.HasMemory(), r.App(0).HostMemoryMB, r.App(0).MemoryRequest)
	}
	for h := 0; h < r.Hosts(); h++ {
		for d := 0; d < r.Decisions(); d += 3 {
			n := r.Oracle(h, d)
			lo, hi := r.Block(d)
			for s := lo; s < hi; s++ {
				if r.HostUsage(h, n, s) > 1 || r.HostMemory(h, n, s) > 1 {
					t.Fatalf("host %d decision %d: the oracle's %d overloads (cpu %v, memory %v)", h, d, n, r.HostUsage(h, n, s), r.HostMemory(h, n, s))
				}
			}
		}
	}
	// A hand replay: CPU tiny, memory 0.3 of the host per replica: 4
	// replicas use 1.2 of the memory and 0.04 of the CPU.
	hand := &App{Name: "hand", Usage: []float64{0.01, 0.01, 0.01, 0.01}, Request: 0.01,
		Memory: []float64{0.3, 0.3, 0.3, 0.3}, MemoryRequest: 0.25, Times: []int64{0, 60, 120, 180}}
	hsc := handScenario(2, 2)
	hsc.Memory, hsc.MemoryHostReplicas = true, 4
	hr := &Replay{Name: "hand", Scenario: hsc, apps: []*App{hand}, samples: 4, period: 60, maxRepl: noCap}
	hr.build()
	tl, err := Evaluate(hr, seq{[]int{4}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tl.MemoryViolations != 4 || tl.CPUViolations != 0 || tl.Violations != 4 || math.Abs(tl.MemoryExcess-4*0.2) > 1e-9 {
		t.Fatalf("tally %+v: want 4 memory violations of 0.2 each and none of CPU", tl)
	}
	if o := hr.Oracle(0, 0); o != 3 {
		t.Fatalf("oracle %d, want 3 (memory-bound)", o)
	}
	// Max-window bounds the count by the memory window too: 1/0.3 = 3.
	d, _ := MaxWindow().New(hr, 0)
	out := []int{0, 0}
	if err := d.Decide(0, []int{1, 1}, out); err != nil {
		t.Fatal(err)
	}
	if out[0] != 3 {
		t.Fatalf("max-window count %d, want 3 by memory", out[0])
	}
	// A series without memory cannot be replayed in the memory scenario.
	if _, err := Prepare(loadCrane(t)[0], sc, 1); err == nil || !strings.Contains(err.Error(), "no memory columns") {
		t.Fatalf("a CPU-only series in the memory scenario: %v", err)
	}
}

// With different applications, the second host runs the next series, the
// engine reads two different observations, and every series is replayed
// once on each side.
func TestTwoApps(t *testing.T) {
	crane := loadCrane(t)[:3]
	r, err := PrepareApps(crane[:2], TwoApps(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.App(0).Name != crane[0].Name || r.App(1).Name != crane[1].Name || r.Name != crane[0].Name+"+"+crane[1].Name {
		t.Fatalf("hosts run %s and %s (replay %s)", r.App(0).Name, r.App(1).Name, r.Name)
	}
	if r.Samples() != min(crane[0].Len(), crane[1].Len()) {
		t.Fatalf("%d samples, want the shorter series' %d", r.Samples(), min(crane[0].Len(), crane[1].Len()))
	}
	var first, second engine.Observation
	r.Observation(0, 10, 5, engine.RoleFirst, "first", &first)
	r.Observation(1, 10, 5, engine.RoleSecond, "second", &second)
	if first.Samples[0].CPUMHz == second.Samples[0].CPUMHz && first.ReplicaCPUDemandMHz == second.ReplicaCPUDemandMHz {
		t.Fatal("the two hosts' observations are the same")
	}
	var names []string
	rep, err := Run(context.Background(), crane, TwoApps(), []Policy{Oracle()}, Options{OnSeries: func(s SeriesResult) { names = append(names, s.Name) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{crane[0].Name + "+" + crane[1].Name, crane[1].Name + "+" + crane[2].Name, crane[2].Name + "+" + crane[0].Name}
	if strings.Join(names, " ") != strings.Join(want, " ") || strings.Join(rep.Series, " ") != strings.Join(want, " ") {
		t.Fatalf("pairs %v (report %v), want %v", names, rep.Series, want)
	}
	if _, err := Run(context.Background(), crane[:1], TwoApps(), []Policy{Oracle()}, Options{}); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Fatalf("one series with different applications: %v", err)
	}
}

// A run holds at most InFlight series at a time during the replay: a
// series is loaded, replayed, summed and dropped before more are loaded.
func TestRunHoldsAtMostInFlightSeries(t *testing.T) {
	base := loadCrane(t)
	var mu sync.Mutex
	replaying := false
	outstanding, peak := map[string]bool{}, 0
	var src []Source
	for i := 0; i < 40; i++ {
		s := base[i%len(base)]
		s.Name = fmt.Sprintf("s%02d", i)
		s.Times, s.Values = s.Times[:1500], s.Values[:1500]
		src = append(src, Source{Name: s.Name, Load: func() (traces.Series, error) {
			mu.Lock()
			defer mu.Unlock()
			if replaying {
				outstanding[s.Name] = true
				peak = max(peak, len(outstanding))
			}
			return s, nil
		}})
	}
	opt := Options{Workers: 2, InFlight: 3,
		Progress: func(p Progress) {
			mu.Lock()
			replaying = replaying || p.Phase == PhaseReplaying
			mu.Unlock()
		},
		OnSeries: func(s SeriesResult) {
			mu.Lock()
			delete(outstanding, s.Name)
			mu.Unlock()
		}}
	rep, err := RunSources(context.Background(), src, Shifted(), []Policy{MaxWindow(), Oracle()}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Series) != 40 || peak == 0 {
		t.Fatalf("%d series replayed, peak %d", len(rep.Series), peak)
	}
	if peak > opt.InFlight {
		t.Fatalf("%d series held at once during the replay, InFlight is %d", peak, opt.InFlight)
	}
}

// Series that cannot be replayed are left out and listed with the reason;
// a run where none can be replayed is an error.
func TestSkippedSeriesAreReported(t *testing.T) {
	crane := loadCrane(t)[:2]
	short := traces.Series{Name: "short", Times: []int64{1, 2, 3}, Values: []float64{1, 2, 3}}
	zero := traces.Series{Name: "zero"}
	for i := 0; i < 300; i++ {
		zero.Times = append(zero.Times, int64(60*i))
		zero.Values = append(zero.Values, 0)
	}
	rep, err := Run(context.Background(), append([]traces.Series{short, zero}, crane...), Shifted(), []Policy{Oracle()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Series) != 2 || len(rep.Skipped) != 2 {
		t.Fatalf("replayed %v, skipped %+v", rep.Series, rep.Skipped)
	}
	if rep.Skipped[0].Series != "short" || !strings.Contains(rep.Skipped[0].Reason, "window+interval") ||
		rep.Skipped[1].Series != "zero" || !strings.Contains(rep.Skipped[1].Reason, "normalise") {
		t.Fatalf("skipped %+v", rep.Skipped)
	}
	if _, err := Run(context.Background(), []traces.Series{short, zero}, Shifted(), []Policy{Oracle()}, Options{}); err == nil || !strings.Contains(err.Error(), "none of the 2 series") {
		t.Fatalf("nothing to replay: %v", err)
	}
}

// Pooling reports sums their series: the pooled point of every policy
// setting is the aggregate of every series' tally.
func TestPoolSumsFamilies(t *testing.T) {
	crane := loadCrane(t)
	pols := []Policy{RequestSum(), NSigma(), Oracle()}
	var tallies [][][]Tally // [series][policy][knob]
	collect := Options{OnSeries: func(s SeriesResult) { tallies = append(tallies, s.Tallies) }}
	a, err := Run(context.Background(), crane[:3], Shifted(), pols, collect)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(context.Background(), crane[3:5], Shifted(), pols, collect)
	if err != nil {
		t.Fatal(err)
	}
	a.Family, b.Family = "alpha", "beta"
	b.Series[0] = a.Series[0] // two families' series of one name
	b.Skipped = []Skipped{{Series: "short", Reason: "too short"}}
	p, err := Pool(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Series) != 5 || p.Decisions != a.Decisions+b.Decisions {
		t.Fatalf("pooled %d series, %d decisions", len(p.Series), p.Decisions)
	}
	if p.Series[0] != "alpha/"+a.Series[0] || p.Series[3] != "beta/"+a.Series[0] || p.Series[4] != "beta/"+b.Series[1] {
		t.Errorf("pooled series %q; want each named family/name", p.Series)
	}
	if len(p.Skipped) != 1 || p.Skipped[0].Series != "beta/short" {
		t.Errorf("pooled skipped %+v; want beta/short", p.Skipped)
	}
	sawWorst := false
	for pi, pol := range pols {
		for k, v := range pol.Knob().Values {
			var per []Tally
			for _, s := range tallies {
				per = append(per, s[pi][k])
			}
			want := Aggregate(v, per)
			got := p.Curves[pi].Points[k]
			if math.Abs(got.Density-want.Density) > 1e-12 || math.Abs(got.ViolationRate-want.ViolationRate) > 1e-12 || got.Severity != want.Severity {
				t.Fatalf("%s %v: pooled %+v, aggregate %+v", pol.Name(), v, got, want)
			}
			// The worst series is the largest of the five series' own
			// rates, across the two families.
			worst := 0.0
			for _, tl := range per {
				worst = max(worst, tl.ViolationRate())
			}
			if got.WorstSeriesViolationRate != worst || want.WorstSeriesViolationRate != worst {
				t.Fatalf("%s %v: worst series' violation rate pooled %v, aggregate %v; want %v", pol.Name(), v, got.WorstSeriesViolationRate, want.WorstSeriesViolationRate, worst)
			}
			if worst > 0 {
				sawWorst = true
			}
		}
	}
	if !sawWorst {
		t.Error("no setting overloaded any series: the worst series' rate was never checked above 0")
	}
	if _, err := Pool(a, &Report{Scenario: Yardstick()}); err == nil {
		t.Fatal("reports of two scenarios pooled")
	}
}

// Step limits hold every move of the activation policy's counts: never
// more than max_scale_up up or max_scale_down down in one decision, never
// a change smaller than the hysteresis band but for the safety moves the
// band does not hold (engine.Steps.Control): a scale-down the running
// replicas need, a first replica from 0. Which downs are those,
// TestActivationStepsAreTheStrategys checks against the engine.
func TestStepsLimitEveryMove(t *testing.T) {
	crane := loadCrane(t)
	up, _ := engine.ParseStep("3")
	down, _ := engine.ParseStep("2")
	hyst, _ := engine.ParseStep("2")
	p, err := Activation(ActivationConfig{Name: "stepped", Values: []float64{0.5}, Steps: engine.Steps{MaxUp: up, MaxDown: down, Hysteresis: hyst}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Prepare(crane[6], Shifted(), 1)
	if err != nil {
		t.Fatal(err)
	}
	_, hosts, err := Trace(r, p, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	moves := 0
	for h, hs := range hosts {
		for i := 1; i < len(hs.Counts); i++ {
			delta := hs.Counts[i] - hs.Counts[i-1]
			if delta == 0 {
				continue
			}
			moves++
			if delta > 3 || delta < -2 || (delta == 1 && hs.Counts[i-1] != 0) {
				t.Fatalf("host %d sample %d: the count moved by %d from %d (limits +3, -2, band 2 but for safety moves)", h, i, delta, hs.Counts[i-1])
			}
		}
	}
	if moves == 0 {
		t.Fatal("the counts never moved")
	}
}
