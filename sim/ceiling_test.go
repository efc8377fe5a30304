package sim

import (
	"slices"
	"testing"
)

// A replica uses 0.125 of a host and requests 0.25: both hosts start at
// request-sum's 4 and the oracle runs 8 until the last block, where usage
// doubles and it runs 4. The second host follows the oracle; the first
// grows only by requests that fit in what its running replicas leave (4
// running leave 0.5: two more; 6 leave 0.25: one; 7 leave 0.125: none)
// and drops with the oracle at once.
func TestAdmissionOracle(t *testing.T) {
	usage := []float64{0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.25, 0.25}
	r := handReplay(t, usage, handScenario(2, 2), 0.25)
	dec, err := AdmissionOracle().New(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	prev := []int{r.StartCount(0), r.StartCount(1)}
	if !slices.Equal(prev, []int{4, 4}) {
		t.Fatalf("start counts %v, want [4 4]", prev)
	}
	var first, second, oracle []int
	for d := range r.Decisions() {
		out := slices.Clone(prev)
		if err := dec.Decide(d, prev, out); err != nil {
			t.Fatal(err)
		}
		first, second, oracle = append(first, out[0]), append(second, out[1]), append(oracle, r.Oracle(0, d))
		prev = out
	}
	if want := []int{8, 8, 8, 4}; !slices.Equal(oracle, want) {
		t.Fatalf("oracle %v, want %v", oracle, want)
	}
	if !slices.Equal(second, oracle) {
		t.Errorf("second host %v, want the oracle's %v", second, oracle)
	}
	if want := []int{6, 7, 7, 4}; !slices.Equal(first, want) {
		t.Errorf("first host %v, want %v", first, want)
	}
	tl, err := Evaluate(r, AdmissionOracle(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Violations != 0 {
		t.Errorf("%d violations, want none", tl.Violations)
	}
	// (6+7+7+4 + 8+8+8+4) / (2 x 28), and per role
	if got, want := tl.Density(), 52.0/56; got != want {
		t.Errorf("density %v, want %v", got, want)
	}
	if got, want := tl.Roles[0].Density(), 24.0/28; got != want {
		t.Errorf("first host density %v, want %v", got, want)
	}
	if got := tl.Roles[1].Density(); got != 1 {
		t.Errorf("second host density %v, want 1", got)
	}
	if tl.Roles[0].HostSamples+tl.Roles[1].HostSamples != tl.HostSamples {
		t.Errorf("role host-samples %d + %d, want %d", tl.Roles[0].HostSamples, tl.Roles[1].HostSamples, tl.HostSamples)
	}
	p := Aggregate(0, []Tally{tl})
	if p.FirstDensity != 24.0/28 || p.SecondDensity != 1 || p.FirstViolationRate != 0 || p.SecondViolationRate != 0 {
		t.Errorf("point per role %+v, want first 24/28, second 1, no violation", p)
	}
}

func TestAdmissionOraclePairsHosts(t *testing.T) {
	sc := handScenario(2, 2)
	sc.Hosts = 3
	r := handReplay(t, []float64{0.1, 0.1, 0.1, 0.1}, sc, 0.1)
	if _, err := AdmissionOracle().New(r, 0); err == nil {
		t.Fatal("three hosts per series accepted, want an error (the admission oracle pairs hosts)")
	}
}
