package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/stats"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// WindowStats are statistics of a replica's usage over one decision window,
// as shares of a host's capacity: the project's one window summary.
type WindowStats = stats.Summary

// App is one application as the replay runs it: its normalised
// per-replica usage and its replicas' requests, all shares of a host's
// capacity.
type App struct {
	Name string
	// Times and Usage: Usage[t] is one replica's CPU usage (share of the
	// host's CPU) at Unix time Times[t], normalised to the scenario's p99.
	Times []int64
	Usage []float64
	// Request is a replica's CPU request, a share of the host's CPU.
	Request float64
	// Memory is one replica's memory in use, a share of the host's memory
	// (nil when the scenario does not replay memory); MemoryRequest is a
	// replica's memory request, a share of the host's memory, and
	// HostMemoryMB the host's memory capacity in the trace's MB (the
	// engine's observations give memory in units of HostMemoryMB, the
	// constant, as they give CPU in units of HostMHz).
	Memory        []float64
	MemoryRequest float64
	HostMemoryMB  float64

	// observed[t] (observedMem[t]) is the per-replica usage the policies
	// see at sample t: the mean over the replicas of the hosts running the
	// application of their own (shifted) usage at t. It holds nothing from
	// after t, so no policy reads a replica's future (a replica lagging the
	// series must not be judged by the series' present). With correlated
	// replicas it is Usage (Memory).
	observed, observedMem []float64
	// gridMHz[t] (gridMB[t]) is observed[t] (observedMem[t]) in the
	// engine's units on the grid of its observations (onGrid), computed
	// once for every count an observation multiplies it by.
	gridMHz, gridMB []float64
	stats, memStats []WindowStats
}

// Replay is one replay unit prepared under a scenario: the hosts, the
// applications they run (one, or two with DifferentApps), for every
// decision the window statistics, and the oracle's counts.
type Replay struct {
	Name     string
	Scenario Scenario

	apps    []*App
	hosts   []hostTrace
	samples int
	period  float64 // typical seconds between samples
	maxRepl int     // effective cap (scenario cap or a large bound)
	// exact is exactCount, set with the grid: the largest count at which
	// an observation's products of the count and the gridded figures are
	// exact
	exact int
}

// hostTrace is how a host's usage follows from its replica count.
type hostTrace struct {
	app        *App
	correlated bool
	samples    int       // T
	cum        []float32 // [(n-1)*T + t]: CPU of replicas 0..n-1 at t, n >= 1
	cumMem     []float32 // the same for memory (nil without memory)
	oracle     []int
}

// usage is the host's total CPU usage with n replicas at sample t.
func (h *hostTrace) usage(n, t int) float64 {
	if n <= 0 {
		return 0
	}
	if h.correlated {
		return float64(n) * h.app.Usage[t]
	}
	return float64(h.cum[(n-1)*h.samples+t])
}

// memory is the host's total memory use with n replicas at sample t (0
// without memory).
func (h *hostTrace) memory(n, t int) float64 {
	if n <= 0 || h.app.Memory == nil {
		return 0
	}
	if h.correlated {
		return float64(n) * h.app.Memory[t]
	}
	return float64(h.cumMem[(n-1)*h.samples+t])
}

// noCap bounds counts when the scenario sets no cap, so that a window of
// zero usage still gives a finite count.
const noCap = 1 << 20

// Samples is the number of samples replayed.
func (r *Replay) Samples() int { return r.samples }

// Decisions is the number of decision points: one every Interval samples
// from the end of the first window.
func (r *Replay) Decisions() int {
	w, iv := r.Scenario.Window, r.Scenario.Interval
	if r.samples <= w {
		return 0
	}
	return (r.samples - w + iv - 1) / iv
}

// At returns the sample index at which decision d takes effect; its window
// is samples [At(d)-Window, At(d)) and it holds until At(d+1).
func (r *Replay) At(d int) int { return r.Scenario.Window + d*r.Scenario.Interval }

// Block returns the samples decision d governs, [lo, hi).
func (r *Replay) Block(d int) (lo, hi int) {
	lo = r.At(d)
	return lo, min(lo+r.Scenario.Interval, r.samples)
}

// App returns the application host h runs.
func (r *Replay) App(h int) *App { return r.hosts[h].app }

// Apps returns the replay's applications, the first host's first.
func (r *Replay) Apps() []*App { return r.apps }

// Window returns host h's per-replica CPU usage window of decision d as
// the replicas showed it up to the decision (shared; do not modify) and
// its timestamps.
func (r *Replay) Window(h, d int) ([]int64, []float64) {
	at, a := r.At(d), r.hosts[h].app
	return a.Times[at-r.Scenario.Window : at], a.observed[at-r.Scenario.Window : at]
}

// gridWindow is Window on the engine's grid (gridMHz) with its memory
// (gridMB; nil without memory).
func (r *Replay) gridWindow(h, d int) (times []int64, cpu, mem []float64) {
	at, a := r.At(d), r.hosts[h].app
	lo := at - r.Scenario.Window
	if a.gridMB != nil {
		mem = a.gridMB[lo:at]
	}
	return a.Times[lo:at], a.gridMHz[lo:at], mem
}

// Stats returns the CPU window statistics of host h's application at
// decision d.
func (r *Replay) Stats(h, d int) *WindowStats { return &r.hosts[h].app.stats[d] }

// MemoryStats returns the memory window statistics (nil without memory).
func (r *Replay) MemoryStats(h, d int) *WindowStats {
	a := r.hosts[h].app
	if a.memStats == nil {
		return nil
	}
	return &a.memStats[d]
}

// HasMemory reports whether the replay judges memory.
func (r *Replay) HasMemory() bool { return r.apps[0].Memory != nil }

// Oracle returns the oracle's count for host h at decision d: the most
// replicas that never overload the host (CPU or memory) in the block.
func (r *Replay) Oracle(h, d int) int { return r.hosts[h].oracle[d] }

// Hosts returns the number of hosts.
func (r *Replay) Hosts() int { return len(r.hosts) }

// MaxReplicas is the largest count a host may run.
func (r *Replay) MaxReplicas() int { return r.maxRepl }

// HostUsage returns host h's total CPU usage at sample t when it runs n
// replicas (share of capacity).
func (r *Replay) HostUsage(h, n, t int) float64 { return r.hosts[h].usage(min(n, r.maxRepl), t) }

// HostMemory returns host h's total memory use at sample t when it runs n
// replicas (share of its memory; 0 without memory).
func (r *Replay) HostMemory(h, n, t int) float64 { return r.hosts[h].memory(min(n, r.maxRepl), t) }

// CountFor returns the most replicas whose estimated per-replica usage est
// fits a host: floor(1/est), never with n*est > 1 from rounding, within
// [0, MaxReplicas]. A zero estimate gives the cap.
func (r *Replay) CountFor(est float64) int { return countFor(est, r.maxRepl) }

// StartCount is the count every host starts at: request-sum admission
// without overcommit (requests, CPU and memory, within capacity).
func (r *Replay) StartCount(h int) int {
	a := r.hosts[h].app
	n := r.CountFor(a.Request)
	if a.Memory != nil {
		n = min(n, r.CountFor(a.MemoryRequest))
	}
	return n
}

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

// Hours is the replayed time after the first window: the samples replayed
// times the series' typical sample period (the median gap, so that a trace
// with gaps between its days counts the time it covers).
func (r *Replay) Hours() float64 {
	n := r.samples - r.Scenario.Window
	if n <= 0 {
		return 0
	}
	return float64(n) * r.period / 3600
}

// UnusableError says why a series cannot be replayed under a scenario (too
// short, or no usage to normalise): a run leaves it out and reports it.
type UnusableError struct {
	Series string
	Reason string
}

func (e *UnusableError) Error() string { return fmt.Sprintf("series %s: %s", e.Series, e.Reason) }

// MinSamples is the fewest samples a series needs to be replayed under sc:
// a window and one interval after it (a shorter one is left out of a run,
// as an *UnusableError).
func (sc Scenario) MinSamples() int { return sc.Window + sc.Interval }

// Usable returns nil when s can be replayed under sc, or why not (an
// *UnusableError for a series a run leaves out, as too short, without
// usage or with an outlier).
func (sc Scenario) Usable(s traces.Series) error {
	_, err := normalise(s, sc)
	return err
}

// normalise makes a series an application under sc, with its base request
// (before calibration); an *UnusableError when the series cannot be
// replayed.
func normalise(s traces.Series, sc Scenario) (*App, error) {
	if len(s.Values) < sc.MinSamples() {
		return nil, &UnusableError{s.Name, fmt.Sprintf("%d samples, need at least window+interval = %d", len(s.Values), sc.MinSamples())}
	}
	if sc.Memory && !s.HasMemory() {
		if s.Memory != nil {
			return nil, fmt.Errorf("series %s: scenario %s replays memory, but the series' memory capacity column (mem_capacity_kb or memory_capacity_mb) is 0 or empty in every row: the memory provisioned is unknown", s.Name, sc.Name)
		}
		return nil, fmt.Errorf("series %s: scenario %s replays memory, but the series has no memory columns (mem_kb or memory_mb, with mem_capacity_kb or memory_capacity_mb; Bitbrains' traces have them)", s.Name, sc.Name)
	}
	if sc.Memory {
		// Twice the memory provisioned is no overcommit a VM shows: the
		// columns are swapped or in different units.
		for i, m := range s.Memory {
			if m > 2*s.MemoryProvisionedMB {
				return nil, &UnusableError{s.Name, fmt.Sprintf("memory in use at time %d (%g MB) is more than twice the most memory provisioned in the series (%g MB): are the memory columns swapped, or in different units?", s.Times[i], m, s.MemoryProvisionedMB)}
			}
		}
	}
	norm, err := traces.Normalize(s, sc.P99)
	if err != nil {
		return nil, &UnusableError{s.Name, fmt.Sprintf("no usage to normalise (%v)", err)}
	}
	a := &App{Name: s.Name, Times: norm.Times, Usage: norm.Values}
	if u := outlier(a.Usage, a.Times, sc, HostMHz, "MHz", "times the series' p99", 1/sc.P99); u != "" {
		return nil, &UnusableError{s.Name, u}
	}
	a.Request = baseRequest(a.Usage, sc)
	if !(a.Request > 0) {
		return nil, &UnusableError{s.Name, fmt.Sprintf("request (p%g of the first half) is %v; a replica must request something", 100*sc.RequestQuantile, a.Request)}
	}
	if sc.Memory {
		a.HostMemoryMB = sc.MemoryHostReplicas * s.MemoryProvisionedMB
		a.MemoryRequest = 1 / sc.MemoryHostReplicas
		a.Memory = make([]float64, len(s.Memory))
		for i, m := range s.Memory {
			a.Memory[i] = m / a.HostMemoryMB
		}
		if u := outlier(a.Memory, a.Times, sc, HostMemoryMB, "MB", "times the host's memory", 1); u != "" {
			return nil, &UnusableError{s.Name, "memory: " + u}
		}
	}
	return a, nil
}

// outlier says why a normalised series (shares of a host of unit units)
// cannot be replayed: a host of the scenario's most replicas would show the
// engine a sample past its bound (engine.MaxResource), which only a sample
// thousands of times the series' p99 does (an outlier, or a change of units
// inside the file). "" when none.
//
// A value v is v*per of what (a share of the host, as p99s or as the host's
// memory).
func outlier(v []float64, times []int64, sc Scenario, unit float64, units, what string, per float64) string {
	if len(v) == 0 {
		return ""
	}
	i := 0
	for j, x := range v {
		if x > v[i] {
			i = j
		}
	}
	most := float64(max(sc.MaxReplicas, 1))
	if v[i]*unit*most <= engine.MaxResource {
		return ""
	}
	return fmt.Sprintf("the sample at time %d is %.3g %s (a replica at %.3g %s of a %g %s host): %g replicas of it would pass the engine's bound of %g %s; an outlier, or a change of units inside the file",
		times[i], v[i]*per, what, v[i]*unit, units, unit, units, most, float64(engine.MaxResource), units)
}

// Prepare normalises a series and builds its replay under sc (both hosts
// running its application). requestFactor scales the CPU request (1 unless
// the scenario calibrates slack; see CalibrateRequests).
func Prepare(s traces.Series, sc Scenario, requestFactor float64) (*Replay, error) {
	return PrepareApps([]traces.Series{s}, sc, requestFactor)
}

// PrepareApps builds a replay whose hosts run the given series'
// applications: host h runs series h mod len(series) (one series: every
// host; two: the first and second host of each pair). The replay is as
// long as the shortest series.
func PrepareApps(series []traces.Series, sc Scenario, requestFactor float64) (*Replay, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if len(series) == 0 || len(series) > sc.Hosts {
		return nil, fmt.Errorf("sim: %d applications for %d hosts", len(series), sc.Hosts)
	}
	if !(requestFactor > 0) || math.IsInf(requestFactor, 0) {
		return nil, fmt.Errorf("sim: request factor %v; it must be a finite number > 0", requestFactor)
	}
	r := &Replay{Scenario: sc, samples: math.MaxInt}
	for i, s := range series {
		a, err := normalise(s, sc)
		if err != nil {
			return nil, err
		}
		a.Request *= requestFactor
		r.apps = append(r.apps, a)
		r.samples = min(r.samples, len(a.Usage))
		if i == 0 {
			r.Name = s.Name
		} else {
			r.Name += "+" + s.Name
		}
	}
	for _, a := range r.apps {
		a.Times, a.Usage = a.Times[:r.samples], a.Usage[:r.samples]
		if a.Memory != nil {
			a.Memory = a.Memory[:r.samples]
		}
	}
	r.period = typicalPeriod(r.apps[0].Times)
	r.maxRepl = sc.MaxReplicas
	if r.maxRepl == 0 {
		r.maxRepl = noCap
	}
	r.build()
	return r, nil
}

// typicalPeriod is the median gap between successive times.
func typicalPeriod(times []int64) float64 {
	gaps := make([]float64, len(times)-1)
	for i := range gaps {
		gaps[i] = float64(times[i+1] - times[i])
	}
	return stats.Quantile(gaps, 0.5)
}

func (r *Replay) build() {
	r.buildHosts()
	r.buildGrid()
	r.buildStats()
	r.buildOracle()
}

func baseRequest(u []float64, sc Scenario) float64 {
	return stats.Quantile(u[:len(u)/2], sc.RequestQuantile)
}

func (r *Replay) buildHosts() {
	sc := r.Scenario
	r.hosts = make([]hostTrace, sc.Hosts)
	for h := range r.hosts {
		r.hosts[h] = hostTrace{app: r.apps[h%len(r.apps)], correlated: sc.Correlated, samples: r.samples}
	}
	if sc.Correlated {
		for _, a := range r.apps {
			a.observed, a.observedMem = a.Usage, a.Memory
		}
		return
	}
	T, M := r.samples, r.maxRepl
	// Seed from the scenario and the application's name only, so a series
	// replays the same whatever directory it is in; hosts running one
	// application draw one after the other from its generator.
	rngs := make([]*rand.Rand, len(r.apps))
	for i, a := range r.apps {
		f := fnv.New64a()
		f.Write([]byte(a.Name))
		rngs[i] = rand.New(rand.NewPCG(sc.Seed, f.Sum64()))
	}
	acc := make([]float64, T)
	accMem := make([]float64, T)
	for h := range r.hosts {
		ht := &r.hosts[h]
		a := ht.app
		rng := rngs[h%len(r.apps)]
		// Row n-1 holds the usage of replicas 0..n-1, so that the samples
		// of one count are contiguous (a replay reads them in order).
		ht.cum = make([]float32, T*M)
		if a.Memory != nil {
			ht.cumMem = make([]float32, T*M)
		}
		clear(acc)
		clear(accMem)
		for j := 0; j < M; j++ {
			shift := rng.IntN(sc.MaxShift + 1)
			scale := 1 + sc.ScaleJitter*(2*rng.Float64()-1)
			row := ht.cum[j*T : (j+1)*T]
			for t := range acc {
				acc[t] += scale * a.Usage[max(0, t-shift)]
				row[t] = float32(acc[t])
			}
			if a.Memory != nil {
				row := ht.cumMem[j*T : (j+1)*T]
				for t := range accMem {
					accMem[t] += scale * a.Memory[max(0, t-shift)]
					row[t] = float32(accMem[t])
				}
			}
		}
	}
	for _, a := range r.apps {
		a.observed = make([]float64, T)
		if a.Memory != nil {
			a.observedMem = make([]float64, T)
		}
		var mine []*hostTrace
		for h := range r.hosts {
			if r.hosts[h].app == a {
				mine = append(mine, &r.hosts[h])
			}
		}
		div := float64(M * len(mine))
		for _, ht := range mine {
			for t, v := range ht.cum[(M-1)*T : M*T] {
				a.observed[t] += float64(v) / div
			}
			if a.Memory != nil {
				for t, v := range ht.cumMem[(M-1)*T : M*T] {
					a.observedMem[t] += float64(v) / div
				}
			}
		}
	}
}

func (r *Replay) buildGrid() {
	for _, a := range r.apps {
		a.gridMHz = make([]float64, len(a.observed))
		for t, v := range a.observed {
			a.gridMHz[t] = onGrid(v * HostMHz)
		}
		if a.observedMem == nil {
			continue
		}
		a.gridMB = make([]float64, len(a.observedMem))
		for t, v := range a.observedMem {
			a.gridMB[t] = onGrid(v * HostMemoryMB)
		}
	}
	r.exact = r.exactCount()
}

func (r *Replay) buildStats() {
	D, W := r.Decisions(), r.Scenario.Window
	scratch := make([]float64, W)
	for _, a := range r.apps {
		a.stats = make([]WindowStats, D)
		for d := range a.stats {
			at := r.At(d)
			a.stats[d] = stats.Summarize(a.observed[at-W:at], scratch)
		}
		if a.observedMem == nil {
			continue
		}
		a.memStats = make([]WindowStats, D)
		for d := range a.memStats {
			at := r.At(d)
			a.memStats[d] = stats.Summarize(a.observedMem[at-W:at], scratch)
		}
	}
}

func (r *Replay) buildOracle() {
	D := r.Decisions()
	for h := range r.hosts {
		ht := &r.hosts[h]
		ht.oracle = make([]int, D)
		for d := range ht.oracle {
			lo, hi := r.Block(d)
			if ht.correlated {
				peak := 0.0
				for t := lo; t < hi; t++ {
					peak = math.Max(peak, ht.app.Usage[t])
				}
				n := countFor(peak, r.maxRepl)
				if ht.app.Memory != nil {
					peakMem := 0.0
					for t := lo; t < hi; t++ {
						peakMem = math.Max(peakMem, ht.app.Memory[t])
					}
					n = min(n, countFor(peakMem, r.maxRepl))
				}
				ht.oracle[d] = n
				continue
			}
			// Usage grows with n: binary search the largest n that fits
			// at every sample of the block.
			fits := func(n int) bool {
				for t := lo; t < hi; t++ {
					if ht.usage(n, t) > 1 || ht.memory(n, t) > 1 {
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
			ht.oracle[d] = a
		}
	}
}

// usageOverRequest returns u/req for every sample.
func usageOverRequest(u []float64, req float64) []float64 {
	out := make([]float64, len(u))
	for i, v := range u {
		out[i] = v / req
	}
	return out
}

// medianSlack is one application's median slack, (request - usage) /
// request, over its samples.
func medianSlack(a *App) float64 {
	return 1 - stats.Quantile(usageOverRequest(a.Usage, a.Request), 0.5)
}

// SlackStats measures request slack, (request - usage) / request, over
// every sample of the replays' applications the way the yardstick states
// it: Median is the median over all samples pooled, MeanOfMedians the mean
// over applications of each one's median. It holds every sample at once:
// for a few replays (tests); a run computes the same in two passes.
func SlackStats(rs []*Replay) (median, meanOfMedians float64) {
	var pooled []float64
	n := 0
	for _, r := range rs {
		for _, a := range r.apps {
			pooled = append(pooled, usageOverRequest(a.Usage, a.Request)...)
			meanOfMedians += medianSlack(a)
			n++
		}
	}
	return 1 - stats.Quantile(pooled, 0.5), meanOfMedians / float64(n)
}

// isUnusable reports whether err says a series cannot be replayed.
func isUnusable(err error) (*UnusableError, bool) {
	var u *UnusableError
	ok := errors.As(err, &u)
	return u, ok
}
