package sim

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/traces"
)

// Every count the activation policy sets is what the engine's one entry point
// decides for the same two observations and quotas (Request.Decide).
func TestActivationIsTheEngineDecision(t *testing.T) {
	all := loadCrane(t)
	r, err := Prepare(all[0], Shifted(), 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Activation(ActivationConfig{Values: []float64{0.5, 0.9}})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := p.New(r, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	// A copy of each built-in model with threshold 0.9, written to files:
	// the request names them like any user's model.
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{engine.BuiltinAdmission, engine.BuiltinCapacity} {
		b, err := engine.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		m := *b.Model()
		thr := 0.9
		m.OutputThreshold = &thr
		path := dir + "/" + name + ".json"
		if err := engine.WriteModelFile(path, &m); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	q := engine.Quota{Min: 0, Max: r.MaxReplicas(), PerBranch: 1, Rounding: engine.RoundNearest}
	prev := []int{0, 37}
	out := make([]int, 2)
	for d := 0; d < r.Decisions(); d += 301 {
		if err := dec.Decide(d, prev, out); err != nil {
			t.Fatal(err)
		}
		req := &engine.Request{FirstModel: paths[0], SecondModel: paths[1], FirstQuota: q.Spec(), SecondQuota: q.Spec()}
		r.Observation(0, d, prev[0], engine.RoleFirst, "first", &req.First)
		r.Observation(1, d, prev[1], engine.RoleSecond, "second", &req.Second)
		want, err := req.Decide()
		if err != nil {
			t.Fatal(err)
		}
		if out[0] != want.First.Containers || out[1] != want.Second.Containers {
			t.Fatalf("decision %d: policy %v, engine %d and %d", d, out, want.First.Containers, want.Second.Containers)
		}
		prev[0], prev[1] = out[1], out[0]
	}
}

// maxWindowModels are processors written by hand to implement max-window
// with no margin: output k holds data when fit_max >= k+1, that is when
// k+1 replicas of the window's peak fit. Through the engine they must set
// exactly max-window's counts: a check of the simulator's engine path.
func maxWindowModels(t *testing.T, slots int) (adm, capy *engine.Processor) {
	t.Helper()
	const alpha = 50.0
	mk := func(name string, inputs []engine.Node, hidden engine.Layer, outRow func(k int) []float64, outputs []engine.Node) *engine.Processor {
		out := engine.Layer{Activation: engine.ActivationSigmoid, Biases: make([]float64, slots)}
		for k := 0; k < slots; k++ {
			out.Weights = append(out.Weights, outRow(k))
			out.Biases[k] = -alpha
		}
		m := &engine.Model{Format: engine.ModelFormat, Version: engine.ModelVersion, Name: name,
			Inputs: inputs, Outputs: outputs, Layers: []engine.Layer{hidden, out},
			Provenance: engine.Provenance{Method: "hand-written for a test: max-window with no margin"}}
		p, err := engine.NewProcessor(m)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var slotIn, safe, admit []engine.Node
	for k := 0; k < slots; k++ {
		slotIn = append(slotIn, engine.Node{Name: engine.SlotPrefix + strconv.Itoa(k), Countable: true})
		safe = append(safe, engine.Node{Name: "safe_" + strconv.Itoa(k), Countable: true})
		admit = append(admit, engine.Node{Name: "admit_" + strconv.Itoa(k)})
	}
	fit := engine.Node{Name: engine.FeatCPUFitMax}
	capy = mk("maxwindow-capacity", []engine.Node{fit},
		engine.Layer{Activation: engine.ActivationReLU, Weights: [][]float64{{1}}, Biases: []float64{0}},
		func(k int) []float64 { return []float64{alpha / float64(k+1)} }, safe)
	hid := engine.Layer{Activation: engine.ActivationReLU, Biases: make([]float64, slots)}
	for k := 0; k < slots; k++ {
		row := make([]float64, slots+1)
		row[k] = 1e-9 // the slot's edge into its block
		row[slots] = 1
		hid.Weights = append(hid.Weights, row)
	}
	adm = mk("maxwindow-admission", append(slotIn, fit), hid, func(k int) []float64 {
		row := make([]float64, slots)
		row[k] = alpha / float64(k+1)
		return row
	}, admit)
	return adm, capy
}

func TestHandWrittenEngineModelIsMaxWindow(t *testing.T) {
	all := loadCrane(t)
	sc := Shifted()
	adm, capy := maxWindowModels(t, sc.MaxReplicas)
	act, err := Activation(ActivationConfig{Admission: adm, Capacity: capy, Values: []float64{0.5}})
	if err != nil {
		t.Fatal(err)
	}
	var got []SeriesResult
	_, err = Run(context.Background(), all[:4], sc, []Policy{act, MaxWindow()}, Options{OnSeries: func(s SeriesResult) { got = append(got, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d series results, want 4", len(got))
	}
	for _, s := range got {
		a, m := s.Tallies[0][0], s.Tallies[1][0] // max-window's margin 0
		if a.Replicas != m.Replicas || a.Violations != m.Violations || a.Replicas == 0 {
			t.Errorf("%s: engine max-window %v replicas %d violations, policy %v %d", s.Name, a.Replicas, a.Violations, m.Replicas, m.Violations)
		}
	}
}

func TestActivationConfigErrors(t *testing.T) {
	if _, err := Activation(ActivationConfig{Knob: "margin"}); err == nil || !strings.Contains(err.Error(), "margin") {
		t.Errorf("unknown knob: %v", err)
	}
	if _, err := Activation(ActivationConfig{Knob: KnobPerBranch, Values: []float64{-1}}); err == nil || !strings.Contains(err.Error(), "per_branch") {
		t.Errorf("negative per-branch scale: %v", err)
	}
	p, err := Activation(ActivationConfig{Values: []float64{0.5}})
	if err != nil {
		t.Fatal(err)
	}
	all := loadCrane(t)
	sc := Shifted()
	sc.Hosts = 3
	r, err := Prepare(all[0], sc, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.New(r, 0.5); err == nil || !strings.Contains(err.Error(), "even") {
		t.Errorf("odd host count: %v", err)
	}
	sc.Hosts = 2
	if r, err = Prepare(all[0], sc, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.New(r, 0.7); err == nil {
		t.Error("a knob value outside the sweep accepted")
	}
}

// The per-branch knob scales the engine's amounts through its quota, the
// front ends' default one with that per_branch: a setting the replay
// reports is the quota a user writes (it rounded down, where the front
// ends round to the nearest count: a review).
func TestActivationPerBranch(t *testing.T) {
	all := loadCrane(t)
	r, err := Prepare(all[0], Shifted(), 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Activation(ActivationConfig{Knob: KnobPerBranch, Values: []float64{0.5, 1}})
	if err != nil {
		t.Fatal(err)
	}
	half, _ := p.New(r, 0.5)
	one, _ := p.New(r, 1)
	a, b := make([]int, 2), make([]int, 2)
	odd := 0
	for d := 0; d < r.Decisions(); d += 503 {
		prev := []int{10, 10}
		if err := half.Decide(d, prev, a); err != nil {
			t.Fatal(err)
		}
		if err := one.Decide(d, prev, b); err != nil {
			t.Fatal(err)
		}
		var first, second engine.Observation
		r.Observation(0, d, prev[0], engine.RoleFirst, "first", &first)
		r.Observation(1, d, prev[1], engine.RoleSecond, "second", &second)
		pb := 0.5
		q := &engine.QuotaSpec{PerBranch: &pb} // what an HCL quota with per_branch alone gives
		want, err := engine.Decide(engine.HostInput{Observation: &first, Quota: q}, engine.HostInput{Observation: &second, Quota: q})
		if err != nil {
			t.Fatal(err)
		}
		for h, hd := range []engine.HostDecision{want.First, want.Second} {
			if a[h] != hd.Containers {
				t.Fatalf("decision %d host %d: per_branch 0.5 gives %d, the engine's quota with per_branch 0.5 %d", d, h, a[h], hd.Containers)
			}
			if b[h] != hd.Amount {
				t.Fatalf("decision %d host %d: per_branch 1 gives %d, the engine's amount %d", d, h, b[h], hd.Amount)
			}
			if b[h]%2 == 1 {
				odd++ // where rounding down and to the nearest differ
			}
		}
	}
	if odd == 0 {
		t.Error("no odd amount among the decisions read: the rounding is not tested")
	}
}

// With a hold band, the policy keeps a host's count exactly when the
// engine's hold range (engine.Decide with HostInput.HoldBand) keeps it, and
// otherwise sets the engine's count.
func TestActivationHoldBandIsTheEngineHold(t *testing.T) {
	all := loadCrane(t)
	r, err := Prepare(all[0], Shifted(), 1)
	if err != nil {
		t.Fatal(err)
	}
	const band = 1.0
	p, err := Activation(ActivationConfig{HoldBand: band})
	if err != nil {
		t.Fatal(err)
	}
	thr := engine.DefaultOutputThreshold
	dec, err := p.New(r, thr)
	if err != nil {
		t.Fatal(err)
	}
	q := engine.Quota{Min: 0, Max: r.MaxReplicas(), PerBranch: 1, Rounding: engine.RoundNearest}
	prev, out := []int{r.StartCount(0), r.StartCount(1)}, make([]int, 2)
	held, moved := 0, 0
	for d := 0; d < r.Decisions(); d++ {
		if err := dec.Decide(d, prev, out); err != nil {
			t.Fatal(err)
		}
		if d%37 == 0 {
			var first, second engine.Observation
			r.Observation(0, d, prev[0], engine.RoleFirst, "first", &first)
			r.Observation(1, d, prev[1], engine.RoleSecond, "second", &second)
			want, err := engine.Decide(engine.HostInput{Observation: &first, Quota: q.Spec(), HoldBand: band},
				engine.HostInput{Observation: &second, Quota: q.Spec(), HoldBand: band})
			if err != nil {
				t.Fatal(err)
			}
			for h, hd := range []engine.HostDecision{want.First, want.Second} {
				w := hd.Containers
				if hd.Hold.Keeps(prev[h]) {
					w = prev[h]
				}
				if out[h] != w {
					t.Fatalf("decision %d, host %d at %d: policy %d, engine %d with hold %+v", d, h, prev[h], out[h], hd.Containers, *hd.Hold)
				}
				if hd.Hold.Keeps(prev[h]) && hd.Containers != prev[h] {
					held++
				} else if hd.Containers != prev[h] {
					moved++
				}
			}
		}
		copy(prev, out)
	}
	if held == 0 || moved == 0 {
		t.Errorf("checked %d held and %d moved counts: the test needs both", held, moved)
	}
	if _, err := Activation(ActivationConfig{HoldBand: -1}); err == nil {
		t.Error("a negative hold band accepted")
	}
	if _, err := Activation(ActivationConfig{HoldBand: 1, Knob: KnobPerBranch}); err == nil {
		t.Error("a hold band with the per_branch knob accepted")
	}
	// Outputs that are not sigmoid have no logits to move: refused, as
	// engine.Decide refuses them.
	capy, err := engine.Models.LoadFor(engine.RoleSecond, "")
	if err != nil {
		t.Fatal(err)
	}
	im := *capy.Model()
	im.Layers = slices.Clone(im.Layers)
	last := &im.Layers[len(im.Layers)-1]
	last.Activation = engine.ActivationIdentity
	half := 0.5
	im.OutputThreshold = &half
	ident, err := engine.NewProcessor(&im)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Activation(ActivationConfig{HoldBand: 1, Capacity: ident, Values: []float64{0.5}}); err == nil || !strings.Contains(err.Error(), "needs sigmoid outputs") {
		t.Errorf("a hold band on identity outputs: error %v, want a refusal", err)
	}
}

// With step limits and hysteresis, the policy moves each host's count as
// the Nomad strategy does (engine.Steps.Control, from the count in force,
// with the band waived for a scale-down the running replicas need and for
// a first replica): the replay's stepped counts are the engine's, moved so.
func TestActivationStepsAreTheStrategys(t *testing.T) {
	all := loadCrane(t)
	r, err := Prepare(all[6], Shifted(), 1)
	if err != nil {
		t.Fatal(err)
	}
	up, _ := engine.ParseStep("3")
	down, _ := engine.ParseStep("2")
	hyst, _ := engine.ParseStep("2")
	steps := engine.Steps{MaxUp: up, MaxDown: down, Hysteresis: hyst}
	p, err := Activation(ActivationConfig{Steps: steps, Values: []float64{engine.DefaultOutputThreshold}})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := p.New(r, engine.DefaultOutputThreshold)
	if err != nil {
		t.Fatal(err)
	}
	q := engine.Quota{Min: 0, Max: r.MaxReplicas(), PerBranch: 1, Rounding: engine.RoundNearest}
	prev, out := []int{r.StartCount(0), r.StartCount(1)}, make([]int, 2)
	waived, held := 0, 0
	for d := 0; d < r.Decisions(); d++ {
		if err := dec.Decide(d, prev, out); err != nil {
			t.Fatal(err)
		}
		var first, second engine.Observation
		r.Observation(0, d, prev[0], engine.RoleFirst, "first", &first)
		r.Observation(1, d, prev[1], engine.RoleSecond, "second", &second)
		want, err := engine.Decide(engine.HostInput{Observation: &first, Quota: q.Spec()},
			engine.HostInput{Observation: &second, Quota: q.Spec()})
		if err != nil {
			t.Fatal(err)
		}
		for h, hd := range []engine.HostDecision{want.First, want.Second} {
			running := []int{first.RunningReplicas, second.RunningReplicas}[h]
			st, why := steps.Control(prev[h], hd.Containers, q.Min, q.Max, hd.Overloads(running))
			if out[h] != st.Count {
				t.Fatalf("decision %d, host %d at %d: policy %d, engine %d moved by the strategy's steps to %d (%s%s)", d, h, prev[h], out[h], hd.Containers, st.Count, st.Why, why)
			}
			if why != "" {
				waived++
			} else if st.Why != "" && st.Count == prev[h] {
				held++
			}
		}
		copy(prev, out)
	}
	if waived == 0 || held == 0 {
		t.Errorf("%d moves with the band waived and %d held by it: the test needs both", waived, held)
	}
}

// A Meter reads what a sweep replay cost: decision points, the engine
// sweeps on each host (at least one per decision point; the first host's
// counts in force need more), the bare Decide time, and the share of full
// passes the first host's sweeps computed (above 0, below 1: the Sweeper
// carries each pass into the next).
func TestMeterReadsTheSweep(t *testing.T) {
	all := loadCrane(t)
	r, err := Prepare(all[0], Shifted(), 1)
	if err != nil {
		t.Fatal(err)
	}
	m := &Meter{}
	p, err := Activation(ActivationConfig{Meter: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EvaluateAll(context.Background(), r, p); err != nil {
		t.Fatal(err)
	}
	got := m.Read()
	dec := got.Decisions
	if dec == 0 || got.SecondPasses != dec || got.FirstPasses <= dec || got.Bare <= 0 || got.Replay <= 0 {
		t.Fatalf("meter %+v: want decision points, one second-host sweep each, more first-host sweeps, and both times", got)
	}
	if got.FirstNodeShare <= 0 || got.FirstNodeShare >= 0.5 || got.FirstScoreShare <= 0 || got.FirstScoreShare >= 1 {
		t.Fatalf("first host computed %.3f of the node values and %.3f of the scores of full passes", got.FirstNodeShare, got.FirstScoreShare)
	}
	t.Logf("%+v", got)
}

// TestEvaluateAllStopsOnItsContext: a sweep over one long series stops
// when its context ends part way through, not after the series (an
// interrupt of simulate took 9 s to act on an 89,632-sample series); a
// policy without a sweep stops between its knob values.
func TestEvaluateAllStopsOnItsContext(t *testing.T) {
	all := loadCrane(t)
	r, err := Prepare(all[0], Shifted(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Decisions() <= 3*ctxEvery {
		t.Fatalf("%d decisions: too few to show a stop inside the sweep", r.Decisions())
	}
	act, err := Activation(ActivationConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Policy{act, MaxWindow()} {
		// The context ends at its third look: inside the sweep for a
		// Sweeper (decision 2 x ctxEvery), between values otherwise.
		ctx := &endsAfter{Context: context.Background(), looks: 3}
		if _, err := EvaluateAll(ctx, r, p); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with its context ended part way: %v, want context.Canceled", p.Name(), err)
		}
		if ctx.seen != 3 {
			t.Errorf("%s looked at its context %d times, want 3 (it stopped at the first ended look)", p.Name(), ctx.seen)
		}
	}
}

// endsAfter is a context whose Err is context.Canceled from its looks-th
// call on.
type endsAfter struct {
	context.Context
	looks, seen int
}

func (c *endsAfter) Err() error {
	c.seen++
	if c.seen >= c.looks {
		return context.Canceled
	}
	return nil
}

// perReplicaReplays are replays of every kind the simulator builds: CPU,
// a window of zeros (read at the requests), memory, two applications and
// the yardstick's setup (correlated replicas, no replica cap).
func perReplicaReplays(t *testing.T) map[string]*Replay {
	t.Helper()
	all := loadCrane(t)
	zeroed := all[1]
	zeroed.Values = slices.Clone(zeroed.Values)
	for i := 3000; i < 3400; i++ { // longer than a window
		zeroed.Values[i] = 0
	}
	withMem := all[2]
	withMem.MemoryProvisionedMB = 4096
	withMem.Memory = make([]float64, len(withMem.Values))
	for i := range withMem.Memory {
		withMem.Memory[i] = 1000 + float64(i%977)*2.3 + withMem.Values[i]
	}
	out := map[string]*Replay{}
	for name, tc := range map[string]struct {
		series []traces.Series
		sc     Scenario
	}{
		"cpu":              {[]traces.Series{all[0]}, Shifted()},
		"zero usage":       {[]traces.Series{zeroed}, Shifted()},
		"memory":           {[]traces.Series{withMem}, MemoryScenario()},
		"two applications": {[]traces.Series{all[3], all[4]}, TwoApps()},
		"yardstick":        {[]traces.Series{all[5]}, Yardstick()},
	} {
		r, err := PrepareApps(tc.series, tc.sc, 1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = r
	}
	return out
}

// What the sweep's shortcut rests on: the built-in capacity processor's
// vector of the replay's observation of n replicas is the same bits at
// every n from 1 up to the replay's exactCount, wherever the observation
// is valid (TestPerReplicaInputs checks the engine's side, feature by
// feature, on an observation made by hand).
func TestReplayCountsGiveOneVector(t *testing.T) {
	capy, err := engine.Models.LoadFor(engine.RoleSecond, "")
	if err != nil {
		t.Fatal(err)
	}
	var ref []float64
	checkReplayCounts(t, capy, engine.RoleSecond, []int{0, 2, 3, 7, 40, 109, 110, 111, 1000, 1 << 20},
		func(r *Replay, h, d int) {
			var o engine.Observation
			r.Observation(h, d, 1, engine.RoleSecond, "second", &o)
			if ref, err = capy.Features(&o, engine.RoleSecond); err != nil {
				t.Fatal(err)
			}
		},
		func(int) []float64 { return ref })
}

// What the first host's recounting rests on: a Recounter that read the
// replay's observation of the window at one count gives, at every count up
// to the replay's exactCount where the observation is valid, the same bits
// as the built-in admission processor's vector of the replay's own
// observation at that count (TestRecounterMatchesFeatures checks the
// engine's side on observations made by hand).
func TestReplayRecountsGiveEachVector(t *testing.T) {
	adm, err := engine.Models.LoadFor(engine.RoleFirst, "")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := adm.NewRecounter()
	if err != nil {
		t.Fatal(err)
	}
	checkReplayCounts(t, adm, engine.RoleFirst, []int{2, 3, 7, 40, 1, 109, 110, 111, 1000, 1 << 20},
		func(r *Replay, h, d int) {
			var o engine.Observation
			r.Observation(h, d, 1+d%5, engine.RoleFirst, "first", &o)
			if err := rc.Reset(&o, engine.RoleFirst); err != nil {
				t.Fatal(err)
			}
		},
		func(n int) []float64 {
			x, err := rc.Into(nil, n)
			if err != nil {
				t.Fatal(err)
			}
			return x
		})
}

// checkReplayCounts compares, on each of perReplicaReplays' hosts at every
// 97th decision point (after start), the vector got gives for each count up
// to the replay's exactCount with p's vector of the replay's own
// observation at that count, wherever that observation is valid, bit for
// bit.
func checkReplayCounts(t *testing.T, p *engine.Processor, role string, counts []int, start func(r *Replay, h, d int), got func(n int) []float64) {
	t.Helper()
	for name, r := range perReplicaReplays(t) {
		t.Run(name, func(t *testing.T) {
			var o engine.Observation
			checked := 0
			for h := 0; h < r.Hosts(); h++ {
				for d := 0; d < r.Decisions(); d += 97 {
					start(r, h, d)
					for _, n := range counts {
						if n > r.exactCount() {
							continue
						}
						r.Observation(h, d, n, role, role, &o)
						if o.Validate(role) != nil {
							continue
						}
						want, err := p.Features(&o, role)
						if err != nil {
							t.Fatal(err)
						}
						x := got(n)
						for i := range want {
							if math.Float64bits(x[i]) != math.Float64bits(want[i]) {
								t.Fatalf("host %d, decision %d, %d replicas: input %s is %v, the observation's %v",
									h, d, n, p.Model().Inputs[i].Name, x[i], want[i])
							}
						}
						checked++
					}
				}
			}
			if checked == 0 {
				t.Fatal("no count checked")
			}
		})
	}
}

// The second host's processor reads only per-replica inputs, so DecideAll
// computes its vector once per decision point and gives it to every count
// in force; the first host's reads the count, and a Recounter lays out its
// counts' vectors from one computation of the window's features. The
// counts are those of computing each count's vector (a decider told its
// processors read the count, without recounters), at every knob value and
// decision, on every kind of replay; above the replay's exactCount each
// count is computed again; and an observation that is not valid at the
// largest count is refused as before, on either host.
func TestPerReplicaCountsShareOneVector(t *testing.T) {
	p, err := Activation(ActivationConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range perReplicaReplays(t) {
		sweep := func() *activationDecider {
			d, err := p.(*activation).NewSweep(r)
			if err != nil {
				t.Fatal(err)
			}
			return d.(*activationDecider)
		}
		knobs, hosts, pairs := len(p.(*activation).values), r.Hosts(), r.Hosts()/2
		grid := func() [][]int {
			g := make([][]int, knobs)
			for j := range g {
				g[j] = make([]int, hosts)
				for h := range g[j] {
					g[j][h] = (j*7 + h) % 40 // many counts in force, some 0
				}
			}
			return g
		}
		// replay runs both deciders side by side and returns the
		// decision points decided, and how many first-host vectors fast
		// should recount: at each, one per distinct count in force from
		// 1 to its exactCount on each pair's first host (the counts
		// stay far below where an observation stops being valid).
		replay := func(t *testing.T, fast, slow *activationDecider) (decided, recountable int64) {
			prevF, prevS, outF, outS := grid(), grid(), grid(), grid()
			for d := 0; d < r.Decisions(); d += 41 { // (under -race a step of 11 took 162 s)
				for h := 0; h < hosts; h += 2 {
					seen := map[int]bool{}
					for j := range prevF {
						if c := prevF[j][h]; c >= 1 && c <= fast.exactCount {
							seen[c] = true
						}
					}
					recountable += int64(len(seen))
				}
				if err := fast.DecideAll(d, prevF, outF); err != nil {
					t.Fatal(err)
				}
				if err := slow.DecideAll(d, prevS, outS); err != nil {
					t.Fatal(err)
				}
				decided++
				for j := range outF {
					if !slices.Equal(outF[j], outS[j]) {
						t.Fatalf("decision %d, knob value %d: %v with one vector for the counts, %v with each count's", d, j, outF[j], outS[j])
					}
				}
				prevF, outF = outF, prevF
				prevS, outS = outS, prevS
			}
			return decided, recountable
		}
		t.Run(name, func(t *testing.T) {
			fast, slow := sweep(), sweep()
			if !fast.perReplica[1] || fast.perReplica[0] {
				t.Fatalf("per-replica processors %v: want the second host's only", fast.perReplica)
			}
			if fast.recounters[0] == nil || fast.recounters[1] != nil {
				t.Fatalf("recounters %v: want the first host's only", fast.recounters)
			}
			slow.perReplica, slow.recounters = [2]bool{}, [2]*engine.Recounter{}
			decided, recountable := replay(t, fast, slow)
			if want := decided * int64(pairs); fast.vectors[1] != want {
				t.Errorf("second host: %d vectors computed, want one per decision point (%d)", fast.vectors[1], want)
			}
			if slow.vectors[1] <= 2*decided*int64(pairs) {
				t.Errorf("second host, each count's vector: %d computed over %d decision points; the test needs many counts in force", slow.vectors[1], decided)
			}
			if fast.vectors[0] != slow.vectors[0] {
				t.Errorf("first host: %d vectors computed, and %d computing each count's", fast.vectors[0], slow.vectors[0])
			}
			// Every count from 1 is recounted (the first of them read
			// by the recounter); 0 is computed.
			if fast.recounted[0] != recountable || fast.recounted[0] >= fast.vectors[0] || slow.recounted != [2]int64{} {
				t.Errorf("first host: %d of %d vectors recounted, want %d (%v computing each count's)", fast.recounted[0], fast.vectors[0], recountable, slow.recounted)
			}
		})
		if name != "cpu" && name != "memory" {
			continue
		}
		t.Run(name+", exact up to 5 replicas", func(t *testing.T) {
			fast, slow := sweep(), sweep()
			fast.exactCount, slow.perReplica, slow.recounters = 5, [2]bool{}, [2]*engine.Recounter{}
			decided, recountable := replay(t, fast, slow)
			if fast.vectors[1] <= 2*decided*int64(pairs) {
				t.Errorf("second host: %d vectors over %d decision points with counts up to 39 and exactCount 5", fast.vectors[1], decided)
			}
			if fast.recounted[0] != recountable || recountable == 0 {
				t.Errorf("first host: %d vectors recounted with exactCount 5, want %d", fast.recounted[0], recountable)
			}
		})
	}
	for side := range 2 {
		t.Run("a count past the engine's limit, host "+strconv.Itoa(side+1), func(t *testing.T) {
			r := perReplicaReplays(t)["cpu"]
			var errs []string
			for _, shortcut := range []bool{true, false} {
				d, err := p.(*activation).NewSweep(r)
				if err != nil {
					t.Fatal(err)
				}
				ad := d.(*activationDecider)
				if !shortcut {
					ad.perReplica, ad.recounters = [2]bool{}, [2]*engine.Recounter{}
				}
				prev := make([][]int, len(ad.knobs))
				for j := range prev {
					prev[j] = []int{3 + j%4, 2 + j%5}
				}
				prev[len(prev)-1][side] = engine.MaxReplicas + 1
				out := make([][]int, len(prev))
				for j := range out {
					out[j] = make([]int, 2)
				}
				err = ad.DecideAll(0, prev, out)
				if err == nil {
					t.Fatalf("shortcut %v: a host running %d replicas decided", shortcut, engine.MaxReplicas+1)
				}
				errs = append(errs, err.Error())
			}
			if errs[0] != errs[1] {
				t.Errorf("errors differ: %q with the shortcuts, %q computing each count's", errs[0], errs[1])
			}
		})
	}
}

func TestExactCount(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage float64 // a replica's largest usage, in MHz
		mem   float64 // and memory, in MB
		want  int
	}{
		{"a host's worth", HostMHz, 0, 1 << 23}, // 2^53 / 2^30 quanta
		{"3,000 MHz", 3000, 0, 2863311},         // 2^33 / 3,000
		{"3 * 2^30 MHz", 3 * (1 << 30), 0, 2},   // 2^53 / (3 * 2^50)
		{"2^33 MHz", 1 << 33, 0, 1},             // 2^53 quanta is exact once
		{"no usage", 0, 0, 1 << 23},             // the request, 1,024 MHz, bounds it
		{"one quantum", quantum, 0, 1 << 23},    // likewise
		{"memory 2^31 MB", 1, 1 << 31, 4},       // 2^53 / 2^51 quanta
		{"memory past 2^33 MB", 1, 1 << 34, 0},  // not even one replica
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &App{Request: 1, gridMHz: []float64{0, tc.usage, 1}}
			if tc.mem > 0 {
				a.MemoryRequest, a.gridMB = 1.0/16, []float64{tc.mem, 0}
			}
			r := &Replay{apps: []*App{a}}
			if got := r.exactCount(); got != tc.want {
				t.Fatalf("exactCount %d, want %d", got, tc.want)
			}
		})
	}
}

// find merges only bitwise-equal vectors: a checksum match alone does not
// (a collision is compared whole), and vectors differing in one input's
// bits (-0 against +0, one NaN against another) have their own buckets.
func TestFindComparesBits(t *testing.T) {
	x := []float64{1, 0, 2.5, math.NaN(), 7}
	negZero := slices.Clone(x)
	negZero[1] = math.Copysign(0, -1)
	otherNaN := slices.Clone(x)
	otherNaN[3] = math.Float64frombits(math.Float64bits(math.NaN()) ^ 1)
	ad := &activationDecider{}
	for _, v := range [][]float64{negZero, otherNaN, x} {
		ad.buckets = append(ad.buckets, bucket{x: v, sum: bitsSum(v)})
	}
	if got := ad.find(slices.Clone(x), bitsSum(x)); got != 2 {
		t.Fatalf("find(x) = %d, want bucket 2", got)
	}
	for i, v := range [][]float64{negZero, otherNaN} {
		if bitsSum(v) == bitsSum(x) {
			t.Fatalf("vector %d: the same checksum as x", i)
		}
		if got := ad.find(slices.Clone(v), bitsSum(v)); got != i {
			t.Fatalf("find(vector %d) = %d", i, got)
		}
	}
	// A bucket whose checksum matches x's but whose vector is not x.
	ad.buckets = []bucket{{x: negZero, sum: bitsSum(x)}}
	if got := ad.find(x, bitsSum(x)); got != -1 {
		t.Fatalf("find(x) = %d on a checksum match alone, want -1", got)
	}
	if got := ad.find([]float64{9, 9, 9, 9, 9}, bitsSum(x)); got != -1 {
		t.Fatalf("find of another vector = %d, want -1", got)
	}
}

// The first host's vectors at no replica in force go to a sweeper of their
// own: the built-in admission processor reads the demand there, not the
// window, so after its first sweep that sweeper computes nothing again,
// decision point after decision point, while the others' vectors move
// with the window. The decisions are those of a decider whose first host
// sweeps every vector with one sweeper, and the meter counts both
// sweepers' work.
func TestIdleCountHasItsOwnSweeper(t *testing.T) {
	r, err := Prepare(loadCrane(t)[0], Shifted(), 1)
	if err != nil {
		t.Fatal(err)
	}
	m := &Meter{}
	p, err := Activation(ActivationConfig{Values: []float64{0.3, 0.5, 0.7}, Meter: m})
	if err != nil {
		t.Fatal(err)
	}
	decider := func() *activationDecider {
		d, err := p.(*activation).NewSweep(r)
		if err != nil {
			t.Fatal(err)
		}
		return d.(*activationDecider)
	}
	ad, one := decider(), decider()
	one.idle = one.sweepers[0]
	one.metered = false
	prev := [][]int{{0, 0}, {3, 3}, {8, 8}}
	grid := func() [][]int { return [][]int{make([]int, 2), make([]int, 2), make([]int, 2)} }
	out, want := grid(), grid()
	decided := int64(0)
	for dp := 0; dp < r.Decisions(); dp += 97 {
		if err := ad.DecideAll(dp, prev, out); err != nil {
			t.Fatal(err)
		}
		if err := one.DecideAll(dp, prev, want); err != nil {
			t.Fatal(err)
		}
		for j := range out {
			if !slices.Equal(out[j], want[j]) {
				t.Fatalf("decision %d, knob value %d: %v with a sweeper for count 0, %v with one sweeper", dp, j, out[j], want[j])
			}
		}
		decided++
	}
	idle, other := ad.idle.Work(), ad.sweepers[0].Work()
	if idle.Sweeps != decided || idle.FullForward != 1 || idle.Nodes != idle.FullNodes/idle.Sweeps {
		t.Fatalf("%d decision points: the idle sweeper %+v; want a sweep each, computing the first one's nodes only", decided, idle)
	}
	if other.Sweeps != 2*decided || other.Nodes <= other.FullNodes/other.Sweeps {
		t.Fatalf("%d decision points: the other counts' sweeper %+v; want two sweeps each, computing nodes after the first", decided, other)
	}
	share := float64(idle.Nodes+other.Nodes) / float64(idle.FullNodes+other.FullNodes)
	if got := m.Read().FirstNodeShare; got != share {
		t.Fatalf("the meter reads %v of full passes' nodes; the two sweepers computed %v", got, share)
	}
}

// byCount orders the knob values by the count in force from the last
// decision point's order: counts that move a few at a time (the order
// mended), many at once (sorted afresh), ties, on every host of the table.
func TestByCount(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	const knobs, hosts = 113, 4
	prev := make([][]int, knobs)
	for j := range prev {
		prev[j] = make([]int, hosts)
	}
	orders := make([][]int, hosts)
	for h := range orders {
		orders[h] = make([]int, knobs)
		for j := range orders[h] {
			orders[h][j] = j
		}
	}
	var mended, sorted int
	for round := range 2000 {
		many := r.IntN(8) == 0
		for j := range prev {
			for h := range prev[j] {
				if many || r.IntN(40) == 0 {
					prev[j][h] = r.IntN(30)
				}
			}
		}
		for h, order := range orders {
			descents := 0
			for i := 1; i < len(order); i++ {
				if prev[order[i]][h] < prev[order[i-1]][h] {
					descents++
				}
			}
			if descents > maxDescents {
				sorted++
			} else if descents > 0 {
				mended++
			}
			byCount(order, prev, h)
			seen := make([]bool, knobs)
			for i, j := range order {
				if seen[j] {
					t.Fatalf("round %d host %d: knob value %d twice in %v", round, h, j, order)
				}
				seen[j] = true
				if i > 0 && prev[j][h] < prev[order[i-1]][h] {
					t.Fatalf("round %d host %d: count %d after %d at %d", round, h, prev[j][h], prev[order[i-1]][h], i)
				}
			}
		}
	}
	if mended < 1000 || sorted < 500 {
		t.Fatalf("the order mended %d times, sorted afresh %d times", mended, sorted)
	}
}
