package nomadstandin

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

const blockedText = "job scaling blocked due to active deployment"

func TestDeployments(t *testing.T) {
	cases := []struct {
		name string
		// change starts a deployment by a count change
		change       func(t *testing.T, s *Server, c *api.Client)
		autoComplete time.Duration
	}{
		{name: "scale, auto-complete", autoComplete: 300 * time.Millisecond, change: func(t *testing.T, s *Server, c *api.Client) {
			three := 3
			if _, _, err := c.Jobs().Scale("web", "g", &three, "up", false, nil, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "job register, auto-complete", autoComplete: 300 * time.Millisecond, change: func(t *testing.T, s *Server, c *api.Client) {
			j, _, err := c.Jobs().Info("web", nil)
			if err != nil {
				t.Fatal(err)
			}
			*j.TaskGroups[0].Count = 3
			if _, _, err := c.Jobs().Register(j, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "SetGroupCount, manual", change: func(t *testing.T, s *Server, c *api.Client) {
			if err := s.SetGroupCount("", "web", "g", 3); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, cl := newStandin(t)
			n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 8000, MemoryMB: 8192}))
			if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{
				{Name: "g", Count: 2, CPUMHz: 100, MemoryMB: 64, NodeID: n, Update: &UpdateSpec{MaxParallel: 1, AutoComplete: c.autoComplete}},
				{Name: "plain", Count: 1, CPUMHz: 100, MemoryMB: 64, NodeID: n},
			}}); err != nil {
				t.Fatal(err)
			}
			// AddJob: the first deployment is already successful.
			d, _, err := cl.Jobs().LatestDeployment("web", nil)
			if err != nil || d == nil || d.Status != api.DeploymentStatusSuccessful {
				t.Fatalf("initial deployment %+v %v", d, err)
			}
			j, _, _ := cl.Jobs().Info("web", nil)
			if u := j.TaskGroups[0].Update; u == nil || *u.MaxParallel != 1 {
				t.Errorf("group g update %+v, want max_parallel 1", u)
			}
			if u := j.TaskGroups[1].Update; u == nil || *u.MaxParallel != 0 {
				t.Errorf("group plain update %+v, want max_parallel 0 (no deployments)", u)
			}
			start := time.Now()
			c.change(t, s, cl)
			d, _, err = cl.Jobs().LatestDeployment("web", nil)
			if err != nil || d == nil || d.Status != api.DeploymentStatusRunning || d.StatusDescription != "Deployment is running" {
				t.Fatalf("after the change: deployment %+v %v", d, err)
			}
			if st := d.TaskGroups["g"]; st == nil || st.DesiredTotal != 3 || d.TaskGroups["plain"] != nil {
				t.Errorf("deployment groups %+v", d.TaskGroups)
			}
			if st, _, _ := cl.Jobs().ScaleStatus("web", nil); st.TaskGroups["g"].Running != 3 || st.TaskGroups["g"].Healthy != 2 {
				t.Errorf("during the deployment: %+v, want 3 running, 2 healthy", st.TaskGroups["g"])
			}
			// Any count change is refused while it runs, in any group;
			// an event-only request is not.
			for _, grp := range []string{"g", "plain"} {
				four := 4
				_, _, err := cl.Jobs().Scale("web", grp, &four, "", false, nil, nil)
				if statusOf(err) != 400 || !strings.Contains(err.Error(), blockedText) {
					t.Errorf("scale of %s during a deployment: %v, want 400 %q", grp, err, blockedText)
				}
			}
			if _, _, err := cl.Jobs().Scale("web", "g", nil, "just an event", false, nil, nil); err != nil {
				t.Errorf("event-only scale during a deployment: %v", err)
			}
			if c.autoComplete == 0 {
				time.Sleep(100 * time.Millisecond)
				if d, _, _ := cl.Jobs().LatestDeployment("web", nil); d.Status != api.DeploymentStatusRunning {
					t.Fatalf("a manual deployment ended on its own: %s", d.Status)
				}
				if err := s.SetDeploymentActive("", "web", false); err != nil {
					t.Fatal(err)
				}
			} else {
				// A blocking query on the deployment is released when it completes.
				_, meta, _ := cl.Jobs().LatestDeployment("web", nil)
				_, _, err = cl.Jobs().LatestDeployment("web", &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took < c.autoComplete {
					t.Errorf("completed after %v, before its AutoComplete %v", took, c.autoComplete)
				}
			}
			d, _, _ = cl.Jobs().LatestDeployment("web", nil)
			if d.Status != api.DeploymentStatusSuccessful || d.StatusDescription != "Deployment completed successfully" {
				t.Fatalf("deployment did not complete: %+v", d)
			}
			if st, _, _ := cl.Jobs().ScaleStatus("web", nil); st.TaskGroups["g"].Healthy != 3 {
				t.Errorf("after the deployment: %+v, want 3 healthy", st.TaskGroups["g"])
			}
			four := 4
			if _, _, err := cl.Jobs().Scale("web", "g", &four, "", false, nil, nil); err != nil {
				t.Errorf("scale after the deployment: %v", err)
			}
			ds, _, err := cl.Jobs().Deployments("web", false, nil)
			if err != nil || len(ds) != 3 {
				t.Errorf("deployments %d, %v; want 3 (initial, the change, the last scale)", len(ds), err)
			}
		})
	}
}

func TestNewerVersionCancelsDeployment(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 8000, MemoryMB: 8192}))
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{{Name: "g", Count: 1, CPUMHz: 100, NodeID: n, Update: &UpdateSpec{}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetGroupCount("", "web", "g", 2); err != nil {
		t.Fatal(err)
	}
	first, _, _ := cl.Jobs().LatestDeployment("web", nil)
	// A registration is not blocked by a deployment; it replaces it.
	if err := s.SetGroupCount("", "web", "g", 3); err != nil {
		t.Fatal(err)
	}
	d, _, err := cl.Deployments().Info(first.ID, nil)
	if err != nil || d.Status != api.DeploymentStatusCancelled || d.StatusDescription != "Cancelled due to newer version of job" {
		t.Errorf("older deployment %+v %v", d, err)
	}
	if err := s.SetJobStopped("", "web", true); err != nil {
		t.Fatal(err)
	}
	last, _, _ := cl.Jobs().LatestDeployment("web", nil)
	if last.Status != api.DeploymentStatusCancelled || last.StatusDescription != "Cancelled because job is stopped" {
		t.Errorf("deployment of a stopped job %+v", last)
	}
}

// TestJobMaxCount: a scale or a registration whose groups' counts add up
// to more than the server's job_max_count is refused with Nomad's text
// (500), before anything changes; at the limit it passes; 0 is no limit.
// A registration is refused for it before its index is enforced, as
// Nomad's admission controllers run first.
func TestJobMaxCount(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 64000, MemoryMB: 65536}))
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{{Name: "a", Count: 2, CPUMHz: 100, NodeID: n}, {Name: "b", Count: 3, CPUMHz: 100, NodeID: n}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetJobMaxCount(10); err != nil {
		t.Fatal(err)
	}
	scale := func(count int64) error {
		_, _, err := cl.Jobs().Scale("web", "a", new(int(count)), "", false, nil, nil)
		return err
	}
	register := func(a int, enforce bool) error {
		j, _, err := cl.Jobs().Info("web", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range j.TaskGroups {
			if *g.Name == "a" {
				g.Count = new(a)
			}
		}
		if enforce {
			_, _, err = cl.Jobs().EnforceRegister(j, *j.JobModifyIndex-1, nil) // a stale index
		} else {
			_, _, err = cl.Jobs().Register(j, nil)
		}
		return err
	}
	for _, c := range []struct {
		name string
		do   func() error
		want string // "" passes
	}{
		{"a scale past the limit", func() error { return scale(8) }, "total count was greater than configured job_max_count: 11 > 10"},
		{"a scale to the limit", func() error { return scale(7) }, ""},
		{"a registration past it", func() error { return register(9, false) }, "1 error occurred:\n\t* total count was greater than configured job_max_count: 12 > 10"},
		{"past it at a stale index: the limit is named first", func() error { return register(9, true) }, "job_max_count: 12 > 10"},
		{"a registration at the limit", func() error { return register(7, false) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.Index()
			err := c.do()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (statusOf(err) != 500 || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("%v; want a 500 containing %q", err, c.want)
			case c.want != "" && s.Index() != before:
				t.Fatalf("the refusal moved the index from %d to %d", before, s.Index())
			}
		})
	}
	if g, err := s.Group("", "web", "a"); err != nil || g.Count != 7 {
		t.Errorf("group a: %+v, %v; want count 7", g, err)
	}
	if err := s.SetJobMaxCount(0); err != nil {
		t.Fatal(err)
	}
	if err := scale(100); err != nil {
		t.Errorf("with no limit: %v", err)
	}
	if err := s.SetJobMaxCount(-1); err == nil {
		t.Error("SetJobMaxCount(-1) accepted")
	}
}

func TestScaleCheckAndSet(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 8000, MemoryMB: 8192}))
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{{Name: "g", Count: 1, CPUMHz: 100, NodeID: n}}}); err != nil {
		t.Fatal(err)
	}
	jmi := func() uint64 {
		t.Helper()
		j, _, err := cl.Jobs().Info("web", nil)
		if err != nil {
			t.Fatal(err)
		}
		return *j.JobModifyIndex
	}
	fresh := jmi()
	scale := func(count *int64, index uint64) (*api.JobRegisterResponse, error) {
		r, _, err := cl.Jobs().ScaleWithRequest("web", &api.ScalingRequest{Count: count, Target: map[string]string{"Job": "web", "Group": "g"}, JobModifyIndex: index}, nil)
		return r, err
	}
	two, three := int64(2), int64(3)
	cases := []struct {
		name    string
		count   *int64
		index   func() uint64
		code    int
		text    string
		bumps   bool // JobModifyIndex changes
		wantCnt int
	}{
		{name: "stale index refused", count: &two, index: func() uint64 { return fresh - 1 }, code: 500,
			text: "Enforcing job modify index", wantCnt: 1},
		{name: "fresh index accepted", count: &two, index: jmi, bumps: true, wantCnt: 2},
		{name: "the old fresh index is stale now", count: &three, index: func() uint64 { return fresh }, code: 500,
			text: "job exists with conflicting job modify index", wantCnt: 2},
		{name: "zero index is not checked", count: &three, index: func() uint64 { return 0 }, bumps: true, wantCnt: 3},
		{name: "event only: not checked, no new version", count: nil, index: func() uint64 { return 1 }, wantCnt: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := jmi()
			j0, _, _ := cl.Jobs().Info("web", nil)
			resp, err := scale(c.count, c.index())
			if c.code != 0 {
				if statusOf(err) != c.code || !strings.Contains(err.Error(), c.text) {
					t.Fatalf("err %v, want %d %q", err, c.code, c.text)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			after := jmi()
			if (after != before) != c.bumps {
				t.Errorf("JobModifyIndex %d -> %d, want a change: %v", before, after, c.bumps)
			}
			if st, _ := s.Group("", "web", "g"); st.Count != c.wantCnt {
				t.Errorf("count %d, want %d", st.Count, c.wantCnt)
			}
			if err == nil && c.count == nil {
				// Nomad answers the job's ModifyIndex and no evaluation.
				if resp.JobModifyIndex != *j0.ModifyIndex || resp.EvalID != "" {
					t.Errorf("event-only answer %+v, want JobModifyIndex %d and no eval", resp, *j0.ModifyIndex)
				}
				j1, _, _ := cl.Jobs().Info("web", nil)
				if *j1.Version != *j0.Version || *j1.ModifyIndex != *j0.ModifyIndex {
					t.Errorf("event-only changed the job: version %d->%d", *j0.Version, *j1.Version)
				}
			}
			if err == nil && c.count != nil {
				if resp.JobModifyIndex != after || resp.EvalID == "" || resp.EvalCreateIndex == 0 {
					t.Errorf("answer %+v, want JobModifyIndex %d and an eval", resp, after)
				}
				st, _, _ := cl.Jobs().ScaleStatus("web", nil)
				if ev := st.TaskGroups["g"].Events[0]; ev.EvalID == nil || *ev.EvalID != resp.EvalID {
					t.Errorf("event %+v does not carry the eval %s", ev, resp.EvalID)
				}
			}
		})
	}
}

func TestJobRegister(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192}))
	lo, hi := int64(0), int64(10)
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{
		{Name: "g", Count: 2, CPUMHz: 500, MemoryMB: 256, NodeID: n, ScalingMin: &lo, ScalingMax: &hi},
	}}); err != nil {
		t.Fatal(err)
	}
	read := func() *api.Job {
		t.Helper()
		j, _, err := cl.Jobs().Info("web", nil)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	j := read()
	if *j.Version != 0 || *j.JobModifyIndex == 0 || *j.TaskGroups[0].Count != 2 || *j.TaskGroups[0].Tasks[0].Resources.CPU != 500 ||
		len(j.TaskGroups[0].Constraints) != 1 || j.TaskGroups[0].Constraints[0].RTarget != n || j.TaskGroups[0].Scaling == nil {
		t.Fatalf("job as read: %+v", j)
	}

	// Unchanged: no new version, JobModifyIndex answers ModifyIndex.
	resp, _, err := cl.Jobs().EnforceRegister(j, *j.JobModifyIndex, nil)
	if err != nil {
		t.Fatal(err)
	}
	if j2 := read(); *j2.Version != 0 || *j2.JobModifyIndex != *j.JobModifyIndex || resp.JobModifyIndex != *j.ModifyIndex || resp.EvalID == "" {
		t.Errorf("unchanged re-register: version %d, answer %+v", *j2.Version, resp)
	}

	// EnforceIndex refusals.
	for _, c := range []struct {
		index uint64
		text  string
	}{
		{*j.JobModifyIndex - 1, "Enforcing job modify index " + itoa(*j.JobModifyIndex-1) + ": job exists with conflicting job modify index: " + itoa(*j.JobModifyIndex)},
		{0, "Enforcing job modify index 0: job already exists"},
	} {
		*j.TaskGroups[0].Count = 5
		if _, _, err := cl.Jobs().EnforceRegister(j, c.index, nil); statusOf(err) != 500 || !strings.Contains(err.Error(), c.text) {
			t.Errorf("EnforceIndex %d: %v, want 500 %q", c.index, err, c.text)
		}
	}
	if st, _ := s.Group("", "web", "g"); st.Count != 2 {
		t.Fatalf("a refused register changed the count to %d", st.Count)
	}

	// Count and resources: a new version, allocations replaced.
	old := s.AllocIDs("", "web", "g")
	*j.TaskGroups[0].Count = 3
	*j.TaskGroups[0].Tasks[0].Resources.CPU = 1000
	resp, _, err = cl.Jobs().EnforceRegister(j, *j.JobModifyIndex, nil)
	if err != nil {
		t.Fatal(err)
	}
	j3 := read()
	if *j3.Version != 1 || *j3.JobModifyIndex == *j.JobModifyIndex || *j3.ModifyIndex != *j3.JobModifyIndex || resp.JobModifyIndex != *j3.JobModifyIndex {
		t.Errorf("after register: version %d jmi %d (was %d), answer %+v", *j3.Version, *j3.JobModifyIndex, *j.JobModifyIndex, resp)
	}
	now := s.AllocIDs("", "web", "g")
	if len(now) != 3 || now[0] == old[0] {
		t.Errorf("allocations %v (were %v): want 3 new ones", now, old)
	}
	a, _, _ := cl.Allocations().Info(now[0], nil)
	if a.AllocatedResources.Tasks["app"].Cpu.CpuShares != 1000 || *a.Job.Version != 1 {
		t.Errorf("new alloc resources %+v version %d", a.AllocatedResources.Tasks["app"], *a.Job.Version)
	}
	// 4 × 1000 MHz fit on 4000 MHz, a fifth does not.
	*j3.TaskGroups[0].Count = 5
	if _, _, err := cl.Jobs().Register(j3, nil); err != nil {
		t.Fatal(err)
	}
	if q := s.Queued("", "web", "g"); q != 1 {
		t.Errorf("queued %d, want 1", q)
	}
	// PreserveCounts keeps the count the autoscaler set.
	*j3.TaskGroups[0].Count = 1
	if _, _, err := cl.Jobs().RegisterOpts(j3, &api.RegisterOptions{PreserveCounts: true}, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Group("", "web", "g"); st.Count != 5 {
		t.Errorf("PreserveCounts: count %d, want 5", st.Count)
	}

	// A new job, with a constraint on the node's name and a default update
	// block (Nomad's: max_parallel 1, so it deploys).
	m := must[string](t)(s.AddNode(NodeSpec{Name: "m", CPUMHz: 4000, MemoryMB: 8192}))
	nj := api.NewServiceJob("api", "api", "global", 50)
	tg := api.NewTaskGroup("g", 2)
	tg.Constraints = []*api.Constraint{{LTarget: "${node.unique.name}", RTarget: "m", Operand: "="}}
	tg.Tasks = []*api.Task{api.NewTask("srv", "docker").Require(&api.Resources{CPU: new(200), MemoryMB: new(128)})}
	nj.AddTaskGroup(tg)
	if _, _, err := cl.Jobs().EnforceRegister(nj, 5, nil); statusOf(err) != 500 || !strings.Contains(err.Error(), "Enforcing job modify index 5: job does not exist") {
		t.Errorf("EnforceIndex on a new job: %v", err)
	}
	if _, _, err := cl.Jobs().EnforceRegister(nj, 0, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Group("", "api", "g"); st.Running != 2 {
		t.Errorf("new job runs %d", st.Running)
	}
	for _, id := range s.AllocIDs("", "api", "g") {
		if a, _, _ := cl.Allocations().Info(id, nil); a.NodeID != m {
			t.Errorf("api alloc on %s, want m", a.NodeName)
		}
	}
	if d, _, _ := cl.Jobs().LatestDeployment("api", nil); d == nil || d.Status != api.DeploymentStatusRunning {
		t.Errorf("a new job with Nomad's default update block has deployment %+v", d)
	}

	// Refusals.
	bad := api.NewServiceJob("bad", "bad", "global", 50)
	btg := api.NewTaskGroup("g", 1)
	both := api.NewTask("a", "docker")
	both.Resources = &api.Resources{CPU: new(500), Cores: new(2)}
	btg.Tasks = []*api.Task{both}
	bad.AddTaskGroup(btg)
	if _, _, err := cl.Jobs().Register(bad, nil); statusOf(err) != 500 || !strings.Contains(err.Error(), "not both") {
		t.Errorf("cores and cpu: %v", err)
	}
	bad = api.NewBatchJob("batch", "batch", "global", 50)
	if _, _, err := cl.Jobs().Register(bad, nil); statusOf(err) != 400 {
		t.Errorf("batch job: %v", err)
	}
	// The URL's job ID must match.
	var out api.JobRegisterResponse
	if _, err := rawPut(cl, "/v1/job/other", &api.JobRegisterRequest{Job: j3}, &out); statusOf(err) != 400 || !strings.Contains(err.Error(), "Job ID does not match name") {
		t.Errorf("mismatched URL: %v", err)
	}
}

func itoa(u uint64) string { return strconv.FormatUint(u, 10) }

// rawPut sends a PUT with the api client's plumbing (token, headers).
func rawPut(c *api.Client, endpoint string, in, out any) (*api.WriteMeta, error) {
	return c.Raw().Write(endpoint, in, out, nil)
}

func TestColdAllocations(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 8000, MemoryMB: 8192}))
	if err := s.AddJob(JobSpec{ID: "web", Groups: []GroupSpec{
		{Name: "cold", Count: 1, CPUMHz: 100, NodeID: n, Warmup: time.Second},
		{Name: "warm", Count: 1, CPUMHz: 100, NodeID: n},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"cold", "warm"} {
		if err := s.SetGroupUsage("", "web", g, 150, 64); err != nil {
			t.Fatal(err)
		}
	}
	stats := func(g string) (float64, uint64) {
		t.Helper()
		id := s.AllocIDs("", "web", g)[0]
		a, _, err := cl.Allocations().Info(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cl.Allocations().Stats(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st.ResourceUsage.CpuStats.TotalTicks, st.ResourceUsage.MemoryStats.RSS
	}
	start := time.Now()
	cases := []struct {
		group    string
		wantZero bool
	}{{"cold", true}, {"warm", false}}
	for _, c := range cases {
		cpu, mem := stats(c.group)
		if (cpu == 0 && mem == 0) != c.wantZero {
			t.Errorf("%s just started: ticks %v rss %v, want zero: %v", c.group, cpu, mem, c.wantZero)
		}
	}
	if time.Since(start) > 800*time.Millisecond {
		t.Fatalf("too slow to check the warm-up (%v)", time.Since(start))
	}
	time.Sleep(time.Until(start.Add(1050 * time.Millisecond)))
	if cpu, mem := stats("cold"); cpu != 150 || mem != 64*mib {
		t.Errorf("after the warm-up: ticks %v rss %v", cpu, mem)
	}
	a, _, err := cl.Allocations().Info(s.AllocIDs("", "web", "cold")[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := a.TaskStates["app"]
	if a.CreateTime == 0 || a.ModifyTime == 0 || ts == nil || ts.StartedAt.IsZero() || ts.State != "running" || ts.StartedAt.UnixNano() != a.CreateTime {
		t.Errorf("times: create %d modify %d task state %+v", a.CreateTime, a.ModifyTime, ts)
	}
	// The job's allocation list carries them too.
	stubs, _, _ := cl.Jobs().Allocations("web", false, nil)
	for _, st := range stubs {
		if st.CreateTime == 0 || st.TaskStates["app"] == nil || st.TaskStates["app"].StartedAt.IsZero() {
			t.Errorf("stub %s lacks times: %+v", st.Name, st)
		}
	}
}

func TestJobDeregister(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 4000, MemoryMB: 8192}))
	for _, id := range []string{"keep", "gone"} {
		if err := s.AddJob(JobSpec{ID: id, Groups: []GroupSpec{{Name: "g", Count: 2, CPUMHz: 500, MemoryMB: 256, NodeID: n}}}); err != nil {
			t.Fatal(err)
		}
	}
	gone := s.AllocIDs("", "gone", "g")
	before, _, err := cl.Jobs().Info("keep", nil)
	if err != nil {
		t.Fatal(err)
	}

	// Without purge: stopped, a new version, its allocations stop, still listed.
	evalID, wm, err := cl.Jobs().Deregister("keep", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, _, err := cl.Jobs().Info("keep", nil)
	if err != nil {
		t.Fatalf("a deregistered job without purge stays readable: %v", err)
	}
	if !*j.Stop || *j.Version != *before.Version+1 || evalID == "" || wm.LastIndex < *j.JobModifyIndex {
		t.Errorf("after deregister: stop %v version %d (was %d), eval %q index %d", *j.Stop, *j.Version, *before.Version, evalID, wm.LastIndex)
	}
	if st, _ := s.Group("", "keep", "g"); st.Running != 0 {
		t.Errorf("a stopped job runs %d allocations", st.Running)
	}

	// With purge: gone, with its allocations; the other job is untouched.
	if _, _, err := cl.Jobs().Deregister("gone", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cl.Jobs().Info("gone", nil); statusOf(err) != 404 {
		t.Errorf("a purged job reads as %v, want 404", err)
	}
	if _, _, err := cl.Allocations().Info(gone[0], nil); statusOf(err) != 404 {
		t.Errorf("a purged job's allocation reads as %v, want 404", err)
	}
	allocs, _, err := cl.Nodes().Allocations(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range allocs {
		if a.JobID == "gone" {
			t.Errorf("node still lists %s of the purged job", a.ID)
		}
	}
	stubs, _, err := cl.Jobs().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stubs) != 1 || stubs[0].ID != "keep" {
		t.Errorf("jobs after purge: %d, want only keep", len(stubs))
	}

	// Unknown job: no error and no evaluation, nothing changed (Nomad's
	// Job.Deregister returns before it creates anything). A malformed
	// purge: 400 naming it.
	indexBefore := s.Index()
	if evalID, _, err := cl.Jobs().Deregister("never", true, nil); err != nil || evalID != "" {
		t.Errorf("deregister of an unknown job: eval %q, %v; want no evaluation and no error", evalID, err)
	}
	if s.Index() != indexBefore {
		t.Errorf("deregister of an unknown job moved the index from %d to %d", indexBefore, s.Index())
	}
	req, _ := http.NewRequest(http.MethodDelete, s.URL()+"/v1/job/keep?purge=maybe", nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 400 || !strings.Contains(string(body), `"purge"`) {
		t.Errorf("purge=maybe: %d %s", r.StatusCode, body)
	}
}

// A group of several tasks registered through the API: the first reserves
// cores (their bandwidth, the node's MHz per core), a prestart sidecar runs
// beside it and an init task before it; the job reads back with its tasks
// and lifecycles, each allocation lists every task's resources, and the
// node places by Nomad's rule: 2 x (2000 + max(100 + 1500, 100)) = 7200
// of 8000 MHz, so a third replica queues.
func TestJobRegisterTasks(t *testing.T) {
	s, cl := newStandin(t)
	n := must[string](t)(s.AddNode(NodeSpec{Name: "n", CPUMHz: 8000, MemoryMB: 8192, Cores: 8}))
	j := api.NewServiceJob("multi", "multi", "global", 50)
	tg := api.NewTaskGroup("g", 2)
	main := api.NewTask("app", "docker")
	main.Resources = &api.Resources{Cores: new(2), MemoryMB: new(256)}
	envoy := api.NewTask("envoy", "docker")
	envoy.Resources = &api.Resources{CPU: new(100), MemoryMB: new(64)}
	envoy.Lifecycle = &api.TaskLifecycle{Hook: "prestart", Sidecar: true}
	initTask := api.NewTask("init", "docker")
	initTask.Resources = &api.Resources{CPU: new(1500), MemoryMB: new(32)}
	initTask.Lifecycle = &api.TaskLifecycle{Hook: "prestart"}
	tg.Tasks = []*api.Task{main, envoy, initTask}
	tg.Constraints = []*api.Constraint{{LTarget: "${node.unique.id}", RTarget: n, Operand: "="}}
	j.AddTaskGroup(tg)
	if _, _, err := cl.Jobs().Register(j, nil); err != nil {
		t.Fatal(err)
	}
	back, _, err := cl.Jobs().Info("multi", nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := back.TaskGroups[0].Tasks
	if len(ts) != 3 || *ts[0].Resources.Cores != 2 || *ts[0].Resources.CPU != 0 || ts[1].Lifecycle == nil || !ts[1].Lifecycle.Sidecar || ts[2].Lifecycle == nil || ts[2].Lifecycle.Hook != "prestart" {
		t.Fatalf("tasks read back: %+v", ts)
	}
	allocs, _, err := cl.Nodes().Allocations(n, nil)
	if err != nil || len(allocs) != 2 {
		t.Fatalf("node allocations: %d, %v", len(allocs), err)
	}
	res := allocs[0].AllocatedResources.Tasks
	if app := res["app"]; app == nil || app.Cpu.CpuShares != 2000 || len(app.Cpu.ReservedCores) != 2 || res["envoy"] == nil || res["init"] == nil || res["init"].Cpu.CpuShares != 1500 {
		t.Fatalf("allocated resources: %+v", res)
	}
	// Nomad's validation of hooks; the stand-in's own limit on the first task.
	for _, tc := range []struct {
		first, second string
		status        int
		want          string
	}{
		{"", "later", 500, "invalid hook: later"},
		{"prestart", "", 400, "first task as a main task"},
	} {
		bj := api.NewServiceJob("hooks", "hooks", "global", 50)
		btg := api.NewTaskGroup("g", 1)
		a, b := api.NewTask("a", "docker"), api.NewTask("b", "docker")
		if tc.first != "" {
			a.Lifecycle = &api.TaskLifecycle{Hook: tc.first}
		}
		if tc.second != "" {
			b.Lifecycle = &api.TaskLifecycle{Hook: tc.second}
		}
		btg.Tasks = []*api.Task{a, b}
		bj.AddTaskGroup(btg)
		if _, _, err := cl.Jobs().Register(bj, nil); statusOf(err) != tc.status || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("hooks %q, %q: %v; want %d %q", tc.first, tc.second, err, tc.status, tc.want)
		}
	}
	if err := s.SetGroupCount("", "multi", "g", 3); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Group("", "multi", "g"); st.Running != 2 || st.Queued != 1 {
		t.Fatalf("3 replicas of 3600 MHz on 8000: %d running, %d queued; want 2 and 1", st.Running, st.Queued)
	}
}
