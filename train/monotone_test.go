package train

import (
	"path/filepath"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// A model trained with the monotone trunk never gives a heavier window
// more replicas, on either host: raising samples of real windows (bursts
// where they were quiet, the whole window scaled up) never raises the
// amount, with CPU raised alone and with memory raised too, to where it
// binds. (The default MLP trunk does not hold this: on the same chains the
// built-in models gave the heavier window more in 272 of 3,840 pairs, 137
// with memory raised, which binds some counts in the CPU's stead.)
func TestMonotoneTrunkNeverGivesAHeavierWindowMore(t *testing.T) {
	all, err := traces.LoadDir(filepath.Join("..", "engine", "testdata", "traces", "crane"))
	if err != nil {
		t.Fatal(err)
	}
	s := MonotoneSettings()
	s.Hidden = []int{3, 2}
	s.Epochs, s.Slots, s.MaxRowsPerSeries = 3, 40, 100
	r, err := Train(all, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, err := engine.NewProcessor(r.Admission)
	if err != nil {
		t.Fatal(err)
	}
	second, err := engine.NewProcessor(r.Capacity)
	if err != nil {
		t.Fatal(err)
	}
	for _, raiseMemory := range []bool{false, true} {
		pairs := testsupport.HeavierWindows(t, first, second, raiseMemory)
		fewer := map[string]int{}
		for _, p := range pairs {
			if p.Heavier > p.Lighter {
				t.Errorf("memory raised %v, %s: the %s host's amount went from %d to %d on the heavier window", raiseMemory, p.What, p.Role, p.Lighter, p.Heavier)
			}
			if p.Heavier < p.Lighter {
				fewer[p.Role]++
			}
		}
		// The check has teeth only if the amounts move: each host must
		// give some heavier windows fewer replicas (not sit at 0 or the
		// last slot).
		for _, role := range []string{engine.RoleFirst, engine.RoleSecond} {
			if fewer[role] == 0 {
				t.Errorf("memory raised %v: the %s host's amount never fell over %d pairs: the windows do not exercise it", raiseMemory, role, len(pairs)/2)
			}
		}
		t.Logf("memory raised %v: %d pairs; amounts fell on %d (first host) and %d (second host)", raiseMemory, len(pairs), fewer[engine.RoleFirst], fewer[engine.RoleSecond])
	}
}
