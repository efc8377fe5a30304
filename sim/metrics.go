package sim

import (
	"context"
	"fmt"
	"time"
)

// Tally is what one policy setting did on one replay, summed over its hosts
// and the samples after the first window.
type Tally struct {
	// HostSamples is the number of host-samples checked.
	HostSamples int `json:"host_samples"`
	// Replicas and OracleReplicas sum the count in force over the
	// host-samples, for the policy and for the oracle.
	Replicas       float64 `json:"replicas"`
	OracleReplicas float64 `json:"oracle_replicas"`
	// Violations counts host-samples over capacity (CPU or memory);
	// CPUViolations and MemoryViolations count them per resource (a sample
	// over both counts in each). Excess and MemoryExcess sum usage minus
	// capacity over the CPU and the memory violations.
	Violations       int     `json:"violations"`
	CPUViolations    int     `json:"cpu_violations"`
	MemoryViolations int     `json:"memory_violations"`
	Excess           float64 `json:"excess"`
	MemoryExcess     float64 `json:"memory_excess"`
	// Changes counts decisions that changed a host's count; HostHours is
	// the replayed time times the number of hosts.
	Changes   int     `json:"changes"`
	HostHours float64 `json:"host_hours"`
	// Roles splits the host-samples, counts and violations by the host's
	// place in its pair: [0] the first hosts (even indexes: the activation
	// policy's admission host), [1] the second.
	Roles [2]RoleTally `json:"roles"`
}

// RoleTally is the part of a Tally one role's hosts did.
type RoleTally struct {
	HostSamples    int     `json:"host_samples"`
	Replicas       float64 `json:"replicas"`
	OracleReplicas float64 `json:"oracle_replicas"`
	Violations     int     `json:"violations"`
}

// Density is the role's mean count as a share of the oracle's.
func (t RoleTally) Density() float64 { return ratio(t.Replicas, t.OracleReplicas) }

// ViolationRate is the role's share of host-samples over capacity.
func (t RoleTally) ViolationRate() float64 {
	return ratio(float64(t.Violations), float64(t.HostSamples))
}

// Density is the mean count as a share of the oracle's mean count.
func (t Tally) Density() float64 {
	if t.OracleReplicas == 0 {
		return 0
	}
	return t.Replicas / t.OracleReplicas
}

// ReplicasPerHost is the mean count.
func (t Tally) ReplicasPerHost() float64 { return ratio(t.Replicas, float64(t.HostSamples)) }

// ViolationRate is the share of host-samples over capacity (CPU or memory).
func (t Tally) ViolationRate() float64 { return ratio(float64(t.Violations), float64(t.HostSamples)) }

// CPUViolationRate is the share of host-samples over the CPU capacity.
func (t Tally) CPUViolationRate() float64 {
	return ratio(float64(t.CPUViolations), float64(t.HostSamples))
}

// MemoryViolationRate is the share of host-samples over the memory capacity.
func (t Tally) MemoryViolationRate() float64 {
	return ratio(float64(t.MemoryViolations), float64(t.HostSamples))
}

// Severity is the mean excess over the CPU capacity of the CPU violations.
func (t Tally) Severity() float64 { return ratio(t.Excess, float64(t.CPUViolations)) }

// ChangesPerHour is how often a host's count changes.
func (t Tally) ChangesPerHour() float64 { return ratio(float64(t.Changes), t.HostHours) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Point is one knob setting of a policy, aggregated over series the way the
// yardstick does: density, violation rates and changes per hour are
// computed per series and averaged over series (each series weighs the
// same whatever its length); severities are the mean excess over all
// violating host-samples.
type Point struct {
	Knob                float64 `json:"knob"`
	Density             float64 `json:"density"`
	ReplicasPerHost     float64 `json:"replicas_per_host"`
	ViolationRate       float64 `json:"violation_rate"`
	CPUViolationRate    float64 `json:"cpu_violation_rate"`
	MemoryViolationRate float64 `json:"memory_violation_rate"`
	Severity            float64 `json:"severity"`
	MemorySeverity      float64 `json:"memory_severity"`
	ChangesPerHour      float64 `json:"changes_per_hour"`
	// FirstDensity and SecondDensity, FirstViolationRate and
	// SecondViolationRate are the density and violation rate of the
	// pairs' first and second hosts alone (averaged over series like the
	// totals; 0 for a role no host plays).
	FirstDensity        float64 `json:"first_host_density"`
	SecondDensity       float64 `json:"second_host_density"`
	FirstViolationRate  float64 `json:"first_host_violation_rate"`
	SecondViolationRate float64 `json:"second_host_violation_rate"`
	// WorstSeriesViolationRate is the largest of the replay units' own
	// violation rates (a unit is a series, or in the two-apps scenario a
	// pair of them; ViolationRate is their mean): a setting whose worst
	// unit is within a budget holds every one within it.
	WorstSeriesViolationRate float64 `json:"worst_series_violation_rate"`
}

// accum sums tallies of one knob setting over series, so that a run holds
// no per-series figures: the sums of the per-series ratios and the counts
// the severities need.
type accum struct {
	Series                                    int
	Density, Replicas, Viol, CPUViol, MemViol float64
	Changes                                   float64
	Excess, MemExcess                         float64
	CPUViolations, MemoryViolations           int64
	RoleDensity, RoleViol                     [2]float64
	WorstViol                                 float64 // the largest series' violation rate
}

func (a *accum) add(t Tally) {
	a.Series++
	a.Density += t.Density()
	a.Replicas += t.ReplicasPerHost()
	a.Viol += t.ViolationRate()
	a.WorstViol = max(a.WorstViol, t.ViolationRate())
	a.CPUViol += t.CPUViolationRate()
	a.MemViol += t.MemoryViolationRate()
	a.Changes += t.ChangesPerHour()
	a.Excess += t.Excess
	a.MemExcess += t.MemoryExcess
	a.CPUViolations += int64(t.CPUViolations)
	a.MemoryViolations += int64(t.MemoryViolations)
	for i, rt := range t.Roles {
		a.RoleDensity[i] += rt.Density()
		a.RoleViol[i] += rt.ViolationRate()
	}
}

func (a *accum) merge(b accum) {
	a.Series += b.Series
	a.Density += b.Density
	a.Replicas += b.Replicas
	a.Viol += b.Viol
	a.WorstViol = max(a.WorstViol, b.WorstViol)
	a.CPUViol += b.CPUViol
	a.MemViol += b.MemViol
	a.Changes += b.Changes
	a.Excess += b.Excess
	a.MemExcess += b.MemExcess
	a.CPUViolations += b.CPUViolations
	a.MemoryViolations += b.MemoryViolations
	for i := range a.RoleDensity {
		a.RoleDensity[i] += b.RoleDensity[i]
		a.RoleViol[i] += b.RoleViol[i]
	}
}

func (a *accum) point(knob float64) Point {
	p := Point{Knob: knob}
	if a.Series == 0 {
		return p
	}
	n := float64(a.Series)
	p.Density = a.Density / n
	p.ReplicasPerHost = a.Replicas / n
	p.ViolationRate = a.Viol / n
	p.CPUViolationRate = a.CPUViol / n
	p.MemoryViolationRate = a.MemViol / n
	p.ChangesPerHour = a.Changes / n
	p.Severity = ratio(a.Excess, float64(a.CPUViolations))
	p.MemorySeverity = ratio(a.MemExcess, float64(a.MemoryViolations))
	p.FirstDensity, p.SecondDensity = a.RoleDensity[0]/n, a.RoleDensity[1]/n
	p.FirstViolationRate, p.SecondViolationRate = a.RoleViol[0]/n, a.RoleViol[1]/n
	p.WorstSeriesViolationRate = a.WorstViol
	return p
}

// Aggregate combines per-series tallies of one knob setting into a Point.
func Aggregate(knob float64, perSeries []Tally) Point {
	var a accum
	for _, t := range perSeries {
		a.add(t)
	}
	return a.point(knob)
}

// Curve is one policy's points, one per knob value, in sweep order.
type Curve struct {
	Policy   string  `json:"policy"`
	KnobName string  `json:"knob_name,omitempty"`
	Points   []Point `json:"points"`

	acc []accum // per knob value, for pooling reports
}

// Knobs are the curve's knob values, in sweep order.
func (c *Curve) Knobs() []float64 {
	k := make([]float64, len(c.Points))
	for i, p := range c.Points {
		k[i] = p.Knob
	}
	return k
}

// Edge says when the curve's figure at budget may be its sweep's rather
// than its policy's: the best setting within budget is the first or last
// of the sweep (the sweep may stop short of a better one), or no setting
// is within budget (the sweep may stop short of a cautious enough one).
// "" when the best setting lies inside the sweep, or the curve has one
// setting (the oracles).
func (c *Curve) Edge(budget float64) string {
	_, i, ok := c.Best(budget)
	return c.edge(budget, i, ok, "")
}

// EdgeHeld is Edge for the settings chosen as h holds the budget: with
// HoldPerHost each host's own setting (hosts is the scenario's hosts per
// series: with one there is no second host's). Each note names the
// holding; the pair's (HoldPair) is Edge's.
func (c *Curve) EdgeHeld(budget float64, h Holding, hosts int) []string {
	var out []string
	add := func(i int, ok bool, what string) {
		if e := c.edge(budget, i, ok, what); e != "" {
			out = append(out, e)
		}
	}
	switch h {
	case HoldEachHost:
		_, i, ok := c.BestEachHost(budget)
		add(i, ok, " with each host within it")
	case HoldPerHost:
		_, i, ok := c.bestOf(budget, func(p Point) float64 { return p.FirstViolationRate }, func(p Point) float64 { return p.FirstDensity })
		add(i, ok, " for the first host at its own setting")
		if hosts != 1 {
			_, i, ok = c.bestOf(budget, func(p Point) float64 { return p.SecondViolationRate }, func(p Point) float64 { return p.SecondDensity })
			add(i, ok, " for the second host at its own setting")
		}
	case HoldEverySeries:
		_, i, ok := c.BestEverySeries(budget)
		add(i, ok, " with every series within it")
	default:
		_, i, ok := c.Best(budget)
		add(i, ok, "")
	}
	return out
}

// edge is Edge's note for the point i chosen within budget (ok false when
// none is), what saying how it was chosen ("" for the pair's budget).
func (c *Curve) edge(budget float64, i int, ok bool, what string) string {
	if len(c.Points) < 2 {
		return ""
	}
	knob := c.KnobName
	if knob == "" {
		knob = "knob"
	}
	first, last := c.Points[0].Knob, c.Points[len(c.Points)-1].Knob
	switch {
	case !ok:
		return fmt.Sprintf("%s: no setting within budget %g%s in its sweep (%s %g to %g)", c.Policy, budget, what, knob, first, last)
	case i == 0 || i == len(c.Points)-1:
		return fmt.Sprintf("%s: its best setting within budget %g%s is at its sweep's edge (%s %g, of %g to %g)", c.Policy, budget, what, knob, c.Points[i].Knob, first, last)
	}
	return ""
}

// BestEachHost is Best with each host role's violation rate within budget,
// not their mean: the setting at which neither host of a pair overloads
// more often than the budget.
func (c *Curve) BestEachHost(budget float64) (Point, int, bool) {
	return c.best(budget, func(p Point) float64 { return max(p.FirstViolationRate, p.SecondViolationRate) })
}

// BestEverySeries is Best with every replay unit's own violation rate
// within budget (WorstSeriesViolationRate), not their mean: the setting at
// which no series of the family overloads more often than the budget.
func (c *Curve) BestEverySeries(budget float64) (Point, int, bool) {
	return c.best(budget, func(p Point) float64 { return p.WorstSeriesViolationRate })
}

// BestPerHost is each host role at its own setting: the point of highest
// first-host density whose first host's violation rate is within budget,
// and the same for the second host (ties: the lower rate, then the first
// in sweep order); false when either host has none. Hosts of a pair decide
// apart, so their figures at two settings are those of a sweep that set
// them apart: the setting a front end gives each host as its own margin.
func (c *Curve) BestPerHost(budget float64) (first, second Point, ok bool) {
	first, _, ok1 := c.bestOf(budget, func(p Point) float64 { return p.FirstViolationRate }, func(p Point) float64 { return p.FirstDensity })
	second, _, ok2 := c.bestOf(budget, func(p Point) float64 { return p.SecondViolationRate }, func(p Point) float64 { return p.SecondDensity })
	return first, second, ok1 && ok2
}

// Best returns the point of highest density whose violation rate is within
// budget (ties: the lower violation rate, then the first in sweep order),
// and false when no point is within budget.
func (c *Curve) Best(budget float64) (Point, int, bool) {
	return c.best(budget, func(p Point) float64 { return p.ViolationRate })
}

// best is the point of highest density whose rate is within budget (ties:
// the lower rate, then the first in sweep order).
func (c *Curve) best(budget float64, rate func(Point) float64) (Point, int, bool) {
	return c.bestOf(budget, rate, func(p Point) float64 { return p.Density })
}

// bestOf is the point of highest density (as density reads it) whose rate
// is within budget (ties: the lower rate, then the first in sweep order).
func (c *Curve) bestOf(budget float64, rate, density func(Point) float64) (Point, int, bool) {
	best, bi := Point{}, -1
	for i, p := range c.Points {
		if rate(p) > budget {
			continue
		}
		if bi < 0 || density(p) > density(best) || (density(p) == density(best) && rate(p) < rate(best)) {
			best, bi = p, i
		}
	}
	return best, bi, bi >= 0
}

// tallyBlock adds what host h did under count n in decision d's block.
// A count at or below the oracle's never overloads the block (usage grows
// with the count), so only larger counts are checked sample by sample.
func tallyBlock(t *Tally, r *Replay, h, d, n int) {
	lo, hi := r.Block(d)
	ht := &r.hosts[h]
	o := ht.oracle[d]
	rt := &t.Roles[h%2]
	t.HostSamples += hi - lo
	t.Replicas += float64(n * (hi - lo))
	t.OracleReplicas += float64(o * (hi - lo))
	rt.HostSamples += hi - lo
	rt.Replicas += float64(n * (hi - lo))
	rt.OracleReplicas += float64(o * (hi - lo))
	if n <= o {
		return
	}
	for s := lo; s < hi; s++ {
		x, m := ht.usage(n, s), ht.memory(n, s)
		if x > 1 {
			t.CPUViolations++
			t.Excess += x - 1
		}
		if m > 1 {
			t.MemoryViolations++
			t.MemoryExcess += m - 1
		}
		if x > 1 || m > 1 {
			t.Violations++
			rt.Violations++
		}
	}
}

// Evaluate replays one policy setting on r and tallies what happened. The
// hosts start at request-sum's count with k = 1 (what a scheduler without
// overcommit would have placed).
func Evaluate(r *Replay, p Policy, knob float64) (Tally, error) {
	var t Tally
	err := replay(r, p, knob, func(d, h, n int) { tallyBlock(&t, r, h, d, n) }, &t.Changes)
	if err != nil {
		return Tally{}, err
	}
	t.HostHours = r.Hours() * float64(r.Hosts())
	return t, nil
}

// EvaluateAll replays every knob value of p on r: in one pass when p is a
// Sweeper, else one replay per value. It stops with ctx's error when ctx
// ends (checked every ctxEvery decisions of a sweep, and between values).
func EvaluateAll(ctx context.Context, r *Replay, p Policy) ([]Tally, error) {
	values := p.Knob().Values
	sw, ok := p.(Sweeper)
	if !ok {
		out := make([]Tally, len(values))
		for k, v := range values {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			t, err := Evaluate(r, p, v)
			if err != nil {
				return nil, err
			}
			out[k] = t
		}
		return out, nil
	}
	start := time.Now()
	sd, err := sw.NewSweep(r)
	if err != nil {
		return nil, fmt.Errorf("policy %s on %s: %w", p.Name(), r.Name, err)
	}
	K, H := len(values), r.Hosts()
	out := make([]Tally, K)
	prev, next := counts(K, H), counts(K, H)
	for k := range prev {
		for h := range prev[k] {
			prev[k][h] = r.StartCount(h)
		}
	}
	D := r.Decisions()
	for d := 0; d < D; d++ {
		if d%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		for k := range next {
			copy(next[k], prev[k])
		}
		if err := sd.DecideAll(d, prev, next); err != nil {
			return nil, fmt.Errorf("policy %s on %s, decision %d: %w", p.Name(), r.Name, d, err)
		}
		for k := range next {
			t := &out[k]
			for h, n := range next[k] {
				n = min(max(n, 0), r.maxRepl)
				next[k][h] = n
				if d > 0 && n != prev[k][h] {
					t.Changes++
				}
				tallyBlock(t, r, h, d, n)
			}
		}
		prev, next = next, prev
	}
	for k := range out {
		out[k].HostHours = r.Hours() * float64(H)
	}
	if m, ok := p.(replayMeter); ok {
		m.replayed(time.Since(start), D)
	}
	return out, nil
}

// ctxEvery is how many decisions a sweep makes between looks at its
// context: a long series' sweep stops within about a second of an
// interrupt (89,632 samples took 9 s to notice one).
const ctxEvery = 256

// replayMeter is implemented by policies that measure what their replays
// cost (see ActivationConfig.Meter).
type replayMeter interface {
	replayed(elapsed time.Duration, decisions int)
}

func counts(k, h int) [][]int {
	flat := make([]int, k*h)
	out := make([][]int, k)
	for i := range out {
		out[i] = flat[i*h : (i+1)*h]
	}
	return out
}

// replay runs p's decisions over r and calls visit for every host and
// decision with the count in force (clamped to [0, MaxReplicas]).
func replay(r *Replay, p Policy, knob float64, visit func(d, h, n int), changes *int) error {
	dec, err := p.New(r, knob)
	if err != nil {
		return fmt.Errorf("policy %s (knob %g) on %s: %w", p.Name(), knob, r.Name, err)
	}
	H := r.Hosts()
	prev, out := make([]int, H), make([]int, H)
	for h := range prev {
		prev[h] = r.StartCount(h)
	}
	D := r.Decisions()
	for d := 0; d < D; d++ {
		copy(out, prev)
		if err := dec.Decide(d, prev, out); err != nil {
			return fmt.Errorf("policy %s (knob %g) on %s, decision %d: %w", p.Name(), knob, r.Name, d, err)
		}
		for h := range out {
			n := min(max(out[h], 0), r.maxRepl)
			out[h] = n
			if d > 0 && n != prev[h] && changes != nil {
				*changes++
			}
			visit(d, h, n)
		}
		prev, out = out, prev
	}
	return nil
}

// HostSeries is what one host did under a policy, sample by sample.
type HostSeries struct {
	App    string    // the application the host runs
	Usage  []float64 // total CPU usage (share of capacity)
	Memory []float64 // total memory use (share of capacity; nil without memory)
	Counts []int     // replica count in force
	Oracle []int     // the oracle's count
}

// Trace replays one policy setting on r and records every host's usage and
// count at every sample after the first window, for plots. times are the
// first host's application's.
func Trace(r *Replay, p Policy, knob float64) (times []int64, hosts []HostSeries, err error) {
	w := r.Scenario.Window
	T := r.samples
	hosts = make([]HostSeries, r.Hosts())
	for h := range hosts {
		hosts[h] = HostSeries{App: r.App(h).Name, Usage: make([]float64, T-w), Counts: make([]int, T-w), Oracle: make([]int, T-w)}
		if r.HasMemory() {
			hosts[h].Memory = make([]float64, T-w)
		}
	}
	err = replay(r, p, knob, func(d, h, n int) {
		lo, hi := r.Block(d)
		for s := lo; s < hi; s++ {
			hosts[h].Usage[s-w] = r.hosts[h].usage(n, s)
			if hosts[h].Memory != nil {
				hosts[h].Memory[s-w] = r.hosts[h].memory(n, s)
			}
			hosts[h].Counts[s-w] = n
			hosts[h].Oracle[s-w] = r.hosts[h].oracle[d]
		}
	}, nil)
	if err != nil {
		return nil, nil, err
	}
	return r.apps[0].Times[w:T], hosts, nil
}

// Gain returns a/b - 1, the gain of a density a over b, or nil when b is
// 0 (the reports' gain_vs_* fields).
func Gain(a, b float64) *float64 {
	if b == 0 {
		return nil
	}
	g := a/b - 1
	return &g
}

// gapClosed returns (d - base) / (oracle - base), the share of the gap
// from a baseline's density to the oracle's that a density d closes, or
// nil when the baseline is not below the oracle.
func gapClosed(d, base, oracle float64) *float64 {
	gap := oracle - base
	if gap <= 0 {
		return nil
	}
	g := (d - base) / gap
	return &g
}
