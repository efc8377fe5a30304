package nomadplugin

import (
	"context"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
)

// Issue 13's large evaluation: N nodes, A allocations of the job's group
// on each of the two hosts, a fixed latency on every Nomad request.
const (
	largeNodes   = 5000
	largeAllocs  = 1000
	largeLatency = 10 * time.Millisecond
)

// BenchmarkEvaluationLarge is one strategy evaluation (Run, split role,
// both hosts selected by name with a server-side filter) against a
// stand-in in a separate process holding N = 5000 nodes and A = 1000
// allocations per host, every request delayed 10 ms. It reports ns/op and
// requests/eval (Nomad requests per evaluation, steady state: the node
// cache of what other jobs reserve is warm), and fails unless every
// evaluation decides. Goals (issue 13): under 1.5 s, requests/eval at
// most the allocations read plus 4.
func BenchmarkEvaluationLarge(b *testing.B) {
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
	st := NewStrategy(hclog.NewNullLogger())
	if err := st.SetConfig(map[string]string{AgentKeyNomadAddress: url}); err != nil {
		b.Fatal(err)
	}
	cfg := map[string]string{
		KeyRole: RoleSplit, KeyJob: wJob, KeyMinSamples: "1",
		PrefixFirst + KeyNodeName: "host-a", PrefixFirst + KeyGroup: wFirst,
		PrefixSecond + KeyNodeName: "host-b", PrefixSecond + KeyGroup: wSecond,
	}
	run := func() {
		ev, err := st.Run(newEval("large", cfg), 2*largeAllocs)
		if err != nil {
			b.Fatal(err)
		}
		if strings.HasPrefix(ev.Action.Reason, "no scaling") {
			b.Fatalf("the evaluation did not decide: %s", ev.Action.Reason)
		}
	}
	run() // the node cache of what other jobs reserve, warm
	before, err := nomadstandin.FetchRequestCounts(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.StopTimer()
	after, err := nomadstandin.FetchRequestCounts(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(after.Total-before.Total)/float64(b.N), "requests/eval")
}
