package nomadusage

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// cluster is what a test reads: the stand-in, or the real cluster named by
// NOMAD_ADDR (with NOMAD_TOKEN, NOMAD_NAMESPACE... as the Nomad CLI reads
// them). On a real cluster the tests assert what can be asserted there.
type cluster struct {
	real   bool
	s      *nomadstandin.Server // nil on a real cluster
	client *api.Client
	// stand-in fixture
	nodeA, nodeB string
	// real cluster: one ready node to read, a pool shared by several nodes
	// (if any) and a running allocation on the node (if any)
	node       *api.NodeListStub
	sharedPool string
	alloc      *api.Allocation
}

const (
	jobID     = "web"
	groupA    = "front"
	groupB    = "back"
	taskToken = "s3cr3t-token-value"
)

// TestMain removes the NOMAD_* variables from the environment, so that no
// stand-in run can pick up a developer's token, namespace or address, and
// keeps them (testsupport.ClusterEnv) when NOMAD_ADDR is among them: only
// the real-cluster path puts them back, for its own test, and the tests
// that program the stand-in then skip (testsupport.StandinOnly).
func TestMain(m *testing.M) {
	testsupport.TakeNomadEnv()
	os.Exit(m.Run())
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	if testsupport.ClusterEnv().Real() {
		return realCluster(t)
	}
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	cl := &cluster{s: s}
	if cl.nodeA, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 8000, MemoryMB: 16384, ReservedCPUMHz: 1000, ReservedMemoryMB: 2048, NodePool: "edge", NodeClass: "big"}); err != nil {
		t.Fatal(err)
	}
	if cl.nodeB, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-b", CPUMHz: 4000, MemoryMB: 8192, NodePool: "edge", NodeClass: "small"}); err != nil {
		t.Fatal(err)
	}
	if _, err = s.AddNode(nomadstandin.NodeSpec{Name: "host-down", CPUMHz: 4000, MemoryMB: 8192, Status: "down"}); err != nil {
		t.Fatal(err)
	}
	err = s.AddJob(nomadstandin.JobSpec{ID: jobID, Groups: []nomadstandin.GroupSpec{
		{Name: groupA, Count: 3, CPUMHz: 500, MemoryMB: 256, NodeID: cl.nodeA},
		{Name: groupB, Count: 2, CPUMHz: 250, MemoryMB: 128, NodeID: cl.nodeB},
	}})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.SetGroupUsage("", jobID, groupA, 120, 100))
	must(t, s.SetGroupUsage("", jobID, groupB, 60, 50))
	must(t, s.SetNodeUsage(cl.nodeA, 400, 1000))
	if cl.client, err = s.Client(""); err != nil {
		t.Fatal(err)
	}
	return cl
}

func realCluster(t *testing.T) *cluster {
	for k, v := range testsupport.ClusterEnv() {
		t.Setenv(k, v)
	}
	c, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		t.Fatalf("client for NOMAD_ADDR: %v", err)
	}
	stubs, _, err := c.Nodes().List(nil)
	if err != nil {
		t.Fatalf("list nodes of the real cluster at NOMAD_ADDR: %v", err)
	}
	cl := &cluster{real: true, client: c}
	for _, n := range stubs {
		if n.Status == api.NodeStatusReady {
			cl.node = n
			break
		}
	}
	if cl.node == nil {
		t.Fatalf("the real cluster at NOMAD_ADDR has no ready node")
	}
	pools := map[string]int{}
	for _, n := range stubs {
		if pools[n.NodePool]++; pools[n.NodePool] == 2 {
			cl.sharedPool = n.NodePool
		}
	}
	allocs, _, err := c.Nodes().Allocations(cl.node.ID, nil)
	if err != nil {
		t.Fatalf("list allocations of node %s: %v", cl.node.Name, err)
	}
	for _, a := range allocs {
		if a.ClientStatus == api.AllocClientStatusRunning {
			cl.alloc = a
			break
		}
	}
	return cl
}

// realClient is a client for the real cluster as realCluster reads it
// (NOMAD_ADDR, NOMAD_TOKEN, the TLS variables... as the Nomad CLI reads
// them) whose transport is wrap's: a test counts or edits the requests and
// answers there, where a proxy in front of a cluster with TLS could not.
func (c *cluster) realClient(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper) *api.Client {
	t.Helper()
	if !c.real {
		t.Fatal("realClient: not a real cluster")
	}
	cfg := api.DefaultConfig()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	hc := &http.Client{Transport: tr}
	if err := api.ConfigureTLS(hc, cfg.TLSConfig); err != nil {
		t.Fatalf("TLS for NOMAD_ADDR: %v", err)
	}
	if u, err := url.Parse(cfg.Address); err == nil && u.Scheme == "unix" {
		socket := u.EscapedPath()
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}
		cfg.Address = "http://127.0.0.1"
	}
	hc.Transport = wrap(tr)
	cfg.HttpClient = hc
	cl, err := api.NewClient(cfg)
	if err != nil {
		t.Fatalf("client for NOMAD_ADDR: %v", err)
	}
	return cl
}

// requestCounter counts the requests it sends on.
type requestCounter struct {
	n    *atomic.Int64
	next http.RoundTripper
}

func (c requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// answerEditor passes the 200 answers to the paths match picks through
// edit, unzipped (the API client asks for gzip, and Nomad zips).
type answerEditor struct {
	next  http.RoundTripper
	match func(path string) bool
	edit  func(path string, body []byte) ([]byte, error)
}

func (e answerEditor) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := e.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK || !e.match(r.URL.Path) {
		return resp, err
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, err
		}
		body = zr
		resp.Header.Del("Content-Encoding")
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	if b, err = e.edit(r.URL.Path, b); err != nil {
		return nil, err
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// anyNode is a query any cluster can answer: the whole node, with a given
// replica demand.
func (c *cluster) anyNode() Query {
	if c.real {
		return Query{Host: HostSelector{NodeID: c.node.ID}, ReplicaCPUDemandMHz: 100}
	}
	return Query{Host: HostSelector{NodeID: c.nodeA}, ReplicaCPUDemandMHz: 100}
}

// readCase is one Read: a query, an optional preparation (which may return
// another client), and either the error wanted or a check of the reading.
type readCase struct {
	name string
	// standinOnly cases need the stand-in's programming or faults.
	standinOnly string
	query       func(c *cluster) Query
	prepare     func(t *testing.T, c *cluster) *api.Client
	wantErr     error
	wantText    string // with wantErr: a part of the error's text
	check       func(t *testing.T, c *cluster, r *Reading)
}

// idForm is a read of a node by its ID put in another form by edit, which
// Nomad does not find; want is what the error says of the form.
func idForm(name string, edit func(id string) string, want string) readCase {
	return readCase{
		name: name,
		query: func(c *cluster) Query {
			q := c.anyNode()
			q.Host.NodeID = edit(q.Host.NodeID)
			return q
		},
		wantErr:  ErrNodeNotFound,
		wantText: want,
	}
}

func runReadCases(t *testing.T, cases []readCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.standinOnly != "" {
				testsupport.StandinOnly(t, tc.standinOnly)
			}
			c := newCluster(t)
			client := c.client
			if tc.prepare != nil {
				if cl := tc.prepare(t, c); cl != nil {
					client = cl
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r, err := Read(ctx, client, tc.query(c))
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error, want %v; got %+v", tc.wantErr, r)
				}
				if !matchErr(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantText) {
					t.Fatalf("error %q, want %v (%q)", err, tc.wantErr, tc.wantText)
				}
				if strings.Contains(err.Error(), taskToken) {
					t.Fatalf("the error shows the token: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Observation.Validate("test"); err != nil {
				t.Fatalf("reading is not a valid observation: %v", err)
			}
			if len(r.Observation.Samples) != 1 {
				t.Fatalf("a one-shot read gave %d samples", len(r.Observation.Samples))
			}
			tc.check(t, c, r)
		})
	}
}

// TestReadWholeNode: without a job, a host's usage is its node's client
// stats and its replicas every running allocation there.
func TestReadWholeNode(t *testing.T) {
	runReadCases(t, []readCase{{
		name:  "by node ID",
		query: func(c *cluster) Query { return c.anyNode() },
		check: func(t *testing.T, c *cluster, r *Reading) {
			o := r.Observation
			if c.real {
				if r.NodeID != c.node.ID || o.Host != c.node.Name {
					t.Errorf("read node %s (%s), want %s", r.NodeID, o.Host, c.node.ID)
				}
				return
			}
			want := engine.Observation{Host: "host-a", CPUCapacityMHz: 7000, MemoryCapacityMB: 14336,
				Samples:         []engine.Sample{{Time: r.Time.Unix(), CPUMHz: 400 + 3*120, MemoryMB: 1000 + 3*100}},
				RequestedCPUMHz: 1500, RequestedMemoryMB: 768, RunningReplicas: 3, ReplicaCPUDemandMHz: 100}
			equalObs(t, o, want)
			if r.Node.Status != "ready" || !r.Node.Schedulable() {
				t.Errorf("node state %+v", r.Node)
			}
		},
	}})
}

// TestReadJobGroup: with a job, a host's usage is its group's allocation
// stats on the node.
func TestReadJobGroup(t *testing.T) {
	runReadCases(t, []readCase{
		{
			name:        "by name, the group's request as demand",
			standinOnly: "a known job with fixed usage",
			query: func(c *cluster) Query {
				return Query{Host: HostSelector{Name: "host-a"}, Job: jobID, Group: groupA, WantedReplicas: 5}
			},
			check: func(t *testing.T, c *cluster, r *Reading) {
				want := engine.Observation{Host: "host-a", CPUCapacityMHz: 7000, MemoryCapacityMB: 14336,
					Samples:         []engine.Sample{{Time: r.Time.Unix(), CPUMHz: 360, MemoryMB: 300}},
					RequestedCPUMHz: 1500, RequestedMemoryMB: 768, RunningReplicas: 3,
					ReplicaCPUDemandMHz: 500, ReplicaMemoryDemandMB: 256, WantedReplicas: 5}
				equalObs(t, r.Observation, want)
				if r.Group != groupA || r.Namespace != "default" || r.DesiredCount != 3 || r.ReplicaCPUMHz != 500 || r.ReplicaMemoryMB != 256 || r.JobModifyIndex == 0 || r.Region != "global" {
					t.Errorf("reading covers %s/%s, desired %d, replica %v MHz %v MB, job index %d, region %q", r.Namespace, r.Group, r.DesiredCount, r.ReplicaCPUMHz, r.ReplicaMemoryMB, r.JobModifyIndex, r.Region)
				}
				if r.StatsAsked != 3 || r.StatsAnswered != 3 {
					t.Errorf("stats %d of %d answered, want 3 of 3", r.StatsAnswered, r.StatsAsked)
				}
			},
		},
		{
			name: "a running allocation's job and group",
			query: func(c *cluster) Query {
				if c.real {
					return Query{Host: HostSelector{NodeID: c.node.ID}, Namespace: c.alloc.Namespace, Job: c.alloc.JobID, Group: c.alloc.TaskGroup, ReplicaCPUDemandMHz: 1}
				}
				return Query{Host: HostSelector{NodeID: c.nodeB}, Job: jobID, Group: groupB, ReplicaCPUDemandMHz: 1}
			},
			prepare: func(t *testing.T, c *cluster) *api.Client {
				if c.real && c.alloc == nil {
					t.Skipf("no running allocation on node %s of the real cluster", c.node.Name)
				}
				return nil
			},
			check: func(t *testing.T, c *cluster, r *Reading) {
				if r.Observation.RunningReplicas < 1 || r.StatsAnswered != r.StatsAsked {
					t.Errorf("a running allocation's group shows %d replicas, %d of %d stats answered", r.Observation.RunningReplicas, r.StatsAnswered, r.StatsAsked)
				}
				if !c.real && (r.Observation.RunningReplicas != 2 || r.Observation.Samples[0].CPUMHz != 120) {
					t.Errorf("group %s: %+v", groupB, r.Observation)
				}
			},
		},
		{
			name: "a node ID with the node's own name",
			query: func(c *cluster) Query {
				q := c.anyNode()
				q.Host.Name = "host-a"
				if c.real {
					q.Host.Name = c.node.Name
				}
				return q
			},
			check: func(t *testing.T, c *cluster, r *Reading) {
				if want := c.anyNode().Host.NodeID; r.NodeID != want {
					t.Errorf("read node %s, want %s", r.NodeID, want)
				}
			},
		},
		{
			name:        "pool and class, demand given, label",
			standinOnly: "known pools and classes with fixed usage",
			query: func(c *cluster) Query {
				return Query{Host: HostSelector{Pool: "edge", Class: "small"}, Job: jobID, Group: groupB, ReplicaCPUDemandMHz: 90, Label: "second"}
			},
			check: func(t *testing.T, c *cluster, r *Reading) {
				want := engine.Observation{Host: "second", CPUCapacityMHz: 4000, MemoryCapacityMB: 8192,
					Samples:         []engine.Sample{{Time: r.Time.Unix(), CPUMHz: 120, MemoryMB: 100}},
					RequestedCPUMHz: 500, RequestedMemoryMB: 256, RunningReplicas: 2,
					ReplicaCPUDemandMHz: 90, ReplicaMemoryDemandMB: 128}
				equalObs(t, r.Observation, want)
			},
		},
	})
}

// TestReadErrors: selectors that name no node, or several; unknown jobs;
// refused tokens; faults.
func TestReadErrors(t *testing.T) {
	runReadCases(t, []readCase{
		{
			name: "missing node ID",
			query: func(c *cluster) Query {
				return Query{Host: HostSelector{NodeID: "00000000-dead-beef-0000-000000000000"}, ReplicaCPUDemandMHz: 1}
			},
			wantErr: ErrNodeNotFound,
		},
		// Nomad's CLI takes a prefix of an ID; the node endpoint takes it
		// whole, and the error says what is wrong with its form
		idForm("a node ID prefix", func(id string) string { return id[:8] },
			"(a node ID is given whole, the 36 characters of its UUID, not a prefix: this one has 8)"),
		idForm("a node ID without its dashes", func(id string) string { return strings.ReplaceAll(id, "-", "") },
			"(a node ID is its whole UUID with its dashes, 36 characters: this one has 32, without dashes)"),
		idForm("a node ID too long", func(id string) string { return id + "-0" },
			"(a node ID is its whole UUID, 36 characters with its dashes: this one has 38)"),
		{
			// the name is a condition on the node the ID reads, not a
			// selector left unread
			name: "a node ID with a name the node does not have",
			query: func(c *cluster) Query {
				q := c.anyNode()
				q.Host.Name = "no-such-node-activation-test"
				return q
			},
			wantErr: ErrNodeNotFound,
		},
		{
			name: "missing node name",
			query: func(c *cluster) Query {
				return Query{Host: HostSelector{Name: "no-such-node-activation-test"}, ReplicaCPUDemandMHz: 1}
			},
			wantErr: ErrNodeNotFound,
		},
		{
			name:    "no selector",
			query:   func(c *cluster) Query { return Query{ReplicaCPUDemandMHz: 1} },
			wantErr: ErrNoSelector,
		},
		{
			name:    "missing job",
			query:   func(c *cluster) Query { q := c.anyNode(); q.Job = "no-such-job-activation-test"; return q },
			wantErr: ErrJobNotFound,
		},
		{
			name: "several match",
			query: func(c *cluster) Query {
				if c.real {
					return Query{Host: HostSelector{Pool: c.sharedPool}, ReplicaCPUDemandMHz: 1}
				}
				return Query{Host: HostSelector{Pool: "edge"}, ReplicaCPUDemandMHz: 1}
			},
			prepare: func(t *testing.T, c *cluster) *api.Client {
				if c.real && c.sharedPool == "" {
					t.Skip("no node pool of the real cluster holds two nodes")
				}
				return nil
			},
			wantErr: ErrAmbiguous,
		},
		{
			name:        "a node replaced under the same name: the down one is passed over",
			standinOnly: "a down node of the same name added",
			query:       func(c *cluster) Query { return Query{Host: HostSelector{Name: "host-a"}, ReplicaCPUDemandMHz: 1} },
			prepare: func(t *testing.T, c *cluster) *api.Client {
				if _, err := c.s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 8000, MemoryMB: 16384, Status: api.NodeStatusDown}); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			check: func(t *testing.T, c *cluster, r *Reading) {
				if r.NodeID != c.nodeA || r.Node.Status != api.NodeStatusReady {
					t.Errorf("read node %s (%s), want the ready host-a %s", r.NodeID, r.Node.Status, c.nodeA)
				}
			},
		},
		{
			name:        "two ready nodes of one name: ambiguous",
			standinOnly: "a second node of the same name added",
			query:       func(c *cluster) Query { return Query{Host: HostSelector{Name: "host-a"}, ReplicaCPUDemandMHz: 1} },
			prepare: func(t *testing.T, c *cluster) *api.Client {
				if _, err := c.s.AddNode(nomadstandin.NodeSpec{Name: "host-a", CPUMHz: 8000, MemoryMB: 16384}); err != nil {
					t.Fatal(err)
				}
				return nil
			},
			wantErr: ErrAmbiguous,
		},
		{
			name:        "node down",
			standinOnly: "a down node",
			query:       func(c *cluster) Query { return Query{Host: HostSelector{Name: "host-down"}, ReplicaCPUDemandMHz: 1} },
			wantErr:     ErrNodeNotReady,
		},
		{
			name:  "forbidden token",
			query: func(c *cluster) Query { return c.anyNode() },
			prepare: func(t *testing.T, c *cluster) *api.Client {
				if c.real {
					if testsupport.ClusterEnv()[nomadconn.EnvToken] == "" {
						t.Skip("the real cluster's ACLs are on only when NOMAD_TOKEN is set; without it a bad token proves nothing")
					}
					cfg := api.DefaultConfig()
					cfg.SecretID = taskToken
					cl, err := api.NewClient(cfg)
					if err != nil {
						t.Fatal(err)
					}
					return cl
				}
				c.s.RequireToken("the-right-one", nomadstandin.TokenPolicy{})
				cl, err := c.s.Client(taskToken)
				if err != nil {
					t.Fatal(err)
				}
				return cl
			},
			wantErr: errForbidden,
		},
		{
			name:        "5xx on one of three stats reads: too few answered",
			standinOnly: "fault injection",
			query:       func(c *cluster) Query { return Query{Host: HostSelector{NodeID: c.nodeA}, Job: jobID, Group: groupA} },
			prepare: func(t *testing.T, c *cluster) *api.Client {
				c.s.InjectFault(nomadstandin.Fault{Path: "/v1/client/allocation/*", Status: 503, Skip: 1, Times: 1})
				return nil
			},
			wantErr: errStatus(503),
		},
		{
			name:        "allocation gone between list and stats",
			standinOnly: "fault injection",
			query:       func(c *cluster) Query { return Query{Host: HostSelector{NodeID: c.nodeA}, Job: jobID, Group: groupA} },
			prepare: func(t *testing.T, c *cluster) *api.Client {
				c.s.InjectFault(nomadstandin.Fault{Path: "/v1/client/allocation/*", Status: 404, Times: 1, Message: `Unknown allocation "a1"`})
				return nil
			},
			check: func(t *testing.T, c *cluster, r *Reading) {
				if r.Observation.RunningReplicas != 2 || r.Observation.Samples[0].CPUMHz != 240 || r.Observation.RequestedCPUMHz != 1000 {
					t.Errorf("with one allocation gone: %+v", r.Observation)
				}
			},
		},
		{
			// Nomad answers 404 "No path to node" for a client it cannot
			// reach: the allocations may run, so they are unread, not gone.
			name:        "404 without an unknown allocation on every stats read: too few answered",
			standinOnly: "fault injection",
			query:       func(c *cluster) Query { return Query{Host: HostSelector{NodeID: c.nodeA}, Job: jobID, Group: groupA} },
			prepare: func(t *testing.T, c *cluster) *api.Client {
				c.s.InjectFault(nomadstandin.Fault{Path: "/v1/client/allocation/*", Status: 404, Message: "No path to node"})
				return nil
			},
			wantErr: ErrTooFewAnswered,
		},
	})
}

var errForbidden = errors.New("403 Permission denied")

type errStatus int

func (e errStatus) Error() string { return http.StatusText(int(e)) }

func matchErr(err, want error) bool {
	var ue api.UnexpectedResponseError
	switch w := want.(type) {
	case errStatus:
		return errors.As(err, &ue) && ue.StatusCode() == int(w)
	}
	if want == errForbidden {
		return errors.As(err, &ue) && ue.StatusCode() == 403
	}
	return errors.Is(err, want)
}

func equalObs(t *testing.T, got, want engine.Observation) {
	t.Helper()
	if len(got.Samples) != len(want.Samples) {
		t.Fatalf("samples %v, want %v", got.Samples, want.Samples)
	}
	for i := range got.Samples {
		g, w := got.Samples[i], want.Samples[i]
		if g.Time != w.Time || !near(g.CPUMHz, w.CPUMHz) || !near(g.MemoryMB, w.MemoryMB) {
			t.Errorf("sample %d = %+v, want %+v", i, g, w)
		}
	}
	got.Samples, want.Samples = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("observation\n got %+v\nwant %+v", got, want)
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-6 && d > -1e-6
}

// TestReaderRemembersResolution: a name selector lists nodes (with a
// server-side filter) once; while the entry is fresh the node itself is
// read; once it is older than ResolveTTL the selector is listed again.
func TestReaderRemembersResolution(t *testing.T) {
	testsupport.StandinOnly(t, "a node set down while its resolution is remembered (and the stand-in's request log)")
	c := newCluster(t)
	clk := time.Now()
	rd := &Reader{Client: c.client, Now: func() time.Time { return clk }}
	q := Query{Host: HostSelector{Name: "host-a"}, Job: jobID, Group: groupA}
	lists := func() (n int, filters []string) {
		for _, r := range c.s.Requests() {
			if r.Path == "/v1/nodes" {
				n++
				filters = append(filters, r.Query)
			}
		}
		return n, filters
	}
	for i := 0; i < 3; i++ {
		if _, err := rd.Read(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	n, filters := lists()
	if n != 1 {
		t.Errorf("three reads listed nodes %d times, want 1", n)
	}
	if len(filters) > 0 && !strings.Contains(filters[0], "filter=") {
		t.Errorf("the node listing carried no server-side filter: %q", filters[0])
	}
	clk = clk.Add(ResolveTTL + time.Second)
	if _, err := rd.Read(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if n, _ := lists(); n != 2 {
		t.Errorf("a stale entry was not listed again (%d listings)", n)
	}
	must(t, c.s.SetNodeStatus(c.nodeA, "down"))
	if _, err := rd.Read(context.Background(), q); !errors.Is(err, ErrNodeNotReady) {
		t.Errorf("read of a node gone down: %v, want ErrNodeNotReady", err)
	}
}

// TestReadingTimeIsStatsTime: a reading is stamped with the time Nomad took
// the stats (the median of the allocations' Timestamps, or the node's), not the
// time of the read, so that stale stats can be told apart.
func TestReadingTimeIsStatsTime(t *testing.T) {
	testsupport.StandinOnly(t, "the stats' age set on the stand-in")
	s, err := nomadstandin.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	node, err := s.AddNode(nomadstandin.NodeSpec{Name: "h", CPUMHz: 4000, MemoryMB: 8192})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.AddJob(nomadstandin.JobSpec{ID: jobID, Groups: []nomadstandin.GroupSpec{{Name: groupA, Count: 2, CPUMHz: 500, MemoryMB: 256, NodeID: node}}}))
	c, err := s.Client("")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		q    Query
		age  time.Duration
	}{
		{"allocation stats, fresh", Query{Host: HostSelector{NodeID: node}, Job: jobID}, 0},
		{"allocation stats, 10 minutes old", Query{Host: HostSelector{NodeID: node}, Job: jobID}, 10 * time.Minute},
		{"client stats, 1 hour old", Query{Host: HostSelector{NodeID: node}, ReplicaCPUDemandMHz: 500}, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.SetStatsAge(tc.age)
			before := time.Now()
			r, err := (&Reader{Client: c}).Read(context.Background(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			lo, hi := before.Add(-tc.age), after.Add(-tc.age)
			if r.Time.Before(lo) || r.Time.After(hi) {
				t.Errorf("reading time %s, want within [%s, %s] (stats %s old)", r.Time, lo, hi, tc.age)
			}
			if got := r.Observation.Samples[0].Time; got != r.Time.Unix() {
				t.Errorf("sample time %d, reading time %d", got, r.Time.Unix())
			}
		})
	}
}

func TestSelectorFilter(t *testing.T) {
	for _, tc := range []struct {
		sel  HostSelector
		want string
		err  bool
	}{
		{sel: HostSelector{Name: "host-a"}, want: `Name == "host-a"`},
		{sel: HostSelector{Pool: "edge", Class: "big"}, want: `NodePool == "edge" and NodeClass == "big"`},
		{sel: HostSelector{Name: `we"ird\name`, Datacenter: "dc2"}, want: "Name == `we\"ird\\name` and Datacenter == \"dc2\""},
		{sel: HostSelector{Name: "a\"b`c"}, err: true},
		{sel: HostSelector{NodeID: "abc"}, want: ``},
	} {
		got, err := tc.sel.Filter()
		if tc.err {
			if !errors.Is(err, ErrBadQuery) {
				t.Errorf("%s: err %v, want ErrBadQuery", tc.sel, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: filter %s (%v), want %s", tc.sel, got, err, tc.want)
		}
	}
}
