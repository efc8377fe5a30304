package provider

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

const (
	usageJob    = "web"
	usageFront  = "front"
	usageBack   = "back"
	secretToken = "0b5c7e2a-5f2e-4c55-9d7e-activation-secret"
)

// usageFixture is a stand-in with three nodes: host-a and host-b in pool
// "edge" (classes big and small), host-c in pool "core"; job web has group
// front (3 allocations) on host-a and back (2) on host-b.
type usageFixture struct {
	s                   *nomadstandin.Server
	client              *api.Client
	nodeA, nodeB, nodeC string
}

func newUsageFixture(t *testing.T) *usageFixture {
	t.Helper()
	testsupport.StandinOnly(t, "three nodes, a job and their usage set from Go")
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	f := &usageFixture{s: s}
	must := func(id string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	f.nodeA = must(s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 8000, MemoryMB: 16384, ReservedCPUMHz: 500, ReservedMemoryMB: 1024, NodePool: "edge", NodeClass: "big"}))
	f.nodeB = must(s.AddNode(nomadstandin.NodeSpec{Name: "host-b", CPUMHz: 4000, MemoryMB: 8192, NodePool: "edge", NodeClass: "small"}))
	f.nodeC = must(s.AddNode(nomadstandin.NodeSpec{Name: "host-c", CPUMHz: 4000, MemoryMB: 8192, NodePool: "core"}))
	if err := s.AddJob(nomadstandin.JobSpec{ID: usageJob, Groups: []nomadstandin.GroupSpec{
		{Name: usageFront, Count: 3, CPUMHz: 500, MemoryMB: 256, NodeID: f.nodeA},
		{Name: usageBack, Count: 2, CPUMHz: 300, MemoryMB: 128, NodeID: f.nodeB},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []error{
		s.SetGroupUsage("", usageJob, usageFront, 180, 100),
		s.SetGroupUsage("", usageJob, usageBack, 90, 40),
		s.SetNodeUsage(f.nodeA, 300, 1024),
		s.SetNodeUsage(f.nodeB, 150, 512),
	} {
		if e != nil {
			t.Fatal(e)
		}
	}
	if f.client, err = s.Client(""); err != nil {
		t.Fatal(err)
	}
	return f
}

// providerHCL points the provider at the stand-in, with an optional token.
func (f *usageFixture) providerHCL(token string) string {
	tok := ""
	if token != "" {
		tok = "\n    token = " + hclString(token)
	}
	return fmt.Sprintf("provider \"activation\" {\n  nomad {\n    address = %s%s\n  }\n}\n", hclString(f.s.URL()), tok)
}

// usageConfig renders a data source "test" with attrs (raw HCL).
func usageConfig(name string, attrs map[string]string) string {
	return dataConfig("activation_host_usage", name, attrs)
}

// observationCheck is the exact state of observation o, except the sample
// times, which must fall within [from, to] and increase.
func observationCheck(o engine.Observation, from, to time.Time) knownvalue.Check {
	samples := make([]knownvalue.Check, len(o.Samples))
	for i, s := range o.Samples {
		samples[i] = knownvalue.ObjectExact(map[string]knownvalue.Check{
			sampleTime: knownvalue.Int64Func(func(v int64) error {
				if v < from.Unix() || v > to.Unix() {
					return fmt.Errorf("sample time %d outside the test's read window [%d, %d]", v, from.Unix(), to.Unix())
				}
				return nil
			}),
			sampleCPUMHz:   knownvalue.Float64Exact(s.CPUMHz),
			sampleMemoryMB: knownvalue.Float64Exact(s.MemoryMB),
		})
	}
	host := knownvalue.Check(knownvalue.Null())
	if o.Host != "" {
		host = knownvalue.StringExact(o.Host)
	}
	queued := knownvalue.Check(knownvalue.Null())
	if o.QueuedReplicas != nil {
		qs := make([]knownvalue.Check, len(o.QueuedReplicas))
		for i, r := range o.QueuedReplicas {
			qs[i] = knownvalue.ObjectExact(map[string]knownvalue.Check{
				replicaCPUMHz: knownvalue.Float64Exact(r.CPUMHz), replicaMemoryMB: knownvalue.Float64Exact(r.MemoryMB)})
		}
		queued = knownvalue.ListExact(qs)
	}
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		obsHost:                  host,
		obsCPUCapacityMHz:        knownvalue.Float64Exact(o.CPUCapacityMHz),
		obsMemoryCapacityMB:      knownvalue.Float64Exact(o.MemoryCapacityMB),
		obsUsageSamples:          knownvalue.ListExact(samples),
		obsRequestedCPUMHz:       knownvalue.Float64Exact(o.RequestedCPUMHz),
		obsRequestedMemoryMB:     knownvalue.Float64Exact(o.RequestedMemoryMB),
		obsRunningReplicas:       knownvalue.Int64Exact(int64(o.RunningReplicas)),
		obsWarmingReplicas:       knownvalue.Int64Exact(int64(o.WarmingReplicas)),
		obsReplicaCPUDemandMHz:   knownvalue.Float64Exact(o.ReplicaCPUDemandMHz),
		obsReplicaMemoryDemandMB: knownvalue.Float64Exact(o.ReplicaMemoryDemandMB),
		obsWantedReplicas:        knownvalue.Int64Exact(int64(o.WantedReplicas)),
		obsQueuedReplicas:        queued,
		obsOtherReservedCPUMHz:   knownvalue.Float64Exact(o.OtherReservedCPUMHz),
		obsOtherReservedMemoryMB: knownvalue.Float64Exact(o.OtherReservedMemoryMB),
	})
}

// expectedReading reads q directly with nomadusage, with the options the
// data source reads with by default (warmup): what the data source must
// pass through unchanged. What nomadusage reads is its own tests' concern;
// TestAccHostUsage_warmup checks the warm-up against figures computed from
// the scenario instead.
func expectedReading(t *testing.T, c *api.Client, q nomadusage.Query) *nomadusage.Reading {
	t.Helper()
	rd, err := (&nomadusage.Reader{Client: c, Options: nomadusage.Options{Warmup: defaultWarmup}}).Read(context.Background(), q)
	if err != nil {
		t.Fatalf("direct read: %v", err)
	}
	return rd
}

// ---- unit tests ----

func TestHostUsageSchema(t *testing.T) {
	ctx := context.Background()
	s := dataSourceSchema(t, NewHostUsageDataSource())
	if diags := s.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("ValidateImplementation: %v", diags)
	}
	checkSchemaDescriptions(t, s)
}

// readUsageInProcess runs Read with the provider's nomad block n (no
// environment), and returns the state and the diagnostics as text.
func readUsageInProcess(t *testing.T, n *nomadModel, m hostUsageModel) (hostUsageModel, string) {
	t.Helper()
	return readUsageWith(t, context.Background(), newNomadConnection(context.Background(), n, noEnv), m)
}

// readUsageWith runs Read through the connection c with ctx.
func readUsageWith(t testing.TB, ctx context.Context, c *nomadConnection, m hostUsageModel) (hostUsageModel, string) {
	t.Helper()
	ds := &hostUsageDataSource{data: &providerData{Nomad: c}}
	var sresp datasource.SchemaResponse
	ds.Schema(ctx, datasource.SchemaRequest{}, &sresp)
	sch := sresp.Schema
	cfg := tfsdk.State{Schema: sch}
	if diags := cfg.Set(ctx, &m); diags.HasError() {
		t.Fatal(diags)
	}
	resp := datasource.ReadResponse{State: tfsdk.State{Schema: sch, Raw: tftypes.NewValue(sch.Type().TerraformType(ctx), nil)}}
	ds.Read(ctx, datasource.ReadRequest{Config: tfsdk.Config{Raw: cfg.Raw, Schema: sch}}, &resp)
	var b strings.Builder
	for _, d := range resp.Diagnostics {
		fmt.Fprintf(&b, "%s: %s\n", d.Summary(), d.Detail())
	}
	var out hostUsageModel
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.Get(ctx, &out)...)
	}
	return out, b.String()
}

func nullUsageModel() hostUsageModel {
	return hostUsageModel{
		NodeID: types.StringNull(), NodeName: types.StringNull(), NodePool: types.StringNull(), NodeClass: types.StringNull(),
		Namespace: types.StringNull(), Job: types.StringNull(), Group: types.StringNull(),
		ReplicaCPUDemandMHz: types.NumberNull(), ReplicaMemoryDemandMB: types.NumberNull(), WantedReplicas: types.NumberNull(),
		Label: types.StringNull(), Samples: types.NumberNull(), SampleInterval: types.NumberNull(),
		Observation: types.ObjectNull(observationAttrTypes), ReadAt: types.StringNull(), Warmup: types.StringNull(),
		Timeouts: timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"read": types.StringType})},
	}
}

// standInBlock is a nomad block pointing at the stand-in.
func (f *usageFixture) standInBlock(token string) *nomadModel {
	n := nullNomadBlock()
	n.Address = types.StringValue(f.s.URL())
	if token != "" {
		n.Token = types.StringValue(token)
	}
	return n
}

// TestHostUsageForbiddenNamesTheToken: a 403 says where the refused token
// came from (the attribute that set it, or NOMAD_TOKEN), or that none was
// sent, and never shows it.
func TestHostUsageForbiddenNamesTheToken(t *testing.T) {
	testsupport.StandinOnly(t, "an ACL token the stand-in requires")
	env := func(vars map[string]string) nomadconn.Getenv {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	cases := []struct {
		name string
		set  func(n *nomadModel)
		env  map[string]string
		want string
	}{
		{"token", func(n *nomadModel) { n.Token = types.StringValue(secretToken) }, nil, "the ACL token in the provider's nomad.token is unknown to Nomad"},
		{"secret_id", func(n *nomadModel) { n.SecretID = types.StringValue(secretToken) }, nil, "the ACL token in the provider's nomad.secret_id is unknown to Nomad"},
		{"NOMAD_TOKEN", nil, map[string]string{nomadconn.EnvToken: secretToken}, "the ACL token in NOMAD_TOKEN is unknown to Nomad"},
		{"NOMAD_TOKEN ignored", func(n *nomadModel) {
			n.IgnoreEnvVars = types.MapValueMust(types.BoolType, map[string]attr.Value{nomadconn.EnvToken: types.BoolValue(true)})
		}, map[string]string{nomadconn.EnvToken: secretToken}, "no ACL token was sent"},
		{"none", nil, nil, "no ACL token was sent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newUsageFixture(t)
			f.s.RequireToken("the-right-token", nomadstandin.TokenPolicy{})
			n := f.standInBlock("")
			if c.set != nil {
				c.set(n)
			}
			m := nullUsageModel()
			m.NodeName = types.StringValue("host-a")
			m.Job = types.StringValue(usageJob)
			_, diags := readUsageWith(t, context.Background(), newNomadConnection(context.Background(), n, env(c.env)), m)
			if !strings.Contains(diags, "answered 403 (permission denied): "+c.want) {
				t.Fatalf("diagnostics %q do not say %q", diags, c.want)
			}
			if strings.Contains(diags, secretToken) {
				t.Fatalf("diagnostic shows the token: %q", diags)
			}
		})
	}
}

// TestHostUsageTokenNeverShown: a refused token and a server error give
// diagnostics that never contain the token.
func TestHostUsageTokenNeverShown(t *testing.T) {
	testsupport.StandinOnly(t, "an ACL token the stand-in requires, a fault injected that echoes it")
	f := newUsageFixture(t)
	f.s.RequireToken("the-right-token", nomadstandin.TokenPolicy{})
	m := nullUsageModel()
	m.NodeName = types.StringValue("host-a")
	m.Job = types.StringValue(usageJob)
	n := f.standInBlock(secretToken)
	_, diags := readUsageInProcess(t, n, m)
	if !strings.Contains(diags, "403") {
		t.Fatalf("want a 403 diagnostic, got %q", diags)
	}
	if strings.Contains(diags, secretToken) {
		t.Fatalf("diagnostic shows the token: %q", diags)
	}
	f.s.RequireToken(secretToken, nomadstandin.TokenPolicy{})
	f.s.InjectFault(nomadstandin.Fault{Path: "/v1/nodes", Status: 500, Message: "boom " + secretToken})
	_, diags = readUsageInProcess(t, n, m)
	if !strings.Contains(diags, "500") || strings.Contains(diags, secretToken) {
		t.Fatalf("want a 500 diagnostic without the token, got %q", diags)
	}
	for _, r := range f.s.Requests() {
		if !r.HadToken {
			t.Errorf("request %s %s went without the token", r.Method, r.Path)
		}
	}
}

// TestHostUsagePasswordInAddress: a basic-auth password in nomad.address
// never appears in the diagnostics nor in the provider's logs, whether the
// server answers with an error that echoes it or cannot be reached.
func TestHostUsagePasswordInAddress(t *testing.T) {
	testsupport.StandinOnly(t, "a fault injected that echoes a password")
	const password = "pa55-in-the-address"
	f := newUsageFixture(t)
	u, err := url.Parse(f.s.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("ops", password)
	f.s.InjectFault(nomadstandin.Fault{Path: "/v1/nodes", Status: 500, Message: "proxy says: bad credentials ops:" + password})
	m := nullUsageModel()
	m.NodeName = types.StringValue("host-a")
	m.ReplicaCPUDemandMHz = numberValue(100)
	for _, addr := range []string{u.String(), "http://ops:" + password + "@127.0.0.1:1"} {
		var logs strings.Builder
		ctx := tflogtest.RootLogger(context.Background(), &logs)
		n := nullNomadBlock()
		n.Address = types.StringValue(addr)
		_, diags := readUsageWith(t, ctx, newNomadConnection(ctx, n, noEnv), m)
		if diags == "" {
			t.Fatalf("%s: no error", nomadconn.RedactURL(addr))
		}
		if strings.Contains(diags, password) {
			t.Errorf("the diagnostics show the password: %s", diags)
		}
		if strings.Contains(logs.String(), password) {
			t.Errorf("the logs show the password: %s", logs.String())
		}
		if !strings.Contains(logs.String(), "activation_host_usage: reading") {
			t.Errorf("no trace log of the read to check: %s", logs.String())
		}
	}
}

// TestHostUsageTimeoutNamesTheCall: a read that outlives timeouts.read
// fails saying so, and which call to Nomad was under way.
func TestHostUsageTimeoutNamesTheCall(t *testing.T) {
	testsupport.StandinOnly(t, "a delay injected on one call")
	f := newUsageFixture(t)
	// The allocations' list hangs until the read gives up. The calls
	// before it (the node, the job) must finish within the timeout, so it
	// is long enough for them on a loaded machine under -race: at 500ms,
	// CI once timed out reading the job instead.
	f.s.InjectFault(nomadstandin.Fault{Path: "/v1/job/web/allocations", Hang: true})
	m := nullUsageModel()
	m.NodeName, m.Job, m.Group = types.StringValue("host-a"), types.StringValue(usageJob), types.StringValue(usageFront)
	m.Timeouts = timeouts.Value{Object: types.ObjectValueMust(map[string]attr.Type{"read": types.StringType},
		map[string]attr.Value{"read": types.StringValue("5s")})}
	m.Samples = wholeValue(1) // one read: no wait between samples
	_, diags := readUsageInProcess(t, f.standInBlock(""), m)
	for _, want := range []string{"Reading the host's usage timed out", "timeouts.read, 5s", "list allocations of job \"web\""} {
		if !strings.Contains(diags, want) {
			t.Errorf("diagnostic %q does not say %q", diags, want)
		}
	}
}

// TestHostUsageInterruptedBetweenSamples: an interrupt (OpenTofu cancels
// the read's context on Ctrl-C) while waiting between samples is reported
// as an interrupt, not as the read timeout it is not. On a real cluster it
// reads a ready node whole, and interrupts later (its first read may take
// longer).
func TestHostUsageInterruptedBetweenSamples(t *testing.T) {
	m := nullUsageModel()
	m.Samples, m.SampleInterval = wholeValue(2), wholeValue(30)
	interruptAfter := 500 * time.Millisecond
	var c *nomadConnection
	if testsupport.ClusterEnv().Real() {
		client, getenv := realNomad(t)
		m.NodeID, m.ReplicaCPUDemandMHz = types.StringValue(readyNodes(t, client)[0].ID), numberValue(100)
		m.SampleInterval = wholeValue(60)
		interruptAfter = 5 * time.Second
		c = newNomadConnection(context.Background(), nil, getenv)
	} else {
		f := newUsageFixture(t)
		m.NodeName, m.Job, m.Group = types.StringValue("host-a"), types.StringValue(usageJob), types.StringValue(usageFront)
		c = newNomadConnection(context.Background(), f.standInBlock(""), noEnv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(interruptAfter, cancel)
	defer stop.Stop()
	defer cancel()
	_, diags := readUsageWith(t, ctx, c, m)
	if !strings.Contains(diags, "Reading the host's usage was interrupted: activation_host_usage was interrupted waiting between samples, after 1 reads") ||
		strings.Contains(diags, "timed out") {
		t.Fatalf("diagnostics %q, want an interrupt between samples", diags)
	}
}

// TestHostUsageSharedConnection: every read of a provider instance goes
// through its one connection and reader, also when reads run in parallel
// from a cold start, as OpenTofu runs them (go test -race). On a real
// cluster it reads up to two ready nodes by ID.
func TestHostUsageSharedConnection(t *testing.T) {
	var c *nomadConnection
	type host struct{ id, name string } // id "": read by name
	var hosts [2]host
	if testsupport.ClusterEnv().Real() {
		client, getenv := realNomad(t)
		nodes := readyNodes(t, client)
		a, b := nodes[0], nodes[min(1, len(nodes)-1)]
		hosts = [2]host{{a.ID, a.Name}, {b.ID, b.Name}}
		c = newNomadConnection(context.Background(), nil, getenv)
	} else {
		f := newUsageFixture(t)
		hosts = [2]host{{name: "host-a"}, {name: "host-b"}}
		c = newNomadConnection(context.Background(), f.standInBlock(""), noEnv)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 6 {
		h := hosts[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			m := nullUsageModel()
			m.ReplicaCPUDemandMHz = numberValue(100)
			if h.id != "" {
				m.NodeID = types.StringValue(h.id)
			} else {
				m.NodeName = types.StringValue(h.name)
			}
			got, diags := readUsageWith(t, context.Background(), c, m)
			if diags != "" || got.NodeName.ValueString() != h.name || (h.id != "" && got.NodeID.ValueString() != h.id) {
				t.Errorf("read %s %s: %q %v %v", h.name, h.id, diags, got.NodeName, got.NodeID)
			}
		}()
	}
	close(start)
	wg.Wait()
	opts := readerOptions(defaultWarmup)
	conn, reader, err := c.get(opts)
	if err != nil {
		t.Fatal(err)
	}
	if conn2, reader2, _ := c.get(opts); conn2 != conn || reader2 != reader || len(c.readers) != 1 {
		t.Fatalf("the reads made %d readers, or the connection or the reader changed", len(c.readers))
	}
	// Another warm-up is another reader on the same connection.
	if conn3, reader3, _ := c.get(nomadusage.Options{}); conn3 != conn || reader3 == reader || reader3.Options.Warmup != 0 {
		t.Fatal("a read with another warm-up does not get its own reader on the one connection")
	}
}

// TestHostUsageReadInProcess: a whole node read by ID gives the observation
// nomadusage reads (the data source passes it through unchanged) and the
// node's figures. On a real cluster, whose usage moves, it reads a ready
// node: its name and ID and its capacity as the node's own record gives
// them; the replicas and requests between those of direct reads just
// before and after; one sample within the capacity.
func TestHostUsageReadInProcess(t *testing.T) {
	if testsupport.ClusterEnv().Real() {
		testHostUsageReadInProcessReal(t)
		return
	}
	f := newUsageFixture(t)
	m := nullUsageModel()
	m.NodeID = types.StringValue(f.nodeB)
	m.ReplicaCPUDemandMHz = numberValue(250)
	m.Samples = wholeValue(1)
	got, diags := readUsageInProcess(t, f.standInBlock(""), m)
	if diags != "" {
		t.Fatal(diags)
	}
	want := expectedReading(t, f.client, nomadusage.Query{Host: nomadusage.HostSelector{NodeID: f.nodeB}, ReplicaCPUDemandMHz: 250})
	if got.NodeName.ValueString() != "host-b" || got.NodeID.ValueString() != f.nodeB {
		t.Errorf("node %v %v, want host-b %s", got.NodeName, got.NodeID, f.nodeB)
	}
	o := engineObservation(t, got)
	o.Samples[0].Time = want.Observation.Samples[0].Time
	if !reflect.DeepEqual(o, want.Observation) {
		t.Errorf("observation\n%+v\nwant\n%+v", o, want.Observation)
	}
	// And the figures from the scenario itself (not only what nomadusage
	// reads): host-b, 4000 MHz and 8192 MB, runs back's 2 replicas of
	// 300 MHz and 128 MB using 90 MHz and 40 MB each, over a background
	// of 150 MHz and 512 MB.
	if o.CPUCapacityMHz != 4000 || o.MemoryCapacityMB != 8192 || o.RunningReplicas != 2 || o.RequestedCPUMHz != 600 || o.RequestedMemoryMB != 256 ||
		len(o.Samples) != 1 || o.Samples[0].CPUMHz != 330 || o.Samples[0].MemoryMB != 592 || o.ReplicaCPUDemandMHz != 250 || o.OtherReservedCPUMHz != 0 {
		t.Errorf("observation %+v: want 4000 MHz, 8192 MB, 2 running requesting 600 MHz and 256 MB, one sample of 330 MHz and 592 MB, demand 250", o)
	}
}

func testHostUsageReadInProcessReal(t *testing.T) {
	client, getenv := realNomad(t)
	node := readyNodes(t, client)[0]
	capCPU, capMem := nodeCapacity(t, client, node.ID)
	m := nullUsageModel()
	m.NodeID = types.StringValue(node.ID)
	m.ReplicaCPUDemandMHz = numberValue(250)
	m.Samples = wholeValue(1)
	q := nomadusage.Query{Host: nomadusage.HostSelector{NodeID: node.ID}, ReplicaCPUDemandMHz: 250}
	before := expectedReading(t, client, q).Observation
	got, diags := readUsageWith(t, context.Background(), newNomadConnection(context.Background(), nil, getenv), m)
	if diags != "" {
		t.Fatal(diags)
	}
	after := expectedReading(t, client, q).Observation
	if got.NodeName.ValueString() != node.Name || got.NodeID.ValueString() != node.ID {
		t.Errorf("node %v %v, want %s %s", got.NodeName, got.NodeID, node.Name, node.ID)
	}
	o := engineObservation(t, got)
	if o.Host != before.Host || o.CPUCapacityMHz != capCPU || o.MemoryCapacityMB != capMem || o.ReplicaCPUDemandMHz != 250 {
		t.Errorf("host %q, capacity %v MHz %v MB, demand %v MHz; want %q, the node record's %v MHz %v MB, 250",
			o.Host, o.CPUCapacityMHz, o.MemoryCapacityMB, o.ReplicaCPUDemandMHz, before.Host, capCPU, capMem)
	}
	between := func(what string, v, a, b float64) {
		if v < min(a, b) || v > max(a, b) {
			t.Errorf("%s %v, want between the direct reads' %v and %v", what, v, a, b)
		}
	}
	between("running replicas", float64(o.RunningReplicas), float64(before.RunningReplicas), float64(after.RunningReplicas))
	between("requested CPU", o.RequestedCPUMHz, before.RequestedCPUMHz, after.RequestedCPUMHz)
	between("requested memory", o.RequestedMemoryMB, before.RequestedMemoryMB, after.RequestedMemoryMB)
	between("others' CPU", o.OtherReservedCPUMHz, before.OtherReservedCPUMHz, after.OtherReservedCPUMHz)
	if len(o.Samples) != 1 {
		t.Fatalf("%d samples, want 1", len(o.Samples))
	}
	// A whole-node sample is the machine's usage, the share the node
	// reserves for its OS included: bounded by the node's whole resources.
	totCPU, totMem, _ := nodeTotal(t, client, node.ID)
	if s := o.Samples[0]; s.CPUMHz < 0 || s.CPUMHz > totCPU*1.05 || s.MemoryMB < 0 || s.MemoryMB > totMem*1.05 {
		t.Errorf("sample %+v outside the node's whole resources %v MHz %v MB", s, totCPU, totMem)
	}
}

// engineObservation is a read's observation as the engine takes it.
func engineObservation(t *testing.T, m hostUsageModel) engine.Observation {
	t.Helper()
	var om observationModel
	if d := m.Observation.As(context.Background(), &om, basetypes.ObjectAsOptions{}); d.HasError() {
		t.Fatal(d)
	}
	o, err := om.toEngine(path.Root(huObservation))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// realNomad is the real cluster at NOMAD_ADDR as the provider reaches it
// with the NOMAD_* variables the tests were started with: a client, and
// the environment a provider's connection falls back to.
func realNomad(t *testing.T) (*api.Client, nomadconn.Getenv) {
	t.Helper()
	env := testsupport.ClusterEnv()
	conn, err := nomadconn.New(nomadconn.Settings{}, env.Lookup)
	if err != nil {
		t.Fatalf("client for NOMAD_ADDR: %v", err)
	}
	return conn.Client(), env.Lookup
}

// readyNodes are the cluster's ready nodes, in its list's order; the test
// fails when it has none.
func readyNodes(t *testing.T, client *api.Client) []*api.NodeListStub {
	t.Helper()
	stubs, _, err := client.Nodes().List(nil)
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	var ready []*api.NodeListStub
	for _, n := range stubs {
		if n.Status == api.NodeStatusReady {
			ready = append(ready, n)
		}
	}
	if len(ready) == 0 {
		t.Fatal("the cluster has no ready node to read")
	}
	return ready
}

// nodeCapacity is a node's capacity from its own record, not from the
// reader the data source uses: its resources less what it reserves for
// the OS (Nomad 0.9 and later give NodeResources).
func nodeCapacity(t *testing.T, client *api.Client, id string) (cpuMHz, memoryMB float64) {
	t.Helper()
	cpuMHz, memoryMB, rr := nodeTotal(t, client, id)
	if rr != nil {
		cpuMHz -= float64(rr.Cpu.CpuShares)
		memoryMB -= float64(rr.Memory.MemoryMB)
	}
	return cpuMHz, memoryMB
}

// nodeTotal is a node's whole CPU and memory by its own record, and what
// it reserves (for its OS and agent: a whole-node reading of usage
// includes that share).
func nodeTotal(t *testing.T, client *api.Client, id string) (cpuMHz, memoryMB float64, reserved *api.NodeReservedResources) {
	t.Helper()
	nd, _, err := client.Nodes().Info(id, nil)
	if err != nil {
		t.Fatalf("read node %s: %v", id, err)
	}
	if nd.NodeResources == nil {
		t.Fatalf("node %s has no NodeResources (a Nomad before 0.9?)", nd.Name)
	}
	return float64(nd.NodeResources.Cpu.CpuShares), float64(nd.NodeResources.Memory.MemoryMB), nd.ReservedResources
}

// ---- acceptance tests against the stand-in ----

func TestAccHostUsage_jobGroupIntoCounts(t *testing.T) {
	testsupport.StandinOnly(t, "fixed usage, the decision computed from it")
	accParallel(t) // before the fixture: its allocations age
	f := newUsageFixture(t)
	// (wanted_replicas on the first host: the second refuses a queue)
	qa := nomadusage.Query{Host: nomadusage.HostSelector{Name: "host-a"}, Job: usageJob, Group: usageFront, WantedReplicas: 4}
	qb := nomadusage.Query{Host: nomadusage.HostSelector{Name: "host-b"}, Job: usageJob, Group: usageBack}
	wa, wb := expectedReading(t, f.client, qa), expectedReading(t, f.client, qb)
	// Both data sources at their defaults work together: three reads a
	// second apart, the min_samples a decision needs by default. Usage is
	// steady in the stand-in, so each read gives the same sample.
	for _, o := range []*engine.Observation{&wa.Observation, &wb.Observation} {
		s := o.Samples[0]
		o.Samples = []engine.Sample{s, {Time: s.Time + 1, CPUMHz: s.CPUMHz, MemoryMB: s.MemoryMB}, {Time: s.Time + 2, CPUMHz: s.CPUMHz, MemoryMB: s.MemoryMB}}
	}
	want := mustDecide(t, &engine.Request{First: wa.Observation, Second: wb.Observation})
	cfg := f.providerHCL("") +
		usageConfig("a", map[string]string{huNodeName: `"host-a"`, huJob: `"web"`, huGroup: `"front"`, huWantedReplicas: "4"}) +
		usageConfig("b", map[string]string{huNodeName: `"host-b"`, huJob: `"web"`, huGroup: `"back"`}) +
		countsConfig(map[string]string{
			attrFirst:  "data.activation_host_usage.a.observation",
			attrSecond: "data.activation_host_usage.b.observation",
		}, "")
	from := time.Now()
	runAcc(t, resource.TestCase{Steps: []resource.TestStep{{
		Config: cfg,
		ConfigStateChecks: append([]statecheck.StateCheck{
			statecheck.ExpectKnownValue("data.activation_host_usage.a", tfjsonpath.New(huObservation), observationCheck(wa.Observation, from, time.Now().Add(10*time.Minute))),
			statecheck.ExpectKnownValue("data.activation_host_usage.b", tfjsonpath.New(huObservation), observationCheck(wb.Observation, from, time.Now().Add(10*time.Minute))),
			statecheck.ExpectKnownValue("data.activation_host_usage.a", tfjsonpath.New(huNodeID), knownvalue.StringExact(f.nodeA)),
			statecheck.ExpectKnownValue("data.activation_host_usage.a", tfjsonpath.New(huNamespace), knownvalue.StringExact("default")),
		}, decisionChecks(countsAddr, want)...),
	}}})
}

func TestAccHostUsage_wholeNodeByIDSeveralSamples(t *testing.T) {
	testsupport.StandinOnly(t, "fixed usage compared exactly")
	accParallel(t) // before the fixture: its allocations age
	f := newUsageFixture(t)
	q := nomadusage.Query{Host: nomadusage.HostSelector{NodeID: f.nodeB}, ReplicaCPUDemandMHz: 250, Label: "second"}
	w := expectedReading(t, f.client, q).Observation
	w.Samples = []engine.Sample{w.Samples[0], w.Samples[0]} // usage is steady in the stand-in
	from := time.Now()
	runAcc(t, resource.TestCase{Steps: []resource.TestStep{{
		Config: f.providerHCL("") + usageConfig("test", map[string]string{
			huNodeID: hclString(f.nodeB), huReplicaCPU: "250", huLabel: `"second"`, huSamples: "2", huSampleInterval: "1",
		}),
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue("data.activation_host_usage.test", tfjsonpath.New(huObservation), observationCheck(w, from, time.Now().Add(10*time.Minute))),
			statecheck.ExpectKnownValue("data.activation_host_usage.test", tfjsonpath.New(huNodeName), knownvalue.StringExact("host-b")),
			statecheck.ExpectKnownValue("data.activation_host_usage.test", tfjsonpath.New(huObservation).AtMapKey(obsUsageSamples).AtSliceIndex(1).AtMapKey(sampleTime),
				knownvalue.Int64Func(func(v int64) error {
					if v <= from.Unix() {
						return fmt.Errorf("second sample at %d is not after the first read began (%d)", v, from.Unix())
					}
					return nil
				})),
		},
	}}})
}

// A node Nomad places nothing new on (draining, ineligible) still gives
// its usage, and says so: schedulable false, node_state why, and a
// warning (a user trial: a drained node planned a full count silently).
// A ready, eligible node reads schedulable with no state.
func TestAccHostUsage_nodeState(t *testing.T) {
	testsupport.StandinOnly(t, "draining nodes from Go")
	accParallel(t)
	f := newUsageFixture(t)
	if err := f.s.SetNodeDrain(f.nodeA, true); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetNodeEligibility(f.nodeC, false); err != nil {
		t.Fatal(err)
	}
	cfg := f.providerHCL("") +
		usageConfig("drained", map[string]string{huNodeName: `"host-a"`, huJob: `"web"`, huGroup: `"front"`}) +
		usageConfig("ineligible", map[string]string{huNodeName: `"host-c"`, huReplicaCPU: "250"}) +
		usageConfig("ready", map[string]string{huNodeName: `"host-b"`, huJob: `"web"`, huGroup: `"back"`})
	state := func(name string, schedulable bool, why string) []statecheck.StateCheck {
		addr := "data.activation_host_usage." + name
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New(huSchedulable), knownvalue.Bool(schedulable)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New(huNodeState), knownvalue.StringExact(why)),
		}
	}
	var checks []statecheck.StateCheck
	checks = append(checks, state("drained", false, "is draining and is ineligible for scheduling")...)
	checks = append(checks, state("ineligible", false, "is ineligible for scheduling")...)
	checks = append(checks, state("ready", true, "")...)
	runAcc(t, resource.TestCase{Steps: []resource.TestStep{{Config: cfg, ConfigStateChecks: checks}}})
}

// A Nomad client serves the stats of its latest refresh (telemetry
// collection_interval): reads that repeat a refresh's time are made again
// until the window holds samples distinct samples, or fail naming
// sample_interval_seconds when the stats keep their time.
func TestAccHostUsage_statsInterval(t *testing.T) {
	testsupport.StandinOnly(t, "the clients' stats interval set from Go")
	t.Run("a refresh every 2 s, reads 1 s apart: 3 distinct samples", func(t *testing.T) {
		accParallel(t)
		f := newUsageFixture(t)
		f.s.SetStatsInterval(2 * time.Second)
		runAcc(t, resource.TestCase{Steps: []resource.TestStep{{
			Config: f.providerHCL("") + usageConfig("test", map[string]string{
				huNodeName: `"host-a"`, huJob: `"web"`, huGroup: `"front"`, huSamples: "3", huSampleInterval: "1",
			}),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.activation_host_usage.test", tfjsonpath.New(huObservation).AtMapKey(obsUsageSamples), knownvalue.ListSizeExact(3)),
			},
		}}})
	})
	t.Run("stats that keep their time: an error naming sample_interval_seconds", func(t *testing.T) {
		accParallel(t)
		f := newUsageFixture(t)
		f.s.SetStatsInterval(time.Hour)
		runAcc(t, resource.TestCase{Steps: []resource.TestStep{{
			Config: f.providerHCL("") + usageConfig("test", map[string]string{
				huNodeName: `"host-a"`, huJob: `"web"`, huGroup: `"front"`, huSamples: "2", huSampleInterval: "1",
			}),
			ExpectError: errRegexp(`Attribute sample_interval_seconds: 9 reads 1s apart gave 1 distinct usage samples of the 2 asked`),
		}}})
	})
}

func TestAccHostUsage_poolAndClass(t *testing.T) {
	testsupport.StandinOnly(t, "known pools and classes with fixed usage")
	accParallel(t) // before the fixture: its allocations age
	f := newUsageFixture(t)
	q := nomadusage.Query{Host: nomadusage.HostSelector{Pool: "edge", Class: "big"}, Job: usageJob, Group: usageFront}
	w := expectedReading(t, f.client, q)
	from := time.Now()
	runAcc(t, resource.TestCase{Steps: []resource.TestStep{{
		Config: f.providerHCL("") + usageConfig("test", map[string]string{huNodePool: `"edge"`, huNodeClass: `"big"`, huJob: `"web"`, huGroup: `"front"`, huSamples: "1"}),
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue("data.activation_host_usage.test", tfjsonpath.New(huNodeName), knownvalue.StringExact("host-a")),
			statecheck.ExpectKnownValue("data.activation_host_usage.test", tfjsonpath.New(huGroup), knownvalue.StringExact(usageFront)),
			statecheck.ExpectKnownValue("data.activation_host_usage.test", tfjsonpath.New(huObservation), observationCheck(w.Observation, from, time.Now().Add(10*time.Minute))),
		},
	}}})
}

// TestAccHostUsage_cluster reads a node of the real cluster named by
// NOMAD_ADDR (with NOMAD_TOKEN... as the tests were started with them) when
// it is set, else of the stand-in, and checks what holds on any cluster:
// the node found, its capacity (as the node's record in the API gives it),
// the default's samples (what
// activation_container_counts needs by default), non-negative, an
// observation the engine accepts.
func TestAccHostUsage_cluster(t *testing.T) {
	accParallel(t) // before the fixture: its allocations age
	var client *api.Client
	provider := ""
	factories := providerFactories
	if testsupport.ClusterEnv().Real() {
		// The provider and this test's client resolve the same NOMAD_*
		// variables, the way the provider does for its users.
		var getenv nomadconn.Getenv
		client, getenv = realNomad(t)
		factories = factoriesWithEnv(getenv)
	} else {
		f := newUsageFixture(t)
		client, provider = f.client, f.providerHCL("")
	}
	node := readyNodes(t, client)[0]
	capCPU, capMem := nodeCapacity(t, client, node.ID)
	addr := "data.activation_host_usage.test"
	runAcc(t, resource.TestCase{ProtoV6ProviderFactories: factories, Steps: []resource.TestStep{{
		Config: provider + usageConfig("test", map[string]string{huNodeID: hclString(node.ID), huReplicaCPU: "100"}),
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, tfjsonpath.New(huNodeName), knownvalue.StringExact(node.Name)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New(huObservation).AtMapKey(obsCPUCapacityMHz), knownvalue.Float64Exact(capCPU)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New(huObservation).AtMapKey(obsMemoryCapacityMB), knownvalue.Float64Exact(capMem)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New(huObservation).AtMapKey(obsUsageSamples), knownvalue.ListSizeExact(engine.DefaultMinSamples)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New(huObservation).AtMapKey(obsUsageSamples).AtSliceIndex(0).AtMapKey(sampleCPUMHz),
				knownvalue.Float64Func(func(v float64) error {
					if v < 0 {
						return fmt.Errorf("negative CPU usage %v", v)
					}
					return nil
				})),
		},
	}}})
}

// TestAccHostUsage_nomadEnv: the provider as users run it (New, which
// reads the process's environment) falls back to the NOMAD_* variables:
// the stand-in, which accepts only the token in NOMAD_TOKEN, receives it,
// with NOMAD_NAMESPACE and NOMAD_REGION. The provider the stand-in tests
// run (providerFactories) reads none of them, so a developer's token,
// namespace or region never reaches the stand-in. Not parallel: it sets
// the environment, which the parallel tests only see restored (they resume
// after every sequential test has ended).
func TestAccHostUsage_nomadEnv(t *testing.T) {
	testsupport.StandinOnly(t, "an ACL token the stand-in requires, the requests it received inspected")
	accPreCheck(t)
	const namespace, region = "elsewhere-ns", "elsewhere-region"
	t.Setenv(nomadconn.EnvToken, secretToken)
	t.Setenv(nomadconn.EnvNamespace, namespace)
	t.Setenv(nomadconn.EnvRegion, region)
	// A whole-node read: no job, so the namespace names nothing the
	// stand-in must hold.
	read := func(t *testing.T, f *usageFixture, factories map[string]func() (tfprotov6.ProviderServer, error)) []nomadstandin.Request {
		t.Helper()
		resource.Test(t, resource.TestCase{
			PreCheck:                 func() { accPreCheck(t) },
			ProtoV6ProviderFactories: factories,
			Steps: []resource.TestStep{{
				Config: f.providerHCL("") + usageConfig("test", map[string]string{huNodeID: hclString(f.nodeB), huReplicaCPU: "100"}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.activation_host_usage.test", tfjsonpath.New(huNodeName), knownvalue.StringExact("host-b")),
				},
			}},
		})
		reqs := f.s.Requests()
		if len(reqs) == 0 {
			t.Fatal("the stand-in received no request")
		}
		return reqs
	}
	t.Run("New reads the environment", func(t *testing.T) {
		f := newUsageFixture(t)
		f.s.RequireToken(secretToken, nomadstandin.TokenPolicy{})
		users := map[string]func() (tfprotov6.ProviderServer, error){TypeName: providerserver.NewProtocol6WithError(New("test")())}
		for _, r := range read(t, f, users) {
			if !r.HadToken || !strings.Contains(r.Query, namespace) || !strings.Contains(r.Query, region) {
				t.Errorf("request %s %s?%s: token %v; want NOMAD_TOKEN, NOMAD_NAMESPACE and NOMAD_REGION from the environment", r.Method, r.Path, r.Query, r.HadToken)
			}
		}
	})
	t.Run("the stand-in tests' provider does not", func(t *testing.T) {
		f := newUsageFixture(t)
		for _, r := range read(t, f, providerFactories) {
			if r.HadToken || strings.Contains(r.Query, namespace) || strings.Contains(r.Query, region) {
				t.Errorf("request %s %s?%s carried NOMAD_TOKEN, NOMAD_NAMESPACE or NOMAD_REGION from the environment", r.Method, r.Path, r.Query)
			}
		}
	})
}

// TestAccHostUsage_nomadProviderSettings: a nomad block written as for
// terraform-provider-nomad works: the token as secret_id, and skip_verify
// with a CA, which that provider allows.
func TestAccHostUsage_nomadProviderSettings(t *testing.T) {
	testsupport.StandinOnly(t, "an ACL token the stand-in requires, the requests it received inspected")
	f := newUsageFixture(t)
	f.s.RequireToken(secretToken, nomadstandin.TokenPolicy{})
	provider := fmt.Sprintf("provider \"activation\" {\n  nomad {\n    address = %s\n    secret_id = %s\n    skip_verify = true\n    ca_pem = %s\n  }\n}\n",
		hclString(f.s.URL()), hclString(secretToken), hclString(otherCAPEM(t)))
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config: provider + usageConfig("test", map[string]string{huNodeName: `"host-b"`, huReplicaCPU: "100"}),
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue("data.activation_host_usage.test", tfjsonpath.New(huNodeID), knownvalue.StringExact(f.nodeB)),
		},
	}}})
}

// TestAccHostUsage_warmup: replicas that just started are warming, never
// warm replicas at zero. Four allocations of a group run at 400 MHz and
// 100 MB each; the group then scales to eight, and the stand-in reports
// no usage for the four new ones during their first warmupScenario (as
// Nomad shows for a task whose first stats are not in). The expected
// figures come from that scenario, not from a reader:
//   - warmup as long as the scenario's: the four new allocations are
//     warming, and the sample is the four warm ones' usage;
//   - warmup unset (2 minutes): every allocation is younger, so all eight
//     are warming, and the sample is all the usage;
//   - warmup "0s" turns the rule off: eight warm replicas using 1600 MHz,
//     200 MHz each (the reading the rule exists to prevent).
func TestAccHostUsage_warmup(t *testing.T) {
	testsupport.StandinOnly(t, "allocations of known ages and usage set from Go")
	accParallel(t) // before the fixture: its allocations age
	const (
		warmupScenario = 20 * time.Second
		cpuRequest     = 500
		memRequest     = 256
		cpuUse, memUse = 400.0, 100.0
	)
	f := newUsageFixture(t)
	node, err := f.s.AddNode(nomadstandin.NodeSpec{Name: "host-w", CPUMHz: 16000, MemoryMB: 32768})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.AddJob(nomadstandin.JobSpec{ID: "warm", Groups: []nomadstandin.GroupSpec{
		{Name: "g", Count: 4, CPUMHz: cpuRequest, MemoryMB: memRequest, NodeID: node, Warmup: warmupScenario},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetGroupUsage("", "warm", "g", cpuUse, memUse); err != nil {
		t.Fatal(err)
	}
	var scaledAt time.Time
	scaleUp := func() {
		// The four first allocations leave their warm-up: wait until each
		// reports its usage.
		deadline := time.Now().Add(warmupScenario + time.Minute)
		for _, id := range f.s.AllocIDs("", "warm", "g") {
			for {
				st, err := f.client.Allocations().Stats(&api.Allocation{ID: id}, nil)
				if err == nil && st.ResourceUsage.CpuStats.TotalTicks > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("allocation %s never reported its usage: %v", id, err)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		if err := f.s.SetGroupCount("", "warm", "g", 8); err != nil {
			t.Fatal(err)
		}
		scaledAt = time.Now()
		if g, err := f.s.Group("", "warm", "g"); err != nil || g.Running != 8 {
			t.Fatalf("the group did not scale to 8 running allocations: %+v %v", g, err)
		}
	}
	ds := func(name, warmup string) string {
		attrs := map[string]string{huNodeName: `"host-w"`, huJob: `"warm"`, huGroup: `"g"`}
		if warmup != "" {
			attrs[huWarmup] = hclString(warmup)
		}
		return usageConfig(name, attrs)
	}
	expect := func(name string, warming int, cpu, mem float64) []statecheck.StateCheck {
		addr := "data.activation_host_usage." + name
		obs := tfjsonpath.New(huObservation)
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(addr, obs.AtMapKey(obsRunningReplicas), knownvalue.Int64Exact(8)),
			statecheck.ExpectKnownValue(addr, obs.AtMapKey(obsWarmingReplicas), knownvalue.Int64Exact(int64(warming))),
			statecheck.ExpectKnownValue(addr, obs.AtMapKey(obsRequestedCPUMHz), knownvalue.Float64Exact(8*cpuRequest)),
			statecheck.ExpectKnownValue(addr, obs.AtMapKey(obsRequestedMemoryMB), knownvalue.Float64Exact(8*memRequest)),
			statecheck.ExpectKnownValue(addr, obs.AtMapKey(obsUsageSamples).AtSliceIndex(0).AtMapKey(sampleCPUMHz), knownvalue.Float64Exact(cpu)),
			statecheck.ExpectKnownValue(addr, obs.AtMapKey(obsUsageSamples).AtSliceIndex(0).AtMapKey(sampleMemoryMB), knownvalue.Float64Exact(mem)),
			// The premise: the read came while the new allocations were
			// still in the scenario's warm-up.
			statecheck.ExpectKnownValue(addr, tfjsonpath.New(huReadAt), knownvalue.StringFunc(func(v string) error {
				at, err := time.Parse(time.RFC3339, v)
				if err != nil {
					return err
				}
				if at.After(scaledAt.Add(warmupScenario)) {
					return fmt.Errorf("read at %s, after the new allocations' warm-up ended (%s): the test's premise does not hold, not the provider",
						at, scaledAt.Add(warmupScenario).Format(time.RFC3339))
				}
				return nil
			})),
		}
	}
	var checks []statecheck.StateCheck
	checks = append(checks, expect("scenario", 4, 4*cpuUse, 4*memUse)...)
	checks = append(checks, expect("default", 8, 4*cpuUse, 4*memUse)...)
	checks = append(checks, expect("off", 0, 4*cpuUse, 4*memUse)...)
	runAcc(t, resource.TestCase{Steps: []resource.TestStep{{
		PreConfig:         scaleUp,
		Config:            f.providerHCL("") + ds("scenario", warmupScenario.String()) + ds("default", "") + ds("off", "0s"),
		ConfigStateChecks: checks,
	}}})
}

func TestAccHostUsage_errors(t *testing.T) {
	testsupport.StandinOnly(t, "faults, tokens and idle jobs set on the stand-in")
	type fixtureCase struct {
		name  string
		setup func(t *testing.T, f *usageFixture) (token string)
		attrs func(f *usageFixture) map[string]string
		want  string
	}
	byName := func(name string) func(f *usageFixture) map[string]string {
		return func(*usageFixture) map[string]string {
			return map[string]string{huNodeName: hclString(name), huJob: `"web"`}
		}
	}
	cases := []fixtureCase{
		{"missing node by name", nil, byName("host-zz"), `Attribute node_name: host name="host-zz": no node matches`},
		{"missing node by id", nil, func(*usageFixture) map[string]string {
			return map[string]string{huNodeID: `"4f1c0000-0000-0000-0000-000000000000"`, huReplicaCPU: "100"}
		}, `Attribute node_id: .*no node matches`},
		{"a node ID that is a path", nil, func(*usageFixture) map[string]string {
			return map[string]string{huNodeID: `"../job/secret?namespace=other"`, huReplicaCPU: "100"}
		}, `Attribute node_id must be a Nomad node ID, a UUID`},
		{"several nodes match", nil, func(*usageFixture) map[string]string {
			return map[string]string{huNodePool: `"edge"`, huReplicaCPU: "100"}
		}, `Attribute node_pool: .*several nodes match: host-a .* host-b`},
		{"node not ready", func(t *testing.T, f *usageFixture) string {
			if err := f.s.SetNodeStatus(f.nodeA, api.NodeStatusDown); err != nil {
				t.Fatal(err)
			}
			return ""
		}, byName("host-a"), `The host is not ready.*Attribute node_name: .*not ready`},
		{"unknown job", nil, func(*usageFixture) map[string]string {
			return map[string]string{huNodeName: `"host-a"`, huJob: `"nope"`}
		}, `Attribute job: read job "nope" in namespace "default"`},
		{"unknown job in a namespace", nil, func(*usageFixture) map[string]string {
			return map[string]string{huNodeName: `"host-a"`, huJob: `"web"`, huNamespace: `"other"`}
		}, `Attribute job: read job "web" in namespace "other": job or task group not found`},
		{"unknown group", nil, func(*usageFixture) map[string]string {
			return map[string]string{huNodeName: `"host-a"`, huJob: `"web"`, huGroup: `"middle"`}
		}, `Attribute group: .*no task group "middle"`},
		{"job with several groups needs one", nil, byName("host-a"), `Attribute group: .*has 2 groups`},
		{"task group requests no CPU", func(t *testing.T, f *usageFixture) string {
			if err := f.s.AddJob(nomadstandin.JobSpec{ID: "idle", Groups: []nomadstandin.GroupSpec{
				{Name: "main", Count: 1, MemoryMB: 64, NodeID: f.nodeC},
			}}); err != nil {
				t.Fatal(err)
			}
			return ""
		}, func(*usageFixture) map[string]string {
			return map[string]string{huNodeName: `"host-c"`, huJob: `"idle"`}
		}, `Attribute replica_cpu_demand_mhz is unset, so the demand of one replica comes from the task group's CPU request`},
		{"forbidden token", func(_ *testing.T, f *usageFixture) string {
			f.s.RequireToken("the-right-token", nomadstandin.TokenPolicy{})
			return secretToken
		}, func(*usageFixture) map[string]string {
			return map[string]string{huNodeName: `"host-a"`, huJob: `"web"`, huGroup: `"front"`}
		}, `Nomad refused the request.*answered 403 \(permission denied\): the ACL token in the provider's nomad\.token is unknown`},
		{"missing token", func(_ *testing.T, f *usageFixture) string {
			f.s.RequireToken(secretToken, nomadstandin.TokenPolicy{})
			return ""
		}, func(*usageFixture) map[string]string {
			return map[string]string{huNodeName: `"host-a"`, huJob: `"web"`, huGroup: `"front"`}
		}, `answered 403`},
		{"server error", func(_ *testing.T, f *usageFixture) string {
			f.s.InjectFault(nomadstandin.Fault{Path: "/v1/client/allocation/*", Status: 500, Message: "stats backend down"})
			return ""
		}, func(*usageFixture) map[string]string {
			return map[string]string{huNodeName: `"host-a"`, huJob: `"web"`, huGroup: `"front"`}
		}, `answered HTTP 500 .*stats backend down`},
		{"server unreachable", func(_ *testing.T, f *usageFixture) string { f.s.Stop(); return "" },
			byName("host-a"), `Cannot read the host's usage from Nomad`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newUsageFixture(t)
			token := ""
			if c.setup != nil {
				token = c.setup(t, f)
			}
			accTest(t, resource.TestCase{Steps: []resource.TestStep{{
				Config:      f.providerHCL(token) + usageConfig("test", c.attrs(f)),
				ExpectError: errRegexp(c.want),
			}}})
		})
	}
}

// One failed read (a 500 on one allocation's stats, so too few answered,
// or a 500 on the job) is made once more before the plan fails; a fault
// that stays fails it (TestAccHostUsage_errors' server error).
func TestAccHostUsage_transientFailureReadAgain(t *testing.T) {
	testsupport.StandinOnly(t, "faults injected on the stand-in")
	for _, fault := range []nomadstandin.Fault{
		{Path: "/v1/client/allocation/*", Status: 500, Message: "stats backend hiccup", Times: 2},
		{Path: "/v1/job/web", Status: 503, Message: "leader election", Times: 1},
	} {
		t.Run(fault.Path, func(t *testing.T) {
			f := newUsageFixture(t)
			f.s.InjectFault(fault)
			addr := "data.activation_host_usage.test"
			accTest(t, resource.TestCase{Steps: []resource.TestStep{{
				Config: f.providerHCL("") + usageConfig("test", map[string]string{huNodeName: `"host-a"`, huJob: `"web"`, huGroup: `"front"`}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New(huObservation).AtMapKey(obsRunningReplicas), knownvalue.Int64Exact(3)),
				},
			}}})
		})
	}
}

// TestAccHostUsage_timeout: a read that outlives timeouts.read fails within
// it, saying which call to Nomad timed out.
func TestAccHostUsage_timeout(t *testing.T) {
	testsupport.StandinOnly(t, "a delay injected on one call")
	f := newUsageFixture(t)
	f.s.InjectFault(nomadstandin.Fault{Path: "/v1/job/web", Delay: 20 * time.Second})
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config:      f.providerHCL("") + usageWithTimeout(`node_name = "host-a"`+"\n  job = \"web\"\n  group = \"front\"\n  samples = 1", "2s"),
		ExpectError: errRegexp(`Reading the host's usage timed out.*timeouts\.read, 2s.*read job "web"`),
	}}})
}

// usageWithTimeout renders a data source "test" with raw body lines and a
// timeouts block.
func usageWithTimeout(body, read string) string {
	return fmt.Sprintf("\ndata \"activation_host_usage\" \"test\" {\n  %s\n  timeouts {\n    read = %q\n  }\n}\n", body, read)
}

func TestAccHostUsage_validationErrors(t *testing.T) {
	cfg := func(provider string, attrs map[string]string) func(t *testing.T) string {
		return func(*testing.T) string {
			if provider == "" {
				provider = "provider \"activation\" {\n  nomad {\n    address = \"http://127.0.0.1:1\"\n  }\n}\n"
			}
			return provider + usageConfig("test", attrs)
		}
	}
	ok := map[string]string{huNodeName: `"host-a"`, huJob: `"web"`}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range ok {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	nomad := func(body string) string { return "provider \"activation\" {\n  nomad {\n" + body + "\n  }\n}\n" }
	runErrorCases(t, []errorCase{
		{"no selector", cfg("", map[string]string{huJob: `"web"`}), `At least one of these attributes must be configured: \[node_id,node_name,node_pool,node_class\]`},
		{"group without job", cfg("", map[string]string{huNodeName: `"host-a"`, huGroup: `"front"`, huReplicaCPU: "10"}), `Attribute "job" must be specified when "group" is specified`},
		{"warmup without job", cfg("", map[string]string{huNodeName: `"host-a"`, huWarmup: `"30s"`, huReplicaCPU: "10"}), `Attribute "job" must be specified when "warmup" is specified`},
		{"no job and no demand", cfg("", with(huJob, "")), `Attribute replica_cpu_demand_mhz must be set when no job is named`},
		// The values passed to the observation follow the engine's rules,
		// checked before Nomad is asked.
		{"demand zero: the engine's rule", cfg("", with(huReplicaCPU, "0")), literal("Attribute replica_cpu_demand_mhz: is 0; it must be a finite number > 0")},
		{"two problems, both said", cfg("", map[string]string{huNodeName: `"host-a"`, huJob: `"web"`, huReplicaCPU: "0", huReplicaMemory: "-1"}),
			"(?s)" + literal("Attribute replica_cpu_demand_mhz: is 0; it must be a finite number > 0") + ".*" +
				literal("Attribute replica_memory_demand_mb: is -1; it must be a finite number >= 0")},
		{"demand 1e400", cfg("", with(huReplicaCPU, "1e400")), literal("Attribute replica_cpu_demand_mhz: is 1e+400, beyond a 64-bit floating point number")},
		{"memory demand negative: the engine's rule", cfg("", with(huReplicaMemory, "-1")), literal("Attribute replica_memory_demand_mb: is -1; it must be a finite number >= 0")},
		{"wanted replicas negative: the engine's rule", cfg("", with(huWantedReplicas, "-1")), literal("Attribute wanted_replicas: is -1; it must be a whole number from 0 to")},
		{"wanted replicas 1e30", cfg("", with(huWantedReplicas, "1e30")), literal("Attribute wanted_replicas: is 1e+30, beyond a 64-bit whole number")},
		{"label too long: the engine's rule", cfg("", with(huLabel, hclString(strings.Repeat("x", engine.MaxHostLabel+1)))), literal("Attribute label: is 257 bytes long")},
		{"samples zero", cfg("", with(huSamples, "0")), literal("Attribute samples: is 0; it must be a whole number from 1 to 60")},
		{"samples fractional", cfg("", with(huSamples, "2.5")), literal("Attribute samples: is 2.5; it must be a whole number from 1 to 60")},
		{"samples 1/0", cfg("", with(huSamples, "1/0")), literal("Attribute samples: is +Inf; it must be a whole number from 1 to 60")},
		{"interval too long", cfg("", with(huSampleInterval, "11")), literal("Attribute sample_interval_seconds: is 11; it must be a whole number from 1 to 10")},
		{"timeout not a duration", func(t *testing.T) string {
			return nomad(`    address = "http://127.0.0.1:1"`) + usageWithTimeout(`node_name = "host-a"`+"\n  job = \"web\"", "soon")
		}, `Invalid Attribute Value Time Duration.*"soon" must be a string containing a sequence of decimal numbers`},
		{"timeout shorter than the waits", func(t *testing.T) string {
			return nomad(`    address = "http://127.0.0.1:1"`) +
				usageWithTimeout(`node_name = "host-a"`+"\n  job = \"web\"\n  samples = 3\n  sample_interval_seconds = 5", "10s")
		}, literal("Attribute timeouts.read is 10s, no longer than the waits between samples (2 x 5s = 10s)")},
		{"negative timeout", func(t *testing.T) string {
			return nomad(`    address = "http://127.0.0.1:1"`) + usageWithTimeout(`node_name = "host-a"`+"\n  job = \"web\"\n  samples = 1", "-5s")
		}, literal(`Attribute timeouts.read is -5s: it must be a positive duration, such as "3m"`)},
		{"zero timeout", func(t *testing.T) string {
			return nomad(`    address = "http://127.0.0.1:1"`) + usageWithTimeout(`node_name = "host-a"`+"\n  job = \"web\"", "0s")
		}, literal(`Attribute timeouts.read is 0s: it must be a positive duration`)},
		{"empty node name", cfg("", with(huNodeName, `""`)), `Attribute node_name string length must be between 1 and`},
		{"empty namespace", cfg("", with(huNamespace, `""`)), `Attribute namespace string length must be between 1 and`},
		{"provider address not a URL", cfg(nomad(`    address = "ftp://nomad:4646"`), ok), `Attribute nomad\.address: "ftp://nomad:4646" has scheme "ftp"`},
		{"provider address without host", cfg(nomad(`    address = "http://"`), ok), `Attribute nomad\.address: "http://" has no host`},
		{"provider address without a scheme", cfg(nomad(`    address = "127.0.0.1:4646"`), ok), `Attribute nomad\.address: "127\.0\.0\.1:4646" has no scheme: write\s+http://127\.0\.0\.1:4646`},
		{"provider address shown without its password", cfg(nomad(`    address = "ftp://ops:hunter2@nomad:4646"`), ok), `Attribute nomad\.address: "ftp://nomad:4646" has scheme "ftp"`},
		{"provider address with a slash in its password", cfg(nomad(`    address = "https://ops:s3cr3t/pw@nomad:4646"`), ok), `Attribute nomad\.address: "https://<redacted>@nomad:4646" is not a URL`},
		{"provider address whose @ follows a path", cfg(nomad(`    address = "http://ops:1234/xy@nomad:4646"`), ok), `Attribute nomad\.address: "http://<redacted>@nomad:4646" has an "@" after its host`},
		{"provider empty token", cfg(nomad(`    token = ""`), ok), `Attribute nomad\.token is empty \(an unset variable\?\): leave it unset`},
		{"provider empty http_auth", cfg(nomad(`    http_auth = ""`), ok), `Attribute nomad\.http_auth string length must be at least 1`},
		{"provider unknown variable to ignore", cfg(nomad(`    ignore_env_vars = { NOMAD_NAMSPACE = true }`), ok), `nomad\.ignore_env_vars.*value must be one of`},
		{"provider bad header name", cfg(nomad(`    headers = { "X Bad" = "v" }`), ok), `Attribute nomad\.headers\["X Bad"\]: "X Bad" is not a valid header name`},
		// every bad header at validate, each on its key (three errors,
		// each met once, in the order OpenTofu prints them)
		{"provider bad headers", cfg(nomad(`    headers = { "" = "v", "X:Y" = "v", "X-Token" = "s3cr3t\n" }`), ok),
			`(?s)(?:.*?Attribute nomad\.headers\[(?:""\]: "" is not a valid header name|"X:Y"\]: "X:Y" is not a valid header name|"X-Token"\]: the value of header "X-Token" holds a\s+control character)){3}`},
		{"provider cert without key", cfg(nomad(`    cert_file = "/etc/nomad/cli.pem"`), ok), `Client certificate without a key`},
		{"provider key without cert", cfg(nomad(`    key_file = "/etc/nomad/cli-key.pem"`), ok), `Client key without a certificate`},
		{"provider ca file and pem", cfg(nomad("    ca_file = \"/etc/nomad/ca.pem\"\n    ca_pem = \"-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\""), ok),
			`Attribute "nomad\.ca_pem" cannot be specified when "nomad\.ca_file" is specified`},
		{"provider ca file and path", cfg(nomad("    ca_file = \"/etc/nomad/ca.pem\"\n    ca_path = \"/etc/nomad/cas\""), ok),
			`Attribute "nomad\.ca_path" cannot be specified when "nomad\.ca_file" is specified`},
		{"provider pem not pem", cfg(nomad(`    cert_pem = "not a certificate"`+"\n"+`    key_file = "/k.pem"`), ok), `Attribute nomad\.cert_pem does not hold PEM text`},
		{"provider token and secret_id", cfg(nomad("    token = \"a-token\"\n    secret_id = \"a-token\""), ok),
			`Attribute "nomad\.(token|secret_id)" cannot be specified when "nomad\.(token|secret_id)" is specified`},
		{"provider cert file with key PEM", cfg(nomad("    cert_file = \"/etc/nomad/cli.pem\"\n    key_pem = \"-----BEGIN PRIVATE KEY-----\\nMIIB\\n-----END PRIVATE KEY-----\""), ok),
			literal("Attribute nomad.key_pem: nomad.key_pem is PEM text, and nomad.cert_file is a file")},
		{"warmup not a duration", cfg("", with(huWarmup, `"two minutes"`)), literal(`Attribute warmup: is "two minutes"; it must be a Go duration >= 0`)},
		{"warmup negative", cfg("", with(huWarmup, `"-1s"`)), literal(`Attribute warmup: is "-1s"; it must be a Go duration >= 0`)},
		{"provider region empty", cfg(nomad(`    region = ""`), ok), `Attribute nomad\.region string length must be between 1 and`},
	})
}

// TestAddNomadError: the attribute a read error lands on follows from its
// nomadusage sentinel and the attributes the configuration sets, not from
// the error's wording.
func TestAddNomadError(t *testing.T) {
	testsupport.StandinOnly(t, "Nomad errors provoked on the stand-in: a refused token, an injected fault")
	conn, err := nomadconn.New(nomadconn.Settings{Address: "http://nomad.test:4646", Token: secretToken}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	model := func(set func(m *hostUsageModel)) *hostUsageModel {
		m := nullUsageModel()
		set(&m)
		return &m
	}
	byName := model(func(m *hostUsageModel) { m.NodeName = types.StringValue("h") })
	jobOnly := model(func(m *hostUsageModel) { m.NodeName = types.StringValue("h"); m.Job = types.StringValue("j") })
	jobGroup := model(func(m *hostUsageModel) {
		m.NodeName = types.StringValue("h")
		m.Job = types.StringValue("j")
		m.Group = types.StringValue("g")
	})
	noJob := model(func(m *hostUsageModel) {
		m.NodePool = types.StringValue("p")
		m.ReplicaCPUDemandMHz = numberValue(10)
	})
	jobDemand := model(func(m *hostUsageModel) {
		m.NodeName = types.StringValue("h")
		m.Job = types.StringValue("j")
		m.ReplicaCPUDemandMHz = numberValue(10)
	})
	notFound, forbidden, serverError := nomadErrors(t)
	notNomad := notNomadError(t)
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		m       *hostUsageModel
		err     error
		path    string // "" for a diagnostic on no attribute
		summary string
	}{
		{"node not found by name", nil, byName, fmt.Errorf("x: %w", nomadusage.ErrNodeNotFound), huNodeName, "Cannot find the host"},
		{"node not ready", nil, byName, fmt.Errorf("host x: %w: node h is \"down\"", nomadusage.ErrNodeNotReady), huNodeName, "The host is not ready"},
		{"ambiguous pool", nil, noJob, fmt.Errorf("x: %w", nomadusage.ErrAmbiguous), huNodePool, "Cannot find the host"},
		{"no selector", nil, byName, fmt.Errorf("%w: %w", nomadusage.ErrBadQuery, nomadusage.ErrNoSelector), huNodeName, "Cannot find the host"},
		{"job 404", nil, jobGroup, fmt.Errorf("%w: %w", nomadusage.ErrJobNotFound, notFound), huJob, "Cannot find the workload"},
		{"group missing", nil, jobGroup, fmt.Errorf("x: %w", nomadusage.ErrJobNotFound), huGroup, "Cannot find the workload"},
		{"several groups, any wording", nil, jobOnly, fmt.Errorf("%w: pick one", nomadusage.ErrBadQuery), huGroup, "Task group needed"},
		{"bad query naming groups without a job", nil, noJob, fmt.Errorf("%w: groups", nomadusage.ErrBadQuery), "", "Invalid usage query"},
		{"bad query with a group set", nil, jobGroup, fmt.Errorf("%w: groups", nomadusage.ErrBadQuery), "", "Invalid usage query"},
		{"no CPU request, demand from the group", nil, jobOnly, fmt.Errorf("job \"j\" group \"g\": %w", nomadusage.ErrNoCPURequest), huReplicaCPU, "Nomad did not report everything the read needs"},
		{"other missing data, demand from the group", nil, jobOnly, fmt.Errorf("%w: CpuStats", nomadusage.ErrMissingData), "", "Nomad did not report everything the read needs"},
		{"missing data naming the demand, demand given", nil, jobDemand, fmt.Errorf("%w: %s", nomadusage.ErrMissingData, huReplicaCPU), "", "Nomad did not report everything the read needs"},
		{"missing data without a job", nil, noJob, fmt.Errorf("%w: Memory", nomadusage.ErrMissingData), "", "Nomad did not report everything the read needs"},
		{"forbidden", nil, byName, forbidden, "", "Nomad refused the request"},
		{"server error", nil, byName, fmt.Errorf("list: %w", serverError), "", "Nomad answered with an error"},
		{"not Nomad's 404", nil, jobGroup, fmt.Errorf("read job: %w", notNomad), "", "The Nomad address may not be Nomad's API"},
		{"transport", nil, byName, errors.New("dial tcp: connection refused"), "", "Cannot read the host's usage from Nomad"},
		{"read timeout", expired, byName, fmt.Errorf("list nodes to find h: %w", context.DeadlineExceeded), "", "Reading the host's usage timed out"},
		{"request timeout", nil, byName, fmt.Errorf("read job: %w", &url.Error{Op: "Get", URL: "http://nomad.test:4646/v1/job/j", Err: timeoutError{}}), "", "A request to Nomad timed out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := c.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			var diags diag.Diagnostics
			addNomadError(ctx, &diags, c.m, conn, nomadSource{}, c.err, readProgress{1, 1, time.Minute})
			if len(diags) != 1 || diags.ErrorsCount() != 1 {
				t.Fatalf("want one error, got %v", diags)
			}
			d := diags[0]
			if d.Summary() != c.summary {
				t.Errorf("summary %q, want %q", d.Summary(), c.summary)
			}
			var got string
			if wp, ok := d.(diag.DiagnosticWithPath); ok {
				got = wp.Path().String()
			}
			if got != c.path {
				t.Errorf("path %q, want %q", got, c.path)
			}
			if strings.Contains(d.Detail(), secretToken) {
				t.Errorf("detail shows the token: %q", d.Detail())
			}
		})
	}
}

// timeoutError is a network error that timed out.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// nomadErrors returns the errors the Nomad API client gives for a 404, a
// 403 and a 500 (from the stand-in).
func nomadErrors(t *testing.T) (notFound, forbidden, serverError error) {
	t.Helper()
	f := newUsageFixture(t)
	_, _, notFound = f.client.Jobs().Info("nope", nil)
	f.s.RequireToken("the-right-token", nomadstandin.TokenPolicy{})
	wrong, err := f.s.Client(secretToken)
	if err != nil {
		t.Fatal(err)
	}
	_, _, forbidden = wrong.Nodes().List(nil)
	right, err := f.s.Client("the-right-token")
	if err != nil {
		t.Fatal(err)
	}
	f.s.InjectFault(nomadstandin.Fault{Path: "/v1/nodes", Status: 500, Message: "boom"})
	_, _, serverError = right.Nodes().List(nil)
	for _, c := range []struct {
		err    error
		status int
	}{{notFound, 404}, {forbidden, 403}, {serverError, 500}} {
		if statusOf(c.err) != c.status {
			t.Fatalf("want an HTTP %d error from the stand-in, got %v", c.status, c.err)
		}
	}
	return notFound, forbidden, serverError
}

// notNomadError is the error an answer without Nomad's index headers
// gives: an address that reaches another HTTP server.
func notNomadError(t *testing.T) error {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	c, err := nomadconn.New(nomadconn.Settings{Address: srv.URL}, nomadconn.MapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Client().Jobs().Info("web", nil)
	if !errors.Is(err, nomadconn.ErrNotNomad) {
		t.Fatalf("want ErrNotNomad for a 404 without Nomad's headers, got %v", err)
	}
	return err
}

// A job's namespace "*" (Nomad's wildcard for lists) is refused on the
// namespace attribute, whether set there or taken from the provider;
// without a job the namespace is not read, and "*" is no error.
func TestHostUsageWildcardNamespace(t *testing.T) {
	for _, tc := range []struct {
		name             string
		job, ns, fromEnv string
		want             string // "" for no error
	}{
		{"set on the data source", "web", "*", "default", `Attribute namespace: is "*"`},
		{"from the provider", "web", "", "*", `The provider's namespace`},
		{"the data source's overrides the provider's", "web", "apps", "*", ""},
		{"no job: the namespace is not read", "", "", "*", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := hostUsageModel{NodeName: types.StringValue("host-a"), Job: types.StringValue(tc.job), ReplicaCPUDemandMHz: types.NumberNull(),
				ReplicaMemoryDemandMB: types.NumberNull(), WantedReplicas: types.NumberNull()}
			if tc.job == "" {
				m.Job = types.StringNull()
			}
			m.Namespace = types.StringNull()
			if tc.ns != "" {
				m.Namespace = types.StringValue(tc.ns)
			}
			var diags diag.Diagnostics
			_, ok := m.query(tc.fromEnv, &diags)
			got := ""
			for _, d := range diags.Errors() {
				got += d.Detail()
			}
			if tc.want == "" {
				if !ok || diags.HasError() {
					t.Fatalf("refused: %s", got)
				}
				return
			}
			if ok || !strings.Contains(got, tc.want) {
				t.Fatalf("diagnostics %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// TestMissingDataBlamesTheDemandOnlyWhenItIsTheCause: with a job and no
// replica_cpu_demand_mhz, only "no task requests CPU" is put on that
// attribute; other data Nomad did not report (a core count, stats, the
// allocatable CPU) were blamed on it too, with advice that does not help.
func TestMissingDataBlamesTheDemandOnlyWhenItIsTheCause(t *testing.T) {
	conn, err := nomadconn.New(nomadconn.Settings{Address: "http://nomad.test:4646"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	m := nullUsageModel()
	m.NodeName = types.StringValue("h")
	m.Job = types.StringValue("j")
	for _, c := range []struct {
		err    error
		onAttr bool
	}{
		{fmt.Errorf("job \"j\" group \"g\": %w, so replica_cpu_demand_mhz must be given", nomadusage.ErrNoCPURequest), true},
		{fmt.Errorf("stats of allocation a1 on node h: %w: ResourceUsage.CpuStats", nomadusage.ErrMissingData), false},
		{fmt.Errorf("job \"j\" group \"g\": %w: task \"t\" reserves 2 cores, but the node reports no core count", nomadusage.ErrMissingData), false},
		{fmt.Errorf("node h: %w: allocatable CPU is 0 MHz after reservations", nomadusage.ErrMissingData), false},
	} {
		var diags diag.Diagnostics
		addNomadError(context.Background(), &diags, &m, conn, nomadSource{}, c.err, readProgress{1, 1, time.Minute})
		if len(diags) != 1 {
			t.Fatalf("%v: %d diagnostics", c.err, len(diags))
		}
		wp, on := diags[0].(diag.DiagnosticWithPath)
		on = on && wp.Path().Equal(path.Root(huReplicaCPU))
		if on != c.onAttr || !strings.Contains(diags[0].Detail(), c.err.Error()) {
			t.Errorf("%v: on replica_cpu_demand_mhz %v, want %v: %s", c.err, on, c.onAttr, diags[0].Detail())
		}
	}
}

// TestAddNomadErrorNamesTheDefaultAddress: with neither nomad.address nor
// NOMAD_ADDR set, an error says the address is Nomad's default (a
// "connection refused" at 127.0.0.1:4646 otherwise reads as Nomad down).
func TestAddNomadErrorNamesTheDefaultAddress(t *testing.T) {
	c := newNomadConnection(context.Background(), nil, noEnv)
	src := c.source()
	if !src.defaultAddress {
		t.Fatal("no address set: want the default's note")
	}
	conn, err := nomadconn.New(nomadconn.Settings{}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	m := nullUsageModel()
	m.NodeName = types.StringValue("h")
	var diags diag.Diagnostics
	addNomadError(context.Background(), &diags, &m, conn, src, errors.New("dial tcp 127.0.0.1:4646: connect: connection refused"), readProgress{1, 1, time.Minute})
	if len(diags) != 1 || !strings.Contains(diags[0].Detail(), "http://127.0.0.1:4646 (Nomad's default address: the provider's nomad.address is unset, and NOMAD_ADDR unset or ignored)") {
		t.Errorf("diagnostics %v; want the default address named as such", diags)
	}
	if set := newNomadConnection(context.Background(), nil, nomadconn.MapEnv(map[string]string{nomadconn.EnvAddress: "http://nomad:4646"})).source(); set.defaultAddress {
		t.Error("NOMAD_ADDR set: no default's note")
	}
}

// TestHostUsageValidateTimeout: validate refuses a read timeout that leaves
// the read no time as soon as the timeout and the sampling are known (so
// `tofu validate` says it, not only the plan's read), and says nothing
// while one of them is unknown or is a value its own validator refuses.
func TestHostUsageValidateTimeout(t *testing.T) {
	readType := map[string]attr.Type{"read": types.StringType}
	read := func(v types.String) timeouts.Value {
		return timeouts.Value{Object: types.ObjectValueMust(readType, map[string]attr.Value{"read": v})}
	}
	n := func(v int64) types.Number { return types.NumberValue(big.NewFloat(float64(v))) }
	cases := []validateCase{
		{"no timeouts block", func(*hostUsageModel) {}, "", ""},
		{"a timeout long enough", func(m *hostUsageModel) { m.Timeouts = read(types.StringValue("3m")) }, "", ""},
		{"zero", func(m *hostUsageModel) { m.Timeouts = read(types.StringValue("0s")) }, "timeouts.read", "Attribute timeouts.read is 0s: it must be a positive duration"},
		{"negative", func(m *hostUsageModel) { m.Timeouts = read(types.StringValue("-5s")) }, "timeouts.read", "Attribute timeouts.read is -5s: it must be a positive duration"},
		{"no longer than the waits", func(m *hostUsageModel) {
			m.Samples, m.SampleInterval, m.Timeouts = n(3), n(5), read(types.StringValue("10s"))
		}, "timeouts.read", "Attribute timeouts.read is 10s, no longer than the waits between samples (2 x 5s = 10s)"},
		{"the default samples' waits", func(m *hostUsageModel) { m.Timeouts = read(types.StringValue("1s")) }, "timeouts.read",
			fmt.Sprintf("no longer than the waits between samples (%d x 1s", engine.DefaultMinSamples-1)},
		{"timeout unknown", func(m *hostUsageModel) { m.Timeouts = read(types.StringUnknown()) }, "", ""},
		{"samples unknown", func(m *hostUsageModel) { m.Samples, m.Timeouts = types.NumberUnknown(), read(types.StringValue("1s")) }, "", ""},
		{"interval unknown", func(m *hostUsageModel) {
			m.SampleInterval, m.Timeouts = types.NumberUnknown(), read(types.StringValue("1s"))
		}, "", ""},
		{"samples out of range: its validator's", func(m *hostUsageModel) { m.Samples, m.Timeouts = n(0), read(types.StringValue("1s")) }, "", ""},
		{"interval out of range: its validator's", func(m *hostUsageModel) {
			m.SampleInterval, m.Timeouts = n(11), read(types.StringValue("1s"))
		}, "", ""},
		{"not a duration: the block's validator's", func(m *hostUsageModel) { m.Timeouts = read(types.StringValue("soon")) }, "", ""},
	}
	runValidateCases(t, func(m *hostUsageModel) {
		m.NodeName, m.Job = types.StringValue("host-a"), types.StringValue(usageJob)
	}, cases)
}

// validateCase is a configuration ValidateConfig judges: mutate edits a
// base model; wantPath is where the one diagnostic is ("" for none), want
// what its detail says.
type validateCase struct {
	name     string
	mutate   func(m *hostUsageModel)
	wantPath string
	want     string
}

// runValidateCases runs activation_host_usage's ValidateConfig on each
// case's model (a null model, base's edits, then the case's).
func runValidateCases(t *testing.T, base func(m *hostUsageModel), cases []validateCase) {
	t.Helper()
	ctx := context.Background()
	ds := &hostUsageDataSource{}
	var sresp datasource.SchemaResponse
	ds.Schema(ctx, datasource.SchemaRequest{}, &sresp)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := nullUsageModel()
			base(&m)
			c.mutate(&m)
			st := tfsdk.State{Schema: sresp.Schema}
			if diags := st.Set(ctx, &m); diags.HasError() {
				t.Fatal(diags)
			}
			var resp datasource.ValidateConfigResponse
			ds.ValidateConfig(ctx, datasource.ValidateConfigRequest{Config: tfsdk.Config{Schema: sresp.Schema, Raw: st.Raw}}, &resp)
			if c.wantPath == "" {
				if len(resp.Diagnostics) != 0 {
					t.Fatalf("diagnostics %v, want none", resp.Diagnostics)
				}
				return
			}
			if len(resp.Diagnostics) != 1 {
				t.Fatalf("diagnostics %v, want one", resp.Diagnostics)
			}
			d, ok := resp.Diagnostics[0].(diag.DiagnosticWithPath)
			if !ok || d.Path().String() != c.wantPath || !strings.Contains(d.Detail(), c.want) {
				t.Fatalf("diagnostic %v (%s), want at %s with %q", resp.Diagnostics[0], resp.Diagnostics[0].Detail(), c.wantPath, c.want)
			}
		})
	}
}

// TestHostUsageUnansweredNomad: once a request to Nomad's servers times
// out, the reads that start within unansweredFor fail at once, without a
// request, naming the earlier one (a trial: 48 nodes against an address
// that did not answer took 151 s, one request timeout per batch of
// -parallelism). A request passed on to a client node that times out (one
// node's stats) says nothing of the others and does not count, nor does a
// read's own deadline (timeouts.read) running out.
func TestHostUsageUnansweredNomad(t *testing.T) {
	testsupport.StandinOnly(t, "requests held unanswered by the stand-in, and a request timeout of 300ms")
	for _, tc := range []struct {
		name      string
		fault     string        // the path held unanswered
		deadline  time.Duration // the first read's own deadline, when > 0
		want      string        // the first read's error
		failsFast bool
	}{
		{"servers do not answer", "/v1/nodes", 0, "A request to Nomad timed out", true},
		{"one node's stats do not answer", "/v1/client/stats", 0, "A request to Nomad timed out", false},
		{"nodes' allocation lists do not answer", "/v1/node/*/allocations", 0, "A request to Nomad timed out", false},
		{"the read's own deadline", "/v1/nodes", 100 * time.Millisecond, "Reading the host's usage", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newUsageFixture(t)
			f.s.InjectFault(nomadstandin.Fault{Path: tc.fault, Hang: true})
			c := newNomadConnection(context.Background(), f.standInBlock(""), noEnv)
			c.settings.RequestTimeout = 300 * time.Millisecond
			read := func(ctx context.Context, node string) string {
				m := nullUsageModel()
				m.NodeName = types.StringValue(node)
				m.ReplicaCPUDemandMHz = numberValue(100)
				_, diags := readUsageWith(t, ctx, c, m)
				return diags
			}
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			if d := read(ctx, "host-a"); !strings.Contains(d, tc.want) {
				t.Fatalf("first read: %q, want %q", d, tc.want)
			}
			// The stand-in logs a held request once the client has hung
			// up: wait for it, so that it is not counted as the second
			// read's.
			logged := func() bool {
				for k := range f.s.RequestCounts().ByPath {
					if nomadstandin.PathMatches(tc.fault, strings.TrimPrefix(k, "GET ")) {
						return true
					}
				}
				return false
			}
			for deadline := time.Now().Add(5 * time.Second); !logged(); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the stand-in never logged the held request to %s", tc.fault)
				}
			}
			before := len(f.s.Requests())
			d := read(context.Background(), "host-b")
			after := len(f.s.Requests())
			if !tc.failsFast {
				// It tried: its own request was held and timed out.
				if !strings.Contains(d, "A request to Nomad timed out") {
					t.Fatalf("second read: %q: the first read's failure stopped the read of another node", d)
				}
				return
			}
			if !strings.Contains(d, "Nomad did not answer an earlier read") || !strings.Contains(d, f.s.URL()) ||
				!strings.Contains(d, "/v1/nodes") || !strings.Contains(d, "not one per batch of -parallelism") {
				t.Fatalf("second read: %q, want it refused at once, naming the address and the request that timed out", d)
			}
			if after != before {
				t.Fatalf("second read made %d requests, want none", after-before)
			}
		})
	}
}

// A request that started before a read succeeded and then timed out (one
// server or connection stuck while Nomad answers others) stops no read:
// Read records each success, and a timeout older than it is not recorded.
func TestHostUsageUnansweredBeforeAnAnswer(t *testing.T) {
	testsupport.StandinOnly(t, "one node's read held unanswered by the stand-in, and a request timeout of 1s")
	f := newUsageFixture(t)
	f.s.InjectFault(nomadstandin.Fault{Path: "/v1/node/" + f.nodeA, Hang: true})
	c := newNomadConnection(context.Background(), f.standInBlock(""), noEnv)
	c.settings.RequestTimeout = time.Second
	read := func(m hostUsageModel) string {
		m.ReplicaCPUDemandMHz = numberValue(100)
		m.Samples = numberValue(1)
		_, diags := readUsageWith(t, context.Background(), c, m)
		return diags
	}
	stuck := make(chan string)
	go func() {
		m := nullUsageModel()
		m.NodeID = types.StringValue(f.nodeA)
		stuck <- read(m)
	}()
	time.Sleep(200 * time.Millisecond) // the stuck read is under way
	b := nullUsageModel()
	b.NodeName = types.StringValue("host-b")
	if d := read(b); d != "" {
		t.Fatalf("read of host-b: %q", d)
	}
	if d := <-stuck; !strings.Contains(d, "A request to Nomad timed out") {
		t.Fatalf("read of host-a: %q, want its request timed out", d)
	}
	c3 := nullUsageModel()
	c3.NodeName = types.StringValue("host-c")
	if d := read(c3); strings.Contains(d, "did not answer an earlier read") {
		t.Fatalf("read of host-c after host-b's succeeded: %q", d)
	}
}

// TestHostUsageUnansweredJob: a job whose allocation listing Nomad does not
// answer (the servers answer everything else) fails its plan's reads in
// one request timeout, not one per batch, and does not stop reads of other
// jobs, which fail, if they do, with their own errors.
func TestHostUsageUnansweredJob(t *testing.T) {
	testsupport.StandinOnly(t, "one job's allocation listing held unanswered by the stand-in, and a request timeout of 300ms")
	f := newUsageFixture(t)
	if err := f.s.AddJob(nomadstandin.JobSpec{ID: "shop", Groups: []nomadstandin.GroupSpec{
		{Name: "cart", Count: 1, CPUMHz: 200, MemoryMB: 128, NodeID: f.nodeC},
	}}); err != nil {
		t.Fatal(err)
	}
	// It uses some memory, as any running task does (none at all reads as
	// unmeasured, and warns).
	if err := f.s.SetGroupUsage("", "shop", "cart", 50, 64); err != nil {
		t.Fatal(err)
	}
	hung := "/v1/job/" + usageJob + "/allocations"
	f.s.InjectFault(nomadstandin.Fault{Path: hung, Hang: true})
	c := newNomadConnection(context.Background(), f.standInBlock(""), noEnv)
	c.settings.RequestTimeout = 300 * time.Millisecond
	read := func(node, job, group string) string {
		m := nullUsageModel()
		m.NodeName = types.StringValue(node)
		m.Job = types.StringValue(job)
		m.Group = types.StringValue(group)
		m.Samples = numberValue(1)
		_, diags := readUsageWith(t, context.Background(), c, m)
		return diags
	}
	if d := read("host-a", usageJob, usageFront); !strings.Contains(d, "A request to Nomad timed out") || !strings.Contains(d, hung) {
		t.Fatalf("first read: %q, want the listing's request timed out", d)
	}
	for deadline := time.Now().Add(5 * time.Second); f.s.RequestCounts().ByPath["GET "+hung] == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in never logged the held request to %s", hung)
		}
	}
	if d := read("host-c", "shop", "cart"); d != "" {
		t.Fatalf("read of another job: %q, want it read", d)
	}
	before := len(f.s.Requests())
	d := read("host-b", usageJob, usageBack)
	if !strings.Contains(d, "Nomad did not answer an earlier read") || !strings.Contains(d, hung) ||
		!strings.Contains(d, `did not answer a request for job "web" in namespace "default"`) || !strings.Contains(d, "nor will other reads of that job be") ||
		!strings.Contains(d, "Reads of other jobs are still tried.") {
		t.Fatalf("second read of the job: %q, want it refused at once, naming the request and that only the job's reads are", d)
	}
	if n := len(f.s.Requests()) - before; n != 0 {
		t.Fatalf("the refused read made %d requests, want none", n)
	}
}

// The unanswered request is forgotten when a read in its scope succeeds,
// no longer stops reads unansweredFor after it, and is not recorded for a
// read that started before the last success in its scope. A job's stops
// only that job's reads; every read's ("") stops them all.
func TestNomadConnectionUnanswered(t *testing.T) {
	const web, shop = "default\x00web", "default\x00shop"
	c := newNomadConnection(context.Background(), nullNomadBlock(), noEnv)
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	stops := func(scope string, now time.Time) bool {
		_, ok := c.recentlyUnanswered(scope, now)
		return ok
	}
	if stops("", at) || stops(web, at) {
		t.Fatal("a new connection has an unanswered request")
	}
	c.noteUnanswered("", "Get /v1/nodes: i/o timeout", at.Add(-30*time.Second), at)
	for _, tc := range []struct {
		after time.Duration
		want  bool
	}{{0, true}, {unansweredFor, true}, {unansweredFor + time.Second, false}} {
		for _, scope := range []string{"", web} {
			if u, ok := c.recentlyUnanswered(scope, at.Add(tc.after)); ok != tc.want || (ok && (u.msg != "Get /v1/nodes: i/o timeout" || !u.at.Equal(at) || u.scope != "")) {
				t.Errorf("read in scope %q %s after: %+v, %v; want %v", scope, tc.after, u, ok, tc.want)
			}
		}
	}
	c.noteAnswered(web, at.Add(time.Second))
	if stops("", at.Add(time.Second)) || stops(web, at.Add(time.Second)) {
		t.Error("a read that succeeded left the unanswered request in force")
	}
	c.noteUnanswered("", "Get /v1/node/a: i/o timeout", at, at.Add(2*time.Second)) // started before the success
	if stops("", at.Add(2*time.Second)) {
		t.Error("a request sent before a read succeeded stops reads")
	}
	c.noteUnanswered("", "Get /v1/node/b: i/o timeout", at.Add(time.Second), at.Add(3*time.Second)) // started with it
	if !stops("", at.Add(3*time.Second)) || !stops(shop, at.Add(3*time.Second)) {
		t.Error("a request sent after the last success was not recorded for every read")
	}
	c.noteAnswered("", at.Add(4*time.Second)) // a whole node's read

	// A job's request: it started before another job's read succeeded
	// (that says nothing of this job's listing), and stops that job only.
	c.noteUnanswered(web, "Get /v1/job/web/allocations: i/o timeout", at.Add(3*time.Second), at.Add(5*time.Second))
	if u, ok := c.recentlyUnanswered(web, at.Add(5*time.Second)); !ok || u.scope != web {
		t.Errorf("a read of the job whose listing did not answer: %+v, %v; want it stopped by the job's request", u, ok)
	}
	if stops(shop, at.Add(5*time.Second)) || stops("", at.Add(5*time.Second)) {
		t.Error("one job's request stops reads of another job, or of a whole node")
	}
	c.noteAnswered(shop, at.Add(6*time.Second))
	if !stops(web, at.Add(6*time.Second)) {
		t.Error("another job's read that succeeded forgot the job's unanswered request")
	}
	c.noteAnswered(web, at.Add(7*time.Second))
	if stops(web, at.Add(7*time.Second)) {
		t.Error("a read of the job that succeeded left its unanswered request in force")
	}
}

// TestReadScope: a read's scope for requests Nomad did not answer is its
// job's, the same whether its namespace is named "default" or left to
// Nomad's default, and every read's without a job.
func TestReadScope(t *testing.T) {
	for _, tc := range []struct {
		q    nomadusage.Query
		want string
	}{
		{nomadusage.Query{}, ""},
		{nomadusage.Query{Job: "web"}, "default\x00web"},
		{nomadusage.Query{Namespace: "default", Job: "web"}, "default\x00web"},
		{nomadusage.Query{Namespace: "prod", Job: "web"}, "prod\x00web"},
	} {
		if got := readScope(tc.q); got != tc.want {
			t.Errorf("readScope(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

// TestTransientRead: a read that failed on a 5xx, or on too few stats
// answers, is made once more; not one whose stats did not answer in time.
func TestTransientRead(t *testing.T) {
	statsURL := "http://127.0.0.1:4646/v1/client/allocation/a/stats"
	timedOut := &url.Error{Op: "Get", URL: statsURL, Err: context.DeadlineExceeded}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"too few answered, first failure a 500", fmt.Errorf("host a: %w: 0 of 3 answered; first failure: %w", nomadusage.ErrTooFewAnswered, errors.New("Unexpected response code: 500")), true},
		{"too few answered, first failure a timeout", fmt.Errorf("host a: %w: 0 of 3 answered; first failure: %w", nomadusage.ErrTooFewAnswered, timedOut), false},
		{"a timeout", timedOut, false},
		{"a bad query", nomadusage.ErrBadQuery, false},
	} {
		if got := transientRead(tc.err); got != tc.want {
			t.Errorf("%s: transientRead = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHostUsageMemoryUnmeasured: a read whose allocations' stats carry no
// memory use (a driver that measures none) warns, naming how many and the
// node, and the observation counts their memory at the reservation; a read
// whose stats measure memory does not warn.
func TestHostUsageMemoryUnmeasured(t *testing.T) {
	testsupport.StandinOnly(t, "a group whose usage the stand-in reports with no memory")
	f := newUsageFixture(t)
	if err := f.s.AddJob(nomadstandin.JobSpec{ID: "shop", Groups: []nomadstandin.GroupSpec{
		{Name: "cart", Count: 2, CPUMHz: 200, MemoryMB: 128, NodeID: f.nodeC},
	}}); err != nil {
		t.Fatal(err)
	}
	c := newNomadConnection(context.Background(), f.standInBlock(""), noEnv)
	read := func() (string, float64) {
		m := nullUsageModel()
		m.NodeName = types.StringValue("host-c")
		m.Job = types.StringValue("shop")
		m.Group = types.StringValue("cart")
		m.Samples = numberValue(1)
		got, diags := readUsageWith(t, context.Background(), c, m)
		if strings.Contains(diags, "Error") || got.Observation.IsNull() {
			t.Fatalf("read: %s", diags)
		}
		return diags, engineObservation(t, got).Samples[0].MemoryMB
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.s.SetGroupUsage("", "shop", "cart", 50, 0))
	d, mem := read()
	if !strings.Contains(d, "Nomad measured no memory use of 2 allocation(s) on node host-c") || !strings.Contains(d, "counted at its memory reservation") {
		t.Errorf("unmeasured memory: diagnostics %q, want the warning naming 2 allocations and host-c", d)
	}
	if mem != 2*128 {
		t.Errorf("unmeasured memory: sample %v MB, want %v (two replicas at their 128 MB reservation)", mem, 2*128)
	}
	must(f.s.SetGroupUsage("", "shop", "cart", 50, 40))
	if d, mem := read(); d != "" || mem != 2*40 {
		t.Errorf("measured memory: diagnostics %q, sample %v MB; want none and %v", d, mem, 2*40)
	}
}

// TestHostUsageValidateValues: validate refuses the values the observation
// takes (the replica demands, wanted_replicas, the label) as soon as they
// are known, naming the attribute, even while the node is unknown: OpenTofu
// puts such a read off to apply, where the refusal came after other
// resources were created (found by a review). Unknown values are not
// judged.
func TestHostUsageValidateValues(t *testing.T) {
	num := func(f float64) types.Number { return types.NumberValue(big.NewFloat(f)) }
	cases := []validateCase{
		{"good values", func(m *hostUsageModel) {
			m.ReplicaCPUDemandMHz, m.ReplicaMemoryDemandMB, m.WantedReplicas = num(500), num(256), num(3)
		}, "", ""},
		{"a negative CPU demand", func(m *hostUsageModel) { m.ReplicaCPUDemandMHz = num(-5) }, huReplicaCPU, "replica_cpu_demand_mhz"},
		{"a zero CPU demand", func(m *hostUsageModel) { m.ReplicaCPUDemandMHz = num(0) }, huReplicaCPU, "replica_cpu_demand_mhz"},
		{"a negative memory demand", func(m *hostUsageModel) { m.ReplicaMemoryDemandMB = num(-1) }, huReplicaMemory, "replica_memory_demand_mb"},
		{"a fraction of a replica", func(m *hostUsageModel) { m.WantedReplicas = num(1.5) }, huWantedReplicas, "is 1.5; it must be a whole number"},
		{"negative wanted replicas", func(m *hostUsageModel) { m.WantedReplicas = num(-1) }, huWantedReplicas, "wanted_replicas"},
		{"a control character in the label", func(m *hostUsageModel) { m.Label = types.StringValue("a\nb") }, huLabel, "label"},
		{"demand unknown", func(m *hostUsageModel) { m.ReplicaCPUDemandMHz = types.NumberUnknown() }, "", ""},
		{"wanted unknown", func(m *hostUsageModel) { m.WantedReplicas = types.NumberUnknown() }, "", ""},
		{"label unknown", func(m *hostUsageModel) { m.Label = types.StringUnknown() }, "", ""},
	}
	// the node known only at apply: the read is put off
	runValidateCases(t, func(m *hostUsageModel) {
		m.NodeID, m.Job = types.StringUnknown(), types.StringValue(usageJob)
	}, cases)
}
