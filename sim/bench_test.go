package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// sharedTraces is the shared trace collection (crane, planetlab,
// bitbrains), outside the repository.
var sharedTraces = filepath.Join("..", "..", "shared", "traces")

// BenchmarkSimulateShared is the speed target: the whole replay of
// the three shared families (crane, planetlab by VM, bitbrains' CPU), every
// policy and every knob setting, in the shifted scenario, as
// `activation simulate --traces crane,planetlab,bitbrains --split all`
// runs it (the linear ablation fitted on the pooled training split),
// families one after the other, series in parallel. Besides the time per
// op it reports decision points replayed per second, and what the
// activation policy's sweep replay cost per decision point against one bare
// engine.Decide per decision point timed in the same run (act/bare; goal:
// within 2x), with the engine sweeps per decision point on each host and
// the share of full passes' node values and scores the first host's sweeps
// computed. Run with -benchtime 1x.
func BenchmarkSimulateShared(b *testing.B) {
	var fams [][]traces.Ref
	for _, name := range []string{"crane", "planetlab", "bitbrains"} {
		dir := filepath.Join(sharedTraces, name)
		if _, err := os.Stat(dir); err != nil {
			b.Skipf("the shared traces are not on this machine (%v): this benchmark replays %s", err, sharedTraces)
		}
		refs, err := traces.Scan(dir)
		if err != nil {
			b.Fatal(err)
		}
		fams = append(fams, refs)
	}
	sc := Shifted()
	for b.Loop() {
		var trainSet []Source
		for _, refs := range fams {
			tr, _ := traces.SplitRefs(refs, 0.34, 1)
			trainSet = append(trainSet, FromRefs(tr)...)
		}
		lin, err := LinearSources(context.Background(), trainSet, sc, LinearConfig{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		m := &Meter{}
		act, err := Activation(ActivationConfig{Meter: m})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		var reps []*Report
		for _, refs := range fams {
			rep, err := RunSources(context.Background(), FromRefs(refs), sc, append(Baselines(), act, lin), Options{})
			if err != nil {
				b.Fatal(err)
			}
			reps = append(reps, rep)
		}
		pooled, err := Pool(reps...)
		if err != nil {
			b.Fatal(err)
		}
		wall := time.Since(start)
		r := m.Read()
		dec := float64(r.Decisions)
		b.ReportMetric(float64(pooled.Decisions)/wall.Seconds(), "decisions/s")
		b.ReportMetric(float64(pooled.Decisions), "decisions")
		b.ReportMetric(float64(r.Replay.Nanoseconds())/dec, "act-ns/decision")
		b.ReportMetric(float64(r.Bare.Nanoseconds())/dec, "bare-ns/decision")
		b.ReportMetric(float64(r.Replay)/float64(r.Bare), "act/bare")
		b.ReportMetric(float64(r.FirstPasses)/dec, "first-sweeps/decision")
		b.ReportMetric(float64(r.SecondPasses)/dec, "second-sweeps/decision")
		b.ReportMetric(r.FirstNodeShare, "first-nodes/full")
		b.ReportMetric(r.FirstScoreShare, "first-scores/full")
	}
}

// synthFromShared makes n series of length samples from the bundled real
// series (the shared crane family): series i is crane series i mod 12 from
// a seeded offset, wrapping around, one sample a minute. Each is built when
// loaded, so that only the twelve real series are held.
func synthFromShared(tb testing.TB, n, length int) []Source {
	tb.Helper()
	base := loadCrane(tb)
	out := make([]Source, n)
	for i := range out {
		src := base[i%len(base)]
		off := (i * 7919) % src.Len()
		name := fmt.Sprintf("syn%05d-%s", i, src.Name)
		out[i] = Source{Name: name, Load: func() (traces.Series, error) {
			s := traces.Series{Name: name, Times: make([]int64, length), Values: make([]float64, length)}
			for t := range s.Values {
				s.Times[t] = 1600000000 + 60*int64(t)
				s.Values[t] = src.Values[(off+t)%src.Len()]
			}
			return s, nil
		}}
	}
	return out
}

// heapPeak samples the heap until stopped: the heap in use (objects, live
// or not yet collected) and the live heap the last collection marked.
type heapPeak struct {
	stop        chan struct{}
	done        sync.WaitGroup
	inUse, live uint64
}

func watchHeap(every time.Duration) *heapPeak {
	h := &heapPeak{stop: make(chan struct{})}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(samples)
			h.inUse = max(h.inUse, samples[0].Value.Uint64())
			h.live = max(h.live, samples[1].Value.Uint64())
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// Stop returns the peaks.
func (h *heapPeak) Stop() (inUse, live uint64) {
	close(h.stop)
	h.done.Wait()
	return h.inUse, h.live
}

// BenchmarkReplayMemory is the memory target: the streaming replay
// of 12, 100 and 1,000 series of 2,016 samples built from the shared real
// series, every baseline policy and knob setting, shifted scenario. It
// reports, sampled every 2 ms, the peak heap in use during the run (live
// or not yet collected) and the peak live heap the collector marked, and
// the live heap's growth over the heap before the run per sample the run
// may hold at once (Options.InFlight units of one series each): the peaks
// must not grow with the number of series.
func BenchmarkReplayMemory(b *testing.B) {
	const length = 2016 // a week of 5-minute samples
	for _, n := range []int{12, 100, 1000} {
		b.Run(fmt.Sprintf("series=%d", n), func(b *testing.B) {
			src := synthFromShared(b, n, length)
			workers := runtime.GOMAXPROCS(0)
			opt := Options{Workers: workers, InFlight: 2 * workers}
			for b.Loop() {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				before := ms.HeapAlloc
				w := watchHeap(2 * time.Millisecond)
				rep, err := RunSources(context.Background(), src, Shifted(), Baselines(), opt)
				inUse, live := w.Stop()
				if err != nil {
					b.Fatal(err)
				}
				if len(rep.Series) != n {
					b.Fatalf("%d series replayed, want %d", len(rep.Series), n)
				}
				growth := float64(live) - float64(before)
				b.ReportMetric(float64(inUse)/(1<<20), "peak-heap-MB")
				b.ReportMetric(float64(live)/(1<<20), "peak-live-MB")
				b.ReportMetric(growth/float64(opt.InFlight*length), "live-bytes/sample-in-flight")
				b.ReportMetric(float64(rep.Samples), "samples")
			}
		})
	}
}

// BenchmarkYardstickBaselines replays the yardstick scenario's baselines.
func BenchmarkYardstickBaselines(b *testing.B) {
	all := loadCrane(b)
	for b.Loop() {
		if _, err := Run(context.Background(), all, Yardstick(), YardstickBaselines(), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
