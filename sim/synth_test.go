package sim

import (
	"context"
	"math"
	"reflect"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/stats"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

func TestSyntheticIsSeededAndShaped(t *testing.T) {
	a, err := Synthetic("svc", 1, DefaultSynth())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synthetic("svc", 1, DefaultSynth())
	c, _ := Synthetic("svc", 2, DefaultSynth())
	if !reflect.DeepEqual(a, b) {
		t.Fatal("one seed gave two series")
	}
	if reflect.DeepEqual(a.Values, c.Values) {
		t.Fatal("two seeds gave one series")
	}
	if a.Len() != DefaultSynth().Samples {
		t.Fatalf("%d samples", a.Len())
	}
	// A daily cycle of amplitude 0.5: the day's quartiles differ clearly.
	day := a.Values[:1440]
	if q1, q3 := stats.Quantile(day, 0.1), stats.Quantile(day, 0.9); q3 < 1.5*q1 {
		t.Errorf("no daily cycle: p10 %v p90 %v", q1, q3)
	}
	// Bursts: the burst amplitude 1.5 puts the max well above the p99 of a
	// quiet cycle.
	quiet := DefaultSynth()
	quiet.Bursts = 0
	flat, _ := Synthetic("svc", 1, quiet)
	if m1, m0 := stats.Quantile(a.Values, 1), stats.Quantile(flat.Values, 1); m1 < m0+1 {
		t.Errorf("no bursts: max %v, %v without bursts", m1, m0)
	}
	for i, v := range a.Values {
		if v < 0 || math.IsNaN(v) || (i > 0 && a.Times[i] <= a.Times[i-1]) {
			t.Fatalf("sample %d: %v at %d", i, v, a.Times[i])
		}
	}
	bad := DefaultSynth()
	bad.AR = 1
	if _, err := Synthetic("bad", 1, bad); err == nil {
		t.Error("AR 1 accepted")
	}
}

// BenchmarkSimulateSynthetic replays 48 synthetic week-long series with
// every baseline: a scale test of the replay without the engine.
func BenchmarkSimulateSynthetic(b *testing.B) {
	var all []traces.Series
	for i := 0; i < 48; i++ {
		s, err := Synthetic("syn", uint64(i), DefaultSynth())
		if err != nil {
			b.Fatal(err)
		}
		s.Name = s.Name + string(rune('a'+i%26)) + string(rune('a'+i/26))
		all = append(all, s)
	}
	for i := 0; i < b.N; i++ {
		if _, err := Run(context.Background(), all, Shifted(), Baselines(), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
