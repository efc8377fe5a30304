package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"

	"gonum.org/v1/gonum/mat"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// LinearConfig sets up the linear ablation.
type LinearConfig struct {
	// Features are the engine feature names the model reads (nil: the
	// inputs of the built-in capacity processor). Host-level features
	// (cpu_host_*, mem_host_max) and memory shares are not allowed: the
	// ablation reads a replica's usage window as the processors do.
	Features []string
	// Slots caps the labels, as the processors' countable slots cap their
	// counts (0: the built-in capacity processor's countable outputs).
	Slots int
	// Ridge is the L2 penalty on the standardised coefficients (0: 1e-6).
	Ridge float64
	// Values is the scale sweep (nil: 0.02 to 1.5 by 0.02).
	Values []float64
	// Finer, when > 1, makes the scale sweep Finer times finer, keeping
	// its settings (Refine).
	Finer int
}

// linear is least squares from the features to the label the processors
// are trained on: how many replicas would have fitted over the next
// decision interval (floor(1 / next peak), capped at Slots). The count is
// floor(scale x prediction).
type linear struct {
	features []string
	coef     []float64 // per scaled, centred feature
	mean     []float64
	scale    []float64 // powers of two
	icept    float64
	knob     Knob
	slots    int
	// examples is the number of training examples, r2 the training R^2.
	examples int64
	r2       float64
}

// Linear fits the linear ablation on the training series, replayed under
// sc, and returns it as a policy (see LinearSources).
func Linear(train []traces.Series, sc Scenario, cfg LinearConfig) (Policy, error) {
	return LinearSources(context.Background(), FromSeries(train), sc, cfg, 0)
}

// ErrLinearTooFewExamples: the training series give the linear ablation
// too few examples to fit (short series, or nearly all of them held out).
var ErrLinearTooFewExamples = errors.New("too few examples to fit the linear ablation")

// LinearSources fits the linear ablation on training series loaded one at
// a time (workers at once; 0: GOMAXPROCS): each series' examples are summed
// into running moments (mean and co-moments, merged exactly as Chan et al.
// combine them), so no series is held after its turn. Training never sees
// the series the policy is later evaluated on when those come from the
// other side of the split.
func LinearSources(ctx context.Context, train []Source, sc Scenario, cfg LinearConfig, workers int) (Policy, error) {
	if len(train) == 0 {
		return nil, fmt.Errorf("linear ablation: no training series")
	}
	names, slots := cfg.Features, cfg.Slots
	if names == nil || slots == 0 {
		capy, err := engine.Models.LoadFor(engine.RoleSecond, "")
		if err != nil {
			return nil, fmt.Errorf("linear ablation: %w", err)
		}
		if names == nil {
			for _, in := range capy.Model().Inputs {
				names = append(names, in.Name)
			}
		}
		if slots == 0 {
			slots = capy.CountableOutputs()
		}
	}
	// The capacity model's memory inputs are a hard gate, not part of the
	// CPU estimate the ablation replaces: leave them out.
	cpu := names[:0:0]
	for _, n := range names {
		switch n {
		case engine.FeatMemFit, engine.FeatMemReplicaMax, engine.FeatMemHostMax, engine.FeatMemReplicaDemand:
			continue
		}
		cpu = append(cpu, n)
	}
	names = cpu
	for _, n := range names {
		switch n {
		case engine.FeatCPUHostMean, engine.FeatCPUHostMax:
			return nil, fmt.Errorf("linear ablation: feature %q is not a replica usage feature", n)
		}
	}
	ridge := cfg.Ridge
	if ridge == 0 {
		ridge = 1e-6
	}
	vals := cfg.Values
	if vals == nil {
		vals = Sweep(0.02, 1.5, 0.02)
	}
	vals = Refine(vals, cfg.Finer)
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	l := &linear{features: names, slots: slots, knob: Knob{Name: "scale", Values: vals}}

	// Labels are those of the trainer: correlated replicas, the next
	// interval's peak.
	tsc := sc
	tsc.Correlated, tsc.Hosts, tsc.MaxReplicas, tsc.DifferentApps = true, 1, 0, false
	cal, err := calibrate(ctx, train, tsc, workers, nil)
	var unread *loadError
	if errors.As(err, &unread) {
		return nil, err // the file's fault, whatever reads it first
	}
	if err != nil {
		return nil, fmt.Errorf("linear ablation: %w", err)
	}
	// One set of moments per series, merged in series order so that the fit
	// does not depend on the workers.
	per := make([]*moments, len(train))
	err = parallel(ctx, workers, len(train), func(i int) error {
		if !cal.series[i].usable {
			return nil
		}
		s, err := train[i].Load()
		if err != nil {
			return err
		}
		r, err := Prepare(s, tsc, cal.factor)
		if err != nil {
			return fmt.Errorf("linear ablation: %w", err)
		}
		X, err := l.featureRows(r, 0)
		if err != nil {
			return err
		}
		m := newMoments(len(names) + 1)
		z := make([]float64, len(names)+1)
		for d, x := range X {
			copy(z, x)
			z[len(names)] = float64(min(r.Oracle(0, d), slots))
			m.add(z)
		}
		per[i] = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	total := newMoments(len(names) + 1)
	for _, m := range per {
		if m != nil {
			total.merge(m)
		}
	}
	if err := l.fit(total, ridge); err != nil {
		return nil, err
	}
	return l, nil
}

// moments are the running mean and co-moments (sums of products of
// deviations from the mean) of vectors.
type moments struct {
	n    int64
	mean []float64
	co   []float64 // dim x dim
	dim  int
	d    []float64 // scratch
}

func newMoments(dim int) *moments {
	return &moments{mean: make([]float64, dim), co: make([]float64, dim*dim), dim: dim, d: make([]float64, dim)}
}

// add folds one vector in (Welford's update).
func (m *moments) add(z []float64) {
	m.n++
	n := float64(m.n)
	for j, v := range z {
		m.d[j] = v - m.mean[j]
		m.mean[j] += m.d[j] / n
	}
	for j := 0; j < m.dim; j++ {
		dj := z[j] - m.mean[j] // after the update
		for k := 0; k < m.dim; k++ {
			m.co[j*m.dim+k] += m.d[k] * dj
		}
	}
}

// merge folds o in (Chan, Golub and LeVeque's pairwise combination).
func (m *moments) merge(o *moments) {
	if o.n == 0 {
		return
	}
	if m.n == 0 {
		m.n = o.n
		copy(m.mean, o.mean)
		copy(m.co, o.co)
		return
	}
	na, nb := float64(m.n), float64(o.n)
	n := na + nb
	for j := range m.d {
		m.d[j] = o.mean[j] - m.mean[j]
	}
	for j := 0; j < m.dim; j++ {
		for k := 0; k < m.dim; k++ {
			m.co[j*m.dim+k] += o.co[j*m.dim+k] + m.d[j]*m.d[k]*na*nb/n
		}
	}
	for j := range m.mean {
		m.mean[j] += m.d[j] * nb / n
	}
	m.n += o.n
}

// featureRows computes the feature vector of every decision of r through
// the engine, as one replica of host h's application shows them.
func (l *linear) featureRows(r *Replay, h int) ([][]float64, error) {
	var o engine.Observation
	out := make([][]float64, r.Decisions())
	for d := range out {
		r.Observation(h, d, 1, engine.RoleSecond, "linear", &o)
		x, err := engine.FeatureVector(&o, "linear", l.features)
		if err != nil {
			return nil, fmt.Errorf("linear ablation: series %s decision %d: %w", r.Name, d, err)
		}
		out[d] = x
	}
	return out, nil
}

// fit solves the ridge regression from the moments, on centred features:
// minimise sum (y - mean_y - beta.(x - mean))^2 + ridge n sum_j var_j
// beta_j^2, the ridge penalty of standardised features written in the
// features' own units (var_j = C_jj / n; a constant feature is penalised as
// one of unit variance), so (C_xx + ridge diag(C_jj)) beta = C_xy. The
// system is solved with every feature scaled by a power of two near
// 1/sqrt(C_jj), which changes no digit of the solution but keeps
// Cholesky well conditioned when features differ in scale by orders of
// magnitude.
func (l *linear) fit(m *moments, ridge float64) error {
	p := len(l.features)
	if m.n <= int64(p) {
		return fmt.Errorf("linear ablation: %d examples for %d features; need more training data: %w", m.n, p, ErrLinearTooFewExamples)
	}
	n := float64(m.n)
	co := func(j, k int) float64 { return m.co[j*m.dim+k] }
	l.mean, l.scale = make([]float64, p), make([]float64, p)
	pen := make([]float64, p)
	for j := 0; j < p; j++ {
		l.mean[j] = m.mean[j]
		pen[j] = co(j, j)
		if pen[j] == 0 {
			pen[j] = n
		}
		// scale = 2^-round(log2(pen)/2): exact to multiply by.
		_, e := math.Frexp(pen[j])
		l.scale[j] = math.Ldexp(1, -e/2)
	}
	A := mat.NewSymDense(p, nil)  // scaled, with the ridge
	A0 := mat.NewSymDense(p, nil) // scaled, without
	b := mat.NewVecDense(p, nil)
	for j := 0; j < p; j++ {
		b.SetVec(j, co(j, p)*l.scale[j])
		for k := j; k < p; k++ {
			v := co(j, k) * l.scale[j] * l.scale[k]
			A0.SetSym(j, k, v)
			if j == k {
				v += ridge * pen[j] * l.scale[j] * l.scale[j]
			}
			A.SetSym(j, k, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(A) {
		return fmt.Errorf("linear ablation: the features' covariance is singular")
	}
	var beta mat.VecDense
	if err := ch.SolveVecTo(&beta, b); err != nil {
		return fmt.Errorf("linear ablation: %w", err)
	}
	// beta is on the scaled features: coefficient j of x_j is beta_j
	// scale_j; predict keeps the scale.
	l.coef = make([]float64, p)
	for j := range l.coef {
		l.coef[j] = beta.AtVec(j)
	}
	l.icept = m.mean[p]
	l.examples = m.n
	// Residual sum of squares from the moments: sum (y - mean_y - beta.z)^2
	// = C_yy - 2 beta.b + beta^T A0 beta (z the scaled, centred features).
	sst := co(p, p)
	var Ab mat.VecDense
	Ab.MulVec(A0, &beta)
	ssr := sst - 2*mat.Dot(&beta, b) + mat.Dot(&beta, &Ab)
	if sst > 0 {
		l.r2 = 1 - ssr/sst
	}
	return nil
}

func (l *linear) predict(x []float64) float64 {
	y := l.icept
	for j, v := range x {
		y += l.coef[j] * (v - l.mean[j]) * l.scale[j]
	}
	return y
}

func (l *linear) Name() string { return PolicyLinear }
func (l *linear) Knob() Knob   { return l.knob }

// predictions returns the prediction at every decision of r for every
// application of r.
func (l *linear) predictions(r *Replay) ([][]float64, error) {
	out := make([][]float64, len(r.Apps()))
	for ai := range out {
		h := ai // host ai runs application ai
		X, err := l.featureRows(r, h)
		if err != nil {
			return nil, err
		}
		p := make([]float64, len(X))
		for d, x := range X {
			p[d] = l.predict(x)
		}
		out[ai] = p
	}
	return out, nil
}

func (l *linear) New(r *Replay, k float64) (Decider, error) {
	p, err := l.predictions(r)
	if err != nil {
		return nil, err
	}
	return &linearDecider{r: r, pred: p, values: []float64{k}}, nil
}

func (l *linear) NewSweep(r *Replay) (SweepDecider, error) {
	p, err := l.predictions(r)
	if err != nil {
		return nil, err
	}
	return &linearDecider{r: r, pred: p, values: l.knob.Values}, nil
}

type linearDecider struct {
	r      *Replay
	pred   [][]float64 // [application][decision]
	values []float64
}

func (l *linearDecider) count(h, d int, k float64) int {
	return max(int(math.Floor(k*l.pred[h%len(l.pred)][d])), 0)
}

func (l *linearDecider) Decide(d int, _, out []int) error {
	for h := range out {
		out[h] = l.count(h, d, l.values[0])
	}
	return nil
}

func (l *linearDecider) DecideAll(d int, _, out [][]int) error {
	for k, v := range l.values {
		for h := range out[k] {
			out[k][h] = l.count(h, d, v)
		}
	}
	return nil
}
