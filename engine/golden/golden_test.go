package golden

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// seriesObservation builds an observation from a real series: replicas
// running on a host, each following the series normalised so that its p99
// is share of the host, over the window ending at end.
func seriesObservation(t testing.TB, name string, end, window, replicas int, share float64) engine.Observation {
	t.Helper()
	s, err := traces.ReadFile(filepath.Join("..", "testdata", "traces", "crane", name+".csv"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := traces.Normalize(s, share)
	if err != nil {
		t.Fatal(err)
	}
	const mhz = 20000.0
	o := engine.Observation{
		Host: name, CPUCapacityMHz: mhz, MemoryCapacityMB: 65536,
		RunningReplicas: replicas, RequestedCPUMHz: float64(replicas) * share * mhz,
		ReplicaCPUDemandMHz: share * mhz, ReplicaMemoryDemandMB: 512,
	}
	for i := end - window; i < end; i++ {
		o.Samples = append(o.Samples, engine.Sample{Time: n.Times[i], CPUMHz: n.Values[i] * float64(replicas) * mhz, MemoryMB: 512 * float64(replicas)})
	}
	return o
}

var update = flag.Bool("update", false, "rewrite testdata/golden.json from the current engine")

func quota(min, max int, per float64, rounding string) *engine.Quota {
	return &engine.Quota{Min: min, Max: max, PerBranch: per, Rounding: rounding}
}

// goldenRequests are the cases of testdata/golden.json, built from the real
// series so that they exercise the default models on real usage.
func goldenRequests(t testing.TB) []Vector {
	quiet := seriesObservation(t, "series5", 8000, 120, 6, 0.1)
	busy := seriesObservation(t, "series3", 3000, 120, 6, 0.1)
	bursty := seriesObservation(t, "series15", 20000, 120, 4, 0.1)
	heavy := seriesObservation(t, "series1", 5000, 60, 3, 0.3)
	fewWanted := busy
	fewWanted.WantedReplicas = 3
	idle := quiet
	idle.RunningReplicas = 0
	short := seriesObservation(t, "series9", 700, 12, 2, 0.1)
	return []Vector{
		{Name: "real usage, default quotas", Request: engine.Request{First: busy, Second: quiet}},
		{Name: "bursty first host, quiet second host", Request: engine.Request{First: bursty, Second: quiet}},
		{Name: "heavy replicas", Request: engine.Request{First: heavy, Second: heavy}},
		{Name: "clamped to max", Request: engine.Request{First: busy, Second: quiet,
			FirstQuota: quota(0, 5, 1, engine.RoundNearest), SecondQuota: quota(0, 10, 1, engine.RoundNearest)}},
		{Name: "clamped to min", Request: engine.Request{First: heavy, Second: heavy,
			FirstQuota: quota(20, 30, 1, engine.RoundNearest), SecondQuota: quota(25, 40, 1, engine.RoundNearest)}},
		{Name: "per-branch scale with floor and ceil", Request: engine.Request{First: busy, Second: bursty,
			FirstQuota: quota(0, 100, 0.5, engine.RoundFloor), SecondQuota: quota(0, 100, 0.75, engine.RoundCeil)}},
		{Name: "three replicas want to run", Request: engine.Request{First: fewWanted, Second: busy}},
		{Name: "no replica running yet", Request: engine.Request{First: idle, Second: idle}},
		{Name: "short window", Request: engine.Request{First: short, Second: short,
			FirstModel: engine.BuiltinPrefix + engine.BuiltinAdmission, SecondModel: engine.BuiltinPrefix + engine.BuiltinCapacity}},
	}
}

func TestGoldenVectors(t *testing.T) {
	vs := goldenRequests(t)
	for i := range vs {
		d, err := engine.DecideRequest(&vs[i].Request)
		if err != nil {
			t.Fatalf("%s: %v", vs[i].Name, err)
		}
		vs[i].Want = *d
	}
	if *update {
		data, err := json.MarshalIndent(vs, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(Path(), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := Load(Path())
	if err != nil {
		t.Fatalf("%v (run: go test ./engine/golden -run TestGoldenVectors -update)", err)
	}
	if len(stored) != len(vs) {
		t.Fatalf("golden file has %d vectors, the test builds %d: run with -update", len(stored), len(vs))
	}
	// The clamp cases must keep exercising the clamp whatever the models
	// are: a regenerated model that stops clamping them fails here.
	for _, v := range stored {
		switch v.Name {
		case "clamped to max", "clamped to min":
			if !v.Want.First.Clamped || !v.Want.Second.Clamped {
				t.Errorf("%s: the golden decision does not clamp both hosts (%+v, %+v): choose quotas that do", v.Name, v.Want.First.Quota, v.Want.Second.Quota)
			}
		}
	}
	distinct := map[int]bool{}
	for i, v := range stored {
		d, err := engine.DecideRequest(&v.Request)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if !reflect.DeepEqual(*d, v.Want) {
			got, _ := json.Marshal(d)
			want, _ := json.Marshal(v.Want)
			t.Errorf("%s: decision differs from the golden file\n got %s\nwant %s", v.Name, got, want)
		}
		if !reflect.DeepEqual(v.Request, vs[i].Request) {
			t.Errorf("%s: stored request differs from the one the test builds: run with -update", v.Name)
		}
		distinct[d.First.Containers] = true
		distinct[d.Second.Containers] = true
		for _, h := range []engine.HostDecision{d.First, d.Second} {
			if h.Containers < h.Quota.Min || h.Containers > h.Quota.Max {
				t.Errorf("%s: %s host count %d outside [%d, %d]", v.Name, h.Role, h.Containers, h.Quota.Min, h.Quota.Max)
			}
		}
	}
	// The vectors must tell decisions apart, not repeat one answer.
	if len(distinct) < 4 {
		t.Fatalf("golden decisions take only %d distinct counts", len(distinct))
	}
}
