package engine

import (
	"fmt"
	"math"
)

// Placement relates a host's count to the scheduler's own rule: Nomad
// places a replica on a host only while the sum of the reservations
// (requested resources) of everything there fits the host's allocatable
// resources. The engine's count says how many replicas the host can run by
// real usage; Placement says how many the scheduler can place at today's
// reservations, and which per-replica reservation would let it place
// exactly the count.
type Placement struct {
	// FreeCPUMHz and FreeMemoryMB are the host's capacity less what other
	// workloads reserve (memory only when the capacity is known).
	FreeCPUMHz   float64 `json:"free_cpu_mhz"`
	FreeMemoryMB float64 `json:"free_memory_mb,omitempty"`
	// ReplicaCPUMHz and ReplicaMemoryMB are what one replica reserves
	// today: the running replicas' request each, else the demand; never
	// below Nomad's smallest reservations (MinReservationCPUMHz, and
	// MinReservationMemoryMB where memory is judged).
	ReplicaCPUMHz   float64 `json:"replica_cpu_mhz"`
	ReplicaMemoryMB float64 `json:"replica_memory_mb,omitempty"`
	// Placeable is how many replicas, in queue order, the scheduler can
	// place at those reservations (queued replicas at their own demand).
	Placeable int `json:"placeable"`
	// Queued is how many of the decided count are QueuedReplicas entries
	// (the first ones, after the running replicas): each keeps its own
	// demand as its reservation. 0 without a queue.
	Queued int `json:"queued,omitempty"`
	// CPUMHz, MemoryMB and MemoryMaxMB are a per-replica reservation with
	// which the scheduler places the decided count on the host, for its
	// replicas of the observed workload (the count less Queued): never
	// more than today's reservation, and no more than the free resources
	// left by the queued ones divided by those replicas, except that
	// Nomad's smallest reservations (MinReservationCPUMHz,
	// MinReservationMemoryMB) win over both. MemoryMaxMB is the
	// hard memory limit (Nomad's memory_max, for memory oversubscription):
	// at least the replica's memory peak, so reserving less never caps
	// real use.
	CPUMHz      int `json:"cpu_mhz"`
	MemoryMB    int `json:"memory_mb"`
	MemoryMaxMB int `json:"memory_max_mb"`
	// Fits says whether the decided count fits what is free, the
	// workload's replicas at that reservation and the queued ones at their
	// own demand (false when even the scheduler's minimum reservation per
	// replica, MinReservationCPUMHz and MinReservationMemoryMB, does not
	// fit, or the queued ones alone do not).
	Fits bool `json:"fits"`
}

// The smallest reservation a scheduler accepts for a replica (Nomad's
// minimum CPU and memory of a task).
const (
	MinReservationCPUMHz   = 1
	MinReservationMemoryMB = 10
)

// Summary is a one-line account of the placement for count.
func (pl *Placement) Summary(count int) string {
	s := fmt.Sprintf("the scheduler can place %d at today's reservations (%.0f MHz", pl.Placeable, pl.ReplicaCPUMHz)
	if pl.ReplicaMemoryMB > 0 {
		s += fmt.Sprintf(", %.0f MB", pl.ReplicaMemoryMB)
	}
	s += " each)"
	if count > pl.Placeable {
		s += fmt.Sprintf("; %d of %d would stay queued", count-pl.Placeable, count)
	}
	if count == 0 {
		return s + "; a count of 0 places nothing"
	}
	each := "each"
	if pl.Queued > 0 {
		each = fmt.Sprintf("each for the workload's %d (the %d queued at their own demand)", count-pl.Queued, pl.Queued)
	}
	if pl.Fits {
		s += fmt.Sprintf("; reserving %d MHz, %d MB (memory_max %d MB) %s places all %d", pl.CPUMHz, pl.MemoryMB, pl.MemoryMaxMB, each, count)
		if pl.ReplicaMemoryMB == 0 && pl.MemoryMB == MinReservationMemoryMB {
			s += fmt.Sprintf(" (%d MB: Nomad's smallest memory reservation, as the observation gives no memory)", MinReservationMemoryMB)
		}
	} else {
		s += fmt.Sprintf("; even the smallest reservation, %d MHz, %d MB %s, does not place all %d", pl.CPUMHz, pl.MemoryMB, each, count)
	}
	return s
}

// Placeable is how many replicas, in queue order, the scheduler can place
// on o's host at o's reservations (HostDecision.Placement.Placeable): a
// controller that learns of reservations the observation does not hold
// (its own scale-ups elsewhere, not yet listed) adds them to a copy's
// OtherReserved fields and asks again, without a new decision.
func Placeable(o *Observation) int {
	pl, _ := placeable(o)
	return pl.Placeable
}

// placement computes the Placement of count replicas on o's host.
func placement(o *Observation, fw *featureWork, count int) Placement {
	pl, memKnown := placeable(o)
	// The queued replicas in the count keep their own demand; the
	// reservation is for the workload's replicas, in what they leave.
	var queuedCPU, queuedMem float64
	if o.QueuedReplicas != nil {
		pl.Queued = min(len(o.QueuedReplicas), max(0, count-o.RunningReplicas))
		for _, r := range o.QueuedReplicas[:pl.Queued] {
			queuedCPU, queuedMem = queuedCPU+newReplicaCPUMHz(r.CPUMHz), queuedMem+newReplicaMemoryMB(r.MemoryMB)
		}
	}
	own := count - pl.Queued
	// A reservation that places count replicas.
	cpu, memRes := pl.ReplicaCPUMHz, pl.ReplicaMemoryMB
	if own > 0 {
		cpu = math.Min(cpu, math.Floor((pl.FreeCPUMHz-queuedCPU)/float64(own)))
		if memKnown {
			memRes = math.Min(memRes, math.Floor((pl.FreeMemoryMB-queuedMem)/float64(own)))
		}
	}
	pl.CPUMHz = max(MinReservationCPUMHz, int(math.Floor(cpu+1e-9)))
	pl.MemoryMB = max(MinReservationMemoryMB, int(math.Floor(memRes+1e-9)))
	peak := pl.ReplicaMemoryMB
	if memKnown {
		// memShare is a share of the workload's room (capacity less
		// others' reservations), as features reads it.
		_, room := o.room()
		peak = math.Max(peak, fw.memShare*room)
	} else if ev := fw.ev; ev.Running > 0 || ev.Basis == BasisStopped {
		// Memory is not judged (no capacity), but memory_max still covers
		// the peak a warm replica showed (or the replicas that stopped),
		// as the judged path reads it. Here, not in the features: only a
		// returned decision needs it.
		per := fw.warm
		switch {
		case ev.Basis == BasisStopped:
			per = o.StoppedReplicas
		case per == 0:
			per = ev.Running
		}
		for _, s := range o.Samples {
			peak = math.Max(peak, s.MemoryMB/float64(per))
		}
	}
	pl.MemoryMaxMB = max(pl.MemoryMB, int(math.Ceil(peak)))
	n := float64(own)
	pl.Fits = n*float64(pl.CPUMHz)+queuedCPU <= pl.FreeCPUMHz*(1+1e-12) &&
		(!memKnown || n*float64(pl.MemoryMB)+queuedMem <= pl.FreeMemoryMB*(1+1e-12))
	return pl
}

// newReplicaCPUMHz is the CPU a replica reserves: its demand, and never
// less than Nomad's smallest reservation.
func newReplicaCPUMHz(demandMHz float64) float64 {
	return math.Max(demandMHz, MinReservationCPUMHz)
}

// newReplicaMemoryMB is the memory a replica that has not run is taken to
// need when memory is judged: its demand, and never less than Nomad's
// smallest reservation (MinReservationMemoryMB), which no placed task is
// below. A demand not given (0) is no evidence of needing none: on a host
// whose memory is all reserved nothing new fits.
func newReplicaMemoryMB(demandMB float64) float64 {
	return math.Max(demandMB, MinReservationMemoryMB)
}

// placeable is o's free resources, a replica's reservation and Placeable
// (the rest of a Placement is placement's), and whether the memory
// capacity is known.
func placeable(o *Observation) (pl Placement, memKnown bool) {
	pl = Placement{FreeCPUMHz: o.CPUCapacityMHz - o.OtherReservedCPUMHz}
	memKnown = o.MemoryCapacityMB > 0
	if memKnown {
		pl.FreeMemoryMB = o.MemoryCapacityMB - o.OtherReservedMemoryMB
	}
	pl.ReplicaCPUMHz, pl.ReplicaMemoryMB = o.ReplicaCPUDemandMHz, o.ReplicaMemoryDemandMB
	if n := o.RunningReplicas; n > 0 {
		if o.RequestedCPUMHz > 0 {
			pl.ReplicaCPUMHz = o.RequestedCPUMHz / float64(n)
		}
		if o.RequestedMemoryMB > 0 {
			pl.ReplicaMemoryMB = o.RequestedMemoryMB / float64(n)
		}
	}
	// Nomad places no task below its smallest reservations: a replica
	// reserves at least those, whatever demand (or none) was given; the
	// memory one where memory is judged.
	pl.ReplicaCPUMHz = newReplicaCPUMHz(pl.ReplicaCPUMHz)
	if memKnown {
		pl.ReplicaMemoryMB = newReplicaMemoryMB(pl.ReplicaMemoryMB)
	}
	// Placeable, in queue order: the running replicas and, with a queue,
	// the queued ones at their own demand; otherwise every replica at the
	// group's reservation.
	fits := func(cpu, mem float64) bool {
		return cpu <= pl.FreeCPUMHz*(1+1e-12) && (!memKnown || mem <= pl.FreeMemoryMB*(1+1e-12))
	}
	n := o.RunningReplicas
	uniformMax := int(math.Min(float64(MaxQuotaCount), math.Floor(pl.FreeCPUMHz/pl.ReplicaCPUMHz*(1+1e-12))))
	if memKnown {
		uniformMax = min(uniformMax, int(math.Min(float64(MaxQuotaCount), math.Floor(pl.FreeMemoryMB/pl.ReplicaMemoryMB*(1+1e-12)))))
	}
	if o.QueuedReplicas == nil {
		pl.Placeable = max(uniformMax, 0)
	} else {
		placed := min(n, max(uniformMax, 0))
		cpu, mem := float64(placed)*pl.ReplicaCPUMHz, float64(placed)*pl.ReplicaMemoryMB
		if placed == n {
			for _, r := range o.QueuedReplicas {
				rc, rm := newReplicaCPUMHz(r.CPUMHz), newReplicaMemoryMB(r.MemoryMB)
				if !fits(cpu+rc, mem+rm) {
					break
				}
				cpu, mem = cpu+rc, mem+rm
				placed++
			}
		}
		pl.Placeable = placed
	}
	return pl, memKnown
}
