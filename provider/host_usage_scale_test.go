package provider

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// countingProxy stands in front of a Nomad API and counts what passes:
// requests, full node listings (GET /v1/nodes without a filter: every node
// of the cluster) and bytes answered.
type countingProxy struct {
	srv                       *httptest.Server
	requests, listings, bytes atomic.Int64
}

func newCountingProxy(tb testing.TB, target string) *countingProxy {
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if r.URL.Path == "/v1/nodes" && r.URL.Query().Get("filter") == "" {
			p.listings.Add(1)
		}
		rp.ServeHTTP(&countingWriter{ResponseWriter: w, n: &p.bytes}, r)
	}))
	tb.Cleanup(p.srv.Close)
	return p
}

func (p *countingProxy) reset() {
	p.requests.Store(0)
	p.listings.Store(0)
	p.bytes.Store(0)
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}

// Sizes of BenchmarkHostUsageForEach: the for_each.
const (
	forEachNodes     = 5000
	forEachReads     = 200
	tofuParallelism  = 10 // OpenTofu's default -parallelism
	forEachNodeNames = "node"
)

// BenchmarkHostUsageForEach is a `for_each` of 200 activation_host_usage
// reads by node name on a 5000-node cluster (the stand-in, through a
// counting proxy), 10 at a time as OpenTofu reads them; one op is one
// for_each, as one `tofu plan` reads it (a new provider instance). It
// reports the requests, the full node listings and the bytes Nomad
// answered per for_each.
//
//   - provider: the provider as it is (one connection and reader per
//     provider instance, the node found by a server-side filter);
//   - old-reader: what each read cost before nomadusage's server-side
//     filters and the provider's shared reader (commit 6476ea5^),
//     reproduced request for request by oldRead: a client of its own, every
//     node of the cluster listed to find the name, then the node, its
//     allocations and its client stats.
func BenchmarkHostUsageForEach(b *testing.B) {
	testsupport.StandinOnly(b, "5000 nodes set from Go, requests counted by a proxy")
	s, err := nomadstandin.New()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	if _, err := s.AddNodes(forEachNodes, nomadstandin.NodeSpec{Name: forEachNodeNames, CPUMHz: 8000, MemoryMB: 16384, NodePool: "edge"}); err != nil {
		b.Fatal(err)
	}
	proxy := newCountingProxy(b, s.URL())
	block := nullNomadBlock()
	block.Address = types.StringValue(proxy.srv.URL)
	names := make([]string, forEachReads)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", forEachNodeNames, 1+i*(forEachNodes/forEachReads))
	}
	for _, mode := range []string{"provider", "old-reader"} {
		b.Run(mode, func(b *testing.B) {
			proxy.reset()
			runs := 0
			for b.Loop() {
				runs++
				c := newNomadConnection(context.Background(), block, noEnv)
				work := make(chan string)
				var wg sync.WaitGroup
				for w := 0; w < tofuParallelism; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for name := range work {
							if mode == "old-reader" {
								if err := oldRead(context.Background(), proxy.srv.URL, name); err != nil {
									b.Errorf("read %s: %v", name, err)
								}
								continue
							}
							m := nullUsageModel()
							m.NodeName, m.ReplicaCPUDemandMHz = types.StringValue(name), numberValue(100)
							m.Samples = wholeValue(1) // one read each, as the old reader's
							if got, diags := readUsageWith(b, context.Background(), c, m); diags != "" || got.NodeName.ValueString() != name {
								b.Errorf("read %s: %s", name, diags)
							}
						}
					}()
				}
				for _, n := range names {
					work <- n
				}
				close(work)
				wg.Wait()
			}
			b.ReportMetric(float64(proxy.requests.Load())/float64(runs), "requests/op")
			b.ReportMetric(float64(proxy.listings.Load())/float64(runs), "full-node-listings/op")
			b.ReportMetric(float64(proxy.bytes.Load())/float64(runs)/1e6, "MB-answered/op")
		})
	}
}

// oldRead makes the requests one activation_host_usage read by node name
// (no job) made before commit 6476ea5, in the same order: a Nomad client of
// its own, GET /v1/nodes (every node, matched by name in the client),
// GET /v1/node/:id, GET /v1/node/:id/allocations and
// GET /v1/client/stats?node_id=. It decodes the answers as the old reader
// did and builds no observation (the engine's work is the same both ways).
func oldRead(ctx context.Context, address, name string) error {
	conn, err := nomadconn.New(nomadconn.Settings{Address: address}, noEnv)
	if err != nil {
		return err
	}
	c := conn.Client()
	qo := (&api.QueryOptions{}).WithContext(ctx)
	stubs, _, err := c.Nodes().List(qo)
	if err != nil {
		return err
	}
	id := ""
	for _, n := range stubs {
		if n.Name == name {
			id = n.ID
		}
	}
	if id == "" {
		return fmt.Errorf("no node %s among %d", name, len(stubs))
	}
	if _, _, err := c.Nodes().Info(id, qo); err != nil {
		return err
	}
	if _, _, err := c.Nodes().Allocations(id, qo); err != nil {
		return err
	}
	var hs api.HostStats
	_, err = c.Raw().Query("/v1/client/stats?node_id="+url.QueryEscape(id), &hs, qo)
	return err
}
