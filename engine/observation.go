package engine

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Sample is one reading of real usage by the replicas of the workload on a
// host, summed over those replicas: CPU in MHz and memory in MB at Time
// (Unix seconds).
type Sample struct {
	Time     int64   `json:"time"`
	CPUMHz   float64 `json:"cpu_mhz"`
	MemoryMB float64 `json:"memory_mb,omitempty"`
}

// Observation is what the engine knows of one host: its capacity, a window
// of real usage, what the scheduler believes (the sum of requested
// resources), how many replicas run and how much one replica is expected to
// need.
type Observation struct {
	// Host names the host in explanations; optional.
	Host string `json:"host,omitempty"`
	// CPUCapacityMHz is the host's allocatable CPU; required, > 0.
	CPUCapacityMHz float64 `json:"cpu_capacity_mhz"`
	// MemoryCapacityMB is the host's allocatable memory; 0 when unknown,
	// in which case memory features are unavailable.
	MemoryCapacityMB float64 `json:"memory_capacity_mb,omitempty"`
	// Samples is the usage window, oldest first, timestamps strictly
	// increasing; at least one sample.
	Samples []Sample `json:"usage_samples"`
	// RequestedCPUMHz and RequestedMemoryMB are the sums of the resources
	// the running replicas requested (what request-sum admission counts).
	RequestedCPUMHz   float64 `json:"requested_cpu_mhz"`
	RequestedMemoryMB float64 `json:"requested_memory_mb,omitempty"`
	// RunningReplicas is how many replicas produced Samples. With none
	// running, a replica's usage is taken to be its expected demand.
	RunningReplicas int `json:"running_replicas"`
	// ReplicaCPUDemandMHz is the expected CPU demand of one replica that
	// wants to run; required, > 0. ReplicaMemoryDemandMB likewise, optional.
	ReplicaCPUDemandMHz   float64 `json:"replica_cpu_demand_mhz"`
	ReplicaMemoryDemandMB float64 `json:"replica_memory_demand_mb,omitempty"`
	// WantedReplicas is how many replicas ask to run on the host: the
	// admission processor's demand slots 0..WantedReplicas-1 hold the
	// demand, the others are empty. 0 offers every slot.
	WantedReplicas int `json:"wanted_replicas,omitempty"`
}

// MaxUsageRatio bounds usage, requests and demand at this many times the
// host's capacity: beyond it the numbers are not usage of this host (wrong
// units, most likely), and the derived features would leave floating-point
// range.
const MaxUsageRatio = 1e6

// ObservationError names the field of an observation that is wrong and why.
type ObservationError struct {
	Host   string // "first" or "second" (or the caller's label)
	Field  string
	Reason string
}

func (e *ObservationError) Error() string {
	return fmt.Sprintf("%s host observation: %s: %s", e.Host, e.Field, e.Reason)
}

func obsErr(host, field, format string, args ...any) error {
	return &ObservationError{Host: host, Field: field, Reason: fmt.Sprintf(format, args...)}
}

func badNumber(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// Validate checks the observation; role labels the host in errors.
func (o *Observation) Validate(role string) error {
	if badNumber(o.CPUCapacityMHz) || o.CPUCapacityMHz <= 0 {
		return obsErr(role, "cpu_capacity_mhz", "is %v; it must be a finite number > 0", o.CPUCapacityMHz)
	}
	if badNumber(o.MemoryCapacityMB) || o.MemoryCapacityMB < 0 {
		return obsErr(role, "memory_capacity_mb", "is %v; it must be a finite number >= 0", o.MemoryCapacityMB)
	}
	if len(o.Samples) == 0 {
		return obsErr(role, "usage_samples", "empty window: at least one usage sample is needed")
	}
	limit := MaxUsageRatio * o.CPUCapacityMHz
	for i, s := range o.Samples {
		if badNumber(s.CPUMHz) || s.CPUMHz < 0 {
			return obsErr(role, fmt.Sprintf("usage_samples[%d].cpu_mhz", i), "is %v; usage must be a finite number >= 0", s.CPUMHz)
		}
		if s.CPUMHz > limit {
			return obsErr(role, fmt.Sprintf("usage_samples[%d].cpu_mhz", i), "is %v, more than %g times the host's CPU capacity (%v): check the units", s.CPUMHz, float64(MaxUsageRatio), o.CPUCapacityMHz)
		}
		if badNumber(s.MemoryMB) || s.MemoryMB < 0 {
			return obsErr(role, fmt.Sprintf("usage_samples[%d].memory_mb", i), "is %v; usage must be a finite number >= 0", s.MemoryMB)
		}
		if i > 0 && s.Time <= o.Samples[i-1].Time {
			return obsErr(role, fmt.Sprintf("usage_samples[%d].time", i), "%d is not after the previous sample's %d: samples must be in time order, oldest first, without repeats", s.Time, o.Samples[i-1].Time)
		}
	}
	if badNumber(o.RequestedCPUMHz) || o.RequestedCPUMHz < 0 {
		return obsErr(role, "requested_cpu_mhz", "is %v; it must be a finite number >= 0", o.RequestedCPUMHz)
	}
	if badNumber(o.RequestedMemoryMB) || o.RequestedMemoryMB < 0 {
		return obsErr(role, "requested_memory_mb", "is %v; it must be a finite number >= 0", o.RequestedMemoryMB)
	}
	if o.RunningReplicas < 0 {
		return obsErr(role, "running_replicas", "is %d; it must be >= 0", o.RunningReplicas)
	}
	if badNumber(o.ReplicaCPUDemandMHz) || o.ReplicaCPUDemandMHz <= 0 {
		return obsErr(role, "replica_cpu_demand_mhz", "is %v; it must be a finite number > 0", o.ReplicaCPUDemandMHz)
	}
	if o.ReplicaCPUDemandMHz > limit {
		return obsErr(role, "replica_cpu_demand_mhz", "is %v, more than %g times the host's CPU capacity (%v): check the units", o.ReplicaCPUDemandMHz, float64(MaxUsageRatio), o.CPUCapacityMHz)
	}
	if o.RequestedCPUMHz > limit {
		return obsErr(role, "requested_cpu_mhz", "is %v, more than %g times the host's CPU capacity (%v): check the units", o.RequestedCPUMHz, float64(MaxUsageRatio), o.CPUCapacityMHz)
	}
	if badNumber(o.ReplicaMemoryDemandMB) || o.ReplicaMemoryDemandMB < 0 {
		return obsErr(role, "replica_memory_demand_mb", "is %v; it must be a finite number >= 0", o.ReplicaMemoryDemandMB)
	}
	if o.WantedReplicas < 0 {
		return obsErr(role, "wanted_replicas", "is %d; it must be >= 0 (0 offers every slot)", o.WantedReplicas)
	}
	return nil
}

// Feature names the engine derives from an observation. Per-replica CPU
// features are shares of the host's CPU capacity used by one replica over
// the window; host features are shares of capacity used by all replicas.
const (
	FeatCPUReplicaMean      = "cpu_replica_mean"
	FeatCPUReplicaStd       = "cpu_replica_std"
	FeatCPUReplicaP50       = "cpu_replica_p50"
	FeatCPUReplicaP90       = "cpu_replica_p90"
	FeatCPUReplicaP95       = "cpu_replica_p95"
	FeatCPUReplicaP99       = "cpu_replica_p99"
	FeatCPUReplicaMax       = "cpu_replica_max"
	FeatCPUReplicaLast      = "cpu_replica_last"
	FeatCPUReplicaMeanLast5 = "cpu_replica_mean_last5"
	FeatCPUReplicaMaxLast5  = "cpu_replica_max_last5"
	FeatCPUReplicaMaxLast20 = "cpu_replica_max_last20"
	FeatCPUReplicaTrend     = "cpu_replica_trend"
	FeatCPUReplicaRequest   = "cpu_replica_request"
	FeatCPUReplicaDemand    = "cpu_replica_demand"
	FeatCPUHostMean         = "cpu_host_mean"
	FeatCPUHostMax          = "cpu_host_max"
	// Fit features are how many replicas of the observed size fit in the
	// host: 1 / per-replica usage, capped at MaxFit. They grow as usage
	// falls, which lets a processor's positive edges carry "room" forward.
	FeatCPUFitMean       = "cpu_fit_mean"
	FeatCPUFitP95        = "cpu_fit_p95"
	FeatCPUFitP99        = "cpu_fit_p99"
	FeatCPUFitMax        = "cpu_fit_max"
	FeatCPUFitMaxLast5   = "cpu_fit_max_last5"
	FeatCPUFitMaxLast20  = "cpu_fit_max_last20"
	FeatCPUFitDemand     = "cpu_fit_demand"
	FeatMemReplicaMax    = "mem_replica_max"
	FeatMemReplicaDemand = "mem_replica_demand"
	FeatMemHostMax       = "mem_host_max"
	// SlotPrefix + i names the admission processor's i-th demand slot.
	SlotPrefix = "slot_"
)

// FeatureNames lists every named feature the engine can derive, besides the
// demand slots.
var FeatureNames = []string{
	FeatCPUReplicaMean, FeatCPUReplicaStd, FeatCPUReplicaP50, FeatCPUReplicaP90,
	FeatCPUReplicaP95, FeatCPUReplicaP99, FeatCPUReplicaMax, FeatCPUReplicaLast,
	FeatCPUReplicaMeanLast5, FeatCPUReplicaMaxLast5, FeatCPUReplicaMaxLast20,
	FeatCPUReplicaTrend, FeatCPUReplicaRequest, FeatCPUReplicaDemand,
	FeatCPUHostMean, FeatCPUHostMax,
	FeatCPUFitMean, FeatCPUFitP95, FeatCPUFitP99, FeatCPUFitMax, FeatCPUFitMaxLast5, FeatCPUFitMaxLast20, FeatCPUFitDemand,
	FeatMemReplicaMax, FeatMemReplicaDemand, FeatMemHostMax,
}

// MaxFit caps the fit features (replicas that fit at the observed usage).
const MaxFit = 1000

func fit(share float64) float64 {
	if share <= 1.0/MaxFit {
		return MaxFit
	}
	return 1 / share
}

const (
	fCPUReplicaMean = iota
	fCPUReplicaStd
	fCPUReplicaP50
	fCPUReplicaP90
	fCPUReplicaP95
	fCPUReplicaP99
	fCPUReplicaMax
	fCPUReplicaLast
	fCPUReplicaMeanLast5
	fCPUReplicaMaxLast5
	fCPUReplicaMaxLast20
	fCPUReplicaTrend
	fCPUReplicaRequest
	fCPUReplicaDemand
	fCPUHostMean
	fCPUHostMax
	fCPUFitMean
	fCPUFitP95
	fCPUFitP99
	fCPUFitMax
	fCPUFitMaxLast5
	fCPUFitMaxLast20
	fCPUFitDemand
	fMemReplicaMax
	fMemReplicaDemand
	fMemHostMax
	numFeatures
)

// featureMap says, for each model input, where its value comes from.
type featureMap struct {
	feature []int // index into the feature vector, or -1 for a slot
	slot    []int // slot number for slot inputs, else -1
}

const slotSource = -1

func newFeatureMap(m *Model) (featureMap, error) {
	fm := featureMap{feature: make([]int, len(m.Inputs)), slot: make([]int, len(m.Inputs))}
	index := make(map[string]int, numFeatures)
	for i, n := range FeatureNames {
		index[n] = i
	}
	for i, in := range m.Inputs {
		fm.slot[i] = -1
		if f, ok := index[in.Name]; ok {
			fm.feature[i] = f
			continue
		}
		if len(in.Name) > len(SlotPrefix) && in.Name[:len(SlotPrefix)] == SlotPrefix {
			if k, err := strconv.Atoi(in.Name[len(SlotPrefix):]); err == nil && k >= 0 {
				fm.feature[i] = slotSource
				fm.slot[i] = k
				continue
			}
		}
		return featureMap{}, modelErr(fmt.Sprintf("inputs[%d].name", i), "unknown feature %q: the engine derives %v and %s<n> demand slots", in.Name, FeatureNames, SlotPrefix)
	}
	return fm, nil
}

// featureWork is the scratch space of feature extraction.
type featureWork struct {
	perReplica []float64
	sorted     []float64
	feats      [numFeatures]float64
}

// Features computes every named feature of o (which must be valid) into
// fw.feats. Memory features are NaN (missing) when memory capacity is unknown.
func (fw *featureWork) compute(o *Observation) {
	n := len(o.Samples)
	if cap(fw.perReplica) < n {
		fw.perReplica = make([]float64, n)
		fw.sorted = make([]float64, n)
	}
	pr := fw.perReplica[:n]
	capCPU := o.CPUCapacityMHz
	demand := o.ReplicaCPUDemandMHz / capCPU
	var hostSum, hostMax float64
	for i, s := range o.Samples {
		h := s.CPUMHz / capCPU
		hostSum += h
		if h > hostMax {
			hostMax = h
		}
		if o.RunningReplicas > 0 {
			pr[i] = h / float64(o.RunningReplicas)
		} else {
			pr[i] = demand
		}
	}
	f := &fw.feats
	var sum float64
	for _, v := range pr {
		sum += v
	}
	mean := sum / float64(n)
	var ss float64
	for _, v := range pr {
		ss += (v - mean) * (v - mean)
	}
	sorted := fw.sorted[:n]
	copy(sorted, pr)
	sort.Float64s(sorted)
	f[fCPUReplicaMean] = mean
	f[fCPUReplicaStd] = math.Sqrt(ss / float64(n))
	f[fCPUReplicaP50] = quantileSorted(sorted, 0.50)
	f[fCPUReplicaP90] = quantileSorted(sorted, 0.90)
	f[fCPUReplicaP95] = quantileSorted(sorted, 0.95)
	f[fCPUReplicaP99] = quantileSorted(sorted, 0.99)
	f[fCPUReplicaMax] = sorted[n-1]
	f[fCPUReplicaLast] = pr[n-1]
	f[fCPUReplicaMeanLast5] = meanOf(pr[max(0, n-5):])
	f[fCPUReplicaMaxLast5] = maxOf(pr[max(0, n-5):])
	f[fCPUReplicaMaxLast20] = maxOf(pr[max(0, n-20):])
	q := max(1, n/4)
	f[fCPUReplicaTrend] = meanOf(pr[n-q:]) - meanOf(pr[:q])
	if o.RunningReplicas > 0 {
		f[fCPUReplicaRequest] = o.RequestedCPUMHz / capCPU / float64(o.RunningReplicas)
	} else {
		f[fCPUReplicaRequest] = demand
	}
	f[fCPUReplicaDemand] = demand
	f[fCPUHostMean] = hostSum / float64(n)
	f[fCPUHostMax] = hostMax
	f[fCPUFitMean] = fit(mean)
	f[fCPUFitP95] = fit(f[fCPUReplicaP95])
	f[fCPUFitP99] = fit(f[fCPUReplicaP99])
	f[fCPUFitMax] = fit(f[fCPUReplicaMax])
	f[fCPUFitMaxLast5] = fit(f[fCPUReplicaMaxLast5])
	f[fCPUFitMaxLast20] = fit(f[fCPUReplicaMaxLast20])
	f[fCPUFitDemand] = fit(demand)
	if o.MemoryCapacityMB > 0 {
		var memMax float64
		for _, s := range o.Samples {
			if m := s.MemoryMB / o.MemoryCapacityMB; m > memMax {
				memMax = m
			}
		}
		f[fMemHostMax] = memMax
		f[fMemReplicaDemand] = o.ReplicaMemoryDemandMB / o.MemoryCapacityMB
		if o.RunningReplicas > 0 {
			f[fMemReplicaMax] = memMax / float64(o.RunningReplicas)
		} else {
			f[fMemReplicaMax] = f[fMemReplicaDemand]
		}
	} else {
		f[fMemHostMax], f[fMemReplicaDemand], f[fMemReplicaMax] = math.NaN(), math.NaN(), math.NaN()
	}
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, v := range xs {
		s += v
	}
	return s / float64(len(xs))
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, v := range xs[1:] {
		if v > m {
			m = v
		}
	}
	return m
}

func quantileSorted(sorted []float64, q float64) float64 {
	n := len(sorted)
	pos := q * float64(n-1)
	lo := int(pos)
	if lo+1 >= n {
		return sorted[n-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// fill writes the model's input vector into x from the computed features.
// A slot input holds the replica's CPU demand when its number is below the
// wanted replicas (or always, when WantedReplicas is 0), and is missing
// (NaN) otherwise. A model input naming a memory feature on an observation
// without memory capacity is an error.
func (fm *featureMap) fill(m *Model, fw *featureWork, o *Observation, role string, x []float64) error {
	for i, src := range fm.feature {
		if src == slotSource {
			if o.WantedReplicas == 0 || fm.slot[i] < o.WantedReplicas {
				x[i] = fw.feats[fCPUReplicaDemand]
			} else {
				x[i] = math.NaN()
			}
			continue
		}
		v := fw.feats[src]
		if math.IsNaN(v) {
			return obsErr(role, "memory_capacity_mb", "model %s needs feature %q, which needs the host's memory capacity", m.Name, m.Inputs[i].Name)
		}
		x[i] = v
	}
	return nil
}

// FeatureVector computes the named features of o (which is validated
// first); role labels the host in errors. Names may be any of FeatureNames
// and SlotPrefix<n> slots. It is meant for trainers and tools; Decide uses
// pooled scratch space instead.
func FeatureVector(o *Observation, role string, names []string) ([]float64, error) {
	m := &Model{Inputs: make([]Node, len(names))}
	for i, n := range names {
		m.Inputs[i].Name = n
	}
	fm, err := newFeatureMap(m)
	if err != nil {
		return nil, err
	}
	if err := o.Validate(role); err != nil {
		return nil, err
	}
	var fw featureWork
	fw.compute(o)
	x := make([]float64, len(names))
	if err := fm.fill(m, &fw, o, role, x); err != nil {
		return nil, err
	}
	return x, nil
}

// Features returns the model's input vector for o, by feature name, for
// tools that explain or train. It validates o first.
func (p *Processor) Features(o *Observation, role string) ([]float64, error) {
	if p.featuresErr != nil {
		return nil, fmt.Errorf("model %s cannot read an observation: %w", p.model.Name, p.featuresErr)
	}
	if err := o.Validate(role); err != nil {
		return nil, err
	}
	var fw featureWork
	fw.compute(o)
	x := make([]float64, len(p.model.Inputs))
	if err := p.features.fill(p.model, &fw, o, role, x); err != nil {
		return nil, err
	}
	return x, nil
}
