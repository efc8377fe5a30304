package nomadplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/plugins/base"
	"github.com/hashicorp/nomad-autoscaler/plugins/target"
	"github.com/hashicorp/nomad-autoscaler/sdk"
	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
)

// TargetName is the target plugin's name.
const TargetName = "host-quota"

// Target configuration keys (the `config` map of a policy's
// `target "host-quota"` block). The keys the agent itself gives a target
// of a Nomad policy source (Job, Group, Namespace) are defaults that these
// override: Job for job, Namespace for namespace, Group for first_group.
const (
	// TargetKeyJob: the job whose two groups are scaled. Required.
	TargetKeyJob = "job"
	// TargetKeyNamespace: the job's namespace; default the agent's Namespace
	// key, then its nomad_namespace, else Nomad's default. "*" is refused.
	TargetKeyNamespace = "namespace"
	// TargetKeyFirstGroup and TargetKeySecondGroup: the task groups placed
	// on the first and second host. Required, different.
	TargetKeyFirstGroup  = "first_group"
	TargetKeySecondGroup = "second_group"
	// TargetKeyDryRun: "true" records each decision as a scaling event with
	// a null count (nothing changes). Default "false".
	TargetKeyDryRun = "dry_run"
	// TargetKeyFirstMin, TargetKeyFirstMax, TargetKeySecondMin and
	// TargetKeySecondMax: each host's quota, used when an action carries
	// none (an action the agent makes itself, such as "current count below
	// the policy's min"); the strategy's actions carry their own.
	TargetKeyFirstMin  = "first_min"
	TargetKeyFirstMax  = "first_max"
	TargetKeySecondMin = "second_min"
	TargetKeySecondMax = "second_max"
)

// Keys the agent puts into a target's config.
const (
	agentKeyDryRun    = "dry-run"
	agentKeyJob       = sdk.TargetConfigKeyJob
	agentKeyGroup     = sdk.TargetConfigKeyTaskGroup
	agentKeyNamespace = sdk.TargetConfigKeyNamespace
	agentKeyGRPC      = "_nomad_autoscaler_grpc_timeout"
)

// Meta keys the target adds to the scaling events it writes and to Status.
const (
	// MetaDryRunCount is the count a dry run would have set.
	MetaDryRunCount = "activation.dry_run.count"
	// MetaGroupRunningPrefix + group name: the group's running count in
	// Status meta.
	MetaGroupRunningPrefix = "activation.running."
	// MetaPreviousCount and MetaNewCount: a group's count before and after
	// the split, in the scaling event the target records for the group.
	MetaPreviousCount = "activation.count.previous"
	MetaNewCount      = "activation.count.new"
	// MetaRegisteredIndex: the JobModifyIndex the split was registered
	// against (check-and-set).
	MetaRegisteredIndex = "activation.registered_at_index"
)

// ErrJobChanged: the job changed between the strategy's read and the
// target's write; nothing was written.
var ErrJobChanged = errors.New("job changed since it was read: not overwritten; the next evaluation decides again")

// deploymentBlocked is Nomad's answer to a count change during a deployment.
const deploymentBlocked = "job scaling blocked due to active deployment"

var _ target.Target = (*Target)(nil)

// Target is the host-quota target plugin: it applies a split decision to
// the first and second task groups of a job in one check-and-set job
// register (see Scale).
type Target struct {
	logger hclog.Logger
	mu     sync.Mutex
	conn   *nomadconn.Conn
	budget map[string]time.Duration
}

// NewTarget returns the target; logger is the one the plugin SDK gives.
func NewTarget(logger hclog.Logger) *Target {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Target{logger: logger}
}

// PluginInfo implements base.Base.
func (t *Target) PluginInfo() (*base.PluginInfo, error) {
	return &base.PluginInfo{Name: TargetName, PluginType: sdk.PluginTypeTarget}, nil
}

var targetPluginKeys = map[string]time.Duration{
	PluginKeyRequestTimeout: DefaultRequestTimeout,
	PluginKeyStatusTimeout:  DefaultStatusTimeout,
	PluginKeyScaleTimeout:   DefaultScaleTimeout,
}

// SetConfig implements base.Base: it connects to Nomad through nomadconn
// from the agent's inherited nomad_* settings and reads the plugin's
// timeouts.
func (t *Target) SetConfig(config map[string]string) error {
	t.logger.Debug("set config", "keys", safeKeys(config))
	pc, err := connect(config, targetPluginKeys)
	if err != nil {
		return fmt.Errorf("%s: %w", TargetName, err)
	}
	t.mu.Lock()
	t.conn, t.budget = pc.conn, pc.durations
	t.mu.Unlock()
	return nil
}

func (t *Target) connection() (*nomadconn.Conn, map[string]time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn, t.budget
}

type targetConfig struct {
	job, namespace string
	groups         [2]string
	dryRun         bool
	// quota is each host's quota from the target config; known[i] says
	// whether any bound of host i was given.
	quota [2][2]int64
	known [2]bool
}

var targetKeys = map[string]bool{TargetKeyJob: true, TargetKeyNamespace: true, TargetKeyFirstGroup: true, TargetKeySecondGroup: true,
	TargetKeyDryRun: true, TargetKeyFirstMin: true, TargetKeyFirstMax: true, TargetKeySecondMin: true, TargetKeySecondMax: true}

// isTargetAgentKey says whether the agent puts key into a target config:
// its dry-run switch, internal keys, inherited nomad_* settings and the
// built-in Nomad target's keys.
func isTargetAgentKey(k string) bool {
	return k == agentKeyDryRun || isAgentKey(k) || k == agentKeyJob || k == agentKeyGroup || k == agentKeyNamespace
}

func (t *Target) parseConfig(m map[string]string) (*targetConfig, *nomadconn.Conn, error) {
	for k := range m {
		if !targetKeys[k] && !isTargetAgentKey(k) {
			return nil, nil, cfgErr(k, "unknown key (the target accepts %s, %s, %s, %s, %s, %s, %s, %s and %s)", TargetKeyJob, TargetKeyNamespace,
				TargetKeyFirstGroup, TargetKeySecondGroup, TargetKeyDryRun, TargetKeyFirstMin, TargetKeyFirstMax, TargetKeySecondMin, TargetKeySecondMax)
		}
	}
	conn, _ := t.connection()
	if conn == nil {
		return nil, nil, fmt.Errorf("%s: no Nomad connection: SetConfig was not called", TargetName)
	}
	get := func(keys ...string) (string, string) {
		for _, k := range keys {
			if v := strings.TrimSpace(m[k]); v != "" {
				return v, k
			}
		}
		return "", ""
	}
	c := &targetConfig{}
	c.job, _ = get(TargetKeyJob, agentKeyJob)
	if c.job == "" {
		return nil, nil, cfgErr(TargetKeyJob, "is required")
	}
	ns, from := get(TargetKeyNamespace, agentKeyNamespace)
	if ns == "" {
		ns, from = conn.Namespace(), AgentKeyNomadNamespace
	}
	if ns == "*" {
		return nil, nil, cfgErr(TargetKeyNamespace, "is \"*\" (from %s): that names every namespace, and a job lives in one: set %s to the job's namespace", from, TargetKeyNamespace)
	}
	c.namespace = ns
	c.groups[0], _ = get(TargetKeyFirstGroup, agentKeyGroup)
	c.groups[1], _ = get(TargetKeySecondGroup)
	if c.groups[0] == "" {
		return nil, nil, cfgErr(TargetKeyFirstGroup, "is required")
	}
	if c.groups[1] == "" {
		return nil, nil, cfgErr(TargetKeySecondGroup, "is required")
	}
	if c.groups[0] == c.groups[1] {
		return nil, nil, cfgErr(TargetKeySecondGroup, "is %q, the same as %s: the two hosts need two groups", c.groups[1], TargetKeyFirstGroup)
	}
	if v, ok := m[TargetKeyDryRun]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, nil, cfgErr(TargetKeyDryRun, "is %q; it must be true or false", v)
		}
		c.dryRun = b
	}
	for i, h := range []struct{ role, minKey, maxKey string }{
		{engine.RoleFirst, TargetKeyFirstMin, TargetKeyFirstMax}, {engine.RoleSecond, TargetKeySecondMin, TargetKeySecondMax},
	} {
		var spec engine.QuotaSpec
		for _, kv := range []struct {
			key string
			dst **int
		}{{h.minKey, &spec.Min}, {h.maxKey, &spec.Max}} {
			v, ok := m[kv.key]
			if !ok {
				continue
			}
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return nil, nil, cfgErr(kv.key, "is %q; it must be a whole number", v)
			}
			*kv.dst = &n
			c.known[i] = true
		}
		if !c.known[i] {
			continue
		}
		// The engine's quota rules, with no model cap on max.
		q, err := spec.Resolve(h.role, engine.MaxQuotaCount)
		if err != nil {
			if _, part, field, ok := engine.FieldOf(err); ok && part == engine.PartQuota {
				return nil, nil, cfgErr(h.role+"_"+field, "%s", engine.Reason(err))
			}
			return nil, nil, err
		}
		c.quota[i] = [2]int64{int64(q.Min), int64(q.Max)}
	}
	return c, conn, nil
}

// groupKeys are the config keys naming the two groups, by index.
var groupKeys = [2]string{TargetKeyFirstGroup, TargetKeySecondGroup}

// activeDeployment reports whether d is a deployment still in progress.
func activeDeployment(d *api.Deployment) bool {
	if d == nil {
		return false
	}
	switch d.Status {
	case api.DeploymentStatusRunning, api.DeploymentStatusPaused, api.DeploymentStatusPending,
		api.DeploymentStatusBlocked, api.DeploymentStatusUnblocking, "initializing":
		return true
	}
	return false
}

// Status implements target.Target: ready unless the job is stopped or a
// deployment is in progress; the count is the two groups' running
// allocations; the newest scaling event of either group drives cooldown.
// An unknown job is no target (nil). Its Nomad reads share one deadline:
// status_timeout, and never more than nine tenths of the agent's gRPC
// deadline for the call. The error is redacted here, at the boundary.
func (t *Target) Status(config map[string]string) (*sdk.TargetStatus, error) {
	conn, _ := t.connection()
	st, err := t.status(config)
	return st, redactError(conn, err)
}

func (t *Target) status(config map[string]string) (*sdk.TargetStatus, error) {
	c, conn, err := t.parseConfig(config)
	if err != nil {
		return nil, err
	}
	_, budgets := t.connection()
	budget := budgets[PluginKeyStatusTimeout]
	if v, ok := config[agentKeyGRPC]; ok {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			budget = min(budget, d*9/10)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	client := conn.Client()
	q := (&api.QueryOptions{Namespace: c.namespace}).WithContext(ctx)
	st, _, err := client.Jobs().ScaleStatus(c.job, q)
	if err != nil {
		if nomadconn.IsStatus(err, http.StatusNotFound) {
			t.logger.Debug("job not found: no target", "job", c.job)
			return nil, nil
		}
		return nil, deadlineErr(ctx, PluginKeyStatusTimeout, budget, fmt.Sprintf("%s: read scale status of job %q", TargetName, c.job), err)
	}
	dep, _, err := client.Jobs().LatestDeployment(c.job, q)
	if err != nil {
		return nil, deadlineErr(ctx, PluginKeyStatusTimeout, budget, fmt.Sprintf("%s: read latest deployment of job %q", TargetName, c.job), err)
	}
	out := &sdk.TargetStatus{Ready: !st.JobStopped && !activeDeployment(dep), Meta: map[string]string{}}
	var last uint64
	for i, g := range c.groups {
		gs, ok := st.TaskGroups[g]
		if !ok {
			return nil, fmt.Errorf("%s: config %q: job %q has no task group %q", TargetName, groupKeys[i], c.job, g)
		}
		out.Count += int64(gs.Running)
		out.Meta[MetaGroupRunningPrefix+g] = strconv.Itoa(gs.Running)
		if len(gs.Events) > 0 && gs.Events[0].Time > last {
			last = gs.Events[0].Time
		}
	}
	if last > 0 {
		out.Meta[sdk.TargetStatusMetaKeyLastEvent] = strconv.FormatUint(last, 10)
	}
	t.logger.Trace("status", "job", c.job, "ready", out.Ready, "count", out.Count, "stopped", st.JobStopped, "deployment", activeDeployment(dep))
	return out, nil
}

// metaInt reads a count from action meta: over the agent's gRPC boundary
// numbers arrive as float64; in-process they may be ints.
func metaInt(meta map[string]any, key string) (int64, bool, error) {
	v, ok := meta[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case float32:
		f = float64(n)
	case int:
		return int64(n), true, checkCount(key, int64(n))
	case int64:
		return n, true, checkCount(key, n)
	case int32:
		return int64(n), true, checkCount(key, int64(n))
	case uint64:
		if n > 1<<53 {
			return 0, true, fmt.Errorf("meta %q is %d; too large", key, n)
		}
		return int64(n), true, nil
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			return 0, true, fmt.Errorf("meta %q is %q; want a whole number", key, n.String())
		}
		return i, true, checkCount(key, i)
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return 0, true, fmt.Errorf("meta %q is %q; want a whole number", key, n)
		}
		return i, true, checkCount(key, i)
	default:
		return 0, true, fmt.Errorf("meta %q is a %T; want a number", key, v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, true, fmt.Errorf("meta %q is %v; want a whole number", key, f)
	}
	return int64(f), true, checkCount(key, int64(f))
}

func checkCount(key string, n int64) error {
	if n < 0 {
		return fmt.Errorf("meta %q is %d; a count must be >= 0", key, n)
	}
	return nil
}

// Quota is each group's [min, max] count.
type Quota [2][2]int64

// Unbounded is the quota of groups without known bounds.
var Unbounded = Quota{{0, math.MaxInt32}, {0, math.MaxInt32}}

// metaQuota reads the hosts' quotas from action (or event) meta: bounds
// not given are unbounded; found says whether any was given.
func metaQuota(meta map[string]any) (Quota, bool, error) {
	q := Unbounded
	found := false
	for i, keys := range [2][2]string{{MetaFirstMin, MetaFirstMax}, {MetaSecondMin, MetaSecondMax}} {
		for j, k := range keys {
			v, ok, err := metaInt(meta, k)
			if err != nil {
				return q, found, err
			}
			if ok {
				q[i][j], found = v, true
			}
		}
		if q[i][0] > q[i][1] {
			return q, found, fmt.Errorf("meta %q is %d, above %q %d", keys[0], q[i][0], keys[1], q[i][1])
		}
	}
	return q, found, nil
}

// Split returns the two group counts for the agent's final count total,
// with each host's quota taken from the action's meta (unbounded where the
// meta gives none); see SplitWithin.
func Split(total int64, meta map[string]any, current [2]int64) ([2]int64, string, error) {
	q, _, err := metaQuota(meta)
	if err != nil {
		return [2]int64{}, "", err
	}
	return SplitWithin(total, meta, current, q)
}

// SplitWithin returns the two group counts for the agent's final count
// total, each within its host's quota q. The strategy's split from meta
// applies as is when its sum is total and both counts are within q.
// Otherwise (the agent clamped the sum to the policy's min/max, the action
// came from the agent itself with no split, or the split does not fit the
// quota) the total is shared in proportion to the split, or else to the
// groups' current counts, the first group taking the rounding (evenly when
// both are zero); then each group is kept within its quota, the remainder
// moving to the other group. When no split of total fits both quotas it
// returns an error and no counts. It never returns a count outside q.
func SplitWithin(total int64, meta map[string]any, current [2]int64, q Quota) ([2]int64, string, error) {
	f, okF, err := metaInt(meta, MetaFirstCount)
	if err != nil {
		return [2]int64{}, "", err
	}
	s, okS, err := metaInt(meta, MetaSecondCount)
	if err != nil {
		return [2]int64{}, "", err
	}
	for i := range q {
		if q[i][0] > q[i][1] || q[i][0] < 0 {
			return [2]int64{}, "", fmt.Errorf("quota of group %d is [%d, %d]: not a range of counts", i+1, q[i][0], q[i][1])
		}
	}
	if total < q[0][0]+q[1][0] || total > q[0][1]+q[1][1] {
		return [2]int64{}, "", fmt.Errorf("agent count %d cannot be split within the hosts' quotas (first [%d, %d], second [%d, %d]): "+
			"set the policy's min and max within [%d, %d]; no group was changed", total, q[0][0], q[0][1], q[1][0], q[1][1], q[0][0]+q[1][0], q[0][1]+q[1][1])
	}
	within := func(c [2]int64) bool {
		return c[0] >= q[0][0] && c[0] <= q[0][1] && c[1] >= q[1][0] && c[1] <= q[1][1]
	}
	basis, how := [2]int64{f, s}, "strategy split"
	if !okF || !okS {
		basis, how = current, "no split in the action: current proportions"
	}
	if basis[0]+basis[1] == total && within(basis) {
		return basis, how, nil
	}
	switch {
	case okF && okS && f+s != total:
		how = fmt.Sprintf("agent count %d differs from the split %d + %d: proportional within each host's quota", total, f, s)
	case okF && okS:
		how = fmt.Sprintf("the split %d + %d is outside the hosts' quotas: proportional within them", f, s)
	default:
		how += ", within each host's quota"
	}
	sum := basis[0] + basis[1]
	var first int64
	if sum == 0 {
		first = (total + 1) / 2
	} else {
		first = int64(math.Round(float64(total) * float64(basis[0]) / float64(sum)))
	}
	// Keep the first group in its quota, then the second in its quota by
	// moving the remainder; the range check above makes both fit.
	first = min(max(first, q[0][0]), q[0][1])
	second := min(max(total-first, q[1][0]), q[1][1])
	first = total - second
	return [2]int64{first, second}, how, nil
}

// Scale implements target.Target. It applies the split to the two groups,
// honouring the agent's final Count (see SplitWithin), each group within
// its host's quota: the action's (the strategy's meta), else the target
// config's first_min/first_max/second_min/second_max, else the newest
// scaling event of either group that carries the strategy's quota. An
// action with no split and no known quota is refused.
//
// The two counts change in one job register under check-and-set (Nomad's
// -check-index): at the JobModifyIndex the strategy read (meta
// activation.job_modify_index), else the one Scale read. A job changed in
// between is not overwritten (ErrJobChanged); a deployment in progress is a
// no-op. So the pair only ever moves from one decided state to the next.
// Then each changed group gets one scaling event (a count-less scale
// request) with its previous and new count, for history and cooldown.
// With dry_run (or the agent's dry-run) it records one event per group with
// a null count and the count it would have set. Everything Scale writes to
// Nomad and returns is redacted here, at the boundary.
func (t *Target) Scale(action sdk.ScalingAction, config map[string]string) error {
	conn, _ := t.connection()
	redactAction(conn, &action)
	return redactError(conn, t.scale(action, config))
}

func (t *Target) scale(action sdk.ScalingAction, config map[string]string) error {
	c, conn, err := t.parseConfig(config)
	if err != nil {
		return err
	}
	_, budgets := t.connection()
	budget := budgets[PluginKeyScaleTimeout]
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	client := conn.Client()
	call := func(what string, err error) error {
		return deadlineErr(ctx, PluginKeyScaleTimeout, budget, fmt.Sprintf("%s: %s", TargetName, what), err)
	}
	qo := (&api.QueryOptions{Namespace: c.namespace}).WithContext(ctx)
	wo := (&api.WriteOptions{Namespace: c.namespace}).WithContext(ctx)
	job, _, err := client.Jobs().Info(c.job, qo)
	if err != nil {
		return call(fmt.Sprintf("read job %q", c.job), err)
	}
	var groups [2]*api.TaskGroup
	var current [2]int64
	for i, g := range c.groups {
		for _, tg := range job.TaskGroups {
			if tg.Name != nil && *tg.Name == g {
				groups[i] = tg
			}
		}
		if groups[i] == nil {
			return fmt.Errorf("%s: config %q: job %q has no task group %q", TargetName, groupKeys[i], c.job, g)
		}
		if groups[i].Count != nil {
			current[i] = int64(*groups[i].Count)
		}
	}
	total := action.Count
	dry := c.dryRun || total == sdk.StrategyActionMetaValueDryRunCount
	if total == sdk.StrategyActionMetaValueDryRunCount {
		if n, ok, _ := metaInt(action.Meta, "nomad_autoscaler.dry_run.count"); ok {
			total = n
		} else {
			total = current[0] + current[1]
		}
	}
	if total < 0 {
		return fmt.Errorf("%s: action count %d < 0", TargetName, total)
	}
	q, source, err := t.quota(ctx, client, c, action.Meta)
	if err != nil {
		return call("host quotas", err)
	}
	_, hasF, _ := metaInt(action.Meta, MetaFirstCount)
	_, hasS, _ := metaInt(action.Meta, MetaSecondCount)
	if source == "" && !(hasF && hasS) {
		return fmt.Errorf("%s: the action (%q) carries no split and no host quota is known (none in the action, the target config or the groups' scaling events): "+
			"set %s/%s and %s/%s in the target config; no group was changed", TargetName, action.Reason, TargetKeyFirstMin, TargetKeyFirstMax, TargetKeySecondMin, TargetKeySecondMax)
	}
	counts, how, err := SplitWithin(total, action.Meta, current, q)
	if err != nil {
		return fmt.Errorf("%s: %w", TargetName, err)
	}
	if source != "" {
		how += " (quotas from " + source + ")"
	}
	t.logger.Debug("scale", "job", c.job, "total", total, "first", counts[0], "second", counts[1], "how", how, "dry_run", dry)
	if dry {
		for i, g := range c.groups {
			meta := copyMeta(action.Meta)
			meta[MetaDryRunCount] = counts[i]
			msg := fmt.Sprintf("dry run: would scale %s from %d to %d; %s", g, current[i], counts[i], action.Reason)
			if _, _, err := client.Jobs().Scale(c.job, g, nil, msg, action.Error, meta, wo); err != nil {
				return call(fmt.Sprintf("record dry-run event for group %q of job %q", g, c.job), err)
			}
		}
		return nil
	}
	if counts == current {
		t.logger.Debug("both groups already at the split: nothing to write", "job", c.job, "first", counts[0], "second", counts[1])
		return nil
	}
	dep, _, err := client.Jobs().LatestDeployment(c.job, qo)
	if err != nil {
		return call(fmt.Sprintf("read latest deployment of job %q", c.job), err)
	}
	if activeDeployment(dep) {
		return sdk.NewTargetScalingNoOpError("%s: skipping job %s: deployment %s is %s; neither group was changed", TargetName, c.job, dep.ID, dep.Status)
	}
	read := uint64(0)
	if job.JobModifyIndex != nil {
		read = *job.JobModifyIndex
	}
	index := read
	if n, ok, err := metaInt(action.Meta, MetaJobModifyIndex); err != nil {
		return fmt.Errorf("%s: %w", TargetName, err)
	} else if ok {
		index = uint64(n)
	}
	if index != read {
		return fmt.Errorf("%s: job %q: %w (the strategy read JobModifyIndex %d, the job is now at %d)", TargetName, c.job, ErrJobChanged, index, read)
	}
	for i := range groups {
		n := int(counts[i])
		groups[i].Count = &n
	}
	if _, _, err := client.Jobs().RegisterOpts(job, &api.RegisterOptions{EnforceIndex: true, ModifyIndex: index}, wo); err != nil {
		switch {
		case strings.Contains(strings.ToLower(err.Error()), "job modify index"):
			return fmt.Errorf("%s: job %q: %w (Nomad refused the register at JobModifyIndex %d: %v)", TargetName, c.job, ErrJobChanged, index, err)
		case strings.Contains(err.Error(), deploymentBlocked):
			return sdk.NewTargetScalingNoOpError("%s: skipping job %s due to active deployment; neither group was changed", TargetName, c.job)
		}
		return call(fmt.Sprintf("register job %q with %s=%d and %s=%d at JobModifyIndex %d; neither group was changed", c.job, c.groups[0], counts[0], c.groups[1], counts[1], index), err)
	}
	// One scaling event per changed group: history and cooldown.
	for i, g := range c.groups {
		if counts[i] == current[i] {
			continue
		}
		meta := copyMeta(action.Meta)
		meta[MetaPreviousCount], meta[MetaNewCount], meta[MetaRegisteredIndex] = current[i], counts[i], index
		// What will queue, for the counts applied (the agent may have
		// clamped the strategy's).
		for k, role := range [2]string{RoleFirst, RoleSecond} {
			if placeable, ok, err := metaInt(action.Meta, HostMeta(role, MetaPlaceable)); err == nil && ok {
				meta[HostMeta(role, MetaQueued)] = max(0, counts[k]-placeable)
			}
		}
		msg := fmt.Sprintf("%s %d -> %d (both groups in one job register at JobModifyIndex %d); %s", g, current[i], counts[i], index, action.Reason)
		if _, _, err := client.Jobs().Scale(c.job, g, nil, msg, action.Error, meta, wo); err != nil {
			return call(fmt.Sprintf("the split %s=%d, %s=%d is applied; recording the scaling event of group %q", c.groups[0], counts[0], c.groups[1], counts[1], g), err)
		}
	}
	return nil
}

// quota finds the hosts' quotas: the action's meta, the target config,
// the newest scaling event that carries them. source names where they came
// from ("" when nowhere: unbounded).
func (t *Target) quota(ctx context.Context, client *api.Client, c *targetConfig, meta map[string]any) (Quota, string, error) {
	q, found, err := metaQuota(meta)
	if err != nil {
		return q, "", err
	}
	if found {
		return q, "the action", nil
	}
	if c.known[0] || c.known[1] {
		q = Unbounded
		for i := range q {
			if c.known[i] {
				q[i] = c.quota[i]
			}
		}
		return q, "the target config", nil
	}
	st, _, err := client.Jobs().ScaleStatus(c.job, (&api.QueryOptions{Namespace: c.namespace}).WithContext(ctx))
	if err != nil {
		return q, "", fmt.Errorf("read the scaling events of job %q for the hosts' quotas: %w", c.job, err)
	}
	var newest *api.ScalingEvent
	for _, g := range c.groups {
		for k := range st.TaskGroups[g].Events {
			e := &st.TaskGroups[g].Events[k]
			if _, ok := e.Meta[MetaFirstMax]; ok && (newest == nil || e.Time > newest.Time) {
				newest = e
				break
			}
		}
	}
	if newest == nil {
		return Unbounded, "", nil
	}
	q, _, err = metaQuota(newest.Meta)
	if err != nil {
		return q, "", fmt.Errorf("the scaling event at %s: %w", time.Unix(0, int64(newest.Time)).UTC().Format(time.RFC3339), err)
	}
	return q, "the newest scaling event", nil
}

func copyMeta(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+3)
	for k, v := range m {
		out[k] = v
	}
	return out
}
