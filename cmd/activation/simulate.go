package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
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

// The held-out split every command uses: the trainer's.
var (
	heldOutShare = train.DefaultSettings().HeldOutShare
	splitSeed    = train.DefaultSettings().SplitSeed
)

// Splits simulate can replay.
const (
	splitTest  = "test"
	splitTrain = "train"
	splitAll   = "all"
)

// stepsPolicy names the activation policy replayed with step limits.
const stepsPolicy = sim.PolicyActivation + "-steps"

type simulateFlags struct {
	traces, format, plot, scenario, split, knob string
	settingsFrom, chooseOn                      string
	admission, capacity                         string
	maxUp, maxDown, hysteresis                  string
	holdBand                                    float64
	budget                                      float64
	budgetText                                  string // --budget as written
	workers                                     int
	sweepFiner                                  int
	seed                                        uint64
	quiet                                       bool
	maxShift                                    int
}

var simulateHelp = help{
	synopsis: "--traces DIR[,DIR...] [flags]",
	description: `Replay real usage series on simulated hosts and compare the activation
engine's container counts with production-style policies (request-sum,
p95-window, max-window, n-sigma, usage-threshold), a linear ablation, the
oracle and the admission oracle (the oracle with the first host under the
admission rule: new replicas count at their request, with foresight and no
violation; a reference, not a bound). Each policy's one knob is swept; a policy's figure at the budget is
its best density whose violation rate (a pair of hosts' mean) is within it;
the figures with each host within the budget, at one setting and at a
setting per host, follow, with the margins the front ends take (margin, or
first_margin and second_margin) that meet it, and the figures with every
series' own violation rate within the budget at one setting (a setting
that holds a family's mean may overload one of its series). Each --traces directory
is a family (flat DIR/<series>.csv, or PlanetLab's DIR/<day>/<vm>.csv where
a VM's days are one series), split by series name (--split test leaves
out, naming them, held-out series the models' provenance lists as trained
or validated on: a directory with other files than the ones trained on
can move the split), replayed one series at a time per worker, and
reported on its own; with several families the
results are also pooled (every series weighs the same). With
--settings-from, every policy is also read at the settings chosen on
another replay's curves (simulate's JSON of other series, such as the
training side), as a margin set on some series serves on others.
Scenarios: ` + strings.Join(sim.ScenarioNames(), ", ") + `.`,
	examples: []string{
		"# the held-out crane series at a 1% budget, with a plot",
		"activation simulate --traces engine/testdata/traces/crane --budget 0.01 --plot bench.png",
		"# three families, every series, per family and pooled, as JSON",
		"activation simulate --traces ../shared/traces/crane,../shared/traces/planetlab,../shared/traces/bitbrains --split all --format json",
		"# memory judged as well as CPU (series with memory, such as Bitbrains')",
		"activation simulate --traces ../shared/traces/bitbrains --scenario memory",
		"# churn with and without step limits and a hysteresis band",
		"activation simulate --traces engine/testdata/traces/crane --hysteresis 2 --max-scale-down 10%",
		"# churn with a hold band: keep a count the models find about as safe",
		"activation simulate --traces engine/testdata/traces/crane --hold-band 0.5",
		"# margins chosen on the training series, read on the held-out ones",
		"activation simulate --traces DIR --split train --format json > train.json",
		"activation simulate --traces DIR --split test --settings-from train.json",
	},
}

// checkMemory says, before anything is replayed, the first series of a
// family that has no memory figures for a memory scenario, among every
// series replayed and every training series (the request calibration and
// the linear fit read them). The replay would say it of the first such
// series it met, as a fault of the linear fit or of the whole family.
func checkMemory(scenario, family string, sides ...[]traces.Ref) error {
	seen := map[string]bool{}
	for _, refs := range sides {
		for _, r := range refs {
			if seen[r.Name] {
				continue
			}
			seen[r.Name] = true
			s, err := r.Load()
			if err != nil {
				return tracesErr(err)
			}
			if !s.HasMemory() {
				return fmt.Errorf("--scenario %s: family %s: series %s (%s) has no memory figures: no memory columns (mem_kb or memory_mb, with mem_capacity_kb or memory_capacity_mb), or a provisioned memory of 0 in every row; the memory scenario replays series with memory, such as Bitbrains'",
					scenario, family, s.Name, r.Paths[0])
			}
		}
	}
	return nil
}

// maxSweepFiner bounds --sweep-finer: sixteen times finer is far below
// any difference a budget can tell, and every setting costs a tally.
const maxSweepFiner = 16

// maxWorkers bounds --workers (each worker replays one series at a time).
const maxWorkers = 1024

func cmdSimulate(args []string, e env) error {
	fs := newFlags("simulate", simulateHelp)
	var f simulateFlags
	fs.StringVar(&f.traces, "traces", "", "comma-separated trace `DIR[,DIR...]`, each a family of CSV usage series (required): DIR/<series>.csv or DIR/<day>/<series>.csv, each file with a header naming `ts` (or timestamp, or time: whole Unix seconds, oldest first) and `value` (or usage, or cpu_mhz: usage, any unit); see the README")
	f.budget = 0.01
	fs.Func("budget", "violation budget: the largest `share` of host-samples over capacity a policy may cause, as 0.01 or 1% (default 0.01)", func(s string) (err error) {
		f.budget, err = parseShare(s)
		f.budgetText = s
		return err
	})
	fs.StringVar(&f.format, "format", "table", "output: table or json")
	fs.StringVar(&f.plot, "plot", "", "write a PNG plot to this `FILE` (density against violation rate, and the two hosts over time; its directory is created if missing); with several families, one FILE-<family>.png each and FILE-pooled.png")
	fs.StringVar(&f.scenario, "scenario", sim.ScenarioShifted, "replay `scenario`: "+strings.Join(sim.ScenarioNames(), ", "))
	fs.StringVar(&f.split, "split", splitTest, "series to replay: test (held out from training), train or all")
	fs.StringVar(&f.knob, "knob", sim.KnobOutputThreshold, "activation policy knob to sweep: output_threshold or per_branch")
	fs.StringVar(&f.admission, "admission-model", engine.DefaultFirstModel, "first host's `model`: builtin:<name> or a model file")
	fs.StringVar(&f.capacity, "capacity-model", engine.DefaultSecondModel, "second host's `model`: builtin:<name> or a model file")
	fs.StringVar(&f.maxUp, "max-scale-up", "", "also replay the activation policy with step limits, as activation-steps: at most `N` replicas (or N%, or none) up per decision")
	fs.StringVar(&f.maxDown, "max-scale-down", "", "step limit of activation-steps: at most `N` replicas (or N%, or none) down per decision")
	fs.StringVar(&f.hysteresis, "hysteresis", "", "hysteresis band of activation-steps: a change of fewer than `N` replicas (or N%; none: no band) is not made")
	fs.Float64Var(&f.holdBand, "hold-band", 0, "hold band of activation-steps: a host keeps its count while it lies between the counts at output thresholds `B` logits stricter and looser (the strategy's hold_band)")
	fs.IntVar(&f.workers, "workers", 0, "`N` parallel workers, each replaying one series at a time (0: GOMAXPROCS; at most 1024)")
	fs.IntVar(&f.sweepFiner, "sweep-finer", 1, "every policy's knob sweep `N` times finer than the default (N-1 settings between each two of it; the activation's output thresholds in log-odds), from 1 to "+strconv.Itoa(maxSweepFiner)+": to check that no figure at the budget hangs on how fine the sweeps are")
	fs.IntVar(&f.maxShift, "max-shift", 0, "replicas' largest phase shift, in `samples` (the scenario's own when left out: 30 in shifted, two-apps and memory; yardstick shifts none, and refuses the flag): the models' training labels use 30, so other values show whether a comparison holds when the replicas multiplex otherwise than the models learned")
	fs.Uint64Var(&f.seed, "seed", 0, "the scenario's seed `S` (replica shifts and scales, from 1; 0: the scenario's own, 1), drawn with each series' name: replays with several seeds show how much of a difference is the draw's; not with the yardstick scenario, which draws nothing")
	fs.StringVar(&f.settingsFrom, "settings-from", "", "also read every policy at the settings chosen on another replay: `FILE` is simulate's JSON output (--format json) of the same families (or more; any families with --choose-on pooled or worst-family), scenario, models, step settings and sweeps (--knob and --sweep-finer), typically with --split train; each policy's setting is chosen there at this run's budget (held to the pair's budget, to each host at one setting, and to each host at its own) and read on the series replayed here, as a user who sets a margin from some series gets it on others")
	fs.StringVar(&f.chooseOn, "choose-on", chooseOnFamily, "with --settings-from, the file's results each setting is chosen on: "+chooseOnFamily+" (each family's on the same family's series there), "+chooseOnPooled+" (every family's, and the pooled result's, on the file's pooled series: one setting for every family, as a user sets it for series of a family, or a provider, the file never replayed) or "+chooseOnWorstFamily+" (as "+chooseOnPooled+", at the densest setting there that keeps each of the file's families within the budget: the worst family's rate is held, as a user who runs them all at one setting holds it)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar (drawn on standard error when it is a terminal)")
	if err := parse(fs, args); err != nil {
		return err
	}
	dirs, err := traceDirs(f.traces)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if d.family == sim.PooledFamily {
			return usagef("--traces: %s is family %q, the name of the results over every family: rename the directory", d.path, d.family)
		}
	}
	if f.format != "table" && f.format != "json" {
		return usagef("--format: %q; want table or json", f.format)
	}
	// The models' defaults are named, so an empty value was given (an
	// unset shell variable): it would have read as the built-in model.
	for _, m := range []struct{ flag, v string }{{"--admission-model", f.admission}, {"--capacity-model", f.capacity}} {
		if strings.TrimSpace(m.v) == "" {
			return usagef("%s: empty: name a model (builtin:<name> or a model file), or leave the flag out for the built-in one", m.flag)
		}
	}
	if f.split != splitTest && f.split != splitTrain && f.split != splitAll {
		return usagef("--split: %q; want test, train or all", f.split)
	}
	switch {
	case f.chooseOn != chooseOnFamily && f.chooseOn != chooseOnPooled && f.chooseOn != chooseOnWorstFamily:
		return usagef("--choose-on: %q; want %s, %s or %s", f.chooseOn, chooseOnFamily, chooseOnPooled, chooseOnWorstFamily)
	case flagSet(fs, "choose-on") && f.settingsFrom == "":
		return usagef("--choose-on: settings are chosen only with --settings-from FILE: give it, or leave --choose-on out")
	}
	if f.knob != sim.KnobOutputThreshold && f.knob != sim.KnobPerBranch {
		return usagef("--knob: %q; want %s or %s", f.knob, sim.KnobOutputThreshold, sim.KnobPerBranch)
	}
	if f.workers < 0 || f.workers > maxWorkers {
		return usagef("--workers: %d; it must be from 0 (GOMAXPROCS) to %d", f.workers, maxWorkers)
	}
	if f.sweepFiner < 1 || f.sweepFiner > maxSweepFiner {
		return usagef("--sweep-finer: %d; want a whole number from 1 (the default sweeps) to %d", f.sweepFiner, maxSweepFiner)
	}
	sc, err := sim.ScenarioByName(f.scenario)
	if err != nil {
		return usagef("--scenario: %v", err)
	}
	if flagSet(fs, "seed") && sc.Correlated {
		// (it draws the replicas' shifts and scales, which such a
		// scenario has none of: the replay would be the same)
		return usagef("--seed: scenario %s runs every replica exactly as the series: there is no shift or scale to draw", sc.Name)
	}
	if f.seed != 0 {
		sc.Seed = f.seed
	}
	if flagSet(fs, "max-shift") {
		if sc.Correlated {
			return usagef("--max-shift: scenario %s runs every replica exactly as the series (no shift)", sc.Name)
		}
		if f.maxShift < 0 || f.maxShift > sc.Window {
			return usagef("--max-shift: %d; want 0 to %d samples (the window)", f.maxShift, sc.Window)
		}
		if f.maxShift != sc.MaxShift {
			sc.Description += fmt.Sprintf("; --max-shift: replicas shifted by up to %d samples, not %d", f.maxShift, sc.MaxShift)
		}
		sc.MaxShift = f.maxShift
		if err := sc.Validate(); err != nil {
			return usagef("--max-shift: %v", err)
		}
	}
	if flagSet(fs, "plot") && strings.TrimSpace(f.plot) == "" {
		return usagef("--plot: empty (an unset variable?); name a *.png file, or leave --plot out for no plot")
	}
	if f.plot != "" && !strings.HasSuffix(strings.ToLower(f.plot), ".png") {
		return usagef("--plot: %q; the plot is a PNG file, name it *.png", f.plot)
	}
	var steps engine.Steps
	for _, s := range []struct {
		flag, value string
		to          *engine.Step
	}{{"--max-scale-up", f.maxUp, &steps.MaxUp}, {"--max-scale-down", f.maxDown, &steps.MaxDown}, {"--hysteresis", f.hysteresis, &steps.Hysteresis}} {
		if strings.TrimSpace(s.value) == "" && flagSet(fs, strings.TrimPrefix(s.flag, "--")) {
			return usagef("%s: empty: give N replicas, N%%, or %s, or leave the flag out", s.flag, engine.StepNone)
		}
		st, err := engine.ParseStep(s.value)
		if err != nil {
			return usagef("%s: %v", s.flag, err)
		}
		*s.to = st
	}
	if !engine.HoldBandOK(f.holdBand) {
		return usagef("--hold-band: %v; it must be a number of logits from 0 to %d", f.holdBand, engine.MaxHoldBand)
	}
	if f.holdBand > 0 && f.knob != sim.KnobOutputThreshold {
		return usagef("--hold-band: a hold band moves output thresholds; the %s knob keeps them", f.knob)
	}
	withSteps := !steps.MaxUp.IsZero() || !steps.MaxDown.IsZero() || !steps.Hysteresis.IsZero() || f.holdBand > 0

	start := time.Now()
	type family struct {
		dir         traceDir
		train, test []traces.Ref
		replay      []traces.Ref
		rep         *sim.Report
	}
	var fams []*family
	var trainAll []traces.Ref
	var notes []string
	if !withSteps {
		var given []string
		for _, name := range []string{"max-scale-up", "max-scale-down", "hysteresis", "hold-band"} {
			if flagSet(fs, name) {
				given = append(given, "--"+name)
			}
		}
		if len(given) > 0 {
			// "none" everywhere (or a zero band): the steps row would be
			// the activation row again.
			notes = append(notes, fmt.Sprintf("%s set no limit, band or hold: activation-steps would be the activation policy itself, so it is not replayed", strings.Join(given, ", ")))
		}
	}
	if f.budget >= 0.1 && !strings.HasSuffix(strings.TrimSpace(f.budgetText), "%") {
		// "--budget 0.5" is half of every host-sample over capacity; a
		// user who meant half a percent writes 0.5%.
		notes = append(notes, budgetNote(f.budget, "--budget "))
	}
	// The models are flags too: read before any trace.
	adm, err := engine.Models.LoadFor(engine.RoleFirst, f.admission)
	if err != nil {
		return fmt.Errorf("--admission-model: %w", err)
	}
	capy, err := engine.Models.LoadFor(engine.RoleSecond, f.capacity)
	if err != nil {
		return fmt.Errorf("--capacity-model: %w", err)
	}
	scanned := make([][]traces.Ref, len(dirs))
	for i, d := range dirs {
		refs, err := traces.Scan(d.path)
		if err != nil {
			return tracesErr(err)
		}
		scanned[i] = refs
		left, err := leftOutNote(d.family, d.path, refs)
		if err != nil {
			return tracesErr(err)
		}
		for _, n := range []string{layoutNote(d.family, d.path, refs), left} {
			if n != "" {
				notes = append(notes, n)
			}
		}
	}
	if err := traces.Disjoint(scanned...); err != nil {
		return tracesErr(err)
	}
	for i, d := range dirs {
		refs := scanned[i]
		fm := &family{dir: d}
		fm.train, fm.test = traces.SplitRefs(refs, heldOutShare, splitSeed)
		switch f.split {
		case splitTest:
			fm.replay = fm.test
		case splitTrain:
			fm.replay = fm.train
		default:
			fm.replay = refs
		}
		if len(fm.replay) == 0 {
			return fmt.Errorf("--split %s: family %s has no series on that side of the split of %d series (a family of one series trains on it and holds none out; otherwise a series' side is set by a hash of its name; use --split all)", f.split, d.family, len(refs))
		}
		if sc.Memory {
			if err := checkMemory(sc.Name, d.family, fm.replay, fm.train); err != nil {
				return err
			}
		}
		trainAll = append(trainAll, fm.train...)
		fams = append(fams, fm)
	}
	models := []modelInfo{
		{Role: engine.RoleFirst, Name: adm.Model().Name, Digest: adm.Digest()},
		{Role: engine.RoleSecond, Name: capy.Model().Name, Digest: capy.Digest()},
	}
	var stepsOut *stepsInfo
	if withSteps {
		stepsOut = &stepsInfo{MaxScaleUp: steps.MaxUp.String(), MaxScaleDown: steps.MaxDown.String(), Hysteresis: steps.Hysteresis.String(), HoldBand: f.holdBand}
	}
	familyNames := make([]string, len(dirs))
	for i, d := range dirs {
		familyNames[i] = d.family
	}
	var chooser *settingsSource
	if f.settingsFrom != "" {
		// Read before the replay, which a file that cannot choose
		// would waste.
		if chooser, err = readSettingsSource(f.settingsFrom, sc, f.knob, f.sweepFiner, models, stepsOut, familyNames, f.chooseOn); err != nil {
			return fmt.Errorf("--settings-from: %w", err)
		}
	} else if flagSet(fs, "settings-from") {
		return usagef("--settings-from: empty: name simulate's JSON output of another replay, or leave the flag out")
	}
	if f.split == splitTest {
		// The split is by a hash of each name, but a family's side is
		// never left empty: a directory with other files than the one
		// trained on can hold out a series the models were fitted to.
		// Their provenance names those (engine.Provenance.Series).
		for _, fm := range fams {
			fitted, kept := splitFitted(fm.replay, fittedTo(fm.dir.family, adm.Model(), capy.Model()))
			if len(fitted) == 0 {
				continue
			}
			if len(kept) == 0 {
				return fmt.Errorf("--split test: family %s: each of its %d held-out series (%s) is one the models were trained or validated on (their provenance lists it): this directory's files are not the ones trained on, and its split holds out what they fitted; replay with --split all (an in-sample result) or retrain on these files", fm.dir.family, len(fitted), listNames(fitted, 5))
			}
			fm.replay = kept
			notes = append(notes, fmt.Sprintf("family %s: left out %d held-out series the models were trained or validated on (their provenance lists them; this directory's files are not the ones trained on, which moved the split): %s", fm.dir.family, len(fitted), listNames(fitted, 5)))
		}
	}
	if n := f.sweepFiner; n > 1 {
		notes = append(notes, fmt.Sprintf("--sweep-finer %d: every policy's knob sweep is %d times finer than the default (its step divided by %d, every default setting kept)", n, n, n))
	}
	act, err := sim.Activation(sim.ActivationConfig{Admission: adm, Capacity: capy, Knob: f.knob, Finer: f.sweepFiner})
	if err != nil {
		return err
	}
	plots := plotPaths(f.plot, dirs)
	if err := plotsWritable(plots); err != nil {
		return fmt.Errorf("--plot: %w (nothing was replayed)", err)
	}
	baselines := sim.Baselines()
	if sc.Name == sim.ScenarioYardstick {
		baselines = sim.YardstickBaselines() // the yardstick's own sweeps, whose figures it gives
	}
	baselines = sim.Finer(baselines, f.sweepFiner)
	policies := append(baselines, sim.AdmissionOracle(), act)
	if withSteps {
		stepped, err := sim.Activation(sim.ActivationConfig{Name: stepsPolicy, Admission: adm, Capacity: capy, Knob: f.knob, Finer: f.sweepFiner, Steps: steps, HoldBand: f.holdBand})
		if err != nil {
			return err
		}
		policies = append(policies, stepped)
	}
	if len(trainAll) > 0 {
		feats := make([]string, 0, len(capy.Model().Inputs))
		for _, in := range capy.Model().Inputs {
			feats = append(feats, in.Name)
		}
		lin, err := sim.LinearSources(e.context(), sim.FromRefs(trainAll), sc, sim.LinearConfig{Features: feats, Slots: capy.CountableOutputs(), Finer: f.sweepFiner}, f.workers)
		switch {
		case errors.Is(err, sim.ErrLinearTooFewExamples):
			notes = append(notes, "linear ablation left out: "+err.Error())
		case err != nil:
			return err
		default:
			policies = append(policies, lin)
		}
	} else {
		notes = append(notes, "linear ablation left out: no training series to fit it on")
	}
	if f.split != splitTest {
		// The models' provenance names the families they were trained on
		// ("crane: 7 series (...)"); a family it does not name is unseen.
		// Where it lists the series too (engine.Provenance.Series), the
		// note counts the replayed ones it lists.
		// A model that names the family and lists none of its series
		// (an older train's) may have trained on any of them.
		var seen []string
		for _, fm := range fams {
			named, unlisted := false, false
			for _, m := range []*engine.Model{adm.Model(), capy.Model()} {
				on := trainedOn(m, fm.dir.family)
				named = named || on
				unlisted = unlisted || on && len(m.Provenance.Series[fm.dir.family]) == 0
			}
			if !named {
				continue
			}
			if unlisted {
				seen = append(seen, fm.dir.family)
				continue
			}
			fitted, _ := splitFitted(fm.replay, fittedTo(fm.dir.family, adm.Model(), capy.Model()))
			switch {
			case len(fitted) == 0:
				notes = append(notes, fmt.Sprintf("family %s: the models were trained on this family, on none of the series replayed (their provenance lists which, by name): held out by series, not by family", fm.dir.family))
			case len(fitted) == len(fm.replay):
				notes = append(notes, fmt.Sprintf("family %s: every series replayed (%d) is one the models were trained or validated on (their provenance lists them): not a held-out result", fm.dir.family, len(fitted)))
			default:
				notes = append(notes, fmt.Sprintf("family %s: %d of the %d series replayed are ones the models were trained or validated on (their provenance lists them: %s): not a held-out result",
					fm.dir.family, len(fitted), len(fm.replay), listNames(fitted, 5)))
			}
		}
		switch {
		case len(seen) > 0:
			notes = append(notes, fmt.Sprintf("replaying series of %s, families the models were trained on, some of them maybe these very series: not a held-out result", strings.Join(seen, ", ")))
		case !namesFamilies(adm.Model()) || !namesFamilies(capy.Model()):
			notes = append(notes, "replaying series a model whose provenance names no families may have been trained on: not a held-out result")
		}
	}

	if chooser != nil {
		// The linear ablation's and every other policy's sweep, checked
		// before the replay it would waste.
		if err := chooser.checkSweeps(policies, familyNames); err != nil {
			return fmt.Errorf("--settings-from: %w", err)
		}
		if slices.ContainsFunc(policies, func(p sim.Policy) bool { return p.Name() == sim.PolicyLinear }) && !chooser.sameFamilies(familyNames) {
			notes = append(notes, fmt.Sprintf("the linear ablation is fit on the training series of every family replayed: of %s here, of %s where the settings were chosen, so its setting carries over to another fit", strings.Join(familyNames, ", "), strings.Join(chooser.families, ", ")))
		}
	}
	var bar *simBar
	if e.isTerminal && !f.quiet {
		bar = &simBar{w: e.stderr}
	}
	var reps []*sim.Report
	for _, fm := range fams {
		opt := sim.Options{Workers: f.workers}
		if f.split == splitTest {
			// The requests' factor from the training series, not the
			// held-out ones (each request's base is still its series'
			// first-half p99; sim.Options.CalibrateOn).
			opt.CalibrateOn = sim.FromRefs(fm.train)
		}
		if bar != nil {
			bar.family = fm.dir.family
			opt.Progress = bar.update
		}
		var counters counterWatch
		rep, err := sim.RunSources(e.context(), counters.sources(fm.replay), sc, policies, opt)
		if bar != nil {
			bar.clear()
		}
		if err != nil {
			return fmt.Errorf("family %s: %w", fm.dir.family, err)
		}
		rep.Family = fm.dir.family
		if len(opt.CalibrateOn) > 0 && rep.CalibratedOn == 0 && rep.RequestFactor > 0 && sc.TargetSlack > 0 {
			notes = append(notes, fmt.Sprintf("family %s: the requests' factor is set on the replayed series: none of its %d training series can be replayed", fm.dir.family, len(fm.train)))
		}
		if n := counterNote(fm.dir.family, counters.found(), len(fm.replay)); n != "" {
			notes = append(notes, n)
		}
		fm.rep = rep
		reps = append(reps, rep)
	}
	out := &output{Scenario: sc, Split: f.split, Budget: f.budget, ShiftSet: flagSet(fs, "max-shift"),
		Models: models, Steps: stepsOut, Notes: notes}
	if f.sweepFiner > 1 {
		out.SweepFiner = f.sweepFiner
	}
	out.Notes = append(out.Notes, edgeNotes(reps, f.budget)...)
	// The activation's threshold at the budget as a margin over the
	// models' own, what the front ends take: only when the sweep moves
	// thresholds both models share.
	var modelThr *float64
	if t := adm.Model().Threshold(); f.knob == sim.KnobOutputThreshold && t == capy.Model().Threshold() &&
		adm.Model().OutputActivation() == engine.ActivationSigmoid && capy.Model().OutputActivation() == engine.ActivationSigmoid {
		modelThr = &t
	}
	if len(reps) == 1 {
		out.familyResult = buildFamily(reps[0], f.budget, modelThr)
	} else {
		pooled, err := sim.Pool(reps...)
		if err != nil {
			return err
		}
		out.familyResult = buildFamily(pooled, f.budget, modelThr)
		for _, r := range reps {
			out.Families = append(out.Families, buildFamily(r, f.budget, modelThr))
		}
		reps = append(reps, pooled)
	}
	if chooser != nil {
		fitted := map[string]map[string]bool{}
		for _, name := range append(slices.Clone(familyNames), chooser.families...) {
			fitted[name] = fittedTo(name, adm.Model(), capy.Model())
		}
		if chooser.pooled {
			held := ""
			if chooser.worstRates != nil {
				held = ", the densest there of those that keep each of those families within the budget"
			}
			out.Notes = append(out.Notes, fmt.Sprintf("--choose-on %s: each policy's settings chosen on the pooled series of %s (families %s, each series weighing the same, each family's requests sized by its own factor there)%s, one setting for every family here", f.chooseOn, f.settingsFrom, strings.Join(chooser.families, ", "), held))
		}
		read := func(fr *familyResult, rep *sim.Report) (err error) {
			fr.SettingsFrom, err = chooser.chooseOn(rep, familyNames, f.budget, modelThr, fitted)
			if err == nil && fr.SettingsFrom == nil {
				out.Notes = append(out.Notes, fmt.Sprintf("pooled: no settings chosen (--settings-from %s pools families %s, not these)", f.settingsFrom, strings.Join(chooser.families, ", ")))
			}
			if err != nil || rep.RequestFactor <= 0 {
				return err // a pooled report has no factor of its own
			}
			// A held-out replay sets the requests' factor on the training
			// series, as the training side's replay does: the same factor
			// unless other series set it there. A family the file lacks
			// (--choose-on pooled or worst-family) is read at its own
			// factor against the file's families' own.
			if there := chooser.reports[rep.Family]; there != nil {
				if there.RequestFactor > 0 && math.Abs(there.RequestFactor/rep.RequestFactor-1) > 1e-9 {
					out.Notes = append(out.Notes, fmt.Sprintf("family %s: requests x%.3f here, x%.3f where the settings were chosen (other series set the factor there): a setting carries over as another request size", rep.Family, rep.RequestFactor, there.RequestFactor))
				}
			} else if chooser.pooled {
				var factors []string
				for _, f := range chooser.families {
					if r := chooser.reports[f]; r.RequestFactor > 0 {
						factors = append(factors, fmt.Sprintf("x%.3f (%s)", r.RequestFactor, f))
					}
				}
				if len(factors) > 0 {
					out.Notes = append(out.Notes, fmt.Sprintf("family %s: requests x%.3f here; where the settings were chosen %s: a setting carries over as another request size", rep.Family, rep.RequestFactor, strings.Join(factors, ", ")))
				}
			}
			return nil
		}
		// The pooled (or only) report is the last of reps, the
		// families' are in out.Families' order.
		if err := read(&out.familyResult, reps[len(reps)-1]); err != nil {
			return err
		}
		for i := range out.Families {
			if err := read(&out.Families[i], reps[i]); err != nil {
				return err
			}
		}
	}
	// The plots (plots[i] is reps[i]'s: plotPaths) are rendered all
	// before any is renamed over its path (writePlots); when they cannot
	// be written, the replay's results are still printed, and the run
	// fails after them.
	var plotErr error
	if len(plots) > 0 {
		made, err := mkdirs(filepath.Dir(f.plot))
		if err == nil {
			out.Plots, err = writePlots(plots, reps, act, f.budget)
			if len(out.Plots) == 0 {
				removeMade(made)
			}
		}
		if err != nil {
			plotErr = fmt.Errorf("--plot: %w; the results are printed", err)
		}
	}
	out.ElapsedSeconds = math.Round(time.Since(start).Seconds()*100) / 100
	var werr error
	if f.format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		werr = enc.Encode(out)
	} else {
		werr = writeTables(e.stdout, out)
	}
	return errors.Join(werr, plotErr)
}

// edgeNotes flags, for each family, the policies whose figure at the
// budget, 1% or 0.1% may be their sweep's rather than their own, under
// the first holding of the budget whose choice says so (sim.Curve.EdgeHeld:
// the pair's, then each host's at one setting, then at its own): the baselines' and the
// activation's alike (an activation with no threshold within a budget has
// none in its sweep, which ends at a finite logit).
func edgeNotes(reps []*sim.Report, budget float64) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range reps {
		for _, b := range []float64{budget, 0.01, 0.001} {
			for i := range r.Curves {
				// The other holdings' notes only where the pair's says
				// nothing of the curve: one note a curve and budget is
				// enough to doubt its figure.
				var notes []string
				for _, h := range sim.Holdings() {
					if notes = r.Curves[i].EdgeHeld(b, h, r.Scenario.Hosts); len(notes) > 0 {
						break
					}
				}
				for _, e := range notes {
					if !seen[r.Family+e] {
						seen[r.Family+e] = true
						out = append(out, "family "+r.Family+": "+e)
					}
				}
			}
		}
	}
	return out
}

// output is the JSON document simulate writes: the result (one family's,
// or with several families the pooled one) and, with several families,
// each family's.
type output struct {
	Scenario sim.Scenario `json:"scenario"`
	Split    string       `json:"split"`
	Budget   float64      `json:"budget"`
	Models   []modelInfo  `json:"models"`
	Steps    *stepsInfo   `json:"steps,omitempty"`
	familyResult
	Families       []familyResult `json:"families,omitempty"`
	Plots          []string       `json:"plots,omitempty"`
	Notes          []string       `json:"notes,omitempty"`
	ElapsedSeconds float64        `json:"elapsed_seconds"`
	// SweepFiner is --sweep-finer when it is more than 1 (absent: the
	// default sweeps).
	SweepFiner int `json:"sweep_finer,omitempty"`
	// ShiftSet: --max-shift set the scenario's MaxShift.
	ShiftSet bool `json:"-"`
}

// stepsInfo is the step limits the activation-steps policy replays with.
type stepsInfo struct {
	MaxScaleUp   string  `json:"max_scale_up,omitempty"`
	MaxScaleDown string  `json:"max_scale_down,omitempty"`
	Hysteresis   string  `json:"hysteresis,omitempty"`
	HoldBand     float64 `json:"hold_band,omitempty"`
}

// familyResult is one family's (or the pooled) result at the budget.
type familyResult struct {
	Family        string        `json:"family"`
	Series        []string      `json:"series"`
	Skipped       []sim.Skipped `json:"skipped,omitempty"`
	Gaps          []sim.Gapped  `json:"gaps,omitempty"`
	Sparse        []sim.Sparse  `json:"sparse,omitempty"`
	RequestFactor float64       `json:"request_factor,omitempty"`
	MedianSlack   float64       `json:"median_slack,omitempty"`
	MeanSlack     float64       `json:"mean_slack,omitempty"`
	// CalibratedOn is how many training series set the request factor
	// (a held-out replay); 0 when the replayed series set it.
	CalibratedOn int   `json:"calibrated_on,omitempty"`
	Decisions    int64 `json:"decisions"`
	// Margin is the activation policy's output threshold at the budget
	// as logits over the models' own (the front ends' margin), and
	// MarginEachHost the same with each host of a pair within the budget
	// (a pair's budget is the mean of its hosts'); absent when none is
	// within budget, the sweep is not of thresholds the two models share,
	// or their outputs are not sigmoid. StepsMargin and
	// StepsMarginEachHost are the same for activation-steps, the policy
	// with the step limits, hysteresis and hold band replayed (as the
	// strategy runs it), when they are.
	Margin              *float64 `json:"margin,omitempty"`
	MarginEachHost      *float64 `json:"margin_each_host,omitempty"`
	StepsMargin         *float64 `json:"steps_margin,omitempty"`
	StepsMarginEachHost *float64 `json:"steps_margin_each_host,omitempty"`
	// MarginsPerHost are the first and the second host's own margins that
	// hold each host within the budget (a front end's first_margin and
	// second_margin), StepsMarginsPerHost the same for activation-steps;
	// absent as Margin is, or when either host has none within it.
	MarginsPerHost      *hostMargins   `json:"margins_per_host,omitempty"`
	StepsMarginsPerHost *hostMargins   `json:"steps_margins_per_host,omitempty"`
	Policies            []policyResult `json:"policies"`
	Summary             sim.Summary    `json:"summary"`
	// SummaryEachHost is the summary with each host of a pair within the
	// budget at one setting (sim.HoldEachHost), SummaryPerHost with each
	// host within it at its own setting (sim.HoldPerHost: every policy's
	// two hosts set apart, densities the mean of the two hosts').
	SummaryEachHost sim.Summary `json:"summary_each_host"`
	SummaryPerHost  sim.Summary `json:"summary_per_host"`
	// SummaryEverySeries is the summary with every series' own violation
	// rate within the budget, one setting for the family
	// (sim.HoldEverySeries).
	SummaryEverySeries sim.Summary `json:"summary_every_series"`
	// SettingsFrom is every policy read at the settings chosen on another
	// replay (--settings-from), under each holding of the budget.
	SettingsFrom *settingsFrom `json:"settings_from,omitempty"`
	// Churn compares the activation policy's changes per hour with and
	// without step limits (when they were replayed).
	Churn *churn `json:"churn,omitempty"`
}

// hostMargins are a margin per host, in logits.
type hostMargins struct {
	First  float64 `json:"first"`
	Second float64 `json:"second"`
}

type modelInfo struct {
	Role   string `json:"role"`
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// writeMargins says the margins that meet the budget on the replayed
// series: the engine's counts as they are (the provider, explain), and with
// the step limits replayed (the strategy), each on the pair's budget and
// with each host within it; a family's are the ones to set unless the
// settings are read from another replay (--settings-from).
func writeMargins(w io.Writer, fr *familyResult) {
	logits := func(m *float64) string {
		if *m == 1 || *m == -1 {
			return strconv.FormatFloat(*m, 'f', 3, 64) + " logit"
		}
		return strconv.FormatFloat(*m, 'f', 3, 64) + " logits"
	}
	line := func(what string, pair, each *float64, perHost *hostMargins) {
		if pair == nil {
			return
		}
		// The ones to set: a family's own, chosen on these series, unless
		// settings chosen on others (--settings-from) are read below.
		toSet := fr.Family != sim.PooledFamily && fr.SettingsFrom == nil
		eachText := "no margin keeps each host of a pair within the budget"
		if each != nil {
			eachText = logits(each) + " with each host of a pair within it"
			if toSet {
				eachText += " (the one to set as margin)"
			}
		}
		fmt.Fprintf(w, "margin at the budget, %s: %s on the pair's budget; %s\n", what, logits(pair), eachText)
		if perHost != nil {
			keys := " (first_margin, second_margin)"
			if toSet {
				keys = " (first_margin, second_margin: the ones to set)"
			}
			fmt.Fprintf(w, "  margin per host, each host within the budget at its own: first %s, second %s%s\n",
				logits(&perHost.First), logits(&perHost.Second), keys)
		}
	}
	line("the engine's counts as they are (margin in the provider and explain)", fr.Margin, fr.MarginEachHost, fr.MarginsPerHost)
	line("with the step limits, hysteresis and hold band replayed (margin in the strategy, with the same settings)", fr.StepsMargin, fr.StepsMarginEachHost, fr.StepsMarginsPerHost)
	if fr.Family == sim.PooledFamily {
		fmt.Fprintln(w, "(pooled: one setting over every family's series together, which lets one family run over the budget; a family's own line keeps that family within it)")
	}
}

// logit is the log-odds of a probability.
func logit(p float64) float64 { return math.Log(p / (1 - p)) }

// marginOf is threshold t as a margin over the models' threshold, nil when
// it is none the engine takes.
func marginOf(t, model float64) *float64 {
	// Rounded to a millionth of a logit, finer than any sweep's step:
	// the float noise of a logit (2.124999999999999, the sweep's last
	// threshold at 10.00000000000097) would read as a figure of its own,
	// or as beyond the front ends' 10.
	m := math.Round((logit(t)-logit(model))*1e6) / 1e6
	if m == 0 {
		m = 0 // not -0
	}
	if engine.MarginReason(m) != "" {
		return nil
	}
	return &m
}

// policyResult is a policy's best setting within the budget (knob null and
// within_budget false when none is), and its whole curve.
type policyResult struct {
	Name         string   `json:"name"`
	KnobName     string   `json:"knob_name,omitempty"`
	Knob         *float64 `json:"knob"` // shadows sim.Point's Knob: null without one
	WithinBudget bool     `json:"within_budget"`
	// The best point's figures (zero when none is within budget).
	sim.Point
	Curve []sim.Point `json:"curve"`
}

// churn is the activation policy's best setting within budget without and
// with step limits.
type churn struct {
	Without *churnPoint `json:"without"`
	With    *churnPoint `json:"with"`
}

type churnPoint struct {
	Knob           float64 `json:"knob"`
	Density        float64 `json:"density"`
	ChangesPerHour float64 `json:"changes_per_hour"`
}

func buildFamily(rep *sim.Report, budget float64, modelThr *float64) familyResult {
	fr := familyResult{
		Family: rep.Family, Series: rep.Series, Skipped: rep.Skipped, Gaps: rep.Gaps, Sparse: rep.Sparse,
		RequestFactor: rep.RequestFactor, MedianSlack: rep.MedianSlack, MeanSlack: rep.MeanSlack,
		CalibratedOn: rep.CalibratedOn, Decisions: rep.Decisions, Summary: rep.Summarize(budget),
		SummaryEachHost: rep.SummarizeHeld(budget, sim.HoldEachHost), SummaryPerHost: rep.SummarizeHeld(budget, sim.HoldPerHost),
		SummaryEverySeries: rep.SummarizeHeld(budget, sim.HoldEverySeries),
	}
	for _, c := range rep.Curves {
		pr := policyResult{Name: c.Policy, KnobName: c.KnobName, Curve: c.Points}
		if p, _, ok := c.Best(budget); ok {
			k := p.Knob
			if c.KnobName != "" {
				pr.Knob = &k
			}
			pr.WithinBudget = true
			pr.Point = p
		}
		if modelThr != nil {
			var pair, each **float64
			var perHost **hostMargins
			switch c.Policy {
			case sim.PolicyActivation:
				pair, each, perHost = &fr.Margin, &fr.MarginEachHost, &fr.MarginsPerHost
			case stepsPolicy:
				pair, each, perHost = &fr.StepsMargin, &fr.StepsMarginEachHost, &fr.StepsMarginsPerHost
			}
			if pair != nil {
				if pr.WithinBudget {
					*pair = marginOf(pr.Point.Knob, *modelThr)
				}
				if p, _, ok := c.BestEachHost(budget); ok {
					*each = marginOf(p.Knob, *modelThr)
				}
				if first, second, ok := c.BestPerHost(budget); ok {
					a, b := marginOf(first.Knob, *modelThr), marginOf(second.Knob, *modelThr)
					if a != nil && b != nil {
						*perHost = &hostMargins{First: *a, Second: *b}
					}
				}
			}
		}
		fr.Policies = append(fr.Policies, pr)
	}
	if c := rep.Curve(stepsPolicy); c != nil {
		point := func(name string) *churnPoint {
			if p, _, ok := rep.Curve(name).Best(budget); ok {
				return &churnPoint{Knob: p.Knob, Density: p.Density, ChangesPerHour: p.ChangesPerHour}
			}
			return nil
		}
		fr.Churn = &churn{Without: point(sim.PolicyActivation), With: point(stepsPolicy)}
	}
	return fr
}

func writeTables(w io.Writer, out *output) error {
	shift := ""
	if out.ShiftSet {
		shift = fmt.Sprintf(", replicas shifted by up to %d samples (--max-shift)", out.Scenario.MaxShift)
	}
	if def, err := sim.ScenarioByName(out.Scenario.Name); err == nil && out.Scenario.Seed != def.Seed {
		// A replay of another draw: its figures differ by the draw's share.
		shift += fmt.Sprintf(", seed %d", out.Scenario.Seed)
	}
	fmt.Fprintf(w, "scenario %s%s, %s split, budget %g violations\n", out.Scenario.Name, shift, out.Split, out.Budget)
	if s := out.Steps; s != nil {
		none := func(v string) string { // a flag left out limits nothing
			if v == "" {
				return engine.StepNone
			}
			return v
		}
		fmt.Fprintf(w, "%s: the activation policy with max_scale_up %q, max_scale_down %q, hysteresis %q, hold band %g\n", stepsPolicy, none(s.MaxScaleUp), none(s.MaxScaleDown), none(s.Hysteresis), s.HoldBand)
	}
	for _, fr := range out.Families {
		fmt.Fprintln(w)
		if err := writeTable(w, &fr, out.Scenario.Memory); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if len(out.Families) > 0 {
		fmt.Fprintf(w, "pooled over the %d families (every series weighs the same):\n", len(out.Families))
	}
	if err := writeTable(w, &out.familyResult, out.Scenario.Memory); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, n := range out.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(out.Plots) > 0 {
		fmt.Fprintf(w, "plots: %s\n", strings.Join(out.Plots, " "))
	}
	fmt.Fprintf(w, "models: %s %s, %s %s; %.1f s\n", out.Models[0].Name, short(out.Models[0].Digest), out.Models[1].Name, short(out.Models[1].Digest), out.ElapsedSeconds)
	return nil
}

func writeTable(w io.Writer, fr *familyResult, memory bool) error {
	fmt.Fprintf(w, "family %s: %d series (%s), %d decision points\n", fr.Family, len(fr.Series), listNames(fr.Series, 8), fr.Decisions)
	if len(fr.Skipped) > 0 {
		var why []string
		for _, s := range fr.Skipped {
			why = append(why, s.Series+": "+s.Reason)
		}
		fmt.Fprintf(w, "left out %d series that cannot be replayed: %s\n", len(fr.Skipped), listNames(why, 3))
	}
	if fr.Family != sim.PooledFamily {
		for _, n := range []string{gapNote(fr.Family, fr.Gaps, len(fr.Series)), sparseNote(fr.Family, fr.Sparse, len(fr.Series))} {
			if n != "" {
				fmt.Fprintln(w, n)
			}
		}
	}
	if fr.RequestFactor > 0 {
		from := "the replayed series"
		if fr.CalibratedOn > 0 {
			from = fmt.Sprintf("the family's %d training series", fr.CalibratedOn)
		}
		fmt.Fprintf(w, "requests x%.3f (set on %s): median slack %.2f (mean of series medians %.2f)\n", fr.RequestFactor, from, fr.MedianSlack, fr.MeanSlack)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "policy\tknob\tdensity\treplicas/host\tviolation rate\t"
	if memory {
		head += "cpu violations\tmemory violations\t"
	}
	head += "severity\t"
	if memory {
		head += "memory severity\t"
	}
	fmt.Fprintln(tw, head+"changes/hour\t")
	for _, p := range fr.Policies {
		if !p.WithinBudget {
			fmt.Fprintf(tw, "%s\tnone within budget\t\t\t\t\t\t", p.Name)
			if memory {
				fmt.Fprint(tw, "\t\t\t")
			}
			fmt.Fprintln(tw)
			continue
		}
		knob := ""
		if p.Knob != nil {
			knob = fmt.Sprintf("%s %.6g", p.KnobName, *p.Knob) // the JSON keeps every digit
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.1f\t%.4f\t", p.Name, knob, p.Density, p.ReplicasPerHost, p.ViolationRate)
		if memory {
			fmt.Fprintf(tw, "%.4f\t%.4f\t", p.CPUViolationRate, p.MemoryViolationRate)
		}
		fmt.Fprintf(tw, "%.3f\t", p.Severity)
		if memory {
			fmt.Fprintf(tw, "%.3f\t", p.MemorySeverity)
		}
		fmt.Fprintf(tw, "%.2f\t\n", p.ChangesPerHour)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := fr.Summary
	opt := func(v *float64, pct bool) string {
		if v == nil || pct {
			return optGain(v)
		}
		return fmt.Sprintf("%.2f", *v)
	}
	fmt.Fprintf(w, "activation %.3f of the oracle: %s vs request-sum (%.3f), %s vs the best baseline %s (%.3f); gap to the oracle closed: %s\n",
		s.ActivationDensity, opt(s.GainVsRequestSum, true), s.RequestSumDensity, opt(s.GainVsBestBaseline, true),
		s.BestBaseline, s.BestBaselineDensity, opt(s.GapClosed, false))
	held := func(what string, s sim.Summary) {
		fmt.Fprintf(w, "%s: activation %.3f, %s vs the best baseline %s (%.3f); gap closed: %s\n",
			what, s.ActivationDensity, opt(s.GainVsBestBaseline, true), s.BestBaseline, s.BestBaselineDensity, opt(s.GapClosed, false))
	}
	held("each host within the budget, one setting for both", fr.SummaryEachHost)
	held("each host within the budget at its own setting (every policy)", fr.SummaryPerHost)
	held("every series within the budget, one setting (every policy)", fr.SummaryEverySeries)
	for _, pr := range fr.Policies {
		if pr.Name == sim.PolicyActivation && pr.WithinBudget {
			fmt.Fprintf(w, "activation by host: first %.3f of the oracle (violation rate %.4f), second %.3f (%.4f)\n",
				pr.FirstDensity, pr.FirstViolationRate, pr.SecondDensity, pr.SecondViolationRate)
		}
	}
	if fr.Margin != nil || fr.StepsMargin != nil {
		writeMargins(w, fr)
	}
	if fr.SettingsFrom != nil {
		writeSettingsFrom(w, fr.SettingsFrom, fr.Family)
	}

	if s.AdmissionOracleDensity != nil {
		fmt.Fprintf(w, "ceiling: the admission oracle (a reference, not a bound) %.3f of the oracle (%s of the gap, at no violation)\n",
			*s.AdmissionOracleDensity, opt(s.CeilingGapClosed, false))
	}
	if c := fr.Churn; c != nil {
		show := func(p *churnPoint) string {
			if p == nil {
				return "none within budget"
			}
			return fmt.Sprintf("%.2f changes/hour at density %.3f", p.ChangesPerHour, p.Density)
		}
		fmt.Fprintf(w, "churn: activation %s; with step limits %s\n", show(c.Without), show(c.With))
	}
	return nil
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// parseShare reads a share in (0, 1), as a fraction (0.01) or a percentage
// (1%).
func parseShare(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if p, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(p), 0.01
	}
	if !traces.Decimal(t) {
		return 0, fmt.Errorf("%q is not a share in (0, 1): give a decimal fraction such as 0.01 or a percentage such as 1%% (hexadecimal and digits separated by _ are refused)", s)
	}
	v, err := strconv.ParseFloat(t, 64)
	if scale != 1 {
		// 0.7% is 0.007, not 0.7 x 0.01 (0.006999999999999999).
		v, _ = strconv.ParseFloat(strconv.FormatFloat(v*scale, 'g', 15, 64), 64)
	}
	if err != nil || !(v > 0 && v < 1) {
		return 0, fmt.Errorf("%q is not a share in (0, 1): give a fraction such as 0.01 or a percentage such as 1%%", s)
	}
	return v, nil
}

// flagSet says whether the flag called name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// trainedOn says whether m's provenance names family among the families it
// was trained on (a line "<family>: N series ...", as train writes it).
func trainedOn(m *engine.Model, family string) bool {
	for _, d := range m.Provenance.Data {
		if strings.HasPrefix(d, family+": ") {
			return true
		}
	}
	return false
}

// fittedTo is the set of family's series that the models' provenance
// lists as trained or validated on.
func fittedTo(family string, models ...*engine.Model) map[string]bool {
	set := map[string]bool{}
	for _, m := range models {
		for _, name := range m.Provenance.Series[family] {
			set[name] = true
		}
	}
	return set
}

// splitFitted splits replay into the names of the series in fit (the
// models' provenance lists them as fitted to) and the others.
func splitFitted(replay []traces.Ref, fit map[string]bool) (fitted []string, kept []traces.Ref) {
	for _, r := range replay {
		if fit[r.Name] {
			fitted = append(fitted, r.Name)
			continue
		}
		kept = append(kept, r)
	}
	return fitted, kept
}

// familyLine is a provenance line naming a family trained on.
var familyLine = regexp.MustCompile(`^[^:]+: \d+ series`)

// namesFamilies says whether m's provenance names the families it was
// trained on (a model written by hand, or by an older train, does not).
func namesFamilies(m *engine.Model) bool {
	return slices.ContainsFunc(m.Provenance.Data, familyLine.MatchString)
}
