// Package train makes the two default processors from real usage series.
//
// Labels come from what actually fitted: at each decision point of a replay
// (every Step samples, reading the last Window samples), replica count k+1
// "fits" when k+1 replicas following the series would not have overloaded the
// host (total usage <= capacity) at any sample of the next Horizon samples.
// Requested resources never enter the labels.
//
// Both processors share one learned estimate, a max-of-predictors peak
// predictor (Bashir et al., EuroSys 2021) written in fit space: g, how many
// replicas fit, is the minimum over six window statistics of the fit
// features (replicas of the observed size that fit by the window's mean,
// p95, p99, max, max of the last 5 and of the last 20 samples), each scaled
// by a learned factor. Output k is sigmoid(alpha (g / (k+1) - 1)): the
// probability that k+1 replicas fit. The model is ordinal (cumulative link),
// so outputs are ordered, and scale-free: g is positively homogeneous in the
// fit features, so a replica twice as large gives half the count, and one
// output threshold is one relative safety margin on every series:
// count = floor(g / (1 + logit(threshold) / alpha)). The min is exact in the
// network: min(a, b) = relu(a) - relu(a - b) for a, b >= 0, one hidden layer
// per pairwise halving.
//
// The capacity processor (second host, read at its output layer) is that
// network. The admission processor (first host, read at its input layer)
// has one demand slot per replica that wants to run; slot k passes through
// the hidden layers on its own chain of nodes into its block, relu(g +
// tiny x slot_k), which feeds only output k ("admit replica k"). All biases
// are 0 except the outputs' -alpha, and slot edges are positive, so an
// output holds data only through a live edge from an input that holds data:
// the activated branches are exactly the evidence for each admitted or safe
// replica.
package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// Settings control training. Zero fields take the defaults of DefaultSettings.
type Settings struct {
	Seed         uint64
	Window       int     // samples read at each decision
	Horizon      int     // samples a decision must hold for
	Step         int     // samples between decisions
	Slots        int     // countable slots: admission inputs, capacity outputs
	Epochs       int     //
	BatchSize    int     //
	LearningRate float64 //
	L2           float64 // weight decay
	// OverloadWeight weighs the loss of labels where k+1 replicas would
	// have overloaded the host against those where they fit: an overload
	// costs more than an idle slot, so the estimate learns to stay below
	// the peaks (a high conditional quantile rather than the median).
	OverloadWeight float64
	// A replica's p99 usage, as a share of host capacity, is drawn
	// log-uniformly from [ScaleMin, ScaleMax] for each example, so the
	// processors learn shapes rather than one scale.
	ScaleMin, ScaleMax float64
	// TrainFraction of each training series (by time) is trained on; the
	// rest validates.
	TrainFraction float64
	// HeldOutShare and SplitSeed choose the held-out series
	// (traces.SplitByName); held-out series are never trained on.
	HeldOutShare float64
	SplitSeed    uint64
}

// DefaultSettings are the settings of the embedded default models. Slots
// is 110, Kubernetes' default pod limit per node, so that the processors
// can count as many replicas as a host may run.
func DefaultSettings() Settings {
	return Settings{
		Seed: 1, Window: 120, Horizon: 5, Step: 5, Slots: 110,
		Epochs: 8, BatchSize: 256, LearningRate: 1e-2, L2: 0, OverloadWeight: 5,
		ScaleMin: 0.02, ScaleMax: 0.25, TrainFraction: 0.8, HeldOutShare: 0.34, SplitSeed: 1,
	}
}

func (s Settings) withDefaults() Settings {
	d := DefaultSettings()
	setI := func(v *int, dv int) {
		if *v == 0 {
			*v = dv
		}
	}
	setF := func(v *float64, dv float64) {
		if *v == 0 {
			*v = dv
		}
	}
	setI(&s.Window, d.Window)
	setI(&s.Horizon, d.Horizon)
	setI(&s.Step, d.Step)
	setI(&s.Slots, d.Slots)
	setI(&s.Epochs, d.Epochs)
	setI(&s.BatchSize, d.BatchSize)
	setF(&s.LearningRate, d.LearningRate)
	setF(&s.OverloadWeight, d.OverloadWeight)
	setF(&s.ScaleMin, d.ScaleMin)
	setF(&s.ScaleMax, d.ScaleMax)
	setF(&s.TrainFraction, d.TrainFraction)
	setF(&s.HeldOutShare, d.HeldOutShare)
	return s
}

func (s Settings) validate() error {
	switch {
	case s.Window < 2:
		return fmt.Errorf("window: %d, need at least 2 samples", s.Window)
	case s.Horizon < 1:
		return fmt.Errorf("horizon: %d, need at least 1 sample", s.Horizon)
	case s.Step < 1:
		return fmt.Errorf("step: %d, need at least 1", s.Step)
	case s.Slots < 1 || s.Slots > 1024:
		return fmt.Errorf("slots: %d, need 1 to 1024", s.Slots)
	case s.Epochs < 1:
		return fmt.Errorf("epochs: %d, need at least 1", s.Epochs)
	case s.BatchSize < 1:
		return fmt.Errorf("batch size: %d, need at least 1", s.BatchSize)
	case !(s.LearningRate > 0) || math.IsInf(s.LearningRate, 0):
		return fmt.Errorf("learning rate: %v, need a finite number > 0", s.LearningRate)
	case !(s.OverloadWeight > 0) || math.IsInf(s.OverloadWeight, 0):
		return fmt.Errorf("overload weight: %v, need a finite number > 0", s.OverloadWeight)
	case !(s.L2 >= 0) || math.IsInf(s.L2, 0):
		return fmt.Errorf("l2: %v, need a finite number >= 0", s.L2)
	case !(s.ScaleMin > 0 && s.ScaleMax >= s.ScaleMin && s.ScaleMax < 1):
		return fmt.Errorf("scale: [%v, %v] must satisfy 0 < min <= max < 1", s.ScaleMin, s.ScaleMax)
	case !(s.TrainFraction > 0 && s.TrainFraction < 1):
		return fmt.Errorf("train fraction: %v, need (0, 1)", s.TrainFraction)
	case !(s.HeldOutShare >= 0 && s.HeldOutShare < 1):
		return fmt.Errorf("held-out share: %v, need [0, 1)", s.HeldOutShare)
	}
	return nil
}

// ContextFeatures are the usage features both processors read: how many
// replicas of the observed size fit, by six statistics of the window. All
// are positively homogeneous of degree -1 in the replica's size, which is
// what makes the estimate scale-free.
var ContextFeatures = []string{
	engine.FeatCPUFitMean, engine.FeatCPUFitP95, engine.FeatCPUFitP99, engine.FeatCPUFitMax,
	engine.FeatCPUFitMaxLast5, engine.FeatCPUFitMaxLast20,
}

// Progress is reported after every epoch.
type Progress struct {
	Model     string
	Epoch     int
	Epochs    int
	Loss      float64
	Elapsed   time.Duration
	Remaining time.Duration
}

// Result holds the two trained models and what training measured.
type Result struct {
	Admission *engine.Model
	Capacity  *engine.Model
	// TrainSeries and HeldOut name the series on each side of the split.
	TrainSeries, HeldOut  []string
	Examples, ValExamples int
}

// dataset holds examples: x are the context features (rows x width), peak
// the per-replica peak share over the horizon, from which every slot's
// label follows: slot k fits when (k+1) x peak <= 1.
type dataset struct {
	x     []float64
	peak  []float64
	rows  int
	width int
}

// label is slot k's label for row r.
func (d *dataset) label(r, k int) float64 {
	if float64(k+1)*d.peak[r] <= 1 {
		return 1
	}
	return 0
}

// Train trains both processors on the training split of series.
func Train(all []traces.Series, s Settings, progress func(Progress)) (*Result, error) {
	s = s.withDefaults()
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("train settings: %w", err)
	}
	trainSet, heldOut := traces.SplitByName(all, s.HeldOutShare, s.SplitSeed)
	if len(trainSet) == 0 {
		return nil, errors.New("train: no training series")
	}
	res := &Result{}
	for _, t := range trainSet {
		res.TrainSeries = append(res.TrainSeries, t.Name)
	}
	for _, t := range heldOut {
		res.HeldOut = append(res.HeldOut, t.Name)
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x61637469766174))
	trainData, err := examples(trainSet, s, rng, true)
	if err != nil {
		return nil, err
	}
	valData, err := examples(trainSet, s, rng, false)
	if err != nil {
		return nil, err
	}
	if trainData.rows < s.BatchSize {
		return nil, fmt.Errorf("train: only %d examples, fewer than a batch of %d: series too short for window %d", trainData.rows, s.BatchSize, s.Window)
	}
	res.Examples, res.ValExamples = trainData.rows, valData.rows

	m := newPeakNet(s, trainData)
	trainLoss, err := m.fit(trainData, s, rng, progress)
	if err != nil {
		return nil, err
	}
	valLoss := math.NaN()
	if valData.rows > 0 {
		valLoss = m.loss(valData, s.OverloadWeight)
	}

	metrics := map[string]string{
		"train_examples":  strconv.Itoa(trainData.rows),
		"val_examples":    strconv.Itoa(valData.rows),
		"train_bce":       strconv.FormatFloat(trainLoss, 'f', 5, 64),
		"val_bce":         strconv.FormatFloat(valLoss, 'f', 5, 64),
		"alpha":           strconv.FormatFloat(m.alpha(), 'g', 6, 64),
		"feature_scales":  m.scales(),
		"held_out_series": fmt.Sprint(res.HeldOut),
	}
	prov := func(method string) engine.Provenance {
		return engine.Provenance{
			Method:    method,
			Generator: "go generate ./engine (activation train)",
			Data:      append([]string{"crane real CPU usage series (Apache-2.0), training split by series:"}, res.TrainSeries...),
			Settings:  settingsMap(s),
			Metrics:   metrics,
		}
	}
	res.Capacity = m.exportCapacity(prov("trained: ordinal max-of-predictors network: g = min over the fit features of a learned factor x the feature (exact ReLU min tree), output k = sigmoid(alpha (g/(k+1) - 1)); Adam on binary cross-entropy, overload labels weighted, against replay labels (k+1 replicas fit when (k+1) x per-replica usage <= capacity over the next horizon)"))
	res.Admission = m.exportAdmission(prov("trained: the capacity processor's network (same learned factors and alpha) with one pass-through chain per demand slot into its own block relu(g + 1e-6 x slot_k), which feeds admit_k only; labels as for the capacity processor"))
	for _, mod := range []*engine.Model{res.Capacity, res.Admission} {
		if err := mod.Validate(); err != nil {
			return nil, fmt.Errorf("train: exported model %s is invalid: %w", mod.Name, err)
		}
	}
	return res, nil
}

func settingsMap(s Settings) map[string]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return map[string]string{
		"seed": strconv.FormatUint(s.Seed, 10), "window": strconv.Itoa(s.Window), "horizon": strconv.Itoa(s.Horizon),
		"step": strconv.Itoa(s.Step), "slots": strconv.Itoa(s.Slots),
		"epochs": strconv.Itoa(s.Epochs), "batch_size": strconv.Itoa(s.BatchSize),
		"learning_rate": f(s.LearningRate), "l2": f(s.L2), "overload_weight": f(s.OverloadWeight),
		"scale_min": f(s.ScaleMin), "scale_max": f(s.ScaleMax), "train_fraction": f(s.TrainFraction),
		"held_out_share": f(s.HeldOutShare), "split_seed": strconv.FormatUint(s.SplitSeed, 10),
		"normalisation": "each series scaled so its p99 is 1, then by a per-example p99 share drawn from [scale_min, scale_max]",
	}
}

// examples builds the data set from the training or validation part (by
// time) of each series.
func examples(set []traces.Series, s Settings, rng *rand.Rand, trainPart bool) (dataset, error) {
	d := dataset{width: len(ContextFeatures)}
	const capMHz = 1000.0
	samples := make([]engine.Sample, s.Window)
	for _, ser := range set {
		norm, err := traces.Normalize(ser, 1)
		if err != nil {
			return d, fmt.Errorf("train: %w", err)
		}
		v := norm.Values
		cut := int(float64(len(v)) * s.TrainFraction)
		lo, hi := s.Window, cut-s.Horizon
		if !trainPart {
			lo, hi = cut+s.Window, len(v)-s.Horizon
		}
		reqShare := traces.Quantile(v[:len(v)/2], 0.99) // careful operator: p99 of the first half
		for t := lo; t <= hi; t += s.Step {
			r := s.ScaleMin * math.Pow(s.ScaleMax/s.ScaleMin, rng.Float64())
			for i := range samples {
				j := t - s.Window + i
				samples[i] = engine.Sample{Time: norm.Times[j], CPUMHz: v[j] * r * capMHz}
			}
			obs := engine.Observation{
				CPUCapacityMHz: capMHz, Samples: samples, RunningReplicas: 1,
				RequestedCPUMHz: reqShare * r * capMHz, ReplicaCPUDemandMHz: math.Max(reqShare*r*capMHz, 1e-6),
			}
			fx, err := engine.FeatureVector(&obs, "training", ContextFeatures)
			if err != nil {
				return d, fmt.Errorf("train: series %s at %d: %w", ser.Name, t, err)
			}
			peak := 0.0
			for _, u := range v[t : t+s.Horizon] {
				peak = math.Max(peak, u*r)
			}
			d.x = append(d.x, fx...)
			d.peak = append(d.peak, peak)
			d.rows++
		}
	}
	return d, nil
}
