// Package train makes the two default processors from real usage series.
//
// Labels come from what actually fitted: at each decision point of a replay
// (every Step samples, reading the last Window samples), replica count k+1
// "fits" when k+1 replicas following the series would not have overloaded the
// host (total usage <= capacity) at any sample of the next Horizon samples.
// Requested resources never enter the labels.
//
// Both processors are built on one form of learned estimate, a
// max-of-predictors peak predictor (Bashir et al., EuroSys 2021): a
// replica's predicted peak is the largest of several window statistics
// (mean, p95, p99, max, recent maxima...), each scaled by a learned factor.
// Each processor learns its own factors from its own labels:
//
//   - the capacity processor (second host, read at its output layer) from
//     "k+1 replicas of this workload fit": output k is
//     sigmoid(alpha (g/(k+1) - 1)) with g = 1/peak the replicas that fit,
//     gated by memory (k+1 replicas' memory peak must fit, a hard limit);
//   - the admission processor (first host, read at its input layer) from
//     "admitting the queue up to slot k keeps the host within capacity":
//     the running replicas at their future peak plus the new replicas at
//     their demand, with memory a hard gate.
//
// The networks compute these estimates exactly (min and max are exact in
// ReLU layers), so the activated branches are the evidence for each
// admitted or safe replica; see network.go.
package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
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
	// Statistics names the window statistics the estimate reads (see
	// Statistics); nil is the default set.
	Statistics []string
}

// DefaultStatistics are the statistics of the embedded models.
var DefaultStatistics = []string{"mean", "p95", "p99", "max", "max_last5", "max_last20"}

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
	if s.Statistics == nil {
		s.Statistics = DefaultStatistics
	}
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

// dataset holds examples. fit and use are the statistics in their two
// forms (rows x width); peak is the per-replica peak share over the
// horizon; for the admission processor every row also has a queue: running
// replicas of the workload and new ones that each demand demand (a share
// of the host).
type dataset struct {
	fit, use []float64
	peak     []float64
	running  []int
	demand   []float64
	rows     int
	width    int
}

// capacityLabel is slot k's capacity label for row r: k+1 replicas fit.
func (d *dataset) capacityLabel(r, k int) float64 {
	if float64(k+1)*d.peak[r] <= 1 {
		return 1
	}
	return 0
}

// admissionCost is the host's CPU with the queue up to slot k admitted,
// when a running replica peaks at p.
func (d *dataset) admissionCost(r, k int, p float64) float64 {
	n := d.running[r]
	if k < n {
		return float64(k+1) * p
	}
	return float64(n)*p + float64(k-n+1)*d.demand[r]
}

// admissionLabel is slot k's admission label for row r.
func (d *dataset) admissionLabel(r, k int) float64 {
	if d.admissionCost(r, k, d.peak[r]) <= 1 {
		return 1
	}
	return 0
}

func (d *dataset) fitRow(r int) []float64 { return d.fit[r*d.width : (r+1)*d.width] }
func (d *dataset) useRow(r int) []float64 { return d.use[r*d.width : (r+1)*d.width] }

// Train trains both processors on the training split of series.
func Train(all []traces.Series, s Settings, progress func(Progress)) (*Result, error) {
	s = s.withDefaults()
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("train settings: %w", err)
	}
	stats, err := statisticsByName(s.Statistics)
	if err != nil {
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
	trainData, err := examples(trainSet, s, stats, rng, true)
	if err != nil {
		return nil, err
	}
	valData, err := examples(trainSet, s, stats, rng, false)
	if err != nil {
		return nil, err
	}
	if trainData.rows < s.BatchSize {
		return nil, fmt.Errorf("train: only %d examples, fewer than a batch of %d: series too short for window %d", trainData.rows, s.BatchSize, s.Window)
	}
	res.Examples, res.ValExamples = trainData.rows, valData.rows

	capE := newEstimate(len(stats), initTheta(trainData))
	capLoss, err := fit(capE, trainData, s, rng, capacityLoss, "capacity", progress)
	if err != nil {
		return nil, err
	}
	admE := newEstimate(len(stats), initTheta(trainData))
	admLoss, err := fit(admE, trainData, s, rng, admissionLoss, "admission", progress)
	if err != nil {
		return nil, err
	}
	metrics := func(e *estimate, lossFn lossFunc, trainLoss float64) map[string]string {
		val := math.NaN()
		if valData.rows > 0 {
			val = meanLoss(e, valData, s, lossFn)
		}
		return map[string]string{
			"train_examples":  strconv.Itoa(trainData.rows),
			"val_examples":    strconv.Itoa(valData.rows),
			"train_bce":       strconv.FormatFloat(trainLoss, 'f', 5, 64),
			"val_bce":         strconv.FormatFloat(val, 'f', 5, 64),
			"alpha":           strconv.FormatFloat(e.alpha(), 'g', 6, 64),
			"feature_scales":  e.scales(stats),
			"held_out_series": fmt.Sprint(res.HeldOut),
		}
	}
	prov := func(method string, m map[string]string) engine.Provenance {
		return engine.Provenance{
			Method:    method,
			Generator: "go generate ./engine (activation train)",
			Data:      append([]string{"real CPU usage series, training split by series:"}, res.TrainSeries...),
			Settings:  settingsMap(s),
			Metrics:   m,
		}
	}
	res.Capacity = exportCapacity(capE, stats, s.Slots, prov(
		"trained: ordinal max-of-predictors network: g = min over the fit statistics of a learned factor x the statistic (exact ReLU min tree), output k = sigmoid(alpha (g/(k+1) - 1)) gated by memory ((k+1) x the replica's memory peak must fit); Adam on binary cross-entropy, overload labels weighted, against replay labels (k+1 replicas fit when (k+1) x per-replica usage <= capacity over the next horizon)",
		metrics(capE, capacityLoss, capLoss)))
	res.Admission = exportAdmission(admE, stats, s.Slots, prov(
		"trained: queue admission network: a running replica costs p = max over the usage statistics of the statistic / a learned factor (exact ReLU max tree), a new replica its demand; slot k is admitted when the costs of slots 0..k fit the host's CPU (output sigmoid(alpha (1 - cost))) and their memory peaks fit its memory (a hard gate); Adam on binary cross-entropy against its own replay labels (the running replicas' future peak plus the new replicas' demand within capacity)",
		metrics(admE, admissionLoss, admLoss)))
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
		"statistics":    strings.Join(s.Statistics, " "),
		"normalisation": "each series scaled so its p99 is 1, then by a per-example p99 share drawn from [scale_min, scale_max]",
	}
}

// examples builds the data set from the training or validation part (by
// time) of each series.
func examples(set []traces.Series, s Settings, stats []Statistic, rng *rand.Rand, trainPart bool) (dataset, error) {
	d := dataset{width: len(stats)}
	names := make([]string, 0, 2*len(stats))
	for _, st := range stats {
		names = append(names, st.Fit)
	}
	for _, st := range stats {
		names = append(names, st.Usage)
	}
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
		reqShare := stats1(v[:len(v)/2]) // careful operator: p99 of the first half
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
			fx, err := engine.FeatureVector(&obs, "training", names)
			if err != nil {
				return d, fmt.Errorf("train: series %s at %d: %w", ser.Name, t, err)
			}
			peak := 0.0
			for _, u := range v[t : t+s.Horizon] {
				peak = math.Max(peak, u*r)
			}
			d.fit = append(d.fit, fx[:len(stats)]...)
			d.use = append(d.use, fx[len(stats):]...)
			d.peak = append(d.peak, peak)
			// The admission queue: some replicas of the workload running
			// (from one to half again as many as fit at the window's
			// mean), the rest new, each demanding the replica's request.
			mean := math.Max(fx[len(stats)], 1e-3)
			maxRun := max(1, min(s.Slots, int(math.Ceil(1.5/mean))))
			d.running = append(d.running, 1+rng.IntN(maxRun))
			d.demand = append(d.demand, math.Max(reqShare*r, 1e-6))
			d.rows++
		}
	}
	return d, nil
}

func stats1(v []float64) float64 { return traces.Quantile(v, 0.99) }

// initTheta starts every statistic equally likely to be the binding one:
// each is scaled to the mean of the first statistic (fit space).
func initTheta(d dataset) []float64 {
	means := make([]float64, d.width)
	for r := 0; r < d.rows; r++ {
		for f, x := range d.fitRow(r) {
			means[f] += x / float64(d.rows)
		}
	}
	theta := make([]float64, d.width)
	ref := means[0]
	for f := range theta {
		if means[f] > 0 && ref > 0 {
			theta[f] = math.Log(ref / means[f])
		}
	}
	return theta
}

// lossFunc adds one row's loss (weighted binary cross-entropy summed over
// the slots) and, when grad is not nil, its gradient (theta..., logAlpha).
type lossFunc func(e *estimate, d *dataset, r int, s Settings, grad []float64) float64

// capacityLoss: output k = sigmoid(alpha (g/(k+1) - 1)) against "k+1 fit".
func capacityLoss(e *estimate, d *dataset, r int, s Settings, grad []float64) float64 {
	alpha := e.alpha()
	g, arg := e.fitCount(d.fitRow(r))
	var loss, dg, dAlpha float64
	for k := 0; k < s.Slots; k++ {
		q := g / float64(k+1)
		p := sigmoid(alpha * (q - 1))
		y := d.capacityLabel(r, k)
		c := 1.0
		if y == 0 {
			c = s.OverloadWeight
		}
		loss += c * bce(p, y)
		dz := c * (p - y)
		dg += dz * alpha / float64(k+1)
		dAlpha += dz * (q - 1)
	}
	if grad != nil {
		grad[arg] += dg * g // dg/dtheta = g for the binding statistic
		grad[len(grad)-1] += dAlpha * alpha
	}
	return loss
}

// admissionLoss: slot k = sigmoid(alpha (1 - C_k)) against "the queue up
// to k fits".
func admissionLoss(e *estimate, d *dataset, r int, s Settings, grad []float64) float64 {
	alpha := e.alpha()
	p, arg := e.peak(d.useRow(r))
	n := d.running[r]
	var loss, dp, dAlpha float64
	for k := 0; k < s.Slots; k++ {
		cost := d.admissionCost(r, k, p)
		q := sigmoid(alpha * (1 - cost))
		y := d.admissionLabel(r, k)
		c := 1.0
		if y == 0 {
			c = s.OverloadWeight
		}
		loss += c * bce(q, y)
		dz := c * (q - y)
		dp += dz * -alpha * float64(min(k+1, n))
		dAlpha += dz * (1 - cost)
	}
	if grad != nil {
		grad[arg] += dp * -p // dp/dtheta = -p for the binding statistic
		grad[len(grad)-1] += dAlpha * alpha
	}
	return loss
}

func meanLoss(e *estimate, d dataset, s Settings, lossFn lossFunc) float64 {
	var sum float64
	for r := 0; r < d.rows; r++ {
		sum += lossFn(e, &d, r, s, nil)
	}
	return sum / float64(d.rows*s.Slots)
}

// fit trains e with Adam on shuffled mini-batches and a cosine learning
// rate, and returns the last epoch's mean training loss.
func fit(e *estimate, d dataset, s Settings, rng *rand.Rand, lossFn lossFunc, name string, progress func(Progress)) (float64, error) {
	perm := make([]int, d.rows)
	for i := range perm {
		perm[i] = i
	}
	grad := make([]float64, d.width+1)
	params := e.params()
	start := time.Now()
	var last float64
	for epoch := 1; epoch <= s.Epochs; epoch++ {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		lr := s.LearningRate * (0.5 + 0.5*math.Cos(math.Pi*float64(epoch-1)/float64(s.Epochs)))
		var sum float64
		batches := 0
		for b := 0; b+s.BatchSize <= d.rows; b += s.BatchSize {
			clear(grad)
			var bl float64
			for _, r := range perm[b : b+s.BatchSize] {
				bl += lossFn(e, &d, r, s, grad)
			}
			norm := 1 / float64(s.BatchSize*s.Slots)
			for i := range grad {
				grad[i] *= norm
			}
			for f := range e.theta {
				grad[f] += s.L2 * e.theta[f]
			}
			e.step(params, grad, lr)
			for f := range e.theta {
				e.theta[f] = math.Max(math.Min(e.theta[f], math.Log(maxScale)), -math.Log(maxScale))
			}
			sum += bl * norm
			batches++
		}
		last = sum / float64(batches)
		if math.IsNaN(last) || math.IsInf(last, 0) {
			return 0, fmt.Errorf("train %s: loss diverged at epoch %d", name, epoch)
		}
		if progress != nil {
			el := time.Since(start)
			progress(Progress{Model: name, Epoch: epoch, Epochs: s.Epochs, Loss: last, Elapsed: el,
				Remaining: time.Duration(float64(el) / float64(epoch) * float64(s.Epochs-epoch))})
		}
	}
	return last, nil
}
