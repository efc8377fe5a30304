package provider

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

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

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// Attribute names of activation_container_counts.
const (
	attrFirst            = "first"
	attrSecond           = "second"
	attrFirstModel       = "first_model"
	attrSecondModel      = "second_model"
	attrFirstQuota       = "first_quota"
	attrSecondQuota      = "second_quota"
	attrFirstContainers  = "first_containers"
	attrSecondContainers = "second_containers"
	attrFirstDecision    = "first_decision"
	attrSecondDecision   = "second_decision"
	attrExplanation      = "explanation"

	quotaMin       = "min"
	quotaMax       = "max"
	quotaPerBranch = "per_branch"
	quotaRounding  = "rounding"
)

var (
	_ datasource.DataSource                   = (*containerCountsDataSource)(nil)
	_ datasource.DataSourceWithConfigure      = (*containerCountsDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig = (*containerCountsDataSource)(nil)
)

// NewContainerCountsDataSource is activation_container_counts.
func NewContainerCountsDataSource() datasource.DataSource { return &containerCountsDataSource{} }

type containerCountsDataSource struct {
	data *providerData
}

// Attribute names of a host decision.
const (
	decRole        = "role"
	decHost        = "host"
	decLayer       = "layer"
	decContainers  = "containers"
	decAmount      = "amount"
	decUnclamped   = "unclamped"
	decClamped     = "clamped"
	decBranchTotal = "branch_total"
	decQuota       = "quota"
	decModelName   = "model_name"
	decModelDigest = "model_digest"
	decActivated   = "activated"
	decStrongest   = "strongest_branches"
	decReason      = "reason"
)

func (d *containerCountsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_container_counts"
}

func quotaInputAttribute(role string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Quota that turns the " + role + " host's activated-branch amount into its container count: " +
			"`clamp(min, max, rounding(amount x per_branch))`. Unset: one container per activated branch, from 0 to the model's number of countable slots.",
		Attributes: map[string]schema.Attribute{
			quotaMin: schema.Int64Attribute{Optional: true,
				MarkdownDescription: fmt.Sprintf("Fewest containers; default 0. At most %d and at most `max`.", engine.MaxQuotaCount),
				Validators:          []validator.Int64{int64validator.Between(0, engine.MaxQuotaCount)}},
			quotaMax: schema.Int64Attribute{Required: true,
				MarkdownDescription: fmt.Sprintf("Most containers; from 0 to %d, and at least `min`.", engine.MaxQuotaCount),
				Validators:          []validator.Int64{int64validator.Between(0, engine.MaxQuotaCount)}},
			quotaPerBranch: schema.Float64Attribute{Optional: true,
				MarkdownDescription: fmt.Sprintf("Containers per activated branch; default 1. Greater than 0, at most %d.", engine.MaxPerBranch),
				Validators:          []validator.Float64{greaterThan(0), float64validator.AtMost(engine.MaxPerBranch)}},
			quotaRounding: schema.StringAttribute{Optional: true,
				MarkdownDescription: "How `amount x per_branch` becomes a whole number: `nearest` (default, half away from zero), `floor` or `ceil`.",
				Validators:          []validator.String{stringvalidator.OneOf(engine.RoundNearest, engine.RoundFloor, engine.RoundCeil)}},
		},
	}
}

func decisionOutputAttribute(role, layer, amountName string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Computed:            true,
		MarkdownDescription: "How the " + role + " host's count came about.",
		Attributes: map[string]schema.Attribute{
			decRole:       schema.StringAttribute{Computed: true, MarkdownDescription: "`" + role + "`."},
			decHost:       schema.StringAttribute{Computed: true, MarkdownDescription: "The observation's host label, if any."},
			decLayer:      schema.StringAttribute{Computed: true, MarkdownDescription: "Layer the amount is read at: `" + layer + "`."},
			decContainers: schema.Int64Attribute{Computed: true, MarkdownDescription: "The container count, within the quota's `[min, max]`."},
			decAmount: schema.Int64Attribute{Computed: true, MarkdownDescription: "The activated-branch amount `" + amountName +
				"`: the number of countable " + layer + " nodes on at least one activated branch."},
			decUnclamped:   schema.Int64Attribute{Computed: true, MarkdownDescription: "`rounding(amount x per_branch)` before the clamp to `[min, max]`."},
			decClamped:     schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the clamp to `[min, max]` changed the count."},
			decBranchTotal: schema.StringAttribute{Computed: true, MarkdownDescription: "Exact number of activated branches (input-to-output paths), in decimal: it may exceed 64 bits."},
			decQuota: schema.SingleNestedAttribute{Computed: true, MarkdownDescription: "The quota applied, defaults filled in.",
				Attributes: map[string]schema.Attribute{
					quotaMin:       schema.Int64Attribute{Computed: true, MarkdownDescription: "Fewest containers."},
					quotaMax:       schema.Int64Attribute{Computed: true, MarkdownDescription: "Most containers."},
					quotaPerBranch: schema.Float64Attribute{Computed: true, MarkdownDescription: "Containers per activated branch."},
					quotaRounding:  schema.StringAttribute{Computed: true, MarkdownDescription: "Rounding rule."},
				}},
			decModelName:   schema.StringAttribute{Computed: true, MarkdownDescription: "Name of the model that decided."},
			decModelDigest: schema.StringAttribute{Computed: true, MarkdownDescription: "`sha256:` digest of the model's canonical form; pin it to notice a model change."},
			decActivated:   schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Names of the countable nodes counted in `amount`."},
			decStrongest: schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "The strongest activated branches, each as node names from input to output joined by ` -> `."},
			decReason: schema.StringAttribute{Computed: true, MarkdownDescription: "One-line account of the count."},
		},
	}
}

func (d *containerCountsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Computes the first and second host's container counts from two host observations with the " +
			"activation engine, at `plan` time when the inputs are known.\n\n" +
			"The **first host**'s count is the activated-branch amount `A_in` at the input layer of the admission " +
			"processor (how many of the wanted replicas the model admits); the **second host**'s is the amount " +
			"`A_out` at the output layer of the capacity processor (how many replicas the host can safely run). " +
			"Each amount goes through its quota. The same inputs give the same decision as the Nomad Autoscaler " +
			"plugins and the command line.\n\n" +
			"When an input is unknown during `plan` (computed by a resource), the counts are unknown until apply.\n\n" +
			"`first` and `second` take any object with the observation's attributes, such as `jsondecode()` of an " +
			"observation file or `activation_host_usage`'s `observation`. Terraform converts the object to the " +
			"attribute's type and drops attributes the type does not have, so a misspelt optional attribute is " +
			"ignored rather than refused; a missing required one is an error.",
		Attributes: map[string]schema.Attribute{
			attrFirst:  observationInputAttribute("Observation of the first host (the one read at the admission processor's input layer)."),
			attrSecond: observationInputAttribute("Observation of the second host (the one read at the capacity processor's output layer)."),
			attrFirstModel: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Model source for the first host: `builtin:<name>` or the path of a model file. Defaults to the provider's `default_first_model`, then `" + engine.DefaultFirstModel + "`.",
				Validators:          modelSourceValidators()},
			attrSecondModel: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Model source for the second host: `builtin:<name>` or the path of a model file. Defaults to the provider's `default_second_model`, then `" + engine.DefaultSecondModel + "`.",
				Validators:          modelSourceValidators()},
			attrFirstQuota:       quotaInputAttribute("first"),
			attrSecondQuota:      quotaInputAttribute("second"),
			attrFirstContainers:  schema.Int64Attribute{Computed: true, MarkdownDescription: "The first host's container count (same as `first_decision.containers`)."},
			attrSecondContainers: schema.Int64Attribute{Computed: true, MarkdownDescription: "The second host's container count (same as `second_decision.containers`)."},
			attrFirstDecision:    decisionOutputAttribute("first", engine.LayerInput, "A_in"),
			attrSecondDecision:   decisionOutputAttribute("second", engine.LayerOutput, "A_out"),
			attrExplanation:      schema.StringAttribute{Computed: true, MarkdownDescription: "Readable, multi-line explanation of both counts: amounts, quotas, models, activated slots and strongest branches."},
		},
	}
}

func (d *containerCountsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if pd := configureData(req, resp); pd != nil {
		d.data = pd
	}
}

// ValidateConfig checks the rules that span attributes, on the raw
// configuration value (as Read does). Unknown values are skipped: they are
// checked again when known.
func (d *containerCountsDataSource) ValidateConfig(_ context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var top map[string]tftypes.Value // the configuration's own map: read only
	if err := req.Config.Raw.As(&top); err != nil {
		return // unknown as a whole
	}
	for _, root := range []string{attrFirstQuota, attrSecondQuota} {
		validateQuotaBounds(top[root], path.Root(root), &resp.Diagnostics)
	}
	for _, root := range []string{attrFirst, attrSecond} {
		if m := knownAttrs(top[root]); m != nil {
			for _, name := range []string{obsRunningReplicas, obsWantedReplicas} {
				checkWholeNumber(m[name], path.Root(root).AtName(name), &resp.Diagnostics)
			}
		}
		validateSampleOrder(top[root], path.Root(root).AtName(obsUsageSamples), &resp.Diagnostics)
	}
}

// checkWholeNumber adds a diagnostic on p when v is a known number with a
// fraction, for an integer attribute. The framework rejects such a value
// too, but with a conversion error that names neither the attribute nor
// the reason; this one runs first and says both.
func checkWholeNumber(v tftypes.Value, p path.Path, diags *diag.Diagnostics) {
	if !v.IsKnown() || v.IsNull() || !v.Type().Is(tftypes.Number) {
		return
	}
	var bf big.Float
	if v.As(&bf) != nil || bf.IsInt() {
		return
	}
	diags.AddAttributeError(p, "Not a whole number",
		fmt.Sprintf("Attribute %s is %s; it must be a whole number.", p, bf.Text('g', -1)))
}

// knownInt is v as an integer when it is a known whole number.
func knownInt(v tftypes.Value) (int64, bool) {
	if !v.IsKnown() || v.IsNull() {
		return 0, false
	}
	var bf big.Float
	if v.As(&bf) != nil || !bf.IsInt() {
		return 0, false
	}
	i, acc := bf.Int64()
	return i, acc == big.Exact
}

// knownAttrs is an object's attributes when it is known and not null.
func knownAttrs(v tftypes.Value) map[string]tftypes.Value {
	var m map[string]tftypes.Value
	if !v.IsKnown() || v.IsNull() || v.As(&m) != nil {
		return nil
	}
	return m
}

// validateQuotaBounds: min <= max, both whole numbers.
func validateQuotaBounds(quota tftypes.Value, p path.Path, diags *diag.Diagnostics) {
	m := knownAttrs(quota)
	if m == nil {
		return
	}
	checkWholeNumber(m[quotaMin], p.AtName(quotaMin), diags)
	checkWholeNumber(m[quotaMax], p.AtName(quotaMax), diags)
	lo, okLo := knownInt(m[quotaMin])
	hi, okHi := knownInt(m[quotaMax])
	if okLo && okHi && lo > hi {
		diags.AddAttributeError(p.AtName(quotaMax), "Quota max below min",
			fmt.Sprintf("Attribute %s is %d, below %s %d: a quota's max must be at least its min.",
				p.AtName(quotaMax), hi, p.AtName(quotaMin), lo))
	}
}

// validateSampleOrder: sample times are whole numbers that strictly
// increase, oldest first.
func validateSampleOrder(observation tftypes.Value, p path.Path, diags *diag.Diagnostics) {
	m := knownAttrs(observation)
	if m == nil {
		return
	}
	var samples []tftypes.Value
	if v := m[obsUsageSamples]; !v.IsKnown() || v.IsNull() || v.As(&samples) != nil {
		return
	}
	prev, havePrev := int64(0), false
	for i, el := range samples {
		tv := knownAttrs(el)[sampleTime]
		checkWholeNumber(tv, p.AtListIndex(i).AtName(sampleTime), diags)
		t, ok := knownInt(tv)
		if !ok {
			havePrev = false
			continue
		}
		if havePrev && t <= prev {
			diags.AddAttributeError(p.AtListIndex(i).AtName(sampleTime), "Usage samples out of order",
				fmt.Sprintf("Attribute %s is %d, not after the previous sample's %d: usage samples must be oldest first, with strictly increasing times.",
					p.AtListIndex(i).AtName(sampleTime), t, prev))
		}
		prev, havePrev = t, true
	}
}

// Read decodes the configuration straight from its tftypes value (see
// tfvalue.go), makes the one engine call, and writes the state: the
// configuration with the computed attributes set.
func (d *containerCountsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	raw := req.Config.Raw
	var cfg map[string]tftypes.Value // the configuration's own map: read only
	if err := raw.As(&cfg); err != nil {
		resp.Diagnostics.AddError("Cannot read the configuration", err.Error())
		return
	}
	// The state is the configuration with the computed attributes set.
	top := make(map[string]tftypes.Value, len(cfg))
	for k, v := range cfg {
		top[k] = v
	}
	r, err := countsRequest(cfg, d.data)
	if errors.Is(err, errUnknown) {
		// Terraform defers reads whose configuration is not known; if one
		// arrives anyway, the answer is unknown, not an error.
		setComputed(top, unknownComputed())
		resp.State.Raw = tftypes.NewValue(raw.Type(), top)
		return
	}
	if err != nil {
		var ve *valueError
		if errors.As(err, &ve) {
			resp.Diagnostics.AddAttributeError(ve.path, "Invalid value", fmt.Sprintf("Attribute %s: %s.", ve.path, ve.msg))
		} else {
			resp.Diagnostics.AddError("Invalid configuration", err.Error())
		}
		return
	}
	tflog.Trace(ctx, "activation_container_counts: deciding", map[string]any{
		"first_model": r.FirstModel, "second_model": r.SecondModel,
		"first_samples": len(r.First.Samples), "second_samples": len(r.Second.Samples),
	})
	dec, err := engine.DecideRequest(r)
	if err != nil {
		addEngineError(&resp.Diagnostics, "Cannot compute the container counts", err)
		return
	}
	firstReason, secondReason := dec.First.Reason(), dec.Second.Reason()
	tflog.Trace(ctx, "activation_container_counts: decided", map[string]any{
		"first": firstReason, "second": secondReason,
	})
	setComputed(top, map[string]tftypes.Value{
		attrFirstContainers:  tfInt(dec.First.Containers),
		attrSecondContainers: tfInt(dec.Second.Containers),
		attrFirstDecision:    decisionValue(&dec.First, firstReason),
		attrSecondDecision:   decisionValue(&dec.Second, secondReason),
		attrExplanation:      tftypes.NewValue(tftypes.String, dec.Explain()),
	})
	resp.State.Raw = tftypes.NewValue(raw.Type(), top)
}

func setComputed(top, computed map[string]tftypes.Value) {
	for k, v := range computed {
		top[k] = v
	}
}

// unknownComputed is every computed attribute, unknown.
func unknownComputed() map[string]tftypes.Value {
	return map[string]tftypes.Value{
		attrFirstContainers:  tftypes.NewValue(tftypes.Number, tftypes.UnknownValue),
		attrSecondContainers: tftypes.NewValue(tftypes.Number, tftypes.UnknownValue),
		attrFirstDecision:    tftypes.NewValue(tfDecision, tftypes.UnknownValue),
		attrSecondDecision:   tftypes.NewValue(tfDecision, tftypes.UnknownValue),
		attrExplanation:      tftypes.NewValue(tftypes.String, tftypes.UnknownValue),
	}
}

// addEngineError adds err as a diagnostic on the attribute it names.
func addEngineError(diags *diag.Diagnostics, summary string, err error) {
	if p, reason, ok := errorPath(err); ok {
		diags.AddAttributeError(p, summary, fmt.Sprintf("Attribute %s: %s.", p, strings.TrimSuffix(reason, ".")))
		return
	}
	diags.AddError(summary, err.Error())
}
