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

// A lazy sweep counts from the outputs' sums in their kept order as every
// sum's sigmoid would count: sums that pass one another a few at a time
// (the order mended), many at once (the order left, every sum read), NaN,
// the infinities, both zeros and ties, tallies of 0 to 3 moving, and
// thresholds whose band holds sums.
func TestLazyAmountsBySumOrder(t *testing.T) {
	p, err := Builtin("admission")
	if err != nil {
		t.Fatal(err)
	}
	s := p.NewSweeper()
	r := rand.New(rand.NewPCG(12, 7))
	for o := range s.z {
		s.z[o] = 10 - 0.2*float64(o)
		s.mult[o] = 1
	}
	s.sumsMoved, s.multMoved = true, true
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)}
	var mended, left, banded int
	for round := range 3000 {
		moved := 0
		switch k := r.IntN(20); {
		case k == 0: // many sums at once
			for o := range s.z {
				s.z[o] = 20*r.Float64() - 10
			}
			moved = len(s.z)
		case k == 1: // back in the kept order
			for i, o := range s.byZ {
				s.z[o] = 10 - 0.2*float64(i)
			}
			moved = len(s.z)
		case k < 4: // a special value, or a tie with another sum
			o := r.IntN(len(s.z))
			if r.IntN(2) == 0 {
				s.z[o] = special[r.IntN(len(special))]
			} else {
				s.z[o] = s.z[r.IntN(len(s.z))]
			}
			moved = 1
		case k < 6: // a tally
			s.mult[r.IntN(len(s.mult))] = int32(r.IntN(4))
			s.multMoved = true
		default: // a few sums, passing their neighbours or not
			for range 1 + r.IntN(4) {
				o := r.IntN(len(s.z))
				if math.IsNaN(s.z[o]) || math.IsInf(s.z[o], 0) {
					s.z[o] = 0
				}
				s.z[o] += 0.5 * r.NormFloat64()
				moved++
			}
		}
		s.sumsMoved = s.sumsMoved || moved > 0
		// thresholds: some at the sigmoid of a sum (so the band holds it)
		thresholds := []float64{math.Inf(-1), 0.5, r.Float64(), activate(actSigmoid, s.z[r.IntN(len(s.z))]), math.NaN(), 1}
		got := make([]int, len(thresholds))
		s.lazyAmounts(thresholds, got)
		if s.disordered {
			left++
		} else {
			mended++
			for k := 1; k < len(s.zs); k++ {
				if before(s.zs[k], s.zs[k-1]) {
					t.Fatalf("round %d: sums %v out of order at %d", round, s.zs, k)
				}
			}
		}
		for i, th := range thresholds {
			want := 0
			for o, z := range s.z {
				if activate(actSigmoid, z) >= th {
					want += int(s.mult[o])
				}
			}
			if got[i] != want {
				t.Fatalf("round %d, threshold %v: %d counted, want %d (sums %v, tallies %v)", round, th, got[i], want, s.z, s.mult)
			}
			if c := s.cut(th); !s.disordered && atLeast(s.zs, c.below) > atLeast(s.zs, c.from) {
				banded++
			}
		}
	}
	t.Logf("the order mended %d times, left %d times; %d counts read a band", mended, left, banded)
	if mended < 1000 || left < 100 || banded < 1000 {
		t.Fatalf("the order mended %d times, left %d times; %d counts read a band", mended, left, banded)
	}
}

// A Sweeper's kept cuts are each threshold's own, however the thresholds
// share slots: 3,000 thresholds (many to a pair of slots) read in turn, and
// again in a random order.
func TestSweeperCutSlots(t *testing.T) {
	p, err := Builtin("admission")
	if err != nil {
		t.Fatal(err)
	}
	s := p.NewSweeper()
	r := rand.New(rand.NewPCG(2, 2))
	ths := []float64{math.NaN(), math.Inf(-1), 0, math.Copysign(0, -1), 1, 0.5}
	for range 3000 {
		ths = append(ths, r.Float64())
	}
	same := func(a, b sigmoidCut) bool {
		return math.Float64bits(a.below) == math.Float64bits(b.below) && math.Float64bits(a.from) == math.Float64bits(b.from)
	}
	// Two thresholds whose bits pick the same pair of slots are both kept.
	home := func(th float64) uint64 { return (math.Float64bits(th) * 0x9e3779b97f4a7c15) >> (64 - cutSlotBits) }
	first := map[uint64]float64{}
	pairs := 0
	for _, th := range ths {
		a, ok := first[home(th)]
		if !ok {
			first[home(th)] = th
			continue
		}
		s.cuts = nil
		s.cut(a)
		s.cut(th)
		i := home(th)
		if e, f := s.cuts[i], s.cuts[i^1]; e.bits != math.Float64bits(a) || f.bits != math.Float64bits(th) || !e.made || !f.made {
			t.Fatalf("thresholds %v and %v, both at slot %d: the pair holds %+v and %+v", a, th, i, e, f)
		}
		pairs++
	}
	if pairs < 100 {
		t.Fatalf("only %d thresholds shared a slot", pairs)
	}
	for round := range 3 {
		for _, i := range r.Perm(len(ths)) {
			for _, th := range []float64{ths[i], ths[(i+1)%len(ths)], ths[i]} {
				if got, want := s.cut(th), newSigmoidCut(th); !same(got, want) {
					t.Fatalf("round %d: threshold %v: cut %+v, want %+v", round, th, got, want)
				}
			}
		}
	}
}
