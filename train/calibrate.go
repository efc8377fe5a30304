package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/sim"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// The two processors are trained apart, on losses of their own, and one
// output threshold (a front end's margin, the simulator's knob) reads both.
// Nothing in training makes them spend a violation budget alike: on the
// held-out Crane series the capacity host overloaded at 5.9% of its samples
// at margin 0 and the admission host at 0.06%, so the knob that holds the
// pair to 1% is set by the capacity host and the admission host gives up
// density it could keep. Calibration shifts the capacity processor's
// outputs (every output node's bias, so every reader of the model sees it)
// by the logits that make one threshold serve both best on the validation
// series: those series are replayed in the simulator's shifted scenario
// (the replay the benchmarks judge by), once over the whole threshold
// sweep, and each shift is scored from the two hosts' curves.

// CalibrationBudgets are the violation budgets the shift is chosen for
// (the benchmarks' two).
var CalibrationBudgets = []float64{0.01, 0.001}

// Calibration shifts are tried from -MaxCalibrationShift to
// MaxCalibrationShift logits in steps of calibrationStep (the simulator's
// threshold sweep is on that grid, so a shift moves one host's curve by
// whole points).
const (
	MaxCalibrationShift = 2.0
	calibrationStep     = 0.125
)

// Calibration is what calibrate chose and why.
type Calibration struct {
	// Shift is the logits taken off every output of the capacity
	// processor (positive: a more cautious second host).
	Shift float64
	// Score and Unshifted are the geometric mean, over the families with
	// validation series and the budgets, of the pair's density within the
	// budget at the chosen shift and at none.
	// Unshifted is NaN when no setting held the unshifted pair within
	// every budget.
	Score, Unshifted float64
	// Families are those the score read; Note says why no shift was
	// chosen when none could be (Shift 0).
	Families []string
	Note     string
}

// calibrationSide is one family's series for calibration: the validation
// series it replays, and the training series that set its requests'
// factor (as a held-out replay sets it from the training side).
type calibrationSide struct {
	family    string
	validate  []traces.Series
	trainedOn []traces.Series
}

// calibrate replays each family's validation series under the two
// processors and picks the capacity shift of the highest score (ties: the
// smaller shift in size).
func calibrate(ctx context.Context, sides []calibrationSide, adm, capy *engine.Model) (Calibration, error) {
	admP, err := engine.NewProcessor(adm)
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate: %w", err)
	}
	capP, err := engine.NewProcessor(capy)
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate: %w", err)
	}
	thresholds := sim.DefaultThresholds()
	var curves [][]sim.Point
	var fams []string
	for _, side := range sides {
		if len(side.validate) == 0 {
			continue
		}
		act, err := sim.Activation(sim.ActivationConfig{Admission: admP, Capacity: capP, Values: thresholds})
		if err != nil {
			return Calibration{}, fmt.Errorf("calibrate: %w", err)
		}
		rep, err := sim.Run(ctx, side.validate, sim.Shifted(), []sim.Policy{act}, sim.Options{CalibrateOn: sim.FromSeries(side.trainedOn)})
		if errors.Is(err, sim.ErrNoneReplayable) {
			continue // every validation series too short to replay: no say
		}
		if err != nil {
			return Calibration{}, fmt.Errorf("calibrate: family %s: replay of its validation series: %w", side.family, err)
		}
		c := rep.Curve(sim.PolicyActivation)
		if c == nil || len(c.Points) != len(thresholds) {
			return Calibration{}, fmt.Errorf("calibrate: family %s: the replay gave no curve over the %d thresholds", side.family, len(thresholds))
		}
		curves = append(curves, c.Points)
		fams = append(fams, side.family)
	}
	if len(curves) == 0 {
		return Calibration{Note: "no validation series could be replayed"}, nil
	}
	k, score, unshifted, ok := bestShift(curves, int(math.Round(MaxCalibrationShift/calibrationStep)))
	if !ok {
		return Calibration{Families: fams, Note: "no shift holds every family's validation series within every budget"}, nil
	}
	return Calibration{Shift: float64(k) * calibrationStep, Score: score, Unshifted: unshifted, Families: fams}, nil
}

// bestShift is the shift, in sweep steps from -steps to steps, of the
// highest shiftScore, tried in the order 0, 1, -1, 2, -2...: a later
// shift must score strictly higher to be chosen, so ties go to the
// smaller shift in size, and at equal size to the positive (more cautious)
// one. unshifted is shift 0's score (NaN when it holds no curve within
// every budget); false when no shift does.
func bestShift(curves [][]sim.Point, steps int) (k int, score, unshifted float64, ok bool) {
	unshifted = math.NaN()
	for i := 0; i <= 2*steps; i++ {
		j := (i + 1) / 2
		if i%2 == 0 {
			j = -j
		}
		sc, within := shiftScore(curves, j)
		if !within {
			continue
		}
		if j == 0 {
			unshifted = sc
		}
		if !ok || sc > score {
			k, score, ok = j, sc, true
		}
	}
	return k, score, unshifted, ok
}

// shiftScore is the geometric mean over curves and CalibrationBudgets of
// the pair's best density within the budget when the second host reads the
// threshold k sweep steps above the first host's: the mean of the two
// hosts' densities and of their violation rates (the pair's, as the
// simulator averages them over series, to within the hosts' differing
// oracle counts). false when some curve has no setting within a budget.
func shiftScore(curves [][]sim.Point, k int) (float64, bool) {
	logSum, n := 0.0, 0
	for _, pts := range curves {
		for _, b := range CalibrationBudgets {
			best := 0.0
			for i := range pts {
				j := i + k
				if j < 0 || j >= len(pts) {
					continue
				}
				if (pts[i].FirstViolationRate+pts[j].SecondViolationRate)/2 > b {
					continue
				}
				best = max(best, (pts[i].FirstDensity+pts[j].SecondDensity)/2)
			}
			if best <= 0 {
				return 0, false
			}
			logSum += math.Log(best)
			n++
		}
	}
	return math.Exp(logSum / float64(n)), true
}

// shiftOutputs takes shift logits off every output node of md (sigmoid
// outputs: an output threshold shift logits looser reads the same counts
// as before).
func shiftOutputs(md *engine.Model, shift float64) {
	out := &md.Layers[len(md.Layers)-1]
	for i := range out.Biases {
		out.Biases[i] -= shift
	}
}

// UnshiftedText is Unshifted to four places, or "none within the budgets".
func (c Calibration) UnshiftedText() string {
	if math.IsNaN(c.Unshifted) {
		return "none within the budgets"
	}
	return strconv.FormatFloat(c.Unshifted, 'f', 4, 64)
}

// metrics are the provenance metrics of a calibration.
func (c Calibration) metrics() map[string]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	if c.Note != "" {
		return map[string]string{"calibration": "none: " + c.Note}
	}
	budgets := make([]string, len(CalibrationBudgets))
	for i, b := range CalibrationBudgets {
		budgets[i] = strconv.FormatFloat(b, 'g', -1, 64)
	}
	return map[string]string{
		"calibration_shift": strconv.FormatFloat(c.Shift, 'g', -1, 64),
		"calibration": fmt.Sprintf("outputs shifted %s logits: the pair's density within budgets %s on the validation series of %s (geometric mean) %s, %s unshifted",
			strconv.FormatFloat(c.Shift, 'g', -1, 64), strings.Join(budgets, " and "), strings.Join(c.Families, ", "), f(c.Score), c.UnshiftedText()),
	}
}
