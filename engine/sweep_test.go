package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// A sweep gives, at every threshold, the amounts a full analysis with the
// model's threshold set to it gives, on thousands of random networks.
func TestSweepMatchesAnalysisAtEachThreshold(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 14))
	thresholds := []float64{-2, -0.5, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1.5}
	compared := 0
	for n := 0; n < 2000; n++ {
		m := randomModel(r)
		p, err := NewProcessor(m)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float64, len(m.Inputs))
		for i := range x {
			x[i] = r.NormFloat64()
		}
		for _, role := range []string{RoleFirst, RoleSecond} {
			if p.Slots(role) == 0 {
				continue
			}
			got := make([]int, len(thresholds))
			if err := p.sweepInput(x, NewWorkspace(p), role, thresholds, got); err != nil {
				t.Fatal(err)
			}
			for i, thr := range thresholds {
				c := *m
				c.OutputThreshold = &thr
				if c.Validate() != nil {
					continue // a threshold outside the output activation's range
				}
				q, err := NewProcessor(&c)
				if err != nil {
					t.Fatal(err)
				}
				an, err := q.Analyze(x, NewWorkspace(q))
				if err != nil {
					t.Fatal(err)
				}
				want := an.OutputAmount
				if role == RoleFirst {
					want = an.InputAmount
				}
				if got[i] != want {
					t.Fatalf("model %d, %s host, threshold %v: sweep %d, analysis %d", n, role, thr, got[i], want)
				}
				compared++
			}
		}
	}
	if compared < 5000 {
		t.Fatalf("only %d comparisons", compared)
	}
}

// countAtLeast counts as a comparison of every value with every threshold
// does, sorted or not: values and thresholds with NaN, ±Inf, ±0 and ties.
func TestCountAtLeast(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 0.5, 1}
	pick := func() float64 {
		if r.IntN(3) == 0 {
			return special[r.IntN(len(special))]
		}
		return math.Round(r.NormFloat64()*8) / 8 // ties
	}
	for n := 0; n < 3000; n++ {
		vals := make([]float64, r.IntN(40))
		for i := range vals {
			vals[i] = pick()
		}
		thresholds := make([]float64, 1+r.IntN(2*sortedCountsFrom))
		for i := range thresholds {
			thresholds[i] = pick()
		}
		want := make([]int, len(thresholds))
		for i, th := range thresholds {
			for _, v := range vals {
				if v >= th {
					want[i]++
				}
			}
		}
		got := make([]int, len(thresholds))
		countAtLeast(slices.Clone(vals), thresholds, got)
		if !slices.Equal(got, want) {
			t.Fatalf("values %v, thresholds %v: counted %v, want %v", vals, thresholds, got, want)
		}
	}
}
