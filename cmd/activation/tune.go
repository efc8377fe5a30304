package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/sim"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
	"github.com/activation-scheduler/terraform-provider-activation/train"
)

var tuneHelp = help{
	synopsis: "--traces DIR[,DIR...] [flags]",
	description: `Choose the model's shape by nested validation inside the training split:
the held-out identities of each family (the split train and simulate use)
are set aside: read with the rest (a file that does not parse stops the
run), never trained, validated or replayed on. The rest is split again,
--folds times, into inner training and inner validation identities (each
fold a seeded draw of a quarter of them to validate on: folds may share
an identity, and some may be in none); every
candidate shape (--candidates lists them) is trained on each inner training
set and replayed (scenario shifted) on its inner validation set against the
baselines. The table gives, per candidate,
family and budget, the activation density over the best baseline's, averaged
over folds, and the geometric mean of them all: the candidate to choose is
the one with the highest. The last two columns are that geometric mean with
each host of a pair within the budget, every policy's setting chosen again
(the pair's budget is the mean of its hosts' violation rates, which the two
processors can split unevenly): at one setting for both hosts, and at a
setting per host (the front ends' first_margin and second_margin). Nothing
is tuned on the held-out series.`,
	examples: []string{
		"# the nested validation behind the default settings (see docs/benchmarks.md)",
		"activation tune --traces engine/testdata/traces/crane,engine/testdata/traces/planetlab",
	},
}

// tuneCandidate is one model shape nested validation compares.
type tuneCandidate struct {
	name string
	edit func(*train.Settings)
}

// tuneCandidates are the shapes compared: the default, its neighbours and
// the hand-wired ablations.
func tuneCandidates() []tuneCandidate {
	shape := func(hidden []int, extra ...string) func(*train.Settings) {
		return func(s *train.Settings) {
			s.Hidden = hidden
			s.Statistics = append(append([]string(nil), s.Statistics...), extra...)
		}
	}
	return []tuneCandidate{
		{"mlp 24-12, cross-entropy (the previous default)", shape([]int{24, 12})},
		{"mlp 12", shape([]int{12})},
		{"mlp 12 + trend", shape([]int{12}, "trend_up", "trend_down")},
		{"mlp 12 + p99", shape([]int{12}, "p99")},
		{"mlp 24-12 + p99", shape([]int{24, 12}, "p99")},
		{"mlp 24-12 + p99 + trend", shape([]int{24, 12}, "p99", "trend_up", "trend_down")},
		{"mlp 24-12, correlated labels", func(s *train.Settings) { s.Hidden, s.Multiplex = []int{24, 12}, false }},
		{"max-of-predictors", func(s *train.Settings) { s.Trunk, s.Hidden = train.TrunkMax, nil }},
		{"mlp 24-12 without level (mean, mean_last5)", without("mean", "mean_last5")},
		{"mlp 24-12 without dispersion (mean_std2)", without("mean_std2")},
		{"mlp 24-12 without tail (p95, max)", without("p95", "max")},
		{"mlp 24-12 without recent peaks (max_last5, max_last20)", without("max_last5", "max_last20")},
		{"mlp 24-12 + last", shape([]int{24, 12}, "last")},
		{"mlp 48-24", shape([]int{48, 24})},
		{"mlp 24-12, 1000 rows per series", func(s *train.Settings) { s.Hidden, s.MaxRowsPerSeries = []int{24, 12}, 1000 }},
		{"mlp 24-12, 30 epochs, patience 5", func(s *train.Settings) { s.Hidden, s.Epochs, s.Patience = []int{24, 12}, 30, 5 }},
		{"mlp 24-12, overload weight 2", func(s *train.Settings) { s.Hidden, s.OverloadWeight = []int{24, 12}, 2 }},
		{"mlp 24-12, overload weight 12", func(s *train.Settings) { s.Hidden, s.OverloadWeight = []int{24, 12}, 12 }},
		{"mlp 24-12 + daily cycle", shape([]int{24, 12}, "level_day_sin", "level_day_cos")},
		{"mlp 24-12, best of 8 restarts", func(s *train.Settings) { s.Hidden, s.Restarts = []int{24, 12}, 8 }},
		{"monotone 7x2", monotone(7, 2)},
		{"monotone 7x3", monotone(7, 3)},
		{"monotone 14x2", monotone(14, 2)},
		{"monotone 7x1", monotone(7, 1)},
		{"monotone 7x2 + p99 + last", monotone(7, 2, "p99", "last")},
		{"monotone 7x2, 30 epochs, patience 5", func(s *train.Settings) { monotone(7, 2)(s); s.Epochs, s.Patience = 30, 5 }},
		{"monotone 7x2, best of 4 restarts", func(s *train.Settings) { monotone(7, 2)(s); s.Restarts = 4 }},
		{"mlp 24-12, quantile loss 0.8", quantile(0.8)},
		{"mlp 24-12, quantile loss 0.9", quantile(0.9)},
		{"mlp 24-12, quantile loss 0.95", quantile(0.95)},
		{"mlp 24-12, quantile loss 0.99", quantile(0.99)},
		{"mlp 24-12, quantile loss 0.9, calibrated", func(s *train.Settings) { quantile(0.9)(s); s.Calibrate = true }},
		{"mlp 24-12, quantile loss 0.9, calibrated on the training series too", func(s *train.Settings) {
			quantile(0.9)(s)
			s.Calibrate, s.CalibrateOnTrained = true, true
		}},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95", capacityQuantile(0.9, 0.95)},
		{"mlp 24-12, quantile loss 0.85, capacity 0.95", capacityQuantile(0.85, 0.95)},
		{"mlp 24-12, quantile loss 0.9, capacity 0.97", capacityQuantile(0.9, 0.97)},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, calibrated", func(s *train.Settings) { capacityQuantile(0.9, 0.95)(s); s.Calibrate = true }},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, 1000 rows per series", func(s *train.Settings) { capacityQuantile(0.9, 0.95)(s); s.MaxRowsPerSeries = 1000 }},
		{"mlp 24-12 + daily cycle, quantile loss 0.9, capacity 0.95", func(s *train.Settings) {
			capacityQuantile(0.9, 0.95)(s)
			shape([]int{24, 12}, "level_day_sin", "level_day_cos")(s)
		}},
		{"mlp 24-12 + last + p99, quantile loss 0.9, capacity 0.95", func(s *train.Settings) {
			capacityQuantile(0.9, 0.95)(s)
			shape([]int{24, 12}, "last", "p99")(s)
		}},
		{"mlp 24-12, quantile loss 0.93, capacity 0.95", capacityQuantile(0.93, 0.95)},
		{"mlp 48-24, quantile loss 0.9, capacity 0.95", func(s *train.Settings) { capacityQuantile(0.9, 0.95)(s); s.Hidden = []int{48, 24} }},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, best of 4 restarts", func(s *train.Settings) { capacityQuantile(0.9, 0.95)(s); s.Restarts = 4 }},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, 30 epochs, patience 5", longer(capacityQuantile(0.9, 0.95))},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, learning rate 3e-3", func(s *train.Settings) { capacityQuantile(0.9, 0.95)(s); s.LearningRate = 3e-3 }},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, 60 epochs, patience 8", func(s *train.Settings) {
			capacityQuantile(0.9, 0.95)(s)
			s.Epochs, s.Patience = 60, 8
		}},
		{"mlp 48-24, quantile loss 0.9, capacity 0.95, 30 epochs, patience 5", longer(capacityQuantile(0.9, 0.95), func(s *train.Settings) { s.Hidden = []int{48, 24} })},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, 30 epochs, patience 5, 1000 rows per series", longer(capacityQuantile(0.9, 0.95), func(s *train.Settings) { s.MaxRowsPerSeries = 1000 })},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, 30 epochs, patience 5, calibrated", longer(capacityQuantile(0.9, 0.95), func(s *train.Settings) { s.Calibrate = true })},
		{"mlp 24-12, quantile loss 0.9, capacity 0.97, 30 epochs, patience 5", longer(capacityQuantile(0.9, 0.97))},
		{"mlp 24-12, quantile loss 0.9, capacity 0.93, 30 epochs, patience 5", longer(capacityQuantile(0.9, 0.93))},
		{"mlp 24-12, quantile loss 0.85, capacity 0.95, 30 epochs, patience 5", longer(capacityQuantile(0.85, 0.95))},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, 30 epochs, patience 5, mean of 4 starts", longer(capacityQuantile(0.9, 0.95), func(s *train.Settings) { s.Average = 4 })},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, 30 epochs, patience 5, mean of 2 starts (the default until December 5)", theDefault()},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, 30 epochs, patience 5, mean of 2 starts, calibrated", longer(capacityQuantile(0.9, 0.95), func(s *train.Settings) { s.Average, s.Calibrate = 2, true })},
		// The ablation of the default (54): each row is the default with
		// one thing changed.
		{"the default, correlated labels", theDefault(func(s *train.Settings) { s.Multiplex = false })},
		{"the default's training, max-of-predictors (one start: its starts cannot be averaged)", theDefault(func(s *train.Settings) { s.Trunk, s.Hidden, s.Average = train.TrunkMax, nil, 0 })},
		{"the default without level (mean, mean_last5)", theDefault(without("mean", "mean_last5"))},
		{"the default without dispersion (mean_std2)", theDefault(without("mean_std2"))},
		{"the default without tail (p95, max)", theDefault(without("p95", "max"))},
		{"the default without recent peaks (max_last5, max_last20)", theDefault(without("max_last5", "max_last20"))},
		// The quantile loss's band of usage (train.Settings.QuantileBand):
		// the default reads the slots whose usage lies within [0.25, 4]
		// of the host; the cuts the budgets choose lie within [0.5, 1]. Candidates
		// 62 to 64 narrow it, 65 to 67 widen it.
		{"the default, quantile band [0.5, 2]", theDefault(band(0.5, 2))},
		{"the default, quantile band [0.5, 1.25]", theDefault(band(0.5, 1.25))},
		{"the default, quantile band [0.7, 1.4]", theDefault(band(0.7, 1.4))},
		{"the default, quantile band [0.1, 4]", theDefault(band(0.1, 4))},
		{"the default, quantile band [0.25, 10]", theDefault(band(0.25, 10))},
		{"the default, quantile band [0.1, 10]", theDefault(band(0.1, 10))},
		// Trend (issue 10 names it), measured before on cross-entropy
		// only (candidates 3 and 6).
		{"the default + trend (trend_up, trend_down)", theDefault(func(s *train.Settings) {
			s.Statistics = append(slices.Clone(s.Statistics), "trend_up", "trend_down")
		})},
		// Weight decay (train.Settings.L2), never measured on the quantile
		// loss: a regulariser for families the models never saw.
		{"the default, weight decay 1e-5", theDefault(func(s *train.Settings) { s.L2 = 1e-5 })},
		{"the default, weight decay 1e-4", theDefault(func(s *train.Settings) { s.L2 = 1e-4 })},
		{"the default, weight decay 1e-3", theDefault(func(s *train.Settings) { s.L2 = 1e-3 })},
		// The default's step sizes, measured on the quantile loss's
		// schedule (candidate 45 measured 3e-3 on the earlier one).
		{"the default, learning rate 5e-3", theDefault(func(s *train.Settings) { s.LearningRate = 5e-3 })},
		{"the default, learning rate 2e-2", theDefault(func(s *train.Settings) { s.LearningRate = 2e-2 })},
		{"the default, batches of 128", theDefault(func(s *train.Settings) { s.BatchSize = 128 })},
		// The recent dispersion (the std of the last 20 samples): the
		// window's std is over all of it, the recent peaks are levels.
		{"the default + recent dispersion (std_last20)", theDefault(func(s *train.Settings) {
			s.Statistics = append(slices.Clone(s.Statistics), "std_last20")
		})},
		// The peak bound (train.Settings.PeakGrowth): m replicas of the
		// workload cost at most m x G x the window's peak each, in both
		// exported processors. 77 was the default from December 5 to
		// December 7; 85 on the morning of December 7, 98 in the
		// afternoon, 101 since the evening.
		{"the default, peak bound 2", theDefault(peakGrowth(2))},
		{"mlp 24-12, quantile loss 0.9, capacity 0.95, 30 epochs, patience 5, mean of 2 starts, peak bound 3 (the default until December 7)", theDefault(peakGrowth(3))},
		{"the default + recent dispersion (std_last20), peak bound 2", theDefault(peakGrowth(2), func(s *train.Settings) {
			s.Statistics = append(slices.Clone(s.Statistics), "std_last20")
		})},
		// A bias per output slot (train.Settings.SlotBias): the output
		// for m replicas beta ln(m) logits looser, so that one threshold
		// takes more risk where one more replica adds little of it (a
		// negative beta: less). On the default of December 5 (77, a peak
		// bound of 3).
		{"the default, peak bound 3, capacity slot bias 0.4", theDefault(peakGrowth(3), slotBias(0.4, 0))},
		{"the default, peak bound 3, capacity slot bias 0.2", theDefault(peakGrowth(3), slotBias(0.2, 0))},
		{"the default, peak bound 3, capacity slot bias 0.8", theDefault(peakGrowth(3), slotBias(0.8, 0))},
		{"the default, peak bound 3, slot bias 0.4 on both processors", theDefault(peakGrowth(3), slotBias(0.4, 0.4))},
		{"the default, peak bound 3, capacity slot bias -0.2", theDefault(peakGrowth(3), slotBias(-0.2, 0))},
		{"the default, peak bound 3, capacity slot bias -0.5", theDefault(peakGrowth(3), slotBias(-0.5, 0))},
		// The recent dispersion (75) on the default of December 5 (77):
		// the peak bound keeps a replica after the step that parked a
		// group with 75's pair. The default on the morning of December 7
		// (98 in the afternoon, 101 since the evening).
		{"the default + recent dispersion (std_last20), peak bound 3 (the default of the morning of December 7)", theDefault85()},
		// The ablation of the morning's default of December 7 (85): each row is
		// 85 with one thing changed.
		{"the default of December 7, correlated labels", theDefault85(func(s *train.Settings) { s.Multiplex = false })},
		{"the default of December 7's training, max-of-predictors (one start)", theDefault85(func(s *train.Settings) { s.Trunk, s.Hidden, s.Average = train.TrunkMax, nil, 0 })},
		{"the default of December 7 without level (mean, mean_last5)", theDefault85(without("mean", "mean_last5"))},
		{"the default of December 7 without dispersion (mean_std2, std_last20)", theDefault85(without("mean_std2", "std_last20"))},
		{"the default of December 7 without tail (p95, max: no peak bound then)", theDefault85(without("p95", "max"))},
		{"the default of December 7 without recent peaks (max_last5, max_last20)", theDefault85(without("max_last5", "max_last20"))},
		// Further spreads of the recent past on the default of December 7
		// (85): the dispersion of the last 5 and of the last 60 samples,
		// and the window's largest one-sample rise.
		{"the default of December 7 + std_last5", theDefault85(plus("std_last5"))},
		{"the default of December 7 + std_last60", theDefault85(plus("std_last60"))},
		{"the default of December 7 + rise_max", theDefault85(plus("rise_max"))},
		// Each family's examples repeated so that the families weigh
		// alike (train.Settings.BalanceFamilies): the bundled Crane
		// series give far fewer examples than PlanetLab's.
		{"the default of December 7, families balanced", theDefault85(func(s *train.Settings) { s.BalanceFamilies = true })},
		// The window's largest rise (94), read nearer the decision or over
		// the horizon's five samples.
		{"the default of December 7 + rise_max_last20", theDefault85(plus("rise_max_last20"))},
		{"the default of December 7 + rise5_max", theDefault85(plus("rise5_max"))},
		// 98 was the default on the afternoon of December 7.
		{"the default of December 7 + rise_max + rise5_max (the default of the afternoon of December 7)", theDefault98()},
		// The ablation of the afternoon's default of December 7 (98): each
		// row is 98 with one thing changed. 101, without the level
		// statistics, is the default since the evening of December 7.
		{"the default of December 7, afternoon, correlated labels", theDefault98(func(s *train.Settings) { s.Multiplex = false })},
		{"the default of December 7, afternoon, its training, max-of-predictors (one start)", theDefault98(func(s *train.Settings) { s.Trunk, s.Hidden, s.Average = train.TrunkMax, nil, 0 })},
		{"the default of December 7, afternoon, without level (mean, mean_last5) (default)", theDefault101()},
		{"the default of December 7, afternoon, without dispersion (mean_std2, std_last20)", theDefault98(without("mean_std2", "std_last20"))},
		{"the default of December 7, afternoon, without tail (p95, max: no peak bound then)", theDefault98(without("p95", "max"))},
		{"the default of December 7, afternoon, without recent peaks (max_last5, max_last20)", theDefault98(without("max_last5", "max_last20"))},
		// The ablation of the default since the evening of December 7
		// (101): each row is 101 with one thing changed (without the
		// rises it is 85 without the level statistics, candidate 88).
		{"the default since December 7, evening, correlated labels", theDefault101(func(s *train.Settings) { s.Multiplex = false })},
		{"the default since December 7, evening, its training, max-of-predictors (one start)", theDefault101(func(s *train.Settings) { s.Trunk, s.Hidden, s.Average = train.TrunkMax, nil, 0 })},
		{"the default since December 7, evening, without dispersion (mean_std2, std_last20)", theDefault101(without("mean_std2", "std_last20"))},
		{"the default since December 7, evening, without tail (p95, max: no peak bound then)", theDefault101(without("p95", "max"))},
		{"the default since December 7, evening, without recent peaks (max_last5, max_last20)", theDefault101(without("max_last5", "max_last20"))},
		{"the default since December 7, evening, without rises (rise_max, rise5_max)", theDefault101(without("rise_max", "rise5_max"))},
		// The window's sustained peaks (December 8): the largest mean of
		// 5 and of 20 consecutive samples, which a spike of one sample
		// moves by at most a fifth or a twentieth of its height.
		{"the default since December 7, evening, + max_mean5", theDefault101(plus("max_mean5"))},
		{"the default since December 7, evening, + max_mean20", theDefault101(plus("max_mean20"))},
		{"the default since December 7, evening, + max_mean5 + max_mean20", theDefault101(plus("max_mean5", "max_mean20"))},
	}
}

// plus adds statistics to a candidate's.
func plus(names ...string) func(*train.Settings) {
	return func(s *train.Settings) {
		s.Statistics = append(slices.Clone(s.Statistics), names...)
	}
}

// peakGrowth sets the peak bound's growth (train.Settings.PeakGrowth).
func peakGrowth(g float64) func(*train.Settings) {
	return func(s *train.Settings) { s.PeakGrowth = g }
}

// slotBias sets the capacity and admission processors' slot biases
// (train.Settings.SlotBias and AdmissionSlotBias).
func slotBias(capacity, admission float64) func(*train.Settings) {
	return func(s *train.Settings) { s.SlotBias, s.AdmissionSlotBias = capacity, admission }
}

// theDefault is the default models' training as it was measured until
// December 5 (candidate 54: the quantile loss at 0.9, the capacity
// processor's at 0.95, up to 30 epochs with a patience of 5, the mean of
// two starts, the seven statistics of the default until December 7
// (measuredStatistics), no peak bound; the default
// until December 7 was candidate 77, this with a peak bound of 3, and
// on the morning of December 7 was 85, 77 reading std_last20 too, on
// the afternoon 98, 85 reading the rises too, and since the evening is
// 101, 98 without the level statistics), then edits more: a row of its
// ablation.
func theDefault(more ...func(*train.Settings)) func(*train.Settings) {
	return longer(capacityQuantile(0.9, 0.95), append([]func(*train.Settings){func(s *train.Settings) { s.Average = 2 }}, more...)...)
}

// theDefault85 is the default of the morning of December 7 (candidate 85: 77, the
// default of December 5, reading std_last20 too), then edits more: a row
// of its ablation.
func theDefault85(more ...func(*train.Settings)) func(*train.Settings) {
	return theDefault(append([]func(*train.Settings){peakGrowth(3), func(s *train.Settings) {
		s.Statistics = append(slices.Clone(s.Statistics), "std_last20")
	}}, more...)...)
}

// theDefault98 is the default of the afternoon of December 7
// (candidate 98: 85 reading rise_max and rise5_max too), then edits more:
// a row of its ablation.
func theDefault98(more ...func(*train.Settings)) func(*train.Settings) {
	return theDefault85(append([]func(*train.Settings){plus("rise_max", "rise5_max")}, more...)...)
}

// theDefault101 is the default since the evening of December 7
// (candidate 101: 98 without the level statistics, mean and mean_last5),
// then edits more: a row of its ablation.
func theDefault101(more ...func(*train.Settings)) func(*train.Settings) {
	return theDefault98(append([]func(*train.Settings){without("mean", "mean_last5")}, more...)...)
}

// measuredStatistics are the statistics every candidate reads unless it
// names others: the default ones until December 7, when the recent
// dispersion (std_last20) joined them (candidate 85).
var measuredStatistics = []string{"mean", "mean_last5", "mean_std2", "p95", "max", "max_last5", "max_last20"}

// settings are the candidate's training settings on an inner fold: base
// (DefaultSettings), trained on every series the fold gives (nothing held
// out), then cross-entropy, uncalibrated, with no peak bound, at most
// 12 epochs with a patience of 3 and measuredStatistics unless the
// candidate names a quantile, calibration, a peak bound, its epochs or its
// statistics: the candidates measured before any of them was the default run
// as they were measured (docs/benchmarks.md).
func (c tuneCandidate) settings(base train.Settings) train.Settings {
	s := base
	s.NoHeldOut, s.HeldOutShare, s.Quantile, s.CapacityQuantile = true, 0, 0, 0
	s.Epochs, s.Patience, s.Average, s.PeakGrowth = 12, 3, 0, 0
	s.Statistics = slices.Clone(measuredStatistics)
	c.edit(&s)
	return s
}

// quantile is the default shape trained on the pinball loss at quantile q.
func quantile(q float64) func(*train.Settings) {
	return func(s *train.Settings) { s.Hidden, s.Quantile = []int{24, 12}, q }
}

// capacityQuantile is the default shape on the quantile loss at q, the
// capacity processor's at capQ.
func capacityQuantile(q, capQ float64) func(*train.Settings) {
	return func(s *train.Settings) { quantile(q)(s); s.CapacityQuantile = capQ }
}

// longer is the shape edits trains for up to 30 epochs with a patience of
// 5 (the default since December 4, 2026), then edits more.
func longer(shape func(*train.Settings), more ...func(*train.Settings)) func(*train.Settings) {
	return func(s *train.Settings) {
		shape(s)
		s.Epochs, s.Patience = 30, 5
		for _, m := range more {
			m(s)
		}
	}
}

// band is the quantile loss's band of usage [lo, hi].
func band(lo, hi float64) func(*train.Settings) {
	return func(s *train.Settings) { s.QuantileBand = [2]float64{lo, hi} }
}

// monotone is the monotone trunk of groups x units, with the statistics
// named besides its default ones.
func monotone(groups, units int, extra ...string) func(*train.Settings) {
	return func(s *train.Settings) {
		s.Trunk, s.Hidden = train.TrunkMonotone, []int{groups, units}
		s.Statistics = append(append([]string(nil), train.DefaultMonotoneStatistics...), extra...)
	}
}

// without is the default shape with a group of statistics removed: the
// ablation of one feature group.
func without(drop ...string) func(*train.Settings) {
	return func(s *train.Settings) {
		s.Hidden = []int{24, 12}
		kept := make([]string, 0, len(s.Statistics))
		for _, st := range s.Statistics {
			if !slices.Contains(drop, st) {
				kept = append(kept, st)
			}
		}
		s.Statistics = kept
	}
}

func cmdTune(args []string, e env) error {
	fs := newFlags("tune", tuneHelp)
	dir := fs.String("traces", "", "comma-separated trace `DIR[,DIR...]`, each a family (required)")
	folds := fs.Int("folds", 3, "inner validation folds (1 to 10)")
	budgets := fs.String("budgets", "0.01,0.001", "violation budgets, comma-separated, each a fraction (0.01) or a percentage (1%)")
	quiet := fs.Bool("quiet", false, "no progress lines (one per candidate and fold, on standard error)")
	seed := fs.Uint64("seed", 0, "the inner replays' scenario seed `S` (replica shifts and scales, as simulate's --seed; 0: the scenario's own, 1): nested validation over several seeds shows how much of a difference between candidates is the draw's (a calibrated candidate's calibration, inside training, replays with seed 1)")
	only := fs.String("candidates", "", "comma-separated candidate `N[,N...]` to run (empty: all): "+candidateList())
	if err := parse(fs, args); err != nil {
		return err
	}
	dirs, err := traceDirs(*dir)
	if err != nil {
		return err
	}
	if *folds < 1 || *folds > 10 {
		return usagef("--folds: %d; want 1 to 10", *folds)
	}
	var bs []float64
	for _, b := range strings.Split(*budgets, ",") {
		v, err := parseShare(b)
		if err != nil {
			return usagef("--budgets: %v", err)
		}
		if slices.Contains(bs, v) {
			// (its column would count twice in the geometric mean that
			// picks the candidate)
			return usagef("--budgets: %q is a budget given before (%g)", strings.TrimSpace(b), v)
		}
		bs = append(bs, v)
		if v >= 0.1 && !strings.HasSuffix(strings.TrimSpace(b), "%") {
			// as simulate's --budget: "0.5" is half of every host-sample
			fmt.Fprintf(e.stderr, "activation tune: %s\n", budgetNote(v, ""))
		}
	}
	cands := tuneCandidates()
	if *only != "" {
		var picked []tuneCandidate
		named := map[int]bool{}
		for _, c := range strings.Split(*only, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil || i < 1 || i > len(cands) {
				return usagef("--candidates: %q is not one of 1..%d", c, len(cands))
			}
			if named[i] {
				return usagef("--candidates: %d named twice (it would be trained and printed twice)", i)
			}
			named[i] = true
			picked = append(picked, cands[i-1])
		}
		cands = picked
	}
	var (
		fams      []train.Family
		loadNotes []string
	)
	err = interruptible(e.context(), func() (err error) {
		fams, loadNotes, err = loadFamilies(dirs)
		return err
	})
	for _, n := range loadNotes {
		fmt.Fprintf(e.stderr, "activation tune: %s\n", n)
	}
	if err != nil {
		return err
	}
	base := train.DefaultSettings()
	// held[h][c][f][b] is the ratio summed over folds, held as the
	// holding h says (heldRatio): on the pair's budget (the candidates'
	// score), with each host within it at one setting, and at a setting
	// per host.
	holdings := sim.Holdings()
	held := make([][][][]float64, len(holdings))
	for h := range held {
		held[h] = make([][][]float64, len(cands))
		for c := range held[h] {
			held[h][c] = make([][]float64, len(fams))
			for f := range held[h][c] {
				held[h][c][f] = make([]float64, len(bs))
			}
		}
	}
	ratio := held[0]
	// Every fold needs inner training and validation series in every
	// family, and a validation series the replay can use: checked before
	// any training, so that a small family fails at once and says why (the
	// replay leaves a series it cannot use out, and fails when none is
	// left). replay is the scenario every fold's replay runs.
	replay := sim.Shifted()
	if *seed != 0 {
		replay.Seed = *seed
	}
	type foldSides struct {
		inner []train.Family
		val   [][]traces.Series
	}
	sides := make([]foldSides, *folds)
	for fold := range sides {
		inner, val := tuneFold(fams, base, fold)
		sides[fold] = foldSides{inner, val}
		for f, fam := range fams {
			if len(inner[f].Series) == 0 || len(val[f]) == 0 {
				outer, held := traces.SplitByName(fam.Series, base.HeldOutShare, base.SplitSeed)
				return fmt.Errorf("family %s, fold %d: %d inner training and %d inner validation series: the family's %d series leave %d after the held-out split (%d held out), and tune splits those again, a quarter to validate; give the family at least 2 series outside the held-out split",
					fam.Name, fold+1, len(inner[f].Series), len(val[f]), len(fam.Series), len(outer), len(held))
			}
			var why []string
			usable := slices.ContainsFunc(val[f], func(s traces.Series) bool {
				err := replay.Usable(s)
				if err != nil && len(why) < 10 {
					why = append(why, err.Error())
				}
				return err == nil
			})
			if !usable {
				if more := len(val[f]) - len(why); more > 0 {
					why = append(why, fmt.Sprintf("and %d more", more))
				}
				return fmt.Errorf("family %s, fold %d: none of the %d inner validation series can be replayed (%s); give the family series the replay can use, or leave these out",
					fam.Name, fold+1, len(val[f]), strings.Join(why, "; "))
			}
		}
	}
	start := time.Now()
	var notes []string
	for fold := 0; fold < *folds; fold++ {
		inner, val := sides[fold].inner, sides[fold].val
		for c, cand := range cands {
			s := cand.settings(base)
			var res *train.Result
			err := interruptible(e.context(), func() (err error) {
				res, err = train.TrainFamilies(inner, s, nil)
				return err
			})
			if err != nil {
				return fmt.Errorf("candidate %q fold %d: %w", cand.name, fold+1, err)
			}
			if c == 0 && len(res.Skipped) > 0 { // the same series for every candidate
				notes = append(notes, fmt.Sprintf("fold %d: left out %d series no example can come from: %s", fold+1, len(res.Skipped), train.SkippedText(res.Skipped, 10)))
			}
			adm, err := engine.NewProcessor(res.Admission)
			if err != nil {
				return err
			}
			capy, err := engine.NewProcessor(res.Capacity)
			if err != nil {
				return err
			}
			for f := range fams {
				act, err := sim.Activation(sim.ActivationConfig{Admission: adm, Capacity: capy})
				if err != nil {
					return err
				}
				// The requests' factor from the inner training series, as
				// simulate's held-out replay sets it.
				opt := sim.Options{CalibrateOn: sim.FromSeries(inner[f].Series)}
				rep, err := sim.Run(e.context(), val[f], replay, append(sim.Baselines(), act), opt)
				if err != nil {
					return fmt.Errorf("candidate %q fold %d family %s: %w", cand.name, fold+1, fams[f].Name, err)
				}
				if rep.CalibratedOn == 0 && c == 0 { // the same series for every candidate
					notes = append(notes, fmt.Sprintf("fold %d, family %s: the requests' factor is set on the inner validation series: none of the %d inner training series can be replayed", fold+1, fams[f].Name, len(inner[f].Series)))
				}
				for b, budget := range bs {
					for h, holding := range holdings {
						held[h][c][f][b] += heldRatio(rep, budget, holding) / float64(*folds)
					}
				}
			}
			if !*quiet {
				fmt.Fprintf(e.stderr, "fold %d/%d, candidate %d/%d (%s) done, %s\n", fold+1, *folds, c+1, len(cands), cand.name, time.Since(start).Round(time.Second))
			}
		}
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "candidate")
	for _, fam := range fams {
		for _, b := range bs {
			fmt.Fprintf(tw, "\t%s %g%%", fam.Name, 100*b)
		}
	}
	fmt.Fprint(tw, "\tgeometric mean\teach host: geometric mean\tper host: geometric mean\n")
	for c, cand := range cands {
		fmt.Fprint(tw, cand.name)
		for f := range fams {
			for b := range bs {
				fmt.Fprintf(tw, "\t%.3f", ratio[c][f][b])
			}
		}
		fmt.Fprintf(tw, "\t%.3f\t%.3f\t%.3f\n", geometricMean(ratio[c]), geometricMean(held[1][c]), geometricMean(held[2][c]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(e.stdout, "note: %s\n", n)
	}
	return nil
}

// geometricMean is the geometric mean of every family's and budget's ratio
// (a ratio of 0, no setting within the budget, counted as 1e-6).
func geometricMean(ratios [][]float64) float64 {
	logSum, n := 0.0, 0
	for _, fam := range ratios {
		for _, r := range fam {
			logSum += math.Log(math.Max(r, 1e-6))
			n++
		}
	}
	return math.Exp(logSum / float64(n))
}

// heldRatio is the activation policy's density over the best baseline's
// at budget, every policy's setting chosen as h holds the budget
// (sim.Report.SummarizeHeld); 0 when no baseline has a setting there.
func heldRatio(rep *sim.Report, budget float64, h sim.Holding) float64 {
	s := rep.SummarizeHeld(budget, h)
	if s.BestBaselineDensity <= 0 {
		return 0
	}
	return s.ActivationDensity / s.BestBaselineDensity
}

// candidateList numbers the candidates for --candidates' help.
func candidateList() string {
	var b strings.Builder
	for i, c := range tuneCandidates() {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d %s", i+1, c.name)
	}
	return b.String()
}

// tuneFold is fold's inner split of each family: the training side of the
// held-out split (base's, the trainer's), split again by identity into the
// inner training series and the inner validation ones (a quarter, seeded by
// the fold). The held-out series are in neither.
func tuneFold(fams []train.Family, base train.Settings, fold int) (inner []train.Family, val [][]traces.Series) {
	inner, val = make([]train.Family, len(fams)), make([][]traces.Series, len(fams))
	for f, fam := range fams {
		outerTrain, _ := traces.SplitByName(fam.Series, base.HeldOutShare, base.SplitSeed)
		innerTrain, innerVal := traces.SplitByName(outerTrain, 0.25, uint64(100+fold))
		inner[f] = train.Family{Name: fam.Name, Series: innerTrain}
		val[f] = innerVal
	}
	return inner, val
}
