package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/engine/golden"
)

const countsAddr = "data.activation_container_counts.test"

// ---- unit tests (no OpenTofu) ----

func TestContainerCountsSchema(t *testing.T) {
	ctx := context.Background()
	var resp datasource.SchemaResponse
	NewContainerCountsDataSource().Schema(ctx, datasource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("schema: %v", resp.Diagnostics)
	}
	if diags := resp.Schema.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("ValidateImplementation: %v", diags)
	}
	checkSchemaDescriptions(t, resp.Schema)
	// Read writes the decisions as raw values of this type.
	for _, a := range []string{attrFirstDecision, attrSecondDecision} {
		if got := resp.Schema.Attributes[a].GetType().TerraformType(ctx); !got.Equal(tfDecision) {
			t.Errorf("%s: schema type %v, Read writes %v", a, got, tfDecision)
		}
	}
}

func TestDecodeQuotaDefaults(t *testing.T) {
	qt := tfQuotaType
	num := func(x float64) tftypes.Value { return tftypes.NewValue(tftypes.Number, big.NewFloat(x)) }
	null := tftypes.NewValue(tftypes.Number, nil)
	cases := []struct {
		name string
		in   tftypes.Value
		want *engine.Quota
	}{
		{"unset", tftypes.NewValue(qt, nil), nil},
		{"max only", tftypes.NewValue(qt, map[string]tftypes.Value{quotaMin: null, quotaMax: num(7), quotaPerBranch: null, quotaRounding: tftypes.NewValue(tftypes.String, nil)}),
			&engine.Quota{Min: 0, Max: 7, PerBranch: 1, Rounding: engine.RoundNearest}},
		{"all set", tftypes.NewValue(qt, map[string]tftypes.Value{quotaMin: num(2), quotaMax: num(9), quotaPerBranch: num(0.5), quotaRounding: tftypes.NewValue(tftypes.String, "ceil")}),
			&engine.Quota{Min: 2, Max: 9, PerBranch: 0.5, Rounding: engine.RoundCeil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d decoder
			got, err := d.decodeQuota(c.in, path.Root("q"))
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
	var d decoder
	_, err := d.decodeQuota(tftypes.NewValue(qt, map[string]tftypes.Value{quotaMin: num(1.5), quotaMax: num(9), quotaPerBranch: null, quotaRounding: tftypes.NewValue(tftypes.String, nil)}), path.Root("q"))
	var ve *valueError
	if !errors.As(err, &ve) || ve.path.String() != "q.min" {
		t.Fatalf("a fractional min: got %v, want an error on q.min", err)
	}
}

// configValue is the raw configuration value of m.
func configValue(t testing.TB, m *containerCountsModel) map[string]tftypes.Value {
	t.Helper()
	ctx := context.Background()
	sch := dataSourceSchema(t, NewContainerCountsDataSource())
	st := tfsdk.State{Schema: sch}
	if diags := st.Set(ctx, m); diags.HasError() {
		t.Fatal(diags)
	}
	var top map[string]tftypes.Value
	if err := st.Raw.As(&top); err != nil {
		t.Fatal(err)
	}
	return top
}

func TestCountsRequest(t *testing.T) {
	first, second := testFirst(t), testSecond(t)
	m := newCountsModel(first, second)
	r, err := countsRequest(configValue(t, &m), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, &engine.Request{First: first, Second: second}) {
		t.Fatalf("request differs from the observations it was made of:\n%+v", r)
	}
	pd := &providerData{DefaultFirstModel: "builtin:admission", DefaultSecondModel: "/models/cap.json"}
	if r, _ := countsRequest(configValue(t, &m), pd); r.FirstModel != pd.DefaultFirstModel || r.SecondModel != pd.DefaultSecondModel {
		t.Fatalf("provider defaults not used: got %q %q", r.FirstModel, r.SecondModel)
	}
	m.SecondModel = types.StringValue("builtin:capacity")
	if r, _ := countsRequest(configValue(t, &m), pd); r.SecondModel != "builtin:capacity" {
		t.Fatalf("data source model should beat the provider default: got %q", r.SecondModel)
	}
}

// The config and state models of the data source, for tests that build a
// configuration or read a state through the framework.
type quotaModel struct {
	Min       types.Int64   `tfsdk:"min"`
	Max       types.Int64   `tfsdk:"max"`
	PerBranch types.Float64 `tfsdk:"per_branch"`
	Rounding  types.String  `tfsdk:"rounding"`
}

type containerCountsModel struct {
	First            *observationModel `tfsdk:"first"`
	Second           *observationModel `tfsdk:"second"`
	FirstModel       types.String      `tfsdk:"first_model"`
	SecondModel      types.String      `tfsdk:"second_model"`
	FirstQuota       *quotaModel       `tfsdk:"first_quota"`
	SecondQuota      *quotaModel       `tfsdk:"second_quota"`
	FirstContainers  types.Int64       `tfsdk:"first_containers"`
	SecondContainers types.Int64       `tfsdk:"second_containers"`
	FirstDecision    types.Object      `tfsdk:"first_decision"`
	SecondDecision   types.Object      `tfsdk:"second_decision"`
	Explanation      types.String      `tfsdk:"explanation"`
}

var decisionAttrTypes = func() map[string]attr.Type {
	var resp datasource.SchemaResponse
	NewContainerCountsDataSource().Schema(context.Background(), datasource.SchemaRequest{}, &resp)
	return resp.Schema.Attributes[attrFirstDecision].GetType().(types.ObjectType).AttrTypes
}()

// newCountsModel is a configuration of the data source with the computed
// attributes null.
func newCountsModel(first, second engine.Observation) containerCountsModel {
	f, s := observationFromEngine(&first), observationFromEngine(&second)
	return containerCountsModel{
		First: &f, Second: &s,
		FirstModel: types.StringNull(), SecondModel: types.StringNull(),
		FirstContainers: types.Int64Null(), SecondContainers: types.Int64Null(),
		FirstDecision: types.ObjectNull(decisionAttrTypes), SecondDecision: types.ObjectNull(decisionAttrTypes),
		Explanation: types.StringNull(),
	}
}

// readInProcess runs the data source's Read on configuration m, as the
// framework would, and returns the new state.
func readInProcess(ctx context.Context, ds datasource.DataSource, sch schema.Schema, m *containerCountsModel) (containerCountsModel, diag.Diagnostics) {
	cfg := tfsdk.State{Schema: sch}
	diags := cfg.Set(ctx, m)
	if diags.HasError() {
		return containerCountsModel{}, diags
	}
	req := datasource.ReadRequest{Config: tfsdk.Config{Raw: cfg.Raw, Schema: sch}}
	resp := datasource.ReadResponse{State: tfsdk.State{Schema: sch, Raw: tftypes.NewValue(sch.Type().TerraformType(ctx), nil)}}
	ds.Read(ctx, req, &resp)
	if resp.Diagnostics.HasError() {
		return containerCountsModel{}, resp.Diagnostics
	}
	var out containerCountsModel
	resp.Diagnostics.Append(resp.State.Get(ctx, &out)...)
	return out, resp.Diagnostics
}

func TestContainerCountsReadMatchesEngine(t *testing.T) {
	ctx := context.Background()
	ds := NewContainerCountsDataSource()
	sch := dataSourceSchema(t, ds)
	first, second := testFirst(t), testSecond(t)
	m := newCountsModel(first, second)
	m.SecondQuota = &quotaModel{Min: types.Int64Value(1), Max: types.Int64Value(6), PerBranch: types.Float64Value(0.5), Rounding: types.StringValue("floor")}
	got, diags := readInProcess(ctx, ds, sch, &m)
	if diags.HasError() {
		t.Fatalf("read: %v", diags)
	}
	want, err := engine.DecideRequest(&engine.Request{First: first, Second: second,
		SecondQuota: &engine.Quota{Min: 1, Max: 6, PerBranch: 0.5, Rounding: engine.RoundFloor}})
	if err != nil {
		t.Fatal(err)
	}
	if got.FirstContainers.ValueInt64() != int64(want.First.Containers) || got.SecondContainers.ValueInt64() != int64(want.Second.Containers) {
		t.Errorf("counts %v/%v, engine says %d/%d", got.FirstContainers, got.SecondContainers, want.First.Containers, want.Second.Containers)
	}
	if got.Explanation.ValueString() != want.Explain() {
		t.Errorf("explanation differs from the engine's:\n%s\nwant\n%s", got.Explanation.ValueString(), want.Explain())
	}
	for _, c := range []struct {
		obj  types.Object
		want *engine.HostDecision
	}{{got.FirstDecision, &want.First}, {got.SecondDecision, &want.Second}} {
		a := c.obj.Attributes()
		if a[decReason].(types.String).ValueString() != c.want.Reason() {
			t.Errorf("%s reason %v, want %q", c.want.Role, a[decReason], c.want.Reason())
		}
		if a[decBranchTotal].(types.String).ValueString() != c.want.BranchTotal {
			t.Errorf("%s branch total %v, want %s", c.want.Role, a[decBranchTotal], c.want.BranchTotal)
		}
		if a[decModelDigest].(types.String).ValueString() != c.want.Model.Digest {
			t.Errorf("%s digest %v, want %s", c.want.Role, a[decModelDigest], c.want.Model.Digest)
		}
		if n := len(a[decActivated].(types.List).Elements()); n != len(c.want.Activated) {
			t.Errorf("%s activated %d nodes, want %d", c.want.Role, n, len(c.want.Activated))
		}
	}
}

// TestContainerCountsReadErrorPaths feeds Read (without the schema
// validators, which would catch most of these first) inputs the engine
// refuses, and checks each diagnostic lands on the attribute at fault.
func TestContainerCountsReadErrorPaths(t *testing.T) {
	ctx := context.Background()
	ds := NewContainerCountsDataSource()
	sch := dataSourceSchema(t, ds)
	cases := []struct {
		name   string
		mutate func(m *containerCountsModel)
		want   path.Path
	}{
		{"zero capacity", func(m *containerCountsModel) { m.First.CPUCapacityMHz = types.Float64Value(0) },
			path.Root("first").AtName("cpu_capacity_mhz")},
		{"negative sample", func(m *containerCountsModel) { m.Second.UsageSamples[4].CPUMHz = types.Float64Value(-1) },
			path.Root("second").AtName("usage_samples").AtListIndex(4).AtName("cpu_mhz")},
		{"repeated time", func(m *containerCountsModel) { m.First.UsageSamples[7].Time = m.First.UsageSamples[6].Time },
			path.Root("first").AtName("usage_samples").AtListIndex(7).AtName("time")},
		{"no samples", func(m *containerCountsModel) { m.Second.UsageSamples = nil },
			path.Root("second").AtName("usage_samples")},
		{"quota max below min", func(m *containerCountsModel) {
			m.SecondQuota = &quotaModel{Min: types.Int64Value(5), Max: types.Int64Value(2), PerBranch: types.Float64Null(), Rounding: types.StringNull()}
		}, path.Root("second_quota").AtName("max")},
		{"bad rounding", func(m *containerCountsModel) {
			m.FirstQuota = &quotaModel{Min: types.Int64Null(), Max: types.Int64Value(2), PerBranch: types.Float64Null(), Rounding: types.StringValue("up")}
		}, path.Root("first_quota").AtName("rounding")},
		{"unknown built-in", func(m *containerCountsModel) { m.SecondModel = types.StringValue("builtin:nope") },
			path.Root("second_model")},
		{"missing model file", func(m *containerCountsModel) {
			m.FirstModel = types.StringValue(filepath.Join(t.TempDir(), "missing.json"))
		}, path.Root("first_model")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newCountsModel(testFirst(t), testSecond(t))
			c.mutate(&m)
			_, diags := readInProcess(ctx, ds, sch, &m)
			if !diags.HasError() {
				t.Fatal("no error")
			}
			var found bool
			for _, d := range diags.Errors() {
				if wp, ok := d.(diag.DiagnosticWithPath); ok && wp.Path().Equal(c.want) {
					found = true
					if !strings.Contains(d.Detail(), c.want.String()) {
						t.Errorf("detail %q does not name %s", d.Detail(), c.want)
					}
				}
			}
			if !found {
				t.Fatalf("no diagnostic on %s: %v", c.want, diags)
			}
		})
	}
}

// ---- acceptance tests (real OpenTofu) ----

// decisionCheck is the exact state of a host decision for h.
func decisionCheck(h *engine.HostDecision) knownvalue.Check {
	strs := func(xs []string) knownvalue.Check {
		cs := make([]knownvalue.Check, len(xs))
		for i, x := range xs {
			cs[i] = knownvalue.StringExact(x)
		}
		return knownvalue.ListExact(cs)
	}
	branches := make([]string, len(h.Strongest))
	for i, b := range h.Strongest {
		branches[i] = strings.Join(b.Nodes, " -> ")
	}
	var host knownvalue.Check = knownvalue.Null()
	if h.Host != "" {
		host = knownvalue.StringExact(h.Host)
	}
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		decRole:        knownvalue.StringExact(h.Role),
		decHost:        host,
		decLayer:       knownvalue.StringExact(h.Layer),
		decContainers:  knownvalue.Int64Exact(int64(h.Containers)),
		decAmount:      knownvalue.Int64Exact(int64(h.Amount)),
		decUnclamped:   knownvalue.Int64Exact(int64(h.Unclamped)),
		decClamped:     knownvalue.Bool(h.Clamped),
		decBranchTotal: knownvalue.StringExact(h.BranchTotal),
		decQuota: knownvalue.ObjectExact(map[string]knownvalue.Check{
			quotaMin:       knownvalue.Int64Exact(int64(h.Quota.Min)),
			quotaMax:       knownvalue.Int64Exact(int64(h.Quota.Max)),
			quotaPerBranch: knownvalue.Float64Exact(h.Quota.PerBranch),
			quotaRounding:  knownvalue.StringExact(h.Quota.Rounding),
		}),
		decModelName:   knownvalue.StringExact(h.Model.Name),
		decModelDigest: knownvalue.StringExact(h.Model.Digest),
		decActivated:   strs(h.Activated),
		decStrongest:   strs(branches),
		decReason:      knownvalue.StringExact(h.Reason()),
	})
}

// decisionChecks are the state checks of data source addr for decision d.
func decisionChecks(addr string, d *engine.Decision) []statecheck.StateCheck {
	return []statecheck.StateCheck{
		statecheck.ExpectKnownValue(addr, tfjsonpath.New(attrFirstContainers), knownvalue.Int64Exact(int64(d.First.Containers))),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New(attrSecondContainers), knownvalue.Int64Exact(int64(d.Second.Containers))),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New(attrFirstDecision), decisionCheck(&d.First)),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New(attrSecondDecision), decisionCheck(&d.Second)),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New(attrExplanation), knownvalue.StringExact(d.Explain())),
	}
}

func mustDecide(t *testing.T, r *engine.Request) *engine.Decision {
	t.Helper()
	d, err := engine.DecideRequest(r)
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	return d
}

// baseAttrs is a valid configuration of the data source for the two test
// hosts.
func baseAttrs(t *testing.T) (attrs map[string]string, first, second map[string]string) {
	first, second = observationHCL(testFirst(t)), observationHCL(testSecond(t))
	return map[string]string{attrFirst: hclObject(first), attrSecond: hclObject(second)}, first, second
}

func TestAccContainerCounts_basic(t *testing.T) {
	attrs, _, _ := baseAttrs(t)
	want := mustDecide(t, &engine.Request{First: testFirst(t), Second: testSecond(t)})
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config:            countsConfig(attrs, ""),
		ConfigStateChecks: decisionChecks(countsAddr, want),
	}}})
}

func TestAccContainerCounts_quotasAndModels(t *testing.T) {
	attrs, _, _ := baseAttrs(t)
	fq := engine.Quota{Min: 2, Max: 9, PerBranch: 0.5, Rounding: engine.RoundCeil}
	attrs[attrFirstQuota] = hclObject(quotaHCL(fq))
	// Only max given: min 0, per_branch 1, rounding nearest.
	attrs[attrSecondQuota] = hclObject(map[string]string{quotaMax: "3"})
	attrs[attrFirstModel] = hclString("builtin:admission")
	attrs[attrSecondModel] = hclString("builtin:capacity")
	want := mustDecide(t, &engine.Request{First: testFirst(t), Second: testSecond(t),
		FirstModel: "builtin:admission", SecondModel: "builtin:capacity",
		FirstQuota: &fq, SecondQuota: &engine.Quota{Max: 3, PerBranch: 1, Rounding: engine.RoundNearest}})
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config:            countsConfig(attrs, ""),
		ConfigStateChecks: decisionChecks(countsAddr, want),
	}}})
}

// writeModel writes m as a model file and returns its path.
func writeModel(t *testing.T, dir, name string, m *engine.Model) string {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, data)
}

func builtinModel(t *testing.T, name string) *engine.Model {
	t.Helper()
	p, err := engine.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return p.Model()
}

func TestAccContainerCounts_modelFileAndProviderDefaults(t *testing.T) {
	dir := t.TempDir()
	capFile := writeModel(t, dir, "capacity.json", builtinModel(t, engine.BuiltinCapacity))
	admFile := writeModel(t, dir, "admission.json", builtinModel(t, engine.BuiltinAdmission))
	attrs, _, _ := baseAttrs(t)
	attrs[attrSecondModel] = hclString(capFile)
	// The provider's default model is used for the first host, the data
	// source's own for the second.
	want := mustDecide(t, &engine.Request{First: testFirst(t), Second: testSecond(t), FirstModel: admFile, SecondModel: capFile})
	// Same digests as the built-ins: the digest is of the canonical form.
	def := mustDecide(t, &engine.Request{First: testFirst(t), Second: testSecond(t)})
	if want.First.Model.Digest != def.First.Model.Digest || want.Second.Model.Digest != def.Second.Model.Digest {
		t.Fatalf("a built-in model written to a file has another digest")
	}
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config:            countsConfig(attrs, fmt.Sprintf("provider \"activation\" {\n  default_first_model = %s\n}\n", hclString(admFile))),
		ConfigStateChecks: decisionChecks(countsAddr, want),
	}}})
}

// TestAccContainerCounts_unknownDuringPlan: inputs computed by a resource
// make the counts unknown at plan, not an error; apply then fills them.
func TestAccContainerCounts_unknownDuringPlan(t *testing.T) {
	cases := map[string]struct {
		mutate func(attrs, first map[string]string)
		req    func(r *engine.Request)
	}{
		"capacity": {
			mutate: func(attrs, first map[string]string) {
				first[obsCPUCapacityMHz] = "terraform_data.input.output"
				attrs[attrFirst] = hclObject(first)
			},
		},
		"quota max": {
			mutate: func(attrs, first map[string]string) {
				attrs[attrSecondQuota] = "{ max = terraform_data.input.output / 1000 }"
			},
			req: func(r *engine.Request) {
				r.SecondQuota = &engine.Quota{Max: int(hostMHz / 1000), PerBranch: 1, Rounding: engine.RoundNearest}
			},
		},
		"whole observation": {
			mutate: func(attrs, first map[string]string) {
				attrs[attrSecond] = "terraform_data.second.output"
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			attrs, first, second := baseAttrs(t)
			c.mutate(attrs, first)
			r := &engine.Request{First: testFirst(t), Second: testSecond(t)}
			if c.req != nil {
				c.req(r)
			}
			want := mustDecide(t, r)
			extra := fmt.Sprintf("resource \"terraform_data\" \"input\" {\n  input = %s\n}\n"+
				"resource \"terraform_data\" \"second\" {\n  input = %s\n}\n", hclNum(hostMHz), hclObject(second))
			accTest(t, resource.TestCase{Steps: []resource.TestStep{{
				Config: countsConfig(attrs, extra),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(countsAddr, tfjsonpath.New(attrFirstContainers)),
					plancheck.ExpectUnknownValue(countsAddr, tfjsonpath.New(attrSecondContainers)),
					plancheck.ExpectUnknownValue(countsAddr, tfjsonpath.New(attrExplanation)),
				}},
				ConfigStateChecks: decisionChecks(countsAddr, want),
			}}})
		})
	}
}

// TestAccContainerCounts_golden runs every golden decision vector through
// HCL (observations and quotas read with jsondecode(file())) and checks the
// outputs equal the vector's expected decision.
func TestAccContainerCounts_golden(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var cfg strings.Builder
	var checks []statecheck.StateCheck
	for i, v := range vs {
		file := func(kind string, x any) string {
			data, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("jsondecode(file(%s))", hclString(writeFile(t, dir, fmt.Sprintf("v%d-%s.json", i, kind), data)))
		}
		attrs := map[string]string{attrFirst: file("first", v.Request.First), attrSecond: file("second", v.Request.Second)}
		if v.Request.FirstModel != "" {
			attrs[attrFirstModel] = hclString(v.Request.FirstModel)
		}
		if v.Request.SecondModel != "" {
			attrs[attrSecondModel] = hclString(v.Request.SecondModel)
		}
		if v.Request.FirstQuota != nil {
			attrs[attrFirstQuota] = file("first-quota", v.Request.FirstQuota)
		}
		if v.Request.SecondQuota != nil {
			attrs[attrSecondQuota] = file("second-quota", v.Request.SecondQuota)
		}
		name := fmt.Sprintf("v%d", i)
		cfg.WriteString(fmt.Sprintf("# %s", v.Name) + dataConfig("activation_container_counts", name, attrs))
		want := v.Want
		checks = append(checks, decisionChecks("data.activation_container_counts."+name, &want)...)
	}
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{Config: cfg.String(), ConfigStateChecks: checks}}})
}

// errorCase is one invalid configuration and the error it must give.
type errorCase struct {
	name   string
	config func(t *testing.T) string
	want   string // regular expression; spaces match any white space
}

func errRegexp(s string) *regexp.Regexp {
	return regexp.MustCompile("(?s)" + strings.ReplaceAll(s, " ", `\s+`))
}

// runErrorCases runs each case as its own test case: a failing last step
// would make the closing destroy fail on the same configuration.
func runErrorCases(t *testing.T, cases []errorCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			accTest(t, resource.TestCase{Steps: []resource.TestStep{{
				Config:      c.config(t),
				ExpectError: errRegexp(c.want),
			}}})
		})
	}
}

// mutated returns a configuration of the two test hosts after fn changes
// the attributes (of the data source, the first and the second host).
func mutated(fn func(t *testing.T, attrs, first, second map[string]string)) func(t *testing.T) string {
	return func(t *testing.T) string {
		attrs, first, second := baseAttrs(t)
		fn(t, attrs, first, second)
		attrs[attrFirst], attrs[attrSecond] = hclObject(first), hclObject(second)
		return countsConfig(attrs, "")
	}
}

// samplesHCL renders samples given as (time, cpu) pairs.
func samplesHCL(pairs ...float64) string {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "{ time = %s, cpu_mhz = %s },", hclNum(pairs[i]), hclNum(pairs[i+1]))
	}
	b.WriteString("]")
	return b.String()
}

func TestAccContainerCounts_validationErrors(t *testing.T) {
	set := func(host, attr, v string) func(t *testing.T, attrs, first, second map[string]string) {
		return func(t *testing.T, attrs, first, second map[string]string) {
			if host == attrFirst {
				first[attr] = v
			} else {
				second[attr] = v
			}
		}
	}
	del := func(host, attr string) func(t *testing.T, attrs, first, second map[string]string) {
		return func(t *testing.T, attrs, first, second map[string]string) {
			if host == attrFirst {
				delete(first, attr)
			} else {
				delete(second, attr)
			}
		}
	}
	top := func(attr, v string) func(t *testing.T, attrs, first, second map[string]string) {
		return func(t *testing.T, attrs, first, second map[string]string) { attrs[attr] = v }
	}
	modelFile := func(attr string, m func(t *testing.T) *engine.Model) func(t *testing.T, attrs, first, second map[string]string) {
		return func(t *testing.T, attrs, first, second map[string]string) {
			attrs[attr] = hclString(writeModel(t, t.TempDir(), "model.json", m(t)))
		}
	}
	runErrorCases(t, []errorCase{
		{"cpu capacity zero", mutated(set(attrFirst, obsCPUCapacityMHz, "0")), `Attribute first\.cpu_capacity_mhz is 0; it must be a finite number greater than 0`},
		{"cpu capacity missing", mutated(del(attrSecond, obsCPUCapacityMHz)), `attribute "cpu_capacity_mhz" is required`},
		{"cpu capacity absurd", mutated(set(attrSecond, obsCPUCapacityMHz, "1e12")), `Attribute second\.cpu_capacity_mhz value must be at most`},
		{"memory capacity negative", mutated(set(attrFirst, obsMemoryCapacityMB, "-1")), `Attribute first\.memory_capacity_mb value must be between`},
		{"requested cpu negative", mutated(set(attrSecond, obsRequestedCPUMHz, "-5")), `Attribute second\.requested_cpu_mhz value must be between`},
		{"requested memory negative", mutated(set(attrFirst, obsRequestedMemoryMB, "-5")), `Attribute first\.requested_memory_mb value must be between`},
		{"running replicas negative", mutated(set(attrFirst, obsRunningReplicas, "-1")), `Attribute first\.running_replicas value must be between 0 and`},
		{"running replicas fractional", mutated(set(attrFirst, obsRunningReplicas, "1.5")), `Attribute first\.running_replicas is 1\.5; it must be a whole number`},
		{"wanted replicas fractional", mutated(set(attrSecond, obsWantedReplicas, "2.25")), `Attribute second\.wanted_replicas is 2\.25; it must be a whole number`},
		{"sample time fractional", mutated(set(attrFirst, obsUsageSamples, samplesHCL(60, 100, 120.5, 110))),
			`Attribute first\.usage_samples\[1\]\.time is 120\.5; it must be a whole number`},
		{"quota min fractional", mutated(top(attrFirstQuota, "{ min = 0.5, max = 4 }")), `Attribute first_quota\.min is 0\.5; it must be a whole number`},
		{"replica demand zero", mutated(set(attrSecond, obsReplicaCPUDemandMHz, "0")), `Attribute second\.replica_cpu_demand_mhz is 0; it must be a finite number greater than 0`},
		{"replica memory negative", mutated(set(attrSecond, obsReplicaMemoryDemandMB, "-1")), `Attribute second\.replica_memory_demand_mb value must be between`},
		{"wanted replicas negative", mutated(set(attrSecond, obsWantedReplicas, "-2")), `Attribute second\.wanted_replicas value must be between 0 and`},
		{"host empty", mutated(set(attrFirst, obsHost, `""`)), `Attribute first\.host string length must be between 1 and`},
		{"no samples", mutated(set(attrFirst, obsUsageSamples, "[]")), `Attribute first\.usage_samples list must contain at least 1 elements`},
		{"samples out of order", mutated(set(attrSecond, obsUsageSamples, samplesHCL(60, 100, 120, 110, 90, 120))),
			`Attribute second\.usage_samples\[2\]\.time is 90, not after the previous sample's 120`},
		{"samples repeat a time", mutated(set(attrFirst, obsUsageSamples, samplesHCL(60, 100, 60, 110))),
			`Attribute first\.usage_samples\[1\]\.time is 60, not after`},
		{"sample cpu negative", mutated(set(attrFirst, obsUsageSamples, samplesHCL(60, 100, 120, -1))),
			`Attribute first\.usage_samples\[1\]\.cpu_mhz value must be between`},
		{"sample memory negative", mutated(set(attrSecond, obsUsageSamples, "[{ time = 1, cpu_mhz = 5, memory_mb = -3 }]")),
			`Attribute second\.usage_samples\[0\]\.memory_mb value must be between`},
		{"sample time negative", mutated(set(attrSecond, obsUsageSamples, samplesHCL(-60, 100))),
			`Attribute second\.usage_samples\[0\]\.time value must be at least 0`},
		{"sample cpu missing", mutated(set(attrSecond, obsUsageSamples, "[{ time = 1 }]")), `attribute "cpu_mhz" is required`},
		{"quota min above max", mutated(top(attrFirstQuota, "{ min = 5, max = 2 }")),
			`Attribute first_quota\.max is 2, below first_quota\.min 5`},
		{"quota max missing", mutated(top(attrSecondQuota, "{ min = 1 }")), `attribute "max" is required`},
		{"quota max too large", mutated(top(attrSecondQuota, fmt.Sprintf("{ max = %d }", engine.MaxQuotaCount+1))),
			`Attribute second_quota\.max value must be between 0 and`},
		{"quota min negative", mutated(top(attrFirstQuota, "{ min = -1, max = 3 }")), `Attribute first_quota\.min value must be between 0 and`},
		{"quota per branch zero", mutated(top(attrSecondQuota, "{ max = 3, per_branch = 0 }")),
			`Attribute second_quota\.per_branch is 0; it must be a finite number greater than 0`},
		{"quota per branch too large", mutated(top(attrSecondQuota, fmt.Sprintf("{ max = 3, per_branch = %d }", engine.MaxPerBranch+1))),
			`Attribute second_quota\.per_branch value must be at most`},
		{"quota rounding unknown", mutated(top(attrFirstQuota, `{ max = 3, rounding = "up" }`)),
			`Attribute first_quota\.rounding value must be one of`},
		{"model builtin unknown", mutated(top(attrFirstModel, `"builtin:nope"`)), `Attribute first_model names built-in model "nope", which does not exist`},
		{"model empty", mutated(top(attrSecondModel, `""`)), `Attribute second_model string length must be between 1 and`},
		{"model file missing", mutated(top(attrSecondModel, hclString("/nonexistent/activation/model.json"))),
			`Attribute second_model: loading model /nonexistent/activation/model\.json`},
		{"model file invalid", mutated(modelFile(attrSecondModel, func(t *testing.T) *engine.Model {
			m := *builtinModel(t, engine.BuiltinCapacity)
			m.Layers = append([]engine.Layer(nil), m.Layers...)
			m.Layers[1].Activation = "softmax"
			return &m
		})), `Attribute second_model: .*layers\[1\]\.activation: unknown activation "softmax"`},
		{"model without countable inputs for the first host", mutated(modelFile(attrFirstModel, func(t *testing.T) *engine.Model {
			return builtinModel(t, engine.BuiltinCapacity)
		})), `Attribute first_model: model capacity has no countable inputs`},
		{"model needs memory the observation lacks", func(t *testing.T) string {
			attrs, first, _ := baseAttrs(t)
			delete(first, obsMemoryCapacityMB)
			attrs[attrFirst] = hclObject(first)
			attrs[attrFirstModel] = hclString(writeModel(t, t.TempDir(), "mem.json", memoryModel(t)))
			return countsConfig(attrs, "")
		}, `Attribute first\.memory_capacity_mb: model memory-test needs feature "mem_host_max"`},
		{"provider default model unknown", func(t *testing.T) string {
			attrs, _, _ := baseAttrs(t)
			return countsConfig(attrs, "provider \"activation\" {\n  default_second_model = \"builtin:nope\"\n}\n")
		}, `Attribute default_second_model names built-in model "nope"`},
	})
}

// memoryModel is a tiny valid model whose admission needs memory features.
func memoryModel(t *testing.T) *engine.Model {
	m := &engine.Model{
		Format: engine.ModelFormat, Version: engine.ModelVersion, Name: "memory-test",
		Inputs: []engine.Node{{Name: engine.FeatMemHostMax}, {Name: engine.SlotPrefix + "0", Countable: true}},
		Layers: []engine.Layer{
			{Activation: engine.ActivationReLU, Weights: [][]float64{{-1, 1}}, Biases: []float64{0}},
			{Activation: engine.ActivationSigmoid, Weights: [][]float64{{1}}, Biases: []float64{0}},
		},
		Outputs:    []engine.Node{{Name: "admit"}},
		Provenance: engine.Provenance{Method: "hand-written for a provider test"},
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	return m
}

// BenchmarkContainerCountsRead is the data source's Read in-process with
// the default models and the demo's hour-long observations: configuration
// decoded, one engine decision, state encoded.
func BenchmarkContainerCountsRead(b *testing.B) {
	ctx := context.Background()
	ds := NewContainerCountsDataSource()
	sch := dataSourceSchema(b, ds)
	obs := demoObservations(b)
	m := newCountsModel(obs["first-host.json"], obs["second-host.json"])
	cfg := tfsdk.State{Schema: sch}
	if diags := cfg.Set(ctx, &m); diags.HasError() {
		b.Fatal(diags)
	}
	req := datasource.ReadRequest{Config: tfsdk.Config{Raw: cfg.Raw, Schema: sch}}
	null := tftypes.NewValue(sch.Type().TerraformType(ctx), nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp := datasource.ReadResponse{State: tfsdk.State{Schema: sch, Raw: null}}
		ds.Read(ctx, req, &resp)
		if resp.Diagnostics.HasError() {
			b.Fatal(resp.Diagnostics)
		}
	}
}

// withAttr returns obj with attribute name replaced by v.
func withAttr(t *testing.T, obj tftypes.Value, name string, v tftypes.Value) tftypes.Value {
	t.Helper()
	var m map[string]tftypes.Value
	if err := obj.As(&m); err != nil {
		t.Fatal(err)
	}
	c := make(map[string]tftypes.Value, len(m))
	for k, x := range m {
		c[k] = x
	}
	c[name] = v
	return tftypes.NewValue(obj.Type(), c)
}

// readRaw runs Read on a raw configuration value.
func readRaw(t *testing.T, top map[string]tftypes.Value) datasource.ReadResponse {
	t.Helper()
	ctx := context.Background()
	ds := NewContainerCountsDataSource()
	sch := dataSourceSchema(t, ds)
	typ := sch.Type().TerraformType(ctx)
	resp := datasource.ReadResponse{State: tfsdk.State{Schema: sch, Raw: tftypes.NewValue(typ, nil)}}
	ds.Read(ctx, datasource.ReadRequest{Config: tfsdk.Config{Schema: sch, Raw: tftypes.NewValue(typ, top)}}, &resp)
	return resp
}

// TestContainerCountsReadUnknown: a configuration with an unknown value
// reads as unknown counts, not an error.
func TestContainerCountsReadUnknown(t *testing.T) {
	m := newCountsModel(testFirst(t), testSecond(t))
	top := configValue(t, &m)
	top[attrSecond] = withAttr(t, top[attrSecond], obsCPUCapacityMHz, tftypes.NewValue(tftypes.Number, tftypes.UnknownValue))
	resp := readRaw(t, top)
	if resp.Diagnostics.HasError() {
		t.Fatalf("an unknown input is not an error: %v", resp.Diagnostics)
	}
	var state map[string]tftypes.Value
	if err := resp.State.Raw.As(&state); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{attrFirstContainers, attrSecondContainers, attrFirstDecision, attrSecondDecision, attrExplanation} {
		if state[a].IsKnown() {
			t.Errorf("%s is known: %v", a, state[a])
		}
	}
	if !state[attrFirst].Equal(top[attrFirst]) {
		t.Error("the configuration is not kept in the state")
	}
}

// TestContainerCountsReadBadNumbers: values the schema's types let through
// but that do not decode name their attribute path.
func TestContainerCountsReadBadNumbers(t *testing.T) {
	m := newCountsModel(testFirst(t), testSecond(t))
	base := configValue(t, &m)
	var samples []tftypes.Value
	var first map[string]tftypes.Value
	if err := base[attrFirst].As(&first); err != nil {
		t.Fatal(err)
	}
	if err := first[obsUsageSamples].As(&samples); err != nil {
		t.Fatal(err)
	}
	half := tftypes.NewValue(tftypes.Number, big.NewFloat(1.5))
	bad := append([]tftypes.Value(nil), samples...)
	bad[3] = withAttr(t, bad[3], sampleTime, half)
	cases := map[string]func(top map[string]tftypes.Value){
		"first.usage_samples[3].time": func(top map[string]tftypes.Value) {
			top[attrFirst] = withAttr(t, top[attrFirst], obsUsageSamples, tftypes.NewValue(first[obsUsageSamples].Type(), bad))
		},
		"second.running_replicas": func(top map[string]tftypes.Value) {
			top[attrSecond] = withAttr(t, top[attrSecond], obsRunningReplicas, half)
		},
		"second.cpu_capacity_mhz": func(top map[string]tftypes.Value) {
			huge, _, _ := big.ParseFloat("1e400", 10, 512, big.ToNearestEven)
			top[attrSecond] = withAttr(t, top[attrSecond], obsCPUCapacityMHz, tftypes.NewValue(tftypes.Number, huge))
		},
	}
	for want, mutate := range cases {
		t.Run(want, func(t *testing.T) {
			top := configValue(t, &m)
			mutate(top)
			resp := readRaw(t, top)
			if !resp.Diagnostics.HasError() {
				t.Fatal("no error")
			}
			d, ok := resp.Diagnostics.Errors()[0].(diag.DiagnosticWithPath)
			if !ok || d.Path().String() != want {
				t.Fatalf("diagnostic %v, want one on %s", resp.Diagnostics, want)
			}
		})
	}
}

// BenchmarkContainerCountsRPC is what one instance of the data source costs
// the provider during `tofu plan`: the ValidateDataResourceConfig and
// ReadDataSource calls through the framework's protocol server, with the
// demo's hour-long observations. The difference from
// BenchmarkContainerCountsRead is the framework's own work on the
// configuration (conversions and walks over every value).
func BenchmarkContainerCountsRPC(b *testing.B) {
	ctx := context.Background()
	srv, err := providerFactories[TypeName]()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{}); err != nil {
		b.Fatal(err)
	}
	sch := dataSourceSchema(b, NewContainerCountsDataSource())
	typ := sch.Type().TerraformType(ctx)
	obs := demoObservations(b)
	m := newCountsModel(obs["first-host.json"], obs["second-host.json"])
	cfg, err := tfprotov6.NewDynamicValue(typ, tftypes.NewValue(typ, configValue(b, &m)))
	if err != nil {
		b.Fatal(err)
	}
	name := TypeName + "_container_counts"
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := srv.ValidateDataResourceConfig(ctx, &tfprotov6.ValidateDataResourceConfigRequest{TypeName: name, Config: &cfg})
			if err != nil || len(r.Diagnostics) > 0 {
				b.Fatal(err, r.Diagnostics)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := srv.ReadDataSource(ctx, &tfprotov6.ReadDataSourceRequest{TypeName: name, Config: &cfg})
			if err != nil || len(r.Diagnostics) > 0 {
				b.Fatal(err, r.Diagnostics)
			}
		}
	})
}

func TestContainerCountsValidateConfig(t *testing.T) {
	ctx := context.Background()
	ds := NewContainerCountsDataSource().(*containerCountsDataSource)
	sch := dataSourceSchema(t, ds)
	typ := sch.Type().TerraformType(ctx)
	m := newCountsModel(testFirst(t), testSecond(t))
	m.FirstQuota = &quotaModel{Min: types.Int64Value(2), Max: types.Int64Value(9), PerBranch: types.Float64Null(), Rounding: types.StringNull()}
	num := func(x int64) tftypes.Value { return tftypes.NewValue(tftypes.Number, new(big.Float).SetInt64(x)) }
	unknown := tftypes.NewValue(tftypes.Number, tftypes.UnknownValue)
	setSampleTime := func(top map[string]tftypes.Value, host string, i int, v tftypes.Value) {
		var obs map[string]tftypes.Value
		if err := top[host].As(&obs); err != nil {
			t.Fatal(err)
		}
		var samples []tftypes.Value
		if err := obs[obsUsageSamples].As(&samples); err != nil {
			t.Fatal(err)
		}
		c := append([]tftypes.Value(nil), samples...)
		c[i] = withAttr(t, c[i], sampleTime, v)
		top[host] = withAttr(t, top[host], obsUsageSamples, tftypes.NewValue(obs[obsUsageSamples].Type(), c))
	}
	cases := []struct {
		name   string
		mutate func(top map[string]tftypes.Value)
		want   []string // paths with errors
	}{
		{"valid", func(map[string]tftypes.Value) {}, nil},
		{"min above max", func(top map[string]tftypes.Value) {
			top[attrFirstQuota] = withAttr(t, top[attrFirstQuota], quotaMin, num(10))
		}, []string{"first_quota.max"}},
		{"unknown max", func(top map[string]tftypes.Value) {
			top[attrFirstQuota] = withAttr(t, top[attrFirstQuota], quotaMax, unknown)
		}, nil},
		{"time repeats", func(top map[string]tftypes.Value) {
			setSampleTime(top, attrSecond, 5, num(int64(testSecond(t).Samples[4].Time)))
		}, []string{"second.usage_samples[5].time"}},
		{"time goes back", func(top map[string]tftypes.Value) {
			setSampleTime(top, attrFirst, 1, num(0))
		}, []string{"first.usage_samples[1].time"}},
		{"unknown time", func(top map[string]tftypes.Value) {
			setSampleTime(top, attrFirst, 1, unknown)
		}, nil},
		{"fractional counts", func(top map[string]tftypes.Value) {
			half := tftypes.NewValue(tftypes.Number, big.NewFloat(2.5))
			top[attrFirst] = withAttr(t, top[attrFirst], obsRunningReplicas, half)
			top[attrSecond] = withAttr(t, top[attrSecond], obsWantedReplicas, half)
			top[attrFirstQuota] = withAttr(t, top[attrFirstQuota], quotaMax, half)
			setSampleTime(top, attrSecond, 2, tftypes.NewValue(tftypes.Number, big.NewFloat(float64(testSecond(t).Samples[2].Time)+0.5)))
		}, []string{"first_quota.max", "first.running_replicas", "second.wanted_replicas", "second.usage_samples[2].time"}},
		{"unknown observation", func(top map[string]tftypes.Value) {
			top[attrFirst] = tftypes.NewValue(top[attrFirst].Type(), tftypes.UnknownValue)
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			top := configValue(t, &m)
			c.mutate(top)
			var resp datasource.ValidateConfigResponse
			ds.ValidateConfig(ctx, datasource.ValidateConfigRequest{Config: tfsdk.Config{Schema: sch, Raw: tftypes.NewValue(typ, top)}}, &resp)
			var got []string
			for _, d := range resp.Diagnostics.Errors() {
				if wp, ok := d.(diag.DiagnosticWithPath); ok {
					got = append(got, wp.Path().String())
				} else {
					got = append(got, "(no path) "+d.Detail())
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("errors on %v, want %v", got, c.want)
			}
		})
	}
}
