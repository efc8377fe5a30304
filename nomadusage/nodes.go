package nomadusage

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
)

// node is what a read needs of a node, from its full record or from a
// node list stub with resources.
type node struct {
	id, name          string
	state             NodeState
	res               *api.NodeResources
	reserved          *api.NodeReservedResources
	legacy, legacyRes *api.Resources // Nomad before 0.9
	pool, class, dc   string
	numCores          int // the node's cores, disabled ones included (cpu.numcores), when known
	capCPU, capMem    float64
	capacityErr       error
}

func nodeFromInfo(n *api.Node) *node {
	out := &node{id: n.ID, name: n.Name, pool: n.NodePool, class: n.NodeClass, dc: n.Datacenter,
		state: NodeState{Status: n.Status, Drain: n.Drain || n.DrainStrategy != nil, Eligibility: n.SchedulingEligibility},
		res:   n.NodeResources, reserved: n.ReservedResources, legacy: n.Resources, legacyRes: n.Reserved}
	out.numCores, _ = strconv.Atoi(n.Attributes["cpu.numcores"])
	out.capCPU, out.capMem, out.capacityErr = out.capacity()
	return out
}

func nodeFromStub(n *api.NodeListStub) *node {
	out := &node{id: n.ID, name: n.Name, pool: n.NodePool, class: n.NodeClass, dc: n.Datacenter,
		state: NodeState{Status: n.Status, Drain: n.Drain, Eligibility: n.SchedulingEligibility},
		res:   n.NodeResources, reserved: n.ReservedResources}
	out.numCores, _ = strconv.Atoi(n.Attributes["cpu.numcores"])
	out.capCPU, out.capMem, out.capacityErr = out.capacity()
	return out
}

// coreMHz is the node's MHz per core, what Nomad reserves for each core a
// task asks for (the cores' bandwidth), as the mean over the node's cores,
// or 0 when the node reports no core count. CpuShares is the compute of
// every core (Nomad 1.7+: the topology's TotalCompute) and TotalCpuCores
// counts the usable ones only, so the count of every core (the node's
// cpu.numcores attribute) divides when the node reports it; without it,
// cores withheld from tasks (reserved.cores) make the figure too high,
// and the placement estimate cautious.
func (n *node) coreMHz() float64 {
	if n.res == nil {
		return 0
	}
	cores := max(n.numCores, int(n.res.Cpu.TotalCpuCores))
	if cores == 0 {
		return 0
	}
	return float64(n.res.Cpu.CpuShares) / float64(cores)
}

// capacity is the node's allocatable CPU (MHz) and memory (MB): its
// resources less what is reserved for the OS.
func (n *node) capacity() (cpu, mem float64, err error) {
	var total float64 // the memory the node reports, before reservations
	switch {
	case n.res != nil:
		cpu = float64(n.res.Cpu.CpuShares)
		total = float64(n.res.Memory.MemoryMB)
		mem = total
		if r := n.reserved; r != nil {
			cpu -= float64(r.Cpu.CpuShares)
			mem -= float64(r.Memory.MemoryMB)
		}
	case n.legacy != nil && n.legacy.CPU != nil:
		cpu = float64(*n.legacy.CPU)
		if n.legacy.MemoryMB != nil {
			total = float64(*n.legacy.MemoryMB)
			mem = total
		}
		if r := n.legacyRes; r != nil {
			if r.CPU != nil {
				cpu -= float64(*r.CPU)
			}
			if r.MemoryMB != nil {
				mem -= float64(*r.MemoryMB)
			}
		}
	default:
		return 0, 0, fmt.Errorf("%w: NodeResources (the node reports no resources)", ErrMissingData)
	}
	if cpu <= 0 {
		return 0, 0, fmt.Errorf("%w: allocatable CPU is %v MHz after reservations", ErrMissingData, cpu)
	}
	// A node that reports its memory and reserves all of it (or more), or
	// reports a negative figure, has none to allocate: not a node whose
	// memory is unknown (0), which would leave memory unjudged.
	switch {
	case total < 0 || (total > 0 && mem <= 0):
		return 0, 0, fmt.Errorf("%w: allocatable memory is %v MB after reservations", ErrMissingData, mem)
	case total == 0:
		mem = 0 // not reported: unknown, whatever is reserved
	}
	return cpu, mem, nil
}

// findNode reads the one node sel names, whatever its state: by ID with
// GET /v1/node/:id, otherwise with one GET /v1/nodes whose server-side
// filter is the selector (resources included), so that Nomad, not the
// client, scans the nodes.
func findNode(ctx context.Context, c *api.Client, sel HostSelector) (*node, error) {
	if sel.IsZero() {
		return nil, ErrNoSelector
	}
	if err := CheckNodeID(sel.NodeID); err != nil {
		return nil, err
	}
	qo := (&api.QueryOptions{}).WithContext(ctx)
	if sel.NodeID != "" {
		n, _, err := c.Nodes().Info(sel.NodeID, qo)
		if err != nil {
			if nomadconn.IsStatus(err, http.StatusNotFound) {
				return nil, fmt.Errorf("host %s: %w: node %s: %w%s", sel, ErrNodeNotFound, sel.NodeID, err, nodeIDHint(sel.NodeID))
			}
			return nil, fmt.Errorf("read node %s for host %s: %w", sel.NodeID, sel, err)
		}
		// A name, pool, class or datacenter given with the ID is a
		// condition the node must meet, not a selector left unread.
		if !sel.matches(n.Name, n.NodePool, n.NodeClass, n.Datacenter) {
			return nil, fmt.Errorf("host %s: %w: node %s is %s (name %q, pool %q, class %q, datacenter %q)",
				sel, ErrNodeNotFound, sel.NodeID, n.Name, n.Name, n.NodePool, n.NodeClass, n.Datacenter)
		}
		return nodeFromInfo(n), nil
	}
	filter, err := sel.Filter()
	if err != nil {
		return nil, err
	}
	qo.Filter = filter
	qo.Params = map[string]string{"resources": "true"}
	stubs, _, err := c.Nodes().List(qo)
	if err != nil {
		return nil, fmt.Errorf("list nodes to find %s (filter %s): %w", sel, qo.Filter, err)
	}
	// Nomad applied the filter; check again, so that a server that
	// ignored it cannot make the read pick a wrong node.
	var found []*api.NodeListStub
	for _, n := range stubs {
		if sel.matches(n.Name, n.NodePool, n.NodeClass, n.Datacenter) {
			found = append(found, n)
		}
	}
	if len(found) > 1 && sel.Name != "" {
		// A node replaced under the same name: the old one stays listed,
		// down, until Nomad collects it (a day by default). The one node
		// of that name that is not down is the host. (A pool, class or
		// datacenter matching several nodes stays ambiguous.)
		var up []*api.NodeListStub
		for _, n := range found {
			if n.Status != api.NodeStatusDown {
				up = append(up, n)
			}
		}
		if len(up) == 1 {
			found = up
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("host %s: %w", sel, ErrNodeNotFound)
	case 1:
		return nodeFromStub(found[0]), nil
	}
	sort.Slice(found, func(i, k int) bool { return found[i].Name < found[k].Name })
	var names []string
	for i, n := range found {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(found)-5))
			break
		}
		names = append(names, fmt.Sprintf("%s (%s)", n.Name, n.ID))
	}
	return nil, fmt.Errorf("host %s: %w: %s; narrow the selector or give a node ID", sel, ErrAmbiguous, strings.Join(names, ", "))
}

// nodeIDHint says, for a node ID Nomad does not know, what is wrong with
// its form when it is not a whole UUID ("" when it is): Nomad's CLI takes
// a prefix, its node endpoint the whole ID.
func nodeIDHint(id string) string {
	switch l, whole := len(id), len("00000000-0000-0000-0000-000000000000"); {
	case l == 32 && !strings.Contains(id, "-"):
		return " (a node ID is its whole UUID with its dashes, 36 characters: this one has 32, without dashes)"
	case l < whole:
		return fmt.Sprintf(" (a node ID is given whole, the 36 characters of its UUID, not a prefix: this one has %d)", l)
	case l > whole:
		return fmt.Sprintf(" (a node ID is its whole UUID, 36 characters with its dashes: this one has %d)", l)
	}
	return ""
}
