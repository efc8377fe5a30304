package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/sim"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

const barWidth = 30

// bar draws done of total as [=====     ].
func bar(done, total int) string {
	filled := 0
	if total > 0 {
		filled = min(barWidth, barWidth*done/total)
	}
	return "[" + strings.Repeat("=", filled) + strings.Repeat(" ", barWidth-filled) + "]"
}

// listNames lists up to limit names, then how many more there are.
func listNames(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, " ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:limit], " "), len(names)-limit)
}

// firstOf lists the first limit of n items, item(i) each, comma-separated,
// and how many more there are ("a, b, c and 4 more").
func firstOf(n, limit int, item func(i int) string) string {
	shown := make([]string, 0, min(n, limit))
	for i := range min(n, limit) {
		shown = append(shown, item(i))
	}
	if n > limit {
		return fmt.Sprintf("%s and %d more", strings.Join(shown, ", "), n-limit)
	}
	return strings.Join(shown, ", ")
}

// budgetNote says what a budget written as a share of 0.1 or more is, and
// how to write the percentage perhaps meant ("write --budget 0.5%": flag
// is what comes before it).
func budgetNote(v float64, flag string) string {
	return fmt.Sprintf("budget %g is %.6g%% of host-samples over capacity; for %g%% write %s%g%%", v, 100*v, v, flag, v)
}

// layoutNote says how a nested family's series were made (files of one
// name across its subdirectories, joined), or "" for a flat family: a user
// whose subdirectories are hosts, not days, learns that their files were
// joined by name.
func layoutNote(family, dir string, refs []traces.Ref) string {
	nested, joined := false, 0
	for _, r := range refs {
		if len(r.Paths) > 0 && filepath.Dir(r.Paths[0]) != filepath.Clean(dir) {
			nested = true
		}
		if len(r.Paths) > 1 {
			joined++
		}
	}
	if !nested {
		return ""
	}
	return fmt.Sprintf("family %s is nested (DIR/<part>/<series>.csv): the files of one name in its subdirectories are parts of one series, joined in the subdirectories' order (%d of its %d series from more than one file); subdirectories that are hosts or VMs, not days, need a flat directory of one file each", family, joined, len(refs))
}

// gapNote says which series of a family have gaps between samples, which
// a replay or a training run joins (it reads samples, not time), or ""
// when none has.
func gapNote(family string, gaps []sim.Gapped, series int) string {
	if len(gaps) == 0 {
		return ""
	}
	shown := firstOf(len(gaps), 3, func(i int) string {
		g := gaps[i]
		return fmt.Sprintf("%s (%d, the largest %s; usually %s)", g.Series, g.Gaps, time.Duration(g.LargestSeconds)*time.Second, time.Duration(g.UsualSeconds)*time.Second)
	})
	return fmt.Sprintf("family %s: %d of %d series have gaps of %d or more times their usual spacing between samples, joined as if the samples were consecutive (a window across a gap reads the usage before it as recent; changes per hour count the samples at the usual spacing): %s",
		family, len(gaps), series, traces.GapRatio, shown)
}

// sparseNote says which series of a family have samples usually more than
// an hour apart, or "" when none has: relative times in milliseconds read
// as seconds so, and the changes per hour are then wrong.
func sparseNote(family string, sparse []sim.Sparse, series int) string {
	if len(sparse) == 0 {
		return ""
	}
	shown := firstOf(len(sparse), 3, func(i int) string {
		return fmt.Sprintf("%s (%s)", sparse[i].Series, time.Duration(sparse[i].UsualSeconds)*time.Second)
	})
	apart := (time.Duration(traces.SparseSpacing) * time.Second).String()
	if traces.SparseSpacing == 3600 {
		apart = "an hour"
	}
	return fmt.Sprintf("family %s: %d of %d series have samples usually more than %s apart: %s; the engine reads a window of samples whatever their spacing, and changes per hour read the times as Unix seconds: if they are not (milliseconds since the start?), those figures are wrong",
		family, len(sparse), series, apart, shown)
}

// leftOutNote names the files beside a family's series that hold no series
// the replay reads and may hold data (traces.LeftOut), or "" when there
// are none.
func leftOutNote(family, dir string, refs []traces.Ref) (string, error) {
	files, err := traces.LeftOut(dir, refs)
	if err != nil || len(files) == 0 {
		return "", err
	}
	verb := "files beside its series are"
	if len(files) == 1 {
		verb = "file beside its series is"
	}
	return fmt.Sprintf("family %s: %d %s not read, a series being a <name>.csv file: %s (an archive, or another format? Unpack or convert its series to CSV files)",
		family, len(files), verb, firstOf(len(files), 3, func(i int) string { return files[i] })), nil
}

// seriesSparse lists the series among ss whose samples are usually more
// than traces.SparseSpacing apart, as a replay reports them.
func seriesSparse(ss []traces.Series) []sim.Sparse {
	var out []sim.Sparse
	for _, s := range ss {
		if sp := traces.SpacingOf(s.Times); sp.Sparse() {
			out = append(out, sim.Sparse{Series: s.Name, UsualSeconds: sp.Usual})
		}
	}
	return out
}

// seriesGaps lists the series with gaps among ss, as a replay reports them.
func seriesGaps(ss []traces.Series) []sim.Gapped {
	var out []sim.Gapped
	for _, s := range ss {
		if g, ok := sim.GappedOf(s.Name, traces.SpacingOf(s.Times)); ok {
			out = append(out, g)
		}
	}
	return out
}

// traceDir is one --traces directory: a family of series.
type traceDir struct {
	path, family string
}

// traceDirs reads --traces: one or more comma-separated directories, each
// a family named by its base name (two families may not share a name).
func traceDirs(flagValue string) ([]traceDir, error) {
	if strings.TrimSpace(flagValue) == "" {
		return nil, usagef("--traces: required: one or more directories of CSV usage series, separated by commas")
	}
	if whole := strings.TrimSpace(flagValue); strings.Contains(whole, ",") {
		if st, err := os.Stat(whole); err == nil && st.IsDir() {
			return nil, usagef("--traces: %q is one directory whose name holds a comma, and --traces separates directories by commas: rename it or name a link to it", whole)
		}
	}
	var out []traceDir
	seen := map[string]string{}
	for _, p := range strings.Split(flagValue, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, usagef("--traces: %q has an empty directory name between commas", flagValue)
		}
		fam := traces.FamilyName(p)
		if prev, dup := seen[fam]; dup {
			return nil, usagef("--traces: %s and %s are both family %q: each directory is a family, named by its last path element", prev, p, fam)
		}
		seen[fam] = p
		out = append(out, traceDir{path: p, family: fam})
	}
	return out, nil
}

// simBar draws a run's progress on one self-overwriting line of a
// terminal: the family, the phase and the series done.
type simBar struct {
	w       io.Writer
	family  string
	phase   string
	start   time.Time // of the phase
	drawn   time.Time
	lastLen int
}

func (b *simBar) update(p sim.Progress) {
	now := time.Now()
	if p.Phase != b.phase {
		b.phase, b.start = p.Phase, now
	}
	// At most ten redraws a second, and always the last.
	if p.Done < p.Total && now.Sub(b.drawn) < 100*time.Millisecond {
		return
	}
	b.drawn = now
	el := now.Sub(b.start)
	left := "?"
	if p.Done > 0 {
		left = (time.Duration(float64(el) * float64(p.Total-p.Done) / float64(p.Done))).Round(time.Second).String()
	}
	line := fmt.Sprintf("%-10s %-11s %s %d/%d series  elapsed %s  left %s", b.family, p.Phase, bar(p.Done, p.Total),
		p.Done, p.Total, el.Round(100*time.Millisecond), left)
	pad := max(0, b.lastLen-len(line))
	fmt.Fprintf(b.w, "\r%s%s", line, strings.Repeat(" ", pad))
	b.lastLen = len(line)
}

// clear erases the bar's line, so that results print on a clean line.
func (b *simBar) clear() {
	if b.lastLen > 0 {
		fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", b.lastLen))
		b.lastLen = 0
	}
}

// tracesErr puts err, from reading the trace directories, under --traces,
// naming the package once: the traces package's own "traces: " prefix is
// dropped ("--traces: traces: stat ..." said it twice).
func tracesErr(err error) error { return tracesError{err} }

type tracesError struct{ err error }

func (e tracesError) Error() string {
	return "--traces: " + strings.TrimPrefix(e.err.Error(), "traces: ")
}

func (e tracesError) Unwrap() error { return e.err }
