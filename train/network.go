package train

import (
	"fmt"
	"math"
	"strconv"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// Statistic is one window statistic the learned estimate reads, in its two
// forms: Usage, a per-replica share of the host (the admission processor's
// input), and Fit, replicas of that size that fit (1 / usage, the capacity
// processor's input).
type Statistic struct {
	Name       string
	Usage, Fit string
}

// Statistics are every statistic the trainer can use.
var Statistics = []Statistic{
	{"mean", engine.FeatCPUReplicaMean, engine.FeatCPUFitMean},
	{"mean_last5", engine.FeatCPUReplicaMeanLast5, engine.FeatCPUFitMeanLast5},
	{"mean_std2", engine.FeatCPUReplicaMeanStd2, engine.FeatCPUFitMeanStd2},
	{"mean_std3", engine.FeatCPUReplicaMeanStd3, engine.FeatCPUFitMeanStd3},
	{"p95", engine.FeatCPUReplicaP95, engine.FeatCPUFitP95},
	{"p99", engine.FeatCPUReplicaP99, engine.FeatCPUFitP99},
	{"max", engine.FeatCPUReplicaMax, engine.FeatCPUFitMax},
	{"max_last5", engine.FeatCPUReplicaMaxLast5, engine.FeatCPUFitMaxLast5},
	{"max_last20", engine.FeatCPUReplicaMaxLast20, engine.FeatCPUFitMaxLast20},
}

// statisticsByName returns the named statistics, in the given order.
func statisticsByName(names []string) ([]Statistic, error) {
	out := make([]Statistic, 0, len(names))
	for _, n := range names {
		found := false
		for _, s := range Statistics {
			if s.Name == n {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown statistic %q", n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no statistics")
	}
	return out, nil
}

// estimate is the learned estimate both processors are built on, a
// max-of-predictors peak predictor (Bashir et al., EuroSys 2021): a
// replica's predicted peak share is p = max_f u_f / c_f over the window
// statistics u (c_f = exp(theta_f) learned), and in fit space the replicas
// that fit are g = 1/p = min_f c_f x fit_f. Alpha is the slope of the
// sigmoid outputs.
type estimate struct {
	theta    []float64
	logAlpha float64
	adamState
}

func newEstimate(width int, init []float64) *estimate {
	e := &estimate{theta: make([]float64, width), logAlpha: math.Log(3)}
	copy(e.theta, init)
	e.adamState = newAdam(width + 1)
	return e
}

func (e *estimate) alpha() float64 { return math.Exp(e.logAlpha) }

// peak returns p = max_f u_f / c_f and the binding statistic.
func (e *estimate) peak(u []float64) (float64, int) {
	p, arg := 0.0, 0
	for f, uf := range u {
		if v := uf * math.Exp(-e.theta[f]); v > p || f == 0 {
			p, arg = v, f
		}
	}
	return p, arg
}

// fitCount returns g = min_f c_f x fit_f and the binding statistic.
func (e *estimate) fitCount(x []float64) (float64, int) {
	g, arg := math.Inf(1), 0
	for f, xf := range x {
		if v := xf * math.Exp(e.theta[f]); v < g {
			g, arg = v, f
		}
	}
	return g, arg
}

// params are the estimate's parameters in Adam's order.
func (e *estimate) params() []*float64 {
	out := make([]*float64, 0, len(e.theta)+1)
	for f := range e.theta {
		out = append(out, &e.theta[f])
	}
	return append(out, &e.logAlpha)
}

// scales describes the learned factors for the provenance.
func (e *estimate) scales(stats []Statistic) string {
	var b []byte
	for f, th := range e.theta {
		if f > 0 {
			b = append(b, ' ')
		}
		b = append(b, stats[f].Name...)
		b = append(b, '=')
		b = strconv.AppendFloat(b, math.Exp(th), 'g', 4, 64)
	}
	return string(b)
}

type adamState struct {
	m, v []float64
	t    int
}

func newAdam(n int) adamState { return adamState{m: make([]float64, n), v: make([]float64, n)} }

func (a *adamState) step(params []*float64, grad []float64, lr float64) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	a.t++
	c1 := 1 - math.Pow(b1, float64(a.t))
	c2 := 1 - math.Pow(b2, float64(a.t))
	for i, p := range params {
		g := grad[i]
		a.m[i] = b1*a.m[i] + (1-b1)*g
		a.v[i] = b2*a.v[i] + (1-b2)*g*g
		*p -= lr * (a.m[i] / c1) / (math.Sqrt(a.v[i]/c2) + eps)
	}
}

func bce(p, y float64) float64 {
	p = math.Min(math.Max(p, 1e-12), 1-1e-12)
	return -(y*math.Log(p) + (1-y)*math.Log(1-p))
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// Network constants. They make the exported networks compute the estimate
// exactly in the engine's floating point, and keep the activated-branch
// semantics exact where they must be (memory is a hard limit).
const (
	// bigM gates costs by a slot's running flag: relu(x - bigM) = 0 for any
	// x the engine feeds (shares are capped at engine.MaxShare, and the
	// learned factors are kept within maxScale of 1).
	bigM = 1e4
	// gateScale and chainWeight make the admission memory gate hard: the
	// gate node of slot k is relu(chainWeight x slot_k + gateScale x
	// (1 - memMargin - cumulative memory)), which holds data only when the
	// cumulative memory share through slot k is below 1.
	gateScale   = 1e6
	chainWeight = 1e-3
	memMargin   = 1e-6
	// gateRead is the weight of the gate into its output: large enough to
	// carry data, small enough (gateRead x the gate <= 1e-6) not to move the
	// output's decision.
	gateRead = 1e-12
	// capKnee keeps a capacity output dead (below any sensible threshold)
	// when its slack is below -capKnee; memKnee is the memory slope that
	// makes a capacity output's memory test hard.
	capKnee = 30
	memKnee = 1e6
	// maxScale bounds every learned factor to [1/maxScale, maxScale].
	maxScale = 20
)

// tree lays out the exact minimum (fit space) or maximum (usage space) of
// the scaled statistics as ReLU layers: min(a, b) = relu(a) - relu(a - b)
// and max(a, b) = relu(a) + relu(b - a) for a, b >= 0, pairwise, one layer
// per halving. layers[l][j] is node j's weights over the previous layer
// (the statistics for l = 0); value reads the result linearly from the last
// layer.
type tree struct {
	layers [][][]float64
	value  []float64
}

func buildTree(scale []float64, isMax bool) tree {
	prevWidth := len(scale)
	vals := make([][]float64, len(scale))
	for f := range vals {
		vals[f] = make([]float64, prevWidth)
		vals[f][f] = scale[f]
	}
	sign := -1.0
	if isMax {
		sign = 1
	}
	var t tree
	for len(vals) > 1 {
		var nodes [][]float64
		var next [][2]int // node index pairs (second -1 when none)
		for i := 0; i < len(vals); i += 2 {
			if i+1 == len(vals) {
				nodes = append(nodes, vals[i])
				next = append(next, [2]int{len(nodes) - 1, -1})
				continue
			}
			a, b := vals[i], vals[i+1]
			diff := make([]float64, prevWidth)
			for j := range diff {
				if isMax {
					diff[j] = b[j] - a[j]
				} else {
					diff[j] = a[j] - b[j]
				}
			}
			nodes = append(nodes, a, diff)
			next = append(next, [2]int{len(nodes) - 2, len(nodes) - 1})
		}
		t.layers = append(t.layers, nodes)
		prevWidth = len(nodes)
		vals = make([][]float64, len(next))
		for i, idx := range next {
			vals[i] = make([]float64, prevWidth)
			vals[i][idx[0]] = 1
			if idx[1] >= 0 {
				vals[i][idx[1]] = sign
			}
		}
	}
	if len(t.layers) == 0 { // one statistic: a single pass-through layer
		t.layers = append(t.layers, [][]float64{vals[0]})
		vals = [][]float64{{1}}
	}
	t.value = vals[0]
	return t
}

// layerBuilder collects a sparse layer's edges and biases.
type layerBuilder struct {
	act    string
	edges  []engine.Edge
	biases []float64
}

// node adds a node with the given bias and returns its index.
func (b *layerBuilder) node(bias float64) int {
	b.biases = append(b.biases, round1(bias))
	return len(b.biases) - 1
}

// edge adds from -> to with weight w (nothing for w = 0).
func (b *layerBuilder) edge(to, from int, w float64) {
	if w = round1(w); w != 0 {
		b.edges = append(b.edges, engine.Edge{To: to, From: from, W: w})
	}
}

func (b *layerBuilder) layer() engine.Layer {
	return engine.SparseLayer(b.act, b.edges, b.biases)
}

// round1 keeps 12 significant digits, so model files stay readable; signs
// (and so which edges carry data) are kept.
func round1(x float64) float64 {
	if x == 0 {
		return 0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	return r
}

func newModel(name, desc string, inputs, outputs []engine.Node, prov engine.Provenance) *engine.Model {
	eps, thr := engine.DefaultInputEpsilon, engine.DefaultOutputThreshold
	return &engine.Model{
		Format: engine.ModelFormat, Version: engine.ModelVersion, Name: name, Description: desc,
		Inputs: inputs, Outputs: outputs, Provenance: prov, InputEpsilon: &eps, OutputThreshold: &thr,
	}
}

func namedNodes(names []string, countable bool) []engine.Node {
	out := make([]engine.Node, len(names))
	for i, n := range names {
		out[i] = engine.Node{Name: n, Countable: countable}
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

// exportCapacity builds the second host's capacity processor. Inputs: the
// fit statistics, then mem_fit. A trunk computes g = min_f c_f fit_f
// exactly (and carries mem_fit along); then, per output k,
//
//	a_k = alpha (g/(k+1) - 1)                       (CPU: soft, the threshold moves it)
//	b_k = memKnee (mem_fit/(k+1) - 1) - capKnee     (memory: hard)
//	d_k = relu(a_k - b_k)
//	z_k = relu(capKnee + a_k - d_k) = relu(capKnee + min(a_k, b_k))
//	safe_k = sigmoid(z_k - capKnee)
//
// so safe_k is sigmoid(a_k) while memory fits (and is not nearly binding),
// and z_k, on every branch into safe_k, is dead as soon as k+1 replicas do
// not fit by memory with room to spare (an exact fit is refused): output k
// then ends no activated branch, whatever the output threshold. Branches run fit statistic -> trunk -> z_k -> safe_k.
func exportCapacity(e *estimate, stats []Statistic, slots int, prov engine.Provenance) *engine.Model {
	F := len(stats)
	inputs := make([]string, 0, F+1)
	for _, s := range stats {
		inputs = append(inputs, s.Fit)
	}
	inputs = append(inputs, engine.FeatMemFit)
	md := newModel(engine.BuiltinCapacity,
		"Second-host capacity processor: reads the host's real usage and holds data at output safe_k when the host can safely run k+1 replicas, by CPU (the learned peak estimate) and by memory (the window's peak, a hard limit). A_out is the safe replica count.",
		namedNodes(inputs, false), slotNodes("safe_", slots, true), prov)
	scale := make([]float64, F)
	for f := range scale {
		scale[f] = math.Exp(e.theta[f])
	}
	t := buildTree(scale, false)
	alpha := e.alpha()
	memIn := F // index of mem_fit in the previous layer
	var trunkWidth int
	for l, nodes := range t.layers {
		b := layerBuilder{act: engine.ActivationReLU}
		for _, row := range nodes {
			j := b.node(0)
			for i, w := range row {
				b.edge(j, i, w)
			}
		}
		mem := b.node(0)
		b.edge(mem, memIn, 1)
		memIn = mem
		trunkWidth = len(nodes)
		md.Layers = append(md.Layers, b.layer())
		_ = l
	}
	// Layer T+1: copies of the trunk's last nodes, then d_k.
	b := layerBuilder{act: engine.ActivationReLU}
	copies := make([]int, trunkWidth)
	for j := range copies {
		copies[j] = b.node(0)
		b.edge(copies[j], j, 1)
	}
	for k := 0; k < slots; k++ {
		kk := float64(k + 1)
		// d_k = relu(a_k - b_k) = relu(alpha g/kk - alpha - memKnee mem/kk + memKnee + capKnee)
		d := b.node(-alpha + memKnee + capKnee)
		for j, v := range t.value {
			b.edge(d, j, alpha*v/kk)
		}
		b.edge(d, memIn, -memKnee/kk)
	}
	md.Layers = append(md.Layers, b.layer())
	// Layer T+2: z_k = relu(capKnee + a_k - d_k).
	z := layerBuilder{act: engine.ActivationReLU}
	for k := 0; k < slots; k++ {
		kk := float64(k + 1)
		j := z.node(capKnee - alpha)
		for c, v := range t.value {
			z.edge(j, copies[c], alpha*v/kk)
		}
		z.edge(j, trunkWidth+k, -1)
	}
	md.Layers = append(md.Layers, z.layer())
	out := layerBuilder{act: engine.ActivationSigmoid}
	for k := 0; k < slots; k++ {
		j := out.node(-capKnee)
		out.edge(j, k, 1)
	}
	md.Layers = append(md.Layers, out.layer())
	return md
}

// exportAdmission builds the first host's admission processor. Inputs: per
// slot k, slot_k (its CPU demand share; countable), slot_k_memory and
// slot_k_running; then the usage statistics. The network computes
//
//	p      = max_f u_f / c_f                 (a running replica's predicted peak)
//	cost_k = p if slot k is a running replica, else its CPU demand
//	C_k    = sum of cost_i over slots i <= k (the host's CPU with replicas 0..k)
//	M_k    = sum of memory_i over slots i <= k (its memory peak)
//	gate_k = relu(chainWeight slot_k + gateScale (1 - memMargin - M_k))
//	admit_k = sigmoid(alpha (1 - C_k) + gateRead gate_k)
//
// Slot k starts an activated branch (slot_k -> its chain -> gate_k ->
// admit_k) exactly when it holds a replica, the memory of replicas 0..k fits
// (gate_k holds data: a hard test) and the CPU test holds at the output
// threshold. Slots are a queue: a replica's own demand and the demands of
// the replicas before it only lower its output, so raising any demand never
// admits more.
func exportAdmission(e *estimate, stats []Statistic, slots int, prov engine.Provenance) *engine.Model {
	S, F := slots, len(stats)
	var inputs []engine.Node
	inputs = append(inputs, slotNodes(engine.SlotPrefix, S, true)...)
	for k := 0; k < S; k++ {
		inputs = append(inputs, engine.Node{Name: engine.SlotPrefix + strconv.Itoa(k) + engine.SlotMemorySuffix})
	}
	for k := 0; k < S; k++ {
		inputs = append(inputs, engine.Node{Name: engine.SlotPrefix + strconv.Itoa(k) + engine.SlotRunningSuffix})
	}
	for _, s := range stats {
		inputs = append(inputs, engine.Node{Name: s.Usage})
	}
	md := newModel(engine.BuiltinAdmission,
		"First-host admission processor: the replicas that want to run form a queue of demand slots, the running ones first. slot_k holds the CPU demand of the k-th replica; it starts an activated branch when the processor admits that replica: the learned peak of the running replicas plus the demand of the new ones up to it fits the host's CPU, and their memory peak fits its memory (a hard limit). A_in is the number of admitted replicas.",
		inputs, slotNodes("admit_", S, false), prov)
	inv := make([]float64, F)
	for f := range inv {
		inv[f] = math.Exp(-e.theta[f])
	}
	t := buildTree(inv, true)
	// Offsets in the input layer.
	inSlot, inMem, inRun, inStat := 0, S, 2*S, 3*S
	// Layers 1..T: the max tree over the statistics, and per slot its
	// chain, its new-replica cost relu(slot - bigM running), its memory
	// and its running flag, carried along.
	chain, newCost, mem, run := make([]int, S), make([]int, S), make([]int, S), make([]int, S)
	treeOff := 0
	for l, nodes := range t.layers {
		b := layerBuilder{act: engine.ActivationReLU}
		for _, row := range nodes {
			j := b.node(0)
			for i, w := range row {
				from := i + inStat
				if l > 0 {
					from = i + treeOff
				}
				b.edge(j, from, w)
			}
		}
		nc, nn, nm, nr := make([]int, S), make([]int, S), make([]int, S), make([]int, S)
		for k := 0; k < S; k++ {
			nc[k] = b.node(0)
			nn[k] = b.node(0)
			nm[k] = b.node(0)
			nr[k] = b.node(0)
			if l == 0 {
				b.edge(nc[k], inSlot+k, 1)
				b.edge(nn[k], inSlot+k, 1)
				b.edge(nn[k], inRun+k, -bigM)
				b.edge(nm[k], inMem+k, 1)
				b.edge(nr[k], inRun+k, 1)
			} else {
				b.edge(nc[k], chain[k], 1)
				b.edge(nn[k], newCost[k], 1)
				b.edge(nm[k], mem[k], 1)
				b.edge(nr[k], run[k], 1)
			}
		}
		chain, newCost, mem, run = nc, nn, nm, nr
		treeOff = 0
		md.Layers = append(md.Layers, b.layer())
	}
	// Layer T+1: per slot its running cost relu(p + bigM running - bigM),
	// its new cost carried, and its memory gate.
	b := layerBuilder{act: engine.ActivationReLU}
	runCost, cost, gate := make([]int, S), make([]int, S), make([]int, S)
	for k := 0; k < S; k++ {
		runCost[k] = b.node(-bigM)
		for j, v := range t.value {
			b.edge(runCost[k], j, v)
		}
		b.edge(runCost[k], run[k], bigM)
		cost[k] = b.node(0)
		b.edge(cost[k], newCost[k], 1)
		gate[k] = b.node(gateScale * (1 - memMargin))
		b.edge(gate[k], chain[k], chainWeight)
		for i := 0; i <= k; i++ {
			b.edge(gate[k], mem[i], -gateScale)
		}
	}
	md.Layers = append(md.Layers, b.layer())
	alpha := e.alpha()
	out := layerBuilder{act: engine.ActivationSigmoid}
	for k := 0; k < S; k++ {
		j := out.node(alpha)
		for i := 0; i <= k; i++ {
			out.edge(j, runCost[i], -alpha)
			out.edge(j, cost[i], -alpha)
		}
		out.edge(j, gate[k], gateRead)
	}
	md.Layers = append(md.Layers, out.layer())
	return md
}
