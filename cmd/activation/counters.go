package main

import (
	"fmt"
	"sort"
	"sync"

	"github.com/activation-scheduler/terraform-provider-activation/sim"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// counterWatch collects the series of a family that look like cumulative
// counters (traces.LooksCumulative) as a replay loads them: the replay
// reads each series anyway, and reading them all once more for a note
// would double a large family's reading time.
type counterWatch struct {
	mu    sync.Mutex
	names map[string]bool
}

// sources are sim.FromRefs(refs) whose loads report to w (a replay loads
// from several goroutines, and a series maybe more than once).
func (w *counterWatch) sources(refs []traces.Ref) []sim.Source {
	out := sim.FromRefs(refs)
	for i := range out {
		load := out[i].Load
		out[i].Load = func() (traces.Series, error) {
			s, err := load()
			if err == nil && traces.LooksCumulative(s) {
				w.mu.Lock()
				if w.names == nil {
					w.names = map[string]bool{}
				}
				w.names[s.Name] = true
				w.mu.Unlock()
			}
			return s, err
		}
	}
	return out
}

// found lists the series seen to look like counters, sorted by name.
func (w *counterWatch) found() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.names))
	for n := range w.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// counterNote names the series of a family whose values never fall and
// rise many times over (traces.LooksCumulative), or "" when there are
// none: a counter exported without rate() replays as ever heavier usage
// with no word otherwise. A note, not a refusal: usage could only rise.
func counterNote(family string, names []string, series int) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("family %s: %d of %d series look like cumulative counters (such as node_cpu_seconds_total exported without rate()), not usage: their values never fall over their whole length and end %d or more times where they began: %s; give the usage per interval instead (the counter's rate())",
		family, len(names), series, traces.CounterRatio, listNames(names, 8))
}
