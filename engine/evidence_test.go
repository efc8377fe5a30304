package engine_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	. "github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// decideBoth decides o on both hosts, each from one sample on.
func decideBoth(t *testing.T, o Observation) *Decision {
	t.Helper()
	d, err := Decide(HostInput{Observation: &o, MinSamples: 1}, HostInput{Observation: &o, MinSamples: 1})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// No evidence is not low usage: replicas that report no usage yet, or are
// all warming, count at their requested resources; the counts never jump
// to the maximum because usage reads zero.
func TestColdStartNeverReadsAsRoom(t *testing.T) {
	// 4 replicas requesting 500 MHz on a 16000 MHz host: at their requests
	// 32 fit; at the one warm replica's 400 MHz, 40.
	tests := []struct {
		name  string
		obs   func() Observation
		bound int // the most replicas the evidence allows
	}{
		{"zero ticks", func() Observation { return testsupport.Flat(16000, 4, 0, 500, 10) }, 32},
		{"one zero sample", func() Observation { return testsupport.Flat(16000, 4, 0, 500, 1) }, 32},
		{"all warming, low usage", func() Observation {
			o := testsupport.Flat(16000, 4, 5, 500, 10)
			o.WarmingReplicas = 4
			return o
		}, 32},
		{"just started group, one replica warm of four", func() Observation {
			o := testsupport.Flat(16000, 4, 0, 500, 10)
			for i := range o.Samples {
				o.Samples[i].CPUMHz = 400 // the one warm replica's usage
			}
			o.WarmingReplicas = 3
			return o
		}, 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := decideBoth(t, tc.obs())
			for _, h := range []HostDecision{d.First, d.Second} {
				if h.Containers > tc.bound {
					t.Fatalf("%s host: %d containers, more than the %d the evidence allows (%s)", h.Role, h.Containers, tc.bound, h.Evidence.Note)
				}
				if h.Limit == LimitSlots {
					t.Fatalf("%s host: every slot counted with no evidence of usage", h.Role)
				}
			}
			if d.Second.Evidence.Basis == BasisObserved && d.Second.Evidence.Warming == 0 {
				t.Fatalf("evidence %+v: a cold window was read as observed usage", d.Second.Evidence)
			}
		})
	}
	// The probe: 4 replicas at 0 MHz with 500 MHz demand gave the
	// second host 110 containers.
	o := testsupport.Flat(16000, 4, 0, 500, 10)
	if d := decideBoth(t, o); d.Second.Containers == 110 {
		t.Fatal("zero usage still reads as infinite room")
	}
}

// mustStep is ParseStep of a step the test knows to be valid.
func mustStep(t *testing.T) func(string) Step {
	return func(s string) Step {
		t.Helper()
		st, err := ParseStep(s)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

func TestStepLimits(t *testing.T) {
	must := mustStep(t)
	tests := []struct {
		name                    string
		steps                   Steps
		current, target, lo, hi int
		want, held              int
	}{
		{"2 to 78 under max_scale_up 4", Steps{MaxUp: must("4")}, 2, 78, 0, 110, 6, 72},
		{"percent up", Steps{MaxUp: must("50%")}, 10, 40, 0, 110, 15, 25},
		{"percent up from zero moves one", Steps{MaxUp: must("50%")}, 0, 40, 0, 110, 1, 39},
		{"down limited", Steps{MaxDown: must("3")}, 20, 2, 0, 110, 17, -15},
		{"hysteresis holds a wobble", Steps{Hysteresis: must("2")}, 10, 11, 0, 110, 10, 1},
		{"hysteresis lets a real change through", Steps{Hysteresis: must("2")}, 10, 13, 0, 110, 13, 0},
		{"relative hysteresis", Steps{Hysteresis: must("10%")}, 40, 37, 0, 110, 40, -3},
		{"no limits", Steps{}, 2, 78, 0, 110, 78, 0},
		{"none written", Steps{MaxUp: must(StepNone), MaxDown: must(" none "), Hysteresis: must(StepNone)}, 2, 78, 0, 110, 78, 0},
		{"outside the quota moves in at once", Steps{MaxUp: must("1")}, 0, 12, 10, 20, 10, 2},
		{"above the quota moves down at once", Steps{MaxDown: must("1")}, 50, 15, 10, 20, 20, -5},
		// A percentage rounds up, as HPA's percent policies do (HPA keeps
		// int(9 x 0.75) = 6 of 9 at 25% down); a hysteresis band holds a
		// change smaller than its share.
		{"percent down rounds up, as HPA's", Steps{MaxDown: must("25%")}, 9, 2, 0, 110, 6, -4},
		{"percent down of 17", Steps{MaxDown: must("25%")}, 17, 2, 0, 110, 12, -10},
		{"percent down moves at least one", Steps{MaxDown: must("10%")}, 5, 2, 0, 110, 4, -2},
		{"percent down, half of 9", Steps{MaxDown: must("50%")}, 9, 0, 0, 110, 4, -4},
		{"percent up rounds up", Steps{MaxUp: must("25%")}, 9, 40, 0, 110, 12, 28},
		// A decimal percentage whose share is whole is that share, not
		// one more (2.2% of 1500 is 33; the float gives 33.000000000000004).
		{"a decimal percentage's whole share", Steps{MaxUp: must("2.2%")}, 1500, 1600, 0, 2000, 1533, 67},
		{"a decimal percentage's whole share down", Steps{MaxDown: must("4.6%")}, 1500, 1000, 0, 2000, 1431, -431},
		{"relative hysteresis holds less than its share", Steps{Hysteresis: must("10%")}, 11, 12, 0, 110, 11, 1},
		{"relative hysteresis lets its share through", Steps{Hysteresis: must("10%")}, 20, 18, 0, 110, 18, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.steps.Apply(tc.current, tc.target, tc.lo, tc.hi)
			if got.Count != tc.want || got.Held != tc.held {
				t.Fatalf("Apply(%d -> %d) = %+v; want count %d held %d", tc.current, tc.target, got, tc.want, tc.held)
			}
			if got.Count < tc.lo || got.Count > tc.hi {
				t.Fatalf("count %d outside the quota [%d, %d]", got.Count, tc.lo, tc.hi)
			}
			if (got.Held != 0) != (got.Why != "") {
				t.Fatalf("held %d but why %q", got.Held, got.Why)
			}
		})
	}
	for _, bad := range []string{"0", "-1", "x", "0%", "-5%", "NaN%", "1.5", "None", "none%"} {
		if _, err := ParseStep(bad); err == nil {
			t.Errorf("step %q accepted", bad)
		}
	}
}

// Control is Apply with hysteresis waived for a safety move (a scale-down
// the running replicas need, a first replica from 0), and only then.
func TestStepsControl(t *testing.T) {
	must := mustStep(t)
	band := Steps{Hysteresis: must("2"), MaxDown: must("3")}
	tests := []struct {
		name                    string
		steps                   Steps
		current, target, lo, hi int
		overloaded              bool
		want                    int
		waived                  string
	}{
		{"a wobble down is held", band, 10, 9, 0, 110, false, 10, ""},
		{"an overloaded replica goes", band, 10, 9, 0, 110, true, 9, "the running replicas do not fit"},
		{"overloaded, a real change: nothing waived", band, 10, 8, 0, 110, true, 8, ""},
		{"overloaded still within max_scale_down", band, 10, 2, 0, 110, true, 7, ""},
		{"an overloaded flag does not move a count up", band, 10, 11, 0, 110, true, 10, ""},
		{"the first replica starts", band, 0, 1, 0, 110, false, 1, "the group's first replica"},
		{"no band: Apply", Steps{MaxDown: must("3")}, 10, 9, 0, 110, true, 9, ""},
		{"the quota still bounds it", band, 0, 1, 0, 0, false, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, waived := tc.steps.Control(tc.current, tc.target, tc.lo, tc.hi, tc.overloaded)
			if got.Count != tc.want {
				t.Fatalf("Control(%d -> %d, overloaded %v) = %+v; want count %d", tc.current, tc.target, tc.overloaded, got, tc.want)
			}
			if (tc.waived == "") != (waived == "") || !strings.Contains(waived, tc.waived) {
				t.Fatalf("waived %q; want %q", waived, tc.waived)
			}
			if !tc.overloaded && tc.current != 0 {
				if plain := tc.steps.Apply(tc.current, tc.target, tc.lo, tc.hi); plain != got {
					t.Fatalf("no safety move, yet Control %+v differs from Apply %+v", got, plain)
				}
			}
		})
	}
	// HostDecision.Overloads: a running replica refused (first host), a
	// safe amount below the running ones by CPU or memory (second), in
	// replicas whatever the count's per_branch.
	in, out := LayerInput, LayerOutput
	for _, tc := range []struct {
		hd      HostDecision
		running int
		want    bool
	}{
		{HostDecision{Layer: out, Amount: 3, Limit: LimitCPU}, 4, true},
		{HostDecision{Layer: out, Amount: 3, Limit: LimitMemory}, 4, true},
		{HostDecision{Layer: out, Amount: 3, Limit: LimitSlots}, 4, false},
		{HostDecision{Layer: out, Amount: 4, Limit: LimitCPU}, 4, false},
		{HostDecision{Layer: out, Amount: 8, Containers: 2, Limit: LimitCPU}, 4, false}, // per_branch 0.25: fits
		{HostDecision{Layer: in, Amount: 3, Limit: LimitCPU, Refused: &RefusedSlot{Running: true}}, 4, true},
		{HostDecision{Layer: in, Amount: 6, Limit: LimitCPU, Refused: &RefusedSlot{Running: false}}, 4, false}, // a new replica refused
		{HostDecision{Layer: in, Amount: 4, Limit: LimitDemand}, 4, false},
	} {
		if got := tc.hd.Overloads(tc.running); got != tc.want {
			t.Errorf("%+v with %d running: Overloads %v, want %v", tc.hd, tc.running, got, tc.want)
		}
	}
}

func TestPlacement(t *testing.T) {
	// A 16-core node (16000 MHz, 32 GB); replicas reserve 2000 MHz and 1 GB
	// but use 200 MHz: the engine counts far more than Nomad places.
	o := testsupport.Flat(16000, 4, 200, 2000, 30)
	o.MemoryCapacityMB, o.RequestedMemoryMB, o.ReplicaMemoryDemandMB = 32768, 4096, 1024
	for i := range o.Samples {
		o.Samples[i].MemoryMB = 4 * 600
	}
	o.OtherReservedCPUMHz, o.OtherReservedMemoryMB = 2000, 4096
	d, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []HostDecision{d.First, d.Second} {
		pl := h.Placement
		if pl.Placeable != 7 { // (16000-2000)/2000
			t.Fatalf("%s: placeable %d, want 7", h.Role, pl.Placeable)
		}
		if h.Containers <= pl.Placeable {
			t.Fatalf("%s: the engine's %d should exceed what Nomad places", h.Role, h.Containers)
		}
		// The reservation places the count: the sum fits what is free.
		if float64(pl.CPUMHz*h.Containers) > pl.FreeCPUMHz || float64(pl.MemoryMB*h.Containers) > pl.FreeMemoryMB {
			t.Fatalf("%s: %d x (%d MHz, %d MB) does not fit (%v MHz, %v MB) free", h.Role, h.Containers, pl.CPUMHz, pl.MemoryMB, pl.FreeCPUMHz, pl.FreeMemoryMB)
		}
		if pl.MemoryMaxMB < 600 || pl.MemoryMaxMB < pl.MemoryMB {
			t.Fatalf("%s: memory_max %d below the replica's peak of 600 MB or its reservation %d", h.Role, pl.MemoryMaxMB, pl.MemoryMB)
		}
		if pl.CPUMHz > 2000 || pl.MemoryMB > 1024 {
			t.Fatalf("%s: reservation (%d, %d) above today's request", h.Role, pl.CPUMHz, pl.MemoryMB)
		}
	}
}

// With queued_replicas, the queued replicas in the count keep their own
// demand: the reservation is for the workload's replicas in what the queued
// ones leave, and fits counts both. The reservation was the free resources
// over the whole count, so 4 x 2000 MHz + 10000 MHz queued on 14000 MHz free
// was reported as fitting.
func TestPlacementQueuedReplicas(t *testing.T) {
	for _, tc := range []struct {
		name                string
		queued              []Replica
		quota               *QuotaSpec
		containers, inQueue int
		cpuMHz, memoryMB    int
		fits                bool
		summary             string
	}{
		{"the queued ones leave room", []Replica{{CPUMHz: 6000, MemoryMB: 4096}, {CPUMHz: 4000, MemoryMB: 1024}}, nil,
			6, 2, 1000, 512, true, "reserving 1000 MHz, 512 MB (memory_max 600 MB) each for the workload's 4 (the 2 queued at their own demand) places all 6"},
		{"the queued one alone does not fit", []Replica{{CPUMHz: 15000, MemoryMB: 1024}}, testsupport.Quota(6, 10, 1, RoundNearest),
			6, 1, MinReservationCPUMHz, 512, false, "even the smallest reservation, 1 MHz, 512 MB each for the workload's 5 (the 1 queued at their own demand), does not place all 6"},
		{"no queue in the count", []Replica{}, nil, 4, 0, 2000, 512, true, "reserving 2000 MHz, 512 MB (memory_max 600 MB) each places all 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testsupport.Flat(16000, 4, 200, 2000, 30)
			o.MemoryCapacityMB, o.RequestedMemoryMB, o.ReplicaMemoryDemandMB = 32768, 4*512, 512
			for i := range o.Samples {
				o.Samples[i].MemoryMB = 4 * 600
			}
			o.OtherReservedCPUMHz, o.OtherReservedMemoryMB = 2000, 4096
			o.QueuedReplicas = tc.queued
			d, err := Decide(HostInput{Observation: &o, Quota: tc.quota}, HostInput{Observation: testsupport.AsSecond(&o)})
			if err != nil {
				t.Fatal(err)
			}
			h := d.First
			pl := h.Placement
			if h.Containers != tc.containers || pl.Queued != tc.inQueue || pl.CPUMHz != tc.cpuMHz || pl.MemoryMB != tc.memoryMB || pl.Fits != tc.fits {
				t.Fatalf("%d containers, placement %+v; want %d containers, %d queued, %d MHz, %d MB, fits %v",
					h.Containers, pl, tc.containers, tc.inQueue, tc.cpuMHz, tc.memoryMB, tc.fits)
			}
			if got := pl.Summary(h.Containers); !strings.Contains(got, tc.summary) {
				t.Fatalf("summary %q does not say %q", got, tc.summary)
			}
			// What fits says holds: the workload's replicas at the
			// reservation and the queued ones at their demand.
			cpu, mem := float64((h.Containers-pl.Queued)*pl.CPUMHz), float64((h.Containers-pl.Queued)*pl.MemoryMB)
			for _, r := range tc.queued[:pl.Queued] {
				cpu, mem = cpu+r.CPUMHz, mem+r.MemoryMB
			}
			if fits := cpu <= pl.FreeCPUMHz && mem <= pl.FreeMemoryMB; fits != pl.Fits {
				t.Fatalf("fits %v, but %v MHz and %v MB of %v and %v free", pl.Fits, cpu, mem, pl.FreeCPUMHz, pl.FreeMemoryMB)
			}
		})
	}
}

// memory_max covers a replica's measured memory peak whether or not the
// host's memory capacity is known: without it memory is not judged, but a
// reservation capped at the request would still cap real use.
func TestPlacementMemoryMaxCoversPeak(t *testing.T) {
	for _, tc := range []struct {
		name       string
		capacityMB float64
		othersMB   float64 // other workloads' memory reservations
		sampleMB   float64 // the group's memory at every sample (6 replicas)
		stopped    bool    // the replicas stopped since: none runs, the samples are theirs
		want       int
	}{
		{"capacity known, replicas above their request", 65536, 0, 6 * 5000, false, 5000},
		// the peak is read as a share of the room (65536 - 49152), not of
		// the capacity: 4x too much before
		{"capacity known, others reserve most of it", 65536, 49152, 6 * 1000, false, 1000},
		{"capacity unknown, replicas above their request", 0, 0, 6 * 5000, false, 5000},
		{"capacity unknown, replicas below their request", 0, 0, 6 * 300, false, 512},
		{"capacity unknown, no memory measured", 0, 0, 0, false, 512},
		// what the replicas that stopped showed, as the engine reads their
		// CPU (the first new one counts as the running one it will be)
		{"capacity unknown, stopped replicas above their request", 0, 0, 6 * 5000, true, 5000},
		{"capacity known, stopped replicas above their request", 65536, 0, 6 * 5000, true, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testsupport.Flat(16000, 6, 200, 1000, 30)
			o.MemoryCapacityMB, o.RequestedMemoryMB, o.ReplicaMemoryDemandMB = tc.capacityMB, 6*512, 512
			o.OtherReservedMemoryMB = tc.othersMB
			for i := range o.Samples {
				o.Samples[i].MemoryMB = tc.sampleMB
			}
			if tc.stopped {
				o.StoppedReplicas, o.RunningReplicas, o.RequestedCPUMHz, o.RequestedMemoryMB = 6, 0, 0, 0
			}
			d, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range []HostDecision{d.First, d.Second} {
				if got := h.Placement.MemoryMaxMB; got != tc.want {
					t.Errorf("%s: memory_max %d MB, want %d (the larger of the request, 512, and the peak per replica)", h.Role, got, tc.want)
				}
			}
		})
	}
}

// Without memory figures the reservation keeps Nomad's minimums, and a
// count whose minimum reservations do not fit says so.
func TestPlacementMinimums(t *testing.T) {
	o := testsupport.Flat(16000, 4, 200, 2000, 30) // no memory at all
	d, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)})
	if err != nil {
		t.Fatal(err)
	}
	pl := d.Second.Placement
	if pl.MemoryMB < MinReservationMemoryMB || pl.CPUMHz < MinReservationCPUMHz || !pl.Fits {
		t.Fatalf("placement %+v: want at least the minimums and a fit", pl)
	}
	tiny := testsupport.Flat(5, 1, 0.01, 0.01, 30) // a 5 MHz host: 1 MHz each fits 5 at most
	tiny.RequestedCPUMHz = 0.01
	d, err = Decide(HostInput{Observation: &tiny, Quota: testsupport.Quota(6, 10, 1, RoundNearest)}, HostInput{Observation: &tiny})
	if err != nil {
		t.Fatal(err)
	}
	if d.First.Placement.Fits || d.First.Containers < 6 {
		t.Fatalf("6 replicas at 1 MHz on 5 MHz reported as fitting: %+v", d.First.Placement)
	}
	// A vanishing memory request places as many as Nomad's smallest
	// reservation (10 MB) lets: 6,553 in 65,536 MB (not a huge float's int,
	// which wrapped to a negative count, nor the limit).
	wide := testsupport.Flat(16000, 2, 100, 1e-9, 30)
	wide.MemoryCapacityMB, wide.RequestedMemoryMB, wide.ReplicaMemoryDemandMB = 65536, 2e-15, 1e-15
	d, err = Decide(HostInput{Observation: &wide}, HostInput{Observation: &wide})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Second.Placement.Placeable, 65536/MinReservationMemoryMB; got != want {
		t.Fatalf("placeable %d with vanishing requests, want %d", got, want)
	}
}

// Every evidence note, as a decision returns it, for each way the window
// is read and each memory case.
func TestEvidenceNotes(t *testing.T) {
	obs := func(running, warming int, cpu float64, memCap, memSample float64) *Observation {
		o := &Observation{Host: "h", CPUCapacityMHz: 4000, RunningReplicas: running, WarmingReplicas: warming,
			ReplicaCPUDemandMHz: 250, RequestedCPUMHz: 250 * float64(running), MemoryCapacityMB: memCap,
			ReplicaMemoryDemandMB: 256, RequestedMemoryMB: 256 * float64(running)}
		for i := range 6 {
			o.Samples = append(o.Samples, Sample{Time: int64(60 * i), CPUMHz: cpu, MemoryMB: memSample})
		}
		return o
	}
	cases := []struct {
		name string
		o    *Observation
		want string
	}{
		{"empty host", obs(0, 0, 0, 8192, 0), "no replica running: a replica counts at its demand"},
		{"usage with none running", obs(0, 0, 600, 8192, 900), "no replica running: a replica counts at its demand (the window's usage is read as no replica's, none running: a load that stays on the host belongs in other_reserved_cpu_mhz and other_reserved_memory_mb)"},
		{"stopped, with a queue", func() *Observation {
			o := obs(0, 0, 600, 8192, 900)
			o.StoppedReplicas = 2
			o.QueuedReplicas = []Replica{{CPUMHz: 250, MemoryMB: 256}}
			return o
		}(), "no replica running: a replica counts at its demand (the window's usage, that of the replicas that stopped, is read as no replica's: the queue gives each new replica's size)"},
		{"stopped, no usage", func() *Observation {
			o := obs(0, 0, 0, 8192, 0)
			o.StoppedReplicas = 2
			return o
		}(), "no replica running: a replica counts at its demand"},
		{"stopped", func() *Observation {
			o := obs(0, 0, 600, 8192, 900)
			o.StoppedReplicas = 2
			return o
		}(), "no replica running: the first new replica counts as the running one it will be, at what the replicas that stopped used per replica, and later ones at no less than that nor than their demand"},
		{"observed", obs(3, 0, 600, 8192, 900), "observed: 3 replica(s) running"},
		{"some warming", obs(5, 2, 600, 8192, 900), "observed: 3 of 5 replica(s) warm, the 2 warming count at the warm ones' usage"},
		{"no usage yet", obs(2, 0, 0, 8192, 900), "no usage reported yet: 2 replica(s) count at their requested resources"},
		{"no usage yet, samples at -0", obs(2, 0, math.Copysign(0, -1), 8192, 900), "no usage reported yet: 2 replica(s) count at their requested resources"},
		{"memory sampled at -0", obs(3, 0, 600, 8192, math.Copysign(0, -1)), "observed: 3 replica(s) running; memory not in the samples: replicas count at their requested memory"},
		{"all warming", obs(4, 4, 600, 8192, 900), "all 4 replica(s) warming: each counts at the larger of its peak usage and its request"},
		{"as many warming as warm", obs(6, 3, 600, 8192, 900), "observed: 3 of 6 replica(s) warm, the 3 warming count at the warm ones' usage"},
		{"more warming than warm", obs(5, 3, 600, 8192, 900), "observed: 2 of 5 replica(s) warm, the 3 warming count at the warm ones' usage"},
		{"memory not sampled", obs(3, 0, 600, 8192, 0), "observed: 3 replica(s) running; memory not in the samples: replicas count at their requested memory"},
		{"memory not judged", obs(3, 0, 600, 0, 0), "observed: 3 replica(s) running; memory not judged (memory capacity unknown)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Decide(HostInput{Observation: c.o}, HostInput{Observation: obs(2, 0, 500, 8192, 700)})
			if err != nil {
				t.Fatal(err)
			}
			if d.First.Evidence.Note != c.want {
				t.Fatalf("note %q, want %q", d.First.Evidence.Note, c.want)
			}
			// Running and Warming are the observation's, whatever rule
			// read the window (with no usage reported, warming said 2).
			if ev := d.First.Evidence; ev.Running != c.o.RunningReplicas || ev.Warming != c.o.WarmingReplicas {
				t.Errorf("evidence running %d, warming %d; the observation's %d and %d", ev.Running, ev.Warming, c.o.RunningReplicas, c.o.WarmingReplicas)
			}
		})
	}
}

// The explanation says what it means: a first slot refused by CPU has no
// replicas before it, and a clamp names the quota's bound that made it.
func TestExplanationWording(t *testing.T) {
	o := testsupport.Flat(8000, 0, 0, 9000, 30) // nothing runs; one replica needs more than the host
	o.WantedReplicas = 3
	d, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)})
	if err != nil {
		t.Fatal(err)
	}
	if r := d.First.Refused; r == nil || r.Slot != 0 || !strings.Contains(r.Reason, "this replica alone, with the safety allowance it learned, does not fit the 8000 MHz") {
		t.Fatalf("refused %+v: want slot_0 refused alone", r)
	}
	o = testsupport.Flat(16000, 4, 200, 2000, 30)
	d, err = Decide(HostInput{Observation: &o, Quota: testsupport.Quota(0, 5, 1, RoundNearest)},
		HostInput{Observation: &o, Quota: testsupport.Quota(100, 110, 1, RoundNearest)})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.First.Reason(); !d.First.Clamped || !strings.Contains(got, "to the quota's max") {
		t.Errorf("first host: %s: want a clamp to the quota's max", got)
	}
	if got := d.Second.Reason(); !d.Second.Clamped || !strings.Contains(got, "to the quota's min") {
		t.Errorf("second host: %s: want a clamp to the quota's min", got)
	}
}

// TestUnknownMemoryDemand: with memory judged, a new replica whose memory
// demand is not given counts at Nomad's smallest reservation, never at
// none: on a host whose memory others reserve in full nothing new is
// admitted or placeable, and with a little room placement counts 10 MB a
// replica.
func TestUnknownMemoryDemand(t *testing.T) {
	window := func() []Sample {
		s := make([]Sample, 10)
		for i := range s {
			s[i] = Sample{Time: int64(60 * i)}
		}
		return s
	}
	cases := []struct {
		name          string
		free          float64 // MB of 4,096 others do not reserve
		queued        []Replica
		wantPlaceable int
	}{
		{"memory all reserved", 0, nil, 0},
		{"memory all reserved, queued replicas without memory", 0, []Replica{{CPUMHz: 100}, {CPUMHz: 100}, {CPUMHz: 100}}, 0},
		{"25 MB free", 25, nil, 2},
		{"25 MB free, queued replicas without memory", 25, []Replica{{CPUMHz: 100}, {CPUMHz: 100}, {CPUMHz: 100}}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Observation{Host: "h", CPUCapacityMHz: 10000, MemoryCapacityMB: 4096, OtherReservedMemoryMB: 4096 - c.free,
				Samples: window(), ReplicaCPUDemandMHz: 100, QueuedReplicas: c.queued}
			d, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range []*HostDecision{&d.First, &d.Second} {
				if h.Placement.Placeable != c.wantPlaceable {
					t.Errorf("%s: placeable %d, want %d (%v MB free at %d MB a replica)", h.Role, h.Placement.Placeable, c.wantPlaceable, c.free, MinReservationMemoryMB)
				}
				if h.Placement.ReplicaMemoryMB != MinReservationMemoryMB {
					t.Errorf("%s: a replica reserves %v MB, want Nomad's smallest, %d", h.Role, h.Placement.ReplicaMemoryMB, MinReservationMemoryMB)
				}
				if h.Containers > c.wantPlaceable {
					t.Errorf("%s: %d containers with room for %d replicas of %d MB (limit %s)", h.Role, h.Containers, c.wantPlaceable, MinReservationMemoryMB, h.Limit)
				}
			}
		})
	}
}

// TestWindowGapNoted: a window with a hole (a monitoring export missing
// an hour, readings that stopped) says so in its evidence, naming where and
// how large; a regular or merely jittery window says nothing.
func TestWindowGapNoted(t *testing.T) {
	times := func(ts ...int64) []Sample {
		out := make([]Sample, len(ts))
		for i, x := range ts {
			out[i] = Sample{Time: x, CPUMHz: 100}
		}
		return out
	}
	for _, c := range []struct {
		name    string
		samples []Sample
		want    string // "" for no note
	}{
		{"regular", times(0, 60, 120, 180, 240), ""},
		{"jitter", times(0, 50, 130, 170, 260), ""},
		{"too few to tell", times(0, 6000), ""},
		{"an hour missing", times(0, 60, 120, 3720, 3780, 3840), "a gap of 1h0m0s between samples 2 and 3, 60 times the window's usual spacing of 1m0s"},
		{"a gap beyond a Duration", times(0, 60, 120, 1e10), "a gap of 115741 days between samples 2 and 3"},
		{"at the ratio", times(0, 300, 600, 1800, 2100), "a gap of 20m0s between samples 2 and 3, 4 times the window's usual spacing of 5m0s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := testsupport.Flat(16000, 4, 400, 500, len(c.samples))
			o.Samples = c.samples
			d, err := Decide(HostInput{Observation: &o, MinSamples: min(len(c.samples), DefaultMinSamples)}, HostInput{Observation: testsupport.AsSecond(&o), MinSamples: min(len(c.samples), DefaultMinSamples)})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range []HostDecision{d.First, d.Second} {
				note := h.Evidence.Note
				if c.want == "" && strings.Contains(note, "gap") || c.want != "" && !strings.Contains(note, c.want) {
					t.Errorf("%s host: note %q, want %q", h.Role, note, c.want)
				}
			}
		})
	}
}

// TestStoppedReplicasStandForNewOnes: with none running, samples of the
// replicas that stopped (StoppedReplicas) are read as what a new replica
// will use: the counts are those the hosts would have with one of them
// still running, so a workload stopped for its usage is not started again
// at its request (a user trial: 1, 0, 1, 0...). Without StoppedReplicas
// the samples are no replica's usage, as before.
func TestStoppedReplicasStandForNewOnes(t *testing.T) {
	stopped := func(o Observation, n int) Observation {
		for i := range o.Samples {
			o.Samples[i].CPUMHz *= float64(n) / float64(o.RunningReplicas)
		}
		o.StoppedReplicas, o.RunningReplicas, o.RequestedCPUMHz = n, 0, 0
		return o
	}
	for _, tc := range []struct {
		name  string
		usage float64 // one replica's, on a 32000 MHz host asking 4000 MHz a replica
	}{
		{"a replica too busy for its host", 26000},
		{"a busy replica", 12000},
		{"a replica below its request", 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			running := decideBoth(t, testsupport.Flat(32000, 1, tc.usage, 4000, 10))
			atDemand := decideBoth(t, testsupport.Flat(32000, 0, tc.usage, 4000, 10))
			for _, n := range []int{1, 3} {
				d := decideBoth(t, stopped(testsupport.Flat(32000, 1, tc.usage, 4000, 10), n))
				if d.First.Containers != running.First.Containers || d.Second.Containers != running.Second.Containers {
					t.Errorf("%d stopped: counts %d and %d, want the %d and %d of one replica still running (at its demand: %d and %d)",
						n, d.First.Containers, d.Second.Containers, running.First.Containers, running.Second.Containers, atDemand.First.Containers, atDemand.Second.Containers)
				}
				if d.First.Evidence.Basis != BasisStopped || !strings.Contains(d.First.Evidence.Note, "the first new replica counts as the running one it will be") {
					t.Errorf("%d stopped: first host's evidence %+v", n, d.First.Evidence)
				}
				// The capacity processor reads no replica slots.
				if d.Second.Evidence.Basis != BasisStopped || d.Second.Evidence.Note != "no replica running: a replica counts at what the replicas that stopped used per replica; memory not judged (memory capacity unknown)" {
					t.Errorf("%d stopped: second host's evidence %+v", n, d.Second.Evidence)
				}
				if r := d.First.Refused; r != nil && r.Slot == 0 && (r.Running || !strings.Contains(r.Reason, "4000 MHz requested; their window reads up to ")) {
					t.Errorf("%d stopped: the refused first new replica is not said to be requested at 4000 MHz and counted at what the stopped ones used: %s", n, r.Reason)
				}
			}
		})
	}
	// The trial's case: at its demand the busy workload's first host
	// admits some; read from the replica that stopped, none. The replica
	// used more than its room throughout (36000 MHz of a 40000 MHz host
	// whose other workloads reserve 8000 and used less): well past any
	// model's safety allowance, where the trial's 31000 of 32000, a flat
	// window, fits within the built-in admission processor's quantile since
	// December 4.
	busy := func(running int) Observation {
		o := testsupport.Flat(40000, running, 36000, 4000, 10)
		o.OtherReservedCPUMHz = 8000
		return o
	}
	if d := decideBoth(t, stopped(busy(1), 1)); d.First.Containers != 0 || decideBoth(t, busy(0)).First.Containers == 0 {
		t.Errorf("the premise: the stopped replica's usage should refuse the first new replica (%d), its demand admit some", d.First.Containers)
	} else if want := "slot_0 (new replica, counted at what the replicas that stopped used, 4000 MHz requested; their window reads up to 36000 MHz each): cpu"; d.First.Refused == nil || !strings.HasPrefix(d.First.Refused.Reason, want) {
		t.Errorf("the refusal %+v, want it to begin %q", d.First.Refused, want)
	}
	// With a queue, each new replica's size is the queue's: the stopped
	// replicas' usage is not read (the demand basis, as before).
	q := stopped(testsupport.Flat(32000, 1, 26000, 4000, 10), 1)
	q.QueuedReplicas = []Replica{{CPUMHz: 4000}, {CPUMHz: 4000}, {CPUMHz: 4000}}
	plain := stopped(testsupport.Flat(32000, 1, 26000, 4000, 10), 1)
	d, err := Decide(HostInput{Observation: &q, MinSamples: 1}, HostInput{Observation: &plain, MinSamples: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d.First.Evidence.Basis != BasisDemand || d.First.Containers != 3 {
		t.Errorf("a queue after stopped replicas: %d containers, evidence %+v; want the queue's 3 at their demand", d.First.Containers, d.First.Evidence)
	}
	// Stopped replicas whose samples show no usage are no evidence: the
	// demand, as with none.
	if d := decideBoth(t, stopped(testsupport.Flat(32000, 1, 0, 4000, 10), 1)); d.First.Evidence.Basis != BasisDemand {
		t.Errorf("a stopped replica with no usage: evidence %+v, want the demand", d.First.Evidence)
	}
}

func TestStoppedReplicasRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Observation)
		want string
	}{
		{"with replicas running", func(o *Observation) { o.StoppedReplicas = 1 }, "stopped_replicas: is 1 while running_replicas is 2"},
		{"negative", func(o *Observation) { o.RunningReplicas, o.RequestedCPUMHz, o.StoppedReplicas = 0, 0, -1 }, "stopped_replicas"},
		{"beyond the replica limit", func(o *Observation) { o.RunningReplicas, o.RequestedCPUMHz, o.StoppedReplicas = 0, 0, MaxReplicas+1 }, "stopped_replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testsupport.Flat(32000, 2, 1000, 4000, 10)
			tc.edit(&o)
			_, err := Decide(HostInput{Observation: &o, MinSamples: 1}, HostInput{Observation: &o, MinSamples: 1})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// The refused slot's figures are the replica's own: with next to no room
// left (others reserve the host), the shares the processor reads are
// capped (at MaxShare of the room): a 2000 MHz replica read as 1000 MHz
// against a 10 MHz room (a user trial saw 2 MHz).
func TestRefusedSlotFigures(t *testing.T) {
	cases := []struct {
		name    string
		obs     func() Observation
		running bool
		cpu     float64
		mem     float64
		reason  string // in the reason
	}{
		{"running replica, no room", func() Observation {
			o := testsupport.Flat(20000, 2, 1500, 2000, 10)
			o.OtherReservedCPUMHz = 19990
			return o
		}, true, 2000, 0, "(running replica, 2000 MHz requested; read at up to 1500 MHz per replica): cpu"},
		{"new replica, no room", func() Observation {
			o := testsupport.Flat(20000, 0, 0, 2000, 10)
			o.OtherReservedCPUMHz = 19990
			return o
		}, false, 2000, 0, "(new replica, 2000 MHz): cpu"},
		{"queued replica, no room", func() Observation {
			o := testsupport.Flat(20000, 0, 0, 2000, 10)
			o.OtherReservedCPUMHz = 19990
			o.QueuedReplicas = []Replica{{CPUMHz: 3000, MemoryMB: 512}}
			return o
		}, false, 3000, 0, "(new replica, 3000 MHz): cpu"},
		{"new replica, memory, no room", func() Observation {
			o := testsupport.Flat(20000, 0, 0, 2000, 10)
			o.OtherReservedCPUMHz = 19990
			o.MemoryCapacityMB, o.OtherReservedMemoryMB, o.ReplicaMemoryDemandMB = 8192, 8190, 700
			return o
		}, false, 2000, 700, "(new replica, 2000 MHz): cpu"},
		{"running replica, memory", func() Observation {
			o := testsupport.Flat(20000, 2, 1500, 2000, 10)
			o.OtherReservedCPUMHz = 19990
			o.MemoryCapacityMB, o.OtherReservedMemoryMB, o.RequestedMemoryMB = 8192, 8190, 1400
			return o
		}, true, 2000, 700, "(running replica, 2000 MHz requested; read at up to 1500 MHz per replica): cpu"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.obs()
			d, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)})
			if err != nil {
				t.Fatal(err)
			}
			r := d.First.Refused
			if r == nil || r.Slot != 0 {
				t.Fatalf("refused %+v: want slot_0", r)
			}
			if r.Running != c.running || r.CPUMHz != c.cpu || r.MemoryMB != c.mem {
				t.Errorf("refused running %v, %g MHz, %g MB; want %v, %g MHz, %g MB (%s)", r.Running, r.CPUMHz, r.MemoryMB, c.running, c.cpu, c.mem, r.Reason)
			}
			if !strings.Contains(r.Reason, c.reason) {
				t.Errorf("reason %q does not say %q", r.Reason, c.reason)
			}
		})
	}
}

// A count of 0 places nothing: the placement's line does not speak of a
// reservation that "places all 0" (found by a user trial).
func TestPlacementSummaryOfZero(t *testing.T) {
	o := testsupport.Flat(16000, 0, 0, 2000, 30)
	d, err := Decide(HostInput{Observation: &o, Quota: testsupport.Quota(0, 0, 1, RoundNearest)}, HostInput{Observation: testsupport.AsSecond(&o)})
	if err != nil {
		t.Fatal(err)
	}
	if d.First.Containers != 0 {
		t.Fatalf("the premise fails: %d containers under a quota max of 0", d.First.Containers)
	}
	got := d.First.Placement.Summary(0)
	if !strings.HasSuffix(got, "; a count of 0 places nothing") || strings.Contains(got, "all 0") {
		t.Errorf("summary %q: want it to say a count of 0 places nothing", got)
	}
}

// A replica refused for memory after others: the reason's figures are the
// replicas' own memory (each new one at its demand), in MB.
func TestRefusedSlotMemoryFigures(t *testing.T) {
	o := testsupport.Flat(20000, 0, 0, 100, 10)
	o.MemoryCapacityMB, o.ReplicaMemoryDemandMB = 4096, 1000
	d, err := Decide(HostInput{Observation: &o}, HostInput{Observation: testsupport.AsSecond(&o)})
	if err != nil {
		t.Fatal(err)
	}
	r := d.First.Refused
	if r == nil || r.Resource != LimitMemory || r.Slot < 1 {
		t.Fatalf("refused %+v: want a slot after the first refused for memory", r)
	}
	want := fmt.Sprintf("(new replica, 1000 MB): memory: with the replicas before it (%d MB at their peak) it brings the memory peak to %d MB of the 4096 MB",
		1000*r.Slot, 1000*(r.Slot+1))
	if r.MemoryMB != 1000 || !strings.Contains(r.Reason, want) {
		t.Errorf("refused %g MB: %q; want 1000 MB and %q", r.MemoryMB, r.Reason, want)
	}
}

// Every level of usage a model can read (a mean, a quantile, a peak, a
// sustained peak) holds data however small a share of the room it is,
// while a spread or a rise of that usage stays as small as it is: the
// features a model file names, each alone, on a window of tiny usage.
func TestTinyUsageLevelsHoldData(t *testing.T) {
	o := testsupport.Flat(20000, 2, 1e-5, 2000, 30)
	for i := range o.Samples {
		o.Samples[i].CPUMHz *= float64(1 + i%2) // 1e-5 and 2e-5 MHz per replica
	}
	eps := DefaultInputEpsilon
	for _, tc := range []struct {
		name  string
		level bool
	}{
		{FeatCPUReplicaMean, true}, {FeatCPUReplicaP95, true}, {FeatCPUReplicaMax, true},
		{FeatCPUReplicaMeanLast5, true}, {FeatCPUReplicaMaxLast20, true},
		{FeatCPUReplicaMaxMean5, true}, {FeatCPUReplicaMaxMean20, true},
		{FeatCPUReplicaStdLast20, false}, {FeatCPUReplicaRiseMax, false}, {FeatCPUReplicaRise5Max, false},
	} {
		x, err := FeatureVector(&o, "second", []string{tc.name})
		if err != nil {
			t.Fatal(err)
		}
		if holds := x[0] > eps; holds != tc.level {
			t.Errorf("%s = %g on a window of 1e-5 to 2e-5 MHz a replica (input epsilon %g): holds data %v, want %v", tc.name, x[0], eps, holds, tc.level)
		}
		if !(x[0] > 0) {
			t.Errorf("%s = %g: the premise (a positive figure) fails", tc.name, x[0])
		}
	}
}

// A positive usage or demand holds data however small a share of the room
// it is: the counts never fall as usage falls towards zero. A user trial
// found the second host at 0 containers for 0.00004 MHz of usage on a
// 20,000 MHz host (a share below the input epsilon read as no data, every
// branch went dark) and at 110 for 0.0001 MHz.
func TestTinyUsageHoldsData(t *testing.T) {
	for _, tc := range []struct {
		name     string
		obs      func(x float64) Observation
		xs       []float64 // falling usage or demand
		positive bool      // whether the smallest must still give containers
	}{
		{"usage per replica falls on a 20,000 MHz host", func(x float64) Observation { return testsupport.Flat(20000, 2, x, 2000, 10) },
			[]float64{1000, 100, 1, 1e-3, 1e-4, 4e-5, 1e-5, 1e-9, 1e-300}, true},
		{"1 MHz replicas on the largest host", func(x float64) Observation { return testsupport.Flat(MaxResource, 2, x, 2000, 10) },
			[]float64{1e6, 1e3, 1, 1e-3}, true},
		{"demand of a workload not running falls", func(x float64) Observation {
			o := testsupport.Flat(100000, 0, 0, x, 10)
			return o
		}, []float64{5000, 100, 1, 1e-5, 1e-9}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := [2]int{-1, -1}
			for _, x := range tc.xs {
				d := decideBoth(t, tc.obs(x))
				for i, h := range []HostDecision{d.First, d.Second} {
					if h.Containers < prev[i] {
						t.Errorf("%s host: %d containers at %g, fewer than %d at more (%s)", h.Role, h.Containers, x, prev[i], h.Reason())
					}
					prev[i] = h.Containers
				}
			}
			if tc.positive && (prev[0] == 0 || prev[1] == 0) {
				t.Errorf("no container at %g: first %d, second %d", tc.xs[len(tc.xs)-1], prev[0], prev[1])
			}
		})
	}
}

// With no memory in the observation the placement reserves Nomad's
// smallest memory, and says why the figure is that.
func TestPlacementSaysSmallestMemory(t *testing.T) {
	o := testsupport.Flat(4000, 2, 100, 400, 10)
	o.MemoryCapacityMB, o.RequestedMemoryMB, o.ReplicaMemoryDemandMB = 0, 0, 0
	for i := range o.Samples {
		o.Samples[i].MemoryMB = 0
	}
	d, err := Decide(HostInput{Observation: &o}, HostInput{Observation: &o})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []HostDecision{d.First, d.Second} {
		s := h.Placement.Summary(h.Containers)
		if h.Placement.MemoryMB != MinReservationMemoryMB || !strings.Contains(s, "(10 MB: Nomad's smallest memory reservation, as the observation gives no memory)") {
			t.Errorf("%s host: reserving %d MB: %s", h.Role, h.Placement.MemoryMB, s)
		}
	}
	// With memory given, no such note.
	m := testsupport.Flat(4000, 2, 100, 400, 10)
	m.MemoryCapacityMB, m.RequestedMemoryMB, m.ReplicaMemoryDemandMB = 8192, 512, 256
	d, err = Decide(HostInput{Observation: &m}, HostInput{Observation: &m})
	if err != nil {
		t.Fatal(err)
	}
	if s := d.Second.Placement.Summary(d.Second.Containers); strings.Contains(s, "smallest memory reservation") {
		t.Errorf("memory given, and the note says none is: %s", s)
	}
}
