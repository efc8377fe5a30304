package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	. "github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testfifo"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
	"github.com/activation-scheduler/terraform-provider-activation/stats"
)

var seriesObservation = testsupport.SeriesObservation

var quotaSpec = testsupport.Quota

func decideRequest(t testing.TB, r *Request) *Decision {
	t.Helper()
	d, err := r.Decide()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDecideSemantics(t *testing.T) {
	busy := seriesObservation(t, "series3", 3000, 120, 6, 0.1)
	req := Request{First: busy, Second: busy}
	d := decideRequest(t, &req)
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
		if dw := decideRequest(t, &r); dw.First.Amount > wanted {
			t.Fatalf("wanted %d replicas but %d slots were admitted", wanted, dw.First.Amount)
		}
	}
	// More usage never raises the second host's safe count.
	heavier := busy
	heavier.Samples = append([]Sample(nil), busy.Samples...)
	for i := range heavier.Samples {
		heavier.Samples[i].CPUMHz *= 3
	}
	r := req
	r.Second = heavier
	if dh := decideRequest(t, &r); dh.Second.Amount >= d.Second.Amount {
		t.Fatalf("tripling usage gave safe count %d, before %d", dh.Second.Amount, d.Second.Amount)
	}
	if again := decideRequest(t, &req); !reflect.DeepEqual(d, again) {
		t.Fatal("the same request gave two decisions")
	}
	for _, want := range []string{"A_in=", "A_out=", "bound by", "usage: observed", "placement:"} {
		if !strings.Contains(d.Explain(), want) {
			t.Fatalf("explanation lacks %q:\n%s", want, d.Explain())
		}
	}
}

func TestDecideRejectsBadInput(t *testing.T) {
	good := func() Request {
		return Request{
			First:  seriesObservation(t, "series3", 3000, 30, 2, 0.1),
			Second: seriesObservation(t, "series3", 3000, 30, 2, 0.1),
		}
	}
	for _, tc := range testsupport.InvalidInputs() {
		t.Run(tc.Name, func(t *testing.T) {
			r := good()
			tc.Edit(&r)
			d, err := r.Decide()
			if err == nil || d != nil {
				t.Fatalf("got decision %v and error %v, want only an error", d, err)
			}
			host, part, field, ok := FieldOf(err)
			if !ok || host != tc.Host || part != tc.Part || field != tc.Field {
				t.Fatalf("error names %s/%s/%s (%v), want %s/%s/%s: %v", host, part, field, ok, tc.Host, tc.Part, tc.Field, err)
			}
			if Reason(err) == "" || strings.Contains(Reason(err), tc.Field+": ") {
				t.Fatalf("reason %q should say why without repeating the field", Reason(err))
			}
		})
	}
	// Model sources that cannot be read.
	fifo := filepath.Join(t.TempDir(), "model.fifo")
	testfifo.Mkfifo(t, fifo)
	for _, src := range []struct{ first, second, host string }{
		{"builtin:missing", "", RoleFirst},
		{"", os.DevNull, RoleSecond},
		{"", fifo, RoleSecond},
		{"", "builtin:admission", RoleSecond}, // no countable outputs to read
		{"builtin:capacity", "", RoleFirst},   // no countable inputs to read
	} {
		r := good()
		r.FirstModel, r.SecondModel = src.first, src.second
		_, err := r.Decide()
		var me *ModelSourceError
		if !errors.As(err, &me) || me.Host != src.host {
			t.Fatalf("model sources %q/%q: %v, want a model error on the %s host", src.first, src.second, err, src.host)
		}
	}
}

// TestDecideBothHostsWrong: when both hosts' inputs are wrong the error
// holds both, the first host's first, each naming its field; when one is,
// the error is that host's alone.
func TestDecideBothHostsWrong(t *testing.T) {
	first := seriesObservation(t, "series3", 3000, 30, 2, 0.1)
	second := seriesObservation(t, "series3", 3000, 30, 2, 0.1)
	first.Samples[2].CPUMHz = -1
	second.RunningReplicas = -3
	_, err := Decide(HostInput{Observation: &first}, HostInput{Observation: &second})
	errs := Errors(err)
	if len(errs) != 2 {
		t.Fatalf("got %d errors, want 2: %v", len(errs), err)
	}
	want := [][2]string{{RoleFirst, "usage_samples[2].cpu_mhz"}, {RoleSecond, "running_replicas"}}
	for i, e := range errs {
		host, part, field, ok := FieldOf(e)
		if !ok || host != want[i][0] || part != PartObservation || field != want[i][1] {
			t.Errorf("error %d names %s/%s/%s, want %s/observation/%s: %v", i, host, part, field, want[i][0], want[i][1], e)
		}
	}
	if !strings.Contains(err.Error(), "first host observation: usage_samples[2].cpu_mhz") || !strings.Contains(err.Error(), "second host observation: running_replicas") {
		t.Errorf("message %q does not name both fields", err)
	}
	// One host wrong: its error alone, not a joined one.
	second.RunningReplicas = 2
	_, err = Decide(HostInput{Observation: &first}, HostInput{Observation: &second})
	var oe *ObservationError
	if !errors.As(err, &oe) || len(Errors(err)) != 1 || err != error(oe) {
		t.Fatalf("one host wrong: %#v, want that host's *ObservationError itself", err)
	}
	if Errors(nil) != nil {
		t.Fatal("Errors(nil) is not nil")
	}
}

func TestTooFewSamplesIsNoDecision(t *testing.T) {
	o := seriesObservation(t, "series3", 3000, 2, 2, 0.1)
	_, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)})
	if !errors.Is(err, ErrTooFewSamples) {
		t.Fatalf("two samples with the default minimum of %d: %v", DefaultMinSamples, err)
	}
	if _, _, field, _ := FieldOf(err); field != "usage_samples" {
		t.Fatalf("error names %q, want usage_samples", field)
	}
	if _, err := Decide(HostInput{Observation: &o, MinSamples: 2}, HostInput{Observation: &o, MinSamples: 2}); err != nil {
		t.Fatalf("two samples with min_samples 2: %v", err)
	}
}

func TestDecideConcurrent(t *testing.T) {
	req := Request{First: seriesObservation(t, "series3", 3000, 120, 6, 0.1), Second: seriesObservation(t, "series5", 4000, 120, 6, 0.1)}
	want := decideRequest(t, &req)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				d, err := req.Decide()
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
		// per_branch written as a decimal rounds as the decimal product
		// does, not as its binary floating-point neighbour
		{Quota{0, 100, 0.28, RoundCeil}, 25, 7, false},     // 7.0000000000000009
		{Quota{0, 100, 0.58, RoundNearest}, 25, 15, false}, // 14.499999999999998
		{Quota{0, 100, 0.29, RoundFloor}, 100, 29, false},  // 28.999999999999996
		{Quota{0, 100, 4.1, RoundNearest}, 15, 62, false},  // 61.49999999999999
		{Quota{0, 100, 0.3, RoundFloor}, 3, 0, false},      // 0.9: not near a half
		{Quota{0, 100, 1.0 / 3, RoundCeil}, 3, 1, false},   // 1 within a billionth
		// a tiny product is not a rounding error of 0
		{Quota{0, 100, 1e-12, RoundCeil}, 17, 1, false},
		{Quota{0, 100, 1e-12, RoundNearest}, 17, 0, false},
		{Quota{0, 100, 0.1, RoundNearest}, 5, 1, false}, // 0.5 rounds half away from zero
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

func TestQuotaDefaults(t *testing.T) {
	three, half, floor := 3, 0.5, RoundFloor
	tests := []struct {
		name string
		spec *QuotaSpec
		want Quota
		err  string
	}{
		{"nil is every default", nil, Quota{0, 110, 1, RoundNearest}, ""},
		{"min only", &QuotaSpec{Min: &three}, Quota{3, 110, 1, RoundNearest}, ""},
		{"per_branch and rounding", &QuotaSpec{PerBranch: &half, Rounding: &floor}, Quota{0, 110, 0.5, RoundFloor}, ""},
		{"max only", &QuotaSpec{Max: &three}, Quota{0, 3, 1, RoundNearest}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.spec.Resolve(RoleFirst, 110)
			if err != nil || got != tc.want {
				t.Fatalf("Resolve = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	big := 200
	if _, err := (&QuotaSpec{Min: &big}).Resolve(RoleSecond, 110); err == nil {
		t.Fatal("min above the default max accepted")
	}
}

// Check reports every problem of a spec's set fields at once, each naming
// its field, and what it accepts Resolve accepts.
func TestQuotaSpecCheck(t *testing.T) {
	i := func(v int) *int { return &v }
	f := func(v float64) *float64 { return &v }
	r := func(v string) *string { return &v }
	tests := []struct {
		name string
		spec *QuotaSpec
		want []string // the fields at fault, in order
	}{
		{"nil", nil, nil},
		{"every field fine", &QuotaSpec{Min: i(1), Max: i(4), PerBranch: f(0.5), Rounding: r(RoundCeil)}, nil},
		{"min alone, any max the model gives", &QuotaSpec{Min: i(200)}, nil},
		{"three bad fields", &QuotaSpec{Min: i(-1), PerBranch: f(0), Rounding: r("round")}, []string{"min", "per_branch", "rounding"}},
		{"max below min", &QuotaSpec{Min: i(5), Max: i(4)}, []string{"max"}},
		{"max beyond the largest count", &QuotaSpec{Max: i(MaxQuotaCount + 1)}, []string{"max"}},
		{"per_branch NaN", &QuotaSpec{PerBranch: f(math.NaN())}, []string{"per_branch"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range tc.spec.Check(RoleSecond) {
				var qe *QuotaError
				if !errors.As(err, &qe) || qe.Host != RoleSecond {
					t.Fatalf("%v: not a QuotaError of the second host", err)
				}
				got = append(got, qe.Field)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("fields at fault %v, want %v", got, tc.want)
			}
			if _, err := tc.spec.Resolve(RoleSecond, MaxQuotaCount); (err != nil) != (len(got) > 0) {
				t.Errorf("Check found %v, Resolve says %v", got, err)
			}
		})
	}
}

func TestFeatureVector(t *testing.T) {
	// Two replicas on a 1000 MHz host; per-replica shares are usage/2/1000.
	o := Observation{CPUCapacityMHz: 1000, RunningReplicas: 2, ReplicaCPUDemandMHz: 100, RequestedCPUMHz: 300}
	for i, u := range []float64{100, 300, 200, 400} {
		o.Samples = append(o.Samples, Sample{Time: int64(60 * i), CPUMHz: u})
	}
	names := []string{FeatCPUReplicaMean, FeatCPUReplicaMax, FeatCPUReplicaLast, FeatCPUFitMax, FeatCPUReplicaRequest, FeatCPUHostMax, FeatCPUReplicaTrend,
		"slot_0", "slot_1_running", "slot_2", "slot_2_running", FeatMemFit, FeatMemReplicaMax}
	x, err := FeatureVector(&o, "first", names)
	if err != nil {
		t.Fatal(err)
	}
	// slots 0 and 1 are the running replicas (their request share 0.15),
	// slot 2 a new one at its demand (0.1); memory is not judged.
	want := []float64{0.125, 0.2, 0.2, 5, 0.15, 0.4, 0.15, 0.15, 1, 0.1, 0, MaxFit, 0}
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
	// A window that starts at no usage and peaks between other samples: the
	// largest CPU and memory samples are read wherever they are, and some
	// usage is usage (the mean is the samples', not the request's level).
	peaked := Observation{CPUCapacityMHz: 1000, MemoryCapacityMB: 4000, RunningReplicas: 2, ReplicaCPUDemandMHz: 100, RequestedCPUMHz: 300}
	for i, u := range []float64{0, 400, 100} {
		peaked.Samples = append(peaked.Samples, Sample{Time: int64(60 * i), CPUMHz: u, MemoryMB: 2 * u})
	}
	peakNames := []string{FeatCPUHostMax, FeatCPUReplicaMean, FeatMemHostMax, FeatMemReplicaMax}
	if x, err := FeatureVector(&peaked, "first", peakNames); err != nil {
		t.Fatal(err)
	} else {
		for i, want := range []float64{0.4, 500.0 / 3 / 2 / 1000, 0.2, 0.1} {
			if math.Abs(x[i]-want) > 1e-12 {
				t.Errorf("peak between samples: %s = %v, want %v", peakNames[i], x[i], want)
			}
		}
	}
	for _, bad := range []string{"cpu_replica_bogus", "slot_x", "slot_01", "slot_1_disk", "slot_-1"} {
		if _, err := FeatureVector(&o, "first", []string{bad}); err == nil {
			t.Errorf("unknown feature %q accepted", bad)
		}
	}
	// A slot past the limit is refused, even one whose k+1 wraps around.
	for _, far := range []string{"slot_" + strconv.Itoa(MaxReplicas), "slot_9223372036854775807_memory", "slot_9223372036854775807"} {
		if _, err := FeatureVector(&o, "first", []string{far}); err == nil || !strings.Contains(err.Error(), "more than the limit") {
			t.Errorf("%s: error %v, want the slot limit", far, err)
		}
	}
}

// The recent dispersions, the largest rises and the sustained peaks read
// their own spans of the per-replica shares: each feature is its
// stats.Summary field, and the window is built so that no two of them are
// equal.
func TestRecentSpreadAndRiseFeatures(t *testing.T) {
	w := make([]float64, 70) // per-replica shares of the host
	for i := range w {
		w[i] = 0.1
	}
	w[0], w[1] = 0, 0.5     // the window's largest one-sample rise, 0.5, early
	w[60], w[61] = 0.3, 0.4 // within the last 20: a rise of 0.2, and 0.3 over five samples
	// The largest mean of five, 0.204 (59 to 63 and 60 to 64), and of
	// twenty, 0.131 (49 to 68 and 50 to 69).
	w[62] = 0.12
	for i := 65; i < 70; i++ {
		if i%2 == 0 {
			w[i] = 0.15 // the last 5: 0.1, 0.15, 0.1, 0.15, 0.1
		}
	}
	o := Observation{CPUCapacityMHz: 1000, RunningReplicas: 2, ReplicaCPUDemandMHz: 100, RequestedCPUMHz: 300}
	for i, v := range w {
		o.Samples = append(o.Samples, Sample{Time: int64(60 * i), CPUMHz: v * 2 * 1000})
	}
	sum := stats.Summarize(w, nil)
	names := []string{FeatCPUReplicaStdLast5, FeatCPUReplicaStdLast60, FeatCPUReplicaRiseMax, FeatCPUReplicaRiseMaxLast20, FeatCPUReplicaRise5Max, FeatCPUReplicaMaxMean5, FeatCPUReplicaMaxMean20}
	want := []float64{sum.StdLast5, sum.StdLast60, sum.RiseMax, sum.RiseMaxLast20, sum.Rise5Max, sum.MaxMean5, sum.MaxMean20}
	for i, v := range []float64{math.Sqrt(0.0006), -1, 0.5, 0.2, 0.3, 0.204, 0.131} { // the premise: the fields are these (std_last60 unchecked) and differ
		if v >= 0 && math.Abs(want[i]-v) > 1e-9 {
			t.Fatalf("the premise fails: %s's field is %v, want %v", names[i], want[i], v)
		}
		for j := range i {
			if math.Abs(want[i]-want[j]) < 1e-6 {
				t.Fatalf("the premise fails: %s and %s are both %v", names[i], names[j], want[i])
			}
		}
	}
	x, err := FeatureVector(&o, "second", names)
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		if math.Abs(x[i]-want[i]) > 1e-12 {
			t.Errorf("%s = %v, want %v", names[i], x[i], want[i])
		}
	}
}

// The daily-cycle features read the time of day of the last sample: at
// 06:00 UTC sin is 1 and cos 0, at 18:00 sin is -1; the level features scale
// the recent level (0.125 per replica here) by (1 + sin) / 2 and (1 + cos) / 2.
func TestDailyCycleFeatures(t *testing.T) {
	names := []string{FeatDaySin, FeatDayCos, FeatCPULevelDaySin, FeatCPULevelDayCos}
	for _, c := range []struct {
		last int64
		want []float64
	}{
		{6 * 3600, []float64{1, 0, 0.125, 0.0625}},
		{18 * 3600, []float64{-1, 0, 0, 0.0625}},
		{86400 + 12*3600, []float64{0, -1, 0.0625, 0}},
	} {
		o := Observation{CPUCapacityMHz: 1000, RunningReplicas: 2, ReplicaCPUDemandMHz: 100, RequestedCPUMHz: 300}
		for i, u := range []float64{100, 300, 200, 400} {
			o.Samples = append(o.Samples, Sample{Time: c.last - int64(60*(3-i)), CPUMHz: u})
		}
		x, err := FeatureVector(&o, "second", names)
		if err != nil {
			t.Fatal(err)
		}
		for i := range names {
			if math.Abs(x[i]-c.want[i]) > 1e-12 {
				t.Errorf("last sample at %d: %s = %v, want %v", c.last, names[i], x[i], c.want[i])
			}
		}
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
	q := quotaSpec(0, 10, 1, RoundNearest)
	var wg sync.WaitGroup
	results := make([]*Decision, 4)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Decide(HostInput{Observation: &first, Model: adm, Quota: q}, HostInput{Observation: &second, Model: capy, Quota: q})
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

// A model whose finite weights can overflow a 64-bit float on an input the
// engine derives is refused when it loads, naming the layer (its
// decisions were counted from the overflow: +Inf read as a node holding
// data, NaN as one that does not, 0 containers without a word); a valid
// model given an input beyond MaxInput (Analyze takes any finite input)
// has the analysis refused instead. A branch strength that overflows
// still encodes as JSON (null).
func TestOverflowingModelRefused(t *testing.T) {
	eps, thr := 1e-9, 0.5
	model := func(w0, w1 float64) *Model {
		return &Model{Format: ModelFormat, Version: ModelVersion, Name: "overflow",
			Inputs:  []Node{{Name: "cpu_replica_mean"}},
			Outputs: []Node{{Name: "safe_0", Countable: true}},
			Layers: []Layer{
				{Activation: ActivationReLU, Weights: [][]float64{{w0}}, Biases: []float64{0}},
				{Activation: ActivationReLU, Weights: [][]float64{{w1}}, Biases: []float64{0}},
				{Activation: ActivationSigmoid, Weights: [][]float64{{1}}, Biases: []float64{0}},
			},
			InputEpsilon: &eps, OutputThreshold: &thr, Provenance: Provenance{Method: "hand-written for a test"}}
	}
	for _, c := range []struct {
		name   string
		w0, w1 float64
		want   string
	}{
		{"the first layer", 1e300, 1, "layers[0]: its weights can overflow a 64-bit float"},
		{"two layers together", 1e150, 1e150, "layers[1]: its weights can overflow a 64-bit float"},
		{"within the limit", 1e290, 1, ""},
	} {
		_, err := NewProcessor(model(c.w0, c.w1))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want the model loaded", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	p, err := NewProcessor(model(1e140, 1e140))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Analyze([]float64{1e100}, NewWorkspace(p)); err == nil || !strings.Contains(err.Error(), "layers[1] node 0's activation is +Inf") {
		t.Errorf("an input beyond MaxInput: %v, want the overflow refused naming the layer", err)
	}
	data, err := json.Marshal(BranchPath{Nodes: []string{"a", "b"}, LogStrength: math.Inf(1)})
	if err != nil || string(data) != `{"nodes":["a","b"],"log_strength":null}` {
		t.Fatalf("an infinite strength encodes as %s (%v), want null", data, err)
	}
	// A finite strength stays a number.
	fin, err := json.Marshal(BranchPath{Nodes: []string{"a", "b"}, LogStrength: -1.5})
	if err != nil || string(fin) != `{"nodes":["a","b"],"log_strength":-1.5}` {
		t.Fatalf("finite strength encodes as %s (%v)", fin, err)
	}
}

func TestBranchPathJSONRoundTrip(t *testing.T) {
	for _, want := range []BranchPath{
		{Nodes: []string{"slot_0", "h1", "fit_0"}, LogStrength: -2.25},
		{Nodes: []string{"slot_0", "h1", "fit_0"}, LogStrength: 0},
		{Nodes: []string{"x", "o"}, LogStrength: math.Inf(1)},
	} {
		data, err := json.Marshal(want)
		if err != nil {
			t.Fatalf("%+v: %v", want, err)
		}
		var got BranchPath
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s read back as %+v, want %+v", data, got, want)
		}
	}
	var b BranchPath
	if err := json.Unmarshal([]byte(`{"nodes":["x","o"]}`), &b); err != nil || b.LogStrength != 0 {
		t.Errorf("a branch without log_strength read as %+v (%v), want strength 0", b, err)
	}
	if err := json.Unmarshal([]byte(`{"nodes":["x"],"log_strength":"high"}`), &b); err == nil || !strings.Contains(err.Error(), "log_strength") {
		t.Errorf("a string strength: %v, want an error naming log_strength", err)
	}
}

// TestHostLabelNotUTF8: a host label that is not UTF-8 (which only Go
// callers can send: OpenTofu's strings are Unicode, JSON decoding
// replaces the bytes), or holds a line separator or a bidirectional
// control, is refused; a printable one is taken.
func TestHostLabelNotUTF8(t *testing.T) {
	o := testsupport.Flat(8000, 3, 180, 500, 10)
	for _, tc := range []struct{ label, reason string }{
		{"node-\xff", "UTF-8"},
		{"node-1\u2028first host: 99", "control character"},
		{"node-\u202e1-edon", "control character"},
	} {
		o.Host = tc.label
		_, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)})
		var oe *ObservationError
		if !errors.As(err, &oe) || oe.Host != RoleFirst || oe.Field != "host" || !strings.Contains(oe.Reason, tc.reason) {
			t.Errorf("host label %q: %v; want an observation error on first.host saying %q", tc.label, err, tc.reason)
		}
	}
	o.Host = "nœud-1 (rack 2)"
	if _, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)}); err != nil {
		t.Errorf("a printable label: %v", err)
	}
}

// TestReasonCountsInEnglish: one container, not "1 containers".
func TestReasonCountsInEnglish(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, ": 0 containers = "}, {1, ": 1 container = "}, {2, ": 2 containers = "}} {
		h := HostDecision{Role: RoleFirst, Containers: c.n, Quota: Quota{Max: 4, PerBranch: 1, Rounding: RoundNearest}}
		if got := h.Reason(); !strings.Contains(got, c.want) {
			t.Errorf("%d: %q, want %q", c.n, got, c.want)
		}
	}
}

// A quota's min above what the host fits raises the count past the
// models' safe count: the explanation says by how much and that the host
// is expected overloaded (a user trial read only "clamped"); a max
// clamping the count down says nothing of overload.
func TestExplanationMinAboveSafe(t *testing.T) {
	o := testsupport.Flat(8000, 4, 600, 600, 30) // about 12 replicas fit
	for _, tc := range []struct {
		name     string
		min, max int
		want     string
	}{
		{"min above the safe count", 50, 60, "above what the host fits by its cpu: expect it overloaded"},
		{"max below it", 0, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := Quota{Min: tc.min, Max: tc.max, PerBranch: 1, Rounding: RoundNearest}.Spec()
			d, err := Decide(HostInput{Observation: &o, Quota: q}, HostInput{Observation: &o, Quota: q})
			if err != nil {
				t.Fatal(err)
			}
			for _, hd := range []HostDecision{d.First, d.Second} {
				reason := hd.Reason()
				if !hd.Clamped {
					t.Fatalf("%s host: %d not clamped by [%d, %d]", hd.Role, hd.Containers, tc.min, tc.max)
				}
				got := strings.Contains(reason, "expect it overloaded")
				if tc.want == "" && got || tc.want != "" && !strings.Contains(reason, fmt.Sprintf("; clamped from %d to the quota's min, %d %s", hd.Unclamped, hd.Containers-hd.Unclamped, tc.want)) {
					t.Errorf("%s host: reason %q; want %q", hd.Role, reason, tc.want)
				}
			}
		})
	}
}

// With a per_branch other than 1 the overload is read against the
// replicas the host fits (the amount), as the placement reads the count,
// not against the scaled count: a min that lifts half the amount to less
// than the amount does not overload the host; a per_branch of 2 asks for
// twice what it fits, clamped or not (a review found the first warned
// and the second did not).
func TestExplanationOverloadPerBranch(t *testing.T) {
	o := testsupport.Flat(8000, 4, 600, 600, 30) // about 12 replicas fit
	for _, tc := range []struct {
		name      string
		min, max  int
		perBranch float64
		overload  bool
	}{
		{"half, lifted by a min below the amount", 8, 60, 0.5, false},
		{"half, lifted by a min above the amount", 30, 60, 0.5, true},
		{"twice, not clamped", 0, 100, 2, true},
		{"twice, clamped by a max at the amount", 0, 5, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := Quota{Min: tc.min, Max: tc.max, PerBranch: tc.perBranch, Rounding: RoundNearest}.Spec()
			d, err := Decide(HostInput{Observation: &o, Quota: q}, HostInput{Observation: &o, Quota: q})
			if err != nil {
				t.Fatal(err)
			}
			for _, hd := range []HostDecision{d.First, d.Second} {
				if hd.Limit != LimitCPU {
					t.Fatalf("%s host: bound by %s, want cpu (the premise)", hd.Role, hd.Limit)
				}
				if tc.perBranch == 0.5 && hd.Containers != tc.min {
					t.Fatalf("%s host: %d containers from %d, want the min %d (the premise)", hd.Role, hd.Containers, hd.Amount, tc.min)
				}
				if tc.max == 5 && hd.Amount < 5 {
					t.Fatalf("%s host: amount %d, want at least 5 (the premise)", hd.Role, hd.Amount)
				}
				reason := hd.Reason()
				want := fmt.Sprintf("%d above what the host fits by its cpu", hd.Containers-hd.Amount)
				if got := strings.Contains(reason, "expect it overloaded"); got != tc.overload || (got && !strings.Contains(reason, want)) {
					t.Errorf("%s host: %d containers, amount %d: reason %q; want overload %v (%q)", hd.Role, hd.Containers, hd.Amount, reason, tc.overload, want)
				}
			}
		})
	}
}
