package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
)

// faultCase is a stand-in with two hosts and job web (front on host-a,
// back on host-b, small reservations so that many replicas fit), one split
// policy on it through the host-quota target, and the real agent.
type faultCase struct {
	s            *nomadstandin.Server
	a            *agent
	nodeA, nodeB string
}

// startFaultCase starts the case; policy is the check's extra keys,
// targetPlugin the host-quota plugin block's config lines, start the two
// groups' counts and usage each allocation's usage (MHz).
func startFaultCase(t *testing.T, start [2]int, usage float64, policy, targetPlugin, cooldown string) *faultCase {
	t.Helper()
	pdir := pluginDir(t)
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c := &faultCase{s: s}
	if c.nodeA, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "first"}); err != nil {
		t.Fatal(err)
	}
	if c.nodeB, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-b", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "second"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddJob(nomadstandin.JobSpec{ID: "web", Groups: []nomadstandin.GroupSpec{
		{Name: "front", Count: start[0], CPUMHz: 100, MemoryMB: 64, NodeID: c.nodeA},
		{Name: "back", Count: start[1], CPUMHz: 100, MemoryMB: 64, NodeID: c.nodeB},
	}}); err != nil {
		t.Fatal(err)
	}
	c.setUsage(t, usage, usage)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	body := policyFileWith("web", "web", `        role             = "split"
        job              = "web"
        first_node_name  = "host-a"
        first_group      = "front"
        second_node_pool = "second"
        second_group     = "back"
        window           = "1"
        min_samples      = "1"
`+policy, `"host-quota" {
      job          = "web"
      first_group  = "front"
      second_group = "back"
    }`, cooldown, "1s")
	if err := os.WriteFile(filepath.Join(pol, "web.hcl"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := agentConfig("DEBUG", pdir, s.URL(), pol)
	if targetPlugin != "" {
		cfg = strings.Replace(cfg, `target "host-quota" { driver = "host-quota" }`,
			`target "host-quota" {
  driver = "host-quota"
  config = {
`+targetPlugin+`
  }
}`, 1)
	}
	c.a = startAgent(t, dir, cfg)
	return c
}

func (c *faultCase) setUsage(t *testing.T, front, back float64) {
	t.Helper()
	for g, v := range map[string]float64{"front": front, "back": back} {
		if err := c.s.SetGroupUsage("", "web", g, v, 32); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *faultCase) counts(t testing.TB) [2]int {
	cs := counts(t, c.s, "web", "front", "back")
	return [2]int{cs[0], cs[1]}
}

// logged returns the agent's log entries after from whose message is msg
// and whose text contains what.
func (c *faultCase) logged(t testing.TB, from int, msg, what string) []logEntry {
	var out []logEntry
	for _, e := range c.a.entries(t)[from:] {
		if (msg == "" || e.str("@message") == msg) && strings.Contains(fmt.Sprint(map[string]any(e)), what) {
			out = append(out, e)
		}
	}
	return out
}

// TestE2EFaults (issue 13): with 110 ms per stats read the strategy still
// decides; a hung write fails within the target's scale_timeout and
// changes neither group; a draining node is never scaled up.
func TestE2EFaults(t *testing.T) {
	autoscalerPath(t)
	c := startFaultCase(t, [2]int{48, 48}, 100, noLimits, `    scale_timeout = "3s"`, "200ms")
	phases := []struct {
		name string
		run  func(t *testing.T)
	}{
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
		{"a hung write fails within scale_timeout and changes neither group", func(t *testing.T) {
			before := c.counts(t)
			c.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: "/v1/jobs", Hang: true})
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
			if !strings.Contains(fmt.Sprint(map[string]any(failed)), "neither group was changed") {
				t.Errorf("the deadline error does not say neither group changed: %v", failed)
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
		if e.str("@level") == "error" && !strings.Contains(fmt.Sprint(map[string]any(e)), "scale_timeout") {
			t.Errorf("the agent logged an unexpected error: %v", e)
		}
	}
}
