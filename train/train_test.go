package train

import (
	"math"
	"math/rand/v2"
	"path/filepath"
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
	s.Epochs, s.Slots, s.Hidden, s.HiddenPerSlot, s.Window = 3, 8, 8, 2, 30
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
// slot k connected to output k only.
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
	for j, row := range adm.Layers[0].Weights {
		slot := j / s.HiddenPerSlot
		for k := 0; k < s.Slots; k++ {
			if k == slot && !(row[k] > 0) {
				t.Errorf("slot %d -> hidden %d weight %v, want > 0", k, j, row[k])
			}
			if k != slot && row[k] != 0 {
				t.Errorf("slot %d -> hidden %d of slot %d has weight %v, want no edge", k, j, slot, row[k])
			}
		}
	}
	for k, row := range adm.Layers[1].Weights {
		for j, w := range row {
			if j/s.HiddenPerSlot != k && w != 0 {
				t.Errorf("hidden %d -> admit_%d weight %v, want no edge", j, k, w)
			}
		}
	}
}

// Labels come from replay: k+1 replicas fit when (k+1) x the per-replica
// peak over the horizon stays within capacity. On a flat series the peak is
// the per-replica share r itself (read back from the cpu_replica_max
// feature), so every label is known.
func TestTrainLabelsFromReplay(t *testing.T) {
	s := smallSettings()
	s.Slots, s.Window, s.Horizon, s.Step = 12, 3, 2, 1
	flat := traces.Series{Name: "flat"}
	for i := 0; i < 40; i++ {
		flat.Times = append(flat.Times, int64(i))
		flat.Values = append(flat.Values, 1)
	}
	ctx, _, err := examples([]traces.Series{flat}, s, rand.New(rand.NewPCG(1, 1)), true)
	if err != nil {
		t.Fatal(err)
	}
	maxCol := -1
	for i, f := range ContextFeatures {
		if f == engine.FeatCPUReplicaMax {
			maxCol = i
		}
	}
	ones, zeros := 0, 0
	for r := 0; r < ctx.rows; r++ {
		share := ctx.x[r*ctx.width+maxCol]
		for k := 0; k < s.Slots; k++ {
			want := 0.0
			if float64(k+1)*share <= 1 {
				want = 1
				ones++
			} else {
				zeros++
			}
			if got := ctx.y[r*s.Slots+k]; got != want {
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
