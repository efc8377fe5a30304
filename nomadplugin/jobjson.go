package nomadplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"

	"github.com/hashicorp/nomad/api"
)

// rawJob is a job as GET /v1/job/:id answered it: the answer's bytes, and
// the few fields the target reads from them. A register sends the bytes
// back with only task groups' Count changed, so that every other field,
// whether this plugin's nomad/api module knows it or not, goes back as
// Nomad sent it (decoding into api.Job and encoding again would drop the
// fields a newer Nomad added).
type rawJob struct {
	body []byte
	head jobHead
}

// jobHead is what the target reads of a job.
type jobHead struct {
	ID               *string
	Region           *string
	Type             *string
	Periodic         json.RawMessage
	ParameterizedJob json.RawMessage
	Multiregion      json.RawMessage
	Stop             *bool
	CreateIndex      *uint64
	JobModifyIndex   *uint64
	TaskGroups       []struct {
		Name    *string
		Count   *int64
		Scaling *struct{ Min, Max *int64 }
	}
}

// readRawJob reads the job as JSON.
func readRawJob(ctx context.Context, client *api.Client, ns, id string) (*rawJob, error) {
	var body json.RawMessage
	q := (&api.QueryOptions{Namespace: ns}).WithContext(ctx)
	if _, err := client.Raw().Query("/v1/job/"+url.PathEscape(id), &body, q); err != nil {
		return nil, err
	}
	j := &rawJob{body: body}
	if err := json.Unmarshal(body, &j.head); err != nil {
		return nil, fmt.Errorf("the answer for job %q does not decode: %w", id, err)
	}
	return j, nil
}

// set says whether a raw field holds a value (not absent, not null).
func set(v json.RawMessage) bool { return len(v) > 0 && !bytes.Equal(v, []byte("null")) }

// str is the string a field points to, "" for none.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// errNotScalable: a job whose groups' counts the target does not change.
var errNotScalable = errors.New("not a job the target scales")

// scalable refuses the jobs whose counts the target must not change: a
// batch or system job (a count there means something else, or nothing), a
// periodic or parameterized job (its children run, not it) and a
// multiregion job (a register would change every region's copy).
func (j *rawJob) scalable() error {
	kind := ""
	switch {
	case str(j.head.Type) != api.JobTypeService:
		kind = fmt.Sprintf("a %q job", str(j.head.Type))
	case set(j.head.Periodic):
		kind = "a periodic job"
	case set(j.head.ParameterizedJob):
		kind = "a parameterized job"
	case set(j.head.Multiregion):
		kind = "a multiregion job"
	default:
		return nil
	}
	return fmt.Errorf("job %q is %s: %w; the activation counts are for the task groups of a single-region service job", str(j.head.ID), kind, errNotScalable)
}

// count is the group's count in the job.
func (j *rawJob) count(group string) (int64, bool) {
	for _, g := range j.head.TaskGroups {
		if str(g.Name) == group {
			if g.Count == nil {
				return 0, true
			}
			return *g.Count, true
		}
	}
	return 0, false
}

// scalingBounds is the [min, max] of the group's scaling block, which
// Nomad holds the group's count to at every register (a bound the block
// does not set is the quota's own: 0 and MaxInt32).
func (j *rawJob) scalingBounds(group string) (lo, hi int64, ok bool) {
	for _, g := range j.head.TaskGroups {
		if str(g.Name) != group || g.Scaling == nil {
			continue
		}
		lo, hi = 0, math.MaxInt32
		if g.Scaling.Min != nil {
			lo = *g.Scaling.Min
		}
		if g.Scaling.Max != nil {
			hi = *g.Scaling.Max
		}
		return lo, hi, true
	}
	return 0, 0, false
}

func (j *rawJob) createIndex() uint64    { return deref(j.head.CreateIndex) }
func (j *rawJob) jobModifyIndex() uint64 { return deref(j.head.JobModifyIndex) }

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// registerBody is the JSON of a job register (api.JobRegisterRequest) of
// the job with counts set, check-and-set at index: the job's bytes as
// Nomad sent them but for each named group's Count.
func (j *rawJob) registerBody(counts map[string]int64, index uint64) ([]byte, error) {
	job, err := withCounts(j.body, counts)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"Job":`)
	b.Write(job)
	b.WriteString(`,"EnforceIndex":true,"JobModifyIndex":`)
	b.WriteString(strconv.FormatUint(index, 10))
	b.WriteString("}")
	return b.Bytes(), nil
}

// member is one member of a JSON object, its value's bytes as read.
type member struct {
	key   string
	value json.RawMessage
}

// members splits a JSON object into its members, in order.
func members(obj []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object (%v)", err)
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("member %q: %w", key, err)
		}
		out = append(out, member{key, v})
	}
	return out, nil
}

// object writes members back as a JSON object.
func object(ms []member) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// withCounts returns the job's JSON with the Count of each group named in
// counts replaced and no version tag (VersionTag null: a tag names one
// version, and a register that carried the current version's tag would
// give it to the new version too, as Nomad's own revert takes care not
// to); every other byte of every other member and group is kept as it is.
func withCounts(job []byte, counts map[string]int64) ([]byte, error) {
	ms, err := members(job)
	if err != nil {
		return nil, fmt.Errorf("the job: %w", err)
	}
	done := 0
	for i := range ms {
		if ms[i].key == "VersionTag" {
			ms[i].value = json.RawMessage("null")
			continue
		}
		if ms[i].key != "TaskGroups" {
			continue
		}
		var groups []json.RawMessage
		if err := json.Unmarshal(ms[i].value, &groups); err != nil {
			return nil, fmt.Errorf("the job's TaskGroups: %w", err)
		}
		for k, g := range groups {
			changed, ok, err := groupWithCount(g, counts)
			if err != nil {
				return nil, err
			}
			if ok {
				groups[k], done = changed, done+1
			}
		}
		ms[i].value = array(groups)
	}
	if done != len(counts) {
		return nil, fmt.Errorf("the job has %d of the %d task groups to scale", done, len(counts))
	}
	return object(ms)
}

// groupWithCount returns a task group's JSON with its Count replaced when
// counts names it; ok is false for a group counts does not name.
func groupWithCount(g json.RawMessage, counts map[string]int64) (json.RawMessage, bool, error) {
	ms, err := members(g)
	if err != nil {
		return nil, false, fmt.Errorf("a task group: %w", err)
	}
	var name string
	for _, m := range ms {
		if m.key == "Name" {
			_ = json.Unmarshal(m.value, &name) // not a string: no group to scale
		}
	}
	n, ok := counts[name]
	if !ok {
		return g, false, nil
	}
	v := json.RawMessage(strconv.FormatInt(n, 10))
	found := false
	for i := range ms {
		if ms[i].key == "Count" {
			ms[i].value, found = v, true
		}
	}
	if !found {
		ms = append(ms, member{"Count", v})
	}
	out, err := object(ms)
	return out, true, err
}

// array writes elements back as a JSON array.
func array(els []json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range els {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes()
}
