package sim

import (
	"fmt"
	"math"
)

// PolicyAdmissionOracle names the admission oracle, a reference for what
// the admission rule costs: see AdmissionOracle.
const PolicyAdmissionOracle = "admission-oracle"

// AdmissionOracle is what a pair of hosts reaches without a violation,
// knowing the future, when its first host keeps the admission rule. The
// second host of a pair (odd
// index) runs the oracle's count. The first host (even index) keeps the
// admission rule every front end applies: a replica that has not run yet
// counts at its request, so a host grows only by replicas whose requests
// fit in what its running replicas leave over the next block. With n
// running and the oracle at o:
//
//	o <= n: o
//	o >  n: min(o, n + a), a = the most requests (CPU, and memory where the
//	        replay has it) that fit in 1 - the running replicas' peak in
//	        the block
//
// Where requests exceed what replicas use (hand-set requests usually do)
// the first host reaches the oracle's count a few decisions late after
// usage falls, and this policy measures what that costs. It is a reference,
// not a bound: it counts room from the true peak of the block, while the
// engine may admit more (new replicas that use less than they request do
// not overload the host), and one series' activation first host was seen
// above it at no violation of its own.
func AdmissionOracle() Policy { return admissionOracle{} }

type admissionOracle struct{}

func (admissionOracle) Name() string { return PolicyAdmissionOracle }
func (admissionOracle) Knob() Knob   { return Knob{Values: []float64{0}} }
func (admissionOracle) New(r *Replay, _ float64) (Decider, error) {
	if r.Hosts()%2 != 0 {
		return nil, fmt.Errorf("the admission oracle pairs hosts (first, second): scenario %s has %d hosts per series, want an even number", r.Scenario.Name, r.Hosts())
	}
	return admissionOracleDecider{r}, nil
}

type admissionOracleDecider struct{ r *Replay }

func (a admissionOracleDecider) Decide(d int, prev, out []int) error {
	r := a.r
	for h := range out {
		o := r.Oracle(h, d)
		if h%2 == 1 || o <= prev[h] {
			out[h] = o
			continue
		}
		out[h] = min(o, prev[h]+r.admissible(h, d, prev[h]))
	}
	return nil
}

// admissible is how many new replicas host h admits at decision d when it
// runs n: the most whose requests fit in what the n running replicas leave
// free at their peak over the next block, CPU and memory alike.
func (r *Replay) admissible(h, d, n int) int {
	lo, hi := r.Block(d)
	cpu, mem := 0.0, 0.0
	for t := lo; t < hi; t++ {
		cpu = max(cpu, r.HostUsage(h, n, t))
		mem = max(mem, r.HostMemory(h, n, t))
	}
	app := r.App(h)
	add := fits(1-cpu, app.Request)
	if r.HasMemory() {
		add = min(add, fits(1-mem, app.MemoryRequest))
	}
	return add
}

// fits is how many items of size fit in room (0 when none does).
func fits(room, size float64) int {
	if !(room > 0) || !(size > 0) {
		return 0
	}
	return int(math.Min(math.Floor(room/size), math.MaxInt32))
}
