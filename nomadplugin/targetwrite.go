package nomadplugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/nomad-autoscaler/sdk"
	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
)

// scaleCall is one Scale call: the config, the deadline and the action.
type scaleCall struct {
	t      *Target
	s      *targetSession
	c      *targetConfig
	ctx    context.Context
	budget time.Duration
	client *api.Client
	qo     *api.QueryOptions
	wo     *api.WriteOptions
	action sdk.ScalingAction
}

// callErr names a failed call and, when the scale budget ran out, the
// budget.
func (w *scaleCall) callErr(what string, err error) error {
	return deadlineErr(w.ctx, PluginKeyScaleTimeout, w.budget, TargetName+": "+what, err)
}

// Outcomes of a failed write.
const (
	outcomeUnknown = "outcome unknown: Nomad may have applied it; the next evaluation re-reads the job"
	outcomeRefused = "Nomad refused it"
)

// writeErr names a failed write and says what it left: an error answer from
// Nomad changed nothing (unchanged says what); a lost connection, a
// deadline or a gateway's error leaves the outcome unknown.
func (w *scaleCall) writeErr(what, unchanged string, err error) error {
	outcome := outcomeUnknown
	if refusedByNomad(err) {
		outcome = outcomeRefused + ": " + unchanged
	}
	return fmt.Errorf("%w; %s", w.callErr(what, err), outcome)
}

// refusedByNomad says whether a write failed with an answer that means
// Nomad did not apply it: a 4xx, or a 500 carrying one of Nomad's own
// refusals (a check-and-set index the job is no longer at, a deployment in
// progress, a job that fails validation: Nomad answers its validation
// errors with 500; job_max_count; registerRefusals). Any other 5xx (a leadership
// change while committing, a forwarding failure, a gateway's or a load
// balancer's error) may have been applied behind it: its outcome is
// unknown.
func refusedByNomad(err error) bool {
	var ue api.UnexpectedResponseError
	if !errors.As(err, &ue) || !ue.HasStatusCode() {
		return false
	}
	code := ue.StatusCode()
	if code >= 400 && code < 500 {
		return true
	}
	if code != http.StatusInternalServerError {
		return false
	}
	msg := strings.ToLower(err.Error())
	return slices.ContainsFunc(refusals500, func(r string) bool { return strings.Contains(msg, r) })
}

// readJob reads the job as Nomad answers it and refuses one the target
// does not scale.
func (w *scaleCall) readJob() (*rawJob, error) {
	job, err := readRawJob(w.ctx, w.client, w.c.namespace, w.c.job)
	if nomadconn.IsStatus(err, http.StatusNotFound) {
		return nil, fmt.Errorf("%s: %w: %q in namespace %q (Nomad answered 404); no group was changed", TargetName, ErrJobNotFound, w.c.job, namespaceName(w.c.namespace))
	}
	if err != nil {
		return nil, w.callErr(fmt.Sprintf("read job %q", w.c.job), err)
	}
	if err := job.scalable(); err != nil {
		return nil, fmt.Errorf("%s: %w; no group was changed", TargetName, err)
	}
	if err := checkRegion(w.action.Meta, w.c.job, job); err != nil {
		return nil, err
	}
	return job, nil
}

// checkRegion refuses an action decided for the job in another region
// than the one the target read it in. An action naming no region (the
// agent's own) and a job Nomad gives no region are not compared.
func checkRegion(meta map[string]any, id string, job *rawJob) error {
	want, _ := meta[MetaRegion].(string)
	if want == "" || job.head.Region == nil || *job.head.Region == want {
		return nil
	}
	return fmt.Errorf("%s: the action was decided for job %q in region %q (the job the strategy read), and the target reads it in region %q: "+
		"give both plugins the same Nomad region and address (nomad_region and nomad_address, or NOMAD_REGION and NOMAD_ADDR in their environment); no group was changed",
		TargetName, id, want, *job.head.Region)
}

// currentCounts are the groups' counts in the job.
func (w *scaleCall) currentCounts(job *rawJob) ([2]int64, error) {
	var cur [2]int64
	for i, g := range w.c.names() {
		n, ok := job.count(g)
		if !ok {
			return cur, fmt.Errorf("%s: config %q: job %q has no task group %q", TargetName, w.c.groupKey(i), w.c.job, g)
		}
		cur[i] = n
	}
	return cur, nil
}

// total is the count to apply, and whether this is a dry run: the
// action's count, or a dry-run action's, which the agent keeps in meta
// (else the groups' current sum).
func (w *scaleCall) total(current [2]int64) (int64, bool, error) {
	total := w.action.Count
	dry := w.c.dryRun || total == sdk.StrategyActionMetaValueDryRunCount
	if total == sdk.StrategyActionMetaValueDryRunCount {
		if n, ok, _ := metaInt(w.action.Meta, agentMetaDryRunCount); ok {
			total = n
		} else {
			total = current[0] + current[1]
		}
	}
	if total < 0 {
		return 0, dry, fmt.Errorf("%s: action count %d < 0", TargetName, total)
	}
	return total, dry, nil
}

// index is the JobModifyIndex the write is checked at: the one the
// strategy read (meta), which the job must still be at, else the one just
// read.
func (w *scaleCall) index(job *rawJob) (uint64, error) {
	read := job.jobModifyIndex()
	n, ok, err := metaInt(w.action.Meta, MetaJobModifyIndex)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", TargetName, err)
	}
	if ok && n == 0 {
		// Nomad gives no job index 0: not a reading of the job, and not
		// a change since one.
		return 0, fmt.Errorf("%s: action meta %s is 0, which no job Nomad has is at: the action was not decided on a reading of job %q; nothing was written", TargetName, MetaJobModifyIndex, w.c.job)
	}
	if ok && uint64(n) != read {
		return 0, fmt.Errorf("%s: job %q: %w (the strategy read JobModifyIndex %d, the job is now at %d)", TargetName, w.c.job, ErrJobChanged, n, read)
	}
	return read, nil
}

// dryRun records one count-less event per group with the count it would
// have set.
func (w *scaleCall) dryRun(current, counts [2]int64) error {
	for i, g := range w.c.names() {
		meta := copyMeta(w.action.Meta)
		meta[MetaDryRunCount] = counts[i]
		msg := fmt.Sprintf("dry run: would scale %s from %d to %d; %s", g, current[i], counts[i], w.action.Reason)
		if _, _, err := w.client.Jobs().Scale(w.c.job, g, nil, msg, w.action.Error, meta, w.wo); err != nil {
			return w.callErr(fmt.Sprintf("record the dry-run event of group %q of job %q", g, w.c.job), err)
		}
		w.t.logger.Info("dry run: the group was not changed", "job", w.c.job, "group", g, "from", current[i], "would_be", counts[i])
	}
	return nil
}

// read is what both modes start from: the job as Nomad has it, its
// groups' current counts, and the total the action asks for (dry: a dry
// run).
func (w *scaleCall) read() (job *rawJob, current [2]int64, total int64, dry bool, err error) {
	if job, err = w.readJob(); err != nil {
		return nil, current, 0, false, err
	}
	if job.head.Stop != nil && *job.head.Stop {
		// Status says not ready once the job is stopped; an action that
		// raced the stop must not register a new, still stopped, version.
		return nil, current, 0, false, sdk.NewTargetScalingNoOpError("%s: skipping job %s: it is stopped; no group was changed", TargetName, w.c.job)
	}
	if current, err = w.currentCounts(job); err != nil {
		return nil, current, 0, false, err
	}
	total, dry, err = w.total(current)
	return job, current, total, dry, err
}

// scaleSplit is Scale in split mode: read, split, guard, register, events.
func (w *scaleCall) scaleSplit() error {
	job, current, total, dry, err := w.read()
	if err != nil {
		return err
	}
	counts, err := w.split(total, current, job)
	if err != nil {
		return err
	}
	if dry {
		return w.dryRun(current, counts)
	}
	if counts == current {
		w.t.logger.Debug("both groups already at the split: nothing to write", "job", w.c.job, "first", counts[0], "second", counts[1])
		return nil
	}
	if err := w.deploymentGuard(job); err != nil {
		return err
	}
	index, err := w.index(job)
	if err != nil {
		return err
	}
	if err := w.register(job, counts, index); err != nil {
		return err
	}
	move := func(i int) string {
		if counts[i] == current[i] {
			return fmt.Sprintf("%d (unchanged)", current[i])
		}
		return fmt.Sprintf("%d -> %d", current[i], counts[i])
	}
	w.t.logger.Info("scaled", "job", w.c.job, "first_group", w.c.groups[0], "first", move(0),
		"second_group", w.c.groups[1], "second", move(1))
	w.events(current, counts, index)
	return nil
}

// split is the two counts for total within the hosts' quotas and the
// groups' own scaling blocks (Nomad refuses a register that sets a group
// outside its block's [min, max]).
func (w *scaleCall) split(total int64, current [2]int64, job *rawJob) ([2]int64, error) {
	q, source, err := w.quota()
	if err != nil {
		return [2]int64{}, w.callErr("host quotas", err)
	}
	if _, hasSplit, err := metaSplit(w.action.Meta); err == nil && !hasSplit && source == "" {
		return [2]int64{}, fmt.Errorf("%s: the action (%q) carries no split and no host quota is known (none in the action, the target config or the groups' scaling events): "+
			"set %s/%s and %s/%s in the target config; no group was changed", TargetName, w.action.Reason, TargetKeyFirstMin, TargetKeyFirstMax, TargetKeySecondMin, TargetKeySecondMax)
	}
	var held []string
	for i, g := range w.c.groups {
		lo, hi, ok := job.scalingBounds(g)
		if !ok {
			continue
		}
		nlo, nhi := max(q[i][0], lo), min(q[i][1], hi)
		if nlo > nhi {
			return [2]int64{}, fmt.Errorf("%s: group %q's scaling block allows [%d, %d] and its host's quota is [%d, %d]: no count meets both, and Nomad refuses a register "+
				"outside the block; no group was changed", TargetName, g, lo, hi, q[i][0], q[i][1])
		}
		if nlo != q[i][0] || nhi != q[i][1] {
			held = append(held, fmt.Sprintf("group %q held to its scaling block [%d, %d]", g, lo, hi))
		}
		q[i] = [2]int64{nlo, nhi}
	}
	counts, how, err := SplitWithin(total, w.action.Meta, current, q)
	if err != nil {
		var notes []string
		if source != "" {
			notes = append(notes, "quotas from "+source)
		}
		if source == quotaFromEvent {
			notes[0] += fmt.Sprintf(" (no quota in the action or the target config: set %s, %s, %s and %s in the target config to give them)",
				TargetKeyFirstMin, TargetKeyFirstMax, TargetKeySecondMin, TargetKeySecondMax)
		}
		notes = append(notes, held...)
		if len(notes) > 0 {
			return counts, fmt.Errorf("%s: %w (%s)", TargetName, err, strings.Join(notes, "; "))
		}
		return counts, fmt.Errorf("%s: %w", TargetName, err)
	}
	if source != "" {
		how += " (quotas from " + source + ")"
	}
	if len(held) > 0 {
		how += "; " + strings.Join(held, ", ")
	}
	w.t.logger.Debug("scale", "job", w.c.job, "total", total, "first", counts[0], "second", counts[1], "how", how)
	return counts, nil
}

// quota finds the hosts' quotas: the action's meta, the target config,
// the newest scaling event that carries them. source names where they came
// from ("" when nowhere: unbounded).
func (w *scaleCall) quota() (Quota, string, error) {
	q, found, err := metaQuota(w.action.Meta)
	if err != nil || found {
		if err == nil {
			w.configQuotaUnused(q)
		}
		return q, "the action", err
	}
	if w.c.known[0] || w.c.known[1] {
		q = unbounded
		for i := range q {
			if w.c.known[i] {
				q[i] = w.c.quota[i]
			}
		}
		src := "the target config"
		if !w.c.known[0] || !w.c.known[1] {
			// One host's: the other is not bounded (a note that said
			// "the hosts' quotas are the target config's" misled).
			set, unset := RoleFirst, RoleSecond
			if !w.c.known[0] {
				set, unset = unset, set
			}
			src = fmt.Sprintf("the target config, the %s host's only: the %s host has no quota", set, unset)
		}
		return q, src, nil
	}
	st, _, err := w.client.Jobs().ScaleStatus(w.c.job, w.qo)
	if err != nil {
		return q, "", fmt.Errorf("read the scaling events of job %q for the hosts' quotas: %w", w.c.job, err)
	}
	var newest *api.ScalingEvent
	for _, g := range w.c.groups {
		for k := range st.TaskGroups[g].Events {
			e := &st.TaskGroups[g].Events[k]
			if _, ok := e.Meta[MetaFirstMax]; ok && (newest == nil || e.Time > newest.Time) {
				newest = e
				break
			}
		}
	}
	if newest == nil {
		return unbounded, "", nil
	}
	q, _, err = metaQuota(newest.Meta)
	if err == nil {
		err = configuredMins(&q, newest.Meta)
	}
	if err != nil {
		return q, "", fmt.Errorf("the scaling event at %s: %w", time.Unix(0, int64(newest.Time)).UTC().Format(time.RFC3339), err)
	}
	return q, quotaFromEvent, nil
}

// quotaFromEvent is quota's source when the hosts' quotas come from the
// groups' newest scaling event that carries them.
const quotaFromEvent = "the newest scaling event"

// configQuotaUnused warns when the target config sets a host's max below
// the one the action carries: the action's quota applies, and an operator
// who reads first_max as a cap should know it is not one. (A min the
// strategy lowered on purpose, to a host's current count, or a max the
// config resolved from a min alone, is no cap and says nothing.)
func (w *scaleCall) configQuotaUnused(q Quota) {
	for i, key := range [2]string{TargetKeyFirstMax, TargetKeySecondMax} {
		if w.c.maxSet[i] && w.c.quota[i][1] < q[i][1] {
			w.t.logger.Warn("the target config's max for a host is not a cap: the action carries the strategy's quota, which applies",
				"key", key, "config_max", w.c.quota[i][1], "action_max", q[i][1])
		}
	}
}

// deploymentGuard makes a deployment of the job in progress a no-op.
func (w *scaleCall) deploymentGuard(job *rawJob) error {
	dep, _, err := w.client.Jobs().LatestDeployment(w.c.job, w.qo)
	if err != nil {
		return w.callErr(fmt.Sprintf("read latest deployment of job %q", w.c.job), err)
	}
	if activeDeployment(dep, job.createIndex()) {
		return sdk.NewTargetScalingNoOpError("%s: skipping job %s: deployment %s is %s; neither group was changed", TargetName, w.c.job, dep.ID, dep.Status)
	}
	return nil
}

// register sets both counts in one job register, check-and-set at index,
// every other field of the job as Nomad answered it.
func (w *scaleCall) register(job *rawJob, counts [2]int64, index uint64) error {
	body, err := job.registerBody(map[string]int64{w.c.groups[0]: counts[0], w.c.groups[1]: counts[1]}, index)
	if err != nil {
		return fmt.Errorf("%s: job %q as Nomad answered it: %w; neither group was changed", TargetName, w.c.job, err)
	}
	var resp api.JobRegisterResponse
	_, err = w.client.Raw().Write("/v1/job/"+url.PathEscape(w.c.job), bytes.NewReader(body), &resp, w.wo)
	switch {
	case err == nil:
		return nil
	case refusedByNomad(err) && strings.Contains(strings.ToLower(err.Error()), enforceIndexRefused):
		return fmt.Errorf("%s: job %q: %w (Nomad refused the register at JobModifyIndex %d: %v)", TargetName, w.c.job, ErrJobChanged, index, err)
	}
	what := fmt.Sprintf("register job %q with %s=%d and %s=%d at JobModifyIndex %d", w.c.job, w.c.groups[0], counts[0], w.c.groups[1], counts[1], index)
	return w.writeErr(what, "neither group was changed", err)
}

// events records one count-less scaling event per changed group, for
// history and cooldown, with their own budget (request_timeout): the split
// is applied, so a failure is logged, never returned.
func (w *scaleCall) events(current, counts [2]int64, index uint64) {
	budget := w.s.budget[PluginKeyRequestTimeout]
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	wo := (&api.WriteOptions{Namespace: w.c.namespace}).WithContext(ctx)
	for i, g := range w.c.groups {
		if counts[i] == current[i] {
			continue
		}
		meta := copyMeta(w.action.Meta)
		meta[MetaPreviousCount], meta[MetaNewCount], meta[MetaRegisteredIndex] = current[i], counts[i], index
		// What will queue, for the counts applied (the agent may have
		// clamped the strategy's).
		for k, role := range [2]string{RoleFirst, RoleSecond} {
			if placeable, ok, err := metaInt(w.action.Meta, HostMeta(role, MetaPlaceable)); err == nil && ok {
				meta[HostMeta(role, MetaQueued)] = max(0, counts[k]-placeable)
			}
		}
		msg := fmt.Sprintf("%s %d -> %d (both groups in one job register at JobModifyIndex %d); %s", g, current[i], counts[i], index, w.action.Reason)
		if _, _, err := w.client.Jobs().Scale(w.c.job, g, nil, msg, w.action.Error, meta, wo); err != nil {
			w.t.logger.Warn("the split is applied, but its scaling event was not recorded (cooldown and history miss it)", "job", w.c.job, "group", g,
				"error", deadlineErr(ctx, PluginKeyRequestTimeout, budget, "record the scaling event", err))
		}
	}
}

// scaleGroup is Scale in single-group mode: one check-and-set scale
// request, which records its own scaling event.
func (w *scaleCall) scaleGroup() error {
	job, current, total, dry, err := w.read()
	if err != nil {
		return err
	}
	if err := w.withinRoleQuota(total); err != nil {
		return err
	}
	if dry {
		return w.dryRun(current, [2]int64{total})
	}
	g := w.c.groups[0]
	if total == current[0] {
		w.t.logger.Debug("the group is already at the count: nothing to write", "job", w.c.job, "group", g, "count", total)
		return nil
	}
	index, err := w.index(job)
	if err != nil {
		return err
	}
	req := &api.ScalingRequest{Count: &total, Target: map[string]string{"Job": w.c.job, "Group": g}, Message: w.action.Reason,
		Error: w.action.Error, Meta: copyMeta(w.action.Meta), JobModifyIndex: index}
	_, _, err = w.client.Jobs().ScaleWithRequest(w.c.job, req, w.wo)
	switch {
	case err == nil:
		w.t.logger.Info("scaled", "job", w.c.job, "group", g, "count", fmt.Sprintf("%d -> %d", current[0], total))
		return nil
	case refusedByNomad(err) && strings.Contains(err.Error(), deploymentBlocked):
		return sdk.NewTargetScalingNoOpError("%s: skipping job %s due to an active deployment; the group was not changed", TargetName, w.c.job)
	case refusedByNomad(err) && strings.Contains(strings.ToLower(err.Error()), enforceIndexRefused):
		return fmt.Errorf("%s: job %q: %w (Nomad refused the scale request at JobModifyIndex %d: %v)", TargetName, w.c.job, ErrJobChanged, index, err)
	}
	return w.writeErr(fmt.Sprintf("scale group %q of job %q to %d at JobModifyIndex %d", g, w.c.job, total, index), "the group was not changed", err)
}

// withinRoleQuota refuses a count outside the quota the action carries for
// its host (the agent clamps the strategy's count to the policy's min and
// max, which may lie outside it). The agent's own actions carry none: the
// policy's min and max are then the group's bounds.
func (w *scaleCall) withinRoleQuota(total int64) error {
	role, _ := w.action.Meta[MetaRole].(string)
	i := slices.Index([]string{RoleFirst, RoleSecond}, role)
	if i < 0 {
		return nil
	}
	q, _, err := metaQuota(w.action.Meta)
	if err != nil {
		return fmt.Errorf("%s: %w", TargetName, err)
	}
	if lo, hi := q[i][0], q[i][1]; total < lo || total > hi {
		return fmt.Errorf("%s: count %d is outside the %s host's quota [%d, %d] (the agent clamps the strategy's count to the policy's min and max): "+
			"set the policy's min and max within the quota; the group was not changed", TargetName, total, role, lo, hi)
	}
	return nil
}
