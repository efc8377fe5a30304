package provider

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// Two small hosts used by most acceptance tests: a busy first host and a
// quiet second one, 30 one-minute samples each, from the real series.
func testFirst(t testing.TB) engine.Observation {
	o := testsupport.SeriesObservation(t, "series3", 3000, 30, 6, 0.1)
	o.Host = "first-host"
	return o
}

func testSecond(t testing.TB) engine.Observation {
	o := testsupport.SeriesObservation(t, "series5", 8000, 30, 6, 0.1)
	o.Host = "second-host"
	return o
}

// demoDir holds the demo configuration and its two bundled observations.
var demoDir = filepath.Join("..", "examples", "demo")

// Other workloads on the demo's second host: the scheduler places the demo's
// replicas only in what they leave.
const (
	demoOtherCPUMHz   = 9000.0
	demoOtherMemoryMB = 16384.0
)

// demoObservations are the two host observations bundled with the demo: an
// hour of one-minute samples of two real applications on two 20,000 MHz,
// 64 GiB hosts (their allocatable resources); on the second host other jobs
// reserve part of it.
func demoObservations(t testing.TB) map[string]engine.Observation {
	first := testsupport.SeriesObservation(t, "series3", 3000, 60, 6, 0.1)
	first.Host = "pool-a-1"
	second := testsupport.SeriesObservation(t, "series5", 8000, 60, 4, 0.1)
	second.Host = "pool-b-1"
	second.OtherReservedCPUMHz, second.OtherReservedMemoryMB = demoOtherCPUMHz, demoOtherMemoryMB
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
