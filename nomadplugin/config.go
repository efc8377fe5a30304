package nomadplugin

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// Strategy check configuration keys (the `config` map of a check's
// `strategy "activation-quota"` block). Per-host keys are written with the
// host's prefix: PrefixFirst+KeyNodeName is "first_node_name".
const (
	// KeyRole: "first" or "second" returns that host's count (for a
	// policy whose target is one task group, e.g. the built-in Nomad
	// target); "split" returns the sum, with both counts in the action's
	// meta, for the host-quota target. Required.
	KeyRole = "role"
	// KeyNamespace: the namespace of KeyJob; default the agent's
	// nomad_namespace, else Nomad's default.
	KeyNamespace = "namespace"
	// KeyJob: the job whose allocations' usage is read on each host. When
	// empty, each host's usage is its node's client stats and the
	// per-host replica CPU demand is required. Required with role "split".
	KeyJob = "job"
	// KeyWindow: the most usage samples kept per host (one per
	// evaluation). Default 60.
	KeyWindow = "window"
	// KeyMaxAge: samples older than this leave the window; when the newest
	// is older, or a Nomad reading's stats Timestamp is, usage is stale and
	// nothing scales. Go duration. Default 5m.
	KeyMaxAge = "max_age"

	// PrefixFirst and PrefixSecond start every per-host key.
	PrefixFirst  = "first_"
	PrefixSecond = "second_"

	// Per-host keys. A host is found by KeyNodeID alone, or by any of
	// KeyNodeName, KeyNodePool and KeyNodeClass (all given must match, and
	// exactly one node must).
	KeyNodeID    = "node_id"
	KeyNodeName  = "node_name"
	KeyNodePool  = "node_pool"
	KeyNodeClass = "node_class"
	// KeyGroup: the task group of KeyJob on this host; may be empty when
	// the job has one group. Required with role "split".
	KeyGroup = "group"
	// KeyReplicaCPU and KeyReplicaMemory: one replica's expected demand
	// (MHz, MB); default the task group's request.
	KeyReplicaCPU    = "replica_cpu_mhz"
	KeyReplicaMemory = "replica_memory_mb"
	// KeyWantedReplicas: how many replicas ask to run (the admission
	// processor's filled demand slots); default 0 = every slot.
	KeyWantedReplicas = "wanted_replicas"
	// KeyModel: "builtin:admission", "builtin:capacity" or a model file
	// path. Default builtin:admission for the first host and
	// builtin:capacity for the second.
	KeyModel = "model"
	// Quota keys: count = clamp(min, max, rounding(amount x per_branch)).
	// Defaults: min 0, max the model's slot count, per_branch 1, rounding
	// "nearest" ("floor", "ceil").
	KeyMin       = "min"
	KeyMax       = "max"
	KeyPerBranch = "per_branch"
	KeyRounding  = "rounding"
	// KeyUsage: where the host's usage samples come from: "nomad"
	// (allocation or client stats, read every evaluation; the default) or
	// "apm" (the check's query result: CPU MHz summed over the workload's
	// replicas on this host). Capacity, requests and replicas always come
	// from Nomad. At most one host per check can use "apm".
	KeyUsage = "usage"
)

// Roles.
const (
	RoleFirst  = "first"
	RoleSecond = "second"
	RoleSplit  = "split"
)

// Usage sources.
const (
	UsageNomad = "nomad"
	UsageAPM   = "apm"
)

// Defaults.
const (
	DefaultWindow = 60
	DefaultMaxAge = 5 * time.Minute
	// MaxWindow bounds KeyWindow.
	MaxWindow = 100000
)

var globalKeys = []string{KeyRole, KeyNamespace, KeyJob, KeyWindow, KeyMaxAge}

var hostKeys = []string{KeyNodeID, KeyNodeName, KeyNodePool, KeyNodeClass, KeyGroup, KeyReplicaCPU, KeyReplicaMemory,
	KeyWantedReplicas, KeyModel, KeyMin, KeyMax, KeyPerBranch, KeyRounding, KeyUsage}

// StrategyKeys lists every key the strategy accepts.
func StrategyKeys() []string {
	keys := append([]string(nil), globalKeys...)
	for _, p := range []string{PrefixFirst, PrefixSecond} {
		for _, k := range hostKeys {
			keys = append(keys, p+k)
		}
	}
	return keys
}

// ConfigError names the configuration key that is wrong and why.
type ConfigError struct {
	Key    string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config %q: %s", e.Key, e.Reason) }

func cfgErr(key, format string, args ...any) error {
	return &ConfigError{Key: key, Reason: fmt.Sprintf(format, args...)}
}

type hostConfig struct {
	role  string // engine.RoleFirst / RoleSecond
	query nomadusage.Query
	model string
	quota *engine.Quota
	usage string
}

type strategyConfig struct {
	role          string
	first, second hostConfig
	window        int
	maxAge        time.Duration
}

func (c *strategyConfig) host(role string) *hostConfig {
	if role == engine.RoleFirst {
		return &c.first
	}
	return &c.second
}

// parseStrategyConfig validates a check's strategy config. defaultNamespace
// is the agent's nomad_namespace.
func parseStrategyConfig(m map[string]string, defaultNamespace string) (*strategyConfig, error) {
	known := map[string]bool{}
	for _, k := range StrategyKeys() {
		known[k] = true
	}
	var unknown []string
	for k := range m {
		if !known[k] && !strings.HasPrefix(k, "_nomad_autoscaler") {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, cfgErr(unknown[0], "unknown key (the strategy accepts %s)", strings.Join(StrategyKeys(), ", "))
	}
	c := &strategyConfig{role: strings.TrimSpace(m[KeyRole]), window: DefaultWindow, maxAge: DefaultMaxAge}
	switch c.role {
	case RoleFirst, RoleSecond, RoleSplit:
	case "":
		return nil, cfgErr(KeyRole, "is required: %q, %q or %q", RoleFirst, RoleSecond, RoleSplit)
	default:
		return nil, cfgErr(KeyRole, "is %q; it must be %q, %q or %q", c.role, RoleFirst, RoleSecond, RoleSplit)
	}
	if v, ok := m[KeyWindow]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > MaxWindow {
			return nil, cfgErr(KeyWindow, "is %q; it must be a whole number from 1 to %d", v, MaxWindow)
		}
		c.window = n
	}
	if v, ok := m[KeyMaxAge]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return nil, cfgErr(KeyMaxAge, "is %q; it must be a positive Go duration such as \"5m\"", v)
		}
		c.maxAge = d
	}
	ns := strings.TrimSpace(m[KeyNamespace])
	if ns == "" {
		ns = defaultNamespace
	}
	job := strings.TrimSpace(m[KeyJob])
	if c.role == RoleSplit && job == "" {
		return nil, cfgErr(KeyJob, "is required with role %q: the strategy reads each group's running replicas", RoleSplit)
	}
	for _, h := range []struct {
		prefix, role, defModel string
		dst                    *hostConfig
	}{
		{PrefixFirst, engine.RoleFirst, engine.DefaultFirstModel, &c.first},
		{PrefixSecond, engine.RoleSecond, engine.DefaultSecondModel, &c.second},
	} {
		if err := parseHost(m, h.prefix, h.role, h.defModel, ns, job, c.role, h.dst); err != nil {
			return nil, err
		}
	}
	if c.first.usage == UsageAPM && c.second.usage == UsageAPM {
		return nil, cfgErr(PrefixSecond+KeyUsage, "both hosts use %q, but a check has one query: read one host from Nomad", UsageAPM)
	}
	return c, nil
}

func parseHost(m map[string]string, prefix, role, defModel, ns, job, mode string, h *hostConfig) error {
	get := func(k string) (string, bool) {
		v, ok := m[prefix+k]
		return strings.TrimSpace(v), ok
	}
	h.role = role
	q := &h.query
	q.Namespace, q.Job = ns, job
	q.Host.NodeID, _ = get(KeyNodeID)
	q.Host.Name, _ = get(KeyNodeName)
	q.Host.Pool, _ = get(KeyNodePool)
	q.Host.Class, _ = get(KeyNodeClass)
	if q.Host.IsZero() {
		return cfgErr(prefix+KeyNodeID, "the %s host needs %s, or any of %s, %s and %s", role, prefix+KeyNodeID, prefix+KeyNodeName, prefix+KeyNodePool, prefix+KeyNodeClass)
	}
	if q.Host.NodeID != "" && (q.Host.Name != "" || q.Host.Pool != "" || q.Host.Class != "") {
		return cfgErr(prefix+KeyNodeID, "is given with a name, pool or class filter: give the node ID alone, or the filters")
	}
	q.Group, _ = get(KeyGroup)
	if q.Group != "" && job == "" {
		return cfgErr(prefix+KeyGroup, "is set without %q", KeyJob)
	}
	if mode == RoleSplit && q.Group == "" {
		return cfgErr(prefix+KeyGroup, "is required with role %q: it names the task group the host-quota target scales", RoleSplit)
	}
	var err error
	if q.ReplicaCPUDemandMHz, err = positive(m, prefix+KeyReplicaCPU, false); err != nil {
		return err
	}
	if job == "" && q.ReplicaCPUDemandMHz == 0 {
		return cfgErr(prefix+KeyReplicaCPU, "is required when no %q is set (there is no task group to take the request from)", KeyJob)
	}
	if q.ReplicaMemoryDemandMB, err = positive(m, prefix+KeyReplicaMemory, true); err != nil {
		return err
	}
	if v, ok := get(KeyWantedReplicas); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > engine.MaxQuotaCount {
			return cfgErr(prefix+KeyWantedReplicas, "is %q; it must be a whole number from 0 (every slot) to %d", v, engine.MaxQuotaCount)
		}
		q.WantedReplicas = n
	}
	q.Label = role
	h.model, _ = get(KeyModel)
	if h.model == "" {
		h.model = defModel
	}
	proc, err := engine.LoadSource(h.model)
	if err != nil {
		return cfgErr(prefix+KeyModel, "%v", err)
	}
	h.usage, _ = get(KeyUsage)
	switch h.usage {
	case "":
		h.usage = UsageNomad
	case UsageNomad, UsageAPM:
	default:
		return cfgErr(prefix+KeyUsage, "is %q; it must be %q or %q", h.usage, UsageNomad, UsageAPM)
	}
	return parseQuota(m, prefix, role, proc, h)
}

func parseQuota(m map[string]string, prefix, role string, proc *engine.Processor, h *hostConfig) error {
	_, hasMin := m[prefix+KeyMin]
	_, hasMax := m[prefix+KeyMax]
	_, hasPB := m[prefix+KeyPerBranch]
	_, hasR := m[prefix+KeyRounding]
	if !hasMin && !hasMax && !hasPB && !hasR {
		return nil // the engine's default quota for the model
	}
	slots := proc.CountableInputs()
	if role == engine.RoleSecond {
		slots = proc.CountableOutputs()
	}
	q := engine.DefaultQuota(slots)
	var err error
	if hasMin {
		if q.Min, err = wholeNumber(m, prefix+KeyMin); err != nil {
			return err
		}
	}
	if hasMax {
		if q.Max, err = wholeNumber(m, prefix+KeyMax); err != nil {
			return err
		}
	} else if q.Max < q.Min {
		return cfgErr(prefix+KeyMin, "is %d, above the model's default %s of %d: set %s as well", q.Min, prefix+KeyMax, q.Max, prefix+KeyMax)
	}
	if hasPB {
		v := strings.TrimSpace(m[prefix+KeyPerBranch])
		if q.PerBranch, err = strconv.ParseFloat(v, 64); err != nil {
			return cfgErr(prefix+KeyPerBranch, "is %q; it must be a number", v)
		}
	}
	if hasR {
		q.Rounding = strings.TrimSpace(m[prefix+KeyRounding])
	}
	if err := q.Validate(role); err != nil {
		var qe *engine.QuotaError
		if errors.As(err, &qe) {
			return cfgErr(prefix+qe.Field, "%s", qe.Reason)
		}
		return cfgErr(fmt.Sprintf("%s%s/%s%s/%s%s/%s%s", prefix, KeyMin, prefix, KeyMax, prefix, KeyPerBranch, prefix, KeyRounding), "%v", err)
	}
	h.quota = &q
	return nil
}

func wholeNumber(m map[string]string, key string) (int, error) {
	v := strings.TrimSpace(m[key])
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, cfgErr(key, "is %q; it must be a whole number", v)
	}
	return n, nil
}

// positive parses an optional number that must be > 0 (or >= 0 when
// zeroOK); absent is 0.
func positive(m map[string]string, key string, zeroOK bool) (float64, error) {
	v, ok := m[key]
	if !ok {
		return 0, nil
	}
	v = strings.TrimSpace(v)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || (f == 0 && !zeroOK) {
		want := "> 0"
		if zeroOK {
			want = ">= 0"
		}
		return 0, cfgErr(key, "is %q; it must be a finite number %s", v, want)
	}
	return f, nil
}

// canonical is a stable string form of a config map, to cache parses.
func canonical(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return b.String()
}
