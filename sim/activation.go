package sim

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// HostMHz and HostMemoryMB are the capacities the simulator gives a host
// in the engine's observations. Every engine feature is a share of
// capacity, so the values only set the units of the numbers a person
// reads; they are powers of two, and a replica's usage is given on a grid
// of 2^-20 MHz (MB), so that n replicas' usage divided back by n is a
// replica's usage exactly: observations of one window that differ only in
// the count in force give the engine bitwise the same per-replica figures.
const (
	HostMHz      = 1024.0
	HostMemoryMB = 65536.0
)

// quantum is the grid of a replica's usage in the engine's observations.
const quantum = 1.0 / (1 << 20)

func onGrid(x float64) float64 { return math.Round(x/quantum) * quantum }

// Observation fills o with the engine's view of host h at decision d when
// it runs n replicas, as the host of role (engine.RoleFirst or
// engine.RoleSecond) sees it: the last Window samples of its usage, n times
// a replica's usage as the replicas showed it (what a monitoring system
// sums over the replicas it runs), the sum of the replicas' requests, n, and
// one replica's expected demand (its request); memory likewise when the
// replay has it (capacity, samples, requests, demand).
//
// The first host (admission) runs the n replicas in force, and new
// replicas want to run at their request: every further admission slot is
// offered (WantedReplicas 0), and the engine counts a new replica at its
// demand until it is observed (with n = 0 the window shows no usage and
// every replica counts at its demand). The second host (capacity) that
// runs no replica is shown as running one, with one replica's usage: every
// other policy reads the application's per-replica usage whatever the host
// runs, and the capacity processor must see the same information. The
// samples reuse o's slice.
func (r *Replay) Observation(h, d, n int, role, host string, o *engine.Observation) {
	n = observedCount(role, n)
	times, u, mem := r.gridWindow(h, d)
	a := r.App(h)
	if cap(o.Samples) < len(u) {
		o.Samples = make([]engine.Sample, len(u))
	}
	o.Samples = o.Samples[:len(u)]
	fn := float64(n)
	for i, v := range u {
		o.Samples[i] = engine.Sample{Time: times[i], CPUMHz: fn * v}
		if mem != nil {
			o.Samples[i].MemoryMB = fn * mem[i]
		}
	}
	req := onGrid(a.Request * HostMHz)
	*o = engine.Observation{
		Host:                host,
		Samples:             o.Samples,
		CPUCapacityMHz:      HostMHz,
		RequestedCPUMHz:     fn * req,
		RunningReplicas:     n,
		ReplicaCPUDemandMHz: req,
	}
	if mem != nil {
		memReq := onGrid(a.MemoryRequest * HostMemoryMB)
		o.MemoryCapacityMB = HostMemoryMB
		o.RequestedMemoryMB = fn * memReq
		o.ReplicaMemoryDemandMB = memReq
	}
}

// observedCount is the count of running replicas in the observation
// Observation builds for n replicas in force on a host of role.
func observedCount(role string, n int) int {
	if role != engine.RoleFirst {
		return max(n, 1)
	}
	return n
}

// exactCount is the largest count n at which every product Observation
// forms, n times a replica's gridded usage, memory or request, is exact:
// each is a whole number of quanta, and n times it must not pass 2^53
// quanta.
func (r *Replay) exactCount() int {
	var most float64
	for _, a := range r.apps {
		for _, v := range a.gridMHz {
			most = max(most, v)
		}
		for _, v := range a.gridMB {
			most = max(most, v)
		}
		most = max(most, onGrid(a.Request*HostMHz))
		if a.gridMB != nil {
			most = max(most, onGrid(a.MemoryRequest*HostMemoryMB))
		}
	}
	if most < quantum {
		return math.MaxInt32
	}
	return int(min((1<<53)/(most/quantum), math.MaxInt32))
}

// Knobs of the activation policy.
const (
	// KnobOutputThreshold sweeps the output threshold of both models (the
	// quota stays one container per activated branch).
	KnobOutputThreshold = "output_threshold"
	// KnobPerBranch sweeps both quotas' per-branch scale with the models as
	// they are, rounded to the nearest count as the front ends' quotas are
	// by default, so that a setting it reports is the quota that gives it.
	KnobPerBranch = "per_branch"
)

// ActivationConfig sets up the activation policy.
type ActivationConfig struct {
	// Name of the policy in reports; empty means "activation".
	Name string
	// Admission and Capacity are the first and second host's processors;
	// nil means the role's built-in model (engine.Models.LoadFor).
	Admission, Capacity *engine.Processor
	// Knob is KnobOutputThreshold (default) or KnobPerBranch; Values are
	// its settings (nil: a default sweep).
	Knob   string
	Values []float64
	// Finer, when > 1, makes the default sweep Finer times finer, keeping
	// its settings (Thresholds(Finer), or DefaultPerBranch refined); it
	// refines only the default, so Values must be nil.
	Finer int
	// Steps, when set, limit how each host's count moves towards the
	// engine's at every decision (max_scale_up, max_scale_down and a
	// hysteresis band), as a controller applying engine.Steps would.
	Steps engine.Steps
	// HoldBand, when > 0 (output-threshold knob only), keeps a host's
	// count while it lies within the engine's hold range (the counts at
	// output thresholds HoldBand logits stricter and looser than the
	// knob's; see engine.HostInput.HoldBand), before the Steps: a hold
	// measured in the models' output logits (a margin on the host) rather than in replicas.
	HoldBand float64
	// Meter, when set, measures what the policy's replays cost and, at
	// every decision, also times one bare engine.Decide on the same two
	// observations: the cost a replay of a single knob setting cannot go
	// below.
	Meter *Meter
}

// Meter measures the activation policy's replays against the bare engine
// calls they need. It is safe for concurrent use.
type Meter struct {
	replayNanos, bareNanos atomic.Int64
	decisions              atomic.Int64
	passes                 [2]atomic.Int64 // first host, second host
	// the first host's sweeps: node values and scores computed, and what
	// full passes compute (engine.SweeperWork)
	nodes, fullNodes, scores, fullScores atomic.Int64
}

// MeterReading is what a Meter measured.
type MeterReading struct {
	// Decisions is the decision points replayed (each for every knob
	// value); FirstPasses and SecondPasses the engine sweeps (one forward
	// pass each) they took on the first and the second hosts.
	Decisions, FirstPasses, SecondPasses int64
	// Replay is the time the policy's sweep replays took (decisions for
	// every knob value and their tallies), the bare calls excluded; Bare
	// the time of one engine.Decide per decision point on the same
	// observations.
	Replay, Bare time.Duration
	// FirstNodeShare and FirstScoreShare are the share of a full pass's
	// node values and backward scores the first host's sweeps computed
	// (engine.Sweeper carries each pass into the next).
	FirstNodeShare, FirstScoreShare float64
}

// Read returns what the meter measured so far.
func (m *Meter) Read() MeterReading {
	share := func(a, b int64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	return MeterReading{Decisions: m.decisions.Load(), FirstPasses: m.passes[0].Load(), SecondPasses: m.passes[1].Load(),
		Replay: time.Duration(m.replayNanos.Load()), Bare: time.Duration(m.bareNanos.Load()),
		FirstNodeShare: share(m.nodes.Load(), m.fullNodes.Load()), FirstScoreShare: share(m.scores.Load(), m.fullScores.Load())}
}

// DefaultThresholds is the output-threshold sweep: 113 values evenly
// spaced in log-odds from -4 to 10 (0.018 to 0.99995), because a sigmoid
// output's threshold moves the decision boundary by its log-odds (the
// engine's outputs are sigmoid(alpha (1 - cost)): log-odds l is a safety
// margin of l/alpha of the host). A sweep costs one forward pass whatever
// its length, so it is fine enough to meet a budget closely and wide
// enough for the most cautious families at 0.1%.
func DefaultThresholds() []float64 { return Thresholds(1) }

// Thresholds is DefaultThresholds n times finer (n < 1 as 1): from -4 to
// 10 in log-odds steps of 0.125/n, so every value of the default sweep is
// one of it.
func Thresholds(n int) []float64 {
	n = max(n, 1)
	var out []float64
	for i := 0; i <= 112*n; i++ {
		l := -4 + 0.125*float64(i)/float64(n)
		out = append(out, 1/(1+math.Exp(-l)))
	}
	return out
}

// DefaultPerBranch is the per-branch scale sweep.
func DefaultPerBranch() []float64 { return Sweep(0.5, 1.5, 0.05) }

type activation struct {
	name      string
	kind      string
	adm, capy *engine.Processor
	values    []float64
	index     map[float64]int
	steps     engine.Steps
	band      float64
	meter     *Meter
}

// Activation returns the activation engine as a policy: at every decision
// hosts 2i and 2i+1 are the first and second host of one engine decision;
// the first host's count is the admission processor's A_in through its
// quota, the second's the capacity processor's A_out through its quota.
//
// It is a Sweeper: a replay reads every knob value from one engine sweep
// (one forward pass, every output threshold read from it exactly) per host
// and decision, and per distinct count in force: the observation holds the
// host's replica count, so knob values whose counts have diverged need one
// sweep each. Those sweeps go through an engine.Sweeper per host, in the
// order of the counts, so each starts from the pass before and computes
// again only what the changed slots reach.
func Activation(cfg ActivationConfig) (Policy, error) {
	a := &activation{name: cfg.Name, kind: cfg.Knob, index: map[float64]int{}, steps: cfg.Steps, band: cfg.HoldBand, meter: cfg.Meter}
	if a.name == "" {
		a.name = PolicyActivation
	}
	if a.kind == "" {
		a.kind = KnobOutputThreshold
	}
	var err error
	if a.adm = cfg.Admission; a.adm == nil {
		if a.adm, err = engine.Models.LoadFor(engine.RoleFirst, ""); err != nil {
			return nil, fmt.Errorf("activation policy: %w", err)
		}
	}
	if a.capy = cfg.Capacity; a.capy == nil {
		if a.capy, err = engine.Models.LoadFor(engine.RoleSecond, ""); err != nil {
			return nil, fmt.Errorf("activation policy: %w", err)
		}
	}
	vals := cfg.Values
	if cfg.Finer > 1 && vals != nil {
		return nil, fmt.Errorf("activation policy: knob %s: a finer sweep (%d) refines the default sweep; give no values with it", a.kind, cfg.Finer)
	}
	switch a.kind {
	case KnobOutputThreshold:
		if vals == nil {
			vals = Thresholds(cfg.Finer)
		}
		for _, v := range vals {
			for _, p := range []*engine.Processor{a.adm, a.capy} {
				m := *p.Model()
				m.OutputThreshold = &v
				if err := m.Validate(); err != nil {
					return nil, fmt.Errorf("activation policy: knob %s = %v for model %s: %w", a.kind, v, m.Name, err)
				}
			}
		}
	case KnobPerBranch:
		if vals == nil {
			vals = Refine(DefaultPerBranch(), cfg.Finer)
		}
		for _, v := range vals {
			if err := (engine.Quota{Max: 1, PerBranch: v, Rounding: engine.RoundFloor}).Validate("activation policy"); err != nil {
				return nil, fmt.Errorf("activation policy: knob %s: %w", a.kind, err)
			}
		}
	default:
		return nil, fmt.Errorf("activation policy: knob %q: want %q or %q", a.kind, KnobOutputThreshold, KnobPerBranch)
	}
	if len(vals) == 0 {
		return nil, fmt.Errorf("activation policy: knob %s: no values to sweep", a.kind)
	}
	if b := cfg.HoldBand; b != 0 {
		switch {
		case !engine.HoldBandOK(b):
			return nil, fmt.Errorf("activation policy: hold band %v: want a number from 0 to %d (logits)", b, engine.MaxHoldBand)
		case a.kind != KnobOutputThreshold:
			return nil, fmt.Errorf("activation policy: a hold band moves output thresholds; the %s knob keeps them", a.kind)
		}
		// As engine.Decide refuses it: a band in logits needs sigmoid
		// outputs.
		for _, p := range []*engine.Processor{a.adm, a.capy} {
			m := p.Model()
			if act := m.OutputActivation(); act != engine.ActivationSigmoid {
				return nil, fmt.Errorf("activation policy: hold band %v: model %s has %s outputs; a hold band needs sigmoid outputs (a band in logits)", b, m.Name, act)
			}
		}
	}
	for i, v := range vals {
		if _, dup := a.index[v]; dup {
			return nil, fmt.Errorf("activation policy: knob %s: value %v given twice", a.kind, v)
		}
		a.index[v] = i
	}
	a.values = vals
	return a, nil
}

func (a *activation) Name() string { return a.name }
func (a *activation) Knob() Knob   { return Knob{Name: a.kind, Values: a.values} }
func (a *activation) Heavy() bool  { return true }

func (a *activation) replayed(elapsed time.Duration, decisions int) {
	if a.meter != nil { // only sweeps report (EvaluateAll)
		a.meter.replayNanos.Add(int64(elapsed))
		a.meter.decisions.Add(int64(decisions))
	}
}

func (a *activation) New(r *Replay, k float64) (Decider, error) {
	i, ok := a.index[k]
	if !ok {
		return nil, fmt.Errorf("knob %s = %v is not one of the policy's values", a.kind, k)
	}
	sd, err := a.newDecider(r, []int{i})
	if err != nil {
		return nil, err
	}
	return &oneKnob{sd: sd, prev: counts(1, r.Hosts()), out: counts(1, r.Hosts())}, nil
}

func (a *activation) NewSweep(r *Replay) (SweepDecider, error) {
	all := make([]int, len(a.values))
	for i := range all {
		all[i] = i
	}
	dec, err := a.newDecider(r, all)
	if err != nil {
		return nil, err
	}
	dec.metered = a.meter != nil
	return dec, nil
}

func (a *activation) newDecider(r *Replay, knobs []int) (*activationDecider, error) {
	if r.Hosts()%2 != 0 {
		return nil, fmt.Errorf("the activation policy pairs hosts (first, second): scenario %s has %d hosts per series, want an even number", r.Scenario.Name, r.Hosts())
	}
	if r.Scenario.Window < engine.DefaultMinSamples {
		return nil, fmt.Errorf("scenario %s: window %d is shorter than the %d samples an engine decision needs", r.Scenario.Name, r.Scenario.Window, engine.DefaultMinSamples)
	}
	limit := min(r.MaxReplicas(), engine.MaxQuotaCount)
	dec := &activationDecider{a: a, r: r, knobs: knobs, quotas: make([]engine.Quota, len(knobs)),
		thresholds: make([]float64, len(knobs)), amounts: make([]int, 3*len(knobs)), orders: make([][]int, r.Hosts()),
		ts:      make([]float64, 0, 3*len(knobs)),
		stepped: !a.steps.MaxUp.IsZero() || !a.steps.MaxDown.IsZero() || !a.steps.Hysteresis.IsZero()}
	for j, i := range knobs {
		v := a.values[i]
		if a.kind == KnobOutputThreshold {
			dec.quotas[j] = engine.Quota{Min: 0, Max: limit, PerBranch: 1, Rounding: engine.RoundNearest}
			dec.thresholds[j] = v
		} else {
			dec.quotas[j] = engine.Quota{Min: 0, Max: limit, PerBranch: v, Rounding: engine.RoundNearest}
		}
	}
	for h := range dec.orders {
		dec.orders[h] = make([]int, len(knobs))
		for j := range dec.orders[h] {
			dec.orders[h][j] = j
		}
	}
	dec.sweepers = [2]*engine.Sweeper{a.adm.NewSweeper(), a.capy.NewSweeper()}
	dec.idle = a.adm.NewSweeper()
	dec.perReplica = [2]bool{a.adm.PerReplicaInputs(), a.capy.PerReplicaInputs()}
	for side, p := range [2]*engine.Processor{a.adm, a.capy} {
		if !dec.perReplica[side] {
			// nil when the model cannot be recounted (it reads the
			// host's summed usage, or no observation): each count is
			// computed then
			dec.recounters[side], _ = p.NewRecounter()
		}
	}
	dec.exactCount = r.exact
	return dec, nil
}

// activationDecider decides a set of knob values of one replay.
type activationDecider struct {
	a     *activation
	r     *Replay
	knobs []int // indexes into a.values
	// per knob of the decider
	quotas     []engine.Quota
	thresholds []float64
	stepped    bool
	dedupe     [2]dedupeStat
	// perReplica[side]: the host's processor reads only per-replica
	// inputs (engine.Processor.PerReplicaInputs), so that every count
	// from 1 to exactCount gives it one input vector (see DecideAll)
	perReplica [2]bool
	// recounters[side]: for a host whose processor reads the count (the
	// first host's slots), the vectors of the counts from 1 to
	// exactCount, laid out from one computation of the window's
	// per-replica features (see DecideAll); nil for a per-replica
	// processor and one that cannot be recounted
	recounters [2]*engine.Recounter
	exactCount int
	vectors    [2]int64 // input vectors computed, per host of a pair
	recounted  [2]int64 // of those, laid out by a recounter
	// metered: time a bare engine call at every decision (sweeps only)
	metered bool
	// orders[h]: the knob values by host h's count in force, kept from one
	// decision point to the next (byCount)
	orders [][]int
	// scratch
	amounts     []int
	ts          []float64
	obsPool     []*engine.Observation
	xPool       [][]float64
	sweepers    [2]*engine.Sweeper // first host, second host
	idle        *engine.Sweeper    // the first host's at count 0
	meteredWork engine.SweeperWork // the first host's, as last metered
	buckets     []bucket
}

// dedupeStat decides whether looking for observations that give the same
// input vector pays: it stops looking on a host whose observations for
// different counts never gave one (the admission processor reads which
// slots are running, so there every count is its own vector), after
// dedupeTrials decisions with several counts.
type dedupeStat struct {
	trials, merged int
}

const dedupeTrials = 20

func (s *dedupeStat) on() bool { return s.merged > 0 || s.trials < dedupeTrials }

func (s *dedupeStat) saw(merged int) {
	s.trials++
	s.merged += merged
}

// byCount sorts order (knob values) by host h's count in force in prev,
// mending the order of the last decision point by insertion: from one
// decision point to the next the counts seldom pass one another. When more
// than maxDescents knob values are out of order with the one before them,
// it sorts afresh.
func byCount(order []int, prev [][]int, h int) {
	descents := 0
	for i := 1; i < len(order); i++ {
		if prev[order[i]][h] < prev[order[i-1]][h] {
			descents++
		}
	}
	if descents > maxDescents {
		slices.SortFunc(order, func(x, y int) int { return prev[x][h] - prev[y][h] })
		return
	}
	if descents == 0 {
		return
	}
	for i := 1; i < len(order); i++ {
		j, n := order[i], prev[order[i]][h]
		k := i
		for k > 0 && prev[order[k-1]][h] > n {
			order[k] = order[k-1]
			k--
		}
		order[k] = j
	}
}

// maxDescents is the most knob values out of order with the one before them
// for which byCount mends the order by insertion (it does not bound the work,
// the number of pairs out of order, but sorts afresh when the counts moved
// wholesale).
const maxDescents = 8

// lenGroups is the number of distinct counts host h is at over the knob
// values in order (sorted by count).
func lenGroups(order []int, prev [][]int, h int) int {
	n := 0
	for i, j := range order {
		if i == 0 || prev[j][h] != prev[order[i-1]][h] {
			n++
		}
	}
	return n
}

// bucket is knob values whose hosts' observations give one input vector.
type bucket struct {
	x     []float64
	sum   uint64 // bitsSum(x), compared before x
	knobs []int  // indexes of the decider's knob values
	idle  bool   // the count in force is 0
}

// bitsSum is a 64-bit checksum of x's bits, FNV-1a-like over four lanes
// (the inputs in turn, so that the lanes' multiplications do not wait on
// one another) folded at the end: vectors whose sums differ differ, so
// find compares whole vectors only on a match.
func bitsSum(x []float64) uint64 {
	const basis, prime = 14695981039346656037, 1099511628211
	h := [4]uint64{basis, basis ^ 1, basis ^ 2, basis ^ 3}
	i := 0
	for ; i+4 <= len(x); i += 4 {
		h[0] = (h[0] ^ math.Float64bits(x[i])) * prime
		h[1] = (h[1] ^ math.Float64bits(x[i+1])) * prime
		h[2] = (h[2] ^ math.Float64bits(x[i+2])) * prime
		h[3] = (h[3] ^ math.Float64bits(x[i+3])) * prime
	}
	for k := 0; i < len(x); i, k = i+1, k+1 {
		h[k] = (h[k] ^ math.Float64bits(x[i])) * prime
	}
	sum := uint64(len(x))
	for _, v := range h {
		sum = (sum ^ v) * prime
	}
	return sum
}

// observation returns the i-th scratch observation.
func (ad *activationDecider) observation(i int) *engine.Observation {
	for len(ad.obsPool) <= i {
		ad.obsPool = append(ad.obsPool, &engine.Observation{})
	}
	return ad.obsPool[i]
}

// find returns the index of the bucket whose input vector is bitwise x
// (whose checksum is sum, bitsSum(x)), or -1.
func (ad *activationDecider) find(x []float64, sum uint64) int {
next:
	for i := range ad.buckets {
		if ad.buckets[i].sum != sum {
			continue
		}
		y := ad.buckets[i].x
		for j := range x {
			if math.Float64bits(x[j]) != math.Float64bits(y[j]) {
				continue next
			}
		}
		return i
	}
	return -1
}

var roles = [2]string{engine.RoleFirst, engine.RoleSecond}

// DecideAll sets every knob value's counts for every host pair: per host,
// the knob values are grouped by the count in force (which the observation
// holds), and each group's counts come from one engine sweep.
func (ad *activationDecider) DecideAll(d int, prev, out [][]int) error {
	a := ad.a
	procs := [2]*engine.Processor{a.adm, a.capy}
	for pair := 0; pair+1 < ad.r.Hosts(); pair += 2 {
		for side, role := range roles {
			h := pair + side
			p := procs[side]
			order := ad.orders[h]
			byCount(order, prev, h)
			// Groups of knob values by the count in force; groups whose
			// observations give the model the same input vector share one
			// sweep (the sweep depends on that vector only).
			//
			// A processor reading only per-replica inputs gives every
			// count from 1 to exactCount the same vector, bitwise: the
			// observation at n holds n times a replica's usage, memory
			// and requests, each a whole number of quanta (a power of
			// two) so that n times it is exact, over capacities that
			// are powers of two (HostMHz, HostMemoryMB), so that its
			// share of the room is exact too and dividing that by the n
			// warm replicas gives back one replica's share exactly; the
			// evidence basis is the same at every such n. Those groups
			// join the first one's bucket (shared) without computing
			// their vectors, up to the largest count in force when its
			// observation is valid (top): every figure Validate bounds
			// either grows with n (n times one replica's, or n itself)
			// or does not depend on it, and no lower bound depends on
			// it, so an observation valid at top is valid at every
			// count from 1 (the first such group's is validated with
			// its features too).
			//
			// A processor that reads the count (the first host's slots)
			// gets, at those counts, the same per-replica features
			// with only what reads the count laid out again: a
			// Recounter reads the window at top (validating its
			// observation) and lays out every such count's vector.
			rc := ad.recounters[side]
			shared, top := -1, 0
			if ad.perReplica[side] || rc != nil {
				top = min(observedCount(role, prev[order[len(order)-1]][h]), ad.exactCount)
			}
			if top >= 1 {
				o := ad.observation(0) // scratch: the groups' use it again
				ad.r.Observation(h, d, top, role, role, o)
				var err error
				if rc != nil {
					err = rc.Reset(o, role) // validates o
				} else {
					err = o.Validate(role)
				}
				if err != nil {
					top = 0 // each count computed, and refused, as it comes
				}
			}
			ad.buckets = ad.buckets[:0]
			for lo := 0; lo < len(order); {
				n := prev[order[lo]][h]
				hi := lo + 1
				for hi < len(order) && prev[order[hi]][h] == n {
					hi++
				}
				group := order[lo:hi]
				lo = hi
				on := observedCount(role, n)
				blind := on >= 1 && on <= top
				if blind && shared >= 0 {
					ad.buckets[shared].knobs = append(ad.buckets[shared].knobs, group...)
					continue
				}
				// The vector goes in the bucket's own storage: a vector
				// matching an earlier bucket is dropped and its storage
				// used again by the next group.
				for len(ad.xPool) <= len(ad.buckets) {
					ad.xPool = append(ad.xPool, nil)
				}
				var x []float64
				var err error
				if blind && rc != nil {
					x, err = rc.Into(ad.xPool[len(ad.buckets)], on)
					ad.recounted[side]++
				} else {
					o := ad.observation(len(ad.buckets))
					ad.r.Observation(h, d, n, role, role, o)
					x, err = p.FeaturesInto(ad.xPool[len(ad.buckets)], o, role) // validates o
				}
				if err != nil {
					return err
				}
				ad.vectors[side]++
				ad.xPool[len(ad.buckets)] = x
				bi, sum := -1, uint64(0)
				if ad.dedupe[side].on() {
					sum = bitsSum(x)
					bi = ad.find(x, sum)
				}
				if bi < 0 {
					bi = len(ad.buckets)
					if bi < cap(ad.buckets) { // reuse the knob list's storage
						ad.buckets = ad.buckets[:bi+1]
						ad.buckets[bi] = bucket{x: x, sum: sum, knobs: ad.buckets[bi].knobs[:0], idle: on == 0}
					} else {
						ad.buckets = append(ad.buckets, bucket{x: x, sum: sum, idle: on == 0})
					}
				}
				ad.buckets[bi].knobs = append(ad.buckets[bi].knobs, group...)
				if blind && ad.perReplica[side] {
					shared = bi
				}
			}
			if groups := lenGroups(order, prev, h); groups > 1 {
				ad.dedupe[side].saw(groups - len(ad.buckets))
			}
			for bi := range ad.buckets {
				b := &ad.buckets[bi]
				ts := ad.ts[:0]
				banded := a.band > 0 && a.kind == KnobOutputThreshold
				if a.kind == KnobOutputThreshold {
					for _, j := range b.knobs {
						ts = append(ts, ad.thresholds[j])
					}
					if banded {
						for _, j := range b.knobs {
							ts = append(ts, engine.ShiftThreshold(ad.thresholds[j], a.band), engine.ShiftThreshold(ad.thresholds[j], -a.band))
						}
					}
				} else {
					ts = append(ts, p.Model().Threshold())
				}
				amounts := ad.amounts[:len(ts)]
				// The buckets go by count, so each vector differs from the
				// one before in the slots between their counts: the
				// sweeper computes again only what those reach. The first
				// host's vector at no replica in force has a sweeper of
				// its own: its features of a replica are the demand's,
				// not the window's, so it differs from the others' in
				// every statistic of the window, and from the last
				// decision point's in none (the built-in admission
				// processor's).
				sw := ad.sweepers[side]
				if side == 0 && b.idle {
					sw = ad.idle
				}
				if err := sw.Sweep(b.x, role, ts, amounts); err != nil {
					return fmt.Errorf("%s host: %w", role, err)
				}
				if ad.metered {
					a.meter.passes[side].Add(1)
				}
				for gi, j := range b.knobs {
					amount := amounts[0]
					if a.kind == KnobOutputThreshold {
						amount = amounts[gi]
					}
					q := ad.quotas[j]
					target, _ := q.Apply(amount)
					if banded {
						// What a controller given HostDecision.Hold does.
						n := len(b.knobs)
						lo, _ := q.Apply(amounts[n+2*gi])
						hi, _ := q.Apply(amounts[n+2*gi+1])
						if hold := (engine.HoldRange{Band: a.band, Low: lo, High: hi}); hold.Keeps(prev[j][h]) {
							target = prev[j][h]
						}
					}
					if ad.stepped {
						// HostDecision.Overloads, as the strategy reads
						// it: the replay offers every slot, the running
						// replicas first, and no more replicas run than
						// the models have outputs, so an amount (before
						// the hold band) below the running ones is a
						// running replica refused (first host), or a
						// safe amount bound by CPU or memory (second).
						overloaded := amount < prev[j][h]
						st, _ := a.steps.Control(prev[j][h], target, q.Min, q.Max, overloaded)
						target = st.Count
					}
					out[j][h] = target
				}
			}
		}
		if ad.metered {
			if err := ad.bare(d, pair, prev); err != nil {
				return err
			}
		}
	}
	if ad.metered {
		w, i, m := ad.sweepers[0].Work(), ad.idle.Work(), ad.a.meter
		w.Nodes, w.FullNodes, w.Scores, w.FullScores = w.Nodes+i.Nodes, w.FullNodes+i.FullNodes, w.Scores+i.Scores, w.FullScores+i.FullScores
		m.nodes.Add(w.Nodes - ad.meteredWork.Nodes)
		m.fullNodes.Add(w.FullNodes - ad.meteredWork.FullNodes)
		m.scores.Add(w.Scores - ad.meteredWork.Scores)
		m.fullScores.Add(w.FullScores - ad.meteredWork.FullScores)
		ad.meteredWork = w
	}
	return nil
}

// bare times one engine.Decide on the observations of the first knob
// value's counts (what a replay of that one setting needs at this
// decision) and takes the time off the replay's.
func (ad *activationDecider) bare(d, pair int, prev [][]int) error {
	var first, second engine.Observation
	ad.r.Observation(pair, d, prev[0][pair], engine.RoleFirst, engine.RoleFirst, &first)
	ad.r.Observation(pair+1, d, prev[0][pair+1], engine.RoleSecond, engine.RoleSecond, &second)
	q := ad.quotas[0].Spec()
	start := time.Now()
	_, err := engine.Decide(engine.HostInput{Observation: &first, Model: ad.a.adm, Quota: q},
		engine.HostInput{Observation: &second, Model: ad.a.capy, Quota: q})
	el := time.Since(start)
	if err != nil {
		return fmt.Errorf("bare engine call: %w", err)
	}
	ad.a.meter.bareNanos.Add(int64(el))
	ad.a.meter.replayNanos.Add(-int64(el))
	return nil
}

// oneKnob is a Decider for one knob value over the sweep decider.
type oneKnob struct {
	sd        *activationDecider
	prev, out [][]int
}

func (o *oneKnob) Decide(d int, prev, out []int) error {
	copy(o.prev[0], prev)
	copy(o.out[0], out)
	if err := o.sd.DecideAll(d, o.prev, o.out); err != nil {
		return err
	}
	copy(out, o.out[0])
	return nil
}
