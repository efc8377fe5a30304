package main

import (
	"fmt"
	"io"
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
