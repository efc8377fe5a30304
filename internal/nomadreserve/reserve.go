// Package nomadreserve holds Nomad's rule for what one allocation reserves
// on its node, from its tasks' resources and lifecycles, as Nomad's
// scheduler sums it (structs.AllocatedResources.Comparable, Nomad 1.7 and
// later): the reader of live usage and the Nomad stand-in both apply it.
package nomadreserve

// Lifecycle hooks of a task (Nomad's lifecycle.hook); "" is a main task.
const (
	HookPrestart  = "prestart"
	HookPoststart = "poststart"
	HookPoststop  = "poststop"
)

// Task is one task of an allocation: what it reserves and when it runs.
type Task struct {
	// CPUMHz is the task's CPU shares; for reserved cores, their
	// bandwidth (the cores' MHz).
	CPUMHz   float64
	MemoryMB float64
	// Cores says the CPU is reserved cores, which no other task can use:
	// always reserved in full, whatever the task's lifecycle.
	Cores bool
	// Hook is the task's lifecycle hook ("" for a main task); Sidecar
	// says a prestart task runs on beside the main tasks.
	Hook    string
	Sidecar bool
}

// Allocation is what an allocation of tasks reserves: the reserved cores'
// bandwidth in full and, resource by resource, the largest of the sums of
// its three phases, for the phases run one after the other:
//
//   - prestart: the prestart tasks, sidecars included;
//   - main: the main tasks, the prestart sidecars and the poststart tasks;
//   - poststop: the poststop tasks.
//
// A task with a hook Nomad does not know counts as a main task.
func Allocation(tasks []Task) (cpuMHz, memoryMB float64) {
	var pre, main, stop [2]float64
	add := func(phase *[2]float64, cpu, mem float64) {
		phase[0] += cpu
		phase[1] += mem
	}
	var cores float64
	for _, t := range tasks {
		cpu := t.CPUMHz
		if t.Cores {
			cores += cpu
			cpu = 0
		}
		switch t.Hook {
		case HookPrestart:
			add(&pre, cpu, t.MemoryMB)
			if t.Sidecar {
				add(&main, cpu, t.MemoryMB)
			}
		case HookPoststop:
			add(&stop, cpu, t.MemoryMB)
		default: // main and poststart tasks
			add(&main, cpu, t.MemoryMB)
		}
	}
	return cores + max(pre[0], main[0], stop[0]), max(pre[1], main[1], stop[1])
}
