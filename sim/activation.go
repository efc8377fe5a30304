package sim

import (
	"fmt"
	"math"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// HostMHz is the CPU capacity the simulator gives a host in the engine's
// observations. Every engine feature is a share of capacity, so the value
// only sets the units of the numbers a person reads.
const HostMHz = 1000.0

// Observation fills o with the engine's view of a host at decision d when
// it runs n replicas: the last Window samples of its usage, n times a
// replica's usage (what a monitoring system sums over the replicas it
// runs), the sum of the replicas' requests, n, and one replica's expected
// demand (its request). A host that runs no replica is shown as running one,
// with one replica's usage: every other policy reads the application's
// per-replica usage whatever the host runs, and the engine must see the same
// information (with no replica it would read the request as the usage). The
// samples reuse o's slice; WantedReplicas is 0, so every admission slot is
// offered.
func (r *Replay) Observation(d, n int, host string, o *engine.Observation) {
	n = max(n, 1)
	times, u := r.Window(d)
	if cap(o.Samples) < len(u) {
		o.Samples = make([]engine.Sample, len(u))
	}
	o.Samples = o.Samples[:len(u)]
	fn := float64(n)
	for i, v := range u {
		o.Samples[i] = engine.Sample{Time: times[i], CPUMHz: fn * v * HostMHz}
	}
	o.Host = host
	o.CPUCapacityMHz = HostMHz
	o.MemoryCapacityMB = 0
	o.RequestedCPUMHz = fn * r.Request * HostMHz
	o.RequestedMemoryMB = 0
	o.RunningReplicas = n
	o.ReplicaCPUDemandMHz = r.Request * HostMHz
	o.ReplicaMemoryDemandMB = 0
	o.WantedReplicas = 0
}

// Knobs of the activation policy.
const (
	// KnobOutputThreshold sweeps the output threshold of both models (on
	// copies; the quota stays one container per activated branch).
	KnobOutputThreshold = "output_threshold"
	// KnobPerBranch sweeps both quotas' per-branch scale with the models as
	// they are.
	KnobPerBranch = "per_branch"
)

// ActivationConfig sets up the activation policy.
type ActivationConfig struct {
	// Name of the policy in reports; empty means "activation".
	Name string
	// Admission and Capacity are the first and second host's processors;
	// nil means the engine's built-in defaults.
	Admission, Capacity *engine.Processor
	// Knob is KnobOutputThreshold (default) or KnobPerBranch; Values are
	// its settings (nil: a default sweep).
	Knob   string
	Values []float64
}

// DefaultThresholds is the output-threshold sweep: 25 values evenly spaced
// in log-odds from -3 to 3 (0.047 to 0.953), because a sigmoid output's
// threshold moves the decision boundary by its log-odds.
func DefaultThresholds() []float64 {
	var out []float64
	for i := 0; i <= 24; i++ {
		l := -3 + 0.25*float64(i)
		out = append(out, math.Round(1e4/(1+math.Exp(-l)))/1e4)
	}
	return out
}

// DefaultPerBranch is the per-branch scale sweep.
func DefaultPerBranch() []float64 { return Sweep(0.5, 1.5, 0.05) }

type activation struct {
	name   string
	knob   Knob
	kind   string
	adm    []*engine.Processor // per knob value (threshold) or one
	capy   []*engine.Processor
	values map[float64]int
}

// Activation returns the activation engine as a policy: at every decision
// hosts 2i and 2i+1 are the first and second host of one engine.Decide
// call; the first host's count is the admission processor's A_in through
// its quota, the second's the capacity processor's A_out through its quota.
func Activation(cfg ActivationConfig) (Policy, error) {
	a := &activation{name: cfg.Name, kind: cfg.Knob, values: map[float64]int{}}
	if a.name == "" {
		a.name = PolicyActivation
	}
	if a.kind == "" {
		a.kind = KnobOutputThreshold
	}
	adm, capy := cfg.Admission, cfg.Capacity
	var err error
	if adm == nil {
		if adm, err = engine.Builtin(engine.BuiltinAdmission); err != nil {
			return nil, fmt.Errorf("activation policy: %w", err)
		}
	}
	if capy == nil {
		if capy, err = engine.Builtin(engine.BuiltinCapacity); err != nil {
			return nil, fmt.Errorf("activation policy: %w", err)
		}
	}
	vals := cfg.Values
	switch a.kind {
	case KnobOutputThreshold:
		if vals == nil {
			vals = DefaultThresholds()
		}
		for _, v := range vals {
			am, err := withThreshold(adm, v)
			if err != nil {
				return nil, err
			}
			cm, err := withThreshold(capy, v)
			if err != nil {
				return nil, err
			}
			a.adm, a.capy = append(a.adm, am), append(a.capy, cm)
		}
	case KnobPerBranch:
		if vals == nil {
			vals = DefaultPerBranch()
		}
		for _, v := range vals {
			if err := (engine.Quota{Max: 1, PerBranch: v, Rounding: engine.RoundFloor}).Validate("activation policy"); err != nil {
				return nil, fmt.Errorf("activation policy: knob %s: %w", a.kind, err)
			}
		}
		a.adm, a.capy = []*engine.Processor{adm}, []*engine.Processor{capy}
	default:
		return nil, fmt.Errorf("activation policy: knob %q: want %q or %q", a.kind, KnobOutputThreshold, KnobPerBranch)
	}
	if len(vals) == 0 {
		return nil, fmt.Errorf("activation policy: knob %s: no values to sweep", a.kind)
	}
	for i, v := range vals {
		a.values[v] = i
	}
	a.knob = Knob{Name: a.kind, Values: vals}
	return a, nil
}

// withThreshold compiles a copy of p's model whose output threshold is thr.
func withThreshold(p *engine.Processor, thr float64) (*engine.Processor, error) {
	m := *p.Model()
	t := thr
	m.OutputThreshold = &t
	q, err := engine.NewProcessor(&m)
	if err != nil {
		return nil, fmt.Errorf("activation policy: model %s with output_threshold %v: %w", m.Name, thr, err)
	}
	return q, nil
}

func (a *activation) Name() string { return a.name }
func (a *activation) Knob() Knob   { return a.knob }
func (a *activation) Heavy() bool  { return true }

func (a *activation) New(r *Replay, k float64) (Decider, error) {
	if r.Hosts()%2 != 0 {
		return nil, fmt.Errorf("the activation policy pairs hosts (first, second): scenario %s has %d hosts per series, want an even number", r.Scenario.Name, r.Hosts())
	}
	i, ok := a.values[k]
	if !ok {
		return nil, fmt.Errorf("knob %s = %v is not one of the policy's values", a.kind, k)
	}
	limit := min(r.MaxReplicas(), engine.MaxQuotaCount)
	cfg := engine.Config{}
	if a.kind == KnobOutputThreshold {
		cfg.Admission, cfg.Capacity = a.adm[i], a.capy[i]
		cfg.FirstQuota = engine.Quota{Min: 0, Max: limit, PerBranch: 1, Rounding: engine.RoundNearest}
	} else {
		cfg.Admission, cfg.Capacity = a.adm[0], a.capy[0]
		cfg.FirstQuota = engine.Quota{Min: 0, Max: limit, PerBranch: k, Rounding: engine.RoundFloor}
	}
	cfg.SecondQuota = cfg.FirstQuota
	return &activationDecider{r: r, cfg: cfg}, nil
}

type activationDecider struct {
	r             *Replay
	cfg           engine.Config
	first, second engine.Observation
}

func (a *activationDecider) Decide(d int, prev, out []int) error {
	for h := 0; h+1 < len(out); h += 2 {
		a.r.Observation(d, prev[h], "first", &a.first)
		a.r.Observation(d, prev[h+1], "second", &a.second)
		dec, err := engine.Decide(&a.first, &a.second, a.cfg)
		if err != nil {
			return err
		}
		out[h], out[h+1] = dec.First.Containers, dec.Second.Containers
	}
	return nil
}
