package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/sim"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// twoFamilies writes families alpha and beta under one root: n synthetic
// series of the given length, and n+1 series half as long again, so that
// no family's figures are another's or the pooled ones.
func twoFamilies(t *testing.T, n, length int) (alpha, beta string) {
	t.Helper()
	root := t.TempDir()
	alpha, beta = filepath.Join(root, "alpha"), filepath.Join(root, "beta")
	if err := os.Rename(seriesDir(t, n, length), alpha); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(seriesDir(t, n+1, length*3/2), beta); err != nil {
		t.Fatal(err)
	}
	return alpha, beta
}

// simulateDoc runs simulate with --format json and decodes its output.
func simulateDoc(t *testing.T, args ...string) (*output, string) {
	t.Helper()
	code, stdout, stderr := runCmd(t, "", false, append(append([]string{"simulate"}, args...), "--format", "json")...)
	if code != exitOK {
		t.Fatalf("simulate %v: exit %d: %s", args, code, stderr)
	}
	var out output
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	return &out, stdout
}

// replayFile runs simulate with --format json and writes its output to
// a file of the given name, for --settings-from, and decodes it.
func replayFile(t *testing.T, name string, args ...string) (string, *output) {
	t.Helper()
	doc, raw := simulateDoc(t, args...)
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, doc
}

// results are a document's results: the pooled (or only) one first.
func (out *output) results() []familyResult {
	return append([]familyResult{out.familyResult}, out.Families...)
}

// settingsBudget is TestSimulateSettingsFrom's budget.
const settingsBudget = 0.05

// pick is the test's own reading of a choice: the point of highest density
// whose rate is within settingsBudget (ties: the lower rate, then the
// first), -1 when none is.
func pick(points []sim.Point, rate, density func(sim.Point) float64) int {
	best := -1
	for i, p := range points {
		if rate(p) > settingsBudget {
			continue
		}
		if best < 0 || density(p) > density(points[best]) || (density(p) == density(points[best]) && rate(p) < rate(points[best])) {
			best = i
		}
	}
	return best
}

// checkChosen recomputes, from the two documents' curves, every setting
// fr's settings_from says was chosen on the result on (at settingsBudget,
// under each holding) and what it reads in fr, counting in compared the
// policies compared.
func checkChosen(t *testing.T, fr, on familyResult, compared map[string]int) {
	t.Helper()
	const budget = settingsBudget
	firstRate := func(p sim.Point) float64 { return p.FirstViolationRate }
	secondRate := func(p sim.Point) float64 { return p.SecondViolationRate }
	worse := func(p sim.Point) float64 { return max(p.FirstViolationRate, p.SecondViolationRate) }
	pairRate := func(p sim.Point) float64 { return p.ViolationRate }
	density := func(p sim.Point) float64 { return p.Density }
	sf := fr.SettingsFrom
	if sf.ChosenOn != on.Family {
		t.Errorf("family %s: chosen on the file's %s result, want its %s one", fr.Family, sf.ChosenOn, on.Family)
	}
	for hi, h := range sim.Holdings() {
		c := sf.Holdings[hi]
		if c.Holding != h.String() || c.Budget != budget {
			t.Errorf("family %s: holding %d is %q at %g, want %q at %g", fr.Family, hi, c.Holding, c.Budget, h, budget)
		}
		chosen := map[string]sim.Chosen{}
		best, within := "", ""
		for _, p := range c.Policies {
			chosen[p.Policy] = p
			if !sim.IsBaseline(p.Policy) {
				continue
			}
			if best == "" || p.Density > chosen[best].Density {
				best = p.Policy
			}
			if p.WithinBudget && (within == "" || p.Density > chosen[within].Density) {
				within = p.Policy
			}
		}
		if c.BestBaseline != best || c.BestWithinBudget != within || (within != "" && c.BestWithinBudgetDensity != chosen[within].Density) {
			t.Errorf("family %s, %s: best baseline %s, within the budget %s (%v); want %s, %s", fr.Family, h, c.BestBaseline, c.BestWithinBudget, c.BestWithinBudgetDensity, best, within)
		}
		for pi, p := range fr.Policies {
			tc := on.Policies[pi].Curve
			if on.Policies[pi].Name != p.Name {
				t.Fatalf("family %s: policy %d is %s here, %s in training", fr.Family, pi, p.Name, on.Policies[pi].Name)
			}
			var fi, si int
			switch h {
			case sim.HoldPair:
				fi = pick(tc, pairRate, density)
				si = fi
			case sim.HoldEachHost:
				fi = pick(tc, worse, density)
				si = fi
			default:
				fi = pick(tc, firstRate, func(p sim.Point) float64 { return p.FirstDensity })
				si = pick(tc, secondRate, func(p sim.Point) float64 { return p.SecondDensity })
			}
			got, ok := chosen[p.Name]
			if fi < 0 || si < 0 {
				if ok {
					t.Errorf("family %s, %s: %s has no setting within the budget in training, yet reads %+v", fr.Family, h, p.Name, got)
				}
				continue
			}
			a, b := p.Curve[fi], p.Curve[si]
			want := sim.Chosen{Policy: p.Name, FirstKnob: a.Knob, SecondKnob: b.Knob, Density: a.Density, ViolationRate: a.ViolationRate}
			switch h {
			case sim.HoldEachHost:
				want.ViolationRate = worse(a)
			case sim.HoldPerHost:
				want.Density = (a.FirstDensity + b.SecondDensity) / 2
				want.ViolationRate = max(a.FirstViolationRate, b.SecondViolationRate)
			}
			want.WithinBudget = want.ViolationRate <= budget
			if !ok || got.FirstKnob != want.FirstKnob || got.SecondKnob != want.SecondKnob ||
				math.Abs(got.Density-want.Density) > 1e-9 || math.Abs(got.ViolationRate-want.ViolationRate) > 1e-9 || got.WithinBudget != want.WithinBudget {
				t.Errorf("family %s, %s: %s reads %+v (%v), want %+v", fr.Family, h, p.Name, got, ok, want)
			}
			compared[p.Name]++
			if p.Name == stepsPolicy {
				m := c.StepsMargins
				if m == nil || math.Abs(m.First-logit(want.FirstKnob)) > 1e-6 || math.Abs(m.Second-logit(want.SecondKnob)) > 1e-6 {
					t.Errorf("family %s, %s: steps margins %+v; activation-steps' thresholds %v / %v are %v / %v logits over 0.5",
						fr.Family, h, m, want.FirstKnob, want.SecondKnob, logit(want.FirstKnob), logit(want.SecondKnob))
				}
			}
			if p.Name == sim.PolicyActivation {
				m := c.Margins
				if m == nil || math.Abs(m.First-logit(want.FirstKnob)) > 1e-6 || math.Abs(m.Second-logit(want.SecondKnob)) > 1e-6 {
					t.Errorf("family %s, %s: activation margins %+v; its thresholds %v / %v are %v / %v logits over 0.5",
						fr.Family, h, m, want.FirstKnob, want.SecondKnob, logit(want.FirstKnob), logit(want.SecondKnob))
				}
				if c.Activation == nil || c.Activation.Density != got.Density {
					t.Errorf("family %s, %s: activation %+v, its policy's figures %+v", fr.Family, h, c.Activation, got)
				}
			}
		}
	}
}

// TestSimulateSettingsFrom chooses every policy's settings on the
// training series' replay and reads them on the held-out one: each figure
// is recomputed here from the two documents' curves.
func TestSimulateSettingsFrom(t *testing.T) {
	alpha, beta := twoFamilies(t, 8, 700)
	traceFlag := alpha + "," + beta
	common := []string{"--traces", traceFlag, "--budget", "5%", "--max-scale-up", "100%"}
	trainFile, train := replayFile(t, "train.json", append(common, "--split", "train")...)
	test, _ := simulateDoc(t, append(common, "--split", "test", "--settings-from", trainFile)...)
	trainBy := map[string]familyResult{}
	for _, fr := range train.results() {
		trainBy[fr.Family] = fr
	}
	results := test.results()
	if len(results) != 3 {
		t.Fatalf("%d results, want pooled, alpha and beta", len(results))
	}
	compared := map[string]int{}
	for _, fr := range results {
		sf := fr.SettingsFrom
		if sf == nil || sf.File != trainFile || sf.Split != splitTrain || sf.Overlap != 0 || len(sf.Holdings) != 3 {
			t.Fatalf("family %s: settings_from %+v; want three holdings chosen on %s's train split, no series in both", fr.Family, sf, trainFile)
		}
		checkChosen(t, fr, trainBy[fr.Family], compared)
	}

	// Every family's activation and best baselines had a setting in
	// training under every holding.
	if compared[sim.PolicyActivation] != 9 || compared[stepsPolicy] != 9 || compared[sim.PolicyUsageThreshold] == 0 || compared[sim.PolicyOracle] != 9 {
		t.Errorf("settings compared %v, want the activation's, activation-steps' and the oracle's in each of 3 results x 3 holdings", compared)
	}

	// Settings chosen on the very replay they are read on are its own
	// summaries' (and said not to be out of sample).
	self, _ := replayFile(t, "test.json", append(common, "--split", "test")...)
	again, _ := simulateDoc(t, append(common, "--split", "test", "--settings-from", self)...)
	for _, fr := range again.results() {
		sf := fr.SettingsFrom
		if sf == nil || sf.Overlap != len(fr.Series) {
			t.Fatalf("family %s: settings_from %+v; want every one of its %d series in both", fr.Family, sf, len(fr.Series))
		}
		for i, s := range []sim.Summary{fr.Summary, fr.SummaryEachHost, fr.SummaryPerHost} {
			c := sf.Holdings[i]
			if c.Activation == nil || math.Abs(c.Activation.Density-s.ActivationDensity) > 1e-12 ||
				c.BestBaseline != s.BestBaseline || math.Abs(c.BestBaselineDensity-s.BestBaselineDensity) > 1e-12 || len(c.OverBudget) > 0 {
				t.Errorf("family %s, %s chosen on itself: %+v; its summary %+v", fr.Family, c.Holding, c.ChosenSummary, s)
			}
		}
	}

	code, stdout, stderr := runCmd(t, "", false, append([]string{"simulate"}, append(common, "--split", "test", "--settings-from", self)...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"settings chosen on " + self + " (its test split) at budget 0.05, read here; ",
		"of these series were replayed there too: not out of sample:\n",
		"  the pair's budget: activation ",
		"  each host within the budget, one setting: activation ",
		"  each host within the budget, a setting per host: activation ",
	} {
		if strings.Count(stdout, want) != 3 { // alpha, beta and pooled
			t.Errorf("the table says %q %d times, want 3:\n%s", want, strings.Count(stdout, want), stdout)
		}
	}
}

// A file whose settings do not carry over is refused before any replay,
// naming the flag and what differs.
func TestSimulateSettingsFromRefused(t *testing.T) {
	alpha, beta := twoFamilies(t, 3, 300)
	common := []string{"--traces", alpha + "," + beta, "--split", "all", "--max-scale-up", "100%"}
	_, good := simulateDoc(t, common...)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodFile := write("good.json", good)
	var doc map[string]any
	if err := json.Unmarshal([]byte(good), &doc); err != nil {
		t.Fatal(err)
	}
	doc["models"].([]any)[0].(map[string]any)["digest"] = "sha256:0123456789abcdef"
	otherModels, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	modelsFile := write("models.json", string(otherModels))
	edit := func(name string, change func(doc map[string]any)) string {
		var doc map[string]any
		if err := json.Unmarshal([]byte(good), &doc); err != nil {
			t.Fatal(err)
		}
		change(doc)
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, string(raw))
	}
	slackFile := edit("slack.json", func(doc map[string]any) { doc["scenario"].(map[string]any)["target_slack"] = 0.9 })
	noLinear := edit("nolinear.json", func(doc map[string]any) {
		fam := doc["families"].([]any)[1].(map[string]any)
		fam["policies"] = fam["policies"].([]any)[:len(fam["policies"].([]any))-1] // linear is last
	})
	fewer := edit("fewer.json", func(doc map[string]any) {
		p := doc["policies"].([]any)[1].(map[string]any) // p95-window
		p["curve"] = p["curve"].([]any)[1:]
	})
	gamma := filepath.Join(filepath.Dir(alpha), "gamma")
	if err := os.Rename(seriesDir(t, 2, 300), gamma); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"empty", append(common, "--settings-from", ""), exitUsage, "--settings-from: empty"},
		{"missing", append(common, "--settings-from", filepath.Join(dir, "none.json")), exitError, "--settings-from: open " + filepath.Join(dir, "none.json")},
		{"not JSON", append(common, "--settings-from", write("table.txt", "scenario shifted, all split\n")), exitError, "table.txt: not simulate's JSON output (--format json)"},
		{"other JSON", append(common, "--settings-from", write("other.json", `{"name": "x"}`)), exitError, "other.json: not simulate's JSON output (--format json): no family, policies or models"},
		{"another seed", append(common, "--seed", "2", "--settings-from", goodFile), exitError, "good.json: replayed scenario shifted (seed 1, max shift 30); this run replays shifted (seed 2, max shift 30): give the same --scenario, --seed and --max-shift"},
		{"another scenario", append(common, "--scenario", "two-apps", "--settings-from", goodFile), exitError, "good.json: replayed scenario shifted"},
		{"other models", append(common, "--settings-from", modelsFile), exitError, "models.json: replayed the first host's model admission (sha256:0123456789ab); this run's --admission-model is admission (sha256:"},
		{"no step limits", []string{"--traces", alpha + "," + beta, "--split", "all", "--settings-from", goodFile}, exitError, `good.json: activation-steps with max_scale_up "100%"; this run: no step limits (activation-steps not replayed): give the same --max-scale-up`},
		{"an empty file", append(common, "--settings-from", write("empty.json", "\n")), exitError, "empty.json: empty (a shell redirection to the file"},
		{"a list", append(common, "--settings-from", write("list.json", "[]")), exitError, "list.json: not simulate's JSON output (--format json): an array, not an object"},
		{"a string for the policies", append(common, "--settings-from", edit("pols.json", func(doc map[string]any) { doc["policies"] = "none" })), exitError, "pols.json: not simulate's JSON output (--format json): policies holds a string where simulate's has an array"},
		{"no families' results", append(common, "--settings-from", edit("nofam.json", func(doc map[string]any) { delete(doc, "families") })), exitError, "nofam.json: not simulate's JSON output (--format json): no family, policies or models"},
		{"another knob", append(common, "--knob", "per_branch", "--settings-from", goodFile), exitError, "good.json: swept the activation's output_threshold; this run sweeps per_branch: give the same --knob"},
		{"finer sweeps", append(common, "--sweep-finer", "2", "--settings-from", goodFile), exitError, "good.json: swept at the default steps; this run 2 times finer (--sweep-finer 2): give the same --sweep-finer"},
		{"another target slack", append(common, "--settings-from", slackFile), exitError, "slack.json: replayed scenario shifted with other settings than this run's (target_slack differ)"},
		{"a policy not replayed there", append(common, "--settings-from", noLinear), exitError, "nolinear.json: family beta: policy linear was not replayed there"},
		{"another sweep", append(common, "--settings-from", fewer), exitError, `fewer.json: family pooled: policy p95-window swept "m" over`},
		{"another family", []string{"--traces", alpha + "," + gamma, "--split", "all", "--max-scale-up", "100%", "--settings-from", goodFile}, exitError, "good.json: replayed families alpha, beta, not gamma"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "", false, append([]string{"simulate"}, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, stderr, c.code, c.want)
			}
			if stdout != "" {
				t.Errorf("wrote %q to stdout on error", stdout)
			}
		})
	}
}

// A replay with finer sweeps reads its settings from a file replayed with
// the same --sweep-finer, and refuses one replayed at the default steps,
// naming the flag, before anything is replayed.
func TestSimulateSettingsFromSweepFiner(t *testing.T) {
	dir := seriesDir(t, 2, 400)
	common := []string{"--traces", dir, "--split", "all", "--budget", "0.05"}
	_, fine := simulateDoc(t, append(common, "--sweep-finer", "3")...)
	var doc struct {
		SweepFiner int `json:"sweep_finer"`
	}
	if err := json.Unmarshal([]byte(fine), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SweepFiner != 3 {
		t.Errorf("sweep_finer %d in the JSON, want 3", doc.SweepFiner)
	}
	file := filepath.Join(t.TempDir(), "fine.json")
	if err := os.WriteFile(file, []byte(fine), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "", false, append([]string{"simulate", "--sweep-finer", "3", "--settings-from", file}, common...)...); code != exitOK {
		t.Errorf("the same --sweep-finer: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := runCmd(t, "", false, append([]string{"simulate", "--settings-from", file}, common...)...)
	if want := "fine.json: swept 3 times finer (--sweep-finer 3); this run at the default steps: give the same --sweep-finer"; code != exitError || !strings.Contains(stderr, want) || stdout != "" {
		t.Errorf("the default steps: exit %d, stdout %q, stderr %q; want exit %d naming %q", code, stdout, stderr, exitError, want)
	}
}

// One family's replay reads its settings from a file of several, and a
// pooled result over other families than the file's has none (a note
// says so).
func TestSimulateSettingsFromFamilySubset(t *testing.T) {
	alpha, beta := twoFamilies(t, 3, 300)
	_, both := simulateDoc(t, "--traces", alpha+","+beta, "--split", "all")
	file := filepath.Join(t.TempDir(), "both.json")
	if err := os.WriteFile(file, []byte(both), 0o644); err != nil {
		t.Fatal(err)
	}
	one, _ := simulateDoc(t, "--traces", beta, "--split", "all", "--settings-from", file)
	if one.Family != "beta" || one.SettingsFrom == nil || one.SettingsFrom.Overlap != len(one.Series) {
		t.Fatalf("beta alone: family %s, settings_from %+v", one.Family, one.SettingsFrom)
	}
	// The linear ablation was fit on both families' training series
	// there, on beta's here; the requests' factor, set on each family's
	// own series, is the same.
	if want := "the linear ablation is fit on the training series of every family replayed: of beta here, of alpha, beta where the settings were chosen, so its setting carries over to another fit"; !slices.Contains(one.Notes, want) {
		t.Errorf("notes %q, want %q", one.Notes, want)
	}
	if slices.ContainsFunc(one.Notes, func(n string) bool { return strings.Contains(n, "requests x") }) {
		t.Errorf("notes %q say the requests' factor differs", one.Notes)
	}
	// A held-out replay's factor is set on the training series, the
	// file's (--split all) on every series: said.
	test, _ := simulateDoc(t, "--traces", beta, "--split", "test", "--settings-from", file)
	if !slices.ContainsFunc(test.Notes, func(n string) bool {
		return strings.HasPrefix(n, "family beta: requests x") && strings.HasSuffix(n, "where the settings were chosen (other series set the factor there): a setting carries over as another request size")
	}) {
		t.Errorf("notes %q do not say the requests' factor differs", test.Notes)
	}
	// A sweep the file got wrong in a family this run does not read is
	// not this run's concern.
	var doc map[string]any
	if err := json.Unmarshal([]byte(both), &doc); err != nil {
		t.Fatal(err)
	}
	alphaDoc := doc["families"].([]any)[0].(map[string]any)
	p95 := alphaDoc["policies"].([]any)[1].(map[string]any)
	p95["curve"] = p95["curve"].([]any)[1:]
	broken, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	brokenFile := filepath.Join(t.TempDir(), "broken.json")
	if err := os.WriteFile(brokenFile, broken, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "", false, "simulate", "--traces", beta, "--split", "all", "--settings-from", brokenFile); code != exitOK {
		t.Errorf("beta alone from a file whose alpha sweep is short: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, "", false, "simulate", "--traces", alpha, "--split", "all", "--settings-from", brokenFile); code != exitError || !strings.Contains(stderr, "family alpha: policy p95-window swept") {
		t.Errorf("alpha from a file whose alpha sweep is short: exit %d, %s", code, stderr)
	}
	if a := one.SettingsFrom.Holdings[0].Activation; a == nil || math.Abs(a.Density-one.Summary.ActivationDensity) > 1e-12 {
		t.Errorf("beta alone, chosen on beta's own curves in the file: activation %+v, its summary's %v", a, one.Summary.ActivationDensity)
	}
	// A file of three families: the two replayed here pool otherwise.
	gamma := filepath.Join(filepath.Dir(alpha), "gamma")
	if err := os.Rename(seriesDir(t, 2, 300), gamma); err != nil {
		t.Fatal(err)
	}
	_, three := simulateDoc(t, "--traces", alpha+","+beta+","+gamma, "--split", "all")
	threeFile := filepath.Join(t.TempDir(), "three.json")
	if err := os.WriteFile(threeFile, []byte(three), 0o644); err != nil {
		t.Fatal(err)
	}
	two, _ := simulateDoc(t, "--traces", alpha+","+beta, "--split", "all", "--settings-from", threeFile)
	if two.SettingsFrom != nil || two.Families[0].SettingsFrom == nil || two.Families[1].SettingsFrom == nil {
		t.Errorf("two of three families: pooled settings_from %+v, families' %p %p; want none pooled, each family's", two.SettingsFrom, two.Families[0].SettingsFrom, two.Families[1].SettingsFrom)
	}
	if want := "pooled: no settings chosen (--settings-from " + threeFile + " pools families alpha, beta, gamma, not these)"; !slices.Contains(two.Notes, want) {
		t.Errorf("notes %q, want %q", two.Notes, want)
	}
}

// The table compares the activation only where it keeps to the budget,
// marks each figure over it, names the policies with no setting where it
// was chosen, and gives the margins as the keys to set.
func TestWriteSettingsFrom(t *testing.T) {
	over := sim.Chosen{Policy: sim.PolicyActivation, KnobName: "output_threshold", FirstKnob: 0.5, SecondKnob: 0.5, Density: 0.9, ViolationRate: 0.0125}
	within := sim.Chosen{Policy: sim.PolicyActivation, KnobName: "output_threshold", FirstKnob: 0.7, SecondKnob: 0.6, Density: 0.9, ViolationRate: 0.008, WithinBudget: true}
	steps := sim.Chosen{Policy: stepsPolicy, KnobName: "output_threshold", FirstKnob: 0.7, SecondKnob: 0.6, Density: 0.85, ViolationRate: 0.011}
	base := sim.Chosen{Policy: sim.PolicyMaxWindow, KnobName: "m", FirstKnob: 0.1, SecondKnob: 0.1, Density: 0.8, ViolationRate: 0.006, WithinBudget: true}
	nsigma := sim.Chosen{Policy: sim.PolicyNSigma, KnobName: "N", FirstKnob: 3, SecondKnob: 3.5, Density: 0.95, ViolationRate: 0.02}
	loss, lossGap := 0.9/0.95-1, -0.5
	sf := &settingsFrom{File: "train.json", Split: splitTrain, Budget: 0.01, FileBudget: 0.001, Overlap: 2, Fitted: 3, Holdings: []chosenResult{
		{ChosenSummary: sim.ChosenSummary{Budget: 0.01, Holding: sim.HoldPair.String(), Policies: []sim.Chosen{base, over},
			Unset: []string{sim.PolicyNSigma}, BestBaseline: sim.PolicyMaxWindow, BestBaselineDensity: 0.8, BestWithinBudget: sim.PolicyMaxWindow, BestWithinBudgetDensity: 0.8,
			Activation: &over, OracleDensity: 1, OverBudget: []string{sim.PolicyActivation}},
			Margins: &hostMargins{First: 0, Second: 0}},
		{ChosenSummary: sim.ChosenSummary{Budget: 0.01, Holding: sim.HoldEachHost.String(), Policies: []sim.Chosen{base},
			BestBaseline: sim.PolicyMaxWindow, BestBaselineDensity: 0.8, Unset: []string{sim.PolicyActivation}}},
		{ChosenSummary: sim.ChosenSummary{Budget: 0.01, Holding: sim.HoldPerHost.String(), Policies: []sim.Chosen{nsigma, base, within, steps},
			BestBaseline: sim.PolicyNSigma, BestBaselineDensity: 0.95, BestWithinBudget: sim.PolicyMaxWindow, BestWithinBudgetDensity: 0.8,
			Activation: &within, OracleDensity: 1, GainVsBestBaseline: &loss, GapClosed: &lossGap, OverBudget: []string{sim.PolicyNSigma, stepsPolicy}},
			Margins: &hostMargins{First: 1.25, Second: 0.375}, StepsMargins: &hostMargins{First: 1, Second: 0.375}},
	}}
	var b strings.Builder
	writeSettingsFrom(&b, sf, "crane")
	want := "settings chosen on train.json (its train split) at budget 0.01, read here; the file was replayed at budget 0.001, its settings are chosen here at 0.01; " +
		"2 of these series were replayed there too: not out of sample; " +
		"3 of the series they were chosen on are ones the models were trained or validated on, where the models' counts look safer than on new series: the activation's setting may be too loose here:\n" +
		"  the pair's budget: activation 0.900 (violation rate 1.25%, over the budget): no comparison; the best baseline max-window at m 0.1: 0.800 (0.600%); margin 0.000\n" +
		"    over the budget here: activation\n" +
		"    no setting within the budget there: n-sigma\n" +
		"  each host within the budget, one setting: activation has no setting within the budget there; the best baseline max-window at m 0.1: 0.800 (0.600%)\n" +
		"    no setting within the budget there: activation\n" +
		"  each host within the budget, a setting per host: activation 0.900 (worse host's violation rate 0.800%), -5.3% vs the best baseline n-sigma at N 3 / 3.5: 0.950 (2.00%, over the budget), " +
		"+12.5% vs the best within the budget here, max-window at m 0.1: 0.800; gap to the oracle closed from n-sigma: -0.50; first_margin 1.250, second_margin 0.375 (the ones to set)\n" +
		"    activation-steps, with the step limits replayed: 0.850 (worse host's violation rate 1.10%, over the budget), the strategy's first_margin 1.000, second_margin 0.375\n" +
		"    over the budget here: n-sigma, activation-steps\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	// The pooled result's margins are no family's to set; a knob that is
	// no margin is given as the knob.
	b.Reset()
	sf.Holdings[2].Margins = nil
	writeSettingsFrom(&b, sf, sim.PooledFamily)
	if got := b.String(); strings.Contains(got, "to set") || !strings.Contains(got, "gap to the oracle closed from n-sigma: -0.50; activation at output_threshold 0.7 / 0.6\n") {
		t.Errorf("pooled, no margins:\n%s", got)
	}
	// A rate of 100%, or one that rounds to it, has no bare point.
	for _, r := range []float64{1, 0.99996} {
		b.Reset()
		sf.Holdings[0].Activation.ViolationRate = r
		writeSettingsFrom(&b, sf, "crane")
		if got := b.String(); !strings.Contains(got, "activation 0.900 (violation rate 100%, over the budget)") {
			t.Errorf("rate %v:\n%s", r, got)
		}
	}
}

// Settings chosen on series the models were trained or validated on are
// counted (fitted) and said: the activation's setting chosen there may be
// too loose on new series.
func TestSimulateSettingsFromFitted(t *testing.T) {
	alpha, beta := twoFamilies(t, 8, 700)
	models := filepath.Join(t.TempDir(), "models")
	if code, _, stderr := runCmd(t, "", false, "train", "--traces", alpha, "--out", models, "--epochs", "1", "--quiet"); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	m, err := engine.LoadModelFile(filepath.Join(models, capacityFile))
	if err != nil {
		t.Fatal(err)
	}
	trained := m.Provenance.Series[traces.FamilyName(alpha)]
	common := []string{"--traces", alpha + "," + beta, "--admission-model", filepath.Join(models, admissionFile), "--capacity-model", filepath.Join(models, capacityFile)}
	file, train := replayFile(t, "train.json", append(common, "--split", "train")...)
	want := 0
	for _, s := range train.Families[0].Series {
		if slices.Contains(trained, s) {
			want++
		}
	}
	if train.Families[0].Family != "alpha" || want == 0 {
		t.Fatalf("the premise fails: none of %s's training side %v is among the series trained on %v", train.Families[0].Family, train.Families[0].Series, trained)
	}
	test, _ := simulateDoc(t, append(common, "--split", "test", "--settings-from", file)...)
	for _, c := range []struct {
		fr   familyResult
		want int
	}{{test.familyResult, want}, {test.Families[0], want}, {test.Families[1], 0}} {
		if c.fr.SettingsFrom == nil || c.fr.SettingsFrom.Fitted != c.want {
			t.Errorf("family %s: settings_from %+v, want %d fitted", c.fr.Family, c.fr.SettingsFrom, c.want)
		}
	}
	code, stdout, stderr := runCmd(t, "", false, append([]string{"simulate"}, append(common, "--split", "test", "--settings-from", file)...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if say := fmt.Sprintf("; %d of the series they were chosen on are ones the models were trained or validated on", want); strings.Count(stdout, say) != 2 {
		t.Errorf("the table says %q %d times, want twice (alpha, pooled):\n%s", say, strings.Count(stdout, say), stdout)
	}

	// Chosen on the file's pooled series for a family it never replayed,
	// the series chosen on are alpha's and beta's: alpha's fitted ones
	// count.
	gamma := filepath.Join(t.TempDir(), "gamma")
	if err := os.Rename(seriesDir(t, 3, 700), gamma); err != nil {
		t.Fatal(err)
	}
	unseen, _ := simulateDoc(t, "--traces", gamma, "--split", "all", "--admission-model", filepath.Join(models, admissionFile), "--capacity-model", filepath.Join(models, capacityFile),
		"--settings-from", file, "--choose-on", "pooled")
	if sf := unseen.SettingsFrom; sf == nil {
		t.Errorf("family gamma chosen on the pooled series: no settings_from")
	} else if sf.Fitted != want || sf.Overlap != 0 {
		t.Errorf("family gamma chosen on the pooled series: %d fitted, %d in both; want %d fitted and none in both", sf.Fitted, sf.Overlap, want)
	}
}

// TestSimulateSettingsFromPooled: --choose-on pooled chooses every
// family's settings, and the pooled result's, on the file's pooled
// series: one setting for every family, a family the file never replayed
// too. Each figure is recomputed from the two documents' curves.
func TestSimulateSettingsFromPooled(t *testing.T) {
	alpha, beta := twoFamilies(t, 6, 700)
	gamma := filepath.Join(filepath.Dir(alpha), "gamma")
	if err := os.Rename(seriesDir(t, 5, 1000), gamma); err != nil {
		t.Fatal(err)
	}
	common := []string{"--budget", "5%", "--max-scale-up", "100%"}
	trainFile, train := replayFile(t, "train.json", append(common, "--traces", alpha+","+beta, "--split", "train")...)
	if train.Family != sim.PooledFamily {
		t.Fatalf("the training replay's first result is %s, want the pooled one", train.Family)
	}
	for _, c := range []struct {
		name    string
		args    []string
		results int
		overlap int
	}{
		// a family the file never replayed
		{"unseen family", []string{"--traces", gamma, "--split", "all"}, 1, 0},
		// the file's families, held out: the pooled result too
		{"held out", []string{"--traces", alpha + "," + beta, "--split", "test"}, 3, 0},
		// the very series the file replayed: every one in both
		{"same series", []string{"--traces", alpha + "," + beta, "--split", "train"}, 3, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append(slices.Clone(common), c.args...), "--settings-from", trainFile, "--choose-on", "pooled")
			doc, _ := simulateDoc(t, args...)
			results := doc.results()
			if len(results) != c.results {
				t.Fatalf("%d results, want %d", len(results), c.results)
			}
			compared := map[string]int{}
			for _, fr := range results {
				sf := fr.SettingsFrom
				want := c.overlap
				if want < 0 {
					want = len(fr.Series)
				}
				if sf == nil {
					t.Fatalf("family %s: no settings_from", fr.Family)
				}
				if sf.ChosenOn != sim.PooledFamily || !slices.Equal(sf.ChosenOnFamilies, []string{"alpha", "beta"}) || sf.File != trainFile || sf.Overlap != want || len(sf.Holdings) != 3 {
					t.Fatalf("family %s: chosen on %s's %s result, %d series in both, %d holdings; want three holdings chosen on %s's pooled result, %d series in both",
						fr.Family, sf.File, sf.ChosenOn, sf.Overlap, len(sf.Holdings), trainFile, want)
				}
				checkChosen(t, fr, train.familyResult, compared)
			}
			if compared[sim.PolicyActivation] != 3*c.results {
				t.Errorf("activation compared %d times, want under 3 holdings in %d results", compared[sim.PolicyActivation], c.results)
			}
			if !slices.ContainsFunc(doc.Notes, func(n string) bool {
				return strings.HasPrefix(n, "--choose-on pooled: each policy's settings chosen on the pooled series of "+trainFile+" (families alpha, beta,")
			}) {
				t.Errorf("notes %q: none says the settings are the pooled series'", doc.Notes)
			}
		})
	}

	// The table says whose series chose a family's settings, and the
	// pooled result's; a family the file lacks is read at its own
	// requests' factor, which a note gives beside the file's families'.
	code, stdout, stderr := runCmd(t, "", false, append(append([]string{"simulate"}, common...), "--traces", gamma, "--split", "all", "--settings-from", trainFile, "--choose-on", "pooled")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "settings chosen on " + trainFile + "'s pooled series of alpha, beta, one setting for every family (its train split) at budget 0.05, read here:\n"; !strings.Contains(stdout, want) {
		t.Errorf("the table does not say %q:\n%s", want, stdout)
	}
	gammaDoc, _ := simulateDoc(t, append(append(slices.Clone(common), "--traces", gamma, "--split", "all"), "--settings-from", trainFile, "--choose-on", "pooled")...)
	byFamily := map[string]float64{}
	for _, fr := range train.Families {
		byFamily[fr.Family] = fr.RequestFactor
	}
	if byFamily["alpha"] <= 0 || byFamily["beta"] <= 0 || gammaDoc.RequestFactor <= 0 {
		t.Fatalf("the premise fails: requests' factors alpha %v, beta %v, gamma %v", byFamily["alpha"], byFamily["beta"], gammaDoc.RequestFactor)
	}
	factorNote := fmt.Sprintf("family gamma: requests x%.3f here; where the settings were chosen x%.3f (alpha), x%.3f (beta): a setting carries over as another request size", gammaDoc.RequestFactor, byFamily["alpha"], byFamily["beta"])
	if !slices.Contains(gammaDoc.Notes, factorNote) {
		t.Errorf("notes %q; want %q", gammaDoc.Notes, factorNote)
	}
	code, stdout, stderr = runCmd(t, "", false, append(append([]string{"simulate"}, common...), "--traces", alpha+","+beta, "--split", "test", "--settings-from", trainFile, "--choose-on", "pooled")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "settings chosen on " + trainFile + "'s pooled series of alpha, beta (its train split) at budget 0.05, read here:\n"; strings.Count(stdout, want) != 1 {
		t.Errorf("the table says %q %d times, want once (the pooled result):\n%s", want, strings.Count(stdout, want), stdout)
	}

	// Without --choose-on pooled, a family the file lacks is refused with
	// the hint; a file of one family has no pooled result; --choose-on
	// needs --settings-from and one of its two values.
	oneFile, _ := replayFile(t, "one.json", append(common, "--traces", alpha, "--split", "train")...)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unseen family", []string{"--traces", gamma, "--settings-from", trainFile}, exitError, "train.json: replayed families alpha, beta, not gamma: settings are chosen on the same family's series (--choose-on pooled or worst-family chooses every family's on the file's pooled series)"},
		{"one family", []string{"--traces", gamma, "--settings-from", oneFile, "--choose-on", "pooled"}, exitError, "one.json: replayed one family, alpha, and so has no pooled result to choose on: replay several families there, or leave out --choose-on pooled"},
		{"no file", []string{"--traces", gamma, "--choose-on", "pooled"}, exitUsage, "--choose-on: settings are chosen only with --settings-from FILE"},
		{"other value", []string{"--traces", gamma, "--settings-from", trainFile, "--choose-on", "all"}, exitUsage, `--choose-on: "all"; want family, pooled or worst-family`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "", false, append(append([]string{"simulate"}, common...), c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.want) || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d saying %q and nothing on stdout", code, stderr, stdout, c.code, c.want)
			}
		})
	}
}

// TestSimulateSettingsFromWorstFamily: --choose-on worst-family chooses
// every policy's setting on the file's pooled series among those that keep
// each of its families within the budget there. The settings and figures
// are recomputed here from the file's curves, its rates the worse
// family's at each setting.
func TestSimulateSettingsFromWorstFamily(t *testing.T) {
	alpha, beta := twoFamilies(t, 6, 700)
	common := []string{"--budget", "5%", "--max-scale-up", "100%"}
	trainFile, train := replayFile(t, "train.json", append(common, "--traces", alpha+","+beta, "--split", "train")...)
	if len(train.Families) != 2 {
		t.Fatalf("the training replay has %d families, want alpha and beta", len(train.Families))
	}
	worst := train.familyResult
	worst.Policies = slices.Clone(worst.Policies)
	for pi := range worst.Policies {
		p := &worst.Policies[pi]
		p.Curve = slices.Clone(p.Curve)
		for j := range p.Curve {
			c := &p.Curve[j]
			c.ViolationRate, c.FirstViolationRate, c.SecondViolationRate = 0, 0, 0
			for _, fr := range train.Families {
				q := fr.Policies[pi].Curve[j]
				c.ViolationRate = max(c.ViolationRate, q.ViolationRate)
				c.FirstViolationRate = max(c.FirstViolationRate, q.FirstViolationRate)
				c.SecondViolationRate = max(c.SecondViolationRate, q.SecondViolationRate)
			}
		}
	}
	// The premise: the worse family's rates move some policy's setting
	// away from the pooled series' own choice.
	moved := 0
	for pi, p := range worst.Policies {
		for _, rate := range []func(sim.Point) float64{
			func(p sim.Point) float64 { return p.ViolationRate },
			func(p sim.Point) float64 { return max(p.FirstViolationRate, p.SecondViolationRate) },
		} {
			density := func(p sim.Point) float64 { return p.Density }
			if pick(p.Curve, rate, density) != pick(train.Policies[pi].Curve, rate, density) {
				moved++
			}
		}
	}
	if moved == 0 {
		t.Fatal("the premise fails: every setting the worse family's rates choose is the pooled series' own")
	}

	args := append(append(slices.Clone(common), "--traces", alpha+","+beta, "--split", "test"), "--settings-from", trainFile, "--choose-on", "worst-family")
	doc, _ := simulateDoc(t, args...)
	compared := map[string]int{}
	for _, fr := range doc.results() {
		sf := fr.SettingsFrom
		if sf == nil || sf.ChosenOn != sim.PooledFamily || !sf.EachFamilyWithin || !slices.Equal(sf.ChosenOnFamilies, []string{"alpha", "beta"}) || sf.Overlap != 0 {
			t.Fatalf("family %s: settings_from %+v; want chosen on the pooled series of alpha, beta, each within the budget, out of sample", fr.Family, sf)
		}
		checkChosen(t, fr, worst, compared)
	}
	if compared[sim.PolicyActivation] != 3*3 {
		t.Errorf("activation compared %d times, want under 3 holdings in 3 results", compared[sim.PolicyActivation])
	}
	// The very series the file replayed: every one counts in overlap (the
	// report chosen on keeps the pooled series' names).
	same, _ := simulateDoc(t, append(append(slices.Clone(common), "--traces", alpha+","+beta, "--split", "train"), "--settings-from", trainFile, "--choose-on", "worst-family")...)
	for _, fr := range same.results() {
		if sf := fr.SettingsFrom; sf == nil || len(fr.Series) == 0 || sf.Overlap != len(fr.Series) {
			t.Errorf("family %s, the file's own series: settings_from %+v, want all %d series in both", fr.Family, sf, len(fr.Series))
		}
	}
	if !slices.ContainsFunc(doc.Notes, func(n string) bool {
		return strings.HasPrefix(n, "--choose-on worst-family: each policy's settings chosen on the pooled series of "+trainFile+" (families alpha, beta,") &&
			strings.Contains(n, "the densest there of those that keep each of those families within the budget")
	}) {
		t.Errorf("notes %q: none says how the settings were chosen", doc.Notes)
	}
	code, stdout, stderr := runCmd(t, "", false, append([]string{"simulate"}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "settings chosen on " + trainFile + "'s pooled series of alpha, beta, each of those families within the budget there, one setting for every family (its train split) at budget 0.05, read here:\n"; strings.Count(stdout, want) != 2 {
		t.Errorf("the table says %q %d times, want for alpha and beta:\n%s", want, strings.Count(stdout, want), stdout)
	}
	oneFile, _ := replayFile(t, "one.json", append(common, "--traces", alpha, "--split", "train")...)
	code, stdout, stderr = runCmd(t, "", false, append(append([]string{"simulate"}, common...), "--traces", beta, "--settings-from", oneFile, "--choose-on", "worst-family")...)
	if want := "one.json: replayed one family, alpha, and so has no pooled result to choose on: replay several families there, or leave out --choose-on worst-family"; code != exitError || !strings.Contains(stderr, want) || stdout != "" {
		t.Errorf("exit %d, stderr %q, stdout %q; want exit %d saying %q and nothing on stdout", code, stderr, stdout, exitError, want)
	}
}
