package provider

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testfifo"
)

func TestModelSchema(t *testing.T) {
	s := dataSourceSchema(t, NewModelDataSource())
	if diags := s.ValidateImplementation(context.Background()); diags.HasError() {
		t.Fatalf("ValidateImplementation: %v", diags)
	}
	checkSchemaDescriptions(t, s)
}

// modelChecks are the exact state of data source addr describing p.
func modelChecks(addr string, p *engine.Processor) []statecheck.StateCheck {
	m := p.Model()
	strs := func(xs []string) knownvalue.Check {
		cs := make([]knownvalue.Check, len(xs))
		for i, x := range xs {
			cs[i] = knownvalue.StringExact(x)
		}
		return knownvalue.ListExact(cs)
	}
	strMap := func(x map[string]string) knownvalue.Check {
		cs := make(map[string]knownvalue.Check, len(x))
		for k, v := range x {
			cs[k] = knownvalue.StringExact(v)
		}
		return knownvalue.MapExact(cs)
	}
	var sizes []knownvalue.Check
	for _, s := range m.LayerSizes() {
		sizes = append(sizes, knownvalue.Int64Exact(int64(s)))
	}
	var inputs []knownvalue.Check
	var inNames, inCount, outNames, outCount []string
	for _, n := range m.Inputs {
		inputs = append(inputs, knownvalue.ObjectExact(map[string]knownvalue.Check{
			nodeName: knownvalue.StringExact(n.Name), nodeCountable: knownvalue.Bool(n.Countable)}))
		inNames = append(inNames, n.Name)
		if n.Countable {
			inCount = append(inCount, n.Name)
		}
	}
	for _, n := range m.Outputs {
		outNames = append(outNames, n.Name)
		if n.Countable {
			outCount = append(outCount, n.Name)
		}
	}
	at := func(a string) tfjsonpath.Path { return tfjsonpath.New(a) }
	return []statecheck.StateCheck{
		statecheck.ExpectKnownValue(addr, at(attrName), knownvalue.StringExact(m.Name)),
		statecheck.ExpectKnownValue(addr, at(attrDescription), knownvalue.StringExact(m.Description)),
		statecheck.ExpectKnownValue(addr, at(attrDigest), knownvalue.StringExact(p.Digest())),
		statecheck.ExpectKnownValue(addr, at(attrLayerSizes), knownvalue.ListExact(sizes)),
		statecheck.ExpectKnownValue(addr, at(attrParameters), knownvalue.Int64Exact(int64(m.Parameters()))),
		statecheck.ExpectKnownValue(addr, at(attrInputs), knownvalue.ListExact(inputs)),
		statecheck.ExpectKnownValue(addr, at(attrInputNames), strs(inNames)),
		statecheck.ExpectKnownValue(addr, at(attrCountableInputs), strs(inCount)),
		statecheck.ExpectKnownValue(addr, at(attrOutputNames), strs(outNames)),
		statecheck.ExpectKnownValue(addr, at(attrCountableOutputs), strs(outCount)),
		statecheck.ExpectKnownValue(addr, at(attrInputEpsilon), knownvalue.Float64Exact(m.Epsilon())),
		statecheck.ExpectKnownValue(addr, at(attrOutputThreshold), knownvalue.Float64Exact(m.Threshold())),
		statecheck.ExpectKnownValue(addr, at(attrProvenance), knownvalue.ObjectExact(map[string]knownvalue.Check{
			provMethod:    knownvalue.StringExact(m.Provenance.Method),
			provGenerator: knownvalue.StringExact(m.Provenance.Generator),
			provData:      strs(m.Provenance.Data),
			provSettings:  strMap(m.Provenance.Settings),
			provMetrics:   strMap(m.Provenance.Metrics),
		})),
	}
}

func builtinProcessor(t *testing.T, name string) *engine.Processor {
	t.Helper()
	p, err := engine.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAccModel_builtinAndFile(t *testing.T) {
	adm := builtinProcessor(t, engine.BuiltinAdmission)
	capy := builtinProcessor(t, engine.BuiltinCapacity)
	// The capacity model indented differently: same canonical form, same digest.
	data, err := json.MarshalIndent(capy.Model(), "", "      ")
	if err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, t.TempDir(), "capacity.json", data)
	cfg := dataConfig("activation_model", "adm", map[string]string{attrSource: `"builtin:admission"`}) +
		dataConfig("activation_model", "cap", map[string]string{attrSource: `"builtin:capacity"`}) +
		dataConfig("activation_model", "file", map[string]string{attrSource: hclString(file)}) +
		// A configuration can pin the digest it was reviewed with.
		"\nresource \"terraform_data\" \"pin\" {\n  input = data.activation_model.file.digest\n" +
		"  lifecycle {\n    precondition {\n      condition = data.activation_model.file.digest == data.activation_model.cap.digest\n" +
		"      error_message = \"model changed\"\n    }\n  }\n}\n"
	var checks []statecheck.StateCheck
	checks = append(checks, modelChecks("data.activation_model.adm", adm)...)
	checks = append(checks, modelChecks("data.activation_model.cap", capy)...)
	checks = append(checks, modelChecks("data.activation_model.file", capy)...)
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{Config: cfg, ConfigStateChecks: checks}}})
}

func TestAccModel_errors(t *testing.T) {
	src := func(v string) func(t *testing.T) string {
		return func(*testing.T) string {
			return dataConfig("activation_model", "test", map[string]string{attrSource: v})
		}
	}
	runErrorCases(t, []errorCase{
		{"unknown built-in", src(`"builtin:nope"`), `Attribute source names built-in model "nope", which does not exist`},
		{"empty source", src(`""`), `Attribute source is empty: want builtin:<name> or the path of a model file`},
		{"missing file", src(hclString("/nonexistent/activation/model.json")), `Attribute source: loading model /nonexistent/activation/model\.json: no such file or directory`},
		{"invalid file", func(t *testing.T) string {
			m := *builtinModel(t, engine.BuiltinAdmission)
			m.Version = 99
			return dataConfig("activation_model", "test", map[string]string{attrSource: hclString(writeModel(t, t.TempDir(), "m.json", &m))})
		}, `Attribute source: .*version: unknown version 99`},
		{"a FIFO, which would block a reader", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "model.json")
			testfifo.Mkfifo(t, p)
			return dataConfig("activation_model", "test", map[string]string{attrSource: hclString(p)})
		}, `Attribute source: .*model\.json: is a named pipe, not a file`},
		{"a directory", func(t *testing.T) string {
			return dataConfig("activation_model", "test", map[string]string{attrSource: hclString(t.TempDir())})
		}, `Attribute source: loading model .*: is a directory, not a file`},
		{"not a model", func(t *testing.T) string {
			p := writeFile(t, t.TempDir(), "m.json", []byte(`{"format": "activation-model", "version": 1, "name": "x", "weights": []}`))
			return dataConfig("activation_model", "test", map[string]string{attrSource: hclString(p)})
		}, `Attribute source: .*unknown field "weights"`},
		// A valid network, but no host can decide with it: a digest
		// pinned on it would pin a model every plan refuses.
		{"inputs no observation gives", func(t *testing.T) string {
			m := *builtinModel(t, engine.BuiltinCapacity)
			m.Inputs = slices.Clone(m.Inputs)
			m.Inputs[0].Name = "bogus_feature"
			return dataConfig("activation_model", "test", map[string]string{attrSource: hclString(writeModel(t, t.TempDir(), "m.json", &m))})
		}, `(?s)No host can use the model.*Attribute source: .*m\.json: model capacity cannot read an observation: .*bogus_feature`},
		{"countable nodes on neither layer", func(t *testing.T) string {
			m := *builtinModel(t, engine.BuiltinCapacity)
			m.Outputs = slices.Clone(m.Outputs)
			for i := range m.Outputs {
				m.Outputs[i].Countable = false
			}
			return dataConfig("activation_model", "test", map[string]string{attrSource: hclString(writeModel(t, t.TempDir(), "m.json", &m))})
		}, `(?s)as the first host: model capacity has no countable inputs .*; as the second host: model capacity has no countable outputs`},
	})
}
