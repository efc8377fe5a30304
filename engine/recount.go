package engine

import "fmt"

// A Recounter gives a processor's input vectors for one usage window at
// several counts of running replicas, each replica using and requesting
// what one of the window's does: what FeaturesInto gives for the
// observations that differ only in RunningReplicas = n, with the samples'
// usage and the requests n times one replica's. Those observations share
// every per-replica feature whenever each replica's share comes out the
// same at every n, which it does bitwise when every product and quotient
// involved is exact (a replica's usage on a grid of a power of two, over
// capacities that are powers of two, as the simulator builds its
// observations; see PerReplicaInputs). A Recounter computes those
// features once, from the observation given to Reset, and lays out again
// at each count only what reads the count: the slots between the counts
// (from the lower count on when a queue is given, whose entries follow the
// running replicas), running_replicas and mem_host_max (n times a
// replica's memory share). The simulator's threshold sweep meets such runs
// at every decision point, where the first host's observations for the
// different counts in force differ only in the count.
//
// A model that reads cpu_host_mean or cpu_host_max cannot be recounted: a
// Recounter does not read the samples again, and the mean's sum and
// division over them need not round alike at every count.
//
// The caller answers for the observations at the other counts being valid
// (Validate): every figure Validate bounds either grows with the count or
// does not depend on it, and no lower bound depends on it, so an
// observation valid at the highest count is valid at every count from 1.
//
// A Recounter belongs to one goroutine. Its zero value is not usable; call
// Processor.NewRecounter.
type Recounter struct {
	p  *Processor
	fw featureWork
	// o is the observation given to Reset, without its samples, its
	// RunningReplicas set to n: what laying out the slots reads of it (its
	// queue in queue, a copy)
	o     Observation
	queue []Replica
	x     []float64 // the input vector at count n
	n     int       // 0 before Reset
	// patched counts the slots and count inputs laid out again
	patched int64
}

// NewRecounter returns a Recounter for p, or why p's model cannot be
// recounted.
func (p *Processor) NewRecounter() (*Recounter, error) {
	if p.featuresErr != nil {
		return nil, fmt.Errorf("model %s cannot read an observation: %w", p.model.Name, p.featuresErr)
	}
	for i, src := range p.features.feature {
		if src == fCPUHostMean || src == fCPUHostMax {
			return nil, fmt.Errorf("model %s cannot be recounted: input %d (%s) reads the host's usage summed over its replicas, which a recount does not read again from the samples", p.model.Name, i, p.model.Inputs[i].Name)
		}
	}
	return &Recounter{p: p, x: make([]float64, len(p.model.Inputs))}, nil
}

// Reset reads the window of o. It validates o for a host of role, as
// FeaturesInto does, and refuses one that runs no replica or has replicas
// warming (a warming replica is read at the warm ones' usage, which n-fold
// samples over n-w warm replicas do not give per replica). On an error
// there is no window to read until the next Reset.
func (r *Recounter) Reset(o *Observation, role string) error {
	r.n = 0
	if err := o.Validate(role); err != nil {
		return err
	}
	if o.RunningReplicas < 1 {
		return fmt.Errorf("recount: running_replicas is %d: a window is recounted from at least one running replica (with none, a replica counts at its demand)", o.RunningReplicas)
	}
	if o.WarmingReplicas != 0 {
		return fmt.Errorf("recount: warming_replicas is %d: a window with replicas warming is not recounted", o.WarmingReplicas)
	}
	r.fw.compute(o)
	r.p.features.fill(&r.fw, o, r.x)
	r.o = *o
	r.o.Samples = nil            // the slots read none
	if o.QueuedReplicas != nil { // (a queue the caller changes later stays as it was read)
		r.queue = append(r.queue[:0], o.QueuedReplicas...)
		if r.queue == nil {
			r.queue = []Replica{} // an empty queue (no new replica) is not none (every slot)
		}
		r.o.QueuedReplicas = r.queue
	}
	r.n = o.RunningReplicas
	return nil
}

// Into writes into dst (grown if short) the input vector of the window at
// n running replicas and returns it.
func (r *Recounter) Into(dst []float64, n int) ([]float64, error) {
	if r.n == 0 {
		return nil, fmt.Errorf("recount: no window read (Reset)")
	}
	if n < 1 || n > MaxReplicas {
		return nil, fmt.Errorf("recount: running_replicas %d is out of range: from 1 to %d", n, MaxReplicas)
	}
	if n != r.n {
		r.recount(n)
	}
	if cap(dst) < len(r.x) {
		dst = make([]float64, len(r.x))
	}
	dst = dst[:len(r.x)]
	copy(dst, r.x)
	return dst, nil
}

// recount brings r.x from r.n to n replicas: the slots and the count
// features; the rest of r.fw (the evidence, the warm replicas, the slots
// filled) stays as Reset read it, and nothing reads it.
func (r *Recounter) recount(n int) {
	fm, fw, x := &r.p.features, &r.fw, r.x
	lo, hi := min(r.n, n), max(r.n, n)
	r.o.RunningReplicas = n
	if fm.slots > 0 {
		// Slot i is a running replica's when i < min(n, wanted), and
		// otherwise depends on i and, with a queue, on the running
		// slots before it: only slots from lo on change, and without a
		// queue only those below hi.
		lay := newSlotLayout(&r.o, fm.slots)
		end := min(hi, fm.slots)
		if r.o.QueuedReplicas != nil {
			end = fm.slots
		}
		fw.layoutSlots(&r.o, &lay, lo, end)
		for i := lo; i < end; i++ {
			for _, in := range fm.slotInputs[i] {
				fm.fillInputs(fw, x, in, in+1)
			}
			r.patched++
		}
	}
	if fw.ev.MemoryJudged {
		// compute's capShare(mr * n): memShare is capShare(mr), and
		// both are MaxShare when mr is above it
		fw.feats[fMemHostMax] = capShare(fw.memShare * float64(n))
	}
	fw.feats[fRunning] = float64(n)
	for _, in := range fm.countInputs {
		fm.fillInputs(fw, x, in, in+1)
	}
	r.patched += int64(len(fm.countInputs))
	r.n = n
}
