// Package testsupport holds the fixtures every front end's tests share:
// observations made from the bundled real usage series, the engine's rule
// book as a table of invalid inputs, and quota helpers. It is imported by
// tests only.
package testsupport

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// Capacity of the fixture hosts, and one replica's memory.
const (
	HostMHz      = 20000.0
	HostMemoryMB = 65536.0
	ReplicaMemMB = 512.0
)

// Root is the module's root directory.
func Root() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testsupport: no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// CraneDir holds the bundled real usage series.
func CraneDir() string { return filepath.Join(Root(), "engine", "testdata", "traces", "crane") }

// SeriesObservation is a host running `replicas` replicas of one
// application that all follow the real series `name`, scaled so that a
// replica's p99 CPU is `share` of the host, over the `window` samples
// ending at `end`. Requests are set the careful way, at the p99; memory is
// 512 MB per replica, flat.
func SeriesObservation(t testing.TB, name string, end, window, replicas int, share float64) engine.Observation {
	t.Helper()
	s, err := traces.ReadFile(filepath.Join(CraneDir(), name+".csv"))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	if end > s.Len() || window > end || window < 1 {
		t.Fatalf("fixture: window %d ending at %d does not fit series %s of %d samples", window, end, name, s.Len())
	}
	n, err := traces.Normalize(s, share)
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	o := engine.Observation{
		Host:                  name,
		CPUCapacityMHz:        HostMHz,
		MemoryCapacityMB:      HostMemoryMB,
		RequestedCPUMHz:       float64(replicas) * (share * HostMHz), // (12000, not 12000.000000000002)
		RequestedMemoryMB:     float64(replicas) * ReplicaMemMB,
		RunningReplicas:       replicas,
		ReplicaCPUDemandMHz:   share * HostMHz,
		ReplicaMemoryDemandMB: ReplicaMemMB,
	}
	for i := end - window; i < end; i++ {
		o.Samples = append(o.Samples, engine.Sample{
			Time:     n.Times[i],
			CPUMHz:   n.Values[i] * float64(replicas) * HostMHz,
			MemoryMB: ReplicaMemMB * float64(replicas),
		})
	}
	if err := o.Validate("fixture"); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return o
}

// Quota is a fully given quota spec.
func Quota(lo, hi int, perBranch float64, rounding string) *engine.QuotaSpec {
	return engine.Quota{Min: lo, Max: hi, PerBranch: perBranch, Rounding: rounding}.Spec()
}

// Flat is an observation of a host with `running` replicas using
// cpuPerReplica MHz each for `samples` one-minute samples.
func Flat(capacityMHz float64, running int, cpuPerReplica, demandMHz float64, samples int) engine.Observation {
	o := engine.Observation{CPUCapacityMHz: capacityMHz, RunningReplicas: running,
		RequestedCPUMHz: float64(running) * demandMHz, ReplicaCPUDemandMHz: demandMHz}
	for i := 0; i < samples; i++ {
		o.Samples = append(o.Samples, engine.Sample{Time: int64(60 * i), CPUMHz: cpuPerReplica * float64(running)})
	}
	return o
}

// SyncBuffer is a log destination safe for concurrent writers (a plugin's
// logger, read by the test).
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// AsSecond is a copy of o as the second host takes it: the queue of new
// replicas (wanted_replicas, queued_replicas) is the first host's alone,
// and engine.Decide refuses it on the second.
func AsSecond(o *engine.Observation) *engine.Observation {
	c := *o
	c.WantedReplicas, c.QueuedReplicas = 0, nil
	return &c
}

// BuiltinModelFile writes the built-in model name (engine.BuiltinAdmission
// or engine.BuiltinCapacity) to a file of its own in a temporary directory
// of t, as a user's model file, and returns its path, the built-in model and
// the processor loaded from the file for role.
func BuiltinModelFile(t testing.TB, name, role string) (path string, b, p *engine.Processor) {
	t.Helper()
	b, err := engine.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), name+".json")
	if err := engine.WriteModelFile(path, b.Model()); err != nil {
		t.Fatal(err)
	}
	if p, err = engine.Models.LoadFor(role, path); err != nil {
		t.Fatal(err)
	}
	return path, b, p
}

// HeavierPair is one comparison of HeavierWindows: the amount a host's
// processor gave a window, and the amount it gave the same window with
// samples raised.
type HeavierPair struct {
	What             string // which window, trial and step
	Role             string
	Lighter, Heavier int
}

// HeavierWindows decides, with the given processors (nil: the built-in
// ones), chains of ever heavier windows made from real Crane windows:
// each step raises one more sample, at a random place, to up to twice the
// window's peak (never lowering it), now and then scales the whole
// window's CPU up and, with raiseMemory, now and then raises the sample's
// memory to where it may bind the count. It returns every pair of
// consecutive windows on both hosts; a processor whose estimate is
// monotone in usage never gives the heavier window the larger amount.
// (Every window has CPU and memory measured: a window whose CPU or memory
// is zero throughout reads as unmeasured, so a first sample above zero may
// give more replicas.)
func HeavierWindows(t testing.TB, first, second *engine.Processor, raiseMemory bool) []HeavierPair {
	t.Helper()
	windows := []engine.Observation{
		SeriesObservation(t, "series3", 3000, 120, 6, 0.1),
		SeriesObservation(t, "series5", 8000, 120, 6, 0.1),
		SeriesObservation(t, "series15", 20000, 120, 4, 0.1),
		SeriesObservation(t, "series1", 5000, 60, 3, 0.3),
		SeriesObservation(t, "series0", 9000, 120, 8, 0.05),
		SeriesObservation(t, "series12", 6000, 120, 5, 0.08),
	}
	amounts := func(o engine.Observation) (int, int) {
		d, err := engine.Decide(engine.HostInput{Observation: &o, Model: first}, engine.HostInput{Observation: &o, Model: second})
		if err != nil {
			t.Fatal(err)
		}
		return d.First.Amount, d.Second.Amount
	}
	rng := rand.New(rand.NewPCG(7, 11))
	memRng := rand.New(rand.NewPCG(13, 17))
	var out []HeavierPair
	for wi, base := range windows {
		peak := 0.0
		for _, s := range base.Samples {
			peak = max(peak, s.CPUMHz)
		}
		for trial := 0; trial < 40; trial++ {
			level := peak * (1 + rng.Float64())
			order := rng.Perm(len(base.Samples))
			lighter := base
			lf, ls := amounts(lighter)
			for k := 1; k <= 8; k++ {
				heavier := lighter
				heavier.Samples = append([]engine.Sample(nil), lighter.Samples...)
				i := order[k-1]
				heavier.Samples[i].CPUMHz = max(heavier.Samples[i].CPUMHz, level)
				if rng.IntN(4) == 0 {
					for i := range heavier.Samples {
						heavier.Samples[i].CPUMHz *= 1 + 0.2*rng.Float64()
					}
				}
				if raiseMemory && memRng.IntN(3) == 0 { // the raised sample's memory too, to where it may bind
					heavier.Samples[i].MemoryMB = max(heavier.Samples[i].MemoryMB, heavier.MemoryCapacityMB*(0.05+0.5*memRng.Float64()))
				}
				hf, hs := amounts(heavier)
				what := fmt.Sprintf("window %d (%s), trial %d, %d samples raised", wi, base.Host, trial, k)
				out = append(out,
					HeavierPair{What: what, Role: engine.RoleFirst, Lighter: lf, Heavier: hf},
					HeavierPair{What: what, Role: engine.RoleSecond, Lighter: ls, Heavier: hs})
				lighter, lf, ls = heavier, hf, hs
			}
		}
	}
	return out
}
