package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/activation-scheduler/terraform-provider-activation/stats"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// The request calibration needs the median of usage over request pooled
// over every sample of every series. A run never holds every series, so the
// median is found in passes over the series, each loaded and dropped in
// turn (pooledQuantile): the first pass counts the values by the leading
// bits of their float64 encoding (for values >= 0 the encoding orders like
// the values), which finds the bin the median lies in; the next pass keeps
// only the values in that bin (or counts finer bits when the bin is large)
// and picks the exact order statistic. Memory: one series per worker and
// the bins, never the pooled samples.

// collectLimit is the most values a pass keeps to pick an order statistic
// from; a larger bin is counted by finer bits first.
var collectLimit = 1 << 22

// binBits is how many leading bits of the encoding a pass counts by.
const binBits = 20

type bin struct {
	n        int64
	min, max float64
}

// rankSearch finds the value of one rank (0-based, ascending) among the
// pooled values.
type rankSearch struct {
	rank   int64
	prefix uint64 // the leading plen bits every candidate shares
	plen   uint
	below  int64 // values below the candidates
	// collect: the next pass keeps the candidates instead of counting.
	collect bool
	done    bool
	value   float64
}

func (s *rankSearch) matches(bits uint64) bool {
	return s.plen == 0 || bits>>(64-s.plen) == s.prefix
}

func (s *rankSearch) step() uint { return min(binBits, 64-s.plen) }

func (s *rankSearch) key(bits uint64) uint64 { return (bits << s.plen) >> (64 - s.step()) }

// passState is one worker's tally of a pass for every search.
type passState struct {
	bins [][]bin // per search: bins by key (only for counting searches)
	keys []map[uint64]int
	kept [][]float64
}

func newPassState(searches []*rankSearch) *passState {
	p := &passState{bins: make([][]bin, len(searches)), keys: make([]map[uint64]int, len(searches)), kept: make([][]float64, len(searches))}
	for i := range searches {
		p.keys[i] = map[uint64]int{}
	}
	return p
}

func (p *passState) add(searches []*rankSearch, x float64) {
	bits := math.Float64bits(x)
	for i, s := range searches {
		if s.done || !s.matches(bits) {
			continue
		}
		if s.collect {
			p.kept[i] = append(p.kept[i], x)
			continue
		}
		k := s.key(bits)
		j, ok := p.keys[i][k]
		if !ok {
			j = len(p.bins[i])
			p.keys[i][k] = j
			p.bins[i] = append(p.bins[i], bin{min: x, max: x})
		}
		b := &p.bins[i][j]
		b.n++
		b.min, b.max = min(b.min, x), max(b.max, x)
	}
}

// merge folds o into p.
func (p *passState) merge(o *passState) {
	for i := range p.bins {
		for k, j := range o.keys[i] {
			ob := o.bins[i][j]
			pj, ok := p.keys[i][k]
			if !ok {
				p.keys[i][k] = len(p.bins[i])
				p.bins[i] = append(p.bins[i], ob)
				continue
			}
			b := &p.bins[i][pj]
			b.n += ob.n
			b.min, b.max = min(b.min, ob.min), max(b.max, ob.max)
		}
		p.kept[i] = append(p.kept[i], o.kept[i]...)
	}
}

// resolve advances every search with a pass's tally.
func resolve(searches []*rankSearch, p *passState) error {
	for i, s := range searches {
		if s.done {
			continue
		}
		want := s.rank - s.below
		if s.collect {
			kept := p.kept[i]
			if want < 0 || want >= int64(len(kept)) {
				return fmt.Errorf("calibrating requests: the series changed between passes (rank %d of %d kept values)", want, len(kept))
			}
			slices.Sort(kept)
			s.value, s.done = kept[want], true
			continue
		}
		keys := make([]uint64, 0, len(p.keys[i]))
		for k := range p.keys[i] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		found := false
		for _, k := range keys {
			b := p.bins[i][p.keys[i][k]]
			if want >= b.n {
				want -= b.n
				s.below += b.n
				continue
			}
			found = true
			switch {
			case b.min == b.max:
				s.value, s.done = b.min, true
			case b.n <= int64(collectLimit):
				s.collect = true
				fallthrough
			default:
				step := s.step()
				s.prefix = s.prefix<<step | k
				s.plen += step
			}
			break
		}
		if !found {
			return fmt.Errorf("calibrating requests: the series changed between passes (rank %d beyond the values counted)", s.rank)
		}
	}
	return nil
}

// seriesSummary is what the first pass learns of one series.
type seriesSummary struct {
	usable  bool
	skipped *UnusableError
	samples int64
	median  float64 // median of usage / base request
	spacing traces.Spacing
}

// calibration is what the passes before a replay learn from every series.
type calibration struct {
	series []seriesSummary
	// factor scales every request; median is the pooled median of usage
	// over base request; meanMedian the mean over usable series of their
	// medians.
	factor, median, meanMedian float64
	usable                     int
}

// ratios loads source i and returns usage over its base request for
// every sample (unsorted), or the reason it is not usable.
func ratios(src Source, sc Scenario) ([]float64, []int64, error) {
	s, err := src.Load()
	if err != nil {
		return nil, nil, &loadError{err}
	}
	a, err := normalise(s, sc)
	if err != nil {
		return nil, nil, err
	}
	return usageOverRequest(a.Usage, a.Request), s.Times, nil
}

// calibrate runs the passes over src: which series are usable, the pooled
// median of usage over request, and the request factor that makes the
// pooled median slack sc.TargetSlack (1 when the scenario sets none).
func calibrate(ctx context.Context, src []Source, sc Scenario, workers int, progress func(done int)) (*calibration, error) {
	c := &calibration{series: make([]seriesSummary, len(src))}
	lo, hi := &rankSearch{}, &rankSearch{}
	searches := []*rankSearch{lo, hi}
	// Pass 1: usable series, per-series medians, and the bins.
	var mu sync.Mutex
	total := newPassState(searches)
	var done int
	err := parallel(ctx, workers, len(src), func(i int) error {
		x, times, err := ratios(src[i], sc)
		if u, ok := isUnusable(err); ok {
			c.series[i] = seriesSummary{skipped: u}
		} else if err != nil {
			return err
		}
		local := newPassState(searches)
		if err == nil {
			for _, v := range x {
				local.add(searches, v)
			}
			slices.Sort(x)
			c.series[i] = seriesSummary{usable: true, samples: int64(len(x)), median: stats.QuantileSorted(x, 0.5), spacing: traces.SpacingOf(times)}
		}
		mu.Lock()
		total.merge(local)
		done++
		if progress != nil {
			progress(done)
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	var n int64
	var sumMedians float64
	for _, s := range c.series {
		if s.usable {
			n += s.samples
			sumMedians += s.median
			c.usable++
		}
	}
	if c.usable == 0 {
		return c, nil
	}
	// The R-7 median: the order statistics at floor((n-1)/2) and the next.
	pos := 0.5 * float64(n-1)
	lo.rank = int64(pos)
	hi.rank = min(lo.rank+1, n-1)
	if err := resolve(searches, total); err != nil {
		return nil, err
	}
	for !lo.done || !hi.done {
		pass := newPassState(searches)
		err := parallel(ctx, workers, len(src), func(i int) error {
			if !c.series[i].usable {
				return nil
			}
			x, _, err := ratios(src[i], sc)
			if err != nil {
				return fmt.Errorf("calibrating requests: %w", err)
			}
			local := newPassState(searches)
			for _, v := range x {
				local.add(searches, v)
			}
			mu.Lock()
			pass.merge(local)
			mu.Unlock()
			return nil
		})
		if err != nil {
			return nil, err
		}
		if err := resolve(searches, pass); err != nil {
			return nil, err
		}
	}
	// The two order statistics, interpolated as stats' quantiles are.
	c.median = stats.QuantileSorted([]float64{lo.value, hi.value}, pos-float64(lo.rank))
	c.meanMedian = sumMedians / float64(c.usable)
	c.factor = 1
	if sc.TargetSlack > 0 {
		c.factor = c.median / (1 - sc.TargetSlack)
		if !(c.factor > 0) {
			return nil, fmt.Errorf("calibrating requests: the pooled median of usage over request is %v; no factor gives a median slack of %v", c.median, sc.TargetSlack)
		}
	}
	return c, nil
}

// CalibrateRequests returns the request factor f, common to all series,
// that makes the pooled median slack of the replay equal sc.TargetSlack (1
// when the scenario sets no target). Slack at factor f is
// 1 - median(u/req)/f, so f = median(u/req) / (1 - target). Series that
// cannot be replayed are left out, as a run leaves them out.
func CalibrateRequests(all []traces.Series, sc Scenario) (float64, error) {
	if err := sc.Validate(); err != nil {
		return 0, err
	}
	c, err := calibrate(context.Background(), FromSeries(all), sc, 1, nil)
	if err != nil {
		return 0, err
	}
	if c.usable == 0 {
		return 0, fmt.Errorf("calibrating requests: no series can be replayed")
	}
	return c.factor, nil
}

// loadError is a series that could not be read (its file, not the use made
// of it): callers pass it on without blaming their own step.
type loadError struct{ err error }

func (e *loadError) Error() string { return e.err.Error() }
func (e *loadError) Unwrap() error { return e.err }
