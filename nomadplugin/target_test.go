package nomadplugin

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/plugins/shared"
	"github.com/hashicorp/nomad-autoscaler/sdk"
	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// world is a stand-in with two hosts and a job with one group on each: 20
// 000 MHz hosts and 2000 MHz replicas, so ten replicas fit a host and more
// stay queued.
type world struct {
	s            *nomadstandin.Server
	nodeA, nodeB string
	agentConfig  map[string]string
}

const (
	wJob    = "web"
	wFirst  = "front"
	wSecond = "back"
	// wJobPath is the job's path: GET reads it, PUT registers it.
	wJobPath = "/v1/job/" + wJob
)

func newWorld(t *testing.T, first, second int) *world {
	t.Helper()
	testsupport.StandinOnly(t, "its nodes, a job placed on them and their usage set from Go, their state read back from the stand-in")
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	w := &world{s: s}
	if w.nodeA, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 20000, MemoryMB: 65536}); err != nil {
		t.Fatal(err)
	}
	if w.nodeB, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-b", CPUMHz: 20000, MemoryMB: 65536}); err != nil {
		t.Fatal(err)
	}
	err = s.AddJob(nomadstandin.JobSpec{ID: wJob, Groups: []nomadstandin.GroupSpec{
		{Name: wFirst, Count: first, CPUMHz: 2000, MemoryMB: 512, NodeID: w.nodeA},
		{Name: wSecond, Count: second, CPUMHz: 2000, MemoryMB: 512, NodeID: w.nodeB},
	}})
	if err != nil {
		t.Fatal(err)
	}
	w.agentConfig = map[string]string{AgentKeyNomadAddress: s.URL()}
	return w
}

func (w *world) target(t *testing.T, kv ...string) *Target {
	t.Helper()
	return targetAt(t, withKeys(w.agentConfig, kv...))
}

// targetAt is a target with this SetConfig map.
func targetAt(t *testing.T, config map[string]string) *Target {
	t.Helper()
	tg := NewTarget(hclog.NewNullLogger())
	if err := tg.SetConfig(config); err != nil {
		t.Fatal(err)
	}
	return tg
}

func (w *world) group(t *testing.T, g string) nomadstandin.GroupStatus {
	t.Helper()
	gs, err := w.s.Group("", wJob, g)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

func (w *world) counts(t *testing.T) [2]int {
	t.Helper()
	return [2]int{w.group(t, wFirst).Count, w.group(t, wSecond).Count}
}

// puts lists the stand-in's writes since from: path and status.
func (w *world) puts(from int) []nomadstandin.Request {
	var out []nomadstandin.Request
	for _, r := range w.s.Requests()[from:] {
		if r.Method == http.MethodPut || r.Method == http.MethodPost {
			out = append(out, r)
		}
	}
	return out
}

// tcfg is the split-mode target config; gcfg the single-group one.
var (
	tcfg = map[string]string{TargetKeyJob: wJob, TargetKeyFirstGroup: wFirst, TargetKeySecondGroup: wSecond}
	gcfg = map[string]string{TargetKeyJob: wJob, TargetKeyGroup: wFirst}
)

// TestTargetStatus: the count is the groups' desired counts (queued
// allocations included: issue B1), the running ones in meta; cooldown from
// the newest event; not ready during a deployment or when stopped.
func TestTargetStatus(t *testing.T) {
	w := newWorld(t, 12, 2)
	if q := w.group(t, wFirst).Queued; q != 2 {
		t.Fatalf("the premise fails: front has %d queued allocations, want 2 of 12 (ten fit)", q)
	}
	tg := w.target(t)
	st, err := tg.Status(tcfg)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Ready || st.Count != 14 || st.Meta[MetaGroupRunningPrefix+wFirst] != "10" || st.Meta[MetaGroupRunningPrefix+wSecond] != "2" {
		t.Fatalf("status %+v: want count 14 (12 + 2 desired) with 10 and 2 running in meta", st)
	}
	if _, ok := st.Meta[sdk.TargetStatusMetaKeyLastEvent]; ok {
		t.Errorf("last event reported before any event")
	}
	if one, err := tg.Status(gcfg); err != nil || one.Count != 12 || one.Meta[MetaGroupRunningPrefix+wFirst] != "10" {
		t.Errorf("single-group status %+v, %v: want front's desired 12, 10 running", one, err)
	}
	// The scaling events the target records give the cooldown its last
	// event time.
	before := uint64(time.Now().UnixNano())
	if err := tg.Scale(sdk.ScalingAction{Count: 8, Meta: quotaMeta(6, 2, 0, 10, 0, 10), Reason: "r"}, tcfg); err != nil {
		t.Fatal(err)
	}
	st = status(t, tg, tcfg)
	if st.Count != 8 {
		t.Errorf("after scaling: count %d, want 8 (%+v)", st.Count, st)
	}
	last, err := strconv.ParseUint(st.Meta[sdk.TargetStatusMetaKeyLastEvent], 10, 64)
	if err != nil {
		t.Errorf("after scaling: last event meta %q: %v", st.Meta[sdk.TargetStatusMetaKeyLastEvent], err)
	} else if last < before {
		t.Errorf("last event %d is before the scale (%d)", last, before)
	}
	// Deployment in progress: not ready. Stopped job: not ready.
	must(t, w.s.SetDeploymentActive("", wJob, true))
	if status(t, tg, tcfg).Ready {
		t.Errorf("ready during a deployment")
	}
	must(t, w.s.SetDeploymentActive("", wJob, false))
	if !status(t, tg, tcfg).Ready {
		t.Errorf("not ready after the deployment")
	}
	must(t, w.s.SetJobStopped("", wJob, true))
	if st := status(t, tg, tcfg); st.Ready {
		t.Errorf("stopped job: %+v", st)
	}
	// Unknown job: an error naming it, never a nil status (which panics
	// the plugin's gRPC server: TestTargetOverGRPC).
	if st, err := tg.Status(withKeys(tcfg, TargetKeyJob, "nope")); st != nil || !errors.Is(err, ErrJobNotFound) || !strings.Contains(err.Error(), `"nope" in namespace "default"`) {
		t.Errorf("unknown job: %+v, %v; want ErrJobNotFound naming the job and its namespace", st, err)
	}
	for cfg, meta := range map[*map[string]string]map[string]any{
		&tcfg: quotaMeta(2, 1, 0, 10, 0, 10), &gcfg: withMeta(quotaMeta(3, 0, 0, 10, 0, 10), MetaRole, RoleFirst),
	} {
		err := tg.Scale(sdk.ScalingAction{Count: 3, Meta: meta}, withKeys(*cfg, TargetKeyJob, "nope"))
		if !errors.Is(err, ErrJobNotFound) || !strings.Contains(err.Error(), `"nope" in namespace "default"`) {
			t.Errorf("Scale of an unknown job (%v): %v; want ErrJobNotFound naming the job and its namespace", *cfg, err)
		}
	}
	if _, err := tg.Status(withKeys(tcfg, TargetKeySecondGroup, "nope")); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown group: %v", err)
	}
	// 5xx is an error.
	w.s.InjectFault(nomadstandin.Fault{Status: 503, Times: 1})
	if _, err := tg.Status(tcfg); err == nil {
		t.Errorf("5xx gave no error")
	}
}

func status(t *testing.T, tg *Target, cfg map[string]string) *sdk.TargetStatus {
	t.Helper()
	st, err := tg.Status(cfg)
	if err != nil || st == nil {
		t.Fatalf("status: %+v, %v", st, err)
	}
	return st
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestTargetDeploymentOfAnEarlierJob: a deployment of an earlier job of the
// same ID (purged and registered again: another JobCreateIndex) does not
// hold the job, as Nomad's Job.Scale does not count it.
func TestTargetDeploymentOfAnEarlierJob(t *testing.T) {
	w := newWorld(t, 2, 2)
	must(t, w.s.SetDeploymentActive("", wJob, true))
	px := newProxy(t, w.s.URL())
	tg := targetAt(t, map[string]string{AgentKeyNomadAddress: px.srv.URL})
	if status(t, tg, tcfg).Ready {
		t.Fatalf("the premise fails: ready during the job's own deployment")
	}
	px.rewrite(func(method, path string, body []byte) []byte {
		if method == http.MethodGet && path == wJobPath+"/deployment" {
			return setMember(t, body, "JobCreateIndex", "1")
		}
		return body
	})
	if !status(t, tg, tcfg).Ready {
		t.Errorf("a deployment of an earlier job with this ID holds the job")
	}
}

// TestTargetDeadlines: Status and Scale end within their budgets when
// Nomad does not answer, and say which call ran out; a write cut by its
// deadline says its outcome is unknown.
func TestTargetDeadlines(t *testing.T) {
	w := newWorld(t, 2, 2)
	tg := w.target(t, PluginKeyStatusTimeout, "300ms", PluginKeyScaleTimeout, "500ms")
	for _, tc := range []struct {
		name   string
		fault  nomadstandin.Fault
		call   func() error
		budget time.Duration
		want   []string
	}{
		{"status: a hung scale status read", nomadstandin.Fault{Method: http.MethodGet, Path: wJobPath + "/scale", Hang: true},
			func() error { _, err := tg.Status(tcfg); return err }, 300 * time.Millisecond,
			[]string{"read scale status of job \"web\": the status_timeout budget of 300ms ran out"}},
		{"status: the agent's gRPC deadline is shorter", nomadstandin.Fault{Method: http.MethodGet, Path: wJobPath + "/scale", Hang: true},
			func() error {
				_, err := tg.Status(withKeys(tcfg, shared.PluginConfigKeyGRPCTimeout, "200ms"))
				return err
			}, 180 * time.Millisecond,
			[]string{"status_timeout (nine tenths of the agent's gRPC deadline 200ms, shorter than status_timeout 300ms) budget of 180ms ran out"}},
		{"scale: a hung register", nomadstandin.Fault{Method: http.MethodPut, Path: wJobPath, Hang: true},
			func() error { return tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(4, 2, 0, 10, 0, 10)}, tcfg) }, 500 * time.Millisecond,
			[]string{"the scale_timeout budget of 500ms ran out", outcomeUnknown}},
		{"scale: a hung single-group write", nomadstandin.Fault{Method: http.MethodPut, Path: wJobPath + "/scale", Hang: true},
			func() error { return tg.Scale(sdk.ScalingAction{Count: 4}, gcfg) }, 500 * time.Millisecond,
			[]string{"the scale_timeout budget of 500ms ran out", outcomeUnknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.s.InjectFault(tc.fault)
			defer w.s.ClearFaults()
			start := time.Now()
			err := tc.call()
			el := time.Since(start)
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want one saying %q", err, want)
				}
			}
			if el > tc.budget+2*time.Second {
				t.Errorf("the call took %s with a budget of %s", el, tc.budget)
			}
		})
	}
}

// TestTargetWriteOutcome (issue S3): a write Nomad answers with an error
// changed nothing, and the error says so; a scaling event that fails after
// the register does not fail Scale (the split is applied), and is logged.
func TestTargetWriteOutcome(t *testing.T) {
	testsupport.StandinOnly(t, "faults injected on the writes")
	t.Run("Nomad refuses the register", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		w.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: wJobPath, Status: http.StatusBadRequest, Message: "injected: job validation failed"})
		err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(4, 2, 0, 10, 0, 10)}, tcfg)
		if err == nil || !strings.Contains(err.Error(), outcomeRefused+": neither group was changed") || strings.Contains(err.Error(), outcomeUnknown) {
			t.Fatalf("err = %v, want Nomad's refusal and neither group changed", err)
		}
		if got := w.counts(t); got != [2]int{2, 2} {
			t.Errorf("counts %v after a refused register", got)
		}
	})
	t.Run("Nomad's validation refusal is a 500, and a refusal", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		w.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: wJobPath, Status: http.StatusInternalServerError,
			Message: "1 error occurred:\n\t* Task group front validation failed: 1 error occurred:\n\t* Scaling policy invalid: task group count must not be greater than maximum count in scaling policy\n\n"})
		err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(4, 2, 0, 10, 0, 10)}, tcfg)
		if err == nil || !strings.Contains(err.Error(), outcomeRefused+": neither group was changed") || strings.Contains(err.Error(), outcomeUnknown) {
			t.Fatalf("err = %v, want Nomad's refusal and neither group changed", err)
		}
	})
	// Job.Register's other refusals before it commits, each a 500 in
	// Nomad's words (nomad/job_endpoint.go, job_endpoint_hook_vault.go).
	for _, c := range []struct{ name, msg string }{
		{"legacy Consul token", "job-submitter consul token denied: missing consul token"},
		{"no Vault token", "1 error occurred:\n\t* Vault used in the job but missing Vault token\n\n"},
		{"no Vault (Nomad 1.6)", "1 error occurred:\n\t* Vault not enabled but used in the job\n\n"},
		{"no Vault (Nomad 1.7 to 1.9)", "1 error occurred:\n\t* Vault \"default\" not enabled but used in the job\n\n"},
		{"Vault policies (older Nomad)", "Passed Vault Token doesn't allow access to the following policies: db"},
		{"Vault policies", "1 error occurred:\n\t* Vault token doesn't allow access to the following policies: db\n\n"},
		{"Vault token not found", "1 error occurred:\n\t* failed to lookup Vault token: permission denied\n\n"},
		{"namespace", `mismatched request namespace in request: "prod", "default"`},
		{"job priority (job_max_priority lowered)", "1 error occurred:\n\t* job priority must be between [1, 50]\n\n"},
	} {
		t.Run("Nomad refuses the register: "+c.name, func(t *testing.T) {
			w := newWorld(t, 2, 2)
			tg := w.target(t)
			w.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: wJobPath, Status: http.StatusInternalServerError, Message: c.msg})
			err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(4, 2, 0, 10, 0, 10)}, tcfg)
			if err == nil || !strings.Contains(err.Error(), outcomeRefused+": neither group was changed") || strings.Contains(err.Error(), outcomeUnknown) {
				t.Fatalf("err = %v, want Nomad's refusal and neither group changed", err)
			}
			if got := w.counts(t); got != [2]int{2, 2} {
				t.Errorf("counts %v after a refused register", got)
			}
		})
	}
	// Nomad 1.11's job_max_count, as the stand-in answers it (not a fault:
	// Nomad's text for a scale, and its register's multierror).
	for _, c := range []struct {
		name      string
		cfg       map[string]string
		action    sdk.ScalingAction
		unchanged string
	}{
		{"split: the register past job_max_count", tcfg, sdk.ScalingAction{Count: 9, Meta: quotaMeta(5, 4, 0, 10, 0, 10)}, "neither group was changed"},
		{"single group: the scale past job_max_count", gcfg, sdk.ScalingAction{Count: 7}, "the group was not changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 2, 2)
			if err := w.s.SetJobMaxCount(8); err != nil {
				t.Fatal(err)
			}
			err := w.target(t).Scale(c.action, c.cfg)
			if err == nil || !strings.Contains(err.Error(), "job_max_count") || !strings.Contains(err.Error(), outcomeRefused+": "+c.unchanged) || strings.Contains(err.Error(), outcomeUnknown) {
				t.Fatalf("err = %v, want Nomad's job_max_count refusal and %s", err, c.unchanged)
			}
			if got := w.counts(t); got != [2]int{2, 2} {
				t.Errorf("counts %v after a refused write", got)
			}
		})
	}
	t.Run("a server error may have been applied: the outcome is unknown", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		w.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: wJobPath, Status: http.StatusInternalServerError, Message: "injected: leadership lost while committing log"})
		err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(4, 2, 0, 10, 0, 10)}, tcfg)
		if err == nil || !strings.Contains(err.Error(), outcomeUnknown) || strings.Contains(err.Error(), outcomeRefused) {
			t.Fatalf("err = %v, want the outcome unknown", err)
		}
	})
	t.Run("a gateway's timeout leaves the outcome unknown", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		w.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: wJobPath, Status: http.StatusGatewayTimeout})
		err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(4, 2, 0, 10, 0, 10)}, tcfg)
		if err == nil || !strings.Contains(err.Error(), outcomeUnknown) {
			t.Fatalf("err = %v, want the outcome unknown", err)
		}
	})
	t.Run("a failed event after the register", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		var logs testsupport.SyncBuffer
		tg := NewTarget(hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: &logs}))
		must(t, tg.SetConfig(withKeys(w.agentConfig, PluginKeyRequestTimeout, "300ms", PluginKeyScaleTimeout, "5s")))
		w.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: wJobPath + "/scale", Hang: true})
		start := time.Now()
		if err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(4, 2, 0, 10, 0, 10)}, tcfg); err != nil {
			t.Fatalf("Scale failed after the register applied the split: %v", err)
		}
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("the hung event writes took %s: their budget is request_timeout (300ms)", el)
		}
		if got := w.counts(t); got != [2]int{4, 2} {
			t.Errorf("counts %v, want the registered [4 2]", got)
		}
		if !strings.Contains(logs.String(), "[WARN]") || !strings.Contains(logs.String(), "scaling event was not recorded") || !strings.Contains(logs.String(), "group="+wFirst) {
			t.Errorf("the failed event is not logged as a warning: %q", logs.String())
		}
	})
}

func TestTargetConfigErrors(t *testing.T) {
	w := newWorld(t, 1, 1)
	tg := w.target(t)
	cases := []struct {
		name string
		cfg  map[string]string
		key  string
	}{
		{"no job", withKeys(tcfg, TargetKeyJob, ""), TargetKeyJob},
		{"first group without the second", withKeys(tcfg, TargetKeySecondGroup, ""), TargetKeySecondGroup},
		{"second group without the first", withKeys(tcfg, TargetKeyFirstGroup, ""), TargetKeyFirstGroup},
		{"no group at all", withKeys(tcfg, TargetKeyFirstGroup, "", TargetKeySecondGroup, ""), TargetKeyGroup},
		{"group with split groups", withKeys(tcfg, TargetKeyGroup, wFirst), TargetKeyGroup},
		{"same groups", withKeys(tcfg, TargetKeySecondGroup, wFirst), TargetKeySecondGroup},
		{"bad dry run", withKeys(tcfg, TargetKeyDryRun, "maybe"), TargetKeyDryRun},
		{"unknown key", withKeys(tcfg, "frist_group", "x"), "frist_group"},
		{"an agent setting in a policy", withKeys(tcfg, "nomad_namespace", "prod"), "nomad_namespace"},
		{"the agent's dry-run, not exactly true", withKeys(tcfg, agentKeyDryRun, "True"), agentKeyDryRun},
		{"the agent's dry-run as a number", withKeys(gcfg, agentKeyDryRun, "1"), agentKeyDryRun},
		{"job *", withKeys(tcfg, TargetKeyJob, "*"), TargetKeyJob},
		{"agent job *", withKeys(map[string]string{agentKeyJob: "*", TargetKeyFirstGroup: wFirst, TargetKeySecondGroup: wSecond}), TargetKeyJob},
		{"namespace *", withKeys(tcfg, TargetKeyNamespace, "*"), TargetKeyNamespace},
		{"agent namespace *", withKeys(tcfg, agentKeyNamespace, "*"), TargetKeyNamespace},
		{"quota not a number", withKeys(tcfg, TargetKeyFirstMax, "lots"), TargetKeyFirstMax},
		{"negative quota min: the engine's rule", withKeys(tcfg, TargetKeySecondMin, "-1"), TargetKeySecondMin},
		{"quota max above the engine's limit", withKeys(tcfg, TargetKeyFirstMax, "99999999"), TargetKeyFirstMax},
		{"a host quota in single-group mode", withKeys(gcfg, TargetKeyFirstMax, "4"), TargetKeyFirstMax},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, call := range []func() error{
				func() error { _, err := tg.Status(c.cfg); return err },
				func() error { return tg.Scale(sdk.ScalingAction{Count: 9}, c.cfg) },
			} {
				var ce *ConfigError
				err := call()
				if !errors.As(err, &ce) || ce.Key != c.key {
					t.Errorf("err = %v, want a ConfigError for %q", err, c.key)
				}
				if c.key == "frist_group" && !strings.Contains(fmt.Sprint(err), `did you mean "first_group"?`) {
					t.Errorf("err = %v, want it to suggest first_group", err)
				}
			}
			if got := w.counts(t); got != [2]int{1, 1} {
				t.Errorf("a bad config changed the counts to %v", got)
			}
		})
	}
	// The agent's own target keys are defaults the policy's keys override.
	agent := map[string]string{agentKeyJob: wJob, agentKeyGroup: wFirst, agentKeyNamespace: "default", TargetKeySecondGroup: wSecond}
	if st, err := tg.Status(agent); err != nil || st == nil || st.Count != 2 {
		t.Errorf("status from the agent's Job/Group/Namespace keys: %+v, %v", st, err)
	}
	if st, err := tg.Status(withKeys(agent, TargetKeyJob, "nope")); st != nil || !errors.Is(err, ErrJobNotFound) {
		t.Errorf("the policy's job did not override the agent's Job: %+v, %v", st, err)
	}
	// The agent's dry-run as the agent writes it is accepted.
	for _, v := range []string{"true", "false"} {
		if _, err := tg.Status(withKeys(tcfg, agentKeyDryRun, v)); err != nil {
			t.Errorf("dry-run %q: %v", v, err)
		}
	}
	// The agent's Group alone is single-group mode.
	if st, err := tg.Status(withKeys(agent, TargetKeySecondGroup, "")); err != nil || st == nil || st.Count != 1 {
		t.Errorf("single-group status from the agent's Group key: %+v, %v", st, err)
	}
	// A plugin config key the target does not know is refused.
	if err := NewTarget(nil).SetConfig(withKeys(w.agentConfig, "scale_timout", "5s")); err == nil || !strings.Contains(err.Error(), "scale_timout") {
		t.Errorf("SetConfig with a misspelt key: %v", err)
	}
}

// quotaMeta is a split f + s with each host's quota [fMin, fMax], [sMin, sMax].
func quotaMeta(f, s, fMin, fMax, sMin, sMax int) map[string]any {
	return map[string]any{MetaFirstCount: float64(f), MetaSecondCount: float64(s),
		MetaFirstMin: float64(fMin), MetaFirstMax: float64(fMax), MetaSecondMin: float64(sMin), MetaSecondMax: float64(sMax)}
}

func TestTargetScale(t *testing.T) {
	testsupport.StandinOnly(t, "a job set from Go, its counts read back from the stand-in")
	cases := []struct {
		name   string
		start  [2]int
		action sdk.ScalingAction
		cfg    map[string]string
		prep   func(t *testing.T, w *world)
		want   [2]int
		noop   bool
		errHas string
		// dry: a dry run's count per group, each recorded in one new
		// count-less event; a group not named gets no event
		dry map[string]int
	}{
		{name: "split from the strategy (ints)", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: map[string]any{MetaFirstCount: 4, MetaSecondCount: 3, MetaFirstMax: 10, MetaSecondMax: 10}}, want: [2]int{4, 3}},
		{name: "split over gRPC (float64)", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: quotaMeta(4, 3, 0, 10, 0, 10)}, want: [2]int{4, 3}},
		{name: "agent clamped the sum down", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(6, 4, 0, 10, 0, 10), "nomad_autoscaler.count.capped", true)}, want: [2]int{3, 2}},
		{name: "agent raised the sum above the split and the current counts: refused", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 4, Meta: quotaMeta(0, 1, 0, 10, 0, 10)}, want: [2]int{1, 1}, errHas: "above both the strategy's count and its current count"},
		{name: "agent action without split, quotas from the target config", start: [2]int{2, 6},
			cfg:    withKeys(tcfg, TargetKeyFirstMax, "10", TargetKeySecondMax, "10"),
			action: sdk.ScalingAction{Count: 4, Meta: map[string]any{}}, want: [2]int{1, 3}},
		{name: "agent action without split and no known quota: refused", start: [2]int{2, 6},
			action: sdk.ScalingAction{Count: 4, Meta: map[string]any{}, Reason: "current count (8) above limit (4)"}, want: [2]int{2, 6}, errHas: "no host quota is known"},
		{name: "deployment in progress", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: quotaMeta(4, 3, 0, 10, 0, 10)},
			prep:   func(t *testing.T, w *world) { must(t, w.s.SetDeploymentActive("", wJob, true)) }, want: [2]int{1, 1}, noop: true},
		{name: "dry_run records null-count events", start: [2]int{1, 1}, cfg: withKeys(tcfg, TargetKeyDryRun, "true"),
			action: sdk.ScalingAction{Count: 7, Reason: "why", Meta: quotaMeta(4, 3, 0, 10, 0, 10)}, want: [2]int{1, 1}, dry: map[string]int{wFirst: 4, wSecond: 3}},
		{name: "agent dry-run", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: -1, Reason: "why", Meta: withMeta(quotaMeta(4, 3, 0, 10, 0, 10), "nomad_autoscaler.dry_run", true, agentMetaDryRunCount, 7.0)},
			want:   [2]int{1, 1}, dry: map[string]int{wFirst: 4, wSecond: 3}},
		{name: "a per-host check's action: refused in split mode", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 3, Meta: withMeta(quotaMeta(3, 0, 0, 10, 0, 10), MetaRole, RoleFirst)}, want: [2]int{1, 1}, errHas: "its count is one host's"},
		{name: "a split's action: refused in single-group mode", start: [2]int{1, 1}, cfg: gcfg,
			action: sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(3, 2, 0, 10, 0, 10), MetaRole, RoleSplit)}, want: [2]int{1, 1}, errHas: "its count is the sum of both hosts"},
		{name: "split decided for this job and these groups", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: withMeta(quotaMeta(4, 3, 0, 10, 0, 10), MetaRole, RoleSplit, MetaJob, wJob,
				HostMeta(RoleFirst, MetaGroup), wFirst, HostMeta(RoleSecond, MetaGroup), wSecond)}, want: [2]int{4, 3}},
		{name: "split decided for this job in its namespace", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: withMeta(quotaMeta(4, 3, 0, 10, 0, 10), MetaRole, RoleSplit, MetaJob, wJob, MetaNamespace, "default")},
			want:   [2]int{4, 3}},
		{name: "split decided for a job of this name in another namespace: refused", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: withMeta(quotaMeta(4, 3, 0, 10, 0, 10), MetaRole, RoleSplit, MetaJob, wJob, MetaNamespace, "prod")},
			want:   [2]int{1, 1}, errHas: `the action was decided for job "web" in namespace "prod" (the strategy's namespace), and the target writes it in namespace "default" (namespace)`},
		{name: "split decided for this job in its region", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: withMeta(quotaMeta(4, 3, 0, 10, 0, 10), MetaRole, RoleSplit, MetaJob, wJob, MetaRegion, "global")},
			want:   [2]int{4, 3}},
		{name: "split decided for a job of this name in another region: refused", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: withMeta(quotaMeta(4, 3, 0, 10, 0, 10), MetaRole, RoleSplit, MetaJob, wJob, MetaRegion, "eu-west")},
			want:   [2]int{1, 1}, errHas: `the action was decided for job "web" in region "eu-west" (the job the strategy read), and the target reads it in region "global"`},
		{name: "single-group mode: a count decided in another region: refused", start: [2]int{1, 1}, cfg: gcfg,
			action: sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(5, 0, 0, 10, 0, 10), MetaRole, RoleFirst, MetaRegion, "eu-west")},
			want:   [2]int{1, 1}, errHas: `in region "eu-west" (the job the strategy read), and the target reads it in region "global"`},
		{name: "split decided for another job: refused", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: withMeta(quotaMeta(4, 3, 0, 10, 0, 10), MetaRole, RoleSplit, MetaJob, "api")},
			want:   [2]int{1, 1}, errHas: `the action was decided for job "api" (the strategy's job), and the target writes job "web"`},
		{name: "split decided for the groups in the other order: refused", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: withMeta(quotaMeta(4, 3, 0, 10, 0, 10), MetaRole, RoleSplit, MetaJob, wJob,
				HostMeta(RoleFirst, MetaGroup), wSecond, HostMeta(RoleSecond, MetaGroup), wFirst)},
			want: [2]int{1, 1}, errHas: `the first host's count was decided for group "back" (the strategy's first_group), and the target would write it to group "front" (first_group)`},
		{name: "single-group mode: a host's count decided for another group: refused", start: [2]int{1, 1}, cfg: gcfg,
			action: sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(0, 5, 0, 10, 0, 10), MetaRole, RoleSecond, HostMeta(RoleSecond, MetaGroup), wSecond)},
			want:   [2]int{1, 1}, errHas: `the second host's count was decided for group "back" (the strategy's second_group), and the target would write it to group "front" (group)`},
		{name: "single-group mode: the role's count", start: [2]int{1, 1}, cfg: gcfg,
			action: sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(5, 0, 0, 10, 0, 10), MetaRole, RoleFirst)}, want: [2]int{5, 1}},
		{name: "single-group mode: the agent's own action", start: [2]int{1, 1}, cfg: gcfg,
			action: sdk.ScalingAction{Count: 3, Meta: map[string]any{}, Reason: "current count (1) below limit (3)"}, want: [2]int{3, 1}},
		{name: "single-group mode: a count outside the role's quota", start: [2]int{1, 1}, cfg: gcfg,
			action: sdk.ScalingAction{Count: 12, Meta: withMeta(quotaMeta(8, 0, 0, 8, 0, 10), MetaRole, RoleFirst)}, want: [2]int{1, 1}, errHas: "outside the first host's quota [0, 8]"},
		{name: "single-group mode: deployment in progress", start: [2]int{1, 1}, cfg: gcfg,
			action: sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(5, 0, 0, 10, 0, 10), MetaRole, RoleFirst)},
			prep:   func(t *testing.T, w *world) { must(t, w.s.SetDeploymentActive("", wJob, true)) }, want: [2]int{1, 1}, noop: true},
		{name: "a stopped job: no-op", start: [2]int{1, 1},
			action: sdk.ScalingAction{Count: 7, Meta: quotaMeta(4, 3, 0, 10, 0, 10)},
			prep:   func(t *testing.T, w *world) { must(t, w.s.SetJobStopped("", wJob, true)) }, want: [2]int{1, 1}, noop: true},
		{name: "single-group mode: a stopped job: no-op", start: [2]int{1, 1}, cfg: gcfg,
			action: sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(5, 0, 0, 10, 0, 10), MetaRole, RoleFirst)},
			prep:   func(t *testing.T, w *world) { must(t, w.s.SetJobStopped("", wJob, true)) }, want: [2]int{1, 1}, noop: true},
		{name: "single-group mode: dry run", start: [2]int{1, 1}, cfg: withKeys(gcfg, TargetKeyDryRun, "true"),
			action: sdk.ScalingAction{Count: 5, Reason: "why", Meta: withMeta(quotaMeta(5, 0, 0, 10, 0, 10), MetaRole, RoleFirst)}, want: [2]int{1, 1}, dry: map[string]int{wFirst: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, c.start[0], c.start[1])
			log := &testsupport.SyncBuffer{}
			tg := NewTarget(hclog.New(&hclog.LoggerOptions{Output: log, Level: hclog.Info}))
			must(t, tg.SetConfig(w.agentConfig))
			if c.prep != nil {
				c.prep(t, w)
			}
			cfg := c.cfg
			if cfg == nil {
				cfg = tcfg
			}
			events := [2]int{len(w.group(t, wFirst).Events), len(w.group(t, wSecond).Events)}
			err := tg.Scale(c.action, cfg)
			// A no-op is nil to the agent (see Target.scale), logged as
			// skipped with its reason.
			if skipped := strings.Contains(log.String(), "scaling action skipped"); skipped != c.noop {
				t.Errorf("logged as skipped: %v, want %v (log %q)", skipped, c.noop, log.String())
			}
			switch {
			case c.errHas != "":
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("err = %v, want %q", err, c.errHas)
				}
			case err != nil:
				t.Fatal(err)
			}
			if got := w.counts(t); got != c.want {
				t.Errorf("counts %v, want %v", got, c.want)
			}
			for i, g := range []string{wFirst, wSecond} {
				gs := w.group(t, g)
				n, dry := c.dry[g]
				if !dry {
					if c.dry != nil && len(gs.Events) != events[i] {
						t.Errorf("group %s: %d new events in a dry run that names no count for it, want none", g, len(gs.Events)-events[i])
					}
					continue
				}
				if len(gs.Events) != events[i]+1 || gs.Events[0].Count != nil || !strings.Contains(gs.Events[0].Message, "why") {
					t.Errorf("group %s events %+v, want one new with a null count and the reason", g, gs.Events)
					continue
				}
				if v := gs.Events[0].Meta[MetaDryRunCount]; fmt.Sprint(v) != fmt.Sprint(n) {
					t.Errorf("group %s dry-run event's %s = %v, want %d", g, MetaDryRunCount, v, n)
				}
			}
		})
	}
}

// TestTargetScaleHoldsScalingBlocks: Nomad refuses a register that sets a
// group outside its scaling block's [min, max], whoever sends it; the split
// keeps each group within its block as within its host's quota.
func TestTargetScaleHoldsScalingBlocks(t *testing.T) {
	testsupport.StandinOnly(t, "jobs with scaling blocks set from Go, their counts read back from the stand-in")
	for _, tc := range []struct {
		name   string
		start  [2]int
		meta   map[string]any
		total  int64
		want   [2]int
		errHas string
	}{
		// back may take the remainder: it runs 4 already
		{"what the front block holds moves to back", [2]int{1, 4}, quotaMeta(5, 2, 0, 10, 0, 10), 7, [2]int{3, 4}, ""},
		// back may not: the engine decided 2 there, and 1 run
		{"no split within the block: refused, saying so", [2]int{1, 1}, quotaMeta(5, 2, 0, 10, 0, 10), 7, [2]int{1, 1},
			`group "front" held to its scaling block [0, 3]`},
		{"a quota the block cannot meet: refused, nothing written", [2]int{1, 1}, quotaMeta(5, 2, 4, 10, 0, 10), 7, [2]int{1, 1},
			`group "front"'s scaling block allows [0, 3] and its host's quota is [4, 10]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testsupport.StandinOnly(t, "a job with scaling blocks set from Go, its counts read back from the stand-in")
			s, err := nomadstandin.New()
			must(t, err)
			t.Cleanup(s.Close)
			a, err := s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 20000, MemoryMB: 65536})
			must(t, err)
			b, err := s.AddNode(nomadstandin.NodeSpec{Name: "host-b", CPUMHz: 20000, MemoryMB: 65536})
			must(t, err)
			lo, frontMax, backMax := int64(0), int64(3), int64(10)
			must(t, s.AddJob(nomadstandin.JobSpec{ID: wJob, Groups: []nomadstandin.GroupSpec{
				{Name: wFirst, Count: tc.start[0], CPUMHz: 500, MemoryMB: 64, NodeID: a, ScalingMin: &lo, ScalingMax: &frontMax},
				{Name: wSecond, Count: tc.start[1], CPUMHz: 500, MemoryMB: 64, NodeID: b, ScalingMin: &lo, ScalingMax: &backMax},
			}}))
			tg := targetAt(t, map[string]string{AgentKeyNomadAddress: s.URL()})
			err = tg.Scale(sdk.ScalingAction{Count: tc.total, Meta: tc.meta}, tcfg)
			if tc.errHas == "" && err != nil {
				t.Fatal(err)
			}
			if tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)) {
				t.Fatalf("err = %v, want %q", err, tc.errHas)
			}
			want := tc.want
			if tc.errHas != "" {
				want = tc.start
			}
			for i, g := range []string{wFirst, wSecond} {
				gs, err := s.Group("", wJob, g)
				must(t, err)
				if gs.Count != want[i] {
					t.Errorf("group %s count %d, want %d", g, gs.Count, tc.want[i])
				}
			}
		})
	}
}

func withMeta(m map[string]any, kv ...any) map[string]any {
	out := copyMeta(m)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// TestTargetScaleIsOneRegister: both counts change in one job register
// under check-and-set; then each changed group gets one count-less scaling
// event with its previous and new count.
func TestTargetScaleIsOneRegister(t *testing.T) {
	w := newWorld(t, 5, 1)
	tg := w.target(t)
	from := len(w.s.Requests())
	if err := tg.Scale(sdk.ScalingAction{Count: 6, Reason: "because", Meta: quotaMeta(2, 4, 0, 10, 0, 10)}, tcfg); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range w.puts(from) {
		paths = append(paths, r.Path)
	}
	want := []string{wJobPath, wJobPath + "/scale", wJobPath + "/scale"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Errorf("writes %v, want %v: one register, then one event per group", paths, want)
	}
	if got := w.counts(t); got != [2]int{2, 4} {
		t.Fatalf("counts %v, want [2 4]", got)
	}
	for g, counts := range map[string][2]float64{wFirst: {5, 2}, wSecond: {1, 4}} {
		gs := w.group(t, g)
		if len(gs.Events) != 1 || gs.Events[0].Count != nil || !strings.Contains(gs.Events[0].Message, "because") {
			t.Errorf("group %s events %+v: want one count-less event with the reason", g, gs.Events)
			continue
		}
		if gs.Events[0].Meta[MetaPreviousCount] != counts[0] || gs.Events[0].Meta[MetaNewCount] != counts[1] {
			t.Errorf("group %s event meta %v: want previous %v and new %v", g, gs.Events[0].Meta, counts[0], counts[1])
		}
	}
	// Already at the split: nothing is written.
	from = len(w.s.Requests())
	if err := tg.Scale(sdk.ScalingAction{Count: 6, Meta: quotaMeta(2, 4, 0, 10, 0, 10)}, tcfg); err != nil {
		t.Fatal(err)
	}
	if n := len(w.puts(from)); n != 0 {
		t.Errorf("a split equal to the groups' counts wrote %d times", n)
	}
}

// TestTargetCheckAndSet: a job changed after the strategy read it, or
// between the target's read and its write, is not overwritten; in both
// modes.
func TestTargetCheckAndSet(t *testing.T) {
	testsupport.StandinOnly(t, "the job changed between reads and writes from Go")
	for _, mode := range []struct {
		name   string
		cfg    map[string]string
		action sdk.ScalingAction
		write  string
	}{
		{"split", tcfg, sdk.ScalingAction{Count: 6, Meta: quotaMeta(3, 3, 0, 10, 0, 10)}, wJobPath},
		{"single group", gcfg, sdk.ScalingAction{Count: 3, Meta: withMeta(quotaMeta(3, 0, 0, 10, 0, 10), MetaRole, RoleFirst)}, wJobPath + "/scale"},
	} {
		t.Run(mode.name+": changed since the strategy read it", func(t *testing.T) {
			w := newWorld(t, 2, 2)
			tg := w.target(t)
			must(t, w.s.SetGroupCount("", wJob, wSecond, 7)) // a person's `nomad job run`
			err := tg.Scale(sdk.ScalingAction{Count: mode.action.Count, Meta: withMeta(mode.action.Meta, MetaJobModifyIndex, float64(1))}, mode.cfg)
			if !errors.Is(err, ErrJobChanged) || !strings.Contains(err.Error(), ErrJobChanged.Error()) {
				t.Fatalf("err = %v, want ErrJobChanged", err)
			}
			if got := w.counts(t); got != [2]int{2, 7} {
				t.Errorf("counts %v, want the person's [2 7]", got)
			}
		})
		t.Run(mode.name+": an index of 0 is no reading, not a change", func(t *testing.T) {
			w := newWorld(t, 2, 2)
			from := len(w.s.Requests())
			err := w.target(t).Scale(sdk.ScalingAction{Count: mode.action.Count, Meta: withMeta(mode.action.Meta, MetaJobModifyIndex, float64(0))}, mode.cfg)
			if err == nil || errors.Is(err, ErrJobChanged) || !strings.Contains(err.Error(), MetaJobModifyIndex+" is 0") || !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("err = %v, want the index of 0 named, not ErrJobChanged", err)
			}
			if n := len(w.puts(from)); n != 0 {
				t.Errorf("%d writes for an action with index 0", n)
			}
		})
		t.Run(mode.name+": changed between the target's read and its write", func(t *testing.T) {
			w := newWorld(t, 2, 2)
			tg := w.target(t)
			w.s.SetHook(func(method, path string) {
				if method == http.MethodPut && path == mode.write {
					w.s.SetHook(nil)
					_ = w.s.SetGroupCount("", wJob, wSecond, 9) // checked below
				}
			})
			err := tg.Scale(mode.action, mode.cfg)
			if !errors.Is(err, ErrJobChanged) {
				t.Fatalf("err = %v, want ErrJobChanged", err)
			}
			if got := w.counts(t); got != [2]int{2, 9} {
				t.Errorf("counts %v, want the concurrent change [2 9] kept", got)
			}
			for _, g := range []string{wFirst, wSecond} {
				if gs := w.group(t, g); len(gs.Events) != 0 {
					t.Errorf("group %s got events %+v for a write that did not happen", g, gs.Events)
				}
			}
		})
	}
}

// TestTargetQuotaForAgentActions: an action the agent makes itself carries
// no quota; the target takes each host's from its config or from the
// newest scaling event of the strategy, and never sets a group above it
// (issue 13: "below limit" split [5 5] past first_max = 3).
func TestTargetQuotaForAgentActions(t *testing.T) {
	testsupport.StandinOnly(t, "scaling events and counts set and read back on the stand-in")
	below := sdk.ScalingAction{Count: 10, Direction: sdk.ScaleDirectionUp, Reason: "current count (4) below limit (10)", Meta: map[string]any{}}
	t.Run("from the newest scaling event", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		// The strategy's last action, with first_max 3.
		if err := tg.Scale(sdk.ScalingAction{Count: 4, Meta: quotaMeta(3, 1, 0, 3, 0, 20)}, tcfg); err != nil {
			t.Fatal(err)
		}
		if err := tg.Scale(below, tcfg); err != nil {
			t.Fatal(err)
		}
		if got := w.counts(t); got[0] > 3 || got[0]+got[1] != 10 {
			t.Errorf("counts %v: the first group above its max 3, or not the agent's 10", got)
		}
	})
	t.Run("an event's min lowered by a node hold is not the quota", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		// The strategy's last action held the first group at 1 on a
		// draining node: its min 4 lowered to 1 for that action only.
		held := quotaMeta(1, 3, 1, 10, 0, 20)
		held[HostMeta(RoleFirst, MetaQuotaMin)], held[HostMeta(RoleSecond, MetaQuotaMin)] = 4.0, 0.0
		if err := tg.Scale(sdk.ScalingAction{Count: 4, Meta: held}, tcfg); err != nil {
			t.Fatal(err)
		}
		if err := tg.Scale(below, tcfg); err != nil {
			t.Fatal(err)
		}
		if got := w.counts(t); got[0] < 4 || got[0]+got[1] != 10 {
			t.Errorf("counts %v: the first group below its quota's min 4, or not the agent's 10", got)
		}
	})
	t.Run("from the target config", func(t *testing.T) {
		w := newWorld(t, 2, 2)
		tg := w.target(t)
		if err := tg.Scale(below, withKeys(tcfg, TargetKeyFirstMax, "3", TargetKeySecondMax, "20")); err != nil {
			t.Fatal(err)
		}
		if got := w.counts(t); got != [2]int{3, 7} {
			t.Errorf("counts %v, want [3 7]", got)
		}
	})
}

// TestTargetBadMetaChangesNothing: a malformed split is an error and no
// group is written.
func TestTargetBadMetaChangesNothing(t *testing.T) {
	w := newWorld(t, 2, 2)
	tg := w.target(t)
	err := tg.Scale(sdk.ScalingAction{Count: 7, Meta: map[string]any{MetaFirstCount: "four", MetaSecondCount: 3.0}}, tcfg)
	if err == nil || !strings.Contains(err.Error(), MetaFirstCount) {
		t.Fatalf("err = %v, want one naming %s", err, MetaFirstCount)
	}
	if got := w.counts(t); got != [2]int{2, 2} {
		t.Errorf("counts %v after a refused action", got)
	}
}

// TestTargetLogsHolds: the agent skips a policy whose target is not ready
// with a trace line only, so the target says at info level when a job's
// hold starts (naming the deployment, or a stopped job) and when it ends,
// once each, not at every evaluation.
func TestTargetLogsHolds(t *testing.T) {
	w := newWorld(t, 2, 2)
	tg, buf := loggedTarget(t, w.s.URL())
	lines := func() []string { return takeLines(buf) }
	status(t, tg, tcfg)
	if buf.Len() != 0 {
		t.Fatalf("a ready job logged: %q", buf.String())
	}
	must(t, w.s.SetDeploymentActive("", wJob, true))
	status(t, tg, tcfg)
	status(t, tg, tcfg)
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "not ready to scale") || !strings.Contains(got[0], "job=default/"+wJob) || !strings.Contains(got[0], "deployment ") {
		t.Errorf("two evaluations during a deployment logged %q, want one line naming the job and the deployment", got)
	}
	must(t, w.s.SetDeploymentActive("", wJob, false))
	status(t, tg, tcfg)
	status(t, tg, tcfg)
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "ready to scale again") {
		t.Errorf("after the deployment: %q, want one line", got)
	}
	must(t, w.s.SetJobStopped("", wJob, true))
	status(t, tg, tcfg)
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "the job is stopped") {
		t.Errorf("a stopped job: %q", got)
	}
}

// loggedTarget is a target connected to the Nomad at addr whose log, from
// info level up, goes to the buffer it returns.
func loggedTarget(t *testing.T, addr string) (*Target, *bytes.Buffer) {
	t.Helper()
	buf := &bytes.Buffer{}
	tg := NewTarget(hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: buf}))
	if err := tg.SetConfig(map[string]string{AgentKeyNomadAddress: addr}); err != nil {
		t.Fatal(err)
	}
	return tg, buf
}

// takeLines returns the buffer's lines (none when it is empty) and
// empties it.
func takeLines(buf *bytes.Buffer) []string {
	defer buf.Reset()
	if buf.Len() == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(buf.String()), "\n")
}

// TestTargetWarnsOfBothModes: a split-mode policy and a per-host policy on
// one group undo each other's counts; Status warns once, naming the group,
// when the group's events change mode twice, and not for a move from one
// mode to the other.
func TestTargetWarnsOfBothModes(t *testing.T) {
	w := newWorld(t, 1, 1)
	tg, buf := loggedTarget(t, w.s.URL())
	split := func(f, s int) {
		t.Helper()
		must(t, tg.Scale(sdk.ScalingAction{Count: int64(f + s), Meta: withMeta(quotaMeta(f, s, 0, 10, 0, 10), MetaRole, RoleSplit)}, tcfg))
	}
	perHost := func(n int) {
		t.Helper()
		must(t, tg.Scale(sdk.ScalingAction{Count: int64(n), Meta: withMeta(quotaMeta(n, 0, 0, 10, 0, 10), MetaRole, RoleFirst)}, gcfg))
	}
	warnings := func() []string {
		var out []string
		for _, l := range takeLines(buf) {
			if strings.Contains(l, "[WARN]") {
				out = append(out, l)
			}
		}
		return out
	}
	// A move from split mode to a per-host policy: one change, no warning.
	split(4, 3)
	perHost(5)
	status(t, tg, tcfg)
	status(t, tg, gcfg)
	if got := warnings(); len(got) != 0 {
		t.Fatalf("one move between the modes warned: %q", got)
	}
	// A dry run of split mode changes no count (its events carry the dry
	// run's count): no change of mode.
	must(t, tg.Scale(sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(3, 2, 0, 10, 0, 10), MetaRole, RoleSplit)}, withKeys(tcfg, TargetKeyDryRun, "true")))
	status(t, tg, gcfg)
	if got := warnings(); len(got) != 0 {
		t.Fatalf("a split-mode dry run after a per-host policy warned: %q", got)
	}
	// The split-mode policy scales the group again: two changes.
	split(2, 3)
	status(t, tg, tcfg)
	status(t, tg, gcfg)
	got := warnings()
	if len(got) != 1 || !strings.Contains(got[0], "policies of both modes scale this group") || !strings.Contains(got[0], "group=default/"+wJob+"/"+wFirst) ||
		!strings.Contains(got[0], "2 changes") {
		t.Fatalf("two policies of both modes on one group: warnings %q, want one naming the group and the changes", got)
	}
	perHost(6)
	status(t, tg, gcfg)
	if got := warnings(); len(got) != 0 {
		t.Errorf("the same fight warned again: %q", got)
	}
}

func TestModeSwitches(t *testing.T) {
	ev := func(at uint64, kv ...any) api.ScalingEvent {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return api.ScalingEvent{Time: at, Meta: m}
	}
	split, first, second := ev(90, MetaRole, RoleSplit), ev(90, MetaRole, RoleFirst), ev(90, MetaRole, RoleSecond)
	cases := []struct {
		name   string
		events []api.ScalingEvent
		want   int
	}{
		{"none", nil, 0},
		{"one mode", []api.ScalingEvent{split, split, split}, 0},
		{"a move", []api.ScalingEvent{first, first, split, split}, 1},
		{"both roles of per-host policies are one mode", []api.ScalingEvent{first, second, first}, 0},
		{"a fight", []api.ScalingEvent{split, first, split, second}, 3},
		{"the agent's and a person's events do not count", []api.ScalingEvent{split, ev(90), first, ev(90, "x", 1), split}, 2},
		{"dry runs do not count", []api.ScalingEvent{split, ev(90, MetaRole, RoleFirst, MetaDryRunCount, 3.0), split}, 0},
		{"the agent's dry runs through another target (nomad-target) do not count",
			[]api.ScalingEvent{split, ev(90, MetaRole, RoleFirst, agentMetaDryRunCount, 3.0, "nomad_autoscaler.dry_run", true), split}, 0},
		{"events before the window do not count", []api.ScalingEvent{split, first, ev(10, MetaRole, RoleSplit), ev(10, MetaRole, RoleFirst)}, 1},
	}
	for _, c := range cases {
		if got := modeSwitches(c.events, 50); got != c.want {
			t.Errorf("%s: %d changes, want %d", c.name, got, c.want)
		}
	}
}

// TestTargetNotNomad: an address that reaches another HTTP server answers
// 404 for the job, without Nomad's headers: not "job not found" (which
// reads as a job to register), but an error saying the address may not be
// Nomad's API.
func TestTargetNotNomad(t *testing.T) {
	for name, h := range map[string]http.Handler{
		"404":  http.NotFoundHandler(),
		"page": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<!DOCTYPE html><html>Sign in</html>") }),
	} {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		tg := targetAt(t, map[string]string{AgentKeyNomadAddress: srv.URL})
		_, err := tg.Status(tcfg)
		if errors.Is(err, ErrJobNotFound) || !errors.Is(err, nomadconn.ErrNotNomad) || !strings.Contains(err.Error(), srv.URL) {
			t.Errorf("%s: Status: %v; want ErrNotNomad naming the address, not ErrJobNotFound", name, err)
		}
		for cfg, role := range map[*map[string]string]string{&tcfg: RoleSplit, &gcfg: RoleFirst} {
			err := tg.Scale(sdk.ScalingAction{Count: 3, Meta: withMeta(quotaMeta(3, 0, 0, 10, 0, 10), MetaRole, role)}, *cfg)
			if errors.Is(err, ErrJobNotFound) || !errors.Is(err, nomadconn.ErrNotNomad) {
				t.Errorf("%s: Scale (%v): %v; want ErrNotNomad, not ErrJobNotFound", name, *cfg, err)
			}
		}
	}
}

// TestLogFightEnds: a fight is logged once when it starts and once when
// the group's events show one mode again; a single change left as older
// events leave the window does not end it, nor start one.
func TestLogFightEnds(t *testing.T) {
	var buf bytes.Buffer
	tg := NewTarget(hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &buf}))
	lines := func() []string { return takeLines(&buf) }
	const g = "default/web/front"
	for i, c := range []struct {
		switches int
		want     string // "" for no line
	}{
		{1, ""}, {2, "[WARN]"}, {3, ""}, {1, ""}, {0, "one mode again"}, {0, ""}, {1, ""},
	} {
		tg.logFight(g, c.switches)
		got := lines()
		if (c.want == "") != (len(got) == 0) || (c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want) || !strings.Contains(got[0], g))) {
			t.Errorf("step %d (%d changes): %q, want %q", i, c.switches, got, c.want)
		}
	}
	tg.logFight(g, 2)
	tg.forgetHold("default/web")
	if _, ok := tg.fights[g]; ok {
		t.Error("a job gone (404) kept its groups' fights")
	}
}

// TestTargetLogsWrites: at the agent's default level (info) an operator
// sees what the target wrote, and a dry run says that it changed nothing
// (the agent's own line reads the same for both); a write of the counts
// the groups already have logs nothing.
func TestTargetLogsWrites(t *testing.T) {
	w := newWorld(t, 2, 2)
	tg, buf := loggedTarget(t, w.s.URL())
	lines := func() string { return strings.Join(takeLines(buf), "\n") }
	cases := []struct {
		name   string
		action sdk.ScalingAction
		config map[string]string
		want   []string
		not    []string
	}{
		{"split mode", sdk.ScalingAction{Count: 7, Meta: quotaMeta(3, 4, 0, 10, 0, 10)}, tcfg,
			[]string{"[INFO]", "scaled", "job=" + wJob, "first_group=" + wFirst, `first="2 -> 3"`, "second_group=" + wSecond, `second="2 -> 4"`}, []string{"dry run"}},
		{"split mode, nothing to write", sdk.ScalingAction{Count: 7, Meta: quotaMeta(3, 4, 0, 10, 0, 10)}, tcfg,
			nil, []string{"scaled", "dry run"}},
		{"one group", sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(5, 0, 0, 10, 0, 10), MetaRole, RoleFirst)}, gcfg,
			[]string{"[INFO]", "scaled", "group=" + wFirst, `count="3 -> 5"`}, []string{"dry run"}},
		{"dry run", sdk.ScalingAction{Count: 9, Meta: quotaMeta(5, 4, 0, 10, 0, 10)}, withKeys(tcfg, TargetKeyDryRun, "true"),
			[]string{"[INFO]", "dry run: the group was not changed", "group=" + wFirst, "from=5", "would_be=5", "group=" + wSecond, "would_be=4"}, []string{"scaled"}},
		// (a user trial read `second="17 -> 17"` as a change)
		{"split mode, one group changed", sdk.ScalingAction{Count: 11, Meta: quotaMeta(5, 6, 0, 10, 0, 10)}, tcfg,
			[]string{"[INFO]", "scaled", `first="5 (unchanged)"`, `second="4 -> 6"`}, []string{"5 -> 5"}},
	}
	for _, c := range cases {
		if err := tg.Scale(c.action, c.config); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := lines()
		for _, s := range c.want {
			if !strings.Contains(got, s) {
				t.Errorf("%s: the log lacks %q:\n%s", c.name, s, got)
			}
		}
		for _, s := range c.not {
			if strings.Contains(got, s) {
				t.Errorf("%s: the log has %q:\n%s", c.name, s, got)
			}
		}
	}
	if got := w.counts(t); got != [2]int{5, 6} {
		t.Errorf("counts %v at the end, want [5 6] (the one-group write's 5, the dry run's none, the last split's 6)", got)
	}
}

// TestTargetSplitErrorSaysWhereQuotasCame: a count the hosts' quotas cannot
// hold is refused naming where the quotas came from, so that an operator
// whose config sets none can find them (the strategy's last event).
func TestTargetSplitErrorSaysWhereQuotasCame(t *testing.T) {
	testsupport.StandinOnly(t, "scaling events and counts set and read back on the stand-in")
	agent := sdk.ScalingAction{Count: 9, Direction: sdk.ScaleDirectionUp, Reason: "current count (4) below limit (9)", Meta: map[string]any{}}
	cases := []struct {
		name   string
		config map[string]string
		count  int64 // the agent's
		want   []string
	}{
		{"from the newest scaling event", tcfg, 9, []string{"first [0, 2], second [0, 3]", "quotas from the newest scaling event",
			TargetKeyFirstMin, TargetKeyFirstMax, TargetKeySecondMin, TargetKeySecondMax}},
		{"from the target config", withKeys(tcfg, TargetKeyFirstMax, "1", TargetKeySecondMax, "2"), 9, []string{"first [0, 1], second [0, 2]", "quotas from the target config)"}},
		// One host's quota in the config: the note does not say both
		// hosts' are the config's (found by a user trial).
		{"one host's from the target config", withKeys(tcfg, TargetKeySecondMin, "5"), 2,
			[]string{"quotas from the target config, the second host's only: the first host has no quota"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 1, 1)
			tg := w.target(t)
			must(t, tg.Scale(sdk.ScalingAction{Count: 3, Meta: quotaMeta(1, 2, 0, 2, 0, 3)}, tcfg))
			a := agent
			a.Count = c.count
			err := tg.Scale(a, c.config)
			if err == nil {
				t.Fatalf("an agent count of %d outside the quotas was applied", c.count)
			}
			for _, s := range c.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %v\nwant it to say %q", err, s)
				}
			}
			if got := w.counts(t); got != [2]int{1, 2} {
				t.Errorf("counts %v after a refused action, want [1 2]", got)
			}
		})
	}
}

// TestTargetConfigErrorsNamePlugin: every config error says it is the
// target's, as the agent's log interleaves several plugins' errors.
func TestTargetConfigErrorsNamePlugin(t *testing.T) {
	w := newWorld(t, 1, 1)
	tg := w.target(t)
	for _, cfg := range []map[string]string{
		{TargetKeyFirstGroup: wFirst, TargetKeySecondGroup: wSecond},
		withKeys(tcfg, TargetKeyDryRun, "yes"),
		withKeys(tcfg, "frist_max", "3"),
		withKeys(tcfg, TargetKeyFirstMin, "4", TargetKeyFirstMax, "2"),
	} {
		_, err := tg.Status(cfg)
		if err == nil || !strings.HasPrefix(err.Error(), TargetName+": config ") {
			t.Errorf("Status(%v) err = %v, want it to start %q", cfg, err, TargetName+": config ")
		}
		if n := strings.Count(fmt.Sprint(err), TargetName+":"); n > 1 {
			t.Errorf("err = %v names the plugin %d times", err, n)
		}
	}
}
