package provider

import (
	"context"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestWholeBetween(t *testing.T) {
	num := func(s string) types.Number {
		f, _, err := big.ParseFloat(s, 10, 512, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		return types.NumberValue(f)
	}
	for _, c := range []struct {
		v    types.Number
		want string // "" for valid
	}{
		{num("1"), ""}, {num("60"), ""}, {types.NumberNull(), ""}, {types.NumberUnknown(), ""},
		{num("0"), "Attribute x: is 0; it must be a whole number from 1 to 60."},
		{num("61"), "Attribute x: is 61; it must be a whole number from 1 to 60."},
		{num("2.5"), "Attribute x: is 2.5; it must be a whole number from 1 to 60."},
		{num("1e30"), "Attribute x: is 1e+30; it must be a whole number from 1 to 60."},
		{types.NumberValue(new(big.Float).SetInf(false)), "Attribute x: is +Inf; it must be a whole number from 1 to 60."},
	} {
		var resp validator.NumberResponse
		wholeBetween{1, 60}.ValidateNumber(context.Background(), validator.NumberRequest{Path: path.Root("x"), ConfigValue: c.v}, &resp)
		got := ""
		if resp.Diagnostics.HasError() {
			got = resp.Diagnostics.Errors()[0].Detail()
		}
		if got != c.want {
			t.Errorf("%v: got %q, want %q", c.v, got, c.want)
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
		{"user and password", urlValidator(), types.StringValue("https://user:pw@nomad.example.com"), true},
		{"pem", pemValidator(), types.StringValue("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----"), true},
		{"not pem", pemValidator(), types.StringValue("/etc/ca.pem"), false},
		{"token", tokenString{}, types.StringValue("3f1c2a9e-0000-4bad-beef-123456789abc"), true},
		{"empty token", tokenString{}, types.StringValue(""), false},
		{"token too long", tokenString{}, types.StringValue(strings.Repeat("x", 1025)), false},
		{"unknown token", tokenString{}, types.StringUnknown(), true},
	}
	for _, c := range cases {
		if got := validateString(c.v, c.in); got != c.ok {
			t.Errorf("%s: ok=%v, want %v", c.name, got, c.ok)
		}
	}
}

// TestURLValidatorHidesPassword: an address refused for its syntax is
// shown without the password it holds.
func TestURLValidatorHidesPassword(t *testing.T) {
	const password = "s3cret-in-the-url"
	for _, addr := range []string{"ftp://u:" + password + "@nomad:4646", "http://u:" + password + "@", "http://u:" + password + "@host:port:x/%zz"} {
		var resp validator.StringResponse
		urlValidator().ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: types.StringValue(addr)}, &resp)
		if !resp.Diagnostics.HasError() {
			t.Fatalf("%s accepted", addr)
		}
		if d := resp.Diagnostics.Errors()[0].Detail(); strings.Contains(d, password) {
			t.Errorf("the error shows the password: %s", d)
		}
	}
}

// TestConformNamesEveryProblem: an object's unknown attributes are named
// together, each with the field it most likely misspells; several missing
// required attributes are named together.
func TestConformNamesEveryProblem(t *testing.T) {
	num := types.NumberValue(big.NewFloat(1))
	for _, c := range []struct {
		name  string
		attrs map[string]attr.Value
		want  string
	}{
		{"two misspellings", map[string]attr.Value{"cpu_capacity_mhz": num, "usage_samples": types.TupleValueMust(nil, nil), "requested_cpu_mhz": num,
			"running_replicas": num, "replica_cpu_demand_mhz": num, "warming_replica": num, "Queued_Replicas": num},
			`has attributes "Queued_Replicas" (did you mean "queued_replicas"?), "warming_replica" (did you mean "warming_replicas"?), which are not among: host,`},
		{"no near name", map[string]attr.Value{"cpu_capacity_mhz": num, "usage_samples": types.TupleValueMust(nil, nil), "requested_cpu_mhz": num,
			"running_replicas": num, "replica_cpu_demand_mhz": num, "colour": num},
			`has an attribute "colour", which is not one of: host,`},
		{"several required missing", map[string]attr.Value{"host": types.StringValue("h")},
			"is missing the required attributes cpu_capacity_mhz, usage_samples, requested_cpu_mhz, running_replicas, replica_cpu_demand_mhz"},
		{"one required missing", map[string]attr.Value{"cpu_capacity_mhz": num, "usage_samples": types.TupleValueMust(nil, nil), "requested_cpu_mhz": num,
			"running_replicas": num}, "Attribute first.replica_cpu_demand_mhz: is required"},
	} {
		_, err := conformAttributes(c.attrs, observationFields, path.Root("first"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}

// Every attribute problem of a quota is reported at once, each at its own
// path (a user trial fixed min = 1.5 and max = 7.5 one plan at a time).
func TestQuotaErrorsAllAtOnce(t *testing.T) {
	q := &quotaModel{Min: types.NumberValue(big.NewFloat(1.5)), Max: types.NumberValue(big.NewFloat(7.5)),
		PerBranch: types.NumberNull(), Rounding: types.StringNull()}
	errs := knownSettingsErrors([2]*quotaModel{q, nil}, settings{}, countsRoots)
	var got []string
	for _, e := range errs {
		got = append(got, e.path.String())
	}
	want := []string{"first_quota.min", "first_quota.max"}
	if !slices.Equal(got, want) {
		t.Fatalf("errors at %v (%v); want one at each of %v", got, errs, want)
	}
}

// A number that is not whole is shown with its fraction: at 10 digits a
// Unix time from a query_range (1700000000.123) read "is 1700000000; it
// must be a whole number" (found by a review).
func TestWholeShowsTheFraction(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"1700000000.123", "is 1700000000.123; it must be a whole number"},
		{"2.0000000000000001", "is 2.0000000000000001; it must be a whole number"},
		{"120.5", "is 120.5; it must be a whole number"},
	} {
		f, _, err := big.ParseFloat(tc.in, 10, 512, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		if _, why := whole(types.NumberValue(f)); why != tc.want {
			t.Errorf("whole(%s): %q, want %q", tc.in, why, tc.want)
		}
	}
	if _, why := whole(types.NumberValue(big.NewFloat(1700000000))); why != "" {
		t.Errorf("a whole time refused: %s", why)
	}
}

// The headers' validator names each bad header on its key, checks a value
// only when it is known (an unknown or null value is no value yet), and
// skips a map not yet known.
func TestHeaderMap(t *testing.T) {
	at := path.Root("nomad").AtName("headers")
	run := func(m types.Map) []string {
		var resp validator.MapResponse
		headerMap{}.ValidateMap(context.Background(), validator.MapRequest{Path: at, ConfigValue: m}, &resp)
		var got []string
		for _, d := range resp.Diagnostics.Errors() {
			got = append(got, d.Detail())
		}
		return got
	}
	got := run(types.MapValueMust(types.StringType, map[string]attr.Value{
		"X-Unknown": types.StringUnknown(), "X-Null": types.StringNull(), "X Bad": types.StringUnknown(),
		"X-Newline": types.StringValue("s3cr3t\n"), "X-Ok": types.StringValue("s3cr3t"),
	}))
	want := []string{`Attribute nomad.headers["X Bad"]: "X Bad" is not a valid header name`, `Attribute nomad.headers["X-Newline"]: the value of header "X-Newline" holds a control character`}
	if len(got) != len(want) {
		t.Fatalf("errors %q, want %d", got, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) || strings.Contains(got[i], "s3cr3t") {
			t.Errorf("error %d: %q, want it to start %q and show no value", i, got[i], w)
		}
	}
	if got := run(types.MapUnknown(types.StringType)); len(got) != 0 {
		t.Errorf("an unknown map: %q", got)
	}
}
