package engine

import (
	"path/filepath"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// seriesObservation builds an observation from a real series: replicas
// running on a host of capacity mhz, each following the series normalised
// so that its p99 is share of the host, over the window ending at end.
func seriesObservation(t testing.TB, name string, end, window, replicas int, share float64) Observation {
	t.Helper()
	s, err := traces.ReadFile(filepath.Join("testdata", "traces", "crane", name+".csv"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := traces.Normalize(s, share)
	if err != nil {
		t.Fatal(err)
	}
	const mhz = 20000.0
	o := Observation{
		Host: name, CPUCapacityMHz: mhz, MemoryCapacityMB: 65536,
		RunningReplicas: replicas, RequestedCPUMHz: float64(replicas) * share * mhz,
		ReplicaCPUDemandMHz: share * mhz, ReplicaMemoryDemandMB: 512,
	}
	for i := end - window; i < end; i++ {
		o.Samples = append(o.Samples, Sample{Time: n.Times[i], CPUMHz: n.Values[i] * float64(replicas) * mhz, MemoryMB: 512 * float64(replicas)})
	}
	return o
}
