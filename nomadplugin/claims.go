package nomadplugin

import (
	"sync"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// Claims: the replicas this plugin has asked Nomad to add on a node, which
// Nomad's allocation list, read at most every node_cache_ttl, may not show
// yet. Without them two policies whose groups share a node would each see
// the node's free room and both ask for it: Nomad places one group's new
// replicas and the other's stay queued. A group's reading counts, as
// reserved by others, every other group's claimed replicas that the
// node's allocation list behind the reading does not show.
const (
	// claimMaxAge ends a claim's count when no listing has shown it placed
	// (the replicas queued, the action not carried out, or the node is no
	// longer read).
	claimMaxAge = 2 * time.Minute
	// claimMemory is how long an ended claim is kept, counting nothing, so
	// that the group's next evaluation still learns whether it was carried
	// out: a dry-run policy evaluates again only after its cooldown (the
	// agent's default is 5 minutes), and without the ended claim each of its
	// scale-ups would count anew for claimMaxAge.
	claimMemory = 30 * time.Minute
	// maxClaims bounds the claims remembered; past it the oldest go.
	maxClaims = 4096
)

// claimKey is one group on one node.
type claimKey struct{ node, ns, job, group string }

// claim is what a group's scale-ups on a node asked for and Nomad's
// allocation list has not shown placed yet.
type claim struct {
	// target is the count asked for, from the count from; replicas the
	// new ones of it not yet shown placed (at most target less the
	// allocations a listing shows).
	target, from, replicas int
	// cpu and mem: what one replica reserves there.
	cpu, mem float64
	at       time.Time
	// misses counts the group's claims in a row whose target its count
	// did not reach (the action was not carried out: a dry run, a refused
	// write); from maxMisses on its claims do not count until one is
	// carried out. missedThis: this claim's miss is counted.
	misses     int
	missedThis bool
}

// maxMisses is how many claims in a row a group may have not carried out
// before its claims stop counting: one refused write (a job changed since
// it was read) does not cost the group's next scale-up its protection, and
// a dry-run policy, whose every action is not carried out, claims twice.
const maxMisses = 2

// claimLedger is a Strategy's claims, shared by its policies.
type claimLedger struct {
	mu     sync.Mutex
	claims map[claimKey]*claim
}

func newClaimKey(node, ns, job, group string) claimKey {
	return claimKey{node, namespaceName(ns), job, group}
}

// settle is a group's evaluation reading its own count, current, before it
// decides. A count still at or below where the claim started was not
// carried out: the claim stops counting, and is one more miss in a row
// (see maxMisses). A count that moved but is below the target (scaled down
// since) only lowers the target: the replicas up to it are still coming.
func (l *claimLedger) settle(k claimKey, current int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.claims[k]
	switch {
	case c == nil || current >= c.target:
		if c != nil {
			c.misses = 0
		}
	case current <= c.from:
		if !c.missedThis {
			c.misses++
		}
		c.missedThis, c.replicas = true, 0
	default:
		c.target = current
		c.replicas = min(c.replicas, current-c.from)
	}
}

// add records that group k asked for target replicas, from current, each
// reserving cpu and mem, at time at. The new replicas join the ones of an
// earlier claim that no listing has shown placed yet.
func (l *claimLedger) add(k claimKey, current, target int, cpu, mem float64, at time.Time) {
	if k.node == "" || target <= current {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.claims == nil {
		l.claims = map[claimKey]*claim{}
	}
	c := &claim{target: target, from: current, replicas: target - current, cpu: cpu, mem: mem, at: at}
	if old := l.claims[k]; old != nil {
		c.misses = old.misses
		if at.Sub(old.at) < claimMaxAge {
			c.replicas += old.replicas
		}
		if !old.missedThis {
			c.from = min(old.from, current)
		}
	} else if len(l.claims) >= maxClaims {
		l.dropOldest()
	}
	l.claims[k] = c
}

func (l *claimLedger) dropOldest() {
	var oldest claimKey
	var at time.Time
	for k, c := range l.claims {
		if at.IsZero() || c.at.Before(at) {
			oldest, at = k, c.at
		}
	}
	delete(l.claims, oldest)
}

// others sums the claimed replicas on k's node of every group but k's that
// the node listing behind a reading (shown: each group's allocations
// there) does not show placed, at what each reserves. A claim the listing
// shows placed, or older than claimMemory, is forgotten; one older than
// claimMaxAge counts nothing.
func (l *claimLedger) others(k claimKey, shown []nomadusage.GroupOnNode, now time.Time) (replicas int, cpu, mem float64) {
	allocs := make(map[claimKey]int, len(shown))
	for _, g := range shown {
		allocs[newClaimKey(k.node, g.Namespace, g.Job, g.Group)] += g.Allocations
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for ck, c := range l.claims {
		switch age := now.Sub(c.at); {
		case age >= claimMemory:
			delete(l.claims, ck)
			continue
		case age >= claimMaxAge:
			c.replicas = 0 // kept for settle: was it carried out?
		}
		if ck.node != k.node {
			continue
		}
		unplaced := c.target - allocs[ck]
		if unplaced <= 0 {
			delete(l.claims, ck) // placed: the listing counts them now
			continue
		}
		if ck == k || c.misses >= maxMisses {
			continue
		}
		n := min(c.replicas, unplaced)
		replicas += n
		cpu += float64(n) * c.cpu
		mem += float64(n) * c.mem
	}
	return replicas, cpu, mem
}
