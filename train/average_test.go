package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
			for j := range m.ws {
				m.ws[j] = rng.NormFloat64() // every member's own skip weights, not the common start
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
			exported := evalLayers(avg.layers(), u)
			for k := range want {
				if math.Abs(c.o[k]-want[k]) > 1e-12*(1+math.Abs(want[k])) {
					t.Fatalf("hidden %v, output %d: averaged trunk gives %v, the members' mean is %v", hidden, k, c.o[k], want[k])
				}
				// Its layers, as exported, are the same function.
				if math.Abs(exported[k]-want[k]) > 1e-12*(1+math.Abs(want[k])) {
					t.Fatalf("hidden %v, output %d: the exported layers give %v, the members' mean is %v", hidden, k, exported[k], want[k])
				}
			}
		}
	}
}

// evalLayers runs a trunk's layers (trunk.layers) on the statistics u: ReLU
// hidden layers, then the two output rows' pre-activations.
func evalLayers(layers [][][]float64, u []float64) []float64 {
	prev := u
	for l, rows := range layers {
		next := make([]float64, len(rows))
		for j, row := range rows {
			for i, w := range row {
				next[j] += w * prev[i]
			}
			if l < len(layers)-1 {
				next[j] = math.Max(next[j], 0)
			}
		}
		prev = next
	}
	return prev
}

func TestAverageRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Settings)
		want string
	}{
		{"monotone trunk", func(s *Settings) {
			s.Trunk, s.Hidden, s.Statistics = TrunkMonotone, DefaultHidden(TrunkMonotone), DefaultMonotoneStatistics
		}, "average: 2 starts of the monotone trunk cannot be averaged"},
		{"max trunk", func(s *Settings) { s.Trunk = TrunkMax }, "average: 2 starts of the max trunk cannot be averaged"},
		{"cross-entropy", func(s *Settings) { s.Quantile, s.CapacityQuantile = 0, 0 }, "average: 2 starts need the quantile loss"},
		{"with restarts", func(s *Settings) { s.Restarts = 3 }, "average: 2 starts averaged and restarts 3"},
		{"negative", func(s *Settings) { s.Average = -1 }, "average: -1, need 0 to 64 starts"},
	} {
		s := DefaultSettings()
		tc.edit(&s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := averageTrunks([]trunk{newMaxTrunk(3), newMaxTrunk(3)}); err == nil {
		t.Error("averaging max trunks: no error")
	}
	if _, err := averageTrunks(nil); err == nil {
		t.Error("averaging no start: no error")
	}
}

// TestTrainAverageKeepsTheMean: with Average 2 the first start is a single
// run (its loss and epochs are the single run's), each start's figures are
// recorded, and the exported models hold both starts' hidden units.
func TestTrainAverageKeepsTheMean(t *testing.T) {
	for _, q := range []float64{0.9} {
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
			if run := strings.Fields(met["epochs_run"]); len(run) != 2 || run[0] != oneMet["epochs_run"] {
				t.Errorf("%s (%s): epochs_run %q; want 2 starts, the first a single run's %s", m.Name, l, met["epochs_run"], oneMet["epochs_run"])
			}
			// The mean is neither start: its loss is its own.
			if len(losses) == 2 && (met["val_"+l] == losses[0] || met["val_"+l] == losses[1]) {
				t.Errorf("%s (%s): val_%s %s is a start's (%v): the mean of two starts was not kept", m.Name, l, l, met["val_"+l], losses)
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

// TestAveragedWidthsBeforeBuilding: an average too wide for the engine is
// refused by arithmetic, before the untrained pair is built (256-wide
// layers averaged over 32 starts allocated 4 GB to find it out, 64 ran out
// of memory), and only where building it would refuse it too.
func TestAveragedWidthsBeforeBuilding(t *testing.T) {
	stats, err := statisticsByName(DefaultStatistics)
	if err != nil {
		t.Fatal(err)
	}
	// 2,048-wide layers: (F+1) x 2048 + 2049 x 2048 parameters for F
	// statistics.
	wide := (len(stats)+1)*2048 + 2049*2048
	cases := []struct {
		hidden  []int
		average int
		want    string // "" = not refused by arithmetic
	}{
		{[]int{48, 24}, 2, ""},
		{[]int{64, 64}, 16, ""}, // refused by building (the slots), not here
		{[]int{64, 64}, 32, fmt.Sprintf("average: 32 starts of hidden layers [64 64] make a trunk of %d parameters or more, past the engine's limit of 4194304", wide)},
		{[]int{256, 256}, 8, fmt.Sprintf("a trunk of %d parameters or more", wide)},
		{[]int{256}, 33, "a trunk of a layer 8448 nodes wide, past the engine's limit of 8192"},
		{[]int{256, 256}, 64, "a layer 16384 nodes wide"},
	}
	for _, tc := range cases {
		s := DefaultSettings()
		s.Hidden, s.Average = tc.hidden, tc.average
		s = s.withDefaults()
		err := s.averagedWidths(stats)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v x %d: %v, want no refusal by arithmetic", tc.hidden, tc.average, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v x %d: %v, want %q", tc.hidden, tc.average, err, tc.want)
			continue
		}
		// The bound holds: what it refuses, the export refuses (built only
		// where that takes little memory).
		if w := tc.average * slices.Max(tc.hidden); w <= 2048 {
			if err := s.exportModels(stats); err == nil {
				t.Errorf("%v x %d: refused by arithmetic, yet its models export and load", tc.hidden, tc.average)
			}
		}
		if err := s.Check(); err == nil || !strings.HasPrefix(err.Error(), "train settings: average: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v x %d: Check() = %v", tc.hidden, tc.average, err)
		}
	}
}
