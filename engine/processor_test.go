package engine

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

// The hand-worked network of these tests:
//
//	inputs x0, x1 (countable), x2 (context); input_epsilon 0.1
//	h0 = relu( x0 + x1        )
//	h1 = relu(-x0      + 2 x2 - 1)      (x1 -> h1 and x2 -> h0 are no edges)
//	o0 = h0                      (identity, countable); output_threshold 0.5
//	o1 = h0 + h1 - 0.5           (identity, countable)
func handNet(t *testing.T) *Processor {
	t.Helper()
	m := testModel(
		[]Node{{Name: "x0", Countable: true}, {Name: "x1", Countable: true}, {Name: "x2"}},
		[]Node{{Name: "o0", Countable: true}, {Name: "o1", Countable: true}},
		0.1, 0.5,
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1, 1, 0}, {-1, 0, 2}}, Biases: []float64{0, -1}},
		Layer{Activation: ActivationIdentity, Weights: [][]float64{{1, 0}, {1, 1}}, Biases: []float64{0, -0.5}},
	)
	p, err := NewProcessor(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHandWorkedNetwork(t *testing.T) {
	p := handNet(t)
	tests := []struct {
		name       string
		x          []float64
		ain, aout  int
		total      uint64
		inputs     []int
		outputs    []int
		carries    [][3]int // layer, u, v edges that must carry data
		notCarries [][3]int
	}{
		{
			// h0 = 3 holds, h1 = relu(-1-1) = 0 is a dead hidden node;
			// branches x0-h0-o0, x0-h0-o1, x1-h0-o0, x1-h0-o1.
			name: "dead hidden node", x: []float64{1, 2, 0},
			ain: 2, aout: 2, total: 4, inputs: []int{0, 1}, outputs: []int{0, 1},
			carries:    [][3]int{{0, 0, 0}, {0, 1, 0}, {1, 0, 0}, {1, 0, 1}},
			notCarries: [][3]int{{0, 0, 1}, {1, 1, 1}},
		},
		{
			// x2 = 1.5: h1 = relu(-1+3-1) = 1 holds; x2-h1-o1 is a fifth
			// branch; x1 -> h1 has weight 0, so it is no edge though both
			// ends hold data; x0 -> h1 has w*a = -1 and carries nothing.
			name: "sparse layer and context branch", x: []float64{1, 2, 1.5},
			ain: 2, aout: 2, total: 5, inputs: []int{0, 1}, outputs: []int{0, 1},
			carries:    [][3]int{{0, 2, 1}, {1, 1, 1}},
			notCarries: [][3]int{{0, 1, 1}, {0, 0, 1}},
		},
		{
			// x0 = -1 holds data (|x| > eps). x0 -> h0: 1 * -1 < 0 does not
			// carry; x0 -> h1: -1 * -1 > 0 does. h0 = 1, h1 = relu(1+1-1) = 1.
			// Branches: x1-h0-o0, x1-h0-o1, x0-h1-o1, x2-h1-o1.
			name: "negative edge", x: []float64{-1, 2, 0.5},
			ain: 2, aout: 2, total: 4, inputs: []int{0, 1}, outputs: []int{0, 1},
			carries:    [][3]int{{0, 0, 1}},
			notCarries: [][3]int{{0, 0, 0}},
		},
		{
			// x1 = 0.1 equals input_epsilon: no data (|x| must exceed it),
			// though it still feeds 0.1 forward; nothing is activated.
			name: "input exactly at epsilon", x: []float64{0, 0.1, 0},
			ain: 0, aout: 0, total: 0,
		},
		{
			// o0 = 0.5 equals output_threshold: it holds data (>=);
			// o1 = 0.5 - 0.5 = 0 does not.
			name: "output exactly at threshold", x: []float64{0.5, 0, 0},
			ain: 1, aout: 1, total: 1, inputs: []int{0}, outputs: []int{0},
		},
		{
			// A missing (NaN) input holds no data and feeds 0 forward.
			name: "missing input", x: []float64{nan, 2, 0},
			ain: 1, aout: 2, total: 2, inputs: []int{1}, outputs: []int{0, 1},
		},
	}
	ws := NewWorkspace(p)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			an, err := p.Analyze(tc.x, ws)
			if err != nil {
				t.Fatal(err)
			}
			if an.InputAmount != tc.ain || an.OutputAmount != tc.aout || an.Total != tc.total || an.Overflow {
				t.Fatalf("A_in=%d A_out=%d total=%d overflow=%v, want %d %d %d false", an.InputAmount, an.OutputAmount, an.Total, an.Overflow, tc.ain, tc.aout, tc.total)
			}
			if !equalInts(an.ActivatedInputs, tc.inputs) || !equalInts(an.ActivatedOutputs, tc.outputs) {
				t.Fatalf("activated inputs %v outputs %v, want %v %v", an.ActivatedInputs, an.ActivatedOutputs, tc.inputs, tc.outputs)
			}
			for _, e := range tc.carries {
				if !p.CarriesData(ws, e[0], e[1], e[2]) {
					t.Errorf("edge layer %d %d->%d should carry data", e[0], e[1], e[2])
				}
			}
			for _, e := range tc.notCarries {
				if p.CarriesData(ws, e[0], e[1], e[2]) {
					t.Errorf("edge layer %d %d->%d should not carry data", e[0], e[1], e[2])
				}
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Two hidden layers: with all weights 1 there are 2*2*2 = 8 paths; zeroing
// a0 -> b1... here W2 = [[1,0],[1,1]] leaves b0 <- a0 and b1 <- a0, a1, so
// paths = 2 (to a0) * 1 + 2 * 2 = 6.
func TestDeeperNetwork(t *testing.T) {
	m := testModel(nodes("x", 2), nodes("o", 1), 0, 0.5,
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1, 1}, {1, 1}}, Biases: []float64{0, 0}},
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1, 0}, {1, 1}}, Biases: []float64{0, 0}},
		Layer{Activation: ActivationIdentity, Weights: [][]float64{{1, 1}}, Biases: []float64{0}},
	)
	p, err := NewProcessor(m)
	if err != nil {
		t.Fatal(err)
	}
	an, err := p.Analyze([]float64{1, 1}, NewWorkspace(p))
	if err != nil {
		t.Fatal(err)
	}
	if an.Total != 6 || an.InputAmount != 2 || an.OutputAmount != 1 {
		t.Fatalf("total %d A_in %d A_out %d, want 6 2 1", an.Total, an.InputAmount, an.OutputAmount)
	}
	// The strongest branch: contributions x->a (1*1), a->b (1*2), b->o
	// (1*4 through b1, 1*2 through b0), so x?-a?-b1-o.
	br := p.Strongest(NewWorkspaceAnalyzed(t, p, []float64{1, 1}), 1)
	if len(br) != 1 || br[0].Nodes[2] != 1 {
		t.Fatalf("strongest branch %+v, want one through b1", br)
	}
}

func NewWorkspaceAnalyzed(t *testing.T, p *Processor, x []float64) *Workspace {
	t.Helper()
	ws := NewWorkspace(p)
	if _, err := p.Analyze(x, ws); err != nil {
		t.Fatal(err)
	}
	return ws
}

// A deep, all-positive network has 16^21 = 2^84 activated branches, past
// 64 bits: the total must stay exact.
func TestBranchTotalPast64Bits(t *testing.T) {
	const width, hidden = 16, 20
	ones := func(rows, cols int) [][]float64 {
		w := make([][]float64, rows)
		for i := range w {
			w[i] = make([]float64, cols)
			for j := range w[i] {
				w[i][j] = 1
			}
		}
		return w
	}
	var layers []Layer
	for l := 0; l < hidden; l++ {
		layers = append(layers, Layer{Activation: ActivationReLU, Weights: ones(width, width), Biases: make([]float64, width)})
	}
	layers = append(layers, Layer{Activation: ActivationSigmoid, Weights: ones(1, width), Biases: []float64{0}})
	p, err := NewProcessor(testModel(nodes("x", width), nodes("o", 1), 0, 0.5, layers...))
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, width)
	for i := range x {
		x[i] = 1e-3
	}
	an, err := p.Analyze(x, NewWorkspace(p))
	if err != nil {
		t.Fatal(err)
	}
	want := new(big.Int).Lsh(big.NewInt(1), 84)
	if !an.Overflow || an.TotalBig.Cmp(want) != 0 || an.TotalString() != want.String() {
		t.Fatalf("total %s overflow %v, want %s", an.TotalString(), an.Overflow, want)
	}
	if an.InputAmount != width || an.OutputAmount != 1 {
		t.Fatalf("A_in %d A_out %d, want %d 1", an.InputAmount, an.OutputAmount, width)
	}
}

// bruteForce recomputes everything from the definitions, independently of
// the engine: its own forward pass, then every path enumerated.
func bruteForce(m *Model, x []float64) (ain, aout int, total *big.Int) {
	eps, thr := m.Epsilon(), m.Threshold()
	acts := [][]float64{make([]float64, len(x))}
	holds := [][]bool{make([]bool, len(x))}
	for i, v := range x {
		if !math.IsNaN(v) {
			acts[0][i] = v
			holds[0][i] = math.Abs(v) > eps
		}
	}
	for li, l := range m.Layers {
		prev := acts[len(acts)-1]
		a := make([]float64, len(l.Biases))
		h := make([]bool, len(l.Biases))
		for j := range a {
			z := l.Biases[j]
			for i, w := range l.Weights[j] {
				z += w * prev[i]
			}
			switch l.Activation {
			case ActivationReLU:
				z = math.Max(z, 0)
			case ActivationSigmoid:
				z = 1 / (1 + math.Exp(-z))
			case ActivationTanh:
				z = math.Tanh(z)
			}
			a[j] = z
			if li == len(m.Layers)-1 {
				h[j] = z >= thr
			} else {
				h[j] = z > 0
			}
		}
		acts = append(acts, a)
		holds = append(holds, h)
	}
	total = new(big.Int)
	startIn := make([]bool, len(x))
	endOut := make([]bool, len(m.Outputs))
	var walk func(l, u, start int)
	walk = func(l, u, start int) {
		if l == len(m.Layers) {
			total.Add(total, big.NewInt(1))
			startIn[start] = true
			endOut[u] = true
			return
		}
		for v, row := range m.Layers[l].Weights {
			if holds[l+1][v] && row[u]*acts[l][u] > 0 {
				walk(l+1, v, start)
			}
		}
	}
	for i := range x {
		if holds[0][i] {
			walk(0, i, i)
		}
	}
	for i, n := range m.Inputs {
		if n.Countable && startIn[i] {
			ain++
		}
	}
	for o, n := range m.Outputs {
		if n.Countable && endOut[o] {
			aout++
		}
	}
	return ain, aout, total
}

func randomModel(r *rand.Rand) *Model {
	depth := 2 + r.IntN(3)
	in := 1 + r.IntN(5)
	acts := []string{ActivationReLU, ActivationSigmoid, ActivationIdentity, ActivationTanh}
	m := testModel(nil, nil, 0.05, 0.3+0.4*r.Float64())
	for i := 0; i < in; i++ {
		m.Inputs = append(m.Inputs, Node{Name: "x" + string(rune('a'+i)), Countable: r.IntN(3) > 0})
	}
	// Most models keep a third of their weights zero (dense products);
	// some keep nine in ten zero, which exercises the sparse forward pass.
	zeroShare := 1.0 / 3
	if r.IntN(4) == 0 {
		zeroShare = 0.9
	}
	prev := in
	for l := 0; l < depth; l++ {
		w := 1 + r.IntN(5)
		layer := Layer{Activation: ActivationReLU, Biases: make([]float64, w)}
		if l == depth-1 {
			layer.Activation = acts[r.IntN(len(acts))]
		} else if r.IntN(4) == 0 {
			layer.Activation = acts[r.IntN(len(acts))]
		}
		fillLayer(r, &layer, prev, zeroShare)
		m.Layers = append(m.Layers, layer)
		prev = w
	}
	for o := 0; o < prev; o++ {
		m.Outputs = append(m.Outputs, Node{Name: "o" + string(rune('a'+o)), Countable: r.IntN(3) > 0})
	}
	return m
}

// fillLayer gives each of the layer's nodes (len(Biases)) random weights
// from prev nodes, zero with probability zeroShare, and a random bias.
func fillLayer(r *rand.Rand, layer *Layer, prev int, zeroShare float64) {
	for j := range layer.Biases {
		row := make([]float64, prev)
		for i := range row {
			if r.Float64() >= zeroShare {
				row[i] = r.NormFloat64()
			}
		}
		layer.Weights = append(layer.Weights, row)
		layer.Biases[j] = 0.3 * r.NormFloat64()
	}
}

func TestDynamicProgrammeMatchesEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	checked, nonzero, sparseLayers, denseLayers, trimmedLayers := 0, 0, 0, 0, 0
	for n := 0; n < 3000; n++ {
		m := randomModel(r)
		p, err := NewProcessor(m)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.layers {
			if p.layers[i].trimmed {
				trimmedLayers++
			}
			if p.layers[i].sparse {
				sparseLayers++
			} else {
				denseLayers++
			}
		}
		ws := NewWorkspace(p)
		for k := 0; k < 3; k++ {
			x := make([]float64, len(m.Inputs))
			for i := range x {
				switch r.IntN(6) {
				case 0:
					x[i] = nan
				case 1:
					x[i] = 0
				default:
					x[i] = 2 * r.NormFloat64()
				}
			}
			an, err := p.Analyze(x, ws)
			if err != nil {
				t.Fatal(err)
			}
			ain, aout, total := bruteForce(m, x)
			if an.InputAmount != ain || an.OutputAmount != aout || an.TotalString() != total.String() {
				t.Fatalf("model %d input %v: engine A_in %d A_out %d total %s; enumeration %d %d %s", n, x, an.InputAmount, an.OutputAmount, an.TotalString(), ain, aout, total)
			}
			checked++
			if total.Sign() > 0 {
				nonzero++
			}
		}
	}
	// The random networks must exercise real branches, not only empty ones,
	// through both forward products.
	if sparseLayers == 0 || denseLayers == 0 || trimmedLayers == 0 || trimmedLayers == sparseLayers+denseLayers {
		t.Fatalf("forward products exercised: %d sparse layers, %d dense, %d of them with trimmed target sets", sparseLayers, denseLayers, trimmedLayers)
	}
	if nonzero < checked/6 {
		t.Fatalf("only %d of %d random cases had activated branches", nonzero, checked)
	}
}

// An edge carries data when w*a > 0 in exact arithmetic: a product that
// underflows to 0 in floating point still carries, for the analysis and
// for CarriesData alike.
func TestUnderflowingEdgeCarries(t *testing.T) {
	m := testModel([]Node{{Name: "x", Countable: true}}, []Node{{Name: "o", Countable: true}}, 0, 0,
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1e-320}}, Biases: []float64{1}},
		Layer{Activation: ActivationIdentity, Weights: [][]float64{{1}}, Biases: []float64{0}},
	)
	p, err := NewProcessor(m)
	if err != nil {
		t.Fatal(err)
	}
	ws := NewWorkspace(p)
	an, err := p.Analyze([]float64{1e-5}, ws)
	if err != nil {
		t.Fatal(err)
	}
	w, x := m.Layers[0].Weights[0][0], 1e-5
	if w*x != 0 {
		t.Fatal("the product was meant to underflow")
	}
	if an.Total != 1 || an.InputAmount != 1 || !p.CarriesData(ws, 0, 0, 0) {
		t.Fatalf("total %d A_in %d carries %v, want 1 1 true", an.Total, an.InputAmount, p.CarriesData(ws, 0, 0, 0))
	}
}

func TestAnalyzeRejectsBadInput(t *testing.T) {
	p := handNet(t)
	if _, err := p.Analyze([]float64{1, 2}, NewWorkspace(p)); err == nil {
		t.Fatal("short input vector accepted")
	}
	if _, err := p.Analyze([]float64{1, math.Inf(1), 0}, NewWorkspace(p)); err == nil {
		t.Fatal("infinite input accepted")
	}
	other := handNet(t)
	if _, err := p.Analyze([]float64{1, 2, 0}, NewWorkspace(other)); err == nil {
		t.Fatal("another processor's workspace accepted")
	}
}

// randomLayer is a layer of in inputs and out nodes whose biases are
// normal and whose weights are nonzero with probability density, each a
// normal figure times 10^-4 to 10^4, compressed as NewProcessor does.
func randomLayer(r *rand.Rand, in, out int, density float64) compiledLayer {
	cl := compiledLayer{in: in, out: out, b: make([]float64, out),
		w: blas64.General{Rows: out, Cols: in, Stride: in, Data: make([]float64, out*in)}}
	for v := range cl.b {
		cl.b[v] = r.NormFloat64()
	}
	for i := range cl.w.Data {
		if r.Float64() < density {
			cl.w.Data[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4))
		}
	}
	cl.compress()
	return cl
}

// A sparse layer's column-wise product with zero inputs skipped gives,
// bit for bit, the row-by-row sum bias + w0 x0 + w1 x1 + ... in input
// order, signed zeros aside (a bias of -0 reads as +0).
func TestSparseProductMatchesRowOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for n := 0; n < 500; n++ {
		in, out := 1+r.IntN(300), 1+r.IntN(120)
		cl := randomLayer(r, in, out, 0.05)
		if !cl.sparse {
			continue
		}
		x := make([]float64, in)
		for i := range x {
			if r.IntN(2) == 0 {
				x[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4))
			}
		}
		y := make([]float64, out)
		cl.product(x, y)
		for v := range y {
			sum := cl.b[v]
			for u := 0; u < in; u++ {
				if w := cl.w.Data[v*in+u]; w != 0 {
					sum += w * x[u]
				}
			}
			if math.Float64bits(y[v]) != math.Float64bits(sum) && !(y[v] == 0 && sum == 0) {
				t.Fatalf("layer %d, node %d: %v, row order gives %v", n, v, y[v], sum)
			}
		}
	}
}

// A dense layer's rows computed over a range are each, bit for bit, what
// the whole product gives them, with an input at ±Inf or NaN or without;
// the range set covers the one asked for (widened to BLAS blocks of four
// for a finite input) and no other row is written.
func TestDenseRowsMatchTheWholeProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 9))
	for n := 0; n < 300; n++ {
		in, out := 1+r.IntN(40), 1+r.IntN(23)
		if n%10 == 0 {
			in, out = 220, 110 // the shape of the built-in admission processor's output layer
		}
		cl := randomLayer(r, in, out, 0.6)
		if cl.sparse { // too few weights drawn for a dense layer
			continue
		}
		x := make([]float64, in)
		for i := range x {
			if r.IntN(4) > 0 {
				x[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4))
			}
		}
		inf := n%3 == 0
		if inf {
			x[r.IntN(in)] = []float64{math.Inf(1), math.Inf(-1), math.NaN()}[r.IntN(3)]
		}
		whole := make([]float64, out)
		cl.product(x, whole)
		y := make([]float64, out)
		for r0 := 0; r0 < out; r0++ {
			for r1 := r0 + 1; r1 <= out; r1++ {
				for v := range y {
					y[v] = -7 // a value no row holds
				}
				lo, hi := cl.denseRows(x, y, r0, r1, inf)
				if lo > r0 || hi < r1 || (!inf && (lo%4 != 0 || (hi%4 != 0 && hi != out))) {
					t.Fatalf("layer %d (%dx%d, inf %v): rows %d to %d set as %d to %d", n, in, out, inf, r0, r1, lo, hi)
				}
				for v := range y {
					switch {
					case v >= lo && v < hi && math.Float64bits(y[v]) != math.Float64bits(whole[v]):
						t.Fatalf("layer %d (%dx%d, inf %v), rows %d to %d: node %d is %v, the whole product gives %v", n, in, out, inf, r0, r1, v, y[v], whole[v])
					case (v < lo || v >= hi) && y[v] != -7:
						t.Fatalf("layer %d, rows %d to %d (set %d to %d): node %d written", n, r0, r1, lo, hi, v)
					}
				}
			}
		}
	}
}

// A dense layer's product reads, in each block of four rows, only the
// columns from the first holding a nonzero weight in the block to the last
// (from an even column, to an even one or the layer's end), and gives each
// row, bit for bit, what gonum's product over every column gives it: on
// rows whose weights start and end anywhere (the built-in admission
// processor's output layer is triangular), with inputs at any scale, of
// either sign or zero, and terms that underflow to ±0 or overflow to ±Inf.
func TestDenseBlocksReadTheirColumns(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 2))
	scales := []float64{0, 1e-320, 1e-300, 1e-8, 1, 1e3, 1e300}
	tried := 0
	for n := 0; n < 3000; n++ {
		in, out := 1+r.IntN(24), 1+r.IntN(13)
		if n%20 == 0 {
			in, out = 220, 110 // the built-in admission processor's output layer
		}
		cl := compiledLayer{in: in, out: out, b: make([]float64, out),
			w: blas64.General{Rows: out, Cols: in, Stride: in, Data: make([]float64, out*in)}}
		for v := range cl.b {
			switch r.IntN(4) {
			case 0: // a bias of ±0: a row of zero terms is +0
				cl.b[v] = math.Copysign(0, float64(r.IntN(2)*2-1))
			default:
				cl.b[v] = r.NormFloat64()
			}
		}
		// Each row's weights from a first to a last column, some zero
		// columns among them; some rows all zero; some layers
		// triangular.
		tri := r.IntN(3) == 0
		for v := 0; v < out; v++ {
			first := r.IntN(in)
			last := first + r.IntN(in-first)
			if tri {
				first, last = 0, min(in-1, 2*v+1)
			}
			if r.IntN(8) == 0 {
				continue
			}
			for u := first; u <= last; u++ {
				if u == first || u == last || r.IntN(4) > 0 {
					cl.w.Data[v*in+u] = r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4))
				}
			}
		}
		cl.compress()
		if cl.sparse {
			continue
		}
		tried++
		for i, blk := range cl.blocks {
			lo, hi := in, 0
			for v := 4 * i; v < min(4*i+4, out); v++ {
				for u := 0; u < in; u++ {
					if cl.w.Data[v*in+u] != 0 {
						lo, hi = min(lo, u), max(hi, u+1)
					}
				}
			}
			want := denseBlock{lo: int32(lo &^ 1), hi: int32(min((hi+1)&^1, in))}
			if hi == 0 {
				want = denseBlock{}
			}
			if blk.lo != want.lo || blk.hi != want.hi || blk.end%4 != 0 && int(blk.end) != out || int(blk.end) <= 4*i {
				t.Fatalf("layer %d (%dx%d), block %d: %+v, want columns %d to %d", n, in, out, i, blk, want.lo, want.hi)
			}
			if next := cl.blocks[min(i+1, len(cl.blocks)-1)]; i+1 < len(cl.blocks) && (next.lo == blk.lo && next.hi == blk.hi) != (next.end == blk.end) {
				t.Fatalf("layer %d (%dx%d), blocks %d and %d: %+v and %+v: a run ends where its columns do not change, or goes on where they do", n, in, out, i, i+1, blk, next)
			}
		}
		x := make([]float64, in)
		for i := range x {
			x[i] = r.NormFloat64() * scales[r.IntN(len(scales))]
		}
		want := append([]float64(nil), cl.sb...)
		gonum.Implementation{}.Dgemv(blas.NoTrans, out, in, 1, cl.w.Data, in, x, 1, 1, want, 1)
		got := make([]float64, out)
		cl.product(x, got)
		for v := range got {
			if math.Float64bits(got[v]) != math.Float64bits(want[v]) {
				t.Fatalf("layer %d (%dx%d), node %d: %v, the product over every column gives %v", n, in, out, v, got[v], want[v])
			}
		}
		r0 := r.IntN(out)
		r1 := r0 + 1 + r.IntN(out-r0)
		clear(got)
		lo, hi := cl.denseRows(x, got, r0, r1, false)
		for v := lo; v < hi; v++ {
			if math.Float64bits(got[v]) != math.Float64bits(want[v]) {
				t.Fatalf("layer %d (%dx%d), rows %d to %d, node %d: %v, the product over every column gives %v", n, in, out, r0, r1, v, got[v], want[v])
			}
		}
	}
	if tried < 1000 {
		t.Fatalf("only %d dense layers drawn", tried)
	}
}

// TestZeroWeightIsNoEdgeAtInf: a zero weight is no edge in a dense layer
// too, when its source overflowed to +Inf or became NaN (+Inf − Inf) one
// layer before (a BLAS product's 0 × Inf or 0 × NaN is NaN, which read as
// no data and cut the output's only branch). One more edge of the output
// turns its layer from sparse to dense; the answer must not change.
func TestZeroWeightIsNoEdgeAtInf(t *testing.T) {
	in := []Node{{Name: "x", Countable: true}}
	out := []Node{{Name: "o", Countable: true}}
	// atInf: h0 = 1e150 x, +Inf for x = 1e10; h1..h9 = x.
	w1 := [][]float64{{1e150}}
	for range 9 {
		w1 = append(w1, []float64{1})
	}
	atInf := []Layer{{Activation: ActivationIdentity, Weights: w1, Biases: make([]float64, 10)}}
	// atNaN: g0 = h0 − h1 = +Inf − Inf; g1..g9 = h2 = x.
	w2 := [][]float64{{1, -1, 0}}
	for range 9 {
		w2 = append(w2, []float64{0, 0, 1})
	}
	atNaN := []Layer{
		{Activation: ActivationIdentity, Weights: [][]float64{{1e150}, {1e150}, {1}}, Biases: make([]float64, 3)},
		{Activation: ActivationIdentity, Weights: w2, Biases: make([]float64, 10)},
	}
	for _, c := range []struct {
		name   string
		hidden []Layer
		edges  []int // last hidden nodes with an edge (weight 1) to o; node 0 has none
		sparse bool
	}{
		{"+Inf, sparse", atInf, []int{1}, true}, {"+Inf, dense", atInf, []int{1, 2}, false},
		{"NaN, sparse", atNaN, []int{1}, true}, {"NaN, dense", atNaN, []int{1, 2}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			row := make([]float64, 10)
			for _, h := range c.edges {
				row[h] = 1
			}
			layers := append(append([]Layer{}, c.hidden...), Layer{Activation: ActivationSigmoid, Weights: [][]float64{row}, Biases: []float64{0}})
			p, err := NewProcessor(testModel(in, out, 1e-9, 0.5, layers...))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.layers[len(layers)-1].sparse; got != c.sparse {
				t.Fatalf("output layer compiled sparse = %v, want %v", got, c.sparse)
			}
			// Analyze refuses the overflow; the forward pass and the branch
			// count beneath it (the sweeps the simulator runs) must still
			// not let it cut an edge that is there.
			if _, err := p.Analyze([]float64{1e200}, NewWorkspace(p)); err == nil || !strings.Contains(err.Error(), "overflow") {
				t.Errorf("Analyze: %v, want the overflow refused", err)
			}
			ws := NewWorkspace(p)
			p.forward([]float64{1e200}, ws)
			p.branches(ws)
			an := &ws.an
			if an.Outputs[0] != 1 || an.InputAmount != 1 || an.OutputAmount != 1 {
				t.Errorf("output %v, A_in %d, A_out %d; want 1, 1, 1 (node 1 of the last hidden layer reaches o; node 0 has no edge to it)", an.Outputs[0], an.InputAmount, an.OutputAmount)
			}
		})
	}
}

// A processor reads the count in force only through per-replica shares
// exactly when PerReplicaInputs says so: for each feature alone, the
// input vector of n replicas of one workload on a grid of 2^-20 (power-of-
// two capacities, as the simulator builds them) is the same bits at every n
// when it says true, and differs at some n when it says false, so that a
// feature added to the engine and not classified fails here.
func TestPerReplicaInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	grid := func(v float64) float64 { return math.Round(v*(1<<20)) / (1 << 20) }
	u, mem := make([]float64, 60), make([]float64, 60)
	for i := range u {
		u[i] = grid(5 + 40*r.Float64())
		mem[i] = grid(100 + 900*r.Float64())
	}
	// at builds the observation of n replicas: with memory or not, with
	// usage or a window of zeros (read at the replicas' requests).
	at := func(n int, withMem, zero bool) *Observation {
		fn := float64(n)
		o := &Observation{Host: "h", CPUCapacityMHz: 1024, RunningReplicas: n, ReplicaCPUDemandMHz: grid(61.3), RequestedCPUMHz: fn * grid(61.3)}
		if withMem {
			o.MemoryCapacityMB, o.ReplicaMemoryDemandMB, o.RequestedMemoryMB = 65536, grid(700.1), fn*grid(700.1)
		}
		for i := range u {
			s := Sample{Time: int64(1_700_000_000 + 60*i), CPUMHz: fn * u[i]}
			if zero {
				s.CPUMHz = 0
			}
			if withMem {
				s.MemoryMB = fn * mem[i]
			}
			o.Samples = append(o.Samples, s)
		}
		return o
	}
	model := func(names []string) *Processor {
		in := make([]Node, len(names))
		ones := make([]float64, len(names))
		for i, n := range names {
			in[i], ones[i] = Node{Name: n}, 1
		}
		m := testModel(in, []Node{{Name: "o", Countable: true}}, 1e-6, 0.5,
			Layer{Activation: ActivationReLU, Weights: [][]float64{ones}, Biases: []float64{0}},
			Layer{Activation: ActivationReLU, Weights: [][]float64{{1}}, Biases: []float64{0}})
		p, err := NewProcessor(m)
		if err != nil {
			t.Fatalf("%v: %v", names, err)
		}
		return p
	}
	var cases [][]string
	for _, name := range FeatureNames {
		cases = append(cases, []string{name})
	}
	// Slots: the second is a running replica from two replicas on.
	cases = append(cases, []string{SlotPrefix + "0", SlotPrefix + "1" + SlotRunningSuffix})
	perReplica := 0
	for _, names := range cases {
		p := model(names)
		varies := false
		for _, kind := range []struct{ mem, zero bool }{{true, false}, {false, false}, {true, true}} {
			ref, err := p.Features(at(1, kind.mem, kind.zero), RoleSecond)
			if err != nil {
				t.Fatal(err)
			}
			for n := 2; n <= 40; n++ {
				x, err := p.Features(at(n, kind.mem, kind.zero), RoleSecond)
				if err != nil {
					t.Fatal(err)
				}
				for i := range x {
					if math.Float64bits(x[i]) != math.Float64bits(ref[i]) {
						varies = true
						if p.PerReplicaInputs() {
							t.Errorf("%v: per-replica, but %d replicas (memory %v, zero usage %v) give %v, one gives %v", names, n, kind.mem, kind.zero, x, ref)
						}
					}
				}
			}
		}
		if !p.PerReplicaInputs() && !varies {
			t.Errorf("%v: not per-replica, but every count gives the same input", names)
		}
		if p.PerReplicaInputs() {
			perReplica++
		}
	}
	if want := len(FeatureNames) - 4; perReplica != want {
		t.Errorf("%d features per-replica, want %d (all but cpu_host_mean, cpu_host_max, mem_host_max, running_replicas)", perReplica, want)
	}
	for _, tc := range []struct {
		name string
		want bool
	}{{BuiltinCapacity, true}, {BuiltinAdmission, false}} {
		p, err := Builtin(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.PerReplicaInputs(); got != tc.want {
			t.Errorf("built-in %s: PerReplicaInputs %v, want %v", tc.name, got, tc.want)
		}
	}
	// A model whose inputs cannot be read from an observation.
	m := testModel([]Node{{Name: "no_such_feature"}}, []Node{{Name: "o", Countable: true}}, 1e-6, 0.5,
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1}}, Biases: []float64{0}},
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1}}, Biases: []float64{0}})
	p, err := NewProcessor(m)
	if err != nil {
		t.Fatal(err)
	}
	if p.PerReplicaInputs() {
		t.Error("a model with an unknown feature: PerReplicaInputs true")
	}
}

// chainWeights fills a layer of out rows over in inputs whose rows extend
// the row before, as the admission processor's output layer does: row v
// reads the even columns up to 2v, each at its column's weight, and the
// odd column 2v+1 (or, in some layers, every odd column up to it); some
// rows have one weight changed (the chain breaks there and starts again
// after them), one in any column, or no weights.
func chainWeights(r *rand.Rand, in, out int, scales []float64) [][]float64 {
	col := make([]float64, in)
	for u := range col {
		col[u] = r.NormFloat64() * scales[r.IntN(len(scales))]
		if col[u] == 0 {
			col[u] = 1
		}
	}
	oddPrefix := r.IntN(3) == 0
	rows := make([][]float64, out)
	for v := range rows {
		row := make([]float64, in)
		rows[v] = row
		if r.IntN(25) == 0 {
			continue
		}
		for u := 0; u < in && u <= 2*v+1; u++ {
			if u%2 == 0 || oddPrefix || u == 2*v+1 {
				row[u] = col[u]
			}
		}
		switch r.IntN(12) {
		case 0: // a weight changed, in its own column
			u := r.IntN(min(in, 2*v+2))
			row[u] = r.NormFloat64()
		case 1: // one in any column
			row[r.IntN(in)] = r.NormFloat64()
		}
	}
	return rows
}

// A chained dense layer's rows, each extended from the lanes of the row
// before (chainRows), are bitwise the whole product's, on the lane kernel:
// on layers whose rows extend the row before, with breaks, from a first
// computation of every row and then from the rows before a changed input,
// on inputs and weights from 1e-320 to 1e300 (terms that underflow to ±0
// or overflow to ±Inf, sums that become NaN), and on dense layers that
// chain nothing. Elsewhere, and with an odd number of inputs, no layer is
// chained.
func TestChainRowsMatchTheWholeProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 3))
	scales := []float64{0, 1e-320, 1e-300, 1e-8, 1, 1e3, 1e300}
	chained, extended, partial := 0, 0, 0
	for n := 0; n < 2000; n++ {
		in, out := 2*(1+r.IntN(40)), 1+r.IntN(60)
		if n%20 == 0 {
			in, out = 220, 110 // the built-in admission processor's output layer
		}
		if n%10 == 5 {
			in-- // odd inputs: never chained
		}
		cl := compiledLayer{in: in, out: out, b: make([]float64, out),
			w: blas64.General{Rows: out, Cols: in, Stride: in, Data: make([]float64, out*in)}}
		for v := range cl.b {
			cl.b[v] = r.NormFloat64()
			if r.IntN(4) == 0 {
				cl.b[v] = math.Copysign(0, float64(r.IntN(2)*2-1))
			}
		}
		var rows [][]float64
		if n%7 == 3 { // a dense layer without chains: every row from +0
			for range out {
				row := make([]float64, in)
				for u := range row {
					if r.IntN(3) > 0 {
						row[u] = r.NormFloat64() * scales[r.IntN(len(scales))]
					}
				}
				rows = append(rows, row)
			}
		} else {
			rows = chainWeights(r, in, out, scales)
		}
		for v, row := range rows {
			copy(cl.w.Data[v*in:], row)
		}
		cl.compress()
		if cl.sparse {
			continue
		}
		cl.indexChain(1)
		if !laneKernel || in%2 != 0 {
			if cl.chain != nil {
				t.Fatalf("layer %d (%dx%d): chained, with laneKernel %v", n, in, out, laneKernel)
			}
			continue
		}
		if cl.chain == nil {
			t.Fatalf("layer %d (%dx%d): not chained with a share of 1", n, in, out)
		}
		chained++
		for _, run := range cl.chain {
			if run.prev {
				extended++
			}
		}
		x := make([]float64, in)
		for i := range x {
			x[i] = r.NormFloat64() * scales[r.IntN(len(scales))]
		}
		lanes := make([]float64, 2*out)
		check := func(what string, r0, r1 int) {
			want := make([]float64, out)
			cl.product(x, want)
			got := make([]float64, out)
			for v := range got {
				got[v] = -7 // a value no row holds
			}
			cl.chainRows(x, got, lanes, r0, r1)
			for v := range out {
				switch {
				case v >= r0 && v < r1 && math.Float64bits(got[v]) != math.Float64bits(want[v]):
					t.Fatalf("layer %d (%dx%d), %s, rows %d to %d: node %d is %v (%x), the whole product gives %v (%x)",
						n, in, out, what, r0, r1, v, got[v], math.Float64bits(got[v]), want[v], math.Float64bits(want[v]))
				case (v < r0 || v >= r1) && got[v] != -7:
					t.Fatalf("layer %d, rows %d to %d: node %d written", n, r0, r1, v)
				}
			}
		}
		check("every row", 0, out)
		// A few inputs changed: the rows from the first that reads one
		// along a nonzero weight, extended from the lanes kept.
		for range 3 {
			changed := map[int]bool{}
			for range 1 + r.IntN(3) {
				u := r.IntN(in)
				x[u] = r.NormFloat64() * scales[r.IntN(len(scales))]
				changed[u] = true
			}
			r0 := out
			for v := range out {
				for u := range changed {
					if cl.w.Data[v*in+u] != 0 {
						r0 = min(r0, v)
					}
				}
			}
			if r0 > 0 {
				partial++
			}
			check("after a change", r0, out)
		}
		// Rows up to one before the end: the rows past it are not
		// written (their lanes are then stale, so this is the last).
		if out > 1 {
			x[r.IntN(in)] = r.NormFloat64()
			check("to a row before the end", 0, 1+r.IntN(out-1))
		}
	}
	if laneKernel && (chained < 1000 || extended < 10000 || partial < 1000) {
		t.Fatalf("%d layers chained, %d lanes extended from the row before, %d partial computations: too few", chained, extended, partial)
	}
}

// The built-in admission processor's output layer is chained on the lane
// kernel (a Sweeper's rows cost a term or two), and its share of the
// layer's weights is small.
func TestBuiltinAdmissionOutputChained(t *testing.T) {
	p, err := Builtin("admission")
	if err != nil {
		t.Fatal(err)
	}
	cl := &p.layers[len(p.layers)-1]
	if !laneKernel {
		if cl.chain != nil {
			t.Fatal("the output layer is chained without the lane kernel")
		}
		return
	}
	if cl.chain == nil || cl.sparse {
		t.Fatalf("the output layer (%dx%d, sparse %v) is not chained", cl.out, cl.in, cl.sparse)
	}
	if terms := len(cl.chainCol); terms > 3*cl.out {
		t.Fatalf("the chained output layer adds %d terms for %d rows", terms, cl.out)
	}
}
