package sim

import (
	"context"
	"testing"
)

func BenchmarkZZActCrane(b *testing.B) {
	all := loadCrane(b)
	for b.Loop() {
		m := &Meter{}
		act, err := Activation(ActivationConfig{Meter: m})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Run(context.Background(), all, Shifted(), []Policy{act}, Options{Workers: 1}); err != nil {
			b.Fatal(err)
		}
		r := m.Read()
		dec := float64(r.Decisions)
		b.ReportMetric(float64(r.Replay.Nanoseconds())/dec, "act-ns/decision")
		b.ReportMetric(float64(r.Bare.Nanoseconds())/dec, "bare-ns/decision")
		b.ReportMetric(float64(r.Replay)/float64(r.Bare), "act/bare")
		b.ReportMetric(float64(r.FirstPasses)/dec, "first-sweeps/decision")
		b.ReportMetric(float64(r.SecondPasses)/dec, "second-sweeps/decision")
	}
}
