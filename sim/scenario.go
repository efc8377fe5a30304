// Package sim replays real usage series on simulated hosts so that
// replica-count policies can be compared on the same footing: request-sum
// admission, window-percentile and peak-predictor baselines, the activation
// engine and the oracle. A host has capacity 1; each of its replicas follows
// a normalised usage series; every decision interval a policy sets each
// host's replica count from a window of past usage, and usage (CPU, and
// memory in the memory scenario) is checked at every sample.
//
// A run streams: each worker loads a series, prepares it, replays every
// policy and knob setting on it and drops it, so memory is bounded by the
// series in flight whatever their number (RunSources); the request
// calibration, which needs every sample, counts them in passes over the
// series (calibrate). Window statistics come from the stats package.
//
// The package has no Terraform or Nomad imports; the activation policy calls
// the engine through its public API only (Processor.Sweep for a knob sweep,
// engine.Decide where one decision is timed).
package sim

import (
	"fmt"
	"sort"
	"strings"
)

// Scenario fixes how series become hosts and replicas.
type Scenario struct {
	// Name identifies the scenario on the command line and in reports.
	Name string `json:"name"`
	// Description says in one sentence what the scenario models.
	Description string `json:"description"`
	// P99 is a replica's p99 usage over the whole series, as a share of a
	// host's capacity (each series is normalised to it).
	P99 float64 `json:"p99"`
	// Window is how many past samples a policy reads at each decision.
	Window int `json:"window"`
	// Interval is how many samples pass between decisions.
	Interval int `json:"interval"`
	// Hosts is the number of hosts per series. The activation policy pairs
	// them: host 2i is a first host (admission processor), host 2i+1 a
	// second host (capacity processor).
	Hosts int `json:"hosts"`
	// MaxReplicas caps a host's replica count (a pod limit); 0 means no cap
	// beyond what the arithmetic gives.
	MaxReplicas int `json:"max_replicas"`
	// Correlated: every replica follows the series exactly (no
	// multiplexing). Otherwise replica j of a host follows the series
	// shifted by a seeded random number of samples in [0, MaxShift] and
	// scaled by a seeded factor in [1-ScaleJitter, 1+ScaleJitter].
	Correlated  bool    `json:"correlated"`
	MaxShift    int     `json:"max_shift,omitempty"`
	ScaleJitter float64 `json:"scale_jitter,omitempty"`
	// RequestQuantile is the quantile of the first half of the series a
	// replica's request is set to (what a careful operator sets from
	// observed peaks).
	RequestQuantile float64 `json:"request_quantile"`
	// TargetSlack, when > 0, scales every request by one factor, common to
	// all series of a run, chosen so that the median slack (request minus
	// usage, over request) of the replay equals it, or that of the series
	// Options.CalibrateOn names.
	TargetSlack float64 `json:"target_slack,omitempty"`
	// Seed drives the replica shifts and scales.
	Seed uint64 `json:"seed,omitempty"`
	// DifferentApps: the hosts of a pair run different applications: the
	// first host the series' own, the second host the next series' (in
	// name order, the last series' partner being the first), so every
	// series is replayed once on each side. Otherwise both hosts run the
	// series' application.
	DifferentApps bool `json:"different_apps,omitempty"`
	// Memory: memory is replayed and judged as well as CPU. Every series
	// must carry memory (Bitbrains' mem_kb and mem_capacity_kb). A
	// replica's memory is the trace's memory in use (shifted and scaled
	// with its CPU), its memory request the memory provisioned to the VM,
	// and a host's memory capacity MemoryHostReplicas times that request.
	Memory             bool    `json:"memory,omitempty"`
	MemoryHostReplicas float64 `json:"memory_host_replicas,omitempty"`
}

// Names of the built-in scenarios.
const (
	ScenarioYardstick = "yardstick"
	ScenarioShifted   = "shifted"
	ScenarioTwoApps   = "two-apps"
	ScenarioMemory    = "memory"
)

// Yardstick is the setup of the independent yardstick replay
// (shared/design/benchmark-yardstick.md): perfectly correlated replicas,
// request = p99 of the first half, no cap.
func Yardstick() Scenario {
	return Scenario{
		Name:            ScenarioYardstick,
		Description:     "yardstick setup: perfectly correlated replicas, p99 per replica 0.1 of a host, request = p99 of the first half",
		P99:             0.1,
		Window:          120,
		Interval:        5,
		Hosts:           2,
		Correlated:      true,
		RequestQuantile: 0.99,
	}
}

// Shifted is the scenario: replicas phase-shifted and scaled
// against each other (some statistical multiplexing, as replicas of one
// service behind a balancer show), requests set from observed peaks with one
// factor so that median slack is 46% (Autopilot's hand-set limits), and a
// pod limit per host.
func Shifted() Scenario {
	return Scenario{
		Name:            ScenarioShifted,
		Description:     "replicas phase-shifted by up to 30 samples and scaled by +-10%, p99 per replica 0.1 of a host, requests from first-half p99 calibrated to 46% median slack, at most 110 replicas per host",
		P99:             0.1,
		Window:          120,
		Interval:        5,
		Hosts:           2,
		MaxReplicas:     110,
		Correlated:      false,
		MaxShift:        30,
		ScaleJitter:     0.1,
		RequestQuantile: 0.99,
		TargetSlack:     0.46,
		Seed:            1,
	}
}

// TwoApps is Shifted with different applications on the two hosts of a
// pair: the first host runs one series, the second host the next one, so
// the engine's two processors read two different observations.
func TwoApps() Scenario {
	s := Shifted()
	s.Name = ScenarioTwoApps
	s.Description = "as shifted, but the second host runs a different application (the next series in name order) from the first"
	s.DifferentApps = true
	return s
}

// MemoryScenario is Shifted with memory: real CPU and memory series (such
// as Bitbrains'), a replica's memory request the memory provisioned to its
// VM, a host's memory ten such requests, and memory judged by every policy
// and by the oracle (a sample over either capacity is a violation, counted
// per resource too).
func MemoryScenario() Scenario {
	s := Shifted()
	s.Name = ScenarioMemory
	s.Description = "as shifted, with real memory: a replica's memory request is its VM's provisioned memory, a host holds 10 such requests, a sample over either capacity is a violation"
	s.Memory = true
	s.MemoryHostReplicas = 10
	return s
}

// Scenarios returns the built-in scenarios by name.
func Scenarios() map[string]Scenario {
	return map[string]Scenario{
		ScenarioYardstick: Yardstick(),
		ScenarioShifted:   Shifted(),
		ScenarioTwoApps:   TwoApps(),
		ScenarioMemory:    MemoryScenario(),
	}
}

// ScenarioNames lists the built-in scenarios.
func ScenarioNames() []string {
	var names []string
	for n := range Scenarios() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ScenarioByName returns a built-in scenario.
func ScenarioByName(name string) (Scenario, error) {
	if s, ok := Scenarios()[name]; ok {
		return s, nil
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (have %s)", name, strings.Join(ScenarioNames(), ", "))
}

// Validate checks the scenario and names the field that is wrong.
func (s Scenario) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("scenario %s: %s: %s", s.Name, field, fmt.Sprintf(format, args...))
	}
	switch {
	case !(s.P99 > 0 && s.P99 <= 1):
		return bad("p99", "is %v; it must be in (0, 1]", s.P99)
	case s.Window < 2:
		return bad("window", "is %d; at least 2 samples are needed", s.Window)
	case s.Interval < 1:
		return bad("interval", "is %d; it must be >= 1", s.Interval)
	case s.Hosts < 1:
		return bad("hosts", "is %d; at least one host per series", s.Hosts)
	case s.MaxReplicas < 0:
		return bad("max_replicas", "is %d; it must be >= 0 (0: no cap)", s.MaxReplicas)
	case !s.Correlated && s.MaxReplicas == 0:
		return bad("max_replicas", "uncorrelated replicas need a cap on the replica count")
	case s.MaxShift < 0:
		return bad("max_shift", "is %d; it must be >= 0", s.MaxShift)
	case !(s.ScaleJitter >= 0 && s.ScaleJitter < 1):
		return bad("scale_jitter", "is %v; it must be in [0, 1)", s.ScaleJitter)
	case !(s.RequestQuantile > 0 && s.RequestQuantile <= 1):
		return bad("request_quantile", "is %v; it must be in (0, 1]", s.RequestQuantile)
	case !(s.TargetSlack >= 0 && s.TargetSlack < 1):
		return bad("target_slack", "is %v; it must be in [0, 1)", s.TargetSlack)
	case s.DifferentApps && s.Hosts < 2:
		return bad("hosts", "is %d; different applications need at least two hosts per pair", s.Hosts)
	case s.Memory && !(s.MemoryHostReplicas >= 1 && s.MemoryHostReplicas <= 1e6):
		return bad("memory_host_replicas", "is %v; a host must hold at least one replica's memory request (at most 1e6)", s.MemoryHostReplicas)
	case !s.Memory && s.MemoryHostReplicas != 0:
		return bad("memory_host_replicas", "is %v but memory is not replayed (set memory)", s.MemoryHostReplicas)
	}
	return nil
}
