package engine_test

import (
	"fmt"
	"testing"

	. "github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// TestBuiltinStepKeepsAReplica: a replica at a tenth of an otherwise empty
// host whose last sample steps to two or three times that (at most 30% of
// the host) is kept by both built-in processors, running or stopped for its
// usage, whatever the window's length. Before the peak bound
// (train.Settings.PeakGrowth, 3 by default: m replicas of the workload cost
// at most m times three times the window's peak per replica) the learned
// dispersion put one such replica above the whole host: the second host
// counted 0 from a twofold step in a window of 20 or 60 samples, and from a
// threefold one in any window; the first host counted 0 from a threefold
// step in a window of 20 samples or more, so that a group stopped that way
// stayed at 0 (docs/benchmarks.md, "A bound on the cost of few replicas").
func TestBuiltinStepKeepsAReplica(t *testing.T) {
	const capCPU, base = 20000.0, 2000.0
	for _, n := range []int{3, 20, 60} {
		for _, step := range []float64{2, 3} {
			for _, stopped := range []bool{false, true} {
				name := fmt.Sprintf("%d samples, step x%g, stopped %v", n, step, stopped)
				t.Run(name, func(t *testing.T) {
					o := Observation{Host: "h", CPUCapacityMHz: capCPU, MemoryCapacityMB: 32768,
						RunningReplicas: 1, RequestedCPUMHz: base, ReplicaCPUDemandMHz: base, ReplicaMemoryDemandMB: 256}
					if stopped {
						o.RunningReplicas, o.RequestedCPUMHz, o.StoppedReplicas = 0, 0, 1
					}
					for i := 0; i < n; i++ {
						o.Samples = append(o.Samples, Sample{Time: int64(1_700_000_000 + 60*i), CPUMHz: base, MemoryMB: 100})
					}
					o.Samples[n-1].CPUMHz = base * step
					d, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)})
					if err != nil {
						t.Fatal(err)
					}
					if d.Second.Containers < 1 {
						t.Errorf("second host %d containers for one replica at %.0f MHz of %.0f: want at least 1", d.Second.Containers, base*step, capCPU)
					}
					if d.First.Containers < 1 {
						t.Errorf("first host %d containers for one replica at %.0f MHz of %.0f: want at least 1", d.First.Containers, base*step, capCPU)
					}
				})
			}
		}
	}
}
