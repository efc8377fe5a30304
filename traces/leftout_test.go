package traces

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLeftOut: the files beside a family's series that may hold data are
// named, in the directory and in the nested layout's parts; documentation,
// hidden files, directories and compressed copies of a series are not.
func TestLeftOut(t *testing.T) {
	const series = "ts,value\n100,1\n200,2\n"
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"series alone", map[string]string{"a.csv": series, "b.CSV": series}, nil},
		{"documentation", map[string]string{"a.csv": series, "README.md": "", "LICENSE": "", "NOTICE.txt": "", "licence-data.txt": "", "paper.pdf": "", "index.html": ""}, nil},
		{"hidden and a copy", map[string]string{"a.csv": series, ".a.csv.swp": "", "a.csv.gz": "", "a.csv.ZST": ""}, nil},
		{"an export's archive", map[string]string{"a.csv": series, "export.zip": "", "c.tar.gz": ""}, []string{"c.tar.gz", "export.zip"}},
		{"other text", map[string]string{"a.csv": series, "b.tsv": "", "c.txt": "", "d.json": "", "e.csv ": "", "f.csv~": ""}, []string{"b.tsv", "c.txt", "d.json", "e.csv ", "f.csv~"}},
		{"nested parts", map[string]string{"day1/vm.csv": series, "day2/vm.csv": series, "day2/vm2.tsv": "", "day2/README": "", "notes.txt": ""}, []string{filepath.Join("day2", "vm2.tsv"), "notes.txt"}},
		{"a flat family's other directory is not read", map[string]string{"a.csv": series, "plots/a.png": ""}, nil},
		{"plots, scripts, checksums, clutter", map[string]string{"a.csv": series, "plot.png": "", "analyse.py": "", "run.ipynb": "", "SHA256SUMS": "", "a.csv.sha256": "", "MANIFEST": "", "Thumbs.db": "", "desktop.ini": "", "README.md.gz": ""}, nil},
		{"backups of a series", map[string]string{"a.csv": series, "a.csv~": "", "a.csv.bak": "", "a.CSV.orig": ""}, nil},
		{"backups of no series", map[string]string{"a.csv": series, "b.csv~": "", "b.csv.bak": ""}, []string{"b.csv.bak", "b.csv~"}},
		{"a part's directory without a series", map[string]string{"day1/vm.csv": series, "day2/vm.csv": series, "day3/vm.tsv": ""}, []string{filepath.Join("day3", "vm.tsv")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "fam")
			writeFiles(t, dir, c.files)
			refs, err := Scan(dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := LeftOut(dir, refs)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("LeftOut = %q, want %q", got, c.want)
			}
		})
	}

	t.Run("a link to a file is one; a link to a directory is not", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "fam")
		writeFiles(t, dir, map[string]string{"a.csv": series})
		other := t.TempDir()
		writeFiles(t, other, map[string]string{"x.zip": ""})
		if err := os.Symlink(filepath.Join(other, "x.zip"), filepath.Join(dir, "linked.zip")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(other, filepath.Join(dir, "elsewhere")); err != nil {
			t.Fatal(err)
		}
		refs, err := Scan(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := LeftOut(dir, refs)
		if err != nil || !slices.Equal(got, []string{"linked.zip"}) {
			t.Fatalf("LeftOut = %q, %v; want [linked.zip]", got, err)
		}
	})
}

// TestSpacingSparse: a usual spacing past an hour is sparse; an hour is not.
func TestSpacingSparse(t *testing.T) {
	for _, c := range []struct {
		times []int64
		want  bool
	}{
		{[]int64{0, 60, 120}, false},
		{[]int64{0, 3600, 7200}, false},
		{[]int64{0, 3601, 7202}, true},
		{[]int64{0, 60000, 120000, 180000}, true},
		{[]int64{0, 60, 120, 86400}, false}, // a gap, not the usual spacing
		{[]int64{5}, false},
	} {
		if got := SpacingOf(c.times).Sparse(); got != c.want {
			t.Errorf("SpacingOf(%v).Sparse() = %v, want %v", c.times, got, c.want)
		}
	}
}
