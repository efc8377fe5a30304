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
	s := DefaultSettings()
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

// The trained models must keep the structure the method relies on: hidden
// and output biases <= 0, admission slot edges positive, and admission
// slot k connected (through any path) to output k only.
func TestTrainedModelStructure(t *testing.T) {
	all := []traces.Series{synthetic("a", 3000, 1), synthetic("b", 3000, 2), synthetic("c", 3000, 3)}
	s := smallSettings()
	res, err := Train(all, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*engine.Model{res.Admission, res.Capacity} {
		for l, layer := range m.Layers {
			for j, b := range layer.Biases {
				if b > 0 {
					t.Errorf("%s layers[%d].biases[%d] = %v > 0", m.Name, l, j, b)
				}
			}
		}
	}
	adm := res.Admission
	if got := len(adm.Outputs); got != s.Slots {
		t.Fatalf("admission has %d outputs, want %d", got, s.Slots)
	}
	for k := 0; k < s.Slots; k++ {
		if !adm.Inputs[k].Countable || adm.Inputs[k].Name != engine.SlotPrefix+strconv.Itoa(k) {
			t.Fatalf("input %d is %+v, want countable slot_%d", k, adm.Inputs[k], k)
		}
		// Follow every edge out of slot k: all must be positive, and the
		// only output reached must be admit_k.
		reach := map[int]bool{k: true}
		for l, layer := range adm.Layers {
			next := map[int]bool{}
			for v, row := range layer.Weights {
				for u := range reach {
					if w := row[u]; w != 0 {
						if w < 0 {
							t.Errorf("slot %d: layers[%d] edge %d -> %d has weight %v < 0", k, l, u, v, w)
						}
						next[v] = true
					}
				}
			}
			reach = next
		}
		if len(reach) != 1 || !reach[k] {
			t.Errorf("slot %d reaches outputs %v, want only admit_%d", k, reach, k)
		}
	}
	for k := 0; k < s.Slots; k++ {
		if !res.Capacity.Outputs[k].Countable {
			t.Errorf("capacity output %d is not countable", k)
		}
	}
}

// The exported networks compute the trained estimate exactly: output k is
// sigmoid(alpha (g/(k+1) - 1)) with g the min of the scaled fit features,
// in the capacity processor and in every admission slot block.
func TestExportedNetworkIsTheEstimate(t *testing.T) {
	s := DefaultSettings()
	s.Slots = 20
	rng := rand.New(rand.NewPCG(7, 7))
	d := dataset{width: len(ContextFeatures), rows: 1}
	d.x = make([]float64, d.width)
	for f := range d.x {
		d.x[f] = 10
	}
	m := newPeakNet(s, d)
	for f := range m.theta {
		m.theta[f] = rng.NormFloat64()
	}
	m.logAlpha = math.Log(6)
	prov := engine.Provenance{Method: "test"}
	capy, err := engine.NewProcessor(m.exportCapacity(prov))
	if err != nil {
		t.Fatal(err)
	}
	adm, err := engine.NewProcessor(m.exportAdmission(prov))
	if err != nil {
		t.Fatal(err)
	}
	cws, aws := engine.NewWorkspace(capy), engine.NewWorkspace(adm)
	for trial := 0; trial < 200; trial++ {
		x := make([]float64, d.width)
		for f := range x {
			x[f] = math.Exp(rng.Float64() * 5) // 1 to 150 replicas fit
		}
		g, _ := m.estimate(x)
		want := make([]float64, s.Slots)
		for k := range want {
			want[k] = sigmoid(m.alpha() * (g/float64(k+1) - 1))
		}
		an, err := capy.Analyze(x, cws)
		if err != nil {
			t.Fatal(err)
		}
		for k, p := range an.Outputs {
			if math.Abs(p-want[k]) > 1e-6 {
				t.Fatalf("trial %d: capacity output %d = %v, want %v (g %v)", trial, k, p, want[k], g)
			}
		}
		ax := make([]float64, s.Slots+d.width)
		for k := 0; k < s.Slots; k++ {
			ax[k] = 0.1 // every slot holds a replica's demand
		}
		copy(ax[s.Slots:], x)
		aan, err := adm.Analyze(ax, aws)
		if err != nil {
			t.Fatal(err)
		}
		for k, p := range aan.Outputs {
			if math.Abs(p-want[k]) > 1e-5 {
				t.Fatalf("trial %d: admission output %d = %v, want %v (g %v)", trial, k, p, want[k], g)
			}
		}
		if aan.InputAmount != an.OutputAmount {
			t.Fatalf("trial %d: A_in %d, A_out %d: the two processors disagree", trial, aan.InputAmount, an.OutputAmount)
		}
		held := 0
		for _, p := range want {
			if p >= engine.DefaultOutputThreshold {
				held++
			}
		}
		if an.OutputAmount != held {
			t.Fatalf("trial %d: A_out %d, want the %d outputs at or above the threshold", trial, an.OutputAmount, held)
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
	d, err := examples([]traces.Series{flat}, s, rand.New(rand.NewPCG(1, 1)), true)
	if err != nil {
		t.Fatal(err)
	}
	if d.rows == 0 {
		t.Fatal("no examples")
	}
	ones, zeros := 0, 0
	for r := 0; r < d.rows; r++ {
		fit := d.x[r*d.width] // cpu_fit_mean = 1 / share
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
			if got := d.label(r, k); got != want {
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
