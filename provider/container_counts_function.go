package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// Parameter names of the container_counts function.
const (
	fnFirst        = "first"
	fnSecond       = "second"
	fnQuotas       = "quotas"
	fnMinSamples   = "min_samples"
	fnHoldBand     = "hold_band"
	fnMargin       = "margin"
	fnFirstMargin  = "first_margin"
	fnSecondMargin = "second_margin"
)

var _ function.Function = (*containerCountsFunction)(nil)

// NewContainerCountsFunction is provider::activation::container_counts.
func NewContainerCountsFunction() function.Function { return &containerCountsFunction{} }

type containerCountsFunction struct{}

func (f *containerCountsFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "container_counts"
}

// quotasFields is the function's third argument: both hosts' quotas, the
// sample minimum, the hold band and the margins, every one optional.
var quotasFields = []field{
	{name: fnFirst, kind: kindObject, nested: quotaFields, desc: "The first host's quota."},
	{name: fnSecond, kind: kindObject, nested: quotaFields, desc: "The second host's quota."},
	{name: fnMinSamples, kind: kindWhole, desc: "The fewest usage samples each window must hold."},
	{name: fnHoldBand, kind: kindFigure, desc: "Logits: also read each host's hold range (see the data source's `hold_band`)."},
	{name: fnMargin, kind: kindFigure, desc: "Logits, from -10 to 10: move both models' output thresholds, above 0 stricter (fewer containers); 0 or unset: the models' own (see the data source's `margin`)."},
	{name: fnFirstMargin, kind: kindFigure, desc: "Logits, from -10 to 10: the first host's margin, in place of `margin` for the first host only; unset: `margin` (see the data source's `first_margin`)."},
	{name: fnSecondMargin, kind: kindFigure, desc: "Logits, from -10 to 10: the second host's margin, in place of `margin` for the second host only; unset: `margin` (see the data source's `second_margin`)."},
}

func (f *containerCountsFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "The first and second host's container counts, from two observations",
		MarkdownDescription: "Computes the two hosts' container counts with the activation engine, as `activation_container_counts` " +
			"does, for a configuration that wants them in `locals` without a data source. It makes the same engine call with the " +
			"engine's built-in models (a provider-defined function cannot read the provider's configuration; use the data source " +
			"for model files) and returns the same values: `first_containers`, `second_containers`, `first_decision`, " +
			"`second_decision` (with `limit`, `refused`, `evidence`, `placement` and `hold`) and `explanation`.\n\n" +
			"`first` and `second` are observations with the attributes of the data source's `first` and `second` (for example " +
			"`jsondecode(file(\"host.json\"))` or `activation_host_usage`'s `observation`); an attribute the observation does not " +
			"have is an error, so a misspelling is caught, as in the data source. Values convert as OpenTofu converts the data source's " +
			"attributes (a numeric string is a number); a list may be a tuple, never a set. `quotas` is `{ first = {...}, second = {...}, min_samples = n, hold_band = b, margin = m, " +
			"first_margin = m1, second_margin = m2 }`, every attribute optional: pass `{}` for the engine's defaults (`quotas` must not be null). " +
			"A quota has `min`, `max`, `per_branch` and `rounding`, as in the data source; `first_margin` and `second_margin` are each host's own " +
			"margin in place of `margin` for that host only, as the data source's (unset: `margin`). An input the engine refuses is an error naming the argument, the attribute " +
			"and the reason; problems in two arguments are one error of the call, each naming its attribute in full (`Attribute second.running_replicas: ...`), " +
			"which OpenTofu 1.10 prints under the first parameter's name. An argument holding a value known only at apply (anywhere inside it) makes the result unknown until " +
			"apply; what is known of it is still checked at plan as the data source checks its attributes at validate (a misspelt attribute, a fractional count, a quota out of range, a negative `running_replicas`: an error then); a rule that involves a value known only at apply waits for it. Needs OpenTofu 1.7 or Terraform 1.8 or later. OpenTofu 1.10's `tofu console` does not call provider-defined " +
			"functions (it answers that the function \"has not been tracked properly\" or that the provider \"has not yet been " +
			"initialized\"): try the function in a `locals` value or an `output` and `tofu plan`.",
		Parameters: []function.Parameter{
			function.DynamicParameter{Name: fnFirst, AllowUnknownValues: true,
				MarkdownDescription: "Observation of the first host (read at the admission processor's input layer)."},
			function.DynamicParameter{Name: fnSecond, AllowUnknownValues: true,
				MarkdownDescription: "Observation of the second host (read at the capacity processor's output layer)."},
			function.DynamicParameter{Name: fnQuotas, AllowUnknownValues: true,
				MarkdownDescription: "`{ first = quota, second = quota, min_samples = n, hold_band = b, margin = m, first_margin = m1, second_margin = m2 }`, " +
					"each optional: `{}` is every default. Not null (a null, typed or not, is refused). A quota is `{ min, max, per_branch, rounding }`, " +
					"each optional. `first_margin` and `second_margin` (logits, from -10 to 10) are the first and the second host's own margins, " +
					"each in place of `margin` for its host only (an explicit 0 included); unset: `margin`."},
		},
		Return: function.ObjectReturn{AttributeTypes: countsResultAttrTypes},
	}
}

// fnRoots say where each host's input lives in the function's arguments,
// as paths for error messages (the models are the built-in ones: no
// argument names them).
var fnRoots = inputRoots{
	hosts: map[string]hostRoots{
		engine.RoleFirst:  {observation: path.Root(fnFirst), quota: path.Root(fnQuotas).AtName(fnFirst), margin: path.Root(fnQuotas).AtName(fnFirstMargin)},
		engine.RoleSecond: {observation: path.Root(fnSecond), quota: path.Root(fnQuotas).AtName(fnSecond), margin: path.Root(fnQuotas).AtName(fnSecondMargin)},
	},
	minSamples: path.Root(fnQuotas).AtName(fnMinSamples),
	holdBand:   path.Root(fnQuotas).AtName(fnHoldBand),
	margin:     path.Root(fnQuotas).AtName(fnMargin),
}

// argumentOf is the position of the argument a path is in.
func argumentOf(p path.Path) int64 {
	switch {
	case p.Equal(path.Root(fnFirst)) || strings.HasPrefix(p.String(), fnFirst+"."):
		return 0
	case p.Equal(path.Root(fnSecond)) || strings.HasPrefix(p.String(), fnSecond+"."):
		return 1
	}
	return 2
}

// quotasModel is the third argument.
type quotasModel struct {
	First      *quotaModel  `tfsdk:"first"`
	Second     *quotaModel  `tfsdk:"second"`
	MinSamples types.Number `tfsdk:"min_samples"`
	HoldBand   types.Number `tfsdk:"hold_band"`
	Margin     types.Number `tfsdk:"margin"`
	// Each host's own margin (null: Margin).
	FirstMargin  types.Number `tfsdk:"first_margin"`
	SecondMargin types.Number `tfsdk:"second_margin"`
}

// settings are the settings q gives.
func (q *quotasModel) settings() settings {
	return settings{minSamples: q.MinSamples, holdBand: q.HoldBand, margin: q.Margin, hostMargins: [2]types.Number{q.FirstMargin, q.SecondMargin}}
}

func (f *containerCountsFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var first, second, quotas types.Dynamic
	if resp.Error = req.Arguments.Get(ctx, &first, &second, &quotas); resp.Error != nil {
		return
	}
	// A value known only at apply, anywhere inside an argument, makes the
	// counts unknown until then (decoding it would read an unknown as 0
	// and plan a count that apply does not give). The parameters allow
	// unknown values, so OpenTofu calls the function with them (it skips
	// the call otherwise) and what is known of them is checked now, as the
	// data source checks its attributes at validate (knownErrors): a
	// misspelt attribute, a fractional count or a quota out of range beside
	// an unknown value is an error at plan, not at apply (the engine's
	// rules on the observations' values wait for apply).
	known := true
	for i, a := range []types.Dynamic{first, second, quotas} {
		v, err := a.ToTerraformValue(ctx)
		if err != nil {
			resp.Error = function.NewArgumentFuncError(int64(i), funcText(err.Error()))
			return
		}
		known = known && v.IsFullyKnown()
	}
	var fo, so observationModel
	var qm quotasModel
	var errs []*valueError
	decoded := [3]bool{}
	for i, a := range []struct {
		arg    types.Dynamic
		name   string
		fields []field
		target any
	}{{first, fnFirst, observationFields, &fo}, {second, fnSecond, observationFields, &so}, {quotas, fnQuotas, quotasFields, &qm}} {
		if a.arg.IsUnknown() || a.arg.IsUnderlyingValueUnknown() {
			continue // wholly unknown: nothing to check yet
		}
		if verrs := decodeArgument(ctx, a.arg, a.fields, path.Root(a.name), a.target); verrs != nil {
			errs = append(errs, verrs...)
			continue
		}
		decoded[i] = true
	}
	{
		// As the data source at validate: what is known, by the read's
		// rules, beside the arguments that did not decode: every
		// problem at once, not one argument's a plan (the engine's
		// call below stops at a host's first, and hostInputs at the
		// first figure it cannot convert).
		var obs [2]*observationModel
		var qs [2]*quotaModel
		null := types.NumberNull()
		s := settings{minSamples: null, holdBand: null, margin: null, hostMargins: [2]types.Number{null, null}}
		if decoded[0] {
			obs[0] = &fo
		}
		if decoded[1] {
			obs[1] = &so
		}
		if decoded[2] {
			qs, s = [2]*quotaModel{qm.First, qm.Second}, qm.settings()
		}
		errs = append(errs, knownErrors(ctx, obs, qs, s, fnRoots)...)
	}
	if len(errs) > 0 {
		resp.Error = funcError(errs)
		return
	}
	if !known {
		resp.Error = resp.Result.Set(ctx, types.ObjectUnknown(countsResultAttrTypes))
		return
	}
	m := containerCountsModel{observations: [2]*observationModel{&fo, &so}, quotas: [2]*quotaModel{qm.First, qm.Second},
		MinSamples: qm.MinSamples, HoldBand: qm.HoldBand, Margin: qm.Margin, FirstMargin: qm.FirstMargin, SecondMargin: qm.SecondMargin}
	in, errs := m.hostInputs(fnRoots, nil)
	if len(errs) > 0 {
		resp.Error = funcError(errs)
		return
	}
	dec, err := engine.Decide(in[0], in[1])
	if err != nil {
		resp.Error = engineFuncError(err, fnRoots.withOwnMargins(qm.settings().ownMargins()))
		return
	}
	resp.Error = resp.Result.Set(ctx, countsResult(dec))
}

// engineFuncError is the function's error for an engine error, its paths
// at roots (fnRoots with the hosts' own margins given or not): each
// host's on the argument its path is in (the first one's argument is the
// error's).
func engineFuncError(err error, roots inputRoots) *function.FuncError {
	var fes []*function.FuncError
	for _, ve := range engineValueErrors(err, roots) {
		fe := argumentError(ve)
		if n := len(fes); n > 0 && fes[n-1].Equal(fe) {
			continue // a shared setting (min_samples) both hosts refused
		}
		fes = append(fes, fe)
	}
	return joinFuncErrors(fes)
}

// funcError is the function's error for errs (joinFuncErrors).
func funcError(errs []*valueError) *function.FuncError {
	fes := make([]*function.FuncError, len(errs))
	for i, e := range errs {
		fes[i] = argumentError(e)
	}
	return joinFuncErrors(fes)
}

// joinFuncErrors is one error of fes, each text its own sentence: on their
// argument when they share one, else on none (OpenTofu prints a call's
// error under one argument's name, so two arguments' problems under the
// first's would blame it for the other's; each text names its attribute
// in full, `Attribute second.queued_replicas: ...`).
func joinFuncErrors(fes []*function.FuncError) *function.FuncError {
	if len(fes) == 0 {
		return nil
	}
	texts := make([]string, len(fes))
	arg := fes[0].FunctionArgument
	for i, fe := range fes {
		texts[i] = fe.Text
		if arg != nil && (fe.FunctionArgument == nil || *fe.FunctionArgument != *arg) {
			arg = nil
		}
	}
	// (OpenTofu ends the last text with its own period)
	text := strings.Join(texts, ".\n")
	if arg == nil {
		return function.NewFuncError(text)
	}
	return function.NewArgumentFuncError(*arg, text)
}

// argumentError is e on the argument its path is in, or on none.
func argumentError(e *valueError) *function.FuncError {
	if noPath(e.path) {
		return function.NewFuncError(funcText(e.reason))
	}
	return function.NewArgumentFuncError(argumentOf(e.path), funcText(e.Error()))
}

// funcText is an error text as a function returns it: OpenTofu ends the
// message it prints ("Call to function ... failed: <text>.") with its own
// period.
func funcText(s string) string { return strings.TrimSuffix(s, ".") }

// decodeArgument decodes a dynamic argument at p into target, the typed
// model of fields, through the one checker (conformObject): the argument
// must be an object with fields' attributes.
func decodeArgument(ctx context.Context, arg types.Dynamic, fields []field, p path.Path, target any) []*valueError {
	if arg.IsNull() || arg.IsUnderlyingValueNull() {
		// OpenTofu refuses a null before calling the provider (the
		// parameters do not allow one); an in-process call may still pass it.
		why := "must not be null"
		if p.Equal(path.Root(fnQuotas)) {
			why += ": pass {} for every default"
		}
		return []*valueError{{path: p, reason: why}}
	}
	obj, err := conformObject(arg.UnderlyingValue(), fields, p)
	if err != nil {
		return valueErrorsOf(err, p)
	}
	// An unknown nested object (a quota known only at apply) decodes as
	// empty: a value with unknowns inside is decoded only to check what is
	// known of it, never to decide.
	if diags := obj.As(ctx, target, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true}); diags.HasError() {
		return []*valueError{{path: p, reason: diags.Errors()[0].Detail()}}
	}
	return nil
}
