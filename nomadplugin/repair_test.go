package nomadplugin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/sdk"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
)

// agentEval is one policy evaluation as the agent does it: target status,
// strategy run, clamp to the policy's [min, max], skip when the count does
// not change, meta through JSON as over gRPC, target scale.
func agentEval(t *testing.T, st *Strategy, tg *Target, cfg map[string]string, min, max int64) (*sdk.ScalingAction, error) {
	t.Helper()
	status, err := tg.Status(tcfg)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	ev, err := st.Run(newEval("repair", cfg), status.Count)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	a := *ev.Action
	if a.Direction == sdk.ScaleDirectionNone {
		return &a, nil
	}
	a.Canonicalize()
	a.CapCount(min, max)
	if a.Count == status.Count {
		return &a, nil
	}
	b, err := json.Marshal(a.Meta)
	if err != nil {
		t.Fatal(err)
	}
	a.Meta = nil
	if err := json.Unmarshal(b, &a.Meta); err != nil {
		t.Fatal(err)
	}
	return &a, tg.Scale(a, tcfg)
}

func splitConfig() map[string]string {
	return map[string]string{
		KeyRole: RoleSplit, KeyJob: wJob, KeyWindow: "5",
		PrefixFirst + KeyNodeName: "host-a", PrefixFirst + KeyGroup: wFirst,
		PrefixSecond + KeyNodeName: "host-b", PrefixSecond + KeyGroup: wSecond,
	}
}

// TestFailureBetweenWritesIsRepaired: the two groups change in two writes.
// When the second write fails, the first group already has its new count;
// the next evaluation brings the second group to its count.
func TestFailureBetweenWritesIsRepaired(t *testing.T) {
	w := newWorld(t, 1, 1)
	// Light replicas: both hosts can take more than one.
	if err := w.s.SetGroupUsage("", wJob, wFirst, 600, 200); err != nil {
		t.Fatal(err)
	}
	if err := w.s.SetGroupUsage("", wJob, wSecond, 500, 200); err != nil {
		t.Fatal(err)
	}
	st := NewStrategy(hclog.NewNullLogger())
	if err := st.SetConfig(w.agentConfig); err != nil {
		t.Fatal(err)
	}
	tg := w.target(t)
	cfg := splitConfig()

	// Which group grows? The growing one is written first, so the fault
	// goes on the other group's write.
	probe, err := st.Run(newEval("probe", cfg), 2)
	if err != nil {
		t.Fatal(err)
	}
	f, s := probe.Action.Meta[MetaFirstCount].(int), probe.Action.Meta[MetaSecondCount].(int)
	if f == 1 || s == 1 {
		t.Fatalf("the decision %d + %d leaves a group at 1: this test needs both groups to change; change the usage", f, s)
	}
	second := wSecond
	if s-1 > f-1 {
		second = wFirst
	}
	w.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: "/v1/job/" + wJob + "/scale", Group: second, Times: 1, Status: 500, Message: "injected: raft apply failed"})

	a, err := agentEval(t, st, tg, cfg, 0, 100)
	if err == nil {
		t.Fatalf("the scale with a failing second write returned no error (action %+v)", a)
	}
	got := w.counts(t)
	changed := 0
	for i, g := range []string{wFirst, wSecond} {
		if got[i] != 1 {
			changed++
			if g == second {
				t.Errorf("group %s changed although its write failed", g)
			}
		}
	}
	if changed != 1 {
		t.Fatalf("after the failure %d groups changed (%v), want exactly the first-written one", changed, got)
	}

	// The next evaluation repairs.
	a, err = agentEval(t, st, tg, cfg, 0, 100)
	if err != nil {
		t.Fatalf("repairing evaluation: %v", err)
	}
	want := [2]int{int(a.Meta[MetaFirstDecided].(float64)), int(a.Meta[MetaSecondDecided].(float64))}
	if got := w.counts(t); got != want {
		t.Errorf("after the repairing evaluation the groups are %v, the decision %v", got, want)
	}
	// And a further evaluation has nothing to do.
	a, err = agentEval(t, st, tg, cfg, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if st2 := w.counts(t); st2 != want {
		t.Errorf("a settled state moved again: %v -> %v (%s)", want, st2, a.Reason)
	}
}

// TestTokenNeverLogged: with ACLs on and the plugins logging at trace level,
// the token reaches Nomad and appears in no log line, reason or error.
func TestTokenNeverLogged(t *testing.T) {
	w := newWorld(t, 1, 1)
	const token = "tok-0123456789abcdef"
	w.s.RequireToken(token, nomadstandin.TokenPolicy{Write: true})
	var buf strings.Builder
	var mu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})})
	st := NewStrategy(logger)
	tg := NewTarget(logger)
	cfg := map[string]string{AgentKeyNomadAddress: w.s.URL(), AgentKeyNomadToken: token}
	if err := st.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if err := tg.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	_ = w.s.SetGroupUsage("", wJob, wFirst, 600, 200)
	_ = w.s.SetGroupUsage("", wJob, wSecond, 500, 200)
	a, err := agentEval(t, st, tg, splitConfig(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	// A refused token: the errors and reasons do not show it either.
	bad := map[string]string{AgentKeyNomadAddress: w.s.URL(), AgentKeyNomadToken: "wrong-" + token}
	st2, tg2 := NewStrategy(logger), NewTarget(logger)
	_ = st2.SetConfig(bad)
	_ = tg2.SetConfig(bad)
	ev, err := st2.Run(newEval("bad-token", splitConfig()), 2)
	if err != nil {
		t.Fatal(err)
	}
	_, statusErr := tg2.Status(tcfg)
	if statusErr == nil || !strings.Contains(statusErr.Error(), "403") {
		t.Errorf("status with a wrong token: %v, want a 403", statusErr)
	}
	if !strings.Contains(ev.Action.Reason, "Permission denied") {
		t.Errorf("reason with a wrong token: %q", ev.Action.Reason)
	}
	mu.Lock()
	logs := buf.String()
	mu.Unlock()
	if !strings.Contains(logs, "decision request") {
		t.Fatalf("no trace logs were written: the check proves nothing")
	}
	for what, text := range map[string]string{"logs": logs, "reason": a.Reason + ev.Action.Reason, "error": fmt.Sprint(statusErr)} {
		if strings.Contains(text, token) {
			t.Errorf("the token appears in the %s", what)
		}
	}
	for _, r := range w.s.Requests() {
		if r.Status == http.StatusForbidden && r.HadToken {
			continue // the wrong token's requests
		}
		if !r.HadToken {
			t.Errorf("request %s %s came without a token", r.Method, r.Path)
		}
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
