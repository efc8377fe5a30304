package traces

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/internal/testfifo"
	"github.com/activation-scheduler/terraform-provider-activation/stats"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name, csv string
		want      []float64
		err       string
	}{
		{name: "ok", csv: "ts,value\n1,0.5\n2,1.5\n", want: []float64{0.5, 1.5}},
		{name: "columns swapped, extra column", csv: "value,host,ts\n2,a,10\n3,b,20\n", want: []float64{2, 3}},
		{name: "whole times written as floats", csv: "ts,value\n1.0,1\n2e0,2\n", want: []float64{1, 2}},
		{name: "fractional time", csv: "ts,value\n1.2,1\n1.7,2\n", err: `line 2: ts: "1.2" is not a whole Unix time in seconds`},
		{name: "milliseconds", csv: "ts,value\n1628640000000,1\n1628640060000,2\n", err: `line 2: ts: "1628640000000" is past the year 5138 as Unix seconds: milliseconds?`},
		{name: "line numbers count blank lines", csv: "ts,value\n1,0.5\n\n\n2,0.6\n3,x\n", err: `line 6: value: "x" is not a number`},
		{name: "a byte order mark", csv: "\ufeffts,value\n1,0.5\n2,1.5\n", want: []float64{0.5, 1.5}},
		{name: "a figure beyond a float", csv: "ts,value\n1,0.5\n2,1e400\n", err: `line 3: value: "1e400" is beyond a 64-bit floating point number`},
		{name: "a figure below a float's smallest reads as 0", csv: "ts,value\n1,1e-400\n2,1\n", want: []float64{0, 1}},
		{name: "a byte order mark before a quoted header", csv: "\ufeff\"ts\",\"value\"\n1,0.5\n2,1.5\n", want: []float64{0.5, 1.5}},
		{name: "a figure named twice", csv: "ts,value,usage\n1,1,9\n2,1,9\n", err: `columns "value" and "usage" name the same figure`},
		{name: "CRLF", csv: "ts,value\r\n1,0.5\r\n2,1.5\r\n", want: []float64{0.5, 1.5}},
		{name: "no header", csv: "1,2\n", err: "must name a `ts` column and a `value` (or `cpu_mhz`) column"},
		{name: "a binary file", csv: "\x7fELF\x02\x01\x01\x00\x00ts,value\n1,2\n", err: "not a text CSV file: its first line holds a NUL byte or is not UTF-8"},
		{name: "a UTF-16 export", csv: "\xff\xfet\x00s\x00,\x00v\x00\n\x001,2\n", err: "not a text CSV file"},
		{name: "empty", csv: "ts,value\n", err: "no samples"},
		{name: "a gzip file", csv: "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03+)\xd6)K", err: "series s: not a text CSV file: it is gzip-compressed (decompress it first: gunzip)"},
		{name: "a zip file", csv: "PK\x03\x04\x14\x00", err: "it is zip-compressed"},
		{name: "semicolons", csv: "ts;value\n1;2\n2;3\n", err: `header "ts;value" must name a ` + "`ts`" + ` column and a ` + "`value`" + ` (or ` + "`cpu_mhz`" + `) column: its fields are separated by semicolons, and a trace file's by commas`},
		{name: "Excel's separator hint", csv: "sep=,\nts,value\n1,2\n2,3\n", err: `the first line "sep=," is Excel's separator hint, not a header: remove it`},
		{name: "Excel's hint for semicolons", csv: "sep=;\nts;value\n1;2\n", err: "is Excel's separator hint"},
		{name: "tabs", csv: "ts\tvalue\n1\t2\n", err: "separated by tabs"},
		{name: "newest first", csv: "ts,value\n600,1\n300,1\n0,1\n", err: `line 3: ts: "300" (300) does not come after 600 (newest first? Samples must be oldest first)`},
		{name: "a time in scientific notation names its text", csv: "ts,value\n1633478400,1\n1.633478e+09,1\n", err: `line 3: ts: "1.633478e+09" (1633478000) does not come after 1633478400 (a time in scientific notation keeps few digits: write whole seconds)`},
		{name: "an empty file", csv: "", err: "series s: the file is empty: want a header"},
		{name: "one row", csv: "ts,value\n1,0.5\n", err: "1 sample; a series needs at least 2"},
		{name: "bitbrains columns", csv: "ts,cpu_mhz,cpu_capacity_mhz,mem_kb,mem_capacity_kb\n10,87.5,5852,1024,8192\n20,29.5,5852,2048,4096\n", want: []float64{87.5, 29.5}},
		{name: "memory without capacity", csv: "ts,value,mem_kb\n1,1,1\n2,1,1\n", err: "memory needs both"},
		{name: "negative memory", csv: "ts,value,memory_mb,memory_capacity_mb\n1,1,-1,10\n2,1,1,10\n", err: "line 2: memory_mb"},
		{name: "NaN", csv: "ts,value\n1,NaN\n", err: "line 2: value"},
		{name: "negative", csv: "ts,value\n1,-1\n", err: "line 2: value"},
		{name: "not a number", csv: "ts,value\n1,abc\n", err: "line 2: value"},
		{name: "a hexadecimal figure", csv: "ts,value\n1,0x1p-2\n2,1\n", err: `line 2: value: "0x1p-2" is not a decimal number`},
		{name: "digits separated by _", csv: "ts,value\n1,1\n2,1_000\n", err: `line 3: value: "1_000" is not a decimal number`},
		{name: "a hexadecimal memory figure", csv: "ts,value,memory_mb,memory_capacity_mb\n1,1,0X10p0,10\n2,1,1,10\n", err: `line 2: memory_mb: "0X10p0" is not a decimal number`},
		{name: "a hexadecimal time", csv: "ts,value\n0x1p4,1\n32,1\n", err: `line 2: ts: "0x1p4" is not a decimal Unix time in seconds`},
		{name: "a time with digits separated by _", csv: "ts,value\n1_600_000_000,1\n1600000060,1\n", err: `line 2: ts: "1_600_000_000" is not a decimal Unix time`},
		{name: "a long export, one row per instance", csv: "ts,instance,value\n1,a,1\n2,a,1\n1,b,2\n", err: `line 4: ts: "1" (1) does not come after 2 (several series in one file, one per instance? It was "a" on every line before and is "b" here: a series is a file of its own)`},
		{name: "a long export, one sample per instance", csv: "ts,instance,value\n1,a,1\n1,b,2\n", err: `line 3: ts: "1" (1) does not come after 1 (several series in one file, one per instance?`},
		{name: "a column that does not change is no instance", csv: "ts,host,value\n3,a,1\n1,a,1\n", err: `line 3: ts: "1" (1) does not come after 3 (newest first?`},
		{name: "newest first, a column changing every line", csv: "ts,date,value\n300,d5,1\n200,d3,1\n", err: `line 3: ts: "200" (200) does not come after 300 (newest first?`},
		{name: "a repeated time, a column changing every line", csv: "ts,value,requests\n1,1,5\n2,1,7\n2,1,9\n", err: `line 4: ts: "2" (2) does not come after 2`},
		{name: "the times start over, a column that changed before", csv: "ts,value,requests\n1,1,5\n2,1,7\n1,1,9\n", err: `line 4: ts: "1" (1) does not come after 2`},
		{name: "out of order", csv: "ts,value\n2,1\n1,1\n", err: "line 3: ts"},
		{name: "out of order later", csv: "ts,value\n1,1\n3,1\n2,1\n", err: `line 4: ts: "2" (2) does not come after 3`},
		{name: "repeated time", csv: "ts,value\n1,1\n1,2\n", err: "line 3: ts"},
		{name: "time out of range", csv: "ts,value\n1e30,1\n", err: "line 2: ts"},
		// the engine refuses them: a replay failed mid-way, on the activation policy alone
		{name: "a time before 1970", csv: "ts,value\n-300,1\n0,2\n", err: `line 2: ts: "-300" is before 1970`},
		{name: "time 0", csv: "ts,value\n0,1\n300,2\n", want: []float64{1, 2}},
		{name: "short row", csv: "ts,value\n1\n", err: "line 2: expected at least 2 columns, got 1"},
		{name: "a line of spaces at the end", csv: "ts,value\n1,1\n2,1\n   \n", want: []float64{1, 1}},
		{name: "a spreadsheet's empty rows at the end", csv: "ts,value\n1,1\n2,3\n,\n,\n , \n", want: []float64{1, 3}},
		{name: "a spreadsheet's empty row before a sample", csv: "ts,value\n1,1\n,\n2,1\n", err: "line 3: no sample, only blanks or empty fields, before the samples that follow: a missing sample? remove the line"},
		{name: "lines of spaces before a sample: the first named", csv: "ts,value\n1,1\n  \n , , \n2,1\n", err: "line 3: no sample"},
		{name: "empty rows, then a footer: the footer refused", csv: "ts,value\n1,1\n2,1\n,\nTotal,2\n", err: `line 5: ts: "Total" is not a Unix time`},
		{name: "empty rows alone", csv: "ts,value\n,\n,\n", err: "no samples"},
		{name: "trailing commas", csv: "ts,value\n1,0.5,\n2,1.5,,\n", want: []float64{0.5, 1.5}},
		{name: "a number split by a comma under a header's trailing comma", csv: "ts,value,\n1,1,397.5\n2,2,\n", err: `line 2: "397.5" under an unnamed column`},
		{name: "a number split by a comma", csv: "ts,value\n1,1,397.5\n2,2\n", err: "line 2: 3 fields, the header names 2: a number written with a comma"},
		{name: "lone CR line endings", csv: "ts,value\r1,0.5\r2,1.5\r" + strings.Repeat("3,1.5\r", 500), err: "lines end in a lone CR"},
		{name: "a long header is cut", csv: "ts," + strings.Repeat("x", 500) + "\n1,2\n", err: "(383 more bytes) must name a `ts` column"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Read(strings.NewReader(tc.csv), "s")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Values) != len(tc.want) {
				t.Fatalf("values %v, want %v", s.Values, tc.want)
			}
			for i := range tc.want {
				if s.Values[i] != tc.want[i] {
					t.Fatalf("values %v, want %v", s.Values, tc.want)
				}
			}
		})
	}
}

// The spacing of a series: the usual interval is the median, and a gap is
// an interval of GapRatio or more times it.
func TestSpacingOf(t *testing.T) {
	tests := []struct {
		name  string
		times []int64
		want  Spacing
	}{
		{"none", nil, Spacing{}},
		{"one sample", []int64{5}, Spacing{}},
		{"regular", []int64{0, 60, 120, 180}, Spacing{Usual: 60, Largest: 60}},
		{"a gap of a week", []int64{0, 60, 120, 120 + 7*86400, 180 + 7*86400}, Spacing{Usual: 60, Gaps: 1, Largest: 7 * 86400}},
		{"just under the ratio", []int64{0, 60, 120, 180, 180 + 239}, Spacing{Usual: 60, Largest: 239}},
		{"at the ratio", []int64{0, 60, 120, 180, 180 + 240}, Spacing{Usual: 60, Gaps: 1, Largest: 240}},
		{"a rate that changes", []int64{0, 60, 120, 180, 240, 540, 840}, Spacing{Usual: 60, Gaps: 2, Largest: 300}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SpacingOf(tc.times); got != tc.want {
				t.Fatalf("SpacingOf(%v) = %+v, want %+v", tc.times, got, tc.want)
			}
		})
	}
}

// Bitbrains' columns: cpu_mhz is the usage, memory comes in KB and is kept
// in MB, and the memory provisioned is the largest the trace gives.
func TestReadBitbrainsMemory(t *testing.T) {
	csv := "ts,cpu_mhz,cpu_capacity_mhz,mem_kb,mem_capacity_kb\n10,87.5,5852,1024,8192\n20,29.5,5852,2048,4096\n30,1,5852,512,0\n"
	s, err := Read(strings.NewReader(csv), "vm001")
	if err != nil {
		t.Fatal(err)
	}
	if !s.HasMemory() || len(s.Memory) != 3 || s.Memory[0] != 1 || s.Memory[1] != 2 || s.Memory[2] != 0.5 || s.MemoryProvisionedMB != 8 {
		t.Fatalf("memory %v provisioned %v, want [1 2 0.5] MB and 8 MB", s.Memory, s.MemoryProvisionedMB)
	}
	plain, err := Read(strings.NewReader("ts,value\n1,1\n2,2\n"), "plain")
	if err != nil {
		t.Fatal(err)
	}
	if plain.HasMemory() {
		t.Fatal("a ts,value series has memory")
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// PlanetLab's layout, <day>/<vm>.csv: the days of one VM are one series,
// joined in day order, with the VM's name as its identity.
func TestScanNestedLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "planetlab")
	writeFiles(t, dir, map[string]string{
		"20110303/vm_a.csv": "ts,value\n100,1\n200,2\n",
		"20110306/vm_a.csv": "ts,value\n1000,3\n1100,4\n",
		"20110306/vm_b.csv": "ts,value\n1000,5\n1100,6\n",
		"README.md":         "not a series",
	})
	refs, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || refs[0].Name != "vm_a" || len(refs[0].Paths) != 2 || refs[1].Name != "vm_b" || refs[0].Family != "planetlab" {
		t.Fatalf("refs %+v", refs)
	}
	s, err := refs[0].Load()
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 2, 3, 4}
	if len(s.Values) != 4 || s.Name != "vm_a" || s.Family != "planetlab" {
		t.Fatalf("series %+v", s)
	}
	for i := range want {
		if s.Values[i] != want[i] {
			t.Fatalf("values %v, want %v", s.Values, want)
		}
	}
	all, err := LoadDir(dir)
	if err != nil || len(all) != 2 {
		t.Fatalf("LoadDir: %d series, %v", len(all), err)
	}
}

// TestScanSkipsHiddenDirectories: a hidden directory (a file system's
// snapshot, a notebook's checkpoints) is no day of the series, as a hidden
// file is no series; its files were read as parts (a ghost series) or
// made a flat directory refused as mixing layouts.
func TestScanSkipsHiddenDirectories(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"nested", map[string]string{
			"day1/vm1.csv":       "ts,value\n100,1\n200,2\n",
			"day2/vm1.csv":       "ts,value\n300,1\n400,2\n",
			".snap/ghost.csv":    "ts,value\n100,1\n200,2\n",
			".snap/day1/vm1.csv": "ts,value\n100,1\n200,2\n",
		}, []string{"vm1"}},
		{"flat", map[string]string{
			"vm1.csv":                               "ts,value\n100,1\n200,2\n",
			".ipynb_checkpoints/vm1-checkpoint.csv": "ts,value\n100,1\n200,2\n",
		}, []string{"vm1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "fam")
			writeFiles(t, dir, c.files)
			refs, err := Scan(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range refs {
				got = append(got, r.Name)
				if r.Name == "vm1" && c.name == "nested" && len(r.Paths) != 2 {
					t.Errorf("vm1's parts %v, want day1's and day2's", r.Paths)
				}
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("series %v, want %v", got, c.want)
			}
		})
	}
}

// TestLoadPartsLength: the minimum length is the joined series', not each
// part's (a day with one reading stopped a month-long series); a part with
// a header alone is refused, naming it.
func TestLoadPartsLength(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fam")
	writeFiles(t, dir, map[string]string{
		"day1/vm1.csv": "ts,value\n100,1\n200,2\n",
		"day2/vm1.csv": "ts,value\n300,1\n",
		"day1/vm2.csv": "ts,value\n100,1\n",
		"day1/vm3.csv": "ts,value\n100,1\n",
		"day2/vm3.csv": "ts,value\n",
	})
	refs, err := Scan(dir)
	if err != nil || len(refs) != 3 {
		t.Fatalf("Scan: %v, %v", refs, err)
	}
	for _, c := range []struct {
		ref  Ref
		want string // error, or "" for the series' length 3
	}{
		{refs[0], ""},
		{refs[1], "day1/vm2.csv: series vm2: 1 sample; a series needs at least 2"},
		{refs[2], "day2/vm3.csv: series vm3: no samples"},
	} {
		s, err := c.ref.Load()
		switch {
		case c.want == "" && (err != nil || len(s.Values) != 3):
			t.Errorf("%s: %d samples, %v; want 3", c.ref.Name, len(s.Values), err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v; want %q", c.ref.Name, err, c.want)
		}
	}
}

// TestScanFollowsSymlinks: a day's directory linked in from elsewhere is
// read like one that is there (it was left out without a word), a link to
// a day that is there ("latest") is read once, and a linked directory
// beside *.csv files is refused like a real one.
func TestScanFollowsSymlinks(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"elsewhere/day2/vm_a.csv": "ts,value\n1000,3\n1100,4\n",
		"fam/day1/vm_a.csv":       "ts,value\n100,1\n200,2\n",
		"flat/vm_b.csv":           "ts,value\n100,1\n200,2\n",
	})
	// "latest" is another name for day1: read once.
	if err := os.Symlink(filepath.Join(root, "fam/day1"), filepath.Join(root, "fam/latest")); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"fam/day2", "flat/day2"} {
		if err := os.Symlink(filepath.Join(root, "elsewhere/day2"), filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	refs, err := Scan(filepath.Join(root, "fam"))
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || len(refs[0].Paths) != 2 {
		t.Fatalf("refs %+v, want vm_a from both days", refs)
	}
	s, err := refs[0].Load()
	if err != nil || len(s.Values) != 4 {
		t.Fatalf("series %+v, %v: want the four samples of both days", s, err)
	}
	// The same through a relative path, the links absolute: "latest" is
	// still day1 (compared as paths, the two differed).
	t.Chdir(root)
	refs, err = Scan("fam")
	if err != nil || len(refs) != 1 || len(refs[0].Paths) != 2 {
		t.Fatalf("relative path: refs %+v, %v; want vm_a from day1 and day2 once each", refs, err)
	}
	if _, err := Scan(filepath.Join(root, "flat")); err == nil || !strings.Contains(err.Error(), "both layouts") {
		t.Errorf("a linked directory of series beside *.csv files: err %v, want both layouts refused", err)
	}
}

// A directory's name is a name, not a pattern: "x[ab]" is not "xa".
func TestScanPatternCharacters(t *testing.T) {
	root := t.TempDir()
	for dir, names := range map[string][]string{"x[ab]": {"a", "b"}, "xa": {"c", "d", "e"}, "y*": {"f"}} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(root, dir, n+".csv"), []byte("ts,value\n1,1\n2,2\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for dir, want := range map[string]string{"x[ab]": "a b", "y*": "f"} {
		refs, err := Scan(filepath.Join(root, dir))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		var got []string
		for _, r := range refs {
			got = append(got, r.Name)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: series %v, want %s", dir, got, want)
		}
	}
}

func TestScanErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"nothing", map[string]string{"notes.txt": "x"}, "no *.csv series"},
		{"overlapping days", map[string]string{"d1/vm.csv": "ts,value\n100,1\n200,2\n", "d2/vm.csv": "ts,value\n150,1\n300,2\n"}, "must not overlap"},
		{"one-row day", map[string]string{"d1/vm.csv": "ts,value\n100,1\n"}, "d1/vm.csv: series vm: 1 sample"},
		// the subdirectory's series would be left out without a word
		{"both layouts", map[string]string{"vm_a.csv": "ts,value\n100,1\n200,2\n", "d1/vm_b.csv": "ts,value\n100,1\n200,2\n"}, "holds series in both layouts, *.csv files and d1/*.csv"},
		// series two levels down were left out without a word
		{"two levels down", map[string]string{"d1/vm_a.csv": "ts,value\n100,1\n200,2\n", "d1/x/vm_b.csv": "ts,value\n100,1\n200,2\n"}, "d1/x holds series two levels down"},
		// the extension's case does not matter, so one series twice is refused
		{"one series twice, flat", map[string]string{"vm.csv": "ts,value\n100,1\n200,2\n", "vm.CSV": "ts,value\n100,1\n200,2\n"}, `vm.csv hold the same series "vm"`},
		{"one series twice, nested", map[string]string{"d1/vm.Csv": "ts,value\n100,1\n200,2\n", "d1/vm.csv": "ts,value\n300,1\n400,2\n"}, `d1/vm.csv hold the same series "vm"`},
		// reports and models wrote U+FFFD for the invalid bytes: v\xff and
		// v\xfe were two series under one name (a review)
		{"a name not UTF-8, flat", map[string]string{"v\xff.csv": "ts,value\n100,1\n200,2\n", "v\xfe.csv": "ts,value\n100,1\n200,2\n"}, `v\xfe.csv": the file's name, the series' identity, is not valid UTF-8`},
		{"a name not UTF-8, nested", map[string]string{"d1/v\xff.csv": "ts,value\n100,1\n200,2\n"}, `v\xff.csv": the file's name, the series' identity, is not valid UTF-8`},
		{"a control character in a name", map[string]string{"v\nw.csv": "ts,value\n100,1\n200,2\n"}, `v\nw.csv": the file's name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, c.files)
			_, err := LoadDir(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := Scan(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing directory scanned")
	}
	// The family is the directory's name.
	fam := filepath.Join(t.TempDir(), "fam\xff")
	writeFiles(t, fam, map[string]string{"vm.csv": "ts,value\n100,1\n200,2\n"})
	if _, err := Scan(fam); err == nil || !strings.Contains(err.Error(), "the directory's name, the family's, is not valid UTF-8") {
		t.Fatalf("a family not UTF-8: %v", err)
	}
}

// Files named *.CSV, as some tools on Windows write them, are series like
// *.csv ones, in both layouts: they were left out without a word.
func TestScanExtensionCase(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"flat", map[string]string{"a.CSV": "ts,value\n1,1\n2,2\n", "b.csv": "ts,value\n1,1\n2,2\n", "c.Csv": "ts,value\n1,1\n2,2\n", "d.csv.txt": "x", ".csv": "x"}, "a b c"},
		{"nested", map[string]string{"d1/vm_a.CSV": "ts,value\n1,1\n2,2\n", "d2/vm_a.csv": "ts,value\n3,1\n4,2\n", "d2/vm_b.CSV": "ts,value\n3,1\n4,2\n"}, "vm_a vm_b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, c.files)
			all, err := LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range all {
				got = append(got, s.Name)
			}
			if strings.Join(got, " ") != c.want {
				t.Fatalf("series %v, want %s", got, c.want)
			}
		})
	}
}

// Splitting references keeps every day of a VM on one side (one identity),
// and puts each name on the side SplitByName puts it.
func TestSplitRefsByIdentity(t *testing.T) {
	var refs []Ref
	var series []Series
	for i := 0; i < 200; i++ {
		name := "vm" + strconv.Itoa(i)
		refs = append(refs, Ref{Name: name, Paths: []string{"d1/" + name + ".csv", "d2/" + name + ".csv"}})
		series = append(series, Series{Name: name})
	}
	tr, te := SplitRefs(refs, 0.34, 1)
	str, ste := SplitByName(series, 0.34, 1)
	if len(tr) != len(str) || len(te) != len(ste) || len(te) < 40 || len(te) > 100 {
		t.Fatalf("refs split %d/%d, series %d/%d", len(tr), len(te), len(str), len(ste))
	}
	for i := range te {
		if te[i].Name != ste[i].Name {
			t.Fatalf("held-out ref %s, held-out series %s", te[i].Name, ste[i].Name)
		}
	}
}

func TestNormalize(t *testing.T) {
	s := Series{Name: "s", Times: []int64{1, 2, 3, 4}, Values: []float64{1, 2, 3, 4}}
	n, err := Normalize(s, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if p := stats.Quantile(n.Values, 0.99); math.Abs(p-0.1) > 1e-12 {
		t.Fatalf("p99 after normalising is %v, want 0.1", p)
	}
	if s.Values[0] != 1 {
		t.Fatal("Normalize changed its input")
	}
	if _, err := Normalize(Series{Name: "flat", Times: []int64{1, 2}, Values: []float64{0, 0}}, 0.1); err == nil {
		t.Fatal("a series of zeros was normalised")
	}
	// Subnormal values: target/p99 overflows; refused, not scaled to +Inf.
	_, err = Normalize(Series{Name: "tiny", Times: []int64{1, 2, 3}, Values: []float64{5e-311, 5e-311, 5e-311}}, 0.1)
	if err == nil || !strings.Contains(err.Error(), "series tiny: p99 is 5e-311, too small to scale") {
		t.Fatalf("subnormal values: %v; want the series refused as too small to scale", err)
	}
}

func TestSplitByName(t *testing.T) {
	var all []Series
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		all = append(all, Series{Name: n})
	}
	tr1, te1 := SplitByName(all, 0.34, 1)
	// Reversed order gives the same sets: the split depends on names only.
	rev := make([]Series, len(all))
	for i := range all {
		rev[len(all)-1-i] = all[i]
	}
	_, te2 := SplitByName(rev, 0.34, 1)
	names := func(ss []Series) map[string]bool {
		m := map[string]bool{}
		for _, s := range ss {
			m[s.Name] = true
		}
		return m
	}
	if len(tr1)+len(te1) != len(all) || len(te1) == 0 || len(tr1) == 0 {
		t.Fatalf("split %d/%d of %d", len(tr1), len(te1), len(all))
	}
	a, b := names(te1), names(te2)
	if len(a) != len(b) {
		t.Fatal("the split depends on order")
	}
	for n := range a {
		if !b[n] || names(tr1)[n] {
			t.Fatalf("series %s is on different sides", n)
		}
	}
	// Neither side is ever empty with two or more series.
	for _, share := range []float64{0, 1} {
		tr, te := SplitByName(all[:2], share, 1)
		if len(tr) != 1 || len(te) != 1 {
			t.Fatalf("share %v: %d train, %d held out", share, len(tr), len(te))
		}
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadDir(dir); err == nil {
		t.Fatal("an empty directory loaded")
	}
	for name, body := range map[string]string{"b.csv": "ts,value\n1,1\n2,1\n", "a.csv": "ts,value\n1,2\n2,2\n", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	all, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Name != "a" || all[1].Name != "b" {
		t.Fatalf("loaded %+v", all)
	}
}

// A FIFO named *.csv in a trace directory is refused, naming it, instead
// of blocking the read until something writes to it.
func TestReadRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.csv"), []byte("ts,value\n1600000000,1\n1600000060,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "b.csv")
	testfifo.Mkfifo(t, fifo)
	done := make(chan error, 1)
	go func() {
		_, err := LoadDir(dir)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || strings.Count(err.Error(), fifo) != 1 || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("LoadDir with a FIFO: %v, want an error naming %s once as not a regular file", err, fifo)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LoadDir blocked on a FIFO named b.csv")
	}
}

func TestScanFamilyOfDot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fam")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.csv"), []byte("ts,value\n1600000000,1\n1600000060,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	refs, err := Scan(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].Family != "fam" {
		t.Fatalf("Scan(\".\") = %+v, want one series of family fam", refs)
	}
}

// TestScanRefusesBrokenLinks: a link that leads nowhere, or round in a
// loop, may be a day's directory: refused by name (it was skipped without
// a word, and the day's parts left out).
func TestScanRefusesBrokenLinks(t *testing.T) {
	for _, tc := range []struct{ name, target string }{{"gone", "nowhere"}, {"loop", "loop"}} {
		root := t.TempDir()
		writeFiles(t, root, map[string]string{"fam/day1/vm_a.csv": "ts,value\n100,1\n200,2\n"})
		// No series, left alone: a broken README.md or editor's lock (a
		// hidden file is no series).
		for _, other := range []string{"README.md", ".#vm_a.csv"} {
			if err := os.Symlink(filepath.Join(root, "nowhere"), filepath.Join(root, "fam", other)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Scan(filepath.Join(root, "fam")); err != nil {
			t.Fatalf("%s: broken links that are no series refused: %v", tc.name, err)
		}
		link := filepath.Join(root, "fam", "day2")
		target := filepath.Join(root, "fam", tc.target)
		if tc.name == "loop" {
			target = link
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if _, err := Scan(filepath.Join(root, "fam")); err == nil || !strings.Contains(err.Error(), link+" is a symbolic link that cannot be followed") {
			t.Errorf("%s: err %v, want the link refused by name", tc.name, err)
		}
	}
}

// TestDisjoint: a file that is part of series of two families (a day's
// directory linked into both) is refused, naming both; families of their
// own files pass.
func TestDisjoint(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"a/day1/vm_a.csv": "ts,value\n100,1\n200,2\n",
		"b/day2/vm_b.csv": "ts,value\n100,1\n200,2\n",
		"c/day3/vm_c.csv": "ts,value\n100,1\n200,2\n",
	})
	if err := os.Symlink(filepath.Join(root, "a", "day1"), filepath.Join(root, "c", "day1")); err != nil {
		t.Fatal(err)
	}
	scan := func(fam string) []Ref {
		refs, err := Scan(filepath.Join(root, fam))
		if err != nil {
			t.Fatal(err)
		}
		return refs
	}
	if err := Disjoint(scan("a"), scan("b")); err != nil {
		t.Errorf("families of their own files: %v", err)
	}
	err := Disjoint(scan("a"), scan("b"), scan("c"))
	if err == nil || !strings.Contains(err.Error(), "(series vm_a of family a) and") || !strings.Contains(err.Error(), "(series vm_a of family c) are the same file") {
		t.Errorf("a day linked into two families: err %v, want it refused naming both", err)
	}
	// One file under two series' names in one family.
	if err := os.Symlink(filepath.Join(root, "b", "day2", "vm_b.csv"), filepath.Join(root, "b", "day2", "vm_z.csv")); err != nil {
		t.Fatal(err)
	}
	if err := Disjoint(scan("b")); err == nil || !strings.Contains(err.Error(), "series vm_z of family b") {
		t.Errorf("one file as two series of one family: err %v, want it refused", err)
	}
}

// TestScanRefusesCompressedSeries: a compressed series beside the CSV
// files (d.csv.gz) was left out without a word ("3 series (a b c)"); it is
// refused, naming the file and how to decompress it, in both layouts. A
// compressed copy of a series the directory holds as CSV, an archive of
// another name and a hidden file leave nothing out: read as before.
func TestScanRefusesCompressedSeries(t *testing.T) {
	const csv = "ts,value\n100,1\n200,2\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string // the refused file and its command; "" for the series read
		read  string
	}{
		{"gzip", map[string]string{"a.csv": csv, "b.csv": csv, "c.csv": csv, "d.csv.gz": "\x1f\x8b"}, "d.csv.gz is a gzip-compressed series (d)", ""},
		{"bzip2", map[string]string{"a.csv": csv, "d.csv.bz2": "BZh"}, "(bunzip2 ", ""},
		{"xz", map[string]string{"a.csv": csv, "d.csv.xz": "x"}, "(unxz ", ""},
		{"zstd, upper case", map[string]string{"a.csv": csv, "d.CSV.ZST": "x"}, "d.CSV.ZST is a zstd-compressed series (d)", ""},
		{"zip", map[string]string{"a.csv": csv, "d.csv.zip": "PK"}, "(unzip ", ""},
		{"alone", map[string]string{"d.csv.gz": "x"}, "d.csv.gz is a gzip-compressed series (d)", ""},
		{"nested", map[string]string{"day1/vm.csv": csv, "day2/vm.csv.gz": "x"}, "day2/vm.csv.gz is a gzip-compressed series (vm)", ""},
		{"a copy of a series read", map[string]string{"a.csv": csv, "a.csv.zip": "PK", "b.csv": csv}, "", "a b"},
		{"other names", map[string]string{"a.csv": csv, "crane.tar.gz": "x", "README.md.gz": "x", ".d.csv.gz": "x", "d.gz": "x"}, "", "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, c.files)
			refs, err := Scan(dir)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "decompress it first") {
					t.Fatalf("error %v, want one containing %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range refs {
				got = append(got, r.Name)
			}
			if strings.Join(got, " ") != c.read {
				t.Fatalf("series %v, want %s", got, c.read)
			}
		})
	}
}

// TestLooksCumulative: a series whose values never fall and rise many
// times over (a Prometheus counter exported without rate()) looks like a
// counter; a constant series, one flat and then stepping up, one that
// falls once, and a short ramp do not.
func TestLooksCumulative(t *testing.T) {
	ramp := func(n int, f func(i int) float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	counter := ramp(100, func(i int) float64 { return 39.7 * float64(i+1) * float64(i+1) })
	fallsOnce := append([]float64(nil), counter...)
	fallsOnce[50] = fallsOnce[49] - 1
	for _, c := range []struct {
		name   string
		values []float64
		want   bool
	}{
		{"counter", counter, true},
		{"counter from 0", ramp(100, func(i int) float64 { return float64(i) }), true},
		{"counter with idle scrapes", ramp(100, func(i int) float64 { return float64(10 + 5*(i/3)) }), true},
		{"constant", ramp(100, func(int) float64 { return 3 }), false},
		{"zero", ramp(100, func(int) float64 { return 0 }), false},
		{"flat then a step", ramp(100, func(i int) float64 { return map[bool]float64{true: 1, false: 50}[i < 60] }), false},
		{"rises in few samples", ramp(100, func(i int) float64 { return float64(1 + 20*(i/20)) }), false},
		{"rises less than tenfold", ramp(100, func(i int) float64 { return 100 + float64(i) }), false},
		{"falls once", fallsOnce, false},
		{"short", ramp(9, func(i int) float64 { return float64(1 + 100*i) }), false},
		{"usage", []float64{5, 7, 3, 9, 2, 8, 4, 6, 5, 7, 3}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Series{Name: "s", Values: c.values}
			if got := LooksCumulative(s); got != c.want {
				t.Fatalf("LooksCumulative(%v) = %v, want %v", c.values, got, c.want)
			}
		})
	}
}

// TestLongExportHintOnlyForAnInstanceColumn: the hint that a file holds
// several series comes only when the times start over and a column that
// held one value on every line before changes; a column that changes
// every line (a date, a count) is no instance.
func TestLongExportHintOnlyForAnInstanceColumn(t *testing.T) {
	for _, csv := range []string{
		"ts,date,value\n300,d5,1\n200,d3,1\n",             // newest first
		"ts,value,requests\n1,1,5\n2,1,7\n2,1,9\n",        // a repeated time
		"ts,value,requests\n1,1,5\n2,1,7\n1,1,9\n",        // the times start over; requests changed before
		"ts,host,value\n1,a,1\n2,a,1\n3,a,1\n2,b,1\n",     // back, but not to the start
		"ts,date,value\n1,d1,1\n2,d2,1\n3,d3,1\n1,d1,1\n", // start over, the date changed every line
	} {
		_, err := Read(strings.NewReader(csv), "s")
		if err == nil || strings.Contains(err.Error(), "several series") {
			t.Errorf("%q: %v; want refused without the several-series hint", csv, err)
		}
	}
}
