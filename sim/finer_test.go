package sim

import (
	"math"
	"slices"
	"testing"
)

func TestRefine(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []float64
		n      int
		want   []float64
	}{
		{"empty", nil, 3, []float64{}},
		{"one value", []float64{0.5}, 4, []float64{0.5}},
		{"n 1 copies", []float64{0, 0.1, 0.2}, 1, []float64{0, 0.1, 0.2}},
		{"n 0 copies", []float64{0, 0.1}, 0, []float64{0, 0.1}},
		{"halves", []float64{0, 0.01, 0.02}, 2, []float64{0, 0.005, 0.01, 0.015, 0.02}},
		// rounded as Sweep rounds: 0.1/3 steps print as they read
		{"thirds", []float64{0, 0.1}, 3, []float64{0, 0.033333333, 0.066666667, 0.1}},
		{"uneven neighbours", []float64{1, 2, 4}, 2, []float64{1, 1.5, 2, 3, 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.values)
			got := Refine(c.values, c.n)
			if !slices.Equal(got, c.want) {
				t.Errorf("Refine(%v, %d) = %v, want %v", c.values, c.n, got, c.want)
			}
			if !slices.Equal(in, c.values) {
				t.Errorf("Refine changed its input: %v, was %v", c.values, in)
			}
		})
	}
}

// A finer threshold sweep keeps every setting of the default one exactly
// (so a finer replay's best within a budget is never below the default's)
// and puts the new ones midway in log-odds.
func TestThresholdsFiner(t *testing.T) {
	def := DefaultThresholds()
	if len(def) != 113 {
		t.Fatalf("%d default thresholds, want 113", len(def))
	}
	logit := func(p float64) float64 { return math.Log(p / (1 - p)) }
	for _, n := range []int{2, 3, 4} {
		fine := Thresholds(n)
		if len(fine) != 112*n+1 {
			t.Fatalf("n %d: %d thresholds, want %d", n, len(fine), 112*n+1)
		}
		for i, v := range def {
			if fine[i*n] != v {
				t.Errorf("n %d: threshold %d is %v, the default's %d is %v", n, i*n, fine[i*n], i, v)
			}
		}
		for i := 1; i < len(fine); i++ {
			if step := logit(fine[i]) - logit(fine[i-1]); math.Abs(step-0.125/float64(n)) > 1e-6 {
				t.Errorf("n %d: log-odds step %d is %v, want %v", n, i, step, 0.125/float64(n))
			}
		}
	}
	if got := Thresholds(0); !slices.Equal(got, def) {
		t.Errorf("Thresholds(0) has %d values, want the default's %d", len(got), len(def))
	}
}

// Finer refines the baselines' sweeps and nothing else, without touching
// the policies it was given.
func TestFiner(t *testing.T) {
	base := Baselines()
	before := map[string][]float64{}
	for _, p := range base {
		before[p.Name()] = slices.Clone(p.Knob().Values)
	}
	fine := Finer(base, 2)
	if len(fine) != len(base) {
		t.Fatalf("%d policies, want %d", len(fine), len(base))
	}
	for i, p := range fine {
		name, was := p.Name(), before[base[i].Name()]
		if name != base[i].Name() {
			t.Fatalf("policy %d is %s, was %s", i, name, base[i].Name())
		}
		got := p.Knob().Values
		want := was
		if len(was) > 1 {
			want = Refine(was, 2)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d settings, want %d (the default's %d refined)", name, len(got), len(want), len(was))
		}
		if !slices.Equal(base[i].Knob().Values, was) {
			t.Errorf("%s: Finer changed the policy it was given", name)
		}
	}
	for _, p := range Finer(base, 1) {
		if !slices.Equal(p.Knob().Values, before[p.Name()]) {
			t.Errorf("%s: n 1 changed the sweep", p.Name())
		}
	}
}

// ActivationConfig.Finer refines the knob's default sweep, and is refused
// beside values of the caller's own.
func TestActivationFiner(t *testing.T) {
	for _, c := range []struct {
		knob string
		want []float64
	}{
		{KnobOutputThreshold, Thresholds(2)},
		{KnobPerBranch, Refine(DefaultPerBranch(), 2)},
	} {
		p, err := Activation(ActivationConfig{Knob: c.knob, Finer: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Knob().Values; !slices.Equal(got, c.want) {
			t.Errorf("%s: %d settings, want %d", c.knob, len(got), len(c.want))
		}
	}
	if _, err := Activation(ActivationConfig{Values: []float64{0.5}, Finer: 2}); err == nil {
		t.Error("Finer beside Values: no error")
	}
}
