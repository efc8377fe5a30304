package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// TestE2EFaults (issue 13): with 110 ms per stats read the strategy still
// decides; a hung write fails within the target's scale_timeout and
// changes neither group; a draining node is never scaled up. Beside web's
// policy runs one for a job Nomad does not know: each of its evaluations
// fails naming the job, and the target plugin's process, which serves
// both, lives on.
func TestE2EFaults(t *testing.T) {
	testsupport.StandinOnly(t, "fault injection: slow stats reads, a hung write, a draining node")
	autoscalerPath(t)
	// Small reservations, so that many replicas fit.
	c := startSplitCase(t, splitSetup{start: [2]int{48, 48}, reqCPU: 100, usage: 100, policy: noLimits, target: `    scale_timeout = "3s"`, cooldown: "200ms", ghost: true})
	phases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a policy for an unknown job fails by name, and the plugin serves on", func(t *testing.T) {
			notFound := fmt.Sprintf("job not found: %q", ghostJob)
			eventually(t, 30*time.Second, "two failed Status calls for the unknown job", func() (bool, string) {
				n := len(c.logged(t, 0, "", notFound))
				return n >= 2, fmt.Sprintf("%d so far", n)
			})
			// from: the first failure's place in the log
			var from int
			for i, e := range c.a.entries(t) {
				if strings.Contains(fmt.Sprint(map[string]any(e)), notFound) {
					from = i
					break
				}
			}
			eventually(t, 30*time.Second, "web's policy decides after the unknown job's failures", func() (bool, string) {
				n := len(c.logged(t, from, "decided", ""))
				return n >= 3, fmt.Sprintf("%d decisions since", n)
			})
			for _, bad := range []string{"panic", "plugin process exited", "Unavailable"} {
				if es := c.logged(t, 0, "", bad); len(es) > 0 {
					t.Errorf("the agent log has %q: %v", bad, es[0])
				}
			}
		}},
		{"48 + 48 allocations at 110 ms per stats read still decide", func(t *testing.T) {
			c.s.InjectFault(nomadstandin.Fault{Method: http.MethodGet, Path: "/v1/client/allocation/*", Delay: 110 * time.Millisecond})
			from := len(c.a.entries(t))
			eventually(t, 40*time.Second, "three decisions with slow stats reads", func() (bool, string) {
				if bad := c.logged(t, from, "no scaling", "read_timeout"); len(bad) > 0 {
					t.Fatalf("an evaluation ran out of its read budget: %v", bad[0])
				}
				n := len(c.logged(t, from, "decided", ""))
				return n >= 3, fmt.Sprintf("%d decisions so far", n)
			})
			c.s.ClearFaults()
		}},
		{"a hung write fails within scale_timeout; its outcome is unknown, and the next evaluation re-reads the job", func(t *testing.T) {
			before := c.counts(t)
			c.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: jobPath("web"), Hang: true})
			from := len(c.a.entries(t))
			// Busier replicas: the engine wants other counts.
			c.setUsage(t, 900, 700)
			var failed logEntry
			eventually(t, 40*time.Second, "the target's deadline error in the agent log", func() (bool, string) {
				if es := c.logged(t, from, "", "scale_timeout budget of 3s ran out"); len(es) > 0 {
					failed = es[0]
					return true, ""
				}
				if cur := c.counts(t); cur != before {
					t.Fatalf("the groups moved from %v to %v through a hung write", before, cur)
				}
				return false, "no deadline error yet"
			})
			// A write cut by its deadline may have reached Nomad: the error
			// says the outcome is unknown, not that nothing changed.
			if txt := fmt.Sprint(map[string]any(failed)); !strings.Contains(txt, "outcome unknown") || strings.Contains(txt, "neither group was changed") {
				t.Errorf("the deadline error does not say its outcome is unknown: %v", failed)
			}
			// The attempt ended at the deadline, not when the write would
			// have answered: the agent's next evaluations go on.
			scaling := c.logged(t, from, "scaling target", "")
			if len(scaling) == 0 {
				t.Fatal("no scaling attempt logged")
			}
			if cur := c.counts(t); cur != before {
				t.Errorf("after the failed write the groups are %v, want %v", cur, before)
			}
			c.s.ClearFaults()
			eventually(t, 30*time.Second, "the next evaluation applies its split", func() (bool, string) {
				cur := c.counts(t)
				return cur != before, fmt.Sprintf("groups still at %v", cur)
			})
		}},
		{"a draining node is never scaled up; scaling down is allowed", func(t *testing.T) {
			if err := c.s.SetNodeDrain(c.nodeA, true); err != nil {
				t.Fatal(err)
			}
			from := len(c.a.entries(t))
			held := c.counts(t)[0]
			// Idle replicas: the engine wants more of them.
			c.setUsage(t, 5, 5)
			eventually(t, 30*time.Second, "the reason says the node is draining", func() (bool, string) {
				es := c.logged(t, from, "decided", "is draining")
				return len(es) > 0, "no decision mentions the drain yet"
			})
			deadline := time.Now().Add(8 * time.Second)
			for time.Now().Before(deadline) {
				if cur := c.counts(t)[0]; cur > held {
					t.Fatalf("front went from %d to %d on a draining node", held, cur)
				}
				time.Sleep(250 * time.Millisecond)
			}
			// Busy replicas: the engine wants fewer; the drain allows it.
			c.setUsage(t, 1900, 5)
			eventually(t, 30*time.Second, "front scales down on the draining node", func() (bool, string) {
				cur := c.counts(t)[0]
				return cur < held, fmt.Sprintf("front at %d, held at %d", cur, held)
			})
			for _, g := range []string{"front"} {
				gs, err := c.s.Group("", "web", g)
				if err != nil {
					t.Fatal(err)
				}
				if gs.Queued != 0 {
					t.Errorf("%s has %d queued allocations", g, gs.Queued)
				}
			}
		}},
	}
	for _, p := range phases {
		if !t.Run(p.name, p.run) {
			return
		}
	}
	for _, e := range c.a.entries(t) {
		txt := fmt.Sprint(map[string]any(e))
		if e.str("@level") == "error" && !strings.Contains(txt, "scale_timeout") && !strings.Contains(txt, fmt.Sprintf("job not found: %q", ghostJob)) {
			t.Errorf("the agent logged an unexpected error: %v", e)
		}
	}
}
