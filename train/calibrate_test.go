package train

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/sim"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// curve makes a sweep of n points whose first host overloads at rate
// first(i) and the second at second(i), each host's density rising with
// the threshold index's looseness (falling with i).
func curve(n int, first, second func(i int) float64) []sim.Point {
	pts := make([]sim.Point, n)
	for i := range pts {
		d := 1 - float64(i)/float64(n)
		pts[i] = sim.Point{FirstDensity: d, SecondDensity: d, FirstViolationRate: first(i), SecondViolationRate: second(i)}
	}
	return pts
}

func TestShiftScore(t *testing.T) {
	// Violation rates that fall tenfold every 4 steps from 10%: a host
	// meets 1% from step 4 on and 0.1% from step 8 on.
	falling := func(from int) func(int) float64 {
		return func(i int) float64 { return 0.1 * math.Pow(10, -float64(i-from)/4) }
	}
	cases := []struct {
		name          string
		first, second func(int) float64
		wantBest      int // the shift of the highest score
	}{
		{"alike", falling(0), falling(0), 0},
		{"second overloads 4 steps longer", falling(0), falling(4), 4},
		{"first overloads 2 steps longer", falling(2), falling(0), -2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			curves := [][]sim.Point{curve(40, c.first, c.second)}
			k, score, unshifted, ok := bestShift(curves, 8)
			if !ok || k != c.wantBest {
				t.Fatalf("best shift %d steps (found %v), want %d", k, ok, c.wantBest)
			}
			if s, _ := shiftScore(curves, k); s != score || score < unshifted || (k != 0 && score == unshifted) {
				t.Errorf("score %v (shiftScore %v), unshifted %v", score, s, unshifted)
			}
		})
	}
	// The shift in logits: the steps of the simulator's sweep, whose
	// second host at step j reads the threshold j steps stricter.
	th := sim.DefaultThresholds()
	logit := func(p float64) float64 { return math.Log(p / (1 - p)) }
	if got := logit(th[1]) - logit(th[0]); math.Abs(got-calibrationStep) > 1e-9 {
		t.Errorf("the threshold sweep steps %v logits, calibration %v", got, calibrationStep)
	}
	if logit(th[0]) > -MaxCalibrationShift || logit(th[len(th)-1]) < MaxCalibrationShift {
		t.Errorf("the sweep (%v to %v logits) is narrower than the shifts tried", logit(th[0]), logit(th[len(th)-1]))
	}
	// A curve no setting of which meets 0.1%: no score.
	never := func(int) float64 { return 0.05 }
	if _, ok := shiftScore([][]sim.Point{curve(10, never, never)}, 0); ok {
		t.Error("a curve always over budget was scored")
	}
	if _, _, _, ok := bestShift([][]sim.Point{curve(10, never, never)}, 4); ok {
		t.Error("a shift was chosen for a curve always over budget")
	}
	// The unshifted pair over budget, a shifted one within: NaN unshifted.
	// The first host meets the budgets only before step 5, the second
	// only from step 10 on (a made-up sweep): no step suits both, a shift
	// of 6 steps or more does.
	firstEarly := func(i int) float64 { return map[bool]float64{true: 0, false: 0.05}[i < 5] }
	secondLate := func(i int) float64 { return map[bool]float64{true: 0, false: 0.05}[i >= 10] }
	k, _, unshifted, ok := bestShift([][]sim.Point{curve(20, firstEarly, secondLate)}, 8)
	if !ok || k < 6 || !math.IsNaN(unshifted) {
		t.Errorf("first host early, second late: shift %d (found %v), unshifted %v; want 6 steps or more and NaN", k, ok, unshifted)
	}
}

// A calibrated run is the uncalibrated one with the capacity processor's
// output biases lowered by the shift it chose, and says so in its
// provenance; without calibration nothing of it is written.
func TestCalibrationShiftsOnlyTheCapacityOutputs(t *testing.T) {
	all, s, plain := plainSmallRun(t)
	if plain.Calibration != nil || plain.Capacity.Provenance.Settings["calibrate"] != "" || plain.Capacity.Provenance.Metrics["calibration"] != "" {
		t.Fatalf("uncalibrated run: calibration %v, settings %v", plain.Calibration, plain.Capacity.Provenance.Settings)
	}
	s.Calibrate = true
	cal, err := Train(all, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cal.Calibration
	if c == nil {
		t.Fatal("calibrated run reports no calibration")
	}
	if c.Note != "" {
		t.Fatalf("no shift chosen: %s", c.Note)
	}
	if c.Score < c.Unshifted {
		t.Errorf("chosen shift %v scores %v, below the unshifted %v", c.Shift, c.Score, c.Unshifted)
	}
	pr := cal.Capacity.Provenance
	if pr.Settings["calibrate"] != "true" || !strings.Contains(pr.Metrics["calibration"], "outputs shifted") || pr.Metrics["calibration_shift"] == "" {
		t.Errorf("calibrated provenance: settings %v, metrics %v", pr.Settings, pr.Metrics)
	}
	if !reflect.DeepEqual(cal.Admission.Layers, plain.Admission.Layers) {
		t.Error("calibration changed the admission processor's layers")
	}
	for i, d := range outputBiasChange(t, cal.Capacity, plain.Capacity) {
		if math.Abs(-d-c.Shift) > 1e-12 {
			t.Fatalf("output %d: bias lowered by %v, want the shift %v", i, -d, c.Shift)
		}
	}
}

// plainSmallRun trains smallSettings on syntheticSet, uncalibrated: the
// run an output edit is compared with.
func plainSmallRun(t *testing.T) ([]traces.Series, Settings, *Result) {
	t.Helper()
	all := syntheticSet()
	s := smallSettings()
	s.Calibrate = false
	plain, err := Train(all, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return all, s, plain
}

// outputBiasChange checks that got is was but for its output layer's
// biases, and returns how much each of them moved (got's less was').
func outputBiasChange(t *testing.T, got, was *engine.Model) []float64 {
	t.Helper()
	L := len(was.Layers) - 1
	if len(got.Layers) != L+1 || !reflect.DeepEqual(got.Layers[:L], was.Layers[:L]) {
		t.Errorf("%s: a layer before the outputs changed", got.Name)
	}
	o, w := got.Layers[L], was.Layers[L]
	if !reflect.DeepEqual(o.Edges, w.Edges) || !reflect.DeepEqual(o.Weights, w.Weights) || len(o.Biases) != len(w.Biases) {
		t.Fatalf("%s: the outputs' weights or widths changed", got.Name)
	}
	d := make([]float64, len(w.Biases))
	for i := range d {
		d[i] = o.Biases[i] - w.Biases[i]
	}
	return d
}

// A family whose validation series the simulator cannot replay (shorter
// than its window) has no say, and does not stop training.
func TestCalibrationSkipsAFamilyItCannotReplay(t *testing.T) {
	s := smallSettings()
	s.Calibrate = true
	var short []traces.Series
	for i := 0; i < 8; i++ {
		short = append(short, synthetic(fmt.Sprintf("short%d", i), sim.Shifted().Window, uint64(20+i)))
	}
	res, err := TrainFamilies([]Family{{Name: "long", Series: syntheticSet()}, {Name: "short", Series: short}}, s, nil)
	if err != nil {
		t.Fatalf("training with a family too short to replay: %v", err)
	}
	c := res.Calibration
	if c == nil || c.Note != "" || !reflect.DeepEqual(c.Families, []string{"long"}) {
		t.Fatalf("calibration %+v, want one scored on family long alone", c)
	}
}

// The shift scores both hosts' curves as the simulator replays them: a
// model whose outputs are shifted by s reads, at threshold logit l, what
// the unshifted one reads at l + s.
func TestShiftOutputsMovesTheThreshold(t *testing.T) {
	all, _, res := plainSmallRun(t)
	const shift = 0.75
	shifted := *res.Capacity
	shifted.Layers = append([]engine.Layer(nil), res.Capacity.Layers...)
	last := &shifted.Layers[len(shifted.Layers)-1]
	last.Biases = append([]float64(nil), last.Biases...)
	shiftOutputs(&shifted, shift)
	series := all[:3]
	thr := func(l float64) float64 { return 1 / (1 + math.Exp(-l)) }
	ls := []float64{-1, 0, 0.5, 1.5}
	replayAt := func(m *engine.Model, add float64) []sim.Point {
		t.Helper()
		capP, err := engine.NewProcessor(m)
		if err != nil {
			t.Fatal(err)
		}
		admP, err := engine.NewProcessor(res.Admission)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]float64, len(ls))
		for i, l := range ls {
			vals[i] = thr(l + add)
		}
		act, err := sim.Activation(sim.ActivationConfig{Admission: admP, Capacity: capP, Values: vals})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := sim.Run(t.Context(), series, sim.Shifted(), []sim.Policy{act}, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Curve(sim.PolicyActivation).Points
	}
	a, b := replayAt(&shifted, 0), replayAt(res.Capacity, shift)
	for i := range ls {
		if a[i].SecondDensity != b[i].SecondDensity || a[i].SecondViolationRate != b[i].SecondViolationRate {
			t.Errorf("logit %v: shifted model gives second host %v / %v, unshifted at +%v gives %v / %v",
				ls[i], a[i].SecondDensity, a[i].SecondViolationRate, shift, b[i].SecondDensity, b[i].SecondViolationRate)
		}
	}
	if a[0].SecondDensity == a[len(a)-1].SecondDensity {
		t.Error("the thresholds tried give the second host one density: the comparison says nothing")
	}
}
