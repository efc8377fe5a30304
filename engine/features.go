package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/stats"
)

// Feature names the engine derives from an observation. CPU features are
// shares of the workload's CPU room (the host's capacity less what other
// workloads reserve, other_reserved_cpu_mhz); per-replica features describe one
// replica's usage over the window (see Evidence for how warming replicas
// and windows without usage are counted); host features all replicas'.
const (
	FeatCPUReplicaMean      = "cpu_replica_mean"
	FeatCPUReplicaStd       = "cpu_replica_std"
	FeatCPUReplicaCV        = "cpu_replica_cv"
	FeatCPUReplicaP50       = "cpu_replica_p50"
	FeatCPUReplicaP90       = "cpu_replica_p90"
	FeatCPUReplicaP95       = "cpu_replica_p95"
	FeatCPUReplicaP99       = "cpu_replica_p99"
	FeatCPUReplicaMax       = "cpu_replica_max"
	FeatCPUReplicaLast      = "cpu_replica_last"
	FeatCPUReplicaMeanLast5 = "cpu_replica_mean_last5"
	FeatCPUReplicaMeanStd2  = "cpu_replica_mean_std2"
	FeatCPUReplicaMeanStd3  = "cpu_replica_mean_std3"
	FeatCPUReplicaMaxLast5  = "cpu_replica_max_last5"
	FeatCPUReplicaMaxLast20 = "cpu_replica_max_last20"
	// The dispersion (std) of the last 20 samples: the recent spread.
	FeatCPUReplicaStdLast20 = "cpu_replica_std_last20"
	// The dispersion of the last 5 and the last 60 samples, and the
	// largest rise from one sample to the next in the window.
	FeatCPUReplicaStdLast5  = "cpu_replica_std_last5"
	FeatCPUReplicaStdLast60 = "cpu_replica_std_last60"
	FeatCPUReplicaRiseMax   = "cpu_replica_rise_max"
	// The largest one-sample rise in the last 20 samples, and the largest
	// rise over five samples in the window.
	FeatCPUReplicaRiseMaxLast20 = "cpu_replica_rise_max_last20"
	FeatCPUReplicaRise5Max      = "cpu_replica_rise5_max"
	// The window's sustained peaks: the largest mean of 5 and of 20
	// consecutive samples per replica.
	FeatCPUReplicaMaxMean5  = "cpu_replica_max_mean5"
	FeatCPUReplicaMaxMean20 = "cpu_replica_max_mean20"
	FeatCPUReplicaTrend     = "cpu_replica_trend"
	// The trend's rising and falling parts, each >= 0 (for networks whose
	// inputs must not be negative).
	FeatCPUReplicaTrendUp   = "cpu_replica_trend_up"
	FeatCPUReplicaTrendDown = "cpu_replica_trend_down"
	FeatCPUReplicaRequest   = "cpu_replica_request"
	FeatCPUReplicaDemand    = "cpu_replica_demand"
	FeatCPUHostMean         = "cpu_host_mean"
	FeatCPUHostMax          = "cpu_host_max"
	// Fit features are how many replicas of the observed size fit in the
	// host: 1 / per-replica usage, capped at MaxFit. They grow as usage
	// falls, which lets a processor's positive edges carry "room" forward.
	FeatCPUFitMean      = "cpu_fit_mean"
	FeatCPUFitMeanLast5 = "cpu_fit_mean_last5"
	FeatCPUFitMeanStd2  = "cpu_fit_mean_std2"
	FeatCPUFitMeanStd3  = "cpu_fit_mean_std3"
	FeatCPUFitP95       = "cpu_fit_p95"
	FeatCPUFitP99       = "cpu_fit_p99"
	FeatCPUFitMax       = "cpu_fit_max"
	FeatCPUFitMaxLast5  = "cpu_fit_max_last5"
	FeatCPUFitMaxLast20 = "cpu_fit_max_last20"
	FeatCPUFitDemand    = "cpu_fit_demand"
	// Memory features are shares of the workload's memory room (capacity
	// less other_reserved_memory_mb), judged by
	// the peak (memory cannot be throttled). When the capacity is unknown
	// memory is not judged: the shares read 0 and mem_fit reads MaxFit.
	FeatMemReplicaMax    = "mem_replica_max"
	FeatMemReplicaDemand = "mem_replica_demand"
	FeatMemHostMax       = "mem_host_max"
	FeatMemFit           = "mem_fit"
	// Position of the last sample in the day (UTC), as a point on the
	// unit circle.
	FeatDaySin = "day_sin"
	FeatDayCos = "day_cos"
	// The recent level (cpu_replica_mean_last5) times (1 + day_sin) / 2
	// and (1 + day_cos) / 2: the daily cycle in usage units and never
	// negative, so that a network of ReLU layers whose estimate scales with
	// the usage can read it.
	FeatCPULevelDaySin = "cpu_level_day_sin"
	FeatCPULevelDayCos = "cpu_level_day_cos"
	// FeatRunning is the number of running replicas.
	FeatRunning = "running_replicas"
	// SlotPrefix + k names the admission processor's k-th demand slot:
	// its CPU demand (share of the CPU room; countable). The slot's memory
	// demand, whether it is a running replica, and whether it is a new
	// replica of the observed workload itself (offered by WantedReplicas
	// or every slot, not a QueuedReplicas entry of its own size) are the
	// inputs SlotPrefix + k + SlotMemorySuffix, + SlotRunningSuffix and +
	// SlotOwnSuffix.
	SlotPrefix        = "slot_"
	SlotMemorySuffix  = "_memory"
	SlotRunningSuffix = "_running"
	SlotOwnSuffix     = "_own"
)

// FeatureNames lists every named feature the engine can derive, besides the
// demand slots.
var FeatureNames = []string{
	FeatCPUReplicaMean, FeatCPUReplicaStd, FeatCPUReplicaCV, FeatCPUReplicaP50, FeatCPUReplicaP90,
	FeatCPUReplicaP95, FeatCPUReplicaP99, FeatCPUReplicaMax, FeatCPUReplicaLast,
	FeatCPUReplicaMeanLast5, FeatCPUReplicaMeanStd2, FeatCPUReplicaMeanStd3, FeatCPUReplicaMaxLast5, FeatCPUReplicaMaxLast20,
	FeatCPUReplicaStdLast20, FeatCPUReplicaStdLast5, FeatCPUReplicaStdLast60, FeatCPUReplicaRiseMax, FeatCPUReplicaRiseMaxLast20, FeatCPUReplicaRise5Max, FeatCPUReplicaMaxMean5, FeatCPUReplicaMaxMean20, FeatCPUReplicaTrend, FeatCPUReplicaTrendUp, FeatCPUReplicaTrendDown, FeatCPUReplicaRequest, FeatCPUReplicaDemand,
	FeatCPUHostMean, FeatCPUHostMax,
	FeatCPUFitMean, FeatCPUFitMeanLast5, FeatCPUFitMeanStd2, FeatCPUFitMeanStd3,
	FeatCPUFitP95, FeatCPUFitP99, FeatCPUFitMax, FeatCPUFitMaxLast5, FeatCPUFitMaxLast20, FeatCPUFitDemand,
	FeatMemReplicaMax, FeatMemReplicaDemand, FeatMemHostMax, FeatMemFit,
	FeatDaySin, FeatDayCos, FeatCPULevelDaySin, FeatCPULevelDayCos, FeatRunning,
}

// MaxFit caps the fit features (replicas that fit at the observed usage).
const MaxFit = 1000

// MaxShare caps every share feature and slot (a replica that needs more
// than this many hosts fits nowhere, whatever the exact figure).
const MaxShare = 100

func fit(share float64) float64 {
	if share <= 1.0/MaxFit {
		return MaxFit
	}
	return 1 / share
}

func capShare(x float64) float64 { return min(x, MaxShare) }

const (
	fCPUReplicaMean = iota
	fCPUReplicaStd
	fCPUReplicaCV
	fCPUReplicaP50
	fCPUReplicaP90
	fCPUReplicaP95
	fCPUReplicaP99
	fCPUReplicaMax
	fCPUReplicaLast
	fCPUReplicaMeanLast5
	fCPUReplicaMeanStd2
	fCPUReplicaMeanStd3
	fCPUReplicaMaxLast5
	fCPUReplicaMaxLast20
	fCPUReplicaStdLast20
	fCPUReplicaStdLast5
	fCPUReplicaStdLast60
	fCPUReplicaRiseMax
	fCPUReplicaRiseMaxLast20
	fCPUReplicaRise5Max
	fCPUReplicaMaxMean5
	fCPUReplicaMaxMean20
	fCPUReplicaTrend
	fCPUReplicaTrendUp
	fCPUReplicaTrendDown
	fCPUReplicaRequest
	fCPUReplicaDemand
	fCPUHostMean
	fCPUHostMax
	fCPUFitMean
	fCPUFitMeanLast5
	fCPUFitMeanStd2
	fCPUFitMeanStd3
	fCPUFitP95
	fCPUFitP99
	fCPUFitMax
	fCPUFitMaxLast5
	fCPUFitMaxLast20
	fCPUFitDemand
	fMemReplicaMax
	fMemReplicaDemand
	fMemHostMax
	fMemFit
	fDaySin
	fDayCos
	fCPULevelDaySin
	fCPULevelDayCos
	fRunning
	numFeatures
)

// levelShare marks the features that are a level of usage or demand as a
// share of the room (a mean, a quantile, a peak, a request, a demand): a
// positive one holds data however small it is (featureMap.filledCPU). A
// dispersion, a trend, a ratio, a fit, the time of day, a level scaled by
// the time of day (small because of the clock, not of the usage) and the
// replica count are not.
var levelShare = func() (l [numFeatures]bool) {
	for _, f := range []int{
		fCPUReplicaMean, fCPUReplicaP50, fCPUReplicaP90, fCPUReplicaP95, fCPUReplicaP99, fCPUReplicaMax, fCPUReplicaLast,
		fCPUReplicaMeanLast5, fCPUReplicaMeanStd2, fCPUReplicaMeanStd3, fCPUReplicaMaxLast5, fCPUReplicaMaxLast20,
		fCPUReplicaMaxMean5, fCPUReplicaMaxMean20, fCPUReplicaRequest, fCPUReplicaDemand, fCPUHostMean, fCPUHostMax,
		fMemReplicaMax, fMemReplicaDemand, fMemHostMax,
	} {
		l[f] = true
	}
	return l
}()

// Evidence says how the usage window was read: what a replica is taken to
// use, and whether memory is judged.
type Evidence struct {
	// Basis is "observed" (the running replicas' usage, per warm replica),
	// "requested" (replicas running but none warm, or no usage reported:
	// each counted at the larger of its peak usage and its requested
	// resources), "stopped" (no replica running, the samples those that
	// stopped used: the first new replica counted as the running one it
	// will be, at their usage per replica, and later ones at no less than
	// that nor than their demand) or "demand" (no replica running: a
	// replica counted at its demand).
	Basis string `json:"basis"`
	// Running, Warming: the observation's replicas.
	Running int `json:"running"`
	Warming int `json:"warming"`
	// MemoryJudged is false when the host's memory capacity is unknown.
	MemoryJudged bool `json:"memory_judged"`
	// Note is a one-line account for explanations.
	Note string `json:"note"`
}

// Bases of Evidence.
const (
	BasisObserved  = "observed"
	BasisRequested = "requested"
	BasisDemand    = "demand"
	BasisStopped   = "stopped"
)

// featureWork is the scratch space of feature extraction.
type featureWork struct {
	perReplica []float64
	sorted     []float64
	feats      [numFeatures]float64
	ev         Evidence
	// per-replica CPU request share and memory peak share (see compute)
	reqShare, memShare float64
	// slots, filled for the number of slots a model reads
	slotCPU, slotMem, slotRun, slotOwn []float64
	// each slot's replica in MHz and MB, not capped as the shares are
	// (for the refused slot's figures)
	slotCPUMHz, slotMemMB []float64
	slotsFilled           int     // slots holding a replica
	memPerMB              float64 // one running replica's memory (memShare, uncapped, in MB)
	// what the evidence note says (formatted only when a decision is
	// returned: a sweep reads none)
	note    noteKind
	memNote memNoteKind
	// warm is how many replicas the rules read as warm: running less
	// warming, or none when the window's CPU is zero throughout
	warm int
	// unread is set when the window shows usage that the demand basis
	// does not read (no replica running, and the usage not that of
	// replicas that stopped), so that the note says so
	unread unreadKind
	// the last per-replica usage summarized, and its summary
	lastPR  []float64
	lastSum stats.Summary
	summed  bool
}

// compute derives every named feature of o (which must be valid) into
// fw.feats, following the evidence rules:
//
//   - with warm replicas (running minus warming), a replica uses the warm
//     ones' usage: sample / warm, so warming replicas count like the group's
//     recent per-replica usage, never at zero;
//   - with replicas running but none warm, or a window whose CPU is zero
//     throughout (no usage reported yet), a replica uses the larger of its
//     share of the window's peak and its requested resources, at every
//     sample;
//   - with no replica running, a replica uses its demand; when the
//     samples are those of replicas that stopped (StoppedReplicas), show
//     usage and no queue is given, a replica uses their usage per
//     replica, and the first new one is laid out as running (fillSlots):
//     the counts are those of one such replica still running, so that a
//     workload stopped for its usage is not started again at its demand.
//
// Memory follows the same rules on the window's peak (memory is judged by
// its peak); without memory in the samples a running replica counts at its
// requested memory.
func (fw *featureWork) compute(o *Observation) {
	n := len(o.Samples)
	if cap(fw.perReplica) < n {
		fw.perReplica = make([]float64, n)
		fw.sorted = make([]float64, n)
	}
	pr := fw.perReplica[:n]
	capCPU, capMem := o.room()
	demand := o.ReplicaCPUDemandMHz / capCPU
	running := o.RunningReplicas
	warm := running - o.WarmingReplicas
	// (The samples are valid: finite and >= 0. The largest share is the
	// share of the largest sample, as a correctly rounded division by
	// capCPU > 0 keeps the order.)
	var hostSum, peakMHz float64
	for _, s := range o.Samples {
		hostSum += s.CPUMHz / capCPU
		if s.CPUMHz > peakMHz {
			peakMHz = s.CPUMHz
		}
	}
	allZero, hostMax := peakMHz == 0, peakMHz/capCPU
	if allZero {
		warm = 0
	}
	reqPer := demand
	if running > 0 && o.RequestedCPUMHz > 0 {
		reqPer = o.RequestedCPUMHz / capCPU / float64(running)
	}
	ev := &fw.ev
	*ev = Evidence{Running: running, Warming: o.WarmingReplicas, MemoryJudged: o.MemoryCapacityMB > 0}
	fw.warm = warm
	fw.memNote = memNoteNone
	fw.unread = unreadNone
	// (A queue gives each new replica's size itself, and its entries are
	// not the workload's own: the stopped replicas' usage does not apply.)
	stopped := running == 0 && o.StoppedReplicas > 0 && !allZero && o.QueuedReplicas == nil
	switch {
	case stopped:
		ev.Basis = BasisStopped
		fw.note = noteStopped
		// The first new replica is laid out as running (fillSlots): the
		// model costs it at its learned estimate of this usage, as a
		// running replica (not at its demand: what Nomad can place at
		// its reservation is the placement's), and later ones at no
		// less than that nor than their demand.
		for i, s := range o.Samples {
			pr[i] = s.CPUMHz / capCPU / float64(o.StoppedReplicas)
		}
	case running == 0:
		ev.Basis = BasisDemand
		fw.note = noteDemand
		switch {
		case allZero:
		case o.StoppedReplicas > 0:
			fw.unread = unreadQueue
		default:
			fw.unread = unreadNoStopped
		}
		for i := range pr {
			pr[i] = demand
		}
	case warm > 0:
		ev.Basis = BasisObserved
		fw.note = noteObserved
		if warm < running {
			fw.note = noteObservedWarming
		}
		for i, s := range o.Samples {
			pr[i] = s.CPUMHz / capCPU / float64(warm)
		}
	default:
		ev.Basis = BasisRequested
		fw.note = noteAllWarming
		if allZero {
			fw.note = noteNoUsage
		}
		// One level for the whole window, the larger of the peak and the
		// request: a flat window whose every statistic scales with it,
		// so that a higher request (or usage) never reads as more room
		// (the trunk is positively homogeneous; a per-sample max(usage,
		// request) moved the dispersion statistics either way).
		peak := 0.0
		for _, s := range o.Samples {
			peak = max(peak, s.CPUMHz/capCPU/float64(running))
		}
		for i := range pr {
			pr[i] = max(peak, reqPer)
		}
	}
	sum := fw.summarize(pr)
	f := &fw.feats
	f[fCPUReplicaMean] = capShare(sum.Mean)
	f[fCPUReplicaStd] = capShare(sum.Std)
	f[fCPUReplicaCV] = 0
	if sum.Mean > 0 {
		f[fCPUReplicaCV] = min(sum.Std/sum.Mean, MaxFit)
	}
	f[fCPUReplicaP50] = capShare(sum.P50)
	f[fCPUReplicaP90] = capShare(sum.P90)
	f[fCPUReplicaP95] = capShare(sum.P95)
	f[fCPUReplicaP99] = capShare(sum.P99)
	f[fCPUReplicaMax] = capShare(sum.Max)
	f[fCPUReplicaLast] = capShare(sum.Last)
	f[fCPUReplicaMeanLast5] = capShare(sum.MeanLast5)
	f[fCPUReplicaMeanStd2] = capShare(sum.Mean + 2*sum.Std)
	f[fCPUReplicaMeanStd3] = capShare(sum.Mean + 3*sum.Std)
	f[fCPUReplicaMaxLast5] = capShare(sum.MaxLast5)
	f[fCPUReplicaMaxLast20] = capShare(sum.MaxLast20)
	f[fCPUReplicaStdLast20] = capShare(sum.StdLast20)
	f[fCPUReplicaStdLast5] = capShare(sum.StdLast5)
	f[fCPUReplicaStdLast60] = capShare(sum.StdLast60)
	f[fCPUReplicaRiseMax] = capShare(sum.RiseMax)
	f[fCPUReplicaRiseMaxLast20] = capShare(sum.RiseMaxLast20)
	f[fCPUReplicaRise5Max] = capShare(sum.Rise5Max)
	f[fCPUReplicaMaxMean5] = capShare(sum.MaxMean5)
	f[fCPUReplicaMaxMean20] = capShare(sum.MaxMean20)
	f[fCPUReplicaTrend] = max(min(sum.Trend, MaxShare), -MaxShare)
	f[fCPUReplicaTrendUp] = max(f[fCPUReplicaTrend], 0)
	f[fCPUReplicaTrendDown] = max(-f[fCPUReplicaTrend], 0)
	f[fCPUReplicaRequest] = capShare(reqPer)
	f[fCPUReplicaDemand] = capShare(demand)
	f[fCPUHostMean] = capShare(hostSum / float64(n))
	f[fCPUHostMax] = capShare(hostMax)
	f[fCPUFitMean] = fit(sum.Mean)
	f[fCPUFitMeanLast5] = fit(sum.MeanLast5)
	f[fCPUFitMeanStd2] = fit(sum.Mean + 2*sum.Std)
	f[fCPUFitMeanStd3] = fit(sum.Mean + 3*sum.Std)
	f[fCPUFitP95] = fit(sum.P95)
	f[fCPUFitP99] = fit(sum.P99)
	f[fCPUFitMax] = fit(sum.Max)
	f[fCPUFitMaxLast5] = fit(sum.MaxLast5)
	f[fCPUFitMaxLast20] = fit(sum.MaxLast20)
	f[fCPUFitDemand] = fit(demand)
	fw.reqShare = reqPer

	// Memory.
	fw.memShare, fw.memPerMB = 0, 0
	f[fMemReplicaDemand], f[fMemReplicaMax], f[fMemHostMax], f[fMemFit] = 0, 0, 0, MaxFit
	if ev.MemoryJudged {
		memDemand := newReplicaMemoryMB(o.ReplicaMemoryDemandMB) / capMem
		var peakMB float64
		for _, s := range o.Samples {
			if s.MemoryMB > peakMB {
				peakMB = s.MemoryMB
			}
		}
		measured, peak := peakMB > 0, peakMB/capMem
		memReq := memDemand
		if running > 0 && o.RequestedMemoryMB > 0 {
			memReq = o.RequestedMemoryMB / capMem / float64(running)
		}
		var mr float64
		switch {
		case stopped && measured:
			mr = max(peak/float64(o.StoppedReplicas), memDemand)
		case running == 0:
			mr = memDemand
		case measured && warm > 0:
			mr = peak / float64(warm)
		case measured:
			mr = max(peak/float64(running), memReq)
		default:
			mr = memReq
			fw.memNote = memNoteRequested
		}
		fw.memShare = capShare(mr)
		fw.memPerMB = mr * capMem
		f[fMemReplicaDemand] = capShare(memDemand)
		f[fMemReplicaMax] = capShare(mr)
		f[fMemHostMax] = capShare(mr * float64(running))
		f[fMemFit] = fit(mr)
	} else {
		fw.memNote = memNoteUnjudged
	}
	last := o.Samples[n-1].Time
	day := float64(last%86400) / 86400 * 2 * math.Pi
	f[fDaySin], f[fDayCos] = math.Sin(day), math.Cos(day)
	f[fCPULevelDaySin] = f[fCPUReplicaMeanLast5] * (1 + f[fDaySin]) / 2
	f[fCPULevelDayCos] = f[fCPUReplicaMeanLast5] * (1 + f[fDayCos]) / 2
	f[fRunning] = float64(running)
}

// summarize is stats.Summarize of the per-replica usage, kept for the next
// call: observations of one window that differ only in the count in force
// (a threshold sweep's) give bitwise the same per-replica usage, and the
// summary of those need not be sorted again.
func (fw *featureWork) summarize(pr []float64) stats.Summary {
	if fw.summed && len(pr) == len(fw.lastPR) {
		same := true
		for i, v := range pr {
			if math.Float64bits(v) != math.Float64bits(fw.lastPR[i]) {
				same = false
				break
			}
		}
		if same {
			return fw.lastSum
		}
	}
	fw.lastSum = stats.Summarize(pr, fw.sorted)
	fw.lastPR = append(fw.lastPR[:0], pr...)
	fw.summed = true
	return fw.lastSum
}

// Kinds of evidence note (see featureWork.evidence).
type (
	noteKind    uint8
	memNoteKind uint8
)

const (
	noteDemand noteKind = iota
	noteObserved
	noteObservedWarming
	noteNoUsage
	noteAllWarming
	noteStopped
)

// Why a window's usage went unread (see featureWork.unread).
type unreadKind uint8

const (
	unreadNone unreadKind = iota
	// no replica running and stopped_replicas not given.
	unreadNoStopped
	// stopped_replicas given, but a queue sizes the new replicas.
	unreadQueue
)

const (
	memNoteNone memNoteKind = iota
	memNoteRequested
	memNoteUnjudged
)

// evidence returns the Evidence of the last compute (of o), its note
// written out for a processor that reads replica slots (the new replicas
// laid out one by one) or not.
func (fw *featureWork) evidence(o *Observation, slots bool) Evidence {
	ev := fw.ev
	running, warm := ev.Running, fw.warm
	switch fw.note {
	case noteDemand:
		ev.Note = "no replica running: a replica counts at its demand"
		switch fw.unread {
		case unreadNoStopped:
			ev.Note += " (the window's usage is read as no replica's, none running: a load that stays on the host belongs in other_reserved_cpu_mhz and other_reserved_memory_mb)"
		case unreadQueue:
			ev.Note += " (the window's usage, that of the replicas that stopped, is read as no replica's: the queue gives each new replica's size)"
		}
	case noteStopped:
		ev.Note = "no replica running: a replica counts at what the replicas that stopped used per replica"
		if slots {
			ev.Note = "no replica running: the first new replica counts as the running one it will be, at what the replicas that stopped used per replica, and later ones at no less than that nor than their demand"
		}
	case noteObserved:
		ev.Note = fmt.Sprintf("observed: %d replica(s) running", running)
	case noteObservedWarming:
		ev.Note = fmt.Sprintf("observed: %d of %d replica(s) warm, the %d warming count at the warm ones' usage", warm, running, running-warm)
	case noteNoUsage:
		ev.Note = fmt.Sprintf("no usage reported yet: %d replica(s) count at their requested resources", running)
	case noteAllWarming:
		ev.Note = fmt.Sprintf("all %d replica(s) warming: each counts at the larger of its peak usage and its request", running)
	}
	switch fw.memNote {
	case memNoteRequested:
		ev.Note += "; memory not in the samples: replicas count at their requested memory"
	case memNoteUnjudged:
		ev.Note += "; memory not judged (memory capacity unknown)"
	}
	if g := windowGap(o.Samples); g.ratio > 0 {
		ev.Note += fmt.Sprintf("; a gap of %s between samples %d and %d, %.0f times the window's usual spacing of %s: the models read samples, not time, so the usage before it counts as recent",
			seconds(g.gap), g.after, g.after+1, g.ratio, seconds(g.usual))
	}
	return ev
}

// gapRatio is how many times a window's usual spacing one gap between
// samples must be to be named (a monitoring export with a hole, readings
// that stopped for a while).
const gapRatio = 4

// sampleGap is the largest gap of a window, when it is at least gapRatio
// times the window's usual spacing (ratio 0 otherwise); gap and usual in
// seconds.
type sampleGap struct {
	gap, usual float64
	after      int // the sample before the gap
	ratio      float64
}

// seconds writes a span of seconds as a duration ("1h0m0s"), or in days
// beyond what a time.Duration holds (sample times reach 1e11 s).
func seconds(s float64) string {
	if s < 1e9 {
		return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
	}
	return fmt.Sprintf("%.0f days", s/86400)
}

// windowGap finds the largest gap between consecutive samples and compares
// it with the mean spacing of the others (the window's span less the gap,
// over the other intervals).
func windowGap(ss []Sample) sampleGap {
	if len(ss) < 3 {
		return sampleGap{}
	}
	var g sampleGap
	var largest int64
	for i := 1; i < len(ss); i++ {
		if d := ss[i].Time - ss[i-1].Time; d > largest {
			largest, g.after = d, i-1
		}
	}
	usual := float64(ss[len(ss)-1].Time-ss[0].Time-largest) / float64(len(ss)-2)
	if usual <= 0 || float64(largest) < gapRatio*usual {
		return sampleGap{}
	}
	g.gap, g.usual = float64(largest), usual
	g.ratio = float64(largest) / usual
	return g
}

// room is the CPU and memory the workload may use on the host: its capacity
// less what other workloads reserve there (they are taken to use what they
// reserve). It is never below a millionth of the capacity, so that shares
// stay finite (and then nothing fits).
func (o *Observation) room() (cpu, mem float64) {
	cpu = math.Max(o.CPUCapacityMHz-o.OtherReservedCPUMHz, o.CPUCapacityMHz*1e-6)
	mem = math.Max(o.MemoryCapacityMB-o.OtherReservedMemoryMB, o.MemoryCapacityMB*1e-6)
	return cpu, mem
}

// fillSlots lays out the admission queue for k slots: the running replicas
// first (up to the wanted number), each at its requested CPU share, the
// memory peak share of one replica, and running = 1; then the new replicas,
// from QueuedReplicas or, in the common case, WantedReplicas minus the
// running ones (every remaining slot when WantedReplicas is 0), each at its
// demand, own = 1 for the latter (replicas of the observed workload; with
// the stopped basis the first of them is laid out as running, see below).
// Slots past the queue are empty (NaN: they hold no data).
func (fw *featureWork) fillSlots(o *Observation, k int) {
	if cap(fw.slotCPU) < k {
		fw.slotCPU, fw.slotMem, fw.slotRun, fw.slotOwn = make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)
		fw.slotCPUMHz, fw.slotMemMB = make([]float64, k), make([]float64, k)
	}
	fw.slotCPU, fw.slotMem, fw.slotRun, fw.slotOwn = fw.slotCPU[:k], fw.slotMem[:k], fw.slotRun[:k], fw.slotOwn[:k]
	fw.slotCPUMHz, fw.slotMemMB = fw.slotCPUMHz[:k], fw.slotMemMB[:k]
	lay := newSlotLayout(o, k)
	fw.slotsFilled = fw.layoutSlots(o, &lay, 0, k)
}

// slotLayout is what laying out one slot reads of an observation for k
// slots, besides the slot's number.
type slotLayout struct {
	capCPU, capMem       float64
	wanted, runningSlots int
}

func newSlotLayout(o *Observation, k int) slotLayout {
	l := slotLayout{wanted: k}
	l.capCPU, l.capMem = o.room()
	if o.WantedReplicas > 0 {
		l.wanted = min(o.WantedReplicas, k)
	}
	l.runningSlots = min(o.RunningReplicas, l.wanted)
	return l
}

// layoutSlots lays out slots from to to (see fillSlots; the slot slices
// hold at least to values) and returns how many of them hold a replica.
func (fw *featureWork) layoutSlots(o *Observation, l *slotLayout, from, to int) (filled int) {
	cpu, mem, run, own := fw.slotCPU[:to], fw.slotMem[:to], fw.slotRun[:to], fw.slotOwn[:to]
	cpuMHz, memMB := fw.slotCPUMHz[:to], fw.slotMemMB[:to]
	capCPU, capMem := l.capCPU, l.capMem
	for i := from; i < to; i++ {
		switch {
		case i < l.runningSlots:
			cpuMHz[i], memMB[i] = fw.reqShare*capCPU, fw.memPerMB
			cpu[i], mem[i], run[i], own[i] = capShare(fw.reqShare), fw.memShare, 1, 0
		case o.QueuedReplicas != nil:
			q := i - l.runningSlots
			if q >= len(o.QueuedReplicas) {
				cpu[i], mem[i], run[i], own[i] = math.NaN(), math.NaN(), math.NaN(), math.NaN()
				continue
			}
			r := o.QueuedReplicas[q]
			cpuMHz[i], memMB[i] = r.CPUMHz, newSlotMemory(o, r.MemoryMB)
			cpu[i], mem[i], run[i], own[i] = capShare(r.CPUMHz/capCPU), memShare(memMB[i], capMem), 0, 0
		case i < l.wanted:
			// A new replica of the workload itself needs, by memory, at
			// least what a running one peaks at (fw.memPerMB; 0 when
			// memory is not judged): admitted at a smaller demand, it
			// would be refused once it runs, and the count would flap.
			mb := newSlotMemory(o, o.ReplicaMemoryDemandMB)
			m := memShare(mb, capMem)
			if o.RunningReplicas > 0 || fw.ev.Basis == BasisStopped {
				m, mb = max(m, fw.memShare), max(mb, fw.memPerMB)
			}
			cpuMHz[i], memMB[i] = o.ReplicaCPUDemandMHz, mb
			cpu[i], mem[i], run[i], own[i] = capShare(o.ReplicaCPUDemandMHz/capCPU), m, 0, 1
			if i == 0 && fw.ev.Basis == BasisStopped {
				// None runs, and the samples are what the replicas that
				// stopped used: the first new one is read as the running
				// replica it will be (the learned estimate of their
				// usage), and so every later one of the workload at no
				// less than that (the model's floor for a new replica of
				// a running workload). Admitted at its demand instead, a
				// workload stopped for its usage would start again at
				// once, and stop again (a user trial: 1, 0, 1, 0...).
				run[i], own[i] = 1, 0
			}
		default:
			cpu[i], mem[i], run[i], own[i] = math.NaN(), math.NaN(), math.NaN(), math.NaN()
			continue
		}
		filled++
	}
	return filled
}

// newSlotMemory is a new replica's memory in MB: never below Nomad's
// smallest reservation when memory is judged (a demand not given, 0, is no
// evidence that it needs none).
func newSlotMemory(o *Observation, mb float64) float64 {
	if o.MemoryCapacityMB <= 0 {
		return 0
	}
	return newReplicaMemoryMB(mb)
}

// memShare is mb as a share of the memory room capMem (0 when memory is
// not judged).
func memShare(mb, capMem float64) float64 {
	if capMem <= 0 || mb <= 0 {
		return 0
	}
	return capShare(mb / capMem)
}

// featureMap says, for each model input, where its value comes from.
type featureMap struct {
	feature []int // index into the feature vector, or a slot source
	slot    []int // slot number for slot inputs, else -1
	slots   int   // number of slots the model reads (largest slot + 1)
	// filledCPU is the least CPU share a slot holding a replica is given:
	// just above the model's input epsilon, so that a replica whose
	// demand is a tiny share of the room still holds data (and is
	// admitted like any other that fits) instead of reading as an empty
	// slot. A positive level (levelShare) is given at least as much, so that usage
	// (or a demand) that is a tiny share of the room still holds data:
	// at or below the epsilon it read as none, every branch of the
	// capacity processor went dark and the count fell to 0, below what
	// more usage gave (a user trial: 0.00004 MHz on a 20,000 MHz host
	// gave 0 containers, 0.0001 MHz gave 110). Zero stays zero.
	filledCPU float64
	// slotInputs[k]: the inputs that read slot k; countInputs: the
	// features read that depend on the count running other than through
	// a replica's share (running_replicas, mem_host_max; see Recounter)
	slotInputs  [][]int
	countInputs []int
}

const (
	slotCPUSource = -1 - iota
	slotMemSource
	slotRunSource
	slotOwnSource
)

func newFeatureMap(m *Model) (featureMap, error) {
	fm := featureMap{feature: make([]int, len(m.Inputs)), slot: make([]int, len(m.Inputs)),
		filledCPU: math.Nextafter(math.Abs(m.Epsilon()), math.Inf(1))}
	index := make(map[string]int, numFeatures)
	for i, n := range FeatureNames {
		index[n] = i
	}
	for i, in := range m.Inputs {
		fm.slot[i] = -1
		if f, ok := index[in.Name]; ok {
			fm.feature[i] = f
			if f == fRunning || f == fMemHostMax {
				fm.countInputs = append(fm.countInputs, i)
			}
			continue
		}
		if k, src, ok := parseSlot(in.Name); ok {
			if k >= MaxReplicas { // before k+1, which could wrap
				return featureMap{}, modelErr(fmt.Sprintf("inputs[%d].name", i), "reads slot %d, more than the limit of %d slots", k, MaxReplicas)
			}
			if k >= len(m.Inputs) {
				// Slots are numbered from 0 and each needs an input: a
				// model with fewer inputs than its largest slot would
				// have every decision lay out (and allocate) that many.
				return featureMap{}, modelErr(fmt.Sprintf("inputs[%d].name", i), "reads slot %d, but the model has %d inputs: slots are numbered from 0, one input at least per slot", k, len(m.Inputs))
			}
			fm.feature[i], fm.slot[i] = src, k
			fm.slots = max(fm.slots, k+1)
			for len(fm.slotInputs) <= k {
				fm.slotInputs = append(fm.slotInputs, nil)
			}
			fm.slotInputs[k] = append(fm.slotInputs[k], i)
			continue
		}
		return featureMap{}, modelErr(fmt.Sprintf("inputs[%d].name", i), "unknown feature %q: the engine derives %s, and %s<k>, %s<k>%s, %s<k>%s, %s<k>%s demand slots",
			in.Name, strings.Join(FeatureNames, ", "), SlotPrefix, SlotPrefix, SlotMemorySuffix, SlotPrefix, SlotRunningSuffix, SlotPrefix, SlotOwnSuffix)
	}
	return fm, nil
}

// parseSlot reads "slot_<k>", "slot_<k>_memory", "slot_<k>_running" or
// "slot_<k>_own".
func parseSlot(name string) (k, source int, ok bool) {
	rest, found := strings.CutPrefix(name, SlotPrefix)
	if !found {
		return 0, 0, false
	}
	source = slotCPUSource
	if r, cut := strings.CutSuffix(rest, SlotMemorySuffix); cut {
		rest, source = r, slotMemSource
	} else if r, cut := strings.CutSuffix(rest, SlotRunningSuffix); cut {
		rest, source = r, slotRunSource
	} else if r, cut := strings.CutSuffix(rest, SlotOwnSuffix); cut {
		rest, source = r, slotOwnSource
	}
	k, err := strconv.Atoi(rest)
	if err != nil || k < 0 || strconv.Itoa(k) != rest {
		return 0, 0, false
	}
	return k, source, true
}

// perReplica reports whether every input is a feature of one replica:
// none is summed over the running replicas (cpu_host_mean, cpu_host_max,
// mem_host_max), counts them (running_replicas) or is a slot.
func (fm *featureMap) perReplica() bool {
	if fm.slots > 0 {
		return false
	}
	for _, src := range fm.feature {
		switch src {
		case fCPUHostMean, fCPUHostMax, fMemHostMax, fRunning:
			return false
		}
	}
	return true
}

// fill writes the model's input vector into x from the computed features
// (and the slots, which it lays out first).
func (fm *featureMap) fill(fw *featureWork, o *Observation, x []float64) {
	if fm.slots > 0 {
		fw.fillSlots(o, fm.slots)
	}
	fm.fillInputs(fw, x, 0, len(fm.feature))
}

// fillInputs writes inputs lo to hi of x from the computed features and
// slots.
func (fm *featureMap) fillInputs(fw *featureWork, x []float64, lo, hi int) {
	x = x[lo:hi]
	for k, src := range fm.feature[lo:hi] {
		switch src {
		case slotCPUSource:
			x[k] = fw.slotCPU[fm.slot[lo+k]]
			if x[k] < fm.filledCPU { // NaN (an empty slot) stays
				x[k] = fm.filledCPU
			}
		case slotMemSource:
			x[k] = fw.slotMem[fm.slot[lo+k]]
		case slotRunSource:
			x[k] = fw.slotRun[fm.slot[lo+k]]
		case slotOwnSource:
			x[k] = fw.slotOwn[fm.slot[lo+k]]
		default:
			x[k] = fw.feats[src]
			if levelShare[src] && x[k] > 0 && x[k] < fm.filledCPU {
				x[k] = fm.filledCPU
			}
		}
	}
}

// FeatureVector computes the named features of o (which is validated
// first); role labels the host in errors. Names may be any of FeatureNames
// and slot inputs. It is meant for trainers and tools.
func FeatureVector(o *Observation, role string, names []string) ([]float64, error) {
	m := &Model{Inputs: make([]Node, len(names))}
	for i, n := range names {
		m.Inputs[i].Name = n
	}
	fm, err := newFeatureMap(m)
	if err != nil {
		return nil, err
	}
	if err := o.Validate(role); err != nil {
		return nil, err
	}
	var fw featureWork
	fw.compute(o)
	x := make([]float64, len(names))
	fm.fill(&fw, o, x)
	return x, nil
}
