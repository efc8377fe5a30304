package sim

import "fmt"

// Tally is what one policy setting did on one replay, summed over its hosts
// and the samples after the first window.
type Tally struct {
	// HostSamples is the number of host-samples checked.
	HostSamples int `json:"host_samples"`
	// Replicas and OracleReplicas sum the count in force over the
	// host-samples, for the policy and for the oracle.
	Replicas       float64 `json:"replicas"`
	OracleReplicas float64 `json:"oracle_replicas"`
	// Violations counts host-samples whose total usage exceeded capacity;
	// Excess sums usage minus capacity over them.
	Violations int     `json:"violations"`
	Excess     float64 `json:"excess"`
	// Changes counts decisions that changed a host's count; HostHours is
	// the replayed time times the number of hosts.
	Changes   int     `json:"changes"`
	HostHours float64 `json:"host_hours"`
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

// ViolationRate is the share of host-samples over capacity.
func (t Tally) ViolationRate() float64 { return ratio(float64(t.Violations), float64(t.HostSamples)) }

// Severity is the mean excess over capacity of the violating samples.
func (t Tally) Severity() float64 { return ratio(t.Excess, float64(t.Violations)) }

// ChangesPerHour is how often a host's count changes.
func (t Tally) ChangesPerHour() float64 { return ratio(float64(t.Changes), t.HostHours) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Point is one knob setting of a policy, aggregated over series the way the
// yardstick does: density, violation rate and changes per hour are
// computed per series and averaged over series (each series weighs the
// same whatever its length); severity is the mean excess over all violating
// host-samples.
type Point struct {
	Knob            float64 `json:"knob"`
	Density         float64 `json:"density"`
	ReplicasPerHost float64 `json:"replicas_per_host"`
	ViolationRate   float64 `json:"violation_rate"`
	Severity        float64 `json:"severity"`
	ChangesPerHour  float64 `json:"changes_per_hour"`
}

// Aggregate combines per-series tallies of one knob setting into a Point.
func Aggregate(knob float64, perSeries []Tally) Point {
	p := Point{Knob: knob}
	if len(perSeries) == 0 {
		return p
	}
	var excess float64
	var viol int
	for _, t := range perSeries {
		p.Density += t.Density()
		p.ReplicasPerHost += t.ReplicasPerHost()
		p.ViolationRate += t.ViolationRate()
		p.ChangesPerHour += t.ChangesPerHour()
		excess += t.Excess
		viol += t.Violations
	}
	n := float64(len(perSeries))
	p.Density /= n
	p.ReplicasPerHost /= n
	p.ViolationRate /= n
	p.ChangesPerHour /= n
	p.Severity = ratio(excess, float64(viol))
	return p
}

// Curve is one policy's points, one per knob value, in sweep order.
type Curve struct {
	Policy   string  `json:"policy"`
	KnobName string  `json:"knob_name,omitempty"`
	Points   []Point `json:"points"`
	// PerSeries[k][s] is knob value k's tally on series s.
	PerSeries [][]Tally `json:"-"`
}

// Best returns the point of highest density whose violation rate is within
// budget (ties: the lower violation rate, then the first in sweep order),
// and false when no point is within budget.
func (c *Curve) Best(budget float64) (Point, int, bool) {
	best, bi := Point{}, -1
	for i, p := range c.Points {
		if p.ViolationRate > budget {
			continue
		}
		if bi < 0 || p.Density > best.Density || (p.Density == best.Density && p.ViolationRate < best.ViolationRate) {
			best, bi = p, i
		}
	}
	return best, bi, bi >= 0
}

// Evaluate replays one policy setting on r and tallies what happened. The
// hosts start at request-sum's count with k = 1 (what a scheduler without
// overcommit would have placed).
func Evaluate(r *Replay, p Policy, knob float64) (Tally, error) {
	var t Tally
	err := replay(r, p, knob, func(d, h, n int) {
		lo, hi := r.Block(d)
		ht := &r.hosts[h]
		o := float64(r.oracle[h][d])
		for s := lo; s < hi; s++ {
			x := ht.usage(n, s)
			t.HostSamples++
			t.Replicas += float64(n)
			t.OracleReplicas += o
			if x > 1 {
				t.Violations++
				t.Excess += x - 1
			}
		}
	}, &t.Changes)
	if err != nil {
		return Tally{}, err
	}
	t.HostHours = r.Hours() * float64(r.Hosts())
	return t, nil
}

// Hours is the replayed span of the series (after the first window).
func (r *Replay) Hours() float64 {
	w := r.Scenario.Window
	last := len(r.Times) - 1
	if last <= w {
		return 0
	}
	// One more sample period so that n samples span n periods.
	period := float64(r.Times[last]-r.Times[w]) / float64(last-w)
	return (float64(r.Times[last]-r.Times[w]) + period) / 3600
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
	start := r.CountFor(r.Request)
	for h := range prev {
		prev[h] = start
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
	Usage  []float64 // total usage (share of capacity)
	Counts []int     // replica count in force
}

// Trace replays one policy setting on r and records every host's usage and
// count at every sample after the first window, for plots.
func Trace(r *Replay, p Policy, knob float64) (times []int64, hosts []HostSeries, err error) {
	w := r.Scenario.Window
	T := len(r.Usage)
	hosts = make([]HostSeries, r.Hosts())
	for h := range hosts {
		hosts[h] = HostSeries{Usage: make([]float64, T-w), Counts: make([]int, T-w)}
	}
	err = replay(r, p, knob, func(d, h, n int) {
		lo, hi := r.Block(d)
		for s := lo; s < hi; s++ {
			hosts[h].Usage[s-w] = r.hosts[h].usage(n, s)
			hosts[h].Counts[s-w] = n
		}
	}, nil)
	if err != nil {
		return nil, nil, err
	}
	return r.Times[w:], hosts, nil
}

// gain returns a/b - 1, or nil when b is 0.
func gain(a, b float64) *float64 {
	if b == 0 {
		return nil
	}
	g := a/b - 1
	return &g
}
