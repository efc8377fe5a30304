package train

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// The averaged trunk computes the members' mean output pre-activations,
// whatever the depth, and so their mean (a, b) wherever every member's is
// positive.
func TestAverageTrunksIsTheMembersMean(t *testing.T) {
	stats, err := statisticsByName(DefaultStatistics)
	if err != nil {
		t.Fatal(err)
	}
	for _, hidden := range [][]int{nil, {6}, {24, 12}, {5, 4, 3}} {
		rng := rand.New(rand.NewPCG(7, uint64(len(hidden))))
		ms := make([]trunk, 3)
		for i := range ms {
			m := newMLPTrunk(len(stats), hidden, stats, rng)
			for j := range m.wo {
				m.wo[j] = rng.NormFloat64() // away from the 0.01 start, so the hidden units count
			}
			ms[i] = m
		}
		avg, err := averageTrunks(ms)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < 200; n++ {
			u := make([]float64, len(stats))
			for i := range u {
				u[i] = rng.Float64()
			}
			var c trunkCache
			avg.eval(u, &c)
			var want [2]float64
			for _, m := range ms {
				var mc trunkCache
				m.eval(u, &mc)
				want[0] += mc.o[0] / float64(len(ms))
				want[1] += mc.o[1] / float64(len(ms))
			}
			for k := range want {
				if math.Abs(c.o[k]-want[k]) > 1e-12*(1+math.Abs(want[k])) {
					t.Fatalf("hidden %v, output %d: averaged trunk gives %v, the members' mean is %v", hidden, k, c.o[k], want[k])
				}
			}
		}
		// Its layers, as exported, are the same function.
		if got, want := len(avg.layers()), len(hidden)+1; got != want {
			t.Errorf("hidden %v: %d exported layers, want %d", hidden, got, want)
		}
	}
}

func TestAverageRefusesOtherTrunks(t *testing.T) {
	s := DefaultSettings()
	s.Trunk, s.Hidden, s.Statistics, s.Average = TrunkMonotone, DefaultHidden(TrunkMonotone), DefaultMonotoneStatistics, 2
	err := s.Check()
	if err == nil || !strings.Contains(err.Error(), "average") {
		t.Fatalf("Check() = %v, want an error naming average", err)
	}
	if _, err := averageTrunks([]trunk{newMaxTrunk(3), newMaxTrunk(3)}); err == nil {
		t.Fatal("averaging max trunks: no error")
	}
}

// TestTrainAverageKeepsTheMean: with Average 2 the first start is a single
// run (its loss and epochs are the single run's), each start's figures are
// recorded, and the exported models hold both starts' hidden units.
func TestTrainAverageKeepsTheMean(t *testing.T) {
	for _, q := range []float64{0, 0.9} {
		single, avg, s := trainOneStartAnd(t, q, func(s *Settings) { s.Average = 2 })
		l := lossName(q)
		for i, m := range []*engine.Model{avg.Admission, avg.Capacity} {
			one := []*engine.Model{single.Admission, single.Capacity}[i]
			met, oneMet := m.Provenance.Metrics, one.Provenance.Metrics
			losses := strings.Fields(met["average_val_"+l])
			if len(losses) != 2 || losses[0] != oneMet["val_"+l] {
				t.Errorf("%s (%s): average_val_%s %q; want 2 starts, the first a single run's %s", m.Name, l, l, met["average_val_"+l], oneMet["val_"+l])
			}
			if best := strings.Fields(met["best_epoch"]); len(best) != 2 || best[0] != oneMet["best_epoch"] {
				t.Errorf("%s (%s): best_epoch %q; want 2 starts, the first a single run's %s", m.Name, l, met["best_epoch"], oneMet["best_epoch"])
			}
			if met["val_"+l] == "" {
				t.Errorf("%s (%s): no val_%s", m.Name, l, l)
			}
			if got, want := nodes(m), nodes(one)+sum(s.Hidden); got != want {
				t.Errorf("%s (%s): %d nodes, want %d (a single start's and a second start's hidden units)", m.Name, l, got, want)
			}
		}
		if avg.Admission.Provenance.Settings["average"] != "2" {
			t.Errorf("settings: average %q, want 2", avg.Admission.Provenance.Settings["average"])
		}
	}
}

func nodes(m *engine.Model) int {
	n := len(m.Inputs)
	for _, l := range m.Layers {
		n += len(l.Biases)
	}
	return n
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
