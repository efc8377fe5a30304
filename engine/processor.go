package engine

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

type activationKind uint8

const (
	actReLU activationKind = iota
	actSigmoid
	actIdentity
	actTanh
)

func parseActivation(s string) activationKind {
	switch s {
	case ActivationSigmoid:
		return actSigmoid
	case ActivationIdentity:
		return actIdentity
	case ActivationTanh:
		return actTanh
	default:
		return actReLU
	}
}

// Processor is a validated model compiled for repeated analysis. It is
// immutable and safe for concurrent use; each goroutine brings its own
// Workspace.
type Processor struct {
	model  *Model
	digest string
	eps    float64
	thr    float64
	layers []compiledLayer
	// indices of the countable input and output nodes
	countableIn  []int
	countableOut []int
	inputIndex   map[string]int
	features     featureMap
	featuresErr  error // why the inputs cannot be read from an observation
	nodeNames    [][]string
	// pool holds decideWork scratch spaces for Decide.
	pool sync.Pool
}

type compiledLayer struct {
	in, out int
	act     activationKind
	w       blas64.General // out x in, row-major: w.Data[v*in+u] is u -> v
	b       []float64
	words   int      // 64-bit words in a bitset over this layer's nodes
	pos     []uint64 // pos[u*words:(u+1)*words]: targets v with w(u,v) > 0
	neg     []uint64 // neg[u*words:(u+1)*words]: targets v with w(u,v) < 0
	// logAbsW[v*in+u] = log|w(u,v)|, for the strongest-branch search.
	logAbsW []float64
	// live[u] and live[in+u]: the words of pos and neg that hold a target
	// of u (the others are all zero and need no visit); trimmed when that
	// saves visiting at least half of the words.
	live    []wordRange
	trimmed bool
	// A layer with few edges also keeps them in compressed sparse columns
	// and its forward pass reads only the columns of nonzero inputs (a
	// dense BLAS product otherwise). sb is the bias with -0 read as +0,
	// which both products start from.
	sparse bool
	colPtr []int32 // edges from node u: colPtr[u]..colPtr[u+1]
	rowIdx []int32
	vals   []float64
	sb     []float64
	// blocks: for a dense layer, the columns each block of four rows
	// reads (the rows 4i to 4i+4, the last block the rows left) and the
	// end of the run of blocks from it that read the same columns (see
	// denseRows).
	blocks []denseBlock
	// chain: for a dense layer whose rows mostly extend the row before
	// (indexChain), each row's lanes as the lane kernel sums them: lane
	// 2v+k of row v (k 0 for the even columns, 1 for the odd ones) starts
	// from the same lane of row v-1 or from +0 and adds the terms
	// chainCol, chainW[run.lo:run.hi] in column order. Nil elsewhere.
	chain    []laneRun
	chainCol []int32
	chainW   []float64
	// The same edges by target (compressed sparse rows, sources in
	// ascending order; the weights for sparse layers only), for a Sweeper
	// that computes a few nodes again; scanWords is the bitset words a
	// node's live targets span, on average.
	rowPtr    []int32 // edges into node v: rowPtr[v]..rowPtr[v+1]
	colIdx    []int32
	rowVal    []float64
	scanWords float64
}

// wordRange is a half-open range of bitset words.
type wordRange struct{ lo, hi int32 }

// denseBlock is what a block of a dense layer's rows reads: its product
// reads the columns lo to hi (none when lo == hi), and the blocks up to
// the row end read the same.
type denseBlock struct{ lo, hi, end int32 }

// laneRun is one lane of a row of a chained dense layer: from the row
// before's lane (prev) or from +0, then the terms lo to hi.
type laneRun struct {
	prev   bool
	lo, hi int32
}

// chainShare is the most terms a chained dense layer's rows may add, as a
// share of its nonzero weights, for a Sweeper to compute its rows by
// extending each row's lanes from the row before's (indexChain).
const chainShare = 0.25

// sparseDensity is the share of nonzero weights below which a layer's
// forward pass uses its sparse columns instead of a dense product.
const sparseDensity = 0.15

func (cl *compiledLayer) compress() {
	cl.sb = make([]float64, cl.out)
	for v, b := range cl.b {
		cl.sb[v] = b + 0 // -0 + 0 = +0
	}
	nz := 0
	for _, w := range cl.w.Data {
		if w != 0 {
			nz++
		}
	}
	if float64(nz) >= sparseDensity*float64(len(cl.w.Data)) {
		cl.indexBlocks()
		cl.indexChain(chainShare)
		return
	}
	cl.sparse = true
	cl.colPtr = make([]int32, cl.in+1)
	cl.rowIdx = make([]int32, 0, nz)
	cl.vals = make([]float64, 0, nz)
	for u := 0; u < cl.in; u++ {
		for v := 0; v < cl.out; v++ {
			if w := cl.w.Data[v*cl.in+u]; w != 0 {
				cl.rowIdx = append(cl.rowIdx, int32(v))
				cl.vals = append(cl.vals, w)
			}
		}
		cl.colPtr[u+1] = int32(len(cl.rowIdx))
	}
}

// indexBlocks finds the columns each block of four rows of a dense layer
// reads: from the first that holds a nonzero weight in the block, rounded
// down to an even column, to the last, rounded up to an even end unless
// that passes the layer's end.
func (cl *compiledLayer) indexBlocks() {
	cl.blocks = make([]denseBlock, (cl.out+3)/4)
	for i := range cl.blocks {
		lo, hi := cl.in, 0
		for v := 4 * i; v < min(4*i+4, cl.out); v++ {
			for u, w := range cl.w.Data[v*cl.in : (v+1)*cl.in] {
				if w != 0 {
					lo, hi = min(lo, u), max(hi, u+1)
				}
			}
		}
		if hi == 0 {
			lo = 0
		}
		cl.blocks[i] = denseBlock{lo: int32(lo &^ 1), hi: int32(min((hi+1)&^1, cl.in))}
	}
	end := int32(cl.out)
	for i := len(cl.blocks) - 1; i >= 0; i-- {
		if i+1 < len(cl.blocks) && (cl.blocks[i].lo != cl.blocks[i+1].lo || cl.blocks[i].hi != cl.blocks[i+1].hi) {
			end = int32(4 * (i + 1))
		}
		cl.blocks[i].end = end
	}
}

// indexChain lays out a dense layer's rows as chains of lanes, when the
// lane kernel sums its product (laneKernel) and the terms its rows add to
// the row before's lanes are at most maxShare of its nonzero weights
// (chain stays nil otherwise).
//
// The lane kernel sums a row's even columns in one lane and its odd ones
// in another, each in column order from +0, and its value is its bias
// plus the sum of the two lanes (with the inputs even in number: an odd
// last column is added at another point). A term of a zero weight, ±0 on
// a finite input, leaves a sum from +0 as it was (denseRows), so a lane is
// the sum of its nonzero weights' terms alone; and when the nonzero
// weights of a row's lane are those of the row before's, the same values
// in the same columns, then others past them, the lane is the row
// before's plus those others' terms, bit for bit. A Sweeper keeps each
// row's lanes and computes a run of rows from the lanes of the row before
// it (chainRows): in a layer whose rows read a growing prefix of its
// inputs, as the admission processor's output layer does, a row then
// costs a term or two instead of a dot product over its prefix.
func (cl *compiledLayer) indexChain(maxShare float64) {
	cl.chain, cl.chainCol, cl.chainW = nil, nil, nil
	if !laneKernel || cl.sparse || cl.in%2 != 0 {
		return
	}
	nz := 0
	for _, w := range cl.w.Data {
		if w != 0 {
			nz++
		}
	}
	chain := make([]laneRun, 2*cl.out)
	var cols []int32
	var ws []float64
	// prevCols, prevW: the nonzero weights of the row before, by lane
	var prevCols, curCols [2][]int32
	var prevW, curW [2][]float64
	for v := 0; v < cl.out; v++ {
		for k := range 2 {
			curCols[k], curW[k] = curCols[k][:0], curW[k][:0]
		}
		for u, w := range cl.w.Data[v*cl.in : (v+1)*cl.in] {
			if w != 0 {
				curCols[u%2] = append(curCols[u%2], int32(u))
				curW[u%2] = append(curW[u%2], w)
			}
		}
		for k := range 2 {
			from := 0
			if n := len(prevCols[k]); v > 0 && n > 0 && n <= len(curCols[k]) && extends(prevCols[k], prevW[k], curCols[k][:n], curW[k][:n]) {
				from = n
			}
			run := laneRun{prev: from > 0, lo: int32(len(cols))}
			cols = append(cols, curCols[k][from:]...)
			ws = append(ws, curW[k][from:]...)
			run.hi = int32(len(cols))
			chain[2*v+k] = run
			if len(cols) > int(maxShare*float64(nz)) {
				return
			}
		}
		prevCols, curCols = curCols, prevCols
		prevW, curW = curW, prevW
	}
	cl.chain, cl.chainCol, cl.chainW = chain, cols, ws
}

// extends reports whether the columns and weights b are a's, bit for bit.
func extends(aCols []int32, aW []float64, bCols []int32, bW []float64) bool {
	for i := range aCols {
		if aCols[i] != bCols[i] || math.Float64bits(aW[i]) != math.Float64bits(bW[i]) {
			return false
		}
	}
	return true
}

// chainRows sets y = W x + b in rows r0 to r1 of a chained dense layer
// (indexChain), x finite, each row bitwise what the whole product gives
// it, from lanes, each row's two lane sums: those of the rows before r0
// must be x's (as chainRows or a whole computation with lanes left them),
// and those of rows r0 to r1 are set.
func (cl *compiledLayer) chainRows(x, y, lanes []float64, r0, r1 int) {
	for v := r0; v < r1; v++ {
		var sum [2]float64
		for k := range 2 {
			run := cl.chain[2*v+k]
			s := 0.0
			if run.prev {
				s = lanes[2*(v-1)+k]
			}
			for i := run.lo; i < run.hi; i++ {
				s += float64(cl.chainW[i] * x[cl.chainCol[i]]) // no fused multiply-add: the kernel's MULPD, ADDPD
			}
			lanes[2*v+k] = s
			sum[k] = s
		}
		y[v] = cl.sb[v] + (sum[0] + sum[1])
	}
}

// indexRows lists each node's sources (rowPtr, colIdx; and the weights,
// rowVal, for a sparse layer) and the words a node's live-target test reads
// on average (scanWords). Call it after compress.
func (cl *compiledLayer) indexRows() {
	cl.rowPtr = make([]int32, cl.out+1)
	for v := 0; v < cl.out; v++ {
		for u, w := range cl.w.Data[v*cl.in : (v+1)*cl.in] {
			if w != 0 {
				cl.colIdx = append(cl.colIdx, int32(u))
				if cl.sparse {
					cl.rowVal = append(cl.rowVal, w)
				}
			}
		}
		cl.rowPtr[v+1] = int32(len(cl.colIdx))
	}
	words := 0
	for u := 0; u < cl.in; u++ {
		if cl.trimmed {
			words += int(cl.live[u].hi-cl.live[u].lo) + int(cl.live[cl.in+u].hi-cl.live[cl.in+u].lo)
		} else {
			words += 2 * cl.words
		}
	}
	cl.scanWords = float64(words) / float64(2*max(cl.in, 1))
}

// row is node v's value before its activation, summed as product sums it:
// the bias, then each nonzero input's term in input order (sparse layers
// only).
func (cl *compiledLayer) row(x []float64, v int) float64 {
	y := cl.sb[v]
	for k := cl.rowPtr[v]; k < cl.rowPtr[v+1]; k++ {
		if xu := x[cl.colIdx[k]]; xu != 0 {
			y += cl.rowVal[k] * xu
		}
	}
	return y
}

// product sets y = W x + b, a zero weight adding nothing (no edge), a bias
// of -0 read as +0. A sparse layer adds each nonzero input's column in
// input order, so every y[v] sums the same terms in the same order as a
// row-by-row product would: the same value (a zero input's terms are
// zeros, and adding a zero to a sum that starts at +0 changes nothing). A
// dense layer is a BLAS product (denseRows), but for an input that
// overflowed to ±Inf or is NaN, where the BLAS product's 0 × Inf or 0 × NaN
// would be NaN.
func (cl *compiledLayer) product(x, y []float64) {
	if cl.sparse {
		copy(y, cl.sb)
		for u, xu := range x {
			if xu == 0 {
				continue
			}
			for k := cl.colPtr[u]; k < cl.colPtr[u+1]; k++ {
				y[cl.rowIdx[k]] += cl.vals[k] * xu
			}
		}
		return
	}
	cl.denseRows(x, y, 0, cl.out, !finite(x))
}

// finite reports whether every x is finite.
func finite(x []float64) bool {
	for _, v := range x {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return false
		}
	}
	return true
}

// denseRows sets y = W x + b, for a dense layer, in at least rows r0 to r1
// (inf: x holds ±Inf or NaN), each row bitwise what the whole product
// gives it, and returns the rows it set. The product is gonum's own, not
// the BLAS registered with blas64, whose blocks are what the rows are
// widened to.
//
// gonum's product computes the rows in blocks of four, then two, then
// one, with a kernel for each kind of block; a row's sum is its own, but
// the order of its terms is its kernel's (on amd64 the one-row kernel adds
// the last term at another point when the inputs are odd in number). The
// rows set are widened to start at a multiple of four and end at one or at
// the layer's end, which puts each in the kind of block the whole product
// puts it in. Each row starts from its bias with -0 read as +0, so that a
// row whose terms are all zeros is +0 whatever their signs (where the
// compiler fuses a multiply and an add, a sum can round to -0). For an
// input at ±Inf or NaN the product's 0 × ±Inf or 0 × NaN would be NaN (a
// node at +Inf, or at NaN from +Inf − Inf): each row sums its nonzero
// weights' terms in input order, as the sparse layout does.
//
// Each block of four rows is computed over the columns it reads
// (cl.blocks), a run of blocks that read the same columns by one product.
// On amd64 a row's kernel sums its terms in two lanes, the even columns'
// and the odd ones', each in column order from +0, and adds the lanes;
// when the columns are odd in number the last one is added apart (after
// the lanes, or at the end of the even lane in the one-row kernel). A
// column left out would add a term ±0 (its weights in the block are zero
// and the input finite): a sum from +0 without fused multiply-adds is never
// -0, so such a term changes nothing. Starting at an even column keeps
// each column read in its lane, and ending at an even one or at the
// layer's end keeps the odd last column's place. Elsewhere gonum's product
// is one sum per row in column order, which a fused multiply-add can round
// to -0: a term left out then changes at most the sign of a zero, which
// the row's bias, never -0, takes away.
func (cl *compiledLayer) denseRows(x, y []float64, r0, r1 int, inf bool) (int, int) {
	if inf {
		copy(y[r0:r1], cl.sb[r0:r1])
		for v := r0; v < r1; v++ {
			for u, w := range cl.w.Data[v*cl.w.Stride : v*cl.w.Stride+cl.in] {
				if w != 0 && x[u] != 0 {
					y[v] += w * x[u]
				}
			}
		}
		return r0, r1
	}
	r0, r1 = r0&^3, min((r1+3)&^3, cl.out)
	copy(y[r0:r1], cl.sb[r0:r1])
	for b := r0; b < r1; {
		blk := cl.blocks[b/4]
		e := min(int(blk.end), r1)
		if lo, hi := int(blk.lo), int(blk.hi); lo < hi {
			gonum.Implementation{}.Dgemv(blas.NoTrans, e-b, hi-lo, 1, cl.w.Data[b*cl.w.Stride+lo:], cl.w.Stride, x[lo:hi], 1, 1, y[b:e], 1)
		}
		b = e
	}
	return r0, r1
}

// NewProcessor validates m and compiles it.
func NewProcessor(m *Model) (*Processor, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	digest, err := m.Digest()
	if err != nil {
		return nil, err
	}
	fm, fmErr := newFeatureMap(m)
	p := &Processor{
		features:    fm,
		featuresErr: fmErr,
		model:       m,
		digest:      digest,
		eps:         m.Epsilon(),
		thr:         m.Threshold(),
		inputIndex:  make(map[string]int, len(m.Inputs)),
	}
	for i, n := range m.Inputs {
		p.inputIndex[n.Name] = i
		if n.Countable {
			p.countableIn = append(p.countableIn, i)
		}
	}
	for i, n := range m.Outputs {
		if n.Countable {
			p.countableOut = append(p.countableOut, i)
		}
	}
	p.nodeNames = make([][]string, len(m.Layers)+1)
	for _, n := range m.Inputs {
		p.nodeNames[0] = append(p.nodeNames[0], n.Name)
	}
	for l := 0; l < len(m.Layers)-1; l++ {
		for j := range m.Layers[l].Biases {
			p.nodeNames[l+1] = append(p.nodeNames[l+1], fmt.Sprintf("h%d[%d]", l+1, j))
		}
	}
	for _, n := range m.Outputs {
		p.nodeNames[len(m.Layers)] = append(p.nodeNames[len(m.Layers)], n.Name)
	}
	in := len(m.Inputs)
	for li := range m.Layers {
		l := &m.Layers[li]
		out := len(l.Biases)
		cl := compiledLayer{
			in:    in,
			out:   out,
			act:   parseActivation(l.Activation),
			w:     blas64.General{Rows: out, Cols: in, Stride: in, Data: make([]float64, out*in)},
			b:     append([]float64(nil), l.Biases...),
			words: (out + 63) / 64,
		}
		cl.logAbsW = make([]float64, out*in)
		cl.pos = make([]uint64, in*cl.words)
		cl.neg = make([]uint64, in*cl.words)
		for v, row := range l.dense(in) {
			copy(cl.w.Data[v*in:(v+1)*in], row)
			for u, w := range row {
				cl.logAbsW[v*in+u] = math.Log(math.Abs(w))
				switch {
				case w > 0:
					cl.pos[u*cl.words+v/64] |= 1 << (v % 64)
				case w < 0:
					cl.neg[u*cl.words+v/64] |= 1 << (v % 64)
				}
			}
		}
		cl.live = make([]wordRange, 2*in)
		width := 0
		for u := 0; u < in; u++ {
			cl.live[u] = trim(cl.pos[u*cl.words : (u+1)*cl.words])
			cl.live[in+u] = trim(cl.neg[u*cl.words : (u+1)*cl.words])
			width += int(cl.live[u].hi-cl.live[u].lo) + int(cl.live[in+u].hi-cl.live[in+u].lo)
		}
		cl.trimmed = 2*width <= 2*in*cl.words
		cl.compress()
		cl.indexRows()
		p.layers = append(p.layers, cl)
		in = out
	}
	return p, nil
}

// canServe says whether the processor can decide for a host of role: it
// must read observations and have countable nodes where the role reads its
// amount (inputs for the first host, outputs for the second).
func (p *Processor) canServe(role string) error {
	if p.featuresErr != nil {
		return fmt.Errorf("model %s cannot read an observation: %w", p.model.Name, p.featuresErr)
	}
	return p.canCount(role)
}

// Serves returns nil when a host of role (RoleFirst or RoleSecond) can
// decide with p, or why not: its inputs must be features the engine
// derives from an observation (a model trained on raw vectors is for
// SweepInputs alone), and it must have countable nodes where role reads
// its amount (the input layer for RoleFirst, the output layer for
// RoleSecond).
func (p *Processor) Serves(role string) error { return p.canServe(role) }

// canCount says whether the model has countable nodes where a host of role
// reads its amount.
func (p *Processor) canCount(role string) error {
	if role == RoleFirst && len(p.countableIn) == 0 {
		return fmt.Errorf("model %s has no countable inputs to read at the input layer (the first host's amount)", p.model.Name)
	}
	if role != RoleFirst && len(p.countableOut) == 0 {
		return fmt.Errorf("model %s has no countable outputs to read at the output layer (the second host's amount)", p.model.Name)
	}
	return nil
}

// CountableInputs is the number of countable input nodes (the first host's
// largest possible amount).
func (p *Processor) CountableInputs() int { return len(p.countableIn) }

// CountableOutputs is the number of countable output nodes (the second
// host's largest possible amount).
func (p *Processor) CountableOutputs() int { return len(p.countableOut) }

// Slots is the number of countable nodes a host of role reads.
func (p *Processor) Slots(role string) int {
	if role == RoleFirst {
		return len(p.countableIn)
	}
	return len(p.countableOut)
}

// decideWork is one goroutine's scratch space for one processor.
type decideWork struct {
	ws *Workspace
	fw featureWork
	x  []float64
	cf []float64 // the counterfactual input (memory not judged)
	// thr is the output threshold of the decision (the model's, moved
	// by the input's margin)
	thr float64
}

func (p *Processor) getWork() *decideWork {
	if w, ok := p.pool.Get().(*decideWork); ok {
		return w
	}
	return &decideWork{ws: NewWorkspace(p), x: make([]float64, len(p.model.Inputs)), cf: make([]float64, len(p.model.Inputs))}
}

func (p *Processor) putWork(w *decideWork) { p.pool.Put(w) }

// Features returns the model's input vector for o, by input node, for
// tools that explain or train. It validates o first.
func (p *Processor) Features(o *Observation, role string) ([]float64, error) {
	return p.FeaturesInto(nil, o, role)
}

// FeaturesInto is Features writing into dst's storage when it has room for
// the model's inputs (a caller that keeps its vectors allocates nothing per
// call); it returns the vector, dst resliced or a new one.
func (p *Processor) FeaturesInto(dst []float64, o *Observation, role string) ([]float64, error) {
	if p.featuresErr != nil {
		return nil, fmt.Errorf("model %s cannot read an observation: %w", p.model.Name, p.featuresErr)
	}
	if err := o.Validate(role); err != nil {
		return nil, err
	}
	n := len(p.model.Inputs)
	if cap(dst) < n {
		dst = make([]float64, n)
	}
	x := dst[:n]
	w := p.getWork()
	defer p.putWork(w)
	w.fw.compute(o)
	p.features.fill(&w.fw, o, x)
	return x, nil
}

// withoutMemory writes into cf the input x with memory not judged: memory
// features at their neutral values (shares 0, mem_fit MaxFit) and every
// slot's memory 0. Decide compares the two analyses to say whether memory
// bound a count.
func (p *Processor) withoutMemory(x, cf []float64) {
	copy(cf, x)
	for i, src := range p.features.feature {
		switch src {
		case fMemFit:
			cf[i] = MaxFit
		case fMemReplicaMax, fMemHostMax, fMemReplicaDemand:
			cf[i] = 0
		case slotMemSource:
			if !math.IsNaN(cf[i]) {
				cf[i] = 0
			}
		}
	}
}

// PerReplicaInputs reports whether every input of the model is a feature
// of one replica (the cpu_replica_*, cpu_fit_*, mem_replica_* and mem_fit
// features, the day's and the level's by day): none is summed over the
// running replicas (cpu_host_mean, cpu_host_max, mem_host_max), counts
// them (running_replicas) or is a slot. Such a processor reads the count
// in force only through each replica's share of the usage and requests:
// observations that differ only in the count running n >= 1 (no replica
// warming), with the samples and requests n times one replica's, give it
// the same input vector whenever those shares come out the same, which
// they do bitwise when every product and quotient involved is exact (a
// replica's usage on a grid of a power of two, over capacities that are
// powers of two, as the simulator builds its observations). A simulator
// can then compute one vector for every such count. False for a model
// whose inputs cannot be read from an observation.
func (p *Processor) PerReplicaInputs() bool {
	return p.featuresErr == nil && p.features.perReplica()
}

// Model returns the model the processor was compiled from. Callers must not
// change it.
func (p *Processor) Model() *Model { return p.model }

// Digest returns the model's canonical SHA-256 digest.
func (p *Processor) Digest() string { return p.digest }

// NumInputs returns the width of the input layer.
func (p *Processor) NumInputs() int { return len(p.model.Inputs) }

// InputIndex returns the position of the named input feature.
func (p *Processor) InputIndex(name string) (int, bool) {
	i, ok := p.inputIndex[name]
	return i, ok
}

// Analysis is what one pass of a processor over one input vector found. It
// lives in the Workspace that produced it and is overwritten by the next
// call with that workspace.
type Analysis struct {
	// Outputs are the output layer's activations.
	Outputs []float64
	// InputAmount is A_in: countable input nodes that start at least one
	// activated branch.
	InputAmount int
	// OutputAmount is A_out: countable output nodes that end at least one
	// activated branch.
	OutputAmount int
	// ActivatedInputs and ActivatedOutputs are the indices of the countable
	// nodes counted in InputAmount and OutputAmount, ascending.
	ActivatedInputs  []int
	ActivatedOutputs []int
	// Total is the number of activated branches when it fits in 64 bits.
	// When it does not, Overflow is true and TotalBig holds the exact value.
	Total    uint64
	Overflow bool
	TotalBig *big.Int
}

// TotalString returns the exact activated-branch total in decimal.
func (a *Analysis) TotalString() string {
	if a.Overflow {
		return a.TotalBig.String()
	}
	return fmt.Sprint(a.Total)
}

// Workspace holds every buffer one analysis needs, so that repeated calls
// allocate nothing. A Workspace belongs to one Processor and one goroutine.
type Workspace struct {
	p     *Processor
	act   [][]float64 // activations per layer, inputs first (NaN inputs read as 0)
	holds [][]uint64  // bitsets: node holds data
	back  [][]uint64  // bitsets: node starts an activated partial path to an output
	cnt   [][]uint64  // activated partial paths from the inputs ending at each node
	an    Analysis

	// strongest-branch search (allocated on first use)
	score [][]float64
	from  [][]int32
	// values: a sweep's countable scores or outputs (sweepAmounts)
	values []float64
}

// NewWorkspace returns a workspace sized for p.
func NewWorkspace(p *Processor) *Workspace {
	ws := &Workspace{p: p}
	sizes := []int{len(p.model.Inputs)}
	for i := range p.layers {
		sizes = append(sizes, p.layers[i].out)
	}
	for _, n := range sizes {
		words := (n + 63) / 64
		ws.act = append(ws.act, make([]float64, n))
		ws.holds = append(ws.holds, make([]uint64, words))
		ws.back = append(ws.back, make([]uint64, words))
		ws.cnt = append(ws.cnt, make([]uint64, n))
	}
	ws.an.ActivatedInputs = make([]int, 0, len(p.countableIn))
	ws.an.ActivatedOutputs = make([]int, 0, len(p.countableOut))
	ws.values = make([]float64, 0, max(len(p.countableIn), len(p.countableOut)))
	return ws
}

// Analyze runs the forward pass on x (one value per input node; NaN marks a
// missing value, which holds no data and feeds 0 forward) and the activation
// analysis of the design note: which nodes hold data, which edges carry data,
// A_in, A_out and the exact activated-branch total, by dynamic programming
// layer by layer. The result lives in ws.
func (p *Processor) Analyze(x []float64, ws *Workspace) (*Analysis, error) {
	return p.analyzeAt(x, ws, p.thr)
}

// analyzeAt is Analyze with thr as the output threshold.
func (p *Processor) analyzeAt(x []float64, ws *Workspace, thr float64) (*Analysis, error) {
	if ws == nil || ws.p != p {
		return nil, fmt.Errorf("analyze %s: workspace belongs to another processor", p.model.Name)
	}
	if len(x) != len(p.model.Inputs) {
		return nil, fmt.Errorf("analyze %s: input vector has %d values, the model has %d inputs", p.model.Name, len(x), len(p.model.Inputs))
	}
	for i, v := range x {
		if math.IsInf(v, 0) {
			return nil, fmt.Errorf("analyze %s: input %q is %v", p.model.Name, p.model.Inputs[i].Name, v)
		}
	}
	p.forwardAt(x, ws, thr)
	if err := p.finiteActivations(ws); err != nil {
		return nil, err
	}
	p.branches(ws)
	return &ws.an, nil
}

// finiteActivations refuses a forward pass in which a node's activation
// overflowed (a model whose weights are finite but huge, 1e300): the
// node would read as holding data (+Inf) or not (NaN) without a word, and
// the counts would be the overflow's, not the model's.
func (p *Processor) finiteActivations(ws *Workspace) error {
	for l := 1; l < len(ws.act); l++ {
		for i, a := range ws.act[l] {
			if math.IsNaN(a) || math.IsInf(a, 0) {
				return fmt.Errorf("analyze %s: layers[%d] node %d's activation is %v: the model's weights overflow a 64-bit float on this input", p.model.Name, l-1, i, a)
			}
		}
	}
	return nil
}

// forward computes the activations and which nodes hold data.
func (p *Processor) forward(x []float64, ws *Workspace) { p.forwardAt(x, ws, p.thr) }

// forwardAt is forward with thr as the output threshold.
func (p *Processor) forwardAt(x []float64, ws *Workspace, thr float64) {
	p.forwardKeep(x, ws, thr, nil)
}

// forwardKeep is forwardAt that also copies the output layer's sums, before
// its activation, to pre (when pre is not nil).
func (p *Processor) forwardKeep(x []float64, ws *Workspace, thr float64, pre []float64) {
	in := ws.act[0]
	h := ws.holds[0]
	clear(h)
	for i, v := range x {
		if math.IsNaN(v) {
			in[i] = 0
			continue
		}
		in[i] = v
		if math.Abs(v) > p.eps {
			h[i/64] |= 1 << (i % 64)
		}
	}
	last := len(p.layers) - 1
	for l := range p.layers {
		cl := &p.layers[l]
		y := ws.act[l+1]
		cl.product(ws.act[l], y)
		if l == last && pre != nil {
			copy(pre, y)
		}
		applyActivation(cl.act, y)
		hb := ws.holds[l+1]
		clear(hb)
		if l == last {
			for v, a := range y {
				if a >= thr {
					hb[v/64] |= 1 << (v % 64)
				}
			}
		} else {
			for v, a := range y {
				if a > 0 {
					hb[v/64] |= 1 << (v % 64)
				}
			}
		}
	}
}

// activate is applyActivation on one value.
func activate(k activationKind, v float64) float64 {
	switch k {
	case actReLU:
		if v < 0 {
			return 0
		}
	case actSigmoid:
		return 1 / (1 + math.Exp(-v))
	case actTanh:
		return math.Tanh(v)
	}
	return v
}

func applyActivation(k activationKind, y []float64) {
	switch k {
	case actReLU:
		for i, v := range y {
			if v < 0 {
				y[i] = 0
			}
		}
	case actSigmoid:
		for i, v := range y {
			y[i] = 1 / (1 + math.Exp(-v))
		}
	case actTanh:
		for i, v := range y {
			y[i] = math.Tanh(v)
		}
	}
}

// liveTargets returns the bitset of targets that node u of the layer below cl
// pushes up: positive weights when a(u) > 0, negative ones when a(u) < 0.
func (cl *compiledLayer) liveTargets(u int, a float64) []uint64 {
	if a > 0 {
		return cl.pos[u*cl.words : (u+1)*cl.words]
	}
	return cl.neg[u*cl.words : (u+1)*cl.words]
}

// liveWords is liveTargets trimmed to the words that hold a target: the
// words and the index of the first.
func (cl *compiledLayer) liveWords(u int, a float64) ([]uint64, int) {
	if !cl.trimmed {
		return cl.liveTargets(u, a), 0
	}
	set, r := cl.neg, cl.live[cl.in+u]
	if a > 0 {
		set, r = cl.pos, cl.live[u]
	}
	base := u * cl.words
	return set[base+int(r.lo) : base+int(r.hi)], int(r.lo)
}

// trim returns the range of words of b from its first nonzero word to its
// last (empty when b is all zero).
func trim(b []uint64) wordRange {
	lo, hi := 0, len(b)
	for lo < hi && b[lo] == 0 {
		lo++
	}
	for hi > lo && b[hi-1] == 0 {
		hi--
	}
	return wordRange{int32(lo), int32(hi)}
}

func hasBit(b []uint64, i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

// branches computes the backward reach (for A_in), the forward path counts
// (for A_out and the total) and fills ws.an.
func (p *Processor) branches(ws *Workspace) {
	L := len(p.layers)
	// Backward: a node reaches an output holding data along carrying edges.
	copy(ws.back[L], ws.holds[L])
	for l := L - 1; l >= 0; l-- {
		cl := &p.layers[l]
		hb, bk, up, act := ws.holds[l], ws.back[l], ws.back[l+1], ws.act[l]
		clear(bk)
		for w, word := range hb {
			for word != 0 {
				t := bits.TrailingZeros64(word)
				word &= word - 1
				u := w*64 + t
				live, off := cl.liveWords(u, act[u])
				for i, m := range live {
					if m&up[off+i] != 0 {
						bk[u/64] |= 1 << (u % 64)
						break
					}
				}
			}
		}
	}
	an := &ws.an
	an.ActivatedInputs = an.ActivatedInputs[:0]
	for _, i := range p.countableIn {
		if hasBit(ws.back[0], i) {
			an.ActivatedInputs = append(an.ActivatedInputs, i)
		}
	}
	an.InputAmount = len(an.ActivatedInputs)

	// Forward counts, restricted to nodes on some activated branch (back),
	// so the total and every output count are exact path counts.
	overflow := false
	c0 := ws.cnt[0]
	for i := range c0 {
		if hasBit(ws.back[0], i) {
			c0[i] = 1
		} else {
			c0[i] = 0
		}
	}
	for l := 0; l < L && !overflow; l++ {
		cl := &p.layers[l]
		src, dst, act, up := ws.cnt[l], ws.cnt[l+1], ws.act[l], ws.back[l+1]
		clear(dst)
		// When no sum can pass 64 bits (largest count x sources), add
		// without carry checks; otherwise check every addition.
		var maxC uint64
		sources := uint64(0)
		for _, c := range src {
			if c != 0 {
				sources++
				maxC = max(maxC, c)
			}
		}
		if sources == 0 {
			continue
		}
		safe := maxC <= math.MaxUint64/sources
		for u, c := range src {
			if c == 0 {
				continue
			}
			live, off := cl.liveWords(u, act[u])
			for i, m := range live {
				k := off + i
				m &= up[k]
				base := k * 64
				if safe {
					for m != 0 {
						t := bits.TrailingZeros64(m)
						m &= m - 1
						dst[base+t] += c
					}
					continue
				}
				for m != 0 {
					t := bits.TrailingZeros64(m)
					m &= m - 1
					v := base + t
					s, carry := bits.Add64(dst[v], c, 0)
					if carry != 0 {
						overflow = true
					}
					dst[v] = s
				}
			}
		}
	}
	an.Outputs = ws.act[L]
	an.Overflow = false
	an.TotalBig = nil
	an.Total = 0
	var outBig []*big.Int
	if !overflow {
		var total uint64
		for _, c := range ws.cnt[L] {
			var carry uint64
			total, carry = bits.Add64(total, c, 0)
			if carry != 0 {
				overflow = true
				break
			}
		}
		an.Total = total
	}
	if overflow {
		an.Overflow = true
		an.TotalBig, outBig = p.bigCounts(ws)
	}
	an.ActivatedOutputs = an.ActivatedOutputs[:0]
	for _, o := range p.countableOut {
		ends := ws.cnt[L][o] != 0
		if overflow {
			ends = outBig[o].Sign() != 0
		}
		if ends {
			an.ActivatedOutputs = append(an.ActivatedOutputs, o)
		}
	}
	an.OutputAmount = len(an.ActivatedOutputs)
}

// bigCounts recomputes the path counts with arbitrary precision; it runs only
// when a 64-bit count overflowed, so its allocations stay off the usual path.
// It returns the total and the count at each output node.
func (p *Processor) bigCounts(ws *Workspace) (*big.Int, []*big.Int) {
	L := len(p.layers)
	cur := make([]*big.Int, len(ws.act[0]))
	for i := range cur {
		cur[i] = new(big.Int)
		if hasBit(ws.back[0], i) {
			cur[i].SetInt64(1)
		}
	}
	for l := 0; l < L; l++ {
		cl := &p.layers[l]
		next := make([]*big.Int, cl.out)
		for v := range next {
			next[v] = new(big.Int)
		}
		for u, c := range cur {
			if c.Sign() == 0 {
				continue
			}
			live := cl.liveTargets(u, ws.act[l][u])
			for k, m := range live {
				m &= ws.back[l+1][k]
				for m != 0 {
					t := bits.TrailingZeros64(m)
					m &= m - 1
					next[k*64+t].Add(next[k*64+t], c)
				}
			}
		}
		cur = next
	}
	total := new(big.Int)
	for _, c := range cur {
		total.Add(total, c)
	}
	return total, cur
}

// Branch is one activated branch: a node index per layer, inputs first.
type Branch struct {
	Nodes []int
	// Strength is the product of the edge contributions w(u,v)*a(u) along
	// the branch, in log form (larger is stronger).
	LogStrength float64
}

// Strongest returns up to k activated branches ending at distinct output
// nodes, the strongest first: for each output holding data, the branch with
// the largest product of edge contributions (found by a max-product dynamic
// programme, not by enumeration). Call it after Analyze with the same ws.
func (p *Processor) Strongest(ws *Workspace, k int) []Branch {
	L := len(p.layers)
	p.ensureScore(ws)
	negInf := math.Inf(-1)
	for i := range ws.score[0] {
		if hasBit(ws.back[0], i) {
			ws.score[0][i] = 0
		} else {
			ws.score[0][i] = negInf
		}
	}
	for l := 0; l < L; l++ {
		cl := &p.layers[l]
		src, dst, from, act := ws.score[l], ws.score[l+1], ws.from[l+1], ws.act[l]
		for v := range dst {
			dst[v] = negInf
			from[v] = -1
		}
		for u, s := range src {
			if math.IsInf(s, -1) {
				continue
			}
			// A carrying edge has w*a(u) > 0, so log(w*a) = log|w| + log|a|.
			s += math.Log(math.Abs(act[u]))
			live := cl.liveTargets(u, act[u])
			for kk, m := range live {
				m &= ws.back[l+1][kk]
				for m != 0 {
					t := bits.TrailingZeros64(m)
					m &= m - 1
					v := kk*64 + t
					c := s + cl.logAbsW[v*cl.in+u]
					if c > dst[v] {
						dst[v] = c
						from[v] = int32(u)
					}
				}
			}
		}
	}
	var out []Branch
	used := make([]bool, len(ws.score[L]))
	for len(out) < k {
		best, bestS := -1, negInf
		for o, s := range ws.score[L] {
			if !used[o] && s > bestS {
				best, bestS = o, s
			}
		}
		if best < 0 {
			break
		}
		used[best] = true
		nodes := make([]int, L+1)
		nodes[L] = best
		for l := L; l > 0; l-- {
			nodes[l-1] = int(ws.from[l][nodes[l]])
		}
		out = append(out, Branch{Nodes: nodes, LogStrength: bestS})
	}
	return out
}

// HoldsData reports whether node i of layer l (0 = inputs) held data in the
// last analysis with ws.
func (ws *Workspace) HoldsData(l, i int) bool { return hasBit(ws.holds[l], i) }

// CarriesData reports whether the edge from node u of layer l to node v of
// layer l+1 carried data in the last analysis with ws.
func (p *Processor) CarriesData(ws *Workspace, l, u, v int) bool {
	cl := &p.layers[l]
	if !hasBit(ws.holds[l], u) || !hasBit(ws.holds[l+1], v) {
		return false
	}
	// w*a > 0 is decided by the signs, exactly as the analysis does, so an
	// edge whose product underflows to 0 in floating point still carries.
	w, a := cl.w.Data[v*cl.in+u], ws.act[l][u]
	return (w > 0 && a > 0) || (w < 0 && a < 0)
}

// Activation returns node i of layer l's value in the last analysis with ws
// (inputs as fed forward: a missing input reads 0).
func (ws *Workspace) Activation(l, i int) float64 { return ws.act[l][i] }
