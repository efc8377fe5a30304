package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
)

// Environment variables of TestE2ECluster on a real cluster (NOMAD_ADDR
// set). Unset, it picks the first two ready nodes by name and runs its
// tasks with docker.
const (
	// envClusterNodes names the two nodes, "first,second" (one name: both
	// hosts on that node).
	envClusterNodes = "ACTIVATION_E2E_NODES"
	// envClusterDriver is the task driver: docker (busybox:1.36 sleeping),
	// exec or raw_exec (/bin/sleep).
	envClusterDriver = "ACTIVATION_E2E_DRIVER"
	// envClusterMax is each host's quota max (default 4).
	envClusterMax = "ACTIVATION_E2E_MAX"
)

// The test job's tasks: small, so that a real cluster can place them.
const (
	clusterTaskCPU = 100 // MHz
	clusterTaskMem = 64  // MB
)

// clusterGroups are the test job's two groups, one per host.
var clusterGroups = [2]string{"first", "second"}

// cluster is where TestE2ECluster runs: the real cluster at NOMAD_ADDR,
// or a stand-in behind an ACL token. Everything the test does after
// newE2ECluster goes through Nomad's HTTP API and the agent, the same in
// both modes; only the stand-in's usage is set from Go (a real cluster's
// usage is what its tasks use).
type cluster struct {
	real   bool
	client *api.Client
	// nomad is the agent's nomad block body (address, token, TLS...).
	nomad  string
	token  string // "" when none
	nodes  [2]*api.Node
	pool   string // the job's node pool
	driver string
	max    int // each host's quota max
	// registered is called once the job is registered (the stand-in sets
	// its groups' usage there); nil on a real cluster.
	registered func(t *testing.T, jobID string)
}

// clusterEnv holds the NOMAD_* variables the tests were started with
// (TestMain takes them out of the environment).
var clusterEnv map[string]string

// clusterOptions are what a real cluster's run may choose (see the
// ACTIVATION_E2E_* variables).
type clusterOptions struct {
	nodes, driver string
	max           int
}

// clusterOptionsFromEnv reads the ACTIVATION_E2E_* variables.
func clusterOptionsFromEnv(t *testing.T) clusterOptions {
	t.Helper()
	o := clusterOptions{nodes: os.Getenv(envClusterNodes), driver: "docker", max: 4}
	if d := os.Getenv(envClusterDriver); d != "" {
		o.driver = d
	}
	if m := os.Getenv(envClusterMax); m != "" {
		var err error
		if o.max, err = strconv.Atoi(m); err != nil || o.max < 2 || o.max > 50 {
			t.Fatalf("%s=%q: want a whole number from 2 to 50", envClusterMax, m)
		}
	}
	return o
}

func newE2ECluster(t *testing.T) *cluster {
	t.Helper()
	if clusterEnv[nomadconn.EnvAddress] != "" {
		return envCluster(t, clusterEnv, clusterOptionsFromEnv(t))
	}
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	const token = "e2e-cluster-secret-3f1c"
	s.RequireToken(token, nomadstandin.TokenPolicy{Write: true})
	for _, name := range []string{"e2e-a", "e2e-b"} {
		// 600 MHz allocatable: six replicas fit, so the placement cap
		// binds before the quota's max of 8.
		if _, err := s.AddNode(nomadstandin.NodeSpec{Name: name, CPUMHz: 700, ReservedCPUMHz: 100, MemoryMB: 4096}); err != nil {
			t.Fatal(err)
		}
	}
	client, err := api.NewClient(&api.Config{Address: s.URL(), SecretID: token})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{client: client, token: token, driver: "docker", max: 8, pool: "default",
		nomad: fmt.Sprintf("address = %q\ntoken = %q", s.URL(), token)}
	c.nodes = pickNodes(t, client, "e2e-a,e2e-b")
	c.registered = func(t *testing.T, jobID string) {
		for _, g := range clusterGroups {
			if err := s.SetGroupUsage("", jobID, g, 60, 32); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c
}

// envCluster is the cluster the NOMAD_* variables in env name, read as
// the Nomad CLI reads them, with the nodes and driver opt chooses.
func envCluster(t *testing.T, env map[string]string, opt clusterOptions) *cluster {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	client, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		t.Fatalf("client for NOMAD_ADDR: %v", err)
	}
	c := &cluster{real: true, client: client, token: env[nomadconn.EnvToken], driver: opt.driver, max: opt.max}
	c.nodes = pickNodes(t, client, opt.nodes)
	c.pool = c.nodes[0].NodePool
	if c.nodes[1].NodePool != c.pool {
		c.pool = "all"
	}
	// The agent's nomad block, from the same variables (the agent is
	// started without NOMAD_* in its environment).
	keys := map[string]string{
		nomadconn.EnvAddress: "address", nomadconn.EnvRegion: "region", nomadconn.EnvNamespace: "namespace",
		nomadconn.EnvToken: "token", nomadconn.EnvHTTPAuth: "http_auth", nomadconn.EnvCACert: "ca_cert",
		nomadconn.EnvCAPath: "ca_path", nomadconn.EnvClientCert: "client_cert", nomadconn.EnvClientKey: "client_key",
		nomadconn.EnvTLSServerName: "tls_server_name",
	}
	var lines []string
	for name, key := range keys {
		if v := env[name]; v != "" {
			lines = append(lines, fmt.Sprintf("%s = %q", key, v))
		}
	}
	if v := env[nomadconn.EnvSkipVerify]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", nomadconn.EnvSkipVerify, v, err)
		}
		lines = append(lines, fmt.Sprintf("skip_verify = %t", b))
	}
	slices.Sort(lines)
	c.nomad = strings.Join(lines, "\n")
	return c
}

// pickNodes returns the nodes named in names ("first,second", or one name
// for both hosts), or the first two ready, eligible nodes by name (one
// node serves both hosts when the cluster has only one).
func pickNodes(t *testing.T, client *api.Client, names string) [2]*api.Node {
	t.Helper()
	stubs, _, err := client.Nodes().List(nil)
	if err != nil {
		t.Fatalf("list the cluster's nodes: %v", err)
	}
	var ready []*api.NodeListStub
	for _, n := range stubs {
		if n.Status == api.NodeStatusReady && n.SchedulingEligibility == api.NodeSchedulingEligible { // a draining node is ineligible
			ready = append(ready, n)
		}
	}
	slices.SortFunc(ready, func(a, b *api.NodeListStub) int { return strings.Compare(a.Name, b.Name) })
	var picked []*api.NodeListStub
	if names != "" {
		for _, name := range strings.Split(names, ",") {
			i := slices.IndexFunc(ready, func(n *api.NodeListStub) bool { return n.Name == strings.TrimSpace(name) })
			if i < 0 {
				t.Fatalf("%s: no ready, eligible node is named %q", envClusterNodes, name)
			}
			picked = append(picked, ready[i])
		}
	} else {
		picked = ready[:min(2, len(ready))]
	}
	if len(picked) == 0 || len(picked) > 2 {
		t.Fatalf("the cluster has %d ready, eligible nodes (%d picked): the test needs one or two", len(ready), len(picked))
	}
	if len(picked) == 1 {
		picked = append(picked, picked[0])
	}
	var out [2]*api.Node
	for i, stub := range picked {
		if out[i], _, err = client.Nodes().Info(stub.ID, nil); err != nil {
			t.Fatalf("read node %s: %v", stub.Name, err)
		}
	}
	return out
}

// clusterJob is the test's service job: one group per host, pinned to its
// node, each task sleeping with small requests.
func (c *cluster) clusterJob(t *testing.T, id string) *api.Job {
	t.Helper()
	var config map[string]any
	switch c.driver {
	case "docker":
		config = map[string]any{"image": "busybox:1.36", "command": "sleep", "args": []string{"86400"}}
	case "exec", "raw_exec":
		config = map[string]any{"command": "/bin/sleep", "args": []string{"86400"}}
	default:
		t.Fatalf("%s=%q: want docker, exec or raw_exec", envClusterDriver, c.driver)
	}
	job := api.NewServiceJob(id, id, "", 50)
	job.Datacenters = []string{"*"}
	job.NodePool = &c.pool
	// Nomad's default update block waits 10 s for a new replica to be
	// healthy, and the target is not ready while a deployment runs.
	job.Update = &api.UpdateStrategy{MaxParallel: new(1), MinHealthyTime: new(time.Second),
		HealthyDeadline: new(time.Minute), ProgressDeadline: new(2 * time.Minute)}
	for h, g := range clusterGroups {
		tg := api.NewTaskGroup(g, 1)
		tg.Constrain(api.NewConstraint("${node.unique.id}", "=", c.nodes[h].ID))
		task := api.NewTask("app", c.driver)
		task.Config = config
		task.Require(&api.Resources{CPU: new(clusterTaskCPU), MemoryMB: new(clusterTaskMem)})
		tg.AddTask(task)
		job.AddTaskGroup(tg)
	}
	return job
}

// cappedAsk is what the strategy asks for on r with no steps, no hold and
// placement capped, on schedulable nodes: each host's engine count, at
// most what Nomad can place (running replicas aside), within the quota.
func cappedAsk(t testing.TB, r *engine.Request) [2]int {
	t.Helper()
	d, err := r.Decide()
	if err != nil {
		t.Fatalf("engine decision: %v", err)
	}
	var out [2]int
	for h, hd := range []engine.HostDecision{d.First, d.Second} {
		running := []engine.Observation{r.First, r.Second}[h].RunningReplicas
		out[h] = min(max(min(hd.Containers, max(hd.Placement.Placeable, running)), hd.Quota.Min), hd.Quota.Max)
	}
	return out
}

// TestE2ECluster: the real agent with both plugins scales a job it has
// never seen on a Nomad cluster, through nothing but Nomad's HTTP API: the
// real cluster at NOMAD_ADDR when the tests were started with it (with
// NOMAD_TOKEN, NOMAD_NAMESPACE, the TLS variables... as the Nomad CLI
// reads them), else the stand-in behind an ACL token. The test registers
// a job of two groups, one pinned to each host's node, starting at one
// replica each; one split policy (no steps, placement capped, quota 1 to
// max per host) scales it through the host-quota target. Every count set
// must be the engine's decision on the request the strategy logged, capped
// at what Nomad can place and within the quota; the observations must
// agree with the nodes and the job as the API shows them; the job must end
// at the last decision's counts; the token is never logged. The job is
// purged at the end.
func TestE2ECluster(t *testing.T) {
	autoscalerPath(t)
	runClusterCase(t, newE2ECluster(t))
}

// TestE2EClusterEnv runs TestE2ECluster's real-cluster path (the NOMAD_*
// variables read as the Nomad CLI reads them, the nodes picked from the
// cluster's list, the agent's nomad block built from the same variables)
// against a stand-in in its own process, so that it runs where no real
// cluster is: a node that is down and a third ready node are not picked.
func TestE2EClusterEnv(t *testing.T) {
	autoscalerPath(t)
	const token = "e2e-env-secret-8d2a"
	sc := nomadstandin.Scenario{Token: token, Nodes: []nomadstandin.NodeSpec{
		{Name: "n-c", CPUMHz: 1000, MemoryMB: 2048},
		{Name: "n-b", CPUMHz: 1000, MemoryMB: 2048, ReservedMemoryMB: 256},
		{Name: "n-0", CPUMHz: 1000, MemoryMB: 2048, Status: api.NodeStatusDown},
		{Name: "n-a", CPUMHz: 800, MemoryMB: 2048},
	}}
	// The process lives until the test's last cleanup (the job's purge
	// comes before it).
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	url, stop, err := nomadstandin.StartProcess(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	c := envCluster(t, map[string]string{nomadconn.EnvAddress: url, nomadconn.EnvToken: token}, clusterOptions{driver: "docker", max: 4})
	if got := [2]string{c.nodes[0].Name, c.nodes[1].Name}; got != [2]string{"n-a", "n-b"} {
		t.Fatalf("picked nodes %v, want the first two ready ones by name, n-a and n-b", got)
	}
	runClusterCase(t, c)
}

// runClusterCase is TestE2ECluster on c.
func runClusterCase(t *testing.T, c *cluster) {
	t.Helper()
	pdir := pluginDir(t)
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	jobID := "activation-e2e-" + hex.EncodeToString(suffix)
	if _, _, err := c.client.Jobs().Register(c.clusterJob(t, jobID), nil); err != nil {
		t.Fatalf("register %s: %v", jobID, err)
	}
	t.Cleanup(func() {
		if _, _, err := c.client.Jobs().Deregister(jobID, true, nil); err != nil {
			t.Errorf("purge %s (remove it by hand: nomad job stop -purge %s): %v", jobID, jobID, err)
		} else if _, _, err := c.client.Jobs().Info(jobID, nil); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("job %s after its purge: %v, want 404", jobID, err)
		}
	})
	if c.registered != nil {
		c.registered(t, jobID)
	}
	t.Logf("job %s on nodes %s and %s (through NOMAD_* variables: %t)", jobID, c.nodes[0].Name, c.nodes[1].Name, c.real)

	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pol, 0o700); err != nil {
		t.Fatal(err)
	}
	check := fmt.Sprintf(`        role           = "split"
        job            = %q
        first_node_id  = %q
        first_group    = %q
        second_node_id = %q
        second_group   = %q
        window         = "3"
        min_samples    = "1"
        first_min      = "1"
        first_max      = "%d"
        second_min     = "1"
        second_max     = "%d"
`, jobID, c.nodes[0].ID, clusterGroups[0], c.nodes[1].ID, clusterGroups[1], c.max, c.max) + noSteps
	target := fmt.Sprintf(`"host-quota" {
      job          = %q
      first_group  = %q
      second_group = %q
    }`, jobID, clusterGroups[0], clusterGroups[1])
	if err := os.WriteFile(filepath.Join(pol, "cluster.hcl"), []byte(policyFileWith("cluster", "cluster", check, target, "1s", "2s")), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, dir, agentConfigNomad("TRACE", pdir, c.nomad, pol))

	// decisions are the check's "decided" log lines; the job has settled
	// when both groups set a count and the job's counts are the newest
	// decision's (three decisions at least).
	decisions := func() []logEntry {
		var out []logEntry
		for _, e := range a.entries(t) {
			if e.str("@message") == "decided" && e.str("check") == "cluster" {
				out = append(out, e)
			}
		}
		return out
	}
	eventually(t, 3*time.Minute, "the agent scales the job and it settles", func() (bool, string) {
		ds := decisions()
		if len(ds) < 3 {
			return false, fmt.Sprintf("%d decisions so far (the nodes must place a few %d MHz / %d MB tasks)", len(ds), clusterTaskCPU, clusterTaskMem)
		}
		st, _, err := c.client.Jobs().ScaleStatus(jobID, nil)
		if err != nil {
			return false, err.Error()
		}
		last := ds[len(ds)-1]
		for h, g := range clusterGroups {
			tg := st.TaskGroups[g]
			want, _ := metaNum(last, []string{"first", "second"}[h])
			if !slices.ContainsFunc(tg.Events, func(ev api.ScalingEvent) bool { _, ok := eventCount(ev); return ok }) || tg.Desired != want {
				return false, fmt.Sprintf("group %s: desired %d, newest decision %d, %d events", g, tg.Desired, want, len(tg.Events))
			}
		}
		return true, ""
	})
	a.stop(t)

	reqs, byCheck := a.requests(t)
	if len(byCheck["cluster"]) == 0 {
		t.Fatal("the strategy logged no decision request")
	}
	st, _, err := c.client.Jobs().ScaleStatus(jobID, nil)
	if err != nil {
		t.Fatal(err)
	}
	for h, g := range clusterGroups {
		n := eventParity(t, st.TaskGroups[g].Events, reqs, jobID, g, h, nomadplugin.RoleSplit, cappedAsk)
		if n == 0 {
			t.Errorf("group %s: no scaling event could be checked against a logged request", g)
		}
		t.Logf("group %s: desired %d, %d scaling events checked against the engine", g, st.TaskGroups[g].Desired, n)
	}

	// The observations the strategy read agree with the API: each host's
	// capacity is its node's resources less its reservation, each
	// replica's demand the task's request, the running replicas at most
	// the group's count.
	job, _, err := c.client.Jobs().Info(jobID, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, dg := range byCheck["cluster"] {
		r := reqs[dg]
		for h, o := range []engine.Observation{r.First, r.Second} {
			n := c.nodes[h]
			capCPU, capMem := float64(n.NodeResources.Cpu.CpuShares), float64(n.NodeResources.Memory.MemoryMB)
			if rr := n.ReservedResources; rr != nil {
				capCPU -= float64(rr.Cpu.CpuShares)
				capMem -= float64(rr.Memory.MemoryMB)
			}
			if o.CPUCapacityMHz != capCPU || o.MemoryCapacityMB != capMem {
				t.Errorf("request %s, %s host: capacity %v MHz %v MB, node %s has %v and %v", dg, clusterGroups[h], o.CPUCapacityMHz, o.MemoryCapacityMB, n.Name, capCPU, capMem)
			}
			if o.ReplicaCPUDemandMHz != clusterTaskCPU || o.ReplicaMemoryDemandMB != clusterTaskMem {
				t.Errorf("request %s, %s host: replica demand %v MHz %v MB, the task requests %d and %d", dg, clusterGroups[h], o.ReplicaCPUDemandMHz, o.ReplicaMemoryDemandMB, clusterTaskCPU, clusterTaskMem)
			}
			if o.RunningReplicas < 0 || o.RunningReplicas > c.max {
				t.Errorf("request %s, %s host: %d running replicas, outside 0 to the quota's %d", dg, clusterGroups[h], o.RunningReplicas, c.max)
			}
		}
	}

	// Every decision within the quota; the job ends at the newest one.
	ds := decisions()
	for _, e := range ds {
		for _, k := range []string{"first", "second"} {
			if n, ok := metaNum(e, k); !ok || n < 1 || n > c.max {
				t.Errorf("decision %s count %v: outside the quota 1 to %d", k, e[k], c.max)
			}
		}
	}
	moved := false
	for h, tg := range job.TaskGroups {
		want, _ := metaNum(ds[len(ds)-1], []string{"first", "second"}[h])
		if *tg.Name != clusterGroups[h] || *tg.Count != want {
			t.Errorf("group %s ends at %d, the newest decision says %d", *tg.Name, *tg.Count, want)
		}
		moved = moved || *tg.Count != 1
	}
	if !moved {
		t.Errorf("the job never left one replica per group: nothing was scaled")
	}
	if c.token != "" && strings.Contains(string(a.log(t)), c.token) {
		t.Errorf("the agent's log holds the Nomad token")
	}
}
