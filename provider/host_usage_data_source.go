package provider

import (
	"context"
	"errors"
	"fmt"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"net/http"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// Attribute names of activation_host_usage.
const (
	huNodeID          = "node_id"
	huNodeName        = "node_name"
	huNodePool        = "node_pool"
	huNodeClass       = "node_class"
	huNamespace       = "namespace"
	huJob             = "job"
	huGroup           = "group"
	huReplicaCPU      = "replica_cpu_demand_mhz"
	huReplicaMemory   = "replica_memory_demand_mb"
	huWantedReplicas  = "wanted_replicas"
	huLabel           = "label"
	huSamples         = "samples"
	huSampleInterval  = "sample_interval_seconds"
	huObservation     = "observation"
	huReadAt          = "read_at"
	maxHostUsageReads = 60
	maxSampleInterval = 10
)

var (
	_ datasource.DataSource                     = (*hostUsageDataSource)(nil)
	_ datasource.DataSourceWithConfigure        = (*hostUsageDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig   = (*hostUsageDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*hostUsageDataSource)(nil)
)

// NewHostUsageDataSource is activation_host_usage.
func NewHostUsageDataSource() datasource.DataSource { return &hostUsageDataSource{} }

type hostUsageDataSource struct {
	data *providerData
}

type hostUsageModel struct {
	NodeID                types.String  `tfsdk:"node_id"`
	NodeName              types.String  `tfsdk:"node_name"`
	NodePool              types.String  `tfsdk:"node_pool"`
	NodeClass             types.String  `tfsdk:"node_class"`
	Namespace             types.String  `tfsdk:"namespace"`
	Job                   types.String  `tfsdk:"job"`
	Group                 types.String  `tfsdk:"group"`
	ReplicaCPUDemandMHz   types.Float64 `tfsdk:"replica_cpu_demand_mhz"`
	ReplicaMemoryDemandMB types.Float64 `tfsdk:"replica_memory_demand_mb"`
	WantedReplicas        types.Int64   `tfsdk:"wanted_replicas"`
	Label                 types.String  `tfsdk:"label"`
	Samples               types.Int64   `tfsdk:"samples"`
	SampleInterval        types.Int64   `tfsdk:"sample_interval_seconds"`
	Observation           types.Object  `tfsdk:"observation"`
	ReadAt                types.String  `tfsdk:"read_at"`
}

func (d *hostUsageDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_usage"
}

func (d *hostUsageDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	name := func() []validator.String { return []validator.String{stringvalidator.LengthBetween(1, 256)} }
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads one Nomad node's real usage through the Nomad HTTP API (node resources, client " +
			"stats, allocation stats and the allocations' allocated resources) and returns an `observation` that " +
			"plugs straight into `activation_container_counts` as `first` or `second`.\n\n" +
			"The node is chosen by `node_id`, or by `node_name`, `node_pool` and `node_class` (every one set must " +
			"match): no match or several matches is an error. With `job` (and `group`), usage and requests are those " +
			"of that task group's running allocations on the node; without, those of the whole node. Nomad keeps no " +
			"usage history, so each read is one sample: set `samples` to read several times, " +
			"`sample_interval_seconds` apart, during the plan. The `nomad` block of the provider says how to reach Nomad.",
		Attributes: map[string]schema.Attribute{
			huNodeID: schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "ID of the node to read. When unset, the ID of the node the other selectors found.",
				Validators:          name()},
			huNodeName: schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Name of the node to read. When unset, the name of the node found.",
				Validators:          name()},
			huNodePool: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Node pool the node must be in.", Validators: name()},
			huNodeClass: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Node class the node must have.", Validators: name()},
			huNamespace: schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Namespace of `job`. Defaults to the provider's `nomad.namespace`, then Nomad's default; set to the job's namespace after the read.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 128)}},
			huJob: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Job whose allocations on the node are the workload. Unset: the whole node's usage and allocations.",
				Validators:          name()},
			huGroup: schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Task group of `job`; needed when the job has several. Set to the group read.",
				Validators:          append(name(), stringvalidator.AlsoRequires(path.MatchRoot(huJob)))},
			huReplicaCPU: schema.Float64Attribute{Optional: true,
				MarkdownDescription: "Expected CPU demand (MHz) of one replica. Unset with a `job`: the task group's CPU request. Required without a `job`.",
				Validators:          []validator.Float64{greaterThan(0), float64validator.AtMost(maxResource)}},
			huReplicaMemory: schema.Float64Attribute{Optional: true,
				MarkdownDescription: "Expected memory demand (MB) of one replica. Unset with a `job`: the task group's memory request.",
				Validators:          []validator.Float64{float64validator.Between(0, maxResource)}},
			huWantedReplicas: schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Passed through to the observation: how many replicas ask to run on the host (0 or unset offers every slot).",
				Validators:          []validator.Int64{int64validator.Between(0, maxReplicas)}},
			huLabel: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Host label in the observation; default the node's name.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, maxHostName)}},
			huSamples: schema.Int64Attribute{Optional: true,
				MarkdownDescription: fmt.Sprintf("How many times to read the node (1 to %d; default 1). Each read is one usage sample.", maxHostUsageReads),
				Validators:          []validator.Int64{int64validator.Between(1, maxHostUsageReads)}},
			huSampleInterval: schema.Int64Attribute{Optional: true,
				MarkdownDescription: fmt.Sprintf("Seconds between reads when `samples` > 1 (1 to %d; default 1). The plan waits `(samples - 1) x sample_interval_seconds`.", maxSampleInterval),
				Validators:          []validator.Int64{int64validator.Between(1, maxSampleInterval)}},
			huObservation: observationOutputAttribute("The host observation: capacity (node resources less reserved), the usage samples, " +
				"the requested resources and number of the running allocations, and the replica demand. Pass it as `first` or `second` of `activation_container_counts`."),
			huReadAt: schema.StringAttribute{Computed: true, MarkdownDescription: "Time of the last read, RFC 3339."},
		},
	}
}

func (d *hostUsageDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.AtLeastOneOf(path.MatchRoot(huNodeID), path.MatchRoot(huNodeName), path.MatchRoot(huNodePool), path.MatchRoot(huNodeClass)),
	}
}

// ValidateConfig: without a job there is no task group to take the replica
// demand from, so it must be given; counts are whole numbers.
func (d *hostUsageDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var job types.String
	var demand types.Float64
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(huJob), &job)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(huReplicaCPU), &demand)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if job.IsNull() && demand.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root(huReplicaCPU), "Replica demand needed",
			"Attribute replica_cpu_demand_mhz must be set when no job is named: the demand of one replica is otherwise taken from the job's task group.")
	}
	var top map[string]tftypes.Value // the configuration's own map: read only
	if req.Config.Raw.As(&top) == nil {
		for _, name := range []string{huWantedReplicas, huSamples, huSampleInterval} {
			checkWholeNumber(top[name], path.Root(name), &resp.Diagnostics)
		}
	}
}

func (d *hostUsageDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if pd := configureData(req, resp); pd != nil {
		d.data = pd
	}
}

func (m *hostUsageModel) query(defaultNamespace string) nomadusage.Query {
	q := nomadusage.Query{
		Host: nomadusage.HostSelector{
			NodeID: m.NodeID.ValueString(), Name: m.NodeName.ValueString(),
			Pool: m.NodePool.ValueString(), Class: m.NodeClass.ValueString(),
		},
		Namespace:             m.Namespace.ValueString(),
		Job:                   m.Job.ValueString(),
		Group:                 m.Group.ValueString(),
		ReplicaCPUDemandMHz:   m.ReplicaCPUDemandMHz.ValueFloat64(),
		ReplicaMemoryDemandMB: m.ReplicaMemoryDemandMB.ValueFloat64(),
		WantedReplicas:        int(m.WantedReplicas.ValueInt64()),
		Label:                 m.Label.ValueString(),
	}
	if q.Namespace == "" {
		q.Namespace = defaultNamespace
	}
	return q
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (d *hostUsageDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m hostUsageModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.data == nil {
		resp.Diagnostics.AddError("Provider not configured", "activation_host_usage needs the activation provider's configuration; this is a bug in the provider.")
		return
	}
	settings := &d.data.Nomad
	client, err := settings.client()
	if err != nil {
		resp.Diagnostics.AddError("Cannot use the Nomad settings", nomadconn.RedactString(err.Error(), settings.Config.SecretID))
		return
	}
	samples, interval := int64(1), int64(1)
	if !m.Samples.IsNull() {
		samples = m.Samples.ValueInt64()
	}
	if !m.SampleInterval.IsNull() {
		interval = m.SampleInterval.ValueInt64()
	}
	q := m.query(settings.Config.Namespace)
	gap := time.Duration(interval) * time.Second
	window, err := nomadusage.NewWindow(int(samples), time.Duration(samples)*gap+time.Minute)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root(huSamples), "Invalid usage window", err.Error())
		return
	}
	reader := &nomadusage.Reader{Client: client}
	var last *nomadusage.Reading
	for i := int64(0); i < samples; i++ {
		if i > 0 {
			if err := sleepCtx(ctx, gap); err != nil {
				resp.Diagnostics.AddError("Reading Nomad usage interrupted", err.Error())
				return
			}
		}
		tflog.Trace(ctx, "activation_host_usage: reading", map[string]any{
			"address": settings.Config.Address, "selector": q.Host.String(), "job": q.Job, "group": q.Group, "read": i + 1, "of": samples,
		})
		rd, err := reader.Read(ctx, q)
		if err != nil {
			addNomadError(&resp.Diagnostics, &m, settings, err)
			return
		}
		if err := window.Add(rd); err != nil {
			resp.Diagnostics.AddError("Cannot build the usage window", err.Error())
			return
		}
		last = rd
	}
	obs, err := window.Observation(time.Now())
	if err != nil {
		resp.Diagnostics.AddError("Cannot build the usage window", err.Error())
		return
	}
	tflog.Trace(ctx, "activation_host_usage: read", map[string]any{
		"node": last.NodeName, "node_id": last.NodeID, "samples": len(obs.Samples),
		"cpu_capacity_mhz": obs.CPUCapacityMHz, "running_replicas": obs.RunningReplicas,
	})
	om := observationFromEngine(&obs)
	objVal, diags := types.ObjectValueFrom(ctx, observationAttrTypes, &om)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	m.NodeID = types.StringValue(last.NodeID)
	m.NodeName = types.StringValue(last.NodeName)
	if last.Namespace != "" || m.Namespace.IsNull() {
		m.Namespace = stringOrNull(last.Namespace)
	}
	if last.Group != "" || m.Group.IsNull() {
		m.Group = stringOrNull(last.Group)
	}
	m.Observation = objVal
	m.ReadAt = types.StringValue(last.Time.UTC().Format(time.RFC3339))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// selectorPath is the selector attribute a node-matching error is about.
func (m *hostUsageModel) selectorPath() path.Path {
	for _, c := range []struct {
		v    types.String
		name string
	}{{m.NodeID, huNodeID}, {m.NodeName, huNodeName}, {m.NodePool, huNodePool}, {m.NodeClass, huNodeClass}} {
		if !c.v.IsNull() {
			return path.Root(c.name)
		}
	}
	return path.Root(huNodeID)
}

// addNomadError turns a usage read error into a diagnostic on the
// attribute at fault, or a general one saying what Nomad answered. The
// attribute comes from the error's nomadusage sentinel and from which
// attributes m sets, never from the error's text.
func addNomadError(diags *diag.Diagnostics, m *hostUsageModel, s *nomadSettings, err error) {
	msg := nomadconn.RedactString(err.Error(), s.Config.SecretID)
	var ue api.UnexpectedResponseError
	hasStatus := errors.As(err, &ue) && ue.HasStatusCode()
	jobSet := !m.Job.IsNull()
	switch {
	case errors.Is(err, nomadusage.ErrNodeNotFound), errors.Is(err, nomadusage.ErrAmbiguous),
		errors.Is(err, nomadusage.ErrNodeNotReady), errors.Is(err, nomadusage.ErrNoSelector):
		p := m.selectorPath()
		diags.AddAttributeError(p, "Cannot find the host", fmt.Sprintf("Attribute %s: %s.", p, msg))
	case errors.Is(err, nomadusage.ErrJobNotFound):
		p := path.Root(huJob)
		if !(hasStatus && ue.StatusCode() == http.StatusNotFound) && !m.Group.IsNull() {
			p = path.Root(huGroup) // the job exists, the group does not
		}
		diags.AddAttributeError(p, "Cannot find the workload", fmt.Sprintf("Attribute %s: %s.", p, msg))
	case errors.Is(err, nomadusage.ErrBadQuery) && jobSet && m.Group.IsNull():
		// The schema's validators rule out every other bad query: with a
		// job and no group, the job has several groups to choose from.
		diags.AddAttributeError(path.Root(huGroup), "Task group needed", fmt.Sprintf("Attribute %s: %s.", huGroup, msg))
	case errors.Is(err, nomadusage.ErrBadQuery):
		diags.AddError("Invalid usage query", msg)
	case errors.Is(err, nomadusage.ErrMissingData) && jobSet && m.ReplicaCPUDemandMHz.IsNull():
		// The demand was to come from the task group's CPU request.
		diags.AddAttributeError(path.Root(huReplicaCPU), "Nomad did not report everything the read needs",
			fmt.Sprintf("Attribute %s is unset, so the demand of one replica comes from the task group's CPU request: %s. "+
				"If the task group requests no CPU, set %s.", huReplicaCPU, msg, huReplicaCPU))
	case errors.Is(err, nomadusage.ErrMissingData):
		diags.AddError("Nomad did not report everything the read needs", fmt.Sprintf("Nomad at %s: %s.", s.Config.Address, msg))
	case hasStatus && ue.StatusCode() == http.StatusForbidden:
		diags.AddError("Nomad refused the request",
			fmt.Sprintf("Nomad at %s answered 403 (permission denied): the ACL token in the provider's nomad.token (or NOMAD_TOKEN) is missing, unknown or may not read nodes and allocations. %s", s.Config.Address, msg))
	case hasStatus:
		diags.AddError("Nomad answered with an error",
			fmt.Sprintf("Nomad at %s answered HTTP %d while reading the host's usage: %s", s.Config.Address, ue.StatusCode(), msg))
	default:
		diags.AddError("Cannot read the host's usage from Nomad", fmt.Sprintf("Nomad at %s: %s", s.Config.Address, msg))
	}
}
