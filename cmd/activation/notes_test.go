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
	leftOut := "family " + fam + ": 2 files beside its series are not read, a series being a <name>.csv file: export.zip, hosts.tsv (an export's archive? unpack its CSV files into " + dir + ")"
	sparse := "family " + fam + ": 1 of 9 series have samples usually more than 1h0m0s apart: rel (16h40m0s); the engine reads a window of samples whatever their spacing, and changes per hour read the times as Unix seconds: if they are not (milliseconds since the start?), those figures are wrong"

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
