package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// TestE2EMargin: the strategy's margin through the real agent. The
// requests it logs carry the margin, its decisions are the engine's at
// that margin (fewer containers than at the models' own thresholds on
// these hosts), and each decision's reason says it.
func TestE2EMargin(t *testing.T) {
	testsupport.StandinOnly(t, "fixed usage, decisions replayed in process")
	autoscalerPath(t)
	c := startSplitCase(t, splitSetup{start: [2]int{10, 10}, reqCPU: 1000, usage: 1000,
		policy: noLimits + `        margin         = "4"
`, cooldown: "200ms", trace: true})
	entries := c.threeDecisions(t)
	for _, e := range entries {
		if reason := e.str("reason"); strings.Count(reason, "with a margin of 4 logits") != 2 {
			t.Errorf("a decision's reason does not say both hosts' margin: %s", reason)
		}
	}
	reqs := c.loggedRequests(t)
	lower := false
	for digest, r := range reqs {
		if r.Margin != 4 {
			t.Fatalf("request %s: margin %v, want the policy's 4", digest, r.Margin)
		}
		d := decision(t, r)
		if d.First.Margin != 4 || d.Second.Margin != 4 {
			t.Fatalf("request %s: the decision's margins %v and %v", digest, d.First.Margin, d.Second.Margin)
		}
		own := *r
		own.Margin = 0
		d0 := decision(t, &own)
		if d.First.Containers > d0.First.Containers || d.Second.Containers > d0.Second.Containers {
			t.Errorf("request %s: %d and %d containers at margin 4, more than the %d and %d at the models' thresholds",
				digest, d.First.Containers, d.Second.Containers, d0.First.Containers, d0.Second.Containers)
		}
		if d.First.Containers < d0.First.Containers || d.Second.Containers < d0.Second.Containers {
			lower = true
		}
	}
	if !lower {
		t.Error("a margin of 4 logits lowered no count: the case shows nothing")
	}
	// Each decided line's engine counts are those of a logged request's
	// decision at the margin.
	decidedAsLogged(t, entries, reqs)
}

// decidedAsLogged checks that each decided line's engine counts are those
// of one of the logged requests' decisions.
func decidedAsLogged(t *testing.T, entries []logEntry, reqs map[string]*engine.Request) {
	t.Helper()
	for _, e := range entries {
		reason := e.str("reason")
		m := engineCounts.FindStringSubmatch(reason)
		if m == nil {
			t.Fatalf("a decision's reason gives no engine counts: %s", reason)
		}
		found := false
		for _, r := range reqs {
			d := decision(t, r)
			if m[1] == strconv.Itoa(d.First.Containers) && m[2] == strconv.Itoa(d.Second.Containers) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("a decision's engine counts %s and %s are no logged request's: %s", m[1], m[2], reason)
		}
	}
}

// engineCounts reads a split decision's engine counts from its reason
// ("first 18 (engine 18, ...); second 17 (engine 17, ...)").
var engineCounts = regexp.MustCompile(`first \d+ \(engine (\d+)[^;]*; second \d+ \(engine (\d+)`)

// TestE2EHostMargins: a margin per host through the real agent. With
// margin 4 and second_margin 0, the first host decides at 4 and the
// second at its model's own threshold: the requests the strategy logs
// carry both, `activation explain`'s engine decides each logged request as
// the decided lines say, and each reason names only the first host's
// margin.
func TestE2EHostMargins(t *testing.T) {
	testsupport.StandinOnly(t, "fixed usage, decisions replayed in process")
	autoscalerPath(t)
	c := startSplitCase(t, splitSetup{start: [2]int{10, 10}, reqCPU: 1000, usage: 1000,
		policy: noLimits + `        margin         = "4"
        second_margin  = "0"
`, cooldown: "200ms", trace: true})
	entries := c.threeDecisions(t)
	for _, e := range entries {
		if reason := e.str("reason"); strings.Count(reason, "with a margin of 4 logits") != 1 || strings.Contains(reason, "with a margin of 0") {
			t.Errorf("a decision's reason does not say the first host's margin alone: %s", reason)
		}
	}
	reqs := c.loggedRequests(t)
	lower := false
	for digest, r := range reqs {
		if r.Margin != 4 || r.FirstMargin != nil || r.SecondMargin == nil || *r.SecondMargin != 0 {
			t.Fatalf("request %s: margin %v, first_margin %v, second_margin %v; want 4, unset, 0", digest, r.Margin, r.FirstMargin, r.SecondMargin)
		}
		d := decision(t, r)
		if d.First.Margin != 4 || d.Second.Margin != 0 {
			t.Fatalf("request %s: the decision's margins %v and %v, want 4 and 0", digest, d.First.Margin, d.Second.Margin)
		}
		// The second host decides as with no margin at all; the first
		// host never above its count at no margin.
		own := *r
		own.Margin, own.SecondMargin = 0, nil
		d0 := decision(t, &own)
		if d.Second.Containers != d0.Second.Containers {
			t.Errorf("request %s: the second host's %d containers at second_margin 0, %d at no margin", digest, d.Second.Containers, d0.Second.Containers)
		}
		if d.First.Containers > d0.First.Containers {
			t.Errorf("request %s: the first host's %d containers at margin 4, more than %d at no margin", digest, d.First.Containers, d0.First.Containers)
		}
		lower = lower || d.First.Containers < d0.First.Containers
	}
	if !lower {
		t.Error("a margin of 4 logits lowered no first-host count: the case shows nothing")
	}
	decidedAsLogged(t, entries, reqs)
}
