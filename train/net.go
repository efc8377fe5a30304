package train

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// layer is one trainable layer: W is out x in (row-major), with a fixed
// sparsity mask (a masked weight is no edge and stays zero), lower bounds on
// weights (so that edges meant to carry data stay positive) and an upper
// bound on biases.
type layer struct {
	in, out  int
	w, b     []float64
	mask     []float64 // 1 where an edge may exist
	wMin     []float64 // per-weight lower bound (-Inf when free)
	bMax     float64   // biases are kept <= bMax
	sigmoid  bool      // output layer; hidden layers are ReLU
	mw, vw   []float64 // Adam moments
	mb, vb   []float64
	gw, gb   []float64
	z, a, dz []float64 // batch buffers: batch x out
}

func newLayer(in, out int, mask []float64, rng *rand.Rand, sigmoid bool) *layer {
	l := &layer{in: in, out: out, sigmoid: sigmoid, bMax: 0}
	n := in * out
	l.w, l.mask, l.wMin = make([]float64, n), mask, make([]float64, n)
	l.mw, l.vw, l.gw = make([]float64, n), make([]float64, n), make([]float64, n)
	l.b, l.mb, l.vb, l.gb = make([]float64, out), make([]float64, out), make([]float64, out), make([]float64, out)
	fan := 0.0
	for _, m := range mask {
		fan += m
	}
	fan /= float64(out)
	scale := math.Sqrt(2 / math.Max(fan, 1))
	for i := range l.w {
		l.wMin[i] = math.Inf(-1)
		if mask[i] != 0 {
			l.w[i] = rng.NormFloat64() * scale
		}
	}
	return l
}

func (l *layer) project() {
	for i := range l.w {
		if l.mask[i] == 0 {
			l.w[i] = 0
		} else if l.w[i] < l.wMin[i] {
			l.w[i] = l.wMin[i]
		}
	}
	for j := range l.b {
		if l.b[j] > l.bMax {
			l.b[j] = l.bMax
		}
	}
}

func (l *layer) ensure(batch int) {
	if len(l.z) < batch*l.out {
		l.z = make([]float64, batch*l.out)
		l.a = make([]float64, batch*l.out)
		l.dz = make([]float64, batch*l.out)
	}
}

// forward computes a = act(x W^T + b) for a batch x (batch x in).
func (l *layer) forward(x []float64, batch int) []float64 {
	l.ensure(batch)
	z := l.z[:batch*l.out]
	for r := 0; r < batch; r++ {
		copy(z[r*l.out:(r+1)*l.out], l.b)
	}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1,
		blas64.General{Rows: batch, Cols: l.in, Stride: l.in, Data: x},
		blas64.General{Rows: l.out, Cols: l.in, Stride: l.in, Data: l.w},
		1, blas64.General{Rows: batch, Cols: l.out, Stride: l.out, Data: z})
	a := l.a[:batch*l.out]
	for i, v := range z {
		if l.sigmoid {
			a[i] = 1 / (1 + math.Exp(-v))
		} else if v > 0 {
			a[i] = v
		} else {
			a[i] = 0
		}
	}
	return a
}

// backward takes dL/da (for the sigmoid output layer: dL/dz directly, as
// BCE with a sigmoid gives a - y) and the layer's input x; it accumulates
// the gradients and returns dL/dx in dx (batch x in) when dx is not nil.
func (l *layer) backward(da, x []float64, batch int, dx []float64) {
	dz := l.dz[:batch*l.out]
	if l.sigmoid {
		copy(dz, da)
	} else {
		for i, v := range l.z[:batch*l.out] {
			if v > 0 {
				dz[i] = da[i]
			} else {
				dz[i] = 0
			}
		}
	}
	// gw = dz^T x
	blas64.Gemm(blas.Trans, blas.NoTrans, 1,
		blas64.General{Rows: batch, Cols: l.out, Stride: l.out, Data: dz},
		blas64.General{Rows: batch, Cols: l.in, Stride: l.in, Data: x},
		0, blas64.General{Rows: l.out, Cols: l.in, Stride: l.in, Data: l.gw})
	clear(l.gb)
	for r := 0; r < batch; r++ {
		for j := 0; j < l.out; j++ {
			l.gb[j] += dz[r*l.out+j]
		}
	}
	if dx != nil {
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
			blas64.General{Rows: batch, Cols: l.out, Stride: l.out, Data: dz},
			blas64.General{Rows: l.out, Cols: l.in, Stride: l.in, Data: l.w},
			0, blas64.General{Rows: batch, Cols: l.in, Stride: l.in, Data: dx})
	}
}

// adam applies one Adam step (t counts from 1) and the projection.
func (l *layer) adam(lr float64, t int, batch int, l2 float64) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	c1 := 1 - math.Pow(b1, float64(t))
	c2 := 1 - math.Pow(b2, float64(t))
	inv := 1 / float64(batch)
	for i := range l.w {
		if l.mask[i] == 0 {
			continue
		}
		g := l.gw[i]*inv + l2*l.w[i]
		l.mw[i] = b1*l.mw[i] + (1-b1)*g
		l.vw[i] = b2*l.vw[i] + (1-b2)*g*g
		l.w[i] -= lr * (l.mw[i] / c1) / (math.Sqrt(l.vw[i]/c2) + eps)
	}
	for j := range l.b {
		g := l.gb[j] * inv
		l.mb[j] = b1*l.mb[j] + (1-b1)*g
		l.vb[j] = b2*l.vb[j] + (1-b2)*g*g
		l.b[j] -= lr * (l.mb[j] / c1) / (math.Sqrt(l.vb[j]/c2) + eps)
	}
	l.project()
}

// net is a stack of layers: ReLU hidden layers, a sigmoid output layer.
type net struct {
	layers []*layer
	dx     [][]float64
}

// loss runs forward and backward on one batch and returns the mean binary
// cross-entropy over all outputs.
func (n *net) step(x, y []float64, batch int) float64 {
	inputs := make([][]float64, len(n.layers))
	cur := x
	for i, l := range n.layers {
		inputs[i] = cur
		cur = l.forward(cur, batch)
	}
	out := n.layers[len(n.layers)-1]
	da := make([]float64, batch*out.out)
	var loss float64
	for i, p := range cur[:batch*out.out] {
		t := y[i]
		pc := math.Min(math.Max(p, 1e-12), 1-1e-12)
		loss -= t*math.Log(pc) + (1-t)*math.Log(1-pc)
		da[i] = p - t
	}
	if len(n.dx) != len(n.layers) {
		n.dx = make([][]float64, len(n.layers))
	}
	grad := da
	for i := len(n.layers) - 1; i >= 0; i-- {
		l := n.layers[i]
		var dx []float64
		if i > 0 {
			if len(n.dx[i]) < batch*l.in {
				n.dx[i] = make([]float64, batch*l.in)
			}
			dx = n.dx[i][:batch*l.in]
		}
		l.backward(grad, inputs[i], batch, dx)
		grad = dx
	}
	return loss / float64(batch*out.out)
}

// predictLoss is the mean BCE on a data set, without training.
func (n *net) predictLoss(x, y []float64, rows, width int) float64 {
	const batch = 512
	var loss float64
	outW := n.layers[len(n.layers)-1].out
	for r := 0; r < rows; r += batch {
		b := min(batch, rows-r)
		cur := x[r*width : (r+b)*width]
		for _, l := range n.layers {
			cur = l.forward(cur, b)
		}
		for i, p := range cur[:b*outW] {
			t := y[r*outW+i]
			pc := math.Min(math.Max(p, 1e-12), 1-1e-12)
			loss -= t*math.Log(pc) + (1-t)*math.Log(1-pc)
		}
	}
	return loss / float64(rows*outW)
}
