package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/sim"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// The held-out split every command uses (the trainer's default too).
const (
	heldOutShare = 0.34
	splitSeed    = 1
)

// Splits simulate can replay.
const (
	splitTest  = "test"
	splitTrain = "train"
	splitAll   = "all"
)

type simulateFlags struct {
	traces, format, plot, scenario, split, knob string
	admission, capacity                         string
	budget                                      float64
	workers                                     int
}

func cmdSimulate(args []string, e env) error {
	fs := newFlags("simulate", e)
	var f simulateFlags
	fs.StringVar(&f.traces, "traces", "", "directory of `ts,value` CSV usage series (required)")
	fs.Float64Var(&f.budget, "budget", 0.01, "violation budget: the largest share of host-samples over capacity a policy may cause")
	fs.StringVar(&f.format, "format", "table", "output: table or json")
	fs.StringVar(&f.plot, "plot", "", "write a PNG plot to this file (density against violation rate, and a two-host time series)")
	fs.StringVar(&f.scenario, "scenario", sim.ScenarioShifted, "replay scenario: shifted (phase-shifted replicas, 46% median slack, 110 pods per host) or yardstick (the yardstick's setup)")
	fs.StringVar(&f.split, "split", splitTest, "series to replay: test (held out from training), train or all")
	fs.StringVar(&f.knob, "knob", sim.KnobOutputThreshold, "activation policy knob to sweep: output_threshold or per_branch")
	fs.StringVar(&f.admission, "admission-model", engine.DefaultFirstModel, "first host's model: builtin:<name> or a model file")
	fs.StringVar(&f.capacity, "capacity-model", engine.DefaultSecondModel, "second host's model: builtin:<name> or a model file")
	fs.IntVar(&f.workers, "workers", 0, "parallel workers (0: GOMAXPROCS)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if f.traces == "" {
		return usagef("--traces: required: a directory of CSV usage series")
	}
	if math.IsNaN(f.budget) || f.budget <= 0 || f.budget >= 1 {
		return usagef("--budget: %v; it must be a share of host-samples in (0, 1), e.g. 0.01 for 1%%", f.budget)
	}
	if f.format != "table" && f.format != "json" {
		return usagef("--format: %q; want table or json", f.format)
	}
	if f.split != splitTest && f.split != splitTrain && f.split != splitAll {
		return usagef("--split: %q; want test, train or all", f.split)
	}
	if f.knob != sim.KnobOutputThreshold && f.knob != sim.KnobPerBranch {
		return usagef("--knob: %q; want %s or %s", f.knob, sim.KnobOutputThreshold, sim.KnobPerBranch)
	}
	if f.workers < 0 {
		return usagef("--workers: %d; it must be >= 0", f.workers)
	}
	sc, err := sim.ScenarioByName(f.scenario)
	if err != nil {
		return usagef("--scenario: %v", err)
	}
	if f.plot != "" && !strings.HasSuffix(strings.ToLower(f.plot), ".png") {
		return usagef("--plot: %q; the plot is a PNG file, name it *.png", f.plot)
	}

	start := time.Now()
	all, err := traces.LoadDir(f.traces)
	if err != nil {
		return fmt.Errorf("--traces: %w", err)
	}
	trainSet, testSet := traces.SplitByName(all, heldOutShare, splitSeed)
	var replay []traces.Series
	switch f.split {
	case splitTest:
		replay = testSet
	case splitTrain:
		replay = trainSet
	default:
		replay = all
	}
	if len(replay) == 0 {
		return fmt.Errorf("--split %s: no series on that side of the split of %d series (the held-out split needs at least 2 series; use --split all)", f.split, len(all))
	}
	adm, err := engine.LoadSource(f.admission)
	if err != nil {
		return fmt.Errorf("--admission-model: %w", err)
	}
	capy, err := engine.LoadSource(f.capacity)
	if err != nil {
		return fmt.Errorf("--capacity-model: %w", err)
	}
	act, err := sim.Activation(sim.ActivationConfig{Admission: adm, Capacity: capy, Knob: f.knob})
	if err != nil {
		return err
	}
	policies := append(sim.Baselines(), act)
	var notes []string
	if len(trainSet) > 0 {
		feats := make([]string, 0, len(capy.Model().Inputs))
		for _, in := range capy.Model().Inputs {
			feats = append(feats, in.Name)
		}
		lin, err := sim.Linear(trainSet, sc, sim.LinearConfig{Features: feats, Slots: capy.CountableOutputs()})
		if err != nil {
			return err
		}
		policies = append(policies, lin)
	} else {
		notes = append(notes, "linear ablation left out: no training series to fit it on")
	}
	if f.split != splitTest {
		notes = append(notes, "replaying series the default models were trained on: not a held-out result")
	}
	rep, err := sim.Run(context.Background(), replay, sc, policies, sim.Options{Workers: f.workers})
	if err != nil {
		return err
	}
	out := buildOutput(rep, f, adm, capy, notes)
	if f.plot != "" {
		if err := writePlot(f.plot, rep, act, f.budget); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	out.ElapsedSeconds = math.Round(time.Since(start).Seconds()*100) / 100
	if f.format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return writeTable(e.stdout, out)
}

// output is the JSON document simulate writes.
type output struct {
	Scenario       sim.Scenario   `json:"scenario"`
	Split          string         `json:"split"`
	Series         []string       `json:"series"`
	Budget         float64        `json:"budget"`
	RequestFactor  float64        `json:"request_factor"`
	MedianSlack    float64        `json:"median_slack"`
	MeanSlack      float64        `json:"mean_slack"`
	Models         []modelInfo    `json:"models"`
	Policies       []policyResult `json:"policies"`
	Summary        sim.Summary    `json:"summary"`
	Notes          []string       `json:"notes,omitempty"`
	ElapsedSeconds float64        `json:"elapsed_seconds"`
}

type modelInfo struct {
	Role   string `json:"role"`
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// policyResult is a policy's best setting within the budget (knob null and
// within_budget false when none is), and its whole curve.
type policyResult struct {
	Name            string      `json:"name"`
	KnobName        string      `json:"knob_name,omitempty"`
	Knob            *float64    `json:"knob"`
	WithinBudget    bool        `json:"within_budget"`
	Density         float64     `json:"density"`
	ReplicasPerHost float64     `json:"replicas_per_host"`
	ViolationRate   float64     `json:"violation_rate"`
	Severity        float64     `json:"severity"`
	ChangesPerHour  float64     `json:"changes_per_hour"`
	Curve           []sim.Point `json:"curve"`
}

func buildOutput(rep *sim.Report, f simulateFlags, adm, capy *engine.Processor, notes []string) *output {
	out := &output{
		Scenario: rep.Scenario, Split: f.split, Series: rep.Series, Budget: f.budget,
		RequestFactor: rep.RequestFactor, MedianSlack: rep.MedianSlack, MeanSlack: rep.MeanSlack,
		Models: []modelInfo{
			{Role: engine.RoleFirst, Name: adm.Model().Name, Digest: adm.Digest()},
			{Role: engine.RoleSecond, Name: capy.Model().Name, Digest: capy.Digest()},
		},
		Summary: rep.Summarize(f.budget),
		Notes:   notes,
	}
	for _, c := range rep.Curves {
		pr := policyResult{Name: c.Policy, KnobName: c.KnobName, Curve: c.Points}
		if p, _, ok := c.Best(f.budget); ok {
			k := p.Knob
			if c.KnobName != "" {
				pr.Knob = &k
			}
			pr.WithinBudget = true
			pr.Density, pr.ReplicasPerHost, pr.ViolationRate = p.Density, p.ReplicasPerHost, p.ViolationRate
			pr.Severity, pr.ChangesPerHour = p.Severity, p.ChangesPerHour
		}
		out.Policies = append(out.Policies, pr)
	}
	return out
}

func writeTable(w io.Writer, out *output) error {
	fmt.Fprintf(w, "scenario %s, %s split: %d series (%s)\n", out.Scenario.Name, out.Split, len(out.Series), strings.Join(out.Series, " "))
	fmt.Fprintf(w, "requests x%.3f: median slack %.2f (mean of series medians %.2f); budget %g violations\n\n", out.RequestFactor, out.MedianSlack, out.MeanSlack, out.Budget)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tknob\tdensity\treplicas/host\tviolation rate\tseverity\tchanges/hour\t")
	for _, p := range out.Policies {
		if !p.WithinBudget {
			fmt.Fprintf(tw, "%s\tnone within budget\t\t\t\t\t\t\n", p.Name)
			continue
		}
		knob := ""
		if p.Knob != nil {
			knob = fmt.Sprintf("%s %g", p.KnobName, *p.Knob)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.1f\t%.4f\t%.3f\t%.2f\t\n", p.Name, knob, p.Density, p.ReplicasPerHost, p.ViolationRate, p.Severity, p.ChangesPerHour)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := out.Summary
	opt := func(v *float64, pct bool) string {
		if v == nil {
			return "undefined"
		}
		if pct {
			return fmt.Sprintf("%+.1f%%", 100**v)
		}
		return fmt.Sprintf("%.2f", *v)
	}
	fmt.Fprintf(w, "\nactivation %.3f of the oracle: %s vs request-sum (%.3f), %s vs the best baseline %s (%.3f); gap to the oracle closed: %s\n",
		s.ActivationDensity, opt(s.GainVsRequestSum, true), s.RequestSumDensity, opt(s.GainVsBestBaseline, true),
		s.BestBaseline, s.BestBaselineDensity, opt(s.GapClosed, false))
	for _, n := range out.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "models: %s %s, %s %s; %.1f s\n", out.Models[0].Name, short(out.Models[0].Digest), out.Models[1].Name, short(out.Models[1].Digest), out.ElapsedSeconds)
	return nil
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
