package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/engine/golden"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

func TestContainerCountsFunctionDefinition(t *testing.T) {
	ctx := context.Background()
	var resp function.DefinitionResponse
	NewContainerCountsFunction().Definition(ctx, function.DefinitionRequest{}, &resp)
	var vresp function.DefinitionValidateResponse
	resp.Definition.ValidateImplementation(ctx, function.DefinitionValidateRequest{FuncName: "container_counts"}, &vresp)
	if vresp.Diagnostics.HasError() {
		t.Fatal(vresp.Diagnostics)
	}
	if resp.Definition.MarkdownDescription == "" || resp.Definition.Summary == "" {
		t.Error("no description")
	}
	for _, p := range resp.Definition.Parameters {
		if p.GetMarkdownDescription() == "" {
			t.Errorf("parameter %s: no MarkdownDescription", p.GetName())
		}
	}
	// The function returns what the data source computes, in the same type.
	ds := dataSourceSchema(t, NewContainerCountsDataSource())
	for name, typ := range countsResultAttrTypes {
		if got := ds.Attributes[name].GetType(); !got.Equal(typ) {
			t.Errorf("%s: the function returns %v, the data source %v", name, typ, got)
		}
	}
}

// jsonValue is x as jsondecode(jsonencode(x)) gives it to a function:
// objects, tuples, numbers, strings and bools.
func jsonValue(t *testing.T, x any) attr.Value {
	t.Helper()
	data, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	d := json.NewDecoder(strings.NewReader(string(data)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var conv func(v any) attr.Value
	conv = func(v any) attr.Value {
		switch x := v.(type) {
		case map[string]any:
			ts, vs := map[string]attr.Type{}, map[string]attr.Value{}
			for k, e := range x {
				vs[k] = conv(e)
				ts[k] = vs[k].Type(context.Background())
			}
			return types.ObjectValueMust(ts, vs)
		case []any:
			ts, vs := make([]attr.Type, len(x)), make([]attr.Value, len(x))
			for i, e := range x {
				vs[i] = conv(e)
				ts[i] = vs[i].Type(context.Background())
			}
			return types.TupleValueMust(ts, vs)
		case json.Number:
			f, _, err := big.ParseFloat(x.String(), 10, 512, big.ToNearestEven)
			if err != nil {
				t.Fatal(err)
			}
			return types.NumberValue(f)
		case string:
			return types.StringValue(x)
		case bool:
			return types.BoolValue(x)
		}
		t.Fatalf("json value %T", v)
		return nil
	}
	return conv(v)
}

// runFunction runs container_counts in-process on the arguments.
func runFunction(t *testing.T, args ...attr.Value) (countsResultModel, *function.FuncError) {
	t.Helper()
	ctx := context.Background()
	dyn := make([]attr.Value, len(args))
	for i, a := range args {
		if a == nil {
			dyn[i] = types.DynamicNull()
		} else {
			dyn[i] = types.DynamicValue(a)
		}
	}
	resp := function.RunResponse{Result: function.NewResultData(types.ObjectUnknown(countsResultAttrTypes))}
	NewContainerCountsFunction().Run(ctx, function.RunRequest{Arguments: function.NewArgumentsData(dyn)}, &resp)
	if resp.Error != nil {
		return countsResultModel{}, resp.Error
	}
	var out countsResultModel
	obj, ok := resp.Result.Value().(basetypes.ObjectValue)
	if !ok {
		t.Fatalf("result %T", resp.Result.Value())
	}
	if diags := obj.As(ctx, &out, basetypes.ObjectAsOptions{}); diags.HasError() {
		t.Fatal(diags)
	}
	return out, nil
}

func TestContainerCountsFunctionRun(t *testing.T) {
	first, second := testFirst(t), testSecond(t)
	first.QueuedReplicas = []engine.Replica{{CPUMHz: 300}, {CPUMHz: 9000, MemoryMB: 1024}}
	second.WarmingReplicas = 1
	q := map[string]any{"first": map[string]any{"max": 7}, "second": map[string]any{"min": 2, "rounding": "ceil"}, "min_samples": 12}
	got, ferr := runFunction(t, jsonValue(t, first), jsonValue(t, second), jsonValue(t, q))
	if ferr != nil {
		t.Fatal(ferr)
	}
	want := mustDecide(t, &engine.Request{First: first, Second: second, MinSamples: 12,
		FirstQuota: &engine.QuotaSpec{Max: ptr(7)}, SecondQuota: &engine.QuotaSpec{Min: ptr(2), Rounding: ptr(engine.RoundCeil)}})
	if !reflect.DeepEqual(got, countsResult(want)) {
		t.Fatalf("function result differs from the engine's decision:\n got %+v\nwant %+v", got, countsResult(want))
	}
	// {} is every default.
	got, ferr = runFunction(t, jsonValue(t, first), jsonValue(t, second), jsonValue(t, map[string]any{}))
	if ferr != nil {
		t.Fatal(ferr)
	}
	if want := countsResult(mustDecide(t, &engine.Request{First: first, Second: second})); !reflect.DeepEqual(got, want) {
		t.Fatalf("default quotas: got %+v, want %+v", got, want)
	}
}

// A value known only at apply, anywhere inside an argument, gives an
// unknown result: never counts planned from an unknown read as 0.
func TestContainerCountsFunctionUnknownInside(t *testing.T) {
	ctx := context.Background()
	first, second := jsonValue(t, testFirst(t)), jsonValue(t, testSecond(t))
	unknownMin := types.ObjectValueMust(map[string]attr.Type{"first": types.ObjectType{AttrTypes: map[string]attr.Type{"min": types.NumberType}}},
		map[string]attr.Value{"first": types.ObjectValueMust(map[string]attr.Type{"min": types.NumberType}, map[string]attr.Value{"min": types.NumberUnknown()})})
	obsAttrs := first.(basetypes.ObjectValue).Attributes()
	obsAttrs["running_replicas"] = types.NumberUnknown()
	obsTypes := first.(basetypes.ObjectValue).AttributeTypes(ctx)
	obsTypes["running_replicas"] = types.NumberType
	unknownRunning := types.ObjectValueMust(obsTypes, obsAttrs)
	unknownMargin := types.ObjectValueMust(map[string]attr.Type{"first_margin": types.NumberType}, map[string]attr.Value{"first_margin": types.NumberUnknown()})
	for _, tc := range []struct {
		name string
		args []attr.Value
	}{
		{"a quota's min", []attr.Value{first, second, unknownMin}},
		{"a host's own margin", []attr.Value{first, second, unknownMargin}},
		{"an observation's running_replicas", []attr.Value{unknownRunning, second, types.ObjectValueMust(map[string]attr.Type{}, map[string]attr.Value{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := make([]attr.Value, len(tc.args))
			for i, a := range tc.args {
				dyn[i] = types.DynamicValue(a)
			}
			resp := function.RunResponse{Result: function.NewResultData(types.ObjectNull(countsResultAttrTypes))}
			NewContainerCountsFunction().Run(ctx, function.RunRequest{Arguments: function.NewArgumentsData(dyn)}, &resp)
			if resp.Error != nil {
				t.Fatal(resp.Error)
			}
			if v := resp.Result.Value(); !v.IsUnknown() {
				t.Fatalf("result %v, want unknown", v)
			}
		})
	}
}

// TestContainerCountsFunctionUnknownInsideChecked: what is known of an
// argument holding an unknown value is checked at plan, as the data
// source checks its attributes at validate: a misspelt attribute or a
// mistyped value beside an unknown one is an error naming it (found by a
// user trial: it failed only at apply); a wholly unknown argument leaves
// the others checked and the result unknown.
func TestContainerCountsFunctionUnknownInsideChecked(t *testing.T) {
	ctx := context.Background()
	first, second := jsonValue(t, testFirst(t)), jsonValue(t, testSecond(t))
	with := func(name string, v attr.Value) attr.Value {
		attrs := first.(basetypes.ObjectValue).Attributes()
		typs := first.(basetypes.ObjectValue).AttributeTypes(ctx)
		attrs["cpu_capacity_mhz"] = basetypes.NewNumberUnknown()
		attrs[name], typs[name] = v, v.Type(ctx)
		return basetypes.NewObjectValueMust(typs, attrs)
	}
	for _, tc := range []struct {
		name string
		args []attr.Value // nil: wholly unknown
		want string       // "": an unknown result
	}{
		{"misspelt beside unknown", []attr.Value{with("warming_replica", basetypes.NewNumberValue(big.NewFloat(1))), second, jsonValue(t, map[string]any{})},
			`"warming_replica" (did you mean "warming_replicas"?)`},
		{"mistyped beside unknown", []attr.Value{with("host", basetypes.NewListValueMust(basetypes.StringType{}, nil)), second, jsonValue(t, map[string]any{})},
			"first.host"},
		{"unknown quotas beside a misspelt second", []attr.Value{first, jsonValue(t, map[string]any{"cpu_capacity": 1}), nil},
			`"cpu_capacity"`},
		{"unknown beside known and right", []attr.Value{with("running_replicas", basetypes.NewNumberValue(big.NewFloat(2))), second, nil}, ""},
		{"a fractional count beside unknown", []attr.Value{with("running_replicas", basetypes.NewNumberValue(big.NewFloat(1.5))), second, jsonValue(t, map[string]any{})},
			"first.running_replicas"},
		{"a quota out of range beside unknown", []attr.Value{with("running_replicas", basetypes.NewNumberValue(big.NewFloat(2))), second, jsonValue(t, map[string]any{"first": map[string]any{"min": 5, "max": 4}})},
			"quotas.first.max"},
		{"min_samples -1 beside unknown", []attr.Value{with("running_replicas", basetypes.NewNumberValue(big.NewFloat(2))), second, jsonValue(t, map[string]any{"min_samples": -1})},
			"quotas.min_samples"},
		{"second_margin -10.5 beside unknown", []attr.Value{with("running_replicas", basetypes.NewNumberValue(big.NewFloat(2))), second, jsonValue(t, map[string]any{"second_margin": -10.5})},
			"Attribute quotas.second_margin: is -10.5; it must be a number of logits from -10 to 10"},
		// With quotas known only at apply, a known window is not held to
		// the default min_samples (quotas may lower it); a value the
		// engine refuses whatever the quotas still is (a review found the
		// first refused).
		{"a short window beside unknown quotas", []attr.Value{jsonValue(t, shortFirst(t, 0)), second, nil}, ""},
		{"running -3 beside unknown quotas", []attr.Value{jsonValue(t, shortFirst(t, -3)), second, nil}, "first.running_replicas"},
		{"a misspelt sample attribute beside unknown", []attr.Value{with("usage_samples", jsonValue(t, []any{map[string]any{"time": 60, "cpu": 1}})), second, jsonValue(t, map[string]any{})},
			"first.usage_samples[0]"},
		{"a wholly unknown quota", []attr.Value{first, second, basetypes.NewObjectValueMust(
			map[string]attr.Type{"first": basetypes.ObjectType{AttrTypes: map[string]attr.Type{"min": basetypes.NumberType{}}}},
			map[string]attr.Value{"first": basetypes.NewObjectUnknown(map[string]attr.Type{"min": basetypes.NumberType{}})})}, ""},
		{"an unknown usage window", []attr.Value{with("usage_samples", basetypes.NewDynamicUnknown()), second, jsonValue(t, map[string]any{})}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := make([]attr.Value, len(tc.args))
			for i, a := range tc.args {
				if a == nil {
					dyn[i] = types.DynamicUnknown()
				} else {
					dyn[i] = types.DynamicValue(a)
				}
			}
			resp := function.RunResponse{Result: function.NewResultData(types.ObjectNull(countsResultAttrTypes))}
			NewContainerCountsFunction().Run(ctx, function.RunRequest{Arguments: function.NewArgumentsData(dyn)}, &resp)
			if tc.want == "" {
				if resp.Error != nil || !resp.Result.Value().IsUnknown() {
					t.Fatalf("error %v, result %v: want an unknown result", resp.Error, resp.Result.Value())
				}
				return
			}
			if resp.Error == nil || !strings.Contains(resp.Error.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s", resp.Error, tc.want)
			}
		})
	}
}

// TestContainerCountsFunctionGolden runs every golden decision vector
// through the function, each observation and quota as jsondecode() gives
// it: the result is the vector's decision. The function has no model
// argument: a vector that names a model other than the built-in default
// fails here rather than being left out.
func TestContainerCountsFunctionGolden(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			if m := v.Request.FirstModel; m != "" && m != engine.DefaultFirstModel {
				t.Fatalf("first_model %q: the function decides with the built-in models only", m)
			}
			if m := v.Request.SecondModel; m != "" && m != engine.DefaultSecondModel {
				t.Fatalf("second_model %q: the function decides with the built-in models only", m)
			}
			got, ferr := runFunction(t, jsonValue(t, v.Request.First), jsonValue(t, v.Request.Second), jsonValue(t, quotasOf(&v.Request)))
			if ferr != nil {
				t.Fatal(ferr)
			}
			want := v.Want
			if !reflect.DeepEqual(got, countsResult(&want)) {
				t.Fatalf("the function's result differs from the golden decision:\n got %+v\nwant %+v", got, countsResult(&want))
			}
		})
	}
}

// quotasOf is r's quotas, minimum, hold band and margins as the
// function's third argument.
func quotasOf(r *engine.Request) map[string]any {
	q := map[string]any{}
	if r.FirstQuota != nil {
		q[fnFirst] = r.FirstQuota
	}
	if r.SecondQuota != nil {
		q[fnSecond] = r.SecondQuota
	}
	if r.MinSamples != 0 {
		q[fnMinSamples] = r.MinSamples
	}
	if r.HoldBand != 0 {
		q[fnHoldBand] = r.HoldBand
	}
	if r.Margin != 0 {
		q[fnMargin] = r.Margin
	}
	if r.FirstMargin != nil { // an explicit 0 included
		q[fnFirstMargin] = *r.FirstMargin
	}
	if r.SecondMargin != nil {
		q[fnSecondMargin] = *r.SecondMargin
	}
	return q
}

// engineValue is an observation as the framework holds it (not through
// JSON, which has no infinity): what a configuration of it gives the
// function.
func engineValue(t *testing.T, o engine.Observation) attr.Value {
	t.Helper()
	m := observationFromEngine(&o)
	v, diags := types.ObjectValueFrom(context.Background(), observationAttrTypes, &m)
	if diags.HasError() {
		t.Fatal(diags)
	}
	return v
}

// TestContainerCountsFunctionInvalidInputs runs the engine's rule book
// through the function: each broken rule is an error on the argument
// holding the attribute the table names, with the engine's reason.
func TestContainerCountsFunctionInvalidInputs(t *testing.T) {
	for _, c := range holdableInvalidInputs(t) {
		t.Run(c.Name, func(t *testing.T) {
			r := invalidRequest(t, c)
			_, err := r.Decide()
			if err == nil {
				t.Fatal("the engine accepts the case")
			}
			_, ferr := runFunction(t, engineValue(t, r.First), engineValue(t, r.Second), jsonValue(t, quotasOf(r)))
			if ferr == nil {
				t.Fatal("no error")
			}
			p := fieldPath(fnRoots.hosts[c.Host].observation, observationFields, c.Field)
			if c.Part == engine.PartQuota {
				p = fieldPath(fnRoots.hosts[c.Host].quota, quotaFields, c.Field)
			}
			if ferr.FunctionArgument == nil || *ferr.FunctionArgument != argumentOf(p) {
				t.Errorf("error on argument %v, want %d: %s", ferr.FunctionArgument, argumentOf(p), ferr.Text)
			}
			if want := funcText(attributeDetail(p, engine.Reason(err))); ferr.Text != want {
				t.Errorf("error %q, want %q", ferr.Text, want)
			}
		})
	}
}

// TestContainerCountsFunctionBothHostsWrong: the function's error holds
// both hosts' errors, each its own sentence, on no argument (OpenTofu
// would print both under the one argument's name); one argument's several
// errors stay on it.
func TestContainerCountsFunctionBothHostsWrong(t *testing.T) {
	r := &engine.Request{First: testFirst(t), Second: testSecond(t)}
	r.First.Samples[1].CPUMHz = -2
	r.Second.ReplicaCPUDemandMHz = 0
	_, ferr := runFunction(t, engineValue(t, r.First), engineValue(t, r.Second), jsonValue(t, quotasOf(r)))
	if ferr == nil {
		t.Fatal("no error")
	}
	if ferr.FunctionArgument != nil {
		t.Errorf("error on argument %d, want none: %s", *ferr.FunctionArgument, ferr.Text)
	}
	first, second, found := strings.Cut(ferr.Text, "\n")
	if !found || !strings.HasPrefix(first, "Attribute first.usage_samples[1].cpu_mhz: ") || !strings.HasSuffix(first, ".") ||
		!strings.HasPrefix(second, "Attribute second.replica_cpu_demand_mhz: ") || strings.HasSuffix(second, ".") {
		t.Errorf("error %q, want the first host's sentence (its period), a new line, the second's (OpenTofu adds the period)", ferr.Text)
	}
	// Two problems of one argument: on it.
	q := quotasOf(r)
	q["first"], q["second"] = map[string]any{"min": -1}, map[string]any{"min": -2}
	r.First.Samples[1].CPUMHz, r.Second.ReplicaCPUDemandMHz = 1, testSecond(t).ReplicaCPUDemandMHz
	_, ferr = runFunction(t, engineValue(t, r.First), engineValue(t, r.Second), jsonValue(t, q))
	if ferr == nil || ferr.FunctionArgument == nil || *ferr.FunctionArgument != 2 || !strings.Contains(ferr.Text, "Attribute quotas.first.min: is -1") || !strings.Contains(ferr.Text, "Attribute quotas.second.min: is -2") {
		t.Errorf("error %+v, want two quota problems on argument 2 (quotas)", ferr)
	}
	// An argument that does not decode (a misspelt attribute) beside a
	// quota the engine refuses: both, in one error of the call (a user
	// trial saw the first alone, and fixed one a plan).
	m := map[string]any{}
	data, _ := json.Marshal(r.First)
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["warmng_replicas"] = 1
	_, ferr = runFunction(t, jsonValue(t, m), engineValue(t, r.Second), jsonValue(t, map[string]any{"first": map[string]any{"min": 5.5}}))
	if ferr == nil || ferr.FunctionArgument != nil || !strings.Contains(ferr.Text, `Attribute first: has an attribute "warmng_replicas"`) || !strings.Contains(ferr.Text, "Attribute quotas.first.min: is 5.5") {
		t.Errorf("error %+v, want the misspelt attribute and the quota's min, on no one argument", ferr)
	}
	// Every argument known and decoded: every problem too, not the first
	// the engine or a conversion meets (a user trial saw one a plan).
	for _, c := range []struct {
		name   string
		first  map[string]any // edits to the first observation
		quotas map[string]any
		want   []string
		oneArg bool
	}{
		{"two settings", nil, map[string]any{"margin": 11, "hold_band": -1},
			[]string{"Attribute quotas.hold_band: is -1", "Attribute quotas.margin: is 11"}, true},
		{"an observation's figure and a quota's", map[string]any{"running_replicas": -1}, map[string]any{"second": map[string]any{"max": 1.5}},
			[]string{"Attribute first.running_replicas: ", "Attribute quotas.second.max: is 1.5"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := map[string]any{}
			data, _ := json.Marshal(testFirst(t))
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			for k, v := range c.first {
				m[k] = v
			}
			_, ferr := runFunction(t, jsonValue(t, m), engineValue(t, testSecond(t)), jsonValue(t, c.quotas))
			if ferr == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(ferr.Text, w) {
					t.Errorf("error %q, want it to hold %q", ferr.Text, w)
				}
			}
			if one := ferr.FunctionArgument != nil; one != c.oneArg {
				t.Errorf("error on argument %v, want on one argument: %v", ferr.FunctionArgument, c.oneArg)
			}
		})
	}
}

func TestContainerCountsFunctionErrors(t *testing.T) {
	obs := func(edit func(m map[string]any)) attr.Value {
		data, err := json.Marshal(testFirst(t))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		return jsonValue(t, m)
	}
	ok := obs(func(map[string]any) {})
	none := jsonValue(t, map[string]any{})
	cases := []struct {
		name    string
		args    []attr.Value
		arg     int64
		message string
	}{
		{"misspelt attribute", []attr.Value{obs(func(m map[string]any) { m["cpu_capcity_mhz"] = 1 }), ok, none}, 0,
			`Attribute first: has an attribute "cpu_capcity_mhz" (did you mean "cpu_capacity_mhz"?), which is not one of:`},
		{"missing required", []attr.Value{ok, obs(func(m map[string]any) { delete(m, obsReplicaCPUDemandMHz) }), none}, 1,
			"Attribute second.replica_cpu_demand_mhz: is required"},
		{"wrong kind", []attr.Value{ok, obs(func(m map[string]any) { m[obsRunningReplicas] = "six" }), none}, 1,
			`Attribute second.running_replicas: must be a number, not the string "six"`},
		{"a bool for a number", []attr.Value{ok, obs(func(m map[string]any) { m[obsRunningReplicas] = true }), none}, 1,
			`Attribute second.running_replicas: must be a number, not a bool`},
		{"sample not an object", []attr.Value{obs(func(m map[string]any) { m[obsUsageSamples] = []any{1, 2} }), ok, none}, 0,
			"Attribute first.usage_samples[0]: must be an object, not a number"},
		{"sample with an extra attribute", []attr.Value{obs(func(m map[string]any) {
			m[obsUsageSamples] = []any{map[string]any{sampleTime: 1, sampleCPUMHz: 2, "cpu": 3}}
		}), ok, none}, 0, `Attribute first.usage_samples[0]: has an attribute "cpu" (did you mean "cpu_mhz"?), which is not one of: time, cpu_mhz, memory_mb`},
		{"queued replica with an extra attribute", []attr.Value{obs(func(m map[string]any) {
			m[obsQueuedReplicas] = []any{map[string]any{replicaCPUMHz: 100, "gpu": 1}}
		}), ok, none}, 0, `Attribute first.queued_replicas[0]: has an attribute "gpu", which is not one of: cpu_mhz, memory_mb`},
		{"fractional count", []attr.Value{ok, obs(func(m map[string]any) { m[obsWarmingReplicas] = 1.5 }), none}, 1,
			"Attribute second.warming_replicas: is 1.5; it must be a whole number"},
		{"engine rule on an observation", []attr.Value{ok, obs(func(m map[string]any) { m[obsCPUCapacityMHz] = 0 }), none}, 1,
			"Attribute second.cpu_capacity_mhz: is 0; it must be a finite number > 0"},
		{"engine rule on a quota", []attr.Value{ok, ok, jsonValue(t, map[string]any{"first": map[string]any{"min": 5, "max": 4}})}, 2,
			"Attribute quotas.first.max: "},
		// (both windows are short: two arguments' problems, so on none)
		{"too few samples for min_samples: on the windows", []attr.Value{ok, ok, jsonValue(t, map[string]any{"min_samples": 31})}, -1,
			"Attribute first.usage_samples: has 30 sample(s); at least 31 are needed"},
		{"negative hold band", []attr.Value{ok, ok, jsonValue(t, map[string]any{"hold_band": -1})}, 2,
			"Attribute quotas.hold_band: is -1; it must be a number from 0 to 10 (logits)"},
		{"hold band beyond the limit", []attr.Value{ok, ok, jsonValue(t, map[string]any{"hold_band": 11})}, 2,
			"Attribute quotas.hold_band: is 11; it must be a number from 0 to 10 (logits)"},
		// A host's own margin out of range: on it (the engine's rule), the
		// shared margin refused for a host without its own: on margin.
		{"first margin beyond the limit", []attr.Value{ok, ok, jsonValue(t, map[string]any{"margin": 3, "first_margin": 11})}, 2,
			"Attribute quotas.first_margin: is 11; it must be a number of logits from -10 to 10 (0: the model's own threshold)"},
		{"second margin beyond the limit", []attr.Value{ok, ok, jsonValue(t, map[string]any{"second_margin": -10.5})}, 2,
			"Attribute quotas.second_margin: is -10.5; it must be a number of logits from -10 to 10 (0: the model's own threshold)"},
		{"margin beyond the limit beside a host's own", []attr.Value{ok, ok, jsonValue(t, map[string]any{"margin": 11, "first_margin": 1})}, 2,
			"Attribute quotas.margin: is 11; it must be a number of logits from -10 to 10"},
		{"unknown quota attribute", []attr.Value{ok, ok, jsonValue(t, map[string]any{"third": map[string]any{}})}, 2,
			`Attribute quotas: has an attribute "third", which is not one of: first, second, min_samples, hold_band, margin, first_margin, second_margin`},
		{"null quotas", []attr.Value{ok, ok, nil}, 2, "Attribute quotas: must not be null: pass {} for every default"},
		{"quotas not an object", []attr.Value{ok, ok, types.StringValue("defaults")}, 2, "Attribute quotas: must be an object, not a string"},
		{"a window that is not a list", []attr.Value{ok, obs(func(m map[string]any) { m[obsUsageSamples] = "samples" }), none}, 1,
			"Attribute second.usage_samples: must be a list of objects, not a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ferr := runFunction(t, c.args...)
			if ferr == nil {
				t.Fatal("no error")
			}
			switch {
			case c.arg < 0 && ferr.FunctionArgument != nil:
				t.Errorf("error on argument %d, want none: %s", *ferr.FunctionArgument, ferr.Text)
			case c.arg < 0:
			case ferr.FunctionArgument == nil:
				t.Fatalf("error on no argument: %s", ferr.Text)
			case *ferr.FunctionArgument != c.arg:
				t.Errorf("error on argument %d, want %d: %s", *ferr.FunctionArgument, c.arg, ferr.Text)
			}
			if strings.HasSuffix(ferr.Text, ".") {
				t.Errorf("error %q ends with a period: OpenTofu adds its own", ferr.Text)
			}
			if !strings.Contains(ferr.Text, c.message) {
				t.Errorf("error %q does not say %q", ferr.Text, c.message)
			}
		})
	}
}

// setWindow is obs with its usage window as a set of the same samples.
func setWindow(t *testing.T, o engine.Observation) attr.Value {
	t.Helper()
	v, ok := engineValue(t, o).(types.Object)
	if !ok {
		t.Fatal("an observation is not an object")
	}
	a := v.Attributes()
	w, ok := a[obsUsageSamples].(types.Dynamic).UnderlyingValue().(types.List)
	if !ok {
		t.Fatal("the window is not a list")
	}
	a[obsUsageSamples] = types.DynamicValue(types.SetValueMust(w.ElementType(context.Background()), w.Elements()))
	return types.ObjectValueMust(v.AttributeTypes(context.Background()), a)
}

// TestContainerCountsFunctionConversions: values convert as OpenTofu
// converts the data source's typed attributes (numeric strings are
// numbers; a number is a string where a label goes); a window that is a
// set is refused, since a set loses the samples' time order.
func TestContainerCountsFunctionConversions(t *testing.T) {
	first, second := testFirst(t), testSecond(t)
	asStrings := func(o engine.Observation) attr.Value {
		m := observationMap(t, o)
		for k, v := range m {
			if f, ok := v.(float64); ok {
				m[k] = fmt.Sprint(f) // "20000", as a string
			}
		}
		for _, s := range m[obsUsageSamples].([]any) {
			sm := s.(map[string]any)
			for k, v := range sm {
				sm[k] = fmt.Sprint(v)
			}
		}
		m[obsHost] = 42 // a number where a string goes
		return jsonValue(t, m)
	}
	got, ferr := runFunction(t, asStrings(first), jsonValue(t, second), jsonValue(t, map[string]any{"min_samples": "5"}))
	if ferr != nil {
		t.Fatal(ferr)
	}
	first.Host = "42"
	if want := countsResult(mustDecide(t, &engine.Request{First: first, Second: second, MinSamples: 5})); !reflect.DeepEqual(got, want) {
		t.Fatalf("numbers written as strings: got %+v, want %+v", got, want)
	}
	_, ferr = runFunction(t, jsonValue(t, first), setWindow(t, second), jsonValue(t, map[string]any{}))
	if ferr == nil || ferr.FunctionArgument == nil || *ferr.FunctionArgument != 1 ||
		!strings.Contains(ferr.Text, "Attribute second.usage_samples: must be a list, not a set: a set has no order") {
		t.Fatalf("a window that is a set: %v", ferr)
	}
}

// observationMap is o as the JSON object HCL would write for it.
func observationMap(t *testing.T, o engine.Observation) map[string]any {
	t.Helper()
	data, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestContainerCountsFunctionBothHosts: a value of each host that does not
// fit is reported, both at once.
func TestContainerCountsFunctionBothHosts(t *testing.T) {
	first, second := testFirst(t), testSecond(t)
	bad := func(o engine.Observation, field string, v any) attr.Value {
		m := observationMap(t, o)
		m[field] = v
		return jsonValue(t, m)
	}
	_, ferr := runFunction(t, bad(first, obsRunningReplicas, 1.5), bad(second, obsWantedReplicas, 2.5), jsonValue(t, map[string]any{}))
	if ferr == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Attribute first.running_replicas: is 1.5", "Attribute second.wanted_replicas: is 2.5"} {
		if !strings.Contains(ferr.Text, want) {
			t.Errorf("error %q does not say %q", ferr.Text, want)
		}
	}
}

// TestAccContainerCountsFunction: the function in locals, with the real
// OpenTofu, gives the engine's decision, the same as the data source's.
func TestAccContainerCountsFunction(t *testing.T) {
	dir := t.TempDir()
	first, second := testFirst(t), testSecond(t)
	second.OtherReservedCPUMHz = 5000
	files := map[string]engine.Observation{"first.json": first, "second.json": second}
	for name, o := range files {
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, name, data)
	}
	fq := testsupport.Quota(1, 24, 1, engine.RoundNearest)
	want := mustDecide(t, &engine.Request{First: first, Second: second, FirstQuota: fq, SecondQuota: &engine.QuotaSpec{PerBranch: ptr(0.5)}})
	cfg := fmt.Sprintf(`
locals {
  first  = jsondecode(file(%s))
  second = jsondecode(file(%s))
  counts = provider::activation::container_counts(local.first, local.second, {
    first  = { min = 1, max = 24 }
    second = { per_branch = 0.5 }
  })
}

data "activation_container_counts" "same" {
  first        = local.first
  second       = local.second
  first_quota  = { min = 1, max = 24 }
  second_quota = { per_branch = 0.5 }
}

output "first_containers" { value = local.counts.first_containers }
output "second_containers" { value = local.counts.second_containers }
output "second_placement_cpu" { value = local.counts.second_decision.placement.cpu_mhz }
output "explanation" { value = local.counts.explanation }
output "same_as_data_source" {
  value = jsonencode(local.counts) == jsonencode({
    first_containers  = data.activation_container_counts.same.first_containers
    second_containers = data.activation_container_counts.same.second_containers
    first_decision    = data.activation_container_counts.same.first_decision
    second_decision   = data.activation_container_counts.same.second_decision
    explanation       = data.activation_container_counts.same.explanation
  })
}
`, hclString(dir+"/first.json"), hclString(dir+"/second.json"))
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		Config: cfg,
		ConfigStateChecks: append(decisionChecks("data.activation_container_counts.same", want),
			statecheck.ExpectKnownOutputValue("first_containers", knownvalue.Int64Exact(int64(want.First.Containers))),
			statecheck.ExpectKnownOutputValue("second_containers", knownvalue.Int64Exact(int64(want.Second.Containers))),
			statecheck.ExpectKnownOutputValue("second_placement_cpu", knownvalue.Int64Exact(int64(want.Second.Placement.CPUMHz))),
			statecheck.ExpectKnownOutputValue("explanation", knownvalue.StringExact(want.Explain())),
			statecheck.ExpectKnownOutputValue("same_as_data_source", knownvalue.Bool(true)),
		),
	}}})
}

// TestAccContainerCountsFunction_golden runs every golden decision vector
// through the function with the real OpenTofu, the observations and quotas
// read with jsondecode(file()): each result is the vector's decision.
func TestAccContainerCountsFunction_golden(t *testing.T) {
	vs, err := golden.Load(golden.Path())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var cfg strings.Builder
	var checks []statecheck.StateCheck
	for i, v := range vs {
		if v.Request.FirstModel != "" && v.Request.FirstModel != engine.DefaultFirstModel ||
			v.Request.SecondModel != "" && v.Request.SecondModel != engine.DefaultSecondModel {
			t.Fatalf("%s names a model other than the built-in defaults: the function decides with those only", v.Name)
		}
		file := func(kind string, x any) string {
			data, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("jsondecode(file(%s))", hclString(writeFile(t, dir, fmt.Sprintf("v%d-%s.json", i, kind), data)))
		}
		fmt.Fprintf(&cfg, "# %s\noutput \"v%d\" {\n  value = provider::activation::container_counts(%s, %s, %s)\n}\n",
			v.Name, i, file("first", v.Request.First), file("second", v.Request.Second), file("quotas", quotasOf(&v.Request)))
		want := v.Want
		checks = append(checks, statecheck.ExpectKnownOutputValue(fmt.Sprintf("v%d", i), knownvalue.ObjectExact(map[string]knownvalue.Check{
			attrFirstContainers:  knownvalue.Int64Exact(int64(want.First.Containers)),
			attrSecondContainers: knownvalue.Int64Exact(int64(want.Second.Containers)),
			attrFirstDecision:    decisionCheck(&want.First),
			attrSecondDecision:   decisionCheck(&want.Second),
			attrExplanation:      knownvalue.StringExact(want.Explain()),
		})))
	}
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{Config: cfg.String(), ConfigStateChecks: checks}}})
}

// TestAccContainerCountsFunction_checkedBesideUnknown: with the real
// OpenTofu, a misspelt attribute beside a value known only at apply (an
// unknown capacity from a resource not created yet) fails the plan, as
// the data source fails it (a user trial found it failed only at apply,
// after the resource was created).
func TestAccContainerCountsFunction_checkedBesideUnknown(t *testing.T) {
	first := observationHCL(testFirst(t))
	first["cpu_capacity_mhz"], first["warming_replica"] = "terraform_data.capacity.output", "1"
	second := hclObject(observationHCL(testSecond(t)))
	for name, call := range map[string]string{
		"object": fmt.Sprintf("provider::activation::container_counts(%s, %s, {})", hclObject(first), second),
		"merge": fmt.Sprintf("provider::activation::container_counts(merge(%s, { cpu_capacity_mhz = terraform_data.capacity.output, warming_replica = 1 }), %s, {})",
			hclObject(observationHCL(testFirst(t))), second),
	} {
		t.Run(name, func(t *testing.T) {
			accTest(t, resource.TestCase{Steps: []resource.TestStep{{
				Config:      "resource \"terraform_data\" \"capacity\" {\n  input = 20000\n}\n\noutput \"counts\" {\n  value = " + call + "\n}\n",
				PlanOnly:    true,
				ExpectError: errRegexp(`Invalid value for "first" parameter: ` + literal(`Attribute first: has an attribute "warming_replica"`)),
			}}})
		})
	}
}

// TestAccContainerCountsFunction_errors: a bad argument is an error naming
// the argument, the attribute and the reason.
func TestAccContainerCountsFunction_errors(t *testing.T) {
	call := func(first, second, quotas string) func(*testing.T) string {
		return func(t *testing.T) string {
			if first == "" {
				first = hclObject(observationHCL(testFirst(t)))
			}
			if second == "" {
				second = hclObject(observationHCL(testSecond(t)))
			}
			return fmt.Sprintf("output \"counts\" {\n  value = provider::activation::container_counts(%s, %s, %s)\n}\n", first, second, quotas)
		}
	}
	badFirst := func(t *testing.T) string {
		o := observationHCL(testFirst(t))
		o[obsUsageSamples] = "[{ time = 60, cpu_mhz = -1 }, { time = 120, cpu_mhz = 1 }, { time = 180, cpu_mhz = 1 }]"
		return hclObject(o)
	}
	runErrorCases(t, []errorCase{
		{"quota min above max", call("", "", "{ second = { min = 5, max = 4 } }"),
			`Invalid value for "quotas" parameter: Attribute quotas\.second\.max: `},
		{"engine rule on an observation", func(t *testing.T) string { return call(badFirst(t), "", "{}")(t) },
			// one period: OpenTofu adds its own to the function's text
			`Invalid value for "first" parameter: ` + literal("Attribute first.usage_samples[0].cpu_mhz: is -1; it must be a finite number >= 0") + `\.(\s|$)`},
		// Two arguments' problems: the call's error, on no argument, each
		// a sentence naming its attribute (a user trial read the second
		// host's as the first's). OpenTofu v1.10.6 shows an error on no
		// argument under the first parameter's name (its plugin6 client
		// makes every function error an argument error, argument 0 when
		// the provider names none); Terraform as the call's.
		{"both hosts wrong", func(t *testing.T) string {
			s := observationHCL(testSecond(t))
			s[obsReplicaCPUDemandMHz] = "0"
			return call(badFirst(t), hclObject(s), "{}")(t)
		}, `Invalid value for "first" parameter: ` +
			literal("Attribute first.usage_samples[0].cpu_mhz: is -1; it must be a finite number >= 0.") + `\s+` +
			literal("Attribute second.replica_cpu_demand_mhz: is 0; it must be a finite number > 0.")},
		{"misspelt attribute", func(t *testing.T) string {
			o := observationHCL(testSecond(t))
			o["wanted_replica"] = "3"
			return call("", hclObject(o), "{}")(t)
		}, `Invalid value for "second" parameter: ` + literal(`Attribute second: has an attribute "wanted_replica"`)},
		{"window as a set", func(t *testing.T) string {
			o := observationHCL(testSecond(t))
			o[obsUsageSamples] = "toset(" + o[obsUsageSamples] + ")"
			return call("", hclObject(o), "{}")(t)
		}, `Invalid value for "second" parameter: ` + literal("Attribute second.usage_samples: must be a list, not a set: a set has no order")},
		// quotas must not be null, whether null is written bare or comes
		// typed from a variable: OpenTofu refuses both before the call.
		{"quotas bare null", call("", "", "null"), `Invalid function argument.*argument must not be null`},
		{"quotas typed null", func(t *testing.T) string {
			return "variable \"quotas\" {\n  type    = object({ min_samples = number })\n  default = null\n}\n" + call("", "", "var.quotas")(t)
		}, `Invalid function argument.*argument must not be null`},
	})
}

// shortFirst is the first test observation with a window of two samples,
// and running replicas when not 0.
func shortFirst(t *testing.T, running int) engine.Observation {
	o := testFirst(t)
	o.Samples = o.Samples[:2]
	if running != 0 {
		o.RunningReplicas = running
	}
	return o
}
