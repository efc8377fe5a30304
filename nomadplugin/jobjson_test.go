package nomadplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad-autoscaler/sdk"
	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// futureField is a job field this plugin's nomad/api module does not know
// (as a newer Nomad would add one), with values a decode and encode
// through Go types would change: a number past 2^53, an HTML character,
// an unknown nested object.
const futureField = `{"Limit":9007199254740993,"Note":"a<b","Nested":{"Z":1,"A":[true,null]}}`

// TestTargetRegisterKeepsTheJob (issue B2): the register sends the job back
// as Nomad answered it, only the two counts changed: a field the plugin's
// api module does not know, in the job and in a group, reaches Nomad byte
// for byte, and so does every other member.
func TestTargetRegisterKeepsTheJob(t *testing.T) {
	w := newWorld(t, 2, 2)
	px := newProxy(t, w.s.URL())
	px.rewrite(func(method, path string, body []byte) []byte {
		if method != http.MethodGet || path != wJobPath {
			return body
		}
		body = setMember(t, body, "FutureField", futureField)
		var groups []json.RawMessage
		if err := json.Unmarshal(jobMembers(t, body)["TaskGroups"], &groups); err != nil {
			t.Error(err)
			return body
		}
		groups[1] = setMember(t, groups[1], "FutureGroupField", futureField)
		return setMember(t, body, "TaskGroups", string(marshalAsNomad(t, groups)))
	})
	tg := targetAt(t, map[string]string{AgentKeyNomadAddress: px.srv.URL})
	if err := tg.Scale(sdk.ScalingAction{Count: 7, Meta: quotaMeta(4, 3, 0, 10, 0, 10)}, tcfg); err != nil {
		t.Fatal(err)
	}
	reads, writes := px.answers(http.MethodGet, wJobPath), px.requests(http.MethodPut, wJobPath)
	if len(reads) != 1 || len(writes) != 1 {
		t.Fatalf("%d job reads and %d registers, want one of each", len(reads), len(writes))
	}
	if got := w.counts(t); got != [2]int{4, 3} {
		t.Fatalf("counts %v, want [4 3]", got)
	}
	var sent struct {
		Job            json.RawMessage
		EnforceIndex   bool
		JobModifyIndex uint64
	}
	must(t, json.Unmarshal(writes[0].body, &sent))
	answered := jobMembers(t, reads[0].body)
	if !sent.EnforceIndex || sent.JobModifyIndex == 0 || string(answered["JobModifyIndex"]) != fmt.Sprint(sent.JobModifyIndex) {
		t.Errorf("the register is not check-and-set at the index read: EnforceIndex %v at %d, read %s", sent.EnforceIndex, sent.JobModifyIndex, answered["JobModifyIndex"])
	}
	if !bytes.Contains(writes[0].body, []byte(`"FutureField":`+futureField)) || !bytes.Contains(writes[0].body, []byte(`"FutureGroupField":`+futureField)) {
		t.Errorf("the register lost or changed the fields the api module does not know:\n%s", writes[0].body)
	}
	// Every member of the job and of its groups but the counts is sent as
	// Nomad answered it.
	job := jobMembers(t, sent.Job)
	if len(job) != len(answered) {
		t.Errorf("the register sends %d job members, Nomad answered %d", len(job), len(answered))
	}
	for k, v := range job {
		if k != "TaskGroups" && k != "VersionTag" && !bytes.Equal(v, answered[k]) {
			t.Errorf("job member %s: sent %s, Nomad answered %s", k, v, answered[k])
		}
	}
	var sentGroups, readGroups []json.RawMessage
	must(t, json.Unmarshal(job["TaskGroups"], &sentGroups))
	must(t, json.Unmarshal(answered["TaskGroups"], &readGroups))
	if len(sentGroups) != len(readGroups) {
		t.Fatalf("%d groups sent, %d answered", len(sentGroups), len(readGroups))
	}
	for i := range sentGroups {
		sg, rg := jobMembers(t, sentGroups[i]), jobMembers(t, readGroups[i])
		for k, v := range rg {
			if k != "Count" && !bytes.Equal(v, sg[k]) {
				t.Errorf("group %d member %s: sent %s, Nomad answered %s", i, k, sg[k], v)
			}
		}
	}
}

func jobMembers(t *testing.T, obj []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatalf("not a JSON object: %v", err)
	}
	return m
}

// TestTargetRefusesJobs (issue B2): the jobs whose counts a register must
// not change are refused before any write, with the job's kind named.
func TestTargetRefusesJobs(t *testing.T) {
	testsupport.StandinOnly(t, "jobs of other kinds registered on the stand-in, a proxy recording the writes")
	for _, tc := range []struct{ name, key, value, want string }{
		{"batch", "Type", `"batch"`, `a "batch" job`},
		{"system", "Type", `"system"`, `a "system" job`},
		{"periodic", "Periodic", `{"Enabled":true,"Spec":"*/5 * * * *","SpecType":"cron"}`, "a periodic job"},
		{"parameterized", "ParameterizedJob", `{"Payload":"optional"}`, "a parameterized job"},
		{"multiregion", "Multiregion", `{"Regions":[{"Name":"east"},{"Name":"west"}]}`, "a multiregion job"},
	} {
		for _, mode := range []struct {
			name   string
			cfg    map[string]string
			action sdk.ScalingAction
		}{
			{"split", tcfg, sdk.ScalingAction{Count: 7, Meta: quotaMeta(4, 3, 0, 10, 0, 10)}},
			{"single group", gcfg, sdk.ScalingAction{Count: 4}},
		} {
			t.Run(tc.name+", "+mode.name, func(t *testing.T) {
				w := newWorld(t, 2, 2)
				px := newProxy(t, w.s.URL())
				px.rewrite(func(method, path string, body []byte) []byte {
					if method == http.MethodGet && path == wJobPath {
						return setMember(t, body, tc.key, tc.value)
					}
					return body
				})
				tg := targetAt(t, map[string]string{AgentKeyNomadAddress: px.srv.URL})
				from := len(w.s.Requests())
				err := tg.Scale(mode.action, mode.cfg)
				if !errors.Is(err, errNotScalable) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "no group was changed") {
					t.Fatalf("err = %v, want a refusal naming %s", err, tc.want)
				}
				if n := len(w.puts(from)); n != 0 {
					t.Errorf("%d writes for a job the target refuses", n)
				}
				// Status says so too, before any strategy decides.
				if st, err := tg.Status(mode.cfg); !errors.Is(err, errNotScalable) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Status = %+v, %v; want a refusal naming %s", st, err, tc.want)
				}
			})
		}
	}
}

// TestStatusReadsTheJobOncePerIndex: Status reads the job for its kind
// once per JobModifyIndex, again once the index moved, and answers for a
// service job as before.
func TestStatusReadsTheJobOncePerIndex(t *testing.T) {
	testsupport.StandinOnly(t, "the stand-in's request log, a job changed from Go")
	w := newWorld(t, 2, 2)
	tg := w.target(t)
	jobReads := func(from int) int {
		n := 0
		for _, r := range w.s.Requests()[from:] {
			if r.Method == http.MethodGet && r.Path == wJobPath {
				n++
			}
		}
		return n
	}
	from := len(w.s.Requests())
	for range 3 {
		if st, err := tg.Status(tcfg); err != nil || !st.Ready || st.Count != 4 {
			t.Fatalf("Status = %+v, %v; want ready at 4", st, err)
		}
	}
	if n := jobReads(from); n != 1 {
		t.Errorf("three Status calls at one index read the job %d times, want 1", n)
	}
	must(t, w.s.SetGroupCount("", wJob, wSecond, 3))
	from = len(w.s.Requests())
	for range 2 {
		if st, err := tg.Status(tcfg); err != nil || st.Count != 5 {
			t.Fatalf("Status after the change = %+v, %v; want 5", st, err)
		}
	}
	if n := jobReads(from); n != 1 {
		t.Errorf("after the index moved the job was read %d times, want 1", n)
	}
}

// TestStatusJobPurgedBetweenReads: a job purged after Status read its
// scale status and before it read the job is the same ErrJobNotFound as a
// job missing from the first read, with the same wording.
func TestStatusJobPurgedBetweenReads(t *testing.T) {
	testsupport.StandinOnly(t, "a purge timed between two reads by the stand-in's hook")
	w := newWorld(t, 2, 2)
	tg := w.target(t)
	cl, err := api.NewClient(&api.Config{Address: w.s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	w.s.SetHook(func(method, path string) {
		if method == http.MethodGet && path == wJobPath {
			w.s.SetHook(nil)
			if _, _, err := cl.Jobs().Deregister(wJob, true, nil); err != nil {
				t.Errorf("purge: %v", err)
			}
		}
	})
	_, err = tg.Status(tcfg)
	if !errors.Is(err, ErrJobNotFound) || !strings.Contains(err.Error(), "resumes once the job is registered") {
		t.Fatalf("Status = %v; want ErrJobNotFound saying the policy resumes once the job is registered", err)
	}
}

// TestWithCounts: only the named groups' Count changes; a group without a
// Count gets one; a group the job lacks is an error.
func TestWithCounts(t *testing.T) {
	job := []byte(`{"ID":"web","X":{"b":1, "a":2},"TaskGroups":[{"Name":"a","Count":1,"Y":"a<b"},{"Name":"b"},{"Name":"c","Count":3}]}`)
	got, err := withCounts(job, map[string]int64{"a": 5, "b": 2})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ID":"web","X":{"b":1, "a":2},"TaskGroups":[{"Name":"a","Count":5,"Y":"a<b"},{"Name":"b","Count":2},{"Name":"c","Count":3}]}`
	if string(got) != want {
		t.Errorf("withCounts =\n%s\nwant\n%s", got, want)
	}
	if _, err := withCounts(job, map[string]int64{"a": 1, "z": 2}); err == nil {
		t.Errorf("a group the job lacks: no error")
	}
	// The current version's tag is not given to the new version.
	tagged := []byte(`{"ID":"web","VersionTag":{"Name":"golden","Description":"known good","TaggedTime":1},"TaskGroups":[{"Name":"a","Count":1}]}`)
	got, err = withCounts(tagged, map[string]int64{"a": 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ID":"web","VersionTag":null,"TaskGroups":[{"Name":"a","Count":2}]}`; string(got) != want {
		t.Errorf("withCounts of a tagged version =\n%s\nwant\n%s", got, want)
	}
}

// TestCheckRegion: an action decided in another region than the job's is
// refused naming both; one naming no region, or a job with none, is not
// compared.
func TestCheckRegion(t *testing.T) {
	region := func(r string) *rawJob { return &rawJob{head: jobHead{Region: &r}} }
	for _, c := range []struct {
		name   string
		meta   map[string]any
		job    *rawJob
		errHas string
	}{
		{"the same region", map[string]any{MetaRegion: "eu-west"}, region("eu-west"), ""},
		{"another region", map[string]any{MetaRegion: "eu-west"}, region("us-east"),
			`decided for job "web" in region "eu-west" (the job the strategy read), and the target reads it in region "us-east"`},
		{"the agent's own action", map[string]any{}, region("us-east"), ""},
		{"a job without a region", map[string]any{MetaRegion: "eu-west"}, &rawJob{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkRegion(c.meta, "web", c.job)
			switch {
			case c.errHas == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)):
				t.Errorf("err = %v, want %q", err, c.errHas)
			}
		})
	}
}
