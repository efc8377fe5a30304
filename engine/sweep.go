package engine

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
)

// Sweep reads one observation at many output thresholds with one forward
// pass: amounts[i] is the host's amount (A_in for the first host, A_out for
// the second) when the model's output threshold is thresholds[i]. It is
// what a threshold sweep (the simulator's knob) costs: one Decide's forward
// pass and two linear passes over the edges, not one analysis per
// threshold. The model's own output threshold is not used. o is validated
// first (an invalid one is refused, naming the field, and nothing is
// computed); minSamples is not checked.
//
// It rests on two facts of the analysis: whether a hidden node holds data,
// and whether an edge between hidden nodes carries it, do not depend on the
// output threshold; and an output holds data at threshold t exactly when
// its value is >= t. So an output ends an activated branch at t when its
// value is >= t and some carrying edge reaches it from a node on an
// activated partial path from the inputs; and an input starts one at t when
// the largest value among the outputs it reaches is >= t.
func (p *Processor) Sweep(o *Observation, role string, thresholds []float64, amounts []int) error {
	if len(amounts) != len(thresholds) {
		return fmt.Errorf("sweep: %d thresholds but %d amounts", len(thresholds), len(amounts))
	}
	if err := p.canServe(role); err != nil {
		return err
	}
	if err := o.Validate(role); err != nil {
		return err
	}
	w := p.getWork()
	defer p.putWork(w)
	w.fw.compute(o)
	p.features.fill(&w.fw, o, w.x)
	return p.sweepInput(w.x, w.ws, role, thresholds, amounts)
}

// SweepInputs is Sweep on an input vector x from Features (or
// FeaturesInto) for the same role: a caller that already computed x, to
// compare observations, does not pay for the features twice.
func (p *Processor) SweepInputs(x []float64, role string, thresholds []float64, amounts []int) error {
	if err := p.checkSweep(x, thresholds, amounts); err != nil {
		return err
	}
	if err := p.canServe(role); err != nil {
		return err
	}
	w := p.getWork()
	defer p.putWork(w)
	return p.sweepInput(x, w.ws, role, thresholds, amounts)
}

// checkSweep checks a sweep's vector and slices.
func (p *Processor) checkSweep(x, thresholds []float64, amounts []int) error {
	if len(amounts) != len(thresholds) {
		return fmt.Errorf("sweep: %d thresholds but %d amounts", len(thresholds), len(amounts))
	}
	if len(x) != len(p.model.Inputs) {
		return fmt.Errorf("sweep %s: input vector has %d values, the model has %d inputs", p.model.Name, len(x), len(p.model.Inputs))
	}
	return nil
}

// sweepInput is Sweep on an input vector.
func (p *Processor) sweepInput(x []float64, ws *Workspace, role string, thresholds []float64, amounts []int) error {
	if err := p.finiteInputs("sweep", x); err != nil {
		return err
	}
	// The forward pass with every output holding data (threshold -Inf):
	// holds then marks the hidden nodes exactly, and the outputs are
	// decided per threshold below.
	p.forwardAt(x, ws, math.Inf(-1))
	if role == RoleFirst {
		p.scoreAll(ws)
	}
	p.sweepAmounts(ws, role, thresholds, amounts)
	return nil
}

// finiteInputs rejects an infinite input (NaN is a missing value).
func (p *Processor) finiteInputs(op string, x []float64) error {
	for i, v := range x {
		if math.IsInf(v, 0) {
			return p.infiniteInput(op, i, v)
		}
	}
	return nil
}

// infiniteInput is the error for input i at v, infinite.
func (p *Processor) infiniteInput(op string, i int, v float64) error {
	return fmt.Errorf("%s %s: input %q is %v", op, p.model.Name, p.model.Inputs[i].Name, v)
}

// ensureScore allocates ws's score buffers on first use.
func (p *Processor) ensureScore(ws *Workspace) {
	if ws.score != nil {
		return
	}
	for l := 0; l <= len(p.layers); l++ {
		ws.score = append(ws.score, make([]float64, len(ws.act[l])))
		ws.from = append(ws.from, make([]int32, len(ws.act[l])))
	}
}

// scoreAll is the backward pass of a first-host sweep, after the forward
// pass at threshold -Inf: the largest output value each node reaches along
// carrying edges through nodes that hold data (-Inf: none), in ws.score
// (at the input layer for the countable inputs only).
func (p *Processor) scoreAll(ws *Workspace) {
	p.ensureScore(ws)
	L := len(p.layers)
	copy(ws.score[L], ws.act[L])
	for l := L - 1; l > 0; l-- {
		sc := ws.score[l]
		for u := range sc {
			sc[u] = p.score(ws, l, u)
		}
	}
	// At the inputs only the countable ones are read.
	for _, u := range p.countableIn {
		ws.score[0][u] = p.score(ws, 0, u)
	}
}

// score is node u of layer l's backward value: the largest score of the
// layer above that u reaches along a carrying edge into a node holding
// data, or -Inf when u holds no data or reaches none. It reads u's holds
// bit and activation and the layer above's holds and scores only.
func (p *Processor) score(ws *Workspace, l, u int) float64 {
	best := math.Inf(-1)
	if !hasBit(ws.holds[l], u) {
		return best
	}
	up, hb := ws.score[l+1], ws.holds[l+1]
	live, off := p.layers[l].liveWords(u, ws.act[l][u])
	for i, m := range live {
		k := off + i
		m &= hb[k]
		for m != 0 {
			t := bits.TrailingZeros64(m)
			m &= m - 1
			best = max(best, up[k*64+t])
		}
	}
	return best
}

// sweepAmounts reads the amounts at every threshold from a forward pass at
// threshold -Inf (and, for the first host, its backward pass): an output
// ends an activated branch at t when its value is >= t and some carrying
// edge reaches it from a node on an activated partial path from the
// inputs; an input starts one at t when the largest value among the
// outputs it reaches is >= t.
func (p *Processor) sweepAmounts(ws *Workspace, role string, thresholds []float64, amounts []int) {
	L := len(p.layers)
	if role == RoleFirst {
		vals := ws.values[:0]
		for _, in := range p.countableIn {
			vals = append(vals, ws.score[0][in])
		}
		countAtLeast(vals, thresholds, amounts)
		return
	}
	// Forward reach: nodes on a carrying path from an input holding data
	// (ws.back is used as scratch for it).
	outs := ws.act[L]
	copy(ws.back[0], ws.holds[0])
	for l := 0; l < L; l++ {
		cl := &p.layers[l]
		dst := ws.back[l+1]
		clear(dst)
		for wd, word := range ws.back[l] {
			for word != 0 {
				t := bits.TrailingZeros64(word)
				word &= word - 1
				u := wd*64 + t
				live, off := cl.liveWords(u, ws.act[l][u])
				for i, m := range live {
					dst[off+i] |= m & ws.holds[l+1][off+i]
				}
			}
		}
	}
	vals := ws.values[:0]
	for _, o := range p.countableOut {
		if hasBit(ws.back[L], o) {
			vals = append(vals, outs[o])
		}
	}
	countAtLeast(vals, thresholds, amounts)
}

// countAtLeast sets amounts[i] to the number of vals >= thresholds[i] (a
// NaN is never counted, nor counts against a NaN threshold). With many
// thresholds it sorts vals (which it may reorder) and finds each count by
// binary search: a sweep of the simulator's 113 thresholds over 110
// outputs compares about 1,600 values instead of 12,400. The counts are
// the same: vals >= t is false then true along values sorted in ascending
// order (-0 and +0 compare alike against any t).
func countAtLeast(vals, thresholds []float64, amounts []int) {
	if len(thresholds) < sortedCountsFrom {
		for i, t := range thresholds {
			n := 0
			for _, v := range vals {
				if v >= t {
					n++
				}
			}
			amounts[i] = n
		}
		return
	}
	kept := vals[:0]
	for _, v := range vals {
		if !math.IsNaN(v) {
			kept = append(kept, v)
		}
	}
	slices.Sort(kept)
	for i, t := range thresholds {
		amounts[i] = len(kept) - sort.Search(len(kept), func(k int) bool { return kept[k] >= t })
	}
}

// sortedCountsFrom is the number of thresholds from which countAtLeast
// sorts the values (the first host's sweeps in the simulator read about
// three thresholds each, the second host's 113).
const sortedCountsFrom = 8
