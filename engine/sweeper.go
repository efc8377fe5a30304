package engine

import (
	"math"
	"math/bits"
)

// A Sweeper sweeps a run of input vectors on one processor, as SweepInputs
// does, each pass starting from the previous one: a node is computed again
// only when something it reads changed. Vectors that differ in a few inputs
// then cost a fraction of a pass. The simulator's threshold sweep meets
// such runs at every decision point: the first host's observations for the
// different counts in force differ only in the slots between the counts.
//
// Every amount is bitwise the one SweepInputs gives: a node computed again
// sums the same terms in the same order as the full pass, and a node that
// is not computed again reads along its nonzero weights exactly what it
// read before (in a dense layer it may read changed nodes along zero
// weights, whose terms, ±0 on finite inputs, leave its sum as it was). A
// sparse layer where most nodes must be computed again is computed whole;
// a dense one from the first node to the last that reads a changed node,
// in the product's blocks of rows (compiledLayer.denseRows), or, when its
// rows extend the row before (compiledLayer.chain), each of those rows
// from the lanes of the row before, kept from the last sweep; and whole
// when its input gains or loses a ±Inf or NaN. An input counted from its
// output's sum by a threshold's cut (sigmoidCut) is counted as the
// sigmoid of that sum would count it.
//
// A Sweeper belongs to one goroutine. Its zero value is not usable; call
// Processor.NewSweeper.
type Sweeper struct {
	p  *Processor
	ws *Workspace
	// fwd: ws holds the forward pass of the last vector swept; back: and
	// the backward pass matches it (first host): reach and the countable
	// inputs' ws.score, or, when reach is not kept, every ws.score.
	fwd, back bool
	// ow: the bitset words of a set of outputs; reach is kept when ow is at
	// most maxReachWords. reach[l][v*ow:(v+1)*ow]: the outputs node v of
	// layer l reaches along carrying edges through nodes that hold data
	// (none when v holds none; at the inputs, kept for the countable ones
	// only); an input's score is the largest value among its outputs. A
	// sweep changes the outputs' values but seldom which outputs a node
	// reaches, so the scores are read again from the sets instead of being
	// carried back through every layer.
	ow, maxReachWords int
	reach             [][]uint64
	reachChanged      [][]uint64 // per layer: the nodes whose set this sweep changed
	// single[j]: the one output countable input p.countableIn[j] reaches,
	// or noOutput or severalOutputs (singleBit), when reach is kept
	single []int32
	// changed[l]: the nodes of layer l whose activation the last forward
	// pass changed (bitsets); flipped[l], of those, the ones whose holds
	// bit changed, or an input's sign: what a node's set of reached
	// outputs reads of its own activation (its live targets).
	changed, flipped [][]uint64
	// scratch bitsets: scored (nodes whose score changed, layer above and
	// this layer) and mark (nodes to compute again)
	scored, scoredNext, mark, reads []uint64
	countable                       []uint64 // the countable inputs
	old                             []float64
	// inf[l]: whether dense layer l's rows were all last computed from an
	// input holding ±Inf or NaN (the product sums those otherwise).
	inf []bool
	// lanes[l]: a chained dense layer's lane sums (compiledLayer.chain),
	// x's when lanesOK[l] (the rows before a run computed again are
	// extended from them).
	lanes   [][]float64
	lanesOK []bool
	// z: the output layer's sums before its activation, when that is the
	// sigmoid (else nil). A first-host sweep with the sets of reached
	// outputs (lazy) reads an input whose set holds one output as that
	// output's sum, and compares it with each threshold's cut
	// (sigmoidCut), computing the sigmoid only near the cut; the outputs'
	// values in ws.act follow z only in the other sweeps (valuesStale:
	// they do not now). A countable input whose set holds one output
	// then has no score of its own in ws.score (lazyScores; a Sweeper's
	// first-host sweeps are all lazy or none).
	z           []float64
	valuesStale bool
	cuts        []cutEntry // by threshold (cut; made by the first lazy sweep)
	// countIndex[u]: input u's index in p.countableIn (-1: not countable).
	// In lazy sweeps, mult[o]: the countable inputs whose set holds
	// output o alone; several and none: those whose set holds several
	// outputs, and none.
	countIndex    []int32
	mult          []int32
	several, none int
	// The outputs ordered by their sums (sumOrder), kept from one lazy
	// sweep to the next: byZ the outputs by descending sum (NaN last), zs
	// their sums, upTo[i] the tallies of byZ[:i]. sumsMoved and multMoved:
	// z or mult changed since; disordered: the last order was left, too far
	// from the sums' (the counts then read every sum).
	byZ                              []int32
	zs                               []float64
	upTo                             []int
	sumsMoved, multMoved, disordered bool
	// extended: the runs of a chained layer's rows computed from a
	// kept row's lanes (not from the first row)
	extended int64
	work     SweeperWork
	// what a full forward pass computes (hidden and output nodes) and a
	// full backward pass (hidden nodes and countable inputs)
	fullNodes, fullScores int64
}

// SweeperWork counts what a Sweeper computed, against what full passes
// would have computed.
type SweeperWork struct {
	// Sweeps is the number of sweeps.
	Sweeps int64
	// Nodes and FullNodes: hidden and output activations computed, and
	// what full forward passes compute.
	Nodes, FullNodes int64
	// Scores and FullScores: backward values computed (first host only:
	// scores, or sets of reached outputs and the countable inputs' scores
	// read from them), and what full backward passes compute (a score per
	// hidden node and countable input).
	Scores, FullScores int64
	// FullForward and FullBackward: the sweeps that ran a whole pass (the
	// first one, and any after Reset).
	FullForward, FullBackward int64
}

// NewSweeper returns a Sweeper for p.
func (p *Processor) NewSweeper() *Sweeper {
	s := &Sweeper{p: p, ws: NewWorkspace(p)}
	widest := 0
	for _, a := range s.ws.act {
		s.changed = append(s.changed, make([]uint64, (len(a)+63)/64))
		s.flipped = append(s.flipped, make([]uint64, (len(a)+63)/64))
		widest = max(widest, len(a))
	}
	words := (widest + 63) / 64
	s.scored, s.scoredNext, s.mark, s.reads = make([]uint64, words), make([]uint64, words), make([]uint64, words), make([]uint64, words)
	s.old = make([]float64, widest)
	s.inf = make([]bool, len(p.layers))
	s.lanes, s.lanesOK = make([][]float64, len(p.layers)), make([]bool, len(p.layers))
	for l, cl := range p.layers {
		if cl.chain != nil {
			s.lanes[l] = make([]float64, 2*cl.out)
		}
		if l == len(p.layers)-1 && cl.act == actSigmoid {
			s.z, s.mult = make([]float64, cl.out), make([]int32, cl.out)
			s.byZ, s.zs, s.upTo = make([]int32, cl.out), make([]float64, cl.out), make([]int, cl.out+1)
			for o := range s.byZ {
				s.byZ[o] = int32(o)
			}
			s.countIndex = make([]int32, len(p.model.Inputs))
			for u := range s.countIndex {
				s.countIndex[u] = -1
			}
			for j, u := range p.countableIn {
				s.countIndex[u] = int32(j)
			}
		}
	}
	p.ensureScore(s.ws)
	s.countable = make([]uint64, len(s.changed[0]))
	for _, i := range p.countableIn {
		s.countable[i/64] |= 1 << (i % 64)
	}
	s.ow, s.maxReachWords = len(s.changed[len(s.changed)-1]), maxReachWords
	if s.ow <= s.maxReachWords {
		for l, a := range s.ws.act {
			s.reach = append(s.reach, make([]uint64, len(a)*s.ow))
			s.reachChanged = append(s.reachChanged, make([]uint64, len(s.changed[l])))
		}
		s.single = make([]int32, len(p.countableIn))
	}
	L := len(p.layers)
	for l := 1; l <= L; l++ {
		s.fullNodes += int64(len(s.ws.act[l]))
		if l < L {
			s.fullScores += int64(len(s.ws.act[l]))
		}
	}
	s.fullScores += int64(len(p.countableIn))
	return s
}

// Work returns what the Sweeper computed so far.
func (s *Sweeper) Work() SweeperWork { return s.work }

// Reset makes the next sweep a full pass.
func (s *Sweeper) Reset() { s.fwd, s.back = false, false }

// Sweep is Processor.SweepInputs on x, reusing the previous sweep's pass
// (it reads vectors only, so the model's inputs need not be features the
// engine derives). On an error nothing is computed, and the next sweep
// reuses the pass before it.
func (s *Sweeper) Sweep(x []float64, role string, thresholds []float64, amounts []int) error {
	p := s.p
	if err := p.checkSweep(x, thresholds, amounts); err != nil {
		return err
	}
	if err := p.canCount(role); err != nil {
		return err
	}
	if !s.fwd {
		if err := p.finiteInputs("sweep", x); err != nil {
			return err
		}
	} else if err := s.changedInputs(x); err != nil {
		return err
	}
	s.work.Sweeps++
	reach := role == RoleFirst && s.ow <= s.maxReachWords
	lazy := reach && s.z != nil
	s.forward(x, lazy)
	switch {
	case reach:
		s.backwardReach(lazy)
	case role == RoleFirst:
		s.backward()
	default:
		s.back = false // the scores no longer match the activations
	}
	if lazy {
		s.lazyAmounts(thresholds, amounts)
		return nil
	}
	p.sweepAmounts(s.ws, role, thresholds, amounts)
	return nil
}

// changedInputs records in s.changed[0] the inputs of x that differ from
// the last vector swept (a NaN reads as 0, as forward feeds it), and
// refuses an infinite one as finiteInputs does: the inputs that did not
// change are the last vector's, which was finite. It compares four inputs
// at a time, as most do not change (by their bits: a block holding a NaN
// input, stored as 0, is always checked one input at a time; the
// simulator's vectors hold none).
func (s *Sweeper) changedInputs(x []float64) error {
	in, ch := s.ws.act[0][:len(x)], s.changed[0]
	clear(ch)
	check := func(i int) error {
		v := x[i]
		if math.IsNaN(v) {
			v = 0
		}
		if math.Float64bits(v) == math.Float64bits(in[i]) {
			return nil
		}
		if math.IsInf(v, 0) {
			return s.p.infiniteInput("sweep", i, v)
		}
		ch[i/64] |= 1 << (i % 64)
		return nil
	}
	i := 0
	for ; i+4 <= len(x); i += 4 {
		differ := (math.Float64bits(x[i]) ^ math.Float64bits(in[i])) | (math.Float64bits(x[i+1]) ^ math.Float64bits(in[i+1])) |
			(math.Float64bits(x[i+2]) ^ math.Float64bits(in[i+2])) | (math.Float64bits(x[i+3]) ^ math.Float64bits(in[i+3]))
		if differ == 0 {
			continue
		}
		for j := i; j < i+4; j++ {
			if err := check(j); err != nil {
				return err
			}
		}
	}
	for ; i < len(x); i++ {
		if err := check(i); err != nil {
			return err
		}
	}
	return nil
}

// forward brings ws's forward pass (threshold -Inf) to x and records in
// s.changed which activations changed (after a first pass, s.changed[0]
// holds the inputs changedInputs found). With s.z, the output layer's
// sums are computed in z (a node changed when its sum did) and its values
// brought to them unless lazy.
func (s *Sweeper) forward(x []float64, lazy bool) {
	p, ws := s.p, s.ws
	s.work.FullNodes += s.fullNodes
	if !s.fwd {
		p.forwardKeep(x, ws, math.Inf(-1), s.z)
		// (sumsMoved: a whole backward pass, whose tallies move, follows
		// before any lazy count; set all the same, as the sums moved)
		s.valuesStale, s.sumsMoved = false, true
		s.fwd, s.back = true, false
		for l := range p.layers {
			s.inf[l] = !finite(ws.act[l])
			s.lanesOK[l] = false
		}
		s.work.Nodes += s.fullNodes
		s.work.FullForward++
		return
	}
	in, h, fl := ws.act[0], ws.holds[0], s.flipped[0]
	clear(fl)
	for wd, w := range s.changed[0] {
		for w != 0 {
			i := wd*64 + bits.TrailingZeros64(w)
			w &= w - 1
			v := x[i]
			if math.IsNaN(v) {
				v = 0 // a missing value feeds 0 forward and holds no data
			}
			holds := math.Abs(v) > p.eps
			if holds != hasBit(h, i) || (v > 0) != (in[i] > 0) {
				fl[i/64] |= 1 << (i % 64)
			}
			in[i] = v
			setBit(h, i, holds)
		}
	}
	last := len(p.layers) - 1
	for l := range p.layers {
		cl := &p.layers[l]
		a, y, hb, next, fl := ws.act[l], ws.act[l+1], ws.holds[l+1], s.changed[l+1], s.flipped[l+1]
		act := cl.act
		if l == last && s.z != nil {
			y, act = s.z, actIdentity // the sums; the values below
		}
		clear(next)
		clear(fl)
		if !anyBit(s.changed[l]) {
			continue
		}
		if cl.sparse {
			mark := s.mark[:cl.words]
			clear(mark)
			eachBit(s.changed[l], func(u int) {
				// a node's targets one by one, or, when they
				// are more than the words of its bitsets that
				// hold them, by those words
				pr, nr := cl.live[u], cl.live[cl.in+u]
				if k0, k1 := cl.colPtr[u], cl.colPtr[u+1]; int(k1-k0) <= int(pr.hi-pr.lo)+int(nr.hi-nr.lo) {
					for k := k0; k < k1; k++ {
						v := cl.rowIdx[k]
						mark[v/64] |= 1 << (v % 64)
					}
					return
				}
				base := u * cl.words
				for i := pr.lo; i < pr.hi; i++ {
					mark[i] |= cl.pos[base+int(i)]
				}
				for i := nr.lo; i < nr.hi; i++ {
					mark[i] |= cl.neg[base+int(i)]
				}
			})
			if rows := countBits(mark); 2*rows <= cl.out {
				s.work.Nodes += int64(rows)
				eachBit(mark, func(v int) {
					nv := activate(act, cl.row(a, v))
					if math.Float64bits(nv) == math.Float64bits(y[v]) {
						return
					}
					// node v's new activation: its holds bit
					// (sweptHolds) and that it changed, as
					// settle records them for a run of nodes
					y[v] = nv
					now := sweptHolds(nv, l == last)
					if now != hasBit(hb, v) {
						fl[v/64] |= 1 << (v % 64)
					}
					setBit(hb, v, now)
					next[v/64] |= 1 << (v % 64)
				})
				continue
			}
		}
		// Most of a sparse layer, or the rows of a dense one that read a
		// changed node (widened to BLAS blocks by denseRows) when its
		// product sums as it did (the whole layer when it does not):
		// computed as the full pass computes them.
		old := s.old[:cl.out]
		copy(old, y)
		lo, hi := 0, cl.out
		if cl.sparse {
			cl.product(a, y)
		} else {
			// Since the layer's last product only the changed nodes
			// of a moved: a finite input stays finite unless one of
			// them is not.
			inf := false
			if s.inf[l] {
				inf = !finite(a)
			} else {
				eachBit(s.changed[l], func(u int) {
					inf = inf || math.IsInf(a[u], 0) || math.IsNaN(a[u])
				})
			}
			if inf == s.inf[l] {
				lo, hi = s.readers(cl, s.changed[l])
			}
			s.inf[l] = inf
			switch {
			case lo < hi && cl.chain != nil && !inf:
				// each row from the row before's lanes: the
				// whole layer when those are not a's
				if !s.lanesOK[l] {
					lo, hi = 0, cl.out
				}
				if lo > 0 {
					s.extended++
				}
				cl.chainRows(a, y, s.lanes[l], lo, hi)
				s.lanesOK[l] = true
			case lo < hi:
				lo, hi = cl.denseRows(a, y, lo, hi, inf)
				s.lanesOK[l] = false
			}
		}
		s.work.Nodes += int64(hi - lo)
		applyActivation(act, y[lo:hi])
		settle(y, old, lo, hi, l == last, hb, next, fl)
	}
	if s.z != nil {
		s.outputValues(lazy)
	}
}

// sweptHolds reports whether a node whose activation (an output's: its
// sum, when the Sweeper keeps the sums) is y holds data in a forward pass
// at threshold -Inf: a hidden node when positive, so that its live targets
// are its positive ones (the bit is all its set reads of it); an output
// unless NaN, as its sum is NaN exactly when its sigmoid is.
func sweptHolds(y float64, output bool) bool {
	return y > 0 || output && y >= math.Inf(-1)
}

// settle records, as forward does for one marked row, each of the nodes
// lo to hi whose activation y is not old's, bitwise, a word of nodes at a
// time: their bits set in next, their holds bits in hb (sweptHolds) and,
// where those changed, in fl.
func settle(y, old []float64, lo, hi int, outputs bool, hb, next, fl []uint64) {
	for v := lo; v < hi; {
		wd := v / 64
		end := min(hi, (wd+1)*64)
		var diff, now uint64
		for ; v < end; v++ {
			b := uint64(1) << (v % 64)
			if math.Float64bits(y[v]) != math.Float64bits(old[v]) {
				diff |= b
			}
			if sweptHolds(y[v], outputs) {
				now |= b
			}
		}
		h := hb[wd]
		nh := h&^diff | now&diff
		next[wd] |= diff
		fl[wd] |= h ^ nh
		hb[wd] = nh
	}
}

// outputValues brings the outputs' values in ws.act to s.z after a forward
// pass that computed its sums (the changed ones, or every one when they
// were left behind), or, when lazy, leaves them behind.
func (s *Sweeper) outputValues(lazy bool) {
	L := len(s.p.layers)
	y, changed := s.ws.act[L], s.changed[L]
	moved := anyBit(changed)
	s.sumsMoved = s.sumsMoved || moved
	switch {
	case lazy:
		s.valuesStale = s.valuesStale || moved
	case s.valuesStale:
		for v, z := range s.z {
			y[v] = activate(actSigmoid, z)
		}
		s.valuesStale = false
	default:
		eachBit(changed, func(v int) { y[v] = activate(actSigmoid, s.z[v]) })
	}
}

// readers returns the range of cl's nodes from the first to the last that
// reads a node of changed along a nonzero weight (lo == hi: none).
func (s *Sweeper) readers(cl *compiledLayer, changed []uint64) (lo, hi int) {
	mark, words := s.mark[:cl.words], cl.words
	clear(mark)
	eachBit(changed, func(u int) {
		pos, neg := cl.pos[u*words:(u+1)*words], cl.neg[u*words:(u+1)*words]
		for i := range mark {
			mark[i] |= pos[i] | neg[i]
		}
	})
	first, last := -1, -1
	for i, w := range mark {
		if w != 0 {
			if first < 0 {
				first = i*64 + bits.TrailingZeros64(w)
			}
			last = i*64 + 63 - bits.LeadingZeros64(w)
		}
	}
	if first < 0 {
		return 0, 0
	}
	return first, last + 1
}

// maxReachWords is the most bitset words of outputs (256 outputs) for which
// a Sweeper keeps each node's set of reached outputs: the sets take that
// many words per node, and a full backward pass ORs that many per edge.
const maxReachWords = 4

// backwardReach brings reach, and the countable inputs' ws.score, to the
// forward pass. A node's set reads its own holds bit and activation (its
// sign selects the live targets; a hidden node holds data only when
// positive) and its live targets' sets: it is computed again when its
// holds bit or sign changed (s.flipped) or a target's set did. An
// input's score, the largest value among its set's outputs (-Inf for none),
// is computed again when its set changed or one of those outputs' values
// did. Each is bitwise what scoreAll gives: max does not depend on order.
// When lazy, the scores are lazyScores'.
func (s *Sweeper) backwardReach(lazy bool) {
	p, ws, ow := s.p, s.ws, s.ow
	L := len(p.layers)
	s.work.FullScores += s.fullScores
	full := !s.back
	if full {
		s.work.FullBackward++
	}
	// An output reaches itself when it holds data: its set changes when
	// its holds bit does.
	outRC := s.reachChanged[L]
	clear(outRC)
	reachSelf := func(o int) {
		set := s.reach[L][o*ow : (o+1)*ow]
		clear(set)
		setBit(set, o, hasBit(ws.holds[L], o))
		outRC[o/64] |= 1 << (o % 64)
	}
	if full {
		for o := range ws.act[L] {
			reachSelf(o)
		}
	} else {
		eachBit(s.flipped[L], reachSelf)
	}
	var tmp [maxReachWords]uint64
	for l := L - 1; l >= 0; l-- {
		cl := &p.layers[l]
		up, hl, act := s.reach[l+1], ws.holds[l], ws.act[l]
		cand := s.mark[:len(s.changed[l])]
		if full {
			for wd := range cand {
				cand[wd] = ^uint64(0)
			}
			if n := len(act) % 64; n != 0 {
				cand[len(cand)-1] = 1<<n - 1
			}
		} else {
			// Nodes whose live targets changed, and the sources of
			// the targets whose set changed.
			copy(cand, s.flipped[l])
			eachBit(s.reachChanged[l+1], func(w int) {
				for _, u := range cl.colIdx[cl.rowPtr[w]:cl.rowPtr[w+1]] {
					cand[u/64] |= 1 << (u % 64)
				}
			})
		}
		if l == 0 {
			for wd := range cand {
				cand[wd] &= s.countable[wd]
			}
		}
		rc := s.reachChanged[l]
		clear(rc)
		eachBit(cand, func(u int) {
			s.work.Scores++
			t := tmp[:ow]
			clear(t)
			if hasBit(hl, u) {
				live, off := cl.liveWords(u, act[u])
				for i, m := range live {
					for m != 0 {
						b := bits.TrailingZeros64(m)
						m &= m - 1
						v := (off+i)*64 + b
						for k, w := range up[v*ow : (v+1)*ow] {
							t[k] |= w
						}
					}
				}
			}
			set := s.reach[l][u*ow : (u+1)*ow]
			for k := range t {
				if t[k] != set[k] {
					copy(set, t)
					rc[u/64] |= 1 << (u % 64)
					break
				}
			}
		})
	}
	if lazy {
		s.lazyScores(full)
		s.back = true
		return
	}
	// The countable inputs' scores (s.mark holds the inputs whose set was
	// computed: each counts once in the work). An input that reaches one
	// output (in the built-in admission processor, each slot's own) or
	// none keeps it in s.single, found again when its set changes: its
	// score is that output's value (or -Inf), read when that output
	// changed, without a walk of its set.
	outs, sc, outChanged, setDone := ws.act[L], ws.score[0], s.changed[L], s.mark[:len(s.changed[0])]
	for j, u := range p.countableIn {
		set := s.reach[0][u*ow : (u+1)*ow]
		setChanged := full || hasBit(s.reachChanged[0], u)
		if setChanged {
			s.single[j] = singleBit(set)
		}
		o := s.single[j]
		if !setChanged {
			switch {
			case o == noOutput:
				continue
			case o >= 0:
				if !hasBit(outChanged, int(o)) {
					continue
				}
			default:
				touched := false
				for k, w := range set {
					if w&outChanged[k] != 0 {
						touched = true
						break
					}
				}
				if !touched {
					continue
				}
			}
		}
		if !hasBit(setDone, u) {
			s.work.Scores++
		}
		switch {
		case o >= 0:
			sc[u] = outs[o] // max(-Inf, outs[o]), bit for bit
		case o == noOutput:
			sc[u] = math.Inf(-1)
		default:
			best := math.Inf(-1)
			for k, w := range set {
				for w != 0 {
					b := bits.TrailingZeros64(w)
					w &= w - 1
					best = max(best, outs[k*64+b])
				}
			}
			sc[u] = best
		}
	}
	s.back = true
}

// lazyScores is the countable inputs' part of a lazy backwardReach. An
// input whose set holds one output has no score of its own: lazyAmounts
// reads that output's sum. So only the inputs whose set changed are
// visited (to find their one output again, counted in s.mult), and the
// inputs whose set holds several outputs (s.several of them) are scored as
// backwardReach scores them, from the sigmoid of each output's sum; none,
// -Inf (s.none of them).
func (s *Sweeper) lazyScores(full bool) {
	p, ow, sc, z := s.p, s.ow, s.ws.score[0], s.z
	// tally adds d to the inputs counted as single value o says.
	tally := func(o int32, d int) {
		switch o {
		case noOutput:
			s.none += d
		case severalOutputs:
			s.several += d
		default:
			s.mult[o] += int32(d)
			s.multMoved = true
		}
	}
	found := func(j, u int) {
		o := singleBit(s.reach[0][u*ow : (u+1)*ow])
		if !full {
			tally(s.single[j], -1)
		}
		tally(o, 1)
		s.single[j] = o
		if o == noOutput {
			sc[u] = math.Inf(-1)
		}
	}
	if full {
		s.several, s.none = 0, 0
		clear(s.mult)
		s.multMoved = true
		for j, u := range p.countableIn {
			found(j, u)
		}
	} else {
		eachBit(s.reachChanged[0], func(u int) { found(int(s.countIndex[u]), u) })
	}
	if s.several == 0 {
		return
	}
	outChanged, setDone := s.changed[len(p.layers)], s.mark[:len(s.changed[0])]
	for j, u := range p.countableIn {
		if s.single[j] != severalOutputs {
			continue
		}
		set := s.reach[0][u*ow : (u+1)*ow]
		if !full && !hasBit(s.reachChanged[0], u) {
			touched := false
			for k, w := range set {
				touched = touched || w&outChanged[k] != 0
			}
			if !touched {
				continue
			}
		}
		if !hasBit(setDone, u) {
			s.work.Scores++
		}
		best := math.Inf(-1)
		for k, w := range set {
			for w != 0 {
				b := bits.TrailingZeros64(w)
				w &= w - 1
				best = max(best, activate(actSigmoid, z[k*64+b]))
			}
		}
		sc[u] = best
	}
}

// lazyAmounts is sweepAmounts for a first-host sweep after a lazy
// backwardReach: a countable input whose set holds one output is counted
// at t when that output's sum is at or past t's cut, and not when it is
// below it; only a sum between the two is put through the sigmoid. The
// others' scores are values, compared as sweepAmounts compares them. With
// many thresholds every score is made a value and sweepAmounts' sort used.
func (s *Sweeper) lazyAmounts(thresholds []float64, amounts []int) {
	p, sc := s.p, s.ws.score[0]
	if len(thresholds) >= sortedCountsFrom {
		vals := s.ws.values[:0]
		for j, u := range p.countableIn {
			v := sc[u]
			if o := s.single[j]; o >= 0 {
				v = activate(actSigmoid, s.z[o])
			}
			vals = append(vals, v)
		}
		countAtLeast(vals, thresholds, amounts)
		return
	}
	if len(thresholds) > 0 && (s.sumsMoved || s.multMoved) {
		s.sumOrder()
	}
	for i, t := range thresholds {
		c := s.cut(t)
		// Each output's sum counts for the inputs whose set holds it
		// alone: those at or past the cut's upper bound, and those at or
		// past its lower one (below < from: those hold the first; a NaN
		// sum is in neither). Only a sum between the two is put through
		// the sigmoid. In the sums' order each is a run from the first,
		// found by a binary search; else counted without a branch per sum.
		var n int
		if !s.disordered {
			from, below := atLeast(s.zs, c.from), atLeast(s.zs, c.below)
			n = s.upTo[from]
			for k := from; k < below; k++ { // the band's sums
				if o := s.byZ[k]; s.mult[o] > 0 && c.holds(s.zs[k], t) {
					n += int(s.mult[o])
				}
			}
		} else {
			from, below := 0, 0
			for o, v := range s.z {
				m := int(s.mult[o])
				from += m * b2i(v >= c.from)
				below += m * b2i(v >= c.below)
			}
			n = from
			if below > from {
				for o, v := range s.z {
					if s.mult[o] > 0 && !(v >= c.from) && c.holds(v, t) { // the band's sums
						n += int(s.mult[o])
					}
				}
			}
		}
		if t == math.Inf(-1) {
			n += s.none // their score, -Inf, is >= t
		}
		if s.several > 0 {
			for j, u := range p.countableIn {
				if s.single[j] == severalOutputs && sc[u] >= t {
					n++
				}
			}
		}
		amounts[i] = n
	}
}

// sumOrder brings byZ, zs and upTo to the outputs' sums and tallies: the
// order kept from the last sweep, mended by insertion (the sums of one
// sweep seldom pass one another: in the built-in admission processor they
// fall from each slot to the next), unless more than maxDescents
// neighbours are out of order, when the order is left (disordered).
func (s *Sweeper) sumOrder() {
	zs, byZ := s.zs, s.byZ
	descents := 0
	for k, o := range byZ {
		zs[k] = s.z[o]
		if k > 0 && before(zs[k], zs[k-1]) {
			descents++
		}
	}
	s.sumsMoved = false
	if s.disordered = descents > maxDescents; s.disordered {
		return
	}
	if descents > 0 {
		for k := 1; k < len(zs); k++ {
			v, o := zs[k], byZ[k]
			j := k
			for j > 0 && before(v, zs[j-1]) {
				zs[j], byZ[j] = zs[j-1], byZ[j-1]
				j--
			}
			if j < k {
				zs[j], byZ[j] = v, o
				s.multMoved = true // the tallies' order moved
			}
		}
	}
	if s.multMoved {
		s.upTo[0] = 0
		for k, o := range byZ {
			s.upTo[k+1] = s.upTo[k] + int(s.mult[o])
		}
		s.multMoved = false
	}
}

// maxDescents is the most outputs out of order with the one before them for
// which sumOrder mends the order by insertion. It does not bound the work,
// which is the number of pairs out of order (one descent between two
// interleaved runs can move every output), but leaves the order when the
// sums moved wholesale.
const maxDescents = 8

// before reports whether a sum a goes before b in descending order, NaN
// last.
func before(a, b float64) bool { return a > b || b != b && a == a }

// atLeast returns how many of zs (in descending order, NaN last) are >= c:
// z >= c holds for a run from the first (for no z when c is NaN).
func atLeast(zs []float64, c float64) int {
	lo, hi := 0, len(zs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if zs[m] >= c {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A cutEntry is a threshold's cut, kept by a Sweeper.
type cutEntry struct {
	bits uint64 // the threshold's
	made bool
	cut  sigmoidCut
}

// cut returns t's sigmoidCut, kept in one of the two slots its bits pick
// (a pair): in the first that is free, else in the first, in place of the
// cut there (the simulator's knob sweep reads 113 thresholds, and as many
// again on each side of a hold band; with one slot each, five of the 113
// fell in a slot taken by another, their cuts made again at every decision
// point; in pairs, one pair holds three of them, two of which are).
func (s *Sweeper) cut(t float64) sigmoidCut {
	if s.cuts == nil {
		s.cuts = make([]cutEntry, cutSlots)
	}
	k := math.Float64bits(t)
	i := (k * 0x9e3779b97f4a7c15) >> (64 - cutSlotBits)
	e, f := &s.cuts[i], &s.cuts[i^1]
	switch {
	case e.made && e.bits == k:
	case f.made && f.bits == k:
		e = f
	default:
		if e.made && !f.made {
			e = f
		}
		*e = cutEntry{bits: k, made: true, cut: newSigmoidCut(t)}
	}
	return e.cut
}

// cutSlots is the number of cuts a Sweeper keeps.
const (
	cutSlotBits = 10
	cutSlots    = 1 << cutSlotBits
)

// noOutput and severalOutputs are what singleBit returns for a set of
// outputs that holds none or more than one.
const (
	noOutput       = -1
	severalOutputs = -2
)

// singleBit returns the one output a set of outputs holds, or noOutput or
// severalOutputs.
func singleBit(set []uint64) int32 {
	o := int32(noOutput)
	for k, w := range set {
		switch {
		case w == 0:
		case o != noOutput || w&(w-1) != 0:
			return severalOutputs
		default:
			o = int32(k*64 + bits.TrailingZeros64(w))
		}
	}
	return o
}

// backward brings ws.score to the forward pass. A node's score reads its
// own activation and holds bit, and the scores and holds bits of its live
// targets (the targets its activation's sign selects): it is computed again
// when its activation changed, or when one of its live targets' score or
// holds bit did (a changed holds bit means a changed activation).
func (s *Sweeper) backward() {
	p, ws := s.p, s.ws
	L := len(p.layers)
	s.work.FullScores += s.fullScores
	if !s.back {
		p.scoreAll(ws)
		s.back = true
		s.work.Scores += s.fullScores
		s.work.FullBackward++
		return
	}
	// The outputs' scores are their values.
	above := s.scoredNext[:len(s.changed[L])]
	copy(above, s.changed[L])
	for wd, w := range above {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			w &= w - 1
			o := wd*64 + t
			ws.score[L][o] = ws.act[L][o]
		}
	}
	for l := L - 1; l >= 0; l-- {
		cl := &p.layers[l]
		for i, w := range s.changed[l+1] {
			above[i] |= w
		}
		ch, hl, act, sc := s.changed[l], ws.holds[l], ws.act[l], ws.score[l]
		now := s.scored[:len(ch)]
		clear(now)
		// Only nodes that hold data or changed can read anything (at the
		// inputs, only the countable ones are read).
		cand := s.mark[:len(ch)]
		nodes := 0
		for wd := range cand {
			cand[wd] = ch[wd] | hl[wd]
			if l == 0 {
				cand[wd] &= s.countable[wd]
			}
			nodes += bits.OnesCount64(cand[wd])
		}
		// Which of them read a changed target: found from the targets'
		// sources when those are fewer than the words a test of every
		// candidate reads, else by that test.
		push := 0
		for wd, w := range above {
			for w != 0 && float64(push) < float64(nodes)*(cl.scanWords+2) {
				t := bits.TrailingZeros64(w)
				w &= w - 1
				v := wd*64 + t
				push += int(cl.rowPtr[v+1] - cl.rowPtr[v])
			}
		}
		if float64(push) < float64(nodes)*(cl.scanWords+2) {
			reads := s.reads[:len(ch)]
			copy(reads, ch)
			for wd, w := range above {
				for w != 0 {
					t := bits.TrailingZeros64(w)
					w &= w - 1
					v := wd*64 + t
					for _, u := range cl.colIdx[cl.rowPtr[v]:cl.rowPtr[v+1]] {
						reads[u/64] |= 1 << (u % 64)
					}
				}
			}
			for wd := range cand {
				cand[wd] &= reads[wd]
			}
		} else {
			pos, neg, words := cl.pos, cl.neg, cl.words
			for wd, w := range cand {
				for w != 0 {
					t := bits.TrailingZeros64(w)
					w &= w - 1
					u := wd*64 + t
					if ch[wd]&(1<<t) != 0 {
						continue
					}
					set, r := neg, cl.live[cl.in+u]
					if act[u] > 0 {
						set, r = pos, cl.live[u]
					}
					lo, hi := 0, words
					if cl.trimmed {
						lo, hi = int(r.lo), int(r.hi)
					}
					read := false
					for k, m := range set[u*words+lo : u*words+hi] {
						if m&above[lo+k] != 0 {
							read = true
							break
						}
					}
					if !read {
						cand[wd] &^= 1 << t
					}
				}
			}
		}
		for wd, w := range cand {
			for w != 0 {
				t := bits.TrailingZeros64(w)
				w &= w - 1
				u := wd*64 + t
				s.work.Scores++
				if v := p.score(ws, l, u); math.Float64bits(v) != math.Float64bits(sc[u]) {
					sc[u] = v
					now[wd] |= 1 << t
				}
			}
		}
		// This layer's changed scores are what the layer below reads.
		s.scored, s.scoredNext = s.scoredNext, s.scored
		above = now
	}
}

func setBit(b []uint64, i int, on bool) {
	if on {
		b[i/64] |= 1 << (i % 64)
	} else {
		b[i/64] &^= 1 << (i % 64)
	}
}

// anyBit reports whether b has a bit set.
func anyBit(b []uint64) bool {
	var or uint64
	for _, w := range b {
		or |= w
	}
	return or != 0
}

func countBits(b []uint64) int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

func eachBit(b []uint64, f func(i int)) {
	for wd, w := range b {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			w &= w - 1
			f(wd*64 + t)
		}
	}
}
