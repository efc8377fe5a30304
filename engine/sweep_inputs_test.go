package engine_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// SweepInputs on the vector FeaturesInto gives is Sweep on the observation,
// for both built-in processors; FeaturesInto equals Features and writes into
// the caller's storage (BenchmarkFeaturesInto reports what it allocates); a
// vector of the wrong length or a role the model cannot serve is an error.
func TestSweepInputsIsSweep(t *testing.T) {
	obs := testsupport.SeriesObservation(t, "series3", 3000, 120, 6, 0.1)
	thresholds := []float64{0.05, 0.3, 0.5, 0.8, 0.95, 0.999}
	for _, c := range []struct{ name, role string }{{engine.BuiltinAdmission, engine.RoleFirst}, {engine.BuiltinCapacity, engine.RoleSecond}} {
		p, err := engine.Builtin(c.name)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int, len(thresholds))
		if err := p.Sweep(&obs, c.role, thresholds, want); err != nil {
			t.Fatal(err)
		}
		fresh, err := p.Features(&obs, c.role)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float64, 0, len(fresh))
		x, err := p.FeaturesInto(buf, &obs, c.role)
		if err != nil {
			t.Fatal(err)
		}
		if &x[0] != &buf[:1][0] {
			t.Errorf("%s: FeaturesInto did not use the caller's storage", c.name)
		}
		for i := range x {
			if x[i] != fresh[i] {
				t.Fatalf("%s: input %d: FeaturesInto %v, Features %v", c.name, i, x[i], fresh[i])
			}
		}
		got := make([]int, len(thresholds))
		if err := p.SweepInputs(x, c.role, thresholds, got); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s at %v: SweepInputs %d, Sweep %d", c.name, thresholds[i], got[i], want[i])
			}
		}
		if want[0] == want[len(want)-1] {
			t.Errorf("%s: amounts %v do not move with the threshold: the comparison shows little", c.name, want)
		}
		if err := p.SweepInputs(x[1:], c.role, thresholds, got); err == nil || !strings.Contains(err.Error(), "input vector has") {
			t.Errorf("%s: a short vector: %v", c.name, err)
		}
		other := engine.RoleSecond
		if c.role == engine.RoleSecond {
			other = engine.RoleFirst
		}
		if err := p.SweepInputs(x, other, thresholds, got); err == nil {
			t.Errorf("%s: served the %s role", c.name, other)
		}
		// Sweep validates its observation: the fields Validate names.
		for _, bad := range []struct {
			field string
			edit  func(o *engine.Observation)
		}{
			{"samples[7].cpu_mhz", func(o *engine.Observation) { o.Samples[7].CPUMHz = -1 }},
			{"running_replicas", func(o *engine.Observation) { o.RunningReplicas = -2 }},
			{"cpu_capacity_mhz", func(o *engine.Observation) { o.CPUCapacityMHz = 0 }},
		} {
			o := obs
			o.Samples = slices.Clone(obs.Samples)
			bad.edit(&o)
			if err := p.Sweep(&o, c.role, thresholds, got); err == nil || !strings.Contains(err.Error(), bad.field) {
				t.Errorf("%s: Sweep on an observation with a bad %s: error %v", c.name, bad.field, err)
			}
		}
	}
}

// BenchmarkFeaturesInto is the simulator's per-observation feature cost
// with the caller's storage kept: once the processor's scratch is warm it
// allocates nothing (the evidence note is written only for a decision;
// outside the race detector, which drops pooled scratch at random). It reads one
// observation again and again, so the per-replica summary is the kept one,
// as for a sweep's counts of one window.
func BenchmarkFeaturesInto(b *testing.B) {
	obs := testsupport.SeriesObservation(b, "series3", 3000, 120, 6, 0.1)
	p, err := engine.Builtin(engine.BuiltinAdmission)
	if err != nil {
		b.Fatal(err)
	}
	var x []float64
	b.ReportAllocs()
	for b.Loop() {
		if x, err = p.FeaturesInto(x, &obs, engine.RoleFirst); err != nil {
			b.Fatal(err)
		}
	}
}
