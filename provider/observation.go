package provider

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// This file is the one description of a host observation in Terraform:
// its attributes (the engine's JSON names, so `jsondecode()` of an
// engine.Observation document, or activation_host_usage's `observation`,
// plugs straight in), their descriptions, the input and output schema
// attributes and the object type built from them, the typed model the
// framework decodes into, and the conversions to and from the engine.
//
// The provider checks only types and presence. Every range and consistency
// rule (positive capacity, samples in time order, warming <= running...)
// is the engine's: Read hands the engine what the configuration says and
// maps the engine's typed error back to the attribute (errpath.go).
// Numbers are Terraform numbers (arbitrary precision) so that any value a
// configuration can hold, 1e30 or 1/0 included, reaches the provider's own
// decoding, which names the attribute when a value does not fit the
// engine's type.

// Attribute names of a host observation.
const (
	obsHost                  = "host"
	obsCPUCapacityMHz        = "cpu_capacity_mhz"
	obsMemoryCapacityMB      = "memory_capacity_mb"
	obsUsageSamples          = "usage_samples"
	obsRequestedCPUMHz       = "requested_cpu_mhz"
	obsRequestedMemoryMB     = "requested_memory_mb"
	obsRunningReplicas       = "running_replicas"
	obsWarmingReplicas       = "warming_replicas"
	obsReplicaCPUDemandMHz   = "replica_cpu_demand_mhz"
	obsReplicaMemoryDemandMB = "replica_memory_demand_mb"
	obsWantedReplicas        = "wanted_replicas"
	obsQueuedReplicas        = "queued_replicas"
	obsOtherReservedCPUMHz   = "other_reserved_cpu_mhz"
	obsOtherReservedMemoryMB = "other_reserved_memory_mb"

	sampleTime     = "time"
	sampleCPUMHz   = "cpu_mhz"
	sampleMemoryMB = "memory_mb"

	replicaCPUMHz   = "cpu_mhz"
	replicaMemoryMB = "memory_mb"
)

// fieldKind is how an attribute's value is read.
type fieldKind int

const (
	kindFigure  fieldKind = iota // a CPU or memory figure: a 64-bit float
	kindWhole                    // a count or a time: a whole number
	kindString                   // a label
	kindObjects                  // a list of objects, whose fields are nested
	kindObject                   // one object, whose fields are nested
	// kindWindow is a list of objects too, whose fields are nested, but
	// typed dynamically in the schema and checked by the provider: a usage
	// window may hold 10,080 samples, and OpenTofu and the framework then
	// spend seconds per plan converting and walking a typed list of
	// objects element by element, where a dynamic value passes as it is.
	kindWindow
)

// typeName is the kind as the docs name an attribute's type.
func (k fieldKind) typeName() string {
	switch k {
	case kindFigure, kindWhole:
		return "Number"
	case kindString:
		return "String"
	case kindObject:
		return "Object"
	}
	return "List of Object"
}

// field describes one attribute of an observation (or of one of its list
// elements): desc is its description as an input, out as an output (the
// observation activation_host_usage reads).
type field struct {
	name     string
	kind     fieldKind
	required bool
	desc     string
	out      string
	nested   []field
}

var sampleFields = []field{
	{name: sampleTime, kind: kindWhole, required: true, desc: "Time of the sample, Unix seconds (whole, >= 0); times strictly increase, oldest first."},
	{name: sampleCPUMHz, kind: kindFigure, required: true, desc: "CPU used (MHz), summed over the workload's running replicas on the host."},
	{name: sampleMemoryMB, kind: kindFigure, desc: "Memory used (MB), summed over the workload's running replicas on the host. Unset: 0."},
}

var replicaFields = []field{
	{name: replicaCPUMHz, kind: kindFigure, required: true, desc: "Expected CPU demand (MHz) of this replica; greater than 0.",
		out: "CPU demand (MHz) of the queued replica."},
	{name: replicaMemoryMB, kind: kindFigure, desc: "Expected memory demand (MB) of this replica. Unset: 0; with `memory_capacity_mb` set, at least Nomad's smallest reservation, 10 MB.",
		out: "Memory demand (MB) of the queued replica."},
}

// observationFields is every attribute of an observation, in the engine's
// order. Limits are the engine's (see the data source's description): every
// figure finite, >= 0, at most engine.MaxResource and at most
// engine.MaxUsageRatio x the host's capacity; every count a whole number up
// to engine.MaxReplicas.
var observationFields = []field{
	{name: obsHost, kind: kindString,
		desc: fmt.Sprintf("Label of the host in explanations (for example its Nomad node name); at most %d bytes.", engine.MaxHostLabel),
		out:  "Label of the host: the data source's `label`, else the node's name."},
	{name: obsCPUCapacityMHz, kind: kindFigure, required: true,
		desc: "The host's allocatable CPU in MHz (what the scheduler may place on); at least 0.001.",
		out:  "The node's allocatable CPU in MHz: its CPU less what the node reserves for itself."},
	{name: obsMemoryCapacityMB, kind: kindFigure,
		desc: "The host's allocatable memory in MB, at least 0.001. 0 or unset: unknown, and memory is then not judged (the decision's `evidence.memory_judged` says so).",
		out:  "The node's allocatable memory in MB: its memory less what the node reserves for itself."},
	{name: obsUsageSamples, kind: kindWindow, required: true, nested: sampleFields,
		desc: "The recent real usage window, oldest first: the usage summed over the workload's running replicas on this host. " +
			"A list of `{ time, cpu_mhz, memory_mb }` objects: `time` (Unix seconds, whole, >= 0 and below 1e11 (a larger time reads as milliseconds and is refused), strictly increasing) and `cpu_mhz` required, " +
			"`memory_mb` optional (0), each summed over the workload's running replicas on the host. " +
			fmt.Sprintf("From 1 to %s samples (a week of minutes); a decision needs at least `min_samples` of them. ", thousands(engine.MaxSamples)) +
			"The list is typed dynamically so that a week of samples plans quickly: the provider checks each sample's attributes " +
			"when the configuration is validated (an attribute that is not one of these three is an error, not ignored; a number " +
			"written as a string, such as `\"1200\"`, is that number). A list or a tuple, never a set: a set has no order, and the " +
			"samples must stay in time order.",
		out: "The usage read, one sample per read, oldest first: `{ time, cpu_mhz, memory_mb }`, with the time Nomad took the stats " +
			"(Unix seconds) and the CPU (MHz) and memory (MB) used: with a `job`, by the task group's running allocations on the node, " +
			"only the warm ones while any is warm (see `warmup`), so that the engine divides it among the warm replicas; " +
			"without, by the whole node."},
	{name: obsRequestedCPUMHz, kind: kindFigure, required: true,
		desc: "Sum of the CPU (MHz) the running replicas reserve: what request-sum admission counts.",
		out:  "Sum of the CPU (MHz) the running allocations read reserve."},
	{name: obsRequestedMemoryMB, kind: kindFigure,
		desc: "Sum of the memory (MB) the running replicas reserve. Unset: 0.",
		out:  "Sum of the memory (MB) the running allocations read reserve."},
	{name: obsRunningReplicas, kind: kindWhole, required: true,
		desc: "How many replicas produced the usage samples. With none running, a replica counts at its demand.",
		out:  "Running allocations read: the task group's on the node with a `job`, every allocation on the node without."},
	{name: obsWarmingReplicas, kind: kindWhole,
		desc: "How many of the running replicas are still warming up (just started, or no usage reported yet): they count at the warm replicas' usage, " +
			"or, when none is warm, at the larger of their peak usage and their requested resources, never at zero. At most `running_replicas`; unset: 0.",
		out: "How many of the running allocations are warming up: younger than `warmup`, or with no CPU ticks yet (with a `job`; 0 without)."},
	{name: obsReplicaCPUDemandMHz, kind: kindFigure, required: true,
		desc: "Expected CPU demand (MHz) of one new replica of the workload; greater than 0. While the workload runs, the first host counts a new replica of it at no less than a running replica's learned estimate, so a workload that uses more than this is not admitted at it.",
		out:  "Expected CPU demand (MHz) of one replica: `replica_cpu_demand_mhz`, else the task group's CPU request."},
	{name: obsReplicaMemoryDemandMB, kind: kindFigure,
		desc: "Expected memory demand (MB) of one new replica. Unset: 0; with `memory_capacity_mb` set, a new replica needs at least Nomad's smallest reservation, 10 MB.",
		out:  "Expected memory demand (MB) of one replica: `replica_memory_demand_mb`, else the task group's memory request (0 without a `job`)."},
	{name: obsWantedReplicas, kind: kindWhole,
		desc: "How many replicas want to run on the host, the running ones included: the first host's demand slots past the running replicas hold the demand " +
			"of a new replica up to this number. 0 or unset offers every slot. Not with `queued_replicas`. First host only: the second host's count is how many replicas " +
			"of the workload its capacity processor reads as safe, which no queue moves, and a second host that sets it is refused.",
		out: "The data source's `wanted_replicas` (0 when unset: every slot is offered)."},
	{name: obsQueuedReplicas, kind: kindObjects, nested: replicaFields,
		desc: "The new replicas queued to run on the host after the running ones, in order, each with its own demand " +
			"(replicas of different sizes, or several groups queued for one host), counted at that demand (not at the running replicas' estimate). `[]` means nobody new wants to run; unset: `wanted_replicas` says how many. Not with `wanted_replicas`. " +
			"Give a list or a tuple: a set (`toset(...)`) is refused, since it has no order and the queue's order decides the count. " +
			"First host only: a second host that sets it, `[]` included, is refused (give what other workloads take of it as `other_reserved_cpu_mhz` and `other_reserved_memory_mb`).",
		out: "Null: this data source queues no replica (`wanted_replicas` says how many want to run)."},
	{name: obsOtherReservedCPUMHz, kind: kindFigure,
		desc: "CPU (MHz) other workloads reserve on the host, at most its capacity: this workload's room is the capacity less it. Unset: 0.",
		out:  "CPU (MHz) reserved on the node by allocations the observation does not cover: with a `job`, every other job's and group's placed there, and the group's own being stopped; without, the pending ones and those being stopped (still running through their `shutdown_delay`), and on a node with no allocation running the peak of the node's usage over the reads (load no replica accounts for, which stays)."},
	{name: obsOtherReservedMemoryMB, kind: kindFigure,
		desc: "Memory (MB) other workloads reserve on the host, at most its capacity. Unset: 0.",
		out:  "Memory (MB) reserved on the node by allocations the observation does not cover, and the usage no replica accounts for, as for `other_reserved_cpu_mhz`."},
}

// thousands writes n with a comma between thousands (10080 is "10,080").
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// fieldAttributes is the schema of fields: inputs (required or optional,
// as the field says) or, when computed, outputs with the same type.
func fieldAttributes(fields []field, computed bool) map[string]schema.Attribute {
	out := make(map[string]schema.Attribute, len(fields))
	for _, f := range fields {
		req, opt := !computed && f.required, !computed && !f.required
		desc := f.desc
		if computed {
			desc = f.out
		}
		switch f.kind {
		case kindFigure, kindWhole:
			out[f.name] = schema.NumberAttribute{Required: req, Optional: opt, Computed: computed, MarkdownDescription: desc}
		case kindString:
			out[f.name] = schema.StringAttribute{Required: req, Optional: opt, Computed: computed, MarkdownDescription: desc}
		case kindObjects:
			out[f.name] = schema.ListNestedAttribute{Required: req, Optional: opt, Computed: computed, MarkdownDescription: desc,
				NestedObject: schema.NestedAttributeObject{Attributes: fieldAttributes(f.nested, computed)}}
		case kindObject:
			out[f.name] = schema.SingleNestedAttribute{Required: req, Optional: opt, Computed: computed, MarkdownDescription: desc,
				Attributes: fieldAttributes(f.nested, computed)}
		case kindWindow:
			out[f.name] = schema.DynamicAttribute{Required: req, Optional: opt, Computed: computed, MarkdownDescription: desc}
		}
	}
	return out
}

// fieldTypes is the object type of fields.
func fieldTypes(fields []field) map[string]attr.Type {
	out := make(map[string]attr.Type, len(fields))
	for _, f := range fields {
		switch f.kind {
		case kindFigure, kindWhole:
			out[f.name] = types.NumberType
		case kindString:
			out[f.name] = types.StringType
		case kindObjects:
			out[f.name] = types.ListType{ElemType: types.ObjectType{AttrTypes: fieldTypes(f.nested)}}
		case kindObject:
			out[f.name] = types.ObjectType{AttrTypes: fieldTypes(f.nested)}
		case kindWindow:
			out[f.name] = types.DynamicType
		}
	}
	return out
}

// observationAttrTypes is the object type of an observation, input and
// output alike.
var observationAttrTypes = fieldTypes(observationFields)

// sampleAttrTypes and replicaAttrTypes are the object types of the lists'
// elements.
var (
	sampleAttrTypes  = fieldTypes(sampleFields)
	replicaAttrTypes = fieldTypes(replicaFields)
)

// observationInputAttribute is a required observation in a configuration,
// typed dynamically and checked by the provider against observationFields
// (conform.go): OpenTofu converts an object to a typed attribute by
// dropping the attributes the type does not have, so a misspelt optional
// attribute (warming_replica) would be ignored, and the count made
// without it. Its description lists the attributes.
func observationInputAttribute(description string) schema.DynamicAttribute {
	return schema.DynamicAttribute{Required: true, MarkdownDescription: description + " An object with these attributes:" + fieldsDoc(observationFields, "  ") +
		"\n\n  An attribute the observation does not have is an error naming it (OpenTofu would otherwise drop a misspelt one, " +
		"and the count would be made without it); a number may be written as a numeric string; a list may be a list or a tuple, " +
		"never a set. The attributes are checked when the configuration is validated, and their values with the engine's rules as far as the values known then decide them (a negative `running_replicas` is refused even while `usage_samples` is known only at apply; a rule that involves such a value waits for it). " +
		"The value is kept as given: an attribute it sets reads back (`data.activation_container_counts.x.first.running_replicas`), " +
		"an optional one it leaves unset is not there (`try(data.activation_container_counts.x.first.warming_replicas, 0)`); " +
		"what the engine made of the observation is in the host's decision."}
}

// fieldsDoc is a Markdown list of fields, each with its type, whether it
// is required and its description, nested fields indented under theirs.
func fieldsDoc(fields []field, indent string) string {
	var b strings.Builder
	for _, f := range fields {
		need := "optional"
		if f.required {
			need = "required"
		}
		fmt.Fprintf(&b, "\n%s- `%s` (%s, %s): %s", indent, f.name, f.kind.typeName(), need, f.desc)
		if f.kind == kindObjects {
			b.WriteString(fieldsDoc(f.nested, indent+"  "))
		}
	}
	return b.String()
}

// observationOutputAttribute is a computed observation with the input's
// type, so it can be passed to activation_container_counts as it is.
func observationOutputAttribute(description string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Computed: true, MarkdownDescription: description, Attributes: fieldAttributes(observationFields, true)}
}

// The typed model the framework decodes an observation into; its tags are
// the field names above (Config.Get refuses a mismatch). The usage window
// (dynamic) and the queue stay framework values, read element by element:
// decoding each sample into a struct by reflection costs the framework a
// regular expression compile per field and element (a 120-sample window
// took 10 ms that way).
type observationModel struct {
	Host                  types.String  `tfsdk:"host"`
	CPUCapacityMHz        types.Number  `tfsdk:"cpu_capacity_mhz"`
	MemoryCapacityMB      types.Number  `tfsdk:"memory_capacity_mb"`
	UsageSamples          types.Dynamic `tfsdk:"usage_samples"`
	RequestedCPUMHz       types.Number  `tfsdk:"requested_cpu_mhz"`
	RequestedMemoryMB     types.Number  `tfsdk:"requested_memory_mb"`
	RunningReplicas       types.Number  `tfsdk:"running_replicas"`
	WarmingReplicas       types.Number  `tfsdk:"warming_replicas"`
	ReplicaCPUDemandMHz   types.Number  `tfsdk:"replica_cpu_demand_mhz"`
	ReplicaMemoryDemandMB types.Number  `tfsdk:"replica_memory_demand_mb"`
	WantedReplicas        types.Number  `tfsdk:"wanted_replicas"`
	QueuedReplicas        types.List    `tfsdk:"queued_replicas"`
	OtherReservedCPUMHz   types.Number  `tfsdk:"other_reserved_cpu_mhz"`
	OtherReservedMemoryMB types.Number  `tfsdk:"other_reserved_memory_mb"`
}

// figure reads a CPU or memory figure; null is 0. A value beyond a 64-bit
// float (1e400), or nonzero and nearer 0 than one can hold (1e-400), is a
// type error; an infinite one (1/0) goes to the engine,
// which refuses it naming the field, as it refuses any other bad figure.
func figure(v types.Number) (float64, string) {
	if v.IsNull() || v.IsUnknown() {
		return 0, ""
	}
	b := v.ValueBigFloat()
	f, _ := b.Float64()
	if math.IsInf(f, 0) && !b.IsInf() {
		return 0, "is " + b.Text('g', 10) + ", beyond a 64-bit floating point number: check the units"
	}
	if f == 0 && b.Sign() != 0 {
		// (read as 0, it would be refused, or judged, as 0: "is 0")
		return 0, "is " + b.Text('g', 10) + ", closer to 0 than a 64-bit floating point number can hold: check the units"
	}
	return f, ""
}

// whole reads a count or a time; null is 0. A fraction, an infinity or a
// number beyond 64 bits is a type error.
func whole(v types.Number) (int64, string) {
	if v.IsNull() || v.IsUnknown() {
		return 0, ""
	}
	b := v.ValueBigFloat()
	if !b.IsInt() {
		// 20 digits: a Unix time with a fraction (1700000000.123) or a
		// number just off a whole one (2.0000000000000001) shows it,
		// where 10 read "is 1700000000; it must be a whole number".
		return 0, "is " + b.Text('g', 20) + "; it must be a whole number"
	}
	i, acc := b.Int64()
	if acc != big.Exact {
		return 0, "is " + b.Text('g', 10) + ", beyond a 64-bit whole number"
	}
	return i, ""
}

// count reads a whole number the engine holds in an int.
func count(v types.Number) (int, string) {
	i, why := whole(v)
	if why == "" && (i < math.MinInt32 || i > math.MaxInt32) {
		// An int may have 32 bits: a count beyond them is refused here
		// rather than wrapped (the engine's own limits are far lower).
		return 0, "is " + v.ValueBigFloat().Text('g', 10) + ", beyond a 32-bit whole number: too large for a count"
	}
	return int(i), why
}

// toEngine converts a known observation at root; a value that does not fit
// the engine's types is a *valueError naming it. Unset optional values are
// the engine's zero; a null queued_replicas stays nil and an empty one
// empty (nobody new wants to run).
func (m *observationModel) toEngine(root path.Path) (engine.Observation, error) {
	return m.toEngineWith(root, nil)
}

// toEngineWith is toEngine with the window's samples already conformed by
// windowOf (nil: conformed here), so that a caller that checked them does
// not conform a week of samples twice.
func (m *observationModel) toEngineWith(root path.Path, samples []map[string]attr.Value) (engine.Observation, error) {
	o := engine.Observation{Host: m.Host.ValueString()}
	fail := func(p path.Path, why string) (engine.Observation, error) {
		return engine.Observation{}, &valueError{path: p, reason: why}
	}
	for _, f := range [...]struct {
		name string
		v    types.Number
		dst  *float64
	}{
		{obsCPUCapacityMHz, m.CPUCapacityMHz, &o.CPUCapacityMHz},
		{obsMemoryCapacityMB, m.MemoryCapacityMB, &o.MemoryCapacityMB},
		{obsRequestedCPUMHz, m.RequestedCPUMHz, &o.RequestedCPUMHz},
		{obsRequestedMemoryMB, m.RequestedMemoryMB, &o.RequestedMemoryMB},
		{obsReplicaCPUDemandMHz, m.ReplicaCPUDemandMHz, &o.ReplicaCPUDemandMHz},
		{obsReplicaMemoryDemandMB, m.ReplicaMemoryDemandMB, &o.ReplicaMemoryDemandMB},
		{obsOtherReservedCPUMHz, m.OtherReservedCPUMHz, &o.OtherReservedCPUMHz},
		{obsOtherReservedMemoryMB, m.OtherReservedMemoryMB, &o.OtherReservedMemoryMB},
	} {
		var why string
		if *f.dst, why = figure(f.v); why != "" {
			return fail(root.AtName(f.name), why)
		}
	}
	for _, f := range [...]struct {
		name string
		v    types.Number
		dst  *int
	}{
		{obsRunningReplicas, m.RunningReplicas, &o.RunningReplicas},
		{obsWarmingReplicas, m.WarmingReplicas, &o.WarmingReplicas},
		{obsWantedReplicas, m.WantedReplicas, &o.WantedReplicas},
	} {
		var why string
		if *f.dst, why = count(f.v); why != "" {
			return fail(root.AtName(f.name), why)
		}
	}
	if samples == nil {
		var err error
		if samples, err = windowOf(m.UsageSamples, root.AtName(obsUsageSamples)); err != nil {
			return engine.Observation{}, err
		}
	}
	o.Samples = make([]engine.Sample, len(samples))
	for i, a := range samples {
		d := &o.Samples[i]
		at := func(name string) path.Path { return root.AtName(obsUsageSamples).AtListIndex(i).AtName(name) }
		var why string
		if d.Time, why = whole(numberAt(a, sampleTime)); why != "" {
			return fail(at(sampleTime), why)
		}
		if d.CPUMHz, why = figure(numberAt(a, sampleCPUMHz)); why != "" {
			return fail(at(sampleCPUMHz), why)
		}
		if d.MemoryMB, why = figure(numberAt(a, sampleMemoryMB)); why != "" {
			return fail(at(sampleMemoryMB), why)
		}
	}
	if !m.QueuedReplicas.IsNull() {
		queued := m.QueuedReplicas.Elements()
		o.QueuedReplicas = make([]engine.Replica, len(queued))
		for i, e := range queued {
			d := &o.QueuedReplicas[i]
			at := func(name string) path.Path { return root.AtName(obsQueuedReplicas).AtListIndex(i).AtName(name) }
			r, ok := e.(types.Object)
			if !ok || r.IsNull() {
				return fail(root.AtName(obsQueuedReplicas).AtListIndex(i), "is not a replica")
			}
			a := r.Attributes()
			var why string
			if d.CPUMHz, why = figure(numberAt(a, replicaCPUMHz)); why != "" {
				return fail(at(replicaCPUMHz), why)
			}
			if d.MemoryMB, why = figure(numberAt(a, replicaMemoryMB)); why != "" {
				return fail(at(replicaMemoryMB), why)
			}
		}
	}
	return o, nil
}

// numberAt is attribute name of an object's attributes as a number (null
// when absent or not a number: an optional value unset).
func numberAt(attrs map[string]attr.Value, name string) types.Number {
	if n, ok := attrs[name].(types.Number); ok {
		return n
	}
	return types.NumberNull()
}

func numberValue(x float64) types.Number { return types.NumberValue(big.NewFloat(x)) }

func wholeValue(i int64) types.Number { return types.NumberValue(new(big.Float).SetInt64(i)) }

// observationFromEngine is the state form of an engine observation. Every
// number is written, zero included; an empty host label and a nil queue
// are null, so the value converts back to the same observation.
func observationFromEngine(o *engine.Observation) observationModel {
	m := observationModel{
		Host:                  types.StringValue(o.Host),
		CPUCapacityMHz:        numberValue(o.CPUCapacityMHz),
		MemoryCapacityMB:      numberValue(o.MemoryCapacityMB),
		RequestedCPUMHz:       numberValue(o.RequestedCPUMHz),
		RequestedMemoryMB:     numberValue(o.RequestedMemoryMB),
		RunningReplicas:       wholeValue(int64(o.RunningReplicas)),
		WarmingReplicas:       wholeValue(int64(o.WarmingReplicas)),
		ReplicaCPUDemandMHz:   numberValue(o.ReplicaCPUDemandMHz),
		ReplicaMemoryDemandMB: numberValue(o.ReplicaMemoryDemandMB),
		WantedReplicas:        wholeValue(int64(o.WantedReplicas)),
		OtherReservedCPUMHz:   numberValue(o.OtherReservedCPUMHz),
		OtherReservedMemoryMB: numberValue(o.OtherReservedMemoryMB),
	}
	if o.Host == "" {
		m.Host = types.StringNull()
	}
	samples := make([]attr.Value, len(o.Samples))
	for i, x := range o.Samples {
		samples[i] = types.ObjectValueMust(sampleAttrTypes, map[string]attr.Value{
			sampleTime: wholeValue(x.Time), sampleCPUMHz: numberValue(x.CPUMHz), sampleMemoryMB: numberValue(x.MemoryMB)})
	}
	m.UsageSamples = types.DynamicValue(types.ListValueMust(types.ObjectType{AttrTypes: sampleAttrTypes}, samples))
	m.QueuedReplicas = types.ListNull(types.ObjectType{AttrTypes: replicaAttrTypes})
	if o.QueuedReplicas != nil {
		queued := make([]attr.Value, len(o.QueuedReplicas))
		for i, r := range o.QueuedReplicas {
			queued[i] = types.ObjectValueMust(replicaAttrTypes, map[string]attr.Value{
				replicaCPUMHz: numberValue(r.CPUMHz), replicaMemoryMB: numberValue(r.MemoryMB)})
		}
		m.QueuedReplicas = types.ListValueMust(types.ObjectType{AttrTypes: replicaAttrTypes}, queued)
	}
	return m
}

// probeErrors checks a decoded observation some of whose values are not
// known yet (validate, or the function at plan) with the engine's rules,
// as far as its known values decide them: each unknown value is replaced
// by the one those rules accept most widely (a CPU capacity of
// engine.MaxResource, no memory capacity, a tiny positive CPU demand, as
// many running replicas as warming ones (none when that is negative), no
// queue (a known queue keeps its length, an unknown replica in it a tiny
// one), one idle sample, 0 elsewhere), and a problem reported on a
// replaced value is dropped. The counts and sample times that do not fit
// the engine's types have been reported before (knownErrors); a figure
// that does not is reported here. As Decide, it checks the values, then
// what the role takes (CheckRole).
func (m *observationModel) probeErrors(ctx context.Context, role string, roots inputRoots, samples []map[string]attr.Value) []*valueError {
	root := roots.hosts[role].observation
	probe := *m
	var replaced []path.Path
	unknown := func(name string, v attr.Value) bool {
		if v == nil {
			return false
		}
		tv, err := v.ToTerraformValue(ctx)
		if err != nil || tv.IsFullyKnown() {
			return false
		}
		replaced = append(replaced, root.AtName(name))
		return true
	}
	w, known, whole := knownWindow(ctx, m.UsageSamples, root.AtName(obsUsageSamples), &replaced)
	if !whole {
		samples = nil // the samples checked are the probe's
	}
	if known {
		probe.UsageSamples = w
	} else if unknown(obsUsageSamples, m.UsageSamples) {
		sample := types.ObjectValueMust(map[string]attr.Type{sampleTime: types.NumberType, sampleCPUMHz: types.NumberType},
			map[string]attr.Value{sampleTime: wholeValue(0), sampleCPUMHz: wholeValue(0)})
		probe.UsageSamples = types.DynamicValue(types.TupleValueMust([]attr.Type{sample.Type(ctx)}, []attr.Value{sample}))
	}
	switch {
	case m.QueuedReplicas.IsUnknown():
		replaced = append(replaced, root.AtName(obsQueuedReplicas))
		probe.QueuedReplicas = types.ListNull(m.QueuedReplicas.ElementType(ctx))
	case !m.QueuedReplicas.IsNull():
		// A known queue keeps its length (a second host's queue, or one
		// beside wanted_replicas, is refused whatever its replicas); a
		// replica not known yet is a valid one.
		elems := slices.Clone(m.QueuedReplicas.Elements())
		stand := map[string]attr.Value{replicaCPUMHz: numberValue(engine.MinCapacity), replicaMemoryMB: wholeValue(0)}
		for i, e := range elems {
			at := root.AtName(obsQueuedReplicas).AtListIndex(i)
			if o, ok := e.(types.Object); ok && !o.IsUnknown() && !o.IsNull() {
				// its known attributes are checked; an unknown one is a
				// stand-in's
				elems[i] = withStandIns(ctx, o, stand, at, &replaced)
				continue
			}
			if tv, err := e.ToTerraformValue(ctx); err == nil && !tv.IsFullyKnown() {
				replaced = append(replaced, at)
				elems[i] = types.ObjectValueMust(replicaAttrTypes, stand)
			}
		}
		probe.QueuedReplicas = types.ListValueMust(m.QueuedReplicas.ElementType(ctx), elems)
	}
	unknown(obsHost, m.Host) // "": the empty label is valid
	numbers := []struct {
		name string
		v    types.Number
	}{
		{obsCPUCapacityMHz, m.CPUCapacityMHz}, {obsMemoryCapacityMB, m.MemoryCapacityMB},
		{obsRequestedCPUMHz, m.RequestedCPUMHz}, {obsRequestedMemoryMB, m.RequestedMemoryMB},
		{obsRunningReplicas, m.RunningReplicas}, {obsWarmingReplicas, m.WarmingReplicas},
		{obsReplicaCPUDemandMHz, m.ReplicaCPUDemandMHz}, {obsReplicaMemoryDemandMB, m.ReplicaMemoryDemandMB},
		{obsWantedReplicas, m.WantedReplicas}, {obsOtherReservedCPUMHz, m.OtherReservedCPUMHz},
		{obsOtherReservedMemoryMB, m.OtherReservedMemoryMB},
	}
	isUnknown := map[string]bool{}
	for _, n := range numbers {
		isUnknown[n.name] = unknown(n.name, n.v) // toEngine reads an unknown number as 0
	}
	o, err := probe.toEngineWith(root, samples)
	if err != nil {
		// A figure beyond a float64 (the counts and times were checked
		// before): reported, unless it is a stand-in's.
		if ve := asValueError(err, root); !underAny(ve.path, replaced) {
			return []*valueError{ve}
		}
		return nil
	}
	if isUnknown[obsCPUCapacityMHz] {
		o.CPUCapacityMHz = engine.MaxResource
	}
	if isUnknown[obsReplicaCPUDemandMHz] {
		o.ReplicaCPUDemandMHz = engine.MinCapacity
	}
	if isUnknown[obsRunningReplicas] {
		o.RunningReplicas = max(o.WarmingReplicas, 0)
	}
	// As Decide checks: the values, then what the role takes (the
	// window's length is the read's: knownObservationErrors).
	err = o.Validate(role)
	if err == nil {
		err = o.CheckRole(role)
	}
	var errs []*valueError
	warming := root.AtName(obsWarmingReplicas)
	for _, ve := range engineValueErrors(err, roots) {
		if !underAny(ve.path, replaced) {
			ve.summary = "Cannot compute the container counts"
			if isUnknown[obsRunningReplicas] && ve.path.Equal(warming) {
				// The rule's upper bound is running_replicas, which
				// the probe stood in for: not a bound to quote.
				ve.reason = fmt.Sprintf("is %d; it must be a whole number from 0 to running_replicas (not known yet)", o.WarmingReplicas)
			}
			errs = append(errs, ve)
		}
	}
	return errs
}

// knownWindow is window w, known as a list, with each value not known yet
// stood in for (its path added to replaced), so that the known samples are
// checked: a figure by 0, a sample by an idle one; and when a time or a
// sample is not known, every time by the sample's index, so that the order
// holds (it waits for the times, as do the known times' own rules). known
// is false when the list itself is not known; whole is true when every
// value of it is known (w is then the window as it is).
func knownWindow(ctx context.Context, w types.Dynamic, at path.Path, replaced *[]path.Path) (_ types.Dynamic, known, whole bool) {
	if w.IsNull() || w.IsUnknown() || w.IsUnderlyingValueNull() || w.IsUnderlyingValueUnknown() {
		return w, false, false
	}
	elems, why := elementsOf(w.UnderlyingValue())
	if why != "" || elems == nil {
		return w, false, false
	}
	if !anyUnknown(elems) {
		return w, true, true
	}
	samples := make([]map[string]attr.Value, len(elems))
	timesKnown := true
	for i, e := range elems {
		if u := underlying(e); u == nil || u.IsUnknown() {
			timesKnown = false
			*replaced = append(*replaced, at.AtListIndex(i))
			continue
		}
		a, why := attributesOf(e)
		if why != "" {
			return w, false, false
		}
		vs := map[string]attr.Value{}
		for name, v := range a {
			if u := underlying(v); u != nil && u.IsUnknown() {
				if name == sampleTime {
					timesKnown = false
				} else {
					*replaced = append(*replaced, at.AtListIndex(i).AtName(name))
				}
				v = wholeValue(0)
			}
			vs[name] = v
		}
		samples[i] = vs
	}
	out := make([]attr.Value, len(elems))
	ts := make([]attr.Type, len(elems))
	for i, vs := range samples {
		if vs == nil {
			vs = map[string]attr.Value{sampleCPUMHz: wholeValue(0)}
		}
		if !timesKnown {
			vs[sampleTime] = wholeValue(int64(i))
			*replaced = append(*replaced, at.AtListIndex(i).AtName(sampleTime))
		}
		vts := map[string]attr.Type{}
		for name, v := range vs {
			vts[name] = v.Type(ctx)
		}
		out[i] = types.ObjectValueMust(vts, vs)
		ts[i] = out[i].Type(ctx)
	}
	return types.DynamicValue(types.TupleValueMust(ts, out)), true, false
}

// anyUnknown says whether a sample of elems, or an attribute of one, is
// not known yet (the attributes are scalars: no deeper look is needed,
// and none of the cost of converting a week of samples).
func anyUnknown(elems []attr.Value) bool {
	for _, e := range elems {
		u := underlying(e)
		if u == nil || u.IsUnknown() {
			return true
		}
		a, why := attributesOf(u)
		if why != "" {
			return true // (not an object: the conversion decides)
		}
		for _, v := range a {
			if x := underlying(v); x != nil && x.IsUnknown() {
				return true
			}
		}
	}
	return false
}

// withStandIns is object o with each attribute not known yet replaced by
// stand's (its path under at added to replaced).
func withStandIns(ctx context.Context, o types.Object, stand map[string]attr.Value, at path.Path, replaced *[]path.Path) types.Object {
	vs := maps.Clone(o.Attributes())
	for name, v := range vs {
		if tv, err := v.ToTerraformValue(ctx); err == nil && !tv.IsFullyKnown() {
			if sv, ok := stand[name]; ok {
				vs[name] = sv
				*replaced = append(*replaced, at.AtName(name))
			}
		}
	}
	return types.ObjectValueMust(o.AttributeTypes(ctx), vs)
}

// underAny says whether p is one of roots or inside one.
func underAny(p path.Path, roots []path.Path) bool {
	for _, r := range roots {
		if s, rs := p.String(), r.String(); s == rs || strings.HasPrefix(s, rs+".") || strings.HasPrefix(s, rs+"[") {
			return true
		}
	}
	return false
}
