package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
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
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
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
	nomad string
	token string // "" when none
	nodes [2]*api.Node
	pool  string // the job's node pool
	// the task driver and each host's quota max (nodes: as picked above)
	clusterOptions
	// plugin is the SetConfig map the agent would give a plugin of ours:
	// the stand-in's address and token; empty on a real cluster, whose
	// NOMAD_* variables (set for the test) the plugin falls back to.
	plugin map[string]string
	// registered is called once the job is registered (the stand-in sets
	// its groups' usage there); nil on a real cluster.
	registered func(t *testing.T, jobID string)
}

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
	if env := testsupport.ClusterEnv(); env.Real() {
		return envCluster(t, env, clusterOptionsFromEnv(t))
	}
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	const token = "e2e-cluster-secret-3f1c"
	s.RequireToken(token, nomadstandin.TokenPolicy{Write: true})
	for _, name := range []string{"e2e-a", "e2e-b"} {
		// 1100 MHz allocatable: room for both jobs at their quota max of
		// 5 on each node (two checks deciding at once cannot both take
		// the last slot and leave an allocation queued, which would hold
		// a deployment open). TestE2EPlacement covers the placement cap.
		if _, err := s.AddNode(nomadstandin.NodeSpec{Name: name, CPUMHz: 1200, ReservedCPUMHz: 100, MemoryMB: 4096}); err != nil {
			t.Fatal(err)
		}
	}
	client, err := api.NewClient(&api.Config{Address: s.URL(), SecretID: token})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{client: client, token: token, clusterOptions: clusterOptions{driver: "docker", max: 5}, pool: "default",
		nomad:  fmt.Sprintf("address = %q\ntoken = %q", s.URL(), token),
		plugin: map[string]string{nomadplugin.AgentKeyNomadAddress: s.URL(), nomadplugin.AgentKeyNomadToken: token}}
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
	c := &cluster{real: true, client: client, token: env[nomadconn.EnvToken], clusterOptions: opt, plugin: map[string]string{}}
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

// register registers job, and purges it when the test ends (a purged job
// answers 404).
func (c *cluster) register(t *testing.T, job *api.Job) {
	t.Helper()
	id := *job.ID
	if _, _, err := c.client.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register %s: %v", id, err)
	}
	t.Cleanup(func() {
		if _, _, err := c.client.Jobs().Deregister(id, true, nil); err != nil {
			t.Errorf("purge %s (remove it by hand: nomad job stop -purge %s): %v", id, id, err)
		} else if _, _, err := c.client.Jobs().Info(id, nil); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("job %s after its purge: %v, want 404", id, err)
		}
	})
}

// onlyOurPolicies fails the test when the client's namespace holds an
// enabled scaling policy of another job than jobs: an agent reading the
// Nomad policy source would evaluate it too, and scale that job.
func onlyOurPolicies(t *testing.T, client *api.Client, jobs ...string) {
	t.Helper()
	others, err := otherPolicies(client, jobs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(others) > 0 {
		t.Fatalf("the namespace (NOMAD_NAMESPACE, else default) holds enabled scaling policies of other jobs (%s): the agent this test starts with the Nomad policy source would evaluate them and scale those jobs; run it with NOMAD_NAMESPACE naming a namespace without any", strings.Join(others, ", "))
	}
}

// otherPolicies lists the enabled scaling policies of the client's
// namespace whose job is not one of jobs, as "job/group".
func otherPolicies(client *api.Client, jobs ...string) ([]string, error) {
	stubs, _, err := client.Scaling().ListPolicies(nil)
	if err != nil {
		return nil, fmt.Errorf("list the namespace's scaling policies: %w", err)
	}
	var others []string
	for _, p := range stubs {
		if p.Enabled && !slices.Contains(jobs, p.Target["Job"]) {
			others = append(others, p.Target["Job"]+"/"+p.Target["Group"])
		}
	}
	return others, nil
}

// cappedAsk is what the strategy asks for on r with no steps, no hold and
// placement capped, on schedulable nodes: each host's engine count, at
// most what Nomad can place (running replicas aside), within the quota.
func cappedAsk(t testing.TB, r *engine.Request) [2]int {
	t.Helper()
	d := decision(t, r)
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
	runClusterCase(t, newE2ECluster(t), policyFiles)
}

// TestE2EClusterJobPolicies is TestE2ECluster with the policies where a
// jobspec puts them: in the scaling block of the group each check scales
// (a split's first group), read by the agent's Nomad policy source, no
// policy files. The blocks are as Nomad's jobspec parser hands them to the
// API: numbers as numbers (which the agent passes to the plugins as
// text), each check with `source = "nomad-apm"` and no query (the source
// refuses a check with neither; a query would be run and its result
// ignored), the first-host check's target left to the agent's default
// (nomad-target), and the host-quota targets taking the job and their
// group from where the block sits (the agent's Job and Group keys): the
// split's names only its second group, the second host's nothing. On a
// real cluster the agent would evaluate every enabled policy of its
// namespace: the test refuses to start it beside another job's
// (TestOtherPolicies).
func TestE2EClusterJobPolicies(t *testing.T) {
	autoscalerPath(t)
	runClusterCase(t, newE2ECluster(t), jobScaling)
}

// TestE2EClusterEnv runs TestE2ECluster's real-cluster path (the NOMAD_*
// variables read as the Nomad CLI reads them, the nodes picked from the
// cluster's list, the agent's nomad block built from the same variables)
// against a stand-in in its own process, so that it runs where no real
// cluster is: a node that is down and a third ready node are not picked.
func TestE2EClusterEnv(t *testing.T) {
	testsupport.StandinOnly(t, "a stand-in process of its own reached through the NOMAD_* variables; TestE2ECluster runs the same path on the cluster at NOMAD_ADDR")
	autoscalerPath(t)
	const token = "e2e-env-secret-8d2a"
	sc := nomadstandin.Scenario{Token: token, Nodes: []nomadstandin.NodeSpec{
		{Name: "n-c", CPUMHz: 1000, MemoryMB: 2048},
		{Name: "n-b", CPUMHz: 1000, MemoryMB: 2048, ReservedMemoryMB: 256},
		{Name: "n-0", CPUMHz: 1000, MemoryMB: 2048, Status: api.NodeStatusDown},
		{Name: "n-a", CPUMHz: 800, MemoryMB: 2048},
	}}
	c := standInProcessCluster(t, sc)
	if got := [2]string{c.nodes[0].Name, c.nodes[1].Name}; got != [2]string{"n-a", "n-b"} {
		t.Fatalf("picked nodes %v, want the first two ready ones by name, n-a and n-b", got)
	}
	t.Run("policy files", func(t *testing.T) { runClusterCase(t, c, policyFiles) })
	t.Run("job policies", func(t *testing.T) { runClusterCase(t, c, jobScaling) })
}

// TestOtherPolicies: the check TestE2EClusterJobPolicies makes before it
// starts an agent on the Nomad policy source finds another job's enabled
// policy, and only that.
func TestOtherPolicies(t *testing.T) {
	testsupport.StandinOnly(t, "registers jobs with scaling policies of its own in a stand-in")
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	client, err := s.Client("")
	if err != nil {
		t.Fatal(err)
	}
	policy := map[string]any{"check": block("c", map[string]any{"source": "nomad-apm", "strategy": block("activation-quota", map[string]any{})})}
	one, ten := int64(1), int64(10)
	for _, j := range []nomadstandin.JobSpec{
		{ID: "ours", Groups: []nomadstandin.GroupSpec{{Name: "first", ScalingMax: &ten, ScalingPolicy: policy}}},
		{ID: "theirs", Groups: []nomadstandin.GroupSpec{{Name: "web", Count: 1, ScalingMin: &one, ScalingMax: &ten, ScalingPolicy: policy},
			{Name: "off", ScalingMax: &ten, ScalingPolicy: policy, ScalingDisabled: true}}},
		{ID: "bounded", Groups: []nomadstandin.GroupSpec{{Name: "g", ScalingMax: &ten, ScalingDisabled: true}}},
	} {
		if err := s.AddJob(j); err != nil {
			t.Fatal(err)
		}
	}
	got, err := otherPolicies(client, "ours")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"theirs/web"}) {
		t.Errorf("other enabled policies %v, want [theirs/web]", got)
	}
	if got, err := otherPolicies(client, "ours", "theirs"); err != nil || len(got) != 0 {
		t.Errorf("with theirs counted as ours: %v (%v), want none", got, err)
	}
}

// standInProcessCluster is the cluster the NOMAD_* variables name when
// they name a stand-in of scenario sc in its own process (behind
// sc.Token): the real-cluster path, where no real cluster is. The process
// lives until the test's last cleanup (the jobs' purges come before it).
func standInProcessCluster(t *testing.T, sc nomadstandin.Scenario) *cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	url, stop, err := nomadstandin.StartProcess(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return envCluster(t, map[string]string{nomadconn.EnvAddress: url, nomadconn.EnvToken: sc.Token}, clusterOptions{driver: "docker", max: 4})
}

// clusterCheck is one policy of TestE2ECluster: its check's name, the
// job it scales (its groups are clusterGroups, host by host), its role
// and the target block: as a policy file writes it, and as a job's scaling
// block carries it (nil: none, the agent's default nomad-target); host is
// the group whose scaling block carries it.
type clusterCheck struct {
	name, job, role, target string
	scalingTarget           []any
	host                    int
}

// policySource is where runClusterCase's agent reads its policies.
type policySource int

const (
	// policyFiles: a file per check in the agent's policy dir, the Nomad
	// policy source off.
	policyFiles policySource = iota
	// jobScaling: each check in its job's scaling block, read through the
	// agent's Nomad policy source.
	jobScaling
)

// setting is one key of a strategy block, its value as a jobspec writes
// it (a number or a string).
type setting struct {
	key string
	val any
}

// settingsOf reads a strategy block's lines (`key = "value"`, as the
// tests' policy files hold them) as settings.
func settingsOf(t *testing.T, lines string) []setting {
	t.Helper()
	var out []setting
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		k, v, ok := strings.Cut(line, "=")
		val, err := strconv.Unquote(strings.TrimSpace(v))
		if !ok || err != nil {
			t.Fatalf("strategy line %q: want key = \"value\"", line)
		}
		out = append(out, setting{strings.TrimSpace(k), val})
	}
	return out
}

// block is an HCL block as Nomad's jobspec parser decodes it into a
// scaling policy: a list of one map from the label to a list of one body.
func block(label string, body map[string]any) []any {
	return []any{map[string]any{label: []any{body}}}
}

// hostKeys are the decision log's and the meta's per-host count keys.
var hostKeys = [2]string{"first", "second"}

// runClusterCase is TestE2ECluster on c.
func runClusterCase(t *testing.T, c *cluster, src policySource) {
	t.Helper()
	pdir := pluginDir(t)
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	// Two jobs: one split across both hosts by one check through the
	// host-quota target's split mode; one whose groups two per-host checks
	// scale, the first host's through the agent's built-in nomad-target,
	// the second's through host-quota's single-group mode.
	split := "activation-e2e-" + hex.EncodeToString(suffix)
	perHost := split + "-hosts"
	checks := []clusterCheck{
		{"cluster-split", split, nomadplugin.RoleSplit, fmt.Sprintf(`"host-quota" {
      job          = %q
      first_group  = %q
      second_group = %q
    }`, split, clusterGroups[0], clusterGroups[1]),
			block("host-quota", map[string]any{"second_group": clusterGroups[1]}), 0},
		{"cluster-first", perHost, nomadplugin.RoleFirst, fmt.Sprintf(`"nomad-target" {
      Job   = %q
      Group = %q
    }`, perHost, clusterGroups[0]), nil, 0},
		{"cluster-second", perHost, nomadplugin.RoleSecond, fmt.Sprintf(`"host-quota" {
      job   = %q
      group = %q
    }`, perHost, clusterGroups[1]), block("host-quota", map[string]any{}), 1},
	}
	// Each check's strategy block.
	settings := func(ck clusterCheck) []setting {
		out := []setting{{"role", ck.role}, {"job", ck.job}, {"window", 3}, {"min_samples", 1}}
		for _, h := range decidedHosts(ck.role) {
			out = append(out, setting{hostKeys[h] + "_node_id", c.nodes[h].ID}, setting{hostKeys[h] + "_group", clusterGroups[h]},
				setting{hostKeys[h] + "_min", 1}, setting{hostKeys[h] + "_max", c.max})
		}
		return append(out, settingsOf(t, noSteps)...)
	}
	for _, jobID := range []string{split, perHost} {
		job := c.clusterJob(t, jobID)
		if src == jobScaling {
			for _, ck := range checks {
				if ck.job != jobID {
					continue
				}
				cfg := map[string]any{}
				for _, kv := range settings(ck) {
					cfg[kv.key] = kv.val
				}
				body := map[string]any{
					"cooldown": "1s", "evaluation_interval": "2s",
					"check": block(ck.name, map[string]any{"source": "nomad-apm", "strategy": block("activation-quota", cfg)}),
				}
				if ck.scalingTarget != nil {
					body["target"] = ck.scalingTarget
				}
				job.TaskGroups[ck.host].Scaling = &api.ScalingPolicy{Min: new(int64(0)), Max: new(int64(100)), Policy: body}
			}
		}
		c.register(t, job)
		if c.registered != nil {
			c.registered(t, jobID)
		}
	}
	t.Logf("jobs %s and %s on nodes %s and %s (through NOMAD_* variables: %t)", split, perHost, c.nodes[0].Name, c.nodes[1].Name, c.real)

	dir := t.TempDir()
	var a *agent
	switch src {
	case policyFiles:
		pol := filepath.Join(dir, "policies")
		if err := os.MkdirAll(pol, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, ck := range checks {
			var keys string
			for _, kv := range settings(ck) {
				keys += fmt.Sprintf("        %s = \"%v\"\n", kv.key, kv.val)
			}
			body := policyFileWith(ck.name, ck.name, keys, ck.target, "1s", "2s")
			if err := os.WriteFile(filepath.Join(pol, ck.name+".hcl"), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		a = startAgent(t, dir, agentConfigNomad("TRACE", pdir, c.nomad, pol))
	case jobScaling:
		onlyOurPolicies(t, c.client, split, perHost)
		a = startAgent(t, dir, agentConfigJobPolicies("TRACE", pdir, c.nomad))
	}

	// decisions are a check's "decided" log lines. The jobs have settled
	// when every check decided three times at least and each group it
	// scales set a count, is at the check's newest decision and has nothing
	// queued.
	decisions := func(check string) []logEntry {
		var out []logEntry
		for _, e := range a.entries(t) {
			if e.str("@message") == "decided" && e.str("check") == check {
				out = append(out, e)
			}
		}
		return out
	}
	eventually(t, 3*time.Minute, "the agent scales the jobs and they settle", func() (bool, string) {
		for _, ck := range checks {
			ds := decisions(ck.name)
			if len(ds) < 3 {
				return false, fmt.Sprintf("check %s: %d decisions so far (the nodes must place a few %d MHz / %d MB tasks)", ck.name, len(ds), clusterTaskCPU, clusterTaskMem)
			}
			st, _, err := c.client.Jobs().ScaleStatus(ck.job, nil)
			if err != nil {
				return false, err.Error()
			}
			sum, _, err := c.client.Jobs().Summary(ck.job, nil)
			if err != nil {
				return false, err.Error()
			}
			for _, h := range decidedHosts(ck.role) {
				g := clusterGroups[h]
				tg := st.TaskGroups[g]
				want, _ := metaNum(ds[len(ds)-1], hostKeys[h])
				if !slices.ContainsFunc(tg.Events, func(ev api.ScalingEvent) bool { _, ok := eventCount(ev); return ok }) || tg.Desired != want {
					return false, fmt.Sprintf("check %s, group %s/%s: desired %d, newest decision %d, %d events", ck.name, ck.job, g, tg.Desired, want, len(tg.Events))
				}
				// The placement cap asks for no more than Nomad places:
				// nothing stays queued.
				if q := sum.Summary[g].Queued; q != 0 {
					return false, fmt.Sprintf("check %s, group %s/%s: %d allocations queued at count %d", ck.name, ck.job, g, q, tg.Desired)
				}
			}
		}
		return true, ""
	})
	// On steady usage the counts stay put: three more evaluations of
	// every check set nothing (a first host that admitted replicas at
	// their request and refused them once running would flap here).
	events := func() map[string]int {
		out := map[string]int{}
		for _, ck := range checks {
			st, _, err := c.client.Jobs().ScaleStatus(ck.job, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range decidedHosts(ck.role) {
				g := clusterGroups[h]
				out[ck.job+"/"+g] = len(st.TaskGroups[g].Events)
				out[ck.job+"/"+g+" count"] = st.TaskGroups[g].Desired
			}
		}
		return out
	}
	settled := events()
	time.Sleep(7 * time.Second)
	if now := events(); !maps.Equal(now, settled) {
		t.Errorf("on steady usage the counts moved after settling: events and counts %v, then %v", settled, now)
	}
	a.stop(t)

	reqs, byCheck := a.requests(t)
	for _, ck := range checks {
		if len(byCheck[ck.name]) == 0 {
			t.Fatalf("check %s: the strategy logged no decision request", ck.name)
		}
		st, _, err := c.client.Jobs().ScaleStatus(ck.job, nil)
		if err != nil {
			t.Fatal(err)
		}
		job, _, err := c.client.Jobs().Info(ck.job, nil)
		if err != nil {
			t.Fatal(err)
		}
		ds := decisions(ck.name)
		for _, h := range decidedHosts(ck.role) {
			g := clusterGroups[h]
			n := eventParity(t, st.TaskGroups[g].Events, reqs, ck.job, g, h, ck.role, cappedAsk)
			if n == 0 {
				t.Errorf("check %s, group %s: no scaling event could be checked against a logged request", ck.name, g)
			}
			// Every decision within the quota; the group ends at the
			// newest one, away from its one replica.
			for _, e := range ds {
				if v, ok := metaNum(e, hostKeys[h]); !ok || v < 1 || v > c.max {
					t.Errorf("check %s decision %s count %v: outside the quota 1 to %d", ck.name, hostKeys[h], e[hostKeys[h]], c.max)
				}
			}
			want, _ := metaNum(ds[len(ds)-1], hostKeys[h])
			tg := job.TaskGroups[h]
			if *tg.Name != g || *tg.Count != want || want == 1 {
				t.Errorf("check %s: group %s ends at %d, the newest decision says %d (and the group must have left one replica)", ck.name, *tg.Name, *tg.Count, want)
			}
			t.Logf("check %s: group %s/%s at %d, %d scaling events checked against the engine", ck.name, ck.job, g, *tg.Count, n)
			// The observations the strategy read agree with the API:
			// the host's capacity is its node's resources less its
			// reservation, a replica's demand the task's request, the
			// running replicas within the quota.
			nd := c.nodes[h]
			capCPU, capMem := float64(nd.NodeResources.Cpu.CpuShares), float64(nd.NodeResources.Memory.MemoryMB)
			if rr := nd.ReservedResources; rr != nil {
				capCPU -= float64(rr.Cpu.CpuShares)
				capMem -= float64(rr.Memory.MemoryMB)
			}
			for _, dg := range byCheck[ck.name] {
				o := []engine.Observation{reqs[dg].First, reqs[dg].Second}[h]
				if o.CPUCapacityMHz != capCPU || o.MemoryCapacityMB != capMem {
					t.Errorf("check %s request %s, %s host: capacity %v MHz %v MB, node %s has %v and %v", ck.name, dg, g, o.CPUCapacityMHz, o.MemoryCapacityMB, nd.Name, capCPU, capMem)
				}
				if o.ReplicaCPUDemandMHz != clusterTaskCPU || o.ReplicaMemoryDemandMB != clusterTaskMem {
					t.Errorf("check %s request %s, %s host: replica demand %v MHz %v MB, the task requests %d and %d", ck.name, dg, g, o.ReplicaCPUDemandMHz, o.ReplicaMemoryDemandMB, clusterTaskCPU, clusterTaskMem)
				}
				if o.RunningReplicas < 0 || o.RunningReplicas > c.max {
					t.Errorf("check %s request %s, %s host: %d running replicas, outside 0 to the quota's %d", ck.name, dg, g, o.RunningReplicas, c.max)
				}
			}
		}
	}
	if c.token != "" && strings.Contains(string(a.log(t)), c.token) {
		t.Errorf("the agent's log holds the Nomad token")
	}
}
