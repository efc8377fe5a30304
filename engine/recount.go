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
// A model that reads cpu_host_mean or cpu_host_max (sums over the samples,
// which n-fold samples do not give exactly n times) cannot be recounted.
//
// The caller answers for the observations at the other counts being valid
// (Validate): every figure Validate bounds is n times one replica's, or n
// itself, so one valid at the lowest and at the highest count is valid at
// every count between.
//
// A Recounter belongs to one goroutine. Its zero value is not usable; call
// Processor.NewRecounter.
type Recounter struct {
	p  *Processor
	fw featureWork
	o  Observation // the window's observation at count n, without its samples
	x  []float64   // the input vector at count n
	n  int         // 0 before Reset
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
			return nil, fmt.Errorf("model %s cannot be recounted: input %d (%s) sums the host's usage over the samples, which n replicas do not give exactly n times", p.model.Name, i, p.model.Inputs[i].Name)
		}
	}
	return &Recounter{p: p, x: make([]float64, len(p.model.Inputs))}, nil
}

// Reset reads the window of o, which must be valid for a host of role and
// run at least one replica, none warming (a warming replica is read at the
// warm ones' usage, which n-fold samples over n-w warm replicas do not
// give per replica).
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
	r.o.Samples = nil // the slots read none
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

// recount brings r.x from r.n to n replicas.
func (r *Recounter) recount(n int) {
	fm, fw, x := &r.p.features, &r.fw, r.x
	lo, hi := min(r.n, n), max(r.n, n)
	r.o.RunningReplicas = n
	fw.ev.Running = n
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
			fm.fillInputs(fw, x, fm.slotInputs[i])
			r.patched++
		}
	}
	if fw.ev.MemoryJudged {
		fw.feats[fMemHostMax] = capShare(fw.memReplica * float64(n))
	}
	fw.feats[fRunning] = float64(n)
	fm.fillInputs(fw, x, fm.countInputs)
	r.patched += int64(len(fm.countInputs))
	r.n = n
}
