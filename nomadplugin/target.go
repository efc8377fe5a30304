package nomadplugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/plugins/base"
	"github.com/hashicorp/nomad-autoscaler/plugins/shared"
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
// override: Job for job, Namespace for namespace, Group for first_group in
// split mode and for group in single-group mode.
const (
	// TargetKeyJob: the job whose groups are scaled. Required.
	TargetKeyJob = "job"
	// TargetKeyNamespace: the job's namespace; default the agent's Namespace
	// key, then its nomad_namespace, else Nomad's default. "*" is refused.
	TargetKeyNamespace = "namespace"
	// TargetKeyFirstGroup and TargetKeySecondGroup (split mode): the task
	// groups placed on the first and second host, for a check with role
	// "split". Both required, different.
	TargetKeyFirstGroup  = "first_group"
	TargetKeySecondGroup = "second_group"
	// TargetKeyGroup (single-group mode): the one task group the action's
	// count applies to, for a check with role "first" or "second". Used
	// when second_group is not set; default the agent's Group key.
	TargetKeyGroup = "group"
	// TargetKeyDryRun: "true" records each decision as a scaling event with
	// a null count (nothing changes). Default "false".
	TargetKeyDryRun = "dry_run"
	// TargetKeyFirstMin, TargetKeyFirstMax, TargetKeySecondMin and
	// TargetKeySecondMax (split mode): each host's quota, used when an
	// action carries none (an action the agent makes itself, such as
	// "current count below the policy's min"); the strategy's actions carry
	// their own.
	TargetKeyFirstMin  = "first_min"
	TargetKeyFirstMax  = "first_max"
	TargetKeySecondMin = "second_min"
	TargetKeySecondMax = "second_max"
)

// Keys and meta the agent itself gives a target.
const (
	agentKeyDryRun    = "dry-run"
	agentKeyJob       = sdk.TargetConfigKeyJob
	agentKeyGroup     = sdk.TargetConfigKeyTaskGroup
	agentKeyNamespace = sdk.TargetConfigKeyNamespace
	// agentMetaDryRunCount is the count a dry-run action would have set
	// (the SDK's own name for it is unexported).
	agentMetaDryRunCount = "nomad_autoscaler.dry_run.count"
)

// Meta keys the target adds to the scaling events it writes and to Status.
const (
	// MetaDryRunCount is the count a dry run would have set.
	MetaDryRunCount = "activation.dry_run.count"
	// MetaGroupRunningPrefix + group name: the group's running count in
	// Status meta (Status's Count is the groups' desired counts).
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

// ErrJobNotFound is Status's and Scale's error for a job Nomad does not
// know (404) in the configured namespace. The agent's own nomad-target
// answers Status with no target (nil) instead, which stops the policy; an
// external plugin cannot: the agent's gRPC server dereferences the status
// without a check, and a nil one panics the plugin's process, which the
// agent never starts again.
var ErrJobNotFound = errors.New("job not found")

// Nomad's answers the target recognises.
const (
	// deploymentBlocked is Nomad's answer to a count change (a scale
	// request) during a deployment.
	deploymentBlocked = "job scaling blocked due to active deployment"
	// enforceIndexRefused starts Nomad's answer to a check-and-set write at
	// an index the job is no longer at (structs.RegisterEnforceIndexErrPrefix).
	enforceIndexRefused = "enforcing job modify index"
	// validationFailed is in Nomad's answer (a 500) to a register of a job
	// that fails validation ("Task group front validation failed: ...",
	// structs.Job.Validate), lower case.
	validationFailed = "validation failed"
	// jobMaxCountRefused is in Nomad's answer (a 500) to a scale or a
	// register whose groups' counts add up to more than the servers'
	// job_max_count (Nomad 1.11 and later, default 50000): "total count
	// was greater than configured job_max_count: N > M", checked before
	// anything is written (Job.Scale; the register's admission validator).
	jobMaxCountRefused = "greater than configured job_max_count"
	// deploymentStatusInitializing is a deployment Nomad is creating (the
	// api module has no constant for it).
	deploymentStatusInitializing = "initializing"
)

// registerRefusals are other answers (500s) Job.Register gives before
// it commits anything (in a single-region job), lower case: a priority
// outside the servers' job_max_priority (lowered since the job was
// registered), the job-submitter's legacy Consul token refused, the legacy Vault token
// workflow's checks (the register carries no token: GET /v1/job/:job
// never returns one), in the words of Nomad 1.6 to 1.9 ("Vault not
// enabled ..." before 1.7, "Vault \"default\" not enabled ..." since; "Vault
// token doesn't allow ...", "Passed Vault Token doesn't allow ..." in
// older releases), and the namespace check. Nothing was applied; most are a
// setup the next evaluation meets again (a Vault lookup may also fail
// while Vault is unreachable).
var registerRefusals = []string{
	"job priority must be between",
	"job-submitter consul token denied",
	"vault used in the job but missing vault token",
	"not enabled but used in the job",
	"failed to lookup vault token",
	"token doesn't allow access to the following policies",
	"mismatched request namespace in request",
}

// refusals500 are all the 500s that refusedByNomad reads as Nomad's
// refusals, lower case.
var refusals500 = append([]string{enforceIndexRefused, strings.ToLower(deploymentBlocked), validationFailed, jobMaxCountRefused}, registerRefusals...)

var _ target.Target = (*Target)(nil)

// Target is the host-quota target plugin: in split mode it applies a split
// decision to the first and second task groups of a job in one
// check-and-set job register; in single-group mode it applies a per-host
// count to one group with a check-and-set scale request (see Scale).
type Target struct {
	logger hclog.Logger
	mu     sync.Mutex
	conn   *nomadconn.Conn
	budget map[string]time.Duration
	// held is why each job (namespace/job) was last found not ready, so
	// that a hold is logged once when it starts or changes and once when
	// it ends (the agent says nothing while it skips a policy).
	held map[string]string
	// fights are the groups (namespace/job/group) whose recent scaling
	// events show policies of both modes at work, so that it is logged
	// once when it starts and once when it ends.
	fights map[string]string
	// kinds is, per job, whether the target scales it (scalable's
	// error) as read at a modify index: Status reads the job again only
	// when its index moved (checkKind).
	kinds map[string]jobKind
}

// jobKind is a job's scalable verdict at the JobModifyIndex it was read at.
type jobKind struct {
	index uint64
	err   error
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
// from the agent's inherited nomad_* settings and reads the plugin's keys.
func (t *Target) SetConfig(config map[string]string) error {
	t.logger.Debug("set config", "keys", safeKeys(config))
	pc, err := connect(config, targetPluginKeys)
	if err != nil {
		return fmt.Errorf("%s: %w", TargetName, err)
	}
	pc.warn(t.logger)
	t.mu.Lock()
	old := t.conn
	t.conn, t.budget = pc.conn, pc.durations
	t.mu.Unlock()
	// (as the strategy: the old connection's idle keep-alives close now)
	if old != nil {
		old.CloseIdleConnections()
	}
	return nil
}

// targetSession is one call's view of the plugin: its connection and
// budgets, taken once.
type targetSession struct {
	conn   *nomadconn.Conn
	budget map[string]time.Duration
}

func (t *Target) session() (*targetSession, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn == nil {
		return nil, fmt.Errorf("%s: no Nomad connection: SetConfig was not called", TargetName)
	}
	return &targetSession{conn: t.conn, budget: t.budget}, nil
}

type targetConfig struct {
	job, namespace string
	// groups are the two groups of split mode; in single-group mode
	// groups[0] is the group and single is true.
	groups [2]string
	single bool
	dryRun bool
	// quota is each host's quota from the target config; known[i] says
	// whether any bound of host i was given.
	quota [2][2]int64
	known [2]bool
	// maxSet: the config gave the host's max key itself (not resolved
	// from a min alone).
	maxSet [2]bool
}

// names are the groups the config scales.
func (c *targetConfig) names() []string {
	if c.single {
		return c.groups[:1]
	}
	return c.groups[:]
}

var targetKeys = []string{TargetKeyJob, TargetKeyNamespace, TargetKeyFirstGroup, TargetKeySecondGroup, TargetKeyGroup,
	TargetKeyDryRun, TargetKeyFirstMin, TargetKeyFirstMax, TargetKeySecondMin, TargetKeySecondMax}

// isTargetAgentKey says whether the agent puts key into a policy's target
// config: its dry-run switch, its internal keys (the gRPC timeout) and the
// built-in Nomad target's keys. The agent's nomad_* settings reach a
// plugin through SetConfig only, never through a policy.
func isTargetAgentKey(k string) bool {
	return k == agentKeyDryRun || strings.HasPrefix(k, agentInternalPrefix) || k == agentKeyJob || k == agentKeyGroup || k == agentKeyNamespace
}

// configValue is the first non-empty value of keys in m, and its key.
func configValue(m map[string]string, keys ...string) (string, string) {
	for _, k := range keys {
		if v := strings.TrimSpace(m[k]); v != "" {
			return v, k
		}
	}
	return "", ""
}

func (s *targetSession) parseConfig(m map[string]string) (*targetConfig, error) {
	c, err := s.readConfig(m)
	if err != nil && !strings.HasPrefix(err.Error(), TargetName+":") {
		err = fmt.Errorf("%s: %w", TargetName, err)
	}
	return c, err
}

// readConfig is parseConfig without the plugin's name on its errors.
func (s *targetSession) readConfig(m map[string]string) (*targetConfig, error) {
	for k := range m {
		switch {
		case slices.Contains(targetKeys, k) || isTargetAgentKey(k):
		case strings.HasPrefix(k, agentSettingPrefix):
			return nil, cfgErr(k, "is an agent setting: the agent gives a plugin its nomad_* settings from the target block of its own configuration, never from a policy, so here it would be ignored; set %s for the job's namespace", TargetKeyNamespace)
		default:
			return nil, cfgErr(k, "unknown key%s (the target accepts %s)", didYouMean(k, targetKeys), strings.Join(targetKeys, ", "))
		}
	}
	// The agent makes an action a dry run only for exactly "true"; any
	// other value scales for real, whatever it seems to say.
	if v, ok := m[agentKeyDryRun]; ok && v != "true" && v != "false" {
		return nil, cfgErr(agentKeyDryRun, "is %q; the agent reads only \"true\" (a dry run) or \"false\", and would scale for real on this value: write true or false, or use %s", v, TargetKeyDryRun)
	}
	c := &targetConfig{}
	if c.job, _ = configValue(m, TargetKeyJob, agentKeyJob); c.job == "" {
		return nil, cfgErr(TargetKeyJob, "is required")
	}
	if err := refuseJobPattern(TargetKeyJob, c.job); err != nil {
		return nil, err
	}
	ns, from := configValue(m, TargetKeyNamespace, agentKeyNamespace)
	if ns == "" {
		ns, from = s.conn.Namespace(), AgentKeyNomadNamespace
	}
	if ns == "*" {
		return nil, cfgErr(TargetKeyNamespace, "is \"*\" (from %s): that names every namespace, and a job lives in one: set %s to the job's namespace", from, TargetKeyNamespace)
	}
	c.namespace = ns
	if err := c.parseGroups(m); err != nil {
		return nil, err
	}
	if v, ok := m[TargetKeyDryRun]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, cfgErr(TargetKeyDryRun, "is %q; it must be true or false", v)
		}
		c.dryRun = b
	}
	return c, c.parseQuotas(m)
}

// parseGroups reads the mode and its groups: split mode with second_group,
// else single-group mode.
func (c *targetConfig) parseGroups(m map[string]string) error {
	group, _ := configValue(m, TargetKeyGroup)
	first, _ := configValue(m, TargetKeyFirstGroup)
	second, _ := configValue(m, TargetKeySecondGroup)
	switch {
	case group != "" && (first != "" || second != ""):
		return cfgErr(TargetKeyGroup, "is set with %s/%s: set %s alone (single-group mode, a check with role %q or %q) or %s and %s (split mode, role %q)",
			TargetKeyFirstGroup, TargetKeySecondGroup, TargetKeyGroup, RoleFirst, RoleSecond, TargetKeyFirstGroup, TargetKeySecondGroup, RoleSplit)
	case second == "" && first != "":
		return cfgErr(TargetKeySecondGroup, "is required with %s (split mode); for one group set %s instead", TargetKeyFirstGroup, TargetKeyGroup)
	case second == "":
		c.single = true
		if c.groups[0], _ = configValue(m, TargetKeyGroup, agentKeyGroup); c.groups[0] == "" {
			return cfgErr(TargetKeyGroup, "is required: set %s (one group) or %s and %s (split mode)", TargetKeyGroup, TargetKeyFirstGroup, TargetKeySecondGroup)
		}
		return nil
	}
	if first == "" {
		first, _ = configValue(m, agentKeyGroup)
	}
	c.groups = [2]string{first, second}
	if first == "" {
		return cfgErr(TargetKeyFirstGroup, "is required")
	}
	if first == second {
		return cfgErr(TargetKeySecondGroup, "is %q, the same as %s: the two hosts need two groups", second, TargetKeyFirstGroup)
	}
	return nil
}

// parseQuotas reads the hosts' quotas of split mode, judged by the
// engine's quota rules with no model cap on max.
func (c *targetConfig) parseQuotas(m map[string]string) error {
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
			if c.single {
				return cfgErr(kv.key, "is a split-mode key; in single-group mode the policy's min and max bound the group")
			}
			n, err := wholeNumber(strings.TrimSpace(v))
			if err != nil {
				return cfgErr(kv.key, "is %q; it must be a whole number", v)
			}
			*kv.dst = &n
			c.known[i] = true
			if kv.key == h.maxKey {
				c.maxSet[i] = true
			}
		}
		if !c.known[i] {
			continue
		}
		q, err := spec.Resolve(h.role, engine.MaxQuotaCount)
		if err != nil {
			if _, part, field, ok := engine.FieldOf(err); ok && part == engine.PartQuota {
				return cfgErr(h.role+"_"+field, "%s", engine.Reason(err))
			}
			return err
		}
		c.quota[i] = [2]int64{int64(q.Min), int64(q.Max)}
	}
	return nil
}

// checkRole refuses an action from a check of another mode: a split's sum
// applied to one group, or one host's count split over two.
func (c *targetConfig) checkRole(meta map[string]any) error {
	v, present := meta[MetaRole]
	if !present {
		return nil // the agent's own action
	}
	role, _ := v.(string)
	switch {
	case c.single && (role == RoleFirst || role == RoleSecond), !c.single && role == RoleSplit:
		return nil
	case c.single:
		return fmt.Errorf("%s: the action comes from a check with role %v: its count is the sum of both hosts, and the target is in single-group mode (%s = %q); "+
			"scale a split with %s and %s; no group was changed", TargetName, v, TargetKeyGroup, c.groups[0], TargetKeyFirstGroup, TargetKeySecondGroup)
	}
	return fmt.Errorf("%s: the action comes from a check with role %v: its count is one host's, and the target is in split mode (%s, %s); "+
		"scale one group with %s; no group was changed", TargetName, v, TargetKeyFirstGroup, TargetKeySecondGroup, TargetKeyGroup)
}

// checkTarget refuses an action decided for another job, or a host's
// count decided for another group than the one the target would write it
// to (a policy whose target block and strategy name different groups, or
// name them in the other order). The agent's own actions carry neither.
func (c *targetConfig) checkTarget(meta map[string]any) error {
	if job, _ := meta[MetaJob].(string); job != "" && job != c.job {
		return fmt.Errorf("%s: the action was decided for job %q (the strategy's %s), and the target writes job %q: set both to the same job; no group was changed",
			TargetName, job, KeyJob, c.job)
	}
	if ns, _ := meta[MetaNamespace].(string); ns != "" && ns != namespaceName(c.namespace) {
		return fmt.Errorf("%s: the action was decided for job %q in namespace %q (the strategy's %s), and the target writes it in namespace %q (%s): "+
			"set both to the job's namespace; no group was changed", TargetName, c.job, ns, KeyNamespace, namespaceName(c.namespace), TargetKeyNamespace)
	}
	roles := []string{RoleFirst, RoleSecond}
	keys := []string{TargetKeyFirstGroup, TargetKeySecondGroup}
	if c.single {
		role, _ := meta[MetaRole].(string)
		roles, keys = []string{role}, []string{TargetKeyGroup}
	}
	for i, role := range roles {
		if g, _ := meta[HostMeta(role, MetaGroup)].(string); g != "" && g != c.groups[i] {
			return fmt.Errorf("%s: the %s host's count was decided for group %q (the strategy's %s%s), and the target would write it to group %q (%s): "+
				"name the same group in both; no group was changed", TargetName, role, g, role+"_", KeyGroup, c.groups[i], keys[i])
		}
	}
	return nil
}

// namespaceName is ns as Nomad names it: "" is its default namespace.
func namespaceName(ns string) string {
	if ns == "" {
		return api.DefaultNamespace
	}
	return ns
}

// activeDeployment reports whether d is a deployment of this incarnation
// of the job (created at jobCreateIndex) still in progress.
func activeDeployment(d *api.Deployment, jobCreateIndex uint64) bool {
	if d == nil || d.JobCreateIndex != jobCreateIndex {
		return false
	}
	switch d.Status {
	case api.DeploymentStatusRunning, api.DeploymentStatusPaused, api.DeploymentStatusPending,
		api.DeploymentStatusBlocked, api.DeploymentStatusUnblocking, deploymentStatusInitializing:
		return true
	}
	return false
}

// Status implements target.Target: an error for a job every Scale refuses
// for its kind (checkKind); ready unless the job is stopped or a
// deployment is in progress; the count is the groups' desired counts (the
// count the strategy plans from and the agent compares its action with;
// queued allocations included), each group's running count in meta; the
// newest scaling event of the groups drives cooldown. An unknown job is an
// error (ErrJobNotFound), never a nil status (see ErrJobNotFound). Its
// Nomad reads share one deadline: status_timeout, and
// never more than nine tenths of the agent's gRPC deadline for the call.
func (t *Target) Status(config map[string]string) (*sdk.TargetStatus, error) {
	s, err := t.session()
	if err != nil {
		return nil, err
	}
	c, err := s.parseConfig(config)
	if err != nil {
		return nil, err
	}
	budget, budgetKey := s.budget[PluginKeyStatusTimeout], PluginKeyStatusTimeout
	if d, err := time.ParseDuration(config[shared.PluginConfigKeyGRPCTimeout]); err == nil && d > 0 && d*9/10 < budget {
		// The agent's own deadline is the shorter: name it, not a
		// status_timeout the operator did not set that short (a soak
		// trial looked for one).
		budget, budgetKey = d*9/10, fmt.Sprintf("%s (nine tenths of the agent's gRPC deadline %s, shorter than %s %s)", PluginKeyStatusTimeout, d, PluginKeyStatusTimeout, s.budget[PluginKeyStatusTimeout])
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	client := s.conn.Client()
	q := (&api.QueryOptions{Namespace: c.namespace}).WithContext(ctx)
	st, _, err := client.Jobs().ScaleStatus(c.job, q)
	if nomadconn.IsStatus(err, http.StatusNotFound) {
		return nil, t.statusNotFound(c)
	}
	if err != nil {
		return nil, deadlineErr(ctx, budgetKey, budget, fmt.Sprintf("%s: read scale status of job %q", TargetName, c.job), err)
	}
	if err := t.checkKind(ctx, client, c, st.JobModifyIndex); err != nil {
		if errors.Is(err, errNotScalable) || errors.Is(err, ErrJobNotFound) {
			return nil, err
		}
		return nil, deadlineErr(ctx, budgetKey, budget, fmt.Sprintf("%s: read job %q", TargetName, c.job), err)
	}
	dep, _, err := client.Jobs().LatestDeployment(c.job, q)
	if err != nil {
		return nil, deadlineErr(ctx, budgetKey, budget, fmt.Sprintf("%s: read latest deployment of job %q", TargetName, c.job), err)
	}
	out, err := c.status(st)
	if err != nil {
		return nil, err
	}
	why := holdReason(st, dep)
	out.Ready = why == ""
	t.logger.Trace("status", "job", c.job, "ready", out.Ready, "count", out.Count, "stopped", st.JobStopped)
	t.logHold(namespaceName(c.namespace)+"/"+c.job, why)
	since := uint64(time.Now().Add(-fightWindow).UnixNano())
	for _, g := range c.names() {
		t.logFight(namespaceName(c.namespace)+"/"+c.job+"/"+g, modeSwitches(st.TaskGroups[g].Events, since))
	}
	return out, nil
}

// statusNotFound is Status's error for a job Nomad answers 404 for; the
// job's hold and fights are forgotten.
func (t *Target) statusNotFound(c *targetConfig) error {
	t.forgetHold(namespaceName(c.namespace) + "/" + c.job)
	return fmt.Errorf("%s: %w: %q in namespace %q (Nomad answered 404): nothing to scale; the policy is read again on its next evaluation, so it resumes once the job is registered", TargetName, ErrJobNotFound, c.job, namespaceName(c.namespace))
}

// checkKind refuses, in Status, a job every Scale would refuse for its
// kind (batch, system, periodic, parameterized, multiregion: scalable), so
// that a policy pointed at one fails at every evaluation from the first,
// not only once its strategy decides a change. The job is read again only
// when its modify index moved since (index: the scale status's
// JobModifyIndex, which Nomad fills with the job's ModifyIndex, so a
// change of the job's status moves it too: an extra read, never a stale
// verdict).
func (t *Target) checkKind(ctx context.Context, client *api.Client, c *targetConfig, index uint64) error {
	key := namespaceName(c.namespace) + "/" + c.job
	t.mu.Lock()
	k, ok := t.kinds[key]
	t.mu.Unlock()
	if ok && k.index == index {
		return k.err
	}
	job, err := readRawJob(ctx, client, c.namespace, c.job)
	if nomadconn.IsStatus(err, http.StatusNotFound) {
		return t.statusNotFound(c) // purged between the two reads
	}
	if err != nil {
		return err
	}
	if err = job.scalable(); err != nil {
		err = fmt.Errorf("%s: %w; every scaling action would be refused: point the policy at a service job's groups", TargetName, err)
	}
	t.mu.Lock()
	if t.kinds == nil {
		t.kinds = map[string]jobKind{}
	}
	t.kinds[key] = jobKind{index: index, err: err}
	t.mu.Unlock()
	return err
}

// holdReason is why a job is not ready to scale: stopped, or a deployment
// of this incarnation in progress ("" when it is ready).
func holdReason(st *api.JobScaleStatusResponse, dep *api.Deployment) string {
	switch {
	case st.JobStopped:
		return "the job is stopped"
	case activeDeployment(dep, st.JobCreateIndex):
		why := fmt.Sprintf("deployment %s is %s", shortID(dep.ID), dep.Status)
		if dep.StatusDescription != "" {
			why += " (" + dep.StatusDescription + ")"
		}
		return why
	}
	return ""
}

// shortID is the first 8 characters of a Nomad ID, as its CLI shows them.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// forgetHold drops a job's hold and its groups' fights without a word (the
// job is gone: its policies fail on that instead).
func (t *Target) forgetHold(job string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.held, job)
	delete(t.kinds, job)
	for g := range t.fights {
		if strings.HasPrefix(g, job+"/") {
			delete(t.fights, g)
		}
	}
}

// logHold logs, at info level, when a job's hold starts or changes and
// when it ends: the agent skips a policy whose target is not ready with a
// trace line only, so a deployment that never finishes would otherwise
// stop a policy in silence.
func (t *Target) logHold(job, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := swapState(&t.held, job, why)
	switch why {
	case prev:
	case "":
		t.logger.Info("ready to scale again", "job", job, "was", prev)
	default:
		t.logger.Info("not ready to scale: the agent skips the job's policies until this ends", "job", job, "why", why)
	}
}

// swapState sets key's state in *m to why ("" deletes it, and a nil map is
// made on first use) and returns the state it had. Callers hold t.mu.
func swapState(m *map[string]string, key, why string) (prev string) {
	prev = (*m)[key]
	switch {
	case why == "":
		delete(*m, key)
	case *m == nil:
		*m = map[string]string{key: why}
	default:
		(*m)[key] = why
	}
	return prev
}

// fightWindow is how far back Status reads a group's scaling events for
// policies of both modes.
const fightWindow = time.Hour

// Modes of the policy that wrote a scaling event (see eventMode).
const (
	modeSplit   = "a split-mode policy (role split)"
	modePerHost = "a per-host policy (role first or second)"
)

// eventMode is the mode of the policy whose action wrote a scaling event:
// "" for an event no activation check decided (the agent's own action, a
// person's nomad job scale) and for a dry run's (it changed nothing).
func eventMode(e api.ScalingEvent) string {
	for _, k := range []string{MetaDryRunCount, agentMetaDryRunCount} {
		// (this target's dry runs, and the agent's through any target,
		// such as the built-in nomad-target)
		if _, dry := e.Meta[k]; dry {
			return ""
		}
	}
	switch role, _ := e.Meta[MetaRole].(string); role {
	case RoleSplit:
		return modeSplit
	case RoleFirst, RoleSecond:
		return modePerHost
	}
	return ""
}

// modeSwitches counts how often a group's scaling events since since
// (Nomad's newest first) change from one mode's policy to the other's.
// One change is a move from one mode to the other; two or more are
// policies of both modes scaling the group, each undoing the other's count.
func modeSwitches(events []api.ScalingEvent, since uint64) int {
	n, last := 0, ""
	for _, e := range events {
		if e.Time < since {
			break
		}
		m := eventMode(e)
		if m == "" {
			continue
		}
		if last != "" && m != last {
			n++
		}
		last = m
	}
	return n
}

// logFight warns once when it starts, and logs at info once when it ends,
// about a group that policies of both modes scale: the docs say one mode
// per job, and nothing else would tell the two apart from a workload that
// flaps. It ends when the group's events of the window show one mode (a
// single change, as the older events leave the window, keeps it going).
func (t *Target) logFight(group string, switches int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := t.fights[group]
	why := ""
	switch {
	case switches >= 2:
		why = fmt.Sprintf("%d changes between %s and %s in the last %s", switches, modeSplit, modePerHost, fightWindow)
	case switches == 1 && prev != "":
		why = prev
	}
	swapState(&t.fights, group, why)
	switch {
	case why == "" && prev != "":
		t.logger.Info("the group's scaling events show one mode again", "group", group)
		return
	case why == "" || prev != "":
		return
	}
	t.logger.Warn("policies of both modes scale this group in turn, each undoing the other's count (or the mode was changed and changed back): keep one mode per job (split mode, or per-host policies)",
		"group", group, "events", why)
}

// status is the groups' desired counts, running counts and newest event.
func (c *targetConfig) status(st *api.JobScaleStatusResponse) (*sdk.TargetStatus, error) {
	out := &sdk.TargetStatus{Meta: map[string]string{}}
	var last uint64
	for i, g := range c.names() {
		gs, ok := st.TaskGroups[g]
		if !ok {
			return nil, fmt.Errorf("%s: config %q: job %q has no task group %q", TargetName, c.groupKey(i), c.job, g)
		}
		out.Count += int64(gs.Desired)
		out.Meta[MetaGroupRunningPrefix+g] = strconv.Itoa(gs.Running)
		if len(gs.Events) > 0 && gs.Events[0].Time > last {
			last = gs.Events[0].Time
		}
	}
	if last > 0 {
		out.Meta[sdk.TargetStatusMetaKeyLastEvent] = strconv.FormatUint(last, 10)
	}
	return out, nil
}

// groupKey is the config key naming the i-th group.
func (c *targetConfig) groupKey(i int) string {
	if c.single {
		return TargetKeyGroup
	}
	return [2]string{TargetKeyFirstGroup, TargetKeySecondGroup}[i]
}

// Scale implements target.Target.
//
// Split mode applies the split to the two groups, honouring the agent's
// final Count (see SplitWithin), each group within its host's quota: the
// action's (the strategy's meta), else the target config's
// first_min/first_max/second_min/second_max, else the newest scaling event
// of either group that carries the strategy's quota. An action with no
// split and no known quota is refused. The two counts change in one job
// register under check-and-set (Nomad's -check-index): the job as Nomad
// answered it, every field kept but the two counts, at the JobModifyIndex
// the strategy read (meta activation.job_modify_index), else the one Scale
// read. A job changed in between is not overwritten (ErrJobChanged); a
// deployment in progress, or a job stopped since Status, writes nothing and
// returns nil, logged as skipped (see scale). Then each changed group gets one
// scaling event (a count-less scale request) with its previous and new
// count, for history and cooldown; a failed event is logged, not returned
// (the split is applied).
//
// Single-group mode applies the action's count to the group with one scale
// request at the same JobModifyIndex (Nomad refuses it if the job changed),
// never outside the host's quota the action carries.
//
// An action whose activation.role is of the other mode is refused. With
// dry_run (or the agent's dry-run) it records one event per group with a
// null count and the count it would have set. The action it writes to
// Nomad is redacted first: it is the only text Scale writes that did not
// come through nomadconn.
func (t *Target) Scale(action sdk.ScalingAction, config map[string]string) error {
	err := t.scale(action, config)
	var skipped *sdk.TargetScalingNoOpError
	if errors.As(err, &skipped) {
		t.logger.Info("scaling action skipped", "reason", skipped.Error())
		return nil
	}
	return err
}

// scale is Scale with its no-ops (a stopped job, a deployment in
// progress) as *sdk.TargetScalingNoOpError. Scale answers them with nil:
// the agent knows a skipped action only by that error's type, which it
// never sees from a plugin in its own process (across gRPC every error is
// a status error, so a no-op would read as a failed scale: an error log,
// scale.invoke.error_count and a retried evaluation). With nil the agent
// counts a scale and starts the policy's cooldown; the plugin's log says
// why nothing was written.
func (t *Target) scale(action sdk.ScalingAction, config map[string]string) error {
	s, err := t.session()
	if err != nil {
		return err
	}
	c, err := s.parseConfig(config)
	if err != nil {
		return err
	}
	if err := c.checkRole(action.Meta); err != nil {
		return err
	}
	if err := c.checkTarget(action.Meta); err != nil {
		return err
	}
	redactAction(s.conn, &action)
	budget := s.budget[PluginKeyScaleTimeout]
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	w := &scaleCall{t: t, s: s, c: c, ctx: ctx, budget: budget, client: s.conn.Client(), action: action}
	w.qo = (&api.QueryOptions{Namespace: c.namespace}).WithContext(ctx)
	w.wo = (&api.WriteOptions{Namespace: c.namespace}).WithContext(ctx)
	if c.single {
		return w.scaleGroup()
	}
	return w.scaleSplit()
}

// redactAction replaces every secret of the connection in the action's
// reason and meta: its keys and its strings at any depth (meta decoded
// from JSON nests maps and lists).
func redactAction(conn *nomadconn.Conn, a *sdk.ScalingAction) {
	a.Reason = conn.RedactString(a.Reason)
	if m, ok := redactValue(conn, a.Meta).(map[string]any); ok && a.Meta != nil {
		a.Meta = m
	}
}

// redactValue is v with every secret replaced in its strings, keys
// included; containers are copied, never changed in place. Meta that
// crossed the agent's gRPC holds JSON's kinds only (strings, numbers,
// booleans, nil, maps and lists).
func redactValue(conn *nomadconn.Conn, v any) any {
	switch v := v.(type) {
	case string:
		return conn.RedactString(v)
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[conn.RedactString(k)] = redactValue(conn, x)
		}
		return m
	case map[string]string:
		m := make(map[string]string, len(v))
		for k, x := range v {
			m[conn.RedactString(k)] = conn.RedactString(x)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = redactValue(conn, x)
		}
		return l
	case []string:
		l := make([]string, len(v))
		for i, x := range v {
			l[i] = conn.RedactString(x)
		}
		return l
	}
	return v
}

func copyMeta(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+3)
	for k, v := range m {
		out[k] = v
	}
	return out
}
