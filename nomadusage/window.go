package nomadusage

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// ErrStale: the window holds no sample younger than its max age.
var ErrStale = errors.New("usage is stale")

// ErrEmpty: nothing was added to the window yet.
var ErrEmpty = errors.New("no usage read yet")

// StaleError says how old the newest sample is.
type StaleError struct {
	Host   string
	Age    time.Duration
	MaxAge time.Duration
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("host %s: usage is stale: newest sample is %s old, max age %s", e.Host, e.Age.Round(time.Millisecond), e.MaxAge)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

type entry struct {
	at       time.Time
	sample   engine.Sample
	replicas int
	warm     bool // the sample is warm replicas' usage (not only warming ones')
	readTime bool // at is the reader's clock (Reading.ReadTime)
	// what one running replica requested (its demand when none ran): the
	// level a warming replica counts at when its usage is below it
	reqCPU, reqMem float64
	// a new replica's demand (CPU MHz, memory MB): the job's resources
	demand [2]float64
}

// newEntry is r's sample as the window holds it.
func newEntry(r *Reading) entry {
	o := &r.Observation
	e := entry{at: r.Time, sample: o.Samples[0], replicas: sampleReplicas(o),
		warm: o.RunningReplicas > o.WarmingReplicas, readTime: r.ReadTime,
		demand: ReplicaDemand(o)}
	e.reqCPU, e.reqMem = replicaRequest(o)
	return e
}

// replicaRequest is what one running replica of o requested (its demand
// when none runs or the request is not known): the level a warming
// replica counts at when its usage is below it.
func replicaRequest(o *engine.Observation) (cpu, mem float64) {
	cpu, mem = o.ReplicaCPUDemandMHz, o.ReplicaMemoryDemandMB
	if o.RunningReplicas > 0 && o.RequestedCPUMHz > 0 {
		cpu = o.RequestedCPUMHz / float64(o.RunningReplicas)
	}
	if o.RunningReplicas > 0 && o.RequestedMemoryMB > 0 {
		mem = o.RequestedMemoryMB / float64(o.RunningReplicas)
	}
	return cpu, mem
}

// ReplicaDemand is o's new-replica demand (CPU MHz, memory MB): the job's
// resources, unless the query gives them. Stopped replicas' usage
// stands only while it is the same.
func ReplicaDemand(o *engine.Observation) [2]float64 {
	return [2]float64{o.ReplicaCPUDemandMHz, o.ReplicaMemoryDemandMB}
}

// OneReplica appends to dst o's samples (read while replicas run) as one
// replica's usage, as the engine reads them: each over the replicas it
// sums (the warm ones while any is warm, else every running one), and at
// the larger of their peak and the request throughout when none is warm
// or their CPU is zero throughout (see asStopped). For a source of usage
// that is not a Window (the APM's points, read whole at each evaluation).
func OneReplica(dst []engine.Sample, o *engine.Observation) []engine.Sample {
	first, n := len(dst), float64(sampleReplicas(o))
	for _, s := range o.Samples {
		s.CPUMHz /= n
		s.MemoryMB /= n
		dst = append(dst, s)
	}
	cpu, mem := replicaRequest(o)
	asStopped(dst[first:], o.RunningReplicas > o.WarmingReplicas, cpu, mem)
	return dst
}

// Window accumulates the readings of one host into a usage window: a ring
// of at most Size samples, none older than MaxAge when an observation is
// taken. It is safe for concurrent use.
//
// Each sample is the workload's usage summed over the replicas it covers
// when it was read: the warm ones (running less warming) while any is warm,
// else every running one (see ReadHosts). When that number changed inside
// the window, older samples are rescaled to the current number (sample x
// now / then), so that the engine's per-replica features (sample over the
// warm replicas, or over the running ones when none is warm) stay the
// per-replica usage that was observed; samples read while no replica ran
// carry no per-replica usage and are left out while replicas run (see
// ObservationWithStopped for a window whose replicas have all stopped).
//
// Reading the same node twice within one Unix second replaces the earlier
// sample (engine samples have one-second timestamps that must increase).
// A reading of a different node (the selector now resolves elsewhere)
// starts the window afresh.
type Window struct {
	size   int
	maxAge time.Duration

	mu     sync.Mutex
	nodeID string
	ring   []entry
	start  int // index of the oldest entry
	n      int
	latest *Reading
	// stopped is what one replica used, as the engine read it, when the
	// first reading with none running was added (see stoppedSamples);
	// held until a reading with replicas running, or a reset.
	stopped     []engine.Sample
	haveStopped bool
	// the replicas' demand (CPU MHz, memory MB) when they ran: a reading
	// with another (a new job version) voids them
	stoppedDemand [2]float64
}

// NewWindow returns a window of size samples (>= 1) and a max age (> 0).
func NewWindow(size int, maxAge time.Duration) (*Window, error) {
	if size < 1 {
		return nil, fmt.Errorf("%w: window size is %d; it must be >= 1", ErrBadQuery, size)
	}
	if maxAge <= 0 {
		return nil, fmt.Errorf("%w: window max age is %s; it must be > 0", ErrBadQuery, maxAge)
	}
	return &Window{size: size, maxAge: maxAge, ring: make([]entry, size)}, nil
}

// Size is the window's capacity in samples; MaxAge its max sample age.
func (w *Window) Size() int             { return w.size }
func (w *Window) MaxAge() time.Duration { return w.maxAge }

// AgedSince is how many samples read while replicas ran, at from or
// later, are held but older than MaxAge at now: those an observation
// with replicas running would still read but for their age (samples read
// while none ran it leaves out whatever their age).
func (w *Window) AgedSince(from, now time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, cutoff := 0, now.Add(-w.maxAge)
	for i := 0; i < w.n; i++ {
		if e := &w.ring[(w.start+i)%w.size]; e.replicas > 0 && !e.at.Before(from) && e.at.Before(cutoff) {
			n++
		}
	}
	return n
}

// Len is the number of samples held.
func (w *Window) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func (w *Window) resetLocked() {
	w.start, w.n, w.latest, w.nodeID = 0, 0, nil, ""
	w.stopped, w.haveStopped = w.stopped[:0], false
}

// accepted notes, before the ring changes, that e's reading is added: the
// first reading with no replica running keeps what the ones that ran used;
// one with replicas running forgets it, and so does one with none running
// whose replica demand differs from the reading's that kept it (the job's
// resources changed: what the old replicas used says nothing of new ones).
func (w *Window) accepted(e *entry) {
	switch {
	case e.replicas > 0:
		w.stopped, w.haveStopped = w.stopped[:0], false
	case !w.haveStopped:
		w.stopped, w.stoppedDemand = w.stoppedSamples(e.at, w.stopped[:0])
		w.haveStopped = true
		if e.demand != w.stoppedDemand {
			w.stopped = w.stopped[:0] // stopped for a job version with other resources
		}
	case e.demand != w.stoppedDemand:
		w.stopped = w.stopped[:0]
	}
}

// stoppedSamples appends to dst one replica's usage as the engine read it
// from the samples read while replicas ran, within MaxAge of the newest of
// them (the first reading with none running may come a cooldown later):
// each over the replicas it sums (the warm ones while any was warm); and
// when the newest of them was read while every replica was warming, or
// their CPU was zero throughout, at the larger of their peak per replica
// and its request, throughout (as the engine then counted a replica).
// demand is the newest one's replica demand (none when no replica ran).
// Samples read more than StoppedHorizon max ages before at (a window not
// read for that long: a policy paused, a long outage) are not taken.
func (w *Window) stoppedSamples(at time.Time, dst []engine.Sample) (_ []engine.Sample, demand [2]float64) {
	var ran *entry // the newest sample read while replicas ran
	for i := w.n - 1; i >= 0 && ran == nil; i-- {
		if e := &w.ring[(w.start+i)%w.size]; e.replicas > 0 {
			ran = e
		}
	}
	if ran == nil || at.Sub(ran.at) > StoppedHorizon*w.maxAge {
		return dst, demand
	}
	cutoff := ran.at.Add(-w.maxAge)
	first := len(dst)
	for i := 0; i < w.n; i++ {
		e := &w.ring[(w.start+i)%w.size]
		if e.at.Before(cutoff) || e.replicas == 0 {
			continue
		}
		s := e.sample
		f := 1 / float64(e.replicas)
		s.CPUMHz *= f
		s.MemoryMB *= f
		dst = append(dst, s)
	}
	asStopped(dst[first:], ran.warm, ran.reqCPU, ran.reqMem)
	return dst, ran.demand
}

// StoppedHorizon bounds, in max ages, how long before the first reading
// with none running the replicas' last sample may have been read for
// what they used to be kept.
const StoppedHorizon = 10

// asStopped makes per-replica samples read while replicas ran what the
// engine read of one replica then, in place: when no replica was warm, or
// their CPU read zero throughout, the engine counted each at the larger
// of its peak and its request (reqCPU, reqMem), one level for the window;
// else as they are.
func asStopped(samples []engine.Sample, warm bool, reqCPU, reqMem float64) {
	var peakCPU, peakMem float64
	for _, s := range samples {
		peakCPU, peakMem = max(peakCPU, s.CPUMHz), max(peakMem, s.MemoryMB)
	}
	if warm && peakCPU > 0 {
		return
	}
	cpu, mem := max(peakCPU, reqCPU), max(peakMem, reqMem)
	for i := range samples {
		samples[i].CPUMHz, samples[i].MemoryMB = cpu, mem
	}
}

// Add appends a reading's sample. A reading without exactly one sample, or
// with a figure no host can show (ErrBadUsage), or StatsLag or more older
// than the newest sample held (ErrOlderReading), is refused, and the
// window is left as it was. Readings are stamped by two clocks that may
// differ: the Nomad client's (its stats' Timestamp) and the reader's (no
// Timestamp: no stats measured, as while a group has no running
// allocation). So a measured reading older than the newest samples drops
// those that were stamped by the reader (they measured nothing); a
// measured one less than StatsLag older than the newest measured sample
// (other allocations' stats, taken a little earlier) adds no sample; and
// an unmeasured one older than the newest sample adds none either. Either
// is the window's latest reading (its capacity and replicas).
func (w *Window) Add(r *Reading) error {
	if r == nil || len(r.Observation.Samples) != 1 {
		return fmt.Errorf("%w: a reading must carry exactly one usage sample", ErrBadQuery)
	}
	// A sample no host can show is refused before it enters: in the
	// window it would stop every decision until it aged out.
	s := r.Observation.Samples[0]
	for _, f := range [...]struct {
		name string
		v    float64
	}{{"cpu_mhz", s.CPUMHz}, {"memory_mb", s.MemoryMB}} {
		if !usableFigure(f.v) {
			return fmt.Errorf("%w: the reading's sample at %s: %s is %v; %s", ErrBadUsage, r.Time.UTC().Format(time.RFC3339), f.name, f.v, figureRange)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nodeID != r.NodeID {
		w.resetLocked()
		w.nodeID = r.NodeID
	}
	e := newEntry(r)
	keep := w.n // the samples kept: the newer unmeasured ones go for a measured reading
	for !e.readTime && keep > 0 {
		if last := &w.ring[(w.start+keep-1)%w.size]; !last.readTime || !e.at.Before(last.at) {
			break
		}
		keep--
	}
	if keep > 0 {
		last := &w.ring[(w.start+keep-1)%w.size]
		switch {
		case e.at.Before(last.at) && e.readTime && !last.readTime:
			w.accepted(&e)
			w.latest = r // no sample: it measured nothing, and its clock is behind the client's
			return nil
		case e.at.Before(last.at) && last.at.Sub(e.at) < StatsLag:
			// Stats of other allocations, taken a little earlier (another
			// draw of StatsSample, an allocation that did not answer,
			// under a long collection interval): no newer usage, so no
			// sample, and the measured samples stay as they are; the
			// reading is the latest (its capacity and replicas).
			w.n = keep
			w.accepted(&e)
			w.latest = r
			return nil
		case e.at.Before(last.at):
			return fmt.Errorf("%w: the reading is stamped %s, %s before the newest sample (%s): a clock was set back (the node's, or this reader's when Nomad gave no stats time), or the allocations read changed",
				ErrOlderReading, e.at.UTC().Format(time.RFC3339), last.at.Sub(e.at).Round(time.Second), last.at.UTC().Format(time.RFC3339))
		case e.sample.Time <= last.sample.Time:
			w.n = keep
			w.accepted(&e)
			*last = e
			w.latest = r
			return nil
		}
	}
	w.n = keep
	w.accepted(&e)
	if w.n < w.size {
		w.ring[(w.start+w.n)%w.size] = e
		w.n++
	} else {
		w.ring[w.start] = e
		w.start = (w.start + 1) % w.size
	}
	w.latest = r
	return nil
}

// Observation returns the host's observation at now: the latest reading's
// capacity, requests, replicas and demand with every sample younger than
// MaxAge, oldest first. It fails with ErrEmpty when nothing was added and
// with a *StaleError when every sample is too old.
func (w *Window) Observation(now time.Time) (engine.Observation, error) {
	return w.observation(now, 0)
}

// ObservationWithStopped is Observation for a controller that may have
// stopped the replicas itself: when none runs now, and at least
// minStopped samples read while replicas ran, within MaxAge of the newest
// of them, were held when the first reading with none running was added
// (it may come a cooldown later), those samples
// alone, as one replica's usage, are the observation's, with
// StoppedReplicas 1. The engine then reads what they used as what a new
// replica will use, so that a group stopped for its usage is not started
// again at its request. They stand until a reading with replicas running
// is added (or the window starts afresh on another node): neither MaxAge
// nor newer readings push them out, for no reading without a replica
// running says anything newer of what one uses. A reading whose replica
// demand (ReplicaCPUDemandMHz, ReplicaMemoryDemandMB) differs from the
// one that kept them voids them: the job's resources changed.
//
// One replica's usage is what the engine read while they ran: each
// sample over the replicas it sums (the warm ones while any was warm);
// and when the newest of them was read while every replica was warming,
// or their CPU read zero throughout, as the engine then counted a
// replica, at the larger of the samples' peak per replica and its
// request, throughout (a replica stopped while warming, as one is at the
// default warm-up, is not started again at its demand either).
func (w *Window) ObservationWithStopped(now time.Time, minStopped int) (engine.Observation, error) {
	return w.observation(now, max(minStopped, 1))
}

// observation is Observation, or ObservationWithStopped when minStopped
// is at least 1.
func (w *Window) observation(now time.Time, minStopped int) (engine.Observation, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 || w.latest == nil {
		return engine.Observation{}, ErrEmpty
	}
	o := w.latest.Observation
	newest := w.ring[(w.start+w.n-1)%w.size]
	if age := now.Sub(newest.at); age > w.maxAge {
		return engine.Observation{}, &StaleError{Host: o.Host, Age: age, MaxAge: w.maxAge}
	}
	cur := sampleReplicas(&o)
	if cur == 0 && minStopped > 0 && w.haveStopped && len(w.stopped) >= minStopped {
		o.Samples = slices.Clone(w.stopped)
		o.StoppedReplicas = 1
		return o, nil
	}
	cutoff := now.Add(-w.maxAge)
	samples := make([]engine.Sample, 0, w.n)
	var idleCPU, idleMem float64 // the peaks of the samples read with no replica running
	for i := 0; i < w.n; i++ {
		e := &w.ring[(w.start+i)%w.size]
		if e.at.Before(cutoff) {
			continue
		}
		s := e.sample
		if e.replicas == 0 {
			idleCPU, idleMem = max(idleCPU, s.CPUMHz), max(idleMem, s.MemoryMB)
		}
		if cur > 0 && e.replicas != cur {
			if e.replicas == 0 {
				continue
			}
			f := float64(cur) / float64(e.replicas)
			s.CPUMHz *= f
			s.MemoryMB *= f
		}
		samples = append(samples, s)
	}
	o.Samples = samples
	if cur == 0 && w.latest.Job == "" {
		nodeLoad(&o, idleCPU, idleMem)
	}
	return o, nil
}

// nodeLoad is, for a whole node read with no allocation running, what its
// usage is: no replica's (the engine reads none of it as a replica's), but
// load that stays on the node, as processes outside Nomad or a task's
// leftovers. Its peak over the samples read while no allocation ran (cpu,
// mem; those read while some ran were theirs, gone with them) is added to
// what others take of the node (OtherReservedCPUMHz,
// OtherReservedMemoryMB, never past the capacity), so that the counts
// leave room for it and a busy empty node does not read as free. (Nomad's
// node stats include the operating system's own use, which the node's
// reserved resources may already take out of its capacity: that part is
// counted twice, on the safe side.)
func nodeLoad(o *engine.Observation, cpu, mem float64) {
	o.OtherReservedCPUMHz = min(o.OtherReservedCPUMHz+cpu, o.CPUCapacityMHz)
	if o.MemoryCapacityMB > 0 {
		o.OtherReservedMemoryMB = min(o.OtherReservedMemoryMB+mem, o.MemoryCapacityMB)
	}
}

// sampleReplicas is how many replicas an observation's samples sum over:
// the warm ones while any is warm, else every running one.
func sampleReplicas(o *engine.Observation) int {
	if warm := o.RunningReplicas - o.WarmingReplicas; warm > 0 {
		return warm
	}
	return o.RunningReplicas
}
