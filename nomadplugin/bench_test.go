package nomadplugin

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/sdk"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// Issue 13's large evaluation: N nodes, A allocations of the job's group
// on each of the two hosts, a fixed latency on every Nomad request.
const (
	largeNodes   = 5000
	largeAllocs  = 1000
	largeLatency = 10 * time.Millisecond
)

// BenchmarkEvaluationLarge is one policy evaluation as the agent makes it
// (target Status, strategy Run with the split role, both hosts selected by
// name with a server-side filter, and target Scale when the action changes
// the count) against a stand-in in a separate process holding N = 5000
// nodes and A = 1000 allocations per host, every request delayed 10 ms.
// It reports ns/op, requests/eval (the strategy's Nomad requests, steady
// state: the node cache of what other allocations reserve is warm) and
// target-requests/eval (Status, and Scale when the count changes, which
// the pinned quotas keep from happening; a Scale's writes are counted by
// TestTargetScaleIsOneRegister) apart. It fails unless every evaluation
// decides and the strategy's requests stay within their bound: with the
// default stats_sample (256 allocations read per host, drawn at random)
// issue 13's A + 4 for both hosts together (2 x 256 stats reads, the job,
// its allocation list and the two nodes: 516); with stats_sample = A
// (every allocation read, one request each: Nomad has no batch stats
// endpoint) 2A + 4.
func BenchmarkEvaluationLarge(b *testing.B) {
	testsupport.StandinOnly(b, "a scenario of nodes, allocations, usage and latency in a stand-in process")
	sc := nomadstandin.Scenario{
		Nodes: []nomadstandin.NodeSpec{
			{Name: "host-a", CPUMHz: 20000, MemoryMB: 65536, NodePool: "first"},
			{Name: "host-b", CPUMHz: 20000, MemoryMB: 65536, NodePool: "second"},
		},
		NodeSets: []nomadstandin.NodeSet{{Count: largeNodes - 2, Template: nomadstandin.NodeSpec{Name: "node", CPUMHz: 20000, MemoryMB: 65536}}},
		Jobs: []nomadstandin.JobSpec{{ID: wJob, Groups: []nomadstandin.GroupSpec{
			{Name: wFirst, Count: largeAllocs, CPUMHz: 10, MemoryMB: 32, NodeName: "host-a"},
			{Name: wSecond, Count: largeAllocs, CPUMHz: 10, MemoryMB: 32, NodeName: "host-b"},
		}}},
		GroupUsage: []nomadstandin.GroupUsage{
			{Job: wJob, Group: wFirst, CPUMHz: 6, MemoryMB: 20},
			{Job: wJob, Group: wSecond, CPUMHz: 4, MemoryMB: 20},
		},
		Latency: []nomadstandin.Latency{{Delay: largeLatency}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, stop, err := nomadstandin.StartProcess(ctx, sc)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	agent := map[string]string{AgentKeyNomadAddress: url}
	st, tg := NewStrategy(hclog.NewNullLogger()), NewTarget(hclog.NewNullLogger())
	if err := st.SetConfig(agent); err != nil {
		b.Fatal(err)
	}
	if err := tg.SetConfig(agent); err != nil {
		b.Fatal(err)
	}
	// Each host's quota pinned at A: the engine decides A + A, the counts
	// stay, and every evaluation reads A allocations per host (a Scale
	// would change A).
	a := strconv.Itoa(largeAllocs)
	base := map[string]string{
		KeyRole: RoleSplit, KeyJob: wJob, KeyMinSamples: "1",
		PrefixFirst + KeyNodeName: "host-a", PrefixFirst + KeyGroup: wFirst,
		PrefixSecond + KeyNodeName: "host-b", PrefixSecond + KeyGroup: wSecond,
		PrefixFirst + KeyMin: a, PrefixFirst + KeyMax: a, PrefixSecond + KeyMin: a, PrefixSecond + KeyMax: a,
	}
	counter := &requestCounter{b: b, ctx: ctx, url: url}
	modes := []struct {
		name   string
		sample string
		bound  int64
	}{
		{"stats_sample=default", "", largeAllocs + 4},
		{"stats_sample=A", a, 2*largeAllocs + 4},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			cfg := maps.Clone(base)
			if m.sample != "" {
				cfg[KeyStatsSample] = m.sample
			}
			counter.b = b
			benchEvaluations(b, st, tg, cfg, counter, m.bound)
		})
	}
}

// benchEvaluations runs b.N evaluations of cfg after one that warms the
// node cache, failing when one does not decide or makes more than bound
// strategy requests.
func benchEvaluations(b *testing.B, st *Strategy, tg *Target, cfg map[string]string, counter *requestCounter, bound int64) {
	eval := func() (strategy, target int64) {
		status, err := tg.Status(tcfg)
		if err != nil {
			b.Fatal(err)
		}
		target += counter.since()
		ev, err := st.Run(newEval("large", cfg), status.Count)
		if err != nil {
			b.Fatal(err)
		}
		if strings.HasPrefix(ev.Action.Reason, noScalingPrefix) {
			b.Fatalf("the evaluation did not decide: %s", ev.Action.Reason)
		}
		strategy = counter.since()
		if ev.Action.Direction != sdk.ScaleDirectionNone && ev.Action.Count != status.Count {
			if err := tg.Scale(*ev.Action, tcfg); err != nil {
				b.Fatal(err)
			}
		}
		return strategy, target + counter.since()
	}
	eval() // the node cache of what other allocations reserve, warm
	var strategyRequests, targetRequests int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, t := eval()
		strategyRequests += s
		targetRequests += t
		if s > bound {
			b.Fatalf("evaluation %d made %d strategy requests, more than its bound %d", i, s, bound)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(strategyRequests)/float64(b.N), "requests/eval")
	b.ReportMetric(float64(targetRequests)/float64(b.N), "target-requests/eval")
}

// requestCounter counts the stand-in's requests between calls (its own
// counting endpoint is not counted).
type requestCounter struct {
	b    *testing.B
	ctx  context.Context
	url  string
	last int64
}

// since is how many requests the stand-in served since the last call.
func (c *requestCounter) since() int64 {
	rc, err := nomadstandin.FetchRequestCounts(c.ctx, c.url)
	if err != nil {
		c.b.Fatal(err)
	}
	n := int64(rc.Total) - c.last
	c.last = int64(rc.Total)
	return n
}
