package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
)

// TestE2EPlacement (issue 9) against the stand-in that places by
// reservations: 12000 of host-a's 20000 MHz are reserved by others, so
// Nomad can place 4 front replicas of 2000 MHz. In cap mode no allocation
// stays queued, whoever reserves the rest (another job, or a third group
// of web itself: issue B3) and even when front starts with queued
// allocations at an unchanged split sum (issue B1); in report mode the
// queued number in the scaling event equals the stand-in's.
func TestE2EPlacement(t *testing.T) {
	testsupport.StandinOnly(t, "reservations by others set from Go, queued allocations compared with the stand-in's")
	autoscalerPath(t)
	// second_max keeps the sum under the policy's max: the agent does not
	// clamp it.
	policy := func(mode, secondMax string) string {
		return noSteps + fmt.Sprintf("        placement        = %q\n        second_max       = %q\n", mode, secondMax)
	}
	for _, tc := range []struct {
		name string
		ss   splitSetup
	}{
		{"cap: another job reserves the rest", splitSetup{start: [2]int{2, 2}, others: 6, policy: policy(nomadplugin.PlacementCap, "8")}},
		{"cap: a third group of the same job reserves the rest", splitSetup{start: [2]int{2, 2}, side: 6, policy: policy(nomadplugin.PlacementCap, "8")}},
		// back stays at its max 2: the cap's 4 + 2 is the running sum, so
		// only the desired counts (6 + 2) show the change.
		{"cap: front starts with 2 queued", splitSetup{start: [2]int{6, 2}, others: 6, policy: policy(nomadplugin.PlacementCap, "2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.ss.reqCPU, tc.ss.usage, tc.ss.cooldown = 2000, 40, "200ms"
			c := startSplitCase(t, tc.ss)
			eventually(t, 30*time.Second, "front at the 4 Nomad can place, none queued", func() (bool, string) {
				gs := c.group(t, "front")
				return gs.Count == 4 && gs.Queued == 0, fmt.Sprintf("front count %d, %d queued", gs.Count, gs.Queued)
			})
			deadline := time.Now().Add(8 * time.Second)
			for time.Now().Before(deadline) {
				if gs := c.group(t, "front"); gs.Queued != 0 || gs.Count != 4 {
					t.Fatalf("cap mode: front has count %d with %d queued; Nomad can place 4", gs.Count, gs.Queued)
				}
				time.Sleep(200 * time.Millisecond)
			}
			if len(c.logged(t, 0, "decided", "placement cap: Nomad can place 4")) == 0 {
				t.Errorf("no decision says the placement cap held the count")
			}
			if tc.ss.side > 0 {
				if gs := c.group(t, "side"); gs.Count != tc.ss.side || gs.Running != tc.ss.side {
					t.Errorf("the register changed web's third group: count %d, %d running, want %d", gs.Count, gs.Running, tc.ss.side)
				}
			}
		})
	}
	t.Run("report", func(t *testing.T) {
		c := startSplitCase(t, splitSetup{start: [2]int{2, 2}, reqCPU: 2000, others: 6, usage: 40, policy: policy(nomadplugin.PlacementReport, "8"), cooldown: "200ms"})
		eventually(t, 30*time.Second, "the event's queued number equals the stand-in's", func() (bool, string) {
			gs := c.group(t, "front")
			for _, ev := range gs.Events {
				if _, ok := metaNum(ev.Meta, nomadplugin.MetaRegisteredIndex); !ok {
					continue
				}
				q, ok := metaNum(ev.Meta, nomadplugin.HostMeta(nomadplugin.RoleFirst, nomadplugin.MetaQueued))
				if !ok {
					t.Fatalf("the event has no queued meta: %v", ev.Meta)
				}
				if q == 0 {
					t.Fatalf("report mode: the premise fails, nothing queues (event %v)", ev.Meta)
				}
				return q == gs.Queued, fmt.Sprintf("the newest event says %d will queue, the stand-in has %d queued (count %d)", q, gs.Queued, gs.Count)
			}
			return false, "no register event"
		})
	})
}

// TestE2EWrites: the host-quota target's writes through the real agent.
func TestE2EWrites(t *testing.T) {
	testsupport.StandinOnly(t, "fixed usage, the writes recorded and compared")
	autoscalerPath(t)
	// A person's `nomad job run` lands in one of two windows: between the
	// strategy's reads and the target's read of the job (at the target's
	// read, the first read of the job after a stats read), or between the
	// target's read and its register (at the register). Either way it is
	// not overwritten, the error says which check caught it, and the next
	// evaluation decides on the person's count.
	for _, tc := range []struct {
		name   string
		when   func(afterStats *bool) func(method, path string) bool
		caught string
	}{
		{"a job change between the strategy's read and the target's", func(afterStats *bool) func(string, string) bool {
			return func(method, path string) bool {
				switch {
				case path == jobPath("web")+"/scale" && method == http.MethodGet:
					*afterStats = false // an evaluation starts: the target's Status
				case strings.HasPrefix(path, "/v1/client/allocation/"):
					*afterStats = true
				}
				return method == http.MethodGet && path == jobPath("web") && *afterStats
			}
		}, "the strategy read JobModifyIndex"},
		{"a job change between the target's read and its register", func(*bool) func(string, string) bool {
			return func(method, path string) bool { return method == http.MethodPut && path == jobPath("web") }
		}, "Nomad refused the register at JobModifyIndex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startSplitCase(t, splitSetup{start: [2]int{2, 2}, reqCPU: 100, usage: 40, policy: noLimits, cooldown: "200ms"})
			const person = 7
			afterStats := false
			c.regs.onNext(tc.when(&afterStats), func() {
				if err := c.s.SetGroupCount("", "web", "front", person); err != nil {
					panic(err)
				}
			})
			var conflict logEntry
			eventually(t, 30*time.Second, "the target reports the conflict", func() (bool, string) {
				if es := c.logged(t, 0, "", nomadplugin.ErrJobChanged.Error()); len(es) > 0 {
					conflict = es[0]
					return true, ""
				}
				return false, "not logged yet"
			})
			if txt := fmt.Sprint(map[string]any(conflict)); !strings.Contains(txt, tc.caught) {
				t.Errorf("the conflict was not caught where expected (%q): %s", tc.caught, txt)
			}
			// The person's count was not overwritten, and the next register
			// starts from it.
			eventually(t, 30*time.Second, "a register after the conflict", func() (bool, string) {
				_, next := c.registeredMoves(t)
				return len(next) > 0, "no registered split yet"
			})
			if prev, _ := c.registeredMoves(t); prev[0][0] != person {
				t.Errorf("the first registered split moved front from %d, want from the person's %d", prev[0][0], person)
			}
		})
	}
	t.Run("split mode through deployments", func(t *testing.T) {
		c := startSplitCase(t, splitSetup{start: [2]int{2, 2}, reqCPU: 100, usage: 40, policy: noLimits, cooldown: "200ms",
			update: &nomadstandin.UpdateSpec{MaxParallel: 1, AutoComplete: 3 * time.Second}})
		stop := alternateUsage(t, c, 4*time.Second)
		eventually(t, 60*time.Second, "three registered splits through deployments", func() (bool, string) {
			rs := c.regs.list()
			return len(rs) >= 3, fmt.Sprintf("%d registers", len(rs))
		})
		stop()
		checkDecidedMoves(t, c)
		// Each register of the groups with an update block started a
		// deployment, and none was cut short by a newer version: no
		// register happened while one ran.
		client, err := c.s.Client("")
		if err != nil {
			t.Fatal(err)
		}
		deps, _, err := client.Jobs().Deployments("web", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		rs := c.regs.list()
		if len(deps) < len(rs) {
			t.Errorf("%d deployments for %d registers: the premise (a deployment per split) fails", len(deps), len(rs))
		}
		for _, d := range deps {
			if d.Status == api.DeploymentStatusCancelled {
				t.Errorf("deployment %s was cancelled (%s): a register reached Nomad while it ran", d.ID, d.StatusDescription)
			}
		}
		// (The stand-in cancels a running deployment when a newer version
		// of the job is registered, as Nomad does: the check above is the
		// one that sees a register made during a deployment.)
	})
	t.Run("cooldown is respected", func(t *testing.T) {
		const cooldown = 10 * time.Second
		c := startSplitCase(t, splitSetup{start: [2]int{2, 2}, reqCPU: 100, usage: 40, policy: noLimits, cooldown: cooldown.String()})
		stop := alternateUsage(t, c, 1500*time.Millisecond)
		eventually(t, 60*time.Second, "three registers", func() (bool, string) {
			rs := c.regs.list()
			return len(rs) >= 3, fmt.Sprintf("%d registers", len(rs))
		})
		stop()
		rs := c.regs.list()
		for i := 1; i < len(rs); i++ {
			// The agent's cooldown starts when Scale returns; allow the
			// evaluation interval's jitter below it, never more.
			if gap := rs[i].at.Sub(rs[i-1].at); gap < cooldown-time.Second {
				t.Errorf("registers %d and %d are %s apart, within the %s cooldown", i, i+1, gap.Round(time.Millisecond), cooldown)
			}
		}
	})
}

// alternateUsage switches the replicas between busy and idle every period,
// so that the engine keeps deciding other splits; stop ends it.
func alternateUsage(t *testing.T, c *splitCase, period time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		busy := false
		for {
			select {
			case <-done:
				return
			case <-time.After(period):
			}
			busy = !busy
			v := 40.0
			if busy {
				v = 1500
			}
			c.setUsage(t, v, v/2)
		}
	}()
	return func() { close(done); wg.Wait() }
}

// checkDecidedMoves: every register found the pair where the previous one
// put it, and each moved it as its scaling events say: the pair only moves
// between decided states.
func checkDecidedMoves(t *testing.T, c *splitCase) {
	t.Helper()
	rs := c.regs.list()
	// The target records a register's scaling events after the register
	// returns: wait for those of every register seen (a register whose
	// events never come failed), and judge those registers only (a later
	// one may arrive meanwhile).
	var prev, next [][2]int
	eventually(t, 15*time.Second, "a scaling event for every register", func() (bool, string) {
		prev, next = c.registeredMoves(t)
		return len(next) >= len(rs), fmt.Sprintf("%d registers arrived, %d are recorded in scaling events: a register failed", len(rs), len(next))
	})
	prev, next = prev[:len(rs)], next[:len(rs)]
	if rs[0].found != [2]int{2, 2} {
		t.Errorf("the first register found %v, want the start [2 2]", rs[0].found)
	}
	for i := range rs {
		applied := rs[i].found
		for h := range 2 {
			if prev[i][h] >= 0 && prev[i][h] != rs[i].found[h] {
				t.Errorf("register %d: group %d's event says it moved from %d, the register found %d", i+1, h, prev[i][h], rs[i].found[h])
			}
			if next[i][h] >= 0 {
				applied[h] = next[i][h]
			}
		}
		if i+1 < len(rs) && rs[i+1].found != applied {
			t.Errorf("register %d set %v, but register %d found %v", i+1, applied, i+2, rs[i+1].found)
		}
	}
}
