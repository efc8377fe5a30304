package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// Attribute names of activation_model.
const (
	attrSource           = "source"
	attrName             = "name"
	attrDescription      = "description"
	attrDigest           = "digest"
	attrLayerSizes       = "layer_sizes"
	attrParameters       = "parameters"
	attrInputs           = "inputs"
	attrInputNames       = "input_names"
	attrCountableInputs  = "countable_inputs"
	attrOutputNames      = "output_names"
	attrCountableOutputs = "countable_outputs"
	attrInputEpsilon     = "input_epsilon"
	attrOutputThreshold  = "output_threshold"
	attrProvenance       = "provenance"

	nodeName      = "name"
	nodeCountable = "countable"

	provMethod    = "method"
	provGenerator = "generator"
	provData      = "data"
	provSettings  = "settings"
	provMetrics   = "metrics"
)

var (
	_ datasource.DataSource              = (*modelDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*modelDataSource)(nil)
)

// NewModelDataSource is activation_model.
func NewModelDataSource() datasource.DataSource { return &modelDataSource{} }

type modelDataSource struct{}

type modelModel struct {
	Source           types.String  `tfsdk:"source"`
	Name             types.String  `tfsdk:"name"`
	Description      types.String  `tfsdk:"description"`
	Digest           types.String  `tfsdk:"digest"`
	LayerSizes       types.List    `tfsdk:"layer_sizes"`
	Parameters       types.Int64   `tfsdk:"parameters"`
	Inputs           types.List    `tfsdk:"inputs"`
	InputNames       types.List    `tfsdk:"input_names"`
	CountableInputs  types.List    `tfsdk:"countable_inputs"`
	OutputNames      types.List    `tfsdk:"output_names"`
	CountableOutputs types.List    `tfsdk:"countable_outputs"`
	InputEpsilon     types.Float64 `tfsdk:"input_epsilon"`
	OutputThreshold  types.Float64 `tfsdk:"output_threshold"`
	Provenance       types.Object  `tfsdk:"provenance"`
}

var nodeAttrTypes = map[string]attr.Type{nodeName: types.StringType, nodeCountable: types.BoolType}

var provenanceAttrTypes = map[string]attr.Type{
	provMethod:    types.StringType,
	provGenerator: types.StringType,
	provData:      types.ListType{ElemType: types.StringType},
	provSettings:  types.MapType{ElemType: types.StringType},
	provMetrics:   types.MapType{ElemType: types.StringType},
}

func (d *modelDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_model"
}

func (d *modelDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	strList := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Loads a processor model, built in or from a file, validates it (a model no host can decide with is refused) and describes it, so a " +
			"configuration can pin a model's digest (for example with a `precondition`) or show what it reads.",
		Attributes: map[string]schema.Attribute{
			attrSource: schema.StringAttribute{Required: true,
				MarkdownDescription: "Model source: `builtin:<name>` (`" + engine.DefaultFirstModel + "`, `" + engine.DefaultSecondModel + "`) or the path of a model file (a relative path is read from the directory OpenTofu runs in, the root module's: in a child module write `${path.module}/...`).",
				Validators:          modelSourceValidators()},
			attrName:        schema.StringAttribute{Computed: true, MarkdownDescription: "The model's name."},
			attrDescription: schema.StringAttribute{Computed: true, MarkdownDescription: "The model's description (empty when it has none)."},
			attrDigest:      schema.StringAttribute{Computed: true, MarkdownDescription: "`sha256:` digest of the model's canonical form: the same model always has the same digest, whatever the file's layout."},
			attrLayerSizes: schema.ListAttribute{Computed: true, ElementType: types.Int64Type,
				MarkdownDescription: "Width of every layer, inputs first, then each hidden layer, then the outputs."},
			attrParameters: schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of weights and biases."},
			attrInputs: schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The input nodes in order, with whether each is a countable slot.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					nodeName:      schema.StringAttribute{Computed: true, MarkdownDescription: "Feature name the node reads."},
					nodeCountable: schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the node is a countable slot."},
				}}},
			attrInputNames:       strList("Input feature names in order."),
			attrCountableInputs:  strList("Names of the countable input nodes (the first host's slots)."),
			attrOutputNames:      strList("Output node names in order."),
			attrCountableOutputs: strList("Names of the countable output nodes (the second host's slots)."),
			attrInputEpsilon:     schema.Float64Attribute{Computed: true, MarkdownDescription: "An input node holds data when `|x| > input_epsilon`. A model file that leaves it out takes 1e-9."},
			attrOutputThreshold:  schema.Float64Attribute{Computed: true, MarkdownDescription: "An output node holds data when its activation is `>= output_threshold`. A model file that leaves it out takes 0.5."},
			attrProvenance: schema.SingleNestedAttribute{Computed: true, MarkdownDescription: "How the model was made and from what.",
				Attributes: map[string]schema.Attribute{
					provMethod:    schema.StringAttribute{Computed: true, MarkdownDescription: "How the model was made."},
					provGenerator: schema.StringAttribute{Computed: true, MarkdownDescription: "The program that made it."},
					provData:      strList("The data it was made from."),
					provSettings:  schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Settings of the run that made it."},
					provMetrics:   schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Metrics recorded when it was made."},
				}},
		},
	}
}

func (d *modelDataSource) Configure(context.Context, datasource.ConfigureRequest, *datasource.ConfigureResponse) {
}

func (d *modelDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m modelModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	src := m.Source.ValueString()
	proc, err := engine.Models.Load(src)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root(attrSource), "Cannot load the model", attributeDetail(path.Root(attrSource), err.Error()))
		return
	}
	// A digest pinned here must be of a model some host can decide with.
	if err := servesAHost(proc); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root(attrSource), "No host can use the model", attributeDetail(path.Root(attrSource), fmt.Sprintf("%s: %v", src, err)))
		return
	}
	tflog.Trace(ctx, "activation_model: loaded", map[string]any{"source": src, "digest": proc.Digest()})
	var diags diag.Diagnostics
	fillModel(&m, proc, &diags)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// servesAHost returns nil when a first or a second host can decide with
// proc, or why neither can.
func servesAHost(proc *engine.Processor) error {
	first, second := proc.Serves(engine.RoleFirst), proc.Serves(engine.RoleSecond)
	switch {
	case first == nil || second == nil:
		return nil
	case first.Error() == second.Error():
		return first // the inputs are no features of an observation
	}
	return fmt.Errorf("as the first host: %w; as the second host: %w", first, second)
}

func fillModel(m *modelModel, proc *engine.Processor, diags *diag.Diagnostics) {
	md := proc.Model()
	strs := func(xs []string) types.List {
		vs := make([]attr.Value, len(xs))
		for i, x := range xs {
			vs[i] = types.StringValue(x)
		}
		l, ds := types.ListValue(types.StringType, vs)
		diags.Append(ds...)
		return l
	}
	var inNames, inCountable, outNames, outCountable []string
	inputs := make([]attr.Value, len(md.Inputs))
	for i, n := range md.Inputs {
		inNames = append(inNames, n.Name)
		if n.Countable {
			inCountable = append(inCountable, n.Name)
		}
		o, ds := types.ObjectValue(nodeAttrTypes, map[string]attr.Value{nodeName: types.StringValue(n.Name), nodeCountable: types.BoolValue(n.Countable)})
		diags.Append(ds...)
		inputs[i] = o
	}
	for _, n := range md.Outputs {
		outNames = append(outNames, n.Name)
		if n.Countable {
			outCountable = append(outCountable, n.Name)
		}
	}
	sizes := make([]attr.Value, 0, len(md.Layers)+1)
	for _, s := range md.LayerSizes() {
		sizes = append(sizes, types.Int64Value(int64(s)))
	}
	m.Name = types.StringValue(md.Name)
	m.Description = types.StringValue(md.Description)
	m.Digest = types.StringValue(proc.Digest())
	m.LayerSizes = types.ListValueMust(types.Int64Type, sizes)
	m.Parameters = types.Int64Value(int64(md.Parameters()))
	m.Inputs = types.ListValueMust(types.ObjectType{AttrTypes: nodeAttrTypes}, inputs)
	m.InputNames = strs(inNames)
	m.CountableInputs = strs(inCountable)
	m.OutputNames = strs(outNames)
	m.CountableOutputs = strs(outCountable)
	m.InputEpsilon = types.Float64Value(md.Epsilon())
	m.OutputThreshold = types.Float64Value(md.Threshold())
	strMap := func(x map[string]string) types.Map {
		vs := make(map[string]attr.Value, len(x))
		for k, v := range x {
			vs[k] = types.StringValue(v)
		}
		mv, ds := types.MapValue(types.StringType, vs)
		diags.Append(ds...)
		return mv
	}
	prov, ds := types.ObjectValue(provenanceAttrTypes, map[string]attr.Value{
		provMethod:    types.StringValue(md.Provenance.Method),
		provGenerator: types.StringValue(md.Provenance.Generator),
		provData:      strs(md.Provenance.Data),
		provSettings:  strMap(md.Provenance.Settings),
		provMetrics:   strMap(md.Provenance.Metrics),
	})
	diags.Append(ds...)
	m.Provenance = prov
}
