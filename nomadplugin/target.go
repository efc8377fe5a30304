package nomadplugin

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/plugins/base"
	"github.com/hashicorp/nomad-autoscaler/plugins/target"
	"github.com/hashicorp/nomad-autoscaler/sdk"
	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
)

// TargetName is the target plugin's name.
const TargetName = "host-quota"

// Target configuration keys (the `config` map of a policy's
// `target "host-quota"` block).
const (
	// TargetKeyJob: the job whose two groups are scaled. Required.
	TargetKeyJob = "job"
	// TargetKeyNamespace: the job's namespace; default the agent's
	// nomad_namespace, else Nomad's default.
	TargetKeyNamespace = "namespace"
	// TargetKeyFirstGroup and TargetKeySecondGroup: the task groups placed
	// on the first and second host. Required, different.
	TargetKeyFirstGroup  = "first_group"
	TargetKeySecondGroup = "second_group"
	// TargetKeyDryRun: "true" records each decision as a scaling event with
	// a null count (nothing changes). Default "false".
	TargetKeyDryRun = "dry_run"
)

// Meta keys the target adds to the scaling events it writes and to Status.
const (
	// MetaDryRunCount is the count a dry run would have set.
	MetaDryRunCount = "activation.dry_run.count"
	// MetaGroupRunningPrefix + group name: the group's running count in
	// Status meta.
	MetaGroupRunningPrefix = "activation.running."
)

// deploymentBlocked is Nomad's answer to a scale request during a deployment.
const deploymentBlocked = "job scaling blocked due to active deployment"

// agentKeyDryRun is the agent's own target-config dry-run key.
const agentKeyDryRun = "dry-run"

var _ target.Target = (*Target)(nil)

// Target is the host-quota target plugin: it applies a split decision to
// the first and second task groups of a job. The two groups change in two
// writes (Nomad's scale endpoint takes one group), so they do not change
// atomically; see Scale.
type Target struct {
	logger    hclog.Logger
	mu        sync.Mutex
	client    *api.Client
	namespace string
	token     string // the agent's nomad_token, kept only to redact it
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

// SetConfig implements base.Base: it builds the Nomad API client from the
// agent's inherited nomad_* settings.
func (t *Target) SetConfig(config map[string]string) error {
	t.logger.Debug("set config", "keys", safeKeys(config))
	c, ns, token, err := nomadClient(config)
	if err != nil {
		return fmt.Errorf("%s: %w", TargetName, err)
	}
	t.mu.Lock()
	t.client, t.namespace, t.token = c, ns, token
	t.mu.Unlock()
	return nil
}

type targetConfig struct {
	job, namespace string
	groups         [2]string
	dryRun         bool
}

var targetKeys = map[string]bool{TargetKeyJob: true, TargetKeyNamespace: true, TargetKeyFirstGroup: true, TargetKeySecondGroup: true, TargetKeyDryRun: true}

// isAgentKey says whether the agent itself puts key into a plugin config:
// its dry-run switch, internal keys such as "_nomad_autoscaler_grpc_timeout",
// inherited nomad_* settings and the built-in Nomad target's keys.
func isAgentKey(k string) bool {
	return k == agentKeyDryRun || strings.HasPrefix(k, "_nomad_autoscaler") || strings.HasPrefix(k, "nomad_") ||
		k == "Job" || k == "Group" || k == "Namespace"
}

func (t *Target) parseConfig(m map[string]string) (*targetConfig, *api.Client, error) {
	for k := range m {
		if !targetKeys[k] && !isAgentKey(k) {
			return nil, nil, cfgErr(k, "unknown key (the target accepts %s, %s, %s, %s, %s)", TargetKeyJob, TargetKeyNamespace, TargetKeyFirstGroup, TargetKeySecondGroup, TargetKeyDryRun)
		}
	}
	t.mu.Lock()
	client, ns := t.client, t.namespace
	t.mu.Unlock()
	if client == nil {
		return nil, nil, fmt.Errorf("%s: no Nomad client: SetConfig was not called", TargetName)
	}
	c := &targetConfig{job: strings.TrimSpace(m[TargetKeyJob]), namespace: strings.TrimSpace(m[TargetKeyNamespace])}
	if c.namespace == "" {
		c.namespace = ns
	}
	if c.job == "" {
		return nil, nil, cfgErr(TargetKeyJob, "is required")
	}
	c.groups[0] = strings.TrimSpace(m[TargetKeyFirstGroup])
	c.groups[1] = strings.TrimSpace(m[TargetKeySecondGroup])
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
	return c, client, nil
}

func (t *Target) tokenValue() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.token
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
// An unknown job is no target (nil).
func (t *Target) Status(config map[string]string) (*sdk.TargetStatus, error) {
	st, err := t.status(config)
	// Nomad's error texts may echo request details: never pass the token on.
	return st, nomadconn.Redact(err, t.tokenValue())
}

func (t *Target) status(config map[string]string) (*sdk.TargetStatus, error) {
	c, client, err := t.parseConfig(config)
	if err != nil {
		return nil, err
	}
	q := &api.QueryOptions{Namespace: c.namespace}
	st, _, err := client.Jobs().ScaleStatus(c.job, q)
	if err != nil {
		if nomadconn.IsStatus(err, http.StatusNotFound) {
			t.logger.Debug("job not found: no target", "job", c.job)
			return nil, nil
		}
		return nil, fmt.Errorf("%s: read scale status of job %q: %w", TargetName, c.job, err)
	}
	dep, _, err := client.Jobs().LatestDeployment(c.job, q)
	if err != nil {
		return nil, fmt.Errorf("%s: read latest deployment of job %q: %w", TargetName, c.job, err)
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
	t.logger.Trace("status", "job", c.job, "ready", out.Ready, "count", out.Count, "stopped", st.JobStopped, "deployment", dep != nil && activeDeployment(dep))
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

// bounds are a host's quota [min, max] from action meta; without them a
// group may take any count >= 0.
func bounds(meta map[string]any, minKey, maxKey string) ([2]int64, error) {
	b := [2]int64{0, math.MaxInt32}
	lo, okLo, err := metaInt(meta, minKey)
	if err != nil {
		return b, err
	}
	hi, okHi, err := metaInt(meta, maxKey)
	if err != nil {
		return b, err
	}
	if okLo {
		b[0] = lo
	}
	if okHi {
		b[1] = hi
	}
	if b[0] > b[1] {
		return b, fmt.Errorf("meta %q is %d, above %q %d", minKey, b[0], maxKey, b[1])
	}
	return b, nil
}

// Split returns the two group counts for the agent's final count total:
// the strategy's split from meta when its sum is total. Otherwise (the
// agent clamped the sum to the policy's min/max, or the action came from
// the agent itself with no split) the total is shared in proportion to the
// split, or else to the groups' current counts, the first group taking the
// rounding (evenly when both are zero); then each group is kept within its
// host's quota (MetaFirstMin/Max, MetaSecondMin/Max, when the action
// carries them), the remainder moving to the other group. When no split
// of total fits both quotas it returns an error and no counts.
func Split(total int64, meta map[string]any, current [2]int64) ([2]int64, string, error) {
	f, okF, err := metaInt(meta, MetaFirstCount)
	if err != nil {
		return [2]int64{}, "", err
	}
	s, okS, err := metaInt(meta, MetaSecondCount)
	if err != nil {
		return [2]int64{}, "", err
	}
	var q [2][2]int64
	if q[0], err = bounds(meta, MetaFirstMin, MetaFirstMax); err != nil {
		return [2]int64{}, "", err
	}
	if q[1], err = bounds(meta, MetaSecondMin, MetaSecondMax); err != nil {
		return [2]int64{}, "", err
	}
	basis, how := [2]int64{f, s}, "strategy split"
	if !okF || !okS {
		basis, how = current, "no split in the action: current proportions"
	}
	if basis[0]+basis[1] == total {
		return basis, how, nil
	}
	if okF && okS {
		how = fmt.Sprintf("agent count %d differs from the split %d + %d: proportional within each host's quota", total, f, s)
	}
	if total < q[0][0]+q[1][0] || total > q[0][1]+q[1][1] {
		return [2]int64{}, "", fmt.Errorf("agent count %d cannot be split within the hosts' quotas (first [%d, %d], second [%d, %d]): "+
			"set the policy's min and max within [%d, %d]; no group was changed", total, q[0][0], q[0][1], q[1][0], q[1][1], q[0][0]+q[1][0], q[0][1]+q[1][1])
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
	second := total - first
	second = min(max(second, q[1][0]), q[1][1])
	first = total - second
	return [2]int64{first, second}, how, nil
}

// Scale implements target.Target. It applies the split to the two groups,
// honouring the agent's final Count (see Split). The growing group is
// written first, then the shrinking one, and a group already at its count
// is not written. The two writes are not atomic: if the second fails, the
// first group already has its new count, Scale returns the error, and the
// next evaluation (whose status sum then differs from the decision) writes
// the group still behind. Nomad's "blocked due to active deployment" is a
// no-op. With dry_run (or the agent's dry-run) it records one event per
// group with a null count and the count it would have set.
func (t *Target) Scale(action sdk.ScalingAction, config map[string]string) error {
	token := t.tokenValue()
	// The action comes from the strategy, which redacts; redact again so
	// that no scaling event written to Nomad can carry the token.
	action.Reason = nomadconn.RedactString(action.Reason, token)
	if token != "" {
		m := make(map[string]any, len(action.Meta))
		for k, v := range action.Meta {
			if str, ok := v.(string); ok {
				v = nomadconn.RedactString(str, token)
			}
			m[k] = v
		}
		action.Meta = m
	}
	return nomadconn.Redact(t.scale(action, config), token)
}

func (t *Target) scale(action sdk.ScalingAction, config map[string]string) error {
	c, client, err := t.parseConfig(config)
	if err != nil {
		return err
	}
	wq := &api.WriteOptions{Namespace: c.namespace}
	st, _, err := client.Jobs().ScaleStatus(c.job, &api.QueryOptions{Namespace: c.namespace})
	if err != nil {
		return fmt.Errorf("%s: read scale status of job %q: %w", TargetName, c.job, err)
	}
	var current [2]int64
	for i, g := range c.groups {
		gs, ok := st.TaskGroups[g]
		if !ok {
			return fmt.Errorf("%s: config %q: job %q has no task group %q", TargetName, groupKeys[i], c.job, g)
		}
		current[i] = int64(gs.Desired)
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
	counts, how, err := Split(total, action.Meta, current)
	if err != nil {
		return fmt.Errorf("%s: %w", TargetName, err)
	}
	t.logger.Debug("scale", "job", c.job, "total", total, "first", counts[0], "second", counts[1], "how", how, "dry_run", dry)
	if dry {
		for i, g := range c.groups {
			meta := copyMeta(action.Meta)
			meta[MetaDryRunCount] = counts[i]
			msg := fmt.Sprintf("dry run: would scale %s from %d to %d; %s", g, current[i], counts[i], action.Reason)
			if _, _, err := client.Jobs().Scale(c.job, g, nil, msg, action.Error, meta, wq); err != nil {
				return fmt.Errorf("%s: record dry-run event for group %q of job %q: %w", TargetName, g, c.job, err)
			}
		}
		return nil
	}
	order := []int{0, 1}
	if counts[1]-current[1] > counts[0]-current[0] {
		order = []int{1, 0}
	}
	done := []string{}
	for _, i := range order {
		if counts[i] == current[i] {
			continue
		}
		n := int(counts[i])
		_, _, err := client.Jobs().Scale(c.job, c.groups[i], &n, action.Reason, action.Error, action.Meta, wq)
		if err != nil {
			if strings.Contains(err.Error(), deploymentBlocked) {
				return sdk.NewTargetScalingNoOpError("%s: skipping job %s group %s (and the rest of this split) due to active deployment", TargetName, c.job, c.groups[i])
			}
			applied := "no group was changed"
			if len(done) > 0 {
				applied = "already changed: " + strings.Join(done, ", ") + "; the next evaluation finishes the split"
			}
			return fmt.Errorf("%s: scale group %q of job %q from %d to %d: %w (%s)", TargetName, c.groups[i], c.job, current[i], n, err, applied)
		}
		done = append(done, fmt.Sprintf("%s=%d", c.groups[i], n))
	}
	return nil
}

func copyMeta(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
