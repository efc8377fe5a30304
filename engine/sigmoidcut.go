package engine

import "math"

// A sigmoidCut decides, for one threshold t, whether the engine's sigmoid
// of a sum z (activate, actSigmoid) is >= t from z alone, away from t's
// logit: every z < below gives a value < t, and every z >= from a value
// >= t. Between the two the sigmoid must be computed (a NaN z is in neither
// and holds nothing). below = -Inf decides nothing below, from = NaN
// nothing above.
//
// The bounds rest on the true sigmoid σ being strictly increasing and the
// computed one, 1 / (1 + exp(-z)), being within 3ε of σ(z) relative to it
// wherever it is a normal number, for ε math.Exp's relative error (a few
// ulp at most, 2^-53 each: Go's assembly Exp on amd64 was measured at up to
// 1.7 ulp; the bounds need only ε below 10^-8). newSigmoidCut checks the
// computed sigmoid at each bound against t with a relative margin of
// cutMargin: sig(below) <= t(1 - cutMargin), so for z < below, σ(z) <
// σ(below) <= t(1 - cutMargin)/(1 - 3ε) and a normal computed value is at
// most (1 + 3ε) of that, below t; a value below the normal numbers (exp
// overflowing, or nearly) is below t too, as t >= cutMinThreshold. And
// sig(from) >= t(1 + cutMargin), so for z >= from the computed value is
// at least t(1 + cutMargin)(1 - 3ε)/(1 + 3ε) >= t. It does not rest on the
// computed sigmoid being monotone (so the tests cannot show the margins
// needed: wherever they look, the sigmoid does not fall from one float to
// the next).
type sigmoidCut struct{ below, from float64 }

const (
	// cutMargin: how far, relative to t, the sigmoid at a cut's bounds
	// is from t.
	cutMargin = 1e-7
	// cutMinThreshold: the smallest threshold given bounds (far above the
	// smallest normal number, about 2.2e-308; below it every sum is
	// computed).
	cutMinThreshold = 1e-200
)

// newSigmoidCut returns t's cut: bounds a millionth of (1 + |logit|) or so from
// t's logit, wider where the sigmoid is flat, or none (t not in
// [cutMinThreshold, 1), or NaN; no upper bound when t(1 + cutMargin) >= 1).
func newSigmoidCut(t float64) sigmoidCut {
	c := sigmoidCut{below: math.Inf(-1), from: math.NaN()}
	if !(t >= cutMinThreshold && t < 1) {
		return c
	}
	center := math.Log(t) - math.Log1p(-t)
	step := 1e-6 * (1 + math.Abs(center))
	for d := step; d < math.Inf(1); d *= 2 {
		if z := center - d; activate(actSigmoid, z) <= t*(1-cutMargin) {
			c.below = z
			break
		}
	}
	if t*(1+cutMargin) < 1 {
		for d := step; d < math.Inf(1); d *= 2 {
			if z := center + d; activate(actSigmoid, z) >= t*(1+cutMargin) {
				c.from = z
				break
			}
		}
	}
	return c
}

// holds reports sig(z) >= t, for c t's cut (false for a NaN z).
func (c sigmoidCut) holds(z, t float64) bool {
	return z >= c.from || z >= c.below && activate(actSigmoid, z) >= t
}
