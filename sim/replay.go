package sim

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// WindowStats are statistics of a replica's usage over one decision window,
// as shares of a host's capacity.
type WindowStats struct {
	Mean, Std          float64
	P50, P90, P95, P99 float64
	Max                float64
	MeanLast5          float64
	MaxLast5           float64
}

// Replay is one series prepared for replay under a scenario: its
// normalised per-replica usage, the replicas' request, the hosts and, for
// every decision, the window statistics and the oracle's counts.
type Replay struct {
	Name     string
	Scenario Scenario
	// Times and Usage: Usage[t] is one replica's usage (share of capacity)
	// at Unix time Times[t], normalised to the scenario's p99.
	Times []int64
	Usage []float64
	// Request is a replica's CPU request, a share of capacity.
	Request float64

	// observed[t] is the per-replica usage the policies see at sample t:
	// the mean over the hosts' replicas of their own (shifted) usage at t.
	// It holds nothing from after t, so no policy reads a replica's future
	// (a replica lagging the series must not be judged by the series'
	// present). In the correlated scenario it is Usage.
	observed []float64

	hosts   []hostTrace
	stats   []WindowStats
	oracle  [][]int // [host][decision]
	maxRepl int     // effective cap (scenario cap or a large bound)
}

// hostTrace is how a host's usage follows from its replica count.
type hostTrace struct {
	correlated bool
	u          []float64
	samples    int       // T
	cum        []float32 // [(n-1)*T + t]: usage of replicas 0..n-1 at t, n >= 1
}

// usage is the host's total usage with n replicas at sample t.
func (h *hostTrace) usage(n, t int) float64 {
	if n <= 0 {
		return 0
	}
	if h.correlated {
		return float64(n) * h.u[t]
	}
	return float64(h.cum[(n-1)*h.samples+t])
}

// noCap bounds counts when the scenario sets no cap, so that a window of
// zero usage still gives a finite count.
const noCap = 1 << 20

// Decisions is the number of decision points: one every Interval samples
// from the end of the first window.
func (r *Replay) Decisions() int {
	w, iv := r.Scenario.Window, r.Scenario.Interval
	if len(r.Usage) <= w {
		return 0
	}
	return (len(r.Usage) - w + iv - 1) / iv
}

// At returns the sample index at which decision d takes effect; its window
// is samples [At(d)-Window, At(d)) and it holds until At(d+1).
func (r *Replay) At(d int) int { return r.Scenario.Window + d*r.Scenario.Interval }

// Block returns the samples decision d governs, [lo, hi).
func (r *Replay) Block(d int) (lo, hi int) {
	lo = r.At(d)
	return lo, min(lo+r.Scenario.Interval, len(r.Usage))
}

// Window returns the per-replica usage window of decision d as the hosts'
// replicas showed it up to the decision (shared; do not modify) and its
// timestamps.
func (r *Replay) Window(d int) ([]int64, []float64) {
	at := r.At(d)
	return r.Times[at-r.Scenario.Window : at], r.observed[at-r.Scenario.Window : at]
}

// Stats returns the window statistics of decision d.
func (r *Replay) Stats(d int) *WindowStats { return &r.stats[d] }

// Oracle returns the oracle's count for host h at decision d: the most
// replicas that never overload the host in the block.
func (r *Replay) Oracle(h, d int) int { return r.oracle[h][d] }

// Hosts returns the number of hosts.
func (r *Replay) Hosts() int { return len(r.hosts) }

// MaxReplicas is the largest count a host may run.
func (r *Replay) MaxReplicas() int { return r.maxRepl }

// HostUsage returns host h's total usage at sample t when it runs n
// replicas.
func (r *Replay) HostUsage(h, n, t int) float64 { return r.hosts[h].usage(min(n, r.maxRepl), t) }

// CountFor returns the most replicas whose estimated per-replica usage est
// fits a host: floor(1/est), never with n*est > 1 from rounding, within
// [0, MaxReplicas]. A zero estimate gives the cap.
func (r *Replay) CountFor(est float64) int { return countFor(est, r.maxRepl) }

func countFor(est float64, limit int) int {
	if !(est > 0) {
		if math.IsNaN(est) {
			return 0
		}
		return limit
	}
	x := math.Floor(1 / est)
	if x >= float64(limit) {
		return limit
	}
	n := int(x)
	for n > 0 && float64(n)*est > 1 {
		n--
	}
	return n
}

// Prepare normalises a series and builds its replay under sc. requestFactor
// scales the request (1 unless the scenario calibrates slack; see
// CalibrateRequests).
func Prepare(s traces.Series, sc Scenario, requestFactor float64) (*Replay, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if len(s.Values) < sc.Window+sc.Interval {
		return nil, fmt.Errorf("series %s: %d samples, need at least window+interval = %d", s.Name, len(s.Values), sc.Window+sc.Interval)
	}
	norm, err := traces.Normalize(s, sc.P99)
	if err != nil {
		return nil, err
	}
	r := &Replay{Name: s.Name, Scenario: sc, Times: norm.Times, Usage: norm.Values}
	r.Request = baseRequest(r.Usage, sc) * requestFactor
	if !(r.Request > 0) {
		return nil, fmt.Errorf("series %s: request (p%g of the first half) is %v; a replica must request something", s.Name, 100*sc.RequestQuantile, r.Request)
	}
	r.maxRepl = sc.MaxReplicas
	if r.maxRepl == 0 {
		r.maxRepl = noCap
	}
	r.buildHosts()
	r.buildStats()
	r.buildOracle()
	return r, nil
}

func baseRequest(u []float64, sc Scenario) float64 {
	return traces.Quantile(u[:len(u)/2], sc.RequestQuantile)
}

func (r *Replay) buildHosts() {
	sc := r.Scenario
	r.hosts = make([]hostTrace, sc.Hosts)
	if sc.Correlated {
		for h := range r.hosts {
			r.hosts[h] = hostTrace{correlated: true, u: r.Usage}
		}
		r.observed = r.Usage
		return
	}
	// Seed from the scenario and the series name only, so a series replays
	// the same whatever directory it is in.
	f := fnv.New64a()
	f.Write([]byte(r.Name))
	rng := rand.New(rand.NewPCG(sc.Seed, f.Sum64()))
	T, M := len(r.Usage), r.maxRepl
	for h := range r.hosts {
		// Row n-1 holds the usage of replicas 0..n-1, so that the samples
		// of one count are contiguous (a replay reads them in order).
		ht := hostTrace{u: r.Usage, samples: T, cum: make([]float32, T*M)}
		acc := make([]float64, T)
		for j := 0; j < M; j++ {
			shift := rng.IntN(sc.MaxShift + 1)
			scale := 1 + sc.ScaleJitter*(2*rng.Float64()-1)
			row := ht.cum[j*T : (j+1)*T]
			for t := range acc {
				acc[t] += scale * r.Usage[max(0, t-shift)]
				row[t] = float32(acc[t])
			}
		}
		r.hosts[h] = ht
	}
	r.observed = make([]float64, T)
	for h := range r.hosts {
		all := r.hosts[h].cum[(M-1)*T : M*T]
		for t, v := range all {
			r.observed[t] += float64(v) / float64(M*len(r.hosts))
		}
	}
}

func (r *Replay) buildStats() {
	D := r.Decisions()
	r.stats = make([]WindowStats, D)
	sorted := make([]float64, r.Scenario.Window)
	for d := 0; d < D; d++ {
		_, w := r.Window(d)
		r.stats[d] = windowStats(w, sorted)
	}
}

// windowStats computes the statistics of w using scratch (len(w)) for
// sorting. Quantiles interpolate linearly between order statistics; the
// standard deviation is the population one.
func windowStats(w, scratch []float64) WindowStats {
	n := len(w)
	var sum float64
	for _, v := range w {
		sum += v
	}
	mean := sum / float64(n)
	var ss float64
	for _, v := range w {
		ss += (v - mean) * (v - mean)
	}
	s := scratch[:n]
	copy(s, w)
	sort.Float64s(s)
	last := w[max(0, n-5):]
	var ls, lm float64
	for _, v := range last {
		ls += v
		lm = math.Max(lm, v)
	}
	return WindowStats{
		Mean: mean, Std: math.Sqrt(ss / float64(n)),
		P50: traces.QuantileSorted(s, 0.50), P90: traces.QuantileSorted(s, 0.90),
		P95: traces.QuantileSorted(s, 0.95), P99: traces.QuantileSorted(s, 0.99),
		Max: s[n-1], MeanLast5: ls / float64(len(last)), MaxLast5: lm,
	}
}

func (r *Replay) buildOracle() {
	D := r.Decisions()
	r.oracle = make([][]int, len(r.hosts))
	for h := range r.hosts {
		ht := &r.hosts[h]
		o := make([]int, D)
		for d := 0; d < D; d++ {
			lo, hi := r.Block(d)
			if ht.correlated {
				peak := 0.0
				for t := lo; t < hi; t++ {
					peak = math.Max(peak, r.Usage[t])
				}
				o[d] = countFor(peak, r.maxRepl)
				continue
			}
			// Usage grows with n: binary search the largest n that fits
			// at every sample of the block.
			fits := func(n int) bool {
				for t := lo; t < hi; t++ {
					if ht.usage(n, t) > 1 {
						return false
					}
				}
				return true
			}
			a, b := 0, r.maxRepl // fits(a) always; find the largest
			for a < b {
				m := (a + b + 1) / 2
				if fits(m) {
					a = m
				} else {
					b = m - 1
				}
			}
			o[d] = a
		}
		r.oracle[h] = o
	}
}

// usageOverRequest returns u/req for every sample of the series.
func usageOverRequest(u []float64, req float64) []float64 {
	out := make([]float64, len(u))
	for i, v := range u {
		out[i] = v / req
	}
	return out
}

// SlackStats measures request slack, (request - usage) / request, over
// every sample of every replay the way the yardstick states it: Median is
// the median over all samples pooled, MeanOfMedians the mean over series of
// each series' median.
func SlackStats(rs []*Replay) (median, meanOfMedians float64) {
	var pooled []float64
	for _, r := range rs {
		x := usageOverRequest(r.Usage, r.Request)
		pooled = append(pooled, x...)
		meanOfMedians += (1 - traces.Quantile(x, 0.5)) / float64(len(rs))
	}
	return 1 - traces.Quantile(pooled, 0.5), meanOfMedians
}

// CalibrateRequests returns the request factor f, common to all series,
// that makes the pooled median slack of the replay equal sc.TargetSlack (1
// when the scenario sets no target). Slack at factor f is
// 1 - median(u/req)/f, so f = median(u/req) / (1 - target).
func CalibrateRequests(all []traces.Series, sc Scenario) (float64, error) {
	if sc.TargetSlack == 0 {
		return 1, nil
	}
	var pooled []float64
	for _, s := range all {
		norm, err := traces.Normalize(s, sc.P99)
		if err != nil {
			return 0, err
		}
		req := baseRequest(norm.Values, sc)
		if !(req > 0) {
			return 0, fmt.Errorf("series %s: request (p%g of the first half) is %v; a replica must request something", s.Name, 100*sc.RequestQuantile, req)
		}
		pooled = append(pooled, usageOverRequest(norm.Values, req)...)
	}
	if len(pooled) == 0 {
		return 0, fmt.Errorf("calibrating requests: no samples")
	}
	return traces.Quantile(pooled, 0.5) / (1 - sc.TargetSlack), nil
}
