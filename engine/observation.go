package engine

import (
	"errors"
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
// host in errors. Every broken rule is reported, each as an
// *ObservationError naming the field (one error, or errors.Join of them:
// Problems splits it); of the usage window and the queue, the first
// sample or replica at fault. A figure checked against a capacity that is
// itself wrong is checked against no capacity.
func (o *Observation) Validate(role string) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, obsErr(role, field, format, args...))
	}
	// resource checks a figure that must be finite, >= 0 (> 0 when
	// positive), at most MaxResource and, when capacity > 0, at most
	// MaxUsageRatio times it; ok says whether it passed.
	resource := func(field string, v float64, positive bool, capacity float64, capName string) (ok bool) {
		if why := resourceProblem(v, positive, capacity, capName); why != "" {
			errs = append(errs, obsErr(role, field, "%s", why))
			return false
		}
		return true
	}
	count := func(field string, v, limit int, what string) (ok bool) {
		if v < 0 || v > limit {
			bad(field, "is %d; it must be a whole number from 0 to %d%s", v, limit, what)
			return false
		}
		return true
	}
	switch {
	case len(o.Host) > MaxHostLabel:
		bad("host", "is %d bytes long; at most %d", len(o.Host), MaxHostLabel)
	// (the label goes into explanations of several lines and logs)
	case !utf8.ValidString(o.Host):
		bad("host", "is not valid UTF-8")
	default:
		if i := strings.IndexFunc(o.Host, unprintable); i >= 0 {
			r, _ := utf8.DecodeRuneInString(o.Host[i:])
			bad("host", "holds a control character (%q at byte %d)", r, i)
		}
	}
	// A capacity that is wrong is no bound for the figures checked
	// against it (0: not used).
	cpuCap, memCap := o.CPUCapacityMHz, o.MemoryCapacityMB
	if !resource("cpu_capacity_mhz", o.CPUCapacityMHz, true, 0, "") {
		cpuCap = 0
	} else if o.CPUCapacityMHz < MinCapacity {
		bad("cpu_capacity_mhz", "is %v, less than %g: check the units (MHz)", o.CPUCapacityMHz, MinCapacity)
		cpuCap = 0
	}
	if !resource("memory_capacity_mb", o.MemoryCapacityMB, false, 0, "") {
		memCap = 0
	} else if o.MemoryCapacityMB > 0 && o.MemoryCapacityMB < MinCapacity {
		bad("memory_capacity_mb", "is %v, less than %g: check the units (MB), or give 0 when the capacity is unknown", o.MemoryCapacityMB, MinCapacity)
		memCap = 0
	}
	switch n := len(o.Samples); {
	case n == 0:
		bad("usage_samples", "empty window: at least one usage sample is needed")
	case n > MaxSamples:
		bad("usage_samples", "has %d samples, more than the limit of %d", n, MaxSamples)
	default:
		o.checkSamples(role, cpuCap, memCap, &errs)
	}
	resource("requested_cpu_mhz", o.RequestedCPUMHz, false, cpuCap, "CPU capacity")
	resource("requested_memory_mb", o.RequestedMemoryMB, false, memCap, "memory capacity")
	runningOK := count("running_replicas", o.RunningReplicas, MaxReplicas, "")
	if runningOK {
		count("warming_replicas", o.WarmingReplicas, o.RunningReplicas, " (at most running_replicas)")
	} else {
		count("warming_replicas", o.WarmingReplicas, MaxReplicas, "")
	}
	if count("stopped_replicas", o.StoppedReplicas, MaxReplicas, "") && runningOK && o.StoppedReplicas > 0 && o.RunningReplicas > 0 {
		bad("stopped_replicas", "is %d while running_replicas is %d: the samples are the running replicas' usage; give stopped_replicas only when none runs", o.StoppedReplicas, o.RunningReplicas)
	}
	resource("replica_cpu_demand_mhz", o.ReplicaCPUDemandMHz, true, cpuCap, "CPU capacity")
	resource("replica_memory_demand_mb", o.ReplicaMemoryDemandMB, false, memCap, "memory capacity")
	if count("wanted_replicas", o.WantedReplicas, MaxReplicas, " (0 offers every slot)") && o.QueuedReplicas != nil && o.WantedReplicas != 0 {
		bad("wanted_replicas", "is %d and queued_replicas is given: give wanted_replicas (replicas of one size) or queued_replicas (each with its own demand), not both", o.WantedReplicas)
	}
	if len(o.QueuedReplicas) > MaxReplicas {
		bad("queued_replicas", "lists %d replicas, more than the limit of %d", len(o.QueuedReplicas), MaxReplicas)
	} else {
		cpuLimit, memLimit := usageLimits(cpuCap, memCap)
		for i, r := range o.QueuedReplicas {
			// As with the samples, the usual case builds no field names;
			// the first replica at fault is reported.
			if r.CPUMHz > 0 && r.CPUMHz <= cpuLimit && r.MemoryMB >= 0 && r.MemoryMB <= memLimit {
				continue
			}
			resource(fmt.Sprintf("queued_replicas[%d].cpu_mhz", i), r.CPUMHz, true, cpuCap, "CPU capacity")
			resource(fmt.Sprintf("queued_replicas[%d].memory_mb", i), r.MemoryMB, false, memCap, "memory capacity")
			break
		}
	}
	if resource("other_reserved_cpu_mhz", o.OtherReservedCPUMHz, false, 0, "") && cpuCap > 0 && o.OtherReservedCPUMHz > cpuCap {
		bad("other_reserved_cpu_mhz", "is %v, more than the host's CPU capacity %v", o.OtherReservedCPUMHz, cpuCap)
	}
	if resource("other_reserved_memory_mb", o.OtherReservedMemoryMB, false, 0, "") && memCap > 0 && o.OtherReservedMemoryMB > memCap {
		bad("other_reserved_memory_mb", "is %v, more than the host's memory capacity %v", o.OtherReservedMemoryMB, memCap)
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// resourceProblem says what is wrong with a figure that must be finite,
// >= 0 (> 0 when positive), at most MaxResource and, when capacity > 0, at
// most MaxUsageRatio times it (capName names the capacity); "" when
// nothing is.
func resourceProblem(v float64, positive bool, capacity float64, capName string) string {
	switch {
	case badNumber(v) || v < 0 || (positive && v == 0):
		want := ">= 0"
		if positive {
			want = "> 0"
		}
		return fmt.Sprintf("is %v; it must be a finite number %s", v, want)
	case v > MaxResource:
		return fmt.Sprintf("is %v, more than %g: check the units (MHz, MB)", v, float64(MaxResource))
	case capacity > 0 && v > MaxUsageRatio*capacity:
		return fmt.Sprintf("is %v, more than %g times the host's %s (%v): check the units", v, float64(MaxUsageRatio), capName, capacity)
	}
	return ""
}

// usageLimits are the largest CPU and memory figures a window or a queue
// may hold for capacities cpuCap and memCap (0: no capacity to bound them).
func usageLimits(cpuCap, memCap float64) (cpuLimit, memLimit float64) {
	cpuLimit, memLimit = MaxResource, MaxResource
	if cpuCap > 0 {
		cpuLimit = math.Min(cpuLimit, MaxUsageRatio*cpuCap)
	}
	if memCap > 0 {
		memLimit = math.Min(memLimit, MaxUsageRatio*memCap)
	}
	return cpuLimit, memLimit
}

// checkSamples adds to errs the window's first sample at fault, if any:
// one problem for the window, not one per sample (a week of samples at
// the wrong unit would be 10,080).
func (o *Observation) checkSamples(role string, cpuCap, memCap float64, errs *[]error) {
	cpuLimit, memLimit := usageLimits(cpuCap, memCap)
	bad := func(field, format string, args ...any) {
		*errs = append(*errs, obsErr(role, field, format, args...))
	}
	for i, s := range o.Samples {
		// The usual case is checked without building field names: a
		// window of thousands of samples costs one pass.
		if s.Time >= 0 && s.Time < MaxSampleTime && (i == 0 || s.Time > o.Samples[i-1].Time) &&
			s.CPUMHz >= 0 && s.CPUMHz <= cpuLimit && s.MemoryMB >= 0 && s.MemoryMB <= memLimit {
			continue
		}
		field := func(name string) string { return fmt.Sprintf("usage_samples[%d].%s", i, name) }
		switch {
		case s.Time < 0:
			bad(field("time"), "is %d; it must be a Unix time in seconds, >= 0", s.Time)
		case s.Time >= MaxSampleTime:
			bad(field("time"), "is %d, past the year 5138 as Unix seconds: milliseconds? Times are Unix seconds", s.Time)
		case i > 0 && s.Time <= o.Samples[i-1].Time:
			bad(field("time"), "%d is not after the previous sample's %d: samples must be in time order, oldest first, without repeats", s.Time, o.Samples[i-1].Time)
		}
		for _, f := range []struct {
			name, capName string
			v, capacity   float64
		}{{"cpu_mhz", "CPU capacity", s.CPUMHz, cpuCap}, {"memory_mb", "memory capacity", s.MemoryMB, memCap}} {
			if why := resourceProblem(f.v, false, f.capacity, f.capName); why != "" {
				bad(field(f.name), "%s", why)
			}
		}
		return
	}
}

// checkEvidence refuses a window shorter than minSamples (0:
// DefaultMinSamples): one reading says nothing of how usage varies, so it
// gives no new count.
func (o *Observation) checkEvidence(role string, minSamples int) error {
	if minSamples == 0 {
		minSamples = DefaultMinSamples
	}
	if len(o.Samples) < minSamples {
		return &ObservationError{Host: role, Field: "usage_samples", Err: ErrTooFewSamples,
			Reason: fmt.Sprintf("has %d sample(s); at least %d are needed to judge (min_samples)", len(o.Samples), minSamples)}
	}
	return nil
}
