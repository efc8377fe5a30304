package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/plugins/target"
	"github.com/hashicorp/nomad-autoscaler/sdk"
	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
)

// TestClusterTarget: the host-quota target on its own, called as the
// agent calls it (Status, then Scale with the strategy's meta, across the
// autoscaler SDK's gRPC server and client as from cmd/host-quota), through
// nothing but Nomad's HTTP API: on the real cluster at NOMAD_ADDR when the
// tests were started with it, else on the stand-in behind an ACL token
// (see newE2ECluster). It registers two jobs of its own, each two groups
// of one small task pinned to the hosts' nodes, and checks on them what
// the unit tests check against the stand-in only:
//   - Status: the groups' desired counts, each group's running count, ready
//     once the deployment ends; an error naming an unknown job (and the
//     plugin still serving); not ready once the job is stopped;
//   - split mode: both counts change in one register at the JobModifyIndex
//     the strategy read, every other field of the job kept, and each group
//     gets a scaling event with its previous and new count;
//   - check-and-set: after a person's `nomad job scale`, a split decided on
//     the job before it is refused (ErrJobChanged) and changes nothing;
//   - a deployment in progress: Status is not ready, and both modes' Scale
//     change nothing, answer nil and log the skip;
//   - single-group mode: one scale request sets the group; a count outside
//     the host's quota is refused and changes nothing;
//   - an action decided for another job is refused and changes nothing;
//   - dry run: a count-less event per group with the count it would set;
//   - the target's log never holds the Nomad token.
//
// TestClusterTargetEnv runs the same against a stand-in in its own process
// reached through the NOMAD_* variables, the real-cluster path.
func TestClusterTarget(t *testing.T) {
	runTargetCase(t, newE2ECluster(t))
}

// TestClusterTargetEnv is TestClusterTarget's real-cluster path (the
// NOMAD_* variables read as the Nomad CLI reads them, the target's Nomad
// settings falling back to them) against a stand-in in its own process.
func TestClusterTargetEnv(t *testing.T) {
	testsupport.StandinOnly(t, "a stand-in process of its own reached through the NOMAD_* variables; TestClusterTarget runs the same path on the cluster at NOMAD_ADDR")
	const token = "target-env-secret-51c9"
	sc := nomadstandin.Scenario{Token: token, Nodes: []nomadstandin.NodeSpec{
		{Name: "t-a", CPUMHz: 1200, MemoryMB: 2048},
		{Name: "t-b", CPUMHz: 1200, MemoryMB: 2048},
	}}
	runTargetCase(t, standInProcessCluster(t, sc))
}

// targetCase is one run of TestClusterTarget: the cluster, the target
// under test and the log it writes.
type targetCase struct {
	c   *cluster
	tg  target.Target
	log *testsupport.SyncBuffer
}

// Minimum healthy times of the two jobs' update blocks: short for the job
// most steps scale, long for the one whose deployment the test watches.
const (
	targetQuickHealthy = time.Second
	targetSlowHealthy  = 20 * time.Second
)

func runTargetCase(t *testing.T, c *cluster) {
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	id := "activation-target-" + hex.EncodeToString(suffix)
	slow := id + "-deploying"
	// The slow job first: its first deployment runs while the other steps do.
	for _, j := range []struct {
		id      string
		healthy time.Duration
	}{{slow, targetSlowHealthy}, {id, targetQuickHealthy}} {
		job := c.clusterJob(t, j.id)
		job.Update.MinHealthyTime = new(j.healthy)
		c.register(t, job)
	}
	log := &testsupport.SyncBuffer{}
	impl := nomadplugin.NewTarget(hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: log, JSONFormat: true}))
	tc := &targetCase{c: c, log: log, tg: testsupport.GRPCTarget(t, impl)}
	if err := tc.tg.SetConfig(c.plugin); err != nil {
		t.Fatalf("SetConfig: %v", err)
	}
	t.Logf("jobs %s and %s on nodes %s and %s (through NOMAD_* variables: %t)", id, slow, c.nodes[0].Name, c.nodes[1].Name, c.real)
	split := splitConfig(id)

	// Status: the desired counts, each group's running one, ready once the
	// first deployment ends.
	st := tc.settle(t, id)
	if st.Count != 2 || st.Meta[nomadplugin.MetaGroupRunningPrefix+clusterGroups[0]] != "1" || st.Meta[nomadplugin.MetaGroupRunningPrefix+clusterGroups[1]] != "1" {
		t.Fatalf("Status of the new job: count %d, meta %v; want 2, one running in each group", st.Count, st.Meta)
	}
	if st, err := tc.tg.Status(splitConfig(id + "-none")); st != nil || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("job not found: %q", id+"-none")) {
		t.Errorf("Status of an unknown job: %+v, %v; want an error naming it", st, err)
	}
	if st, err := tc.tg.Status(split); err != nil || st.Count != 2 {
		t.Fatalf("Status after an unknown job's: %+v, %v; want the plugin still serving", st, err)
	}

	// Split mode: one register at the index the strategy read.
	before := tc.job(t, id)
	if err := tc.tg.Scale(splitAction(id, 2, 3, *before.JobModifyIndex), split); err != nil {
		t.Fatalf("Scale split 2+3: %v", err)
	}
	after := tc.job(t, id)
	if got := groupCounts(after); got != [2]int{2, 3} {
		t.Fatalf("after Scale split 2+3 the groups are at %v", got)
	}
	if *after.JobModifyIndex <= *before.JobModifyIndex {
		t.Errorf("JobModifyIndex %d after the register, %d before", *after.JobModifyIndex, *before.JobModifyIndex)
	}
	keptFields(t, before, after)
	ss := tc.scaleStatus(t, id)
	for h, g := range clusterGroups {
		evs := ss.TaskGroups[g].Events
		if len(evs) == 0 {
			t.Fatalf("group %s: no scaling event after the split", g)
		}
		prev, _ := metaNum(evs[0].Meta, nomadplugin.MetaPreviousCount)
		next, _ := metaNum(evs[0].Meta, nomadplugin.MetaNewCount)
		at, _ := metaNum(evs[0].Meta, nomadplugin.MetaRegisteredIndex)
		if want := []int{2, 3}[h]; prev != 1 || next != want || uint64(at) != *before.JobModifyIndex {
			t.Errorf("group %s's newest event: %d -> %d at index %d; want 1 -> %d at %d", g, prev, next, at, want, *before.JobModifyIndex)
		}
	}

	// Check-and-set: a person scales the first group; a split decided on
	// the job before that is refused and changes nothing.
	tc.settle(t, id)
	decidedOn := *tc.job(t, id).JobModifyIndex
	if _, _, err := c.client.Jobs().Scale(id, clusterGroups[0], new(3), "a person's nomad job scale", false, nil, nil); err != nil {
		t.Fatalf("the person's scale: %v", err)
	}
	tc.settle(t, id)
	person := tc.job(t, id)
	err := tc.tg.Scale(splitAction(id, 2, 2, decidedOn), split)
	if err == nil || !strings.Contains(err.Error(), nomadplugin.ErrJobChanged.Error()) { // only the text crosses gRPC
		t.Errorf("Scale decided at index %d after the person's change: %v; want ErrJobChanged", decidedOn, err)
	}
	tc.unchanged(t, id, person, "the refused split")

	// Single-group mode: one scale request, within the host's quota.
	single := map[string]string{nomadplugin.TargetKeyJob: id, nomadplugin.TargetKeyGroup: clusterGroups[1]}
	if err := tc.tg.Scale(groupAction(id, nomadplugin.RoleSecond, 2, *person.JobModifyIndex), single); err != nil {
		t.Fatalf("Scale single-group second to 2: %v", err)
	}
	grouped := tc.job(t, id)
	if got := groupCounts(grouped); got != [2]int{3, 2} {
		t.Errorf("after Scale single-group second to 2 the groups are at %v, want [3 2]", got)
	}
	if evs := tc.scaleStatus(t, id).TaskGroups[clusterGroups[1]].Events; len(evs) == 0 || evs[0].Count == nil || *evs[0].Count != 2 || evs[0].Meta[nomadplugin.MetaRole] != nomadplugin.RoleSecond {
		t.Errorf("group second's newest event after the single-group scale: %+v; want count 2 with the action's meta", evs)
	}
	tc.settle(t, id)
	grouped = tc.job(t, id)
	err = tc.tg.Scale(groupAction(id, nomadplugin.RoleSecond, 6, *grouped.JobModifyIndex), single)
	if err == nil || !strings.Contains(err.Error(), "outside the second host's quota [1, 4]") {
		t.Errorf("Scale single-group second to 6 with quota [1, 4]: %v; want it refused, naming the quota", err)
	}
	tc.unchanged(t, id, grouped, "the count outside the quota")

	// An action decided for another job is refused, and changes nothing.
	if err := tc.tg.Scale(splitAction(slow, 2, 2, *grouped.JobModifyIndex), split); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("the action was decided for job %q", slow)) {
		t.Errorf("Scale of a split decided for job %s with the target on %s: %v; want it refused", slow, id, err)
	}
	tc.unchanged(t, id, grouped, "the action decided for another job")

	// Dry run: one count-less event per group, the job unchanged.
	dry := splitConfig(id)
	dry[nomadplugin.TargetKeyDryRun] = "true"
	if err := tc.tg.Scale(splitAction(id, 1, 1, *grouped.JobModifyIndex), dry); err != nil {
		t.Fatalf("Scale dry run: %v", err)
	}
	tc.unchanged(t, id, grouped, "the dry run")
	ss = tc.scaleStatus(t, id)
	for _, g := range clusterGroups {
		evs := ss.TaskGroups[g].Events
		if len(evs) == 0 {
			t.Fatalf("group %s: no scaling event after the dry run", g)
		}
		if n, ok := metaNum(evs[0].Meta, nomadplugin.MetaDryRunCount); evs[0].Count != nil || !ok || n != 1 {
			t.Errorf("group %s's newest event after the dry run: %+v; want no count and %s 1", g, evs[0], nomadplugin.MetaDryRunCount)
		}
	}

	// A deployment in progress: the slow job's register starts one of
	// 20 s at least; while it runs Status is not ready and Scale changes
	// nothing, in either mode.
	tc.settle(t, slow)
	if err := tc.tg.Scale(splitAction(slow, 2, 2, *tc.job(t, slow).JobModifyIndex), splitConfig(slow)); err != nil {
		t.Fatalf("Scale split 2+2 of %s: %v", slow, err)
	}
	deploying := tc.job(t, slow)
	var dep *api.Deployment
	eventually(t, 30*time.Second, "the register starts a deployment", func() (bool, string) {
		d, _, err := c.client.Jobs().LatestDeployment(slow, nil)
		if err != nil {
			return false, err.Error()
		}
		if d == nil || d.JobVersion != *deploying.Version {
			return false, fmt.Sprintf("latest deployment %+v, want one of version %d", d, *deploying.Version)
		}
		dep = d
		return true, ""
	})
	st, err = tc.tg.Status(splitConfig(slow))
	if err != nil {
		t.Fatalf("Status during the deployment: %v", err)
	}
	// A no-op answers nil (its error type would not cross gRPC) and is
	// logged as skipped.
	skipsBefore := strings.Count(log.String(), "scaling action skipped")
	if err := tc.tg.Scale(splitAction(slow, 3, 3, *deploying.JobModifyIndex), splitConfig(slow)); err != nil {
		t.Errorf("Scale split during the deployment: %v; want nil, skipped", err)
	}
	slowSingle := map[string]string{nomadplugin.TargetKeyJob: slow, nomadplugin.TargetKeyGroup: clusterGroups[1]}
	if err := tc.tg.Scale(groupAction(slow, nomadplugin.RoleSecond, 3, *deploying.JobModifyIndex), slowSingle); err != nil {
		t.Errorf("Scale single-group during the deployment: %v; want nil, skipped", err)
	}
	if n := strings.Count(log.String(), "scaling action skipped") - skipsBefore; n != 2 {
		t.Errorf("%d skips logged during the deployment, want 2", n)
	}
	// The checks above judged a deployment in progress only if it still is.
	if d, _, err := c.client.Deployments().Info(dep.ID, nil); err != nil || d.Status != api.DeploymentStatusRunning {
		t.Fatalf("deployment %s after the checks: %+v, %v; it ended too soon to judge them (min_healthy_time %s)", dep.ID, d, err, targetSlowHealthy)
	}
	if st.Ready {
		t.Errorf("Status during deployment %s: ready", dep.ID)
	}
	tc.unchanged(t, slow, deploying, "Scale during the deployment")

	// A stopped job is not ready.
	if _, _, err := c.client.Jobs().Deregister(id, false, nil); err != nil {
		t.Fatalf("stop %s: %v", id, err)
	}
	eventually(t, 30*time.Second, "the stopped job is not ready", func() (bool, string) {
		st, err := tc.tg.Status(split)
		if err != nil {
			return false, err.Error()
		}
		return st != nil && !st.Ready, fmt.Sprintf("Status %+v", st)
	})

	txt := log.String()
	if !strings.Contains(txt, `"@message":"status"`) {
		t.Errorf("the target's trace log has no status line: %.400s", txt)
	}
	if c.token != "" && strings.Contains(txt, c.token) {
		t.Errorf("the target's log holds the Nomad token")
	}
}

// splitConfig is the split-mode target config of job id.
func splitConfig(id string) map[string]string {
	return map[string]string{nomadplugin.TargetKeyJob: id, nomadplugin.TargetKeyFirstGroup: clusterGroups[0], nomadplugin.TargetKeySecondGroup: clusterGroups[1]}
}

// targetQuota is the action meta of each host's quota, 1 to 4; numbers are
// float64, as they cross the agent's gRPC boundary.
func targetQuota() map[string]any {
	return map[string]any{nomadplugin.MetaFirstMin: 1.0, nomadplugin.MetaFirstMax: 4.0, nomadplugin.MetaSecondMin: 1.0, nomadplugin.MetaSecondMax: 4.0}
}

// splitAction is a split strategy's action: first + second replicas,
// decided for job (its clusterGroups) at JobModifyIndex index.
func splitAction(job string, first, second int, index uint64) sdk.ScalingAction {
	m := targetQuota()
	m[nomadplugin.MetaRole] = nomadplugin.RoleSplit
	m[nomadplugin.MetaJob] = job
	m[nomadplugin.HostMeta(nomadplugin.RoleFirst, nomadplugin.MetaGroup)] = clusterGroups[0]
	m[nomadplugin.HostMeta(nomadplugin.RoleSecond, nomadplugin.MetaGroup)] = clusterGroups[1]
	m[nomadplugin.MetaFirstCount], m[nomadplugin.MetaSecondCount] = float64(first), float64(second)
	m[nomadplugin.MetaJobModifyIndex] = float64(index)
	return sdk.ScalingAction{Count: int64(first + second), Direction: sdk.ScaleDirectionUp, Reason: fmt.Sprintf("test split %d+%d", first, second), Meta: m}
}

// groupAction is a per-host strategy's action for role: count replicas,
// decided for job (the role's group) at JobModifyIndex index.
func groupAction(job, role string, count int, index uint64) sdk.ScalingAction {
	m := targetQuota()
	m[nomadplugin.MetaRole] = role
	m[nomadplugin.MetaJob] = job
	m[nomadplugin.HostMeta(role, nomadplugin.MetaGroup)] = clusterGroups[map[string]int{nomadplugin.RoleFirst: 0, nomadplugin.RoleSecond: 1}[role]]
	m[nomadplugin.MetaJobModifyIndex] = float64(index)
	return sdk.ScalingAction{Count: int64(count), Direction: sdk.ScaleDirectionUp, Reason: fmt.Sprintf("test %s %d", role, count), Meta: m}
}

// settle waits until job id's groups run what they desire and the
// target's Status is ready (no deployment in progress), and returns that
// Status.
func (tc *targetCase) settle(t *testing.T, id string) *sdk.TargetStatus {
	t.Helper()
	var out *sdk.TargetStatus
	eventually(t, 3*time.Minute, "job "+id+" settles", func() (bool, string) {
		ss, _, err := tc.c.client.Jobs().ScaleStatus(id, nil)
		if err != nil {
			return false, err.Error()
		}
		for _, g := range clusterGroups {
			if gs := ss.TaskGroups[g]; gs.Running != gs.Desired {
				return false, fmt.Sprintf("group %s: %d running of %d", g, gs.Running, gs.Desired)
			}
		}
		st, err := tc.tg.Status(splitConfig(id))
		if err != nil || st == nil || !st.Ready {
			return false, fmt.Sprintf("Status %+v, %v", st, err)
		}
		for _, g := range clusterGroups {
			if st.Meta[nomadplugin.MetaGroupRunningPrefix+g] != strconv.Itoa(ss.TaskGroups[g].Running) {
				return false, fmt.Sprintf("Status meta %v against %d running in group %s", st.Meta, ss.TaskGroups[g].Running, g)
			}
		}
		out = st
		return true, ""
	})
	return out
}

func (tc *targetCase) job(t *testing.T, id string) *api.Job {
	t.Helper()
	j, _, err := tc.c.client.Jobs().Info(id, nil)
	if err != nil {
		t.Fatalf("read job %s: %v", id, err)
	}
	return j
}

func (tc *targetCase) scaleStatus(t *testing.T, id string) *api.JobScaleStatusResponse {
	t.Helper()
	ss, _, err := tc.c.client.Jobs().ScaleStatus(id, nil)
	if err != nil {
		t.Fatalf("read the scale status of job %s: %v", id, err)
	}
	return ss
}

// unchanged checks that job id is still at was's version and counts.
func (tc *targetCase) unchanged(t *testing.T, id string, was *api.Job, after string) {
	t.Helper()
	now := tc.job(t, id)
	if *now.JobModifyIndex != *was.JobModifyIndex || groupCounts(now) != groupCounts(was) {
		t.Errorf("job %s after %s: JobModifyIndex %d, counts %v; want it unchanged at %d, %v", id, after, *now.JobModifyIndex, groupCounts(now), *was.JobModifyIndex, groupCounts(was))
	}
}

// groupCounts is the job's two groups' counts, in clusterGroups order.
func groupCounts(j *api.Job) [2]int {
	var out [2]int
	for _, tg := range j.TaskGroups {
		for h, g := range clusterGroups {
			if *tg.Name == g {
				out[h] = *tg.Count
			}
		}
	}
	return out
}

// keptFields checks that a register that changed the counts kept what the
// test set of the job: its update block, and each group's constraint, task
// driver, config and resources.
func keptFields(t *testing.T, before, after *api.Job) {
	t.Helper()
	if a, b := *after.Update.MinHealthyTime, *before.Update.MinHealthyTime; a != b {
		t.Errorf("the register changed the update block's min_healthy_time: %s, was %s", a, b)
	}
	if len(after.TaskGroups) != len(before.TaskGroups) {
		t.Fatalf("the register changed the number of groups: %d, was %d", len(after.TaskGroups), len(before.TaskGroups))
	}
	for i, b := range before.TaskGroups {
		a := after.TaskGroups[i]
		bt, at := b.Tasks[0], a.Tasks[0]
		if constraints(a.Constraints) != constraints(b.Constraints) || at.Driver != bt.Driver ||
			fmt.Sprint(at.Config) != fmt.Sprint(bt.Config) || *at.Resources.CPU != *bt.Resources.CPU || *at.Resources.MemoryMB != *bt.Resources.MemoryMB {
			t.Errorf("the register changed group %s beyond its count: constraints %v, task %s %v, %d MHz %d MB; was %v, %s %v, %d MHz %d MB",
				*b.Name, constraints(a.Constraints), at.Driver, at.Config, *at.Resources.CPU, *at.Resources.MemoryMB, constraints(b.Constraints), bt.Driver, bt.Config, *bt.Resources.CPU, *bt.Resources.MemoryMB)
		}
	}
}

// constraints prints a group's constraints.
func constraints(cs []*api.Constraint) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.LTarget+" "+c.Operand+" "+c.RTarget)
	}
	return strings.Join(out, ", ")
}
