package train

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// synthetic makes a series with a daily-like cycle and noise.
func synthetic(name string, n int, seed uint64) traces.Series {
	r := rand.New(rand.NewPCG(seed, 3))
	s := traces.Series{Name: name}
	for i := 0; i < n; i++ {
		s.Times = append(s.Times, int64(60*i))
		v := 1 + 0.5*math.Sin(2*math.Pi*float64(i)/300) + 0.1*r.Float64()
		s.Values = append(s.Values, v)
	}
	return s
}

func smallSettings() Settings {
	s := DefaultSettings().withDefaults()
	s.Epochs, s.Slots, s.Window = 3, 8, 30
	return s
}

func TestTrainIsReproducible(t *testing.T) {
	all := []traces.Series{synthetic("a", 3000, 1), synthetic("b", 3000, 2), synthetic("c", 3000, 3)}
	r1, err := Train(all, smallSettings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Train(all, smallSettings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]*engine.Model{{r1.Admission, r2.Admission}, {r1.Capacity, r2.Capacity}} {
		d1, _ := pair[0].Digest()
		d2, _ := pair[1].Digest()
		if d1 != d2 {
			t.Fatalf("%s: two runs with one seed gave %s and %s", pair[0].Name, d1, d2)
		}
	}
	s := smallSettings()
	s.Seed = 2
	r3, err := Train(all, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := r1.Capacity.Digest()
	d3, _ := r3.Capacity.Digest()
	if d1 == d3 {
		t.Fatal("another seed gave the same model")
	}
	if len(r1.HeldOut) == 0 || len(r1.TrainSeries) == 0 {
		t.Fatalf("split train %v held out %v", r1.TrainSeries, r1.HeldOut)
	}
}

// The trained models are read where the method reads them: the admission
// processor's countable nodes are its CPU demand slots (inputs), the
// capacity processor's its safe-count outputs.
func TestTrainedModelStructure(t *testing.T) {
	all := []traces.Series{synthetic("a", 3000, 1), synthetic("b", 3000, 2), synthetic("c", 3000, 3)}
	s := smallSettings()
	res, err := Train(all, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	adm, capy := res.Admission, res.Capacity
	countable := 0
	for k, n := range adm.Inputs {
		if n.Countable {
			countable++
			if n.Name != engine.SlotPrefix+strconv.Itoa(k) {
				t.Errorf("admission input %d %q is countable; only the CPU slots are", k, n.Name)
			}
		}
	}
	if countable != s.Slots {
		t.Fatalf("admission has %d countable inputs, want %d slots", countable, s.Slots)
	}
	for _, o := range adm.Outputs {
		if o.Countable {
			t.Fatalf("admission output %s is countable: the first host is read at the input layer", o.Name)
		}
	}
	if len(capy.Outputs) != s.Slots {
		t.Fatalf("capacity has %d outputs, want %d", len(capy.Outputs), s.Slots)
	}
	for k, o := range capy.Outputs {
		if !o.Countable || o.Name != "safe_"+strconv.Itoa(k) {
			t.Fatalf("capacity output %d is %+v", k, o)
		}
	}
	for _, m := range []*engine.Model{adm, capy} {
		if _, err := engine.NewProcessor(m); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
}

// The exported networks compute the trained estimates exactly: capacity
// output k is sigmoid(alpha (g/(k+1) - 1)) with g the min of the scaled fit
// statistics, while memory does not bind; admission output k is
// sigmoid(alpha (1 - C_k)) with C_k the cost of the queue up to slot k.
func TestExportedNetworkIsTheEstimate(t *testing.T) {
	const slots = 20
	stats, err := statisticsByName(DefaultStatistics)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	e := newEstimate(len(stats), nil)
	for f := range e.theta {
		e.theta[f] = 0.5 * rng.NormFloat64()
	}
	e.logAlpha = math.Log(6)
	prov := engine.Provenance{Method: "test"}
	capy, err := engine.NewProcessor(exportCapacity(e, stats, slots, prov))
	if err != nil {
		t.Fatal(err)
	}
	adm, err := engine.NewProcessor(exportAdmission(e, stats, slots, prov))
	if err != nil {
		t.Fatal(err)
	}
	cws, aws := engine.NewWorkspace(capy), engine.NewWorkspace(adm)
	for trial := 0; trial < 300; trial++ {
		use := make([]float64, len(stats))
		fit := make([]float64, len(stats))
		for f := range use {
			use[f] = math.Exp(-rng.Float64() * 5) // 1 to 150 replicas fit
			fit[f] = 1 / use[f]
		}
		g, _ := e.fitCount(fit)
		p, _ := e.peak(use)
		if math.Abs(g*p-1) > 1e-9 {
			t.Fatalf("g %v and p %v are not reciprocal", g, p)
		}
		memFit := float64(1 + rng.IntN(2*slots))
		cx := append(append([]float64(nil), fit...), memFit)
		an, err := capy.Analyze(cx, cws)
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for k, out := range an.Outputs {
			want := sigmoid(e.alpha() * (g/float64(k+1) - 1))
			if float64(k+1) >= memFit {
				want = 0 // memory must fit with room to spare: an exact fit is refused
			}
			if math.Abs(out-want) > 1e-6 {
				t.Fatalf("trial %d: capacity output %d = %v, want %v (g %v, memory fits %v)", trial, k, out, want, g, memFit)
			}
			if want >= engine.DefaultOutputThreshold {
				held++
			}
		}
		if an.OutputAmount != held {
			t.Fatalf("trial %d: A_out %d, want the %d outputs at or above the threshold", trial, an.OutputAmount, held)
		}
		// Admission: n running replicas, then new ones of random sizes.
		n := rng.IntN(slots)
		ax := make([]float64, 3*slots+len(stats))
		var cost, mem float64
		admitted := 0
		prefix := true
		for k := 0; k < slots; k++ {
			cpu, m := 0.01+0.1*rng.Float64(), 0.08*rng.Float64()
			run := 0.0
			if k < n {
				run = 1
				cost += p
			} else {
				cost += cpu
			}
			mem += m
			ax[k], ax[slots+k], ax[2*slots+k] = cpu, m, run
			want := sigmoid(e.alpha() * (1 - cost))
			if mem >= 1 {
				want = -1 // the memory gate is shut: the output holds no branch
			}
			if prefix && want >= engine.DefaultOutputThreshold {
				admitted++
			} else {
				prefix = false
			}
		}
		copy(ax[3*slots:], use)
		aan, err := adm.Analyze(ax, aws)
		if err != nil {
			t.Fatal(err)
		}
		if aan.InputAmount != admitted {
			t.Fatalf("trial %d: A_in %d, want the %d slots whose queue fits (p %v, n %d)", trial, aan.InputAmount, admitted, p, n)
		}
	}
}

// Labels come from replay: k+1 replicas fit when (k+1) x the per-replica
// peak over the horizon stays within capacity. On a flat series the peak is
// the per-replica share r itself, and the fit features are all 1/r, so
// every label is known from the features.
func TestTrainLabelsFromReplay(t *testing.T) {
	s := smallSettings()
	s.Slots, s.Window, s.Horizon, s.Step = 12, 3, 2, 1
	flat := traces.Series{Name: "flat"}
	for i := 0; i < 40; i++ {
		flat.Times = append(flat.Times, int64(i))
		flat.Values = append(flat.Values, 1)
	}
	stats, err := statisticsByName(s.Statistics)
	if err != nil {
		t.Fatal(err)
	}
	d, err := examples([]traces.Series{flat}, s, stats, rand.New(rand.NewPCG(1, 1)), true)
	if err != nil {
		t.Fatal(err)
	}
	if d.rows == 0 {
		t.Fatal("no examples")
	}
	ones, zeros := 0, 0
	for r := 0; r < d.rows; r++ {
		fit := d.fitRow(r)[0] // cpu_fit_mean = 1 / share
		share := 1 / fit
		if math.Abs(d.peak[r]-share) > 1e-9*share {
			t.Fatalf("row %d: peak %v, want the share %v", r, d.peak[r], share)
		}
		for k := 0; k < s.Slots; k++ {
			want := 0.0
			if float64(k+1)*d.peak[r] <= 1 {
				want = 1
				ones++
			} else {
				zeros++
			}
			if got := d.capacityLabel(r, k); got != want {
				t.Fatalf("row %d (share %v) slot %d: label %v, want %v", r, share, k, got, want)
			}
		}
	}
	if ones == 0 || zeros == 0 {
		t.Fatalf("labels are all one kind (%d ones, %d zeros)", ones, zeros)
	}
}

func TestTrainRejectsBadSettings(t *testing.T) {
	all, err := traces.LoadDir(filepath.Join("..", "engine", "testdata", "traces", "crane"))
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	s.ScaleMax = 2
	if _, err := Train(all, s, nil); err == nil {
		t.Fatal("scale above 1 accepted")
	}
	s = DefaultSettings()
	s.Window = 1
	if _, err := Train(all, s, nil); err == nil {
		t.Fatal("window of 1 accepted")
	}
}

// BenchmarkTrainDefault trains both default processors on the bundled
// series with the default settings, as `go generate ./engine` does. Goal:
// under 2 minutes per op on the project's 2-core machine.
func BenchmarkTrainDefault(b *testing.B) {
	all, err := traces.LoadDir(filepath.Join("..", "engine", "testdata", "traces", "crane"))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := Train(all, DefaultSettings(), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The models embedded in the engine must be the ones this trainer makes
// from the bundled series with the default settings (go generate ./engine).
func TestEmbeddedModelsAreTheTrainedOnes(t *testing.T) {
	all, err := traces.LoadDir(filepath.Join("..", "engine", "testdata", "traces", "crane"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Train(all, DefaultSettings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*engine.Model{res.Admission, res.Capacity} {
		p, err := engine.Builtin(m.Name)
		if err != nil {
			t.Fatal(err)
		}
		d, err := m.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if d != p.Digest() {
			t.Errorf("built-in %s is %s, training with the defaults gives %s: run go generate ./engine", m.Name, p.Digest(), d)
		}
	}
}
