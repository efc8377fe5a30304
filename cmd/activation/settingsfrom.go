package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/activation-scheduler/terraform-provider-activation/sim"
)

// settingsSource is a replay whose curves choose every policy's setting
// (simulate --settings-from): simulate's own JSON of the same scenario,
// models and step settings, typically of the training series.
type settingsSource struct {
	path  string
	split string
	// reports are the file's results by family name (sim.PooledFamily
	// for its pooled one), as reports of curves.
	reports  map[string]*sim.Report
	families []string // its families, without the pooled result
}

// readSettingsSource reads path, simulate's JSON output, and checks that
// its replay is one whose settings carry over to this run: the same
// scenario, activation knob, models and step settings, and every family of
// this run.
func readSettingsSource(path string, sc sim.Scenario, knob string, models []modelInfo, steps *stepsInfo, families []string) (*settingsSource, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out output
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: not simulate's JSON output (--format json): %w", path, err)
	}
	if out.Family == "" || len(out.Policies) == 0 || len(out.Models) != len(models) {
		return nil, fmt.Errorf("%s: not simulate's JSON output (--format json): no family, policies or models", path)
	}
	if out.Scenario != sc {
		o := out.Scenario
		if o.Name == sc.Name && o.Seed == sc.Seed && o.MaxShift == sc.MaxShift {
			return nil, fmt.Errorf("%s: replayed scenario %s with other settings than this run's (%s differ): replay it again with this version", path, o.Name, strings.Join(scenarioDiff(o, sc), ", "))
		}
		return nil, fmt.Errorf("%s: replayed scenario %s (seed %d, max shift %d); this run replays %s (seed %d, max shift %d): give the same --scenario, --seed and --max-shift", path, o.Name, o.Seed, o.MaxShift, sc.Name, sc.Seed, sc.MaxShift)
	}
	for i, m := range models {
		if o := out.Models[i]; o.Role != m.Role || o.Digest != m.Digest {
			return nil, fmt.Errorf("%s: replayed %s model %s (%s); this run's is %s (%s): settings chosen for other models", path, m.Role, o.Name, short(o.Digest), m.Name, short(m.Digest))
		}
	}
	if !equalSteps(out.Steps, steps) {
		return nil, fmt.Errorf("%s: replayed %s with %s; this run with %s: give the same --max-scale-up, --max-scale-down, --hysteresis and --hold-band", path, stepsPolicy, describeSteps(out.Steps), describeSteps(steps))
	}
	for _, p := range out.Policies {
		if p.Name == sim.PolicyActivation && p.KnobName != knob {
			return nil, fmt.Errorf("%s: swept the activation's %s; this run sweeps %s: give the same --knob", path, p.KnobName, knob)
		}
	}
	src := &settingsSource{path: path, split: out.Split, reports: map[string]*sim.Report{}}
	results := append([]familyResult{out.familyResult}, out.Families...)
	for i := range results {
		fr := &results[i]
		rep := &sim.Report{Scenario: out.Scenario, Family: fr.Family, Series: fr.Series}
		for _, p := range fr.Policies {
			rep.Curves = append(rep.Curves, sim.Curve{Policy: p.Name, KnobName: p.KnobName, Points: p.Curve})
		}
		src.reports[fr.Family] = rep
		if fr.Family != sim.PooledFamily {
			src.families = append(src.families, fr.Family)
		}
	}
	for _, f := range families {
		if src.reports[f] == nil {
			return nil, fmt.Errorf("%s: replayed families %s, not %s: settings are chosen on the same family's series", path, strings.Join(src.families, ", "), f)
		}
	}
	return src, nil
}

// checkSweeps says, before any replay, whether every policy this run
// replays was replayed in the file with the same sweep (its knob's name
// and values), in each of its results.
func (src *settingsSource) checkSweeps(policies []sim.Policy) error {
	for _, name := range slices.Sorted(maps.Keys(src.reports)) {
		rep := src.reports[name]
		for _, p := range policies {
			c := rep.Curve(p.Name())
			if c == nil {
				return fmt.Errorf("%s: family %s: policy %s was not replayed there", src.path, name, p.Name())
			}
			kn := p.Knob()
			knobs := make([]float64, len(c.Points))
			for i, pt := range c.Points {
				knobs[i] = pt.Knob
			}
			if c.KnobName != kn.Name || !slices.Equal(knobs, kn.Values) {
				return fmt.Errorf("%s: family %s: policy %s swept %s over %d settings there, %s over %d here: replay it again with this version", src.path, name, p.Name(), quoteKnob(c.KnobName), len(knobs), quoteKnob(kn.Name), len(kn.Values))
			}
		}
	}
	return nil
}

// quoteKnob names a knob, "no knob" for none.
func quoteKnob(name string) string {
	if name == "" {
		return "no knob"
	}
	return strconv.Quote(name)
}

// scenarioDiff names the fields of two scenarios that differ, as their
// JSON keys.
func scenarioDiff(a, b sim.Scenario) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var names []string
	for i := range va.NumField() {
		if va.Field(i).Interface() != vb.Field(i).Interface() {
			name, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	return names
}

func equalSteps(a, b *stepsInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func describeSteps(s *stepsInfo) string {
	if s == nil {
		return "no step limits (not replayed)"
	}
	var set []string
	for _, v := range []struct{ name, value string }{{"max_scale_up", s.MaxScaleUp}, {"max_scale_down", s.MaxScaleDown}, {"hysteresis", s.Hysteresis}} {
		if v.value != "" {
			set = append(set, fmt.Sprintf("%s %q", v.name, v.value))
		}
	}
	if s.HoldBand > 0 {
		set = append(set, fmt.Sprintf("hold band %g", s.HoldBand))
	}
	return strings.Join(set, ", ")
}

// settingsFrom is a family's (or the pooled) figures at the settings
// chosen on another replay, under each holding of the budget.
type settingsFrom struct {
	File  string `json:"file"`
	Split string `json:"split"`
	// Overlap is how many of the replayed series the choosing replay
	// replayed too (0 for settings chosen out of sample), Fitted how many
	// of the choosing replay's series the models were trained or
	// validated on (their provenance lists them): on those the models'
	// counts look safer than on new series, so the activation's setting
	// chosen there may be too loose.
	Overlap  int            `json:"overlap"`
	Fitted   int            `json:"fitted"`
	Holdings []chosenResult `json:"holdings"`
}

// chosenResult is one holding's comparison, with the activation policy's
// chosen settings as the front ends' margins when they are ones (Margins),
// and activation-steps' (StepsMargins: the strategy's, with its step
// settings) when it was replayed.
type chosenResult struct {
	sim.ChosenSummary
	Margins      *hostMargins `json:"activation_margins,omitempty"`
	StepsMargins *hostMargins `json:"steps_margins,omitempty"`
}

// holdings are the three ways a budget holds a pair, in the order
// simulate reports them.
var holdings = []sim.Holding{sim.HoldPair, sim.HoldEachHost, sim.HoldPerHost}

// chooseOn reads rep at the settings src chose for its family (nil, nil
// when src has no result of the same series' family: a pooled result over
// other families). fitted are the series of each family the models'
// provenance lists as trained or validated on.
func (src *settingsSource) chooseOn(rep *sim.Report, families []string, budget float64, modelThr *float64, fitted map[string]map[string]bool) (*settingsFrom, error) {
	on := src.reports[rep.Family]
	if rep.Family == sim.PooledFamily && !slices.Equal(slices.Sorted(slices.Values(families)), slices.Sorted(slices.Values(src.families))) {
		return nil, nil
	}
	if on == nil {
		return nil, fmt.Errorf("--settings-from %s: no family %s", src.path, rep.Family)
	}
	sf := &settingsFrom{File: src.path, Split: src.split}
	there := map[string]bool{}
	for _, s := range on.Series {
		there[s] = true
		family, name := rep.Family, s
		if rep.Family == sim.PooledFamily {
			family, name, _ = strings.Cut(s, "/") // a pooled series is family/name
		}
		if fitted[family][name] {
			sf.Fitted++
		}
	}
	for _, s := range rep.Series {
		if there[s] {
			sf.Overlap++
		}
	}
	for _, h := range holdings {
		s, err := rep.SummarizeChosenOn(on, budget, h)
		if err != nil {
			return nil, fmt.Errorf("--settings-from %s: family %s: %w", src.path, rep.Family, err)
		}
		cr := chosenResult{ChosenSummary: s}
		if modelThr != nil {
			margins := func(c *sim.Chosen) *hostMargins {
				first, second := marginOf(c.FirstKnob, *modelThr), marginOf(c.SecondKnob, *modelThr)
				if first == nil || second == nil {
					return nil
				}
				return &hostMargins{First: *first, Second: *second}
			}
			for i := range s.Policies {
				switch c := &s.Policies[i]; c.Policy {
				case sim.PolicyActivation:
					cr.Margins = margins(c)
				case stepsPolicy:
					cr.StepsMargins = margins(c)
				}
			}
		}
		sf.Holdings = append(sf.Holdings, cr)
	}
	return sf, nil
}

// writeSettingsFrom says what the settings chosen on the other replay give
// here, under each holding.
func writeSettingsFrom(w io.Writer, sf *settingsFrom) {
	over := ""
	if sf.Overlap > 0 {
		over = fmt.Sprintf("; %d of these series were replayed there too: not out of sample", sf.Overlap)
	}
	if sf.Fitted > 0 {
		over += fmt.Sprintf("; %d of the series they were chosen on are ones the models were trained or validated on, where the models' counts look safer than on new series: the activation's setting may be too loose here", sf.Fitted)
	}
	fmt.Fprintf(w, "settings chosen on %s (its %s split), read here%s:\n", sf.File, sf.Split, over)
	for _, c := range sf.Holdings {
		rate := func(p *sim.Chosen) string {
			r := fmt.Sprintf("%#.3g%%", 100*p.ViolationRate)
			if !p.WithinBudget {
				r += ", over the budget"
			}
			return r
		}
		var best *sim.Chosen
		for i := range c.Policies {
			if c.Policies[i].Policy == c.BestBaseline {
				best = &c.Policies[i]
			}
		}
		baseline := "no baseline has a setting within the budget there"
		if best != nil {
			baseline = fmt.Sprintf("the best baseline %s %.3f (%s)", best.Policy, best.Density, rate(best))
		}
		a := c.Activation
		var line string
		switch {
		case a == nil:
			line = "activation has no setting within the budget there; " + baseline
		case !a.WithinBudget:
			// A density over the budget is no lead over one within it.
			line = fmt.Sprintf("activation %.3f (%s %s): no comparison; %s", a.Density, rateName(c.Holding), rate(a), baseline)
		case best == nil:
			line = fmt.Sprintf("activation %.3f (%s %s); %s", a.Density, rateName(c.Holding), rate(a), baseline)
		default:
			line = fmt.Sprintf("activation %.3f (%s %s), %s vs %s", a.Density, rateName(c.Holding), rate(a), optGain(c.GainVsBestBaseline), baseline)
			if c.BestWithinBudget != "" && c.BestWithinBudget != c.BestBaseline {
				line += fmt.Sprintf(", %s vs the best within the budget here, %s %.3f", optGain(gainOf(a.Density, c.BestWithinBudgetDensity)), c.BestWithinBudget, c.BestWithinBudgetDensity)
			}
			gap := "undefined"
			if c.GapClosed != nil {
				gap = fmt.Sprintf("%.2f", *c.GapClosed)
			}
			line += fmt.Sprintf("; gap to the oracle closed from %s: %s", c.BestBaseline, gap)
		}
		if m := c.Margins; m != nil {
			line += fmt.Sprintf("; margins first %.3f, second %.3f", m.First, m.Second)
			if sm := c.StepsMargins; sm != nil {
				line += fmt.Sprintf(" (with the step limits replayed, the strategy's: first %.3f, second %.3f)", sm.First, sm.Second)
			}
		}
		fmt.Fprintf(w, "  %s: %s\n", c.Holding, line)
		if len(c.OverBudget) > 0 {
			fmt.Fprintf(w, "    over the budget here: %s\n", strings.Join(c.OverBudget, ", "))
		}
		if len(c.Unset) > 0 {
			fmt.Fprintf(w, "    no setting within the budget there: %s\n", strings.Join(c.Unset, ", "))
		}
	}
}

// rateName names the violation rate a holding holds.
func rateName(holding string) string {
	if holding == sim.HoldPair.String() {
		return "violation rate"
	}
	return "worse host's violation rate"
}

// gainOf is a/b - 1, nil when b is 0.
func gainOf(a, b float64) *float64 {
	if b == 0 {
		return nil
	}
	g := a/b - 1
	return &g
}

func optGain(v *float64) string {
	if v == nil {
		return "undefined"
	}
	return fmt.Sprintf("%+.1f%%", 100**v)
}
