package nomadusage

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

func reading(node string, at time.Time, cpu float64, replicas int) *Reading {
	return &Reading{NodeID: node, NodeName: node, Time: at, Observation: engine.Observation{
		Host: node, CPUCapacityMHz: 1000, RunningReplicas: replicas, ReplicaCPUDemandMHz: 10,
		RequestedCPUMHz: float64(10 * replicas),
		Samples:         []engine.Sample{{Time: at.Unix(), CPUMHz: cpu}},
	}}
}

// warmReading is a reading whose sample sums the warm replicas' usage
// (running less warming), as ReadHosts gives it.
func warmReading(at time.Time, cpu float64, running, warming int) *Reading {
	r := reading("a", at, cpu, running)
	r.Observation.WarmingReplicas = warming
	return r
}

// withDemand sets r's replica CPU demand.
func withDemand(r *Reading, mhz float64) *Reading {
	r.Observation.ReplicaCPUDemandMHz = mhz
	return r
}

func cpus(o engine.Observation) []float64 {
	out := make([]float64, len(o.Samples))
	for i, s := range o.Samples {
		out[i] = s.CPUMHz
	}
	return out
}

// checkSamples fails t unless o's samples' CPU is want.
func checkSamples(t *testing.T, o engine.Observation, want []float64) {
	t.Helper()
	if got := cpus(o); !slices.Equal(got, want) {
		t.Fatalf("samples %v, want %v", got, want)
	}
}

// TestWindowWithStoppedMemory: a replica stopped while warming counts at
// the larger of its memory peak and its requested memory, as it did.
func TestWindowWithStoppedMemory(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	w, err := NewWindow(5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i, mem := range []float64{300, 100, -1} {
		r := warmReading(t0.Add(time.Duration(i)*time.Second), 50, 1, 1)
		if mem < 0 {
			r = reading("a", r.Time, 0, 0)
		}
		r.Observation.RequestedMemoryMB = 200 * float64(r.Observation.RunningReplicas)
		r.Observation.Samples[0].MemoryMB = max(mem, 0)
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	o, err := w.ObservationWithStopped(t0.Add(2*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Samples) != 2 || o.Samples[0].MemoryMB != 300 || o.Samples[1].MemoryMB != 300 {
		t.Errorf("samples %+v, want two at 300 MB (the peak, above the 200 MB request)", o.Samples)
	}
}

func TestWindow(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	cases := []struct {
		name    string
		size    int
		maxAge  time.Duration
		adds    []*Reading
		now     time.Time
		want    []float64
		wantErr error
		stopped int // the observation's StoppedReplicas
	}{
		{"empty", 3, time.Minute, nil, sec(0), nil, ErrEmpty, 0},
		{"keeps the last size samples", 3, time.Minute,
			[]*Reading{reading("a", sec(0), 1, 1), reading("a", sec(1), 2, 1), reading("a", sec(2), 3, 1), reading("a", sec(3), 4, 1)},
			sec(3), []float64{2, 3, 4}, nil, 0},
		{"same second replaces", 3, time.Minute,
			[]*Reading{reading("a", sec(0), 1, 1), reading("a", sec(1), 2, 1), reading("a", sec(1).Add(500*time.Millisecond), 5, 1)},
			sec(2), []float64{1, 5}, nil, 0},
		{"old samples drop out", 5, 10 * time.Second,
			[]*Reading{reading("a", sec(0), 1, 1), reading("a", sec(8), 2, 1), reading("a", sec(15), 3, 1)},
			sec(15), []float64{2, 3}, nil, 0},
		{"stale", 5, 10 * time.Second,
			[]*Reading{reading("a", sec(0), 1, 1), reading("a", sec(1), 2, 1)},
			sec(12), nil, ErrStale, 0},
		{"new node starts afresh", 5, time.Minute,
			[]*Reading{reading("a", sec(0), 1, 1), reading("b", sec(1), 2, 1)},
			sec(1), []float64{2}, nil, 0},
		{"rescaled to the current replicas", 5, time.Minute,
			[]*Reading{reading("a", sec(0), 10, 2), reading("a", sec(1), 0, 0), reading("a", sec(2), 40, 4)},
			sec(2), []float64{20, 40}, nil, 0},
		// 2 warm replicas at 100 each; then 4 more start (warming): the
		// sample is still the 2 warm ones' 200, and the old sample is not
		// tripled (per warm replica it stays 100).
		{"rescaled by the warm replicas", 5, time.Minute,
			[]*Reading{warmReading(sec(0), 200, 2, 0), warmReading(sec(1), 200, 6, 4)},
			sec(1), []float64{200, 200}, nil, 0},
		// Every replica warming: samples sum all running replicas.
		{"every replica warming", 5, time.Minute,
			[]*Reading{warmReading(sec(0), 200, 2, 0), warmReading(sec(1), 30, 6, 6)},
			sec(1), []float64{600, 30}, nil, 0},
		// Plain Observation (the provider's) keeps the samples as they
		// were when none runs: no StoppedReplicas (ObservationWithStopped
		// below).
		{"none running: as read", 5, time.Minute,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(1), 0, 0)},
			sec(1), []float64{300, 0}, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWindow(tc.size, tc.maxAge)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.adds {
				if err := w.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			o, err := w.Observation(tc.now)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkSamples(t, o, tc.want)
			if err := o.Validate("test"); err != nil {
				t.Fatalf("window observation invalid: %v", err)
			}
			last := tc.adds[len(tc.adds)-1].Observation
			if o.RunningReplicas != last.RunningReplicas || o.Host != last.Host {
				t.Errorf("observation fields not from the latest reading: %+v", o)
			}
			if o.StoppedReplicas != tc.stopped {
				t.Errorf("stopped replicas %d, want %d", o.StoppedReplicas, tc.stopped)
			}
		})
	}
}

func TestWindowRefuses(t *testing.T) {
	if _, err := NewWindow(0, time.Second); err == nil {
		t.Error("size 0 accepted")
	}
	if _, err := NewWindow(1, 0); err == nil {
		t.Error("max age 0 accepted")
	}
	w, _ := NewWindow(3, time.Minute)
	t0 := time.Unix(1_700_000_000, 0)
	if err := w.Add(reading("a", t0, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(reading("a", t0.Add(-StatsLag), 1, 1)); err == nil {
		t.Error("a reading StatsLag older was accepted")
	}
	if err := w.Add(&Reading{NodeID: "a", Time: t0.Add(time.Second)}); err == nil {
		t.Error("a reading without a sample was accepted")
	}
	if w.Len() != 1 {
		t.Errorf("refused readings changed the window: len %d", w.Len())
	}
	var se *StaleError
	_, err := w.Observation(t0.Add(2 * time.Minute))
	if !errors.As(err, &se) || se.MaxAge != time.Minute {
		t.Errorf("stale error = %v", err)
	}
}

// The two clocks a window's readings carry: a measured reading (the Nomad
// client's Timestamp) and an unmeasured one (the reader's clock) may be out
// of order. A measured one drops the newer unmeasured samples; an
// unmeasured one older than a measured sample adds no sample but is the
// latest reading; a measured one StatsLag or more older than a measured
// sample is refused and leaves the window as it was, and one less older
// drops the newer unmeasured samples too, adds none, and is the latest
// reading.
func TestWindowTwoClocks(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	measured := func(at time.Time, cpu float64) *Reading { return reading("a", at, cpu, 1) }
	unmeasured := func(at time.Time, running int) *Reading {
		r := reading("a", at, 0, running)
		r.ReadTime = true
		return r
	}
	cases := []struct {
		name    string
		adds    []*Reading
		wantErr bool
		wantLen int
		// the latest reading's replicas
		wantRunning int
	}{
		{"client behind: a measured reading drops the newer unmeasured ones",
			[]*Reading{unmeasured(t0, 0), unmeasured(t0.Add(10*time.Second), 0), measured(t0.Add(-20*time.Second), 100)}, false, 1, 1},
		{"client ahead: an unmeasured reading older than a measured sample adds none",
			[]*Reading{measured(t0, 100), measured(t0.Add(10*time.Second), 100), unmeasured(t0.Add(-5*time.Second), 0)}, false, 2, 0},
		{"a measured reading StatsLag older than a measured sample is refused, the window unchanged",
			[]*Reading{measured(t0, 100), unmeasured(t0.Add(20*time.Second), 0), measured(t0.Add(-10*time.Minute), 100)}, true, 2, 0},
		{"a measured reading a little older than a measured sample drops the newer unmeasured ones, adds none, and is the latest reading",
			[]*Reading{measured(t0, 100), unmeasured(t0.Add(20*time.Second), 0), measured(t0.Add(-10*time.Second), 100)}, false, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := NewWindow(10, time.Hour)
			var err error
			for _, r := range tc.adds {
				err = w.Add(r)
			}
			if (err != nil) != tc.wantErr || w.Len() != tc.wantLen {
				t.Fatalf("last Add: %v, window of %d; want error %v, %d samples", err, w.Len(), tc.wantErr, tc.wantLen)
			}
			o, oerr := w.Observation(t0.Add(time.Minute))
			if oerr != nil || o.RunningReplicas != tc.wantRunning {
				t.Fatalf("observation %d running, %v; want %d", o.RunningReplicas, oerr, tc.wantRunning)
			}
		})
	}
}

// TestWindowRefusesBadSample: a reading whose sample no host can show is
// refused before it enters, so the window's next observation is the good
// samples' alone.
func TestWindowRefusesBadSample(t *testing.T) {
	w, err := NewWindow(10, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	mk := func(at time.Time, cpu, mem float64) *Reading {
		r := &Reading{NodeID: "n1", Time: at}
		r.Observation.RunningReplicas = 1
		r.Observation.Samples = []engine.Sample{{Time: at.Unix(), CPUMHz: cpu, MemoryMB: mem}}
		return r
	}
	if err := w.Add(mk(now.Add(-2*time.Second), 100, 10)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][2]float64{{-1, 10}, {math.NaN(), 10}, {math.Inf(1), 10}, {100, -1}, {100, math.NaN()}, {2e9, 10}, {100, 1.7e13}} {
		if err := w.Add(mk(now.Add(-time.Second), bad[0], bad[1])); !errors.Is(err, ErrBadUsage) {
			t.Errorf("sample cpu %v memory %v: err %v, want ErrBadUsage", bad[0], bad[1], err)
		}
	}
	o, err := w.Observation(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Samples) != 1 || o.Samples[0].CPUMHz != 100 {
		t.Errorf("samples %+v, want the one good sample", o.Samples)
	}
}

// TestWindowStatsOutOfStep: a reading's time can fall back a little
// between evaluations (the median of other allocations' stats times:
// another draw of StatsSample, one that did not answer); such a reading
// adds no sample, the window's samples stay as they were (never older
// usage stamped newer), and it is the latest reading. It was refused
// ("older than the newest sample") and the evaluation scaled nothing.
func TestWindowStatsOutOfStep(t *testing.T) {
	w, err := NewWindow(10, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	for _, r := range []*Reading{reading("a", t0.Add(-time.Minute), 100, 1), reading("a", t0, 200, 1), reading("a", t0.Add(-40*time.Second), 300, 3)} {
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	o, err := w.Observation(t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Samples) != 2 || o.Samples[1].Time != t0.Unix() || o.RunningReplicas != 3 {
		t.Errorf("samples %+v, %d running; want the two samples as they were, the latest reading's 3 replicas", o.Samples, o.RunningReplicas)
	}
	// Its usage stays out: rescaled to 3 replicas, the t0 sample is 200's.
	if got := o.Samples[1].CPUMHz; got != 600 {
		t.Errorf("the t0 sample's usage %v, want 200 per replica for 3 (600)", got)
	}
}

// TestWindowWithStopped: when none runs now, what the replicas that ran
// used stands for one replica (per replica, the readings while none ran
// left out), as the engine read it while they ran, so that it does not
// start them again at their request; not when fewer than the minimum are
// left.
func TestWindowWithStopped(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	cases := []struct {
		name    string
		maxAge  time.Duration
		min     int
		adds    []*Reading
		now     time.Time
		want    []float64
		stopped int
	}{
		{"the stopped replicas' usage per replica", time.Minute, 2,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(1), 0, 0), reading("a", sec(2), 90, 1), reading("a", sec(3), 0, 0)},
			sec(3), []float64{150, 90}, 1},
		{"fewer than the minimum: as read", time.Minute, 3,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(1), 0, 0), reading("a", sec(2), 90, 1), reading("a", sec(3), 0, 0)},
			sec(3), []float64{300, 0, 90, 0}, 0},
		{"none ran in the window", time.Minute, 1,
			[]*Reading{reading("a", sec(0), 0, 0), reading("a", sec(1), 0, 0)},
			sec(1), []float64{0, 0}, 0},
		// What they used stands past max age: no reading since says
		// anything newer of what a replica uses.
		{"the stopped replicas' usage past max age", 10 * time.Second, 1,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(8), 0, 0), reading("a", sec(15), 0, 0)},
			sec(15), []float64{150}, 1},
		// ... and past the window's size (five samples here).
		{"the stopped replicas' usage pushed out", time.Minute, 2,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(1), 100, 1), reading("a", sec(2), 0, 0),
				reading("a", sec(3), 0, 0), reading("a", sec(4), 0, 0), reading("a", sec(5), 0, 0),
				reading("a", sec(6), 0, 0), reading("a", sec(7), 0, 0)},
			sec(7), []float64{150, 100}, 1},
		// The first reading with none running comes a cooldown after
		// their last sample, longer than max age: what they used is read
		// within max age of that sample.
		{"stopped a cooldown after their last sample", 10 * time.Second, 1,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(3), 200, 2), reading("a", sec(12), 180, 1), reading("a", sec(30), 0, 0)},
			sec(30), []float64{100, 180}, 1},
		// A new job version with another demand: what the old replicas
		// used says nothing of the new ones.
		{"their demand changed", time.Minute, 1,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(1), 0, 0), withDemand(reading("a", sec(2), 0, 0), 20)},
			sec(2), []float64{300, 0, 0}, 0},
		{"stopped for a job version with another demand", time.Minute, 1,
			[]*Reading{reading("a", sec(0), 300, 2), withDemand(reading("a", sec(1), 0, 0), 20)},
			sec(1), []float64{300, 0}, 0},
		{"their last sample more than ten max ages before the stop", 10 * time.Second, 1,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(101), 0, 0)},
			sec(101), []float64{0}, 0},
		{"another node starts afresh", time.Minute, 1,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(1), 0, 0), reading("b", sec(2), 0, 0)},
			sec(2), []float64{0}, 0},
		// A replica that ran again replaces what the earlier ones used.
		{"replicas ran again", 10 * time.Second, 1,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(1), 0, 0), reading("a", sec(12), 60, 1),
				reading("a", sec(13), 0, 0)},
			sec(13), []float64{60}, 1},
		// The reading that stopped them replaced their last sample (the
		// same second): what they used was kept before.
		{"stopped within the second of their last sample", time.Minute, 1,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(0).Add(500*time.Millisecond), 0, 0)},
			sec(1), []float64{150}, 1},
		// A replica that warmed up for its whole life (stopped at the
		// default warm-up): the engine counted it at the larger of its
		// peak and its request (10), and so counts a new one.
		{"all warming when they ran: the peak", time.Minute, 1,
			[]*Reading{warmReading(sec(0), 50, 1, 1), warmReading(sec(1), 80, 1, 1), reading("a", sec(2), 0, 0)},
			sec(2), []float64{80, 80}, 1},
		{"all warming when they ran: the request", time.Minute, 1,
			[]*Reading{warmReading(sec(0), 5, 1, 1), warmReading(sec(1), 8, 1, 1), reading("a", sec(2), 0, 0)},
			sec(2), []float64{10, 10}, 1},
		{"all warming last: the peak of all", time.Minute, 1,
			[]*Reading{warmReading(sec(0), 400, 2, 0), warmReading(sec(1), 50, 2, 2), reading("a", sec(2), 0, 0)},
			sec(2), []float64{200, 200}, 1},
		// Warm, but no CPU at any sample: the engine read no usage, and
		// counted a replica at its request.
		{"warm with zero CPU throughout: the request", time.Minute, 1,
			[]*Reading{warmReading(sec(0), 0, 1, 0), warmReading(sec(1), 0, 1, 0), reading("a", sec(2), 0, 0)},
			sec(2), []float64{10, 10}, 1},
		// Warm ones last: the warming-only readings were read as usage
		// too (over the replicas they sum), as while they ran.
		{"warm ones last: each sample per replica", time.Minute, 1,
			[]*Reading{warmReading(sec(0), 50, 2, 2), warmReading(sec(1), 400, 2, 0), reading("a", sec(2), 0, 0)},
			sec(2), []float64{25, 200}, 1},
		{"replicas running: as Observation", time.Minute, 1,
			[]*Reading{reading("a", sec(0), 300, 2), reading("a", sec(1), 0, 0), reading("a", sec(2), 90, 1)},
			sec(2), []float64{150, 90}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWindow(5, tc.maxAge)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.adds {
				if err := w.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			o, err := w.ObservationWithStopped(tc.now, tc.min)
			if err != nil {
				t.Fatal(err)
			}
			checkSamples(t, o, tc.want)
			if o.StoppedReplicas != tc.stopped {
				t.Errorf("stopped replicas %d, want %d", o.StoppedReplicas, tc.stopped)
			}
			if err := o.Validate("test"); err != nil {
				t.Fatalf("window observation invalid: %v", err)
			}
		})
	}
}

// TestWindowStoppedKeptOnRefusedReading: a reading the window refuses
// (older than its newest sample by StatsLag or more) changes nothing, not
// what the stopped replicas used either.
func TestWindowStoppedKeptOnRefusedReading(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	w, err := NewWindow(5, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Reading{reading("a", t0, 300, 2), reading("a", t0.Add(10*time.Minute), 0, 0)} {
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Add(reading("a", t0.Add(10*time.Minute-StatsLag-time.Second), 90, 1)); !errors.Is(err, ErrOlderReading) {
		t.Fatalf("an older reading with a replica running: err %v, want ErrOlderReading", err)
	}
	o, err := w.ObservationWithStopped(t0.Add(10*time.Minute), 1)
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, o, []float64{150})
	if o.StoppedReplicas != 1 {
		t.Errorf("stopped replicas %d, want 1", o.StoppedReplicas)
	}
}

// A whole node read with no allocation running: its usage is no replica's,
// but it stays on the node, so its peak is what others take of it (never
// past the capacity), and the engine's counts leave room for it. With a
// job, or with replicas running, nothing is added.
func TestWindowWholeNodeLoad(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	node := func(i int, cpu, mem float64, running int, job string) *Reading {
		r := reading("n", at.Add(time.Duration(i)*time.Minute), cpu, running)
		r.Job = job
		r.Observation.MemoryCapacityMB = 2000
		r.Observation.OtherReservedCPUMHz, r.Observation.OtherReservedMemoryMB = 100, 50
		r.Observation.Samples[0].MemoryMB = mem
		return r
	}
	for _, tc := range []struct {
		name     string
		readings []*Reading
		cpu, mem float64
	}{
		{"an empty node's load stays", []*Reading{node(0, 600, 900, 0, ""), node(1, 760, 800, 0, ""), node(2, 500, 1200, 0, "")}, 100 + 760, 50 + 1200},
		{"never past the capacity", []*Reading{node(0, 1500, 900, 0, ""), node(1, 1400, 3000, 0, ""), node(2, 900, 100, 0, "")}, 1000, 2000},
		// Readings while allocations ran, then none: their usage left
		// with them; only the reading with none running is load (a review).
		{"samples read while allocations ran are not load", []*Reading{node(0, 900, 1500, 9, ""), node(1, 950, 1600, 9, ""), node(2, 900, 1500, 9, ""), node(3, 20, 100, 0, "")}, 100 + 20, 50 + 100},
		{"with replicas running, the usage is theirs", []*Reading{node(0, 600, 900, 3, ""), node(1, 700, 800, 3, "")}, 100, 50},
		{"with a job, the usage is the group's", []*Reading{node(0, 600, 900, 0, "web"), node(1, 700, 800, 0, "web")}, 100, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWindow(10, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.readings {
				if err := w.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			o, err := w.Observation(tc.readings[len(tc.readings)-1].Time)
			if err != nil {
				t.Fatal(err)
			}
			if o.OtherReservedCPUMHz != tc.cpu || o.OtherReservedMemoryMB != tc.mem {
				t.Fatalf("others take %v MHz, %v MB; want %v, %v", o.OtherReservedCPUMHz, o.OtherReservedMemoryMB, tc.cpu, tc.mem)
			}
			if err := o.Validate("test"); err != nil {
				t.Fatalf("the observation does not validate: %v", err)
			}
			// The counts leave room for the load: replicas of 10 MHz fit
			// in what it leaves of the node's 1000 MHz.
			if tc.readings[0].Job == "" && o.RunningReplicas == 0 {
				q := engine.Quota{Min: 0, Max: 110, PerBranch: 1, Rounding: engine.RoundNearest}.Spec()
				d, err := engine.Decide(engine.HostInput{Observation: &o, Quota: q}, engine.HostInput{Observation: &o, Quota: q})
				if err != nil {
					t.Fatal(err)
				}
				for _, hd := range []engine.HostDecision{d.First, d.Second} {
					if used := float64(hd.Containers)*10 + tc.cpu; used > 1000 {
						t.Errorf("%s host: %d replicas of 10 MHz beside %v MHz of load on 1000 MHz", hd.Role, hd.Containers, tc.cpu)
					}
				}
			}
		})
	}
}
