// Package stats holds the statistics every part of the project computes on
// usage series: the mean and population standard deviation (gonum's
// estimators), linearly interpolated quantiles, and the window summary that
// the engine's features and the simulator's baseline policies read, so that
// a "p95 of the window" means the same number everywhere.
package stats

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
)

// Mean is the arithmetic mean of xs (NaN for an empty slice).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return stat.Mean(xs, nil)
}

// MeanStd returns the mean and the population standard deviation of xs
// (gonum's PopMeanStdDev: divisor n, not n-1).
func MeanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	return stat.PopMeanStdDev(xs, nil)
}

// Max is the largest value of xs (NaN for an empty slice).
func Max(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return floats.Max(xs)
}

// QuantileSorted returns the q-quantile of sorted (ascending) data,
// interpolating linearly between order statistics at position q*(n-1)
// (Hyndman and Fan's definition 7, the default of R and NumPy). gonum's
// stat.Quantile interpolates at q*n instead, a different estimator, which
// is why this one is written here.
func QuantileSorted(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	pos := q * float64(n-1)
	lo := int(pos)
	if lo+1 >= n {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// Quantile is QuantileSorted on a sorted copy of xs.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	c := append([]float64(nil), xs...)
	sort.Float64s(c)
	return QuantileSorted(c, q)
}

// Summary describes one window of a usage series.
type Summary struct {
	Mean, Std          float64
	P50, P90, P95, P99 float64
	Max                float64
	Last               float64
	// MeanLast5 and MaxLast5 are over the last 5 values, MaxLast20 over the
	// last 20 (the whole window when shorter).
	MeanLast5, MaxLast5 float64
	MaxLast20           float64
	// StdLast20 is the population standard deviation of the last 20
	// values (the whole window when shorter): the recent dispersion.
	StdLast20 float64
	// StdLast5 and StdLast60 are the same over the last 5 and the last 60
	// values (the whole window when shorter).
	StdLast5, StdLast60 float64
	// RiseMax is the largest rise from one value to the next in the window
	// (0 when no value exceeds the one before it, or for one value).
	RiseMax float64
	// RiseMaxLast20 is the same over the last 20 values (the 19 steps
	// between them; a rise into the 20th value from the end is not one);
	// Rise5Max the largest rise over five values, w[i] - w[i-5] (0 for
	// fewer than six).
	RiseMaxLast20, Rise5Max float64
	// MaxMean5 and MaxMean20 are the largest mean of 5 and of 20
	// consecutive values (the whole window's mean when shorter): the
	// window's sustained peaks, which a single sample's spike moves by at
	// most a fifth or a twentieth of its height (in a window of at least
	// 5 or 20 values).
	MaxMean5, MaxMean20 float64
	// Trend is the mean of the last quarter minus the mean of the first
	// quarter (at least one value each).
	Trend float64
}

// Summarize computes the summary of w (len(w) >= 1). scratch, when it has
// the capacity, is used for sorting so that repeated calls allocate
// nothing; w itself is not changed.
func Summarize(w, scratch []float64) Summary {
	n := len(w)
	if n == 0 {
		nan := math.NaN()
		return Summary{nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan}
	}
	if cap(scratch) < n {
		scratch = make([]float64, n)
	}
	s := scratch[:n]
	copy(s, w)
	sort.Float64s(s)
	var out Summary
	out.Mean, out.Std = stat.PopMeanStdDev(w, nil)
	out.P50 = QuantileSorted(s, 0.50)
	out.P90 = QuantileSorted(s, 0.90)
	out.P95 = QuantileSorted(s, 0.95)
	out.P99 = QuantileSorted(s, 0.99)
	out.Max = s[n-1]
	out.Last = w[n-1]
	last5 := w[max(0, n-5):]
	out.MeanLast5 = stat.Mean(last5, nil)
	out.MaxLast5 = floats.Max(last5)
	out.MaxLast20 = floats.Max(w[max(0, n-20):])
	_, out.StdLast20 = stat.PopMeanStdDev(w[max(0, n-20):], nil)
	_, out.StdLast5 = stat.PopMeanStdDev(last5, nil)
	_, out.StdLast60 = stat.PopMeanStdDev(w[max(0, n-60):], nil)
	for i := 1; i < n; i++ {
		r := w[i] - w[i-1]
		out.RiseMax = max(out.RiseMax, r)
		if i >= n-19 {
			out.RiseMaxLast20 = max(out.RiseMaxLast20, r)
		}
		if i >= 5 {
			out.Rise5Max = max(out.Rise5Max, w[i]-w[i-5])
		}
	}
	out.MaxMean5 = maxMean(w, 5)
	out.MaxMean20 = maxMean(w, 20)
	q := max(1, n/4)
	out.Trend = stat.Mean(w[n-q:], nil) - stat.Mean(w[:q], nil)
	return out
}

// maxMean is the largest mean of k consecutive values of w (len(w) >= 1),
// the mean of all of w when it has fewer than k: one pass, the sum slid
// along w.
func maxMean(w []float64, k int) float64 {
	if len(w) <= k {
		return stat.Mean(w, nil)
	}
	sum := floats.Sum(w[:k])
	best := sum
	for i := k; i < len(w); i++ {
		sum += w[i] - w[i-k]
		best = max(best, sum)
	}
	return best / float64(k)
}
