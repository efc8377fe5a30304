package engine

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// largeModel is the seeded random network of the benchmarks: 256 inputs,
// four hidden layers of 512, 64 outputs, half the weights zero.
func largeModel() *Model {
	r := rand.New(rand.NewPCG(42, 42))
	sizes := []int{256, 512, 512, 512, 512, 64}
	m := testModel(nil, nil, DefaultInputEpsilon, 0.5)
	for i := 0; i < sizes[0]; i++ {
		m.Inputs = append(m.Inputs, Node{Name: "x" + strconv.Itoa(i), Countable: true})
	}
	for l := 1; l < len(sizes); l++ {
		layer := Layer{Activation: ActivationReLU, Biases: make([]float64, sizes[l])}
		if l == len(sizes)-1 {
			layer.Activation = ActivationSigmoid
		}
		for j := 0; j < sizes[l]; j++ {
			row := make([]float64, sizes[l-1])
			for i := range row {
				if r.IntN(2) == 0 {
					row[i] = r.NormFloat64() / 16
				}
			}
			layer.Weights = append(layer.Weights, row)
			layer.Biases[j] = 0.01 * r.NormFloat64()
		}
		m.Layers = append(m.Layers, layer)
	}
	for o := 0; o < sizes[len(sizes)-1]; o++ {
		m.Outputs = append(m.Outputs, Node{Name: "o" + strconv.Itoa(o), Countable: true})
	}
	return m
}

func largeInput() []float64 {
	r := rand.New(rand.NewPCG(7, 7))
	x := make([]float64, 256)
	for i := range x {
		x[i] = r.Float64()
	}
	return x
}

func BenchmarkProcessorLarge(b *testing.B) {
	p, err := NewProcessor(largeModel())
	if err != nil {
		b.Fatal(err)
	}
	ws := NewWorkspace(p)
	x := largeInput()
	an, err := p.Analyze(x, ws)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(an.InputAmount), "A_in")
	b.ReportMetric(float64(an.OutputAmount), "A_out")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Analyze(x, ws); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGemvFloorLarge is the floor under BenchmarkProcessorLarge: only
// the matrix-vector products of the same network.
func BenchmarkGemvFloorLarge(b *testing.B) {
	p, err := NewProcessor(largeModel())
	if err != nil {
		b.Fatal(err)
	}
	x := largeInput()
	bufs := [][]float64{x}
	for _, l := range p.layers {
		bufs = append(bufs, make([]float64, l.out))
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range p.layers {
			l := &p.layers[i]
			blas64.Gemv(blas.NoTrans, 1, l.w, blas64.Vector{N: l.in, Inc: 1, Data: bufs[i]}, 0, blas64.Vector{N: l.out, Inc: 1, Data: bufs[i+1]})
		}
	}
}

func TestLargeNetworkIsNotTrivial(t *testing.T) {
	// The benchmark network must exercise the analysis: live branches
	// across every layer, not an all-dead network.
	p, err := NewProcessor(largeModel())
	if err != nil {
		t.Fatal(err)
	}
	an, err := p.Analyze(largeInput(), NewWorkspace(p))
	if err != nil {
		t.Fatal(err)
	}
	if an.InputAmount == 0 || an.OutputAmount == 0 || (an.Total == 0 && !an.Overflow) {
		t.Fatalf("large network: A_in %d A_out %d total %s", an.InputAmount, an.OutputAmount, an.TotalString())
	}
	t.Logf("large network: A_in %d A_out %d total %s", an.InputAmount, an.OutputAmount, an.TotalString())
}
