package nomadstandin

import (
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// policyBody is a scaling block's policy as Nomad's jobspec parser
// decodes it and its API carries it (blocks as lists of one-key maps,
// numbers as JSON numbers).
func policyBody(cooldown string) map[string]any {
	return map[string]any{
		"cooldown": cooldown,
		"check": []any{map[string]any{"hosts": []any{map[string]any{
			"source": "nomad-apm",
			"strategy": []any{map[string]any{"activation-quota": []any{map[string]any{
				"role": "split", "window": 3.0, "hysteresis": 0.5,
			}}}},
		}}}},
		"target": []any{map[string]any{"host-quota": []any{map[string]any{"second_group": "back"}}}},
	}
}

func scalingJob(id string, groups map[string]*api.ScalingPolicy) *api.Job {
	j := api.NewServiceJob(id, id, "", 50)
	j.Update = &api.UpdateStrategy{MaxParallel: new(0)} // no deployments
	for _, name := range []string{"front", "back"} {
		tg := api.NewTaskGroup(name, 1)
		tg.Scaling = groups[name]
		task := api.NewTask("app", "docker")
		task.Require(&api.Resources{CPU: new(100), MemoryMB: new(64)})
		tg.AddTask(task)
		j.AddTaskGroup(tg)
	}
	return j
}

// TestScalingPolicies: a job's scaling blocks are served as Nomad's state
// store keeps them, through the endpoints the autoscaler's Nomad policy
// source reads: listed by target with the table's index, one read at its
// own ModifyIndex, the ID stable, the indexes moved only by a change of
// the policy (not by a scale or an unchanged registration), disabled while
// the job is stopped (Nomad 1.10.2 and later), deleted with the scaling
// block or the job.
func TestScalingPolicies(t *testing.T) {
	s, c := newStandin(t)
	sc := c.Scaling()
	if _, err := s.AddNode(NodeSpec{Name: "n", CPUMHz: 8000, MemoryMB: 8192}); err != nil {
		t.Fatal(err)
	}
	body := policyBody("1s")
	register := func(j *api.Job) {
		t.Helper()
		if _, _, err := c.Jobs().Register(j, nil); err != nil {
			t.Fatalf("register %s: %v", *j.ID, err)
		}
	}
	register(scalingJob("web", map[string]*api.ScalingPolicy{"front": {Min: new(int64(1)), Max: new(int64(10)), Policy: body}}))
	ten := int64(10)
	if err := s.AddJob(JobSpec{ID: "batch", Namespace: "prod", Groups: []GroupSpec{{Name: "g", ScalingMax: &ten, ScalingPolicy: body}}}); err != nil {
		t.Fatal(err)
	}
	register(scalingJob("api", map[string]*api.ScalingPolicy{
		"front": {Max: new(int64(5)), Policy: policyBody("2s")},
		"back":  {Max: new(int64(5)), Policy: policyBody("3s"), Enabled: new(false)},
	}))

	list := func(q *api.QueryOptions) ([]*api.ScalingPolicyListStub, uint64) {
		t.Helper()
		out, meta, err := sc.ListPolicies(q)
		if err != nil {
			t.Fatalf("list policies %+v: %v", q, err)
		}
		return out, meta.LastIndex
	}
	targets := func(stubs []*api.ScalingPolicyListStub) []string {
		var out []string
		for _, p := range stubs {
			out = append(out, p.Target["Job"]+"/"+p.Target["Group"])
		}
		return out
	}
	all, idx := list(nil) // the default namespace's
	if got, want := targets(all), []string{"api/back", "api/front", "web/front"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("policies %v, want %v (by target)", got, want)
	}
	ids := map[string]*api.ScalingPolicyListStub{}
	for _, p := range all {
		ids[p.Target["Job"]+"/"+p.Target["Group"]] = p
		if p.Type != api.ScalingPolicyTypeHorizontal || p.Target["Namespace"] != DefaultNamespace || p.ID == "" {
			t.Errorf("stub %+v: want type horizontal, namespace default and an ID", p)
		}
	}
	if ids["api/back"].Enabled || !ids["api/front"].Enabled || !ids["web/front"].Enabled {
		t.Errorf("enabled: api/back %t (registered false), api/front %t and web/front %t (unset: true)", ids["api/back"].Enabled, ids["api/front"].Enabled, ids["web/front"].Enabled)
	}
	front := ids["web/front"]

	// The job shows the same policy; one read gives its body.
	job, _, err := c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sp := job.TaskGroups[0].Scaling; sp == nil || sp.ID != front.ID || job.TaskGroups[1].Scaling != nil {
		t.Fatalf("job web's scaling blocks %+v, %+v: want front's with ID %s, none on back", job.TaskGroups[0].Scaling, job.TaskGroups[1].Scaling, front.ID)
	}
	p, meta, err := sc.GetPolicy(front.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Policy, body) || *p.Min != 1 || *p.Max != 10 || !*p.Enabled || meta.LastIndex != p.ModifyIndex {
		t.Fatalf("policy %+v (index %d): want the registered body %v, min 1, max 10, enabled, at its ModifyIndex", p, meta.LastIndex, body)
	}
	if ap, _, err := sc.GetPolicy(ids["api/front"].ID, nil); err != nil || *ap.Min != 1 {
		t.Errorf("api/front's min %v (%v): unset, it is the group's count, 1", ap.Min, err)
	}

	// Filters.
	for _, tc := range []struct {
		name string
		q    map[string]string
		want []string
		byID bool // every namespace: ordered by ID
	}{
		{"job", map[string]string{"job": "web"}, []string{"web/front"}, false},
		{"job and type", map[string]string{"job": "api", "type": "horizontal"}, []string{"api/back", "api/front"}, false},
		{"type prefix", map[string]string{"type": "hori"}, []string{"api/back", "api/front", "web/front"}, false},
		{"other type", map[string]string{"type": "vertical_cpu"}, nil, false},
		{"prefix", map[string]string{"prefix": front.ID, "job": "api"}, []string{"web/front"}, false},
		{"other namespace", map[string]string{"namespace": "prod"}, []string{"batch/g"}, false},
		{"every namespace ignores job", map[string]string{"namespace": "*", "job": "web"}, nil, true},
	} {
		got, _ := list(&api.QueryOptions{Params: tc.q, Namespace: tc.q["namespace"]})
		want := tc.want
		if tc.byID {
			every, _ := list(&api.QueryOptions{Namespace: "*"})
			if len(every) != len(all)+1 {
				t.Fatalf("namespace *: %v, want the default namespace's %v and prod's", targets(every), targets(all))
			}
			want = targets(sortedByID(every))
		}
		if !reflect.DeepEqual(targets(got), want) {
			t.Errorf("%s: %v, want %v", tc.name, targets(got), want)
		}
	}
	resp, err := http.Get(s.URL() + "/v1/scaling/policies?type=vertical_cpu")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(raw)) != "[]" {
		t.Errorf("an empty list is %q, want [] (Nomad answers an empty array, not null)", raw)
	}
	if _, _, err := sc.GetPolicy("00000000-0000-0000-0000-000000000000", nil); err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "policy not found") {
		t.Errorf("an unknown policy: %v, want 404 policy not found", err)
	}

	// A scale and an unchanged registration change no policy: a blocking
	// list query at the table's index waits them out.
	type answer struct {
		index uint64
		err   error
	}
	waited := make(chan answer, 1)
	blockingList := func(wait time.Duration) {
		_, m, err := sc.ListPolicies(&api.QueryOptions{WaitIndex: idx, WaitTime: wait})
		if err != nil {
			waited <- answer{err: err}
			return
		}
		waited <- answer{index: m.LastIndex}
	}
	go blockingList(700 * time.Millisecond)
	if _, _, err := c.Jobs().Scale("web", "front", new(4), "up", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	job, _, err = c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	register(job)
	if got := <-waited; got.err != nil || got.index != idx {
		t.Errorf("after a scale and an unchanged registration the table's index is %d (%v), was %d", got.index, got.err, idx)
	}
	if p2, _, err := sc.GetPolicy(front.ID, nil); err != nil || p2.ModifyIndex != p.ModifyIndex {
		t.Errorf("after a scale: ModifyIndex %d (%v), was %d", p2.ModifyIndex, err, p.ModifyIndex)
	}

	// A changed body: the same ID and CreateIndex, a new ModifyIndex; a
	// blocking query returns with it.
	go blockingList(5 * time.Second)
	job.TaskGroups[0].Scaling.Policy = policyBody("30s")
	register(job)
	var idx2 uint64
	select {
	case a := <-waited:
		if a.err != nil {
			t.Fatal(a.err)
		}
		idx2 = a.index
	case <-time.After(3 * time.Second):
		t.Fatal("a blocking list query did not return when a policy changed")
	}
	p3, _, err := sc.GetPolicy(front.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if idx2 <= idx || p3.ID != front.ID || p3.CreateIndex != p.CreateIndex || p3.ModifyIndex <= p.ModifyIndex || p3.Policy["cooldown"] != "30s" {
		t.Errorf("changed policy: table index %d (was %d), %+v: want the same ID and CreateIndex %d, a later ModifyIndex than %d, cooldown 30s", idx2, idx, p3, p.CreateIndex, p.ModifyIndex)
	}

	// Stopped: disabled (a blocking list returns with it); registered
	// again: enabled.
	go func() {
		stubs, m, err := sc.ListPolicies(&api.QueryOptions{WaitIndex: idx2, WaitTime: 5 * time.Second, Params: map[string]string{"job": "web"}})
		if err != nil || len(stubs) != 1 {
			waited <- answer{err: fmt.Errorf("%v %v", stubs, err)}
			return
		}
		if stubs[0].Enabled || stubs[0].ID != front.ID {
			waited <- answer{err: fmt.Errorf("a stopped job's policy %+v: want front's, disabled", stubs[0])}
			return
		}
		waited <- answer{index: m.LastIndex}
	}()
	if _, _, err := c.Jobs().Deregister("web", false, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-waited:
		if a.err != nil || a.index <= idx2 {
			t.Errorf("a blocking list across the stop: index %d (was %d): %v", a.index, idx2, a.err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a blocking list query did not return when the job stopped")
	}
	job.Stop = new(false)
	register(job)
	if stubs, _ := list(&api.QueryOptions{Params: map[string]string{"job": "web"}}); len(stubs) != 1 || !stubs[0].Enabled {
		t.Errorf("registered again: %+v, want enabled", stubs)
	}

	// The scaling block removed: the policy goes; purged: the job's go.
	_, before := list(nil)
	job.TaskGroups[0].Scaling = nil
	register(job)
	stubs, after := list(nil)
	if got := targets(stubs); !reflect.DeepEqual(got, []string{"api/back", "api/front"}) || after <= before {
		t.Errorf("after web/front's scaling block was removed: %v at index %d (was %d)", got, after, before)
	}
	if _, _, err := sc.GetPolicy(front.ID, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("the removed policy: %v, want 404", err)
	}
	// Added again: a new policy, a new ID.
	job.TaskGroups[0].Scaling = &api.ScalingPolicy{Max: new(int64(10)), Policy: body}
	register(job)
	if stubs, _ := list(&api.QueryOptions{Params: map[string]string{"job": "web"}}); len(stubs) != 1 || stubs[0].ID == front.ID {
		t.Errorf("web/front's scaling block added again: %+v, want one policy with a new ID (not %s)", stubs, front.ID)
	}
	// A group removed: its policy goes.
	apiJob, _, err := c.Jobs().Info("api", nil)
	if err != nil {
		t.Fatal(err)
	}
	apiJob.TaskGroups = apiJob.TaskGroups[1:] // api/back
	register(apiJob)
	if stubs, _ := list(&api.QueryOptions{Params: map[string]string{"job": "api"}}); !reflect.DeepEqual(targets(stubs), []string{"api/back"}) {
		t.Errorf("after api/front was removed: %v, want api/back", targets(stubs))
	}
	_, after = list(nil)
	if _, _, err := c.Jobs().Deregister("api", true, nil); err != nil {
		t.Fatal(err)
	}
	if stubs, last := list(&api.QueryOptions{Params: map[string]string{"job": "api"}}); len(stubs) != 0 || last <= after {
		t.Errorf("after api's purge: %v at index %d (was %d)", targets(stubs), last, after)
	}
}

// sortedByID is a copy of stubs in their IDs' order.
func sortedByID(stubs []*api.ScalingPolicyListStub) []*api.ScalingPolicyListStub {
	cp := slices.Clone(stubs)
	slices.SortFunc(cp, func(a, b *api.ScalingPolicyListStub) int { return strings.Compare(a.ID, b.ID) })
	return cp
}

// TestScalingPolicyFromGo: a scaling block given to AddJob reads as a
// registration would give it (the body as JSON carries it, whatever Go
// types the caller used; an unset min the count) and round-trips: read
// and registered again unchanged, it makes no new version and changes no
// policy. SetGroupCount and SetJobStopped change the policy only by the
// stop; a block without a max is refused, through AddJob and through a
// registration; a blocking read of one policy returns when it changes.
func TestScalingPolicyFromGo(t *testing.T) {
	s, c := newStandin(t)
	sc := c.Scaling()
	if _, err := s.AddNode(NodeSpec{Name: "n", CPUMHz: 8000, MemoryMB: 8192}); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"cooldown": "1s", "check": []map[string]any{{"c": []map[string]any{{"strategy": []map[string]any{{"s": []map[string]any{{"window": 3, "on": true}}}}}}}}}
	ten := int64(10)
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{{Name: "g", Count: 2, CPUMHz: 100, MemoryMB: 64, ScalingMax: &ten, ScalingPolicy: body}}}); err != nil {
		t.Fatal(err)
	}
	body["cooldown"] = "changed by the caller after AddJob"
	stubs, _, err := sc.ListPolicies(nil)
	if err != nil || len(stubs) != 1 {
		t.Fatalf("list: %v %v", stubs, err)
	}
	p, _, err := sc.GetPolicy(stubs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"cooldown": "1s", "check": []any{map[string]any{"c": []any{map[string]any{"strategy": []any{map[string]any{"s": []any{map[string]any{"window": 3.0, "on": true}}}}}}}}}
	if !reflect.DeepEqual(p.Policy, want) || p.Min == nil || *p.Min != 2 {
		t.Fatalf("policy %v min %v, want %v (as JSON carries it, the caller's later change not in it) and min 2 (the count)", p.Policy, p.Min, want)
	}
	job, _, err := c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	after, _, err := c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	p2, _, err := sc.GetPolicy(p.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *after.Version != *job.Version || p2.ModifyIndex != p.ModifyIndex {
		t.Errorf("re-registered as read: version %d -> %d, policy ModifyIndex %d -> %d: want neither to move", *job.Version, *after.Version, p.ModifyIndex, p2.ModifyIndex)
	}
	if err := s.SetGroupCount("", "web", "g", 3); err != nil {
		t.Fatal(err)
	}
	if p3, _, err := sc.GetPolicy(p.ID, nil); err != nil || p3.ModifyIndex != p.ModifyIndex {
		t.Errorf("after SetGroupCount: ModifyIndex %d (%v), want %d", p3.ModifyIndex, err, p.ModifyIndex)
	}

	// A blocking read of the policy returns when SetJobStopped disables it.
	type answer struct {
		p   *api.ScalingPolicy
		err error
	}
	got := make(chan answer, 1)
	go func() {
		p, _, err := sc.GetPolicy(p.ID, &api.QueryOptions{WaitIndex: p.ModifyIndex, WaitTime: 5 * time.Second})
		got <- answer{p, err}
	}()
	time.Sleep(50 * time.Millisecond)
	if err := s.SetJobStopped("", "web", true); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-got:
		if a.err != nil || *a.p.Enabled || a.p.ModifyIndex <= p.ModifyIndex {
			t.Errorf("a blocking read across SetJobStopped: %+v %v, want disabled at a later ModifyIndex than %d", a.p, a.err, p.ModifyIndex)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a blocking read of the policy did not return when the job stopped")
	}
	if err := s.SetJobStopped("", "web", false); err != nil {
		t.Fatal(err)
	}
	if p4, _, err := sc.GetPolicy(p.ID, nil); err != nil || !*p4.Enabled {
		t.Errorf("started again: %+v %v, want enabled", p4, err)
	}

	// A block without a max.
	if err := s.AddJob(JobSpec{ID: "nomax", Groups: []GroupSpec{{Name: "g", ScalingPolicy: body}}}); err == nil || !strings.Contains(err.Error(), "ScalingMax") {
		t.Errorf("AddJob of a scaling block without a max: %v, want an error naming ScalingMax", err)
	}
	j := scalingJob("nomax", map[string]*api.ScalingPolicy{"front": {Policy: policyBody("1s")}})
	if _, _, err := c.Jobs().Register(j, nil); err == nil || !strings.Contains(err.Error(), "maximum count must be specified") {
		t.Errorf("a registration with a scaling block without a max: %v, want Nomad's validation error", err)
	}

	// An unknown policy's 404 carries the policies table's index.
	resp, err := http.Get(s.URL() + "/v1/scaling/policy/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, meta, err := sc.ListPolicies(nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("X-Nomad-Index") != fmt.Sprint(meta.LastIndex) {
		t.Errorf("unknown policy: %d, X-Nomad-Index %s, want 404 at the table's index %d", resp.StatusCode, resp.Header.Get("X-Nomad-Index"), meta.LastIndex)
	}
}
