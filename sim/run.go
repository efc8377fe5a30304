package sim

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// Options control a run.
type Options struct {
	// Workers is the number of goroutines; 0 means GOMAXPROCS.
	Workers int
}

// Report is the result of replaying every policy and knob setting on a set
// of series.
type Report struct {
	Scenario Scenario `json:"scenario"`
	Series   []string `json:"series"`
	// RequestFactor is the calibration factor applied to every request;
	// MedianSlack (pooled over all samples) and MeanSlack (the mean over
	// series of each series' median) are the slack the replay then shows,
	// see SlackStats.
	RequestFactor float64 `json:"request_factor"`
	MedianSlack   float64 `json:"median_slack"`
	MeanSlack     float64 `json:"mean_slack"`
	Curves        []Curve `json:"curves"`

	replays []*Replay
}

// Replays returns the prepared series of the run.
func (rep *Report) Replays() []*Replay { return rep.replays }

// Curve returns the named policy's curve, or nil.
func (rep *Report) Curve(name string) *Curve {
	for i := range rep.Curves {
		if rep.Curves[i].Policy == name {
			return &rep.Curves[i]
		}
	}
	return nil
}

// Heavy is implemented by policies whose decisions are expensive (the
// engine), so that a run starts them first and the workers finish together.
type Heavy interface{ Heavy() bool }

// Run prepares every series under sc and replays every policy at every knob
// value on every series, in parallel.
func Run(ctx context.Context, series []traces.Series, sc Scenario, policies []Policy, opt Options) (*Report, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if len(series) == 0 {
		return nil, fmt.Errorf("sim: no series to replay")
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	factor, err := CalibrateRequests(series, sc)
	if err != nil {
		return nil, err
	}
	rep := &Report{Scenario: sc, RequestFactor: factor, replays: make([]*Replay, len(series))}
	err = parallel(ctx, workers, len(series), func(i int) error {
		r, err := Prepare(series[i], sc, factor)
		if err != nil {
			return err
		}
		rep.replays[i] = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rep.replays {
		rep.Series = append(rep.Series, r.Name)
	}
	rep.MedianSlack, rep.MeanSlack = SlackStats(rep.replays)

	type job struct{ p, k, s int }
	var jobs []job
	rep.Curves = make([]Curve, len(policies))
	for pi, p := range policies {
		kn := p.Knob()
		if len(kn.Values) == 0 {
			return nil, fmt.Errorf("policy %s: knob %q has no values", p.Name(), kn.Name)
		}
		c := &rep.Curves[pi]
		c.Policy, c.KnobName = p.Name(), kn.Name
		c.PerSeries = make([][]Tally, len(kn.Values))
		for ki := range kn.Values {
			c.PerSeries[ki] = make([]Tally, len(series))
			for si := range series {
				jobs = append(jobs, job{pi, ki, si})
			}
		}
	}
	// Heavy policies and long series first, so that no worker is left
	// with a long job at the end.
	heavy := func(pi int) bool {
		h, ok := policies[pi].(Heavy)
		return ok && h.Heavy()
	}
	sort.SliceStable(jobs, func(a, b int) bool {
		ha, hb := heavy(jobs[a].p), heavy(jobs[b].p)
		if ha != hb {
			return ha
		}
		return len(rep.replays[jobs[a].s].Usage) > len(rep.replays[jobs[b].s].Usage)
	})
	err = parallel(ctx, workers, len(jobs), func(i int) error {
		j := jobs[i]
		p := policies[j.p]
		t, err := Evaluate(rep.replays[j.s], p, p.Knob().Values[j.k])
		if err != nil {
			return err
		}
		rep.Curves[j.p].PerSeries[j.k][j.s] = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	for pi, p := range policies {
		c := &rep.Curves[pi]
		for ki, k := range p.Knob().Values {
			c.Points = append(c.Points, Aggregate(k, c.PerSeries[ki]))
		}
	}
	return rep, nil
}

// parallel calls f(0..n-1) on up to workers goroutines and returns the
// first error; after an error or cancellation no new calls start.
func parallel(ctx context.Context, workers, n int, f func(i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// Summary compares the activation policy with the baselines at a budget.
type Summary struct {
	Budget              float64 `json:"budget"`
	RequestSumDensity   float64 `json:"request_sum_density"`
	BestBaseline        string  `json:"best_baseline"`
	BestBaselineDensity float64 `json:"best_baseline_density"`
	ActivationDensity   float64 `json:"activation_density"`
	OracleDensity       float64 `json:"oracle_density"`
	// GainVsRequestSum and GainVsBestBaseline are density ratios minus one;
	// GapClosed is (activation - best baseline) / (oracle - best baseline).
	// Each is null when undefined (a zero denominator).
	GainVsRequestSum   *float64 `json:"gain_vs_request_sum"`
	GainVsBestBaseline *float64 `json:"gain_vs_best_baseline"`
	GapClosed          *float64 `json:"gap_closed"`
}

// Baseline names: the policies a summary's best baseline is chosen from
// (the production-style policies, not the oracle, the activation engine or
// its ablation).
var baselineNames = map[string]bool{
	PolicyRequestSum: true, PolicyP95Window: true, PolicyMaxWindow: true,
	PolicyNSigma: true, PolicyUsageThreshold: true,
}

// IsBaseline reports whether a policy name is one of the production-style
// baselines.
func IsBaseline(name string) bool { return baselineNames[name] }

// Summarize computes the summary at budget. A policy with no knob setting
// within budget counts with density 0. The activation density is that of
// the policy named activation (0 when absent).
func (rep *Report) Summarize(budget float64) Summary {
	s := Summary{Budget: budget}
	best := func(name string) float64 {
		c := rep.Curve(name)
		if c == nil {
			return 0
		}
		p, _, ok := c.Best(budget)
		if !ok {
			return 0
		}
		return p.Density
	}
	s.RequestSumDensity = best(PolicyRequestSum)
	for _, c := range rep.Curves {
		if !IsBaseline(c.Policy) {
			continue
		}
		if d := best(c.Policy); d > s.BestBaselineDensity || s.BestBaseline == "" {
			s.BestBaseline, s.BestBaselineDensity = c.Policy, d
		}
	}
	s.ActivationDensity = best(PolicyActivation)
	s.OracleDensity = best(PolicyOracle)
	s.GainVsRequestSum = gain(s.ActivationDensity, s.RequestSumDensity)
	s.GainVsBestBaseline = gain(s.ActivationDensity, s.BestBaselineDensity)
	if gap := s.OracleDensity - s.BestBaselineDensity; gap > 0 {
		g := (s.ActivationDensity - s.BestBaselineDensity) / gap
		s.GapClosed = &g
	}
	return s
}
