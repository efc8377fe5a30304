package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/engine/golden"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

const countsAddr = "data.activation_container_counts.test"

// ---- unit tests (no OpenTofu) ----

func TestContainerCountsSchema(t *testing.T) {
	ctx := context.Background()
	s := dataSourceSchema(t, NewContainerCountsDataSource())
	if diags := s.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("ValidateImplementation: %v", diags)
	}
	checkSchemaDescriptions(t, s)
	// The engine is the rule book: no observation or quota attribute
	// carries a validator of its own. Observations and quotas are typed
	// dynamically (an attribute one does not have is refused, not dropped),
	// checked by the provider's decoding and the engine's rules when the
	// configuration is validated; an observation's description lists its
	// attributes, nested ones included.
	for _, root := range []string{attrFirstQuota, attrSecondQuota, attrFirst, attrSecond} {
		if q, ok := s.Attributes[root].(schema.DynamicAttribute); !ok || len(q.Validators) > 0 {
			t.Errorf("%s is a %T with validators %v; want a dynamic attribute without", root, s.Attributes[root], q.Validators)
		}
	}
	for _, root := range []string{attrFirst, attrSecond} {
		desc := s.Attributes[root].GetMarkdownDescription()
		for _, f := range append(append(append([]field(nil), observationFields...), replicaFields...), sampleFields...) {
			if !strings.Contains(desc, "`"+f.name+"`") {
				t.Errorf("%s's description does not name %s", root, f.name)
			}
		}
		if !s.Attributes[root].IsRequired() {
			t.Errorf("%s is optional", root)
		}
	}
	// Both decisions have the one decision type.
	for _, a := range []string{attrFirstDecision, attrSecondDecision} {
		if got := s.Attributes[a].GetType(); !got.Equal(types.ObjectType{AttrTypes: decisionAttrTypes}) {
			t.Errorf("%s: type %v", a, got)
		}
	}
}

// TestModelsFollowTheFields: the typed models' tags are the field table's
// names (the table is the one description of an observation).
func TestModelsFollowTheFields(t *testing.T) {
	for _, c := range []struct {
		model  any
		fields []field
	}{
		{observationModel{}, observationFields}, {quotaModel{}, quotaFields}, {quotasModel{}, quotasFields},
	} {
		var tags, names []string
		rt := reflect.TypeOf(c.model)
		for i := 0; i < rt.NumField(); i++ {
			tags = append(tags, rt.Field(i).Tag.Get("tfsdk"))
		}
		for _, f := range c.fields {
			names = append(names, f.name)
		}
		if !reflect.DeepEqual(tags, names) {
			t.Errorf("%s: tags %v, fields %v", rt.Name(), tags, names)
		}
	}
}

// TestContainerCountsValidateSettings: the quotas, min_samples and
// hold_band are checked with the engine's rules when the configuration is
// validated, every problem at once, each on its attribute; unknown values
// wait until they are known.
func TestContainerCountsValidateSettings(t *testing.T) {
	obj := func(vs map[string]attr.Value) types.Dynamic {
		ts := map[string]attr.Type{}
		for k, v := range vs {
			ts[k] = v.Type(context.Background())
		}
		return types.DynamicValue(types.ObjectValueMust(ts, vs))
	}
	str := types.StringValue
	num := func(s string) types.Number {
		f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		return types.NumberValue(f)
	}
	cases := []struct {
		name   string
		mutate func(m *containerCountsModel)
		want   []string // the attributes at fault, in order
	}{
		{"defaults", func(*containerCountsModel) {}, nil},
		{"every setting fine", func(m *containerCountsModel) {
			m.FirstQuota = obj(map[string]attr.Value{quotaMin: num("1"), quotaMax: num("40"), quotaPerBranch: num("0.5"), quotaRounding: str("floor")})
			m.MinSamples, m.HoldBand = num("0"), num("1.5")
		}, nil},
		{"six problems", func(m *containerCountsModel) {
			m.FirstQuota = obj(map[string]attr.Value{"maximum": num("2")})
			m.SecondQuota = obj(map[string]attr.Value{quotaMin: num("-1"), quotaRounding: str("round")})
			m.MinSamples, m.HoldBand, m.Margin = num("-1"), num("50"), num("-11")
		}, []string{"first_quota", "second_quota.min", "second_quota.rounding", "min_samples", "hold_band", "margin"}},
		{"a margin either way", func(m *containerCountsModel) { m.Margin = num("-10") }, nil},
		{"a margin beyond a float", func(m *containerCountsModel) { m.Margin = num("1e400") }, []string{"margin"}},
		{"host margins either way", func(m *containerCountsModel) {
			m.Margin, m.FirstMargin, m.SecondMargin = num("3"), num("10"), num("-10")
		}, nil},
		{"an explicit host margin of 0", func(m *containerCountsModel) { m.FirstMargin, m.SecondMargin = num("0"), num("0") }, nil},
		{"host margins out of range", func(m *containerCountsModel) {
			m.Margin, m.FirstMargin, m.SecondMargin = num("3"), num("11"), num("-10.5")
		}, []string{"first_margin", "second_margin"}},
		{"a host margin beyond a float", func(m *containerCountsModel) { m.SecondMargin = num("-1e400") }, []string{"second_margin"}},
		{"margin and a host margin out of range", func(m *containerCountsModel) {
			m.Margin, m.FirstMargin = num("-11"), num("12")
		}, []string{"margin", "first_margin"}},
		{"max below min", func(m *containerCountsModel) {
			m.SecondQuota = obj(map[string]attr.Value{quotaMin: num("5"), quotaMax: num("4")})
		}, []string{"second_quota.max"}},
		{"the settings' problems before the observations'", func(m *containerCountsModel) {
			m.First = obj(map[string]attr.Value{"warming_replica": num("1")})
			m.SecondQuota = obj(map[string]attr.Value{quotaMin: num("-1")})
			m.MinSamples = num("-1")
		}, []string{"second_quota.min", "min_samples", "first"}},
		{"a quota not an object", func(m *containerCountsModel) { m.FirstQuota = types.DynamicValue(str("none")) }, []string{"first_quota"}},
		{"fractions", func(m *containerCountsModel) {
			m.FirstQuota = obj(map[string]attr.Value{quotaMax: num("2.5")})
			m.MinSamples = num("2.5")
		}, []string{"first_quota.max", "min_samples"}},
		{"unknown values wait", func(m *containerCountsModel) {
			m.SecondQuota = obj(map[string]attr.Value{quotaMax: types.NumberUnknown(), quotaRounding: str("floor")})
			m.FirstQuota = types.DynamicUnknown()
			m.MinSamples, m.HoldBand = types.NumberUnknown(), types.NumberUnknown()
			m.Margin, m.FirstMargin, m.SecondMargin = types.NumberUnknown(), types.NumberUnknown(), types.NumberUnknown()
		}, nil},
		// An untyped variable, each.value or a module output is an unknown
		// of no type during validation, and a string unknown may stand
		// where a number goes: they wait too.
		{"untyped unknown values wait", func(m *containerCountsModel) {
			m.FirstQuota = obj(map[string]attr.Value{quotaMax: types.DynamicUnknown(), quotaRounding: types.DynamicUnknown()})
			m.SecondQuota = obj(map[string]attr.Value{quotaMin: types.StringUnknown(), quotaPerBranch: types.DynamicUnknown()})
		}, nil},
	}
	ds, ok := NewContainerCountsDataSource().(datasource.DataSourceWithValidateConfig)
	if !ok {
		t.Fatal("the data source has no ValidateConfig")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newCountsModel(&engine.Request{First: testFirst(t), Second: testSecond(t)})
			c.mutate(&m)
			var resp datasource.ValidateConfigResponse
			ds.ValidateConfig(context.Background(), datasource.ValidateConfigRequest{Config: configOf(t, &m)}, &resp)
			var got []string
			for _, d := range resp.Diagnostics.Errors() {
				wp, ok := d.(diag.DiagnosticWithPath)
				if !ok {
					t.Fatalf("an error on no attribute: %s: %s", d.Summary(), d.Detail())
				}
				named := namedAttribute(t, d, wp.Path())
				got = append(got, named)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("errors on %v, want %v: %v", got, c.want, resp.Diagnostics)
			}
		})
	}
}

// configOf is the configuration value of m, as Terraform would send it.
func configOf(t testing.TB, m *containerCountsModel) tfsdk.Config {
	t.Helper()
	sch := dataSourceSchema(t, NewContainerCountsDataSource())
	st := tfsdk.State{Schema: sch}
	if diags := st.Set(context.Background(), m); diags.HasError() {
		t.Fatal(diags)
	}
	return tfsdk.Config{Schema: sch, Raw: st.Raw}
}

// newCountsModel is a configuration of the data source for r (models,
// quotas and minimum included).
func newCountsModel(r *engine.Request) containerCountsModel {
	m := containerCountsModel{
		First: observationDynamic(observationFromEngine(&r.First)), Second: observationDynamic(observationFromEngine(&r.Second)), FirstModel: types.StringNull(), SecondModel: types.StringNull(), MinSamples: types.NumberNull(), HoldBand: types.NumberNull(), Margin: types.NumberNull(),
		FirstMargin: types.NumberNull(), SecondMargin: types.NumberNull(),
		countsResultModel: countsResultModel{FirstContainers: types.Int64Null(), SecondContainers: types.Int64Null(), Explanation: types.StringNull()},
	}
	if r.FirstModel != "" {
		m.FirstModel = types.StringValue(r.FirstModel)
	}
	if r.SecondModel != "" {
		m.SecondModel = types.StringValue(r.SecondModel)
	}
	m.FirstQuota, m.SecondQuota = quotaDynamicOf(r.FirstQuota), quotaDynamicOf(r.SecondQuota)
	if r.MinSamples != 0 {
		m.MinSamples = wholeValue(int64(r.MinSamples))
	}
	if r.HoldBand != 0 {
		m.HoldBand = numberValue(r.HoldBand)
	}
	if r.Margin != 0 {
		m.Margin = numberValue(r.Margin)
	}
	if r.FirstMargin != nil { // an explicit 0 included
		m.FirstMargin = numberValue(*r.FirstMargin)
	}
	if r.SecondMargin != nil {
		m.SecondMargin = numberValue(*r.SecondMargin)
	}
	return m
}

// observationDynamic is an observation as a configuration gives it to the
// data source's (dynamic) first and second: an object of its attributes.
func observationDynamic(m observationModel) types.Dynamic {
	o, diags := types.ObjectValueFrom(context.Background(), observationAttrTypes, m)
	if diags.HasError() {
		panic(fmt.Sprint(diags))
	}
	return types.DynamicValue(o)
}

// editObs changes the host's observation (0 first, 1 second) of m.
func editObs(m *containerCountsModel, host int, edit func(o *observationModel)) {
	d := []*types.Dynamic{&m.First, &m.Second}[host]
	obj, ok := d.UnderlyingValue().(types.Object)
	if !ok {
		panic(fmt.Sprintf("observation %d is %T, not an object", host, d.UnderlyingValue()))
	}
	var o observationModel
	if diags := obj.As(context.Background(), &o, basetypes.ObjectAsOptions{}); diags.HasError() {
		panic(fmt.Sprint(diags))
	}
	edit(&o)
	*d = observationDynamic(o)
}

func quotaDynamicOf(q *engine.QuotaSpec) types.Dynamic {
	if q == nil {
		return types.DynamicNull()
	}
	ts, vs := map[string]attr.Type{}, map[string]attr.Value{}
	if q.Min != nil {
		ts[quotaMin], vs[quotaMin] = types.NumberType, wholeValue(int64(*q.Min))
	}
	if q.Max != nil {
		ts[quotaMax], vs[quotaMax] = types.NumberType, wholeValue(int64(*q.Max))
	}
	if q.PerBranch != nil {
		ts[quotaPerBranch], vs[quotaPerBranch] = types.NumberType, numberValue(*q.PerBranch)
	}
	if q.Rounding != nil {
		ts[quotaRounding], vs[quotaRounding] = types.StringType, types.StringValue(*q.Rounding)
	}
	return types.DynamicValue(types.ObjectValueMust(ts, vs))
}

// TestObservationRoundTrip: an observation with every field set goes
// through the framework (State.Set, Config.Get) and back to the engine
// unchanged; a null queue and an empty one stay apart.
func TestObservationRoundTrip(t *testing.T) {
	first := testFirst(t)
	first.WarmingReplicas, first.OtherReservedCPUMHz, first.OtherReservedMemoryMB = 2, 1234.5, 2048
	first.QueuedReplicas = []engine.Replica{{CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 4000}}
	second := testSecond(t)
	second.QueuedReplicas = []engine.Replica{}
	r := &engine.Request{First: first, Second: second}
	m := newCountsModel(r)
	var back containerCountsModel
	if diags := configOf(t, &m).Get(context.Background(), &back); diags.HasError() {
		t.Fatal(diags)
	}
	if errs := back.decodeObservations(context.Background()); len(errs) > 0 {
		t.Fatal(errs[0])
	}
	for _, c := range []struct {
		m    *observationModel
		want engine.Observation
	}{{back.observations[0], first}, {back.observations[1], second}} {
		got, err := c.m.toEngine(path.Root("x"))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("round trip changed the observation:\n got %+v\nwant %+v", got, c.want)
		}
	}
	if back.observations[1].QueuedReplicas.IsNull() {
		t.Error("an empty queue came back null: `[]` (nobody new wants to run) must not become `unset`")
	}
	s := observationFromEngine(&second)
	s.QueuedReplicas = types.ListNull(types.ObjectType{AttrTypes: replicaAttrTypes})
	m.Second = observationDynamic(s)
	diags := configOf(t, &m).Get(context.Background(), &back)
	if errs := back.decodeObservations(context.Background()); diags.HasError() || len(errs) > 0 || !back.observations[1].QueuedReplicas.IsNull() {
		t.Errorf("a null queue came back as %v (%v, %v)", back.observations[1].QueuedReplicas, diags, errs)
	}
}

// readInProcess runs the data source's Read on the configuration of m, as
// the framework would, with the provider's data pd.
func readInProcess(t testing.TB, pd *providerData, m *containerCountsModel) (containerCountsModel, diag.Diagnostics) {
	t.Helper()
	ctx := context.Background()
	ds := &containerCountsDataSource{data: pd}
	cfg := configOf(t, m)
	resp := datasource.ReadResponse{State: tfsdk.State{Schema: cfg.Schema, Raw: tftypes.NewValue(cfg.Raw.Type(), nil)}}
	ds.Read(ctx, datasource.ReadRequest{Config: cfg}, &resp)
	var out containerCountsModel
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.Get(ctx, &out)...)
	}
	return out, resp.Diagnostics
}

// readMatchingEngine reads request r's observations and settings through
// the data source in process and fails unless its counts and decisions are
// want's (the engine's own decision of r); it returns what was read.
func readMatchingEngine(t *testing.T, r *engine.Request, want *engine.Decision) containerCountsModel {
	t.Helper()
	m := newCountsModel(r)
	got, diags := readInProcess(t, &providerData{}, &m)
	if diags.HasError() {
		t.Fatalf("read: %v", diags)
	}
	if !reflect.DeepEqual(got.countsResultModel, countsResult(want)) {
		t.Fatalf("read differs from the engine's decision:\n got %+v\nwant %+v", got.countsResultModel, countsResult(want))
	}
	return got
}

// margin reaches the engine through the data source's Read and the
// function: the counts are the engine's at that margin, stricter than
// without it, and the explanation says it; a margin beyond 10 logits is an
// error on margin with the engine's reason.
func TestContainerCountsMargin(t *testing.T) {
	r := &engine.Request{First: testFirst(t), Second: testSecond(t), Margin: 3}
	want := mustDecide(t, r)
	zero := *r
	zero.Margin = 0
	base := mustDecide(t, &zero)
	if want.First.Containers >= base.First.Containers && want.Second.Containers >= base.Second.Containers {
		t.Fatalf("a margin of 3 logits moves no count (%d, %d against %d, %d): the case shows nothing",
			want.First.Containers, want.Second.Containers, base.First.Containers, base.Second.Containers)
	}
	got := readMatchingEngine(t, r, want)
	if got.FirstDecision.Margin != 3 || got.SecondDecision.Margin != 3 {
		t.Fatalf("decisions' margins %v and %v, want 3", got.FirstDecision.Margin, got.SecondDecision.Margin)
	}
	if !strings.Contains(got.Explanation.ValueString(), "with a margin of 3 logits") {
		t.Fatalf("the explanation does not say the margin:\n%s", got.Explanation.ValueString())
	}
	fn, ferr := runFunction(t, jsonValue(t, r.First), jsonValue(t, r.Second), jsonValue(t, map[string]any{"margin": 3}))
	if ferr != nil {
		t.Fatal(ferr)
	}
	if !reflect.DeepEqual(fn, countsResult(want)) {
		t.Fatalf("function result differs from the engine's decision:\n got %+v\nwant %+v", fn, countsResult(want))
	}
	assertSettingRefused(t, r, attrMargin, func(r *engine.Request, v float64) { r.Margin = v }, -10.5, 11)
}

// decideAtMargins is the engine's decision of the two observations with
// the built-in models, each host at its own margin (engine.Decide, the
// host inputs built here, not through the request's margins).
func decideAtMargins(t *testing.T, first, second engine.Observation, margins [2]float64) *engine.Decision {
	t.Helper()
	var in [2]engine.HostInput
	for i, o := range []engine.Observation{first, second} {
		role := []string{engine.RoleFirst, engine.RoleSecond}[i]
		p, err := engine.Models.LoadFor(role, "")
		if err != nil {
			t.Fatal(err)
		}
		in[i] = engine.HostInput{Observation: &o, Model: p, Margin: margins[i]}
	}
	d, err := engine.Decide(in[0], in[1])
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	return d
}

// first_margin and second_margin reach the engine through the data
// source's Read and the function, each for its host only: each host is
// decided at its own margin when given (an explicit 0 included) and at
// margin otherwise, as the engine decides it at that margin, and its
// decision's margin says which. A host margin the engine refuses is an
// error on that host's own attribute, with the engine's reason; margin
// refused for a host without its own is still margin's.
func TestContainerCountsHostMargins(t *testing.T) {
	first, second := testFirst(t), testSecond(t)
	// uniform is the engine's decision with both hosts at margin m.
	uniform := func(m float64) *engine.Decision { return decideAtMargins(t, first, second, [2]float64{m, m}) }
	cases := []struct {
		name          string
		margin        float64
		first, second *float64
		at            [2]float64 // each host's margin
	}{
		{"first_margin 10", 0, ptr(10.0), nil, [2]float64{10, 0}},
		{"margin 3, second_margin 0", 3, nil, ptr(0.0), [2]float64{3, 0}},
		{"margin 3, first_margin 0", 3, ptr(0.0), nil, [2]float64{0, 3}},
		{"margin 3, first_margin -2, second_margin 6", 3, ptr(-2.0), ptr(6.0), [2]float64{-2, 6}},
		{"both given as margin", 3, ptr(3.0), ptr(3.0), [2]float64{3, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &engine.Request{First: first, Second: second, Margin: c.margin, FirstMargin: c.first, SecondMargin: c.second}
			want := decideAtMargins(t, first, second, c.at)
			for i, own := range []*float64{c.first, c.second} {
				// Each host is decided as at its margin alone...
				if got, at := hostOfDecision(want, i), hostOfDecision(uniform(c.at[i]), i); !reflect.DeepEqual(got, at) {
					t.Fatalf("host %d at margins %v differs from host %d at margin %v for both", i, c.at, i, c.at[i])
				}
				// ...and an own margin other than margin moves its count,
				// or the case shows nothing.
				if own != nil && *own != c.margin && hostOfDecision(want, i).Containers == hostOfDecision(uniform(c.margin), i).Containers {
					t.Fatalf("host %d: its own margin %v gives the count margin %v gives (%d): the case shows nothing", i, *own, c.margin, hostOfDecision(want, i).Containers)
				}
			}
			got := readMatchingEngine(t, r, want)
			if got.FirstDecision.Margin != c.at[0] || got.SecondDecision.Margin != c.at[1] {
				t.Fatalf("decisions' margins %v and %v, want %v", got.FirstDecision.Margin, got.SecondDecision.Margin, c.at)
			}
			fn, ferr := runFunction(t, jsonValue(t, r.First), jsonValue(t, r.Second), jsonValue(t, quotasOf(r)))
			if ferr != nil {
				t.Fatal(ferr)
			}
			if !reflect.DeepEqual(fn, countsResult(want)) {
				t.Fatalf("function result differs from the engine's decision:\n got %+v\nwant %+v", fn, countsResult(want))
			}
		})
	}
	// first_margin 10 lowers the first host's count below its count at
	// margin 0 (which the quota's minimum does not bound), and leaves the
	// second host's as at margin 0.
	base, strict := uniform(0), decideAtMargins(t, first, second, [2]float64{10, 0})
	if base.First.Containers <= base.First.Quota.Min {
		t.Fatalf("the first host's count at margin 0 (%d) is at its quota's minimum (%d): the case shows nothing", base.First.Containers, base.First.Quota.Min)
	}
	if strict.First.Containers >= base.First.Containers || strict.Second.Containers != base.Second.Containers {
		t.Fatalf("first_margin 10 gives counts %d and %d; want the first below %d and the second %d",
			strict.First.Containers, strict.Second.Containers, base.First.Containers, base.Second.Containers)
	}
	// margin 3 with second_margin 0: the first host at 3, the second at 0.
	split := decideAtMargins(t, first, second, [2]float64{3, 0})
	if split.First.Containers != uniform(3).First.Containers || split.Second.Containers != base.Second.Containers {
		t.Fatalf("margin 3, second_margin 0 gives counts %d and %d; want %d (margin 3) and %d (margin 0)",
			split.First.Containers, split.Second.Containers, uniform(3).First.Containers, base.Second.Containers)
	}
	// Refused: on the host's own attribute, each out of range either way.
	r := &engine.Request{First: first, Second: second}
	assertSettingRefused(t, r, attrFirstMargin, func(r *engine.Request, v float64) { r.FirstMargin = &v }, 11, -10.5)
	assertSettingRefused(t, r, attrSecondMargin, func(r *engine.Request, v float64) { r.SecondMargin = &v }, -10.5, 11)
	// At validate too, with the engine's reason.
	ds := NewContainerCountsDataSource().(datasource.DataSourceWithValidateConfig)
	for _, c := range []struct {
		attr string
		v    float64
	}{{attrFirstMargin, 11}, {attrSecondMargin, -10.5}} {
		bad := *r
		if c.attr == attrFirstMargin {
			bad.FirstMargin = &c.v
		} else {
			bad.SecondMargin = &c.v
		}
		m := newCountsModel(&bad)
		var resp datasource.ValidateConfigResponse
		ds.ValidateConfig(context.Background(), datasource.ValidateConfigRequest{Config: configOf(t, &m)}, &resp)
		assertDiagOn(t, resp.Diagnostics, path.Root(c.attr), path.Root(c.attr), engine.MarginReason(c.v))
	}
	// margin out of range for the host without its own: margin's error.
	r.Margin, r.FirstMargin = 11, ptr(1.0)
	_, err := r.Decide()
	if err == nil {
		t.Fatal("the engine accepts margin 11 for the second host")
	}
	m := newCountsModel(r)
	_, diags := readInProcess(t, &providerData{}, &m)
	assertDiagOn(t, diags, path.Root(attrMargin), path.Root(attrMargin), engine.Reason(err))
	for _, d := range diags.Errors() {
		if wp, ok := d.(diag.DiagnosticWithPath); ok && wp.Path().Equal(path.Root(attrFirstMargin)) {
			t.Errorf("an error on first_margin, which is fine: %s", d.Detail())
		}
	}
}

// assertSettingRefused checks that each of values, set on a copy of r by
// set, is refused by the engine, and by the data source on attr with the
// engine's reason.
func assertSettingRefused(t *testing.T, r *engine.Request, attr string, set func(*engine.Request, float64), values ...float64) {
	t.Helper()
	for _, v := range values {
		bad := *r
		set(&bad, v)
		_, err := bad.Decide()
		if err == nil {
			t.Fatalf("the engine accepts %s %v", attr, v)
		}
		m := newCountsModel(&bad)
		_, diags := readInProcess(t, &providerData{}, &m)
		assertDiagOn(t, diags, path.Root(attr), path.Root(attr), engine.Reason(err))
	}
}

// hold_band reaches the engine: each decision carries the engine's hold
// range (null without a band), through the data source's Read and through
// the function; a band outside 0 to 10 logits is an error on hold_band
// with the engine's reason, and no decision.
func TestContainerCountsHoldBand(t *testing.T) {
	r := &engine.Request{First: testFirst(t), Second: testSecond(t), HoldBand: 2}
	want := mustDecide(t, r)
	f, sd := want.First.Hold, want.Second.Hold
	if f == nil || sd == nil || f.Band != 2 {
		t.Fatalf("the engine gives no hold range: %+v, %+v", f, sd)
	}
	if f.Low == f.High && sd.Low == sd.High {
		t.Fatalf("both hold ranges are one count wide (%+v, %+v): the case shows nothing", f, sd)
	}
	got := readMatchingEngine(t, r, want)
	if h := got.FirstDecision.Hold; h == nil || h.Low != int64(f.Low) || h.High != int64(f.High) || h.Band != 2 {
		t.Fatalf("first host's hold %+v, engine %+v", h, f)
	}
	fn, ferr := runFunction(t, jsonValue(t, r.First), jsonValue(t, r.Second), jsonValue(t, map[string]any{"hold_band": 2}))
	if ferr != nil {
		t.Fatal(ferr)
	}
	if !reflect.DeepEqual(fn, countsResult(want)) {
		t.Fatalf("function result differs from the engine's decision:\n got %+v\nwant %+v", fn, countsResult(want))
	}
	off := *r
	off.HoldBand = 0
	m := newCountsModel(&off)
	if got, diags := readInProcess(t, &providerData{}, &m); diags.HasError() || got.FirstDecision.Hold != nil || got.SecondDecision.Hold != nil {
		t.Fatalf("without hold_band: hold %+v, %+v (%v)", got.FirstDecision.Hold, got.SecondDecision.Hold, diags)
	}
	assertSettingRefused(t, r, attrHoldBand, func(r *engine.Request, v float64) { r.HoldBand = v }, -1, 11)
}

func TestContainerCountsReadMatchesEngine(t *testing.T) {
	minMax := 6
	r := &engine.Request{First: testFirst(t), Second: testSecond(t), MinSamples: 10,
		// Only some fields: the engine fills the others (max: the model's slots).
		FirstQuota:  &engine.QuotaSpec{PerBranch: ptr(0.5)},
		SecondQuota: &engine.QuotaSpec{Min: ptr(1), Max: &minMax, Rounding: ptr(engine.RoundFloor)}}
	m := newCountsModel(r)
	got, diags := readInProcess(t, &providerData{}, &m)
	if diags.HasError() {
		t.Fatalf("read: %v", diags)
	}
	want, err := r.Decide()
	if err != nil {
		t.Fatal(err)
	}
	wantResult := countsResult(want)
	if !reflect.DeepEqual(got.countsResultModel, wantResult) {
		t.Fatalf("state differs from the engine's decision:\n got %+v\nwant %+v", got.countsResultModel, wantResult)
	}
	if got.FirstDecision.Quota.Max != int64(want.First.Quota.Max) || want.First.Quota.Max == 0 {
		t.Errorf("the engine's default max did not reach the state: %+v", got.FirstDecision.Quota)
	}
	if !reflect.DeepEqual(got.First, m.First) {
		t.Error("the configuration is not kept in the state")
	}
}

func ptr[T any](v T) *T { return &v }

// hasNaN reports whether r holds a NaN anywhere a table case puts one.
func hasNaN(r *engine.Request) bool {
	for _, o := range []*engine.Observation{&r.First, &r.Second} {
		for _, s := range o.Samples {
			if math.IsNaN(s.CPUMHz) || math.IsNaN(s.MemoryMB) {
				return true
			}
		}
	}
	for _, q := range []*engine.QuotaSpec{r.FirstQuota, r.SecondQuota} {
		if q != nil && q.PerBranch != nil && math.IsNaN(*q.PerBranch) {
			return true
		}
	}
	return false
}

// invalidRequest is the rule book's case c applied to a valid request whose
// observations hold more than 6 samples.
func invalidRequest(t testing.TB, c testsupport.InvalidInput) *engine.Request {
	r := &engine.Request{First: testFirst(t), Second: testSecond(t)}
	c.Edit(r)
	return r
}

// expectedPath is the attribute the data source must name for case c.
func expectedPath(c testsupport.InvalidInput) path.Path {
	roots := countsRoots.hosts[c.Host]
	switch c.Part {
	case engine.PartQuota:
		return fieldPath(roots.quota, quotaFields, c.Field)
	case engine.PartModel:
		return roots.model
	}
	return fieldPath(roots.observation, observationFields, c.Field)
}

// holdableInvalidInputs is the engine's rule book (testsupport.InvalidInputs)
// less the cases a Terraform value cannot hold: a NaN. A Terraform number
// is a big.Float, which has none, and OpenTofu refuses the configuration
// that tries (0/0) before the provider is called:
// TestAccContainerCounts_invalidInputs shows it for every NaN case.
func holdableInvalidInputs(t testing.TB) []testsupport.InvalidInput {
	var out []testsupport.InvalidInput
	for _, c := range testsupport.InvalidInputs() {
		if !hasNaN(invalidRequest(t, c)) {
			out = append(out, c)
		}
	}
	return out
}

// TestContainerCountsReadInvalidInputs runs the engine's rule book through
// the data source's Read: each broken rule is an error on the attribute
// the table names, with the engine's reason.
func TestContainerCountsReadInvalidInputs(t *testing.T) {
	for _, c := range holdableInvalidInputs(t) {
		t.Run(c.Name, func(t *testing.T) {
			r := invalidRequest(t, c)
			_, err := r.Decide()
			if err == nil {
				t.Fatal("the engine accepts the case")
			}
			m := newCountsModel(r)
			_, diags := readInProcess(t, &providerData{}, &m)
			assertDiagOn(t, diags, countsRoots.subjectOf(expectedPath(c)), expectedPath(c), engine.Reason(err))
		})
	}
}

// TestContainerCountsReadBothHostsWrong: an error on each host's input is
// reported on each attribute in one plan, not the first host's alone; a
// shared setting both hosts refuse is reported once.
func TestContainerCountsReadBothHostsWrong(t *testing.T) {
	r := &engine.Request{First: testFirst(t), Second: testSecond(t)}
	r.First.Samples[1].CPUMHz = -2
	r.Second.ReplicaCPUDemandMHz = 0
	_, err := r.Decide()
	errs := engine.Errors(err)
	if len(errs) != 2 {
		t.Fatalf("the engine gives %d errors, want 2: %v", len(errs), err)
	}
	m := newCountsModel(r)
	_, diags := readInProcess(t, &providerData{}, &m)
	if n := diags.ErrorsCount(); n != 2 {
		t.Fatalf("%d errors, want 2: %v", n, diags)
	}
	for i, c := range []struct{ host, field string }{{engine.RoleFirst, "usage_samples[1].cpu_mhz"}, {engine.RoleSecond, "replica_cpu_demand_mhz"}} {
		p := fieldPath(countsRoots.hosts[c.host].observation, observationFields, c.field)
		assertDiagOn(t, diags, countsRoots.subjectOf(p), p, engine.Reason(errs[i]))
	}

	// Both windows too short: each host's window named.
	r = &engine.Request{First: testFirst(t), Second: testSecond(t), MinSamples: len(testFirst(t).Samples) + 1}
	m = newCountsModel(r)
	_, diags = readInProcess(t, &providerData{}, &m)
	if n := diags.ErrorsCount(); n != 2 {
		t.Fatalf("min_samples above both windows: %d errors, want 2: %v", n, diags)
	}
	// A shared setting both hosts refuse: once.
	r = &engine.Request{First: testFirst(t), Second: testSecond(t), MinSamples: engine.MaxSamples + 1}
	m = newCountsModel(r)
	_, diags = readInProcess(t, &providerData{}, &m)
	if n := diags.ErrorsCount(); n != 1 {
		t.Fatalf("min_samples beyond the limit: %d errors, want 1: %v", n, diags)
	}
	assertDiagOn(t, diags, path.Root(attrMinSamples), path.Root(attrMinSamples), "")
}

// assertDiagOn checks that diags hold an error on subject whose detail
// names p (subject, or an element of the Dynamic attribute subject is) and
// holds reason.
func assertDiagOn(t *testing.T, diags diag.Diagnostics, subject, p path.Path, reason string) {
	t.Helper()
	for _, d := range diags.Errors() {
		if wp, ok := d.(diag.DiagnosticWithPath); ok && wp.Path().Equal(subject) {
			if !strings.Contains(d.Detail(), "Attribute "+p.String()) || !strings.Contains(d.Detail(), reason) {
				t.Errorf("detail %q does not name %s with the reason %q", d.Detail(), p, reason)
			}
			return
		}
	}
	t.Fatalf("no error on %s: %v", p, diags)
}

// TestContainerCountsValidateWindow: the usage windows' shape is checked
// when the configuration is validated (tofu validate, before any plan),
// through the provider's protocol server as OpenTofu calls it; a window not
// known yet is not judged.
func TestContainerCountsValidateWindow(t *testing.T) {
	ctx := context.Background()
	srv, err := providerFactories[TypeName]()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{}); err != nil {
		t.Fatal(err)
	}
	sample := func(attrs map[string]attr.Value) attr.Value {
		ts := map[string]attr.Type{}
		for k, v := range attrs {
			ts[k] = v.Type(ctx)
		}
		return types.ObjectValueMust(ts, attrs)
	}
	good := sample(map[string]attr.Value{sampleTime: wholeValue(60), sampleCPUMHz: numberValue(5)})
	// Every error inside an observation is on the observation (a Dynamic
	// value: OpenTofu finds no range inside it); its detail names the path.
	window := func() *tftypes.AttributePath { return tftypes.NewAttributePath().WithAttributeName(attrFirst) }
	tuple := func(elems ...attr.Value) types.Dynamic {
		ts := make([]attr.Type, len(elems))
		for i, e := range elems {
			ts[i] = e.Type(ctx)
		}
		return types.DynamicValue(types.TupleValueMust(ts, elems))
	}
	for _, c := range []struct {
		name   string
		window types.Dynamic
		path   *tftypes.AttributePath // nil for no error
		detail string
		edit   func(m *containerCountsModel) // other attributes, when set
	}{
		{"samples", tuple(good, sample(map[string]attr.Value{sampleTime: wholeValue(120), sampleCPUMHz: numberValue(7), sampleMemoryMB: numberValue(9)})), nil, "", nil},
		{"numbers as strings", tuple(sample(map[string]attr.Value{sampleTime: types.StringValue("60"), sampleCPUMHz: types.StringValue("5.5")})), nil, "", nil},
		{"not known yet", types.DynamicUnknown(), nil, "", nil},
		{"an extra attribute", tuple(good, sample(map[string]attr.Value{sampleTime: wholeValue(120), sampleCPUMHz: numberValue(7), "cpu": numberValue(7)})),
			window(), `Attribute first.usage_samples[1]: has an attribute "cpu" (did you mean "cpu_mhz"?), which is not one of: time, cpu_mhz, memory_mb.`, nil},
		{"a required attribute missing", tuple(sample(map[string]attr.Value{sampleTime: wholeValue(60)})),
			window(), "Attribute first.usage_samples[0].cpu_mhz: is required.", nil},
		{"a word for a number", tuple(sample(map[string]attr.Value{sampleTime: wholeValue(60), sampleCPUMHz: types.StringValue("high")})),
			window(), `Attribute first.usage_samples[0].cpu_mhz: must be a number, not the string "high".`, nil},
		{"a set", types.DynamicValue(types.SetValueMust(good.Type(ctx), []attr.Value{good})),
			window(), "Attribute first.usage_samples: must be a list, not a set: a set has no order", nil},
		{"an object", types.DynamicValue(good), window(), "Attribute first.usage_samples: must be a list of objects, not an object.", nil},
		{"a fractional time", tuple(good, sample(map[string]attr.Value{sampleTime: numberValue(120.5), sampleCPUMHz: numberValue(7)})),
			window(), "Attribute first.usage_samples[1].time: is 120.5; it must be a whole number", nil},
		{"a fractional time as a string", tuple(sample(map[string]attr.Value{sampleTime: types.StringValue("60.25"), sampleCPUMHz: numberValue(7)})),
			window(), "Attribute first.usage_samples[0].time: is 60.25; it must be a whole number", nil},
		// The counts beside the window, known at validation.
		{"fractional running replicas", tuple(good), tftypes.NewAttributePath().WithAttributeName(attrSecond),
			"Attribute second.running_replicas: is 2.5; it must be a whole number", func(m *containerCountsModel) {
				editObs(m, 1, func(o *observationModel) { o.RunningReplicas = num(t, "2.5") })
			}},
		{"wanted replicas beyond 64 bits", tuple(good), tftypes.NewAttributePath().WithAttributeName(attrFirst),
			"Attribute first.wanted_replicas: is 1e+30, beyond a 64-bit whole number", func(m *containerCountsModel) {
				editObs(m, 0, func(o *observationModel) { o.WantedReplicas = num(t, "1e30") })
			}},
		{"running replicas beyond 32 bits", tuple(good), tftypes.NewAttributePath().WithAttributeName(attrSecond),
			"Attribute second.running_replicas: is 3000000000, beyond a 32-bit whole number", func(m *containerCountsModel) {
				editObs(m, 1, func(o *observationModel) { o.RunningReplicas = num(t, "3000000000") })
			}},
		{"a typed null observation", tuple(good), tftypes.NewAttributePath().WithAttributeName(attrSecond), "Must set a configuration value for the second attribute",
			func(m *containerCountsModel) { m.Second = types.DynamicValue(types.ObjectNull(observationAttrTypes)) }},
		{"a count not known yet", tuple(good), nil, "", func(m *containerCountsModel) {
			editObs(m, 0, func(o *observationModel) { o.WarmingReplicas = types.NumberUnknown() })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newCountsModel(&engine.Request{First: testFirst(t), Second: testSecond(t)})
			editObs(&m, 0, func(o *observationModel) { o.UsageSamples = c.window })
			if c.edit != nil {
				c.edit(&m)
			}
			cfg := configOf(t, &m)
			dv, err := tfprotov6.NewDynamicValue(cfg.Raw.Type(), cfg.Raw)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.ValidateDataResourceConfig(ctx, &tfprotov6.ValidateDataResourceConfigRequest{TypeName: TypeName + "_container_counts", Config: &dv})
			if err != nil {
				t.Fatal(err)
			}
			if c.path == nil {
				if len(resp.Diagnostics) > 0 {
					t.Fatalf("refused at validation: %v", resp.Diagnostics[0].Detail)
				}
				return
			}
			if len(resp.Diagnostics) != 1 {
				t.Fatalf("want one error at validation, got %d", len(resp.Diagnostics))
			}
			if d := resp.Diagnostics[0]; !d.Attribute.Equal(c.path) || !strings.Contains(d.Detail, c.detail) {
				t.Errorf("error %q on %v, want %q on %v", d.Detail, d.Attribute, c.detail, c.path)
			}
		})
	}
}

// TestContainerCountsReadTypeErrors: values a configuration can hold that
// do not fit the engine's types name their attribute.
func TestContainerCountsReadTypeErrors(t *testing.T) {
	num := func(s string) types.Number { return num(t, s) }
	inf := types.NumberValue(new(big.Float).SetInf(false))
	cases := []struct {
		name   string
		mutate func(m *containerCountsModel)
		want   string
		reason string
	}{
		{"fractional replicas", func(m *containerCountsModel) {
			editObs(m, 0, func(o *observationModel) { o.RunningReplicas = num("1.5") })
		},
			"first.running_replicas", "is 1.5; it must be a whole number"},
		{"fractional time", func(m *containerCountsModel) {
			editObs(m, 1, func(o *observationModel) { setSample(t, &o.UsageSamples, 3, sampleTime, num("120.25")) })
		},
			"second.usage_samples[3].time", "is 120.25; it must be a whole number"},
		{"time beyond 64 bits", func(m *containerCountsModel) {
			editObs(m, 0, func(o *observationModel) { setSample(t, &o.UsageSamples, 0, sampleTime, num("1e30")) })
		},
			"first.usage_samples[0].time", "is 1e+30, beyond a 64-bit whole number"},
		{"count far beyond the engine's", func(m *containerCountsModel) {
			editObs(m, 1, func(o *observationModel) { o.WantedReplicas = num("1e30") })
		},
			"second.wanted_replicas", "is 1e+30, beyond a 64-bit whole number"},
		{"count beyond 32 bits", func(m *containerCountsModel) {
			editObs(m, 1, func(o *observationModel) { o.RunningReplicas = num("3000000000") })
		},
			"second.running_replicas", "is 3000000000, beyond a 32-bit whole number"},
		{"infinite count", func(m *containerCountsModel) { editObs(m, 0, func(o *observationModel) { o.WarmingReplicas = inf }) },
			"first.warming_replicas", "is +Inf; it must be a whole number"},
		{"figure beyond a float", func(m *containerCountsModel) {
			editObs(m, 1, func(o *observationModel) { o.CPUCapacityMHz = num("1e400") })
		},
			"second.cpu_capacity_mhz", "is 1e+400, beyond a 64-bit floating point number"},
		{"figure below a float", func(m *containerCountsModel) {
			editObs(m, 0, func(o *observationModel) { o.ReplicaCPUDemandMHz = num("1e-400") })
		},
			"first.replica_cpu_demand_mhz", "is 1e-400, closer to 0 than a 64-bit floating point number can hold"},
		{"quota per_branch below a float", func(m *containerCountsModel) {
			m.SecondQuota = types.DynamicValue(types.ObjectValueMust(map[string]attr.Type{quotaPerBranch: types.NumberType}, map[string]attr.Value{quotaPerBranch: num("1e-400")}))
		}, "second_quota.per_branch", "is 1e-400, closer to 0 than a 64-bit floating point number can hold"},
		{"infinite figure: the engine's rule", func(m *containerCountsModel) {
			editObs(m, 0, func(o *observationModel) { setSample(t, &o.UsageSamples, 2, sampleMemoryMB, inf) })
		},
			"first.usage_samples[2].memory_mb", "is +Inf; it must be a finite number >= 0"},
		{"fractional quota", func(m *containerCountsModel) {
			m.SecondQuota = types.DynamicValue(types.ObjectValueMust(map[string]attr.Type{quotaMin: types.NumberType}, map[string]attr.Value{quotaMin: num("0.5")}))
		}, "second_quota.min", "is 0.5; it must be a whole number"},
		{"misspelt quota attribute", func(m *containerCountsModel) {
			m.FirstQuota = types.DynamicValue(types.ObjectValueMust(map[string]attr.Type{"maximum": types.NumberType}, map[string]attr.Value{"maximum": num("2")}))
		}, "first_quota", `has an attribute "maximum" (did you mean "max"?), which is not one of: min, max, per_branch, rounding`},
		{"min samples fractional", func(m *containerCountsModel) { m.MinSamples = num("2.5") }, "min_samples", "is 2.5; it must be a whole number"},
		{"min samples: the engine's rule", func(m *containerCountsModel) { m.MinSamples = num("20000") }, "min_samples", "is 20000; it must be 0 (the default, 3) or from 1 to"},
		{"too few samples", func(m *containerCountsModel) { m.MinSamples = num("31") }, "first.usage_samples", "has 30 sample(s); at least 31 are needed"},
		{"too few samples: what to change", func(m *containerCountsModel) { m.MinSamples = num("31") }, "first.usage_samples",
			"has 30 sample(s); at least 31 are needed to judge (min_samples). An observation from activation_host_usage holds as many samples as it reads (its `samples`, default 3): raise `samples` there, or lower `min_samples` here"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newCountsModel(&engine.Request{First: testFirst(t), Second: testSecond(t)})
			c.mutate(&m)
			_, diags := readInProcess(t, &providerData{}, &m)
			found := false
			for _, d := range diags.Errors() {
				if wp, ok := d.(diag.DiagnosticWithPath); ok && namedAttribute(t, d, wp.Path()) == c.want {
					found = true
					if !strings.Contains(d.Detail(), "Attribute "+c.want+": "+c.reason) {
						t.Errorf("detail %q, want %q", d.Detail(), c.reason)
					}
				}
			}
			if !found {
				t.Fatalf("no error on %q: %v", c.want, diags)
			}
		})
	}
}

// num is a number of HCL's precision, from its decimal text.
func num(t testing.TB, s string) types.Number {
	t.Helper()
	f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
	if err != nil {
		t.Fatal(err)
	}
	return types.NumberValue(f)
}

// setSample sets attribute name of sample i of a window to v.
func setSample(t *testing.T, window *types.Dynamic, i int, name string, v attr.Value) {
	t.Helper()
	list, ok := window.UnderlyingValue().(types.List)
	if !ok {
		t.Fatalf("the window is a %T", window.UnderlyingValue())
	}
	elems := list.Elements()
	o, ok := elems[i].(types.Object)
	if !ok {
		t.Fatalf("sample %d is a %T", i, elems[i])
	}
	a := o.Attributes()
	a[name] = v
	elems[i] = types.ObjectValueMust(o.AttributeTypes(context.Background()), a)
	*window = types.DynamicValue(types.ListValueMust(list.ElementType(context.Background()), elems))
}

func TestContainerCountsReadModels(t *testing.T) {
	dir := t.TempDir()
	capFile := writeModel(t, dir, "capacity.json", builtinModel(t, engine.BuiltinCapacity))
	r := &engine.Request{First: testFirst(t), Second: testSecond(t)}
	cases := []struct {
		name   string
		pd     providerData
		first  string
		want   string // path of the error, "" for none
		detail string
	}{
		{"provider default used", providerData{DefaultSecondModel: types.StringValue(capFile)}, "", "", ""},
		{"missing file", providerData{}, filepath.Join(dir, "missing.json"), "first_model", "no such file"},
		{"model cannot serve the role", providerData{}, capFile, "first_model", "Attribute first_model: "},
		{"bad provider default", providerData{DefaultFirstModel: types.StringValue(filepath.Join(dir, "gone.json"))}, "", "first_model",
			"Attribute first_model: is unset, so the provider's default_first_model (" + filepath.Join(dir, "gone.json") + ") is used"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newCountsModel(r)
			if c.first != "" {
				m.FirstModel = types.StringValue(c.first)
			}
			got, diags := readInProcess(t, &c.pd, &m)
			if c.want == "" {
				if diags.HasError() {
					t.Fatal(diags)
				}
				want, err := (&engine.Request{First: r.First, Second: r.Second, SecondModel: capFile}).Decide()
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.countsResultModel, countsResult(want)) {
					t.Fatal("the decision is not the engine's with the provider's default model")
				}
				return
			}
			for _, d := range diags.Errors() {
				if wp, ok := d.(diag.DiagnosticWithPath); ok && wp.Path().String() == c.want && strings.Contains(d.Detail(), c.detail) {
					return
				}
			}
			t.Fatalf("no error on %s holding %q: %v", c.want, c.detail, diags)
		})
	}
}

// TestContainerCountsReadUnknown: OpenTofu defers a read whose
// configuration holds a value known only at apply, and refuses a data
// source's unknown result ("Provider produced invalid object"); if such a
// read arrives anyway, a client that allows deferral gets the read
// deferred, and any other an error, never unknown results.
func TestContainerCountsReadUnknown(t *testing.T) {
	ctx := context.Background()
	m := newCountsModel(&engine.Request{First: testFirst(t), Second: testSecond(t)})
	editObs(&m, 1, func(o *observationModel) { o.CPUCapacityMHz = types.NumberUnknown() })
	cfg := configOf(t, &m)
	for _, deferral := range []bool{true, false} {
		resp := datasource.ReadResponse{State: tfsdk.State{Schema: cfg.Schema, Raw: tftypes.NewValue(cfg.Raw.Type(), nil)}}
		req := datasource.ReadRequest{Config: cfg, ClientCapabilities: datasource.ReadClientCapabilities{DeferralAllowed: deferral}}
		(&containerCountsDataSource{}).Read(ctx, req, &resp)
		if deferral {
			if resp.Diagnostics.HasError() || resp.Deferred == nil || resp.Deferred.Reason != datasource.DeferredReasonDataSourceConfigUnknown {
				t.Errorf("deferral allowed: deferred %+v, diagnostics %v; want the read deferred", resp.Deferred, resp.Diagnostics)
			}
			continue
		}
		if !resp.Diagnostics.HasError() || resp.Deferred != nil {
			t.Errorf("no deferral: deferred %+v, diagnostics %v; want an error", resp.Deferred, resp.Diagnostics)
		}
		if !resp.State.Raw.IsNull() {
			t.Errorf("no deferral: state %v written; want none", resp.State.Raw)
		}
	}
}

// benchRead runs Read on r's configuration b.N times.
func benchRead(b *testing.B, r *engine.Request) {
	ctx := context.Background()
	ds := &containerCountsDataSource{data: &providerData{}}
	m := newCountsModel(r)
	cfg := configOf(b, &m)
	null := tftypes.NewValue(cfg.Raw.Type(), nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp := datasource.ReadResponse{State: tfsdk.State{Schema: cfg.Schema, Raw: null}}
		ds.Read(ctx, datasource.ReadRequest{Config: cfg}, &resp)
		if resp.Diagnostics.HasError() {
			b.Fatal(resp.Diagnostics)
		}
	}
}

// BenchmarkContainerCountsRead is the data source's Read in-process with
// the default models and the demo's hour-long observations: configuration
// decoded by the framework, one engine decision, state encoded.
func BenchmarkContainerCountsRead(b *testing.B) {
	obs := demoObservations(b)
	benchRead(b, &engine.Request{First: obs["first-host.json"], Second: obs["second-host.json"]})
}

// BenchmarkContainerCountsReadLargest is Read with the largest observation
// the engine accepts (engine.MaxSamples samples) on both hosts.
func BenchmarkContainerCountsReadLargest(b *testing.B) {
	benchRead(b, &engine.Request{First: largestObservation(b, "series3"), Second: largestObservation(b, "series5")})
}

// largestObservation is a host with engine.MaxSamples one-minute samples:
// the real series repeated, with times that keep increasing.
func largestObservation(tb testing.TB, series string) engine.Observation {
	base := testsupport.SeriesObservation(tb, series, 3000, 3000, 6, 0.1)
	o := base
	o.Samples = make([]engine.Sample, engine.MaxSamples)
	for i := range o.Samples {
		s := base.Samples[i%len(base.Samples)]
		s.Time = base.Samples[0].Time + int64(60*i)
		o.Samples[i] = s
	}
	return o
}

// BenchmarkContainerCountsRPC is what one instance of the data source costs
// the provider during `tofu plan`: the ValidateDataResourceConfig and
// ReadDataSource calls through the framework's protocol server, with the
// demo's hour-long observations. The difference from
// BenchmarkContainerCountsRead is the framework's own work on the
// configuration (conversions and walks over every value).
func BenchmarkContainerCountsRPC(b *testing.B) {
	obs := demoObservations(b)
	benchRPC(b, &engine.Request{First: obs["first-host.json"], Second: obs["second-host.json"]}, false)
}

// BenchmarkContainerCountsRPCLargest is the same with engine.MaxSamples
// samples on both hosts, each window a tuple of objects as OpenTofu sends
// jsondecode()'s.
func BenchmarkContainerCountsRPCLargest(b *testing.B) {
	benchRPC(b, &engine.Request{First: largestObservation(b, "series3"), Second: largestObservation(b, "series5")}, true)
}

func benchRPC(b *testing.B, r *engine.Request, tuples bool) {
	ctx := context.Background()
	srv, err := providerFactories[TypeName]()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{}); err != nil {
		b.Fatal(err)
	}
	m := newCountsModel(r)
	if tuples {
		for host := range 2 {
			editObs(&m, host, func(o *observationModel) { o.UsageSamples = windowAsTuple(b, o.UsageSamples) })
		}
	}
	c := configOf(b, &m)
	cfg, err := tfprotov6.NewDynamicValue(c.Raw.Type(), c.Raw)
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

// windowAsTuple is a window as jsondecode() gives it: a tuple of objects.
func windowAsTuple(tb testing.TB, w types.Dynamic) types.Dynamic {
	l, ok := w.UnderlyingValue().(types.List)
	if !ok {
		tb.Fatalf("the window is a %T", w.UnderlyingValue())
	}
	elems := l.Elements()
	ts := make([]attr.Type, len(elems))
	for i, e := range elems {
		ts[i] = e.Type(context.Background())
	}
	return types.DynamicValue(types.TupleValueMust(ts, elems))
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
	var refused knownvalue.Check = knownvalue.Null()
	if r := h.Refused; r != nil {
		refused = knownvalue.ObjectExact(map[string]knownvalue.Check{
			refSlot: knownvalue.Int64Exact(int64(r.Slot)), refName: knownvalue.StringExact(r.Name), refRunning: knownvalue.Bool(r.Running),
			refCPUMHz: knownvalue.Float64Exact(r.CPUMHz), refMemoryMB: knownvalue.Float64Exact(r.MemoryMB),
			refResource: knownvalue.StringExact(r.Resource), refReason: knownvalue.StringExact(r.Reason),
		})
	}
	var hold knownvalue.Check = knownvalue.Null()
	if hr := h.Hold; hr != nil {
		hold = knownvalue.ObjectExact(map[string]knownvalue.Check{
			holdBand: knownvalue.Float64Exact(hr.Band), holdLow: knownvalue.Int64Exact(int64(hr.Low)), holdHigh: knownvalue.Int64Exact(int64(hr.High)),
		})
	}
	pl := h.Placement
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		decHold:       hold,
		decRole:       knownvalue.StringExact(h.Role),
		decHost:       host,
		decLayer:      knownvalue.StringExact(h.Layer),
		decContainers: knownvalue.Int64Exact(int64(h.Containers)),
		decAmount:     knownvalue.Int64Exact(int64(h.Amount)),
		decUnclamped:  knownvalue.Int64Exact(int64(h.Unclamped)),
		decClamped:    knownvalue.Bool(h.Clamped),
		decLimit:      knownvalue.StringExact(h.Limit),
		decRefused:    refused,
		decEvidence: knownvalue.ObjectExact(map[string]knownvalue.Check{
			evBasis: knownvalue.StringExact(h.Evidence.Basis), evNote: knownvalue.StringExact(h.Evidence.Note),
			evMemoryJudged: knownvalue.Bool(h.Evidence.MemoryJudged),
			evRunning:      knownvalue.Int64Exact(int64(h.Evidence.Running)), evWarming: knownvalue.Int64Exact(int64(h.Evidence.Warming)),
		}),
		decPlacement: knownvalue.ObjectExact(map[string]knownvalue.Check{
			plPlaceable: knownvalue.Int64Exact(int64(pl.Placeable)), plFreeCPUMHz: knownvalue.Float64Exact(pl.FreeCPUMHz),
			plFreeMemoryMB: knownvalue.Float64Exact(pl.FreeMemoryMB), plReplicaCPUMHz: knownvalue.Float64Exact(pl.ReplicaCPUMHz),
			plReplicaMemoryMB: knownvalue.Float64Exact(pl.ReplicaMemoryMB), plCPUMHz: knownvalue.Int64Exact(int64(pl.CPUMHz)),
			plMemoryMB: knownvalue.Int64Exact(int64(pl.MemoryMB)), plMemoryMaxMB: knownvalue.Int64Exact(int64(pl.MemoryMaxMB)),
			plFits: knownvalue.Bool(pl.Fits), plQueued: knownvalue.Int64Exact(int64(pl.Queued)),
		}),
		decBranchTotal: knownvalue.StringExact(h.BranchTotal),
		decMargin:      knownvalue.Float64Exact(h.Margin),
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
	d, err := r.Decide()
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

// TestAccContainerCounts_holdBand: hold_band reaches the engine through a
// real OpenTofu, and each decision's hold is the engine's range; a band
// beyond 10 logits names hold_band.
func TestAccContainerCounts_holdBand(t *testing.T) {
	r := &engine.Request{First: testFirst(t), Second: testSecond(t), HoldBand: 0.5}
	want := mustDecide(t, r)
	if want.First.Hold == nil || want.Second.Hold == nil {
		t.Fatal("the engine gives no hold range")
	}
	bad := *r
	bad.HoldBand = 11
	_, err := bad.Decide()
	if err == nil {
		t.Fatal("the engine accepts a hold band of 11")
	}
	accTest(t, resource.TestCase{Steps: []resource.TestStep{
		{Config: countsConfig(requestAttrs(r), ""), ConfigStateChecks: decisionChecks(countsAddr, want)},
	}})
	// The refusal in a case of its own: a bad setting fails validation, and
	// the closing destroy of a case would validate it again.
	runErrorCases(t, []errorCase{{"band 11", func(*testing.T) string { return countsConfig(requestAttrs(&bad), "") },
		literal("Attribute hold_band: ") + literal(strings.TrimSuffix(engine.Reason(err), "."))}})
}

// TestAccContainerCounts_margin: margin reaches the engine through a real
// OpenTofu, in the data source and the function, and the counts are the
// engine's at that margin; a margin beyond 10 logits names margin.
func TestAccContainerCounts_margin(t *testing.T) {
	r := &engine.Request{First: testFirst(t), Second: testSecond(t), Margin: 2.5}
	want := mustDecide(t, r)
	zero := *r
	zero.Margin = 0
	if base := mustDecide(t, &zero); want.First.Containers == base.First.Containers && want.Second.Containers == base.Second.Containers {
		t.Fatal("a margin of 2.5 logits moves no count: the case shows nothing")
	}
	call := fmt.Sprintf("output \"counts\" {\n  value = provider::activation::container_counts(%s, %s, { margin = 2.5 })\n}\n",
		hclObject(observationHCL(r.First)), hclObject(observationHCL(r.Second)))
	accTest(t, resource.TestCase{Steps: []resource.TestStep{
		{Config: countsConfig(requestAttrs(r), call), ConfigStateChecks: append(decisionChecks(countsAddr, want),
			statecheck.ExpectKnownOutputValueAtPath("counts", tfjsonpath.New("first_containers"), knownvalue.Int64Exact(int64(want.First.Containers))),
			statecheck.ExpectKnownOutputValueAtPath("counts", tfjsonpath.New("second_containers"), knownvalue.Int64Exact(int64(want.Second.Containers))),
			statecheck.ExpectKnownValue(countsAddr, tfjsonpath.New("second_decision").AtMapKey("margin"), knownvalue.Float64Exact(2.5)),
			statecheck.ExpectKnownOutputValueAtPath("counts", tfjsonpath.New("first_decision").AtMapKey("margin"), knownvalue.Float64Exact(2.5)))},
	}})
	bad := *r
	bad.Margin = 11
	_, err := bad.Decide()
	if err == nil {
		t.Fatal("the engine accepts a margin of 11")
	}
	runErrorCases(t, []errorCase{{"margin 11", func(*testing.T) string { return countsConfig(requestAttrs(&bad), "") },
		literal("Attribute margin: ") + literal(strings.TrimSuffix(engine.Reason(err), "."))}})
}

// TestAccContainerCounts_hostMargins: first_margin and second_margin reach
// the engine through a real OpenTofu, in the data source and the
// function, each for its host only: the counts and decisions are the
// engine's with each host at its own margin (first_margin 10 lowers the
// first host's count and leaves the second's; margin 3 with second_margin
// 0 decides the first host at 3 and the second at 0), and each decision's
// margin is its host's. A host margin out of range is refused naming that
// host's attribute.
func TestAccContainerCounts_hostMargins(t *testing.T) {
	first, second := testFirst(t), testSecond(t)
	base := decideAtMargins(t, first, second, [2]float64{0, 0})
	var steps []resource.TestStep
	for _, c := range []struct {
		r      engine.Request
		quotas string // the function's third argument
		at     [2]float64
	}{
		{engine.Request{FirstMargin: ptr(10.0)}, "{ first_margin = 10 }", [2]float64{10, 0}},
		{engine.Request{Margin: 3, SecondMargin: ptr(0.0)}, "{ margin = 3, second_margin = 0 }", [2]float64{3, 0}},
	} {
		r := c.r
		r.First, r.Second = first, second
		want := decideAtMargins(t, first, second, c.at)
		if want.First.Containers == base.First.Containers && want.Second.Containers == base.Second.Containers {
			t.Fatalf("margins %v move no count: the case shows nothing", c.at)
		}
		call := fmt.Sprintf("output \"counts\" {\n  value = provider::activation::container_counts(%s, %s, %s)\n}\n",
			hclObject(observationHCL(first)), hclObject(observationHCL(second)), c.quotas)
		checks := decisionChecks(countsAddr, want)
		for i, d := range []string{attrFirstDecision, attrSecondDecision} {
			checks = append(checks,
				statecheck.ExpectKnownValue(countsAddr, tfjsonpath.New(d).AtMapKey(decMargin), knownvalue.Float64Exact(c.at[i])),
				statecheck.ExpectKnownOutputValueAtPath("counts", tfjsonpath.New(d), decisionCheck(hostOfDecision(want, i))),
				statecheck.ExpectKnownOutputValueAtPath("counts", tfjsonpath.New(d).AtMapKey(decMargin), knownvalue.Float64Exact(c.at[i])))
		}
		steps = append(steps, resource.TestStep{Config: countsConfig(requestAttrs(&r), call), ConfigStateChecks: checks})
	}
	if base.First.Containers <= base.First.Quota.Min {
		t.Fatalf("the first host's count at margin 0 (%d) is at its quota's minimum: first_margin 10 cannot lower it", base.First.Containers)
	}
	if d := decideAtMargins(t, first, second, [2]float64{10, 0}); d.First.Containers >= base.First.Containers {
		t.Fatalf("first_margin 10 gives the first host %d containers, %d at margin 0: not fewer", d.First.Containers, base.First.Containers)
	}
	accTest(t, resource.TestCase{Steps: steps})
	// The refusals in cases of their own (a bad setting fails validation,
	// and the closing destroy of a case would validate it again).
	var cases []errorCase
	for _, c := range []struct {
		attr string
		v    float64
	}{{attrFirstMargin, 11}, {attrSecondMargin, -10.5}} {
		bad := engine.Request{First: first, Second: second}
		if c.attr == attrFirstMargin {
			bad.FirstMargin = &c.v
		} else {
			bad.SecondMargin = &c.v
		}
		_, err := bad.Decide()
		if err == nil {
			t.Fatalf("the engine accepts %s %v", c.attr, c.v)
		}
		reason := literal(strings.TrimSuffix(engine.Reason(err), "."))
		cases = append(cases,
			errorCase{fmt.Sprintf("%s %v", c.attr, c.v), func(*testing.T) string { return countsConfig(requestAttrs(&bad), "") },
				literal("Attribute "+c.attr+": ") + reason},
			errorCase{fmt.Sprintf("quotas.%s %v", c.attr, c.v), func(*testing.T) string {
				return fmt.Sprintf("output \"counts\" {\n  value = provider::activation::container_counts(%s, %s, { %s = %v })\n}\n",
					hclObject(observationHCL(first)), hclObject(observationHCL(second)), c.attr, c.v)
			}, `Invalid value for "quotas" parameter: ` + literal("Attribute quotas."+c.attr+": ") + reason})
	}
	runErrorCases(t, cases)
}

// hostOfDecision is d's first (0) or second (1) host decision.
func hostOfDecision(d *engine.Decision, i int) *engine.HostDecision {
	return []*engine.HostDecision{&d.First, &d.Second}[i]
}

// TestAccContainerCounts_newInputs: warming replicas, a queue of replicas
// of different sizes, other workloads' reservations and min_samples reach
// the engine, and the outputs are its decision.
func TestAccContainerCounts_newInputs(t *testing.T) {
	first, second := testFirst(t), testSecond(t)
	first.WarmingReplicas = 2
	first.QueuedReplicas = []engine.Replica{{CPUMHz: 500, MemoryMB: 256}, {CPUMHz: 6000, MemoryMB: 60000}, {CPUMHz: 500}}
	second.OtherReservedCPUMHz, second.OtherReservedMemoryMB = 12000, 32768
	r := &engine.Request{First: first, Second: second, MinSamples: 20}
	want := mustDecide(t, r)
	if want.First.Refused == nil || want.Second.Placement.FreeCPUMHz != 8000 {
		t.Fatalf("the case no longer shows a refused replica and a reduced room: %+v", want)
	}
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config:            countsConfig(requestAttrs(r), ""),
		ConfigStateChecks: decisionChecks(countsAddr, want),
	}}})
}

// TestAccContainerCounts_numbersAsStrings: numbers written as strings in a
// usage window are those numbers, as OpenTofu converts them for the
// observation's typed attributes.
func TestAccContainerCounts_numbersAsStrings(t *testing.T) {
	attrs, first, _ := baseAttrs(t)
	quoted := regexp.MustCompile(`(time|cpu_mhz|memory_mb) = ([0-9.e+-]+)`)
	first[obsUsageSamples] = quoted.ReplaceAllString(first[obsUsageSamples], `$1 = "$2"`)
	if !strings.Contains(first[obsUsageSamples], `cpu_mhz = "`) {
		t.Fatalf("no number was quoted: %s", first[obsUsageSamples])
	}
	attrs[attrFirst] = hclObject(first)
	want := mustDecide(t, &engine.Request{First: testFirst(t), Second: testSecond(t)})
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config:            countsConfig(attrs, ""),
		ConfigStateChecks: decisionChecks(countsAddr, want),
	}}})
}

// TestAccContainerCounts_quotaDefaults: every quota field is optional and
// takes the engine's default; max's is the model's number of slots, the
// same as the command line's JSON and the strategy.
func TestAccContainerCounts_quotaDefaults(t *testing.T) {
	attrs, _, _ := baseAttrs(t)
	fq := testsupport.Quota(2, 9, 0.5, engine.RoundCeil)
	attrs[attrFirstQuota] = quotaHCL(fq)
	attrs[attrSecondQuota] = `{ min = 1 }`
	attrs[attrFirstModel] = hclString("builtin:admission")
	attrs[attrSecondModel] = hclString("builtin:capacity")
	want := mustDecide(t, &engine.Request{First: testFirst(t), Second: testSecond(t),
		FirstModel: "builtin:admission", SecondModel: "builtin:capacity",
		FirstQuota: fq, SecondQuota: &engine.QuotaSpec{Min: ptr(1)}})
	capacity := builtinProcessor(t, engine.BuiltinCapacity)
	if want.Second.Quota.Max != capacity.CountableOutputs() {
		t.Fatalf("the engine's default max is %d, not the capacity model's %d slots", want.Second.Quota.Max, capacity.CountableOutputs())
	}
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
	return builtinProcessor(t, name).Model()
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

// TestAccContainerCounts_settingsValidated: bad quotas, min_samples and
// hold_band fail at validation, every one named, even when an observation
// is known only at apply (a read deferred to apply would report them only
// then, one per run).
func TestAccContainerCounts_settingsValidated(t *testing.T) {
	attrs, _, second := baseAttrs(t)
	attrs[attrSecond] = "terraform_data.second.output"
	attrs[attrFirstQuota] = `{ rounding = "round" }`
	attrs[attrSecondQuota] = `{ maximum = 2 }`
	attrs[attrMinSamples] = "-1"
	attrs[attrHoldBand] = "50"
	extra := fmt.Sprintf("resource \"terraform_data\" \"second\" {\n  input = %s\n}\n", hclObject(second))
	runErrorCases(t, []errorCase{{"four bad settings, one observation unknown", func(*testing.T) string { return countsConfig(attrs, extra) },
		// OpenTofu prints the errors in the order of the attributes' lines
		literal(`Attribute first_quota.rounding: is "round"; it must be one of "nearest", "floor", "ceil"`) + ".*" +
			literal("Attribute hold_band: is 50; it must be a number from 0 to 10 (logits)") + ".*" +
			literal("Attribute min_samples: is -1; it must be 0 (the default, 3) or from 1 to") + ".*" +
			literal(`Attribute second_quota: has an attribute "maximum" (did you mean "max"?), which is not one of: min, max, per_branch, rounding`)}})
}

// TestAccContainerCounts_observationRulesBesideUnknown: a value the engine
// refuses fails the plan, naming it, while another value of the same
// observation is known only at apply (the read, deferred to apply, would
// report it only then); the function's argument likewise.
func TestAccContainerCounts_observationRulesBesideUnknown(t *testing.T) {
	first := observationHCL(testFirst(t))
	first[obsUsageSamples], first[obsRunningReplicas] = "terraform_data.window.output", "-3"
	window := "resource \"terraform_data\" \"window\" {\n  input = [{ time = 60, cpu_mhz = 100 }, { time = 120, cpu_mhz = 110 }, { time = 180, cpu_mhz = 90 }]\n}\n"
	attrs, _, _ := baseAttrs(t)
	attrs[attrFirst] = hclObject(first)
	call := fmt.Sprintf("output \"counts\" {\n  value = provider::activation::container_counts(%s, %s, {})\n}\n",
		hclObject(first), hclObject(observationHCL(testSecond(t))))
	// Every problem at once (a user trial fixed one a plan at a time).
	several := observationHCL(testFirst(t))
	several[obsUsageSamples], several[obsWarmingReplicas], several[obsReplicaCPUDemandMHz] = "terraform_data.window.output", "-1", "-7"
	severalAttrs, _, _ := baseAttrs(t)
	severalAttrs[attrFirst] = hclObject(several)
	second := observationHCL(testSecond(t))
	second[obsRequestedCPUMHz] = "-5"
	severalAttrs[attrSecond] = hclObject(second)
	// A known sample beside one whose CPU is computed by a resource.
	sample := observationHCL(testFirst(t))
	sample[obsUsageSamples] = "[{ time = 60, cpu_mhz = -5 }, { time = 120, cpu_mhz = terraform_data.cpu.output }, { time = 180, cpu_mhz = 1 }]"
	sampleAttrs, _, _ := baseAttrs(t)
	sampleAttrs[attrFirst] = hclObject(sample)
	cpu := "resource \"terraform_data\" \"cpu\" {\n  input = 100\n}\n"
	// warming_replicas out of range while running_replicas, its bound, is
	// not known yet: the bound is not quoted as 0 (a user trial).
	warm := observationHCL(testFirst(t))
	warm[obsRunningReplicas], warm[obsWarmingReplicas] = "terraform_data.cpu.output", "-2"
	warmAttrs, _, _ := baseAttrs(t)
	warmAttrs[attrFirst] = hclObject(warm)
	for name, c := range map[string]struct{ config, want string }{
		"warming beside an unknown running": {cpu + countsConfig(warmAttrs, ""), literal("Attribute first.warming_replicas: is -2; it must be a whole number from 0 to running_replicas (not known yet)")},
		"a known sample":                    {cpu + countsConfig(sampleAttrs, ""), literal("Attribute first.usage_samples[0].cpu_mhz: is -5; it must be a finite number >= 0")},
		"several": {window + countsConfig(severalAttrs, ""), "(?s)" + literal("Attribute first.warming_replicas: is -1") + ".*" +
			literal("Attribute first.replica_cpu_demand_mhz: is -7; it must be a finite number > 0") + ".*" +
			literal("Attribute second.requested_cpu_mhz: is -5; it must be a finite number >= 0")},
		"data source": {window + countsConfig(attrs, ""), literal("Attribute first.running_replicas: is -3; it must be a whole number from 0 to")},
		"function":    {window + call, `Invalid value for "first" parameter: ` + literal("Attribute first.running_replicas: is -3; it must be a whole number from 0 to")},
	} {
		t.Run(name, func(t *testing.T) {
			accTest(t, resource.TestCase{Steps: []resource.TestStep{{Config: c.config, PlanOnly: true, ExpectError: errRegexp(c.want)}}})
		})
	}
}

// TestAccContainerCounts_shortWindowInCheck: a window shorter than
// min_samples inside a check block is the read's problem, which OpenTofu
// makes a warning there, not validate's, which would stop the plan (a user
// trial: a check that only warned would block the configuration).
func TestAccContainerCounts_shortWindowInCheck(t *testing.T) {
	first := observationHCL(testFirst(t))
	first[obsUsageSamples] = "[{ time = 60, cpu_mhz = 100 }, { time = 120, cpu_mhz = 110 }]"
	attrs, _, _ := baseAttrs(t)
	attrs[attrFirst] = hclObject(first)
	block := strings.Replace(countsConfig(attrs, ""), "\ndata ", "\n  data ", 1)
	config := "check \"counts\" {" + block + "  assert {\n    condition     = data.activation_container_counts.test.first_containers > 0\n    error_message = \"no room\"\n  }\n}\n"
	// (a check's data source that failed is read again at every plan)
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{Config: config, ExpectNonEmptyPlan: true}}})
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
				r.SecondQuota = &engine.QuotaSpec{Max: ptr(int(testsupport.HostMHz / 1000))}
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
				"resource \"terraform_data\" \"second\" {\n  input = %s\n}\n", hclNum(testsupport.HostMHz), hclObject(second))
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

// TestAccContainerCounts_untypedQuotaValues: a quota attribute from a
// variable without a type, or taken from a list at count.index (as one from
// each.value), is unknown and untyped while OpenTofu validates; it waits,
// and the plan decides with its value (it failed validation with "an
// invalid attribute value was detected"). The test counts instead of
// for_each because the test framework reads no for_each instance.
func TestAccContainerCounts_untypedQuotaValues(t *testing.T) {
	attrs, _, _ := baseAttrs(t)
	attrs["count"] = "length(local.pools)"
	attrs[attrFirstQuota] = "{ max = local.pools[count.index].max }"
	attrs[attrSecondQuota] = "{ max = var.second_max, rounding = local.pools[count.index].rounding }"
	extra := "variable \"second_max\" {\n  default = 2\n}\n" +
		"locals {\n  pools = [{ max = 1, rounding = \"floor\" }, { max = 3, rounding = \"ceil\" }]\n}\n"
	var checks []statecheck.StateCheck
	for i, q := range []struct {
		max      int
		rounding string
	}{{1, engine.RoundFloor}, {3, engine.RoundCeil}} {
		want := mustDecide(t, &engine.Request{First: testFirst(t), Second: testSecond(t),
			FirstQuota: &engine.QuotaSpec{Max: ptr(q.max)}, SecondQuota: &engine.QuotaSpec{Max: ptr(2), Rounding: ptr(q.rounding)}})
		if want.First.Quota.Max != q.max || want.First.Containers > q.max || want.Second.Containers > 2 {
			t.Fatalf("pool %d: the quotas do not bind as the test means: %+v", i, want.First.Quota)
		}
		checks = append(checks, decisionChecks(fmt.Sprintf("%s[%d]", countsAddr, i), want)...)
	}
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config:            countsConfig(attrs, extra),
		ConfigStateChecks: checks,
	}}})
}

// TestAccContainerCounts_golden runs every golden decision vector through
// HCL (observations and quotas read with jsondecode(file()), the form the
// command line reads) and checks the outputs equal the vector's decision:
// the engine's reference answers, not this tree's engine's.
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
		if v.Request.MinSamples != 0 {
			attrs[attrMinSamples] = fmt.Sprint(v.Request.MinSamples)
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

// literal is s as a regular expression for errRegexp: OpenTofu wraps long
// lines, so every space matches any white space.
func literal(s string) string { return regexp.QuoteMeta(s) }

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

// TestAccContainerCounts_invalidInputs runs the engine's rule book
// (testsupport.InvalidInputs) through HCL: each broken rule is an error
// that names the attribute the table names, with the engine's reason. A
// NaN cannot be written in HCL: the configuration that tries (0/0) is
// refused by OpenTofu itself, before the provider.
func TestAccContainerCounts_invalidInputs(t *testing.T) {
	var cases []errorCase
	for _, c := range testsupport.InvalidInputs() {
		r := invalidRequest(t, c)
		want := "Can't divide zero by zero or infinity by infinity"
		if !hasNaN(r) {
			_, err := r.Decide()
			if err == nil {
				t.Fatalf("%s: the engine accepts the case", c.Name)
			}
			p := expectedPath(c)
			want = literal("Attribute "+p.String()+": ") + literal(strings.TrimSuffix(engine.Reason(err), "."))
		} else {
			want = "(?i)" + want
		}
		cases = append(cases, errorCase{name: c.Name, config: func(*testing.T) string { return countsConfig(requestAttrs(r), "") }, want: want})
	}
	runErrorCases(t, cases)
}

// TestAccContainerCounts_typeErrors: numbers HCL can write that do not fit
// the engine's types (1e30 where a count goes, 1e400, 1/0, a fraction)
// name their attribute, never "an error in the provider".
func TestAccContainerCounts_typeErrors(t *testing.T) {
	set := func(host, attr, v string) func(t *testing.T) string {
		return mutated(func(_ *testing.T, attrs, first, second map[string]string) {
			if host == attrFirst {
				first[attr] = v
			} else {
				second[attr] = v
			}
		})
	}
	top := func(attr, v string) func(t *testing.T) string {
		return mutated(func(_ *testing.T, attrs, _, _ map[string]string) { attrs[attr] = v })
	}
	runErrorCases(t, []errorCase{
		{"count 1e30", set(attrFirst, obsRunningReplicas, "1e30"), literal("Attribute first.running_replicas: is 1e+30, beyond a 64-bit whole number")},
		{"count 1/0", set(attrSecond, obsWantedReplicas, "1/0"), literal("Attribute second.wanted_replicas: is +Inf; it must be a whole number")},
		{"count fractional", set(attrFirst, obsWarmingReplicas, "1.5"), literal("Attribute first.warming_replicas: is 1.5; it must be a whole number")},
		{"figure 1e30: the engine's bound", set(attrSecond, obsCPUCapacityMHz, "1e30"), literal("Attribute second.cpu_capacity_mhz: is 1e+30, more than 1e+09: check the units")},
		{"figure 1/0: the engine's rule", set(attrFirst, obsRequestedCPUMHz, "1/0"), literal("Attribute first.requested_cpu_mhz: is +Inf; it must be a finite number >= 0")},
		{"figure 1e400", set(attrFirst, obsReplicaCPUDemandMHz, "1e400"), literal("Attribute first.replica_cpu_demand_mhz: is 1e+400, beyond a 64-bit floating point number")},
		{"time 1e30", set(attrSecond, obsUsageSamples, "[{ time = 1e30, cpu_mhz = 5 }]"), literal("Attribute second.usage_samples[0].time: is 1e+30, beyond a 64-bit whole number")},
		{"quota max 1e30", top(attrFirstQuota, "{ max = 1e30 }"), literal("Attribute first_quota.max: is 1e+30, beyond a 64-bit whole number")},
		{"quota per branch 1/0", top(attrSecondQuota, "{ per_branch = 1/0 }"), literal("Attribute second_quota.per_branch: is +Inf")},
		{"min samples 1e30", top(attrMinSamples, "1e30"), literal("Attribute min_samples: is 1e+30, beyond a 64-bit whole number")},
	})
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

// TestAccContainerCounts_configurationErrors: what Terraform itself and the
// provider's own validators refuse (presence, model source syntax), and
// models that do not load.
func TestAccContainerCounts_configurationErrors(t *testing.T) {
	del := func(host, attr string) func(t *testing.T) string {
		return mutated(func(_ *testing.T, attrs, first, second map[string]string) {
			if host == attrFirst {
				delete(first, attr)
			} else {
				delete(second, attr)
			}
		})
	}
	top := func(attr, v string) func(t *testing.T) string {
		return mutated(func(_ *testing.T, attrs, _, _ map[string]string) { attrs[attr] = v })
	}
	modelFile := func(attr string, m func(t *testing.T) *engine.Model) func(t *testing.T) string {
		return mutated(func(t *testing.T, attrs, _, _ map[string]string) {
			attrs[attr] = hclString(writeModel(t, t.TempDir(), "model.json", m(t)))
		})
	}
	runErrorCases(t, []errorCase{
		{"cpu capacity missing", del(attrSecond, obsCPUCapacityMHz), literal("Attribute second.cpu_capacity_mhz: is required")},
		{"samples missing", del(attrFirst, obsUsageSamples), literal("Attribute first.usage_samples: is required")},
		// OpenTofu drops an attribute a typed object does not have: the
		// observations are dynamic, so a misspelt one is refused, not
		// ignored (the count would be made without it).
		{"observation attribute misspelt", mutated(func(_ *testing.T, _, first, _ map[string]string) {
			first["warming_replica"] = "1"
		}), literal(`Attribute first: has an attribute "warming_replica" (did you mean "warming_replicas"?), which is not one of: host, cpu_capacity_mhz,`)},
		{"observation from a document with an extra attribute", mutated(func(_ *testing.T, _, _, second map[string]string) {
			second["other_reserved_cpu"] = "4000"
		}), literal(`Attribute second: has an attribute "other_reserved_cpu" (did you mean "other_reserved_cpu_mhz"?), which is not one of:`)},
		{"sample cpu missing", mutated(func(_ *testing.T, _, _, second map[string]string) {
			second[obsUsageSamples] = "[{ time = 1 }]"
		}), literal("Attribute second.usage_samples[0].cpu_mhz: is required")},
		{"sample with an extra attribute", mutated(func(_ *testing.T, _, _, second map[string]string) {
			second[obsUsageSamples] = "[{ time = 1, cpu_mhz = 2 }, { time = 2, cpu_mhz = 2, cpu = 3 }]"
		}), literal(`Attribute second.usage_samples[1]: has an attribute "cpu" (did you mean "cpu_mhz"?), which is not one of: time, cpu_mhz, memory_mb.`)},
		{"window as a set", mutated(func(_ *testing.T, _, first, _ map[string]string) {
			first[obsUsageSamples] = "toset(" + first[obsUsageSamples] + ")"
		}), literal("Attribute first.usage_samples: must be a list, not a set: a set has no order")},
		{"quota rounding not a string", top(attrFirstQuota, `{ rounding = ["up"] }`), literal("Attribute first_quota.rounding: must be a string, not a tuple")},
		{"quota misspelt", top(attrSecondQuota, `{ maximum = 2 }`), literal(`Attribute second_quota: has an attribute "maximum" (did you mean "max"?), which is not one of: min, max, per_branch, rounding`)},
		{"model builtin unknown", top(attrFirstModel, `"builtin:nope"`), `Attribute first_model names built-in model "nope", which does not exist`},
		{"model empty", top(attrSecondModel, `""`), `Attribute second_model is empty: want builtin:<name> or the path of a model`},
		{"model file missing", top(attrSecondModel, hclString("/nonexistent/activation/model.json")),
			literal("Attribute second_model: loading model /nonexistent/activation/model.json: no such file or directory")},
		{"model file invalid", modelFile(attrSecondModel, func(t *testing.T) *engine.Model {
			m := *builtinModel(t, engine.BuiltinCapacity)
			m.Layers = append([]engine.Layer(nil), m.Layers...)
			m.Layers[1].Activation = "softmax"
			return &m
		}), `Attribute second_model: .*layers\[1\]\.activation: unknown activation "softmax"`},
		{"model that cannot serve the first host", modelFile(attrFirstModel, func(t *testing.T) *engine.Model {
			return builtinModel(t, engine.BuiltinCapacity)
		}), `Attribute first_model: model capacity`},
		{"provider default model unknown", func(t *testing.T) string {
			attrs, _, _ := baseAttrs(t)
			return countsConfig(attrs, "provider \"activation\" {\n  default_second_model = \"builtin:nope\"\n}\n")
		}, `Attribute default_second_model names built-in model "nope"`},
	})
}

// namedAttribute is the attribute a diagnostic's detail names ("Attribute
// first_quota.max: ..."); the diagnostic must be on it, or on the Dynamic
// attribute it is inside (subjectOf), never deeper.
func namedAttribute(t *testing.T, d diag.Diagnostic, on path.Path) string {
	t.Helper()
	rest, ok := strings.CutPrefix(d.Detail(), "Attribute ")
	named, _, found := strings.Cut(rest, ": ")
	if !ok || !found {
		t.Errorf("detail %q names no attribute", d.Detail())
		return ""
	}
	if !strings.HasPrefix(named, on.String()) || !countsRoots.subjectOf(on).Equal(on) {
		t.Errorf("a diagnostic about %s is on %s; want it there, or on the Dynamic attribute it is in", named, on)
	}
	return named
}

// TestContainerCountsValidateObservationRules: validate applies the
// engine's rules to what is known of an observation, so a value the
// engine refuses is reported by `tofu validate` and at plan even while
// another value of the observation is known only at apply; a rule that
// depends on an unknown value waits for it.
func TestContainerCountsValidateObservationRules(t *testing.T) {
	num := func(f float64) types.Number { return numberValue(f) }
	unknownWindow := types.DynamicUnknown()
	cases := []struct {
		name    string
		first   map[string]attr.Value // attributes of the first observation to replace
		wantAt  string                // "" for none
		wantWhy string
	}{
		{"all known and fine", nil, "", ""},
		{"all known: the read's rule at validate", map[string]attr.Value{obsRunningReplicas: num(-3)},
			"first.running_replicas", "is -3; it must be a whole number from 0 to"},
		{"running negative beside an unknown window", map[string]attr.Value{obsUsageSamples: unknownWindow, obsRunningReplicas: num(-3)},
			"first.running_replicas", "is -3; it must be a whole number from 0 to"},
		{"requested CPU negative beside an unknown capacity", map[string]attr.Value{obsCPUCapacityMHz: types.NumberUnknown(), obsRequestedCPUMHz: num(-1)},
			"first.requested_cpu_mhz", "is -1; it must be a finite number >= 0"},
		{"more warming than running beside an unknown window", map[string]attr.Value{obsUsageSamples: unknownWindow, obsRunningReplicas: num(2), obsWarmingReplicas: num(5)},
			"first.warming_replicas", "is 5; it must be a whole number from 0 to 2 (at most running_replicas)"},
		{"warming beside unknown running waits", map[string]attr.Value{obsRunningReplicas: types.NumberUnknown(), obsWarmingReplicas: num(5)}, "", ""},
		{"demand beyond the capacity's bound waits for the capacity", map[string]attr.Value{obsCPUCapacityMHz: types.NumberUnknown(), obsReplicaCPUDemandMHz: num(5e8)}, "", ""},
		{"a capacity too small beside an unknown demand", map[string]attr.Value{obsCPUCapacityMHz: num(0), obsReplicaCPUDemandMHz: types.NumberUnknown()},
			"first.cpu_capacity_mhz", "is 0; it must be a finite number > 0"},
		{"unknown demand, known fine values", map[string]attr.Value{obsReplicaCPUDemandMHz: types.NumberUnknown(), obsHost: types.StringUnknown()}, "", ""},
		{"queued beside wanted, with the window unknown", map[string]attr.Value{obsUsageSamples: unknownWindow, obsWantedReplicas: num(2),
			obsQueuedReplicas: types.ListValueMust(types.ObjectType{AttrTypes: replicaAttrTypes}, []attr.Value{
				types.ObjectValueMust(replicaAttrTypes, map[string]attr.Value{replicaCPUMHz: num(100), replicaMemoryMB: num(64)})})},
			"first.wanted_replicas", "is 2 and queued_replicas is given"},
		{"wanted beside an unknown queue waits", map[string]attr.Value{obsWantedReplicas: num(2),
			obsQueuedReplicas: types.ListUnknown(types.ObjectType{AttrTypes: replicaAttrTypes})}, "", ""},
		{"negative warming beside unknown running", map[string]attr.Value{obsRunningReplicas: types.NumberUnknown(), obsWarmingReplicas: num(-1)},
			"first.warming_replicas", "is -1; it must be a whole number from 0 to running_replicas (not known yet)"},
		{"a window shorter than min_samples waits for the read", map[string]attr.Value{obsCPUCapacityMHz: types.NumberUnknown(), obsUsageSamples: shortWindow(2)}, "", ""},
		// (from a review: the probe's conversion dropped these)
		{"a figure beyond a float beside an unknown window", map[string]attr.Value{obsUsageSamples: unknownWindow, obsRequestedCPUMHz: types.NumberValue(big.NewFloat(0).SetMantExp(big.NewFloat(1), 2000))},
			"first.requested_cpu_mhz", "beyond a 64-bit floating point number"},
		// A sample's or a queued replica's known figures are checked
		// beside an unknown one (an adversarial trial: the whole window
		// or replica waited).
		{"a known sample beside a sample whose CPU is unknown", map[string]attr.Value{obsUsageSamples: windowOf2(
			map[string]attr.Value{sampleTime: num(60), sampleCPUMHz: num(-5)}, map[string]attr.Value{sampleTime: num(120), sampleCPUMHz: types.NumberUnknown()})},
			"first.usage_samples[0].cpu_mhz", "is -5; it must be a finite number >= 0"},
		{"a sample whose CPU is unknown, the rest fine", map[string]attr.Value{obsUsageSamples: windowOf2(
			map[string]attr.Value{sampleTime: num(60), sampleCPUMHz: types.NumberUnknown()}, map[string]attr.Value{sampleTime: num(120), sampleCPUMHz: num(7)})}, "", ""},
		{"a sample whose time is unknown: the order waits", map[string]attr.Value{obsUsageSamples: windowOf2(
			map[string]attr.Value{sampleTime: num(60), sampleCPUMHz: num(5)}, map[string]attr.Value{sampleTime: types.NumberUnknown(), sampleCPUMHz: num(7)})}, "", ""},
		{"a known figure beside a sample whose time is unknown", map[string]attr.Value{obsUsageSamples: windowOf2(
			map[string]attr.Value{sampleTime: num(60), sampleCPUMHz: num(-5)}, map[string]attr.Value{sampleTime: types.NumberUnknown(), sampleCPUMHz: num(7)})},
			"first.usage_samples[0].cpu_mhz", "is -5; it must be a finite number >= 0"},
		{"a known figure beside a sample not known at all", map[string]attr.Value{obsUsageSamples: types.DynamicValue(types.TupleValueMust(
			[]attr.Type{types.ObjectType{AttrTypes: map[string]attr.Type{sampleTime: types.NumberType, sampleCPUMHz: types.NumberType}}, types.ObjectType{AttrTypes: map[string]attr.Type{sampleTime: types.NumberType, sampleCPUMHz: types.NumberType}}},
			[]attr.Value{types.ObjectValueMust(map[string]attr.Type{sampleTime: types.NumberType, sampleCPUMHz: types.NumberType}, map[string]attr.Value{sampleTime: num(60), sampleCPUMHz: num(-5)}),
				types.ObjectUnknown(map[string]attr.Type{sampleTime: types.NumberType, sampleCPUMHz: types.NumberType})}))},
			"first.usage_samples[0].cpu_mhz", "is -5; it must be a finite number >= 0"},
		{"a queued replica's known CPU beside its unknown memory", map[string]attr.Value{
			obsQueuedReplicas: types.ListValueMust(types.ObjectType{AttrTypes: replicaAttrTypes}, []attr.Value{
				types.ObjectValueMust(replicaAttrTypes, map[string]attr.Value{replicaCPUMHz: num(0), replicaMemoryMB: types.NumberUnknown()})})},
			"first.queued_replicas[0].cpu_mhz", "is 0; it must be a finite number > 0"},
		{"wanted beside a known queue with a replica not known yet", map[string]attr.Value{obsWantedReplicas: num(2),
			obsQueuedReplicas: types.ListValueMust(types.ObjectType{AttrTypes: replicaAttrTypes}, []attr.Value{types.ObjectUnknown(replicaAttrTypes)})},
			"first.wanted_replicas", "is 2 and queued_replicas is given"},
	}
	ds, ok := NewContainerCountsDataSource().(datasource.DataSourceWithValidateConfig)
	if !ok {
		t.Fatal("the data source has no ValidateConfig")
	}
	// Every attribute of a kind it cannot hold, at once (a user trial fixed
	// one a plan).
	{
		m := newCountsModel(&engine.Request{First: testFirst(t), Second: testSecond(t)})
		m.First = withAttributes(t, m.First, map[string]attr.Value{obsCPUCapacityMHz: types.StringValue("x"), obsRequestedCPUMHz: types.StringValue("y"),
			obsQueuedReplicas: types.ListValueMust(types.ObjectType{AttrTypes: map[string]attr.Type{replicaCPUMHz: types.StringType}},
				[]attr.Value{types.ObjectValueMust(map[string]attr.Type{replicaCPUMHz: types.StringType}, map[string]attr.Value{replicaCPUMHz: types.StringValue("z")})})})
		var resp datasource.ValidateConfigResponse
		ds.ValidateConfig(context.Background(), datasource.ValidateConfigRequest{Config: configOf(t, &m)}, &resp)
		var got []string
		for _, d := range resp.Diagnostics.Errors() {
			got = append(got, d.Detail())
		}
		want := []string{`Attribute first.cpu_capacity_mhz: must be a number, not the string "x".`, `Attribute first.requested_cpu_mhz: must be a number, not the string "y".`,
			`Attribute first.queued_replicas[0].cpu_mhz: must be a number, not the string "z".`}
		if !slices.Equal(got, want) {
			t.Errorf("errors %q, want %q", got, want)
		}
	}
	// The second host's role at validate: no queue (the read's rule).
	{
		m := newCountsModel(&engine.Request{First: testFirst(t), Second: testSecond(t)})
		m.Second = withAttributes(t, m.Second, map[string]attr.Value{obsWantedReplicas: num(2), obsCPUCapacityMHz: types.NumberUnknown()})
		var resp datasource.ValidateConfigResponse
		ds.ValidateConfig(context.Background(), datasource.ValidateConfigRequest{Config: configOf(t, &m)}, &resp)
		if errs := resp.Diagnostics.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Detail(), "Attribute second.wanted_replicas: is 2: the second host's count") {
			t.Errorf("a second host with wanted_replicas: %v, want its refusal", errs)
		}
	}
	// A window shorter than min_samples is the read's to refuse, never
	// validate's (a window still filling is the data's state, and a read's
	// error is a warning in a check block); min_samples' own range is
	// validate's.
	for _, c := range []struct {
		minSamples types.Number
		want       []string
	}{
		{types.NumberNull(), nil},
		{wholeValue(2), nil},
		{types.NumberUnknown(), nil},
		{wholeValue(-1), []string{"min_samples"}},
	} {
		m := newCountsModel(&engine.Request{First: testFirst(t), Second: testSecond(t)})
		m.First, m.MinSamples = withAttributes(t, m.First, map[string]attr.Value{obsUsageSamples: shortWindow(2)}), c.minSamples
		var resp datasource.ValidateConfigResponse
		ds.ValidateConfig(context.Background(), datasource.ValidateConfigRequest{Config: configOf(t, &m)}, &resp)
		var got []string
		for _, d := range resp.Diagnostics.Errors() {
			if wp, ok := d.(diag.DiagnosticWithPath); ok {
				got = append(got, namedAttribute(t, d, wp.Path()))
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("min_samples %v, a window of 2: errors on %v, want %v", c.minSamples, got, c.want)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newCountsModel(&engine.Request{First: testFirst(t), Second: testSecond(t)})
			if c.first != nil {
				m.First = withAttributes(t, m.First, c.first)
			}
			var resp datasource.ValidateConfigResponse
			ds.ValidateConfig(context.Background(), datasource.ValidateConfigRequest{Config: configOf(t, &m)}, &resp)
			errs := resp.Diagnostics.Errors()
			if c.wantAt == "" {
				if len(errs) != 0 {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one on %s", errs, c.wantAt)
			}
			wp, ok := errs[0].(diag.DiagnosticWithPath)
			if !ok {
				t.Fatalf("an error on no attribute: %v", errs[0])
			}
			if named := namedAttribute(t, errs[0], wp.Path()); named != c.wantAt || !strings.Contains(errs[0].Detail(), c.wantWhy) {
				t.Fatalf("error %q on %s, want on %s with %q", errs[0].Detail(), named, c.wantAt, c.wantWhy)
			}
		})
	}
}

// withAttributes is the object d with the attributes changes replaced.
func withAttributes(t *testing.T, d types.Dynamic, changes map[string]attr.Value) types.Dynamic {
	t.Helper()
	o, ok := d.UnderlyingValue().(types.Object)
	if !ok {
		t.Fatalf("%v is not an object", d)
	}
	vs, ts := map[string]attr.Value{}, map[string]attr.Type{}
	for k, v := range o.Attributes() {
		vs[k] = v
	}
	for k, v := range changes {
		vs[k] = v
	}
	for k, v := range vs {
		ts[k] = v.Type(context.Background())
	}
	return types.DynamicValue(types.ObjectValueMust(ts, vs))
}

// shortWindow is a usage window of n samples, a minute apart.
func shortWindow(n int) types.Dynamic {
	st := map[string]attr.Type{sampleTime: types.NumberType, sampleCPUMHz: types.NumberType}
	ts, vs := make([]attr.Type, n), make([]attr.Value, n)
	for i := range vs {
		ts[i] = types.ObjectType{AttrTypes: st}
		vs[i] = types.ObjectValueMust(st, map[string]attr.Value{sampleTime: wholeValue(int64(60 * (i + 1))), sampleCPUMHz: numberValue(100)})
	}
	return types.DynamicValue(types.TupleValueMust(ts, vs))
}

// windowOf2 is a usage window of two samples with the attributes given.
func windowOf2(a, b map[string]attr.Value) types.Dynamic {
	obj := func(vs map[string]attr.Value) attr.Value {
		ts := map[string]attr.Type{}
		for k, v := range vs {
			ts[k] = v.Type(context.Background())
		}
		return types.ObjectValueMust(ts, vs)
	}
	x, y := obj(a), obj(b)
	return types.DynamicValue(types.TupleValueMust([]attr.Type{x.Type(context.Background()), y.Type(context.Background())}, []attr.Value{x, y}))
}
