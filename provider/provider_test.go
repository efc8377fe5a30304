package provider

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

func TestProviderSchema(t *testing.T) {
	ctx := context.Background()
	p := New("test")()
	var resp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	if diags := resp.Schema.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("ValidateImplementation: %v", diags)
	}
	check := func(name string, a schema.Attribute) {
		if a.GetMarkdownDescription() == "" {
			t.Errorf("%s: no MarkdownDescription", name)
		}
		var n int
		switch v := a.(type) {
		case schema.StringAttribute:
			n = len(v.Validators)
		case schema.BoolAttribute:
			n = len(v.Validators)
		default:
			t.Errorf("%s: kind %T not covered", name, a)
		}
		if n == 0 {
			t.Errorf("%s: no validators", name)
		}
	}
	for name, a := range resp.Schema.Attributes {
		check(name, a)
	}
	nb, ok := resp.Schema.Blocks["nomad"].(schema.SingleNestedBlock)
	if !ok {
		t.Fatal("no nomad block")
	}
	for name, a := range nb.Attributes {
		check("nomad."+name, a)
	}
	for _, secret := range []string{nomadToken, nomadKeyPEM} {
		if !nb.Attributes[secret].IsSensitive() {
			t.Errorf("nomad.%s is not sensitive", secret)
		}
	}
	var meta provider.MetadataResponse
	p.Metadata(ctx, provider.MetadataRequest{}, &meta)
	if meta.TypeName != TypeName || meta.Version != "test" {
		t.Errorf("metadata %+v", meta)
	}
	var names []string
	for _, f := range p.DataSources(ctx) {
		ds := f()
		var r datasourceMetadata
		ds.Metadata(ctx, r.req(), &r.resp)
		names = append(names, r.resp.TypeName)
	}
	want := []string{"activation_container_counts", "activation_model", "activation_host_usage"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("data sources %v, want %v", names, want)
	}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestResolveNomadSettings(t *testing.T) {
	full := map[string]string{
		envNomadAddr: "https://env:4646", envNomadToken: "env-token", envNomadRegion: "env-region",
		envNomadNamespace: "env-ns", envNomadCACert: "/env/ca.pem", envNomadClientCert: "/env/cert.pem",
		envNomadClientKey: "/env/key.pem", envNomadTLSServerName: "env.sni", envNomadSkipVerify: "true",
	}
	nullBlock := func() *nomadModel {
		return &nomadModel{Address: types.StringNull(), Token: types.StringNull(), Region: types.StringNull(), Namespace: types.StringNull(),
			CAFile: types.StringNull(), CAPEM: types.StringNull(), CertFile: types.StringNull(), CertPEM: types.StringNull(),
			KeyFile: types.StringNull(), KeyPEM: types.StringNull(), TLSServerName: types.StringNull(), SkipVerify: types.BoolNull()}
	}
	t.Run("no block, no env: Nomad's default address", func(t *testing.T) {
		s := resolveNomadSettings(nil, env(nil))
		if s.Config.Address != defaultNomadAddress || s.Config.SecretID != "" || s.Err != nil || len(s.Unknown) != 0 {
			t.Fatalf("%+v", s)
		}
	})
	t.Run("env fallbacks", func(t *testing.T) {
		s := resolveNomadSettings(nullBlock(), env(full))
		c, tls := s.Config, s.Config.TLSConfig
		got := []string{c.Address, c.SecretID, c.Region, c.Namespace, tls.CACert, tls.ClientCert, tls.ClientKey, tls.TLSServerName, fmt.Sprint(tls.Insecure)}
		want := []string{"https://env:4646", "env-token", "env-region", "env-ns", "/env/ca.pem", "/env/cert.pem", "/env/key.pem", "env.sni", "true"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("block beats env", func(t *testing.T) {
		b := nullBlock()
		b.Address, b.Token, b.Namespace = types.StringValue("http://block:4646"), types.StringValue("block-token"), types.StringValue("block-ns")
		b.CAPEM, b.CertPEM, b.KeyPEM = types.StringValue("-----BEGIN CA"), types.StringValue("-----BEGIN CERT"), types.StringValue("-----BEGIN KEY")
		b.SkipVerify = types.BoolValue(false)
		s := resolveNomadSettings(b, env(full))
		c, tls := s.Config, s.Config.TLSConfig
		if c.Address != "http://block:4646" || c.SecretID != "block-token" || c.Namespace != "block-ns" || c.Region != "env-region" {
			t.Errorf("config %+v", c)
		}
		if string(tls.CACertPEM) != "-----BEGIN CA" || tls.CACert != "" || string(tls.ClientCertPEM) != "-----BEGIN CERT" || tls.ClientCert != "" ||
			string(tls.ClientKeyPEM) != "-----BEGIN KEY" || tls.ClientKey != "" || tls.Insecure {
			t.Errorf("tls %+v", tls)
		}
	})
	t.Run("unknown values are reported", func(t *testing.T) {
		b := nullBlock()
		b.Address, b.SkipVerify = types.StringUnknown(), types.BoolUnknown()
		s := resolveNomadSettings(b, env(nil))
		if !reflect.DeepEqual(s.Unknown, []string{nomadAddress, nomadSkipVerify}) {
			t.Fatalf("unknown %v", s.Unknown)
		}
		if _, err := s.client(); err == nil || !strings.Contains(err.Error(), "not known until apply") {
			t.Fatalf("client: %v", err)
		}
	})
	t.Run("bad NOMAD_SKIP_VERIFY", func(t *testing.T) {
		s := resolveNomadSettings(nil, env(map[string]string{envNomadSkipVerify: "maybe"}))
		if _, err := s.client(); err == nil || !strings.Contains(err.Error(), envNomadSkipVerify) {
			t.Fatalf("client: %v", err)
		}
	})
	t.Run("client error never shows the token", func(t *testing.T) {
		b := nullBlock()
		b.Token = types.StringValue("very-secret")
		b.CAFile = types.StringValue("/nonexistent/ca.pem")
		s := resolveNomadSettings(b, env(nil))
		_, err := s.client()
		if err == nil {
			t.Fatal("a missing CA file should fail")
		}
		if strings.Contains(err.Error(), "very-secret") {
			t.Fatalf("error shows the token: %v", err)
		}
	})
}

func TestErrorPath(t *testing.T) {
	cases := []struct {
		err  error
		want string
		ok   bool
	}{
		{&engine.ObservationError{Host: "first", Field: "usage_samples[12].time", Reason: "r"}, "first.usage_samples[12].time", true},
		{&engine.ObservationError{Host: "second", Field: "cpu_capacity_mhz", Reason: "r"}, "second.cpu_capacity_mhz", true},
		{fmt.Errorf("wrapped: %w", &engine.QuotaError{Host: "second", Field: "per_branch", Reason: "r"}), "second_quota.per_branch", true},
		{errors.New("first_model: loading model x: model: layers[0].weights[3][7]: NaN"), "first_model", true},
		{errors.New("second host: model m has no countable outputs"), "second_model", true},
		{errors.New("something else"), "", false},
	}
	for _, c := range cases {
		p, _, ok := errorPath(c.err)
		if ok != c.ok || p.String() != c.want {
			t.Errorf("%v: got %q %v, want %q %v", c.err, p, ok, c.want, c.ok)
		}
	}
}

func TestFieldPath(t *testing.T) {
	root := rootsByRole[engine.RoleFirst].observation
	for field, want := range map[string]string{
		"":                          "first",
		"host":                      "first.host",
		"usage_samples[0].cpu_mhz":  "first.usage_samples[0].cpu_mhz",
		"layers[1].weights[3][7]":   "first.layers[1].weights[3][7]",
		"usage_samples[x].time":     "first.usage_samples",
		"usage_samples[2]junk.time": "first.usage_samples[2]",
	} {
		if got := fieldPath(root, field).String(); got != want {
			t.Errorf("%q: got %q, want %q", field, got, want)
		}
	}
}

// datasourceMetadata holds a data source's Metadata call.
type datasourceMetadata struct{ resp datasource.MetadataResponse }

func (datasourceMetadata) req() datasource.MetadataRequest {
	return datasource.MetadataRequest{ProviderTypeName: TypeName}
}
