package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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

var trainHelp = help{
	synopsis: "--traces DIR[,DIR...] --out DIR [flags]",
	description: `Train the two default processors (the first host's admission processor and
the second host's capacity processor) from real usage series and write
admission.json and capacity.json into --out (both or neither). A trace
directory is one CSV file per series (ts,value, or Bitbrains' ts,cpu_mhz,...)
or PlanetLab's <day>/<vm>.csv, where the days of one VM are one series;
several directories are trained on together. Series are held out by name
(traces.SplitByName), never only by time. A series needs at least 2 samples.`,
	examples: []string{
		"# retrain the built-in models from the bundled series",
		"activation train --traces engine/testdata/traces/crane --out engine/models",
		"# train on three families at once, no progress bar",
		"activation train --traces ../shared/traces/crane,../shared/traces/planetlab,../shared/traces/bitbrains --out /tmp/models -quiet",
	},
}

func cmdTrain(args []string, e env) error {
	fs := newFlags("train", e, trainHelp)
	dir := fs.String("traces", "", "comma-separated trace `DIR[,DIR...]`, each a family of CSV usage series (required)")
	out := fs.String("out", "", "`DIR` to write admission.json and capacity.json into (required)")
	seed := fs.Uint64("seed", 0, "training seed (0: the default settings' seed)")
	epochs := fs.Int("epochs", 0, "training epochs per processor (0: the default)")
	quiet := fs.Bool("quiet", false, "no progress bar even on a terminal")
	if err := parse(fs, args); err != nil {
		return err
	}
	dirs, err := traceDirs(*dir)
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef("--out: required: the directory to write the models into")
	}
	if *epochs < 0 {
		return usagef("--epochs: %d; it must be >= 1 (or 0 for the default)", *epochs)
	}
	if st, err := os.Stat(*out); err != nil {
		return fmt.Errorf("--out: %w", err)
	} else if !st.IsDir() {
		return fmt.Errorf("--out: %s is not a directory", *out)
	}
	var all []traces.Series
	for _, d := range dirs {
		ss, err := traces.LoadDir(d.path)
		if err != nil {
			return fmt.Errorf("--traces: %w", err)
		}
		all = append(all, ss...)
	}
	s := train.DefaultSettings()
	if *seed != 0 {
		s.Seed = *seed
	}
	if *epochs != 0 {
		s.Epochs = *epochs
	}
	var pb *trainBar
	if e.isTerminal && !*quiet {
		pb = &trainBar{w: e.stdout}
	}
	start := time.Now()
	res, err := train.Train(all, s, func(p train.Progress) {
		if pb != nil {
			pb.update(p)
		}
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
	var lines []string
	for _, f := range pair {
		path := filepath.Join(*out, f.name)
		d, err := f.m.Digest()
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("  %s  %s  %v layers, val_bce %s", path, d, f.m.LayerSizes(), f.m.Provenance.Metrics["val_bce"]))
	}
	fmt.Fprintf(e.stdout, "trained on %d series (%s), held out %d (%s); %d examples, %s\n%s\n",
		len(res.TrainSeries), listNames(res.TrainSeries, 12), len(res.HeldOut), listNames(res.HeldOut, 12),
		res.Examples, time.Since(start).Round(100*time.Millisecond), strings.Join(lines, "\n"))
	return nil
}

// trainBar draws one self-overwriting line per model on a terminal.
type trainBar struct {
	w     io.Writer
	model string
}

func (b *trainBar) update(p train.Progress) {
	if b.model != "" && b.model != p.Model {
		fmt.Fprintln(b.w)
	}
	b.model = p.Model
	fmt.Fprintf(b.w, "\r%s", progressLine(p))
}

func (b *trainBar) done() {
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
