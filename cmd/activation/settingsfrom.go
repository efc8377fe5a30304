package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/sim"
)

// What simulate --choose-on chooses each family's settings on.
const (
	chooseOnFamily = "family" // the file's result of the same family
	chooseOnPooled = sim.PooledFamily
	// chooseOnWorstFamily: the file's pooled result, with each of its
	// families held to the budget (sim.WorstFamilyRates).
	chooseOnWorstFamily = "worst-family"
)

// settingsSource is a replay whose curves choose every policy's setting
// (simulate --settings-from): simulate's own JSON of the same scenario,
// models and step settings, typically of the training series.
type settingsSource struct {
	path   string
	split  string
	budget float64 // the file's --budget (its own summaries'; not the one chosen at)
	// pooled: every result's settings are chosen on the file's pooled
	// result (--choose-on pooled or worst-family), not on its family's;
	// worstRates, set with worst-family, is that result with each of the
	// file's families held to the budget (sim.WorstFamilyRates).
	pooled     bool
	worstRates *sim.Report
	// reports are the file's results by family name (sim.PooledFamily
	// for its pooled one), as reports of curves.
	reports  map[string]*sim.Report
	families []string // its families, without the pooled result
}

// readSettingsSource reads path, simulate's JSON output, and checks that
// its replay is one whose settings carry over to this run: the same
// scenario, activation knob, models and step settings, and every family of
// this run, or (pooled) a pooled result to choose every family's on.
func readSettingsSource(path string, sc sim.Scenario, knob string, finer int, models []modelInfo, steps *stepsInfo, families []string, mode string) (*settingsSource, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, fmt.Errorf("%s: empty (a shell redirection to the file an earlier run wrote, in this very command, empties it before the run: write the JSON to another file)", path)
	}
	var out output
	if err := json.Unmarshal(raw, &out); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			if typ.Field == "" {
				return nil, fmt.Errorf("%s: not simulate's JSON output (--format json): %s, not an object", path, withArticle(typ.Value))
			}
			field := strings.ReplaceAll(typ.Field, "familyResult.", "") // the Go type embedded, not a key
			return nil, fmt.Errorf("%s: not simulate's JSON output (--format json): %s holds %s where simulate's has %s", path, field, withArticle(typ.Value), withArticle(jsonKind(typ.Type)))
		}
		return nil, fmt.Errorf("%s: not simulate's JSON output (--format json): %w", path, err)
	}
	if out.Family == "" || len(out.Policies) == 0 || len(out.Models) != len(models) || (out.Family == sim.PooledFamily && len(out.Families) == 0) {
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
			flag := "--admission-model"
			if m.Role == engine.RoleSecond {
				flag = "--capacity-model"
			}
			return nil, fmt.Errorf("%s: replayed the %s host's model %s (%s); this run's %s is %s (%s): settings chosen for another model; give the same %s", path, m.Role, o.Name, short(o.Digest), flag, m.Name, short(m.Digest), flag)
		}
	}
	if !equalSteps(out.Steps, steps) {
		return nil, fmt.Errorf("%s: %s; this run: %s: give the same --max-scale-up, --max-scale-down, --hysteresis and --hold-band", path, describeSteps(out.Steps), describeSteps(steps))
	}
	for _, p := range out.Policies {
		if p.Name == sim.PolicyActivation && p.KnobName != knob {
			return nil, fmt.Errorf("%s: swept the activation's %s; this run sweeps %s: give the same --knob", path, p.KnobName, knob)
		}
	}
	if theirs := max(out.SweepFiner, 1); theirs != finer {
		return nil, fmt.Errorf("%s: swept %s; this run %s: give the same --sweep-finer", path, describeFiner(theirs), describeFiner(finer))
	}
	src := &settingsSource{path: path, split: out.Split, budget: out.Budget, reports: map[string]*sim.Report{},
		pooled: mode == chooseOnPooled || mode == chooseOnWorstFamily}
	results := append([]familyResult{out.familyResult}, out.Families...)
	for i := range results {
		fr := &results[i]
		rep := &sim.Report{Scenario: out.Scenario, Family: fr.Family, Series: fr.Series, RequestFactor: fr.RequestFactor}
		for _, p := range fr.Policies {
			rep.Curves = append(rep.Curves, sim.Curve{Policy: p.Name, KnobName: p.KnobName, Points: p.Curve})
		}
		src.reports[fr.Family] = rep
		if fr.Family != sim.PooledFamily {
			src.families = append(src.families, fr.Family)
		}
	}
	if src.pooled {
		if src.reports[sim.PooledFamily] == nil {
			return nil, fmt.Errorf("%s: replayed one family, %s, and so has no pooled result to choose on: replay several families there, or leave out --choose-on %s", path, strings.Join(src.families, ", "), mode)
		}
		if mode == chooseOnWorstFamily {
			fams := make([]*sim.Report, len(src.families))
			for i, f := range src.families {
				fams[i] = src.reports[f]
			}
			if src.worstRates, err = sim.WorstFamilyRates(src.reports[sim.PooledFamily], fams); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		return src, nil
	}
	for _, f := range families {
		if src.reports[f] == nil {
			return nil, fmt.Errorf("%s: replayed families %s, not %s: settings are chosen on the same family's series (--choose-on %s or %s chooses every family's on the file's pooled series)", path, strings.Join(src.families, ", "), f, chooseOnPooled, chooseOnWorstFamily)
		}
	}
	return src, nil
}

// on is the file's result the settings of rep's family are chosen on
// (nil when it has none: a pooled result over other families).
func (src *settingsSource) on(rep *sim.Report, families []string) *sim.Report {
	switch {
	case src.worstRates != nil:
		return src.worstRates
	case src.pooled:
		return src.reports[sim.PooledFamily]
	case rep.Family == sim.PooledFamily && !src.poolsThese(families):
		return nil
	}
	return src.reports[rep.Family]
}

// checkSweeps says, before any replay, whether every policy this run
// replays was replayed in the file with the same sweep (its knob's name
// and values), in each of the file's results it reads: those of families
// (and the pooled one when it reads it).
func (src *settingsSource) checkSweeps(policies []sim.Policy, families []string) error {
	names := slices.Clone(families)
	switch {
	case src.pooled:
		// With worst-family too: sim.WorstFamilyRates has checked that
		// the file's families swept as its pooled result did.
		names = []string{sim.PooledFamily}
	case src.poolsThese(families):
		names = append(names, sim.PooledFamily)
	}
	for _, name := range names {
		rep := src.reports[name]
		for _, p := range policies {
			c := rep.Curve(p.Name())
			if c == nil {
				return fmt.Errorf("%s: family %s: policy %s was not replayed there", src.path, name, p.Name())
			}
			kn, knobs := p.Knob(), c.Knobs()
			if c.KnobName != kn.Name || !slices.Equal(knobs, kn.Values) {
				other := ""
				if len(knobs) == len(kn.Values) && c.KnobName == kn.Name {
					other = ", other values"
				}
				return fmt.Errorf("%s: family %s: policy %s swept %s over %d settings there, %s over %d here%s: replay it again with this version", src.path, name, p.Name(), quoteKnob(c.KnobName), len(knobs), quoteKnob(kn.Name), len(kn.Values), other)
			}
		}
	}
	return nil
}

// describeFiner says how fine a replay's sweeps were (--sweep-finer n).
func describeFiner(n int) string {
	if n <= 1 {
		return "at the default steps"
	}
	return fmt.Sprintf("%d times finer (--sweep-finer %d)", n, n)
}

// poolsThese says whether the file's pooled result is over exactly the
// families this run replays (and, with several, pools).
func (src *settingsSource) poolsThese(families []string) bool {
	return len(families) > 1 && src.reports[sim.PooledFamily] != nil && src.sameFamilies(families)
}

// sameFamilies says whether the file replayed exactly these families.
func (src *settingsSource) sameFamilies(families []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(families)), slices.Sorted(slices.Values(src.families)))
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
		return "no step limits (" + stepsPolicy + " not replayed)"
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
	return stepsPolicy + " with " + strings.Join(set, ", ")
}

// withArticle is a JSON kind with its indefinite article.
func withArticle(kind string) string {
	if strings.IndexByte("aeiou", kind[0]) >= 0 {
		return "an " + kind
	}
	return "a " + kind
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	}
	return "number"
}

// settingsFrom is a family's (or the pooled) figures at the settings
// chosen on another replay, under each holding of the budget.
type settingsFrom struct {
	File  string `json:"file"`
	Split string `json:"split"`
	// ChosenOn is the file's result the settings were chosen on: this
	// family's, or "pooled" (its pooled series: the run's pooled result's
	// settings, and with --choose-on pooled or worst-family every
	// family's, one setting for every family), ChosenOnFamilies the
	// families it pools with either.
	ChosenOn         string   `json:"chosen_on"`
	ChosenOnFamilies []string `json:"chosen_on_families,omitempty"`
	// EachFamilyWithin says (--choose-on worst-family) that each setting
	// is the densest on the pooled series among those that keep each of
	// ChosenOnFamilies within the budget there, as the holding holds it:
	// the worst family's rate is held, not the pooled one.
	EachFamilyWithin bool `json:"each_family_within_budget,omitempty"`
	// Budget is the budget the settings are chosen at (this run's),
	// FileBudget the one the file was replayed at (its own summaries').
	Budget     float64 `json:"budget"`
	FileBudget float64 `json:"file_budget"`
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

// chooseOn reads rep at the settings src chose for its family (nil, nil
// when src has no result to choose them on: a pooled result over other
// families). fitted are the series of each family the models'
// provenance lists as trained or validated on.
func (src *settingsSource) chooseOn(rep *sim.Report, families []string, budget float64, modelThr *float64, fitted map[string]map[string]bool) (*settingsFrom, error) {
	on := src.on(rep, families)
	if on == nil {
		if rep.Family == sim.PooledFamily {
			return nil, nil
		}
		return nil, fmt.Errorf("--settings-from %s: no family %s", src.path, rep.Family)
	}
	sf := &settingsFrom{File: src.path, Split: src.split, ChosenOn: on.Family, Budget: budget, FileBudget: src.budget}
	if src.pooled {
		sf.ChosenOnFamilies, sf.EachFamilyWithin = src.families, src.worstRates != nil
	}
	there := map[string]bool{}
	for _, s := range on.Series {
		k := seriesKey(on.Family, s)
		there[k] = true
		if family, name, _ := strings.Cut(k, "/"); fitted[family][name] {
			sf.Fitted++
		}
	}
	for _, s := range rep.Series {
		if there[seriesKey(rep.Family, s)] {
			sf.Overlap++
		}
	}
	for _, h := range sim.Holdings() {
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

// seriesKey is series of a result of family as family/name, the name a
// pooled result gives it (sim.Pool; a family is never empty: traceDirs
// names each directory's), so that series of two results compare.
func seriesKey(family, series string) string {
	if family == sim.PooledFamily {
		return series
	}
	return family + "/" + series
}

// writeSettingsFrom says what the settings chosen on the other replay give
// here, under each holding, and the margins to set that they are. family
// is the result's (a pooled result's margins are no family's to set).
func writeSettingsFrom(w io.Writer, sf *settingsFrom, family string) {
	var why []string
	if sf.FileBudget != sf.Budget && sf.FileBudget > 0 {
		why = append(why, fmt.Sprintf("the file was replayed at budget %g, its settings are chosen here at %g", sf.FileBudget, sf.Budget))
	}
	if sf.Overlap > 0 {
		why = append(why, fmt.Sprintf("%d of these series were replayed there too: not out of sample", sf.Overlap))
	}
	if sf.Fitted > 0 {
		why = append(why, fmt.Sprintf("%d of the series they were chosen on are ones the models were trained or validated on, where the models' counts look safer than on new series: the activation's setting may be too loose here", sf.Fitted))
	}
	on := ""
	if len(sf.ChosenOnFamilies) > 0 {
		on = "'s pooled series of " + strings.Join(sf.ChosenOnFamilies, ", ")
		if sf.EachFamilyWithin {
			on += ", each of those families within the budget there"
		}
		if family != sim.PooledFamily {
			on += ", one setting for every family"
		}
	}
	fmt.Fprintf(w, "settings chosen on %s%s (its %s split) at budget %g, read here", sf.File, on, sf.Split, sf.Budget)
	for _, s := range why {
		fmt.Fprint(w, "; "+s)
	}
	fmt.Fprintln(w, ":")
	for _, c := range sf.Holdings {
		rate := func(p *sim.Chosen) string {
			// three digits, trailing zeros kept ("0.500%"), but no
			// bare point ("100.%")
			r := strings.TrimSuffix(fmt.Sprintf("%#.3g", 100*p.ViolationRate), ".") + "%"
			if !p.WithinBudget {
				r += ", over the budget"
			}
			return r
		}
		byName := map[string]*sim.Chosen{}
		for i := range c.Policies {
			byName[c.Policies[i].Policy] = &c.Policies[i]
		}
		baseline := "no baseline has a setting within the budget there"
		if best := byName[c.BestBaseline]; best != nil {
			baseline = fmt.Sprintf("the best baseline %s at %s: %.3f (%s)", best.Policy, knobText(best), best.Density, rate(best))
		}
		a := c.Activation
		var line string
		switch {
		case a == nil:
			line = "activation has no setting within the budget there; " + baseline
		case !a.WithinBudget:
			// A density over the budget is no lead over one within it.
			line = fmt.Sprintf("activation %.3f (%s %s): no comparison; %s", a.Density, rateName(c.Holding), rate(a), baseline)
		case byName[c.BestBaseline] == nil:
			line = fmt.Sprintf("activation %.3f (%s %s); %s", a.Density, rateName(c.Holding), rate(a), baseline)
		default:
			line = fmt.Sprintf("activation %.3f (%s %s), %s vs %s", a.Density, rateName(c.Holding), rate(a), optGain(c.GainVsBestBaseline), baseline)
			if within := byName[c.BestWithinBudget]; within != nil && c.BestWithinBudget != c.BestBaseline {
				line += fmt.Sprintf(", %s vs the best within the budget here, %s at %s: %.3f", optGain(sim.Gain(a.Density, within.Density)), within.Policy, knobText(within), within.Density)
			}
			gap := "undefined"
			if c.GapClosed != nil {
				gap = fmt.Sprintf("%.2f", *c.GapClosed)
			}
			line += fmt.Sprintf("; gap to the oracle closed from %s: %s", c.BestBaseline, gap)
		}
		perHost := c.Holding == sim.HoldPerHost.String()
		if m := c.Margins; m != nil {
			// The ones to set: a family's, where they kept to the budget.
			line += "; " + marginKeys(m, perHost, family != sim.PooledFamily && a.WithinBudget)
		} else if a != nil {
			line += "; activation at " + knobText(a)
		}
		fmt.Fprintf(w, "  %s: %s\n", c.Holding, line)
		if st := byName[stepsPolicy]; st != nil {
			steps := fmt.Sprintf("%.3f (%s %s)", st.Density, rateName(c.Holding), rate(st))
			if m := c.StepsMargins; m != nil {
				steps += ", the strategy's " + marginKeys(m, perHost, false)
			}
			fmt.Fprintf(w, "    %s, with the step limits replayed: %s\n", stepsPolicy, steps)
		}
		if len(c.OverBudget) > 0 {
			fmt.Fprintf(w, "    over the budget here: %s\n", strings.Join(c.OverBudget, ", "))
		}
		if len(c.Unset) > 0 {
			fmt.Fprintf(w, "    no setting within the budget there: %s\n", strings.Join(c.Unset, ", "))
		}
	}
}

// marginKeys gives margins as the front ends' keys: margin when both hosts
// share it (one setting for both), first_margin and second_margin
// otherwise; toSet says they are the ones to set.
func marginKeys(m *hostMargins, perHost, toSet bool) string {
	var keys string
	if perHost {
		keys = fmt.Sprintf("first_margin %.3f, second_margin %.3f", m.First, m.Second)
	} else {
		keys = fmt.Sprintf("margin %.3f", m.First)
	}
	if toSet {
		if perHost {
			return keys + " (the ones to set)"
		}
		return keys + " (the one to set)"
	}
	return keys
}

// knobText is a chosen setting: the knob and its value, or the two hosts'
// values when each has its own.
func knobText(c *sim.Chosen) string {
	name := c.KnobName
	if name == "" {
		return "its one setting"
	}
	if c.FirstKnob == c.SecondKnob {
		return fmt.Sprintf("%s %.6g", name, c.FirstKnob)
	}
	return fmt.Sprintf("%s %.6g / %.6g", name, c.FirstKnob, c.SecondKnob)
}

// rateName names the violation rate a holding holds.
func rateName(holding string) string {
	if holding == sim.HoldPair.String() {
		return "violation rate"
	}
	return "worse host's violation rate"
}

func optGain(v *float64) string {
	if v == nil {
		return "undefined"
	}
	return fmt.Sprintf("%+.1f%%", 100**v)
}
