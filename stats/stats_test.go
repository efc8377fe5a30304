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
		"stdLast5":  {s.StdLast5, math.Sqrt(2)},     // 4..8
		"stdLast60": {s.StdLast60, math.Sqrt(5.25)}, // the whole window
		"riseMax":   {s.RiseMax, 1},
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

// StdLast5 and StdLast60 read their last values only, and RiseMax the
// largest rise from one value to the next anywhere in the window.
func TestSummarizeRecentSpreadsAndRise(t *testing.T) {
	tests := []struct {
		name                                    string
		w                                       []float64
		std5, std60, riseMax, riseLast20, rise5 float64
	}{
		{"one value", []float64{3}, 0, 0, 0, 0, 0},
		{"falling only", []float64{9, 7, 4, 2, 1}, math.Sqrt(9.04), math.Sqrt(9.04), 0, 0, 0},
		{"a ramp", ramp(11), math.Sqrt(2), math.Sqrt(10), 1, 1, 5},
		{"a rise early, calm after", append([]float64{1, 6}, repeat(2, 118)...), 0, 0, 5, 0, 1},                                                                   // rise5: 2 - 1
		{"the last 60 jumpy, calm before", append(repeat(5, 60), alternate(4, 6, 60)...), math.Sqrt(0.96), 1, 2, 2, 2},                                            // the last 5: 6, 4, 6, 4, 6
		{"a rise into the 20th value from the end", append(append(repeat(0, 100), 5), repeat(5, 19)...), 0, math.Sqrt(500.0/60 - (100.0/60)*(100.0/60)), 5, 0, 5}, // the last 60: 40 zeros, 20 fives
		{"a rise into the 19th value from the end", append(append(repeat(0, 101), 5), repeat(5, 18)...), 0, math.Sqrt(475.0/60 - (95.0/60)*(95.0/60)), 5, 5, 5},   // 41 zeros, 19 fives
		{"the last 5 jumpy, calm before", append(repeat(5, 115), 3, 7, 3, 7, 3), math.Sqrt(3.84), math.Sqrt(25 - (298.0/60)*(298.0/60)), 4, 4, 2},                 // the last 60: 55 fives and those five
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.w, nil)
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"std_last5", s.StdLast5, tt.std5}, {"std_last60", s.StdLast60, tt.std60},
				{"rise_max", s.RiseMax, tt.riseMax}, {"rise_max_last20", s.RiseMaxLast20, tt.riseLast20}, {"rise5_max", s.Rise5Max, tt.rise5},
			} {
				if math.Abs(c.got-c.want) > 1e-12 {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
		})
	}
}

// MaxMean5 and MaxMean20 are the largest means of 5 and 20 consecutive
// values (the whole window's mean when shorter): a spike of one sample
// moves them by at most a fifth and a twentieth of its height.
func TestSummarizeSustainedPeaks(t *testing.T) {
	tests := []struct {
		name          string
		w             []float64
		mean5, mean20 float64
	}{
		{"one value", []float64{3}, 3, 3},
		{"shorter than 5", []float64{1, 2, 3, 6}, 3, 3},
		{"exactly 5", []float64{1, 2, 3, 4, 5}, 3, 3},
		{"a ramp of 20", ramp(20), 17, 9.5},                                                                // 15..19; 0..19
		{"a spike of one sample", append(repeat(1, 60), append([]float64{21}, repeat(1, 59)...)...), 5, 2}, // 1 + 20/5; 1 + 20/20
		{"five high at the start", append(repeat(4, 5), repeat(0, 115)...), 4, 1},
		{"five high at the end", append(repeat(0, 115), repeat(4, 5)...), 4, 1},
		{"falling", []float64{9, 7, 4, 2, 1, 0, 0}, 4.6, 23.0 / 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.w, nil)
			if math.Abs(s.MaxMean5-tt.mean5) > 1e-12 || math.Abs(s.MaxMean20-tt.mean20) > 1e-12 {
				t.Errorf("max_mean5 %v, max_mean20 %v; want %v, %v", s.MaxMean5, s.MaxMean20, tt.mean5, tt.mean20)
			}
		})
	}
}

// ramp is 0, 1, ..., n-1.
func ramp(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func alternate(a, b float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = a
		if i%2 == 1 {
			out[i] = b
		}
	}
	return out
}
