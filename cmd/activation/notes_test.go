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

	"github.com/activation-scheduler/terraform-provider-activation/sim"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// A file beside a family's series that may hold data (an export's .zip,
// a .tsv) was left out of a replay without a word, and a series whose
// times are relative milliseconds replayed with changes per hour a
// thousand times too low: simulate and train name both, and say nothing
// of a README or of series a minute apart.
func TestLeftOutAndSparseNotes(t *testing.T) {
	dir := seriesDir(t, 8, 900) // enough for train's batch
	var b strings.Builder
	b.WriteString("ts,value\n")
	for s := 0; s < 400; s++ {
		fmt.Fprintf(&b, "%d,%.4f\n", 60000*s, 2+math.Sin(float64(s)/40))
	}
	for name, body := range map[string]string{"rel.csv": b.String(), "export.zip": "PK", "hosts.tsv": "ts\tvalue\n", "README.md": "about"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fam := traces.FamilyName(dir)
	leftOut := "family " + fam + ": 2 files beside its series are not read, a series being a <name>.csv file: export.zip, hosts.tsv (an archive, or another format? Unpack or convert its series to CSV files)"
	sparse := "family " + fam + ": 1 of 9 series have samples usually more than an hour apart: rel (16h40m0s); the engine reads a window of samples whatever their spacing, and changes per hour read the times as Unix seconds: if they are not (milliseconds since the start?), those figures are wrong"

	code, stdout, stderr := runCmd(t, "", false, "simulate", "--traces", dir, "--split", "all")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"note: " + leftOut + "\n", sparse + "\n"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("the table lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Count(stdout, "usually more than") != 1 {
		t.Fatalf("the sparse series are named more than once (the pooled table repeats a family's):\n%s", stdout)
	}

	code, stdout, stderr = runCmd(t, "", false, "simulate", "--traces", dir, "--split", "all", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Notes  []string     `json:"notes"`
		Sparse []sim.Sparse `json:"sparse"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(doc.Notes, leftOut) {
		t.Fatalf("notes %q lack %q", doc.Notes, leftOut)
	}
	if !slices.Equal(doc.Sparse, []sim.Sparse{{Series: "rel", UsualSeconds: 60000}}) {
		t.Fatalf("sparse %+v: want rel alone, 60000 s apart", doc.Sparse)
	}

	code, _, stderr = runCmd(t, "", false, "train", "--traces", dir, "--out", filepath.Join(t.TempDir(), "m"), "--quiet")
	if code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"activation train: " + leftOut, "activation train: " + sparse} {
		if !strings.Contains(stderr, want) {
			t.Fatalf("train's standard error lacks %q:\n%s", want, stderr)
		}
	}

	// Series a minute apart, a README beside them: neither note.
	plain := seriesDir(t, 2, 400)
	if err := os.WriteFile(filepath.Join(plain, "README.md"), []byte("about"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCmd(t, "", false, "simulate", "--traces", plain, "--split", "all")
	if code != exitOK || strings.Contains(stdout, "not read") || strings.Contains(stdout, "usually more than") {
		t.Fatalf("exit %d (%s); a note on a plain family:\n%s", code, stderr, stdout)
	}
}

// Step flags that limit nothing (--max-scale-up none alone) replayed no
// activation-steps row and said nothing; a note says why there is none.
func TestSimulateNotesStepsThatLimitNothing(t *testing.T) {
	dir := seriesDir(t, 2, 400)
	for _, c := range []struct {
		args  []string
		note  string
		steps bool
	}{
		{[]string{"--max-scale-up", "none"}, "note: --max-scale-up set no limit, band or hold: activation-steps would be the activation policy itself, so it is not replayed\n", false},
		{[]string{"--hysteresis", "none", "--hold-band", "0"}, "note: --hysteresis, --hold-band set no limit", false},
		{[]string{"--max-scale-up", "none", "--max-scale-down", "1"}, "", true}, // and the table says "none" for the flag left out
		{nil, "", false},
	} {
		code, stdout, stderr := runCmd(t, "", false, append([]string{"simulate", "--traces", dir, "--split", "all"}, c.args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		if c.note != "" && !strings.Contains(stdout, c.note) || c.note == "" && strings.Contains(stdout, "set no limit") {
			t.Errorf("%v: want note %q:\n%s", c.args, c.note, stdout)
		}
		if c.steps && !strings.Contains(stdout, `activation-steps: the activation policy with max_scale_up "none", max_scale_down "1", hysteresis "none", hold band 0`) {
			t.Errorf("%v: the steps line does not say none for the flags left out:\n%s", c.args, stdout)
		}
		if got := strings.Contains(stdout, "\nactivation-steps: the activation policy with"); got != c.steps {
			t.Errorf("%v: activation-steps replayed %v, want %v:\n%s", c.args, got, c.steps, stdout)
		}
	}
}

// tune's --budgets 0.5 (half of every host-sample) gets simulate's note
// on --budget 0.5; 1% and 0.001 get none.
func TestTuneNotesABudgetWithoutPercent(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing") // the note comes before the traces are read
	_, _, stderr := runCmd(t, "", false, "tune", "--traces", missing, "--budgets", "0.5,1%,0.001,0.57")
	for _, want := range []string{
		"activation tune: budget 0.5 is 50% of host-samples over capacity; for 0.5% write 0.5%\n",
		"activation tune: budget 0.57 is 57% of host-samples", // not 56.99999999999999%
	} {
		if !strings.Contains(stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Count(stderr, "host-samples over capacity") != 2 {
		t.Fatalf("a note for a budget written as a share or with %%:\n%s", stderr)
	}
}
