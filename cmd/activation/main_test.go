package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/engine/golden"
	"github.com/activation-scheduler/terraform-provider-activation/sim"
)

// runCmd runs the command line in-process.
func runCmd(t *testing.T, stdin string, terminal bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, isTerminal: terminal})
	return code, out.String(), errb.String()
}

// seriesDir writes n synthetic usage series (daily-like cycle, noise,
// bursts) of the given length as CSV files.
func seriesDir(t *testing.T, n, length int) string {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i < n; i++ {
		rng := rand.New(rand.NewPCG(uint64(i+1), 9))
		var b strings.Builder
		b.WriteString("ts,value\n")
		for s := 0; s < length; s++ {
			v := 2 + math.Sin(2*math.Pi*float64(s)/(300+50*float64(i))) + 0.3*rng.Float64()
			if rng.Float64() < 0.01 {
				v *= 2.5
			}
			fmt.Fprintf(&b, "%d,%.4f\n", 1600000000+60*s, v)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("syn%d.csv", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSimulateJSON(t *testing.T) {
	dir := seriesDir(t, 4, 900)
	plot := filepath.Join(t.TempDir(), "out", "bench.png")
	code, stdout, stderr := runCmd(t, "", false, "simulate", "--traces", dir, "--budget", "0.05", "--format", "json", "--plot", plot)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	pols, ok := doc["policies"].([]any)
	if !ok {
		t.Fatalf("no policies array: %v", doc["policies"])
	}
	var names []string
	byName := map[string]map[string]any{}
	for _, p := range pols {
		pm := p.(map[string]any)
		for _, k := range []string{"name", "knob", "density", "violation_rate", "severity", "changes_per_hour", "curve"} {
			if _, ok := pm[k]; !ok {
				t.Errorf("policy %v has no %q", pm["name"], k)
			}
		}
		name := pm["name"].(string)
		names = append(names, name)
		byName[name] = pm
	}
	want := []string{sim.PolicyRequestSum, sim.PolicyP95Window, sim.PolicyMaxWindow, sim.PolicyNSigma, sim.PolicyUsageThreshold, sim.PolicyOracle, sim.PolicyActivation, sim.PolicyLinear}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("policies %v, want %v", names, want)
	}
	sum, ok := doc["summary"].(map[string]any)
	if !ok {
		t.Fatalf("no summary: %v", doc["summary"])
	}
	for _, k := range []string{"request_sum_density", "best_baseline", "best_baseline_density", "activation_density", "oracle_density", "gain_vs_request_sum", "gain_vs_best_baseline", "gap_closed"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary has no %q", k)
		}
	}
	// The summary restates the policies' figures.
	if got, want := sum["activation_density"], byName[sim.PolicyActivation]["density"]; got != want {
		t.Errorf("summary activation_density %v, policy density %v", got, want)
	}
	if got := sum["oracle_density"]; got != 1.0 {
		t.Errorf("oracle density %v, want 1", got)
	}
	if g, ok := sum["gain_vs_request_sum"].(float64); ok {
		want := sum["activation_density"].(float64)/sum["request_sum_density"].(float64) - 1
		if math.Abs(g-want) > 1e-9 {
			t.Errorf("gain vs request-sum %v, want %v", g, want)
		}
	}
	if doc["split"] != "test" {
		t.Errorf("split %v, want test", doc["split"])
	}
	png, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10000 {
		t.Errorf("plot is not a PNG image (%d bytes)", len(png))
	}
}

func TestSimulateTable(t *testing.T) {
	dir := seriesDir(t, 3, 700)
	code, stdout, stderr := runCmd(t, "", false, "simulate", "--traces", dir, "--split", "all", "--scenario", "yardstick", "--knob", "per_branch")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"scenario yardstick, all split", "policy", "violation rate", "activation", "per_branch", "n-sigma", "not a held-out result"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
}

func TestSimulateBadInput(t *testing.T) {
	dir := seriesDir(t, 2, 400)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--budget", "0.01"}, exitUsage, "--traces"},
		{[]string{"--traces", dir, "--budget", "0"}, exitUsage, "--budget"},
		{[]string{"--traces", dir, "--budget", "1.5"}, exitUsage, "--budget"},
		{[]string{"--traces", dir, "--budget", "NaN"}, exitUsage, "--budget"},
		{[]string{"--traces", dir, "--budget", "one"}, exitUsage, "budget"},
		{[]string{"--traces", dir, "--format", "xml"}, exitUsage, "--format"},
		{[]string{"--traces", dir, "--split", "half"}, exitUsage, "--split"},
		{[]string{"--traces", dir, "--scenario", "nope"}, exitUsage, "--scenario"},
		{[]string{"--traces", dir, "--knob", "margin"}, exitUsage, "--knob"},
		{[]string{"--traces", dir, "--plot", "out.pdf"}, exitUsage, "--plot"},
		{[]string{"--traces", dir, "--workers", "-1"}, exitUsage, "--workers"},
		{[]string{"--traces", dir, "--frobnicate"}, exitUsage, "frobnicate"},
		{[]string{"--traces", dir, "extra"}, exitUsage, "extra"},
		{[]string{"--traces", filepath.Join(dir, "missing")}, exitError, "--traces"},
		{[]string{"--traces", dir, "--capacity-model", filepath.Join(dir, "none.json")}, exitError, "--capacity-model"},
		{[]string{"--traces", dir, "--admission-model", "builtin:nope"}, exitError, "--admission-model"},
	} {
		code, stdout, stderr := runCmd(t, "", false, append([]string{"simulate"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", c.args, code, stderr, c.code, c.want)
		}
		if stdout != "" {
			t.Errorf("%v: wrote %q to stdout on error", c.args, stdout)
		}
	}
}

// Every front end checks the engine's golden decision vectors: explain
// must give the golden decision for every golden request.
func TestExplainGoldenVectors(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			req, err := json.Marshal(v.Request)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, fmt.Sprintf("req%d.json", i))
			if err := os.WriteFile(path, req, 0o644); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCmd(t, "", false, "explain", "--request", path, "--format", "json")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var got engine.Decision
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatal(err)
			}
			wantJSON, _ := json.Marshal(v.Want)
			var want engine.Decision
			if err := json.Unmarshal(wantJSON, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decision\n%s\nwant\n%s", stdout, wantJSON)
			}
			// The text form, read from stdin, is the decision's explanation.
			code, stdout, stderr = runCmd(t, string(req), false, "explain", "--request", "-")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if stdout != want.Explain() {
				t.Fatalf("explanation\n%s\nwant\n%s", stdout, want.Explain())
			}
		})
	}
}

func TestExplainBadRequest(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(vs[0].Request)
	var req engine.Request
	if err := json.Unmarshal(good, &req); err != nil {
		t.Fatal(err)
	}
	req.First.CPUCapacityMHz = 0
	badCap, _ := json.Marshal(req)
	req.First.CPUCapacityMHz = 1000
	req.Second.Samples[1].Time = req.Second.Samples[0].Time
	badTime, _ := json.Marshal(req)
	for _, c := range []struct {
		name, stdin string
		args        []string
		code        int
		want        string
	}{
		{"no flag", "", nil, exitUsage, "--request"},
		{"bad format", string(good), []string{"--request", "-", "--format", "yaml"}, exitUsage, "--format"},
		{"empty", "  \n", []string{"--request", "-"}, exitError, "empty"},
		{"not JSON", "{first:", []string{"--request", "-"}, exitError, "not valid JSON"},
		{"unknown field", `{"first":{"cpu_capacity":1000}}`, []string{"--request", "-"}, exitError, `unknown field "cpu_capacity"`},
		{"wrong type", `{"first":{"cpu_capacity_mhz":"lots"}}`, []string{"--request", "-"}, exitError, "first.cpu_capacity_mhz"},
		{"trailing data", string(good) + "{}", []string{"--request", "-"}, exitError, "trailing"},
		{"zero capacity", string(badCap), []string{"--request", "-"}, exitError, "first host observation: cpu_capacity_mhz"},
		{"time order", string(badTime), []string{"--request", "-"}, exitError, "second host observation: usage_samples[1].time"},
		{"missing file", "", []string{"--request", filepath.Join(t.TempDir(), "none.json")}, exitError, "--request"},
	} {
		code, stdout, stderr := runCmd(t, c.stdin, false, append([]string{"explain"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d naming %q", c.name, code, stderr, c.code, c.want)
		}
		if stdout != "" {
			t.Errorf("%s: wrote %q to stdout on error", c.name, stdout)
		}
	}
}

func TestTrainWritesLoadableModels(t *testing.T) {
	dir := seriesDir(t, 3, 2500)
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "", true, "train", "--traces", dir, "--out", out, "--epochs", "2")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// On a terminal: a progress bar that redraws its line.
	if !strings.Contains(stdout, "\r") || !strings.Contains(stdout, "epoch 2/2") || !strings.Contains(stdout, "left") {
		t.Errorf("no progress bar on a terminal:\n%q", stdout)
	}
	for _, f := range []string{admissionFile, capacityFile} {
		m, err := engine.LoadModelFile(filepath.Join(out, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.Contains(stdout, filepath.Join(out, f)) {
			t.Errorf("output does not name %s:\n%s", f, stdout)
		}
		if m.Provenance.Settings["epochs"] != "2" {
			t.Errorf("%s: provenance epochs %q, want 2", f, m.Provenance.Settings["epochs"])
		}
	}
	// Not on a terminal: no bar.
	code, stdout, stderr = runCmd(t, "", false, "train", "--traces", dir, "--out", out, "--epochs", "1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "\r") || strings.Contains(stdout, "epoch") {
		t.Errorf("progress bar written to a non-terminal:\n%q", stdout)
	}
}

func TestTrainBadInput(t *testing.T) {
	dir := seriesDir(t, 2, 300)
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--out", t.TempDir()}, exitUsage, "--traces"},
		{[]string{"--traces", dir}, exitUsage, "--out"},
		{[]string{"--traces", dir, "--out", t.TempDir(), "--epochs", "-1"}, exitUsage, "--epochs"},
		{[]string{"--traces", dir, "--out", filepath.Join(t.TempDir(), "none")}, exitError, "--out"},
		{[]string{"--traces", dir, "--out", file}, exitError, "not a directory"},
		{[]string{"--traces", t.TempDir(), "--out", t.TempDir()}, exitError, "no *.csv"},
	} {
		code, _, stderr := runCmd(t, "", false, append([]string{"train"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

func TestCommands(t *testing.T) {
	if code, _, stderr := runCmd(t, "", false); code != exitUsage || !strings.Contains(stderr, "usage") {
		t.Errorf("no command: exit %d %q", code, stderr)
	}
	if code, _, stderr := runCmd(t, "", false, "deploy"); code != exitUsage || !strings.Contains(stderr, `unknown command "deploy"`) {
		t.Errorf("unknown command: exit %d %q", code, stderr)
	}
	if code, stdout, _ := runCmd(t, "", false, "help"); code != exitOK || !strings.Contains(stdout, "simulate") {
		t.Errorf("help: exit %d %q", code, stdout)
	}
	if code, _, stderr := runCmd(t, "", false, "simulate", "-h"); code != exitOK || !strings.Contains(stderr, "--budget") && !strings.Contains(stderr, "-budget") {
		t.Errorf("simulate -h: exit %d %q", code, stderr)
	}
}
