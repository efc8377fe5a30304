package testsupport

import (
	"math"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// InvalidInput is one broken rule of the rule book, as a front end can
// reproduce it: Edit breaks a valid request, and the engine's error must
// name Host, Part and Field. Every front end runs this table through its
// own input form (HCL, the strategy's configuration, the request JSON), so
// that the same bounds hold everywhere.
type InvalidInput struct {
	Name              string
	Host, Part, Field string
	Edit              func(r *engine.Request)
}

// InvalidInputs returns the rule book's table, applied to a valid request
// whose observations hold at least 6 samples.
func InvalidInputs() []InvalidInput {
	obs := func(name, host, field string, edit func(o *engine.Observation)) InvalidInput {
		return InvalidInput{Name: name, Host: host, Part: engine.PartObservation, Field: field, Edit: func(r *engine.Request) {
			if host == engine.RoleFirst {
				edit(&r.First)
			} else {
				edit(&r.Second)
			}
		}}
	}
	quota := func(name, host, field string, q engine.Quota) InvalidInput {
		return InvalidInput{Name: name, Host: host, Part: engine.PartQuota, Field: field, Edit: func(r *engine.Request) {
			if host == engine.RoleFirst {
				r.FirstQuota = q.Spec()
			} else {
				r.SecondQuota = q.Spec()
			}
		}}
	}
	return []InvalidInput{
		obs("NaN usage", engine.RoleFirst, "usage_samples[3].cpu_mhz", func(o *engine.Observation) { o.Samples[3].CPUMHz = math.NaN() }),
		obs("negative usage", engine.RoleSecond, "usage_samples[0].cpu_mhz", func(o *engine.Observation) { o.Samples[0].CPUMHz = -1 }),
		obs("infinite memory", engine.RoleSecond, "usage_samples[2].memory_mb", func(o *engine.Observation) { o.Samples[2].MemoryMB = math.Inf(1) }),
		obs("out of order", engine.RoleFirst, "usage_samples[5].time", func(o *engine.Observation) { o.Samples[5].Time = o.Samples[4].Time }),
		obs("negative time", engine.RoleFirst, "usage_samples[0].time", func(o *engine.Observation) { o.Samples[0].Time = -5 }),
		obs("time in milliseconds", engine.RoleSecond, "usage_samples[0].time", func(o *engine.Observation) {
			for i := range o.Samples {
				o.Samples[i].Time *= 1000
			}
		}),
		obs("empty window", engine.RoleSecond, "usage_samples", func(o *engine.Observation) { o.Samples = nil }),
		obs("zero capacity", engine.RoleFirst, "cpu_capacity_mhz", func(o *engine.Observation) { o.CPUCapacityMHz = 0 }),
		obs("capacity in Hz", engine.RoleSecond, "cpu_capacity_mhz", func(o *engine.Observation) { o.CPUCapacityMHz = 4e12 }),
		obs("vanishing capacity", engine.RoleFirst, "cpu_capacity_mhz", func(o *engine.Observation) { o.CPUCapacityMHz = 1e-320 }),
		obs("vanishing memory capacity", engine.RoleSecond, "memory_capacity_mb", func(o *engine.Observation) { o.MemoryCapacityMB = 1e-9 }),
		obs("negative memory capacity", engine.RoleSecond, "memory_capacity_mb", func(o *engine.Observation) { o.MemoryCapacityMB = -1 }),
		obs("negative replicas", engine.RoleFirst, "running_replicas", func(o *engine.Observation) { o.RunningReplicas = -1 }),
		obs("more warming than running", engine.RoleFirst, "warming_replicas", func(o *engine.Observation) { o.WarmingReplicas = o.RunningReplicas + 1 }),
		obs("no demand", engine.RoleSecond, "replica_cpu_demand_mhz", func(o *engine.Observation) { o.ReplicaCPUDemandMHz = 0 }),
		obs("negative memory demand", engine.RoleSecond, "replica_memory_demand_mb", func(o *engine.Observation) { o.ReplicaMemoryDemandMB = -1 }),
		obs("negative request", engine.RoleFirst, "requested_cpu_mhz", func(o *engine.Observation) { o.RequestedCPUMHz = -5 }),
		obs("negative wanted", engine.RoleFirst, "wanted_replicas", func(o *engine.Observation) { o.WantedReplicas = -2 }),
		obs("wanted beyond the limit", engine.RoleFirst, "wanted_replicas", func(o *engine.Observation) { o.WantedReplicas = engine.MaxReplicas + 1 }),
		obs("usage beyond any host", engine.RoleFirst, "usage_samples[1].cpu_mhz", func(o *engine.Observation) { o.Samples[1].CPUMHz = 1e200 }),
		obs("demand beyond any host", engine.RoleSecond, "replica_cpu_demand_mhz", func(o *engine.Observation) { o.ReplicaCPUDemandMHz = 1e300 }),
		obs("request beyond any host", engine.RoleSecond, "requested_cpu_mhz", func(o *engine.Observation) { o.RequestedCPUMHz = 1e300 }),
		obs("queued replica without CPU", engine.RoleFirst, "queued_replicas[1].cpu_mhz", func(o *engine.Observation) {
			o.QueuedReplicas = []engine.Replica{{CPUMHz: 100}, {CPUMHz: 0}}
		}),
		obs("queued and wanted", engine.RoleFirst, "wanted_replicas", func(o *engine.Observation) {
			o.WantedReplicas = 4
			o.QueuedReplicas = []engine.Replica{{CPUMHz: 100}}
		}),
		obs("a queue on the second host", engine.RoleSecond, "queued_replicas", func(o *engine.Observation) {
			o.QueuedReplicas = []engine.Replica{{CPUMHz: 100}}
		}),
		obs("an empty queue on the second host", engine.RoleSecond, "queued_replicas", func(o *engine.Observation) { o.QueuedReplicas = []engine.Replica{} }),
		obs("wanted replicas on the second host", engine.RoleSecond, "wanted_replicas", func(o *engine.Observation) { o.WantedReplicas = 3 }),
		obs("others reserve more than the host", engine.RoleSecond, "other_reserved_cpu_mhz", func(o *engine.Observation) { o.OtherReservedCPUMHz = o.CPUCapacityMHz + 1 }),
		obs("host label with a newline", engine.RoleSecond, "host", func(o *engine.Observation) { o.Host = "node-1\nfirst host: 99 containers" }),
		obs("host label too long", engine.RoleFirst, "host", func(o *engine.Observation) { o.Host = string(make([]byte, engine.MaxHostLabel+1)) }),
		quota("min above max", engine.RoleFirst, "max", engine.Quota{Min: 5, Max: 4, PerBranch: 1, Rounding: engine.RoundNearest}),
		quota("negative min", engine.RoleSecond, "min", engine.Quota{Min: -1, Max: 4, PerBranch: 1, Rounding: engine.RoundNearest}),
		quota("max beyond the limit", engine.RoleSecond, "max", engine.Quota{Min: 0, Max: engine.MaxQuotaCount + 1, PerBranch: 1, Rounding: engine.RoundNearest}),
		quota("NaN per branch", engine.RoleSecond, "per_branch", engine.Quota{Min: 0, Max: 4, PerBranch: math.NaN(), Rounding: engine.RoundNearest}),
		quota("zero per branch", engine.RoleFirst, "per_branch", engine.Quota{Min: 0, Max: 4, PerBranch: 0, Rounding: engine.RoundNearest}),
		quota("unknown rounding", engine.RoleFirst, "rounding", engine.Quota{Min: 0, Max: 4, PerBranch: 1, Rounding: "banker"}),
	}
}
