package provider

import (
	"context"
	"math"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestGreaterThan(t *testing.T) {
	for _, c := range []struct {
		v  types.Float64
		ok bool
	}{
		{types.Float64Value(0.001), true}, {types.Float64Value(0), false}, {types.Float64Value(-1), false},
		{types.Float64Value(math.Inf(1)), false}, {types.Float64Null(), true}, {types.Float64Unknown(), true},
	} {
		var resp validator.Float64Response
		greaterThan(0).ValidateFloat64(context.Background(), validator.Float64Request{Path: path.Root("x"), ConfigValue: c.v}, &resp)
		if resp.Diagnostics.HasError() == c.ok {
			t.Errorf("%v: ok=%v, diags %v", c.v, c.ok, resp.Diagnostics)
		}
	}
}

func validateString(v validator.String, s types.String) bool {
	var resp validator.StringResponse
	v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: s}, &resp)
	return !resp.Diagnostics.HasError()
}

func TestStringValidators(t *testing.T) {
	cases := []struct {
		name string
		v    validator.String
		in   types.String
		ok   bool
	}{
		{"builtin admission", modelSource{}, types.StringValue("builtin:admission"), true},
		{"builtin capacity", modelSource{}, types.StringValue("builtin:capacity"), true},
		{"builtin unknown", modelSource{}, types.StringValue("builtin:nope"), false},
		{"file path", modelSource{}, types.StringValue("./models/mine.json"), true},
		{"blank", modelSource{}, types.StringValue("  "), false},
		{"unknown model", modelSource{}, types.StringUnknown(), true},
		{"http url", urlValidator(), types.StringValue("http://127.0.0.1:4646"), true},
		{"https url", urlValidator(), types.StringValue("https://nomad.example.com"), true},
		{"unix url", urlValidator(), types.StringValue("unix:///var/run/nomad.sock"), true},
		{"ftp url", urlValidator(), types.StringValue("ftp://nomad"), false},
		{"no scheme", urlValidator(), types.StringValue("nomad:4646"), false},
		{"no host", urlValidator(), types.StringValue("http://"), false},
		{"pem", pemValidator(), types.StringValue("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----"), true},
		{"not pem", pemValidator(), types.StringValue("/etc/ca.pem"), false},
	}
	for _, c := range cases {
		if got := validateString(c.v, c.in); got != c.ok {
			t.Errorf("%s: ok=%v, want %v", c.name, got, c.ok)
		}
	}
}
