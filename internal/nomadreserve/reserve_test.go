package nomadreserve

import "testing"

// Each case's figures are worked by hand from Nomad's
// AllocatedResources.Comparable (nomad/structs/structs.go).
func TestAllocation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tasks    []Task
		cpu, mem float64
	}{
		{"one main task", []Task{{CPUMHz: 500, MemoryMB: 256}}, 500, 256},
		{"two main tasks add up", []Task{{CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 100, MemoryMB: 64}}, 600, 320},
		{"a sidecar runs beside the main task", []Task{{CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 100, MemoryMB: 128, Hook: HookPrestart, Sidecar: true}}, 600, 384},
		// the init task runs before the main one: the larger phase,
		// resource by resource (CPU from init, memory from main)
		{"an init task: the larger phase", []Task{{CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 2000, MemoryMB: 128, Hook: HookPrestart}}, 2000, 256},
		// prestart = init + sidecar = 2100, main = 500 + 100 = 600
		{"an init task beside a sidecar", []Task{{CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 2000, MemoryMB: 64, Hook: HookPrestart},
			{CPUMHz: 100, MemoryMB: 128, Hook: HookPrestart, Sidecar: true}}, 2100, 384},
		{"a poststart task runs with the main one", []Task{{CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 300, MemoryMB: 32, Hook: HookPoststart}}, 800, 288},
		{"a poststop task runs after", []Task{{CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 700, MemoryMB: 64, Hook: HookPoststop}}, 700, 256},
		// cores are not fungible: the main task's 4000 MHz of cores stay
		// reserved while the init task's 2000 MHz of shares run first
		{"reserved cores always count", []Task{{CPUMHz: 4000, MemoryMB: 1024, Cores: true}, {CPUMHz: 2000, MemoryMB: 128, Hook: HookPrestart}}, 6000, 1024},
		{"cores and a sidecar", []Task{{CPUMHz: 4000, MemoryMB: 1024, Cores: true}, {CPUMHz: 100, MemoryMB: 128, Hook: HookPrestart, Sidecar: true}}, 4100, 1152},
		{"an unknown hook counts as main", []Task{{CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 50, MemoryMB: 16, Hook: "later"}}, 550, 272},
		{"no task", nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu, mem := Allocation(tc.tasks)
			if cpu != tc.cpu || mem != tc.mem {
				t.Fatalf("Allocation = %v MHz, %v MB; want %v, %v", cpu, mem, tc.cpu, tc.mem)
			}
		})
	}
}
