package sim

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// crane is the real usage series the project bundles.
var crane = filepath.Join("..", "engine", "testdata", "traces", "crane")

func loadCrane(t testing.TB) []traces.Series {
	t.Helper()
	all, err := traces.LoadDir(crane)
	if err != nil {
		t.Fatalf("loading the bundled series: %v", err)
	}
	if len(all) != 12 {
		t.Fatalf("%d series in %s, the yardstick replays 12", len(all), crane)
	}
	return all
}

// The simulator, in the yardstick's setup, must reproduce the independent
// yardstick's figures (shared/design/benchmark-yardstick.md) within a few
// hundredths: this is the check that the replay, the policies and the
// metrics are right.
func TestYardstickReproduction(t *testing.T) {
	all := loadCrane(t)
	rep, err := Run(context.Background(), all, Yardstick(), YardstickBaselines(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	const tol = 0.02
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.3f, yardstick %.3f (tolerance %.2f)", what, got, want, tol)
		}
	}
	// The yardstick's statement of the calibration: median slack 0.49,
	// mean 0.52 over these series.
	near("median slack", rep.MedianSlack, 0.49)
	near("mean slack", rep.MeanSlack, 0.52)

	at1 := map[string]float64{
		PolicyRequestSum: 0.248, PolicyP95Window: 0.551, PolicyMaxWindow: 0.612,
		PolicyNSigma: 0.599, PolicyOracle: 1.0,
	}
	for name, want := range at1 {
		c := rep.Curve(name)
		p, _, ok := c.Best(0.01)
		if !ok {
			t.Errorf("%s: no setting within 1%%, yardstick has density %.3f", name, want)
			continue
		}
		near(name+" density at 1%", p.Density, want)
		if p.ViolationRate > 0.01 {
			t.Errorf("%s: best setting violates %.4f > budget", name, p.ViolationRate)
		}
	}
	// At 0.1% only max-window keeps a useful density (0.397 at m 0.60);
	// p95-window and N-sigma have no setting within budget.
	if p, _, ok := rep.Curve(PolicyMaxWindow).Best(0.001); !ok {
		t.Error("max-window: no setting within 0.1%")
	} else {
		near("max-window density at 0.1%", p.Density, 0.397)
		near("max-window margin at 0.1%", p.Knob, 0.60)
		if p.ViolationRate > 0.001 {
			t.Errorf("max-window: best setting at 0.1%% violates %.5f > budget", p.ViolationRate)
		}
	}
	for _, name := range []string{PolicyP95Window, PolicyNSigma} {
		if p, _, ok := rep.Curve(name).Best(0.001); ok {
			t.Errorf("%s: setting %g within 0.1%% (density %.3f); the yardstick has none", name, p.Knob, p.Density)
		}
	}
	// The knob settings the yardstick reports.
	knobs := map[string]float64{PolicyRequestSum: 0.88, PolicyMaxWindow: 0.05, PolicyNSigma: 3.9, PolicyP95Window: 0.38}
	for name, want := range knobs {
		p, _, _ := rep.Curve(name).Best(0.01)
		if math.Abs(p.Knob-want) > 0.05*math.Max(1, want) {
			t.Errorf("%s: best knob %g at 1%%, yardstick %g", name, p.Knob, want)
		}
	}
	if o := rep.Curve(PolicyOracle).Points[0]; o.ViolationRate != 0 || o.Density != 1 {
		t.Errorf("oracle: density %v violation rate %v, want 1 and 0", o.Density, o.ViolationRate)
	}
}
