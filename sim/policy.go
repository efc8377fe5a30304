package sim

import "math"

// Knob is a policy's one setting, swept over Values so that the policy draws
// a curve of density against violation rate. A policy with no setting has
// one value (and an empty Name).
type Knob struct {
	Name   string
	Values []float64
}

// Sweep returns the values from lo to hi (inclusive) in steps of step,
// rounded to the step's precision so that 0.1+0.2 prints as 0.3.
func Sweep(lo, hi, step float64) []float64 {
	var out []float64
	n := int(math.Round((hi - lo) / step))
	for i := 0; i <= n; i++ {
		v := lo + float64(i)*step
		out = append(out, math.Round(v*1e9)/1e9)
	}
	return out
}

// Policy sets replica counts. New is called once per replay and knob value
// (from one goroutine at a time per Decider, but concurrently for different
// replays), so a Policy must be safe for concurrent use.
type Policy interface {
	Name() string
	Knob() Knob
	New(r *Replay, knob float64) (Decider, error)
}

// Decider makes one replay's decisions in order. At decision d, prev holds
// each host's count in force until now; Decide writes the new counts to out.
type Decider interface {
	Decide(d int, prev, out []int) error
}

// Sweeper is a policy that replays every value of its knob in one pass,
// which costs less than one replay per value (the activation policy reads
// every output threshold from one forward pass).
type Sweeper interface {
	NewSweep(r *Replay) (SweepDecider, error)
}

// SweepDecider makes one replay's decisions for every knob value at once:
// prev[k][h] is host h's count in force under knob value k, and DecideAll
// writes the new counts to out[k][h].
type SweepDecider interface {
	DecideAll(d int, prev, out [][]int) error
}

// estimate is a baseline's rule: a per-replica usage estimate from a
// window's statistics and a replica's request (both shares of a host's
// capacity of that resource).
type estimate func(st *WindowStats, request, k float64) float64

// estimator is a baseline: one per-replica estimate for each host from its
// application's window statistics, n = floor(1 / estimate); where memory
// is replayed, the same rule on memory bounds the count too.
type estimator struct {
	name string
	knob Knob
	est  estimate
}

func (p *estimator) Name() string { return p.name }
func (p *estimator) Knob() Knob   { return p.knob }
func (p *estimator) New(r *Replay, k float64) (Decider, error) {
	return &estimateDecider{r: r, k: k, est: p.est}, nil
}

type estimateDecider struct {
	r   *Replay
	k   float64
	est estimate
}

func (e *estimateDecider) Decide(d int, _, out []int) error {
	for h := range out {
		a := e.r.App(h)
		n := e.r.CountFor(e.est(e.r.Stats(h, d), a.Request, e.k))
		if ms := e.r.MemoryStats(h, d); ms != nil {
			n = min(n, e.r.CountFor(e.est(ms, a.MemoryRequest, e.k)))
		}
		out[h] = n
	}
	return nil
}

// Names of the baseline policies.
const (
	PolicyRequestSum     = "request-sum"
	PolicyP95Window      = "p95-window"
	PolicyMaxWindow      = "max-window"
	PolicyNSigma         = "n-sigma"
	PolicyUsageThreshold = "usage-threshold"
	PolicyOracle         = "oracle"
	PolicyActivation     = "activation"
	PolicyLinear         = "linear"
)

// RequestSum is request-sum admission: replicas are admitted while the sum
// of their requests stays within k x capacity (Kubernetes, Nomad, Borg
// without overcommit at k = 1), CPU and memory alike where memory is
// replayed.
func RequestSum() Policy {
	return &estimator{name: PolicyRequestSum, knob: Knob{"k", Sweep(0.02, 4, 0.01)},
		est: func(_ *WindowStats, req, k float64) float64 { return req / k }}
}

// The baselines' knob sweeps. Each reaches well past the setting any
// budget of the benchmark needs (a best setting at a sweep's edge, or none
// within budget, is flagged: Curve.Edge), so that no baseline loses for a
// short sweep; the yardstick's own, narrower, sweeps are YardstickBaselines'.
var (
	sweepP95Margin = Sweep(0, 8, 0.01)
	sweepMaxMargin = Sweep(0, 4, 0.01)
	sweepNSigma    = Sweep(0, 60, 0.1)
	sweepThreshold = Sweep(0.01, 1, 0.01)
)

// P95Window is a moving-window percentile recommender (Autopilot-like):
// the p95 of the window's per-replica usage plus a margin m.
func P95Window() Policy { return p95Window(sweepP95Margin) }

func p95Window(ms []float64) Policy {
	return &estimator{name: PolicyP95Window, knob: Knob{"m", ms},
		est: func(st *WindowStats, _, m float64) float64 { return st.P95 * (1 + m) }}
}

// MaxWindow is the window's peak per-replica usage plus a margin m.
func MaxWindow() Policy { return maxWindow(sweepMaxMargin) }

func maxWindow(ms []float64) Policy {
	return &estimator{name: PolicyMaxWindow, knob: Knob{"m", ms},
		est: func(st *WindowStats, _, m float64) float64 { return st.Max * (1 + m) }}
}

// NSigma is the N-sigma peak predictor of Bashir et al. (EuroSys 2021),
// max(mean + N std, p90) of the window's per-replica usage. With the
// replicas of a host following one series, the sum of the per-replica p90s
// is n times the p90.
func NSigma() Policy { return nSigma(sweepNSigma) }

func nSigma(ns []float64) Policy {
	return &estimator{name: PolicyNSigma, knob: Knob{"N", ns},
		est: func(st *WindowStats, _, n float64) float64 { return math.Max(st.Mean+n*st.Std, st.P90) }}
}

// UsageThreshold is a load-aware filter (Koordinator-like): replicas are
// admitted while the host's recent usage (the mean of the last 5 samples)
// stays under a threshold share theta of capacity.
func UsageThreshold() Policy { return usageThreshold(sweepThreshold) }

func usageThreshold(ths []float64) Policy {
	return &estimator{name: PolicyUsageThreshold, knob: Knob{"theta", ths},
		est: func(st *WindowStats, _, th float64) float64 { return st.MeanLast5 / th }}
}

// Oracle knows the next block's usage: the most replicas that never
// overload the host. It is the upper bound.
func Oracle() Policy { return oraclePolicy{} }

type oraclePolicy struct{}

func (oraclePolicy) Name() string { return PolicyOracle }
func (oraclePolicy) Knob() Knob   { return Knob{Values: []float64{0}} }
func (oraclePolicy) New(r *Replay, _ float64) (Decider, error) {
	return oracleDecider{r}, nil
}

type oracleDecider struct{ r *Replay }

func (o oracleDecider) Decide(d int, _, out []int) error {
	for h := range out {
		out[h] = o.r.Oracle(h, d)
	}
	return nil
}

// Baselines returns the baseline policies and the oracle.
func Baselines() []Policy {
	return []Policy{RequestSum(), P95Window(), MaxWindow(), NSigma(), UsageThreshold(), Oracle()}
}

// Refine returns values with n-1 settings evenly spaced between each two
// neighbours, rounded as Sweep rounds (n < 2: a copy of values): a sweep n
// times finer that keeps every setting of the one it refines.
func Refine(values []float64, n int) []float64 {
	out := make([]float64, 0, max(len(values)-1, 0)*max(n, 1)+1)
	for i, v := range values {
		if i > 0 {
			lo := values[i-1]
			for j := 1; j < n; j++ {
				w := lo + (v-lo)*float64(j)/float64(n)
				out = append(out, math.Round(w*1e9)/1e9)
			}
		}
		out = append(out, v)
	}
	return out
}

// Finer returns the policies with every baseline's knob sweep n times
// finer (Refine); policies of one setting (the oracles) and policies that
// are not baselines come back as they are. It checks that no figure at a
// budget hangs on how fine the sweeps are.
func Finer(ps []Policy, n int) []Policy {
	out := make([]Policy, len(ps))
	for i, p := range ps {
		if e, ok := p.(*estimator); ok && n > 1 {
			f := *e
			f.knob.Values = Refine(e.knob.Values, n)
			p = &f
		}
		out[i] = p
	}
	return out
}

// YardstickBaselines are the baselines with the yardstick's sweeps (m 0 to
// 2, N 0 to 10: ../shared/design/benchmark-yardstick.md), whose figures the
// yardstick scenario reproduces "in these sweeps"; usage-threshold keeps
// its sweep from 0.05.
func YardstickBaselines() []Policy {
	return []Policy{RequestSum(), p95Window(Sweep(0, 2, 0.01)), maxWindow(Sweep(0, 2, 0.01)), nSigma(Sweep(0, 10, 0.1)),
		usageThreshold(Sweep(0.05, 1, 0.01)), Oracle()}
}
