package nomadplugin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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
	cfg := splitConfig()
	// The premise: the first evaluation changes both groups and their sum
	// (a split at an unchanged sum is applied in two evaluations, one
	// write each). Find start counts and usage for which the engine's
	// decision does that, whatever the models are.
	type fixture struct {
		start    [2]int
		cpu      [2]float64
		decision [2]int
	}
	var fx *fixture
	var tried []string
search:
	for _, cpu := range [][2]float64{{600, 500}, {300, 300}, {1500, 1200}, {100, 100}, {3000, 2500}} {
		for _, start := range [][2]int{{1, 1}, {2, 2}, {4, 4}, {1, 4}, {4, 1}, {8, 8}} {
			w := newWorld(t, start[0], start[1])
			if err := w.s.SetGroupUsage("", wJob, wFirst, cpu[0], 200); err != nil {
				t.Fatal(err)
			}
			if err := w.s.SetGroupUsage("", wJob, wSecond, cpu[1], 200); err != nil {
				t.Fatal(err)
			}
			probe := NewStrategy(hclog.NewNullLogger())
			if err := probe.SetConfig(w.agentConfig); err != nil {
				t.Fatal(err)
			}
			ev, err := probe.Run(newEval("probe", cfg), int64(start[0]+start[1]))
			if err != nil {
				t.Fatal(err)
			}
			d := [2]int{ev.Action.Meta[MetaFirstDecided].(int), ev.Action.Meta[MetaSecondDecided].(int)}
			tried = append(tried, fmt.Sprintf("start %v cpu %v -> %v", start, cpu, d))
			if d[0] != start[0] && d[1] != start[1] && d[0]+d[1] != start[0]+start[1] && d[0]+d[1] <= 100 {
				fx = &fixture{start, cpu, d}
				break search
			}
		}
	}
	if fx == nil {
		t.Fatalf("no start counts and usage make the engine change both groups and their sum in one evaluation; the test cannot show a failure between two writes. Tried:\n%s", strings.Join(tried, "\n"))
	}
	t.Logf("start %v, usage %v MHz per replica: the engine decides %v", fx.start, fx.cpu, fx.decision)
	w := newWorld(t, fx.start[0], fx.start[1])
	if err := w.s.SetGroupUsage("", wJob, wFirst, fx.cpu[0], 200); err != nil {
		t.Fatal(err)
	}
	if err := w.s.SetGroupUsage("", wJob, wSecond, fx.cpu[1], 200); err != nil {
		t.Fatal(err)
	}
	st := NewStrategy(hclog.NewNullLogger())
	if err := st.SetConfig(w.agentConfig); err != nil {
		t.Fatal(err)
	}
	tg := w.target(t)

	// The growing group is written first, so the fault goes on the
	// other group's write.
	second, secondIdx := wSecond, 1
	if fx.decision[1]-fx.start[1] > fx.decision[0]-fx.start[0] {
		second, secondIdx = wFirst, 0
	}
	w.s.InjectFault(nomadstandin.Fault{Method: http.MethodPut, Path: "/v1/job/" + wJob + "/scale", Group: second, Times: 1, Status: 500, Message: "injected: raft apply failed"})

	a, err := agentEval(t, st, tg, cfg, 0, 100)
	if err == nil {
		t.Fatalf("the scale with a failing second write returned no error (action %+v)", a)
	}
	if !strings.Contains(err.Error(), "already changed") {
		t.Errorf("the error does not say a group was already changed: %v", err)
	}
	got := w.counts(t)
	want := fx.decision
	want[secondIdx] = fx.start[secondIdx]
	if got != want {
		t.Fatalf("after the failure the groups are %v, want %v: the first-written group at its decided count, %s still at %d", got, want, second, fx.start[secondIdx])
	}

	// The next evaluation repairs.
	a, err = agentEval(t, st, tg, cfg, 0, 100)
	if err != nil {
		t.Fatalf("repairing evaluation: %v", err)
	}
	for i, k := range []string{MetaFirstDecided, MetaSecondDecided} {
		n, ok, err := metaInt(a.Meta, k)
		if err != nil || !ok {
			t.Fatalf("repairing action meta %s: %v (present %v)", k, err, ok)
		}
		want[i] = int(n)
	}
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
	if err := w.s.SetGroupUsage("", wJob, wFirst, 600, 200); err != nil {
		t.Fatal(err)
	}
	if err := w.s.SetGroupUsage("", wJob, wSecond, 500, 200); err != nil {
		t.Fatal(err)
	}
	a, err := agentEval(t, st, tg, splitConfig(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	// A refused token: the errors and reasons do not show it either.
	bad := map[string]string{AgentKeyNomadAddress: w.s.URL(), AgentKeyNomadToken: "wrong-" + token}
	st2, tg2 := NewStrategy(logger), NewTarget(logger)
	if err := st2.SetConfig(bad); err != nil {
		t.Fatal(err)
	}
	if err := tg2.SetConfig(bad); err != nil {
		t.Fatal(err)
	}
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
	// Nomad answers 500 with the token in the body (a proxy echoing the
	// request, say): neither the strategy's reason nor the target's errors
	// carry it.
	w.s.InjectFault(nomadstandin.Fault{Status: 500, Message: "upstream failed for X-Nomad-Token: " + token})
	ev500, err := st.Run(newEval("echo", splitConfig()), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ev500.Action.Reason, "no scaling: ") || !strings.Contains(ev500.Action.Reason, "upstream failed") {
		t.Errorf("reason for a 500: %q, want a no-scaling reason quoting Nomad's error", ev500.Action.Reason)
	}
	_, status500 := tg.Status(tcfg)
	scale500 := tg.Scale(sdk.ScalingAction{Count: 3, Meta: map[string]any{MetaFirstCount: 2, MetaSecondCount: 1}}, tcfg)
	if status500 == nil || scale500 == nil || !strings.Contains(status500.Error()+scale500.Error(), "upstream failed") {
		t.Errorf("status and scale under a 500: %v; %v; want errors quoting Nomad's answer", status500, scale500)
	}
	w.s.ClearFaults()
	// A reason and meta carrying the token (a strategy that did not
	// redact) never reach Nomad's scaling events.
	leaky := sdk.ScalingAction{Count: 5, Reason: "reason " + token, Meta: map[string]any{MetaFirstCount: 3, MetaSecondCount: 2, "note": "meta " + token}}
	if err := tg.Scale(leaky, tcfg); err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, g := range []string{wFirst, wSecond} {
		gs, err := w.s.Group("", wJob, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range gs.Events {
			events++
			if strings.Contains(e.Message+fmt.Sprint(e.Meta), token) {
				t.Errorf("the token appears in a scaling event of %s: %q %v", g, e.Message, e.Meta)
			}
		}
	}
	if events == 0 {
		t.Fatalf("no scaling events were written: the event check proves nothing")
	}

	mu.Lock()
	logs := buf.String()
	mu.Unlock()
	if !strings.Contains(logs, "decision request") {
		t.Fatalf("no trace logs were written: the check proves nothing")
	}
	for what, text := range map[string]string{"logs": logs, "reason": a.Reason + ev.Action.Reason + ev500.Action.Reason,
		"error": fmt.Sprint(statusErr) + fmt.Sprint(status500) + fmt.Sprint(scale500)} {
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

// TestStaleNomadStats: usage = "nomad" takes the sample time from Nomad's
// stats Timestamp; stats older than max_age scale nothing, and the reason
// says why.
func TestStaleNomadStats(t *testing.T) {
	w := newWorld(t, 2, 2)
	st := NewStrategy(hclog.NewNullLogger())
	if err := st.SetConfig(w.agentConfig); err != nil {
		t.Fatal(err)
	}
	cfg := splitConfig()
	cfg[KeyMaxAge] = "5m"
	for _, tc := range []struct {
		name  string
		age   time.Duration
		stale bool
	}{
		{"a minute old", time.Minute, false},
		{"fresh", 0, false},
		{"older than max_age", 10 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.s.SetStatsAge(tc.age)
			ev, err := st.Run(newEval("stale-"+tc.name, cfg), 4)
			if err != nil {
				t.Fatal(err)
			}
			r := ev.Action.Reason
			isStale := strings.HasPrefix(r, "no scaling: ") && strings.Contains(r, "usage is stale") && strings.Contains(r, KeyMaxAge)
			if isStale != tc.stale {
				t.Errorf("stats %s old, max_age 5m: reason %q (stale: %v, want %v)", tc.age, r, isStale, tc.stale)
			}
			if !tc.stale && strings.HasPrefix(r, "no scaling: ") {
				t.Errorf("stats %s old: %q", tc.age, r)
			}
			if tc.stale && ev.Action.Direction != sdk.ScaleDirectionNone {
				t.Errorf("stale usage scaled %s", ev.Action.Direction)
			}
		})
	}
}
