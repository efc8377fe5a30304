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
	// Null and {} quotas are every default.
	for _, quotas := range []attr.Value{nil, jsonValue(t, map[string]any{})} {
		got, ferr := runFunction(t, jsonValue(t, first), jsonValue(t, second), quotas)
		if ferr != nil {
			t.Fatal(ferr)
		}
		if want := countsResult(mustDecide(t, &engine.Request{First: first, Second: second})); !reflect.DeepEqual(got, want) {
			t.Fatalf("default quotas: got %+v, want %+v", got, want)
		}
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
			`first has an attribute "cpu_capcity_mhz", which is not one of:`},
		{"missing required", []attr.Value{ok, obs(func(m map[string]any) { delete(m, obsReplicaCPUDemandMHz) }), none}, 1,
			"second.replica_cpu_demand_mhz is required"},
		{"wrong kind", []attr.Value{ok, obs(func(m map[string]any) { m[obsRunningReplicas] = "six" }), none}, 1,
			"second.running_replicas must be a number, not a string"},
		{"sample not an object", []attr.Value{obs(func(m map[string]any) { m[obsUsageSamples] = []any{1, 2} }), ok, none}, 0,
			"Attribute first.usage_samples[0]: must be an object, not a number"},
		{"fractional count", []attr.Value{ok, obs(func(m map[string]any) { m[obsWarmingReplicas] = 1.5 }), none}, 1,
			"Attribute second.warming_replicas: is 1.5; it must be a whole number"},
		{"engine rule on an observation", []attr.Value{ok, obs(func(m map[string]any) { m[obsCPUCapacityMHz] = 0 }), none}, 1,
			"Attribute second.cpu_capacity_mhz: is 0; it must be a finite number > 0"},
		{"engine rule on a quota", []attr.Value{ok, ok, jsonValue(t, map[string]any{"first": map[string]any{"min": 5, "max": 4}})}, 2,
			"Attribute quotas.first.max: "},
		{"too few samples for min_samples: on the window", []attr.Value{ok, ok, jsonValue(t, map[string]any{"min_samples": 31})}, 0,
			"Attribute first.usage_samples: has 30 sample(s); at least 31 are needed"},
		{"unknown quota attribute", []attr.Value{ok, ok, jsonValue(t, map[string]any{"third": map[string]any{}})}, 2,
			`quotas has an attribute "third"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ferr := runFunction(t, c.args...)
			if ferr == nil {
				t.Fatal("no error")
			}
			if ferr.FunctionArgument == nil {
				t.Fatalf("error on no argument: %s", ferr.Text)
			}
			if *ferr.FunctionArgument != c.arg {
				t.Errorf("error on argument %d, want %d: %s", *ferr.FunctionArgument, c.arg, ferr.Text)
			}
			if !strings.Contains(ferr.Text, c.message) {
				t.Errorf("error %q does not say %q", ferr.Text, c.message)
			}
		})
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
			`Invalid value for "first" parameter: ` + literal("Attribute first.usage_samples[0].cpu_mhz: is -1; it must be a finite number >= 0")},
		{"misspelt attribute", func(t *testing.T) string {
			o := observationHCL(testSecond(t))
			o["wanted_replica"] = "3"
			return call("", hclObject(o), "{}")(t)
		}, `Invalid value for "second" parameter: second has an attribute "wanted_replica"`},
	})
}
