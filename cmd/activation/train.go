package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
	"github.com/activation-scheduler/terraform-provider-activation/train"
)

// Model file names train writes (what the engine embeds).
const (
	admissionFile = engine.BuiltinAdmission + ".json"
	capacityFile  = engine.BuiltinCapacity + ".json"
)

var trainDefaults = train.DefaultSettings()

var trainHelp = help{
	synopsis: "--traces DIR[,DIR...] --out DIR [flags]",
	description: fmt.Sprintf(`Train the two default processors (the first host's admission processor and
the second host's capacity processor) from real usage series and write
admission.json and capacity.json into --out (both or neither). A trace
directory is one CSV file per series (ts,value, or Bitbrains' ts,cpu_mhz,...)
or PlanetLab's <day>/<vm>.csv, where the days of one VM are one series;
each directory is a family and one pair of processors is trained on all of
them. Series are held out by identity (the series name; a VM's name for
PlanetLab), per family, never only by time; a validation split by identity
stops training early. A series needs at least %d samples (the %d-sample
window, the %d-sample horizon and one more); a shorter one is left out,
named in a warning on standard error, and a run left with no series to
train on stops (a file of fewer than 2 samples, which says nothing of how
usage varies, stops the run, naming it). The training side's series must together
give at least one batch of %d examples (one per %d samples after the
window, roughly: five series of 400 samples do not). --out is created when
it does not exist.`, trainDefaults.MinSeriesSamples(),
		trainDefaults.Window, trainDefaults.Horizon, trainDefaults.BatchSize, trainDefaults.Step),
	examples: []string{
		"# retrain the built-in models from the bundled series (go generate ./engine)",
		"activation train --traces engine/testdata/traces/crane,engine/testdata/traces/planetlab --out engine/models",
		"# the hand-wired ablation: max-of-predictors, perfectly correlated replicas",
		"activation train --traces engine/testdata/traces/crane --trunk max --multiplex=false --quantile 0 --out /tmp/ablation",
		"# train on three families at once, no progress bar",
		"activation train --traces ../shared/traces/crane,../shared/traces/planetlab,../shared/traces/bitbrains --out /tmp/models -quiet",
	},
}

func cmdTrain(args []string, e env) error {
	fs := newFlags("train", trainHelp)
	dir := fs.String("traces", "", "comma-separated trace `DIR[,DIR...]`, each a family of CSV usage series (required)")
	out := fs.String("out", "", "`DIR` to write admission.json and capacity.json into (required)")
	seed := fs.Uint64("seed", 0, "training seed (0: the default settings' seed)")
	d := train.DefaultSettings()
	epochs := fs.Int("epochs", 0, fmt.Sprintf("training epochs per processor, at most; the learning rate decays over them (a half cosine), so this sets the schedule too (0: the default, %d; %d with --quantile 0 or --trunk monotone, as they were measured)", d.Epochs, train.CrossEntropyEpochs))
	patience := fs.Int("patience", 0, fmt.Sprintf("epochs without a better validation loss before training stops (0: the default, %d; %d with --quantile 0 or --trunk monotone; --epochs %d --patience %d --average 1 trains as the defaults did until December 4, 2026)", d.Patience, train.CrossEntropyPatience, train.CrossEntropyEpochs, train.CrossEntropyPatience))
	quiet := fs.Bool("quiet", false, "no progress bar (drawn on standard error when it is a terminal)")
	settings := addSettingsFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	dirs, err := traceDirs(*dir)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*out) == "" {
		return usagef("--out: required: the directory to write the models into (%q names none)", *out)
	}
	if *epochs < 0 {
		return usagef("--epochs: %d; it must be >= 1 (or 0 for the default)", *epochs)
	}
	if *patience < 0 {
		return usagef("--patience: %d; it must be >= 1 (or 0 for the default)", *patience)
	}
	// Every flag is checked before any series is read.
	s, err := settings()
	if err != nil {
		return err
	}
	if *seed != 0 {
		s.Seed = *seed
	}
	if *epochs != 0 {
		s.Epochs = *epochs
	}
	if *patience != 0 {
		s.Patience = *patience
	}
	if err := s.Check(); err != nil {
		return usagef("%s", settingsFlagErr(fs, err))
	}
	// --out is made now, so that a directory that cannot be made fails
	// before the training; a failed or interrupted run removes again every
	// directory it made.
	made, err := mkdirs(*out)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	written := false
	defer func() {
		if !written {
			removeMade(made)
		}
	}()
	// A directory the models cannot be written into fails now, not after
	// the training.
	if err := writable(*out); err != nil {
		return fmt.Errorf("--out: %w (nothing was trained)", err)
	}
	// A model file's place taken by a directory fails now, not after the
	// training.
	for _, name := range []string{admissionFile, capacityFile} {
		if st, err := os.Stat(filepath.Join(*out, name)); err == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("--out: %s is not a regular file: the model cannot be written there (nothing was trained)", filepath.Join(*out, name))
		}
	}
	var (
		fams  []train.Family
		notes []string
	)
	err = interruptible(e.context(), func() (err error) {
		fams, notes, err = loadFamilies(dirs)
		return err
	})
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(e.stderr, "activation train: %s\n", n)
	}
	var pb *trainBar
	if e.isTerminal && !*quiet {
		pb = &trainBar{w: e.stderr}
	}
	start := time.Now()
	var res *train.Result
	err = interruptible(e.context(), func() (err error) {
		res, err = train.TrainFamilies(fams, s, func(p train.Progress) {
			if pb != nil {
				pb.update(p)
			}
		})
		return err
	})
	if pb != nil {
		pb.done()
	}
	if err != nil {
		return err
	}
	pair := []struct {
		name string
		m    *engine.Model
	}{{admissionFile, res.Admission}, {capacityFile, res.Capacity}}
	files := map[string]*engine.Model{}
	for _, f := range pair {
		files[filepath.Join(*out, f.name)] = f.m
	}
	// Both models or neither: never a new admission model beside an old
	// capacity model.
	if err := engine.WriteModelFiles(files); err != nil {
		return err
	}
	written = true
	var lines []string
	for _, f := range pair {
		path := filepath.Join(*out, f.name)
		d, err := f.m.Digest()
		if err != nil {
			return err
		}
		loss := "val_bce " + f.m.Provenance.Metrics["val_bce"]
		if v, ok := f.m.Provenance.Metrics["val_pinball"]; ok {
			loss = "val_pinball " + v
		}
		if note, ok := f.m.Provenance.Metrics["early_stopping"]; ok {
			loss = "early stopping " + note
		}
		lines = append(lines, fmt.Sprintf("  %s  %s  %v layers, %s", path, d, f.m.LayerSizes(), loss))
	}
	if c := res.Calibration; c != nil {
		if c.Note != "" {
			lines = append(lines, "  calibration: none ("+c.Note+")")
		} else {
			lines = append(lines, fmt.Sprintf("  calibration: the capacity outputs shifted %g logits (validation density %.4f, %s unshifted)", c.Shift, c.Score, c.UnshiftedText()))
		}
	}
	var validated []string
	for _, f := range res.Families {
		validated = append(validated, f.Validate...)
	}
	if _, err := fmt.Fprintf(e.stdout, "trained on %d series (%s), validated on %d (%s), held out %d (%s); %d examples, %s\n%s\n",
		len(res.TrainSeries), listNames(res.TrainSeries, 12), len(validated), listNames(validated, 12), len(res.HeldOut), listNames(res.HeldOut, 12),
		res.Examples, time.Since(start).Round(100*time.Millisecond), strings.Join(lines, "\n")); err != nil {
		return fmt.Errorf("the models are written, but not the summary: %w", err)
	}
	if len(res.Skipped) > 0 {
		fmt.Fprintf(e.stderr, "activation train: left out %d series no example can come from: %s\n", len(res.Skipped), train.SkippedText(res.Skipped, 10))
	}
	for _, w := range headWarnings(res.Heads) {
		fmt.Fprintln(e.stderr, w)
	}
	return nil
}

// headWarnings says which trained trunk heads are closed on every example
// counted: the models are written (they are valid), but their cost has
// lost a term.
func headWarnings(heads []train.HeadUse) []string {
	var out []string
	for _, h := range heads {
		for _, c := range h.Closed() {
			what := "its cost of m replicas is m a alone: no sqrt(m) b term, nothing that multiplexes. A note on the model's shape, not an error: the models are written and usable (earlier built-in processors had it closed too; docs/benchmarks.md measures what opening one gives)"
			if c == "level" {
				what = "its cost of m replicas has no m a term: the processor reads no level of usage that adds up with the replicas; check its counts with activation simulate before using it"
			}
			out = append(out, fmt.Sprintf("activation train: the %s processor's %s head is closed (0) on every one of its %d %s examples: %s", h.Processor, c, h.Examples, h.On, what))
		}
	}
	return out
}

// writable checks that files can be made in dir: a probe file is made and
// removed.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".activation-write-probe-*")
	if err != nil {
		return fmt.Errorf("cannot write into %s: %w", dir, err)
	}
	name := f.Name()
	err = f.Close()
	if rmErr := os.Remove(name); err == nil {
		err = rmErr
	}
	if err != nil {
		return fmt.Errorf("cannot write into %s: %w", dir, err)
	}
	return nil
}

// trainBar draws one self-overwriting line per model on a terminal (the
// starts of a model trained from several, --restarts, share its line).
// After done it draws nothing: an interrupted training goes on in the
// background until the process ends.
type trainBar struct {
	mu      sync.Mutex
	w       io.Writer
	model   string
	lastLen int
	stopped bool
}

func (b *trainBar) update(p train.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	model, _, _ := strings.Cut(p.Model, " ") // "capacity 2/4": start 2 of 4
	if b.model != "" && b.model != model {
		fmt.Fprintln(b.w)
		b.lastLen = 0
	}
	b.model = model
	line := progressLine(p)
	fmt.Fprintf(b.w, "\r%s%s", line, strings.Repeat(" ", max(0, b.lastLen-len(line))))
	b.lastLen = len(line)
}

func (b *trainBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	if b.model != "" {
		fmt.Fprintln(b.w)
	}
}

// progressLine renders one progress report.
func progressLine(p train.Progress) string {
	return fmt.Sprintf("%-10s %s epoch %d/%d  loss %.5f  elapsed %s  left %s ",
		p.Model, bar(p.Epoch, p.Epochs), p.Epoch, p.Epochs, p.Loss,
		p.Elapsed.Round(100*time.Millisecond), p.Remaining.Round(100*time.Millisecond))
}

// loadFamilies reads each trace directory as one family; the notes say
// how a nested family's series were joined and which series have gaps.
func loadFamilies(dirs []traceDir) (fams []train.Family, notes []string, err error) {
	all := make([][]traces.Ref, len(dirs))
	for i, d := range dirs {
		refs, err := traces.Scan(d.path)
		if err != nil {
			return nil, nil, tracesErr(err)
		}
		all[i] = refs
	}
	if err := traces.Disjoint(all...); err != nil {
		return nil, nil, tracesErr(err)
	}
	for i, d := range dirs {
		ss, err := traces.LoadRefs(all[i])
		if err != nil {
			return nil, nil, tracesErr(err)
		}
		fams = append(fams, train.Family{Name: d.family, Series: ss})
		var counters []string
		for _, s := range ss {
			if traces.LooksCumulative(s) {
				counters = append(counters, s.Name)
			}
		}
		left, err := leftOutNote(d.family, d.path, all[i])
		if err != nil {
			return nil, nil, tracesErr(err)
		}
		for _, n := range []string{layoutNote(d.family, d.path, all[i]), left, gapNote(d.family, seriesGaps(ss), len(ss)), sparseNote(d.family, seriesSparse(ss), len(ss)), counterNote(d.family, counters, len(ss))} {
			if n != "" {
				notes = append(notes, n)
			}
		}
	}
	return fams, notes, nil
}

// settingsFlagErr is a train.Settings error under the flag it is about:
// "train settings: average: ..." reads "--average: ..." when the field is
// a flag of fs; other errors (several fields, none) are as they are.
func settingsFlagErr(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "train settings: ")
	if !ok {
		return msg
	}
	field, detail, ok := strings.Cut(rest, ": ")
	name := strings.ReplaceAll(field, "_", "-")
	if !ok || strings.ContainsAny(field, " ,") || fs.Lookup(name) == nil {
		return msg
	}
	return "--" + name + ": " + detail
}

// maxPeakGrowth is the largest --peak-growth: a cost bound of a thousand
// times the window's peak per replica, where the default is 3 (factors
// near the float's range make the exported weights overflow).
const maxPeakGrowth = 1000

// addSettingsFlags adds the model-shape settings of train and tune; the
// returned function reads them over train.DefaultSettings.
func addSettingsFlags(fs *flag.FlagSet) func() (train.Settings, error) {
	d := train.DefaultSettings()
	trunk := fs.String("trunk", d.Trunk, "the estimate's trunk: "+train.TrunkMonotone+" (a learned network that no rise in usage can make read more room), "+train.TrunkMLP+" (a learned network, not monotone) or "+train.TrunkMax+" (the hand-wired max-of-predictors)")
	hidden := fs.String("hidden", "", "the trunk's shape, comma-separated: the "+train.TrunkMonotone+" trunk's `groups,units` per group (default "+joinInts(train.DefaultHidden(train.TrunkMonotone))+"), the "+train.TrunkMLP+" trunk's hidden widths (default "+joinInts(train.DefaultHidden(train.TrunkMLP))+")")
	statistics := fs.String("statistics", strings.Join(d.Statistics, ","), "window statistics the trunk reads, comma-separated `NAME[,NAME...]` (of "+statisticNames()+"); the "+train.TrunkMonotone+" trunk's default is "+strings.Join(train.DefaultMonotoneStatistics, ","))
	multiplex := fs.Bool("multiplex", d.Multiplex, "labels from a replay of phase-shifted replicas (false: every replica follows the series exactly)")
	rows := fs.Int("max-rows", d.MaxRowsPerSeries, "at most `N` evenly spaced examples per series (0: all)")
	restarts := fs.Int("restarts", d.Restarts, "train each processor from `N` random starts and keep the lowest validation loss (1 to "+strconv.Itoa(train.MaxRestarts)+")")
	average := fs.Int("average", d.Average, "train each processor from `N` random starts and keep their mean: one network whose hidden layers are N times --hidden wide (0 or 1: one start; at most "+strconv.Itoa(train.MaxRestarts)+"; the "+train.TrunkMLP+" trunk on the quantile loss only). 0 by default with --restarts above 1, --quantile 0 or another trunk")
	quantile := fs.Float64("quantile", d.Quantile, "train the admission processor's cost (and the capacity processor's, with --capacity-quantile 0) as the `Q` quantile of what the replicas take of the host (the pinball loss, a share in (0, 1)); 0: both on the fit labels' cross-entropy, the "+train.TrunkMonotone+" trunk's default")
	capq := fs.Float64("capacity-quantile", d.CapacityQuantile, "the capacity processor's quantile `Q` under the quantile loss (--quantile stays the admission processor's); 0: --quantile's. Its default is 0 with --quantile 0 or the "+train.TrunkMonotone+" trunk")
	qband := fs.String("quantile-band", "", "the quantile loss reads the slots whose usage lies within `LOW,HIGH` shares of the host (LOW in (0, 1), HIGH above 1; default "+strconv.FormatFloat(train.QuantileBandLow, 'g', -1, 64)+","+strconv.FormatFloat(train.QuantileBandHigh, 'g', -1, 64)+")")
	growth := fs.Float64("peak-growth", d.PeakGrowth, "bound both processors' learned CPU cost: m replicas of the workload at most m x `G` x the window's peak per replica, G up to 1000 (needs the statistic max: --statistics that leave it out train with no bound unless G is given, which is then refused); 0: no bound")
	slotBias := fs.Float64("slot-bias", d.SlotBias, "make the capacity processor's output for m replicas `B` ln(m) logits looser (one replica's unchanged; negative: stricter), so that a margin takes more risk where one more replica adds little of it; from -"+strconv.FormatFloat(train.MaxSlotBias, 'g', -1, 64)+" to "+strconv.FormatFloat(train.MaxSlotBias, 'g', -1, 64)+", 0: none (nested validation found none best)")
	admSlotBias := fs.Float64("admission-slot-bias", d.AdmissionSlotBias, "the same `B` on the admission processor's queue slots (the slot of the m-th replica B ln(m) logits looser); 0: none (nested validation: 0.4 on both processors lost)")
	calibrate := fs.Bool("calibrate", d.Calibrate, "shift the capacity processor's outputs by the logits that let one output threshold (a margin) serve both processors best on the validation series, replayed in the shifted scenario at budgets 1% and 0.1% (nested validation found it level with none)")
	return func() (train.Settings, error) {
		s := d
		if *restarts < 1 || *restarts > train.MaxRestarts {
			return s, usagef("--restarts: %d; want 1 to %d", *restarts, train.MaxRestarts)
		}
		if *trunk != train.TrunkMLP && *trunk != train.TrunkMonotone && *trunk != train.TrunkMax {
			// Train's settings read an empty trunk as the default one, and
			// this function's defaults (the average) as another trunk's.
			return s, usagef("--trunk: %q; want %s, %s or %s", *trunk, train.TrunkMLP, train.TrunkMonotone, train.TrunkMax)
		}
		hiddenSet := flagSet(fs, "hidden")
		if *trunk == train.TrunkMax {
			if hiddenSet {
				return s, usagef("--hidden: the %s trunk has no hidden layers; leave --hidden out", train.TrunkMax)
			}
			*hidden = ""
		}
		s.Trunk, s.Multiplex, s.MaxRowsPerSeries, s.Restarts = *trunk, *multiplex, *rows, *restarts
		if !(*quantile >= 0 && *quantile < 1) {
			return s, usagef("--quantile: %v; want 0 (cross-entropy) or a share in (0, 1), such as 0.9", *quantile)
		}
		s.Quantile = *quantile
		if *trunk == train.TrunkMonotone && !flagSet(fs, "quantile") {
			s.Quantile = train.MonotoneSettings().Quantile // measured on cross-entropy
		}
		if s.Quantile == 0 || *trunk == train.TrunkMonotone {
			// As measured (--epochs and --patience still set them).
			s.Epochs, s.Patience = train.CrossEntropyEpochs, train.CrossEntropyPatience
		}
		s.Calibrate = *calibrate
		if !(*growth >= 0) || math.IsInf(*growth, 0) {
			return s, usagef("--peak-growth: %v; want 0 (no bound) or a finite number above 0, such as %g", *growth, train.DefaultPeakGrowth)
		}
		if *growth > maxPeakGrowth {
			// Near the float's range the exported weights overflow, and
			// the settings check named no flag.
			return s, usagef("--peak-growth: %v; want at most %g (the default is %g; 0: no bound): the bound is m x G x the window's peak per replica, and far larger factors make the exported weights overflow", *growth, float64(maxPeakGrowth), train.DefaultPeakGrowth)
		}
		s.PeakGrowth = *growth
		for _, sb := range []struct {
			name string
			v    float64
			to   *float64
		}{{"slot-bias", *slotBias, &s.SlotBias}, {"admission-slot-bias", *admSlotBias, &s.AdmissionSlotBias}} {
			if !(math.Abs(sb.v) <= train.MaxSlotBias) {
				return s, usagef("--%s: %v; want a number from -%g to %g (0: none), such as 0.4", sb.name, sb.v, train.MaxSlotBias, train.MaxSlotBias)
			}
			*sb.to = sb.v
		}
		s.CapacityQuantile = *capq
		if !flagSet(fs, "capacity-quantile") && (s.Quantile == 0 || *trunk == train.TrunkMonotone) {
			// Cross-entropy for both, as --quantile 0 always gave; the
			// monotone trunk at a quantile, that quantile for both.
			s.CapacityQuantile = train.MonotoneSettings().CapacityQuantile
		}
		if !(s.CapacityQuantile >= 0 && s.CapacityQuantile < 1) {
			return s, usagef("--capacity-quantile: %v; want 0 (--quantile's) or a share in (0, 1), such as 0.95", *capq)
		}
		if s.CapacityQuantile > 0 && s.Quantile == 0 {
			return s, usagef("--capacity-quantile: %v needs the quantile loss; --quantile is 0 (cross-entropy)", *capq)
		}
		if flagSet(fs, "quantile-band") {
			parts := strings.Split(*qband, ",")
			if len(parts) != 2 {
				return s, usagef("--quantile-band: %q; want LOW,HIGH, such as 0.5,2", *qband)
			}
			for i, p := range parts {
				v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
				if err != nil {
					return s, usagef("--quantile-band: %q is not a number", p)
				}
				s.QuantileBand[i] = v
			}
			if !train.ValidQuantileBand(s.QuantileBand) {
				return s, usagef("--quantile-band: %q; want LOW in (0, 1) and a finite HIGH above 1 (the band holds the host's capacity)", *qband)
			}
			if s.Quantile == 0 {
				return s, usagef("--quantile-band: %q needs the quantile loss; --quantile is 0 (cross-entropy)", *qband)
			}
		}
		s.Average = *average
		if !flagSet(fs, "average") && (*trunk != train.TrunkMLP || s.Quantile == 0 || *restarts > 1) {
			s.Average = 0 // as measured: the mean of starts was measured on the quantile loss's MLP
		}
		switch {
		case *average < 0 || *average > train.MaxRestarts:
			return s, usagef("--average: %d; want 0 to %d starts", *average, train.MaxRestarts)
		case s.Average > 1 && *trunk != train.TrunkMLP:
			return s, usagef("--average: %d; the %s trunk's starts cannot be averaged, only the %s trunk's (--average 0)", *average, *trunk, train.TrunkMLP)
		case s.Average > 1 && *restarts > 1:
			return s, usagef("--average %d and --restarts %d: keep the mean of the starts or the best of them, not both", *average, *restarts)
		case s.Average > 1 && s.Quantile == 0:
			return s, usagef("--average %d: the mean of starts needs the quantile loss (--quantile above 0); cross-entropy learns a slope per start (--average 0)", *average)
		}
		if *rows < 0 {
			return s, usagef("--max-rows: %d; want 0 (every example) or more", *rows)
		}
		s.Statistics = nil // unset: the trunk's own default (train.Settings)
		if flagSet(fs, "statistics") {
			for _, name := range strings.Split(*statistics, ",") {
				name = strings.TrimSpace(name)
				if !slices.ContainsFunc(train.Statistics, func(st train.Statistic) bool { return st.Name == name }) {
					return s, usagef("--statistics: %q is not a statistic; want some of %s", name, statisticNames())
				}
				s.Statistics = append(s.Statistics, name)
			}
		}
		if flagSet(fs, "peak-growth") && s.PeakGrowth > 0 {
			if read := s.StatisticsRead(); !slices.Contains(read, "max") {
				return s, usagef("--peak-growth: %v bounds the cost by the window's peak, the statistic max, which the trunk does not read (--statistics %s); add max, or --peak-growth 0", s.PeakGrowth, strings.Join(read, ","))
			}
		}
		s.Hidden = nil
		if hiddenSet && strings.TrimSpace(*hidden) == "" {
			return s, usagef("--hidden: empty; give the %s trunk's shape, or leave --hidden out for %s", *trunk, joinInts(train.DefaultHidden(*trunk)))
		}
		if strings.TrimSpace(*hidden) != "" {
			for _, h := range strings.Split(*hidden, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(h))
				if err != nil {
					return s, usagef("--hidden: %q is not a whole number", h)
				}
				s.Hidden = append(s.Hidden, n)
			}
		}
		return s, nil
	}
}

func statisticNames() string {
	names := make([]string, len(train.Statistics))
	for i, st := range train.Statistics {
		names[i] = st.Name
	}
	return strings.Join(names, ", ")
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}
