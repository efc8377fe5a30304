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

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
)

// countingProxy stands in front of a Nomad API and counts what passes:
// requests, node listings (GET /v1/nodes) and bytes answered.
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
		if r.URL.Path == "/v1/nodes" {
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
// counting proxy), 10 at a time as OpenTofu reads them. "shared" is the
// provider as it is: one connection and reader per provider instance;
// "per-read" makes a connection and reader for every read, as the
// provider did before. It reports the requests, the node listings and the
// bytes Nomad answered per for_each.
func BenchmarkHostUsageForEach(b *testing.B) {
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
	for _, mode := range []string{"shared", "per-read"} {
		b.Run(mode, func(b *testing.B) {
			proxy.reset()
			runs := 0
			for b.Loop() {
				runs++
				shared := newNomadConnection(context.Background(), block, noEnv)
				work := make(chan string)
				var wg sync.WaitGroup
				for w := 0; w < tofuParallelism; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for name := range work {
							c := shared
							if mode == "per-read" {
								c = newNomadConnection(context.Background(), block, noEnv)
							}
							m := nullUsageModel()
							m.NodeName, m.ReplicaCPUDemandMHz = types.StringValue(name), numberValue(100)
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
			b.ReportMetric(float64(proxy.listings.Load())/float64(runs), "node-listings/op")
			b.ReportMetric(float64(proxy.bytes.Load())/float64(runs)/1e6, "MB-answered/op")
		})
	}
}
