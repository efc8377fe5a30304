// Package train makes the two default processors from real usage series.
//
// Labels come from what actually fitted: at each decision point of a replay
// (every Step samples, reading the last Window samples), replica count k+1
// "fits" when k+1 replicas following the series would not have overloaded the
// host (total usage <= capacity) at any sample of the next Horizon samples.
// Requested resources never enter the labels.
//
// The capacity processor (second host, read at its output layer) is a dense
// network from usage features to ordinal outputs: output k holds data when the
// host can safely run k+1 replicas. The admission processor (first host, read
// at its input layer) has one demand slot per replica that wants to run; slot
// k feeds its own block of hidden nodes, which feeds output k ("admit replica
// k"), and the usage context feeds every hidden node. Training keeps hidden
// and output biases <= 0 and the slot edges positive, so that an output holds
// data only through a live edge from an input that holds data: the activated
// branches are exactly the evidence for each admitted or safe replica.
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

// Settings control training. Start from DefaultSettings and change what you
// need; zero sizes and rates take the defaults, seeds are taken as they are.
type Settings struct {
	Seed          uint64
	Window        int     // samples read at each decision
	Horizon       int     // samples a decision must hold for
	Step          int     // samples between decisions
	Slots         int     // countable slots: admission inputs, capacity outputs
	Hidden        int     // hidden nodes of the capacity processor
	HiddenPerSlot int     // hidden nodes per slot of the admission processor
	Epochs        int     //
	BatchSize     int     //
	LearningRate  float64 //
	L2            float64 // weight decay
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

// DefaultSettings are the settings of the embedded default models.
func DefaultSettings() Settings {
	return Settings{
		Seed: 1, Window: 120, Horizon: 5, Step: 5, Slots: 48, Hidden: 32, HiddenPerSlot: 4,
		Epochs: 20, BatchSize: 256, LearningRate: 5e-3, L2: 1e-5,
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
	setI(&s.Hidden, d.Hidden)
	setI(&s.HiddenPerSlot, d.HiddenPerSlot)
	setI(&s.Epochs, d.Epochs)
	setI(&s.BatchSize, d.BatchSize)
	setF(&s.LearningRate, d.LearningRate)
	setF(&s.L2, d.L2)
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
	case !(s.ScaleMin > 0 && s.ScaleMax >= s.ScaleMin && s.ScaleMax < 1):
		return fmt.Errorf("scale: [%v, %v] must satisfy 0 < min <= max < 1", s.ScaleMin, s.ScaleMax)
	case !(s.TrainFraction > 0 && s.TrainFraction < 1):
		return fmt.Errorf("train fraction: %v, need (0, 1)", s.TrainFraction)
	}
	return nil
}

// ContextFeatures are the usage features both processors read.
var ContextFeatures = []string{
	engine.FeatCPUFitMean, engine.FeatCPUFitP95, engine.FeatCPUFitP99, engine.FeatCPUFitMax,
	engine.FeatCPUFitMaxLast5, engine.FeatCPUFitMaxLast20,
	engine.FeatCPUReplicaStd, engine.FeatCPUReplicaTrend, engine.FeatCPUReplicaMax, engine.FeatCPUReplicaMaxLast5,
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

// dataset is a design matrix of examples.
type dataset struct {
	x     []float64 // rows x width
	y     []float64 // rows x slots
	rows  int
	width int
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
	ctxTrain, slotTrain, err := examples(trainSet, s, rng, true)
	if err != nil {
		return nil, err
	}
	ctxVal, slotVal, err := examples(trainSet, s, rng, false)
	if err != nil {
		return nil, err
	}
	if ctxTrain.rows < s.BatchSize {
		return nil, fmt.Errorf("train: only %d examples, fewer than a batch of %d: series too short for window %d", ctxTrain.rows, s.BatchSize, s.Window)
	}
	res.Examples, res.ValExamples = ctxTrain.rows, ctxVal.rows

	capNet, capScale := capacityNet(ctxTrain, s, rng)
	capLoss, err := fit(capNet, ctxTrain, capScale, s, rng, engine.BuiltinCapacity, progress)
	if err != nil {
		return nil, err
	}
	admNet, admScale := admissionNet(slotTrain, s, rng)
	admLoss, err := fit(admNet, slotTrain, admScale, s, rng, engine.BuiltinAdmission, progress)
	if err != nil {
		return nil, err
	}
	capVal := capNet.predictLoss(scaled(ctxVal, capScale), ctxVal.y, ctxVal.rows, ctxVal.width)
	admVal := admNet.predictLoss(scaled(slotVal, admScale), slotVal.y, slotVal.rows, slotVal.width)

	prov := func(kind string, trainLoss, valLoss float64) engine.Provenance {
		return engine.Provenance{
			Method:    "trained: " + kind + " network, Adam on binary cross-entropy against replay labels (k+1 replicas fit when (k+1) x per-replica usage <= capacity over the next horizon); hidden and output biases kept <= 0",
			Generator: "go generate ./engine (activation train)",
			Data:      append([]string{"crane real CPU usage series (Apache-2.0), training split by series:"}, res.TrainSeries...),
			Settings:  settingsMap(s),
			Metrics: map[string]string{
				"train_examples":  strconv.Itoa(ctxTrain.rows),
				"val_examples":    strconv.Itoa(ctxVal.rows),
				"train_bce":       strconv.FormatFloat(trainLoss, 'f', 5, 64),
				"val_bce":         strconv.FormatFloat(valLoss, 'f', 5, 64),
				"held_out_series": fmt.Sprint(res.HeldOut),
			},
		}
	}
	res.Capacity = export(capNet, capScale, contextNodes(), slotNodes("safe_", s.Slots, true), engine.BuiltinCapacity,
		"Second-host capacity processor: reads the host's real usage and holds data at output safe_k when the host can safely run k+1 replicas. A_out is the safe replica count.",
		prov("dense ReLU", capLoss, capVal))
	res.Admission = export(admNet, admScale, append(slotNodes(engine.SlotPrefix, s.Slots, true), contextNodes()...), slotNodes("admit_", s.Slots, false), engine.BuiltinAdmission,
		"First-host admission processor: slot_k holds the expected demand of the k-th replica that wants to run; the slot starts an activated branch when the processor admits that replica given the host's real usage. A_in is the number of admitted replicas.",
		prov("slot-structured sparse ReLU", admLoss, admVal))
	for _, m := range []*engine.Model{res.Capacity, res.Admission} {
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("train: exported model %s is invalid: %w", m.Name, err)
		}
	}
	return res, nil
}

func settingsMap(s Settings) map[string]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return map[string]string{
		"seed": strconv.FormatUint(s.Seed, 10), "window": strconv.Itoa(s.Window), "horizon": strconv.Itoa(s.Horizon),
		"step": strconv.Itoa(s.Step), "slots": strconv.Itoa(s.Slots), "hidden": strconv.Itoa(s.Hidden),
		"hidden_per_slot": strconv.Itoa(s.HiddenPerSlot), "epochs": strconv.Itoa(s.Epochs),
		"batch_size": strconv.Itoa(s.BatchSize), "learning_rate": f(s.LearningRate), "l2": f(s.L2),
		"scale_min": f(s.ScaleMin), "scale_max": f(s.ScaleMax), "train_fraction": f(s.TrainFraction),
		"held_out_share": f(s.HeldOutShare), "split_seed": strconv.FormatUint(s.SplitSeed, 10),
		"normalisation": "each series scaled so its p99 is 1, then by a per-example p99 share drawn from [scale_min, scale_max]",
	}
}

func contextNodes() []engine.Node {
	out := make([]engine.Node, len(ContextFeatures))
	for i, n := range ContextFeatures {
		out[i] = engine.Node{Name: n}
	}
	return out
}

func slotNodes(prefix string, n int, countable bool) []engine.Node {
	out := make([]engine.Node, n)
	for i := range out {
		out[i] = engine.Node{Name: prefix + strconv.Itoa(i), Countable: countable}
	}
	return out
}

// examples builds the capacity (context features) and admission (slots +
// context) data sets from the training or validation part of each series.
func examples(set []traces.Series, s Settings, rng *rand.Rand, trainPart bool) (ctx, slot dataset, err error) {
	nc := len(ContextFeatures)
	ctx.width, slot.width = nc, s.Slots+nc
	const capMHz = 1000.0
	for _, ser := range set {
		norm, err := traces.Normalize(ser, 1)
		if err != nil {
			return ctx, slot, fmt.Errorf("train: %w", err)
		}
		v := norm.Values
		cut := int(float64(len(v)) * s.TrainFraction)
		lo, hi := s.Window, cut-s.Horizon
		if !trainPart {
			lo, hi = cut+s.Window, len(v)-s.Horizon
		}
		reqShare := traces.Quantile(v[:len(v)/2], 0.99) // careful operator: p99 of the first half
		samples := make([]engine.Sample, s.Window)
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
				return ctx, slot, fmt.Errorf("train: series %s at %d: %w", ser.Name, t, err)
			}
			peak := 0.0
			for _, u := range v[t : t+s.Horizon] {
				peak = math.Max(peak, u*r)
			}
			demand := obs.ReplicaCPUDemandMHz / capMHz
			ctx.x = append(ctx.x, fx...)
			for k := 0; k < s.Slots; k++ {
				slot.x = append(slot.x, demand)
			}
			slot.x = append(slot.x, fx...)
			for k := 0; k < s.Slots; k++ {
				y := 0.0
				if float64(k+1)*peak <= 1 {
					y = 1
				}
				ctx.y = append(ctx.y, y)
				slot.y = append(slot.y, y)
			}
			ctx.rows++
			slot.rows++
		}
	}
	return ctx, slot, nil
}

// inputScale returns 1/rms of each column, so that the network trains on
// inputs of unit size; export folds it into the first layer's weights.
// Scaling without centring keeps an input's sign, and so which edges carry
// data.
func inputScale(d dataset) []float64 {
	sc := make([]float64, d.width)
	for c := 0; c < d.width; c++ {
		var ss float64
		for r := 0; r < d.rows; r++ {
			x := d.x[r*d.width+c]
			ss += x * x
		}
		rms := math.Sqrt(ss / float64(d.rows))
		if rms > 0 {
			sc[c] = 1 / rms
		} else {
			sc[c] = 1
		}
	}
	return sc
}

func scaled(d dataset, sc []float64) []float64 {
	out := make([]float64, len(d.x))
	for i, x := range d.x {
		out[i] = x * sc[i%d.width]
	}
	return out
}

func ones(n int) []float64 {
	m := make([]float64, n)
	for i := range m {
		m[i] = 1
	}
	return m
}

func capacityNet(d dataset, s Settings, rng *rand.Rand) (*net, []float64) {
	h := newLayer(d.width, s.Hidden, ones(d.width*s.Hidden), rng, false)
	o := newLayer(s.Hidden, s.Slots, ones(s.Hidden*s.Slots), rng, true)
	// Outputs for larger counts start less likely.
	for k := range o.b {
		o.b[k] = -0.1 * float64(k)
	}
	h.project()
	o.project()
	return &net{layers: []*layer{h, o}}, inputScale(d)
}

func admissionNet(d dataset, s Settings, rng *rand.Rand) (*net, []float64) {
	hid := s.Slots * s.HiddenPerSlot
	m1 := make([]float64, d.width*hid)
	for j := 0; j < hid; j++ {
		slot := j / s.HiddenPerSlot
		m1[j*d.width+slot] = 1 // slot k feeds its own block only
		for c := s.Slots; c < d.width; c++ {
			m1[j*d.width+c] = 1 // the usage context feeds every hidden node
		}
	}
	m2 := make([]float64, hid*s.Slots)
	for k := 0; k < s.Slots; k++ {
		for b := 0; b < s.HiddenPerSlot; b++ {
			m2[k*hid+k*s.HiddenPerSlot+b] = 1 // block k feeds output k only
		}
	}
	h := newLayer(d.width, hid, m1, rng, false)
	for j := 0; j < hid; j++ {
		i := j*d.width + j/s.HiddenPerSlot
		h.wMin[i] = 0.05 // a slot edge always carries the slot's data
		h.w[i] = math.Abs(h.w[i]) + 0.05
	}
	o := newLayer(hid, s.Slots, m2, rng, true)
	for k := range o.b {
		o.b[k] = -0.1 * float64(k)
	}
	h.project()
	o.project()
	return &net{layers: []*layer{h, o}}, inputScale(d)
}

// fit trains n on d with Adam, shuffling each epoch, and returns the last
// epoch's mean training loss.
func fit(n *net, d dataset, sc []float64, s Settings, rng *rand.Rand, name string, progress func(Progress)) (float64, error) {
	x := scaled(d, sc)
	outW := n.layers[len(n.layers)-1].out
	perm := make([]int, d.rows)
	for i := range perm {
		perm[i] = i
	}
	bx := make([]float64, s.BatchSize*d.width)
	by := make([]float64, s.BatchSize*outW)
	start := time.Now()
	t := 0
	var last float64
	for epoch := 1; epoch <= s.Epochs; epoch++ {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		lr := s.LearningRate * (0.5 + 0.5*math.Cos(math.Pi*float64(epoch-1)/float64(s.Epochs)))
		var sum float64
		batches := 0
		for b := 0; b+s.BatchSize <= d.rows; b += s.BatchSize {
			for r := 0; r < s.BatchSize; r++ {
				src := perm[b+r]
				copy(bx[r*d.width:(r+1)*d.width], x[src*d.width:(src+1)*d.width])
				copy(by[r*outW:(r+1)*outW], d.y[src*outW:(src+1)*outW])
			}
			sum += n.step(bx, by, s.BatchSize)
			t++
			for _, l := range n.layers {
				l.adam(lr, t, s.BatchSize, s.L2)
			}
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

// export turns a trained net into an engine model, folding the input scale
// into the first layer so that the model reads raw features.
func export(n *net, sc []float64, inputs, outputs []engine.Node, name, desc string, prov engine.Provenance) *engine.Model {
	m := &engine.Model{
		Format: engine.ModelFormat, Version: engine.ModelVersion, Name: name, Description: desc,
		Inputs: inputs, Outputs: outputs, Provenance: prov,
	}
	eps, thr := engine.DefaultInputEpsilon, engine.DefaultOutputThreshold
	m.InputEpsilon, m.OutputThreshold = &eps, &thr
	for li, l := range n.layers {
		act := engine.ActivationReLU
		if l.sigmoid {
			act = engine.ActivationSigmoid
		}
		layer := engine.Layer{Activation: act, Biases: round(l.b)}
		for j := 0; j < l.out; j++ {
			row := make([]float64, l.in)
			for i := 0; i < l.in; i++ {
				w := l.w[j*l.in+i]
				if li == 0 {
					w *= sc[i]
				}
				row[i] = w
			}
			layer.Weights = append(layer.Weights, round(row))
		}
		m.Layers = append(m.Layers, layer)
	}
	return m
}

// round keeps 9 significant digits, so model files stay readable and
// diff-friendly; signs (and so which edges carry data) are kept.
func round(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		if x == 0 {
			continue
		}
		r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 9, 64), 64)
		out[i] = r
	}
	return out
}
