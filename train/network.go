package train

import (
	"fmt"
	"math"
	"strconv"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// Statistic is one window statistic the learned estimate reads: Usage is
// the engine feature, a per-replica share of the host.
type Statistic struct {
	Name  string
	Usage string
}

// Statistics are every statistic the trainer can use.
var Statistics = []Statistic{
	{"mean", engine.FeatCPUReplicaMean},
	{"last", engine.FeatCPUReplicaLast},
	{"mean_last5", engine.FeatCPUReplicaMeanLast5},
	{"mean_std2", engine.FeatCPUReplicaMeanStd2},
	{"mean_std3", engine.FeatCPUReplicaMeanStd3},
	{"p95", engine.FeatCPUReplicaP95},
	{"p99", engine.FeatCPUReplicaP99},
	{"max", engine.FeatCPUReplicaMax},
	{"max_last5", engine.FeatCPUReplicaMaxLast5},
	{"max_last20", engine.FeatCPUReplicaMaxLast20},
	{"std_last20", engine.FeatCPUReplicaStdLast20},
	{"std_last5", engine.FeatCPUReplicaStdLast5},
	{"std_last60", engine.FeatCPUReplicaStdLast60},
	{"rise_max", engine.FeatCPUReplicaRiseMax},
	{"rise_max_last20", engine.FeatCPUReplicaRiseMaxLast20},
	{"rise5_max", engine.FeatCPUReplicaRise5Max},
	{"max_mean5", engine.FeatCPUReplicaMaxMean5},
	{"max_mean20", engine.FeatCPUReplicaMaxMean20},
	{"trend_up", engine.FeatCPUReplicaTrendUp},
	{"trend_down", engine.FeatCPUReplicaTrendDown},
	{"level_day_sin", engine.FeatCPULevelDaySin},
	{"level_day_cos", engine.FeatCPULevelDayCos},
}

// canFall are the statistics a rise of one sample can lower, with why:
// the monotone trunk does not read them. Every other statistic is a mean,
// an order statistic or a maximum of the samples (the daily-cycle ones the
// recent mean times a factor of the time of day), which no rise lowers.
var canFall = map[string]string{
	"trend_up":        "a rise early in the window flattens the trend",
	"trend_down":      "a rise late in the window flattens the fall",
	"mean_std2":       "a sample below the mean that rises narrows the spread",
	"mean_std3":       "a sample below the mean that rises narrows the spread",
	"std_last20":      "a sample below the recent mean that rises narrows the spread",
	"std_last5":       "a sample below the recent mean that rises narrows the spread",
	"std_last60":      "a sample below the recent mean that rises narrows the spread",
	"rise_max":        "a sample that rises shrinks the rise to the sample after it",
	"rise_max_last20": "a sample that rises shrinks the rise to the sample after it",
	"rise5_max":       "a sample that rises shrinks the rise to the sample five after it",
}

// statisticsByName returns the named statistics, in the given order.
func statisticsByName(names []string) ([]Statistic, error) {
	out := make([]Statistic, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return nil, fmt.Errorf("statistic %q named twice", n)
		}
		seen[n] = true
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
// in the engine's floating point (to within about 1e-8 of the host in a
// queue's cost, the peak bound's gates being the largest constants), and keep the activated-branch
// semantics exact where they must be (memory is a hard limit).
const (
	// bigM gates costs by a slot's running flag: relu(x - bigM) = 0 for any
	// x the engine feeds (shares are capped at engine.MaxShare, and the
	// learned factors are kept within maxScale of 1).
	bigM = 1e4
	// gateScale and chainWeight make the admission memory gate hard: the
	// gate node of slot k is relu(chainWeight x slot_k + gateScale x
	// (1 - memHeadroom - memMargin - cumulative memory)), which holds data
	// only when the cumulative memory share through slot k is below
	// 1 - memHeadroom (0.9).
	gateScale   = 1e6
	chainWeight = 1e-3
	memMargin   = 1e-6
	// memHeadroom is the share of the host's memory room both processors
	// keep free: m replicas fit by memory when their window peak is at most
	// 1 - memHeadroom of it. Memory cannot be throttled and grows past a
	// window's peak (a window is hours; memory creeps over days), so a count
	// packed to the peak itself overloads memory at a rate no output
	// threshold can lower. 10%, the headroom operators commonly keep.
	memHeadroom = 0.1
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

// processor is what one processor learns: its trunk and the slope of its
// sigmoid outputs.
type processor struct {
	tr       trunk
	logAlpha float64
	adamState
}

func newProcessor(tr trunk) *processor {
	p := &processor{tr: tr, logAlpha: math.Log(3)}
	p.adamState = newAdam(len(p.params()))
	return p
}

func (p *processor) alpha() float64 { return math.Exp(p.logAlpha) }

func (p *processor) params() []*float64 { return append(p.tr.params(), &p.logAlpha) }

// snapshot copies the parameters (early stopping keeps the best).
func (p *processor) snapshot() []float64 {
	ps := p.params()
	out := make([]float64, len(ps))
	for i, q := range ps {
		out[i] = *q
	}
	return out
}

func (p *processor) restore(v []float64) {
	for i, q := range p.params() {
		*q = v[i]
	}
}

// peakBounded says whether the exported processors bound the workload's
// replicas' cost by growth times the window's peak (Settings.PeakGrowth):
// growth above 0 and the statistic max read.
func peakBounded(stats []Statistic, growth float64) bool {
	return growth > 0 && stats[carrierStat(stats)].Name == "max"
}

// carrierStat is the statistic whose chain carries the capacity
// processor's branches: the window's maximum when read (it holds data
// whenever the replicas used anything), else the first.
func carrierStat(stats []Statistic) int {
	for f, s := range stats {
		if s.Name == "max" {
			return f
		}
	}
	return 0
}

// trunkLayers emits the trunk's layers into md. in maps the trunk's first
// layer inputs (the statistics) to indices of the previous layer; pass are
// indices of the previous layer to carry through every trunk layer (each
// value >= 0). It returns the indices, in the last emitted layer, of a, b
// and of the carried nodes.
func trunkLayers(md *engine.Model, tr trunk, in []int, pass []int) (a, b int, carried []int) {
	layers := tr.layers()
	prevMap := in // trunk node i of the previous trunk layer -> index
	carried = pass
	for l, rows := range layers {
		lb := layerBuilder{act: engine.ActivationReLU}
		cur := make([]int, len(rows))
		for j, row := range rows {
			cur[j] = lb.node(0)
			for i, w := range row {
				lb.edge(cur[j], prevMap[i], w)
			}
		}
		next := make([]int, len(carried))
		for i, c := range carried {
			next[i] = lb.node(0)
			lb.edge(next[i], c, 1)
		}
		md.Layers = append(md.Layers, lb.layer())
		prevMap, carried = cur, next
		_ = l
	}
	return prevMap[0], prevMap[1], carried
}

// peakLayer emits the layer of the peak bound (Settings.PeakGrowth): e[m] =
// relu(m a + sqrt(m) b - m growth max) for m = 1..slots, max the node
// maxAt (the window's peak per replica), after copies of a, b and of the
// nodes in carry, which later layers read. It returns the copies' indices
// and e; e[0] is -1 (e_0 = 0 has no node).
func peakLayer(md *engine.Model, a, b int, carry []int, maxAt, slots int, growth float64) (ca, cb int, carried, e []int) {
	lb := layerBuilder{act: engine.ActivationReLU}
	ca, cb = lb.node(0), lb.node(0)
	lb.edge(ca, a, 1)
	lb.edge(cb, b, 1)
	carried = make([]int, len(carry))
	for i, c := range carry {
		carried[i] = lb.node(0)
		lb.edge(carried[i], c, 1)
	}
	e = make([]int, slots+1)
	e[0] = -1
	for m := 1; m <= slots; m++ {
		fm := float64(m)
		e[m] = lb.node(0)
		lb.edge(e[m], a, fm)
		lb.edge(e[m], b, math.Sqrt(fm))
		lb.edge(e[m], maxAt, -fm*growth)
	}
	md.Layers = append(md.Layers, lb.layer())
	return ca, cb, carried, e
}

// exportCapacity builds the second host's capacity processor. Inputs: the
// usage statistics, then mem_replica_max. A trunk computes a running
// replica's level a and dispersion b; then, for output k with m = k+1
// replicas,
//
//	A_k = alpha (1 - min(m a + sqrt(m) b, m g max))   (CPU: soft, the threshold moves it)
//	B_k = memKnee (1 - memHeadroom - m mem) - capKnee (memory: hard)
//	d_k = relu(A_k - B_k)
//	z_k = relu(capKnee + A_k - d_k + gateRead carrier) = relu(capKnee + min(A_k, B_k) + ...)
//	safe_k = sigmoid(z_k - capKnee)
//
// (g is Settings.PeakGrowth and max the window's peak per replica: m
// replicas cost at most m perfectly correlated ones at g times it; with g
// 0, or without the statistic max, A_k = alpha (1 - m a - sqrt(m) b))
// so safe_k is sigmoid(A_k) while memory fits, and z_k, on every branch
// into safe_k, is dead as soon as m replicas' memory peaks do not fit with
// room to spare: output k then ends no activated branch, whatever the
// output threshold. Branches run from the window's maximum (the carrier:
// evidence that the replicas use the host) through its chain and z_k, and,
// where the peak bound binds (e_k > 0), from the statistics through the
// trunk and e_k as well.
func exportCapacity(p *processor, stats []Statistic, slots int, growth float64, prov engine.Provenance) *engine.Model {
	F := len(stats)
	var inputs []string
	for _, s := range stats {
		inputs = append(inputs, s.Usage)
	}
	inputs = append(inputs, engine.FeatMemReplicaMax)
	md := newModel(engine.BuiltinCapacity,
		"Second-host capacity processor: reads the host's real usage and holds data at output safe_k when the host can safely run k+1 replicas, by CPU (the learned estimate of k+1 replicas' usage, soft: the output threshold is a safety margin) and by memory (k+1 replicas' memory peak must fit within 90% of the memory room: a hard limit). A_out is the safe replica count.",
		namedNodes(inputs, false), slotNodes("safe_", slots, true), prov)
	in := make([]int, F)
	for f := range in {
		in[f] = f
	}
	a, b, carried := trunkLayers(md, p.tr, in, []int{F, carrierStat(stats)})
	mem, carrier := carried[0], carried[1]
	alpha := p.alpha()
	// The peak bound (Settings.PeakGrowth): e_m is what it takes off m
	// replicas' learned cost, a layer before A_k reads it (the carrier is
	// the window's maximum).
	var e []int
	if peakBounded(stats, growth) {
		var kept []int
		a, b, kept, e = peakLayer(md, a, b, []int{mem, carrier}, carrier, slots, growth)
		mem, carrier = kept[0], kept[1]
	}
	// Copies of a, b and the carrier, then d_k (and copies of e_k).
	lb := layerBuilder{act: engine.ActivationReLU}
	ca, cb, cc := lb.node(0), lb.node(0), lb.node(0)
	lb.edge(ca, a, 1)
	lb.edge(cb, b, 1)
	lb.edge(cc, carrier, 1)
	d := make([]int, slots)
	for k := range d {
		m := float64(k + 1)
		d[k] = lb.node(alpha - memKnee*(1-memHeadroom) + capKnee)
		lb.edge(d[k], a, -alpha*m)
		lb.edge(d[k], b, -alpha*math.Sqrt(m))
		lb.edge(d[k], mem, memKnee*m)
		if e != nil {
			lb.edge(d[k], e[k+1], alpha)
		}
	}
	var ce []int // ce[k] is e_(k+1)'s copy
	if e != nil {
		ce = make([]int, slots)
		for k := range ce {
			ce[k] = lb.node(0)
			lb.edge(ce[k], e[k+1], 1)
		}
	}
	md.Layers = append(md.Layers, lb.layer())
	z := layerBuilder{act: engine.ActivationReLU}
	for k := 0; k < slots; k++ {
		m := float64(k + 1)
		j := z.node(capKnee + alpha)
		z.edge(j, ca, -alpha*m)
		z.edge(j, cb, -alpha*math.Sqrt(m))
		z.edge(j, d[k], -1)
		z.edge(j, cc, gateRead)
		if e != nil {
			z.edge(j, ce[k], alpha)
		}
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
// slot k, slot_k (its CPU demand share; countable), slot_k_memory,
// slot_k_running and slot_k_own; then the usage statistics. With a and b the trunk's
// estimate of a running replica, g Settings.PeakGrowth and max the window's
// peak per replica, the m replicas of the workload cost
//
//	R(m) = min(m a + sqrt(m) b, m g max) = m a + sqrt(m) b - e_m,  e_m = relu(m a + sqrt(m) b - m g max)
//
// (with g 0, or without the statistic max, e_m = 0 and R(m) = m a +
// sqrt(m) b), and the network computes
//
//	run_k  = R(k+1) - R(k) if slot k is a running replica, else 0
//	         (the running replicas, a prefix of the queue, sum to R(n))
//	new_k  = slot k's CPU demand if it is a new replica, else 0
//	extra_k = relu(R(k+1) - R(k) - new_k) if slot k is a new replica of the
//	          workload (slot_k_own) and slot 0 runs, else 0
//	C_k    = sum over slots i <= k of run_i + new_i + extra_i
//	         (a new replica of a workload that runs costs the larger of its
//	         demand and what it adds once running, so C_k is at least R(k+1)
//	         when slots 0..k are the workload's and slot 0 runs: admitting
//	         it never makes a replica refused at the next decision on the
//	         same usage. With nothing running, every new replica costs its
//	         demand, and replicas admitted at a demand below what they then
//	         use can be refused once they run)
//	M_k    = sum of memory_i over slots i <= k (the memory peak)
//	gate_k = relu(chainWeight slot_k + gateScale (1 - memHeadroom - memMargin - M_k))
//	admit_k = sigmoid(alpha (1 - C_k) + gateRead gate_k)
//
// R is non-decreasing in m (the smaller of two non-decreasing costs: a, b
// and max are >= 0), so every slot's cost is >= 0; each slot's run_i + new_i + extra_i is summed into
// one node a layer before the outputs, so that C_k takes one edge per slot.
// With the bound, a layer after the trunk computes e_1 .. e_S.
//
// Slot k starts an activated branch (slot_k -> its chain -> gate_k -> its
// copy -> admit_k) exactly when it holds a replica, the memory of replicas 0..k
// fits (gate_k holds data: a hard test) and the CPU test holds at the
// output threshold. Slots are a queue: a replica's own demand and the
// demands of the replicas before it only lower its output, so raising any
// demand never admits more.
func exportAdmission(p *processor, stats []Statistic, slots int, growth float64, prov engine.Provenance) *engine.Model {
	S, F := slots, len(stats)
	var inputs []engine.Node
	inputs = append(inputs, slotNodes(engine.SlotPrefix, S, true)...)
	for k := 0; k < S; k++ {
		inputs = append(inputs, engine.Node{Name: engine.SlotPrefix + strconv.Itoa(k) + engine.SlotMemorySuffix})
	}
	for k := 0; k < S; k++ {
		inputs = append(inputs, engine.Node{Name: engine.SlotPrefix + strconv.Itoa(k) + engine.SlotRunningSuffix})
	}
	for k := 0; k < S; k++ {
		inputs = append(inputs, engine.Node{Name: engine.SlotPrefix + strconv.Itoa(k) + engine.SlotOwnSuffix})
	}
	for _, s := range stats {
		inputs = append(inputs, engine.Node{Name: s.Usage})
	}
	md := newModel(engine.BuiltinAdmission,
		"First-host admission processor: the replicas that want to run form a queue of demand slots, the running ones first. slot_k holds the CPU demand of the k-th replica; it starts an activated branch when the processor admits that replica: the learned estimate of the running replicas' usage plus the new ones up to it, each at its demand and a new replica of the workload itself at no less than a running one's estimate, fits the host's CPU (soft: the output threshold is a safety margin), and their memory peak fits within 90% of its memory (a hard limit). A_in is the number of admitted replicas.",
		inputs, slotNodes("admit_", S, false), prov)
	inSlot, inMem, inRun, inOwn, inStat := 0, S, 2*S, 3*S, 4*S
	// A first layer: per slot its chain, its new-replica cost
	// relu(slot - bigM running), its memory, its running flag and its own
	// flag; and copies of the statistics for the trunk.
	lb := layerBuilder{act: engine.ActivationReLU}
	statIn := make([]int, F)
	for f := range statIn {
		statIn[f] = lb.node(0)
		lb.edge(statIn[f], inStat+f, 1)
	}
	var pass []int
	for k := 0; k < S; k++ {
		c, n, m, r, o := lb.node(0), lb.node(0), lb.node(0), lb.node(0), lb.node(0)
		lb.edge(c, inSlot+k, 1)
		lb.edge(n, inSlot+k, 1)
		lb.edge(n, inRun+k, -bigM)
		lb.edge(m, inMem+k, 1)
		lb.edge(r, inRun+k, 1)
		lb.edge(o, inOwn+k, 1)
		pass = append(pass, c, n, m, r, o)
	}
	bounded := peakBounded(stats, growth)
	if bounded { // the window's maximum, carried last
		pass = append(pass, statIn[carrierStat(stats)])
	}
	md.Layers = append(md.Layers, lb.layer())
	a, b, carried := trunkLayers(md, p.tr, statIn, pass)
	// The peak bound: e_1 .. e_S a layer after the trunk, the slots'
	// nodes carried through it (e[0] is never read: slot 0's cost takes
	// no under term).
	var e []int
	if bounded {
		a, b, carried, e = peakLayer(md, a, b, carried[:5*S], carried[5*S], S, growth)
	}
	chain := func(k int) int { return carried[5*k] }
	newCost := func(k int) int { return carried[5*k+1] }
	mem := func(k int) int { return carried[5*k+2] }
	run := func(k int) int { return carried[5*k+3] }
	own := func(k int) int { return carried[5*k+4] }
	// Costs and gates.
	g := layerBuilder{act: engine.ActivationReLU}
	runA, runB, cost, extra, gate := make([]int, S), make([]int, S), make([]int, S), make([]int, S), make([]int, S)
	// over[k] = e[k+1] and under[k] = e[k] while slot k runs (else 0):
	// a running slot's cost gives back over[k] - under[k], so that it is
	// R(k+1) - R(k).
	over, under := make([]int, S), make([]int, S)
	for k := 0; k < S; k++ {
		step := math.Sqrt(float64(k+1)) - math.Sqrt(float64(k)) // b's weight in slot k
		// The gates' constant: bigM bounds a and b (as runA and runB
		// assume), so e[m] <= m (a + b) <= 2 m bigM.
		big := bigM
		if bounded {
			big = 2 * float64(k+1) * bigM
			over[k] = g.node(-big)
			g.edge(over[k], e[k+1], 1)
			g.edge(over[k], run(k), big)
			if k > 0 {
				under[k] = g.node(-big)
				g.edge(under[k], e[k], 1)
				g.edge(under[k], run(k), big)
			}
		}
		// A new replica of the workload (own) while it runs (slot 0 is
		// running) costs at least what it adds once it runs: extra_k =
		// relu(R(k+1) - R(k) - demand_k) for such a slot; 0 for a running
		// one, a queued replica of its own size, or when nothing runs yet
		// (slot 0 is new only then).
		if k > 0 {
			extra[k] = g.node(-2 * big)
			g.edge(extra[k], a, 1)
			g.edge(extra[k], b, step)
			g.edge(extra[k], newCost(k), -1)
			g.edge(extra[k], own(k), big)
			g.edge(extra[k], run(0), big)
			if bounded {
				g.edge(extra[k], e[k+1], -1)
				g.edge(extra[k], e[k], 1)
			}
		}
		runA[k] = g.node(-bigM)
		g.edge(runA[k], a, 1)
		g.edge(runA[k], run(k), bigM)
		runB[k] = g.node(-bigM)
		g.edge(runB[k], b, step)
		g.edge(runB[k], run(k), bigM)
		cost[k] = g.node(0)
		g.edge(cost[k], newCost(k), 1)
		gate[k] = g.node(gateScale * (1 - memHeadroom - memMargin))
		g.edge(gate[k], chain(k), chainWeight)
		for i := 0; i <= k; i++ {
			g.edge(gate[k], mem(i), -gateScale)
		}
	}
	md.Layers = append(md.Layers, g.layer())
	// Each slot's cost as one node (the four terms are >= 0, so the ReLU
	// of their sum is the sum), so that admit_k reads one edge per slot
	// before it rather than four; the gates carried alongside.
	h := layerBuilder{act: engine.ActivationReLU}
	slotCost, gateIn := make([]int, S), make([]int, S)
	for k := 0; k < S; k++ {
		slotCost[k] = h.node(0)
		h.edge(slotCost[k], runA[k], 1)
		h.edge(slotCost[k], runB[k], 1)
		h.edge(slotCost[k], cost[k], 1)
		if k > 0 {
			h.edge(slotCost[k], extra[k], 1)
		}
		if bounded {
			h.edge(slotCost[k], over[k], -1)
			if k > 0 {
				h.edge(slotCost[k], under[k], 1)
			}
		}
		gateIn[k] = h.node(0)
		h.edge(gateIn[k], gate[k], 1)
	}
	md.Layers = append(md.Layers, h.layer())
	alpha := p.alpha()
	out := layerBuilder{act: engine.ActivationSigmoid}
	for k := 0; k < S; k++ {
		j := out.node(alpha)
		for i := 0; i <= k; i++ {
			out.edge(j, slotCost[i], -alpha)
		}
		out.edge(j, gateIn[k], gateRead)
	}
	md.Layers = append(md.Layers, out.layer())
	return md
}
