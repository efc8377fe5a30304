package nomadplugin

import (
	"context"
	"fmt"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad-autoscaler/sdk"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// TestMain removes NOMAD_* from the environment: the plugin tests program
// jobs, usage and faults on the stand-in, and a developer's NOMAD_TOKEN or
// NOMAD_NAMESPACE must not leak into them (nomadusage's tests cover a real
// cluster).
func TestMain(m *testing.M) {
	nomadconn.TakeEnv()
	os.Exit(m.Run())
}

// memReader serves readings from memory: for each host (by the query's
// label, "first" or "second") an observation template and a list of
// samples; each Read returns the next sample of that host, at its time.
type memReader struct {
	mu    sync.Mutex
	obs   map[string]engine.Observation
	next  map[string]int
	err   map[string]error
	calls int
}

func newMemReader(first, second engine.Observation) *memReader {
	return &memReader{
		obs:  map[string]engine.Observation{engine.RoleFirst: first, engine.RoleSecond: second},
		next: map[string]int{},
		err:  map[string]error{},
	}
}

func (m *memReader) Read(_ context.Context, q nomadusage.Query) (*nomadusage.Reading, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if err := m.err[q.Label]; err != nil {
		return nil, err
	}
	o, ok := m.obs[q.Label]
	if !ok {
		return nil, fmt.Errorf("memReader: no host %q", q.Label)
	}
	k := m.next[q.Label]
	m.next[q.Label]++
	s := o.Samples[k%len(o.Samples)]
	// Past the end the samples repeat, later in time.
	if cycle := k / len(o.Samples); cycle > 0 {
		span := o.Samples[len(o.Samples)-1].Time - o.Samples[0].Time + 60
		s.Time += int64(cycle) * span
	}
	r := &nomadusage.Reading{NodeID: "node-" + q.Label, NodeName: q.Label, Time: time.Unix(s.Time, 0), Observation: o}
	r.Observation.Host = q.Label
	r.Observation.Samples = []engine.Sample{s}
	return r, nil
}

// configFor builds a strategy config for a golden request.
func configFor(r *engine.Request, role string, window int) map[string]string {
	m := map[string]string{
		KeyRole:                    role,
		KeyJob:                     "web",
		PrefixFirst + KeyNodeName:  "host-a",
		PrefixSecond + KeyNodeName: "host-b",
		PrefixFirst + KeyGroup:     "front",
		PrefixSecond + KeyGroup:    "back",
		KeyWindow:                  strconv.Itoa(window),
		KeyMaxAge:                  "10000h",
	}
	if r.FirstModel != "" {
		m[PrefixFirst+KeyModel] = r.FirstModel
	}
	if r.SecondModel != "" {
		m[PrefixSecond+KeyModel] = r.SecondModel
	}
	for _, q := range []struct {
		prefix string
		q      *engine.Quota
	}{{PrefixFirst, r.FirstQuota}, {PrefixSecond, r.SecondQuota}} {
		if q.q == nil {
			continue
		}
		m[q.prefix+KeyMin] = strconv.Itoa(q.q.Min)
		m[q.prefix+KeyMax] = strconv.Itoa(q.q.Max)
		m[q.prefix+KeyPerBranch] = strconv.FormatFloat(q.q.PerBranch, 'g', -1, 64)
		m[q.prefix+KeyRounding] = q.q.Rounding
	}
	return m
}

func newEval(name string, config map[string]string) *sdk.ScalingCheckEvaluation {
	return &sdk.ScalingCheckEvaluation{
		Check:  &sdk.ScalingPolicyCheck{Name: name, Strategy: &sdk.ScalingPolicyStrategy{Name: StrategyName, Config: config}},
		Action: &sdk.ScalingAction{Meta: map[string]any{"nomad_policy_id": "policy-" + name}},
	}
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }
