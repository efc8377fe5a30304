package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// Attribute names of a host observation. They are the engine's JSON field
// names, so `jsondecode()` of an engine.Observation document, or the
// `observation` of activation_host_usage, plugs straight in.
const (
	obsHost                  = "host"
	obsCPUCapacityMHz        = "cpu_capacity_mhz"
	obsMemoryCapacityMB      = "memory_capacity_mb"
	obsUsageSamples          = "usage_samples"
	obsRequestedCPUMHz       = "requested_cpu_mhz"
	obsRequestedMemoryMB     = "requested_memory_mb"
	obsRunningReplicas       = "running_replicas"
	obsReplicaCPUDemandMHz   = "replica_cpu_demand_mhz"
	obsReplicaMemoryDemandMB = "replica_memory_demand_mb"
	obsWantedReplicas        = "wanted_replicas"

	sampleTime     = "time"
	sampleCPUMHz   = "cpu_mhz"
	sampleMemoryMB = "memory_mb"
)

// Limits on an observation given in configuration. They keep plans fast and
// catch unit mistakes (MHz given in Hz); no real host comes near them.
const (
	// maxUsageSamples is the longest usage window accepted (a week of
	// one-minute samples fits).
	maxUsageSamples = 100_000
	// maxReplicas bounds running and wanted replicas.
	maxReplicas = engine.MaxQuotaCount
	// maxResource bounds CPU (MHz) and memory (MB) figures: 10^9 MHz is a
	// petahertz, 10^9 MB a petabyte.
	maxResource = 1e9
	// maxHostName bounds a host label.
	maxHostName = 256
)

// sampleModel is one usage sample in configuration or state.
type sampleModel struct {
	Time     types.Int64   `tfsdk:"time"`
	CPUMHz   types.Float64 `tfsdk:"cpu_mhz"`
	MemoryMB types.Float64 `tfsdk:"memory_mb"`
}

// observationModel is a host observation in configuration or state.
type observationModel struct {
	Host                  types.String  `tfsdk:"host"`
	CPUCapacityMHz        types.Float64 `tfsdk:"cpu_capacity_mhz"`
	MemoryCapacityMB      types.Float64 `tfsdk:"memory_capacity_mb"`
	UsageSamples          []sampleModel `tfsdk:"usage_samples"`
	RequestedCPUMHz       types.Float64 `tfsdk:"requested_cpu_mhz"`
	RequestedMemoryMB     types.Float64 `tfsdk:"requested_memory_mb"`
	RunningReplicas       types.Int64   `tfsdk:"running_replicas"`
	ReplicaCPUDemandMHz   types.Float64 `tfsdk:"replica_cpu_demand_mhz"`
	ReplicaMemoryDemandMB types.Float64 `tfsdk:"replica_memory_demand_mb"`
	WantedReplicas        types.Int64   `tfsdk:"wanted_replicas"`
}

var sampleAttrTypes = map[string]attr.Type{
	sampleTime:     types.Int64Type,
	sampleCPUMHz:   types.Float64Type,
	sampleMemoryMB: types.Float64Type,
}

// observationAttrTypes is the object type of an observation.
var observationAttrTypes = map[string]attr.Type{
	obsHost:                  types.StringType,
	obsCPUCapacityMHz:        types.Float64Type,
	obsMemoryCapacityMB:      types.Float64Type,
	obsUsageSamples:          types.ListType{ElemType: types.ObjectType{AttrTypes: sampleAttrTypes}},
	obsRequestedCPUMHz:       types.Float64Type,
	obsRequestedMemoryMB:     types.Float64Type,
	obsRunningReplicas:       types.Int64Type,
	obsReplicaCPUDemandMHz:   types.Float64Type,
	obsReplicaMemoryDemandMB: types.Float64Type,
	obsWantedReplicas:        types.Int64Type,
}

// Descriptions shared by the input and output forms.
var observationDescriptions = map[string]string{
	obsHost:                  "Label of the host in explanations (for example its Nomad node name).",
	obsCPUCapacityMHz:        "The host's allocatable CPU in MHz; greater than 0.",
	obsMemoryCapacityMB:      "The host's allocatable memory in MB; 0 or unset when unknown (models that need memory features then refuse the observation).",
	obsUsageSamples:          "The recent real usage window, oldest first, with strictly increasing times: the usage summed over the workload's replicas on this host. At least one sample.",
	obsRequestedCPUMHz:       "Sum of the CPU (MHz) the running replicas requested: what request-sum admission counts.",
	obsRequestedMemoryMB:     "Sum of the memory (MB) the running replicas requested.",
	obsRunningReplicas:       "How many replicas produced the usage samples. With none running, a replica's usage is taken to be its expected demand.",
	obsReplicaCPUDemandMHz:   "Expected CPU demand (MHz) of one replica that wants to run; greater than 0.",
	obsReplicaMemoryDemandMB: "Expected memory demand (MB) of one replica.",
	obsWantedReplicas:        "How many replicas ask to run on the host: the admission processor's demand slots below this number hold the demand. 0 or unset offers every slot.",
	sampleTime:               "Time of the sample, Unix seconds.",
	sampleCPUMHz:             "CPU used (MHz), summed over the workload's replicas on the host.",
	sampleMemoryMB:           "Memory used (MB), summed over the workload's replicas on the host.",
}

// observationInputAttribute is a required input observation, every
// attribute validated.
func observationInputAttribute(description string) schema.SingleNestedAttribute {
	d := observationDescriptions
	resource := func() []validator.Float64 { return []validator.Float64{float64validator.Between(0, maxResource)} }
	positive := func() []validator.Float64 {
		return []validator.Float64{greaterThan(0), float64validator.AtMost(maxResource)}
	}
	return schema.SingleNestedAttribute{
		Required:            true,
		MarkdownDescription: description,
		Attributes: map[string]schema.Attribute{
			obsHost: schema.StringAttribute{Optional: true, MarkdownDescription: d[obsHost],
				Validators: []validator.String{stringvalidator.LengthBetween(1, maxHostName)}},
			obsCPUCapacityMHz: schema.Float64Attribute{Required: true, MarkdownDescription: d[obsCPUCapacityMHz],
				Validators: positive()},
			obsMemoryCapacityMB: schema.Float64Attribute{Optional: true, MarkdownDescription: d[obsMemoryCapacityMB],
				Validators: resource()},
			obsUsageSamples: schema.ListNestedAttribute{
				Required:            true,
				MarkdownDescription: d[obsUsageSamples],
				Validators:          []validator.List{listvalidator.SizeBetween(1, maxUsageSamples)},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					sampleTime: schema.Int64Attribute{Required: true, MarkdownDescription: d[sampleTime],
						Validators: []validator.Int64{int64validator.AtLeast(0)}},
					sampleCPUMHz: schema.Float64Attribute{Required: true, MarkdownDescription: d[sampleCPUMHz],
						Validators: resource()},
					sampleMemoryMB: schema.Float64Attribute{Optional: true, MarkdownDescription: d[sampleMemoryMB],
						Validators: resource()},
				}},
			},
			obsRequestedCPUMHz: schema.Float64Attribute{Required: true, MarkdownDescription: d[obsRequestedCPUMHz],
				Validators: resource()},
			obsRequestedMemoryMB: schema.Float64Attribute{Optional: true, MarkdownDescription: d[obsRequestedMemoryMB],
				Validators: resource()},
			obsRunningReplicas: schema.Int64Attribute{Required: true, MarkdownDescription: d[obsRunningReplicas],
				Validators: []validator.Int64{int64validator.Between(0, maxReplicas)}},
			obsReplicaCPUDemandMHz: schema.Float64Attribute{Required: true, MarkdownDescription: d[obsReplicaCPUDemandMHz],
				Validators: positive()},
			obsReplicaMemoryDemandMB: schema.Float64Attribute{Optional: true, MarkdownDescription: d[obsReplicaMemoryDemandMB],
				Validators: resource()},
			obsWantedReplicas: schema.Int64Attribute{Optional: true, MarkdownDescription: d[obsWantedReplicas],
				Validators: []validator.Int64{int64validator.Between(0, maxReplicas)}},
		},
	}
}

// observationOutputAttribute is a computed observation with the same shape
// as the input, so it can be passed to activation_container_counts as is.
func observationOutputAttribute(description string) schema.SingleNestedAttribute {
	d := observationDescriptions
	return schema.SingleNestedAttribute{
		Computed:            true,
		MarkdownDescription: description,
		Attributes: map[string]schema.Attribute{
			obsHost:             schema.StringAttribute{Computed: true, MarkdownDescription: d[obsHost]},
			obsCPUCapacityMHz:   schema.Float64Attribute{Computed: true, MarkdownDescription: d[obsCPUCapacityMHz]},
			obsMemoryCapacityMB: schema.Float64Attribute{Computed: true, MarkdownDescription: d[obsMemoryCapacityMB]},
			obsUsageSamples: schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: d[obsUsageSamples],
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					sampleTime:     schema.Int64Attribute{Computed: true, MarkdownDescription: d[sampleTime]},
					sampleCPUMHz:   schema.Float64Attribute{Computed: true, MarkdownDescription: d[sampleCPUMHz]},
					sampleMemoryMB: schema.Float64Attribute{Computed: true, MarkdownDescription: d[sampleMemoryMB]},
				}},
			},
			obsRequestedCPUMHz:       schema.Float64Attribute{Computed: true, MarkdownDescription: d[obsRequestedCPUMHz]},
			obsRequestedMemoryMB:     schema.Float64Attribute{Computed: true, MarkdownDescription: d[obsRequestedMemoryMB]},
			obsRunningReplicas:       schema.Int64Attribute{Computed: true, MarkdownDescription: d[obsRunningReplicas]},
			obsReplicaCPUDemandMHz:   schema.Float64Attribute{Computed: true, MarkdownDescription: d[obsReplicaCPUDemandMHz]},
			obsReplicaMemoryDemandMB: schema.Float64Attribute{Computed: true, MarkdownDescription: d[obsReplicaMemoryDemandMB]},
			obsWantedReplicas:        schema.Int64Attribute{Computed: true, MarkdownDescription: d[obsWantedReplicas]},
		},
	}
}

// toEngine converts a fully known observation; unset optional numbers are 0.
func (m *observationModel) toEngine() engine.Observation {
	o := engine.Observation{
		Host:                  m.Host.ValueString(),
		CPUCapacityMHz:        m.CPUCapacityMHz.ValueFloat64(),
		MemoryCapacityMB:      m.MemoryCapacityMB.ValueFloat64(),
		RequestedCPUMHz:       m.RequestedCPUMHz.ValueFloat64(),
		RequestedMemoryMB:     m.RequestedMemoryMB.ValueFloat64(),
		RunningReplicas:       int(m.RunningReplicas.ValueInt64()),
		ReplicaCPUDemandMHz:   m.ReplicaCPUDemandMHz.ValueFloat64(),
		ReplicaMemoryDemandMB: m.ReplicaMemoryDemandMB.ValueFloat64(),
		WantedReplicas:        int(m.WantedReplicas.ValueInt64()),
		Samples:               make([]engine.Sample, len(m.UsageSamples)),
	}
	for i, s := range m.UsageSamples {
		o.Samples[i] = engine.Sample{Time: s.Time.ValueInt64(), CPUMHz: s.CPUMHz.ValueFloat64(), MemoryMB: s.MemoryMB.ValueFloat64()}
	}
	return o
}

// observationFromEngine is the state form of an engine observation. Fields
// the engine leaves at zero that are optional inputs (host, memory) are
// written as they are, zero included, so the value always converts back.
func observationFromEngine(o *engine.Observation) observationModel {
	m := observationModel{
		Host:                  types.StringValue(o.Host),
		CPUCapacityMHz:        types.Float64Value(o.CPUCapacityMHz),
		MemoryCapacityMB:      types.Float64Value(o.MemoryCapacityMB),
		RequestedCPUMHz:       types.Float64Value(o.RequestedCPUMHz),
		RequestedMemoryMB:     types.Float64Value(o.RequestedMemoryMB),
		RunningReplicas:       types.Int64Value(int64(o.RunningReplicas)),
		ReplicaCPUDemandMHz:   types.Float64Value(o.ReplicaCPUDemandMHz),
		ReplicaMemoryDemandMB: types.Float64Value(o.ReplicaMemoryDemandMB),
		WantedReplicas:        types.Int64Value(int64(o.WantedReplicas)),
		UsageSamples:          make([]sampleModel, len(o.Samples)),
	}
	if o.Host == "" {
		m.Host = types.StringNull()
	}
	for i, s := range o.Samples {
		m.UsageSamples[i] = sampleModel{Time: types.Int64Value(s.Time), CPUMHz: types.Float64Value(s.CPUMHz), MemoryMB: types.Float64Value(s.MemoryMB)}
	}
	return m
}
