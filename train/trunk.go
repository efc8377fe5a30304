package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// trunk estimates a running replica's future usage from the window
// statistics u (per-replica shares of the host) as two terms, a level a and
// a dispersion b, both >= 0 and positively homogeneous in u (they scale
// with the usage): the host's usage with m replicas is predicted as
// m a + sqrt(m) b, which is m x the peak for perfectly correlated replicas
// (b = 0) and grows more slowly when replicas multiplex.
type trunk interface {
	// eval returns a and b, keeping what backward needs in c.
	eval(u []float64, c *trunkCache) (a, b float64)
	// backward adds the gradient of the loss, given da and db, to grad
	// (one entry per parameter, in params order).
	backward(c *trunkCache, da, db float64, grad []float64)
	params() []*float64
	// layers lays the trunk out as bias-free ReLU layers: layers[l][j] are
	// node j's weights over the previous layer (the statistics for l = 0).
	// The last layer has two nodes, a then b.
	layers() [][][]float64
	// clamp keeps the parameters in their allowed range after a step.
	clamp()
	describe(stats []Statistic) string
}

type trunkCache struct {
	u   []float64
	arg int         // max trunk: the binding statistic
	h   [][]float64 // mlp: hidden activations per layer
	o   [2]float64  // mlp: output pre-activations
	// monotone: each head's binding unit
	unit [2]int
}

// maxTrunk: a = max_f u_f / c_f with c_f = exp(theta_f); b = 0.
type maxTrunk struct{ theta []float64 }

func newMaxTrunk(width int) *maxTrunk { return &maxTrunk{theta: make([]float64, width)} }

func (t *maxTrunk) eval(u []float64, c *trunkCache) (float64, float64) {
	a, arg := 0.0, 0
	for f, uf := range u {
		if v := uf * math.Exp(-t.theta[f]); v > a || f == 0 {
			a, arg = v, f
		}
	}
	c.arg = arg
	return a, 0
}

func (t *maxTrunk) backward(c *trunkCache, da, _ float64, grad []float64) {
	a := c.u[c.arg] * math.Exp(-t.theta[c.arg])
	grad[c.arg] += da * -a
}

func (t *maxTrunk) params() []*float64 {
	out := make([]*float64, len(t.theta))
	for i := range t.theta {
		out[i] = &t.theta[i]
	}
	return out
}

func (t *maxTrunk) clamp() {
	for f := range t.theta {
		t.theta[f] = math.Max(math.Min(t.theta[f], math.Log(maxScale)), -math.Log(maxScale))
	}
}

func (t *maxTrunk) layers() [][][]float64 {
	inv := make([]float64, len(t.theta))
	for f := range inv {
		inv[f] = math.Exp(-t.theta[f])
	}
	tr := buildTree(inv, true)
	// A last layer: a (the tree's value) and b (no edges: always 0).
	last := [][]float64{append([]float64(nil), tr.value...), make([]float64, len(tr.value))}
	return append(tr.layers, last)
}

func (t *maxTrunk) describe(stats []Statistic) string {
	var b strings.Builder
	b.WriteString("max-of-predictors: a = max over ")
	for f, th := range t.theta {
		if f > 0 {
			b.WriteString(", ")
		}
		b.WriteString(stats[f].Name + "/" + strconv.FormatFloat(math.Exp(th), 'g', 4, 64))
	}
	b.WriteString("; b = 0")
	return b.String()
}

// mlpTrunk: hidden h_l = relu(W_l h_{l-1}) (h_0 = u), outputs
// (a, b) = relu(Wo h_L + Ws u): bias-free, so positively homogeneous.
type mlpTrunk struct {
	w     [][]float64 // w[l][j*in+i]
	sizes []int       // widths: inputs, hidden...
	wo    []float64   // 2 x last hidden
	ws    []float64   // 2 x inputs (skip)
}

func newMLPTrunk(width int, hidden []int, stats []Statistic, rng *rand.Rand) *mlpTrunk {
	t := &mlpTrunk{sizes: append([]int{width}, hidden...)}
	for l := 1; l < len(t.sizes); l++ {
		in, out := t.sizes[l-1], t.sizes[l]
		w := make([]float64, in*out)
		sd := math.Sqrt(2 / float64(in))
		for i := range w {
			w[i] = sd * rng.NormFloat64()
		}
		t.w = append(t.w, w)
	}
	last := t.sizes[len(t.sizes)-1]
	t.wo = make([]float64, 2*last)
	for i := range t.wo {
		t.wo[i] = 0.01 * rng.NormFloat64()
	}
	t.ws = make([]float64, 2*width)
	// Start at a cautious estimate: a = 1.2 x the window's maximum (without
	// it, 1.2 x the first statistic read: an ablation without the maximum
	// also starts elsewhere), b = a little of it.
	start := 0
	for f, s := range stats {
		if s.Name == "max" {
			start = f
		}
	}
	t.ws[start] = 1.2
	t.ws[width+start] = 0.1
	return t
}

func (t *mlpTrunk) eval(u []float64, c *trunkCache) (float64, float64) {
	if len(c.h) != len(t.w) {
		c.h = make([][]float64, len(t.w))
		for l := range c.h {
			c.h[l] = make([]float64, t.sizes[l+1])
		}
	}
	prev := u
	for l, w := range t.w {
		in := t.sizes[l]
		h := c.h[l]
		for j := range h {
			var z float64
			row := w[j*in : (j+1)*in]
			for i, x := range prev {
				z += row[i] * x
			}
			h[j] = math.Max(z, 0)
		}
		prev = h
	}
	last := len(prev)
	for k := 0; k < 2; k++ {
		var z float64
		for i, x := range prev {
			z += t.wo[k*last+i] * x
		}
		for i, x := range u {
			z += t.ws[k*len(u)+i] * x
		}
		c.o[k] = z
	}
	return math.Max(c.o[0], 0), math.Max(c.o[1], 0)
}

func (t *mlpTrunk) backward(c *trunkCache, da, db float64, grad []float64) {
	// Parameter order: w[0], w[1], ..., wo, ws.
	off := make([]int, len(t.w)+2)
	n := 0
	for l, w := range t.w {
		off[l] = n
		n += len(w)
	}
	off[len(t.w)] = n
	n += len(t.wo)
	off[len(t.w)+1] = n
	dout := [2]float64{da, db}
	for k := range dout {
		if c.o[k] <= 0 {
			dout[k] = 0
		}
	}
	L := len(t.w)
	var last []float64
	if L > 0 {
		last = c.h[L-1]
	} else {
		last = c.u
	}
	W := len(last)
	dh := make([]float64, W)
	for k := 0; k < 2; k++ {
		if dout[k] == 0 {
			continue
		}
		for i, x := range last {
			grad[off[L]+k*W+i] += dout[k] * x
			dh[i] += dout[k] * t.wo[k*W+i]
		}
		for i, x := range c.u {
			grad[off[L+1]+k*len(c.u)+i] += dout[k] * x
		}
	}
	for l := L - 1; l >= 0; l-- {
		in := t.sizes[l]
		prev := c.u
		if l > 0 {
			prev = c.h[l-1]
		}
		var dprev []float64
		if l > 0 {
			dprev = make([]float64, in)
		}
		for j, hj := range c.h[l] {
			if hj <= 0 || dh[j] == 0 {
				continue
			}
			row := t.w[l][j*in : (j+1)*in]
			for i, x := range prev {
				grad[off[l]+j*in+i] += dh[j] * x
				if dprev != nil {
					dprev[i] += dh[j] * row[i]
				}
			}
		}
		dh = dprev
	}
}

func (t *mlpTrunk) params() []*float64 {
	var out []*float64
	for _, w := range t.w {
		for i := range w {
			out = append(out, &w[i])
		}
	}
	for i := range t.wo {
		out = append(out, &t.wo[i])
	}
	for i := range t.ws {
		out = append(out, &t.ws[i])
	}
	return out
}

func (t *mlpTrunk) clamp() {}

// layers: the hidden layers, each followed by pass-through copies of the
// statistics for the skip connection, then (a, b).
func (t *mlpTrunk) layers() [][][]float64 {
	F := t.sizes[0]
	var out [][][]float64
	prevWidth, passOff := F, 0 // where the statistics sit in the previous layer
	hidOff := 0
	for l, w := range t.w {
		in, width := t.sizes[l], t.sizes[l+1]
		var rows [][]float64
		for j := 0; j < width; j++ {
			row := make([]float64, prevWidth)
			for i := 0; i < in; i++ {
				row[hidOff+i] = w[j*in+i]
			}
			rows = append(rows, row)
		}
		for f := 0; f < F; f++ {
			row := make([]float64, prevWidth)
			row[passOff+f] = 1
			rows = append(rows, row)
		}
		out = append(out, rows)
		hidOff, passOff, prevWidth = 0, width, width+F
	}
	last := t.sizes[len(t.sizes)-1]
	var rows [][]float64
	for k := 0; k < 2; k++ {
		row := make([]float64, prevWidth)
		// (without hidden layers the last layer is the statistics
		// themselves: wo and ws both read them, and add up)
		copy(row[hidOff:], t.wo[k*last:(k+1)*last])
		for f := 0; f < F; f++ {
			row[passOff+f] += t.ws[k*F+f]
		}
		rows = append(rows, row)
	}
	return append(out, rows)
}

func (t *mlpTrunk) describe([]Statistic) string {
	widths := make([]string, len(t.sizes))
	for i, x := range t.sizes {
		widths[i] = strconv.Itoa(x)
	}
	return "bias-free ReLU network, widths " + strings.Join(widths, "-") + "-2 (a, b), with a skip connection from the statistics"
}

// monoTrunk is a min-max network (Sill, NIPS 1997): each head (a, then b)
// is the largest over groups of the smallest over the group's units of a
// linear unit over the statistics,
//
//	a = max_g min_j w_{a,g,j} . u,  b likewise,
//
// with every weight > 0. It is bias-free, so positively homogeneous like
// the other trunks, and monotone: no statistic can rise and lower the
// estimate. Since every statistic it may read is a mean, order statistic
// or maximum of the window's samples (Settings refuses the others: see
// canFall), a heavier window never reads as more room (in exact
// arithmetic: the exported trees' float rounding can move an output by
// about 1e-15). A bias-free ReLU network with
// non-negative weights would be monotone too, but over non-negative inputs
// it is linear; the min and max give the bends.
//
// The hand-wired max-of-predictors is the case of one unit per group, each
// reading one statistic: the level starts there (group g reads statistic g
// mod the statistics, scaled by 1.2, with a little of every other) and
// learns from it, and the dispersion starts near 0.
type monoTrunk struct {
	f, g, j int // statistics, groups per head, units per group
	// theta[((head*g + group)*j + unit)*f + stat] is the log of a weight:
	// steps are relative, and no weight can turn negative.
	theta []float64
}

func newMonoTrunk(width, groups, units int, rng *rand.Rand) *monoTrunk {
	t := &monoTrunk{f: width, g: groups, j: units, theta: make([]float64, 2*groups*units*width)}
	// b starts near 0: started at 0.1 of the statistics, as the MLP's
	// does, nested validation gave 1.033 instead of 1.047 (7x2).
	for h, scale := range [2]float64{1.2, 1e-3} {
		for g := 0; g < groups; g++ {
			for j := 0; j < units; j++ {
				off := ((h*groups+g)*units + j) * width
				for f := 0; f < width; f++ {
					w := 0.02 * scale * math.Abs(rng.NormFloat64())
					if f == g%width {
						w += scale * (1 + 0.1*rng.NormFloat64())
					}
					t.theta[off+f] = math.Log(max(w, 1e-6))
				}
			}
		}
	}
	t.clamp()
	return t
}

// row is unit (h, g, j)'s weights.
func (t *monoTrunk) row(h, g, j int) []float64 {
	off := ((h*t.g+g)*t.j + j) * t.f
	out := make([]float64, t.f)
	for f, th := range t.theta[off : off+t.f] {
		out[f] = math.Exp(th)
	}
	return out
}

func (t *monoTrunk) eval(u []float64, c *trunkCache) (float64, float64) {
	var out [2]float64
	for h := 0; h < 2; h++ {
		best, bestUnit := math.Inf(-1), 0
		for g := 0; g < t.g; g++ {
			low, lowUnit := math.Inf(1), 0
			for j := 0; j < t.j; j++ {
				var z float64
				off := ((h*t.g+g)*t.j + j) * t.f
				for f, th := range t.theta[off : off+t.f] {
					z += math.Exp(th) * u[f]
				}
				if z < low {
					low, lowUnit = z, (h*t.g+g)*t.j+j
				}
			}
			if low > best {
				best, bestUnit = low, lowUnit
			}
		}
		out[h] = max(best, 0)
		c.unit[h] = bestUnit
	}
	return out[0], out[1]
}

func (t *monoTrunk) backward(c *trunkCache, da, db float64, grad []float64) {
	for h, d := range [2]float64{da, db} {
		if d == 0 {
			continue
		}
		off := c.unit[h] * t.f
		for f, x := range c.u {
			grad[off+f] += d * x * math.Exp(t.theta[off+f])
		}
	}
}

func (t *monoTrunk) params() []*float64 {
	out := make([]*float64, len(t.theta))
	for i := range t.theta {
		out[i] = &t.theta[i]
	}
	return out
}

// clamp keeps every weight within [1e-9, maxScale].
func (t *monoTrunk) clamp() {
	for i, th := range t.theta {
		t.theta[i] = max(min(th, math.Log(maxScale)), math.Log(1e-9))
	}
}

// layers: the units (a's groups, then b's), then the min of each group and
// the max over each head's groups as bias-free ReLU trees (every value
// they carry is >= 0), then (a, b).
func (t *monoTrunk) layers() [][][]float64 {
	units := make([][]float64, 0, 2*t.g*t.j)
	for h := 0; h < 2; h++ {
		for g := 0; g < t.g; g++ {
			for j := 0; j < t.j; j++ {
				units = append(units, append([]float64(nil), t.row(h, g, j)...))
			}
		}
	}
	out := [][][]float64{units}
	width := len(units)
	var mins [][][]float64 // per (head, group): its units, as rows over the units layer
	for i := 0; i < 2*t.g; i++ {
		var rows [][]float64
		for j := 0; j < t.j; j++ {
			r := make([]float64, width)
			r[i*t.j+j] = 1
			rows = append(rows, r)
		}
		mins = append(mins, rows)
	}
	ls, low := reduceRows(mins, width, false)
	out = append(out, ls...)
	if len(ls) > 0 {
		width = len(ls[len(ls)-1])
	}
	maxes := [][][]float64{low[:t.g], low[t.g:]}
	ls, high := reduceRows(maxes, width, true)
	out = append(out, ls...)
	return append(out, [][]float64{high[0], high[1]})
}

func (t *monoTrunk) describe([]Statistic) string {
	return "monotone min-max network: a and b each the largest of " + strconv.Itoa(t.g) +
		" groups, each the smallest of " + strconv.Itoa(t.j) + " non-negative linear units over the statistics"
}

// reduceRows lays out, as bias-free ReLU layers, the minimum (or, isMax,
// the maximum) of each group of rows: each row is a linear combination of
// the previous layer's nodes (width wide) whose value is >= 0. It pairs
// values level by level, min(x, y) = x - relu(x - y) and max(x, y) = x +
// relu(y - x), carrying x through relu unchanged since it is >= 0. It
// returns the layers and each group's result as a row over the last of
// them (over the previous layer when no group needed one).
func reduceRows(groups [][][]float64, width int, isMax bool) (layers [][][]float64, out [][]float64) {
	cur := groups
	for {
		more := false
		for _, g := range cur {
			if len(g) > 1 {
				more = true
			}
		}
		if !more {
			break
		}
		var nodes [][]float64
		type pick struct{ a, d int } // node indices; d -1 when none
		picks := make([][]pick, len(cur))
		for gi, g := range cur {
			for i := 0; i < len(g); i += 2 {
				nodes = append(nodes, g[i])
				if i+1 == len(g) {
					picks[gi] = append(picks[gi], pick{len(nodes) - 1, -1})
					continue
				}
				diff := make([]float64, width)
				for k := range diff {
					if isMax {
						diff[k] = g[i+1][k] - g[i][k]
					} else {
						diff[k] = g[i][k] - g[i+1][k]
					}
				}
				nodes = append(nodes, diff)
				picks[gi] = append(picks[gi], pick{len(nodes) - 2, len(nodes) - 1})
			}
		}
		layers = append(layers, nodes)
		width = len(nodes)
		sign := -1.0
		if isMax {
			sign = 1
		}
		next := make([][][]float64, len(cur))
		for gi, ps := range picks {
			for _, p := range ps {
				r := make([]float64, width)
				r[p.a] = 1
				if p.d >= 0 {
					r[p.d] = sign
				}
				next[gi] = append(next[gi], r)
			}
		}
		cur = next
	}
	for _, g := range cur {
		out = append(out, g[0])
	}
	return layers, out
}

// averageTrunks is one MLP trunk whose outputs' pre-activations are the
// mean of ts' (every one an MLP trunk of the same shape over the same
// statistics): their hidden layers side by side (the first reads the
// statistics, each later one block-diagonal, a member's units reading only
// its own), the output rows their mean. It computes exactly the members'
// mean before the outputs' ReLU.
func averageTrunks(ts []trunk) (trunk, error) {
	if len(ts) == 0 {
		return nil, fmt.Errorf("averaging starts: no start")
	}
	ms := make([]*mlpTrunk, len(ts))
	for i, t := range ts {
		m, ok := t.(*mlpTrunk)
		if !ok {
			return nil, fmt.Errorf("averaging starts: a %T cannot be averaged, only an MLP trunk", t)
		}
		if i > 0 && !slices.Equal(m.sizes, ms[0].sizes) {
			return nil, fmt.Errorf("averaging starts: shapes %v and %v differ", ms[0].sizes, m.sizes)
		}
		ms[i] = m
	}
	K := len(ms)
	base := ms[0].sizes
	F := base[0]
	out := &mlpTrunk{sizes: []int{F}}
	for l := 1; l < len(base); l++ {
		out.sizes = append(out.sizes, K*base[l])
	}
	for l := range ms[0].w {
		in, width := base[l], base[l+1]
		bigIn := out.sizes[l]
		w := make([]float64, out.sizes[l+1]*bigIn)
		for k, m := range ms {
			for j := 0; j < width; j++ {
				row := w[(k*width+j)*bigIn : (k*width+j+1)*bigIn]
				src := m.w[l][j*in : (j+1)*in]
				if l == 0 {
					copy(row, src) // every member reads the statistics
				} else {
					copy(row[k*in:(k+1)*in], src)
				}
			}
		}
		out.w = append(out.w, w)
	}
	last, bigLast := base[len(base)-1], out.sizes[len(out.sizes)-1]
	out.wo = make([]float64, 2*bigLast)
	out.ws = make([]float64, 2*F)
	for k, m := range ms {
		for o := 0; o < 2; o++ {
			for i := 0; i < last; i++ {
				v := m.wo[o*last+i] / float64(K)
				if len(base) == 1 { // no hidden layer: wo reads the statistics too
					out.wo[o*bigLast+i] += v
				} else {
					out.wo[o*bigLast+k*last+i] = v
				}
			}
			for f := 0; f < F; f++ {
				out.ws[o*F+f] += m.ws[o*F+f] / float64(K)
			}
		}
	}
	return out, nil
}
