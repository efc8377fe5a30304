package provider

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// craneDir holds the real usage series the fixtures are made from.
var craneDir = filepath.Join("..", "engine", "testdata", "traces", "crane")

// hostMHz and hostMemoryMB are the capacity of the fixture hosts.
const (
	hostMHz      = 20000.0
	hostMemoryMB = 65536.0
	replicaMemMB = 512.0
)

// realObservation is a host running replicas of one application that all
// follow the real series `name`, scaled so that a replica's p99 CPU is
// share of the host; the window is the `window` samples ending at `end`.
// Requests are set the careful way, at the p99.
func realObservation(t testing.TB, name string, end, window, replicas int, share float64) engine.Observation {
	t.Helper()
	s, err := traces.ReadFile(filepath.Join(craneDir, name+".csv"))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	if end > s.Len() || window > end || window < 1 {
		t.Fatalf("fixture: window %d ending at %d does not fit series %s of %d samples", window, end, name, s.Len())
	}
	n, err := traces.Normalize(s, share)
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	o := engine.Observation{
		Host:                  name,
		CPUCapacityMHz:        hostMHz,
		MemoryCapacityMB:      hostMemoryMB,
		RequestedCPUMHz:       float64(replicas) * share * hostMHz,
		RequestedMemoryMB:     float64(replicas) * replicaMemMB,
		RunningReplicas:       replicas,
		ReplicaCPUDemandMHz:   share * hostMHz,
		ReplicaMemoryDemandMB: replicaMemMB,
	}
	for i := end - window; i < end; i++ {
		o.Samples = append(o.Samples, engine.Sample{
			Time:     n.Times[i],
			CPUMHz:   n.Values[i] * float64(replicas) * hostMHz,
			MemoryMB: replicaMemMB * float64(replicas),
		})
	}
	if err := o.Validate("fixture"); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return o
}

// Two small hosts used by most acceptance tests: a busy first host and a
// quiet second one, 30 one-minute samples each.
func testFirst(t testing.TB) engine.Observation {
	o := realObservation(t, "series3", 3000, 30, 6, 0.1)
	o.Host = "first-host"
	return o
}

func testSecond(t testing.TB) engine.Observation {
	o := realObservation(t, "series5", 8000, 30, 6, 0.1)
	o.Host = "second-host"
	return o
}

// demoDir holds the demo configuration and its two bundled observations.
var demoDir = filepath.Join("..", "examples", "demo")

// demoObservations are the two host observations bundled with the demo:
// an hour of one-minute samples of two real applications.
func demoObservations(t testing.TB) map[string]engine.Observation {
	first := realObservation(t, "series3", 3000, 60, 6, 0.1)
	first.Host = "pool-a-1"
	second := realObservation(t, "series5", 8000, 60, 4, 0.1)
	second.Host = "pool-b-1"
	return map[string]engine.Observation{"first-host.json": first, "second-host.json": second}
}

var updateDemo = flag.Bool("update-demo", false, "rewrite the demo's bundled observations in examples/demo from the real series")

// TestDemoObservations checks that the demo's bundled observations are the
// ones the real series give (run with -update-demo to write them).
func TestDemoObservations(t *testing.T) {
	for file, o := range demoObservations(t) {
		data, err := json.MarshalIndent(o, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, '\n')
		p := filepath.Join(demoDir, file)
		if *updateDemo {
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run: go test ./provider -run TestDemoObservations -update-demo)", err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s is not what the real series give: run go test ./provider -run TestDemoObservations -update-demo", p)
		}
		var back engine.Observation
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := back.Validate(file); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
