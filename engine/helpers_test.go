package engine

import "math"

// net builds a model from layer specs for tests: each layer is weights
// (rows = nodes of the layer) and biases.
func testModel(inputs []Node, outputs []Node, eps, thr float64, layers ...Layer) *Model {
	return &Model{
		Format: ModelFormat, Version: ModelVersion, Name: "test",
		Inputs: inputs, Outputs: outputs, Layers: layers,
		InputEpsilon: &eps, OutputThreshold: &thr,
		Provenance: Provenance{Method: "hand-written for a test"},
	}
}

func nodes(prefix string, n int) []Node {
	out := make([]Node, n)
	for i := range out {
		out[i] = Node{Name: prefix + string(rune('0'+i%10)) + string(rune('a'+i/10)), Countable: true}
	}
	return out
}

var nan = math.NaN()
