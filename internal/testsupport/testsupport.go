// Package testsupport holds the fixtures every front end's tests share:
// observations made from the bundled real usage series, the engine's rule
// book as a table of invalid inputs, and quota helpers. It is imported by
// tests only.
package testsupport

import (
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
