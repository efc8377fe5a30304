// Package traces loads real usage series (CSV files with a `ts,value` header),
// normalises each on its own scale and splits a collection by series so that
// what a model is tested on was never trained on.
package traces

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Series is one usage series: Values[i] was observed at Unix time Times[i]
// (seconds). Times are strictly increasing.
type Series struct {
	Name   string
	Times  []int64
	Values []float64
}

// Len returns the number of samples.
func (s Series) Len() int { return len(s.Values) }

// Read parses one CSV series. The first line must be a header naming the
// columns `ts` and `value` (in any order; other columns are ignored). Every
// value must be a finite, non-negative number and timestamps must increase.
func Read(r io.Reader, name string) (Series, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return Series{}, fmt.Errorf("series %s: reading header: %w", name, err)
	}
	tsCol, valCol := -1, -1
	for i, h := range header {
		switch strings.TrimSpace(strings.ToLower(h)) {
		case "ts", "timestamp", "time":
			tsCol = i
		case "value", "usage":
			valCol = i
		}
	}
	if tsCol < 0 || valCol < 0 {
		return Series{}, fmt.Errorf("series %s: header %q must name a `ts` and a `value` column", name, strings.Join(header, ","))
	}
	s := Series{Name: name}
	line := 1
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line++
		if err != nil {
			return Series{}, fmt.Errorf("series %s: line %d: %w", name, line, err)
		}
		if len(rec) <= tsCol || len(rec) <= valCol {
			return Series{}, fmt.Errorf("series %s: line %d: expected at least %d columns, got %d", name, line, max(tsCol, valCol)+1, len(rec))
		}
		ts, err := parseTime(strings.TrimSpace(rec[tsCol]))
		if err != nil {
			return Series{}, fmt.Errorf("series %s: line %d: ts: %w", name, line, err)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[valCol]), 64)
		if err != nil {
			return Series{}, fmt.Errorf("series %s: line %d: value: %w", name, line, err)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return Series{}, fmt.Errorf("series %s: line %d: value: %v is not a finite non-negative usage", name, line, v)
		}
		if n := len(s.Times); n > 0 && ts <= s.Times[n-1] {
			return Series{}, fmt.Errorf("series %s: line %d: ts: %d does not come after %d", name, line, ts, s.Times[n-1])
		}
		s.Times = append(s.Times, ts)
		s.Values = append(s.Values, v)
	}
	if len(s.Values) == 0 {
		return Series{}, fmt.Errorf("series %s: no samples", name)
	}
	return s, nil
}

func parseTime(s string) (int64, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	// int64 holds every time below 2^63; a float at or past it (or NaN)
	// would convert to an implementation-defined value.
	if err != nil || !(f > -(1<<63) && f < 1<<63) {
		return 0, fmt.Errorf("%q is not a Unix time in seconds", s)
	}
	return int64(f), nil
}

// ReadFile reads one CSV series; its name is the file name without extension.
func ReadFile(path string) (Series, error) {
	f, err := os.Open(path)
	if err != nil {
		return Series{}, err
	}
	defer f.Close()
	return Read(f, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
}

// LoadDir reads every *.csv file in dir, sorted by name. A directory with no
// CSV series is an error.
func LoadDir(dir string) ([]Series, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.csv"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("traces: no *.csv series in %s", dir)
	}
	sort.Strings(paths)
	out := make([]Series, 0, len(paths))
	for _, p := range paths {
		s, err := ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("traces: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}

// Quantile returns the q-quantile (0..1) of xs by linear interpolation
// between order statistics. xs is not modified.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	c := append([]float64(nil), xs...)
	sort.Float64s(c)
	return QuantileSorted(c, q)
}

// QuantileSorted is Quantile on an already sorted slice.
func QuantileSorted(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if q <= 0 {
		return sorted[0]
	}
	if q >= 1 {
		return sorted[n-1]
	}
	pos := q * float64(n-1)
	lo := int(pos)
	frac := pos - float64(lo)
	if lo+1 >= n {
		return sorted[n-1]
	}
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// Normalize returns a copy of s scaled so that its p99 over the whole series
// equals target (a share of a host's capacity). A series whose p99 is zero
// cannot be normalised.
func Normalize(s Series, target float64) (Series, error) {
	p99 := Quantile(s.Values, 0.99)
	if !(p99 > 0) {
		return Series{}, fmt.Errorf("series %s: p99 is %v, cannot normalise", s.Name, p99)
	}
	k := target / p99
	out := Series{Name: s.Name, Times: s.Times, Values: make([]float64, len(s.Values))}
	for i, v := range s.Values {
		out.Values[i] = v * k
	}
	return out, nil
}

// SplitByName splits series into a training and a held-out set by series:
// a series is held out when the FNV-1a hash of its name, mixed with seed,
// falls in the held-out share. The split depends only on names and seed,
// never on file order or contents, so any directory of series splits the
// same way every time.
func SplitByName(all []Series, heldOutShare float64, seed uint64) (train, test []Series) {
	for _, s := range all {
		if hashUnit(s.Name, seed) < heldOutShare {
			test = append(test, s)
		} else {
			train = append(train, s)
		}
	}
	// Never leave either side empty when there are two or more series.
	if len(all) >= 2 && len(test) == 0 {
		test, train = train[len(train)-1:], train[:len(train)-1]
	}
	if len(all) >= 2 && len(train) == 0 {
		train, test = test[:1], test[1:]
	}
	return train, test
}

func hashUnit(name string, seed uint64) float64 {
	h := uint64(14695981039346656037) ^ seed
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	// finalise (splitmix64) so that close names spread out
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return float64(h>>11) / float64(1<<53)
}
