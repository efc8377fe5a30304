package engine

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A threshold's cut decides sig(z) >= t as the sigmoid itself does, for
// every sum tried: the floats on either side of each bound and of t's
// logit, sums drawn near the logit and far from it, and the infinities,
// NaN and the zeros; and for thresholds that get bounds and ones that
// must not (t outside [1e-200, 1), NaN).
func TestSigmoidCut(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 11))
	thresholds := []float64{
		1e-200, 1e-100, 1e-10, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1 - 1e-6, 1 - 1e-7, 1 - 0x1p-53,
		0, math.Copysign(0, -1), -1, 1, 1.5, 1e-201, 5e-324, math.NaN(), math.Inf(1), math.Inf(-1),
		ShiftThreshold(0.5, 0.5), ShiftThreshold(0.5, -0.5), ShiftThreshold(0.97, 0.5),
	}
	for range 200 {
		thresholds = append(thresholds, r.Float64(), math.Pow(10, -30*r.Float64()), 1-math.Pow(10, -12*r.Float64()))
	}
	bounded := 0
	for _, th := range thresholds {
		c := newSigmoidCut(th)
		center := math.Log(th) - math.Log1p(-th)
		var zs []float64
		near := func(z float64) {
			if math.IsNaN(z) || math.IsInf(z, 0) {
				return
			}
			up, down := z, z
			for range 300 {
				up, down = math.Nextafter(up, math.Inf(1)), math.Nextafter(down, math.Inf(-1))
				zs = append(zs, up, down)
			}
			zs = append(zs, z)
		}
		near(c.below)
		near(c.from)
		near(center)
		for range 2000 {
			zs = append(zs, center+r.NormFloat64()*math.Pow(10, -9*r.Float64()), 60*r.NormFloat64())
		}
		zs = append(zs, math.Inf(1), math.Inf(-1), math.NaN(), 0, math.Copysign(0, -1), math.MaxFloat64, -math.MaxFloat64, 800, -800)
		for _, z := range zs {
			want := activate(actSigmoid, z) >= th
			if got := c.holds(z, th); got != want {
				t.Fatalf("t %v (cut %+v): at z %v the cut says %v, the sigmoid %v", th, c, z, got, want)
			}
		}
		inside := th >= cutMinThreshold && th < 1
		if !inside && (!math.IsInf(c.below, -1) || !math.IsNaN(c.from)) {
			t.Fatalf("t %v has bounds %+v; it must have none", th, c)
		}
		// A threshold well inside (0, 1) gets both bounds, within a
		// thousandth of a logit of its own, or where the sigmoid is flat
		// near 1 what moves it by a few cutMargin (else the cut saves
		// nothing).
		if th >= 1e-100 && th <= 1-1e-5 {
			if !(c.below < center && center < c.from) || c.from-c.below > 1e-3*(1+math.Abs(center))+8*cutMargin/(1-th) {
				t.Fatalf("t %v (logit %v): bounds %+v", th, center, c)
			}
			bounded++
		}
	}
	if bounded < 300 {
		t.Fatalf("only %d thresholds had both bounds checked", bounded)
	}
}
