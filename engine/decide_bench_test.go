package engine_test

import (
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// BenchmarkDecideDefault is one decision with the built-in models on two
// real-usage hosts of 120 samples: the cost every front end pays per call.
func BenchmarkDecideDefault(b *testing.B) {
	first := testsupport.SeriesObservation(b, "series3", 3000, 120, 6, 0.1)
	second := testsupport.SeriesObservation(b, "series5", 4000, 120, 6, 0.1)
	adm, err := engine.Builtin(engine.BuiltinAdmission)
	if err != nil {
		b.Fatal(err)
	}
	capy, err := engine.Builtin(engine.BuiltinCapacity)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		d, err := engine.Decide(engine.HostInput{Observation: &first, Model: adm}, engine.HostInput{Observation: &second, Model: capy})
		if err != nil || d.First.Containers < 0 {
			b.Fatal(err)
		}
	}
}
