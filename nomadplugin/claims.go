package nomadplugin

import (
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Claims: the replicas this plugin has asked Nomad to add on a node, which
// Nomad's allocation list, read at most every node_cache_ttl, may not show
// yet. Without them two policies whose groups share a node would each see
// the node's free room and both ask for it: Nomad places one group's new
// replicas and the other's stay queued. A group's reading counts the
// claims of every other group on its node as reserved.
const (
	// claimSettle is how long after a claim a node listing must be taken
	// to show its replicas (Nomad places a count increase within seconds
	// of the target's register); a listing taken later supersedes it.
	claimSettle = 15 * time.Second
	// claimMaxAge drops a claim that no listing has superseded (an action
	// the target did not carry out, a node no longer read).
	claimMaxAge = 2 * time.Minute
	// maxClaims bounds the claims remembered; past it the oldest go.
	maxClaims = 4096
)

// claim is what one scale-up asked for on a node.
type claim struct {
	node, ns, job, group string
	replicas             int
	cpu, mem             float64 // reserved by the replicas added, in total
	at                   time.Time
}

// claimLedger is a Strategy's claims, shared by its policies.
type claimLedger struct {
	mu     sync.Mutex
	claims []claim // oldest first
}

// groupNamespace is the namespace an allocation's empty namespace stands
// for.
func groupNamespace(ns string) string {
	if ns == "" {
		return api.DefaultNamespace
	}
	return ns
}

// add records that group (in ns, of job) asked for replicas more on node,
// reserving cpu and mem in total, at time at.
func (l *claimLedger) add(node, ns, job, group string, replicas int, cpu, mem float64, at time.Time) {
	if node == "" || replicas <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.claims) >= maxClaims {
		l.claims = append(l.claims[:0], l.claims[len(l.claims)-maxClaims+1:]...)
	}
	l.claims = append(l.claims, claim{node: node, ns: groupNamespace(ns), job: job, group: group, replicas: replicas, cpu: cpu, mem: mem, at: at})
}

// others sums the live claims on node of every group but (ns, job, group):
// those younger than claimMaxAge and not superseded by the node listing
// taken at listed (zero: none known). It forgets the claims that are not
// live any more.
func (l *claimLedger) others(node, ns, job, group string, listed, now time.Time) (replicas int, cpu, mem float64) {
	ns = groupNamespace(ns)
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.claims[:0]
	for _, c := range l.claims {
		if now.Sub(c.at) >= claimMaxAge || (c.node == node && !listed.IsZero() && !listed.Before(c.at.Add(claimSettle))) {
			continue
		}
		kept = append(kept, c)
		if c.node == node && (c.ns != ns || c.job != job || c.group != group) {
			replicas += c.replicas
			cpu += c.cpu
			mem += c.mem
		}
	}
	clear(l.claims[len(kept):])
	l.claims = kept
	return replicas, cpu, mem
}
