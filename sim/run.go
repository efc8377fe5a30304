package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// Source is one series to replay, loaded when a worker needs it and
// dropped when its replay is done, so that a run holds a bounded number of
// series whatever their number.
type Source struct {
	Name string
	Load func() (traces.Series, error)
}

// FromSeries makes sources of series already in memory.
func FromSeries(all []traces.Series) []Source {
	out := make([]Source, len(all))
	for i, s := range all {
		out[i] = Source{Name: s.Name, Load: func() (traces.Series, error) { return s, nil }}
	}
	return out
}

// FromRefs makes sources of series in trace directories (traces.Scan).
func FromRefs(refs []traces.Ref) []Source {
	out := make([]Source, len(refs))
	for i, r := range refs {
		out[i] = Source{Name: r.Name, Load: r.Load}
	}
	return out
}

// Options control a run.
type Options struct {
	// Workers is the number of goroutines; 0 means GOMAXPROCS.
	Workers int
	// InFlight bounds the replay units a run holds at once (being prepared,
	// replayed, or waiting to be summed in order); 0 means 2 x Workers.
	InFlight int
	// Progress, when set, is told what the run has done (from one
	// goroutine at a time).
	Progress func(Progress)
	// OnSeries, when set, receives every unit's tallies, in order.
	OnSeries func(SeriesResult)
	// CalibrateOn, when set, are the series whose usage sets the request
	// factor (Scenario.TargetSlack), instead of the replayed ones (which
	// set it when none of these can be replayed; Report.CalibratedOn): a
	// held-out replay calibrates on its family's training series, so that
	// the factor owes nothing to the replayed series' usage (the base it
	// multiplies is still each series' own first-half p99). The requests
	// reach request-sum and the activation policy's first host (and its
	// second on a window whose CPU is zero throughout); every other
	// baseline reads usage, and request-sum's knob absorbs the factor.
	CalibrateOn []Source
}

// Progress is how far a run is.
type Progress struct {
	// Phase is "calibrating" (the passes over the series before the
	// replay) or "replaying".
	Phase       string
	Done, Total int
}

// Run phases.
const (
	PhaseCalibrating = "calibrating"
	PhaseReplaying   = "replaying"
)

// SeriesResult is what every policy setting did on one replay unit.
type SeriesResult struct {
	Index int
	Name  string
	// Tallies[p][k] is policy p's tally at its knob value k.
	Tallies [][]Tally
}

// Skipped is a series a run left out, and why.
type Skipped struct {
	Series string `json:"series"`
	Reason string `json:"reason"`
}

// Gapped is a replayed series whose samples have gaps (intervals of at
// least traces.GapRatio times its usual spacing): the replay joins them,
// reading samples, not time.
type Gapped struct {
	Series         string `json:"series"`
	Gaps           int    `json:"gaps"`
	LargestSeconds int64  `json:"largest_seconds"`
	UsualSeconds   int64  `json:"usual_seconds"`
}

// Sparse is a replayed series whose samples are usually more than
// traces.SparseSpacing apart.
type Sparse struct {
	Series       string `json:"series"`
	UsualSeconds int64  `json:"usual_seconds"`
}

// GappedOf is the series' entry in Report.Gaps, and false when its
// spacing has no gap.
func GappedOf(series string, sp traces.Spacing) (Gapped, bool) {
	return Gapped{Series: series, Gaps: sp.Gaps, LargestSeconds: sp.Largest, UsualSeconds: sp.Usual}, sp.Gaps > 0
}

// Report is the result of replaying every policy and knob setting on a set
// of series.
// PooledFamily is the Family of the report over every family; no trace
// directory may be named so.
const PooledFamily = "pooled"

type Report struct {
	Scenario Scenario `json:"scenario"`
	// Family names the series' family (trace directory), "pooled" for a
	// pooled report.
	Family string `json:"family,omitempty"`
	// Series are the replay units: the series, or with DifferentApps the
	// pairs "first+second".
	Series  []string  `json:"series"`
	Skipped []Skipped `json:"skipped,omitempty"`
	// Gaps are the replayed series with gaps between samples, in the
	// order of the sources.
	Gaps []Gapped `json:"gaps,omitempty"`
	// Sparse are the replayed series whose samples are usually more than
	// traces.SparseSpacing apart, in the order of the sources.
	Sparse []Sparse `json:"sparse,omitempty"`
	// RequestFactor is the calibration factor applied to every request;
	// MedianSlack (pooled over all samples) and MeanSlack (the mean over
	// series of each series' median) are the slack the replay then shows,
	// see SlackStats. A pooled report has none of them.
	RequestFactor float64 `json:"request_factor,omitempty"`
	MedianSlack   float64 `json:"median_slack,omitempty"`
	MeanSlack     float64 `json:"mean_slack,omitempty"`
	// CalibratedOn is how many series of Options.CalibrateOn set the
	// request factor; 0 when the replayed series set it.
	CalibratedOn int `json:"calibrated_on,omitempty"`
	// Decisions is the number of decision points replayed (one per
	// interval per unit, whatever the policies and knob values), Samples
	// the number of samples.
	Decisions int64   `json:"decisions"`
	Samples   int64   `json:"samples"`
	Curves    []Curve `json:"curves"`

	sources []Source
	units   []unit
}

// unit is one replay: the sources whose applications its hosts run.
type unit struct {
	name string
	apps []int
}

// Curve returns the named policy's curve, or nil.
func (rep *Report) Curve(name string) *Curve {
	for i := range rep.Curves {
		if rep.Curves[i].Policy == name {
			return &rep.Curves[i]
		}
	}
	return nil
}

// Units is the number of replay units the report can prepare again.
func (rep *Report) Units() int { return len(rep.units) }

// Prepare prepares replay unit i again (loading its series), for a trace
// plot. A pooled report prepares none.
func (rep *Report) Prepare(i int) (*Replay, error) {
	if i < 0 || i >= len(rep.units) {
		return nil, fmt.Errorf("sim: no replay unit %d (have %d)", i, len(rep.units))
	}
	return prepareUnit(rep.units[i], rep.sources, rep.Scenario, rep.RequestFactor)
}

func prepareUnit(u unit, src []Source, sc Scenario, factor float64) (*Replay, error) {
	series := make([]traces.Series, len(u.apps))
	for i, a := range u.apps {
		s, err := src[a].Load()
		if err != nil {
			return nil, err
		}
		series[i] = s
	}
	return PrepareApps(series, sc, factor)
}

// Heavy is implemented by policies whose decisions are expensive (the
// engine), so that a run starts them first and the workers finish together.
type Heavy interface{ Heavy() bool }

// Run replays every policy at every knob value on every series (see
// RunSources); the series are in memory already.
func Run(ctx context.Context, series []traces.Series, sc Scenario, policies []Policy, opt Options) (*Report, error) {
	return RunSources(ctx, FromSeries(series), sc, policies, opt)
}

// RunSources prepares every series under sc and replays every policy at
// every knob value on it, in parallel, holding at most opt.InFlight series
// at a time: a series is loaded, prepared, replayed and dropped, and the
// report keeps only sums per knob setting. Requests are calibrated first,
// in passes over the series that hold none of them for long (see
// calibrate). A series that cannot be replayed (too short, no usage) is
// left out and listed in Skipped; with DifferentApps each series is paired
// with the next usable one.
func RunSources(ctx context.Context, src []Source, sc Scenario, policies []Policy, opt Options) (*Report, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if len(src) == 0 {
		return nil, fmt.Errorf("sim: no series to replay")
	}
	if len(policies) == 0 {
		return nil, fmt.Errorf("sim: no policies to replay")
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	inFlight := opt.InFlight
	if inFlight <= 0 {
		inFlight = 2 * workers
	}
	progress := func(p Progress) {
		if opt.Progress != nil {
			opt.Progress(p)
		}
	}
	rep := &Report{Scenario: sc, sources: src}
	for i, p := range policies {
		kn := p.Knob()
		if len(kn.Values) == 0 {
			return nil, fmt.Errorf("policy %s: knob %q has no values", p.Name(), kn.Name)
		}
		for _, q := range policies[:i] {
			if q.Name() == p.Name() {
				return nil, fmt.Errorf("sim: two policies named %s", p.Name())
			}
		}
		rep.Curves = append(rep.Curves, Curve{Policy: p.Name(), KnobName: kn.Name, acc: make([]accum, len(kn.Values))})
	}

	cal, err := calibrate(ctx, src, sc, workers, func(done int) {
		progress(Progress{Phase: PhaseCalibrating, Done: done, Total: len(src)})
	})
	if err != nil {
		return nil, err
	}
	var usable []int
	for i, s := range cal.series {
		if s.usable {
			usable = append(usable, i)
			if g, ok := GappedOf(src[i].Name, s.spacing); ok {
				rep.Gaps = append(rep.Gaps, g)
			}
			if s.spacing.Sparse() {
				rep.Sparse = append(rep.Sparse, Sparse{Series: src[i].Name, UsualSeconds: s.spacing.Usual})
			}
		} else {
			rep.Skipped = append(rep.Skipped, Skipped{Series: s.skipped.Series, Reason: s.skipped.Reason})
		}
	}
	if len(usable) == 0 {
		return nil, noneReplayable(fmt.Sprintf("sim: none of the %d series can be replayed under scenario %s (first: %s: %s)", len(src), sc.Name, rep.Skipped[0].Series, rep.Skipped[0].Reason))
	}
	if len(opt.CalibrateOn) > 0 && sc.TargetSlack > 0 {
		on, err := calibrate(ctx, opt.CalibrateOn, sc, workers, func(done int) {
			progress(Progress{Phase: PhaseCalibrating, Done: done, Total: len(opt.CalibrateOn)})
		})
		if err != nil {
			return nil, fmt.Errorf("calibrating requests on %d other series: %w", len(opt.CalibrateOn), err)
		}
		if on.usable > 0 { // else the replayed series set it (CalibratedOn 0)
			cal.factor = on.factor
			rep.CalibratedOn = on.usable
		}
	}
	rep.RequestFactor = cal.factor
	rep.MedianSlack = 1 - cal.median/cal.factor
	rep.MeanSlack = 1 - cal.meanMedian/cal.factor
	for j, i := range usable {
		u := unit{name: src[i].Name, apps: []int{i}}
		if sc.DifferentApps {
			if len(usable) < 2 {
				return nil, fmt.Errorf("sim: scenario %s runs different applications on the two hosts: it needs at least 2 series that can be replayed, have 1 (%s)", sc.Name, src[i].Name)
			}
			k := usable[(j+1)%len(usable)]
			u = unit{name: src[i].Name + "+" + src[k].Name, apps: []int{i, k}}
		}
		rep.units = append(rep.units, u)
		rep.Series = append(rep.Series, u.name)
	}

	// Policies in the order a unit's work starts: heavy first.
	order := make([]int, len(policies))
	for i := range order {
		order[i] = i
	}
	heavy := func(p Policy) bool {
		h, ok := p.(Heavy)
		return ok && h.Heavy()
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ha, hb := heavy(policies[a]), heavy(policies[b])
		switch {
		case ha == hb:
			return 0
		case ha:
			return -1
		}
		return 1
	})

	type inflight struct {
		idx     int
		once    sync.Once
		r       *Replay
		err     error
		left    atomic.Int32
		tallies [][]Tally
		// decisions and samples of the replay
		decisions, samples int
	}
	type task struct {
		u *inflight
		p int
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	tasks := make(chan task)
	finished := make(chan *inflight, inFlight)
	slots := make(chan struct{}, inFlight)

	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				u := t.u
				if ctx.Err() == nil {
					u.once.Do(func() {
						u.r, u.err = prepareUnit(rep.units[u.idx], src, sc, cal.factor)
						if u.err == nil {
							u.decisions, u.samples = u.r.Decisions(), u.r.Samples()
						}
					})
					if u.err != nil {
						fail(u.err)
					} else {
						tl, err := EvaluateAll(ctx, u.r, policies[t.p])
						if err != nil {
							fail(err)
						}
						u.tallies[t.p] = tl
					}
				}
				if u.left.Add(-1) == 0 {
					u.r = nil // drop the replay: only its tallies remain
					finished <- u
				}
			}
		}()
	}

	// The collector sums units in order, so that the report does not
	// depend on which worker finished first, and frees their slots.
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		pending := map[int]*inflight{}
		next := 0
		for u := range finished {
			pending[u.idx] = u
			for {
				v, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				if ctx.Err() == nil && v.err == nil {
					rep.Decisions += int64(v.decisions)
					rep.Samples += int64(v.samples)
					for p, tl := range v.tallies {
						for k, t := range tl {
							rep.Curves[p].acc[k].add(t)
						}
					}
					if opt.OnSeries != nil {
						opt.OnSeries(SeriesResult{Index: v.idx, Name: rep.units[v.idx].name, Tallies: v.tallies})
					}
				}
				next++
				progress(Progress{Phase: PhaseReplaying, Done: next, Total: len(rep.units)})
				<-slots
			}
		}
	}()

	progress(Progress{Phase: PhaseReplaying, Done: 0, Total: len(rep.units)})
feed:
	for i := range rep.units {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break feed
		}
		u := &inflight{idx: i, tallies: make([][]Tally, len(policies))}
		u.left.Store(int32(len(policies)))
		for _, p := range order {
			select {
			case tasks <- task{u, p}:
			case <-ctx.Done():
				// The unit's remaining tasks are not run: finish it here.
				if u.left.Add(-int32(countRemaining(order, p))) == 0 {
					finished <- u
				}
				break feed
			}
		}
	}
	close(tasks)
	wg.Wait()
	close(finished)
	<-collected
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, p := range policies {
		c := &rep.Curves[i]
		for k, v := range p.Knob().Values {
			c.Points = append(c.Points, c.acc[k].point(v))
		}
	}
	return rep, nil
}

// ErrNoneReplayable matches (errors.Is) RunSources' error when none of
// the series can be replayed (too short for the scenario's window, no
// usage...): a caller that replays optional series can skip them.
var ErrNoneReplayable = errors.New("none of the series can be replayed")

// noneReplayable is that error, its message naming the first series and
// why.
type noneReplayable string

func (e noneReplayable) Error() string        { return string(e) }
func (e noneReplayable) Is(target error) bool { return target == ErrNoneReplayable }

// countRemaining is how many policies of order from p on (p included) were
// not handed out.
func countRemaining(order []int, p int) int {
	for i, q := range order {
		if q == p {
			return len(order) - i
		}
	}
	return 0
}

// parallel calls f(0..n-1) on up to workers goroutines; after an error or
// cancellation no new calls start. Of the errors, it returns the one of
// the lowest i, so that a run whose inputs hold several faults names the
// same one (the first) however the goroutines were scheduled: every call
// of a lower i than a failed one had started, so it ends and is counted.
// A cancellation the first error caused (a call that returns ctx's error)
// gives way to any other error.
func parallel(ctx context.Context, workers, n int, f func(i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		at    int
	)
	record := func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		stopped := func(e error) bool { return errors.Is(e, context.Canceled) || errors.Is(e, context.DeadlineExceeded) }
		if first == nil || (stopped(first) && !stopped(err)) || (stopped(first) == stopped(err) && i < at) {
			first, at = err, i
		}
		cancel()
	}
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					record(i, err)
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
	if first != nil {
		return first
	}
	return ctx.Err()
}

// Pool sums reports of one scenario and the same policies (the families of
// one run) into one: every series weighs the same, whatever its family.
// The pooled report names each series (and skipped series) family/name,
// by its report's Family, as two families may hold series of one name.
func Pool(reps ...*Report) (*Report, error) {
	if len(reps) == 0 {
		return nil, errors.New("sim: no reports to pool")
	}
	out := &Report{Scenario: reps[0].Scenario, Family: PooledFamily}
	for _, c := range reps[0].Curves {
		out.Curves = append(out.Curves, Curve{Policy: c.Policy, KnobName: c.KnobName, acc: make([]accum, len(c.acc))})
	}
	for _, r := range reps {
		if r.Scenario.Name != out.Scenario.Name || len(r.Curves) != len(out.Curves) {
			return nil, fmt.Errorf("sim: cannot pool report %s (scenario %s, %d policies) with scenario %s, %d policies", r.Family, r.Scenario.Name, len(r.Curves), out.Scenario.Name, len(out.Curves))
		}
		for i, c := range r.Curves {
			oc := &out.Curves[i]
			if c.Policy != oc.Policy || len(c.acc) != len(oc.acc) {
				return nil, fmt.Errorf("sim: cannot pool policy %s (%d settings) with %s (%d settings)", c.Policy, len(c.acc), oc.Policy, len(oc.acc))
			}
			for k := range c.acc {
				if c.Points[k].Knob != reps[0].Curves[i].Points[k].Knob {
					return nil, fmt.Errorf("sim: cannot pool policy %s: knob values differ", c.Policy)
				}
				oc.acc[k].merge(c.acc[k])
			}
		}
		for _, name := range r.Series {
			out.Series = append(out.Series, familyName(r.Family, name))
		}
		for _, sk := range r.Skipped {
			sk.Series = familyName(r.Family, sk.Series)
			out.Skipped = append(out.Skipped, sk)
		}
		for _, g := range r.Gaps {
			g.Series = familyName(r.Family, g.Series)
			out.Gaps = append(out.Gaps, g)
		}
		for _, sp := range r.Sparse {
			sp.Series = familyName(r.Family, sp.Series)
			out.Sparse = append(out.Sparse, sp)
		}
		out.Decisions += r.Decisions
		out.Samples += r.Samples
	}
	for i := range out.Curves {
		c := &out.Curves[i]
		for k := range c.acc {
			c.Points = append(c.Points, c.acc[k].point(reps[0].Curves[i].Points[k].Knob))
		}
	}
	return out, nil
}

// familyName is a series' name in a pooled report: "family/name", so that
// two families' series of one name stay apart.
func familyName(family, name string) string {
	if family == "" {
		return name
	}
	return family + "/" + name
}

// Summary compares the activation policy with the baselines at a budget.
type Summary struct {
	Budget              float64 `json:"budget"`
	RequestSumDensity   float64 `json:"request_sum_density"`
	BestBaseline        string  `json:"best_baseline"`
	BestBaselineDensity float64 `json:"best_baseline_density"`
	ActivationDensity   float64 `json:"activation_density"`
	OracleDensity       float64 `json:"oracle_density"`
	// AdmissionOracleDensity is the admission oracle's density (null when
	// it was not replayed), a reference for what the admission rule costs
	// with foresight and no violation, not a bound (see AdmissionOracle),
	// and CeilingGapClosed (that density - best baseline) / (oracle - best
	// baseline).
	AdmissionOracleDensity *float64 `json:"admission_oracle_density"`
	CeilingGapClosed       *float64 `json:"ceiling_gap_closed"`
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

// Holding is how a budget holds the two hosts of a pair.
type Holding int

const (
	// HoldPair holds the pair's violation rate (the mean of its hosts')
	// within the budget, one setting for both hosts (Curve.Best).
	HoldPair Holding = iota
	// HoldEachHost holds each host's violation rate within it, one
	// setting for both (Curve.BestEachHost).
	HoldEachHost
	// HoldPerHost holds each host's violation rate within it, each host
	// at its own setting (Curve.BestPerHost; a front end's first_margin
	// and second_margin): the density is the mean of the two host roles'
	// (the first role's alone in a scenario of one host per series).
	HoldPerHost
	// HoldEverySeries holds every replay unit's own violation rate (a
	// series', or a pair of series' in the two-apps scenario: the pair's
	// rate, Point.WorstSeriesViolationRate) within the budget, one setting
	// for the whole family (Curve.BestEverySeries).
	HoldEverySeries
)

// Holdings are the holdings of a pair's two hosts, in the order the
// reports give them. HoldEverySeries, which holds the series instead, is
// read from one replay's curves (Report.SummarizeHeld); reports that
// choose a setting on one replay and read it on another leave it out.
func Holdings() []Holding { return []Holding{HoldPair, HoldEachHost, HoldPerHost} }

// String names the holding.
func (h Holding) String() string {
	switch h {
	case HoldPair:
		return "the pair's budget"
	case HoldEachHost:
		return "each host within the budget, one setting"
	case HoldPerHost:
		return "each host within the budget, a setting per host"
	case HoldEverySeries:
		return "every series within the budget"
	}
	return fmt.Sprintf("Holding(%d)", int(h))
}

// BestDensity is the density of the policy name's best setting within
// budget, held as h says (an unknown h as HoldPair), 0 when the policy was
// not replayed or has no setting within budget.
func (rep *Report) BestDensity(name string, budget float64, h Holding) float64 {
	c := rep.Curve(name)
	if c == nil {
		return 0
	}
	switch h {
	case HoldPerHost:
		first, second, ok := c.BestPerHost(budget)
		if !ok {
			return 0
		}
		if rep.Scenario.Hosts == 1 { // no second host: its figures are 0
			return first.FirstDensity
		}
		return (first.FirstDensity + second.SecondDensity) / 2
	case HoldEachHost:
		p, _, ok := c.BestEachHost(budget)
		if !ok {
			return 0
		}
		return p.Density
	case HoldEverySeries:
		p, _, ok := c.BestEverySeries(budget)
		if !ok {
			return 0
		}
		return p.Density
	}
	p, _, ok := c.Best(budget)
	if !ok {
		return 0
	}
	return p.Density
}

// Summarize computes the summary at budget on the pair's violation rate
// (HoldPair). A policy with no knob setting within budget counts with
// density 0. The activation density is that of the policy named
// activation (0 when absent).
func (rep *Report) Summarize(budget float64) Summary {
	return rep.SummarizeHeld(budget, HoldPair)
}

// SummarizeHeld is Summarize with every policy's setting (the oracles'
// figures too) chosen as h holds the budget.
func (rep *Report) SummarizeHeld(budget float64, h Holding) Summary {
	s := Summary{Budget: budget}
	best := func(name string) float64 { return rep.BestDensity(name, budget, h) }
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
	if rep.Curve(PolicyAdmissionOracle) != nil {
		c := best(PolicyAdmissionOracle)
		s.AdmissionOracleDensity = &c
	}
	s.GainVsRequestSum = Gain(s.ActivationDensity, s.RequestSumDensity)
	s.GainVsBestBaseline = Gain(s.ActivationDensity, s.BestBaselineDensity)
	s.GapClosed = gapClosed(s.ActivationDensity, s.BestBaselineDensity, s.OracleDensity)
	if s.AdmissionOracleDensity != nil {
		s.CeilingGapClosed = gapClosed(*s.AdmissionOracleDensity, s.BestBaselineDensity, s.OracleDensity)
	}
	return s
}
