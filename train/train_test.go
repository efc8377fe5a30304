package train

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

func syntheticSet() []traces.Series {
	var all []traces.Series
	for i := 0; i < 8; i++ {
		all = append(all, synthetic(string(rune('a'+i)), 1500, uint64(i+1)))
	}
	return all
}

// smallSettings are the defaults, small and fast, with one quantile for
// both processors (CapacityQuantile 0), so that a test sets the loss with
// Quantile alone.
func smallSettings() Settings {
	s := DefaultSettings().withDefaults()
	s.Epochs, s.Slots, s.Window = 3, 8, 30
	s.CapacityQuantile = 0
	s.Average = 0 // one start, which cross-entropy needs; the averaging tests set it
	return s
}

// digestPair is one processor's digests in two training results.
type digestPair struct{ name, a, b string }

// digestPairs gives the admission and the capacity processor's digests in
// results r1 and r2.
func digestPairs(r1, r2 *Result) []digestPair {
	var out []digestPair
	for _, p := range [][2]*engine.Model{{r1.Admission, r2.Admission}, {r1.Capacity, r2.Capacity}} {
		a, _ := p[0].Digest()
		b, _ := p[1].Digest()
		out = append(out, digestPair{p[0].Name, a, b})
	}
	return out
}

func TestTrainIsReproducible(t *testing.T) {
	all := syntheticSet()
	r1, err := Train(all, smallSettings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Train(all, smallSettings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range digestPairs(r1, r2) {
		if d.a != d.b {
			t.Fatalf("%s: two runs with one seed gave %s and %s", d.name, d.a, d.b)
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
	all := syntheticSet()
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
// output k is sigmoid(alpha (1 - m a - sqrt(m) b)), m = k+1, while memory
// fits; admission output k is sigmoid(alpha (1 - C_k)) with C_k the cost of
// the queue up to slot k. Every trunk is checked, without the peak bound
// and with it: capacity output k's cost at most m g max, max the window's
// peak per replica (the statistic max, drawn mostly below the others, so
// that the bound binds at some outputs and not at others); the admission
// processor has no bound (Settings.PeakGrowth).
func TestExportedNetworkIsTheEstimate(t *testing.T) {
	const slots = 20
	stats, err := statisticsByName(DefaultStatistics)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	mlp := newMLPTrunk(len(stats), []int{6, 5}, stats, rng)
	for _, q := range mlp.params() {
		*q += 0.3 * rng.NormFloat64()
	}
	// No hidden layer (Settings.Hidden []int{}): the heads read the
	// statistics twice, through wo and the skip connection (the export
	// dropped wo).
	flat := newMLPTrunk(len(stats), []int{}, stats, rng)
	for _, q := range flat.params() {
		*q += 0.3 * rng.NormFloat64()
	}
	mx := newMaxTrunk(len(stats))
	for f := range mx.theta {
		mx.theta[f] = 0.5 * rng.NormFloat64()
	}
	// Monotone trunks of odd and even groups and units (the trees pair
	// values level by level and carry an odd one through), weights moved
	// off their start.
	var monos []trunk
	for _, shape := range [][2]int{{1, 1}, {7, 2}, {3, 3}, {5, 4}} {
		mo := newMonoTrunk(len(stats), shape[0], shape[1], rng)
		for i := range mo.theta {
			mo.theta[i] += rng.NormFloat64()
		}
		monos = append(monos, mo)
	}
	maxAt := carrierStat(stats)
	if stats[maxAt].Name != "max" {
		t.Fatalf("the default statistics %v do not read max", DefaultStatistics)
	}
	bounded, unbounded := 0, 0     // capacity outputs with the bound, where it binds and where not
	runBounded, ownBounded := 0, 0 // admission trials where it binds on the running replicas, new replicas of the workload whose charge it lowers
	for _, growth := range []float64{0, 1.5} {
		for _, tr := range append([]trunk{mlp, flat, mx}, monos...) {
			p := newProcessor(tr)
			p.logAlpha = math.Log(6)
			prov := engine.Provenance{Method: "test"}
			capy, err := engine.NewProcessor(exportCapacity(p, stats, slots, growth, prov))
			if err != nil {
				t.Fatal(err)
			}
			adm, err := engine.NewProcessor(exportAdmission(p, stats, slots, growth, prov))
			if err != nil {
				t.Fatal(err)
			}
			cws, aws := engine.NewWorkspace(capy), engine.NewWorkspace(adm)
			var c trunkCache
			for trial := 0; trial < 300; trial++ {
				use := make([]float64, len(stats))
				for f := range use {
					use[f] = math.Exp(-1 - rng.Float64()*4)
				}
				use[maxAt] = math.Exp(-3 - rng.Float64()*4)
				a, b := tr.eval(use, &c)
				// runCost is what the exported networks read as m running
				// replicas' CPU.
				runCost := func(m float64) float64 {
					v := m*a + math.Sqrt(m)*b
					if growth > 0 && v > m*growth*use[maxAt] {
						return m * growth * use[maxAt]
					}
					return v
				}
				memShare := 1 / float64(1+rng.IntN(2*slots)) // memFit replicas fit by memory
				cx := append(append([]float64(nil), use...), memShare)
				an, err := capy.Analyze(cx, cws)
				if err != nil {
					t.Fatal(err)
				}
				held := 0
				for k, out := range an.Outputs {
					m := float64(k + 1)
					want := sigmoid(p.alpha() * (1 - runCost(m)))
					if growth > 0 {
						if runCost(m) < m*a+math.Sqrt(m)*b {
							bounded++
						} else {
							unbounded++
						}
					}
					if m*memShare >= 1-memHeadroom-1e-12 {
						want = 0 // memory must fit within 1 - memHeadroom: an exact fit is refused
					}
					if math.Abs(out-want) > 1e-6 {
						t.Fatalf("%T trial %d: capacity output %d = %v, want %v (a %v, b %v, memory %v)", tr, trial, k, out, want, a, b, memShare)
					}
					if want >= engine.DefaultOutputThreshold {
						held++
					}
				}
				if an.OutputAmount != held {
					t.Fatalf("%T trial %d: A_out %d, want the %d outputs at or above the threshold", tr, trial, an.OutputAmount, held)
				}
				// Admission: n running replicas, then new ones of random sizes,
				// some of them the workload's own (at least what it adds to
				// the workload's cost once running, while one runs; with none
				// running, their demand).
				n := rng.IntN(slots)
				ax := make([]float64, 4*slots+len(stats))
				var cost, mem float64
				admitted := 0
				prefix := true
				for k := 0; k < slots; k++ {
					cpu, mm := 0.01+0.1*rng.Float64(), 0.08*rng.Float64()
					run, own := 0.0, 0.0
					asRunning := runCost(float64(k+1)) - runCost(float64(k))
					switch {
					case k < n:
						run = 1
						cost += asRunning
						if growth > 0 && k == n-1 && runCost(float64(n)) < float64(n)*a+math.Sqrt(float64(n))*b {
							runBounded++ // the bound lowers the running replicas' cost
						}
					case rng.IntN(2) == 0:
						own = 1
						if n == 0 {
							cost += cpu // nothing runs: its demand
							break
						}
						cost += math.Max(cpu, asRunning)
						if unboundedStep := a + (math.Sqrt(float64(k+1))-math.Sqrt(float64(k)))*b; growth > 0 && asRunning < unboundedStep && cpu < unboundedStep {
							ownBounded++ // the bound lowers this replica's charge
						}
					default:
						cost += cpu
					}
					mem += mm
					ax[k], ax[slots+k], ax[2*slots+k], ax[3*slots+k] = cpu, mm, run, own
					want := sigmoid(p.alpha() * (1 - cost))
					if prefix && mem < 1-memHeadroom && want >= engine.DefaultOutputThreshold {
						admitted++
					} else {
						prefix = false
					}
				}
				copy(ax[4*slots:], use)
				aan, err := adm.Analyze(ax, aws)
				if err != nil {
					t.Fatal(err)
				}
				if aan.InputAmount != admitted {
					t.Fatalf("%T, growth %v, trial %d: A_in %d, want the %d slots whose queue fits (a %v, b %v, n %d)", tr, growth, trial, aan.InputAmount, admitted, a, b, n)
				}
			}
		}
	}
	if bounded == 0 || unbounded == 0 {
		t.Fatalf("with the peak bound, %d capacity outputs where it binds and %d where it does not: the trials test the bound only if both occur", bounded, unbounded)
	}
	if runBounded == 0 || ownBounded == 0 {
		t.Fatalf("with the peak bound, %d admission trials where it binds on the running replicas and %d new replicas of the workload whose charge it lowers: the trials test the admission bound only if both occur", runBounded, ownBounded)
	}

}

// The learned trunks' gradient is the loss's: checked against finite
// differences.
func TestTrunkGradient(t *testing.T) {
	stats, _ := statisticsByName(DefaultStatistics)
	rng := rand.New(rand.NewPCG(9, 9))
	s := DefaultSettings()
	s.Slots = 12
	d := dataset{width: len(stats), slots: s.Slots}
	for r := 0; r < 4; r++ {
		for f := 0; f < len(stats); f++ {
			d.use = append(d.use, 0.02+0.1*rng.Float64())
		}
		for m := 1; m <= s.Slots; m++ {
			d.peaks = append(d.peaks, float32(0.12*float64(m)*(0.8+0.4*rng.Float64())))
		}
		d.running = append(d.running, 1+rng.IntN(6))
		d.demand = append(d.demand, 0.1)
		d.rows++
	}
	for _, tc := range []struct {
		name     string
		lossFn   lossFunc
		trunk    func() trunk
		quantile float64
	}{
		{"capacity, mlp", capacityLoss, func() trunk { return newMLPTrunk(len(stats), []int{5}, stats, rng) }, 0},
		{"admission, mlp", admissionLoss, func() trunk { return newMLPTrunk(len(stats), []int{5}, stats, rng) }, 0},
		{"capacity, monotone", capacityLoss, func() trunk { return newMonoTrunk(len(stats), 3, 2, rng) }, 0},
		{"admission, monotone", admissionLoss, func() trunk { return newMonoTrunk(len(stats), 3, 2, rng) }, 0},
		{"capacity, mlp, quantile 0.9", capacityLoss, func() trunk { return newMLPTrunk(len(stats), []int{5}, stats, rng) }, 0.9},
		{"admission, mlp, quantile 0.9", admissionLoss, func() trunk { return newMLPTrunk(len(stats), []int{5}, stats, rng) }, 0.9},
		{"capacity, monotone, quantile 0.6", capacityLoss, func() trunk { return newMonoTrunk(len(stats), 3, 2, rng) }, 0.6},
		{"admission, monotone, quantile 0.6", admissionLoss, func() trunk { return newMonoTrunk(len(stats), 3, 2, rng) }, 0.6},
	} {
		lossFn := tc.lossFn
		s.Quantile = tc.quantile
		p := newProcessor(tc.trunk())
		for _, q := range p.params() {
			*q += 0.2 * rng.NormFloat64()
		}
		params := p.params()
		grad := make([]float64, len(params))
		var c trunkCache
		total := func() float64 {
			var l float64
			for r := 0; r < d.rows; r++ {
				l += lossFn(p, &d, r, s, &c, nil)
			}
			return l
		}
		for r := 0; r < d.rows; r++ {
			lossFn(p, &d, r, s, &c, grad)
		}
		if l := total(); !(l > 0) {
			t.Fatalf("%s: loss %v, want > 0 (no slot read)", tc.name, l)
		}
		for i, q := range params {
			old := *q
			const h = 1e-6
			*q = old + h
			up := total()
			*q = old - h
			down := total()
			*q = old
			num := (up - down) / (2 * h)
			if math.Abs(num-grad[i]) > 1e-4*math.Max(1, math.Abs(num)) {
				t.Fatalf("%s: parameter %d: gradient %v, finite difference %v", tc.name, i, grad[i], num)
			}
		}
	}
}

// Labels come from replay: m replicas fit when their summed usage over the
// horizon stays within capacity. On a flat series every replica uses the
// share r, so m fit exactly when m r <= 1.
func TestTrainLabelsFromReplay(t *testing.T) {
	s := smallSettings()
	s.Slots, s.Window, s.Horizon, s.Step = 12, 3, 2, 1
	s.ScaleJitter = 0 // shifted copies of a flat series are the series
	flat := traces.Series{Name: "flat"}
	for i := 0; i < 40; i++ {
		flat.Times = append(flat.Times, int64(i))
		flat.Values = append(flat.Values, 1)
	}
	stats, err := statisticsByName(s.Statistics)
	if err != nil {
		t.Fatal(err)
	}
	d, err := examples([]traces.Series{flat}, s, stats, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if d.rows == 0 {
		t.Fatal("no examples")
	}
	ones, zeros := 0, 0
	for r := 0; r < d.rows; r++ {
		share := d.useRow(r)[0] // the mean share r
		for k := 0; k < s.Slots; k++ {
			want := 0.0
			if float64(k+1)*share <= 1+1e-6 {
				want = 1
				ones++
			} else {
				zeros++
			}
			if got := d.capacityLabel(r, k); got != want && math.Abs(float64(k+1)*share-1) > 1e-5 {
				t.Fatalf("row %d (share %v) slot %d: label %v, want %v", r, share, k, got, want)
			}
		}
	}
	if ones == 0 || zeros == 0 {
		t.Fatalf("labels are all one kind (%d ones, %d zeros)", ones, zeros)
	}
}

// Multiplexed replicas peak lower together than one replica times their
// number, and the split keeps an identity on one side.
func TestMultiplexAndIdentitySplit(t *testing.T) {
	s := DefaultSettings()
	s.Slots = 30
	v := make([]float64, 400)
	for i := range v {
		v[i] = 0.2
		if i%40 >= 20 && i%40 < 23 {
			v[i] = 1 // short bursts
		}
	}
	rt := replicas("bursty", v, s)
	single := 0.0
	for _, x := range v {
		single = math.Max(single, x)
	}
	peak30 := 0.0
	for _, x := range rt.cum[29] {
		peak30 = math.Max(peak30, float64(x))
	}
	if peak30 >= 0.9*30*single {
		t.Fatalf("30 shifted replicas peak at %v, not below 30 x %v", peak30, single)
	}
	f := Family{Name: "f"}
	for day := 0; day < 3; day++ {
		for vm := 0; vm < 20; vm++ {
			f.Series = append(f.Series, traces.Series{Name: fmt.Sprintf("vm%d@%d", vm, day)})
			f.IDs = append(f.IDs, fmt.Sprintf("vm%d", vm))
		}
	}
	all := make([]bool, len(f.Series))
	for i := range all {
		all[i] = true
	}
	tr, va, te := f.split(s.withDefaults(), all)
	side := map[string]string{}
	for name, idx := range map[string][]int{"train": tr, "validate": va, "held out": te} {
		for _, i := range idx {
			if prev, ok := side[f.IDs[i]]; ok && prev != name {
				t.Fatalf("identity %s is on both %s and %s", f.IDs[i], prev, name)
			}
			side[f.IDs[i]] = name
		}
	}
	if len(tr) == 0 || len(va) == 0 || len(te) == 0 {
		t.Fatalf("split %d/%d/%d", len(tr), len(va), len(te))
	}
}

func TestTrainRejectsBadSettings(t *testing.T) {
	all, err := traces.LoadDir(filepath.Join("..", "engine", "testdata", "traces", "crane"))
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	s.ScaleMax = 2
	if _, err := Train(all, s, nil); err == nil || !strings.Contains(err.Error(), "scale: [") {
		t.Fatalf("scale above 1: %v, want an error naming scale", err)
	}
	s = DefaultSettings()
	s.Window = 1
	if _, err := Train(all, s, nil); err == nil || !strings.Contains(err.Error(), "window: 1") {
		t.Fatalf("a window of 1: %v, want an error naming window", err)
	}
	for _, hidden := range [][]int{{7}, {7, 2, 2}, {}, {0, 2}, {7, 0}} {
		s = MonotoneSettings()
		s.Hidden = hidden
		if _, err := Train(all, s, nil); err == nil || !strings.Contains(err.Error(), "groups, then units per group") {
			t.Fatalf("monotone trunk of shape %v: %v, want an error naming its two numbers", hidden, err)
		}
	}
	for _, stat := range slices.Sorted(maps.Keys(canFall)) {
		s = MonotoneSettings()
		s.Statistics = []string{"max", stat}
		if _, err := Train(all, s, nil); err == nil || !strings.Contains(err.Error(), "statistics: "+stat+" can fall as usage rises (") {
			t.Fatalf("monotone trunk reading %s: %v, want an error naming the statistic and why", stat, err)
		}
	}
	if err := MonotoneSettings().Check(); err != nil {
		t.Fatalf("the monotone trunk's default settings: %v", err)
	}
	// A monotone shape too large for the engine names the groups and
	// units, not slots the command line does not set.
	s = MonotoneSettings()
	s.Hidden = []int{24, 12}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "hidden: 24 groups of 12 units") || !strings.Contains(err.Error(), "use fewer groups or units") {
		t.Fatalf("monotone trunk of 24 groups of 12 units: %v, want an error naming the shape", err)
	}
	// Unset statistics and shape are the trunk's own defaults.
	if got := (Settings{Trunk: TrunkMonotone}).withDefaults(); !slices.Equal(got.Statistics, DefaultMonotoneStatistics) || !slices.Equal(got.Hidden, DefaultHidden(TrunkMonotone)) {
		t.Fatalf("monotone trunk with nothing else set: statistics %v, hidden %v", got.Statistics, got.Hidden)
	}
	if err := (Settings{Trunk: TrunkMonotone}).Check(); err != nil {
		t.Fatalf("monotone trunk with nothing else set: %v", err)
	}
	s = DefaultSettings()
	s.Restarts = 65
	if _, err := Train(all, s, nil); err == nil || !strings.Contains(err.Error(), "restarts") {
		t.Fatalf("65 restarts: %v, want an error naming restarts", err)
	}
	// Settings whose admission model would pass the engine's parameter
	// limit are refused before training (it used to train in full, then
	// fail at export): within Settings' own bounds on slots and hidden.
	for _, tc := range []struct {
		name   string
		slots  int
		hidden []int
	}{
		{"1024 slots", 1024, nil},
		{"200 slots", 200, nil},
	} {
		s = DefaultSettings()
		s.Slots = tc.slots
		if tc.hidden != nil {
			s.Hidden = tc.hidden
		}
		start := time.Now()
		_, err := Train(all, s, nil)
		if err == nil || !strings.Contains(err.Error(), "slots: ") || !strings.Contains(err.Error(), "parameters") || !strings.Contains(err.Error(), "at most 1") {
			t.Fatalf("%s: %v, want an error saying the model would pass the engine's parameter limit", tc.name, err)
		}
		if err := s.Check(); err == nil {
			t.Fatalf("%s: Check accepts the settings", tc.name)
		}
		t.Logf("%s: refused in %s: %v", tc.name, time.Since(start).Round(time.Millisecond), err)
		// The most slots the error names load, and one more does not.
		m := regexp.MustCompile(`at most (\d+) slots`).FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("%s: the error names no slot limit: %v", tc.name, err)
		}
		most, _ := strconv.Atoi(m[1])
		s.Slots = most
		if err := s.Check(); err != nil {
			t.Fatalf("%s: the %d slots the error allows are refused: %v", tc.name, most, err)
		}
		s.Slots = most + 1
		if err := s.Check(); err == nil {
			t.Fatalf("%s: %d slots, one past the limit named, are accepted", tc.name, most+1)
		}
	}
	if err := DefaultSettings().Check(); err != nil {
		t.Fatalf("the default settings: %v", err)
	}
}

// bundledFamilies are the families go generate ./engine trains on.
func bundledFamilies(t testing.TB) []Family {
	var fams []Family
	for _, name := range []string{"crane", "planetlab"} {
		ss, err := traces.LoadDir(filepath.Join("..", "engine", "testdata", "traces", name))
		if err != nil {
			t.Fatal(err)
		}
		fams = append(fams, Family{Name: name, Series: ss})
	}
	return fams
}

// BenchmarkTrainDefault trains both default processors on the bundled
// series with the default settings, as `go generate ./engine` does.
func BenchmarkTrainDefault(b *testing.B) {
	fams := bundledFamilies(b)
	for i := 0; i < b.N; i++ {
		if _, err := TrainFamilies(fams, DefaultSettings(), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The models embedded in the engine must be the ones this trainer makes
// from the bundled series with the default settings (go generate ./engine).
func TestEmbeddedModelsAreTheTrainedOnes(t *testing.T) {
	res, err := TrainFamilies(bundledFamilies(t), DefaultSettings(), nil)
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

// Restarts keep the start with the lowest validation loss; the first start
// is the single run, and the choice does not depend on which parallel
// start finishes first.
func TestTrainRestartsKeepTheBestStart(t *testing.T) {
	for _, q := range []float64{0, 0.9} {
		t.Run(lossName(q), func(t *testing.T) { testRestartsKeepTheBestStart(t, q) })
	}
}

// lossName is the metrics' name for the loss of quantile q (0: cross-entropy).
func lossName(q float64) string {
	if q > 0 {
		return "pinball"
	}
	return "bce"
}

// trainOneStartAnd trains syntheticSet with smallSettings at quantile q
// from one start, then again with edit applied on top; it returns both
// results and the edited settings.
func trainOneStartAnd(t *testing.T, q float64, edit func(*Settings)) (single, edited *Result, s Settings) {
	t.Helper()
	base := smallSettings()
	base.Quantile, base.Average = q, 0
	single, err := Train(syntheticSet(), base, nil)
	if err != nil {
		t.Fatal(err)
	}
	s = base
	edit(&s)
	edited, err = Train(syntheticSet(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return single, edited, s
}

func testRestartsKeepTheBestStart(t *testing.T, q float64) {
	single, r1, s := trainOneStartAnd(t, q, func(s *Settings) { s.Restarts = 4 })
	r2, err := Train(syntheticSet(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	val, restarts := "val_"+lossName(q), "restart_val_"+lossName(q)
	for i, m := range []*engine.Model{r1.Admission, r1.Capacity} {
		one := []*engine.Model{single.Admission, single.Capacity}[i]
		met := m.Provenance.Metrics
		var losses []float64
		for _, f := range strings.Fields(met[restarts]) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatalf("%s: %s %q: %v", m.Name, restarts, met[restarts], err)
			}
			losses = append(losses, v)
		}
		if len(losses) != 4 {
			t.Fatalf("%s: %d restart losses (%q), want 4", m.Name, len(losses), met[restarts])
		}
		if got, want := strconv.FormatFloat(losses[0], 'f', 5, 64), one.Provenance.Metrics[val]; got != want {
			t.Errorf("%s: first start's validation loss %s, a single run's %s", m.Name, got, want)
		}
		chosen, err := strconv.Atoi(met["restart_chosen"])
		if err != nil || chosen < 1 || chosen > 4 {
			t.Fatalf("%s: restart_chosen %q", m.Name, met["restart_chosen"])
		}
		if met[val] != strconv.FormatFloat(losses[chosen-1], 'f', 5, 64) {
			t.Errorf("%s: %s %s is not start %d's %v", m.Name, val, met[val], chosen, losses[chosen-1])
		}
		for j, l := range losses {
			if l < losses[chosen-1] {
				t.Errorf("%s: kept start %d (%v) but start %d has %v", m.Name, chosen, losses[chosen-1], j+1, l)
			}
		}
		d1, _ := m.Digest()
		d2, _ := []*engine.Model{r2.Admission, r2.Capacity}[i].Digest()
		if d1 != d2 {
			t.Errorf("%s: two runs with 4 restarts gave %s and %s", m.Name, d1, d2)
		}
	}
}

// TestTrainWithoutValidation: with no series left to validate, early
// stopping reads the training loss, and the models say so instead of
// giving that loss as a validation loss ("val_bce").
func TestTrainWithoutValidation(t *testing.T) {
	for _, q := range []float64{0, 0.9} {
		l := lossName(q)
		s := smallSettings()
		s.NoHeldOut, s.HeldOutShare, s.Quantile = true, 0, q
		one := []traces.Series{synthetic("a", 1500, 1)} // one identity: none to validate
		res, err := Train(one, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []*engine.Model{res.Admission, res.Capacity} {
			met := m.Provenance.Metrics
			if _, ok := met["val_"+l]; ok || met["early_stopping"] != NoValidationNote || met["stop_train_"+l] == "" || met["val_examples"] != "0" {
				t.Errorf("%s: metrics %v; want no val_%s, early_stopping %q and stop_train_%s", m.Name, met, l, NoValidationNote, l)
			}
		}
		if q > 0 {
			// A mean of starts has no stopping loss of its own: each
			// start's is given, and the mean's loss on the training set.
			s.Average = 2
			avg, err := Train(one, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []*engine.Model{avg.Admission, avg.Capacity} {
				met := m.Provenance.Metrics
				_, val := met["val_"+l]
				_, stop := met["stop_train_"+l]
				_, avgVal := met["average_val_"+l]
				if val || stop || avgVal || len(strings.Fields(met["average_train_"+l])) != 2 || met["train_"+l] == "" || met["early_stopping"] != NoValidationNote {
					t.Errorf("%s, mean of 2 starts: metrics %v; want train_%s, each start's average_train_%s, the note, and no val_, stop_train_ or average_val_", m.Name, met, l, l)
				}
			}
		}
		s = smallSettings()
		s.Quantile = q
		with, err := Train(syntheticSet(), s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if met := with.Capacity.Provenance.Metrics; met["val_"+l] == "" || met["early_stopping"] != "" {
			t.Errorf("with validation series: metrics %v; want val_%s and no early_stopping note", met, l)
		}
	}
}

// TestAdmissionQueuesWhateverTheStatistics: the admission examples' queues
// (how many replicas run) come from the window's mean whatever statistics
// the trunk reads; they came from the first one read, so the ablation
// without the level (mean_std2 first) trained on other queues.
func TestAdmissionQueuesWhateverTheStatistics(t *testing.T) {
	s := smallSettings()
	series := syntheticSet()[:3]
	build := func(names ...string) dataset {
		t.Helper()
		stats, err := statisticsByName(names)
		if err != nil {
			t.Fatal(err)
		}
		d, err := examples(series, s, stats, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	all := build(DefaultSettings().Statistics...)
	for _, names := range [][]string{{"mean_std2", "p95", "max"}, {"max", "mean"}} {
		d := build(names...)
		if !slices.Equal(d.running, all.running) {
			t.Errorf("statistics %v: the queues differ from the default statistics' (%d rows)", names, d.rows)
		}
	}
}

// TestFitRefusesAnUndefinedValidationLoss: a validation loss that is NaN
// is never an improvement, so the untrained weights were kept and exported
// as the model; it is an error naming the epoch.
func TestFitRefusesAnUndefinedValidationLoss(t *testing.T) {
	s := smallSettings()
	stats, rng, tr, val := fitData(t, s)
	for i := range val.use {
		val.use[i] = math.NaN()
	}
	p := newProcessor(newMLPTrunk(len(stats), s.Hidden, stats, rng))
	_, err := fit(p, &tr, &val, s, rng, capacityLoss, "capacity", nil)
	if err == nil || !strings.Contains(err.Error(), "train capacity: the validation loss is NaN at epoch 1") {
		t.Fatalf("fit: %v; want the NaN validation loss refused", err)
	}
}

// TestFitReportsTheKeptWeightsTrainingLoss: the training loss reported is
// the kept weights' mean over the training set; it was the running loss
// of the last epoch run, whose weights moved during it and could be
// epochs later than the ones kept.
func TestFitReportsTheKeptWeightsTrainingLoss(t *testing.T) {
	s := smallSettings()
	s.Epochs, s.Patience = 8, 8 // run every epoch: the kept one is seldom the last
	stats, rng, tr, val := fitData(t, s)
	for _, c := range []struct {
		name string
		loss lossFunc
	}{{"capacity", capacityLoss}, {"admission", admissionLoss}} {
		p := newProcessor(newMLPTrunk(len(stats), s.Hidden, stats, rng))
		res, err := fit(p, &tr, &val, s, rng, c.loss, c.name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := meanLoss(p, &tr, s, c.loss); res.trainLoss != want || math.IsNaN(want) {
			t.Errorf("%s: training loss %v; the kept weights' (epoch %d of %d) mean loss on the training set is %v", c.name, res.trainLoss, res.bestEpoch, res.epochs, want)
		}
		if want := meanLoss(p, &val, s, c.loss); res.valLoss != want {
			t.Errorf("%s: validation loss %v; the kept weights' is %v", c.name, res.valLoss, want)
		}
	}
}

// TestALoneSeriesTrains: a family of one series trains on it, nothing held
// out, whatever its name (the split by identity held some names out, and
// then refused to train for want of a training series).
func TestALoneSeriesTrains(t *testing.T) {
	s := smallSettings()
	s.Epochs = 1
	for i := range 6 {
		name := fmt.Sprintf("lone%d", i)
		res, err := TrainFamilies([]Family{{Name: "fam", Series: []traces.Series{synthetic(name, 1500, 1)}}}, s, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.TrainSeries) != 1 || len(res.HeldOut) != 0 {
			t.Errorf("%s: trained on %v, held out %v; want it trained, nothing held out", name, res.TrainSeries, res.HeldOut)
		}
	}
}

// TestSeriesWithoutExamplesAreLeftOut: a series too short for the window
// and horizon, idle throughout (a public trace's idle VM), or with a
// sample that would pass the engine's bounds (an outlier, or a change of
// units inside the file) is left out and reported, naming the sample's
// time, as simulate leaves it out of a replay; each failed the whole
// training (the outlier naming an internal sample index).
func TestSeriesWithoutExamplesAreLeftOut(t *testing.T) {
	s := smallSettings()
	s.Epochs = 1
	all := syntheticSet()
	idle := traces.Series{Name: "idle", Family: "fam", Times: all[0].Times, Values: make([]float64, len(all[0].Values))}
	short := traces.Series{Name: "short", Family: "fam", Times: all[0].Times[:10], Values: all[0].Values[:10]}
	spike := traces.Series{Name: "spike", Family: "fam", Times: all[0].Times, Values: slices.Clone(all[0].Values)}
	at := len(spike.Values) / 2
	spike.Values[at] = 1e12
	series := append(append([]traces.Series(nil), all...), idle, short, spike)
	// Every series trains or validates: none held out.
	s.NoHeldOut, s.HeldOutShare = true, 0
	res, err := TrainFamilies([]Family{{Name: "fam", Series: series}}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, sk := range res.Skipped {
		got[sk.Family+"/"+sk.Series] = sk.Reason
	}
	if len(got) != 3 || !strings.Contains(got["fam/idle"], "too little usage to learn from") || !strings.Contains(got["fam/short"], "10 samples, fewer than window") {
		t.Errorf("left out %v, want fam/idle (no usage), fam/short (too short) and fam/spike", got)
	}
	if want := fmt.Sprintf("the sample at time %d is ", spike.Times[at]); !strings.HasPrefix(got["fam/spike"], want) || !strings.Contains(got["fam/spike"], "an outlier, or a change of units") {
		t.Errorf("the outlier's reason %q, want it to begin %q and say what it may be", got["fam/spike"], want)
	}
	// The cut is where a window could pass the engine's bound: a spike at
	// twice it is left out, one at half of it trains.
	norm, err := traces.Normalize(all[0], 1)
	if err != nil {
		t.Fatal(err)
	}
	p99 := all[0].Values[at] / norm.Values[at]
	cut := engine.MaxResource / exampleReplicaMHz(s) // in p99s
	for _, tc := range []struct {
		times float64
		out   bool
	}{{2, true}, {0.5, false}} {
		near := traces.Series{Name: "near", Family: "fam", Times: all[0].Times, Values: slices.Clone(all[0].Values)}
		near.Values[at] = tc.times * cut * p99
		res, err := TrainFamilies([]Family{{Name: "fam", Series: append(append([]traces.Series(nil), all...), near)}}, s, nil)
		if err != nil {
			t.Fatalf("a spike at %v times the cut: %v", tc.times, err)
		}
		if out := len(res.Skipped) == 1 && res.Skipped[0].Series == "near"; out != tc.out || (!tc.out && len(res.Skipped) != 0) {
			t.Errorf("a spike at %v times the cut: left out %v, want it left out: %v", tc.times, res.Skipped, tc.out)
		}
	}
	// Neither trained nor validated: the sides and the provenance say so.
	fs := res.Families[0]
	for _, side := range [][]string{res.TrainSeries, fs.Train, fs.Validate} {
		if slices.Contains(side, "idle") || slices.Contains(side, "short") || slices.Contains(side, "spike") {
			t.Errorf("a series left out is on a side: %v", side)
		}
	}
	if len(fs.LeftOut) != 3 {
		t.Errorf("family left out %v, want idle, short and spike", fs.LeftOut)
	}
	// Nothing else: the error says every series was left out, and why.
	_, err = TrainFamilies([]Family{{Name: "fam", Series: []traces.Series{idle, short}}}, s, nil)
	if err == nil || !strings.Contains(err.Error(), "every one was left out") || !strings.Contains(err.Error(), "fam/idle: too little usage") {
		t.Errorf("only series without examples: err %v", err)
	}
	if d := strings.Join(res.Capacity.Provenance.Data, "\n"); !strings.Contains(d, "3 left out: no example") {
		t.Errorf("provenance data %q does not count the series left out", d)
	}
}

// TestUnusableSeriesTakeNoSide: series no example can come from are left
// out before the split, so they change no side: the sides are those of the
// usable series alone, and none is listed as held out. Taken into the
// split, five short files that hashed to the validation side left nothing
// to validate once they were dropped (a user's trial: early stopping fell
// back to the training loss, and a series moved to the training side).
func TestUnusableSeriesTakeNoSide(t *testing.T) {
	s := smallSettings()
	s.Epochs = 1
	usable := syntheticSet()[:4]
	base, err := TrainFamilies([]Family{{Name: "fam", Series: usable}}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Families[0].Validate) == 0 {
		t.Fatalf("the usable series alone validate none: %+v", base.Families[0])
	}
	series := append([]traces.Series(nil), usable...)
	for i := range 40 {
		short := usable[0]
		short.Name = fmt.Sprintf("short-%02d", i)
		short.Times, short.Values = short.Times[:20], short.Values[:20]
		series = append(series, short)
	}
	res, err := TrainFamilies([]Family{{Name: "fam", Series: series}}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, want := res.Families[0], base.Families[0]
	if !slices.Equal(got.Train, want.Train) || !slices.Equal(got.Validate, want.Validate) || !slices.Equal(got.HeldOut, want.HeldOut) {
		t.Errorf("with 40 short series: train %v, validate %v, held out %v; want %v, %v, %v (the usable series' sides)",
			got.Train, got.Validate, got.HeldOut, want.Train, want.Validate, want.HeldOut)
	}
	if len(got.LeftOut) != 40 || len(res.Skipped) != 40 {
		t.Errorf("left out %d, skipped %d; want the 40 short series", len(got.LeftOut), len(res.Skipped))
	}
	if _, ok := res.Capacity.Provenance.Metrics["early_stopping"]; ok {
		t.Error("early stopping fell back to the training loss: no series left to validate")
	}
}

// TestHeldOutAsSimulateSplits: the held-out side is split over every
// series, as simulate --split test splits the same files, so a series a
// replay holds out is never trained on, whatever series are left out as
// unusable. Two usable series that both hash to the held-out side beside a
// short one on the training side: split over the usable ones alone, the
// rule that no side is empty moved one of them to training.
func TestHeldOutAsSimulateSplits(t *testing.T) {
	s := smallSettings()
	s.Epochs = 1
	// Names by their side in a split of many (no side empty, so no name
	// is moved).
	var names []traces.Series
	for i := range 400 {
		names = append(names, traces.Series{Name: fmt.Sprintf("vm-%03d", i)})
	}
	trainSide, testSide := traces.SplitByName(names, s.HeldOutShare, s.SplitSeed)
	base := syntheticSet()
	u1, u2, short := base[0], base[1], base[2]
	u1.Name, u2.Name, short.Name = testSide[0].Name, testSide[1].Name, trainSide[0].Name
	short.Times, short.Values = short.Times[:20], short.Values[:20]
	series := []traces.Series{u1, u2, short}
	_, replayHeld := traces.SplitByName(series, s.HeldOutShare, s.SplitSeed)
	if len(replayHeld) != 2 {
		t.Fatalf("the premise fails: a replay holds out %v, want %s and %s", replayHeld, u1.Name, u2.Name)
	}
	res, err := TrainFamilies([]Family{{Name: "fam", Series: series}}, s, nil)
	if err == nil {
		for _, name := range res.TrainSeries {
			if name == u1.Name || name == u2.Name {
				t.Fatalf("trained on %s, which a replay of these files holds out (trained on %v)", name, res.TrainSeries)
			}
		}
		return
	}
	// The two usable series were held out, not left out: the error says
	// the split left none, and names the short one as left out.
	if msg := err.Error(); !strings.Contains(msg, "no training series: the split by identity") || !strings.Contains(msg, "fam: 2 held out") ||
		!strings.Contains(msg, "1 more left out") || !strings.Contains(msg, short.Name) || strings.Contains(msg, "every one was left out") {
		t.Fatalf("error %v, want no training series, the split holding out 2, %s left out", err, short.Name)
	}
}

// fitData is the examples fit's tests train and validate on: three
// synthetic series to train, a fourth to validate, with s's statistics.
func fitData(t *testing.T, s Settings) ([]Statistic, *rand.Rand, dataset, dataset) {
	t.Helper()
	stats, err := statisticsByName(s.Statistics)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	all := syntheticSet()
	tr, err := examples(all[:3], s, stats, rng)
	if err != nil {
		t.Fatal(err)
	}
	val, err := examples(all[3:4], s, stats, rng)
	if err != nil {
		t.Fatal(err)
	}
	return stats, rng, tr, val
}

// TestLeftOutByPlace: two series of one name (a VM's days given apart,
// one identity through Family.IDs), one of them too short: the other one
// trained and is listed so (taken off by name, both went).
func TestLeftOutByPlace(t *testing.T) {
	s := smallSettings()
	s.Epochs = 1
	s.NoHeldOut, s.HeldOutShare = true, 0
	all := syntheticSet()
	day1 := all[0]
	day1.Name = "a"
	day2 := traces.Series{Name: "a", Times: day1.Times[:10], Values: day1.Values[:10]}
	series := append([]traces.Series{day1, day2}, all[1:]...)
	ids := make([]string, len(series))
	for i, x := range series {
		ids[i] = x.Name
	}
	res, err := TrainFamilies([]Family{{Name: "fam", Series: series, IDs: ids}}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := res.Families[0]
	n := 0
	for _, side := range [][]string{fs.Train, fs.Validate} {
		for _, name := range side {
			if name == "a" {
				n++
			}
		}
	}
	if n != 1 || len(fs.LeftOut) != 1 || fs.LeftOut[0] != "a" {
		t.Errorf("sides %v / %v, left out %v; want one series a trained or validated, one left out", fs.Train, fs.Validate, fs.LeftOut)
	}
}

// TestHeadUse counts the examples on which each trunk head is open, and
// names a head closed on every one (the default capacity model's
// dispersion head was, unseen, until this report).
func TestHeadUse(t *testing.T) {
	stats, _ := statisticsByName([]string{"mean", "max"})
	// No hidden layer: a and b are the skip connection's sums.
	tr := newMLPTrunk(2, nil, stats, rand.New(rand.NewPCG(1, 1)))
	for i := range tr.wo {
		tr.wo[i] = 0
	}
	set := func(a0, a1, b0, b1 float64) { tr.ws[0], tr.ws[1], tr.ws[2], tr.ws[3] = a0, a1, b0, b1 }
	d := dataset{width: 2, slots: 1}
	for _, row := range [][2]float64{{0.1, 0.3}, {0.2, 0.1}, {0.3, 0.2}} {
		d.use = append(d.use, row[0], row[1])
		d.rows++
	}
	p := newProcessor(tr)
	cases := []struct {
		name           string
		a0, a1, b0, b1 float64
		level, disp    int
		closed         []string
	}{
		{"both open", 1, 0, 0, 1, 3, 3, nil},
		{"b open where max > mean", 1, 0, -1, 1, 3, 1, nil},
		{"b closed everywhere", 1, 0, 0, -1, 3, 0, []string{"dispersion"}},
		{"a closed everywhere", -1, 0, 0, 1, 0, 3, []string{"level"}},
		{"both closed", 0, 0, 0, 0, 0, 0, []string{"level", "dispersion"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set(tc.a0, tc.a1, tc.b0, tc.b1)
			h := headUse("capacity", "validation", p, &d)
			if h.Examples != 3 || h.LevelOpen != tc.level || h.DispersionOpen != tc.disp || !h.HasDispersion {
				t.Fatalf("head use %+v; want 3 examples, level open on %d, dispersion on %d", h, tc.level, tc.disp)
			}
			if got := h.Closed(); !slices.Equal(got, tc.closed) {
				t.Errorf("closed %q, want %q", got, tc.closed)
			}
		})
	}
	// The max-of-predictors has no dispersion head: never reported closed.
	mx := newProcessor(newMaxTrunk(2))
	h := headUse("admission", "validation", mx, &d)
	if h.HasDispersion || h.DispersionOpen != 0 || h.LevelOpen != 3 || len(h.Closed()) != 0 {
		t.Errorf("max trunk: %+v, closed %q; want no dispersion head, level open on 3, none closed", h, h.Closed())
	}
	if got := (HeadUse{HasDispersion: true}).Closed(); got != nil {
		t.Errorf("no examples: closed %q, want none (nothing was counted)", got)
	}
}

// TestTrainReportsHeadUse: Train counts both processors' heads on the
// validation examples, or on the training ones when none validate.
func TestTrainReportsHeadUse(t *testing.T) {
	res, err := Train(syntheticSet(), smallSettings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Heads) != 2 || res.Heads[0].Processor != "capacity" || res.Heads[1].Processor != "admission" {
		t.Fatalf("heads %+v; want capacity, then admission", res.Heads)
	}
	for _, h := range res.Heads {
		if h.On != "validation" || h.Examples != res.ValExamples || h.Examples == 0 || h.LevelOpen == 0 || h.LevelOpen > h.Examples || h.DispersionOpen > h.Examples {
			t.Errorf("%+v; want counts over the %d validation examples, the level open on some", h, res.ValExamples)
		}
	}
	s := smallSettings()
	s.NoHeldOut, s.HeldOutShare = true, 0
	one, err := Train([]traces.Series{synthetic("a", 1400, 1)}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range one.Heads {
		if h.On != "training" || h.Examples != one.Examples {
			t.Errorf("without validation: %+v; want counts over the %d training examples", h, one.Examples)
		}
	}
}

// TestQuantileLossCoverage: trained on the quantile loss at tau, each
// processor's cost lies at or above what the replicas take in about a
// share tau of the slots the loss reads (those whose usage lies within
// the band of usage it reads), on its own training set: the cost is that
// quantile, not the point where the fit labels flip, and it moves with tau.
func TestQuantileLossCoverage(t *testing.T) {
	s := smallSettings()
	s.Epochs, s.Patience = 150, 150
	stats, _, tr, _ := fitData(t, s)
	coverage := func(p *processor, used func(r, k int) float64, cost func(r, k int, a, b float64) float64) float64 {
		var c trunkCache
		var in, n int
		for r := 0; r < tr.rows; r++ {
			a, b := p.tr.eval(tr.useRow(r), &c)
			for k := 0; k < s.Slots; k++ {
				u := used(r, k)
				if band := s.quantileBand(); u < band[0] || u > band[1] {
					continue
				}
				n++
				if cost(r, k, a, b) >= u {
					in++
				}
			}
		}
		if n < 200 {
			t.Fatalf("%d slots in the band, too few to measure", n)
		}
		return float64(in) / float64(n)
	}
	capCost := func(_, k int, a, b float64) float64 { m := float64(k + 1); return m*a + math.Sqrt(m)*b }
	admCost := func(r, k int, a, b float64) float64 {
		var cost float64
		for i := 0; i <= k; i++ {
			run := a + (math.Sqrt(float64(i+1))-math.Sqrt(float64(i)))*b
			if i < tr.running[r] || run > tr.demand[r] {
				cost += run
			} else {
				cost += tr.demand[r]
			}
		}
		return cost
	}
	for _, c := range []struct {
		name string
		loss lossFunc
		used func(r, k int) float64
		cost func(r, k int, a, b float64) float64
	}{
		{"capacity", capacityLoss, func(r, k int) float64 { return tr.peak(r, k+1) }, capCost},
		{"admission", admissionLoss, tr.admissionUsed, admCost},
	} {
		// The capacity processor's own quantile, when set, is its
		// (CapacityQuantile); the admission processor keeps Quantile.
		// A narrower band (QuantileBand) reads fewer slots, and the
		// capacity processor's cost is the quantile over those. (Not the
		// admission processor's: a new replica costs at least its demand,
		// whatever the trunk says, and in a band near the host those slots
		// weigh enough that its coverage sits below tau: 0.83 at 0.9 on
		// these series.)
		for _, q := range []struct {
			tau, capTau float64
			band        [2]float64
		}{{0.5, 0, [2]float64{}}, {0.9, 0, [2]float64{}}, {0.5, 0.95, [2]float64{}}, {0.9, 0, [2]float64{0.5, 2}}} {
			if c.name == "admission" && q.band != ([2]float64{}) {
				continue
			}
			s.Quantile, s.CapacityQuantile, s.QuantileBand = q.tau, q.capTau, q.band
			tau := q.tau
			if c.name == "capacity" && q.capTau > 0 {
				tau = q.capTau
			}
			rng := rand.New(rand.NewPCG(3, 3))
			p := newProcessor(newMLPTrunk(len(stats), s.Hidden, stats, rng))
			// Early stopping on the training set itself: the property is
			// the loss's on the data it is fitted to (another series'
			// validation loss keeps an epoch fitted less closely).
			if _, err := fit(p, &tr, &tr, s, rng, c.loss, c.name, nil); err != nil {
				t.Fatal(err)
			}
			if got := coverage(p, c.used, c.cost); math.Abs(got-tau) > 0.06 {
				t.Errorf("%s at quantile %v (capacity quantile %v, band %v): the cost covers %.3f of the slots it reads, want %v +- 0.06", c.name, q.tau, q.capTau, s.quantileBand(), got, tau)
			}
		}
	}
}

// TestQuantileSettingsAndProvenance: a quantile outside [0, 1) is refused,
// naming it; a pair trained on the quantile loss says so in its
// provenance (the setting, the loss by name, the fixed slope), and one
// trained on cross-entropy is written as before the quantile existed. A
// capacity quantile is refused the same way, and without the quantile
// loss; the capacity processor's provenance names its own.
func TestQuantileSettingsAndProvenance(t *testing.T) {
	for _, q := range []float64{-0.1, 1, 2, math.NaN()} {
		s := smallSettings()
		s.Quantile = q
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), "quantile: ") {
			t.Errorf("quantile %v: %v, want an error naming the quantile", q, err)
		}
		s = smallSettings()
		s.CapacityQuantile = q
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), "capacity quantile: ") {
			t.Errorf("capacity quantile %v: %v, want an error naming the capacity quantile", q, err)
		}
	}
	s := smallSettings()
	s.Quantile, s.CapacityQuantile = 0, 0.95
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "capacity quantile: 0.95 with quantile 0") {
		t.Errorf("capacity quantile on cross-entropy: %v, want it refused", err)
	}
	all := syntheticSet()
	s = smallSettings()
	s.Quantile, s.CapacityQuantile = 0.9, 0.95
	res, err := Train(all, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pr := res.Capacity.Provenance; pr.Settings["capacity_quantile"] != "0.95" || !strings.Contains(pr.Method, "quantile (pinball) loss at 0.95") {
		t.Errorf("capacity: settings %v, method %q; want capacity_quantile 0.95, its loss at 0.95", pr.Settings, pr.Method)
	}
	if pr := res.Admission.Provenance; strings.Contains(pr.Method, "loss at 0.95") {
		t.Errorf("admission: method %q names the capacity quantile", pr.Method)
	}
	for _, m := range []*engine.Model{res.Capacity, res.Admission} {
		pr := m.Provenance
		if pr.Settings["quantile"] != "0.9" || pr.Metrics["val_pinball"] == "" || pr.Metrics["val_bce"] != "" || pr.Metrics["alpha"] != "10" {
			t.Errorf("%s: settings quantile %q, metrics %v; want quantile 0.9, val_pinball, no val_bce, alpha 10", m.Name, pr.Settings["quantile"], pr.Metrics)
		}
		if !strings.Contains(pr.Method, "quantile (pinball) loss at 0.9") {
			t.Errorf("%s: method %q does not name the quantile loss", m.Name, pr.Method)
		}
		if pr.Settings["capacity_quantile"] != "0.95" {
			t.Errorf("%s: settings %v, want the run's capacity_quantile 0.95", m.Name, pr.Settings)
		}
	}
	s = smallSettings()
	s.Quantile = 0
	res, err = Train(all, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pr := res.Capacity.Provenance; pr.Settings["quantile"] != "" || pr.Settings["capacity_quantile"] != "" || pr.Metrics["val_bce"] == "" || strings.Contains(pr.Method, "pinball") {
		t.Errorf("cross-entropy: settings %v, metrics %v, method %q; want no quantile, val_bce", pr.Settings, pr.Metrics, pr.Method)
	}
}

// TestQuantileBandSettings: a band that does not hold the host's capacity,
// or is not finite, is refused naming the band, as is a band on
// cross-entropy; a pair trained with a band names it in its settings and
// its method, and one trained without it is written as before the band
// was a setting (the built-in models' bytes do not move).
func TestQuantileBandSettings(t *testing.T) {
	for _, c := range []struct {
		name string
		band [2]float64
		q    float64
		want string
	}{
		{"low at 0", [2]float64{0, 2}, 0.9, "quantile band: [0, 2], need a low share in (0, 1)"},
		{"low above the host", [2]float64{1.2, 2}, 0.9, "quantile band: [1.2, 2]"},
		{"high below the host", [2]float64{0.5, 0.9}, 0.9, "quantile band: [0.5, 0.9]"},
		{"high infinite", [2]float64{0.5, math.Inf(1)}, 0.9, "quantile band: [0.5, +Inf]"},
		{"NaN", [2]float64{math.NaN(), 2}, 0.9, "quantile band: [NaN, 2]"},
		{"cross-entropy", [2]float64{0.5, 2}, 0, "quantile band: [0.5, 2] with quantile 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := smallSettings()
			s.QuantileBand, s.Quantile = c.band, c.q
			if err := s.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("band %v: %v, want an error containing %q", c.band, err, c.want)
			}
		})
	}
	all := syntheticSet()
	s := smallSettings()
	s.QuantileBand = [2]float64{0.5, 2}
	if err := s.Check(); err != nil {
		t.Fatalf("band [0.5, 2]: %v", err)
	}
	res, err := Train(all, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*engine.Model{res.Capacity, res.Admission} {
		if pr := m.Provenance; pr.Settings["quantile_band"] != "0.5 2" || !strings.Contains(pr.Method, "within [0.5, 2] of capacity") {
			t.Errorf("%s: settings %v, method %q; want quantile_band 0.5 2, named in the method", m.Name, pr.Settings, pr.Method)
		}
	}
	// The default band, unset or set to itself, trains the same bytes.
	res, err = Train(all, smallSettings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*engine.Model{res.Capacity, res.Admission} {
		if pr := m.Provenance; pr.Settings["quantile_band"] != "" || !strings.Contains(pr.Method, "within [0.25, 4] of capacity") {
			t.Errorf("%s: settings %v, method %q; want no quantile_band, the default band in the method", m.Name, pr.Settings, pr.Method)
		}
	}
	s = smallSettings()
	s.QuantileBand = [2]float64{QuantileBandLow, QuantileBandHigh}
	same, err := Train(all, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range digestPairs(res, same) {
		if d.a != d.b {
			t.Errorf("%s: the default band set explicitly gives %s, unset %s", d.name, d.b, d.a)
		}
	}
}

// TestQuantileLossesReadTheBand: both quantile losses score each slot
// through the settings' band: the capacity loss of a row is the sum of
// pinball over its slots in that band, and a narrower band changes both
// losses' totals (so neither reads the default band whatever is set).
func TestQuantileLossesReadTheBand(t *testing.T) {
	s := smallSettings()
	stats, rng, tr, _ := fitData(t, s)
	p := newProcessor(newMLPTrunk(len(stats), s.Hidden, stats, rng))
	var c trunkCache
	total := func(s Settings, loss lossFunc) float64 {
		var sum float64
		for r := 0; r < tr.rows; r++ {
			sum += loss(p, &tr, r, s, &c, nil)
		}
		return sum
	}
	narrow := s
	narrow.QuantileBand = [2]float64{0.5, 2}
	for _, b := range []Settings{s, narrow} {
		for r := 0; r < tr.rows; r++ {
			a, bb := p.tr.eval(tr.useRow(r), &c)
			var want float64
			for k := 0; k < b.Slots; k++ {
				m := float64(k + 1)
				l, _ := pinball(b.capacityQuantile(), m*a+math.Sqrt(m)*bb, tr.peak(r, k+1), b.quantileBand())
				want += l
			}
			if got := capacityQuantileLoss(p, &tr, r, b, &c, nil); math.Abs(got-want) > 1e-9*max(1, want) {
				t.Fatalf("band %v, row %d: capacity loss %v, the slots' pinball in the band %v", b.quantileBand(), r, got, want)
			}
		}
	}
	for _, c := range []struct {
		name string
		loss lossFunc
	}{{"capacity", capacityQuantileLoss}, {"admission", admissionQuantileLoss}} {
		if d, n := total(s, c.loss), total(narrow, c.loss); d == n || n == 0 {
			t.Errorf("%s: loss %v with the default band, %v with [0.5, 2]; want both read, and differ", c.name, d, n)
		}
	}
}

// TestPinballReadsOnlyTheBand: a slot whose usage lies outside the band
// scores nothing and pulls the cost nowhere; one inside scores the
// pinball loss of the log cost, pulling the cost up when usage is above it
// (by tau) and down when below (by 1 - tau).
func TestPinballReadsOnlyTheBand(t *testing.T) {
	band := [2]float64{0.5, 2}
	for _, c := range []struct {
		name             string
		cost, used       float64
		wantLoss, wantDC float64
	}{
		{"below the band", 1, 0.49, 0, 0},
		{"above the band", 1, 2.01, 0, 0},
		{"at its low edge, cost above", 1, 0.5, 0.1 * math.Log(2), 0.1},
		{"inside, cost below", 0.5, 1, 0.9 * math.Log(2), -0.9 / 0.5},
		{"at its high edge, cost below", 1, 2, 0.9 * math.Log(2), -0.9},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, dc := pinball(0.9, c.cost, c.used, band)
			if math.Abs(l-c.wantLoss) > 1e-12 || math.Abs(dc-c.wantDC) > 1e-12 {
				t.Errorf("pinball(0.9, %v, %v, %v) = %v, %v; want %v, %v", c.cost, c.used, band, l, dc, c.wantLoss, c.wantDC)
			}
		})
	}
}

// TestProvenanceNamesFittedSeries: both models' provenance lists, per
// family, the series trained and validated on, and none held out or left
// out (simulate reads it to keep a held-out replay held out).
func TestProvenanceNamesFittedSeries(t *testing.T) {
	all := append(syntheticSet(), synthetic("tooshort", 20, 99))
	res, err := TrainFamilies([]Family{{Name: "fam", Series: all}}, smallSettings(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Families[0]
	want := append(append([]string(nil), f.Train...), f.Validate...)
	if len(f.HeldOut) == 0 || len(f.Validate) == 0 || len(f.LeftOut) == 0 {
		t.Fatalf("the premise fails: split %+v", f)
	}
	for _, m := range []*engine.Model{res.Admission, res.Capacity} {
		got := m.Provenance.Series
		if len(got) != 1 || !reflect.DeepEqual(got["fam"], want) {
			t.Errorf("%s: provenance series %v, want fam: %v", m.Name, got, want)
		}
	}
}

// TestFamilyOrderDoesNotMatter: train --traces b,a gives the models a,b
// gives; one family name given twice is refused.
func TestFamilyOrderDoesNotMatter(t *testing.T) {
	all := syntheticSet()
	a, b := Family{Name: "a", Series: all[:4]}, Family{Name: "b", Series: all[4:]}
	s := smallSettings()
	ab, err := TrainFamilies([]Family{a, b}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := TrainFamilies([]Family{b, a}, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range digestPairs(ab, ba) {
		if d.a != d.b {
			t.Errorf("%s: families a, b give %s, b, a give %s", d.name, d.a, d.b)
		}
	}
	if _, err := TrainFamilies([]Family{a, {Name: "a", Series: all[4:]}}, s, nil); err == nil || !strings.Contains(err.Error(), `family "a" given twice`) {
		t.Errorf("a family name twice: %v, want it refused", err)
	}
}

func TestFamilyRepeats(t *testing.T) {
	rows := func(ns ...int) []dataset {
		out := make([]dataset, len(ns))
		for i, n := range ns {
			out[i].rows = n
		}
		return out
	}
	tests := []struct {
		name    string
		rows    []int
		balance bool
		want    []int
	}{
		{"unbalanced", []int{100, 30}, false, []int{1, 1}},
		{"a third of the largest", []int{100, 30}, true, []int{1, 3}},
		{"rounded down", []int{60, 100, 70}, true, []int{2, 1, 1}},
		{"rounded up", []int{100, 60}, true, []int{1, 2}},
		{"a family without examples once", []int{100, 0}, true, []int{1, 1}},
		{"one family", []int{7}, true, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := familyRepeats(rows(tt.rows...), tt.balance); !slices.Equal(got, tt.want) {
				t.Errorf("familyRepeats(%v, %v) = %v, want %v", tt.rows, tt.balance, got, tt.want)
			}
		})
	}
}

// BalanceFamilies repeats the smaller family's examples in training (the
// counts say so), is written in the provenance, and trains other models;
// without it each family is in once and the provenance is as before.
func TestBalanceFamilies(t *testing.T) {
	long, short := syntheticSet(), syntheticSet()
	for i := range short {
		short[i].Name = "s" + short[i].Name
		short[i].Times, short[i].Values = short[i].Times[:400], short[i].Values[:400]
	}
	fams := []Family{{Name: "long", Series: long}, {Name: "short", Series: short}}
	s := smallSettings()
	plain, err := TrainFamilies(fams, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.BalanceFamilies = true
	bal, err := TrainFamilies(fams, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, r *Result, wantShortRepeats int) {
		t.Helper()
		lo, sh := r.Families[0], r.Families[1]
		if lo.Name != "long" || sh.Name != "short" || lo.Repeats != 1 || sh.Repeats != wantShortRepeats {
			t.Fatalf("%s: families %s x%d, %s x%d; want long x1, short x%d", name, lo.Name, lo.Repeats, sh.Name, sh.Repeats, wantShortRepeats)
		}
		if got, want := r.Examples, lo.Examples+sh.Repeats*sh.Examples; got != want {
			t.Errorf("%s: %d training examples, want %d (%d + %d x %d)", name, got, want, lo.Examples, sh.Repeats, sh.Examples)
		}
		wantVal := 1 // the validation side is balanced on its own counts
		if wantShortRepeats > 1 {
			wantVal = int(math.Round(float64(lo.ValExamples) / float64(sh.ValExamples)))
		}
		if lo.ValRepeats != 1 || sh.ValRepeats != wantVal {
			t.Errorf("%s: validation repeats long x%d, short x%d; want x1 and x%d (validation examples %d and %d)", name, lo.ValRepeats, sh.ValRepeats, wantVal, lo.ValExamples, sh.ValExamples)
		}
		if got, want := r.ValExamples, lo.ValExamples+sh.ValRepeats*sh.ValExamples; got != want {
			t.Errorf("%s: %d validation examples, want %d", name, got, want)
		}
	}
	lo, sh := plain.Families[0], plain.Families[1]
	if sh.Examples == 0 || lo.Examples < 2*sh.Examples {
		t.Fatalf("the premise fails: long %d examples, short %d; want short at most half of long", lo.Examples, sh.Examples)
	}
	check("unbalanced", plain, 1)
	check("balanced", bal, int(math.Round(float64(lo.Examples)/float64(sh.Examples))))
	if _, ok := plain.Capacity.Provenance.Settings["balance_families"]; ok {
		t.Errorf("unbalanced provenance names balance_families")
	}
	for _, m := range []*engine.Model{bal.Capacity, bal.Admission} {
		if got := m.Provenance.Settings["balance_families"]; got != "true" {
			t.Errorf("%s: provenance balance_families = %q, want true", m.Name, got)
		}
	}
	for _, d := range digestPairs(plain, bal) {
		if d.a == d.b {
			t.Errorf("%s: balanced and unbalanced training give the same model %s", d.name, d.a)
		}
	}
}
