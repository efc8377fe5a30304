package nomadplugin

import (
	"fmt"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

func TestClaimLedger(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	web := newClaimKey("n1", "", "web", "app") // namespace "" is default
	type add struct {
		k               claimKey
		current, target int
		at              time.Time
	}
	shows := func(job string, n int) []nomadusage.GroupOnNode {
		return []nomadusage.GroupOnNode{{Namespace: "default", Job: job, Group: "app", Allocations: n}}
	}
	for _, tc := range []struct {
		name     string
		adds     []add
		k        claimKey
		shown    []nomadusage.GroupOnNode
		now      time.Time
		replicas int
	}{
		{"another group's claim counts while the listing shows its old count", []add{{web, 2, 8, t0}},
			newClaimKey("n1", "default", "api", "app"), shows("web", 2), t0.Add(time.Second), 6},
		{"the group's own claim does not count", []add{{web, 2, 8, t0}},
			newClaimKey("n1", "default", "web", "app"), shows("web", 2), t0.Add(time.Second), 0},
		{"the same job's other group counts", []add{{web, 2, 8, t0}},
			newClaimKey("n1", "default", "web", "side"), shows("web", 2), t0.Add(time.Second), 6},
		{"a job of the same name in another namespace counts", []add{{web, 2, 8, t0}},
			newClaimKey("n1", "team-a", "web", "app"), shows("web", 2), t0.Add(time.Second), 6},
		{"another node's claim does not count", []add{{web, 2, 8, t0}},
			newClaimKey("n2", "default", "api", "app"), nil, t0.Add(time.Second), 0},
		{"a listing that shows the replicas placed ends the claim", []add{{web, 2, 8, t0}},
			newClaimKey("n1", "default", "api", "app"), shows("web", 8), t0.Add(time.Second), 0},
		{"replicas partly placed: the rest count", []add{{web, 2, 8, t0}},
			newClaimKey("n1", "default", "api", "app"), shows("web", 5), t0.Add(time.Second), 3},
		{"no listing of the node: every claimed replica counts", []add{{web, 2, 8, t0}},
			newClaimKey("n1", "default", "api", "app"), nil, t0.Add(time.Second), 6},
		{"a claim ends at claimMaxAge", []add{{web, 2, 8, t0}},
			newClaimKey("n1", "default", "api", "app"), shows("web", 2), t0.Add(claimMaxAge), 0},
		{"a second scale-up adds to the replicas not yet placed", []add{{web, 2, 5, t0}, {web, 5, 8, t0.Add(time.Second)}},
			newClaimKey("n1", "default", "api", "app"), shows("web", 2), t0.Add(2 * time.Second), 6},
		{"a scale-down claims nothing", []add{{web, 8, 4, t0}},
			newClaimKey("n1", "default", "api", "app"), shows("web", 2), t0.Add(time.Second), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l claimLedger
			for _, a := range tc.adds {
				l.add(a.k, a.current, a.target, 2000, 128, a.at)
			}
			n, cpu, mem := l.others(tc.k, tc.shown, tc.now)
			if n != tc.replicas || cpu != float64(2000*tc.replicas) || mem != float64(128*tc.replicas) {
				t.Errorf("others = %d replicas, %v MHz, %v MB; want %d, %d, %d", n, cpu, mem, tc.replicas, 2000*tc.replicas, 128*tc.replicas)
			}
		})
	}
}

// A group whose count did not reach its claims' targets twice in a row (a
// dry run; a refused write) stops claiming until a scale-up of it is
// carried out. One miss is forgiven: a write refused once (the job changed
// since it was read) does not cost the group's next scale-up its claim.
func TestClaimLedgerMissed(t *testing.T) {
	l, web, count := webLedger(t)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l.add(web, 2, 8, 2000, 128, t0)
	count("after the first claim", 6, t0)
	l.settle(web, 2) // web's next evaluation: still at 2, the action was not carried out
	count("after web's count stayed at 2", 0, t0.Add(time.Second))
	l.settle(web, 2)                                 // settled again, no new claim: still one miss
	l.add(web, 2, 8, 2000, 128, t0.Add(time.Second)) // asks again
	count("after a claim following one miss", 6, t0.Add(time.Second))
	l.settle(web, 2) // missed again: two in a row
	l.add(web, 2, 8, 2000, 128, t0.Add(2*time.Second))
	count("after a claim following two misses", 0, t0.Add(2*time.Second))
	l.settle(web, 8) // carried out this time: its 6 count again
	count("after web's count reached the claim's", 6, t0.Add(3*time.Second))
	l.add(web, 8, 10, 2000, 128, t0.Add(3*time.Second))
	count("after one more scale-up", 8, t0.Add(3*time.Second))
}

func TestClaimLedgerBounded(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var l claimLedger
	for i := range maxClaims + 10 {
		l.add(newClaimKey("n1", "default", fmt.Sprintf("job-%d", i), "app"), 0, 1, 1, 1, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if len(l.claims) > maxClaims {
		t.Fatalf("%d claims kept, more than %d", len(l.claims), maxClaims)
	}
	if _, ok := l.claims[newClaimKey("n1", "default", fmt.Sprintf("job-%d", maxClaims+9), "app")]; !ok {
		t.Fatal("the newest claim was dropped")
	}
	if _, ok := l.claims[newClaimKey("n1", "default", "job-0", "app")]; ok {
		t.Fatal("the oldest claim was kept")
	}
}

// A group that scaled up and then down before the listing showed it keeps
// claiming the replicas up to its new count: they are still coming.
func TestClaimLedgerScaledDownSince(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	web, api := newClaimKey("n1", "default", "web", "app"), newClaimKey("n1", "default", "api", "app")
	listing := []nomadusage.GroupOnNode{{Namespace: "default", Job: "web", Group: "app", Allocations: 2}}
	var l claimLedger
	l.add(web, 2, 8, 2000, 128, t0)
	l.settle(web, 5) // carried out to 8, then down to 5
	if n, _, _ := l.others(api, listing, t0.Add(time.Second)); n != 3 {
		t.Fatalf("another group sees %d claimed replicas, want 3 (5 asked for, 2 listed)", n)
	}
}

// A dry-run policy evaluates again only after its cooldown, longer than a
// claim counts: its evaluations still learn that its claims were not
// carried out, and from its third scale-up on it claims nothing. Each of its
// scale-ups counted anew for claimMaxAge (the claim, and what it had
// learnt, was gone). A claim carried out but still not listed after
// claimMaxAge (its replicas queued) counts nothing either, and does not
// carry its replicas into the group's next claim.
func TestClaimLedgerDryRunAfterCooldown(t *testing.T) {
	l, web, count := webLedger(t)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cooldown := 5 * time.Minute
	l.add(web, 2, 8, 2000, 128, t0)
	count("after the dry run's first claim", 6, t0.Add(time.Minute))
	count("past claimMaxAge", 0, t0.Add(claimMaxAge+time.Second))
	l.settle(web, 2) // after the cooldown: still at 2
	l.add(web, 2, 8, 2000, 128, t0.Add(cooldown))
	count("after the dry run's second claim (one miss forgiven)", 6, t0.Add(cooldown+time.Second))
	l.settle(web, 2)
	l.add(web, 2, 8, 2000, 128, t0.Add(2*cooldown))
	count("after the dry run's third claim", 0, t0.Add(2*cooldown+time.Second))

	// Carried out, but its replicas stay queued past claimMaxAge.
	at := t0.Add(2 * cooldown)
	l.settle(web, 8)
	l.add(web, 8, 9, 2000, 128, at.Add(2*time.Second))
	count("after a carried-out claim", 7, at.Add(3*time.Second)) // 6 + 1 new, 2 listed of 9
	l.settle(web, 9)
	l.add(web, 9, 10, 2000, 128, at.Add(claimMaxAge+3*time.Second))
	count("after a claim following one that ended", 1, at.Add(claimMaxAge+4*time.Second))
	count("long after", 0, at.Add(claimMaxAge+claimMemory+4*time.Second))
	if len(l.claims) != 0 {
		t.Fatalf("%d claims kept past claimMemory", len(l.claims))
	}
}

// webLedger is an empty ledger, the key of group web/app on node n1 (two
// of its allocations listed there), and count, which checks how many
// replicas group api/app on that node sees claimed by others at a time.
func webLedger(t *testing.T) (l *claimLedger, web claimKey, count func(when string, want int, at time.Time)) {
	l = &claimLedger{}
	web, api := newClaimKey("n1", "default", "web", "app"), newClaimKey("n1", "default", "api", "app")
	listing := []nomadusage.GroupOnNode{{Namespace: "default", Job: "web", Group: "app", Allocations: 2}}
	return l, web, func(when string, want int, at time.Time) {
		t.Helper()
		if n, _, _ := l.others(api, listing, at); n != want {
			t.Fatalf("%s: another group sees %d claimed replicas, want %d", when, n, want)
		}
	}
}
