// Package provider is the Terraform/OpenTofu provider `activation`: data
// sources that compute the first and second host's container counts with the
// activation engine, describe a model, and read a Nomad node's real usage.
// Every data source is a thin adapter: it builds the engine's input from the
// configuration, makes one engine call and maps the answer back.
package provider

import (
	"context"
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// TypeName is the provider's type name: the prefix of every data source.
const TypeName = "activation"

// Address is the provider's address in the Terraform registry, the name it
// serves under. A configuration names it by its source,
// activation-scheduler/activation, which each CLI resolves on its own
// default registry: Terraform to Address, OpenTofu to OpenTofuAddress.
const Address = "registry.terraform.io/activation-scheduler/activation"

// OpenTofuAddress is the provider's address as OpenTofu resolves its source.
const OpenTofuAddress = "registry.opentofu.org/activation-scheduler/activation"

var (
	_ provider.Provider                   = (*activationProvider)(nil)
	_ provider.ProviderWithValidateConfig = (*activationProvider)(nil)
	_ provider.ProviderWithFunctions      = (*activationProvider)(nil)
)

// New returns a constructor of the provider at version. Its nomad block
// falls back to the process's NOMAD_* environment variables.
func New(version string) func() provider.Provider {
	return newWithEnv(version, os.LookupEnv)
}

// newWithEnv is New with the environment the nomad block falls back to
// given by getenv (tests give the stand-in an environment without NOMAD_*).
func newWithEnv(version string, getenv func(string) (string, bool)) func() provider.Provider {
	return func() provider.Provider { return &activationProvider{version: version, getenv: getenv} }
}

type activationProvider struct {
	version string
	// getenv reads the NOMAD_* fallbacks of the nomad block.
	getenv func(string) (string, bool)
}

// providerModel is the provider's configuration.
type providerModel struct {
	DefaultFirstModel  types.String `tfsdk:"default_first_model"`
	DefaultSecondModel types.String `tfsdk:"default_second_model"`
	Nomad              *nomadModel  `tfsdk:"nomad"`
}

// Attribute names of the provider.
const (
	attrDefaultFirstModel  = "default_first_model"
	attrDefaultSecondModel = "default_second_model"
)

// providerData is what Configure hands to every data source.
type providerData struct {
	// DefaultFirstModel and DefaultSecondModel are the model sources used
	// when a data source names none, as configured: null means the
	// engine's built-ins, unknown a value computed during apply (an error
	// only for the data sources that use it).
	DefaultFirstModel  types.String
	DefaultSecondModel types.String
	// Nomad is the provider instance's one connection to Nomad (block then
	// NOMAD_* fallbacks), made on first use and shared by every
	// activation_host_usage.
	Nomad *nomadConnection
}

func (p *activationProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = TypeName
	resp.Version = p.version
}

func (p *activationProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Computes how many containers a **first host** and a **second host** run with the " +
			"activation method: the first host's count is the activated-branch amount at the input layer of an " +
			"admission processor, the second host's the amount at the output layer of a capacity processor, both " +
			"read from real usage rather than from the sum of requested resources. The counts are known at `plan` " +
			"time and match the Nomad Autoscaler plugins' for the same observations.\n\n" +
			"All configuration is optional. The `nomad` block is only needed by `activation_host_usage`.\n\n" +
			"## Operating mode with Nomad: reserve by real usage, gate the count by the activation engine\n\n" +
			"Nomad places an allocation on a node only while the sum of the *reservations* (the tasks' `resources`) of " +
			"everything there fits the node's allocatable resources. A count computed from real usage is therefore only " +
			"useful if its reservations fit too. Each host decision of `activation_container_counts` carries a `placement`: " +
			"`cpu_mhz` and `memory_mb` form a per-replica reservation, never above today's (unless today's is below Nomad's smallest), " +
			"and `memory_max_mb` a hard memory limit at least the replica's observed peak, with which the " +
			"decided count fits the host's allocatable resources less what other workloads reserve there " +
			"(`other_reserved_cpu_mhz`, `other_reserved_memory_mb`). Render them with the count into the task's `resources` " +
			"(see `examples/demo`): the reservation follows real usage, and the activation engine decides how many replicas run. " +
			"With `queued_replicas` (new replicas each with its own demand), the first `placement.queued` of the count are queue " +
			"entries, which keep their own demands as reservations; the placement's reservation is for the other " +
			"`containers - queued`, the running workload's replicas. " +
			"`placement.fits` says whether that reservation places the whole count: it is false only when even Nomad's smallest " +
			fmt.Sprintf("reservation (%d MHz, %d MB per replica), with the queued entries at their demands, exceeds what the host has left; ", engine.MinReservationCPUMHz, engine.MinReservationMemoryMB) +
			"the rest would stay queued, so lower the quota's `max` or make room.\n\n" +
			"`memory_max_mb` is the hard memory limit (`memory_max`): at least the replica's observed memory peak, so a " +
			"smaller reservation never caps what a replica really uses. Nomad honours `memory_max` only with memory " +
			"oversubscription enabled (`nomad operator scheduler set-config -memory-oversubscription=true`, or " +
			"`default_scheduler_config { memory_oversubscription_enabled = true }` in the server's configuration). Without " +
			"it Nomad ignores `memory_max` and `memory` is the hard limit: reserve `memory_max_mb` as `memory` instead, and the " +
			"count then fits only while count x `memory_max_mb` <= `placement.free_memory_mb`. " +
			"`placement.placeable` says how many replicas Nomad could place at today's reservations. (`placement.queued` counts " +
			"queue entries within the decided count; the strategy plugin's `activation.<host>.queued` meta is another figure: the " +
			"replicas Nomad would leave pending.)\n\n" +
			"## Time scale\n\n" +
			"The built-in models count samples, not seconds: they were trained on windows of 120 samples spaced one minute " +
			"(Crane) and five minutes (PlanetLab), to keep a count safe over the next 5 samples, and the figures of " +
			"`docs/benchmarks.md` are for that scale. `activation_host_usage` reads a few samples seconds apart (`samples`, " +
			"`sample_interval_seconds`): a snapshot, enough for the rules that keep a count safe (warming replicas, memory, " +
			"placement) but not the window the benchmark measured. For decisions at that scale pass `usage_samples` from your " +
			"monitoring, one sample a minute over up to two hours, or a model trained on your own series (`activation train`).",
		Attributes: map[string]schema.Attribute{
			attrDefaultFirstModel: schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Model source for the first host (admission processor) when a data source names none: " +
					"`builtin:<name>` or the path of a model file (a relative path is read from the directory OpenTofu runs in, the root module's: in a child module write `${path.module}/...`). Defaults to `" + engine.DefaultFirstModel + "`. A value known only " +
					"after apply is an error for the data sources that use it, not for the others.",
				Validators: modelSourceValidators(),
			},
			attrDefaultSecondModel: schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Model source for the second host (capacity processor) when a data source names none: " +
					"`builtin:<name>` or the path of a model file (a relative path is read from the directory OpenTofu runs in, the root module's: in a child module write `${path.module}/...`). Defaults to `" + engine.DefaultSecondModel + "`. A value known only " +
					"after apply is an error for the data sources that use it, not for the others.",
				Validators: modelSourceValidators(),
			},
		},
		Blocks: map[string]schema.Block{
			attrNomad: nomadBlockSchema(),
		},
	}
}

// ValidateConfig checks what the nomad block's attributes cannot check one
// by one: the client certificate and its key, as they resolve with the
// environment (see nomadConnection.clientPair). A pair wrong in the
// environment alone is no error of the configuration: it is reported when
// activation_host_usage uses the connection, so that a configuration
// without it is not refused for the environment's sake.
func (p *activationProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	var n *nomadModel
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(attrNomad), &n)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := newNomadConnection(ctx, n, p.getenv).clientPair(); err != nil && !noPath(err.path) {
		addValueError(&resp.Diagnostics, err)
	}
}

func (p *activationProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	data := &providerData{DefaultFirstModel: cfg.DefaultFirstModel, DefaultSecondModel: cfg.DefaultSecondModel}
	data.Nomad = newNomadConnection(ctx, cfg.Nomad, p.getenv)
	fields := data.Nomad.logFields()
	fields[attrDefaultFirstModel] = data.DefaultFirstModel.String()
	fields[attrDefaultSecondModel] = data.DefaultSecondModel.String()
	tflog.Debug(ctx, "activation provider configured", fields)
	resp.DataSourceData = data
	resp.ResourceData = data
}

func (p *activationProvider) Resources(context.Context) []func() resource.Resource { return nil }

func (p *activationProvider) Functions(context.Context) []func() function.Function {
	return []func() function.Function{NewContainerCountsFunction}
}

func (p *activationProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewContainerCountsDataSource,
		NewModelDataSource,
		NewHostUsageDataSource,
	}
}

// configureData extracts the provider's data in a data source's Configure.
func configureData(req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) *providerData {
	if req.ProviderData == nil {
		return nil // not configured yet (validation)
	}
	d, ok := req.ProviderData.(*providerData)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data",
			"The activation provider handed this data source something other than its own configuration; this is a bug in the provider.")
		return nil
	}
	return d
}
