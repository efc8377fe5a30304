package stats

import (
	"math"
	"testing"
)

func TestQuantileSorted(t *testing.T) {
	tests := []struct {
		name string
		data []float64
		q    float64
		want float64
	}{
		{"single value", []float64{7}, 0.95, 7},
		{"median of two", []float64{1, 3}, 0.5, 2},
		{"p0 is the minimum", []float64{1, 2, 3, 4}, 0, 1},
		{"p100 is the maximum", []float64{1, 2, 3, 4}, 1, 4},
		// position q*(n-1) = 0.9*4 = 3.6 -> 4 + 0.6*(5-4)
		{"definition 7", []float64{1, 2, 3, 4, 5}, 0.9, 4.6},
		{"empty is NaN", nil, 0.5, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := QuantileSorted(tt.data, tt.q)
			if math.IsNaN(tt.want) {
				if !math.IsNaN(got) {
					t.Fatalf("got %v, want NaN", got)
				}
				return
			}
			if math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQuantileDoesNotReorderItsInput(t *testing.T) {
	xs := []float64{5, 1, 4}
	if got := Quantile(xs, 0.5); got != 4 {
		t.Fatalf("median = %v, want 4", got)
	}
	if xs[0] != 5 || xs[1] != 1 || xs[2] != 4 {
		t.Fatalf("input changed: %v", xs)
	}
}

func TestMeanStdIsThePopulationEstimator(t *testing.T) {
	m, s := MeanStd([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if m != 5 || math.Abs(s-2) > 1e-12 {
		t.Fatalf("mean, std = %v, %v; want 5, 2 (population)", m, s)
	}
}

func TestSummarize(t *testing.T) {
	w := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	scratch := make([]float64, 0, 8)
	s := Summarize(w, scratch)
	checks := map[string][2]float64{
		"mean":      {s.Mean, 4.5},
		"max":       {s.Max, 8},
		"last":      {s.Last, 8},
		"meanLast5": {s.MeanLast5, 6},
		"maxLast5":  {s.MaxLast5, 8},
		"maxLast20": {s.MaxLast20, 8},
		"p50":       {s.P50, 4.5},
		"trend":     {s.Trend, 7.5 - 1.5},           // last quarter {7,8}, first {1,2}
		"stdLast20": {s.StdLast20, math.Sqrt(5.25)}, // the whole window: population variance of 1..8
	}
	for name, c := range checks {
		if math.Abs(c[0]-c[1]) > 1e-12 {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if w[0] != 1 || w[7] != 8 {
		t.Fatalf("Summarize changed its input: %v", w)
	}
	if allocs := testing.AllocsPerRun(100, func() { Summarize(w, scratch) }); allocs != 0 {
		t.Fatalf("Summarize allocates %v times with a large enough scratch", allocs)
	}
}

// StdLast20 reads the last 20 values only: a window calm before them and
// jumpy within them has the jumps' spread, not the window's.
func TestSummarizeStdLast20(t *testing.T) {
	w := make([]float64, 120)
	for i := range w {
		w[i] = 10
	}
	for i := 100; i < 120; i++ {
		w[i] = 10 + float64(2*(i%2)) // 10, 12, 10, 12...: std 1
	}
	s := Summarize(w, nil)
	if math.Abs(s.StdLast20-1) > 1e-12 {
		t.Errorf("std of the last 20 = %v, want 1", s.StdLast20)
	}
	if s.Std >= s.StdLast20 {
		t.Errorf("the window's std = %v, not below the recent one: the premise (calm before) fails", s.Std)
	}
	w[50] = 100 // a spike before the last 20 moves the window's spread, not the recent one
	if s2 := Summarize(w, nil); s2.StdLast20 != s.StdLast20 || s2.Std <= s.Std {
		t.Errorf("a spike before the last 20: recent %v (was %v), window %v (was %v)", s2.StdLast20, s.StdLast20, s2.Std, s.Std)
	}
}
