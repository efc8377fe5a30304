package nomadplugin

import (
	"testing"
	"time"
)

func TestClaimLedger(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	type query struct {
		node, ns, job, group string
		listed, now          time.Time
	}
	for _, tc := range []struct {
		name     string
		claims   []claim
		q        query
		replicas int
		cpu, mem float64
	}{
		{"another group's claim on the node counts",
			[]claim{{node: "n1", ns: "default", job: "web", group: "app", replicas: 3, cpu: 6000, mem: 384, at: t0}},
			query{"n1", "default", "api", "app", t0.Add(-time.Second), t0.Add(time.Second)}, 3, 6000, 384},
		{"the group's own claim does not (empty namespace is default)",
			[]claim{{node: "n1", ns: "default", job: "web", group: "app", replicas: 3, cpu: 6000, mem: 384, at: t0}},
			query{"n1", "", "web", "app", time.Time{}, t0.Add(time.Second)}, 0, 0, 0},
		{"the same job's other group counts",
			[]claim{{node: "n1", ns: "default", job: "web", group: "app", replicas: 1, cpu: 2000, mem: 128, at: t0}},
			query{"n1", "default", "web", "side", time.Time{}, t0.Add(time.Second)}, 1, 2000, 128},
		{"a job of the same name in another namespace counts",
			[]claim{{node: "n1", ns: "team-a", job: "web", group: "app", replicas: 1, cpu: 2000, mem: 128, at: t0}},
			query{"n1", "default", "web", "app", time.Time{}, t0.Add(time.Second)}, 1, 2000, 128},
		{"another node's claim does not",
			[]claim{{node: "n2", ns: "default", job: "web", group: "app", replicas: 3, cpu: 6000, mem: 384, at: t0}},
			query{"n1", "default", "api", "app", time.Time{}, t0.Add(time.Second)}, 0, 0, 0},
		{"a listing taken claimSettle after the claim supersedes it",
			[]claim{{node: "n1", ns: "default", job: "web", group: "app", replicas: 3, cpu: 6000, mem: 384, at: t0}},
			query{"n1", "default", "api", "app", t0.Add(claimSettle), t0.Add(claimSettle + time.Second)}, 0, 0, 0},
		{"a listing taken sooner does not",
			[]claim{{node: "n1", ns: "default", job: "web", group: "app", replicas: 3, cpu: 6000, mem: 384, at: t0}},
			query{"n1", "default", "api", "app", t0.Add(claimSettle - time.Second), t0.Add(claimSettle)}, 3, 6000, 384},
		{"a claim no listing superseded ends at claimMaxAge",
			[]claim{{node: "n1", ns: "default", job: "web", group: "app", replicas: 3, cpu: 6000, mem: 384, at: t0}},
			query{"n1", "default", "api", "app", time.Time{}, t0.Add(claimMaxAge)}, 0, 0, 0},
		{"claims add up",
			[]claim{
				{node: "n1", ns: "default", job: "web", group: "app", replicas: 2, cpu: 4000, mem: 256, at: t0},
				{node: "n1", ns: "default", job: "db", group: "main", replicas: 1, cpu: 1000, mem: 1024, at: t0.Add(time.Second)},
			},
			query{"n1", "default", "api", "app", time.Time{}, t0.Add(2 * time.Second)}, 3, 5000, 1280},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l claimLedger
			for _, c := range tc.claims {
				l.add(c.node, c.ns, c.job, c.group, c.replicas, c.cpu, c.mem, c.at)
			}
			n, cpu, mem := l.others(tc.q.node, tc.q.ns, tc.q.job, tc.q.group, tc.q.listed, tc.q.now)
			if n != tc.replicas || cpu != tc.cpu || mem != tc.mem {
				t.Errorf("others = %d replicas, %v MHz, %v MB; want %d, %v, %v", n, cpu, mem, tc.replicas, tc.cpu, tc.mem)
			}
		})
	}
}

func TestClaimLedgerForgets(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var l claimLedger
	l.add("n1", "default", "web", "app", 0, 0, 0, t0)    // nothing added
	l.add("", "default", "web", "app", 2, 4000, 256, t0) // no node
	if len(l.claims) != 0 {
		t.Fatalf("%d claims kept of a scale-up of 0 and of no node", len(l.claims))
	}
	l.add("n1", "default", "web", "app", 2, 4000, 256, t0)
	l.add("n2", "default", "web", "app", 2, 4000, 256, t0)
	// A read of n1 with a listing past the settle forgets n1's claim, not
	// n2's.
	l.others("n1", "default", "api", "app", t0.Add(claimSettle), t0.Add(claimSettle))
	if len(l.claims) != 1 || l.claims[0].node != "n2" {
		t.Fatalf("claims after n1's listing: %+v, want n2's only", l.claims)
	}
	// The ledger is bounded.
	for i := range maxClaims + 10 {
		l.add("n3", "default", "web", "app", 1, 1, 1, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if len(l.claims) > maxClaims {
		t.Fatalf("%d claims kept, more than %d", len(l.claims), maxClaims)
	}
	if last := l.claims[len(l.claims)-1]; !last.at.Equal(t0.Add(time.Duration(maxClaims+9) * time.Millisecond)) {
		t.Fatalf("the newest claim was dropped (last kept at %v)", last.at)
	}
}
