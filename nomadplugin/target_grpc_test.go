package nomadplugin

import (
	"strings"
	"testing"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/sdk"

	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// TestTargetOverGRPC: the target's contract with the agent holds across
// the plugin's gRPC boundary, where only a status and an error's text
// cross:
//   - an unknown job is an error naming it (a nil status panicked the
//     SDK's server, ending the plugin's process for every policy), and the
//     plugin serves the next call;
//   - a no-op (a deployment in progress, a stopped job) is nil, in both
//     modes: its error type does not cross gRPC, so the agent would count
//     a failed scale; nothing is written and the log says why.
func TestTargetOverGRPC(t *testing.T) {
	w := newWorld(t, 1, 1)
	log := &testsupport.SyncBuffer{}
	impl := NewTarget(hclog.New(&hclog.LoggerOptions{Output: log, Level: hclog.Info}))
	must(t, impl.SetConfig(w.agentConfig))
	tg := testsupport.GRPCTarget(t, impl)

	st, err := tg.Status(withKeys(tcfg, TargetKeyJob, "gone"))
	if err == nil || st != nil || !strings.Contains(err.Error(), `job not found: "gone" in namespace "default"`) {
		t.Fatalf("Status of an unknown job over gRPC: %+v, %v; want an error naming it", st, err)
	}
	if st, err := tg.Status(tcfg); err != nil || st == nil || st.Count != 2 || !st.Ready {
		t.Fatalf("Status after the unknown job: %+v, %v; want the plugin still serving, ready, count 2", st, err)
	}
	if err := tg.Scale(sdk.ScalingAction{Count: 5, Meta: quotaMeta(3, 2, 0, 10, 0, 10)}, withKeys(tcfg, TargetKeyJob, "gone")); err == nil || !strings.Contains(err.Error(), "job not found") {
		t.Errorf("Scale of an unknown job over gRPC: %v; want job not found", err)
	}

	skips := []struct {
		name   string
		prep   func()
		undo   func()
		cfg    map[string]string
		action sdk.ScalingAction
		reason string
	}{
		{"split, deployment in progress", func() { must(t, w.s.SetDeploymentActive("", wJob, true)) }, func() { must(t, w.s.SetDeploymentActive("", wJob, false)) },
			tcfg, sdk.ScalingAction{Count: 5, Meta: quotaMeta(3, 2, 0, 10, 0, 10)}, "is running; neither group was changed"},
		{"single group, deployment in progress", func() { must(t, w.s.SetDeploymentActive("", wJob, true)) }, func() { must(t, w.s.SetDeploymentActive("", wJob, false)) },
			gcfg, sdk.ScalingAction{Count: 5, Meta: withMeta(quotaMeta(5, 0, 0, 10, 0, 10), MetaRole, RoleFirst)}, "deployment"},
		{"split, stopped job", func() { must(t, w.s.SetJobStopped("", wJob, true)) }, func() { must(t, w.s.SetJobStopped("", wJob, false)) },
			tcfg, sdk.ScalingAction{Count: 5, Meta: quotaMeta(3, 2, 0, 10, 0, 10)}, "it is stopped"},
	}
	for _, c := range skips {
		t.Run(c.name, func(t *testing.T) {
			c.prep()
			defer c.undo()
			from := len(w.s.Requests())
			logged := len(log.String())
			if err := tg.Scale(c.action, c.cfg); err != nil {
				t.Errorf("Scale: %v; want nil (a no-op the agent cannot tell from a failure across gRPC)", err)
			}
			// (single-group mode sends its scale request and Nomad refuses
			// it during a deployment: only an accepted write is one)
			for _, p := range w.puts(from) {
				if p.Status < 300 {
					t.Errorf("a skipped action wrote %+v", p)
				}
			}
			if got := w.counts(t); got != [2]int{1, 1} {
				t.Errorf("counts %v after a skipped action", got)
			}
			if l := log.String()[logged:]; !strings.Contains(l, "scaling action skipped") || !strings.Contains(l, c.reason) {
				t.Errorf("log %q; want the skip and its reason %q", l, c.reason)
			}
		})
	}

	// A real refusal still crosses as an error.
	err = tg.Scale(sdk.ScalingAction{Count: 12, Meta: withMeta(quotaMeta(12, 0, 0, 8, 0, 10), MetaRole, RoleFirst)}, gcfg)
	if err == nil || !strings.Contains(err.Error(), "outside the first host's quota [0, 8]") {
		t.Errorf("a count outside the quota over gRPC: %v", err)
	}
}

// TestTargetConfigQuotaUnused: a host's max in the target config below
// the one the action carries is not applied (the action's quota is), and
// the log says so, naming the key and both maxima; a config that is no
// tighter (the same max, a min alone, a higher max) logs nothing.
func TestTargetConfigQuotaUnused(t *testing.T) {
	testsupport.StandinOnly(t, "a job set from Go, its counts read back from the stand-in")
	cases := []struct {
		name string
		cfg  []string
		warn bool
	}{
		{"a lower first_max", []string{TargetKeyFirstMax, "3"}, true},
		{"the same first_max", []string{TargetKeyFirstMax, "10"}, false},
		{"a higher second_max", []string{TargetKeySecondMax, "40"}, false},
		{"first_min alone", []string{TargetKeyFirstMin, "1"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 1, 1)
			log := &testsupport.SyncBuffer{}
			tg := NewTarget(hclog.New(&hclog.LoggerOptions{Output: log, Level: hclog.Info}))
			must(t, tg.SetConfig(w.agentConfig))
			if err := tg.Scale(sdk.ScalingAction{Count: 7, Meta: quotaMeta(6, 1, 0, 10, 0, 10)}, withKeys(tcfg, c.cfg...)); err != nil {
				t.Fatal(err)
			}
			if got := w.counts(t); got != [2]int{6, 1} {
				t.Errorf("counts %v, want the action's split 6 + 1 within its quota [0, 10]", got)
			}
			l := log.String()
			warned := strings.Contains(l, "is not a cap")
			if warned != c.warn {
				t.Fatalf("warned %v, want %v: %q", warned, c.warn, l)
			}
			if c.warn && (!strings.Contains(l, "key=first_max") || !strings.Contains(l, "config_max=3") || !strings.Contains(l, "action_max=10")) {
				t.Errorf("log %q; want the key and both maxima", l)
			}
		})
	}
}
