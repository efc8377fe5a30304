package nomadusage

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// A node's allocatable memory: what it reports less what it reserves. A
// node that reports memory and has none left, or a negative figure, is
// refused as CPU is, not read as memory unknown (0), which would leave
// memory unjudged (a user trial); a node that reports none is unknown.
func TestNodeCapacityMemory(t *testing.T) {
	res := func(cpu, mem int64) *api.NodeResources {
		return &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: cpu}, Memory: api.NodeMemoryResources{MemoryMB: mem}}
	}
	reserved := func(mem uint64) *api.NodeReservedResources {
		return &api.NodeReservedResources{Memory: api.NodeReservedMemoryResources{MemoryMB: mem}}
	}
	for _, tc := range []struct {
		name    string
		n       node
		mem     float64
		errText string
	}{
		{"memory less the reserved", node{res: res(4000, 8192), reserved: reserved(1024)}, 7168, ""},
		{"no memory reported: unknown", node{res: res(4000, 0)}, 0, ""},
		{"no memory reported, some reserved: unknown", node{res: res(4000, 0), reserved: reserved(1024)}, 0, ""},
		{"a negative memory figure", node{res: res(4000, -1)}, 0, "allocatable memory is -1 MB"},
		{"a negative memory figure, some reserved", node{res: res(4000, -1), reserved: reserved(10)}, 0, "allocatable memory is -11 MB"},
		{"all of it reserved", node{res: res(4000, 8192), reserved: reserved(8192)}, 0, "allocatable memory is 0 MB"},
		{"more than all of it reserved", node{res: res(4000, 8192), reserved: reserved(9000)}, 0, "allocatable memory is -808 MB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, mem, err := tc.n.capacity()
			if tc.errText != "" {
				if !errors.Is(err, ErrMissingData) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err %v, want ErrMissingData saying %q", err, tc.errText)
				}
				return
			}
			if err != nil || mem != tc.mem {
				t.Fatalf("memory %v, err %v; want %v", mem, err, tc.mem)
			}
		})
	}
}
