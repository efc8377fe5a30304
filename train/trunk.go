package train

import (
	"math"
	"math/rand/v2"
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
