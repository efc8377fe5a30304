package engine

import (
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sample is one reading of real usage by the replicas of the workload on a
// host, summed over those replicas: CPU in MHz and memory in MB at Time
// (Unix seconds).
type Sample struct {
	Time     int64   `json:"time"`
	CPUMHz   float64 `json:"cpu_mhz"`
	MemoryMB float64 `json:"memory_mb,omitempty"`
}

// Replica is one replica waiting to run: its own expected CPU and memory
// demand.
type Replica struct {
	CPUMHz   float64 `json:"cpu_mhz"`
	MemoryMB float64 `json:"memory_mb,omitempty"`
}

// Observation is what the engine knows of one host: its capacity, a window
// of real usage of the workload's replicas on it, what the scheduler believes
// (the sum of requested resources), how many replicas run, and the replicas
// that want to run, with their demand.
//
// The replicas that want to run on the host form a queue: first the running
// ones (RunningReplicas, known by their observed usage), then the new ones,
// either WantedReplicas minus the running ones, each at ReplicaCPUDemandMHz
// and ReplicaMemoryDemandMB (the common case), or QueuedReplicas, each with
// its own demand.
type Observation struct {
	// Host names the host in explanations; optional.
	Host string `json:"host,omitempty"`
	// CPUCapacityMHz is the host's allocatable CPU; required, > 0.
	CPUCapacityMHz float64 `json:"cpu_capacity_mhz"`
	// MemoryCapacityMB is the host's allocatable memory; 0 when unknown,
	// in which case memory is not judged (the decision says so).
	MemoryCapacityMB float64 `json:"memory_capacity_mb,omitempty"`
	// Samples is the usage window, oldest first, timestamps strictly
	// increasing; at least one sample, and at least a decision's minimum
	// to decide.
	Samples []Sample `json:"usage_samples"`
	// RequestedCPUMHz and RequestedMemoryMB are the sums of the resources
	// the running replicas requested (what request-sum admission counts).
	RequestedCPUMHz   float64 `json:"requested_cpu_mhz"`
	RequestedMemoryMB float64 `json:"requested_memory_mb,omitempty"`
	// RunningReplicas is how many replicas produced Samples.
	RunningReplicas int `json:"running_replicas"`
	// WarmingReplicas is how many of the running replicas are still in
	// their warm-up (just started, or no usage reported yet). They are
	// counted at the usage of the warm ones, or, when none is warm, at
	// the larger of their peak usage and their requested resources, never at
	// zero.
	WarmingReplicas int `json:"warming_replicas,omitempty"`
	// StoppedReplicas, with no replica running, is how many replicas
	// Samples sum over: the workload's replicas that ran in the window
	// and have stopped since (a front end that keeps a window, as the
	// strategy does, sets it). A new replica of the workload then counts
	// at no less than what one of them used, as while replicas run, so
	// that a workload stopped for its usage is not started again as if
	// it used its request. 0 (the default): the samples are no
	// replica's usage, and a new replica counts at its demand.
	StoppedReplicas int `json:"stopped_replicas,omitempty"`
	// ReplicaCPUDemandMHz is the expected CPU demand of one replica of the
	// workload that wants to run; required, > 0. ReplicaMemoryDemandMB
	// likewise, optional. A new replica counts at its demand until it is
	// observed; where memory is judged, its memory at no less than Nomad's
	// smallest reservation (MinReservationMemoryMB), a demand given or not.
	ReplicaCPUDemandMHz   float64 `json:"replica_cpu_demand_mhz"`
	ReplicaMemoryDemandMB float64 `json:"replica_memory_demand_mb,omitempty"`
	// WantedReplicas is how many replicas want to run on the host, the
	// running ones included. 0 offers every slot of the admission model.
	WantedReplicas int `json:"wanted_replicas,omitempty"`
	// QueuedReplicas, when given, are the new replicas waiting to run on
	// the host after the running ones, in order, each with its own demand
	// (several groups queued for one host, or replicas of different
	// sizes). An empty list means no new replica wants to run. It cannot
	// be combined with WantedReplicas.
	QueuedReplicas []Replica `json:"queued_replicas,omitzero"` // omitzero: [] (no new replica) is kept, nil (every slot) left out
	// OtherReservedCPUMHz and OtherReservedMemoryMB are what other
	// workloads reserve on the host: the scheduler places this workload's
	// replicas only in what is left, and the engine takes the other
	// workloads to use what they reserve (the workload's room is the
	// capacity less these).
	OtherReservedCPUMHz   float64 `json:"other_reserved_cpu_mhz,omitempty"`
	OtherReservedMemoryMB float64 `json:"other_reserved_memory_mb,omitempty"`
}

// Limits on an observation. They catch unit mistakes (MHz given in Hz) and
// keep a decision fast; no real host comes near them.
const (
	// MaxResource bounds every CPU (MHz) and memory (MB) figure: 10^9 MHz
	// is a petahertz, 10^9 MB a petabyte.
	MaxResource = 1e9
	// MaxUsageRatio bounds usage, requests and demand at this many times
	// the host's capacity: beyond it the numbers are not usage of this
	// host (wrong units, most likely).
	MaxUsageRatio = 1e6
	// MinCapacity is the smallest CPU (MHz) or known memory (MB) capacity
	// of a host: below it shares of the capacity underflow (a capacity of
	// 1e-320 gave NaN model inputs, read as missing, and a decision).
	MinCapacity = 1e-3
	// MaxSamples is the longest usage window accepted: a week of
	// one-minute samples.
	MaxSamples = 10_080
	// MaxReplicas bounds running, warming, wanted and queued replicas.
	MaxReplicas = MaxQuotaCount
	// MaxHostLabel bounds the host label, in bytes.
	MaxHostLabel = 256
	// MaxSampleTime bounds a sample's time, in Unix seconds (the year
	// 5138): a larger one is most likely in milliseconds.
	MaxSampleTime = 1e11
	// DefaultMinSamples is the fewest usage samples a decision reads when
	// the caller sets no minimum: one reading is no evidence of how usage
	// varies.
	DefaultMinSamples = 3
)

// unprintable is a rune a one-line label must not hold: a control
// character, a line or paragraph separator, or a bidirectional control
// (which reorders what follows it on the line).
func unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Bidi_Control)
}

func badNumber(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// Validate checks the observation against every rule; role labels the
// host in errors. The first broken rule is returned as an
// *ObservationError naming the field.
func (o *Observation) Validate(role string) error {
	bad := func(field, format string, args ...any) error { return obsErr(role, field, format, args...) }
	// resource checks a figure that must be finite, >= 0 (> 0 when
	// positive), at most MaxResource and, when capacity > 0, at most
	// MaxUsageRatio times it.
	resource := func(field string, v float64, positive bool, capacity float64, capName string) error {
		switch {
		case badNumber(v) || v < 0 || (positive && v == 0):
			want := ">= 0"
			if positive {
				want = "> 0"
			}
			return bad(field, "is %v; it must be a finite number %s", v, want)
		case v > MaxResource:
			return bad(field, "is %v, more than %g: check the units (MHz, MB)", v, float64(MaxResource))
		case capacity > 0 && v > MaxUsageRatio*capacity:
			return bad(field, "is %v, more than %g times the host's %s (%v): check the units", v, float64(MaxUsageRatio), capName, capacity)
		}
		return nil
	}
	count := func(field string, v, limit int, what string) error {
		if v < 0 || v > limit {
			return bad(field, "is %d; it must be a whole number from 0 to %d%s", v, limit, what)
		}
		return nil
	}
	if len(o.Host) > MaxHostLabel {
		return bad("host", "is %d bytes long; at most %d", len(o.Host), MaxHostLabel)
	}
	// (the label goes into explanations of several lines and logs)
	if !utf8.ValidString(o.Host) {
		return bad("host", "is not valid UTF-8")
	}
	if i := strings.IndexFunc(o.Host, unprintable); i >= 0 {
		r, _ := utf8.DecodeRuneInString(o.Host[i:])
		return bad("host", "holds a control character (%q at byte %d)", r, i)
	}
	if err := resource("cpu_capacity_mhz", o.CPUCapacityMHz, true, 0, ""); err != nil {
		return err
	}
	if err := resource("memory_capacity_mb", o.MemoryCapacityMB, false, 0, ""); err != nil {
		return err
	}
	if o.CPUCapacityMHz < MinCapacity {
		return bad("cpu_capacity_mhz", "is %v, less than %g: check the units (MHz)", o.CPUCapacityMHz, MinCapacity)
	}
	if o.MemoryCapacityMB > 0 && o.MemoryCapacityMB < MinCapacity {
		return bad("memory_capacity_mb", "is %v, less than %g: check the units (MB), or give 0 when the capacity is unknown", o.MemoryCapacityMB, MinCapacity)
	}
	cpuCap, memCap := o.CPUCapacityMHz, o.MemoryCapacityMB
	switch n := len(o.Samples); {
	case n == 0:
		return bad("usage_samples", "empty window: at least one usage sample is needed")
	case n > MaxSamples:
		return bad("usage_samples", "has %d samples, more than the limit of %d", n, MaxSamples)
	}
	cpuLimit := math.Min(MaxResource, MaxUsageRatio*cpuCap)
	memLimit := MaxResource
	if memCap > 0 {
		memLimit = math.Min(memLimit, MaxUsageRatio*memCap)
	}
	for i, s := range o.Samples {
		// The usual case is checked without building field names: a
		// window of thousands of samples costs one pass.
		if s.Time >= 0 && s.Time < MaxSampleTime && (i == 0 || s.Time > o.Samples[i-1].Time) &&
			s.CPUMHz >= 0 && s.CPUMHz <= cpuLimit && s.MemoryMB >= 0 && s.MemoryMB <= memLimit {
			continue
		}
		if s.Time < 0 {
			return bad(fmt.Sprintf("usage_samples[%d].time", i), "is %d; it must be a Unix time in seconds, >= 0", s.Time)
		}
		if s.Time >= MaxSampleTime {
			return bad(fmt.Sprintf("usage_samples[%d].time", i), "is %d, past the year 5138 as Unix seconds: milliseconds? Times are Unix seconds", s.Time)
		}
		if i > 0 && s.Time <= o.Samples[i-1].Time {
			return bad(fmt.Sprintf("usage_samples[%d].time", i), "%d is not after the previous sample's %d: samples must be in time order, oldest first, without repeats", s.Time, o.Samples[i-1].Time)
		}
		if err := resource(fmt.Sprintf("usage_samples[%d].cpu_mhz", i), s.CPUMHz, false, cpuCap, "CPU capacity"); err != nil {
			return err
		}
		if err := resource(fmt.Sprintf("usage_samples[%d].memory_mb", i), s.MemoryMB, false, memCap, "memory capacity"); err != nil {
			return err
		}
	}
	if err := resource("requested_cpu_mhz", o.RequestedCPUMHz, false, cpuCap, "CPU capacity"); err != nil {
		return err
	}
	if err := resource("requested_memory_mb", o.RequestedMemoryMB, false, memCap, "memory capacity"); err != nil {
		return err
	}
	if err := count("running_replicas", o.RunningReplicas, MaxReplicas, ""); err != nil {
		return err
	}
	if err := count("warming_replicas", o.WarmingReplicas, o.RunningReplicas, " (at most running_replicas)"); err != nil {
		return err
	}
	if err := count("stopped_replicas", o.StoppedReplicas, MaxReplicas, ""); err != nil {
		return err
	}
	if o.StoppedReplicas > 0 && o.RunningReplicas > 0 {
		return bad("stopped_replicas", "is %d while running_replicas is %d: the samples are the running replicas' usage; give stopped_replicas only when none runs", o.StoppedReplicas, o.RunningReplicas)
	}
	if err := resource("replica_cpu_demand_mhz", o.ReplicaCPUDemandMHz, true, cpuCap, "CPU capacity"); err != nil {
		return err
	}
	if err := resource("replica_memory_demand_mb", o.ReplicaMemoryDemandMB, false, memCap, "memory capacity"); err != nil {
		return err
	}
	if err := count("wanted_replicas", o.WantedReplicas, MaxReplicas, " (0 offers every slot)"); err != nil {
		return err
	}
	if o.QueuedReplicas != nil && o.WantedReplicas != 0 {
		return bad("wanted_replicas", "is %d and queued_replicas is given: give wanted_replicas (replicas of one size) or queued_replicas (each with its own demand), not both", o.WantedReplicas)
	}
	if len(o.QueuedReplicas) > MaxReplicas {
		return bad("queued_replicas", "lists %d replicas, more than the limit of %d", len(o.QueuedReplicas), MaxReplicas)
	}
	for i, r := range o.QueuedReplicas {
		// As with the samples, the usual case builds no field names.
		if r.CPUMHz > 0 && r.CPUMHz <= cpuLimit && r.MemoryMB >= 0 && r.MemoryMB <= memLimit {
			continue
		}
		if err := resource(fmt.Sprintf("queued_replicas[%d].cpu_mhz", i), r.CPUMHz, true, cpuCap, "CPU capacity"); err != nil {
			return err
		}
		if err := resource(fmt.Sprintf("queued_replicas[%d].memory_mb", i), r.MemoryMB, false, memCap, "memory capacity"); err != nil {
			return err
		}
	}
	if err := resource("other_reserved_cpu_mhz", o.OtherReservedCPUMHz, false, 0, ""); err != nil {
		return err
	}
	if o.OtherReservedCPUMHz > cpuCap {
		return bad("other_reserved_cpu_mhz", "is %v, more than the host's CPU capacity %v", o.OtherReservedCPUMHz, cpuCap)
	}
	if err := resource("other_reserved_memory_mb", o.OtherReservedMemoryMB, false, 0, ""); err != nil {
		return err
	}
	if memCap > 0 && o.OtherReservedMemoryMB > memCap {
		return bad("other_reserved_memory_mb", "is %v, more than the host's memory capacity %v", o.OtherReservedMemoryMB, memCap)
	}
	return nil
}

// CheckEvidence refuses, as Decide does, a window shorter than minSamples
// (0: DefaultMinSamples): one reading says nothing of how usage varies, so
// it gives no new count. For front ends that check what they know before
// deciding; minSamples must pass MinSamplesReason.
func (o *Observation) CheckEvidence(role string, minSamples int) error {
	if minSamples == 0 {
		minSamples = DefaultMinSamples
	}
	return o.checkEvidence(role, minSamples)
}

// checkEvidence refuses a window shorter than minSamples.
func (o *Observation) checkEvidence(role string, minSamples int) error {
	if len(o.Samples) < minSamples {
		return &ObservationError{Host: role, Field: "usage_samples", Err: ErrTooFewSamples,
			Reason: fmt.Sprintf("has %d sample(s); at least %d are needed to judge (min_samples)", len(o.Samples), minSamples)}
	}
	return nil
}
