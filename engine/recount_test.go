package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// recountWindow builds observations of one window at n replicas as the
// simulator does: n times a replica's usage, memory and requests, each on
// a grid of 2^-20, over capacities that are powers of two.
type recountWindow struct {
	u, mem             []float64
	withMem, zero      bool
	wanted             int
	queue              []Replica
	cpuDemand, memDemd float64
}

func newRecountWindow(seed uint64) *recountWindow {
	r := rand.New(rand.NewPCG(seed, 3))
	grid := func(v float64) float64 { return math.Round(v*(1<<20)) / (1 << 20) }
	w := &recountWindow{u: make([]float64, 60), mem: make([]float64, 60), withMem: true, cpuDemand: grid(61.3), memDemd: grid(700.1)}
	for i := range w.u {
		w.u[i] = grid(2 + 30*r.Float64())
		w.mem[i] = grid(100 + 900*r.Float64())
	}
	return w
}

func (w *recountWindow) at(n int) *Observation {
	fn := float64(n)
	o := &Observation{Host: "h", CPUCapacityMHz: 1024, RunningReplicas: n, ReplicaCPUDemandMHz: w.cpuDemand,
		RequestedCPUMHz: fn * w.cpuDemand, WantedReplicas: w.wanted, QueuedReplicas: w.queue}
	if w.withMem {
		o.MemoryCapacityMB, o.ReplicaMemoryDemandMB, o.RequestedMemoryMB = 65536, w.memDemd, fn*w.memDemd
	}
	for i := range w.u {
		s := Sample{Time: int64(1_700_000_000 + 300*i), CPUMHz: fn * w.u[i]}
		if w.zero {
			s.CPUMHz = 0
		}
		if w.withMem {
			s.MemoryMB = fn * w.mem[i]
		}
		o.Samples = append(o.Samples, s)
	}
	return o
}

// everyCountInput is a model reading every feature a Recounter takes and
// six slots with each of their sources.
func everyCountInput(t testing.TB) *Processor {
	t.Helper()
	var names []string
	for _, n := range FeatureNames {
		if n != "cpu_host_mean" && n != "cpu_host_max" {
			names = append(names, n)
		}
	}
	for k := range 6 {
		s := SlotPrefix + strconv.Itoa(k)
		names = append(names, s, s+SlotMemorySuffix, s+SlotRunningSuffix, s+SlotOwnSuffix)
	}
	in := make([]Node, len(names))
	ones := make([]float64, len(names))
	for i, n := range names {
		in[i], ones[i] = Node{Name: n, Countable: strings.HasPrefix(n, SlotPrefix) && !strings.Contains(n[len(SlotPrefix):], "_")}, 1
	}
	m := testModel(in, []Node{{Name: "o", Countable: true}}, 1e-6, 0.5,
		Layer{Activation: ActivationReLU, Weights: [][]float64{ones}, Biases: []float64{0}},
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1}}, Biases: []float64{0}})
	p, err := NewProcessor(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRecounterMatchesFeatures: at every count, in any order and from any
// first count, a Recounter's vector is bitwise what FeaturesInto gives on
// the observation at that count, and it lays out again only the slots
// between the counts (all from the lower one on with a queue).
func TestRecounterMatchesFeatures(t *testing.T) {
	adm, err := Builtin("admission")
	if err != nil {
		t.Fatal(err)
	}
	capy, err := Builtin("capacity")
	if err != nil {
		t.Fatal(err)
	}
	procs := []struct {
		name string
		p    *Processor
		role string
	}{{"admission", adm, RoleFirst}, {"capacity", capy, RoleSecond}, {"every count input", everyCountInput(t), RoleFirst}}
	windows := []struct {
		name string
		mod  func(w *recountWindow)
	}{
		{"usage and memory", func(*recountWindow) {}},
		{"no memory", func(w *recountWindow) { w.withMem = false }},
		{"memory not measured", func(w *recountWindow) { clear(w.mem) }},
		{"zero usage", func(w *recountWindow) { w.zero = true }},
		{"wanted 4", func(w *recountWindow) { w.wanted = 4 }},
		{"queue", func(w *recountWindow) {
			w.queue = []Replica{{CPUMHz: 100, MemoryMB: 2048}, {CPUMHz: 30, MemoryMB: 64}, {CPUMHz: 5}}
		}},
	}
	for _, pc := range procs {
		for _, wc := range windows {
			t.Run(pc.name+"/"+wc.name, func(t *testing.T) {
				w := newRecountWindow(5)
				wc.mod(w)
				rc, err := pc.p.NewRecounter()
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(1, 2))
				for _, first := range []int{1, 3, 40, 200} {
					if err := rc.Reset(w.at(first), pc.role); err != nil {
						t.Fatal(err)
					}
					prev := first
					counts := []int{first, first + 1, 1, 2, 5, 4, 110, 111, 300, 109, 6, 1 << 12}
					for range 40 {
						counts = append(counts, 1+r.IntN(130))
					}
					var x, kept []float64
					keptAt := 0
					for _, n := range counts {
						before := rc.patched
						x, err = rc.Into(x, n)
						if err != nil {
							t.Fatalf("count %d: %v", n, err)
						}
						want, err := pc.p.Features(w.at(n), pc.role)
						if err != nil {
							t.Fatalf("count %d: %v", n, err)
						}
						for i := range want {
							if math.Float64bits(x[i]) != math.Float64bits(want[i]) {
								t.Fatalf("from %d, count %d after %d: input %d (%s) is %v, want %v", first, n, prev, i, pc.p.Model().Inputs[i].Name, x[i], want[i])
							}
						}
						// A vector returned is the caller's: the next
						// count does not change it.
						if kept != nil {
							want, err := pc.p.Features(w.at(keptAt), pc.role)
							if err != nil {
								t.Fatal(err)
							}
							for i := range want {
								if math.Float64bits(kept[i]) != math.Float64bits(want[i]) {
									t.Fatalf("the vector for count %d changed after Into(%d)", keptAt, n)
								}
							}
						}
						kept, keptAt = slices.Clone(x), n
						if n%2 == 0 { // sometimes the returned storage itself
							kept, x = x, nil
						}
						// What was laid out again.
						fm := &pc.p.features
						most := int64(0)
						if n != prev {
							lo, hi := min(n, prev), max(n, prev)
							if w.queue != nil {
								hi = fm.slots
							}
							most = int64(max(min(hi, fm.slots)-lo, 0) + len(fm.countInputs))
						}
						if got := rc.patched - before; got != most {
							t.Fatalf("from %d to %d: %d slots and count inputs laid out, want %d", prev, n, got, most)
						}
						prev = n
					}
				}
			})
		}
	}
}

// TestRecounterRefuses: what cannot be recounted is refused with the
// field and the reason, and a refused Reset leaves no window to read.
func TestRecounterRefuses(t *testing.T) {
	hostSum := func(name string) *Processor {
		m := testModel([]Node{{Name: "cpu_replica_mean"}, {Name: name}, {Name: SlotPrefix + "0", Countable: true}}, []Node{{Name: "o", Countable: true}}, 1e-6, 0.5,
			Layer{Activation: ActivationReLU, Weights: [][]float64{{1, 1, 1}}, Biases: []float64{0}},
			Layer{Activation: ActivationReLU, Weights: [][]float64{{1}}, Biases: []float64{0}})
		p, err := NewProcessor(m)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, name := range []string{"cpu_host_mean", "cpu_host_max"} {
		_, err := hostSum(name).NewRecounter()
		if err == nil || !strings.Contains(err.Error(), "input 1 ("+name+")") {
			t.Errorf("%s: NewRecounter error %v, want it to name the input", name, err)
		}
	}
	p := everyCountInput(t)
	w := newRecountWindow(9)
	cases := []struct {
		name string
		obs  func() *Observation
		want string
	}{
		{"none running", func() *Observation { return w.at(0) }, "running_replicas is 0"},
		{"warming", func() *Observation { o := w.at(3); o.WarmingReplicas = 1; return o }, "warming_replicas is 1"},
		{"NaN usage", func() *Observation { o := w.at(3); o.Samples[4].CPUMHz = math.NaN(); return o }, "samples[4].cpu_mhz"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc, err := p.NewRecounter()
			if err != nil {
				t.Fatal(err)
			}
			if err := rc.Reset(w.at(2), RoleFirst); err != nil {
				t.Fatal(err)
			}
			err = rc.Reset(c.obs(), RoleFirst)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Reset error %v, want %q", err, c.want)
			}
			if _, err := rc.Into(nil, 2); err == nil || !strings.Contains(err.Error(), "no window read") {
				t.Fatalf("Into after a refused Reset: error %v, want no window read", err)
			}
		})
	}
	rc, err := p.NewRecounter()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Reset(w.at(2), RoleFirst); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, -1, MaxReplicas + 1} {
		if _, err := rc.Into(nil, n); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("Into(%d): error %v, want out of range", n, err)
		}
	}
}

// BenchmarkRecountCounts is the first host's vectors at one decision point
// of the simulator's threshold sweep: the built-in admission processor's
// input vectors for the counts in force 1 to 30 of one 120-sample window,
// each computed from its observation (FeaturesInto, which validates it)
// and laid out by a Recounter that read the window once. Each op gives
// every count's vector once; the observations are built outside the
// timing.
func BenchmarkRecountCounts(b *testing.B) {
	p, err := Builtin("admission")
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	u := make([]float64, 120)
	for i := range u {
		u[i] = (0.02 + 0.03*r.Float64()) * 1024
	}
	var obs []*Observation
	for n := 1; n <= 30; n++ {
		obs = append(obs, countObservation(u, n))
	}
	x := make([]float64, p.NumInputs())
	b.Run("features", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, o := range obs {
				if x, err = p.FeaturesInto(x, o, RoleFirst); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("recounter", func(b *testing.B) {
		rc, err := p.NewRecounter()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := rc.Reset(obs[0], RoleFirst); err != nil {
				b.Fatal(err)
			}
			for n := 1; n <= len(obs); n++ {
				if x, err = rc.Into(x, n); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// FuzzRecounter: on any window of the simulator's kind (usage, memory and
// demands on the 2^-20 grid at any scale, with or without memory, a wanted
// count or a queue), the vector a Recounter gives at each count, after
// reading the window at another, is bitwise FeaturesInto's on the
// observation at that count, wherever that observation is valid.
func FuzzRecounter(f *testing.F) {
	f.Add(uint64(1), uint16(1), uint16(7), uint16(3), uint8(0), uint8(0), uint8(2), true, false)
	f.Add(uint64(2), uint16(40), uint16(2), uint16(200), uint8(4), uint8(0), uint8(9), false, false)
	f.Add(uint64(3), uint16(5), uint16(110), uint16(6), uint8(0), uint8(3), uint8(20), true, true)
	f.Add(uint64(4), uint16(120), uint16(1), uint16(111), uint8(0), uint8(0), uint8(30), true, false)
	p := everyCountInput(f)
	adm, err := Builtin("admission")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, seed uint64, first, n, m uint16, wanted, queued, scale uint8, withMem, zero bool) {
		w := newRecountWindow(seed)
		// usage up to 2^(scale%24) MHz a replica (past the room: the
		// shares cap), memory likewise
		grid := func(v float64) float64 { return math.Round(v*(1<<20)) / (1 << 20) }
		r := rand.New(rand.NewPCG(seed, uint64(scale)))
		top := math.Ldexp(1, int(scale%24))
		for i := range w.u {
			w.u[i], w.mem[i] = grid(top*r.Float64()), grid(64*top*r.Float64())
		}
		w.cpuDemand, w.memDemd = grid(top*r.Float64()), grid(64*top*r.Float64())
		w.withMem, w.zero, w.wanted = withMem, zero, int(wanted%8)
		if w.wanted == 0 && queued%4 != 0 {
			for range queued % 4 {
				w.queue = append(w.queue, Replica{CPUMHz: grid(top * r.Float64()), MemoryMB: grid(64 * top * r.Float64())})
			}
		}
		for _, proc := range []*Processor{p, adm} {
			rc, err := proc.NewRecounter()
			if err != nil {
				t.Fatal(err)
			}
			o := w.at(1 + int(first)%300)
			if o.Validate(RoleFirst) != nil {
				return
			}
			if err := rc.Reset(o, RoleFirst); err != nil {
				t.Fatal(err)
			}
			for _, c := range []int{1 + int(n)%300, 1 + int(m)%300, 1 + int(first)%300} {
				want, err := proc.Features(w.at(c), RoleFirst)
				if err != nil {
					continue // not valid at this count
				}
				x, err := rc.Into(nil, c)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if math.Float64bits(x[i]) != math.Float64bits(want[i]) {
						t.Fatalf("%s at %d replicas: input %s is %v, FeaturesInto %v", proc.Model().Name, c, proc.Model().Inputs[i].Name, x[i], want[i])
					}
				}
			}
		}
	})
}
