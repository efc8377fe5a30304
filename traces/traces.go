// Package traces loads real usage series, normalises each on its own scale
// and splits a collection by series identity so that what a model is tested
// on was never trained on.
//
// A trace directory is one family of series in one of two layouts:
//
//   - flat: one CSV file per series, DIR/<series>.csv; the series' identity
//     is the file name without its extension (.csv in any case: a.CSV is
//     series a);
//   - nested: DIR/<part>/<series>.csv (PlanetLab's <day>/<vm>.csv): files of
//     the same name in different subdirectories are parts of one series,
//     joined in the subdirectories' name order, so that every day of one VM
//     is one series with one identity.
//
// Hidden files (.x.csv: macOS's ._x.csv, an editor's lock) are no series,
// and hidden directories (.snapshot, .ipynb_checkpoints) no parts. A
// compressed series (<series>.csv.gz, .bz2, .xz, .zst, .zip) is refused,
// not left out: the files are read as text CSV only. Other files are not
// read; LeftOut names those that may hold data (an export's archive, a
// .tsv), for a note.
// The layouts do not mix: a directory with both <series>.csv files and
// subdirectories of them is refused, not read in part.
//
// A CSV file has a header. Its time column is `ts` (or `timestamp`,
// `time`), in Unix seconds. Its usage column is `value` (or `usage`), or
// `cpu_mhz` (Bitbrains). Memory, when present, is `mem_kb` or `memory_mb`
// (memory in use) and `mem_capacity_kb` or `memory_capacity_mb` (memory
// provisioned to the VM): both, in every row, even for a replay that
// reads CPU alone (a file whose memory is half there is refused, not read
// in part). Other columns are ignored; a row's fields past the header's
// must be empty (a number split by a comma is refused, not cut).
package traces

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/stats"
)

// MinSamples is the fewest samples a series may have: a single reading
// says nothing of how usage varies.
const MinSamples = 2

// Series is one usage series: Values[i] was observed at Unix time Times[i]
// (seconds). Times are strictly increasing.
type Series struct {
	// Name is the series' identity: what splits hold out.
	Name string
	// Family is the trace directory (its base name) the series came from;
	// empty for series made in code.
	Family string
	Times  []int64
	Values []float64
	// Memory is the memory in use at each sample, in MB, when the trace
	// has it (nil otherwise).
	Memory []float64
	// MemoryProvisionedMB is the memory provisioned to the series' VM or
	// container (the largest figure the trace gives), 0 when unknown.
	MemoryProvisionedMB float64
}

// Len returns the number of samples.
func (s Series) Len() int { return len(s.Values) }

// HasMemory reports whether the series carries memory usage and the
// memory provisioned for it.
func (s Series) HasMemory() bool { return s.Memory != nil && s.MemoryProvisionedMB > 0 }

// columns are the positions of the columns a file has (-1: absent).
type columns struct {
	ts, value, mem, memCap int
	memScale, capScale     float64 // to MB
}

// instanceColumn returns a column of header that the series does not
// read, whose field held one value over every sample before rec (same
// marks them) and holds another in rec, or -1: the column that names the
// instance of a "long" export (one row per sample of every instance).
func (c columns) instanceColumn(header, first, rec []string, same []bool) int {
	for i := range header {
		if i == c.ts || i == c.value || i == c.mem || i == c.memCap || i >= len(first) || i >= len(rec) || !same[i] || strings.TrimSpace(header[i]) == "" {
			continue
		}
		if strings.TrimSpace(rec[i]) != strings.TrimSpace(first[i]) {
			return i
		}
	}
	return -1
}

// findColumns finds the columns of a header; a column named twice (under
// one name or two of its names) is an error naming both.
func findColumns(header []string) (columns, error) {
	c := columns{ts: -1, value: -1, mem: -1, memCap: -1}
	cpu := -1
	set := func(dst *int, i int) error {
		if *dst >= 0 {
			return fmt.Errorf("columns %q and %q name the same figure", header[*dst], header[i])
		}
		*dst = i
		return nil
	}
	for i, h := range header {
		var err error
		switch strings.TrimSpace(strings.ToLower(h)) {
		case "ts", "timestamp", "time":
			err = set(&c.ts, i)
		case "value", "usage":
			err = set(&c.value, i)
		case "cpu_mhz":
			err = set(&cpu, i)
		case "mem_kb":
			err = set(&c.mem, i)
			c.memScale = 1.0 / 1024
		case "memory_mb":
			err = set(&c.mem, i)
			c.memScale = 1
		case "mem_capacity_kb":
			err = set(&c.memCap, i)
			c.capScale = 1.0 / 1024
		case "memory_capacity_mb":
			err = set(&c.memCap, i)
			c.capScale = 1
		}
		if err != nil {
			return c, err
		}
	}
	if c.value < 0 {
		c.value = cpu
	}
	return c, nil
}

// headerText quotes a header for a message, cut to a readable length.
func headerText(header []string) string {
	const most = 120
	h := strings.Join(header, ",")
	if len(h) <= most {
		return strconv.Quote(h)
	}
	shown := strings.ToValidUTF8(h[:most], "")
	return strconv.Quote(shown) + fmt.Sprintf(" (%d more bytes)", len(h)-len(shown))
}

// compressed are the magic numbers of the compressed formats a trace file
// most likely is when it is not text.
var compressed = []struct{ magic, name, how string }{
	{"\x1f\x8b", "gzip", "gunzip"},
	{"PK\x03\x04", "zip", "unzip"},
	{"\x28\xb5\x2f\xfd", "zstd", "zstd -d"},
	{"\xfd7zXZ\x00", "xz", "unxz"},
}

// Read parses one CSV series (see the package comment for the columns).
// Every value must be a finite, non-negative number, timestamps must
// increase, and a series needs at least MinSamples samples.
func Read(r io.Reader, name string) (Series, error) {
	s, err := read(r, name)
	if err != nil {
		return Series{}, err
	}
	if err := checkLength(s); err != nil {
		return Series{}, err
	}
	return s, nil
}

// read parses one CSV file; any number of samples (a part of a series may
// hold one).
func read(r io.Reader, name string) (Series, error) {
	// A byte order mark (a spreadsheet's, R's or pandas' "utf-8-sig") is
	// taken off before the CSV reader sees it: in front of a quoted header
	// it would read as a bare quote.
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		_, _ = br.Discard(3)
	}
	// A compressed file named *.csv would reach the CSV reader as bytes
	// that fail on a quote or a line far in; its magic number says what
	// it is.
	if b, _ := br.Peek(6); len(b) > 0 {
		for _, m := range compressed {
			if strings.HasPrefix(string(b), m.magic) {
				return Series{}, fmt.Errorf("series %s: not a text CSV file: it is %s-compressed (decompress it first: %s)", name, m.name, m.how)
			}
		}
	}
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	rec, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Series{}, fmt.Errorf("series %s: the file is empty: want a header naming `ts` and `value` columns, then samples", name)
		}
		return Series{}, fmt.Errorf("series %s: reading header: %w", name, err)
	}
	header := append([]string(nil), rec...) // records are reused
	if h := strings.Join(header, ","); strings.ContainsRune(h, 0) || !utf8.ValidString(h) {
		// A binary file (a program, an archive, a UTF-16 export): its
		// first line quoted would be a hundred escaped bytes.
		return Series{}, fmt.Errorf("series %s: not a text CSV file: its first line holds a NUL byte or is not UTF-8 (a binary file, a compressed one, or a UTF-16 export: save it as UTF-8 CSV)", name)
	}
	shown := headerText(header)
	if strings.ContainsRune(strings.Join(header, ","), '\r') {
		// encoding/csv ends lines at LF or CRLF only: a file whose lines
		// end in a lone CR (old Mac OS) reads as one long header.
		return Series{}, fmt.Errorf("series %s: header %s holds a carriage return: the file's lines end in a lone CR (old Mac OS line endings); convert them to LF or CRLF", name, shown)
	}
	if len(header) <= 2 && strings.HasPrefix(strings.ToLower(strings.TrimSpace(header[0])), "sep=") {
		// Excel's hint line ("sep=," read as one or two fields) before the
		// header.
		return Series{}, fmt.Errorf("series %s: the first line %s is Excel's separator hint, not a header: remove it (the header naming `ts` and `value` comes first)", name, shown)
	}
	c, err := findColumns(header)
	if err != nil {
		return Series{}, fmt.Errorf("series %s: header %s: %w", name, shown, err)
	}
	if c.ts < 0 || c.value < 0 {
		hint := ""
		if len(header) == 1 {
			for _, sep := range []struct{ r, name string }{{";", "semicolons"}, {"\t", "tabs"}, {"|", "bars"}} {
				if strings.Contains(header[0], sep.r) {
					hint = fmt.Sprintf(": its fields are separated by %s, and a trace file's by commas", sep.name)
					break
				}
			}
		}
		return Series{}, fmt.Errorf("series %s: header %s must name a `ts` column and a `value` (or `cpu_mhz`) column%s", name, shown, hint)
	}
	if (c.mem < 0) != (c.memCap < 0) {
		return Series{}, fmt.Errorf("series %s: header %s: memory needs both the memory in use (mem_kb or memory_mb) and the memory provisioned (mem_capacity_kb or memory_capacity_mb)", name, shown)
	}
	need := max(c.ts, c.value, c.mem, c.memCap) + 1
	// The header's columns, less empty names at its end (a trailing
	// comma): a row's fields past them must be empty.
	named := len(header)
	for named > need && strings.TrimSpace(header[named-1]) == "" {
		named--
	}
	s := Series{Name: name}
	var (
		blank int      // the first line of blanks or empty fields, 0 if none
		first []string // the first sample's fields
		same  []bool   // the columns whose fields were first's on every sample so far
	)
	number := func(line int, col, field string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(col), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("series %s: line %d: %s: %q is not a number", name, line, field, col)
		}
		if !Decimal(col) {
			return 0, fmt.Errorf("series %s: line %d: %s: %q is not a decimal number (hexadecimal and digits separated by _ are refused)", name, line, field, col)
		}
		if errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0) {
			return 0, fmt.Errorf("series %s: line %d: %s: %q is beyond a 64-bit floating point number: check the units", name, line, field, col)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fmt.Errorf("series %s: line %d: %s: %v is not a finite non-negative figure", name, line, field, v)
		}
		return v, nil
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Series{}, fmt.Errorf("series %s: %w", name, err) // csv.ParseError names the line
		}
		// The record's line in the file (blank lines are skipped).
		line, _ := cr.FieldPos(0)
		if !slices.ContainsFunc(rec, func(f string) bool { return strings.TrimSpace(f) != "" }) {
			// A line of spaces (an editor's last line) or of empty
			// fields (a spreadsheet's empty rows, ",,"): no sample. At
			// the end of the file they are read as the blank lines they
			// are; before a sample, a sample may be missing.
			if blank == 0 {
				blank = line
			}
			continue
		}
		if len(rec) < need {
			return Series{}, fmt.Errorf("series %s: line %d: expected at least %d columns, got %d", name, line, need, len(rec))
		}
		for i := named; i < len(rec); i++ {
			// Fields past the header's are empty (trailing commas) or a
			// number split by a comma: "1,397.5" would read as 1.
			if strings.TrimSpace(rec[i]) != "" {
				if len(rec) <= len(header) {
					return Series{}, fmt.Errorf("series %s: line %d: %q under an unnamed column (the header ends in a comma): a number written with a comma (a thousands separator or a decimal comma)? Write numbers without one, quote the field, or name the column", name, line, rec[i])
				}
				return Series{}, fmt.Errorf("series %s: line %d: %d fields, the header names %d: a number written with a comma (a thousands separator or a decimal comma)? Write numbers without one, or quote the field", name, line, len(rec), named)
			}
		}
		ts, err := parseTime(strings.TrimSpace(rec[c.ts]))
		if err != nil {
			return Series{}, fmt.Errorf("series %s: line %d: %s: %w", name, line, header[c.ts], err)
		}
		v, err := number(line, rec[c.value], header[c.value])
		if err != nil {
			return Series{}, err
		}
		if len(s.Times) == 0 {
			first = append(first[:0], rec...) // records are reused
			same = make([]bool, len(rec))
			for i := range same {
				same[i] = true
			}
		}
		if n := len(s.Times); n > 0 && ts <= s.Times[n-1] {
			text, hint := strings.TrimSpace(rec[c.ts]), ""
			col := -1
			if ts <= s.Times[0] {
				// The times start over: a "long" export (Prometheus',
				// Datadog's), one row per sample of every instance?
				col = c.instanceColumn(header[:named], first, rec, same)
			}
			switch {
			case strings.ContainsAny(text, "eE"):
				hint = " (a time in scientific notation keeps few digits: write whole seconds)"
			case n == 1 && ts < s.Times[0]:
				hint = " (newest first? Samples must be oldest first)"
			case col >= 0:
				hint = fmt.Sprintf(" (several series in one file, one per %s? It was %q on every line before and is %q here: a series is a file of its own)", strings.TrimSpace(header[col]), strings.TrimSpace(first[col]), strings.TrimSpace(rec[col]))
			}
			return Series{}, fmt.Errorf("series %s: line %d: %s: %q (%d) does not come after %d%s", name, line, header[c.ts], text, ts, s.Times[n-1], hint)
		}
		if c.mem >= 0 {
			m, err := number(line, rec[c.mem], header[c.mem])
			if err != nil {
				return Series{}, err
			}
			mc, err := number(line, rec[c.memCap], header[c.memCap])
			if err != nil {
				return Series{}, err
			}
			s.Memory = append(s.Memory, m*c.memScale)
			s.MemoryProvisionedMB = max(s.MemoryProvisionedMB, mc*c.capScale)
		}
		if blank != 0 {
			// (checked once the line after is a sample: a footer is
			// refused as what it is)
			return Series{}, fmt.Errorf("series %s: line %d: no sample, only blanks or empty fields, before the samples that follow: a missing sample? remove the line", name, blank)
		}
		for i := range same {
			if i >= len(rec) || strings.TrimSpace(rec[i]) != strings.TrimSpace(first[i]) {
				same[i] = false
			}
		}
		s.Times = append(s.Times, ts)
		s.Values = append(s.Values, v)
	}
	return s, nil
}

// GapRatio is how many times a series' usual spacing an interval between
// two of its samples must be to count as a gap (the ratio at which the
// engine's decision notes a gap in a window).
const GapRatio = 4

// SparseSpacing is the usual spacing, in seconds, past which a series'
// samples are sparse for the replay (more than an hour apart): the
// engine reads a window of samples whatever their spacing, and changes
// per hour read the times as seconds, which relative times in
// milliseconds (0, 60000, ...) are not; a replay notes such series.
const SparseSpacing = 3600

// Spacing describes the intervals between a series' samples. A replay
// reads samples, not time: a window across a gap reads the usage before
// it as recent, and a series whose sampling rate changes is replayed at
// its usual one.
type Spacing struct {
	// Usual is the median interval, in seconds (0 with fewer than two
	// samples).
	Usual int64
	// Gaps counts the intervals of at least GapRatio times Usual;
	// Largest is the largest interval.
	Gaps    int
	Largest int64
}

// Sparse reports whether the usual spacing is longer than SparseSpacing.
func (sp Spacing) Sparse() bool { return sp.Usual > SparseSpacing }

// SpacingOf returns the spacing of strictly increasing times.
func SpacingOf(times []int64) Spacing {
	if len(times) < 2 {
		return Spacing{}
	}
	d := make([]int64, len(times)-1)
	for i := range d {
		d[i] = times[i+1] - times[i]
	}
	var sp Spacing
	for _, x := range d {
		sp.Largest = max(sp.Largest, x)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	sp.Usual = d[len(d)/2]
	for _, x := range d {
		if x >= GapRatio*sp.Usual {
			sp.Gaps++
		}
	}
	return sp
}

func checkLength(s Series) error {
	switch n := len(s.Values); {
	case n == 0:
		return fmt.Errorf("series %s: no samples", s.Name)
	case n < MinSamples:
		return fmt.Errorf("series %s: %d sample; a series needs at least %d (one reading says nothing of how usage varies)", s.Name, n, MinSamples)
	}
	return nil
}

// MaxTime is the largest time a series may hold, in Unix seconds (the
// year 5138): a larger one is most likely in milliseconds. It is the
// engine's bound on a sample's time, so that a series replays as the
// engine reads an observation.
const MaxTime = engine.MaxSampleTime

// Decimal reports whether s, a number strconv.ParseFloat read, is written
// in decimal: ParseFloat takes Go's literals, hexadecimal (0x1p-2) and
// digits separated by underscores (1_000) too, which no monitoring export
// writes and a typo can make.
func Decimal(s string) bool {
	return !strings.ContainsAny(s, "_xX")
}

func parseTime(s string) (int64, error) {
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr == nil && !Decimal(s) {
			return 0, fmt.Errorf("%q is not a decimal Unix time in seconds (hexadecimal and digits separated by _ are refused)", s)
		}
		// int64 holds every time below 2^63; a float at or past it (or
		// NaN) would convert to an implementation-defined value.
		if ferr != nil || !(f > -(1<<63) && f < 1<<63) {
			return 0, fmt.Errorf("%q is not a Unix time in seconds", s)
		}
		if f != math.Trunc(f) {
			return 0, fmt.Errorf("%q is not a whole Unix time in seconds (the replay reads whole seconds)", s)
		}
		i = int64(f)
	}
	if i >= MaxTime {
		return 0, fmt.Errorf("%q is past the year 5138 as Unix seconds: milliseconds? Times are Unix seconds", s)
	}
	if i < 0 {
		return 0, fmt.Errorf("%q is before 1970: times are Unix seconds, 0 or later (the engine refuses earlier ones)", s)
	}
	return i, nil
}

// ReadFile reads one CSV series; its name is the file name without extension.
// It reads regular files only (a FIFO or a device named *.csv would block or
// never end).
func ReadFile(path string) (Series, error) {
	s, err := readFile(path)
	if err != nil {
		return Series{}, err
	}
	if err := checkLength(s); err != nil {
		return Series{}, err
	}
	return s, nil
}

// readFile is ReadFile without the series' minimum length (a part's).
// Its errors name path once (os's name it, and read's are given it).
func readFile(path string) (Series, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Series{}, err
	}
	if !st.Mode().IsRegular() {
		return Series{}, fmt.Errorf("%s: not a regular file (%s); a series is a CSV file", path, st.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return Series{}, err
	}
	defer f.Close()
	s, err := read(f, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	if err != nil {
		return Series{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Ref is one series of a trace directory, found but not read: Load reads
// it. A program that replays many series holds Refs and loads one series
// at a time.
type Ref struct {
	// Name is the series' identity (the file name without .csv).
	Name string
	// Family is the directory's base name.
	Family string
	// Paths are the series' files in time order: one in a flat directory,
	// one per part (day) in a nested one.
	Paths []string
}

// Load reads the series, joining its parts in order. The series must
// hold at least MinSamples samples; a part of it, at least one (a file
// with a header alone is more likely cut short than a day without
// readings).
func (r Ref) Load() (Series, error) {
	if len(r.Paths) == 0 {
		return Series{}, fmt.Errorf("traces: series %s has no files", r.Name)
	}
	var out Series
	for i, p := range r.Paths {
		s, err := readFile(p)
		if err == nil && len(s.Values) == 0 {
			err = fmt.Errorf("%s: series %s: no samples", p, s.Name)
		}
		if err != nil {
			return Series{}, fmt.Errorf("traces: %w", err)
		}
		if i == 0 {
			out = s
			continue
		}
		if s.Times[0] <= out.Times[len(out.Times)-1] {
			return Series{}, fmt.Errorf("traces: %s: series %s: its first time %d is not after %d, the last of %s: parts of one series must not overlap",
				p, r.Name, s.Times[0], out.Times[len(out.Times)-1], r.Paths[i-1])
		}
		if (s.Memory == nil) != (out.Memory == nil) {
			return Series{}, fmt.Errorf("traces: %s: series %s: memory columns in some parts but not in others", p, r.Name)
		}
		out.Times = append(out.Times, s.Times...)
		out.Values = append(out.Values, s.Values...)
		out.Memory = append(out.Memory, s.Memory...)
		out.MemoryProvisionedMB = max(out.MemoryProvisionedMB, s.MemoryProvisionedMB)
	}
	out.Name, out.Family = r.Name, r.Family
	if err := checkLength(out); err != nil {
		if len(r.Paths) == 1 {
			return Series{}, fmt.Errorf("traces: %s: %w", r.Paths[0], err)
		}
		return Series{}, fmt.Errorf("traces: %w (joined from %d parts)", err, len(r.Paths))
	}
	return out, nil
}

// Scan lists the series of a trace directory, flat or nested (see the
// package comment), sorted by name, without reading them. A directory with
// no CSV series is an error.
func Scan(dir string) ([]Ref, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("traces: %s is not a directory", dir)
	}
	family := FamilyName(dir)
	if !textName(family) {
		return nil, fmt.Errorf("traces: %s: the directory's name, the family's, is not valid UTF-8 text or holds a control character (%q): rename it; reports and models name the family", dir, family)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	if err := brokenLinks(dir, entries); err != nil {
		return nil, err
	}
	if err := compressedSeries(dir, entries); err != nil {
		return nil, err
	}
	flat := csvPaths(dir, entries)
	alias := aliases(dir, entries)
	byName := map[string]*Ref{}
	for _, e := range entries { // ReadDir sorts by name: parts in order
		if !isPart(dir, e) || alias[e.Name()] {
			continue
		}
		parts, err := csvFiles(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if len(parts) > 0 && len(flat) > 0 {
			// A subdirectory's series would be left out without a word:
			// the two layouts do not mix.
			return nil, fmt.Errorf("traces: %s holds series in both layouts, *.csv files and %s/*.csv: a trace directory is flat (<series>.csv) or nested (<part>/<series>.csv); move one set to its own directory", dir, e.Name())
		}
		seen := make(map[string]string, len(parts))
		for _, p := range parts {
			name, _ := seriesName(filepath.Base(p))
			if err := once(seen, name, p); err != nil {
				return nil, err
			}
			r := byName[name]
			if r == nil {
				r = &Ref{Name: name, Family: family}
				byName[name] = r
			}
			r.Paths = append(r.Paths, p)
		}
	}
	if len(flat) > 0 {
		refs := make([]Ref, len(flat))
		seen := make(map[string]string, len(flat))
		for i, p := range flat {
			name, _ := seriesName(filepath.Base(p))
			if err := once(seen, name, p); err != nil {
				return nil, err
			}
			refs[i] = Ref{Name: name, Family: family, Paths: []string{p}}
		}
		return refs, nil
	}
	if len(byName) == 0 {
		return nil, fmt.Errorf("traces: no *.csv series in %s (nor in its subdirectories, <part>/<series>.csv)", dir)
	}
	refs := make([]Ref, 0, len(byName))
	for _, r := range byName {
		refs = append(refs, *r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
	return refs, nil
}

// csvFiles lists the *.csv files of dir, sorted by name (read from the
// directory: a path holding "[", "*" or "?" is no pattern).
func csvFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	if err := compressedSeries(dir, entries); err != nil {
		return nil, err
	}
	// Series one level further down would be left out without a word: the
	// nested layout is one level deep.
	for _, e := range entries {
		if !isPart(dir, e) {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		deeper, err := os.ReadDir(sub)
		if err != nil {
			return nil, fmt.Errorf("traces: %w", err)
		}
		if len(csvPaths(sub, deeper)) > 0 {
			return nil, fmt.Errorf("traces: %s holds series two levels down: a trace directory is flat (<series>.csv) or nested one level (<part>/<series>.csv); give %s as a directory of its own, or move its files up", sub, sub)
		}
	}
	return csvPaths(dir, entries), nil
}

// csvPaths is the paths of the *.csv files among dir's entries, in the
// entries' order (ReadDir's: by name). The extension's case does not
// matter: a.CSV, as some tools on Windows write it, is series a.
func csvPaths(dir string, entries []os.DirEntry) []string {
	var out []string
	for _, e := range entries {
		// A hidden file is no series (macOS's ._x.csv, an editor's
		// .#x.csv lock).
		if _, ok := seriesName(e.Name()); ok && !strings.HasPrefix(e.Name(), ".") && !isDir(dir, e) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// isPart says whether dir's entry e is a directory that can hold a part of
// the series: a directory whose name does not start with a dot (a hidden
// one, .snapshot, .ipynb_checkpoints, .git, holds copies or tools' files,
// as a hidden file is no series).
func isPart(dir string, e os.DirEntry) bool {
	return !strings.HasPrefix(e.Name(), ".") && isDir(dir, e)
}

// isDir says whether dir's entry e is a directory, following a symbolic
// link (a day's directory linked in from elsewhere is read like one that
// is there; a broken link is no directory).
func isDir(dir string, e os.DirEntry) bool {
	if e.Type()&fs.ModeSymlink == 0 {
		return e.IsDir()
	}
	st, err := os.Stat(filepath.Join(dir, e.Name()))
	return err == nil && st.IsDir()
}

// brokenLinks refuses a symbolic link among dir's entries that leads
// nowhere (or round in a loop) and may be a day's directory (no extension)
// or a series (*.csv): its series' parts would be left out without a word.
// Other names (README.md, an editor's .#lock) are no series: left alone.
func brokenLinks(dir string, entries []os.DirEntry) error {
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.Type()&fs.ModeSymlink == 0 || strings.HasPrefix(name, ".") || (ext != "" && !strings.EqualFold(ext, ".csv")) {
			continue
		}
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("traces: %s is a symbolic link that cannot be followed (%v): a day's directory or a series gone? remove the link or mend it", p, err)
		}
	}
	return nil
}

// compressedExts are the extensions of a compressed series file
// (<series>.csv.gz) and the command that decompresses each.
var compressedExts = []struct{ ext, name, how string }{
	{".gz", "gzip", "gunzip"},
	{".bz2", "bzip2", "bunzip2"},
	{".xz", "xz", "unxz"},
	{".zst", "zstd", "zstd -d"},
	{".zip", "zip", "unzip"},
}

// compressedSeries refuses a compressed series among dir's entries
// (<series>.csv.gz, .bz2, .xz, .zst, .zip, in any case): the directory is
// read as text CSV files only, and the series would be left out without a
// word, as a broken link's is. A compressed copy of a series the directory
// also holds as a CSV file (unzip and zstd -d keep the archive) leaves
// nothing out: left alone, as are other names (crane.tar.gz, README.md.gz)
// and hidden files.
func compressedSeries(dir string, entries []os.DirEntry) error {
	plain := plainSeries(entries)
	for _, e := range entries {
		file := e.Name()
		if strings.HasPrefix(file, ".") || isDir(dir, e) {
			continue
		}
		ext := filepath.Ext(file)
		for _, c := range compressedExts {
			if !strings.EqualFold(ext, c.ext) {
				continue
			}
			name, ok := seriesName(strings.TrimSuffix(file, ext))
			if !ok || plain[name] {
				break
			}
			p := filepath.Join(dir, file)
			return fmt.Errorf("traces: %s is a %s-compressed series (%s): trace files are read as text CSV only, and it would be left out; decompress it first (%s %s)",
				p, c.name, name, c.how, p)
		}
	}
	return nil
}

// docStems, docExts and notDataNames name what a trace directory may hold
// beside its series that is no data: documentation (README.md, LICENSE,
// NOTICE.txt, a paper's PDF), plots, scripts and notebooks, checksums and
// a desktop's clutter. LeftOut does not name them.
var (
	docStems = []string{"readme", "license", "licence", "notice", "copying", "changelog", "authors", "citation", "manifest", "sha256sums", "sha1sums", "md5sums"}
	docExts  = []string{".md", ".markdown", ".rst", ".html", ".htm", ".pdf",
		".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp",
		".py", ".ipynb", ".r", ".sh", ".go", ".js",
		".sha256", ".sha1", ".md5", ".sig", ".asc"}
	notDataNames = []string{"thumbs.db", "desktop.ini"}
)

// backupExts are the extensions of a backup of a series (a.csv~,
// a.csv.bak beside a.csv): LeftOut does not name them either.
var backupExts = []string{"~", ".bak", ".orig", ".old", ".swp"}

// LeftOut lists the files beside refs' series that Scan does not read and
// that may hold data: regular files in dir, or in the directories of refs'
// parts, that are not *.csv, not hidden, not documentation (README,
// LICENSE and the like, *.md, *.pdf) and not a compressed copy of a
// series the directory holds (a.csv.gz beside a.csv). An export's
// archive (export.zip), a tab-separated file or a name with a space after
// .csv would otherwise leave its series out of a replay without a word.
// The paths are sorted, relative to dir.
func LeftOut(dir string, refs []Ref) ([]string, error) {
	dir = filepath.Clean(dir)
	dirs := map[string]bool{dir: true}
	nested := false
	for _, r := range refs {
		for _, p := range r.Paths {
			dirs[filepath.Dir(p)] = true
			nested = nested || filepath.Dir(p) != dir
		}
	}
	if nested {
		// Every part's directory, one without a *.csv file too (a day
		// exported as .tsv).
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("traces: %w", err)
		}
		for _, e := range entries {
			if isPart(dir, e) {
				dirs[filepath.Join(dir, e.Name())] = true
			}
		}
	}
	var out []string
	for d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("traces: %w", err)
		}
		plain := plainSeries(entries)
		for _, e := range entries {
			file := e.Name()
			if _, ok := seriesName(file); ok || strings.HasPrefix(file, ".") || documentation(file) || compressedCopy(file, plain) || backupCopy(file, plain) {
				continue
			}
			p := filepath.Join(d, file)
			if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
				continue // a directory, a device; a broken link Scan refused where it mattered
			}
			if rel, err := filepath.Rel(dir, p); err == nil {
				p = rel
			}
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// documentation reports whether file is no data by its name (docStems):
// a trace directory's documentation, a plot, a script, a checksum, a
// desktop's clutter, or one of those compressed (README.md.gz).
func documentation(file string) bool {
	lower := strings.ToLower(file)
	for _, c := range compressedExts {
		lower = strings.TrimSuffix(lower, c.ext)
	}
	if slices.Contains(notDataNames, lower) {
		return true
	}
	for _, ext := range docExts {
		if strings.HasSuffix(lower, ext) {
			return true
		}
	}
	stem := strings.TrimSuffix(lower, filepath.Ext(lower))
	for _, d := range docStems {
		if stem == d || strings.HasPrefix(stem, d+"-") || strings.HasPrefix(stem, d+"_") {
			return true
		}
	}
	return false
}

// plainSeries is the set of series entries holds as *.csv files.
func plainSeries(entries []os.DirEntry) map[string]bool {
	plain := map[string]bool{}
	for _, e := range entries {
		if name, ok := seriesName(e.Name()); ok {
			plain[name] = true
		}
	}
	return plain
}

// backupCopy reports whether file is a backup of a series of plain
// (a.csv~, a.csv.bak beside a.csv).
func backupCopy(file string, plain map[string]bool) bool {
	for _, ext := range backupExts {
		if len(file) > len(ext) && strings.EqualFold(file[len(file)-len(ext):], ext) {
			name, ok := seriesName(file[:len(file)-len(ext)])
			return ok && plain[name]
		}
	}
	return false
}

// compressedCopy reports whether file is a compressed copy of a series
// of plain (<series>.csv.gz beside <series>.csv).
func compressedCopy(file string, plain map[string]bool) bool {
	ext := filepath.Ext(file)
	for _, c := range compressedExts {
		if strings.EqualFold(ext, c.ext) {
			name, ok := seriesName(strings.TrimSuffix(file, ext))
			return ok && plain[name]
		}
	}
	return false
}

// Disjoint refuses a CSV file that is part of two series (a day's
// directory linked into two trace directories, one directory given under
// two names, a file linked under another series' name): one could train
// and the other be held out. Files are compared by their paths with every
// link resolved (a hard link is not seen).
func Disjoint(families ...[]Ref) error {
	type owner struct{ family, series, path string }
	seen := map[string]owner{}
	for _, refs := range families {
		for _, r := range refs {
			for _, p := range r.Paths {
				key, err := filepath.EvalSymlinks(p)
				if err == nil {
					key, err = filepath.Abs(key)
				}
				if err != nil {
					return fmt.Errorf("traces: %w", err)
				}
				prev, ok := seen[key]
				if ok && (prev.family != r.Family || prev.series != r.Name) {
					return fmt.Errorf("traces: %s (series %s of family %s) and %s (series %s of family %s) are the same file: one series could train and the other be held out; give each file to one series",
						prev.path, prev.series, prev.family, p, r.Name, r.Family)
				}
				seen[key] = owner{r.Family, r.Name, p}
			}
		}
	}
	return nil
}

// aliases names the entries of dir that are symbolic links to a directory
// another entry also is (a "latest" link to the newest day): read once,
// through the entry that is no link, else the first by name. Directories
// are the same by identity (os.SameFile), whatever the paths that reach
// them.
func aliases(dir string, entries []os.DirEntry) map[string]bool {
	type entry struct {
		name string
		link bool
		info fs.FileInfo
	}
	var groups [][]entry
	for _, e := range entries {
		if !isDir(dir, e) {
			continue
		}
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		x := entry{e.Name(), e.Type()&fs.ModeSymlink != 0, st}
		found := false
		for i, g := range groups {
			if os.SameFile(g[0].info, st) {
				groups[i] = append(g, x)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, []entry{x})
		}
	}
	out := map[string]bool{}
	for _, es := range groups {
		keep := 0
		for i, e := range es {
			if !e.link {
				keep = i
				break
			}
		}
		for i, e := range es {
			if i != keep {
				out[e.name] = true
			}
		}
	}
	return out
}

// seriesName is the series a file holds: its name without the .csv
// extension, in any case; false when the file is no CSV file.
func seriesName(file string) (string, bool) {
	ext := filepath.Ext(file)
	if !strings.EqualFold(ext, ".csv") || len(file) == len(ext) {
		return "", false
	}
	return strings.TrimSuffix(file, ext), true
}

// once records that series name is read from path, and refuses a second
// file of the same series in one directory (a.csv and a.CSV).
func once(seen map[string]string, name, path string) error {
	if !textName(name) {
		// JSON reports and the models' provenance would write U+FFFD in
		// its place: two series under one name, and a held-out split
		// that cannot match it against what a model was trained on.
		return fmt.Errorf("traces: %q: the file's name, the series' identity, is not valid UTF-8 text or holds a control character: rename it", path)
	}
	if prev, ok := seen[name]; ok {
		return fmt.Errorf("traces: %s and %s hold the same series %q: keep one", prev, path, name)
	}
	seen[name] = path
	return nil
}

// textName reports whether a series or family name is valid UTF-8 text
// without control characters, as reports and models write it.
func textName(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// LoadDir reads every series of a trace directory (see Scan), sorted by
// name.
func LoadDir(dir string) ([]Series, error) {
	refs, err := Scan(dir)
	if err != nil {
		return nil, err
	}
	return LoadRefs(refs)
}

// LoadRefs reads the series refs name, in order.
func LoadRefs(refs []Ref) ([]Series, error) {
	out := make([]Series, 0, len(refs))
	for _, r := range refs {
		s, err := r.Load()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// CounterRatio is how many times its first value a series' last must be
// for a series whose values never fall to look like a cumulative counter
// (LooksCumulative).
const CounterRatio = 10

// counterMinSamples is the fewest samples a series needs to look like a
// counter: a few rising samples are as likely a ramp-up of usage.
const counterMinSamples = 10

// LooksCumulative says whether s looks like a cumulative counter (such as
// Prometheus' node_cpu_seconds_total exported without rate()) rather than
// usage: its values never fall over its whole length, rise at a
// quarter of its samples or more (a counter of an idle workload stands
// still between some scrapes) and end at CounterRatio or more times where
// they began (any rise from 0). A constant series, or one flat and then
// stepping up, does not. Usage could in principle only rise, so this is for a note, not
// a refusal: a replay of a counter reads its last samples as the heaviest
// and nothing of the usage it counts.
func LooksCumulative(s Series) bool {
	v := s.Values
	if len(v) < counterMinSamples {
		return false
	}
	rises := 0
	for i := 1; i < len(v); i++ {
		switch {
		case v[i] < v[i-1]:
			return false
		case v[i] > v[i-1]:
			rises++
		}
	}
	first, last := v[0], v[len(v)-1]
	return 4*rises >= len(v)-1 && last > 0 && last >= CounterRatio*first
}

// Normalize returns a copy of s scaled so that its p99 over the whole series
// equals target (a share of a host's capacity). A series whose p99 is zero,
// or so small that scaling it overflows, cannot be normalised. Memory is not scaled.
func Normalize(s Series, target float64) (Series, error) {
	p99 := stats.Quantile(s.Values, 0.99)
	if !(p99 > 0) {
		return Series{}, fmt.Errorf("series %s: p99 is %v, cannot normalise", s.Name, p99)
	}
	k := target / p99
	if math.IsInf(k, 0) {
		// Subnormal values (below about 1e-308): scaling them overflows,
		// and every sample would read as an outlier of infinite size.
		return Series{}, fmt.Errorf("series %s: p99 is %g, too small to scale (so small a figure is no usage in any unit)", s.Name, p99)
	}
	out := s
	out.Values = make([]float64, len(s.Values))
	for i, v := range s.Values {
		out.Values[i] = v * k
	}
	return out, nil
}

// SplitByName splits series into a training and a held-out set by series
// identity (Name): a series is held out when the FNV-1a hash of its name,
// mixed with seed, falls in the held-out share. The split depends only on
// names and seed, never on file order or contents, so any directory of
// series splits the same way every time.
func SplitByName(all []Series, heldOutShare float64, seed uint64) (train, test []Series) {
	return split(all, func(s Series) string { return s.Name }, heldOutShare, seed)
}

// SplitRefs is SplitByName on series not yet read: the same names go to the
// same side.
func SplitRefs(all []Ref, heldOutShare float64, seed uint64) (train, test []Ref) {
	return split(all, func(r Ref) string { return r.Name }, heldOutShare, seed)
}

func split[T any](all []T, name func(T) string, heldOutShare float64, seed uint64) (train, test []T) {
	for _, s := range all {
		if hashUnit(name(s), seed) < heldOutShare {
			test = append(test, s)
		} else {
			train = append(train, s)
		}
	}
	// One series trains, whatever its name's hash: with one series a side
	// stays empty, and training is what a lone series is for.
	if len(all) == 1 && heldOutShare < 1 {
		return all, nil
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

// FamilyName is a trace directory's family: its last path element, of the
// absolute path when the one given has none ("." or "..").
func FamilyName(dir string) string {
	fam := filepath.Base(filepath.Clean(dir))
	if fam == "." || fam == ".." || fam == string(filepath.Separator) {
		if abs, err := filepath.Abs(dir); err == nil {
			fam = filepath.Base(abs)
		}
	}
	return fam
}
