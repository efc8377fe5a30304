package nomadusage

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// Sentinel errors; test with errors.Is. Every error the package returns
// wraps one of these or an error of the Nomad API client, with context.
var (
	// ErrNoSelector: the host selector names no node ID, name, pool, class
	// or datacenter.
	ErrNoSelector = errors.New("no host selector: set a node ID, a node name, or a node pool, class and/or datacenter")
	// ErrNodeNotFound: no node matches the selector.
	ErrNodeNotFound = errors.New("no node matches")
	// ErrAmbiguous: several nodes match the selector.
	ErrAmbiguous = errors.New("several nodes match")
	// ErrJobNotFound: the named job or task group does not exist.
	ErrJobNotFound = errors.New("job or task group not found")
	// ErrNodeNotReady: the node matched but is not ready (down,
	// initializing...). Only Read refuses such a node; ReadHosts reports
	// the node's state in the reading instead (see NodeState).
	ErrNodeNotReady = errors.New("node is not ready")
	// ErrMissingData: Nomad answered without a field the read needs.
	ErrMissingData = errors.New("missing data")
	// ErrNoCPURequest (an ErrMissingData too): no task of the group
	// requests CPU, and the query gives no replica CPU demand to use
	// instead.
	ErrNoCPURequest = fmt.Errorf("%w: no task requests CPU", ErrMissingData)
	// ErrBadQuery: the query itself is wrong (a field is missing or invalid).
	ErrBadQuery = errors.New("bad usage query")
	// ErrTooFewAnswered: fewer allocations answered their stats read than
	// the share a decision needs (Options.MinAnswered).
	ErrTooFewAnswered = errors.New("too few allocations answered their stats read")
	// ErrBadUsage: Nomad answered a usage figure no host can show (not a
	// number, infinite or negative). An allocation's such answer counts as
	// not answered; a node's fails its read.
	ErrBadUsage = errors.New("usage out of range")
	// ErrStatsOutOfLine: an allocation's stats were taken StatsLag or more
	// from the median time of its node's answers (they stopped
	// refreshing), so it counts as not answered.
	ErrStatsOutOfLine = errors.New("stats out of line with the node's others")
	// ErrOlderReading: a reading StatsLag or more older than the usage
	// window's newest sample (see Window.Add).
	ErrOlderReading = errors.New("reading older than the usage window's newest sample")
)

// usableFigure says whether v is a usage figure a host can show: a number
// from 0 to engine.MaxResource (a figure beyond it, a garbage cgroup
// counter, is no measurement: the engine refuses it, and in a usage window
// it would stop every decision until it aged out).
func usableFigure(v float64) bool { return v >= 0 && v <= engine.MaxResource }

// figureRange is the rule usableFigure checks, for error texts.
var figureRange = fmt.Sprintf("it must be a number from 0 to %g", float64(engine.MaxResource))

// StatsLag bounds how far apart in time the stats of one node's
// allocations may be. A Nomad client collects each task's stats every
// collection_interval (1 s by default, longer on some clusters) from the
// task's start, so healthy stats times on a node lie within one interval
// of each other, in any pattern. An answer StatsLag or more from the
// median of its node's answers stopped refreshing and counts as not
// answered; a reading (whose time is that median) less than StatsLag older
// than a usage window's newest sample is other allocations' stats taken a
// little earlier (Window.Add). Five minutes is above any collection
// interval in common use.
const StatsLag = 5 * time.Minute

// HostSelector says which Nomad node is a host. NodeID picks the node by
// ID, and Name, Pool, Class and Datacenter, when also set, are conditions it
// must meet; otherwise they select nodes with a server-side filter
// expression (every one set must match), and exactly one node must match.
type HostSelector struct {
	NodeID     string
	Name       string
	Pool       string
	Class      string
	Datacenter string
}

// CheckNodeID refuses a node ID that is not one: Nomad's are UUIDs, and
// the API client puts the ID into the request's path as it is, so
// "../job/x" would read another endpoint with the client's token. "" is
// no ID, and fine.
func CheckNodeID(id string) error {
	for _, r := range id {
		if hex := r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'; !hex && r != '-' {
			return fmt.Errorf("%w: node_id %q: a Nomad node ID is a UUID (hexadecimal digits and dashes)", ErrBadQuery, id)
		}
	}
	return nil
}

// IsZero reports whether no field is set.
func (h HostSelector) IsZero() bool {
	return h.NodeID == "" && h.Name == "" && h.Pool == "" && h.Class == "" && h.Datacenter == ""
}

// String describes the selector, e.g. `name="host-a" pool="edge"`.
func (h HostSelector) String() string {
	var parts []string
	for _, kv := range h.fields() {
		if kv.v != "" {
			parts = append(parts, fmt.Sprintf("%s=%q", kv.key, kv.v))
		}
	}
	if h.NodeID != "" {
		parts = append([]string{fmt.Sprintf("node_id=%q", h.NodeID)}, parts...)
	}
	if len(parts) == 0 {
		return "(empty selector)"
	}
	return strings.Join(parts, " ")
}

type selectorField struct{ key, field, v string }

// fields are the filter fields: the selector key, the node field Nomad's
// filter expression names, and the value.
func (h HostSelector) fields() []selectorField {
	return []selectorField{{"name", "Name", h.Name}, {"pool", "NodePool", h.Pool}, {"class", "NodeClass", h.Class}, {"datacenter", "Datacenter", h.Datacenter}}
}

// Filter is the selector as a Nomad filter expression on the node list
// (`Name == "host-a" and NodePool == "edge"`); "" for a node ID selector.
// A value the filter language cannot write (one holding both a double
// quote and a backquote) is ErrBadQuery.
func (h HostSelector) Filter() (string, error) {
	var terms []string
	for _, f := range h.fields() {
		if f.v == "" {
			continue
		}
		q, ok := quoteFilter(f.v)
		if !ok {
			return "", fmt.Errorf("%w: node %s %q holds both a double quote and a backquote, which a Nomad filter cannot express", ErrBadQuery, f.key, f.v)
		}
		terms = append(terms, f.field+" == "+q)
	}
	return strings.Join(terms, " and "), nil
}

// quoteFilter writes s as a string of Nomad's filter language (go-bexpr):
// double-quoted, or raw (backquoted) when s holds a double quote or a
// backslash. ok is false when s holds both a double quote and a backquote,
// which the language cannot express.
func quoteFilter(s string) (string, bool) {
	if !strings.ContainsAny(s, `"\`) {
		return `"` + s + `"`, true
	}
	if strings.Contains(s, "`") {
		return "", false
	}
	return "`" + s + "`", true
}

func (h HostSelector) matches(name, pool, class, dc string) bool {
	return (h.Name == "" || h.Name == name) && (h.Pool == "" || h.Pool == pool) &&
		(h.Class == "" || h.Class == class) && (h.Datacenter == "" || h.Datacenter == dc)
}

// Query says what to read for one host.
type Query struct {
	Host HostSelector
	// Job, when set, restricts usage to the running allocations of this job
	// (and of Group, when set) on the node, read from allocation stats.
	// When empty, usage is the node's client stats (everything on it) and
	// the replicas are all running allocations on the node.
	Namespace string // the job's namespace; empty = the client's namespace
	Job       string
	Group     string
	// ReplicaCPUDemandMHz and ReplicaMemoryDemandMB are one replica's
	// expected demand; 0 takes the task group's request from the job (the
	// sum over its tasks by Nomad's rule: reserved cores at the node's MHz
	// per core, lifecycle phases by the largest). Without a job the CPU
	// demand is required.
	ReplicaCPUDemandMHz   float64
	ReplicaMemoryDemandMB float64
	// WantedReplicas is passed through to the observation (0 = every slot).
	WantedReplicas int
	// QueuedReplicas is passed through to the observation (nil = none
	// given).
	QueuedReplicas []engine.Replica
	// Label names the host in the observation; default the node's name.
	Label string
	// NoStats (ReadHosts only): read no usage from Nomad, neither the
	// group's allocation stats nor, without a job, the node's client stats;
	// the observation's sample then carries no usage (the caller takes usage
	// from elsewhere, such as an APM), and warming replicas are told by age
	// only.
	NoStats bool
}

// Validate checks the query's own fields.
func (q *Query) Validate() error {
	if q.Host.IsZero() {
		return fmt.Errorf("%w: %w", ErrBadQuery, ErrNoSelector)
	}
	if err := CheckNodeID(q.Host.NodeID); err != nil {
		return err
	}
	if q.Group != "" && q.Job == "" {
		return fmt.Errorf("%w: group %q is set without a job", ErrBadQuery, q.Group)
	}
	if q.Job == "" && q.ReplicaCPUDemandMHz <= 0 {
		return fmt.Errorf("%w: replica_cpu_demand_mhz must be > 0 when no job is named (there is no task group to take the request from)", ErrBadQuery)
	}
	if q.ReplicaCPUDemandMHz < 0 {
		return fmt.Errorf("%w: replica_cpu_demand_mhz is %v; it must be >= 0 (0 = the task group's request)", ErrBadQuery, q.ReplicaCPUDemandMHz)
	}
	if q.ReplicaMemoryDemandMB < 0 {
		return fmt.Errorf("%w: replica_memory_demand_mb is %v; it must be >= 0 (0 = the task group's request)", ErrBadQuery, q.ReplicaMemoryDemandMB)
	}
	if q.WantedReplicas < 0 {
		return fmt.Errorf("%w: wanted_replicas must be >= 0", ErrBadQuery)
	}
	return nil
}

// NodeState is a node's scheduling state as Nomad reports it.
type NodeState struct {
	// Status is "ready", "down", "initializing" or "disconnected".
	Status string
	// Drain is true while the node is being drained.
	Drain bool
	// Eligibility is "eligible" or "ineligible".
	Eligibility string
}

// Schedulable reports whether Nomad places new allocations on the node:
// ready, not draining, eligible.
func (s NodeState) Schedulable() bool { return s.Why() == "" }

// clientAnswers says whether the node's client answers through the
// servers: Nomad answers a down or disconnected node's stats endpoints with
// 404 "No path to node".
func (s NodeState) clientAnswers() bool {
	return s.Status != api.NodeStatusDown && s.Status != api.NodeStatusDisconnected
}

// noUsage says why a reading of node name carries no usage.
func (s NodeState) noUsage(name string) string {
	return fmt.Sprintf("node %s is %s: its client answers no stats (Nomad is moving its allocations elsewhere)", name, s.Status)
}

// Why says why Nomad places nothing new on the node; "" when it does.
func (s NodeState) Why() string {
	var why []string
	if s.Status != "ready" {
		why = append(why, fmt.Sprintf("is %s", s.Status))
	}
	if s.Drain {
		why = append(why, "is draining")
	}
	if s.Eligibility != "" && s.Eligibility != "eligible" {
		why = append(why, "is ineligible for scheduling")
	}
	return strings.Join(why, " and ")
}

// NodeCount is a number of allocations on a node.
type NodeCount struct {
	Node  string
	Count int
}

// Reading is one read of a host: an observation with one usage sample.
type Reading struct {
	NodeID   string
	NodeName string
	// Node is the node's scheduling state.
	Node NodeState
	// Namespace, Job and Group are what the usage covers (empty for the
	// whole node).
	Namespace, Job, Group string
	// Time is when Nomad took the stats the sample comes from: the median
	// Timestamp of the answered allocations' stats (the older middle one
	// of an even count), or the node's client stats
	// Timestamp without a job; the read's own time when Nomad gives none
	// (no running allocation, or a zero Timestamp).
	// Observation.Samples[0].Time is its Unix second.
	Time time.Time
	// ReadTime says Time is the read's own (Nomad gave no Timestamp), not
	// the Nomad client's clock, which may differ from the reader's.
	ReadTime    bool
	Observation engine.Observation
	// Job readings only. JobModifyIndex is the job's modify index as read
	// (what a check-and-set write must name); DesiredCount the group's
	// count in the job; ReplicaCPUMHz and ReplicaMemoryMB what one of the
	// group's replicas reserves (its tasks' resources, summed); Region
	// the job's region (its Region field: the region it was registered
	// in, as Nomad stores it).
	JobModifyIndex  uint64
	Region          string
	DesiredCount    int
	ReplicaCPUMHz   float64
	ReplicaMemoryMB float64
	// NodeGroups is every group with reserving allocations in the node's
	// allocation list behind Observation.OtherReservedCPUMHz and
	// OtherReservedMemoryMB (remembered for NodeCacheTTL: an allocation
	// placed since is not in it), the reading's own group included.
	NodeGroups []GroupOnNode
	// RunningElsewhere, in a job reading, is the group's running
	// allocations on other nodes than the one read, by node name (the ID
	// when the listing gives no name), sorted: a group whose count is
	// this host's count should run on it alone.
	RunningElsewhere []NodeCount
	// RunningGroups, in a reading without a job, are the groups
	// ("namespace/job/group") whose running allocations the observation
	// counts as its replicas, sorted.
	RunningGroups []string
	// NoUsage, when set, says why the reading carries no usage sample
	// though one was asked for (a node down or disconnected: its client
	// answers no stats); Observation.Samples is then empty.
	NoUsage string
	// StatsAsked is how many running allocations' stats were read (at most
	// Options.StatsSample; less those that stopped in between),
	// StatsAnswered how many answered. The sample extrapolates the answered
	// ones to all (see ReadHosts).
	StatsAsked, StatsAnswered int
	// MemoryUnmeasured is how many of the answered allocations' stats
	// measured no memory (no MemoryStats, or RSS and Usage both 0: a
	// driver that measures none); the sample counts each at its memory
	// reservation instead of at 0.
	MemoryUnmeasured int
}

// GroupOnNode is one task group's allocations meant to run that reserve
// resources on a node (pending or running), as a listing of the node's
// allocations showed them.
type GroupOnNode struct {
	Namespace, Job, Group string
	Allocations           int
}
