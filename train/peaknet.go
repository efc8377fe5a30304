package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// peakNet is the shared estimate, a learned max-of-predictors peak
// predictor (Bashir et al., EuroSys 2021, found the max of several
// predictors the most reliable). In fit space (replicas that fit) it is a
// min: g = min_f c_f x_f over the fit features x (c_f = exp(theta_f)), the
// number of replicas the most cautious of the window statistics allows,
// each statistic scaled by its learned factor. Output k is
// sigmoid(alpha (g/(k+1) - 1)), the probability that k+1 replicas fit.
//
// In the engine's network the min is exact: min(a, b) = relu(a) - relu(a - b)
// for a, b >= 0, applied pairwise layer by layer (one hidden layer per
// halving), so g is a linear read of the last hidden layer.
type peakNet struct {
	width, slots int
	theta        []float64 // log scale of each fit feature
	logAlpha     float64
	m, v         []float64 // Adam moments: theta..., logAlpha
	t            int
}

// slotWeight is the admission processor's edge from a slot's pass-through
// node into its block. It is positive so that a slot holding demand starts
// branches through its block, and small so that the block computes the
// capacity processor's estimate.
const slotWeight = 1e-6

func newPeakNet(s Settings, d dataset) *peakNet {
	m := &peakNet{width: d.width, slots: s.Slots, theta: make([]float64, d.width)}
	// Start with every statistic equally likely to be the cautious one:
	// scale each to the mean of the window-max fit.
	means := make([]float64, d.width)
	for r := 0; r < d.rows; r++ {
		for f := 0; f < d.width; f++ {
			means[f] += d.x[r*d.width+f] / float64(d.rows)
		}
	}
	maxCol := 0
	for i, f := range ContextFeatures {
		if f == engine.FeatCPUFitMax {
			maxCol = i
		}
	}
	for f := range m.theta {
		if means[f] > 0 && means[maxCol] > 0 {
			m.theta[f] = math.Log(means[maxCol] / means[f])
		}
	}
	m.logAlpha = math.Log(3)
	m.m, m.v = make([]float64, d.width+1), make([]float64, d.width+1)
	return m
}

func (m *peakNet) alpha() float64 { return math.Exp(m.logAlpha) }

// scales describes the learned factors for the provenance.
func (m *peakNet) scales() string {
	var b []byte
	for f, th := range m.theta {
		if f > 0 {
			b = append(b, ' ')
		}
		b = append(b, ContextFeatures[f]...)
		b = append(b, '=')
		b = strconv.AppendFloat(b, math.Exp(th), 'g', 4, 64)
	}
	return string(b)
}

// estimate returns g and the index of the binding feature.
func (m *peakNet) estimate(x []float64) (float64, int) {
	g, arg := math.Inf(1), 0
	for f, xf := range x {
		if v := xf * math.Exp(m.theta[f]); v < g {
			g, arg = v, f
		}
	}
	return g, arg
}

func bce(p, y float64) float64 {
	p = math.Min(math.Max(p, 1e-12), 1-1e-12)
	return -(y*math.Log(p) + (1-y)*math.Log(1-p))
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// loss is the mean binary cross-entropy over rows and slots, overload
// labels weighted by w.
func (m *peakNet) loss(d dataset, w float64) float64 {
	alpha := m.alpha()
	var sum float64
	for r := 0; r < d.rows; r++ {
		g, _ := m.estimate(d.x[r*d.width : (r+1)*d.width])
		for k := 0; k < m.slots; k++ {
			y := d.label(r, k)
			c := 1.0
			if y == 0 {
				c = w
			}
			sum += c * bce(sigmoid(alpha*(g/float64(k+1)-1)), y)
		}
	}
	return sum / float64(d.rows*m.slots)
}

// fit trains with Adam on shuffled mini-batches and a cosine learning rate,
// and returns the last epoch's mean training loss.
func (m *peakNet) fit(d dataset, s Settings, rng *rand.Rand, progress func(Progress)) (float64, error) {
	perm := make([]int, d.rows)
	for i := range perm {
		perm[i] = i
	}
	grad := make([]float64, m.width+1)
	start := time.Now()
	var last float64
	for epoch := 1; epoch <= s.Epochs; epoch++ {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		lr := s.LearningRate * (0.5 + 0.5*math.Cos(math.Pi*float64(epoch-1)/float64(s.Epochs)))
		var sum float64
		batches := 0
		for b := 0; b+s.BatchSize <= d.rows; b += s.BatchSize {
			clear(grad)
			alpha := m.alpha()
			var bl float64
			for _, r := range perm[b : b+s.BatchSize] {
				g, arg := m.estimate(d.x[r*d.width : (r+1)*d.width])
				var dg, dAlpha float64
				for k := 0; k < m.slots; k++ {
					q := g / float64(k+1)
					p := sigmoid(alpha * (q - 1))
					y := d.label(r, k)
					c := 1.0
					if y == 0 {
						c = s.OverloadWeight
					}
					bl += c * bce(p, y)
					dz := c * (p - y)
					dg += dz * alpha / float64(k+1)
					dAlpha += dz * (q - 1)
				}
				grad[arg] += dg * g // dg/dtheta = g for the binding feature
				grad[m.width] += dAlpha * alpha
			}
			norm := 1 / float64(s.BatchSize*m.slots)
			for i := range grad {
				grad[i] *= norm
			}
			m.adam(grad, lr)
			sum += bl * norm
			batches++
		}
		last = sum / float64(batches)
		if math.IsNaN(last) || math.IsInf(last, 0) {
			return 0, fmt.Errorf("train: loss diverged at epoch %d", epoch)
		}
		if progress != nil {
			el := time.Since(start)
			progress(Progress{Model: "processors", Epoch: epoch, Epochs: s.Epochs, Loss: last, Elapsed: el,
				Remaining: time.Duration(float64(el) / float64(epoch) * float64(s.Epochs-epoch))})
		}
	}
	return last, nil
}

func (m *peakNet) adam(grad []float64, lr float64) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	m.t++
	c1 := 1 - math.Pow(b1, float64(m.t))
	c2 := 1 - math.Pow(b2, float64(m.t))
	step := func(i int, p *float64) {
		g := grad[i]
		m.m[i] = b1*m.m[i] + (1-b1)*g
		m.v[i] = b2*m.v[i] + (1-b2)*g*g
		*p -= lr * (m.m[i] / c1) / (math.Sqrt(m.v[i]/c2) + eps)
	}
	for f := range m.theta {
		step(f, &m.theta[f])
	}
	step(m.width, &m.logAlpha)
}

// minTree lays out the exact min of the scaled fit features as ReLU layers.
// Each layer is a list of nodes, each node a weight row over the previous
// layer (inputs first); value holds, after the last layer, the weights of
// the linear read of g from the last layer's nodes.
type minTree struct {
	layers [][][]float64 // layer -> node -> weights over the previous layer
	value  []float64     // g = value . last layer
}

func (m *peakNet) tree() minTree {
	// Each pending value is a linear form over the current layer.
	prevWidth := m.width
	vals := make([][]float64, m.width)
	for f := range vals {
		vals[f] = make([]float64, prevWidth)
		vals[f][f] = math.Exp(m.theta[f])
	}
	var t minTree
	for len(vals) > 1 {
		var nodes [][]float64
		var next [][]float64
		for i := 0; i < len(vals); i += 2 {
			if i+1 == len(vals) { // odd one out: pass it through
				nodes = append(nodes, vals[i])
				next = append(next, []float64{float64(len(nodes) - 1)})
				continue
			}
			a, b := vals[i], vals[i+1]
			diff := make([]float64, prevWidth)
			for j := range diff {
				diff[j] = a[j] - b[j]
			}
			nodes = append(nodes, a, diff)
			// min(a, b) = relu(a) - relu(a - b): +1 on node P, -1 on node D
			next = append(next, []float64{float64(len(nodes) - 2), float64(len(nodes) - 1)})
		}
		t.layers = append(t.layers, nodes)
		prevWidth = len(nodes)
		vals = make([][]float64, len(next))
		for i, idx := range next {
			vals[i] = make([]float64, prevWidth)
			vals[i][int(idx[0])] = 1
			if len(idx) == 2 {
				vals[i][int(idx[1])] = -1
			}
		}
	}
	if len(t.layers) == 0 { // one feature: a single pass-through layer
		t.layers = append(t.layers, [][]float64{vals[0]})
		vals = [][]float64{{1}}
	}
	t.value = vals[0]
	return t
}

func contextNodes() []engine.Node {
	out := make([]engine.Node, len(ContextFeatures))
	for i, n := range ContextFeatures {
		out[i] = engine.Node{Name: n}
	}
	return out
}

func slotNodes(prefix string, n int, countable bool) []engine.Node {
	out := make([]engine.Node, n)
	for i := range out {
		out[i] = engine.Node{Name: prefix + strconv.Itoa(i), Countable: countable}
	}
	return out
}

func newModel(name, desc string, inputs, outputs []engine.Node, prov engine.Provenance) *engine.Model {
	eps, thr := engine.DefaultInputEpsilon, engine.DefaultOutputThreshold
	return &engine.Model{
		Format: engine.ModelFormat, Version: engine.ModelVersion, Name: name, Description: desc,
		Inputs: inputs, Outputs: outputs, Provenance: prov, InputEpsilon: &eps, OutputThreshold: &thr,
	}
}

func reluLayer(rows [][]float64) engine.Layer {
	l := engine.Layer{Activation: engine.ActivationReLU, Biases: make([]float64, len(rows))}
	for _, r := range rows {
		l.Weights = append(l.Weights, round(r))
	}
	return l
}

// outputLayer reads z_k = alpha (g/(k+1) - 1), with g = value . h(k) where
// h(k) is the part of the last hidden layer feeding output k, at offset(k).
func (m *peakNet) outputLayer(width int, value []float64, offset func(k int) int) engine.Layer {
	alpha := m.alpha()
	out := engine.Layer{Activation: engine.ActivationSigmoid, Biases: make([]float64, m.slots)}
	for k := 0; k < m.slots; k++ {
		row := make([]float64, width)
		for j, v := range value {
			row[offset(k)+j] = alpha * v / float64(k+1)
		}
		out.Weights = append(out.Weights, round(row))
		out.Biases[k] = -round([]float64{alpha})[0]
	}
	return out
}

func (m *peakNet) exportCapacity(prov engine.Provenance) *engine.Model {
	md := newModel(engine.BuiltinCapacity,
		"Second-host capacity processor: reads the host's real usage and holds data at output safe_k when the host can safely run k+1 replicas. A_out is the safe replica count.",
		contextNodes(), slotNodes("safe_", m.slots, true), prov)
	t := m.tree()
	for _, nodes := range t.layers {
		md.Layers = append(md.Layers, reluLayer(nodes))
	}
	last := len(t.layers[len(t.layers)-1])
	md.Layers = append(md.Layers, m.outputLayer(last, t.value, func(int) int { return 0 }))
	return md
}

// exportAdmission builds the slot-structured network: the inputs are the
// slots then the context; every hidden layer holds the min tree's nodes
// (reading the context) followed by one pass-through node per slot; a last
// hidden layer holds one node per slot, relu(g + slotWeight x slot_k), and
// output admit_k reads only that node.
func (m *peakNet) exportAdmission(prov engine.Provenance) *engine.Model {
	S := m.slots
	md := newModel(engine.BuiltinAdmission,
		"First-host admission processor: slot_k holds the expected demand of the k-th replica that wants to run; the slot starts an activated branch when the processor admits that replica given the host's real usage. A_in is the number of admitted replicas.",
		append(slotNodes(engine.SlotPrefix, S, true), contextNodes()...), slotNodes("admit_", S, false), prov)
	t := m.tree()
	// Layer 0's previous layer is the inputs: slots at 0..S-1, context at S...
	prevTrunk, prevSlot := S, 0 // offsets of trunk and slot nodes in the previous layer
	prevWidth := S + m.width
	for _, nodes := range t.layers {
		width := len(nodes) + S
		var rows [][]float64
		for _, n := range nodes {
			row := make([]float64, prevWidth)
			copy(row[prevTrunk:], n)
			rows = append(rows, row)
		}
		for k := 0; k < S; k++ {
			row := make([]float64, prevWidth)
			row[prevSlot+k] = 1
			rows = append(rows, row)
		}
		md.Layers = append(md.Layers, reluLayer(rows))
		prevTrunk, prevSlot, prevWidth = 0, len(nodes), width
	}
	// The slot blocks: relu(g + slotWeight x pass_k).
	var rows [][]float64
	for k := 0; k < S; k++ {
		row := make([]float64, prevWidth)
		copy(row[prevTrunk:], t.value)
		row[prevSlot+k] = slotWeight
		rows = append(rows, row)
	}
	md.Layers = append(md.Layers, reluLayer(rows))
	md.Layers = append(md.Layers, m.outputLayer(S, []float64{1}, func(k int) int { return k }))
	return md
}

// round keeps 9 significant digits, so model files stay readable and
// diff-friendly; signs (and so which edges carry data) are kept.
func round(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		if x == 0 {
			continue
		}
		r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 9, 64), 64)
		out[i] = r
	}
	return out
}
