package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
)

type quota struct {
	Min *int `json:"min,omitempty"`
	Max *int `json:"max,omitempty"`
}

type inner struct {
	Shared string `json:"shared"`
	Deep   int    `json:"deep"`
}

// layer decodes itself, as engine.Layer does.
type layer struct {
	Mode string `json:"mode"`
}

func (l *layer) UnmarshalJSON(b []byte) error {
	type plain layer
	return json.Unmarshal(b, (*plain)(l))
}

type doc struct {
	Deep quota `json:"deep"` // hides inner's Deep, as in Go's decoder
	inner
	Layers []layer           `json:"layers"`
	Name   string            `json:"name"`
	Quota  *quota            `json:"quota,omitempty"`
	Quotas []quota           `json:"quotas"`
	Labels map[string]string `json:"labels"`
	Raw    json.RawMessage   `json:"raw"`
	Any    any               `json:"any"`
	Plain  int
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, doc, want string // want "" is no error
	}{
		{"exact names", `{"name":"a","quota":{"min":1,"max":2},"quotas":[{"max":3}],"labels":{"A":"b"},"shared":"s","Plain":1}`, ""},
		{"nested key in another case", `{"quota":{"min":1,"MAX":2}}`, `field quota.MAX: names are case-sensitive: want "max"`},
		{"top key in another case", `{"Name":"a"}`, `field Name: names are case-sensitive: want "name"`},
		{"embedded field in another case", `{"SHARED":"a"}`, `field SHARED: names are case-sensitive: want "shared"`},
		{"in a list", `{"quotas":[{"max":1},{"Min":1}]}`, `field quotas[1].Min: names are case-sensitive: want "min"`},
		{"duplicate top key", `{"name":"a","name":"b"}`, "field name: given twice"},
		{"duplicate nested key", `{"quota":{"min":1,"max":2,"min":3}}`, "field quota.min: given twice"},
		{"duplicate object", `{"quota":{"min":1},"quota":{"max":2}}`, "field quota: given twice"},
		{"duplicate map key", `{"labels":{"a":"1","a":"2"}}`, "field labels.a: given twice"},
		{"map keys keep their case", `{"labels":{"A":"1","a":"2"}}`, ""},
		{"duplicate inside a raw value", `{"raw":{"x":1,"x":2}}`, "field raw.x: given twice"},
		{"any case inside a raw value", `{"raw":{"X":1,"x":2}}`, ""},
		{"duplicate inside an interface", `{"any":[{"k":1,"k":1}]}`, "field any[0].k: given twice"},
		{"unknown field left to json", `{"nope":1}`, ""},
		{"truncated", `{"name":"a"`, "unexpected EOF"},
		{"Unicode folding, as Go's decoder folds", `{"\u017fhared":"a"}`, `field ſhared: names are case-sensitive: want "shared"`},
		{"a field hides an embedded one", `{"deep":{"MAX":1}}`, `field deep.MAX: names are case-sensitive: want "max"`},
		{"inside a type that decodes itself", `{"layers":[{"mode":"a"},{"MODE":"b"}]}`, `field layers[1].MODE: names are case-sensitive: want "mode"`},
		{"duplicate inside a type that decodes itself", `{"layers":[{"mode":"a","mode":"b"}]}`, "field layers[0].mode: given twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check([]byte(c.doc), &doc{})
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Check: %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Check: %v, want %q", err, c.want)
			}
		})
	}
}

// CheckKnown also names an unknown key by its path, except inside a type
// that decodes itself (its keys are its business) and in maps and
// interface values.
func TestCheckKnown(t *testing.T) {
	for _, c := range []struct {
		name, doc, want string
	}{
		{"exact names", `{"name":"a","quota":{"min":1},"labels":{"x":"y"},"any":{"k":1},"raw":{"z":1},"shared":"s"}`, ""},
		{"unknown top key", `{"nope":1}`, "field nope: unknown field"},
		{"unknown nested key", `{"quotas":[{"max":1},{"mx":1}]}`, "field quotas[1].mx: unknown field"},
		{"case still named as case", `{"quota":{"MAX":1}}`, `field quota.MAX: names are case-sensitive`},
		{"a type that decodes itself", `{"layers":[{"extra":1}]}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckKnown([]byte(c.doc), &doc{})
			switch {
			case c.want == "" && err != nil:
				t.Errorf("CheckKnown: %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("CheckKnown: %v, want %q", err, c.want)
			}
		})
	}
}

type sample struct {
	Time int64   `json:"time"`
	CPU  float64 `json:"cpu"`
	Mem  float64 `json:"mem,omitempty"`
}

type host struct {
	inner                     // shared and deep required, deep hidden by Deep
	Deep    *int              `json:"deep,omitempty"`
	Samples []sample          `json:"samples"`
	Name    string            `json:"name,omitempty"`
	On      bool              `json:"on,omitzero"`
	Quota   *quota            `json:"quota,omitempty"`
	Layer   layer             `json:"layer,omitzero"`
	Labels  map[string]string `json:"labels,omitempty"`
}

func TestCheckComplete(t *testing.T) {
	for _, c := range []struct {
		name, doc, want string
	}{
		{"complete", `{"shared":"s","samples":[{"time":1,"cpu":2},{"time":2,"cpu":0,"mem":1}]}`, ""},
		{"optional fields given", `{"shared":"s","samples":[],"name":"a","on":true,"quota":{"min":1},"labels":{"x":"y"},"layer":{"mode":"m"}}`, ""},
		{"optional fields left out", `{"shared":"s","samples":[]}`, ""},
		{"null for an optional object", `{"shared":"s","samples":[],"quota":null}`, "field quota: null"},
		{"null for an optional map", `{"shared":"s","samples":[],"labels":null}`, "field labels: null"},
		{"null for a field inside an optional object", `{"shared":"s","samples":[],"quota":{"min":null}}`, "field quota.min: null"},
		{"null for a list", `{"shared":"s","samples":null}`, "field samples: null"},
		{"null for a pointer field", `{"shared":"s","samples":[],"deep":null}`, "field deep: null"},
		{"a required field left out", `{"shared":"s","samples":[{"time":1,"cpu":2},{"time":2}]}`, "field samples[1].cpu: missing (required)"},
		{"a required list left out", `{"shared":"s"}`, "field samples: missing (required)"},
		{"an embedded struct's required field", `{"samples":[]}`, "field shared: missing (required)"},
		{"every required field of an object left out, named at once", `{}`, "fields samples and shared: missing (required)"},
		{"two left out of a list element", `{"samples":[{}]}`, "fields samples[0].time and samples[0].cpu: missing (required)"},
		{"null for a number", `{"shared":"s","samples":[{"time":1,"cpu":null}]}`, "field samples[0].cpu: null: give a value"},
		{"null for an optional number", `{"shared":"s","samples":[{"time":1,"cpu":1,"mem":null}]}`, "field samples[0].mem: null"},
		{"null for a string", `{"shared":null,"samples":[]}`, "field shared: null"},
		{"a string for a number", `{"shared":"s","samples":[{"time":1,"cpu":"2"}]}`, `field samples[0].cpu: the string "2": want a number`},
		{"a fraction for a whole number", `{"shared":"s","samples":[{"time":1.5,"cpu":2}]}`, "field samples[0].time: 1.5: want a whole number that fits int64"},
		{"a whole number beyond 64 bits", `{"shared":"s","samples":[{"time":1e20,"cpu":2}]}`, "field samples[0].time: 1e20: want a whole number"},
		{"a figure beyond a float", `{"shared":"s","samples":[{"time":1,"cpu":1e400}]}`, "field samples[0].cpu: 1e400: beyond a 64-bit floating point number"},
		{"a figure below a float's smallest", `{"shared":"s","samples":[{"time":1,"cpu":1e-400}]}`, ""},
		{"a whole number written as a float", `{"shared":"s","samples":[{"time":2e0,"cpu":2}]}`, "field samples[0].time: 2e0: want a whole number"},
		{"a number for a string", `{"shared":1,"samples":[]}`, "field shared: the number 1: want a string"},
		{"a number for a boolean", `{"shared":"s","samples":[],"on":1}`, "field on: the number 1: want true or false"},
		{"an object for a list", `{"shared":"s","samples":{}}`, "field samples: an object: want an array"},
		{"a number for an object", `{"shared":"s","samples":[],"quota":3}`, "field quota: the number 3: want an object"},
		{"unknown still refused", `{"shared":"s","samples":[],"nope":1}`, "field nope: unknown field"},
		{"twice still refused", `{"shared":"s","samples":[],"shared":"t"}`, "field shared: given twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckComplete([]byte(c.doc), &host{})
			switch {
			case c.want == "" && err != nil:
				t.Errorf("CheckComplete: %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("CheckComplete: %v, want %q", err, c.want)
			}
		})
	}
}
