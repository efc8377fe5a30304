package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// wideModel is a random network of wide, mostly zero layers (the shape of
// the admission processor: a change in one input reaches few nodes), with
// some dense layers among them.
func wideModel(r *rand.Rand) *Model {
	in := 20 + r.IntN(60)
	m := testModel(nil, nil, 0.05, 0.5)
	for i := 0; i < in; i++ {
		m.Inputs = append(m.Inputs, Node{Name: fmt.Sprintf("x%d", i), Countable: r.IntN(3) > 0})
	}
	acts := []string{ActivationReLU, ActivationSigmoid, ActivationIdentity, ActivationTanh}
	prev := in
	depth := 2 + r.IntN(4)
	for l := 0; l < depth; l++ {
		w := 10 + r.IntN(90)
		if l == depth-1 && r.IntN(6) == 0 {
			w = 129 + r.IntN(128) // three or four words of outputs
		}
		zero := 0.97
		if r.IntN(4) == 0 {
			zero = 0.3 // dense
		}
		layer := Layer{Activation: ActivationReLU, Biases: make([]float64, w)}
		if l == depth-1 {
			layer.Activation = acts[r.IntN(len(acts))]
		}
		fillLayer(r, &layer, prev, zero)
		m.Layers = append(m.Layers, layer)
		prev = w
	}
	for o := 0; o < prev; o++ {
		m.Outputs = append(m.Outputs, Node{Name: fmt.Sprintf("o%d", o), Countable: r.IntN(3) > 0})
	}
	return m
}

// countObservation is a 1024 MHz host running n replicas of a workload
// whose replica uses u[i] MHz at minute i (put on a 2^-20 MHz grid, as the
// simulator puts it, so that the per-replica usage is the same bits at
// every n) and requests 60 MHz.
func countObservation(u []float64, n int) *Observation {
	o := &Observation{Host: "h", CPUCapacityMHz: 1024, RunningReplicas: n, ReplicaCPUDemandMHz: 60, RequestedCPUMHz: float64(n) * 60}
	for i, v := range u {
		o.Samples = append(o.Samples, Sample{Time: int64(60 * i), CPUMHz: float64(n) * math.Round(v*(1<<20)) / (1 << 20)})
	}
	return o
}

// chainModel is a random network whose last layer (and, in some, a
// hidden layer) is chained as the admission processor's output layer is:
// each row extends the row before (chainWeights), over an even number of
// inputs.
func chainModel(r *rand.Rand) *Model {
	in := 5 + r.IntN(30)
	m := testModel(nil, nil, 0.05, 0.5)
	for i := 0; i < in; i++ {
		m.Inputs = append(m.Inputs, Node{Name: fmt.Sprintf("x%d", i), Countable: r.IntN(3) > 0})
	}
	scales := []float64{1e-3, 0.1, 1, 10}
	prev, k := in, 5+r.IntN(120)
	first := Layer{Activation: ActivationReLU, Biases: make([]float64, 2*k)}
	fillLayer(r, &first, prev, 0.7)
	m.Layers = append(m.Layers, first)
	prev = 2 * k
	if r.IntN(3) == 0 {
		mid := Layer{Activation: ActivationReLU, Weights: chainWeights(r, prev, prev, scales), Biases: make([]float64, prev)}
		for j := range mid.Biases {
			mid.Biases[j] = 0.3 * r.NormFloat64()
		}
		m.Layers = append(m.Layers, mid)
	}
	acts := []string{ActivationSigmoid, ActivationReLU, ActivationIdentity}
	last := Layer{Activation: acts[r.IntN(len(acts))], Weights: chainWeights(r, prev, k, scales), Biases: make([]float64, k)}
	for j := range last.Biases {
		last.Biases[j] = 1 + r.NormFloat64()
	}
	m.Layers = append(m.Layers, last)
	for o := 0; o < k; o++ {
		m.Outputs = append(m.Outputs, Node{Name: fmt.Sprintf("o%d", o), Countable: r.IntN(3) > 0})
	}
	return m
}

// randomInput sets x[i] to a missing value, a zero, a value below the
// input epsilon, a normal one or, rarely, one so large that sums overflow
// to ±Inf and NaN downstream (a NaN output holds no data).
func randomInput(r *rand.Rand, x []float64, i int) {
	switch r.IntN(8) {
	case 0:
		x[i] = nan
	case 1:
		x[i] = 0
	case 2:
		x[i] = math.Copysign(0, -1)
	case 3:
		x[i] = 0.01 // below the input epsilon: holds no data
	default:
		x[i] = 2 * r.NormFloat64()
		if r.IntN(40) == 0 {
			x[i] = math.Copysign(math.MaxFloat64, x[i])
		}
	}
}

// A Sweeper gives bitwise the amounts, activations and scores of a full
// pass on every vector of a run, where each vector differs from the one
// before in a few inputs, in many, or in none, for both roles in turn; on
// small and on wide random networks, and on networks whose dense layers'
// rows extend the row before (chained). Half of the networks are swept with
// the sets of reached outputs (every set as a fresh Sweeper's whole pass
// computes it, and the countable inputs' scores), half with the scores
// carried back through every layer (every score).
func TestSweeperMatchesFullPass(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	few := []float64{-2, 0.01, 0.3, 0.5, 0.7, 0.99, 1.5}
	lists := [][]float64{few, {math.Inf(-1), 0.5, math.Inf(1), nan}, append(slices.Clone(few), math.Inf(-1), 0.2, 0.4, 0.6, 0.8)}
	var partial, compared, reachPartial, nanOutputs, extended, lazySweeps, ordered int64
	widest := 0
	for n := 0; n < 800; n++ {
		var m *Model
		switch {
		case n >= 600:
			m = chainModel(r)
		case n%2 == 0:
			m = randomModel(r)
		default:
			m = wideModel(r)
		}
		p, err := NewProcessor(m)
		if err != nil {
			t.Fatal(err)
		}
		s := p.NewSweeper()
		reach := n%4 < 2
		if !reach {
			s.maxReachWords = 0
		} else if s.reach == nil {
			t.Fatalf("model %d: %d words of outputs, more than the sets are kept for", n, s.ow)
		} else {
			widest = max(widest, s.ow)
		}
		full := NewWorkspace(p)
		x := make([]float64, len(m.Inputs))
		for i := range x {
			randomInput(r, x, i)
		}
		for step := 0; step < 30; step++ {
			switch r.IntN(10) {
			case 0: // the same vector again
			case 1: // a new vector
				for i := range x {
					randomInput(r, x, i)
				}
			default: // a few inputs
				for range 1 + r.IntN(3) {
					randomInput(r, x, r.IntN(len(x)))
				}
			}
			role := RoleFirst
			if r.IntN(4) == 0 {
				role = RoleSecond
			}
			if p.Slots(role) == 0 {
				continue
			}
			if r.IntN(12) == 0 {
				s.Reset() // a whole pass next, from which the later sweeps go on
			}
			// Some thresholds, or the values of outputs of the last
			// pass (which a sum of a few changed inputs often keeps):
			// scores on the thresholds.
			thresholds := lists[r.IntN(len(lists))]
			if r.IntN(4) == 0 {
				thresholds = slices.Clone(full.act[len(full.act)-1][:min(6, len(m.Outputs))])
			}
			got, want := make([]int, len(thresholds)), make([]int, len(thresholds))
			wholeBefore, fullBefore := s.Work().FullBackward, s.Work().FullForward
			if err := s.Sweep(x, role, thresholds, got); err != nil {
				t.Fatal(err)
			}
			if err := p.sweepInput(x, full, role, thresholds, want); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("model %d step %d, %s host, x %v: sweeper %v, full pass %v", n, step, role, x, got, want)
			}
			for _, v := range full.act[len(full.act)-1] {
				if math.IsNaN(v) {
					nanOutputs++
				}
			}
			if s.valuesStale {
				lazySweeps++
				if s.Work().FullForward > fullBefore {
					t.Fatalf("model %d step %d: a whole pass left the outputs' values behind their sums", n, step)
				}
			}
			if role == RoleFirst && reach && s.z != nil {
				mult, several, none := tallySingles(s.single, len(s.z))
				if several != s.several || none != s.none || !slices.Equal(mult, s.mult) {
					t.Fatalf("model %d step %d: inputs reaching several outputs, none, and each output alone: %d, %d, %v; the sweeper counts %d, %d, %v",
						n, step, several, none, mult, s.several, s.none, s.mult)
				}
				// The kept order of the sums (sumOrder): its sums and
				// tallies are the outputs' unless marked as moved.
				if !s.disordered {
					for k, o := range s.byZ {
						if !s.sumsMoved && math.Float64bits(s.zs[k]) != math.Float64bits(s.z[o]) {
							t.Fatalf("model %d step %d: output %d's sum kept as %v, is %v", n, step, o, s.zs[k], s.z[o])
						}
						if !s.multMoved && s.upTo[k+1]-s.upTo[k] != int(s.mult[o]) {
							t.Fatalf("model %d step %d: output %d's tally kept as %d, is %d", n, step, o, s.upTo[k+1]-s.upTo[k], s.mult[o])
						}
					}
					if !s.sumsMoved && !s.multMoved {
						ordered++
					}
				}
			}
			for l := range full.act {
				for i := range full.act[l] {
					if v := sweptValue(s, l, i); math.Float64bits(v) != math.Float64bits(full.act[l][i]) || hasBit(s.ws.holds[l], i) != hasBit(full.holds[l], i) {
						t.Fatalf("model %d step %d: layer %d node %d: sweeper %v (holds %v), full pass %v (holds %v)", n, step, l, i,
							v, hasBit(s.ws.holds[l], i), full.act[l][i], hasBit(full.holds[l], i))
					}
					if role == RoleFirst && (l > 0 && !reach || l == 0 && m.Inputs[i].Countable) {
						if v := sweptScore(s, l, i); math.Float64bits(v) != math.Float64bits(full.score[l][i]) {
							t.Fatalf("model %d step %d: layer %d node %d: sweeper score %v, full pass %v", n, step, l, i, v, full.score[l][i])
						}
					}
				}
			}
			if role == RoleFirst && reach {
				fresh := p.NewSweeper()
				whole := make([]int, len(thresholds))
				if err := fresh.Sweep(x, role, thresholds, whole); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(whole, want) {
					t.Fatalf("model %d step %d: a fresh sweeper %v, full pass %v", n, step, whole, want)
				}
				for l := range fresh.reach {
					for v := range full.act[l] {
						if l == 0 && !m.Inputs[v].Countable {
							continue
						}
						got, want := s.reach[l][v*s.ow:(v+1)*s.ow], fresh.reach[l][v*s.ow:(v+1)*s.ow]
						if !slices.Equal(got, want) {
							t.Fatalf("model %d step %d: layer %d node %d reaches %x, a whole pass %x", n, step, l, v, got, want)
						}
					}
				}
				if s.Work().FullBackward == wholeBefore {
					reachPartial++
				}
			}
			compared++
		}
		w := s.Work()
		if w.Nodes < w.FullNodes {
			partial++
		}
		extended += s.extended
	}
	if compared < 10000 {
		t.Fatalf("only %d vectors compared", compared)
	}
	// The runs must exercise the partial passes, not only whole ones.
	if partial < 300 {
		t.Fatalf("only %d of 800 networks computed fewer nodes than full passes", partial)
	}
	// and a chained layer's rows from a kept row's lanes (lane kernel)
	if laneKernel && extended < 500 {
		t.Fatalf("only %d runs of a chained layer's rows extended from a kept row's lanes", extended)
	}
	t.Logf("%d vectors compared; %d first-host sweeps with the sets were not whole backward passes; %d NaN outputs; %d sweeps left the values behind; %d in the sums' kept order", compared, reachPartial, nanOutputs, lazySweeps, ordered)
	// Sets of four words, and outputs that hold no data (NaN), are met.
	if widest != maxReachWords || nanOutputs == 0 {
		t.Fatalf("the widest sets kept are %d words (want %d); %d NaN outputs", widest, maxReachWords, nanOutputs)
	}
	if reachPartial < 1000 {
		t.Fatalf("only %d first-host sweeps with the sets were not whole backward passes", reachPartial)
	}
	// and sweeps that left the sigmoid outputs' values behind their sums
	if lazySweeps < 1000 {
		t.Fatalf("only %d sweeps left the outputs' values behind their sums", lazySweeps)
	}
	// and counts read from the sums' kept order
	if ordered < 500 {
		t.Fatalf("only %d sweeps counted from the sums' kept order", ordered)
	}
}

// tallySingles counts the inputs whose set holds each output alone, several
// outputs, and none.
func tallySingles(single []int32, outputs int) (mult []int32, several, none int) {
	mult = make([]int32, outputs)
	for _, o := range single {
		switch o {
		case severalOutputs:
			several++
		case noOutput:
			none++
		default:
			mult[o]++
		}
	}
	return mult, several, none
}

// sweptValue is node i of layer l's activation in s's pass: an output's
// sigmoid of its sum when s left the values behind the sums.
func sweptValue(s *Sweeper, l, i int) float64 {
	if l == len(s.ws.act)-1 && s.valuesStale {
		return activate(actSigmoid, s.z[i])
	}
	return s.ws.act[l][i]
}

// sweptScore is node i of layer l's score in s's pass: in a lazy sweep, a
// countable input whose set holds one output scores the sigmoid of that
// output's sum.
func sweptScore(s *Sweeper, l, i int) float64 {
	if l == 0 && s.z != nil && s.ow <= s.maxReachWords {
		if o := s.single[s.countIndex[i]]; o >= 0 {
			return activate(actSigmoid, s.z[o])
		}
	}
	return s.ws.score[l][i]
}

// A dense layer whose input held +Inf at the full pass summed each row's
// nonzero terms in input order; when the next vector makes that input
// finite, rows that do not read it must be computed again too, as the BLAS
// product sums them in another order. Here rows 1 to 7 read 1 and two
// terms of 2^-53 (in input order 1; in the product's two lanes
// 1 + 2^-52), and only row 0 reads the node at +Inf. gonum's pure-Go
// kernel sums in input order too (1 for rows 1 to 7), so there the test
// checks only that the sweeper and the full pass agree.
func TestSweeperDenseLayerLeavingInf(t *testing.T) {
	tiny := math.Ldexp(1, -53)
	hidden := Layer{Activation: ActivationReLU, Biases: make([]float64, 4),
		Weights: [][]float64{{0, tiny}, {0, 1}, {0, tiny}, {2, 0}}}
	out := Layer{Activation: ActivationIdentity, Biases: make([]float64, 8)}
	out.Weights = append(out.Weights, []float64{0, 0, 0, 1})
	for range 7 {
		out.Weights = append(out.Weights, []float64{1, 1, 1, 0})
	}
	m := testModel(nodes("x", 2), nodes("o", 8), 1e-300, 0.5, hidden, out)
	p, err := NewProcessor(m)
	if err != nil {
		t.Fatal(err)
	}
	if p.layers[1].sparse {
		t.Fatal("the output layer is sparse; the test needs a dense one")
	}
	s, full := p.NewSweeper(), NewWorkspace(p)
	thresholds := []float64{0.5}
	got, want := make([]int, 1), make([]int, 1)
	for step, x := range [][]float64{{math.MaxFloat64, 1}, {1, 1}} {
		if err := s.Sweep(x, RoleFirst, thresholds, got); err != nil {
			t.Fatal(err)
		}
		if err := p.sweepInput(x, full, RoleFirst, thresholds, want); err != nil {
			t.Fatal(err)
		}
		for v, a := range full.act[2] {
			if math.Float64bits(s.ws.act[2][v]) != math.Float64bits(a) {
				t.Fatalf("step %d, output %d: sweeper %v, full pass %v", step, v, s.ws.act[2][v], a)
			}
		}
	}
	want7 := 1.0 // the pure-Go kernel's sum in input order
	if laneKernel {
		want7 = 1 + 2*tiny // the two lanes' sums added
	}
	if a := full.act[2][7]; a != want7 {
		t.Fatalf("output 7 is %v; with laneKernel %v the test needs the product's %v", a, laneKernel, want7)
	}
}

// On the built-in admission processor, thresholds at up to four outputs'
// values themselves and at the next float above each put those outputs'
// sums on a cut's band, where the sigmoid must be computed: the sweeper's
// amounts are the full pass's, and a sweep that leaves the values behind
// its sums is met.
func TestSweeperCountsAtTheCut(t *testing.T) {
	p, err := Builtin("admission")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 1))
	u := make([]float64, 120)
	s, full := p.NewSweeper(), NewWorkspace(p)
	L := len(full.act) - 1
	lazy, atCut := 0, 0
	for window := 0; window < 4; window++ {
		for i := range u {
			u[i] = (0.02 + 0.03*r.Float64()) * 1024
		}
		for _, n := range []int{0, 1, 2, 5, 8, 13, 30, 60} {
			x, err := p.Features(countObservation(u, n), RoleFirst)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.sweepInput(x, full, RoleFirst, []float64{0.5}, []int{0}); err != nil {
				t.Fatal(err)
			}
			// a few thresholds (the cut's path), then many (the sort's)
			var ts []float64
			for _, o := range []int{n, n + 1, 2 * n, 109} {
				v := full.act[L][min(o, 109)]
				if v > 0 && v < 1 {
					ts = append(ts, v, math.Nextafter(v, 2))
				}
			}
			for _, thresholds := range [][]float64{ts[:min(len(ts), sortedCountsFrom-1)], ts} {
				want := sweepBoth(t, s, x, thresholds, fmt.Sprintf("window %d, %d running", window, n))
				if s.valuesStale {
					lazy++
				}
				for i, th := range thresholds {
					if i > 0 && want[i] != want[i-1] && th == math.Nextafter(thresholds[i-1], 2) {
						atCut++ // an output counted at its value and not one float above
					}
				}
			}
		}
	}
	if lazy < 20 || atCut < 20 {
		t.Fatalf("%d sweeps left the values behind, %d outputs counted at their value and not above", lazy, atCut)
	}
}

// sweepBoth sweeps x for the first host with s and with a full pass, fails
// (naming what) when their amounts differ, and returns them.
func sweepBoth(t *testing.T, s *Sweeper, x, thresholds []float64, what string) []int {
	t.Helper()
	got, want := make([]int, len(thresholds)), make([]int, len(thresholds))
	if err := s.Sweep(x, RoleFirst, thresholds, got); err != nil {
		t.Fatal(err)
	}
	if err := s.p.SweepInputs(x, RoleFirst, thresholds, want); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s, thresholds %v: sweeper %v, full pass %v", what, thresholds, got, want)
	}
	return want
}

// On the built-in admission processor, the observations of one window for
// different counts in force (what the simulator sweeps at a decision
// point) cost a fraction of full passes and give the same amounts.
func TestSweeperAdmissionCounts(t *testing.T) {
	p, err := Builtin("admission")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	u := make([]float64, 120)
	thresholds := []float64{0.1, 0.3, 0.5, 0.7, 0.9}
	s := p.NewSweeper()
	for window := 0; window < 5; window++ {
		for i := range u {
			u[i] = (0.02 + 0.03*r.Float64()) * 1024
		}
		for _, n := range []int{0, 1, 2, 3, 5, 8, 9, 13, 30, 31, 60} {
			x, err := p.Features(countObservation(u, n), RoleFirst)
			if err != nil {
				t.Fatal(err)
			}
			sweepBoth(t, s, x, thresholds, fmt.Sprintf("window %d, %d running", window, n))
		}
	}
	w := s.Work()
	if w.FullForward != 1 || w.FullBackward != 1 {
		t.Errorf("%d full forward and %d full backward passes, want the first sweep's only", w.FullForward, w.FullBackward)
	}
	if w.Nodes*2 > w.FullNodes {
		t.Errorf("the sweeper computed %d node values of %d in full passes: want at most half", w.Nodes, w.FullNodes)
	}
	t.Logf("%+v", w)
	// After Reset the next sweep is a whole pass, with the same amounts.
	s.Reset()
	x := make([]float64, p.NumInputs())
	got, want := make([]int, len(thresholds)), make([]int, len(thresholds))
	if err := s.Sweep(x, RoleFirst, thresholds, got); err != nil {
		t.Fatal(err)
	}
	if err := p.SweepInputs(x, RoleFirst, thresholds, want); err != nil {
		t.Fatal(err)
	}
	if w := s.Work(); w.FullForward != 2 || w.FullBackward != 2 || !slices.Equal(got, want) {
		t.Errorf("after Reset: %+v, amounts %v against %v", w, got, want)
	}
}

// Bad input is refused before anything is computed: the next sweep still
// reuses the pass before it.
func TestSweeperErrors(t *testing.T) {
	p, err := NewProcessor(randomModel(rand.New(rand.NewPCG(2, 3))))
	if err != nil {
		t.Fatal(err)
	}
	s := p.NewSweeper()
	x := make([]float64, p.NumInputs())
	cases := []struct {
		name       string
		x          []float64
		role       string
		thresholds []float64
		amounts    []int
		want       string
	}{
		{"short vector", x[:0], RoleFirst, []float64{0.5}, make([]int, 1), "input vector has 0 values"},
		{"amounts", x, RoleFirst, []float64{0.5}, nil, "1 thresholds but 0 amounts"},
		{"infinite input", append([]float64{math.Inf(1)}, x[1:]...), RoleFirst, []float64{0.5}, make([]int, 1), "is +Inf"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.Sweep(c.x, c.role, c.thresholds, c.amounts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if s.Work().Sweeps != 0 {
				t.Fatalf("a refused sweep counted: %+v", s.Work())
			}
		})
	}
	// After a pass, an infinite input (anywhere, after inputs that
	// changed) is refused with the same error, and the next sweeps read
	// the pass before it: their amounts and every activation are a full
	// pass's (the admission processor: 447 inputs, sparse layers).
	t.Run("infinite input after a pass", func(t *testing.T) {
		p, err := Builtin("admission")
		if err != nil {
			t.Fatal(err)
		}
		s := p.NewSweeper()
		r := rand.New(rand.NewPCG(5, 8))
		a := make([]float64, p.NumInputs())
		for i := range a {
			a[i] = r.Float64()
		}
		b := slices.Clone(a) // a few inputs changed, as between two counts
		for range 20 {
			b[r.IntN(len(b))] = r.Float64()
		}
		thresholds := []float64{0.2, 0.5, 0.8}
		got, want := make([]int, 3), make([]int, 3)
		if err := s.Sweep(a, RoleFirst, thresholds, got); err != nil {
			t.Fatal(err)
		}
		// One infinite input, or several: the error names the first,
		// wherever they lie among the blocks of four inputs the Sweeper
		// compares at once and the tail after them (447 inputs: 444 to
		// 446).
		n := len(a)
		for _, at := range [][]int{{0}, {n / 2}, {n - 1}, {3, n - 1}, {221, 222}, {220, 223}, {n - 3, n - 1}, {0, 1, 2, 3}, {2, 1}} {
			bad := slices.Clone(b)
			for k, i := range at {
				bad[i] = math.Inf(2*(k%2) - 1) // -Inf, +Inf, -Inf, ...
			}
			err := s.Sweep(bad, RoleFirst, thresholds, got)
			// (a new Sweeper's first sweep checks every input first)
			want := p.NewSweeper().Sweep(bad, RoleFirst, thresholds, want)
			if err == nil || want == nil || err.Error() != want.Error() {
				t.Fatalf("inputs %v infinite: error %v, want %v", at, err, want)
			}
			first := slices.Min(at)
			if name := fmt.Sprintf("input %q is %v", p.Model().Inputs[first].Name, bad[first]); !strings.HasSuffix(err.Error(), name) {
				t.Fatalf("inputs %v infinite: error %v, want it to end with %s", at, err, name)
			}
		}
		if n := s.Work().Sweeps; n != 1 {
			t.Fatalf("%d sweeps counted, want the one", n)
		}
		for _, v := range [][]float64{b, a} {
			if err := s.Sweep(v, RoleFirst, thresholds, got); err != nil {
				t.Fatal(err)
			}
			full := p.NewSweeper()
			if err := full.Sweep(v, RoleFirst, thresholds, want); err != nil { // a full pass
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after the refusals: amounts %v, a full pass %v", got, want)
			}
			for l := range full.ws.act {
				for i, w := range full.ws.act[l] {
					if g := s.ws.act[l][i]; math.Float64bits(g) != math.Float64bits(w) || hasBit(s.ws.holds[l], i) != hasBit(full.ws.holds[l], i) {
						t.Fatalf("after the refusals: layer %d node %d is %v, a full pass's %v", l, i, g, w)
					}
				}
			}
		}
	})
}

// After its first pass a Sweeper marks as changed exactly the inputs whose
// value, a NaN read as 0, differs in its bits from the last vector's:
// -0 against +0 is a change, a NaN against a stored 0 is not, and inputs
// that did not change are never marked (what forward then walks).
func TestSweeperChangedInputs(t *testing.T) {
	p, err := Builtin("admission")
	if err != nil {
		t.Fatal(err)
	}
	values := []float64{math.NaN(), 0, math.Copysign(0, -1), 5e-324, 0.25, -0.25, 3}
	r := rand.New(rand.NewPCG(7, 11))
	x := make([]float64, p.NumInputs())
	for i := range x {
		x[i] = values[r.IntN(len(values))]
	}
	s := p.NewSweeper()
	thresholds := []float64{0.5}
	amounts := make([]int, 1)
	if err := s.Sweep(x, RoleFirst, thresholds, amounts); err != nil {
		t.Fatal(err)
	}
	asFed := func(v float64) float64 {
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	var marked, nanKept, signs int
	for step := range 40 {
		prev := slices.Clone(s.ws.act[0])
		for range 1 + r.IntN(12) {
			x[r.IntN(len(x))] = values[r.IntN(len(values))]
		}
		if err := s.Sweep(x, RoleFirst, thresholds, amounts); err != nil {
			t.Fatal(err)
		}
		for i, v := range x {
			want := math.Float64bits(asFed(v)) != math.Float64bits(prev[i])
			if got := hasBit(s.changed[0], i); got != want {
				t.Fatalf("step %d, input %d: %v after %v: marked %v, want %v", step, i, v, prev[i], got, want)
			}
			if math.Float64bits(s.ws.act[0][i]) != math.Float64bits(asFed(v)) {
				t.Fatalf("step %d, input %d: %v stored as %v", step, i, v, s.ws.act[0][i])
			}
			switch {
			case want:
				marked++
				if asFed(v) == 0 && prev[i] == 0 {
					signs++
				}
			case math.IsNaN(v):
				nanKept++
			}
		}
	}
	// The draws must meet each case.
	if marked < 100 || nanKept == 0 || signs == 0 {
		t.Fatalf("%d inputs marked, %d NaN inputs kept, %d changes of a zero's sign", marked, nanKept, signs)
	}
}

// BenchmarkSweepCounts is one decision point of the simulator's threshold
// sweep on the first host: the built-in admission processor read for the
// counts in force 0 to 30 of one window, each at 4 thresholds (the
// simulator's 113 spread over about 31 counts), by full passes
// (SweepInputs) and by a Sweeper carried from the previous decision point
// (whose window differs). Each op sweeps every count once.
func BenchmarkSweepCounts(b *testing.B) {
	p, err := Builtin("admission")
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	vectors := func() [][]float64 {
		u := make([]float64, 120)
		for i := range u {
			u[i] = (0.02 + 0.03*r.Float64()) * 1024
		}
		var xs [][]float64
		for n := 0; n <= 30; n++ {
			x, err := p.Features(countObservation(u, n), RoleFirst)
			if err != nil {
				b.Fatal(err)
			}
			xs = append(xs, x)
		}
		return xs
	}
	// Two windows in turn: every op starts from the other window's pass.
	windows := [2][][]float64{vectors(), vectors()}
	thresholds := []float64{0.3, 0.5, 0.7, 0.9}
	amounts := make([]int, len(thresholds))
	b.Run("full", func(b *testing.B) {
		i := 0
		for b.Loop() {
			for _, x := range windows[i%2] {
				if err := p.SweepInputs(x, RoleFirst, thresholds, amounts); err != nil {
					b.Fatal(err)
				}
			}
			i++
		}
	})
	b.Run("sweeper", func(b *testing.B) {
		s := p.NewSweeper()
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			for _, x := range windows[i%2] {
				if err := s.Sweep(x, RoleFirst, thresholds, amounts); err != nil {
					b.Fatal(err)
				}
			}
			i++
		}
		w := s.Work()
		b.ReportMetric(float64(w.Nodes)/float64(w.FullNodes), "nodes/full")
		b.ReportMetric(float64(w.Scores)/float64(w.FullScores), "scores/full")
	})
}

// The kept per-replica summary is used only for bitwise the same usage: one
// featureWork reading a run of observations (the same window at several
// counts, another window, one sample changed in its last bit, a shorter
// window) gives every feature a fresh one gives.
func TestFeatureSummaryKept(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	base := make([]float64, 60)
	for i := range base {
		base[i] = math.Round(r.Float64()*100*(1<<20)) / (1 << 20)
	}
	obs := func(u []float64, n int) *Observation {
		o := &Observation{Host: "h", CPUCapacityMHz: 1024, RunningReplicas: n, ReplicaCPUDemandMHz: 60, RequestedCPUMHz: float64(n) * 60}
		for i, v := range u {
			o.Samples = append(o.Samples, Sample{Time: int64(60 * i), CPUMHz: float64(n) * v})
		}
		return o
	}
	other := slices.Clone(base)
	slices.Reverse(other)
	nudged := slices.Clone(base)
	nudged[17] = math.Nextafter(nudged[17], math.Inf(1))
	run := []*Observation{obs(base, 2), obs(base, 4), obs(base, 3), obs(other, 3), obs(base, 3), obs(nudged, 3), obs(base[:40], 3), obs(base, 0)}
	var kept featureWork
	for i, o := range run {
		var fresh featureWork
		kept.compute(o)
		fresh.compute(o)
		if kept.feats != fresh.feats {
			t.Fatalf("observation %d: kept summary gives %v, a fresh one %v", i, kept.feats, fresh.feats)
		}
	}
}

func TestSingleBit(t *testing.T) {
	for _, c := range []struct {
		set  []uint64
		want int32
	}{
		{[]uint64{0}, noOutput},
		{[]uint64{0, 0, 0}, noOutput},
		{[]uint64{1}, 0},
		{[]uint64{1 << 63}, 63},
		{[]uint64{0, 1 << 5}, 69},
		{[]uint64{0, 0, 0, 1 << 63}, 255},
		{[]uint64{3}, severalOutputs},
		{[]uint64{1, 1}, severalOutputs},
		{[]uint64{0, 1 << 9, 0, 1}, severalOutputs},
	} {
		if got := singleBit(c.set); got != c.want {
			t.Errorf("singleBit(%x) = %d, want %d", c.set, got, c.want)
		}
	}
}
