package sim

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// LinearConfig sets up the linear ablation.
type LinearConfig struct {
	// Features are the engine feature names the model reads (nil: the
	// inputs of the built-in capacity processor). Host-level features
	// (cpu_host_*, mem_*) are not allowed: the ablation reads a replica's
	// usage window as the processors do.
	Features []string
	// Slots caps the labels, as the processors' countable slots cap their
	// counts (0: the built-in capacity processor's countable outputs).
	Slots int
	// Ridge is the L2 penalty on the standardised coefficients (0: 1e-6).
	Ridge float64
	// Values is the scale sweep (nil: 0.02 to 1.5 by 0.02).
	Values []float64
}

// linear is least squares from the features to the label the processors
// are trained on: how many replicas would have fitted over the next
// decision interval (floor(1 / next peak), capped at Slots). The count is
// floor(scale x prediction).
type linear struct {
	features []string
	coef     []float64 // per standardised feature
	mean     []float64
	scale    []float64
	icept    float64
	knob     Knob
	slots    int
	// Fitted is the number of training examples and the training R^2.
	examples int
	r2       float64

	mu    sync.Mutex
	cache map[*Replay][]float64
}

// Linear fits the linear ablation on the training series, replayed under
// sc, and returns it as a policy. Training never sees the series the policy
// is later evaluated on when those come from the other side of the split.
func Linear(train []traces.Series, sc Scenario, cfg LinearConfig) (Policy, error) {
	if len(train) == 0 {
		return nil, fmt.Errorf("linear ablation: no training series")
	}
	names, slots := cfg.Features, cfg.Slots
	if names == nil || slots == 0 {
		capy, err := engine.Builtin(engine.BuiltinCapacity)
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
	for _, n := range names {
		switch n {
		case engine.FeatCPUHostMean, engine.FeatCPUHostMax, engine.FeatMemHostMax, engine.FeatMemReplicaMax, engine.FeatMemReplicaDemand:
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
	l := &linear{features: names, slots: slots, knob: Knob{Name: "scale", Values: vals}, cache: map[*Replay][]float64{}}

	// Labels are those of the trainer: correlated replicas, the next
	// interval's peak.
	tsc := sc
	tsc.Correlated, tsc.Hosts, tsc.MaxReplicas = true, 1, 0
	factor, err := CalibrateRequests(train, tsc)
	if err != nil {
		return nil, fmt.Errorf("linear ablation: %w", err)
	}
	var xs [][]float64
	var ys []float64
	for _, s := range train {
		r, err := Prepare(s, tsc, factor)
		if err != nil {
			return nil, fmt.Errorf("linear ablation: %w", err)
		}
		X, err := l.featureRows(r)
		if err != nil {
			return nil, err
		}
		for d := range X {
			xs = append(xs, X[d])
			ys = append(ys, float64(min(r.Oracle(0, d), slots)))
		}
	}
	if err := l.fit(xs, ys, ridge); err != nil {
		return nil, err
	}
	return l, nil
}

// featureRows computes the feature vector of every decision of r through
// the engine, as one replica shows them.
func (l *linear) featureRows(r *Replay) ([][]float64, error) {
	var o engine.Observation
	out := make([][]float64, r.Decisions())
	for d := range out {
		r.Observation(d, 1, "linear", &o)
		x, err := engine.FeatureVector(&o, "linear", l.features)
		if err != nil {
			return nil, fmt.Errorf("linear ablation: series %s decision %d: %w", r.Name, d, err)
		}
		out[d] = x
	}
	return out, nil
}

func (l *linear) fit(xs [][]float64, ys []float64, ridge float64) error {
	n, p := len(xs), len(l.features)
	if n <= p {
		return fmt.Errorf("linear ablation: %d examples for %d features; need more training data", n, p)
	}
	l.mean, l.scale = make([]float64, p), make([]float64, p)
	for _, x := range xs {
		for j, v := range x {
			l.mean[j] += v / float64(n)
		}
	}
	for _, x := range xs {
		for j, v := range x {
			l.scale[j] += (v - l.mean[j]) * (v - l.mean[j]) / float64(n)
		}
	}
	for j := range l.scale {
		l.scale[j] = math.Sqrt(l.scale[j])
		if l.scale[j] == 0 {
			l.scale[j] = 1
		}
	}
	var ymean float64
	for _, y := range ys {
		ymean += y / float64(n)
	}
	A := mat.NewSymDense(p, nil)
	b := mat.NewVecDense(p, nil)
	z := make([]float64, p)
	for i, x := range xs {
		for j := range z {
			z[j] = (x[j] - l.mean[j]) / l.scale[j]
		}
		for j := 0; j < p; j++ {
			b.SetVec(j, b.AtVec(j)+z[j]*(ys[i]-ymean))
			for k := j; k < p; k++ {
				A.SetSym(j, k, A.At(j, k)+z[j]*z[k])
			}
		}
	}
	for j := 0; j < p; j++ {
		A.SetSym(j, j, A.At(j, j)+ridge*float64(n))
	}
	var ch mat.Cholesky
	if !ch.Factorize(A) {
		return fmt.Errorf("linear ablation: the features' covariance is singular")
	}
	var beta mat.VecDense
	if err := ch.SolveVecTo(&beta, b); err != nil {
		return fmt.Errorf("linear ablation: %w", err)
	}
	l.coef = make([]float64, p)
	for j := range l.coef {
		l.coef[j] = beta.AtVec(j)
	}
	l.icept = ymean
	var ssr, sst float64
	for i, x := range xs {
		e := ys[i] - l.predict(x)
		ssr += e * e
		sst += (ys[i] - ymean) * (ys[i] - ymean)
	}
	l.examples = n
	if sst > 0 {
		l.r2 = 1 - ssr/sst
	}
	return nil
}

func (l *linear) predict(x []float64) float64 {
	y := l.icept
	for j, v := range x {
		y += l.coef[j] * (v - l.mean[j]) / l.scale[j]
	}
	return y
}

func (l *linear) Name() string { return PolicyLinear }
func (l *linear) Knob() Knob   { return l.knob }

// predictions returns the prediction at every decision of r, computed once.
func (l *linear) predictions(r *Replay) ([]float64, error) {
	l.mu.Lock()
	p, ok := l.cache[r]
	l.mu.Unlock()
	if ok {
		return p, nil
	}
	X, err := l.featureRows(r)
	if err != nil {
		return nil, err
	}
	p = make([]float64, len(X))
	for d, x := range X {
		p[d] = l.predict(x)
	}
	l.mu.Lock()
	l.cache[r] = p
	l.mu.Unlock()
	return p, nil
}

func (l *linear) New(r *Replay, k float64) (Decider, error) {
	p, err := l.predictions(r)
	if err != nil {
		return nil, err
	}
	return linearDecider{pred: p, k: k}, nil
}

type linearDecider struct {
	pred []float64
	k    float64
}

func (l linearDecider) Decide(d int, _, out []int) error {
	n := int(math.Floor(l.k * l.pred[d]))
	for h := range out {
		out[h] = max(n, 0)
	}
	return nil
}
