package engine

import (
	"math/rand/v2"
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
