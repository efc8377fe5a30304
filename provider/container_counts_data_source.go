package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
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
	attrMinSamples       = "min_samples"
	attrHoldBand         = "hold_band"
	attrMargin           = "margin"
	attrFirstMargin      = "first_margin"
	attrSecondMargin     = "second_margin"
	attrFirstContainers  = "first_containers"
	attrSecondContainers = "second_containers"
	attrFirstDecision    = "first_decision"
	attrSecondDecision   = "second_decision"
	attrExplanation      = "explanation"
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

// quotaModel is a quota as configured: every field optional.
type quotaModel struct {
	Min       types.Number `tfsdk:"min"`
	Max       types.Number `tfsdk:"max"`
	PerBranch types.Number `tfsdk:"per_branch"`
	Rounding  types.String `tfsdk:"rounding"`
}

// containerCountsModel is the data source's configuration and state.
type containerCountsModel struct {
	// The observations as configured (typed dynamically, so that an
	// attribute an observation does not have is refused, not dropped), and
	// as decoded.
	First        types.Dynamic        `tfsdk:"first"`
	Second       types.Dynamic        `tfsdk:"second"`
	observations [2]*observationModel `tfsdk:"-"`
	FirstModel   types.String         `tfsdk:"first_model"`
	SecondModel  types.String         `tfsdk:"second_model"`
	// The quotas as configured (typed dynamically, so that an attribute a
	// quota does not have is refused, not dropped), and as decoded.
	FirstQuota  types.Dynamic `tfsdk:"first_quota"`
	SecondQuota types.Dynamic `tfsdk:"second_quota"`
	MinSamples  types.Number  `tfsdk:"min_samples"`
	HoldBand    types.Number  `tfsdk:"hold_band"`
	Margin      types.Number  `tfsdk:"margin"`
	// Each host's own margin, in place of Margin for it (null: Margin).
	FirstMargin  types.Number   `tfsdk:"first_margin"`
	SecondMargin types.Number   `tfsdk:"second_margin"`
	quotas       [2]*quotaModel `tfsdk:"-"`
	countsResultModel
}

func (d *containerCountsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_container_counts"
}

// holdBandDescription is hold_band's, in the data source and the function.
var holdBandDescription = fmt.Sprintf("Also read each host's hold range (`hold` in its decision): the counts at output thresholds "+
	"`hold_band` logits stricter and looser than the model's (moved by the host's margin, when one is given). A controller already at a count inside the range may keep it "+
	"instead of moving by a replica or two, and otherwise takes `containers` "+
	"(`current >= hold.low && current <= hold.high ? current : containers`), as the Nomad strategy's `hold_band` does "+
	"(which also never keeps a count Nomad cannot place, nor one on a node that places nothing new). "+
	"Logits, from 0 to %d; 0 or unset: off (`hold` is null).", engine.MaxHoldBand)

// marginDescription is margin's, in the data source and the function.
var marginDescription = fmt.Sprintf("Moves both models' output thresholds by this many logits: above 0 stricter (fewer containers, "+
	"a host overloaded less often), below 0 looser; from %d to %d; 0 or unset: the models' own thresholds. A margin of m logits keeps "+
	"about m / alpha of the host free beyond the processor's estimate, alpha being the slope its outputs learned (`alpha` in the "+
	"model's provenance: 10 for both built-in processors, whose slope is fixed by their quantile training, so a margin of 2 keeps about "+
	"20%% of either host). The models' own thresholds meet no particular violation budget (the project's `docs/benchmarks.md` "+
	"gives how often the built-in ones overloaded series they never saw, by family). `activation simulate --traces DIR` on your "+
	"own usage series prints the margin that meets a budget with each host within it, the one to set for both, and the margins "+
	"per host that do, for `first_margin` and `second_margin`, which replace it per host, each for its host only; choose them on "+
	"some series (`--split train --format json`) and read them on others (`--split test --settings-from` that output) before "+
	"trusting a budget. The explanation says the margin; the hold range (`hold_band`) is read about the moved threshold.", -engine.MaxMargin, engine.MaxMargin)

// hostMarginDescription is first_margin's or second_margin's (role
// "first", "second").
func hostMarginDescription(role string) string {
	return "The " + role + " host's margin, in logits, in place of `margin` for the " + role + " host only (same range and meaning: " +
		fmt.Sprintf("from %d to %d; 0 is the model's own threshold, whatever `margin` is); unset: `margin`. ", -engine.MaxMargin, engine.MaxMargin) +
		"The two processors need not meet a budget at one threshold: `activation simulate` on a cluster's own usage series prints the " +
		"margin per host that holds each host within a budget (`margins_per_host` in its JSON, \"margin per host\" in its text)."
}

// settings are the inputs as configured beside the observations and the
// quotas: those both hosts share, and each host's own margin (first,
// second). A null one is unset.
type settings struct {
	minSamples, holdBand, margin types.Number
	hostMargins                  [2]types.Number
}

// settings are m's.
func (m *containerCountsModel) settings() settings {
	return settings{minSamples: m.MinSamples, holdBand: m.HoldBand, margin: m.Margin, hostMargins: [2]types.Number{m.FirstMargin, m.SecondMargin}}
}

// ownMargins says whether each host's own margin is given.
func (s settings) ownMargins() (first, second bool) {
	return !s.hostMargins[0].IsNull(), !s.hostMargins[1].IsNull()
}

// quotaFields are a quota's attributes, as the data source takes them and
// as the container_counts function does.
var quotaFields = []field{
	{name: quotaMin, kind: kindWhole, desc: fmt.Sprintf("Fewest containers; default 0. From 0 to %s, at most `max`.", thousands(engine.MaxQuotaCount))},
	{name: quotaMax, kind: kindWhole, desc: "Most containers; default the model's number of countable slots (the engine's default, as in the CLI's JSON and the Nomad strategy). " +
		fmt.Sprintf("From 0 to %s.", thousands(engine.MaxQuotaCount))},
	{name: quotaPerBranch, kind: kindFigure, desc: fmt.Sprintf("Containers per activated branch; default 1. Greater than 0, at most %s.", thousands(engine.MaxPerBranch))},
	{name: quotaRounding, kind: kindString, desc: "How `amount x per_branch` becomes a whole number: `nearest` (default, half away from zero), `floor` or `ceil`."},
}

func quotaInputAttribute(role string) schema.DynamicAttribute {
	var fields strings.Builder
	for _, f := range quotaFields {
		fmt.Fprintf(&fields, "\n  - `%s` (%s): %s", f.name, f.kind.typeName(), f.desc)
	}
	return schema.DynamicAttribute{
		Optional: true,
		MarkdownDescription: "Quota that turns the " + role + " host's activated-branch amount into its container count: " +
			"`clamp(min, max, rounding(amount x per_branch))`, an object with these attributes, each optional (the engine's " +
			"default when unset):" + fields.String() + "\n\n  Unset: one container per activated branch, from 0 to the model's number " +
			"of countable slots. An attribute a quota does not have is an error (a misspelt `max` would otherwise be dropped " +
			"and the quota not applied), and so is a value out of range, both when the configuration is validated.",
	}
}

// decodeQuotas decodes the configured quotas into m.quotas (null: nil,
// every default; unknown, during validation: nil, decoded once known),
// each checked for its attributes and their kinds.
func (m *containerCountsModel) decodeQuotas(ctx context.Context) []*valueError {
	var errs []*valueError
	m.quotas, errs = decodeBoth[quotaModel](ctx, [2]types.Dynamic{m.FirstQuota, m.SecondQuota}, [2]string{attrFirstQuota, attrSecondQuota}, quotaFields)
	return errs
}

// decodeObservations decodes the configured observations into
// m.observations (unknown, during validation: nil, decoded once known;
// null, typed or not: nil, which the framework refuses, the attributes
// being required), each checked for its attributes and their kinds: an
// attribute an observation does not have is refused.
func (m *containerCountsModel) decodeObservations(ctx context.Context) []*valueError {
	var errs []*valueError
	m.observations, errs = decodeBoth[observationModel](ctx, [2]types.Dynamic{m.First, m.Second}, [2]string{attrFirst, attrSecond}, observationFields)
	return errs
}

// decodeBoth decodes the two hosts' dynamic values, at the attributes
// named, into models of fields: nil for a value null or not known yet.
func decodeBoth[T any](ctx context.Context, vs [2]types.Dynamic, names [2]string, fields []field) ([2]*T, []*valueError) {
	var out [2]*T
	var errs []*valueError
	for i, v := range vs {
		if v.IsNull() || v.IsUnknown() || v.IsUnderlyingValueNull() || v.IsUnderlyingValueUnknown() {
			continue
		}
		var t T
		if verrs := decodeArgument(ctx, v, fields, path.Root(names[i]), &t); verrs != nil {
			errs = append(errs, verrs...)
			continue
		}
		out[i] = &t
	}
	return out, errs
}

// toEngine converts a known quota at root; nil is every default.
func (q *quotaModel) toEngine(root path.Path) (*engine.QuotaSpec, error) {
	if q == nil {
		return nil, nil
	}
	s := &engine.QuotaSpec{}
	var errs valueErrors // every attribute's problem at once
	for _, f := range [...]struct {
		name string
		v    types.Number
		dst  **int
	}{{quotaMin, q.Min, &s.Min}, {quotaMax, q.Max, &s.Max}} {
		if f.v.IsNull() {
			continue
		}
		i, why := count(f.v)
		if why != "" {
			errs = append(errs, &valueError{path: root.AtName(f.name), reason: why})
			continue
		}
		*f.dst = &i
	}
	if !q.PerBranch.IsNull() {
		x, why := figure(q.PerBranch)
		if why != "" {
			errs = append(errs, &valueError{path: root.AtName(quotaPerBranch), reason: why})
		}
		s.PerBranch = &x
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if !q.Rounding.IsNull() {
		r := q.Rounding.ValueString()
		s.Rounding = &r
	}
	return s, nil
}

func (d *containerCountsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Computes the first and second host's container counts from two host observations with the " +
			"activation engine, at `plan` time when the inputs are known.\n\n" +
			"The **first host**'s count is the activated-branch amount `A_in` at the input layer of the admission " +
			"processor (how many of the replicas that want to run the model admits, in queue order); the **second host**'s is the amount " +
			"`A_out` at the output layer of the capacity processor (how many replicas the host can safely run). " +
			"Each amount goes through its quota. The same inputs give the same decision as the Nomad Autoscaler " +
			"plugins and the command line: one engine call, whose rules are the only rules (the provider checks types and " +
			"presence, the quotas, `min_samples`, `hold_band` and the observations' values with the engine's rules as soon as the configuration is validated, as far as the values known then decide them, " +
			"and an input the engine refuses is an error naming the attribute and the reason).\n\n" +
			"Each decision also says what bounded the count (`limit`, and for the first host the first `refused` replica), how " +
			"the usage was read (`evidence`), and a per-replica reservation with which Nomad can place the count (`placement`).\n\n" +
			"When an input is unknown during `plan` (computed by a resource), the counts are unknown until apply.\n\n" +
			"`first` and `second` take any object with the observation's attributes, such as `jsondecode()` of an " +
			"observation file or `activation_host_usage`'s `observation`. They are typed dynamically and checked by the " +
			"provider when the configuration is validated, as the `container_counts` function checks its arguments: an " +
			"attribute an observation or a sample does not have is refused, naming it (OpenTofu drops the attributes a typed " +
			"object does not have, so a misspelt `warming_replicas` would be ignored and the count made without it), and so is " +
			"a missing required one.\n\n" +
			fmt.Sprintf("Limits: every CPU and memory figure is finite, at least 0, at most %g (MHz, MB: a larger one is taken for a unit mistake) "+
				"and at most %g times the host's capacity; every count is a whole number up to %s. ", float64(engine.MaxResource), float64(engine.MaxUsageRatio), thousands(engine.MaxReplicas)) +
			fmt.Sprintf("Size: an observation holds at most %s usage samples (a week of one-minute samples). ", thousands(engine.MaxSamples)) +
			"An hour of one-minute samples adds milliseconds to a `tofu plan`; two observations of a week each add about 13 to 22 s on a " +
			"2-core machine, most of them OpenTofu's own work on a value of 20,000 objects (`tools/plan-bench.sh largest` measures it " +
			"on your machine): aggregate long windows first.",
		Attributes: map[string]schema.Attribute{
			attrFirst:  observationInputAttribute("Observation of the first host (the one read at the admission processor's input layer)."),
			attrSecond: observationInputAttribute("Observation of the second host (the one read at the capacity processor's output layer)."),
			attrFirstModel: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Model source for the first host: `builtin:<name>` or the path of a model file (a relative path is read from the directory OpenTofu runs in, the root module's: in a child module write `${path.module}/...`). Defaults to the provider's `default_first_model`, then `" + engine.DefaultFirstModel + "`.",
				Validators:          modelSourceValidators()},
			attrSecondModel: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Model source for the second host: `builtin:<name>` or the path of a model file (a relative path is read from the directory OpenTofu runs in, the root module's: in a child module write `${path.module}/...`). Defaults to the provider's `default_second_model`, then `" + engine.DefaultSecondModel + "`.",
				Validators:          modelSourceValidators()},
			attrFirstQuota:  quotaInputAttribute("first"),
			attrSecondQuota: quotaInputAttribute("second"),
			attrMinSamples: schema.NumberAttribute{Optional: true,
				MarkdownDescription: fmt.Sprintf("The fewest usage samples each host's window must hold for a decision: fewer is an error naming the window. "+
					"From 1 to %s (1 lets a single reading decide, which says nothing of how usage varies); 0 or unset: the engine's default, %d.",
					thousands(engine.MaxSamples), engine.DefaultMinSamples)},
			attrHoldBand:         schema.NumberAttribute{Optional: true, MarkdownDescription: holdBandDescription},
			attrMargin:           schema.NumberAttribute{Optional: true, MarkdownDescription: marginDescription},
			attrFirstMargin:      schema.NumberAttribute{Optional: true, MarkdownDescription: hostMarginDescription(engine.RoleFirst)},
			attrSecondMargin:     schema.NumberAttribute{Optional: true, MarkdownDescription: hostMarginDescription(engine.RoleSecond)},
			attrFirstContainers:  computedInt("The first host's container count (same as `first_decision.containers`)."),
			attrSecondContainers: computedInt("The second host's container count (same as `second_decision.containers`)."),
			attrFirstDecision:    decisionOutputAttribute("first", engine.LayerInput, "A_in"),
			attrSecondDecision:   decisionOutputAttribute("second", engine.LayerOutput, "A_out"),
			attrExplanation: computedString("Readable, multi-line explanation of both counts: amounts, quotas, models, what bound each count, " +
				"activated slots, strongest branches and placement."),
		},
	}
}

func (d *containerCountsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if pd := configureData(req, resp); pd != nil {
		d.data = pd
	}
}

// ValidateConfig checks, as soon as each is known, what Terraform cannot
// check of values typed dynamically: each observation's attributes and
// their kinds, its usage window's samples (a list of objects with the
// sample's attributes and kinds, whole times) and its counts (whole);
// and the settings, with the engine's own rules, one problem per setting
// at once (each quota's first: its attributes, kinds and ranges;
// min_samples; hold_band; margin and each host's own). So a misspelt attribute or a bad setting fails
// `tofu validate`, even when an observation is known only at apply. The
// observations' values are checked with the engine's rules as far as the
// known ones decide them (probeErrors); a window shorter than min_samples
// is the read's. The checks are knownErrors' two parts, which the
// container_counts function shares.
func (d *containerCountsDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m containerCountsModel
	for _, a := range []struct {
		name string
		dst  any
	}{
		{attrFirstQuota, &m.FirstQuota}, {attrSecondQuota, &m.SecondQuota}, {attrMinSamples, &m.MinSamples}, {attrHoldBand, &m.HoldBand},
		{attrMargin, &m.Margin}, {attrFirstMargin, &m.FirstMargin}, {attrSecondMargin, &m.SecondMargin}, {attrFirst, &m.First}, {attrSecond, &m.Second},
	} {
		resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(a.name), a.dst)...)
	}
	// The settings' problems first, then the observations'.
	errs := m.decodeQuotas(ctx)
	errs = append(errs, knownSettingsErrors(m.quotas, m.settings(), countsRoots)...)
	errs = append(errs, m.decodeObservations(ctx)...)
	errs = append(errs, knownObservationErrors(ctx, m.observations, countsRoots)...)
	for _, err := range errs {
		addValueError(&resp.Diagnostics, err)
	}
}

// asValueError is err as a *valueError, at p when it names no attribute.
func asValueError(err error, p path.Path) *valueError {
	var ve *valueError
	if errors.As(err, &ve) {
		return ve
	}
	return &valueError{path: p, reason: err.Error()}
}

// knownErrors checks what is known of decoded inputs (nil: not known yet,
// or null) as the read would check it, before every value is known: the
// settings (knownSettingsErrors), then the observations
// (knownObservationErrors). roots say where each input lives. The
// function runs it on every call (at plan with unknown values, and before
// the engine when all are known); the data source runs its two parts at
// validate.
func knownErrors(ctx context.Context, obs [2]*observationModel, quotas [2]*quotaModel, s settings, roots inputRoots) []*valueError {
	return append(knownSettingsErrors(quotas, s, roots), knownObservationErrors(ctx, obs, roots)...)
}

// knownSettingsErrors checks each known quota with the engine's rules (its
// attributes, kinds and ranges; unknown ones are checked once known),
// min_samples, hold_band, margin and each host's own margin (unknown
// settings wait too).
func knownSettingsErrors(quotas [2]*quotaModel, s settings, roots inputRoots) []*valueError {
	var errs []*valueError
	roles := [2]string{engine.RoleFirst, engine.RoleSecond}
	for i, qm := range quotas {
		if qm == nil {
			continue
		}
		q := *qm
		for _, n := range []*types.Number{&q.Min, &q.Max, &q.PerBranch} {
			if n.IsUnknown() {
				*n = types.NumberNull()
			}
		}
		if q.Rounding.IsUnknown() {
			q.Rounding = types.StringNull()
		}
		spec, err := q.toEngine(roots.hosts[roles[i]].quota)
		if err != nil {
			errs = append(errs, valueErrorsOf(err, roots.hosts[roles[i]].quota)...)
			continue
		}
		for _, err := range spec.Check(roles[i]) {
			errs = append(errs, engineValueErrors(err, roots)...)
		}
	}
	if n, why := count(s.minSamples); why != "" {
		errs = append(errs, &valueError{path: roots.minSamples, reason: why})
	} else if why := engine.MinSamplesReason(n); why != "" {
		errs = append(errs, &valueError{path: roots.minSamples, reason: why})
	}
	// The settings in logits: a figure, then the engine's range.
	for _, st := range []struct {
		v      types.Number
		at     path.Path
		reason func(float64) string
	}{
		{s.holdBand, roots.holdBand, engine.HoldBandReason}, {s.margin, roots.margin, engine.MarginReason},
		{s.hostMargins[0], roots.hosts[engine.RoleFirst].margin, engine.MarginReason},
		{s.hostMargins[1], roots.hosts[engine.RoleSecond].margin, engine.MarginReason},
	} {
		if f, why := figure(st.v); why != "" {
			errs = append(errs, &valueError{path: st.at, reason: why})
		} else if why := st.reason(f); why != "" {
			errs = append(errs, &valueError{path: st.at, reason: why})
		}
	}
	return errs
}

// knownObservationErrors checks each known observation: its usage window
// (a list of objects with the sample's attributes and kinds, whole times:
// the first fraction is enough to say it) and its counts (whole), then,
// when those are fine, its values with the engine's rules as far as the
// known ones decide them (probeErrors). A window shorter than min_samples
// is left to the read: it is the data's state (a window still filling),
// not a mistake in the configuration, and a read's error is a warning in a
// `check` block where validate's is not (a user trial of such a check).
func knownObservationErrors(ctx context.Context, obs [2]*observationModel, roots inputRoots) []*valueError {
	var errs []*valueError
	roles := [2]string{engine.RoleFirst, engine.RoleSecond}
	for i, om := range obs {
		if om == nil {
			continue
		}
		before := len(errs)
		root := roots.hosts[roles[i]].observation
		var samples []map[string]attr.Value // conformed once, for the probe too
		if w := om.UsageSamples; !w.IsUnknown() && !w.IsUnderlyingValueUnknown() {
			var err error
			samples, err = windowOf(w, root.AtName(obsUsageSamples))
			if err != nil {
				errs = append(errs, valueErrorsOf(err, root.AtName(obsUsageSamples))...)
			}
			for j, smp := range samples {
				if t, ok := smp[sampleTime].(types.Number); ok {
					if _, why := whole(t); why != "" {
						errs = append(errs, &valueError{path: root.AtName(obsUsageSamples).AtListIndex(j).AtName(sampleTime), reason: why})
						break
					}
				}
			}
		}
		for _, c := range []struct {
			name string
			v    types.Number
		}{{obsRunningReplicas, om.RunningReplicas}, {obsWarmingReplicas, om.WarmingReplicas}, {obsWantedReplicas, om.WantedReplicas}} {
			if _, why := count(c.v); why != "" {
				errs = append(errs, &valueError{path: root.AtName(c.name), reason: why})
			}
		}
		if len(errs) == before {
			errs = append(errs, om.probeErrors(ctx, roles[i], roots, samples)...)
		}
	}
	return errs
}

// Read decodes the configuration with the framework, makes the one engine
// call and writes the state: the configuration with the computed
// attributes set.
func (d *containerCountsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if !req.Config.Raw.IsFullyKnown() {
		// OpenTofu and Terraform defer reads whose configuration is not
		// known and refuse a data source's unknown result; a client that
		// sends one anyway may defer it (deferred actions), else it is an
		// error.
		if req.ClientCapabilities.DeferralAllowed {
			resp.Deferred = &datasource.Deferred{Reason: datasource.DeferredReasonDataSourceConfigUnknown}
			return
		}
		resp.Diagnostics.AddError("Configuration not known",
			"activation_container_counts was read with values known only at apply; OpenTofu defers such reads to apply, so this is a bug in the caller.")
		return
	}
	var m containerCountsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var in [2]engine.HostInput
	errs := append(m.decodeObservations(ctx), m.decodeQuotas(ctx)...)
	if len(errs) == 0 {
		in, errs = m.hostInputs(countsRoots, d.data)
	}
	for _, e := range errs {
		addValueError(&resp.Diagnostics, e)
	}
	if len(errs) > 0 {
		return
	}
	tflog.Trace(ctx, "activation_container_counts: deciding", map[string]any{
		"first_samples": len(in[0].Observation.Samples), "second_samples": len(in[1].Observation.Samples),
	})
	dec, err := engine.Decide(in[0], in[1])
	if err != nil {
		addEngineError(&resp.Diagnostics, err, countsRoots.withOwnMargins(m.settings().ownMargins()))
		return
	}
	m.countsResultModel = countsResult(dec)
	tflog.Trace(ctx, "activation_container_counts: decided", map[string]any{
		"first": m.FirstDecision.Reason, "second": m.SecondDecision.Reason,
	})
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// hostInputs builds the engine's two host inputs from a known
// configuration whose values live at roots: the data source's attributes
// (with the provider's data pd for the default models) or the function's
// arguments (pd nil: the built-in models). Every value that does not fit
// the engine's types and every model that does not load is reported, for
// both hosts, each as a *valueError naming its attribute.
func (m *containerCountsModel) hostInputs(roots inputRoots, pd *providerData) ([2]engine.HostInput, []*valueError) {
	var in [2]engine.HostInput
	var errs []*valueError
	add := func(err error) { errs = append(errs, valueErrorsOf(err, path.Empty())...) }
	minSamples, why := count(m.MinSamples)
	if why != "" {
		errs = append(errs, &valueError{path: roots.minSamples, reason: why})
	}
	holdBand, why := figure(m.HoldBand)
	if why != "" {
		errs = append(errs, &valueError{path: roots.holdBand, reason: why})
	}
	margin, why := figure(m.Margin)
	if why != "" {
		errs = append(errs, &valueError{path: roots.margin, reason: why})
	}
	// Each host's margin: its own when given (0 included), else margin.
	margins := [2]float64{margin, margin}
	for i, own := range []struct {
		role string
		v    types.Number
	}{{engine.RoleFirst, m.FirstMargin}, {engine.RoleSecond, m.SecondMargin}} {
		if own.v.IsNull() {
			continue
		}
		if margins[i], why = figure(own.v); why != "" {
			errs = append(errs, &valueError{path: roots.hosts[own.role].margin, reason: why})
		}
	}
	if pd == nil {
		pd = &providerData{}
	}
	for i, h := range []struct {
		role        string
		obs         *observationModel
		quota       *quotaModel
		model       types.String
		defaultFrom string
		defaultSrc  types.String
	}{
		{engine.RoleFirst, m.observations[0], m.quotas[0], m.FirstModel, attrDefaultFirstModel, pd.DefaultFirstModel},
		{engine.RoleSecond, m.observations[1], m.quotas[1], m.SecondModel, attrDefaultSecondModel, pd.DefaultSecondModel},
	} {
		r := roots.hosts[h.role]
		if h.obs == nil { // required: the framework has refused a missing one already
			errs = append(errs, &valueError{path: r.observation, reason: "is required"})
			continue
		}
		o, err := h.obs.toEngine(r.observation)
		if err != nil {
			add(err)
		}
		q, err := h.quota.toEngine(r.quota)
		if err != nil {
			add(err)
		}
		proc, verr := modelFor(h.role, h.model, h.defaultSrc, h.defaultFrom, r.model)
		if verr != nil {
			errs = append(errs, verr)
		}
		in[i] = engine.HostInput{Observation: &o, Model: proc, Quota: q, MinSamples: minSamples, HoldBand: holdBand, Margin: margins[i]}
	}
	return in, errs
}

// modelFor loads the model of a host whose model attribute (at) is own:
// own's source, else the provider's default (the provider attribute
// defaultFrom, null when unset), else the role's built-in model.
func modelFor(role string, own, def types.String, defaultFrom string, at path.Path) (*engine.Processor, *valueError) {
	if own.IsNull() && def.IsUnknown() {
		return nil, &valueError{path: at, summary: "Unknown model source", reason: fmt.Sprintf(
			"is unset, so the provider's %s is used, which is not known until apply: set %s, or give %s a value known when planning",
			defaultFrom, at, defaultFrom)}
	}
	if own.IsNull() && !def.IsNull() {
		p, err := engine.Models.LoadFor(role, def.ValueString())
		if err != nil {
			return nil, &valueError{path: at, summary: "Cannot load the model", reason: fmt.Sprintf(
				"is unset, so the provider's %s (%s) is used: %s", defaultFrom, def.ValueString(), engine.Reason(err))}
		}
		return p, nil
	}
	p, err := engine.Models.LoadFor(role, own.ValueString())
	if err != nil {
		return nil, &valueError{path: at, summary: "Cannot load the model", reason: engine.Reason(err)}
	}
	return p, nil
}

// addValueError adds err as an error diagnostic on the attribute it names.
func addValueError(diags *diag.Diagnostics, err error) {
	var ve *valueError
	switch {
	case !errors.As(err, &ve):
		diags.AddError("Invalid configuration", err.Error())
	case noPath(ve.path):
		diags.AddError(ve.diagSummary(), ve.reason)
	default:
		diags.AddAttributeError(countsRoots.subjectOf(ve.path), ve.diagSummary(), ve.Error())
	}
}

// addEngineError adds an engine error as diagnostics on the data source's
// attributes it names (engine.FieldOf, at roots: countsRoots with the
// hosts' own margins given or not), with the engine's reasons: one per
// host whose input is wrong (a shared attribute such as min_samples once).
func addEngineError(diags *diag.Diagnostics, err error, roots inputRoots) {
	for _, ve := range engineValueErrors(err, roots) {
		ve.summary = "Cannot compute the container counts"
		addValueError(diags, ve)
	}
}

// engineValueErrors is each of an engine error's problems on the input
// roots name (engine.FieldOf), with the engine's reason; one about no
// input (a built-in model the engine refuses) has no path and the
// engine's whole text.
func engineValueErrors(err error, roots inputRoots) []*valueError {
	var out []*valueError
	for _, err := range engine.Problems(err) {
		if p, ok := roots.pathOf(err); ok && !noPath(p) {
			out = append(out, &valueError{path: p, reason: engineReason(err)})
		} else {
			out = append(out, &valueError{path: path.Empty(), reason: err.Error()})
		}
	}
	return out
}

// engineReason is the engine's reason for err, with what to change in
// HCL where the reason alone does not say it.
func engineReason(err error) string {
	why := engine.Reason(err)
	if errors.Is(err, engine.ErrTooFewSamples) {
		why += ". An observation from activation_host_usage holds as many samples as it reads (its `samples`, default 3): raise `samples` there, or lower `min_samples` here"
	}
	return why
}
