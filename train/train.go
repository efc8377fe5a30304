// Package train makes the two default processors from real usage series.
//
// Labels come from what actually fitted: at each decision point of a replay
// (every Step samples, reading the last Window samples), replica count k+1
// "fits" when k+1 replicas following the series would not have overloaded the
// host (total usage <= capacity) at any sample of the next Horizon samples.
// Requested resources never enter the labels.
//
// Both processors are built on one form of learned estimate, a trunk that
// reads window statistics of a replica's usage (mean, recent mean, mean +
// 2 std, p95, max, recent maxima...) and gives a level a and a dispersion
// b, so that m replicas are predicted to use m a + sqrt(m) b of the host:
// m x the peak for replicas that move together, less when they multiplex.
// The trunk is a learned bias-free ReLU network (the default); a learned
// monotone min-max network, whose estimate no rise in usage can lower
// (TrunkMonotone); or, as the hand-wired ablation, a max-of-predictors:
// the largest statistic scaled by a learned factor, Bashir et al., EuroSys
// 2021. Each processor learns its own trunk
// from its own labels, taken from a replay of phase-shifted replicas:
//
//   - the capacity processor (second host, read at its output layer) from
//     "k+1 replicas of this workload fit": output k is
//     sigmoid(alpha (1 - (k+1) a - sqrt(k+1) b)), gated by memory (k+1
//     replicas' memory peak must fit, a hard limit);
//   - the admission processor (first host, read at its input layer) from
//     "admitting the queue up to slot k keeps the host within capacity":
//     the running replicas at their real usage plus the new replicas at
//     their demand, with memory a hard gate.
//
// Training stops early on a validation split by identity. The networks
// compute these estimates exactly in ReLU layers, so the activated branches
// are the evidence for each admitted or safe replica; see network.go.
package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// Progress is reported after every epoch.
type Progress struct {
	Model     string
	Epoch     int
	Epochs    int
	Loss      float64
	ValLoss   float64
	Elapsed   time.Duration
	Remaining time.Duration
}

// NoValidationNote is a model's "early_stopping" metric when no series was
// left to validate: its "stop_train_bce" replaces "val_bce" (with the
// quantile loss, "stop_train_pinball" replaces "val_pinball"); a mean of
// starts (Settings.Average) has no stopping loss of its own, and gives each
// start's as "average_train_pinball".
const NoValidationNote = "on the training loss: no series left to validate"

// Result holds the two trained models and what training measured.
type Result struct {
	Admission *engine.Model
	Capacity  *engine.Model
	// Families says, per family, which series trained, validated and were
	// held out (by identity).
	Families []FamilySplit
	// TrainSeries and HeldOut name the series on each side of the split,
	// over every family.
	TrainSeries, HeldOut  []string
	Examples, ValExamples int
	// Skipped are the training and validation series left out.
	Skipped []Skipped
	// Heads gives, for the capacity and the admission processor in that
	// order, on how many examples the trunk's level and dispersion heads
	// are open (see HeadUse).
	Heads []HeadUse
	// Calibration is what Settings.Calibrate chose (nil without it).
	Calibration *Calibration
}

// HeadUse is how often a trained trunk's two heads, the level a and the
// dispersion b (ReLU units), are open (> 0) on a set of examples: the
// validation examples, or the training ones when none validate. A head
// closed on the examples drops its term from the processor's cost of m
// replicas, m a + sqrt(m) b: closed everywhere, the cost is m a alone (b
// closed: no term that multiplexes) or sqrt(m) b alone (a closed). A head
// closed on every training example gets no gradient through its own
// output, so training seldom opens it again (its input can still move
// through the hidden layers the two heads share).
type HeadUse struct {
	// Processor is "capacity" or "admission"; On "validation" or
	// "training", the examples counted; Examples their number.
	Processor, On string
	Examples      int
	// LevelOpen and DispersionOpen count the examples with a > 0 and
	// b > 0. HasDispersion is false for a trunk without a dispersion head
	// (the max-of-predictors, TrunkMax): DispersionOpen is then 0 by
	// design.
	LevelOpen, DispersionOpen int
	HasDispersion             bool
}

// Closed names the heads closed on every example ("level", "dispersion"),
// or none.
func (h HeadUse) Closed() []string {
	if h.Examples == 0 {
		return nil
	}
	var out []string
	if h.LevelOpen == 0 {
		out = append(out, "level")
	}
	if h.HasDispersion && h.DispersionOpen == 0 {
		out = append(out, "dispersion")
	}
	return out
}

// headUse counts p's open heads on d's examples.
func headUse(name, on string, p *processor, d *dataset) HeadUse {
	_, isMax := p.tr.(*maxTrunk)
	hasB := !isMax
	h := HeadUse{Processor: name, On: on, Examples: d.rows, HasDispersion: hasB}
	var c trunkCache
	for r := 0; r < d.rows; r++ {
		a, b := p.tr.eval(d.useRow(r), &c)
		if a > 0 {
			h.LevelOpen++
		}
		if b > 0 {
			h.DispersionOpen++
		}
	}
	return h
}

// Skipped is a series of the training or validation side that no
// example could come from (too short for the window and horizon, or no
// usage at all), left out of the training.
type Skipped struct {
	Family, Series, Reason string
}

// FamilySplit is one family's side of the split.
type FamilySplit struct {
	Name                     string
	Train, Validate, HeldOut []string
	// LeftOut are the series of the training and validation sides no
	// example could come from (in neither Train nor Validate).
	LeftOut []string
	// Examples and ValExamples are the family's training and validation
	// examples; Repeats and ValRepeats how many times they are in the
	// training and the validation set (1 but with
	// Settings.BalanceFamilies).
	Examples, ValExamples, Repeats, ValRepeats int
}

// familyRepeats is how many times each family's examples go into the set:
// once each, or with balance the number of times that brings the family
// nearest the largest family's count (at least once; a family with no
// examples once).
func familyRepeats(ds []dataset, balance bool) []int {
	out := make([]int, len(ds))
	most := 0
	for _, d := range ds {
		most = max(most, d.rows)
	}
	for i, d := range ds {
		out[i] = 1
		if balance && d.rows > 0 {
			out[i] = max(1, int(math.Round(float64(most)/float64(d.rows))))
		}
	}
	return out
}

// Train trains both processors on one family of series.
func Train(all []traces.Series, s Settings, progress func(Progress)) (*Result, error) {
	return TrainFamilies([]Family{{Name: "series", Series: all}}, s, progress)
}

// TrainFamilies trains one pair of processors on the training split of
// every family (split by identity), stopping early on the validation split.
// The families are taken in name order, so the order of fams does not
// change the models; two families of one name are refused.
func TrainFamilies(fams []Family, s Settings, progress func(Progress)) (*Result, error) {
	s = s.withDefaults()
	if err := s.Check(); err != nil {
		return nil, err
	}
	stats, err := statisticsByName(s.Statistics)
	if err != nil {
		return nil, fmt.Errorf("train settings: %w", err)
	}
	// The families in name order: examples are drawn from one random
	// stream, family after family, so the order they come in would
	// otherwise change the models (train --traces b,a against a,b).
	fams = slices.Clone(fams)
	slices.SortStableFunc(fams, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(fams); i++ {
		if fams[i].Name == fams[i-1].Name {
			return nil, fmt.Errorf("train: family %q given twice: each family is trained and held out on its own, by name", fams[i].Name)
		}
	}
	res := &Result{}
	rng := rand.New(rand.NewPCG(s.Seed, 0x61637469766174))
	var trainData, valData dataset
	trainData.width, trainData.slots = len(stats), s.Slots
	valData.width, valData.slots = len(stats), s.Slots
	var families []string
	var sides []calibrationSide
	var famTrain, famVal []dataset
	for fi := range fams {
		f := &fams[fi]
		if f.IDs != nil && len(f.IDs) != len(f.Series) {
			return nil, fmt.Errorf("train: family %s: %d identities for %d series", f.Name, len(f.IDs), len(f.Series))
		}
		// A series no example can come from is left out. The held-out
		// side is split over every series, as simulate --split test
		// splits the same files, so that no series it holds out is
		// trained on; the validation side over the usable rest alone, so
		// that series left out take no place there (five short files on
		// the validation side left none to validate once dropped).
		fs := FamilySplit{Name: f.Name}
		ok := make([]bool, len(f.Series))
		for i, ser := range f.Series {
			_, why := usable(ser, s)
			if ok[i] = why == ""; !ok[i] {
				res.Skipped = append(res.Skipped, Skipped{Family: f.Name, Series: ser.Name, Reason: why})
				fs.LeftOut = append(fs.LeftOut, ser.Name)
			}
		}
		tr, va, te := f.split(s, ok)
		pick := func(idx []int, names *[]string) []traces.Series {
			out := make([]traces.Series, len(idx))
			for i, j := range idx {
				out[i] = f.Series[j]
				*names = append(*names, f.Series[j].Name)
			}
			return out
		}
		trSeries, vaSeries := pick(tr, &fs.Train), pick(va, &fs.Validate)
		pick(te, &fs.HeldOut)
		d, err := examples(trSeries, s, stats, rng)
		if err != nil {
			return nil, err
		}
		famTrain = append(famTrain, d)
		side := calibrationSide{family: f.Name, validate: vaSeries, trainedOn: trSeries}
		if s.CalibrateOnTrained {
			side.validate = append(append([]traces.Series(nil), vaSeries...), trSeries...)
		}
		sides = append(sides, side)
		v, err := examples(vaSeries, s, stats, rng)
		if err != nil {
			return nil, err
		}
		famVal = append(famVal, v)
		fs.Examples, fs.ValExamples = d.rows, v.rows
		res.Families = append(res.Families, fs)
		res.TrainSeries = append(res.TrainSeries, fs.Train...)
		res.HeldOut = append(res.HeldOut, fs.HeldOut...)
		families = append(families, f.Name)
	}
	for i, rep := range familyRepeats(famTrain, s.BalanceFamilies) {
		for range rep {
			trainData.append(&famTrain[i])
		}
		res.Families[i].Repeats = rep
	}
	for i, rep := range familyRepeats(famVal, s.BalanceFamilies) {
		for range rep {
			valData.append(&famVal[i])
		}
		res.Families[i].ValRepeats = rep
	}
	famTrain, famVal = nil, nil // copied: not held through training
	if len(res.TrainSeries) == 0 {
		var sides []string
		usableN := 0
		for _, f := range res.Families {
			usableN += len(f.Validate) + len(f.HeldOut)
			sides = append(sides, fmt.Sprintf("%s: %d held out, %d to validate", f.Name, len(f.HeldOut), len(f.Validate)))
		}
		if usableN == 0 {
			return nil, fmt.Errorf("train: no training series: every one was left out, no example can come from it (%s); give series with usage, longer than window %d + horizon %d", SkippedText(res.Skipped, 5), s.Window, s.Horizon)
		}
		leftOut := ""
		if len(res.Skipped) > 0 {
			leftOut = fmt.Sprintf("; %d more left out, no example can come from them: %s", len(res.Skipped), SkippedText(res.Skipped, 5))
		}
		return nil, fmt.Errorf("train: no training series: the split by identity (%.0f%% of each family's identities held out, %.0f%% of the rest to validate) left none to train on (%s%s); give more series", 100*s.HeldOutShare, 100*s.ValShare, strings.Join(sides, "; "), leftOut)
	}
	if trainData.rows < s.BatchSize {
		why := fmt.Sprintf("series too short for window %d and horizon %d", s.Window, s.Horizon)
		if s.MaxRowsPerSeries > 0 {
			why = fmt.Sprintf("at most %d examples per series (max rows) from %d training series, or %s", s.MaxRowsPerSeries, len(res.TrainSeries), why)
		}
		if len(res.Skipped) > 0 {
			why += fmt.Sprintf("; %d series left out: %s", len(res.Skipped), SkippedText(res.Skipped, 5))
		}
		return nil, fmt.Errorf("train: only %d examples, fewer than a batch of %d: %s", trainData.rows, s.BatchSize, why)
	}
	res.Examples, res.ValExamples = trainData.rows, valData.rows

	newTrunk := func(rng *rand.Rand) trunk { return s.newTrunk(stats, rng) }
	capP, capFit, err := fitRestarts(newTrunk, &trainData, &valData, s, rng, capacityLoss, "capacity", progress)
	if err != nil {
		return nil, err
	}
	admP, admFit, err := fitRestarts(newTrunk, &trainData, &valData, s, rng, admissionLoss, "admission", progress)
	if err != nil {
		return nil, err
	}
	if s.Quantile > 0 {
		// The quantile loss does not read alpha (its gradient is 0, so it
		// kept its start): a cost in units of the host takes a fixed
		// slope.
		capP.logAlpha, admP.logAlpha = math.Log(QuantileAlpha), math.Log(QuantileAlpha)
	}
	headsOn, headsData := "validation", &valData
	if valData.rows == 0 {
		headsOn, headsData = "training", &trainData
	}
	res.Heads = []HeadUse{headUse("capacity", headsOn, capP, headsData), headUse("admission", headsOn, admP, headsData)}
	// The losses are named for what they are: cross-entropy, or the
	// quantile (pinball) loss.
	loss := "bce"
	if s.Quantile > 0 {
		loss = "pinball"
	}
	metrics := func(p *processor, f fitResult) map[string]string {
		m := map[string]string{
			"train_examples":  strconv.Itoa(trainData.rows),
			"val_examples":    strconv.Itoa(valData.rows),
			"train_" + loss:   strconv.FormatFloat(f.trainLoss, 'f', 5, 64),
			"val_" + loss:     strconv.FormatFloat(f.valLoss, 'f', 5, 64),
			"best_epoch":      strconv.Itoa(f.bestEpoch),
			"epochs_run":      strconv.Itoa(f.epochs),
			"alpha":           strconv.FormatFloat(p.alpha(), 'g', 6, 64),
			"trunk":           p.tr.describe(stats),
			"held_out_series": strconv.Itoa(len(res.HeldOut)),
		}
		switch {
		case s.Average > 1:
			// The mean's losses above; each start's best epoch, epochs run
			// and validation loss here.
			m["average_val_"+loss] = f.restartLosses()
			m["best_epoch"], m["epochs_run"] = f.startEpochs()
		case s.Restarts > 1:
			m["restart_chosen"], m["restart_val_"+loss] = strconv.Itoa(f.restart+1), f.restartLosses()
		}
		if valData.rows == 0 {
			// No series left to validate: early stopping (and the choice
			// among restarts) read the training loss; no validation loss
			// is claimed.
			m["early_stopping"] = NoValidationNote
			if s.Average <= 1 {
				m["stop_train_"+loss] = m["val_"+loss]
			} // else the mean's loss is train_<loss>, each start's stopping loss average_train_<loss>
			delete(m, "val_"+loss)
			for _, k := range []string{"restart", "average"} {
				if r, ok := m[k+"_val_"+loss]; ok {
					m[k+"_train_"+loss] = r
					delete(m, k+"_val_"+loss)
				}
			}
		}
		return m
	}
	// The series each family fitted (trained and validated on), which
	// simulate --split test must not replay as held out.
	fitted := map[string][]string{}
	for _, f := range res.Families {
		if names := append(slices.Clone(f.Train), f.Validate...); len(names) > 0 {
			fitted[f.Name] = names
		}
	}
	prov := func(method string, m map[string]string) engine.Provenance {
		data := []string{"real CPU usage series, families " + strings.Join(families, ", ") + ", split by identity; trained on:"}
		for _, f := range res.Families {
			line := fmt.Sprintf("%s: %d series (%d validate, %d held out)", f.Name, len(f.Train), len(f.Validate), len(f.HeldOut))
			if len(f.LeftOut) > 0 {
				line = fmt.Sprintf("%s: %d series (%d validate, %d held out, %d left out: no example)", f.Name, len(f.Train), len(f.Validate), len(f.HeldOut), len(f.LeftOut))
			}
			data = append(data, line)
		}
		return engine.Provenance{
			Method:    method,
			Generator: "go generate ./engine (activation train)",
			Data:      data,
			Settings:  settingsMap(s),
			Metrics:   m,
			Series:    fitted,
		}
	}
	capFitText := "Adam on binary cross-entropy, overload labels weighted, early stopping on a validation split by identity, against replay labels (k+1 phase-shifted replicas fit when their summed usage stays within capacity over the next horizon)"
	admFitText := "Adam on binary cross-entropy against its own replay labels (the running replicas' summed future usage plus the new replicas' demand within capacity), early stopping on a validation split by identity"
	if s.Quantile > 0 {
		q := strconv.FormatFloat(s.Quantile, 'g', -1, 64)
		qb := s.quantileBand()
		band := fmt.Sprintf("[%g, %g]", qb[0], qb[1])
		capFitText = "Adam on the quantile (pinball) loss at " + strconv.FormatFloat(s.capacityQuantile(), 'g', -1, 64) + " of the log cost against the log of the replay's peak (k+1 phase-shifted replicas' summed usage over the next horizon), over the slots whose peak lies within " + band + " of capacity, alpha fixed at " + strconv.Itoa(QuantileAlpha) + ", early stopping on a validation split by identity"
		admFitText = "Adam on the quantile (pinball) loss at " + q + " of the log cost against the log of what the queue takes in its own replay (the running replicas' summed future usage plus the new replicas' demand), over the slots where that lies within " + band + " of capacity, alpha fixed at " + strconv.Itoa(QuantileAlpha) + ", early stopping on a validation split by identity"
	}
	bounded := peakBounded(stats, s.PeakGrowth)
	if bounded {
		bound := "; exported with the peak bound: the CPU cost of m replicas is at most m x " + strconv.FormatFloat(s.PeakGrowth, 'g', -1, 64) + " x the window's peak per replica"
		capFitText += bound + " (not in training)"
		admFitText += bound + " (the workload's running replicas, and a new one of it at no less than what it adds once running; not in training)"
	}
	capProv := prov(
		"trained: a trunk over the window statistics gives a replica's level a and dispersion b; output k = sigmoid(alpha (1 - (k+1) a - sqrt(k+1) b)) gated by memory ((k+1) x the replica's memory peak must fit); "+capFitText,
		metrics(capP, capFit))
	admProv := prov(
		"trained: queue admission network: running replicas cost j a + sqrt(j) b (a trunk over the window statistics), new replicas their demand; slot k is admitted when the costs of slots 0..k fit the host's CPU (output sigmoid(alpha (1 - cost))) and their memory peaks fit its memory (a hard gate); "+admFitText,
		metrics(admP, admFit))
	if bounded {
		for _, p := range []*engine.Provenance{&capProv, &admProv} {
			p.Settings["peak_growth"] = strconv.FormatFloat(s.PeakGrowth, 'g', -1, 64)
		}
	}
	res.Capacity = exportCapacity(capP, stats, s.Slots, s.PeakGrowth, capProv)
	res.Admission = exportAdmission(admP, stats, s.Slots, s.PeakGrowth, admProv)
	for _, sb := range []struct {
		md   *engine.Model
		beta float64
	}{{res.Capacity, s.SlotBias}, {res.Admission, s.AdmissionSlotBias}} {
		if sb.beta != 0 {
			loosenSlots(sb.md, sb.beta)
			sb.md.Provenance.Method += "; then output k's bias (the slot of k+1 replicas) plus " + strconv.FormatFloat(sb.beta, 'g', -1, 64) + " ln(k+1) logits (the losses above are the outputs' before it)"
		}
	}
	if s.Calibrate {
		cal, err := calibrate(context.Background(), sides, res.Admission, res.Capacity)
		if err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		shiftOutputs(res.Capacity, cal.Shift)
		if cal.Note == "" {
			res.Capacity.Provenance.Method += "; then calibrated: every output's bias lowered by " + strconv.FormatFloat(cal.Shift, 'g', -1, 64) + " logits, the shift that let one output threshold serve both processors best on the validation series (the calibration metric; the losses above are the unshifted outputs')"
		}
		for k, v := range cal.metrics() {
			res.Capacity.Provenance.Metrics[k] = v
		}
		res.Calibration = &cal
	}
	for _, mod := range []*engine.Model{res.Capacity, res.Admission} {
		if err := mod.Validate(); err != nil {
			return nil, fmt.Errorf("train: exported model %s is invalid: %w", mod.Name, err)
		}
	}
	return res, nil
}

func settingsMap(s Settings) map[string]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	hidden := make([]string, len(s.Hidden))
	for i, h := range s.Hidden {
		hidden[i] = strconv.Itoa(h)
	}
	m := map[string]string{
		"seed": strconv.FormatUint(s.Seed, 10), "window": strconv.Itoa(s.Window), "horizon": strconv.Itoa(s.Horizon),
		"step": strconv.Itoa(s.Step), "slots": strconv.Itoa(s.Slots),
		"epochs": strconv.Itoa(s.Epochs), "patience": strconv.Itoa(s.Patience), "batch_size": strconv.Itoa(s.BatchSize),
		"learning_rate": f(s.LearningRate), "l2": f(s.L2), "overload_weight": f(s.OverloadWeight),
		"scale_min": f(s.ScaleMin), "scale_max": f(s.ScaleMax), "validation_share": f(s.ValShare),
		"held_out_share": f(s.HeldOutShare), "split_seed": strconv.FormatUint(s.SplitSeed, 10),
		"statistics": strings.Join(s.Statistics, " "), "trunk": s.Trunk, "hidden": strings.Join(hidden, " "),
		"multiplex": strconv.FormatBool(s.Multiplex), "max_shift": strconv.Itoa(s.MaxShift), "scale_jitter": f(s.ScaleJitter),
		"max_rows_per_series": strconv.Itoa(s.MaxRowsPerSeries),
		"normalisation":       "each series scaled so its p99 is 1, then by a per-example p99 share drawn from [scale_min, scale_max]",
	}
	if s.Quantile > 0 { // cross-entropy is written as before the quantile loss existed
		m["quantile"] = f(s.Quantile)
	}
	if s.Calibrate { // uncalibrated is written as before calibration existed
		m["calibrate"] = "true"
	}
	if s.CapacityQuantile > 0 {
		m["capacity_quantile"] = f(s.CapacityQuantile)
	}
	if s.SlotBias != 0 { // none is written as before the slot bias existed
		m["slot_bias"] = f(s.SlotBias)
	}
	if s.AdmissionSlotBias != 0 {
		m["admission_slot_bias"] = f(s.AdmissionSlotBias)
	}
	if s.CalibrateOnTrained {
		m["calibrate_on_trained"] = "true"
	}
	if s.BalanceFamilies { // unbalanced is written as before the setting existed
		m["balance_families"] = "true"
	}
	if s.Restarts > 1 { // a single start is written as before restarts existed
		m["restarts"] = strconv.Itoa(s.Restarts)
	}
	if s.Average > 1 {
		m["average"] = strconv.Itoa(s.Average)
	}
	if s.quantileBand() != [2]float64{QuantileBandLow, QuantileBandHigh} { // the default band, set or not, is written as before the band was a setting
		m["quantile_band"] = f(s.QuantileBand[0]) + " " + f(s.QuantileBand[1])
	}
	return m
}

// SkippedText lists at most n left-out series with their reasons.
func SkippedText(sk []Skipped, n int) string {
	var parts []string
	for i, x := range sk {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(sk)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s/%s: %s", x.Family, x.Series, x.Reason))
	}
	return strings.Join(parts, "; ")
}
