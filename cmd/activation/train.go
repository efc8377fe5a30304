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

func cmdTrain(args []string, e env) error {
	fs := newFlags("train", e)
	dir := fs.String("traces", "", "directory of `ts,value` CSV usage series (required)")
	out := fs.String("out", "", "directory to write admission.json and capacity.json into (required)")
	seed := fs.Uint64("seed", 0, "training seed (0: the default settings' seed)")
	epochs := fs.Int("epochs", 0, "training epochs per processor (0: the default)")
	quiet := fs.Bool("quiet", false, "no progress bar even on a terminal")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return usagef("--traces: required: a directory of CSV usage series")
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
	all, err := traces.LoadDir(*dir)
	if err != nil {
		return fmt.Errorf("--traces: %w", err)
	}
	s := train.DefaultSettings()
	if *seed != 0 {
		s.Seed = *seed
	}
	if *epochs != 0 {
		s.Epochs = *epochs
	}
	var bar *progressBar
	if e.isTerminal && !*quiet {
		bar = &progressBar{w: e.stdout}
	}
	start := time.Now()
	res, err := train.Train(all, s, func(p train.Progress) {
		if bar != nil {
			bar.update(p)
		}
	})
	if bar != nil {
		bar.done()
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
		len(res.TrainSeries), strings.Join(res.TrainSeries, " "), len(res.HeldOut), strings.Join(res.HeldOut, " "),
		res.Examples, time.Since(start).Round(100*time.Millisecond), strings.Join(lines, "\n"))
	return nil
}

// progressBar draws one self-overwriting line per model on a terminal.
type progressBar struct {
	w     io.Writer
	model string
}

const barWidth = 30

func (b *progressBar) update(p train.Progress) {
	if b.model != "" && b.model != p.Model {
		fmt.Fprintln(b.w)
	}
	b.model = p.Model
	fmt.Fprintf(b.w, "\r%s", progressLine(p))
}

func (b *progressBar) done() {
	if b.model != "" {
		fmt.Fprintln(b.w)
	}
}

// progressLine renders one progress report.
func progressLine(p train.Progress) string {
	filled := 0
	if p.Epochs > 0 {
		filled = min(barWidth, barWidth*p.Epoch/p.Epochs)
	}
	return fmt.Sprintf("%-10s [%s%s] epoch %d/%d  loss %.5f  elapsed %s  left %s ",
		p.Model, strings.Repeat("=", filled), strings.Repeat(" ", barWidth-filled),
		p.Epoch, p.Epochs, p.Loss, p.Elapsed.Round(100*time.Millisecond), p.Remaining.Round(100*time.Millisecond))
}
