package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
)

// writesCase is a stand-in with hosts host-a and host-b and job web
// (front on host-a, back on host-b), the real agent with one split policy
// through the host-quota target, and a record of every register of the
// job: when it arrived and the groups' counts it found.
type writesCase struct {
	s            *nomadstandin.Server
	a            *agent
	nodeA, nodeB string

	mu         sync.Mutex
	registers  []register
	onRegister func() // runs at a register's arrival, before the stand-in answers
}

type register struct {
	at    time.Time
	found [2]int
}

type writesSetup struct {
	start  [2]int
	reqCPU int
	update *nomadstandin.UpdateSpec
	others int // other tenants' replicas of 2000 MHz on host-a
	policy string
	cool   string
	usage  float64
}

func startWritesCase(t *testing.T, ws writesSetup) *writesCase {
	t.Helper()
	pdir := pluginDir(t)
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c := &writesCase{s: s}
	if c.nodeA, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "first"}); err != nil {
		t.Fatal(err)
	}
	if c.nodeB, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-b", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "second"}); err != nil {
		t.Fatal(err)
	}
	if ws.others > 0 {
		if err := s.AddOtherJob(nomadstandin.OtherJobSpec{ID: "tenant", NodeID: c.nodeA, Count: ws.others, CPUMHz: 2000, MemoryMB: 512}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddJob(nomadstandin.JobSpec{ID: "web", Groups: []nomadstandin.GroupSpec{
		{Name: "front", Count: ws.start[0], CPUMHz: ws.reqCPU, MemoryMB: 128, NodeID: c.nodeA, Update: ws.update},
		{Name: "back", Count: ws.start[1], CPUMHz: ws.reqCPU, MemoryMB: 128, NodeID: c.nodeB, Update: ws.update},
	}}); err != nil {
		t.Fatal(err)
	}
	c.setUsage(t, ws.usage, ws.usage)
	s.SetHook(func(method, path string) {
		if method != http.MethodPut || path != "/v1/jobs" {
			return
		}
		var found [2]int
		for h, g := range []string{"front", "back"} {
			found[h] = -1
			if gs, err := s.Group("", "web", g); err == nil {
				found[h] = gs.Count
			}
		}
		c.mu.Lock()
		c.registers = append(c.registers, register{at: time.Now(), found: found})
		f := c.onRegister
		c.onRegister = nil
		c.mu.Unlock()
		if f != nil {
			f()
		}
	})
	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	body := policyFileWith("web", "web", `        role             = "split"
        job              = "web"
        first_node_name  = "host-a"
        first_group      = "front"
        second_node_name = "host-b"
        second_group     = "back"
        window           = "1"
        min_samples      = "1"
        warmup           = "0"
        max_scale_up     = "none"
        max_scale_down   = "none"
        hysteresis       = "none"
`+ws.policy, `"host-quota" {
      job          = "web"
      first_group  = "front"
      second_group = "back"
    }`, ws.cool, "1s")
	if err := os.WriteFile(filepath.Join(pol, "web.hcl"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c.a = startAgent(t, dir, agentConfig("DEBUG", pdir, s.URL(), pol))
	return c
}

func (c *writesCase) setUsage(t testing.TB, front, back float64) {
	t.Helper()
	for g, v := range map[string]float64{"front": front, "back": back} {
		if err := c.s.SetGroupUsage("", "web", g, v, 64); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *writesCase) group(t testing.TB, g string) nomadstandin.GroupStatus {
	gs, err := c.s.Group("", "web", g)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

func (c *writesCase) counts(t testing.TB) [2]int {
	return [2]int{c.group(t, "front").Count, c.group(t, "back").Count}
}

func (c *writesCase) registered() []register {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]register(nil), c.registers...)
}

// registeredMoves are the moves web's scaling events say the target
// registered, by the index they were registered at, oldest first: each
// group's count before and after (a group the register did not change
// has no event; its entries are -1).
func (c *writesCase) registeredMoves(t testing.TB) (prev, next [][2]int) {
	type move struct{ prev, next [2]int }
	byIndex := map[int]*move{}
	var order []int
	for h, g := range []string{"front", "back"} {
		for _, ev := range c.group(t, g).Events {
			idx, ok := metaNum(ev.Meta, nomadplugin.MetaRegisteredIndex)
			if !ok {
				continue
			}
			m := byIndex[idx]
			if m == nil {
				m = &move{prev: [2]int{-1, -1}, next: [2]int{-1, -1}}
				byIndex[idx] = m
				order = append(order, idx)
			}
			m.prev[h], _ = metaNum(ev.Meta, nomadplugin.MetaPreviousCount)
			m.next[h], _ = metaNum(ev.Meta, nomadplugin.MetaNewCount)
		}
	}
	slices.Sort(order)
	for _, idx := range order {
		prev, next = append(prev, byIndex[idx].prev), append(next, byIndex[idx].next)
	}
	return prev, next
}

// TestE2EPlacement (issue 9) against the stand-in that places by
// reservations: another tenant reserves 12000 of host-a's 20000 MHz, so
// Nomad can place 4 front replicas of 2000 MHz. In cap mode no allocation
// ever stays queued; in report mode the queued number in the scaling event
// equals the stand-in's.
func TestE2EPlacement(t *testing.T) {
	autoscalerPath(t)
	for _, mode := range []string{nomadplugin.PlacementCap, nomadplugin.PlacementReport} {
		t.Run(mode, func(t *testing.T) {
			c := startWritesCase(t, writesSetup{start: [2]int{2, 2}, reqCPU: 2000, others: 6, usage: 40,
				// second_max keeps the sum under the policy's max: the
				// agent does not clamp it.
				policy: fmt.Sprintf("        placement        = %q\n        second_max       = \"8\"\n", mode), cool: "200ms"})
			eventually(t, 30*time.Second, "a registered split for front", func() (bool, string) {
				_, next := c.registeredMoves(t)
				return len(next) > 0, "no register yet"
			})
			if mode == nomadplugin.PlacementCap {
				deadline := time.Now().Add(10 * time.Second)
				for time.Now().Before(deadline) {
					gs := c.group(t, "front")
					if gs.Queued != 0 || gs.Count > 4 {
						t.Fatalf("cap mode: front has count %d with %d queued; Nomad can place 4", gs.Count, gs.Queued)
					}
					time.Sleep(200 * time.Millisecond)
				}
				if gs := c.group(t, "front"); gs.Count != 4 {
					t.Errorf("cap mode: front settled at %d, want the 4 Nomad can place", gs.Count)
				}
				if es := c.a.entries(t); !strings.Contains(fmt.Sprint(es), "placement cap: Nomad can place 4") {
					t.Errorf("no decision says the placement cap held the count")
				}
				return
			}
			eventually(t, 20*time.Second, "the event's queued number equals the stand-in's", func() (bool, string) {
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
}

// TestE2EWrites: the host-quota target's writes through the real agent.
func TestE2EWrites(t *testing.T) {
	autoscalerPath(t)
	t.Run("a concurrent job change between read and write is not overwritten", func(t *testing.T) {
		c := startWritesCase(t, writesSetup{start: [2]int{2, 2}, reqCPU: 100, usage: 40, policy: noPlacementCap, cool: "200ms"})
		person := 7
		c.mu.Lock()
		c.onRegister = func() {
			// A person's `nomad job run` lands between the strategy's read
			// and the target's write.
			if err := c.s.SetGroupCount("", "web", "front", person); err != nil {
				panic(err)
			}
		}
		c.mu.Unlock()
		eventually(t, 30*time.Second, "the target reports the conflict", func() (bool, string) {
			for _, e := range c.a.entries(t) {
				if strings.Contains(fmt.Sprint(map[string]any(e)), "job changed since it was read: not overwritten; the next evaluation decides again") {
					return true, ""
				}
			}
			return false, "not logged yet"
		})
		// The next register found the person's count: it was not
		// overwritten, and the next evaluation decided on it.
		eventually(t, 30*time.Second, "a register after the conflict", func() (bool, string) {
			rs := c.registered()
			return len(rs) >= 2, fmt.Sprintf("%d registers", len(rs))
		})
		if rs := c.registered(); rs[1].found[0] != person {
			t.Fatalf("the register after the conflict found front at %d, want the person's %d", rs[1].found[0], person)
		}
		prev, _ := c.registeredMoves(t)
		if len(prev) == 0 || prev[0][0] != person {
			t.Errorf("the first registered split moved front from %v, want from the person's %d", prev, person)
		}
	})
	t.Run("split mode through deployments", func(t *testing.T) {
		c := startWritesCase(t, writesSetup{start: [2]int{2, 2}, reqCPU: 100, usage: 40, policy: noPlacementCap, cool: "200ms",
			update: &nomadstandin.UpdateSpec{MaxParallel: 1, AutoComplete: 3 * time.Second}})
		// Alternate busy and idle replicas so that the engine keeps
		// deciding other splits.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			busy := false
			for {
				select {
				case <-stop:
					return
				case <-time.After(4 * time.Second):
				}
				busy = !busy
				v := 40.0
				if busy {
					v = 1500
				}
				c.setUsage(t, v, v/2)
			}
		}()
		eventually(t, 60*time.Second, "three registered splits through deployments", func() (bool, string) {
			rs := c.registered()
			return len(rs) >= 3, fmt.Sprintf("%d registers", len(rs))
		})
		close(stop)
		wg.Wait()
		// Every register found the pair where the previous one put it:
		// no deployment or refusal left it at a state never decided.
		rs := c.registered()
		prev, next := c.registeredMoves(t)
		if len(next) != len(rs) {
			t.Fatalf("%d registers arrived, %d are recorded in scaling events: a register failed", len(rs), len(next))
		}
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
		// Each register of the groups with an update block started a
		// deployment.
		client, err := c.s.Client("")
		if err != nil {
			t.Fatal(err)
		}
		deps, _, err := client.Jobs().Deployments("web", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(deps) < len(rs) {
			t.Errorf("%d deployments for %d registers: the premise (a deployment per split) fails", len(deps), len(rs))
		}
		for _, r := range c.s.Requests() {
			if r.Path == "/v1/job/web/scale" && r.Method == http.MethodPut && r.Status != http.StatusOK {
				t.Errorf("a scale request was refused (%d): the target wrote a count during a deployment", r.Status)
			}
		}
	})
	t.Run("cooldown is respected", func(t *testing.T) {
		const cooldown = 10 * time.Second
		c := startWritesCase(t, writesSetup{start: [2]int{2, 2}, reqCPU: 100, usage: 40, policy: noPlacementCap, cool: cooldown.String()})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			busy := false
			for {
				select {
				case <-stop:
					return
				case <-time.After(1500 * time.Millisecond):
				}
				busy = !busy
				v := 40.0
				if busy {
					v = 1500
				}
				c.setUsage(t, v, v/2)
			}
		}()
		eventually(t, 60*time.Second, "three registers", func() (bool, string) {
			rs := c.registered()
			return len(rs) >= 3, fmt.Sprintf("%d registers", len(rs))
		})
		close(stop)
		wg.Wait()
		rs := c.registered()
		for i := 1; i < len(rs); i++ {
			// The agent's cooldown starts when Scale returns; allow the
			// evaluation interval's jitter below it, never more.
			if gap := rs[i].at.Sub(rs[i-1].at); gap < cooldown-time.Second {
				t.Errorf("registers %d and %d are %s apart, within the %s cooldown", i, i+1, gap.Round(time.Millisecond), cooldown)
			}
		}
	})
}

// noPlacementCap leaves placement to Nomad's own report (the tests give
// the hosts room enough).
const noPlacementCap = `        placement        = "report"
`
