package provider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
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
	huSchedulable     = "schedulable"
	huNodeState       = "node_state"
	huWarmup          = "warmup"
	huTimeouts        = "timeouts"
	maxHostUsageReads = 60
	maxSampleInterval = 10
	// extraReads, with samples more, are the reads made at most beyond
	// samples when Nomad's stats repeat their time (see Read).
	extraReads = 5

	// defaultReadTimeout bounds a read when timeouts.read is unset, besides
	// the waits between samples.
	defaultReadTimeout = 2 * time.Minute

	// defaultWarmup is warmup's default: the activation-quota strategy's
	// (nomadplugin.DefaultWarmup), so that both read a node alike.
	defaultWarmup = 2 * time.Minute
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
	NodeID                types.String   `tfsdk:"node_id"`
	NodeName              types.String   `tfsdk:"node_name"`
	NodePool              types.String   `tfsdk:"node_pool"`
	NodeClass             types.String   `tfsdk:"node_class"`
	Namespace             types.String   `tfsdk:"namespace"`
	Job                   types.String   `tfsdk:"job"`
	Group                 types.String   `tfsdk:"group"`
	ReplicaCPUDemandMHz   types.Number   `tfsdk:"replica_cpu_demand_mhz"`
	ReplicaMemoryDemandMB types.Number   `tfsdk:"replica_memory_demand_mb"`
	WantedReplicas        types.Number   `tfsdk:"wanted_replicas"`
	Label                 types.String   `tfsdk:"label"`
	Samples               types.Number   `tfsdk:"samples"`
	SampleInterval        types.Number   `tfsdk:"sample_interval_seconds"`
	Observation           types.Object   `tfsdk:"observation"`
	ReadAt                types.String   `tfsdk:"read_at"`
	Schedulable           types.Bool     `tfsdk:"schedulable"`
	NodeState             types.String   `tfsdk:"node_state"`
	Warmup                types.String   `tfsdk:"warmup"`
	Timeouts              timeouts.Value `tfsdk:"timeouts"`
}

func (d *hostUsageDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_usage"
}

// timeoutsBlock is the framework's timeouts block with descriptions in
// Markdown.
func timeoutsBlock(ctx context.Context) schema.Block {
	const desc = "How long a read may take, as a duration (`30s`, `5m`): every request to Nomad and the waits between samples. " +
		"Default: 2 minutes plus the longest the waits between samples can take (`(2 x samples + 4) x sample_interval_seconds`, with reads made again; see `samples`). It must be longer than the waits between samples alone " +
		"(`(samples - 1) x sample_interval_seconds`): a shorter one is refused when the configuration is validated. When it passes, the read fails " +
		"with an error saying which call to Nomad was under way."
	b, ok := timeouts.BlockWithOpts(ctx, timeouts.Opts{ReadDescription: desc}).(schema.SingleNestedBlock)
	if !ok {
		panic("terraform-plugin-framework-timeouts: the timeouts block is no longer a SingleNestedBlock")
	}
	b.MarkdownDescription = "Time limits of the read."
	for name, a := range b.Attributes {
		if s, ok := a.(schema.StringAttribute); ok {
			s.MarkdownDescription = s.Description
			b.Attributes[name] = s
		}
	}
	return b
}

func (d *hostUsageDataSource) Schema(ctx context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	name := func() []validator.String { return []validator.String{stringvalidator.LengthBetween(1, 256)} }
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads one Nomad node's real usage through the Nomad HTTP API (node resources, client " +
			"stats, allocation stats and the allocations' allocated resources) and returns an `observation` that " +
			"plugs straight into `activation_container_counts` as `first` or `second`.\n\n" +
			"The node is chosen by `node_id`, or by `node_name`, `node_pool` and `node_class` (every one set must " +
			"match): no match or several matches is an error, except that of several nodes with the `node_name` (one replaced " +
			"under the same name, the old one listed, down, until Nomad collects it) the one not down is read. With `job` (and `group`), usage and requests are those " +
			"of that task group's running allocations on the node; without, those of the whole node (on a node with no " +
			"allocation running, the usage is no replica's but stays on the node: its peak over the reads is added to " +
			"`other_reserved_cpu_mhz` and `other_reserved_memory_mb`, so the counts leave room for it). Nomad keeps no " +
			"usage history, so each read is one sample: set `samples` to read several times, " +
			"`sample_interval_seconds` apart, during the plan; a read Nomad fails with a 5xx, or whose allocations' stats answer too few, is made " +
			"once more before the plan fails (not when the first stats read that failed timed out: a client node that does not answer would be waited for twice). The `nomad` block of the provider says how to reach Nomad; " +
			"every instance of this data source in a configuration shares the provider's one connection (and one usage reader per " +
			"`warmup` value), so a `for_each` over many nodes makes one client, not one per node.",
		Attributes: map[string]schema.Attribute{
			huNodeID: schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "ID of the node to read: its whole UUID, 36 characters (Nomad's CLI takes a prefix; the API reads the whole ID). When unset, the ID of the node the other selectors found. With an ID, the other selectors set are conditions the node must meet.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 256), nodeID{}}},
			huNodeName: schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Name of the node to read. When unset, the name of the node found.",
				Validators:          name()},
			huNodePool: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Node pool the node must be in.", Validators: name()},
			huNodeClass: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Node class the node must have.", Validators: name()},
			huNamespace: schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Namespace of `job`. Defaults to the provider's `nomad.namespace`, then Nomad's default; set to the job's namespace after the read. `\"*\"` (Nomad's wildcard for lists), here or from the provider, is refused with a job.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 128)}},
			huJob: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Job whose allocations on the node are the workload. Unset: the whole node's usage and allocations.",
				Validators:          name()},
			huGroup: schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Task group of `job`; needed when the job has several. Set to the group read.",
				Validators:          append(name(), stringvalidator.AlsoRequires(path.MatchRoot(huJob)))},
			huReplicaCPU: schema.NumberAttribute{Optional: true,
				MarkdownDescription: "Expected CPU demand (MHz) of one replica, passed to the observation (the engine's rules apply: greater than 0). " +
					"Unset with a `job`: the task group's CPU request. Required without a `job`."},
			huReplicaMemory: schema.NumberAttribute{Optional: true,
				MarkdownDescription: "Expected memory demand (MB) of one replica, passed to the observation. Unset or 0 with a `job`: the task group's memory request."},
			huWantedReplicas: schema.NumberAttribute{Optional: true,
				MarkdownDescription: "Passed to the observation: how many replicas want to run on the host, the running ones included (0 or unset offers every slot). " +
					"For an observation used as `first`: `activation_container_counts` refuses a non-zero one as `second` (the second host's count takes no queue)."},
			huLabel: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Host label in the observation (its `host`); default the node's name."},
			huSamples: schema.NumberAttribute{Optional: true,
				MarkdownDescription: fmt.Sprintf("How many times to read the node (1 to %d; default %d, what `activation_container_counts` needs "+
					"by default: its `min_samples`). Each read is one usage sample. A Nomad client refreshes its stats every telemetry "+
					"`collection_interval` (1 s by default); a read that finds the refresh the read before found is made again, up to "+
					"`samples` + %d more reads, after which the read fails naming `sample_interval_seconds`.", maxHostUsageReads, engine.DefaultMinSamples, extraReads),
				Validators: []validator.Number{wholeBetween{1, maxHostUsageReads}}},
			huSampleInterval: schema.NumberAttribute{Optional: true,
				MarkdownDescription: fmt.Sprintf("Seconds between reads when `samples` > 1 (1 to %d; default 1). The plan waits `(samples - 1) x sample_interval_seconds`, more when reads are made again (see `samples`).", maxSampleInterval),
				Validators:          []validator.Number{wholeBetween{1, maxSampleInterval}}},
			huObservation: observationOutputAttribute("The host observation: capacity (node resources less reserved), the usage samples, " +
				"the requested resources and number of the running allocations, and the replica demand. Pass it as `first` or `second` of `activation_container_counts`."),
			huReadAt: schema.StringAttribute{Computed: true, MarkdownDescription: "When Nomad took the last read's stats (the median of the allocations' stats times with a `job`, the node's without; the read's own time when Nomad gives none), RFC 3339."},
			huSchedulable: schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether Nomad places new allocations on the node at the last read: " +
				"ready, not draining, eligible for scheduling. A node that is not still gives its usage (a down one is an error), and the read warns: " +
				"counts computed from this observation above its running replicas will not be placed there. Test it in a precondition or a `check` " +
				"block, or leave the node out of a `for_each` (`node_state` says why)."},
			huNodeState: schema.StringAttribute{Computed: true, MarkdownDescription: "Why Nomad places nothing new on the node at the last read " +
				"(`\"is draining\"`, `\"is ineligible for scheduling\"`, both joined by `and`); `\"\"` when it is `schedulable`."},
			huWarmup: schema.StringAttribute{Optional: true,
				MarkdownDescription: "With a `job`: a running allocation younger than this (from its tasks' latest start), or whose stats " +
					"show no CPU ticks yet, is *warming*: it is counted in the observation's `warming_replicas` and its usage is left out " +
					"of the sample while any allocation is warm, so the engine counts it at the warm replicas' usage (or, when none is warm, " +
					"at the larger of its peak usage and its requested resources), never at zero. A Go duration >= 0, such as `\"90s\"`; default `\"" + strings.TrimSuffix(defaultWarmup.String(), "0s") +
					"\"`, the `activation-quota` strategy's; `\"0s\"` turns the rule off (every running allocation counts as warm, " +
					"whatever its usage, except one whose stats carry no measurement yet: Nomad's zeroed stats with no time, before the " +
					"client's first collection). Instances with the same `warmup` share one reader.",
				Validators: []validator.String{durationValidator(), stringvalidator.AlsoRequires(path.MatchRoot(huJob))}},
		},
		Blocks: map[string]schema.Block{huTimeouts: timeoutsBlock(ctx)},
	}
}

func (d *hostUsageDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.AtLeastOneOf(path.MatchRoot(huNodeID), path.MatchRoot(huNodeName), path.MatchRoot(huNodePool), path.MatchRoot(huNodeClass)),
	}
}

// ValidateConfig: without a job there is no task group to take the replica
// demand from, so it must be given (presence, not a range); and a read
// timeout that leaves the read no time is refused as soon as it and the
// sampling are known, not when the plan reads.
func (d *hostUsageDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m hostUsageModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Job.IsNull() && m.ReplicaCPUDemandMHz.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root(huReplicaCPU), "Replica demand needed",
			"Attribute replica_cpu_demand_mhz must be set when no job is named: the demand of one replica is otherwise taken from the job's task group.")
	}
	// The values the observation takes, as far as they are known (the
	// read checks them again).
	m.checkValues(&nomadusage.Query{}, &resp.Diagnostics)
	// (samples or sample_interval_seconds out of range: their validators
	// say so, and the waits mean nothing)
	if rp, diags, known := m.readPlan(ctx); known && rp.samples >= 1 && rp.samples <= maxHostUsageReads &&
		rp.interval >= 1 && rp.interval <= maxSampleInterval {
		resp.Diagnostics.Append(diags...)
	}
}

func (d *hostUsageDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if pd := configureData(req, resp); pd != nil {
		d.data = pd
	}
}

// passThrough are the attributes the data source copies into the
// observation, by the observation's field names.
var passThrough = map[string]string{
	obsReplicaCPUDemandMHz:   huReplicaCPU,
	obsReplicaMemoryDemandMB: huReplicaMemory,
	obsWantedReplicas:        huWantedReplicas,
	obsHost:                  huLabel,
}

// query builds the usage query; values that do not fit the engine's types
// are diagnostics on their attribute.
func (m *hostUsageModel) query(defaultNamespace string, diags *diag.Diagnostics) (nomadusage.Query, bool) {
	q := nomadusage.Query{
		Host: nomadusage.HostSelector{
			NodeID: m.NodeID.ValueString(), Name: m.NodeName.ValueString(),
			Pool: m.NodePool.ValueString(), Class: m.NodeClass.ValueString(),
		},
		Namespace: m.Namespace.ValueString(),
		Job:       m.Job.ValueString(),
		Group:     m.Group.ValueString(),
		Label:     m.Label.ValueString(),
	}
	// "*" is the wildcard of Nomad's list requests; a job lives in one
	// namespace, and Nomad would look for it in one named "*".
	switch {
	case q.Job == "" || (q.Namespace != "*" && (q.Namespace != "" || defaultNamespace != "*")):
	case q.Namespace == "*":
		diags.AddAttributeError(path.Root(huNamespace), "Invalid value",
			attributeDetail(path.Root(huNamespace), `is "*", the wildcard of Nomad's list requests: a job lives in one namespace, so Nomad would look for it in a namespace named "*"; name the job's namespace`))
	default:
		diags.AddAttributeError(path.Root(huNamespace), "Invalid value",
			`The provider's namespace (the nomad block's namespace, else NOMAD_NAMESPACE) is "*", the wildcard of Nomad's list requests: a job lives in one namespace, so Nomad would look for it in a namespace named "*". Set namespace on this data source to the job's.`)
	}
	if q.Namespace == "" {
		q.Namespace = defaultNamespace
	}
	ok := m.checkValues(&q, diags)
	return q, ok && !diags.HasError()
}

// checkValues reads the values passed to the observation into q and
// checks them against the engine's rules, naming the attribute: at
// ValidateConfig for those known then (a read put off to apply, its node
// known only then, would otherwise refuse them after other resources were
// created), and again before a read asks Nomad anything. An unknown or
// null value is not checked.
func (m *hostUsageModel) checkValues(q *nomadusage.Query, diags *diag.Diagnostics) bool {
	var why string
	ok := true
	if q.ReplicaCPUDemandMHz, why = figure(m.ReplicaCPUDemandMHz); why != "" {
		diags.AddAttributeError(path.Root(huReplicaCPU), "Invalid value", attributeDetail(path.Root(huReplicaCPU), why))
		ok = false
	}
	if q.ReplicaMemoryDemandMB, why = figure(m.ReplicaMemoryDemandMB); why != "" {
		diags.AddAttributeError(path.Root(huReplicaMemory), "Invalid value", attributeDetail(path.Root(huReplicaMemory), why))
		ok = false
	}
	if q.WantedReplicas, why = count(m.WantedReplicas); why != "" {
		diags.AddAttributeError(path.Root(huWantedReplicas), "Invalid value", attributeDetail(path.Root(huWantedReplicas), why))
		ok = false
	}
	if !ok {
		return false
	}
	// A probe observation with the largest capacity the engine accepts,
	// so that only these values' own rules can fail.
	probe := engine.Observation{
		Host: m.Label.ValueString(), CPUCapacityMHz: engine.MaxResource, MemoryCapacityMB: engine.MaxResource,
		Samples:             []engine.Sample{{}},
		ReplicaCPUDemandMHz: q.ReplicaCPUDemandMHz, ReplicaMemoryDemandMB: q.ReplicaMemoryDemandMB, WantedReplicas: q.WantedReplicas,
	}
	if m.ReplicaCPUDemandMHz.IsNull() || m.ReplicaCPUDemandMHz.IsUnknown() {
		probe.ReplicaCPUDemandMHz = 1 // taken from the task group, or not known yet
	}
	if err := probe.Validate("activation_host_usage"); err != nil {
		addObservationError(diags, err)
		return false
	}
	return true
}

// addObservationError reports each of an engine refusal's problems on the
// attribute its value came from, when it came from one.
func addObservationError(diags *diag.Diagnostics, err error) {
	for _, p := range engine.Problems(err) {
		if _, part, field, ok := engine.FieldOf(p); ok && part == engine.PartObservation {
			if a, ok := passThrough[field]; ok {
				diags.AddAttributeError(path.Root(a), "Invalid value", attributeDetail(path.Root(a), engine.Reason(p)))
				continue
			}
		}
		diags.AddError("The usage read is not an observation the engine accepts", p.Error())
	}
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

// readPlan is how a read proceeds: the samples asked, the seconds between
// reads, how many reads it may make and its timeout.
type readPlan struct {
	samples, interval, maxReads int64
	gap, timeout                time.Duration
}

// readPlan works out the read's plan from samples, sample_interval_seconds
// and timeouts.read, or says on timeouts.read why the read could never
// finish. known is false, with no diagnostic of its own, when a value it
// needs is not known yet (validate runs before every value is) or is not
// a whole number (its attribute's validator says why).
func (m *hostUsageModel) readPlan(ctx context.Context) (rp readPlan, diags diag.Diagnostics, known bool) {
	if m.Samples.IsUnknown() || m.SampleInterval.IsUnknown() || m.Timeouts.IsUnknown() {
		return rp, nil, false
	}
	if !m.Timeouts.IsNull() {
		if read, ok := m.Timeouts.Attributes()["read"]; ok && read.IsUnknown() {
			return rp, nil, false
		}
	}
	rp.samples, rp.interval = int64(engine.DefaultMinSamples), int64(1)
	for _, a := range []struct {
		v   types.Number
		dst *int64
	}{{m.Samples, &rp.samples}, {m.SampleInterval, &rp.interval}} {
		if a.v.IsNull() {
			continue
		}
		n, why := whole(a.v)
		if why != "" {
			return rp, nil, false
		}
		*a.dst = n
	}
	rp.gap = time.Duration(rp.interval) * time.Second
	waits := time.Duration(rp.samples-1) * rp.gap
	// A Nomad client refreshes the stats it serves every telemetry
	// collection_interval (1 s by default), and a sample is stamped with
	// that refresh's time: a read that finds the same refresh as the one
	// before replaces it in the window. Such reads are made again, up to
	// maxReads in all, so that the window holds samples distinct samples;
	// the default timeout covers their waits.
	rp.maxReads = 2*rp.samples + extraReads
	def := defaultReadTimeout + time.Duration(rp.maxReads-1)*rp.gap
	rp.timeout, diags = m.Timeouts.Read(ctx, def)
	if diags.HasError() {
		return rp, diags, false
	}
	if rp.timeout <= 0 {
		diags.AddAttributeError(path.Root(huTimeouts).AtName("read"), "Invalid read timeout",
			fmt.Sprintf("Attribute timeouts.read is %s: it must be a positive duration, such as \"3m\" (unset, the default is %s).",
				rp.timeout, def))
		return rp, diags, true
	}
	if rp.timeout <= waits {
		diags.AddAttributeError(path.Root(huTimeouts).AtName("read"), "Read timeout too short",
			fmt.Sprintf("Attribute timeouts.read is %s, no longer than the waits between samples (%d x %ds = %s): the read could never finish.",
				rp.timeout, rp.samples-1, rp.interval, waits))
	}
	return rp, diags, true
}

func (d *hostUsageDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m hostUsageModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.data == nil || d.data.Nomad == nil {
		resp.Diagnostics.AddError("Provider not configured", "activation_host_usage needs the activation provider's configuration; this is a bug in the provider.")
		return
	}
	rp, diags, known := m.readPlan(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !known {
		resp.Diagnostics.AddError("Read plan unknown", "activation_host_usage read samples, sample_interval_seconds or timeouts.read unknown or not whole after validation; this is a bug in the provider.")
		return
	}
	samples, interval, gap, maxReads, timeout := rp.samples, rp.interval, rp.gap, rp.maxReads, rp.timeout
	warmup := defaultWarmup
	if !m.Warmup.IsNull() {
		warmup, _ = time.ParseDuration(m.Warmup.ValueString()) // the validator has checked it
	}
	conn, reader, err := d.data.Nomad.get(readerOptions(warmup))
	if err != nil {
		// The provider's settings are not this data source's attributes:
		// the message names the provider's attribute.
		resp.Diagnostics.AddError("Cannot use the Nomad settings", sentence(err.Error()))
		return
	}
	q, ok := m.query(conn.Namespace(), &resp.Diagnostics)
	if !ok {
		return
	}
	scope := readScope(q)
	if u, down := d.data.Nomad.recentlyUnanswered(scope, time.Now()); down {
		// A plan over many nodes reads them in batches of -parallelism:
		// against an address that does not answer, each batch waited the
		// request timeout again (a trial: 151 s and 48 errors for 48
		// nodes). The first batch's wait is the plan's.
		// A job's request stops only that job's reads (see
		// nomadConnection.unanswered): the message says which.
		forJob, others, ofJob, still, check := "", "others", "", "", "the address"
		if u.scope != "" {
			forJob = fmt.Sprintf(" for job %q in namespace %q", q.Job, cmp.Or(q.Namespace, api.DefaultNamespace))
			others, ofJob, still = "other reads of that job", " of that job", "Reads of other jobs are still tried. "
			check = "the job's size (its allocation list grows with it), the servers' load"
		}
		resp.Diagnostics.AddError("Nomad did not answer an earlier read", fmt.Sprintf(
			"Nomad at %s did not answer a request%s of another activation_host_usage read of this provider instance in time (it timed out %s ago): %s. "+
				"This read was not tried, nor will %s be for a minute after that request (unless a read%s already under way succeeds), so that a plan over many nodes "+
				"fails in one request timeout, not one per batch of -parallelism reads. %sCheck %s, the network and that Nomad is up, then run again.",
			nomadAddressText(conn, d.data.Nomad.source()), forJob, time.Since(u.at).Round(100*time.Millisecond), u.msg, others, ofJob, still, check))
		return
	}
	window, err := nomadusage.NewWindow(int(samples), time.Duration(maxReads)*gap+time.Minute)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root(huSamples), "Invalid usage window", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last *nomadusage.Reading
	unmeasured := 0 // the most allocations of one read whose memory Nomad did not measure
	for i := int64(0); int64(window.Len()) < samples; i++ {
		if i == maxReads {
			resp.Diagnostics.AddAttributeError(path.Root(huSampleInterval), "Too few distinct usage samples", fmt.Sprintf(
				"Attribute sample_interval_seconds: %d reads %ds apart gave %d distinct usage samples of the %d asked (samples): Nomad's client "+
					"stats kept the same time (or fell back a little: other allocations' stats). The node's client refreshes its stats every telemetry collection_interval; "+
					"set sample_interval_seconds to at least that interval.", i, interval, window.Len(), samples))
			return
		}
		if i > 0 {
			if err := sleepCtx(ctx, gap); err != nil {
				if !errors.Is(err, context.DeadlineExceeded) {
					resp.Diagnostics.AddError("Reading the host's usage was interrupted", fmt.Sprintf(
						"activation_host_usage was interrupted waiting between samples, after %d reads, with %d of the %d distinct samples asked.",
						i, window.Len(), samples))
					return
				}
				resp.Diagnostics.AddError("Reading the host's usage timed out", fmt.Sprintf(
					"activation_host_usage did not finish within its read timeout (timeouts.read, %s): it timed out waiting between samples, "+
						"after %d reads, with %d of the %d distinct samples asked.", timeout, i, window.Len(), samples))
				return
			}
		}
		tflog.Trace(ctx, "activation_host_usage: reading", map[string]any{
			"address": conn.Address(), "selector": q.Host.String(), "job": q.Job, "group": q.Group, "read": i + 1, "samples": window.Len(), "of": samples,
		})
		started := time.Now()
		rd, err := reader.Read(ctx, q)
		if err != nil && transientRead(err) && sleepCtx(ctx, gap) == nil {
			// One failed read among the many of a plan (a 5xx, a stats
			// read that failed) is read once more before the
			// plan fails: a user trial saw one 500 of 300 stats reads
			// fail a 48-node plan.
			tflog.Debug(ctx, "activation_host_usage: reading again after a transient failure", map[string]any{
				"selector": q.Host.String(), "error": conn.RedactString(err.Error()),
			})
			started = time.Now()
			rd, err = reader.Read(ctx, q)
		}
		if err != nil {
			if sc, ok := unansweredScope(ctx, err, scope); ok {
				d.data.Nomad.noteUnanswered(sc, conn.RedactString(err.Error()), started, time.Now())
			}
			addNomadError(ctx, &resp.Diagnostics, &m, conn, d.data.Nomad.source(), err, readProgress{min(i+1, samples), samples, timeout})
			return
		}
		d.data.Nomad.noteAnswered(scope, time.Now())
		unmeasured = max(unmeasured, rd.MemoryUnmeasured)
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
	if err := obs.Validate("activation_host_usage"); err != nil {
		addObservationError(&resp.Diagnostics, err)
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
	why := last.Node.Why()
	m.Schedulable, m.NodeState = types.BoolValue(why == ""), types.StringValue(why)
	if unmeasured > 0 {
		resp.Diagnostics.AddWarning(fmt.Sprintf("Nomad measured no memory use of %d allocation(s) on node %s", unmeasured, last.NodeName), fmt.Sprintf(
			"The stats of %d running allocation(s) of group %q on node %s carry no memory use (no memory stats, or RSS and Usage both 0: a task driver that measures none). "+
				"No evidence is not low usage: each is counted at its memory reservation, so the counts leave that room and memory is judged by the reservations, not by real use.",
			unmeasured, last.Group, last.NodeName))
	}
	if why != "" {
		// The strategy holds such a node's count; a plan has only this
		// to go on (a user trial: a drained node planned a full count).
		resp.Diagnostics.AddWarning("Nomad places nothing new on node "+last.NodeName, fmt.Sprintf(
			"Node %s (%s) %s: Nomad places no new allocation on it, so a count computed from this observation above its %d running replica(s) will not be placed there. "+
				"Test schedulable in a precondition or a check block, or leave the node out.", last.NodeName, last.NodeID, why, obs.RunningReplicas))
	}
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

// nomadAddressText is the connection's address for a message, saying when
// it is Nomad's default.
func nomadAddressText(conn *nomadconn.Conn, src nomadSource) string {
	if src.defaultAddress {
		return conn.Address() + " (Nomad's default address: the provider's nomad.address is unset, and NOMAD_ADDR unset or ignored)"
	}
	return conn.Address()
}

// requestTimedOut says whether err is one request to Nomad that timed out
// (the request timeout), not the read's own deadline (timeouts.read) nor
// its cancellation.
func requestTimedOut(ctx context.Context, err error) bool {
	var netErr net.Error
	return ctx.Err() == nil && errors.As(err, &netErr) && netErr.Timeout()
}

// readScope is the scope of q's requests that a request Nomad did not
// answer stops (see nomadConnection.unanswered): its job's, or every
// read's without a job.
func readScope(q nomadusage.Query) string {
	if q.Job == "" {
		return ""
	}
	return cmp.Or(q.Namespace, api.DefaultNamespace) + "\x00" + q.Job
}

// unansweredScope says whether err, from a read in scope, is a request to
// Nomad's servers that got no answer within the request timeout, and
// which reads it stops: the read's scope for a request for its job
// (/v1/job/...), every read's ("") for the others. A request timeout is
// the HTTP client's error (a *url.Error: it failed before the answer's
// headers), not the read's own deadline (timeouts.read) nor its
// cancellation, nor a timeout while reading an answer that came. A
// request the servers pass on to a client node (/v1/client/...: an
// allocation's or a node's stats) does not count, since one node that
// does not answer says nothing of the others; nor does one node's
// allocation list.
func unansweredScope(ctx context.Context, err error, scope string) (string, bool) {
	var ue *url.Error
	if !requestTimedOut(ctx, err) || !errors.As(err, &ue) {
		return "", false
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil || strings.Contains(u.Path, "/v1/client/") { // (an address may have a path before /v1)
		return "", false
	}
	if strings.Contains(u.Path, "/v1/node/") && strings.HasSuffix(u.Path, "/allocations") {
		// One node's allocation list, which grows with the node's
		// allocations: it says nothing of the other nodes' (a trial with
		// -parallelism=1 saw one hung node's list refuse the reads of 27
		// others), and a Nomad that answers nothing fails the node's own
		// read (its node list, the node) first.
		return "", false
	}
	if strings.Contains(u.Path, "/v1/job/") {
		return scope, true
	}
	return "", true
}

// readProgress is where a read was when it failed.
type readProgress struct {
	read, of int64
	timeout  time.Duration
}

// addNomadError turns a usage read error into a diagnostic on the
// attribute at fault, or a general one saying what Nomad answered. The
// attribute comes from the error's nomadusage sentinel and from which
// attributes m sets, never from the error's text. Errors come from the
// connection redacted (nomadconn); the address shown is conn.Address(),
// without user information, and says when it is Nomad's default. src says
// where the settings came from: a 403 names the token's source.
func addNomadError(ctx context.Context, diags *diag.Diagnostics, m *hostUsageModel, conn *nomadconn.Conn, src nomadSource, err error, at readProgress) {
	msg := conn.RedactString(err.Error())
	addr := nomadAddressText(conn, src)
	tokenFrom := src.token
	jobSet := !m.Job.IsNull()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		diags.AddError("Reading the host's usage timed out", fmt.Sprintf(
			"activation_host_usage did not finish within its read timeout (timeouts.read, %s), during read %d of %d. The call to Nomad at %s that timed out: %s.",
			at.timeout, at.read, at.of, addr, msg))
	case ctx.Err() != nil:
		diags.AddError("Reading the host's usage was interrupted", fmt.Sprintf("During read %d of %d from Nomad at %s: %s.", at.read, at.of, addr, msg))
	case requestTimedOut(ctx, err):
		diags.AddError("A request to Nomad timed out", fmt.Sprintf(
			"Nomad at %s did not answer in time (%s per request), during read %d of %d. The call that timed out: %s.",
			addr, nomadconn.DefaultRequestTimeout, at.read, at.of, msg))
	case errors.Is(err, nomadusage.ErrNodeNotReady):
		p := m.selectorPath()
		diags.AddAttributeError(p, "The host is not ready", fmt.Sprintf("Attribute %s: %s. A node that is down or initializing has no usage to read.", p, msg))
	case errors.Is(err, nomadusage.ErrNodeNotFound), errors.Is(err, nomadusage.ErrAmbiguous), errors.Is(err, nomadusage.ErrNoSelector):
		p := m.selectorPath()
		diags.AddAttributeError(p, "Cannot find the host", fmt.Sprintf("Attribute %s: %s.", p, msg))
	case errors.Is(err, nomadusage.ErrJobNotFound):
		p := path.Root(huJob)
		if !nomadconn.IsStatus(err, http.StatusNotFound) && !m.Group.IsNull() {
			p = path.Root(huGroup) // the job exists, the group does not
		}
		diags.AddAttributeError(p, "Cannot find the workload", fmt.Sprintf("Attribute %s: %s.", p, msg))
	case errors.Is(err, nomadusage.ErrBadQuery) && jobSet && m.Group.IsNull():
		// The values this data source passes are checked before the read
		// and the schema rules out every other bad query: with a job and no
		// group, the job has several groups to choose from.
		diags.AddAttributeError(path.Root(huGroup), "Task group needed", fmt.Sprintf("Attribute %s: %s.", huGroup, msg))
	case errors.Is(err, nomadusage.ErrBadQuery):
		diags.AddError("Invalid usage query", msg)
	case errors.Is(err, nomadusage.ErrNoCPURequest) && jobSet && m.ReplicaCPUDemandMHz.IsNull():
		// The demand was to come from the task group's CPU request.
		diags.AddAttributeError(path.Root(huReplicaCPU), "Nomad did not report everything the read needs",
			fmt.Sprintf("Attribute %s is unset, so the demand of one replica comes from the task group's CPU request: %s. "+
				"If the task group requests no CPU, set %s.", huReplicaCPU, msg, huReplicaCPU))
	case errors.Is(err, nomadusage.ErrMissingData):
		diags.AddError("Nomad did not report everything the read needs", fmt.Sprintf("Nomad at %s: %s.", addr, msg))
	case nomadconn.IsStatus(err, http.StatusForbidden):
		token := "no ACL token was sent, and this Nomad needs one: set the provider's nomad.token (or NOMAD_TOKEN, unless ignore_env_vars names it)"
		if tokenFrom != "" {
			token = "the ACL token in " + tokenFrom + " is unknown to Nomad, expired, or may not read nodes and allocations"
		}
		diags.AddError("Nomad refused the request",
			fmt.Sprintf("Nomad at %s answered 403 (permission denied): %s. %s", addr, token, msg))
	case errors.Is(err, nomadconn.ErrNotNomad):
		diags.AddError("The Nomad address may not be Nomad's API",
			fmt.Sprintf("%s. Check the provider's nomad.address (or NOMAD_ADDR, unless ignore_env_vars names it).", msg))
	case statusOf(err) != 0:
		diags.AddError("Nomad answered with an error",
			fmt.Sprintf("Nomad at %s answered HTTP %d while reading the host's usage: %s", addr, statusOf(err), msg))
	default:
		diags.AddError("Cannot read the host's usage from Nomad", fmt.Sprintf("Nomad at %s: %s", addr, msg))
	}
}

// statusOf is the HTTP status of a Nomad API answer err carries, or 0.
func statusOf(err error) int {
	var ue api.UnexpectedResponseError
	if errors.As(err, &ue) && ue.HasStatusCode() {
		return ue.StatusCode()
	}
	return 0
}

// readerOptions are the usage reader's options for a warm-up. A plan reads
// once: every allocation of the group on the node, no sample (the strategy
// samples; see nomadusage.Options.StatsSample).
func readerOptions(warmup time.Duration) nomadusage.Options {
	return nomadusage.Options{Warmup: warmup, StatsSample: nomadusage.MaxStatsSample}
}

// transientRead says whether a failed read may succeed if made again at
// once: Nomad answered 5xx, or too few allocations' stats answered. Not a
// timeout (a server that does not answer would double the wait), nor
// anything the configuration or the cluster's state causes.
func transientRead(err error) bool {
	if errors.Is(err, nomadusage.ErrTooFewAnswered) {
		// Too few answered because a request timed out (the first
		// failure the error carries): a client node that does not
		// answer, which reading again would wait for twice (a trial:
		// 61 s for one node's read whose stats all hang).
		var ne net.Error
		return !errors.As(err, &ne) || !ne.Timeout()
	}
	var ue api.UnexpectedResponseError
	return errors.As(err, &ue) && ue.HasStatusCode() && ue.StatusCode() >= 500
}
