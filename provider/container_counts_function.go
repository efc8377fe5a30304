package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// Parameter names of the container_counts function.
const (
	fnFirst      = "first"
	fnSecond     = "second"
	fnQuotas     = "quotas"
	fnMinSamples = "min_samples"
)

var _ function.Function = (*containerCountsFunction)(nil)

// NewContainerCountsFunction is provider::activation::container_counts.
func NewContainerCountsFunction() function.Function { return &containerCountsFunction{} }

type containerCountsFunction struct{}

func (f *containerCountsFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "container_counts"
}

// quotasFields is the function's third argument: both hosts' quotas and
// the sample minimum, every one optional.
var quotasFields = []field{
	{name: fnFirst, kind: kindObject, nested: quotaFields, desc: "The first host's quota."},
	{name: fnSecond, kind: kindObject, nested: quotaFields, desc: "The second host's quota."},
	{name: fnMinSamples, kind: kindWhole, desc: "The fewest usage samples each window must hold."},
}

func (f *containerCountsFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "The first and second host's container counts, from two observations",
		MarkdownDescription: "Computes the two hosts' container counts with the activation engine, as `activation_container_counts` " +
			"does, for a configuration that wants them in `locals` without a data source. It makes the same engine call with the " +
			"engine's built-in models (a provider-defined function cannot read the provider's configuration; use the data source " +
			"for model files) and returns the same values: `first_containers`, `second_containers`, `first_decision`, " +
			"`second_decision` (with `limit`, `refused`, `evidence` and `placement`) and `explanation`.\n\n" +
			"`first` and `second` are observations with the attributes of the data source's `first` and `second` (for example " +
			"`jsondecode(file(\"host.json\"))` or `activation_host_usage`'s `observation`); an attribute the observation does not " +
			"have is an error, so a misspelling is caught. `quotas` is `{ first = {...}, second = {...}, min_samples = n }`, " +
			"every attribute optional (`{}` for the engine's defaults; a bare `null` has no type, so OpenTofu leaves the result unknown " +
			"until apply): a quota has `min`, `max`, `per_branch` and " +
			"`rounding`, as in the data source. An input the engine refuses is an error naming the argument, the attribute " +
			"and the reason. Needs OpenTofu 1.7 or Terraform 1.8 or later.",
		Parameters: []function.Parameter{
			function.DynamicParameter{Name: fnFirst,
				MarkdownDescription: "Observation of the first host (read at the admission processor's input layer)."},
			function.DynamicParameter{Name: fnSecond,
				MarkdownDescription: "Observation of the second host (read at the capacity processor's output layer)."},
			function.DynamicParameter{Name: fnQuotas, AllowNullValue: true,
				MarkdownDescription: "`{ first = quota, second = quota, min_samples = n }`, each optional (`{}`: every default); a quota is `{ min, max, per_branch, rounding }`, each optional."},
		},
		Return: function.ObjectReturn{AttributeTypes: countsResultAttrTypes},
	}
}

// fnRoots say where each host's input lives in the function's arguments,
// as paths for error messages (the models are the built-in ones: no
// argument names them).
var fnRoots = inputRoots{
	hosts: map[string]hostRoots{
		engine.RoleFirst:  {observation: path.Root(fnFirst), quota: path.Root(fnQuotas).AtName(fnFirst)},
		engine.RoleSecond: {observation: path.Root(fnSecond), quota: path.Root(fnQuotas).AtName(fnSecond)},
	},
	minSamples: path.Root(fnQuotas).AtName(fnMinSamples),
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
}

func (f *containerCountsFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var first, second, quotas types.Dynamic
	if resp.Error = req.Arguments.Get(ctx, &first, &second, &quotas); resp.Error != nil {
		return
	}
	var fo, so observationModel
	var qm quotasModel
	for i, a := range []struct {
		arg    types.Dynamic
		fields []field
		target any
	}{{first, observationFields, &fo}, {second, observationFields, &so}, {quotas, quotasFields, &qm}} {
		name := []string{fnFirst, fnSecond, fnQuotas}[i]
		if err := decodeArgument(ctx, a.arg, a.fields, name, a.target); err != nil {
			resp.Error = function.NewArgumentFuncError(int64(i), err.Error())
			return
		}
	}
	m := containerCountsModel{First: &fo, Second: &so, FirstQuota: qm.First, SecondQuota: qm.Second, MinSamples: qm.MinSamples}
	in, err := m.functionInputs()
	if err != nil {
		resp.Error = err
		return
	}
	dec, derr := engine.Decide(in[0], in[1])
	if derr != nil {
		p, ok := fnRoots.pathOf(derr)
		if !ok || p.Equal(path.Empty()) { // a built-in model the engine refuses: no argument is at fault
			resp.Error = function.NewFuncError(derr.Error())
			return
		}
		resp.Error = function.NewArgumentFuncError(argumentOf(p), attributeDetail(p, engine.Reason(derr)))
		return
	}
	resp.Error = resp.Result.Set(ctx, countsResult(dec))
}

// functionInputs are the two host inputs of the function's arguments, with
// the built-in models.
func (m *containerCountsModel) functionInputs() ([2]engine.HostInput, *function.FuncError) {
	var in [2]engine.HostInput
	fail := func(err error) ([2]engine.HostInput, *function.FuncError) {
		if ve, ok := err.(*valueError); ok {
			return in, function.NewArgumentFuncError(argumentOf(ve.path), ve.Error())
		}
		return in, function.NewFuncError(err.Error())
	}
	minSamples, why := count(m.MinSamples)
	if why != "" {
		return fail(&valueError{path: fnRoots.minSamples, reason: why})
	}
	for i, h := range []struct {
		role  string
		obs   *observationModel
		quota *quotaModel
	}{{engine.RoleFirst, m.First, m.FirstQuota}, {engine.RoleSecond, m.Second, m.SecondQuota}} {
		roots := fnRoots.hosts[h.role]
		o, err := h.obs.toEngine(roots.observation)
		if err != nil {
			return fail(err)
		}
		q, err := h.quota.toEngine(roots.quota)
		if err != nil {
			return fail(err)
		}
		in[i] = engine.HostInput{Observation: &o, Quota: q, MinSamples: minSamples}
	}
	return in, nil
}

// decodeArgument turns a dynamic argument into the typed model target of
// fields: the value is first conformed to the fields' object type (as
// OpenTofu converts a data source's attributes: an absent optional
// attribute is null, a tuple is a list), then the framework decodes it.
func decodeArgument(ctx context.Context, arg types.Dynamic, fields []field, name string, target any) error {
	var v tftypes.Value
	if uv := arg.UnderlyingValue(); uv != nil && !arg.IsNull() && !arg.IsUnderlyingValueNull() {
		var err error
		if v, err = uv.ToTerraformValue(ctx); err != nil {
			return err
		}
	}
	conformed, err := conformObject(v, fields, name)
	if err != nil {
		return err
	}
	ot := types.ObjectType{AttrTypes: fieldTypes(fields)}
	av, err := ot.ValueFromTerraform(ctx, conformed)
	if err != nil {
		return err
	}
	obj, ok := av.(basetypes.ObjectValue)
	if !ok {
		return fmt.Errorf("%s: not an object", name)
	}
	if diags := obj.As(ctx, target, basetypes.ObjectAsOptions{}); diags.HasError() {
		return fmt.Errorf("%s: %s", name, diags.Errors()[0].Detail())
	}
	return nil
}

// conformObject converts v (nil or null: every attribute null) to the
// object of fields. It refuses attributes the fields do not have, a missing
// required one, and values of the wrong kind, naming them under where.
func conformObject(v tftypes.Value, fields []field, where string) (tftypes.Value, error) {
	t := types.ObjectType{AttrTypes: fieldTypes(fields)}.TerraformType(context.Background())
	in := map[string]tftypes.Value{}
	if v.Type() != nil && !v.IsNull() {
		if !v.Type().Is(tftypes.Object{}) && !v.Type().Is(tftypes.Map{}) {
			return tftypes.Value{}, fmt.Errorf("%s must be an object, not a %s", where, friendlyType(v.Type()))
		}
		if err := v.As(&in); err != nil {
			return tftypes.Value{}, fmt.Errorf("%s: %v", where, err)
		}
	}
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.name] = true
	}
	for k := range in {
		if !known[k] {
			names := make([]string, 0, len(fields))
			for _, f := range fields {
				names = append(names, f.name)
			}
			sort.Strings(names)
			return tftypes.Value{}, fmt.Errorf("%s has an attribute %q, which is not one of: %s", where, k, strings.Join(names, ", "))
		}
	}
	out := make(map[string]tftypes.Value, len(fields))
	ot, ok := t.(tftypes.Object)
	if !ok {
		return tftypes.Value{}, fmt.Errorf("%s: the fields' type is a %T, not an object", where, t)
	}
	for _, f := range fields {
		at := ot.AttributeTypes[f.name]
		x, ok := in[f.name]
		if !ok || x.IsNull() {
			if f.required {
				return tftypes.Value{}, fmt.Errorf("%s.%s is required", where, f.name)
			}
			out[f.name] = tftypes.NewValue(at, nil)
			continue
		}
		here := where + "." + f.name
		var err error
		switch f.kind {
		case kindFigure, kindWhole:
			if !x.Type().Is(tftypes.Number) {
				return tftypes.Value{}, fmt.Errorf("%s must be a number, not a %s", here, friendlyType(x.Type()))
			}
			out[f.name] = x
		case kindString:
			if !x.Type().Is(tftypes.String) {
				return tftypes.Value{}, fmt.Errorf("%s must be a string, not a %s", here, friendlyType(x.Type()))
			}
			out[f.name] = x
		case kindObject:
			out[f.name], err = conformObject(x, f.nested, here)
		case kindWindow:
			out[f.name] = x // typed dynamically: checked as it is decoded
		case kindObjects:
			if !x.Type().Is(tftypes.List{}) && !x.Type().Is(tftypes.Tuple{}) && !x.Type().Is(tftypes.Set{}) {
				return tftypes.Value{}, fmt.Errorf("%s must be a list of objects, not a %s", here, friendlyType(x.Type()))
			}
			var elems []tftypes.Value
			if err := x.As(&elems); err != nil {
				return tftypes.Value{}, fmt.Errorf("%s: %v", here, err)
			}
			list := make([]tftypes.Value, len(elems))
			for i, e := range elems {
				if list[i], err = conformObject(e, f.nested, fmt.Sprintf("%s[%d]", here, i)); err != nil {
					return tftypes.Value{}, err
				}
			}
			out[f.name] = tftypes.NewValue(at, list)
		}
		if err != nil {
			return tftypes.Value{}, err
		}
	}
	return tftypes.NewValue(t, out), nil
}

// friendlyType names a value's type as HCL users know it.
func friendlyType(t tftypes.Type) string {
	switch {
	case t.Is(tftypes.String):
		return "string"
	case t.Is(tftypes.Number):
		return "number"
	case t.Is(tftypes.Bool):
		return "bool"
	case t.Is(tftypes.List{}), t.Is(tftypes.Tuple{}), t.Is(tftypes.Set{}):
		return "list"
	case t.Is(tftypes.Object{}), t.Is(tftypes.Map{}):
		return "object"
	}
	return t.String()
}
