package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// TestE2ESharedNode: two policies scale two jobs whose groups share one
// node, through the real agent (one strategy process for both), against
// the stand-in that places by reservations. Each group runs 2 replicas of
// 2000 MHz on host-a (20000 MHz), so Nomad can place 6 more in all, and
// each group's usage is low enough for the engine to want its max (10).
// Nomad's allocation list, which says what others reserve, is read at most
// every 30 s: without the strategy's claims each policy would see the
// other's room as free and both would ask for 6 more, 6 of which queue.
// With them the counts never go past what Nomad can place: the second
// policy to decide counts the first one's new replicas as reserved (its
// reason says so), and nothing queues. The stand-in is programmed
// (reservations, usage), so this test runs on it only, as
// TestE2EPlacement does.
func TestE2ESharedNode(t *testing.T) {
	testsupport.StandinOnly(t, "reservations and usage of two jobs on one node set from Go")
	autoscalerPath(t)
	pdir := pluginDir(t)
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	node, err := s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "first"})
	if err != nil {
		t.Fatal(err)
	}
	jobs := [2]string{"web", "api"}
	const group, start, replicaMHz = "app", 2, 2000
	placeable := int(hostCPU)/replicaMHz - 2*start // more Nomad can place on host-a, in all
	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range jobs {
		if err := s.AddJob(nomadstandin.JobSpec{ID: id, Groups: []nomadstandin.GroupSpec{
			{Name: group, Count: start, CPUMHz: replicaMHz, MemoryMB: 128, NodeID: node},
		}}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetGroupUsage("", id, group, 40, 64); err != nil {
			t.Fatal(err)
		}
		keys := fmt.Sprintf(`        role            = "first"
        job             = %q
        first_node_name = "host-a"
        first_group     = %q
        first_min       = "1"
        first_max       = "10"
        window          = "1"
        min_samples     = "1"
`, id, group) + noSteps
		target := fmt.Sprintf(`"host-quota" {
      job   = %q
      group = %q
    }`, id, group)
		if err := os.WriteFile(filepath.Join(pol, id+".hcl"), []byte(policyFileWith(id, id, keys, target, "200ms", "1s")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a := startAgent(t, dir, agentConfig("DEBUG", pdir, s.URL(), pol))
	status := func() (counts, queued [2]int) {
		for i, id := range jobs {
			gs, err := s.Group("", id, group)
			if err != nil {
				t.Fatal(err)
			}
			counts[i], queued[i] = gs.Count, gs.Queued
		}
		return counts, queued
	}
	eventually(t, 60*time.Second, "host-a's room taken, by one job or both", func() (bool, string) {
		c, q := status()
		if q[0]+q[1] > 0 {
			t.Fatalf("counts %v: %v allocations queued; Nomad can place %d more on host-a in all", c, q, placeable)
		}
		return c[0]+c[1] == 2*start+placeable, fmt.Sprintf("counts %v, queued %v", c, q)
	})
	// The room stays taken, and nothing queues, for several evaluations
	// of both policies.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		if c, q := status(); q[0]+q[1] > 0 || c[0]+c[1] != 2*start+placeable {
			t.Fatalf("counts %v with %v queued; Nomad can place %d in all on host-a", c, q, 2*start+placeable)
		}
		time.Sleep(200 * time.Millisecond)
	}
	a.stop(t)
	claimed := 0
	for _, e := range a.entries(t) {
		if e.str("@message") == "decided" && strings.Contains(fmt.Sprint(map[string]any(e)), "this plugin asked for on node host-a, not placed in Nomad's allocation list it read, count as reserved") {
			claimed++
		}
	}
	if claimed == 0 {
		t.Error("no decision counted the other policy's new replicas as reserved")
	}
}
