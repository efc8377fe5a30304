package golden

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

var seriesObservation = testsupport.SeriesObservation

var update = flag.Bool("update", false, "rewrite testdata/golden.json from the current engine")

var quota = testsupport.Quota

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
	// A first host queue of replicas of two sizes (two groups).
	queued := busy
	queued.QueuedReplicas = []engine.Replica{{CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 4000, MemoryMB: 2048}, {CPUMHz: 500, MemoryMB: 256}}
	// Hosts whose memory is nearly full: memory binds both counts.
	memFull := quiet
	memFull.Samples = append([]engine.Sample(nil), quiet.Samples...)
	for i := range memFull.Samples {
		memFull.Samples[i].MemoryMB = 0.97 * memFull.MemoryCapacityMB
	}
	// Two of six replicas just started.
	warming := busy
	warming.WarmingReplicas = 2
	// Others reserve most of the host: placement binds.
	crowded := quiet
	crowded.OtherReservedCPUMHz, crowded.OtherReservedMemoryMB = 0.8*crowded.CPUCapacityMHz, 0.5*crowded.MemoryCapacityMB
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
		{Name: "queue of replicas of two sizes", Request: engine.Request{First: queued, Second: busy}},
		{Name: "memory nearly full", Request: engine.Request{First: memFull, Second: memFull}},
		{Name: "two replicas warming", Request: engine.Request{First: warming, Second: warming}},
		{Name: "others reserve most of the host", Request: engine.Request{First: crowded, Second: crowded}},
	}
}

func TestGoldenVectors(t *testing.T) {
	vs := goldenRequests(t)
	for i := range vs {
		d, err := vs[i].Request.Decide()
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
		d, err := v.Request.Decide()
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
