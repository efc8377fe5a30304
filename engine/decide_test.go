package engine

import (
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func quota(min, max int, per float64, rounding string) *Quota {
	return &Quota{Min: min, Max: max, PerBranch: per, Rounding: rounding}
}

func TestDecideSemantics(t *testing.T) {
	busy := seriesObservation(t, "series3", 3000, 120, 6, 0.1)
	req := Request{First: busy, Second: busy}
	d, err := DecideRequest(&req)
	if err != nil {
		t.Fatal(err)
	}
	if d.First.Layer != LayerInput || d.Second.Layer != LayerOutput {
		t.Fatalf("layers %s/%s", d.First.Layer, d.Second.Layer)
	}
	if d.First.Amount != len(d.First.Activated) || d.Second.Amount != len(d.Second.Activated) {
		t.Fatal("amount does not match the activated slots named")
	}
	for _, name := range d.First.Activated {
		if !strings.HasPrefix(name, SlotPrefix) {
			t.Fatalf("first host counted %q, not a demand slot", name)
		}
	}
	// Wanted replicas bound the first host's amount: empty slots hold no data.
	for _, wanted := range []int{1, 2, 5} {
		r := req
		r.First.WantedReplicas = wanted
		dw, err := DecideRequest(&r)
		if err != nil {
			t.Fatal(err)
		}
		if dw.First.Amount > wanted {
			t.Fatalf("wanted %d replicas but %d slots were admitted", wanted, dw.First.Amount)
		}
	}
	// More usage never raises the second host's safe count on this model.
	heavier := busy
	heavier.Samples = append([]Sample(nil), busy.Samples...)
	for i := range heavier.Samples {
		heavier.Samples[i].CPUMHz *= 3
	}
	r := req
	r.Second = heavier
	dh, err := DecideRequest(&r)
	if err != nil {
		t.Fatal(err)
	}
	if dh.Second.Amount >= d.Second.Amount {
		t.Fatalf("tripling usage gave safe count %d, before %d", dh.Second.Amount, d.Second.Amount)
	}
	// Deterministic.
	again, err := DecideRequest(&req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, again) {
		t.Fatal("the same request gave two decisions")
	}
	if !strings.Contains(d.Explain(), "A_in=") || !strings.Contains(d.Second.Reason(), "A_out=") {
		t.Fatalf("explanation lacks the amounts:\n%s", d.Explain())
	}
}

func TestDecideRejectsBadInput(t *testing.T) {
	good := func() Request {
		return Request{
			First:  seriesObservation(t, "series3", 3000, 30, 2, 0.1),
			Second: seriesObservation(t, "series3", 3000, 30, 2, 0.1),
		}
	}
	tests := []struct {
		name  string
		edit  func(r *Request)
		host  string
		field string
	}{
		{"NaN usage", func(r *Request) { r.First.Samples[3].CPUMHz = math.NaN() }, "first", "usage_samples[3].cpu_mhz"},
		{"negative usage", func(r *Request) { r.Second.Samples[0].CPUMHz = -1 }, "second", "usage_samples[0].cpu_mhz"},
		{"infinite memory", func(r *Request) { r.Second.Samples[2].MemoryMB = math.Inf(1) }, "second", "usage_samples[2].memory_mb"},
		{"out of order", func(r *Request) { r.First.Samples[5].Time = r.First.Samples[4].Time }, "first", "usage_samples[5].time"},
		{"empty window", func(r *Request) { r.Second.Samples = nil }, "second", "usage_samples"},
		{"zero capacity", func(r *Request) { r.First.CPUCapacityMHz = 0 }, "first", "cpu_capacity_mhz"},
		{"negative replicas", func(r *Request) { r.First.RunningReplicas = -1 }, "first", "running_replicas"},
		{"no demand", func(r *Request) { r.Second.ReplicaCPUDemandMHz = 0 }, "second", "replica_cpu_demand_mhz"},
		{"negative request", func(r *Request) { r.First.RequestedCPUMHz = -5 }, "first", "requested_cpu_mhz"},
		{"negative wanted", func(r *Request) { r.First.WantedReplicas = -2 }, "first", "wanted_replicas"},
		{"usage beyond any host", func(r *Request) { r.First.Samples[1].CPUMHz = 1e200 }, "first", "usage_samples[1].cpu_mhz"},
		{"demand beyond any host", func(r *Request) { r.Second.ReplicaCPUDemandMHz = 1e300 }, "second", "replica_cpu_demand_mhz"},
		{"request beyond any host", func(r *Request) { r.Second.RequestedCPUMHz = 1e300 }, "second", "requested_cpu_mhz"},
		{"min above max", func(r *Request) { r.FirstQuota = quota(5, 4, 1, RoundNearest) }, "first", "max"},
		{"negative min", func(r *Request) { r.SecondQuota = quota(-1, 4, 1, RoundNearest) }, "second", "min"},
		{"NaN per branch", func(r *Request) { r.SecondQuota = quota(0, 4, math.NaN(), RoundNearest) }, "second", "per_branch"},
		{"unknown rounding", func(r *Request) { r.FirstQuota = quota(0, 4, 1, "banker") }, "first", "rounding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.edit(&r)
			d, err := DecideRequest(&r)
			if err == nil || d != nil {
				t.Fatalf("got decision %v and error %v, want only an error", d, err)
			}
			var oe *ObservationError
			var qe *QuotaError
			switch {
			case errors.As(err, &oe):
				if oe.Host != tc.host || oe.Field != tc.field {
					t.Fatalf("error names %s/%s, want %s/%s: %v", oe.Host, oe.Field, tc.host, tc.field, err)
				}
			case errors.As(err, &qe):
				if qe.Host != tc.host || qe.Field != tc.field {
					t.Fatalf("error names %s/%s, want %s/%s: %v", qe.Host, qe.Field, tc.host, tc.field, err)
				}
			default:
				t.Fatalf("error %v names no field", err)
			}
		})
	}
	// Model sources that cannot be read.
	r := good()
	r.FirstModel = "builtin:missing"
	if _, err := DecideRequest(&r); err == nil || !strings.HasPrefix(err.Error(), "first_model:") {
		t.Fatalf("bad first model: %v", err)
	}
	bad := good()
	bad.SecondModel = os.DevNull
	if _, err := DecideRequest(&bad); err == nil || !strings.HasPrefix(err.Error(), "second_model:") {
		t.Fatalf("bad second model: %v", err)
	}
}

func TestDecideConcurrent(t *testing.T) {
	req := Request{First: seriesObservation(t, "series3", 3000, 120, 6, 0.1), Second: seriesObservation(t, "series5", 4000, 120, 6, 0.1)}
	want, err := DecideRequest(&req)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				d, err := DecideRequest(&req)
				if err != nil {
					errs <- err
					return
				}
				if !reflect.DeepEqual(d, want) {
					errs <- errors.New("concurrent decision differs")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestQuotaApply(t *testing.T) {
	tests := []struct {
		q       Quota
		amount  int
		want    int
		clamped bool
	}{
		{Quota{0, 10, 1, RoundNearest}, 7, 7, false},
		{Quota{0, 10, 1, RoundNearest}, 12, 10, true},
		{Quota{3, 10, 1, RoundNearest}, 1, 3, true},
		{Quota{0, 10, 0.5, RoundNearest}, 5, 3, false}, // 2.5 rounds half away from zero
		{Quota{0, 10, 0.5, RoundFloor}, 5, 2, false},
		{Quota{0, 10, 0.5, RoundCeil}, 5, 3, false},
		{Quota{0, 10, 0.25, RoundCeil}, 1, 1, false},
		{Quota{0, 0, 1, RoundNearest}, 5, 0, true},
		{Quota{2, 2, 1, RoundFloor}, 0, 2, true},
		{Quota{0, MaxQuotaCount, MaxPerBranch, RoundNearest}, 8192, MaxQuotaCount, true},
	}
	for _, tc := range tests {
		if err := tc.q.Validate("first"); err != nil {
			t.Fatalf("%+v: %v", tc.q, err)
		}
		got, clamped := tc.q.Apply(tc.amount)
		if got != tc.want || clamped != tc.clamped {
			t.Errorf("%+v.Apply(%d) = %d, %v; want %d, %v", tc.q, tc.amount, got, clamped, tc.want, tc.clamped)
		}
	}
}

func TestFeatureVector(t *testing.T) {
	// Two replicas on a 1000 MHz host; per-replica shares are usage/2/1000.
	o := Observation{CPUCapacityMHz: 1000, RunningReplicas: 2, ReplicaCPUDemandMHz: 100, RequestedCPUMHz: 300}
	for i, u := range []float64{100, 300, 200, 400} {
		o.Samples = append(o.Samples, Sample{Time: int64(60 * i), CPUMHz: u})
	}
	names := []string{FeatCPUReplicaMean, FeatCPUReplicaMax, FeatCPUReplicaLast, FeatCPUFitMax, FeatCPUReplicaRequest, FeatCPUHostMax, FeatCPUReplicaTrend, "slot_0"}
	x, err := FeatureVector(&o, "first", names)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.125, 0.2, 0.2, 5, 0.15, 0.4, 0.15, 0.1}
	for i := range want {
		if math.Abs(x[i]-want[i]) > 1e-12 {
			t.Errorf("%s = %v, want %v", names[i], x[i], want[i])
		}
	}
	// A sample of -0 is zero usage, the smallest, not the largest.
	o.Samples[0].CPUMHz = math.Copysign(0, -1)
	if x, err := FeatureVector(&o, "first", []string{FeatCPUReplicaMax}); err != nil || x[0] != 0.2 {
		t.Fatalf("max with a -0 sample: %v, %v; want 0.2", x, err)
	}
	if _, err := FeatureVector(&o, "first", []string{"cpu_replica_bogus"}); err == nil {
		t.Fatal("unknown feature accepted")
	}
	if _, err := FeatureVector(&o, "first", []string{FeatMemReplicaMax}); err == nil || !strings.Contains(err.Error(), "memory_capacity_mb") {
		t.Fatalf("memory feature without memory capacity: %v", err)
	}
}

// A processor's very first decisions may come from many goroutines at once
// (the race detector checks that nothing is set up lazily without care).
func TestFreshProcessorConcurrentFirstUse(t *testing.T) {
	b, err := Builtin(BuiltinCapacity)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Builtin(BuiltinAdmission)
	if err != nil {
		t.Fatal(err)
	}
	capy, err := NewProcessor(b.Model())
	if err != nil {
		t.Fatal(err)
	}
	adm, err := NewProcessor(a.Model())
	if err != nil {
		t.Fatal(err)
	}
	first := seriesObservation(t, "series3", 3000, 60, 4, 0.1)
	second := seriesObservation(t, "series5", 3000, 60, 4, 0.1)
	cfg := Config{Admission: adm, Capacity: capy, FirstQuota: DefaultQuota(10), SecondQuota: DefaultQuota(10)}
	var wg sync.WaitGroup
	results := make([]*Decision, 4)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Decide(&first, &second, cfg)
			if err != nil {
				t.Error(err)
				return
			}
			results[g] = d
		}()
	}
	wg.Wait()
	for _, d := range results[1:] {
		if !reflect.DeepEqual(d, results[0]) {
			t.Fatal("concurrent first decisions differ")
		}
	}
}
