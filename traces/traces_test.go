package traces

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name, csv string
		want      []float64
		err       string
	}{
		{name: "ok", csv: "ts,value\n1,0.5\n2,1.5\n", want: []float64{0.5, 1.5}},
		{name: "columns swapped, extra column", csv: "value,host,ts\n2,a,10\n3,b,20\n", want: []float64{2, 3}},
		{name: "float time", csv: "ts,value\n1.0,1\n2.5,2\n", want: []float64{1, 2}},
		{name: "no header", csv: "1,2\n", err: "must name a `ts` and a `value` column"},
		{name: "empty", csv: "ts,value\n", err: "no samples"},
		{name: "NaN", csv: "ts,value\n1,NaN\n", err: "line 2: value"},
		{name: "negative", csv: "ts,value\n1,-1\n", err: "line 2: value"},
		{name: "not a number", csv: "ts,value\n1,abc\n", err: "line 2: value"},
		{name: "out of order", csv: "ts,value\n2,1\n1,1\n", err: "line 3: ts"},
		{name: "repeated time", csv: "ts,value\n1,1\n1,2\n", err: "line 3: ts"},
		{name: "time out of range", csv: "ts,value\n1e30,1\n", err: "line 2: ts"},
		{name: "short row", csv: "ts,value\n1\n", err: "line 2"},
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

func TestNormalize(t *testing.T) {
	s := Series{Name: "s", Times: []int64{1, 2, 3, 4}, Values: []float64{1, 2, 3, 4}}
	n, err := Normalize(s, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if p := Quantile(n.Values, 0.99); math.Abs(p-0.1) > 1e-12 {
		t.Fatalf("p99 after normalising is %v, want 0.1", p)
	}
	if s.Values[0] != 1 {
		t.Fatal("Normalize changed its input")
	}
	if _, err := Normalize(Series{Name: "flat", Times: []int64{1, 2}, Values: []float64{0, 0}}, 0.1); err == nil {
		t.Fatal("a series of zeros was normalised")
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{4, 1, 3, 2}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {1, 4}, {0.5, 2.5}, {1.0 / 3, 2}} {
		if got := Quantile(xs, tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("quantile of nothing is not NaN")
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
	for name, body := range map[string]string{"b.csv": "ts,value\n1,1\n", "a.csv": "ts,value\n1,2\n", "notes.txt": "x"} {
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
