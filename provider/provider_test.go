package provider

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
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
	for name, a := range resp.Schema.Attributes {
		if a.GetMarkdownDescription() == "" {
			t.Errorf("%s: no MarkdownDescription", name)
		}
	}
	nb, ok := resp.Schema.Blocks["nomad"].(schema.SingleNestedBlock)
	if !ok {
		t.Fatal("no nomad block")
	}
	for name, a := range nb.Attributes {
		if a.GetMarkdownDescription() == "" {
			t.Errorf("nomad.%s: no MarkdownDescription", name)
		}
	}
	for _, secret := range []string{nomadToken, nomadSecretID, nomadHTTPAuth, nomadHeaders, nomadKeyPEM} {
		if !nb.Attributes[secret].IsSensitive() {
			t.Errorf("nomad.%s is not sensitive", secret)
		}
	}
	// Every setting of nomadconn has its attribute.
	var model []string
	rt := reflect.TypeOf(nomadModel{})
	for i := 0; i < rt.NumField(); i++ {
		model = append(model, rt.Field(i).Tag.Get("tfsdk"))
	}
	if len(model) != len(nb.Attributes) {
		t.Errorf("nomad block has %d attributes, its model %d", len(nb.Attributes), len(model))
	}
	var meta provider.MetadataResponse
	p.Metadata(ctx, provider.MetadataRequest{}, &meta)
	if meta.TypeName != TypeName || meta.Version != "test" {
		t.Errorf("metadata %+v", meta)
	}
	var names []string
	for _, f := range p.DataSources(ctx) {
		var r datasource.MetadataResponse
		f().Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: TypeName}, &r)
		names = append(names, r.TypeName)
	}
	want := []string{"activation_container_counts", "activation_model", "activation_host_usage"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("data sources %v, want %v", names, want)
	}
}

// nullNomadBlock is a nomad block with nothing set.
func nullNomadBlock() *nomadModel {
	return &nomadModel{
		Address: types.StringNull(), Token: types.StringNull(), SecretID: types.StringNull(), HTTPAuth: types.StringNull(), Headers: types.MapNull(types.StringType),
		Region: types.StringNull(), Namespace: types.StringNull(), CAFile: types.StringNull(), CAPath: types.StringNull(),
		CAPEM: types.StringNull(), CertFile: types.StringNull(), CertPEM: types.StringNull(), KeyFile: types.StringNull(),
		KeyPEM: types.StringNull(), TLSServerName: types.StringNull(), SkipVerify: types.BoolNull(), IgnoreEnvVars: types.MapNull(types.BoolType),
	}
}

// resolved is what the provider's nomad settings resolve to, block first,
// then the environment (through ignore_env_vars).
func resolved(t *testing.T, n *nomadModel, env map[string]string) nomadconn.Settings {
	t.Helper()
	c := newNomadConnection(context.Background(), n, nomadconn.MapEnv(env))
	if c.err != nil {
		t.Fatal(c.err)
	}
	s, err := c.settings.Resolve(c.getenv)
	// A certificate without its key (or the reverse) is refused, but the
	// settings are filled: this test is about where each one comes from.
	var se *nomadconn.SettingsError
	if err != nil && (!errors.As(err, &se) || se.Setting != "client certificate") {
		t.Fatal(err)
	}
	return s
}

// nomadSettingCases relate each attribute of the nomad block to its
// variable and to the setting both fill.
var nomadSettingCases = []struct {
	attr, env string
	set       func(n *nomadModel, v string)
	get       func(s nomadconn.Settings) string
}{
	{nomadAddress, nomadconn.EnvAddress, func(n *nomadModel, v string) { n.Address = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.Address }},
	{nomadToken, nomadconn.EnvToken, func(n *nomadModel, v string) { n.Token = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.Token }},
	// secret_id is terraform-provider-nomad's name of the token.
	{nomadSecretID, nomadconn.EnvToken, func(n *nomadModel, v string) { n.SecretID = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.Token }},
	{nomadHTTPAuth, nomadconn.EnvHTTPAuth, func(n *nomadModel, v string) { n.HTTPAuth = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.HTTPAuth }},
	{nomadRegion, nomadconn.EnvRegion, func(n *nomadModel, v string) { n.Region = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.Region }},
	{nomadNamespace, nomadconn.EnvNamespace, func(n *nomadModel, v string) { n.Namespace = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.Namespace }},
	{nomadCAFile, nomadconn.EnvCACert, func(n *nomadModel, v string) { n.CAFile = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.CACert }},
	{nomadCAPath, nomadconn.EnvCAPath, func(n *nomadModel, v string) { n.CAPath = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.CAPath }},
	{nomadCertFile, nomadconn.EnvClientCert, func(n *nomadModel, v string) { n.CertFile = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.ClientCert }},
	{nomadKeyFile, nomadconn.EnvClientKey, func(n *nomadModel, v string) { n.KeyFile = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.ClientKey }},
	{nomadTLSServerName, nomadconn.EnvTLSServerName, func(n *nomadModel, v string) { n.TLSServerName = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.TLSServerName }},
	{nomadSkipVerify, nomadconn.EnvSkipVerify, func(n *nomadModel, v string) { n.SkipVerify = types.BoolValue(v == "true") },
		func(s nomadconn.Settings) string {
			if s.SkipVerify == nil {
				return ""
			}
			return fmt.Sprint(*s.SkipVerify)
		}},
	{nomadCAPEM, "", func(n *nomadModel, v string) { n.CAPEM = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.CACertPEM }},
	{nomadCertPEM, "", func(n *nomadModel, v string) { n.CertPEM = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.ClientCertPEM }},
	{nomadKeyPEM, "", func(n *nomadModel, v string) { n.KeyPEM = types.StringValue(v) }, func(s nomadconn.Settings) string { return s.ClientKeyPEM }},
}

// TestNomadSettings: each attribute of the nomad block sets its setting and
// beats its variable; each variable fills the setting when the attribute is
// unset, unless ignore_env_vars names it.
func TestNomadSettings(t *testing.T) {
	value := func(attr string) string {
		switch attr {
		case nomadAddress:
			return "https://" + attr + ".example:4646"
		case nomadSkipVerify:
			return "true"
		case nomadCAPEM, nomadCertPEM, nomadKeyPEM:
			return "-----BEGIN " + attr + "-----"
		}
		return attr + "-value"
	}
	covered := map[string]bool{nomadHeaders: true, nomadIgnoreEnvVars: true} // tested below
	for _, c := range nomadSettingCases {
		covered[c.attr] = true
		t.Run(c.attr, func(t *testing.T) {
			n := nullNomadBlock()
			c.set(n, value(c.attr))
			env := map[string]string{}
			if c.env != "" {
				env[c.env] = "env-value-" + c.env
				if c.env == nomadconn.EnvAddress {
					env[c.env] = "http://env.example:4646"
				}
				if c.env == nomadconn.EnvSkipVerify {
					env[c.env] = "false"
				}
			}
			if got := c.get(resolved(t, n, env)); got != value(c.attr) {
				t.Errorf("attribute: setting is %q, want %q", got, value(c.attr))
			}
			if c.env == "" {
				return
			}
			t.Run("variable "+c.env, func(t *testing.T) {
				if got := c.get(resolved(t, nullNomadBlock(), env)); got != env[c.env] {
					t.Errorf("setting is %q, want the variable's %q", got, env[c.env])
				}
				ignore := nullNomadBlock()
				ignore.IgnoreEnvVars = types.MapValueMust(types.BoolType, map[string]attr.Value{c.env: types.BoolValue(true)})
				if got := c.get(resolved(t, ignore, env)); got == env[c.env] {
					t.Errorf("ignore_env_vars = { %s = true } still reads it", c.env)
				}
			})
		})
	}
	t.Run(nomadHeaders, func(t *testing.T) {
		n := nullNomadBlock()
		n.Headers = types.MapValueMust(types.StringType, map[string]attr.Value{"X-Proxy-Auth": types.StringValue("abc123")})
		if got := resolved(t, n, nil).Headers; !reflect.DeepEqual(got, map[string]string{"X-Proxy-Auth": "abc123"}) {
			t.Errorf("headers %v", got)
		}
	})
	// Inside a Nomad allocation (NOMAD_ALLOC_ID) or a Terraform Cloud run
	// (TFC_RUN_ID, as terraform-provider-nomad tests), ignore_env_vars unset
	// or {} ignores the task's own NOMAD_NAMESPACE and NOMAD_REGION; a map
	// that names any variable replaces that default.
	for _, marker := range []string{envAllocID, envTFCRunID} {
		t.Run("inside "+marker, func(t *testing.T) {
			env := map[string]string{marker: "5e3c...", nomadconn.EnvNamespace: "task-ns", nomadconn.EnvRegion: "task-region", nomadconn.EnvToken: "tok"}
			for name, ignore := range map[string]types.Map{
				"unset": types.MapNull(types.BoolType),
				"{}":    types.MapValueMust(types.BoolType, map[string]attr.Value{}),
			} {
				n := nullNomadBlock()
				n.IgnoreEnvVars = ignore
				if s := resolved(t, n, env); s.Namespace != "" || s.Region != "" || s.Token != "tok" {
					t.Errorf("ignore_env_vars %s: NOMAD_NAMESPACE and NOMAD_REGION are ignored by default, others read: %+v", name, s)
				}
			}
			n := nullNomadBlock()
			n.IgnoreEnvVars = types.MapValueMust(types.BoolType, map[string]attr.Value{nomadconn.EnvRegion: types.BoolValue(false)})
			if s := resolved(t, n, env); s.Region != "task-region" || s.Namespace != "task-ns" {
				t.Errorf("an explicit ignore_env_vars replaces the default: %+v", s)
			}
		})
	}
	t.Run("outside an allocation", func(t *testing.T) {
		env := map[string]string{nomadconn.EnvNamespace: "ns", nomadconn.EnvRegion: "r"}
		n := nullNomadBlock()
		n.IgnoreEnvVars = types.MapValueMust(types.BoolType, map[string]attr.Value{})
		if s := resolved(t, n, env); s.Namespace != "ns" || s.Region != "r" {
			t.Errorf("ignore_env_vars = {} ignores nothing: %+v", s)
		}
	})
	t.Run("ignore every variable", func(t *testing.T) {
		all := map[string]attr.Value{}
		env := map[string]string{}
		for _, v := range nomadconn.EnvVars {
			all[v] = types.BoolValue(true)
			env[v] = "x"
		}
		n := nullNomadBlock()
		n.IgnoreEnvVars = types.MapValueMust(types.BoolType, all)
		c := newNomadConnection(context.Background(), n, nomadconn.MapEnv(env))
		if !c.settings.IgnoreEnv {
			t.Error("every variable ignored is nomadconn's IgnoreEnv")
		}
	})
	for _, a := range nomadBlockAttributes(t) {
		if !covered[a] {
			t.Errorf("nomad.%s has no case here", a)
		}
	}
	t.Run("unknown values are reported", func(t *testing.T) {
		n := nullNomadBlock()
		n.Address, n.SkipVerify = types.StringUnknown(), types.BoolUnknown()
		_, _, err := newNomadConnection(context.Background(), n, nil).get(nomadusage.Options{})
		if err == nil || !strings.Contains(err.Error(), "address, skip_verify") || !strings.Contains(err.Error(), "not known until apply") {
			t.Fatalf("get: %v", err)
		}
	})
	t.Run("bad NOMAD_SKIP_VERIFY", func(t *testing.T) {
		_, _, err := newNomadConnection(context.Background(), nil, nomadconn.MapEnv(map[string]string{nomadconn.EnvSkipVerify: "maybe"})).get(nomadusage.Options{})
		if err == nil || !strings.Contains(err.Error(), nomadconn.EnvSkipVerify) {
			t.Fatalf("get: %v", err)
		}
	})
}

func nomadBlockAttributes(t *testing.T) []string {
	var resp provider.SchemaResponse
	New("test")().Schema(context.Background(), provider.SchemaRequest{}, &resp)
	nb, ok := resp.Schema.Blocks["nomad"].(schema.SingleNestedBlock)
	if !ok {
		t.Fatalf("the nomad block is a %T", resp.Schema.Blocks["nomad"])
	}
	var out []string
	for name := range nb.Attributes {
		out = append(out, name)
	}
	return out
}

// seenRequest is what a test server saw of a request.
type seenRequest struct {
	token, user, password, proxyAuth, region, namespace string
}

// TestNomadConnectionOnTheWire: the token, basic auth, headers, region and
// namespace, from the block and from the variables, reach the server; one
// connection is made per provider instance whatever the number of reads.
func TestNomadConnectionOnTheWire(t *testing.T) {
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		mu.Lock()
		seen = append(seen, seenRequest{r.Header.Get("X-Nomad-Token"), u, p, r.Header.Get("X-Proxy-Auth"), r.URL.Query().Get("region"), r.URL.Query().Get("namespace")})
		mu.Unlock()
		http.Error(w, "job not found", http.StatusNotFound)
	}))
	defer srv.Close()
	want := seenRequest{"tok-1234", "alice", "pw-5678", "proxy-9012", "eu", "web-ns"}
	block := nullNomadBlock()
	block.Address, block.Token, block.HTTPAuth = types.StringValue(srv.URL), types.StringValue(want.token), types.StringValue(want.user+":"+want.password)
	block.Region, block.Namespace = types.StringValue(want.region), types.StringValue(want.namespace)
	block.Headers = types.MapValueMust(types.StringType, map[string]attr.Value{"X-Proxy-Auth": types.StringValue(want.proxyAuth)})
	env := map[string]string{
		nomadconn.EnvAddress: srv.URL, nomadconn.EnvToken: want.token, nomadconn.EnvHTTPAuth: want.user + ":" + want.password,
		nomadconn.EnvRegion: want.region, nomadconn.EnvNamespace: want.namespace,
	}
	fromEnv := want
	fromEnv.proxyAuth = "" // headers have no variable
	for _, tc := range []struct {
		name string
		c    *nomadConnection
		want seenRequest
	}{
		{"block", newNomadConnection(context.Background(), block, nil), want},
		{"variables", newNomadConnection(context.Background(), nil, nomadconn.MapEnv(env)), fromEnv},
	} {
		c, want := tc.c, tc.want
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			var wg sync.WaitGroup
			conns := make([]*nomadconn.Conn, 8)
			for i := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					conn, _, err := c.get(nomadusage.Options{})
					if err != nil {
						t.Error(err)
						return
					}
					conns[i] = conn
					_, _, _ = conn.Client().Jobs().Info("web", nil)
				}()
			}
			wg.Wait()
			for _, conn := range conns[1:] {
				if conn != conns[0] {
					t.Fatal("reads made several connections")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != len(conns) {
				t.Fatalf("%d requests, want %d", len(seen), len(conns))
			}
			for _, s := range seen {
				if s != want {
					t.Errorf("server saw %+v, want %+v", s, want)
				}
			}
		})
	}
}

// TestNomadCAs: each way to name the CA that signed the agent's
// certificate (ca_file, ca_pem, ca_path, and NOMAD_CACERT, NOMAD_CAPATH)
// makes a verified TLS connection; none makes it fail.
func TestNomadCAs(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "1") // as Nomad answers a read of a job it does not have
		http.Error(w, "job not found", http.StatusNotFound)
	}))
	defer srv.Close()
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	dir := t.TempDir()
	caFile := writeFile(t, dir, "ca.pem", []byte(caPEM))
	caDir := filepath.Join(dir, "cas")
	if err := os.Mkdir(caDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, caDir, "ca.pem", []byte(caPEM))
	block := func(set func(n *nomadModel)) *nomadModel {
		n := nullNomadBlock()
		n.Address = types.StringValue(srv.URL)
		set(n)
		return n
	}
	for _, c := range []struct {
		name string
		n    *nomadModel
		env  map[string]string
		ok   bool
	}{
		{"ca_file", block(func(n *nomadModel) { n.CAFile = types.StringValue(caFile) }), nil, true},
		{"ca_pem", block(func(n *nomadModel) { n.CAPEM = types.StringValue(caPEM) }), nil, true},
		{"ca_path", block(func(n *nomadModel) { n.CAPath = types.StringValue(caDir) }), nil, true},
		{"NOMAD_CACERT", block(func(*nomadModel) {}), map[string]string{nomadconn.EnvCACert: caFile}, true},
		{"NOMAD_CAPATH", block(func(*nomadModel) {}), map[string]string{nomadconn.EnvCAPath: caDir}, true},
		{"skip_verify", block(func(n *nomadModel) { n.SkipVerify = types.BoolValue(true) }), nil, true},
		// As in terraform-provider-nomad, skip_verify may come with a CA:
		// the connection is then not verified (a CA of another server
		// does not fail it).
		{"skip_verify with another server's CA", block(func(n *nomadModel) {
			n.SkipVerify, n.CAPEM = types.BoolValue(true), types.StringValue(otherCAPEM(t))
		}), nil, true},
		{"another server's CA", block(func(n *nomadModel) { n.CAPEM = types.StringValue(otherCAPEM(t)) }), nil, false},
		// A CA configured takes none from the environment: NOMAD_CACERT
		// (a file, which the TLS library takes first) naming this
		// server's CA beside a ca_path of another's does not make the
		// connection verified.
		{"ca_path of another server's CA, NOMAD_CACERT of this one's", block(func(n *nomadModel) {
			n.CAPath = types.StringValue(writeDir(t, "other", otherCAPEM(t)))
		}), map[string]string{nomadconn.EnvCACert: caFile}, false},
		{"no CA", block(func(*nomadModel) {}), nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, _, err := newNomadConnection(context.Background(), c.n, nomadconn.MapEnv(c.env)).get(nomadusage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = conn.Client().Jobs().Info("web", nil)
			verified := nomadconn.IsStatus(err, http.StatusNotFound)
			if verified != c.ok {
				t.Errorf("TLS verified %v, want %v: %v", verified, c.ok, err)
			}
		})
	}
}

// writeDir writes a directory holding one file, ca.pem, of the given text.
func writeDir(t *testing.T, name, text string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "ca.pem", []byte(text))
	return dir
}

// TestConfigureLogsNoSecret: the provider's debug log of its configuration
// names which secrets are set, never their values, nor a password in the
// address.
func TestConfigureLogsNoSecret(t *testing.T) {
	var logs strings.Builder
	ctx := tflogtest.RootLogger(context.Background(), &logs)
	secrets := []string{"addr-pass-31415", "tok-27182", "auth-pass-16180", "header-14142"}
	n := nullNomadBlock()
	n.Address = types.StringValue("https://ops:" + secrets[0] + "@nomad.example:4646")
	n.Token, n.HTTPAuth = types.StringValue(secrets[1]), types.StringValue("ops:"+secrets[2])
	n.Headers = types.MapValueMust(types.StringType, map[string]attr.Value{"X-Proxy-Auth": types.StringValue(secrets[3])})
	p := newWithEnv("test", noEnv)()
	var sresp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &sresp)
	st := tfsdk.State{Schema: sresp.Schema}
	if diags := st.Set(ctx, &providerModel{DefaultFirstModel: types.StringNull(), DefaultSecondModel: types.StringNull(), Nomad: n}); diags.HasError() {
		t.Fatal(diags)
	}
	var resp provider.ConfigureResponse
	p.Configure(ctx, provider.ConfigureRequest{Config: tfsdk.Config{Schema: sresp.Schema, Raw: st.Raw}}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	out := logs.String()
	if !strings.Contains(out, "nomad.example:4646") || !strings.Contains(out, `"nomad_token_set":true`) || !strings.Contains(out, "X-Proxy-Auth") {
		t.Fatalf("the configuration log does not describe the settings: %s", out)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("the log shows the secret %q: %s", s, out)
		}
	}
}

func TestErrorPaths(t *testing.T) {
	cases := []struct {
		err  error
		want string
		ok   bool
	}{
		{&engine.ObservationError{Host: "first", Field: "usage_samples[12].time", Reason: "r"}, "first.usage_samples[12].time", true},
		{&engine.ObservationError{Host: "second", Field: "queued_replicas[0].memory_mb", Reason: "r"}, "second.queued_replicas[0].memory_mb", true},
		{&engine.ObservationError{Host: "second", Field: "", Reason: "r"}, "second", true},
		{&engine.ObservationError{Host: "first", Field: "min_samples", Reason: "r"}, "min_samples", true},
		{fmt.Errorf("wrapped: %w", &engine.QuotaError{Host: "second", Field: "per_branch", Reason: "r"}), "second_quota.per_branch", true},
		{&engine.ModelSourceError{Host: "first", Source: "x.json", Err: errors.New("layers[0].weights[3][7]: NaN")}, "first_model", true},
		{&engine.ModelSourceError{Host: "second", Err: errors.New("no countable outputs")}, "second_model", true},
		{&engine.ObservationError{Host: "third", Field: "host", Reason: "r"}, "", false},
		// Text that looks like a field is not read: only the typed error counts.
		{errors.New("first_model: loading model x: bad"), "", false},
	}
	for _, c := range cases {
		p, ok := countsRoots.pathOf(c.err)
		got := ""
		if ok {
			got = p.String()
		}
		if ok != c.ok || got != c.want {
			t.Errorf("%v: got %q %v, want %q %v", c.err, got, ok, c.want, c.ok)
		}
	}
	// A host's margin refused: on its own attribute when given, else on
	// the shared margin, in the data source and in the function.
	for _, c := range []struct {
		roots      inputRoots
		host, want string
	}{
		{countsRoots, "first", "margin"},
		{countsRoots.withOwnMargins(true, false), "first", "first_margin"},
		{countsRoots.withOwnMargins(true, false), "second", "margin"},
		{countsRoots.withOwnMargins(false, true), "second", "second_margin"},
		{countsRoots.withOwnMargins(true, true), "first", "first_margin"},
		{fnRoots, "second", "quotas.margin"},
		{fnRoots.withOwnMargins(false, true), "second", "quotas.second_margin"},
		{fnRoots.withOwnMargins(true, false), "first", "quotas.first_margin"},
		{fnRoots.withOwnMargins(true, false), "second", "quotas.margin"},
	} {
		err := &engine.ObservationError{Host: c.host, Field: "margin", Reason: "r"}
		if p, ok := c.roots.pathOf(err); !ok || p.String() != c.want {
			t.Errorf("%s host's margin with own margins %v: got %q %v, want %q", c.host, c.roots.ownMargin, p, ok, c.want)
		}
	}
	if countsRoots.ownMargin != nil || fnRoots.ownMargin != nil {
		t.Error("withOwnMargins changed the roots it was called on")
	}
}

// A diagnostic goes on the Dynamic attribute a path is inside: OpenTofu
// finds no configuration range within a Dynamic value and showed the
// block instead (first_quota = { min = 5, max = 2 } was reported on the
// data block's first line).
func TestSubjectOf(t *testing.T) {
	for in, want := range map[string]path.Path{
		"first_quota.max":                   path.Root("first_quota"),
		"second_quota":                      path.Root("second_quota"),
		"first.usage_samples[3].time":       path.Root("first"),
		"first.usage_samples":               path.Root("first"),
		"second.queued_replicas[0].cpu_mhz": path.Root("second"),
		"first.cpu_capacity_mhz":            path.Root("first"),
		"min_samples":                       path.Root("min_samples"),
	} {
		var p path.Path
		switch in {
		case "first_quota.max":
			p = path.Root("first_quota").AtName("max")
		case "second_quota", "min_samples":
			p = path.Root(in)
		case "first.usage_samples[3].time":
			p = path.Root("first").AtName("usage_samples").AtListIndex(3).AtName("time")
		case "first.usage_samples":
			p = path.Root("first").AtName("usage_samples")
		case "second.queued_replicas[0].cpu_mhz":
			p = path.Root("second").AtName("queued_replicas").AtListIndex(0).AtName("cpu_mhz")
		case "first.cpu_capacity_mhz":
			p = path.Root("first").AtName("cpu_capacity_mhz")
		}
		if got := countsRoots.subjectOf(p); !got.Equal(want) {
			t.Errorf("%s: subject %s, want %s", in, got, want)
		}
	}
}

func TestFieldPath(t *testing.T) {
	root := path.Root("first")
	for field, want := range map[string]string{
		"":                            "first",
		"host":                        "first.host",
		"usage_samples[0].cpu_mhz":    "first.usage_samples[0].cpu_mhz",
		"queued_replicas[11].cpu_mhz": "first.queued_replicas[11].cpu_mhz",
		"usage_samples[x].time":       "first.usage_samples",
		"usage_samples[2]junk.time":   "first.usage_samples[2]",
		// Never deeper than the schema: the path stops at the last
		// attribute the observation has.
		"usage_samples[2].time.deeper": "first.usage_samples[2].time",
		"usage_samples[2][3]":          "first.usage_samples[2]",
		"usage_samples.time":           "first.usage_samples",
		"host[0]":                      "first.host",
		"no_such_field.x":              "first",
		"layers[1].weights[3][7]":      "first",
	} {
		if got := fieldPath(root, observationFields, field).String(); got != want {
			t.Errorf("%q: got %q, want %q", field, got, want)
		}
	}
	if got := fieldPath(path.Root("second_quota"), quotaFields, "per_branch.x").String(); got != "second_quota.per_branch" {
		t.Errorf("quota: got %q", got)
	}
}

// otherCAPEM is a self-signed CA certificate that signed no test server.
func otherCAPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestNomadClientPair: the client certificate and its key are judged as
// they resolve, block then environment (ignore_env_vars included): both
// or neither, both files or both PEM text; the error lands on the
// attribute at fault (none when only the environment gave it) and names
// the other half.
func TestNomadClientPair(t *testing.T) {
	const pemText = "-----BEGIN X-----"
	set := func(f func(n *nomadModel)) *nomadModel {
		n := nullNomadBlock()
		f(n)
		return n
	}
	certFile := func(n *nomadModel) { n.CertFile = types.StringValue("/c.pem") }
	certPEM := func(n *nomadModel) { n.CertPEM = types.StringValue(pemText) }
	keyFile := func(n *nomadModel) { n.KeyFile = types.StringValue("/k.pem") }
	keyPEM := func(n *nomadModel) { n.KeyPEM = types.StringValue(pemText) }
	both := func(fs ...func(n *nomadModel)) func(n *nomadModel) {
		return func(n *nomadModel) {
			for _, f := range fs {
				f(n)
			}
		}
	}
	envCert := map[string]string{nomadconn.EnvClientCert: "/env-c.pem"}
	envKey := map[string]string{nomadconn.EnvClientKey: "/env-k.pem"}
	for _, c := range []struct {
		name string
		n    *nomadModel
		env  map[string]string
		path string // "" with want "": no error
		want string
	}{
		{"files", set(both(certFile, keyFile)), nil, "", ""},
		{"PEM", set(both(certPEM, keyPEM)), nil, "", ""},
		{"neither", set(func(*nomadModel) {}), nil, "", ""},
		{"cert file and NOMAD_CLIENT_KEY", set(certFile), envKey, "", ""},
		{"NOMAD_CLIENT_CERT and key file", set(keyFile), envCert, "", ""},
		{"both variables", nullNomadBlock(), map[string]string{nomadconn.EnvClientCert: "/c", nomadconn.EnvClientKey: "/k"}, "", ""},
		{"cert PEM without key", set(certPEM), nil, "nomad.cert_pem", "nomad.cert_pem gives a client certificate, and no key is set"},
		{"cert file without key", set(certFile), nil, "nomad.cert_file", "nomad.cert_file gives a client certificate, and no key is set"},
		{"key PEM without cert", set(keyPEM), nil, "nomad.key_pem", "nomad.key_pem gives a client key, and no certificate is set"},
		{"NOMAD_CLIENT_KEY ignored", set(certFile), envKey, "nomad.cert_file", "no key is set"},
		{"cert file, key PEM", set(both(certFile, keyPEM)), nil, "nomad.key_pem",
			"nomad.key_pem is PEM text, and nomad.cert_file is a file: the Nomad API client takes a client certificate and its key both as files or both as PEM text"},
		{"cert PEM, key file", set(both(certPEM, keyFile)), nil, "nomad.key_file", "nomad.key_file is a file, and nomad.cert_pem is PEM text"},
		{"cert PEM, NOMAD_CLIENT_KEY", set(certPEM), envKey, "nomad.cert_pem", "nomad.cert_pem is PEM text, and NOMAD_CLIENT_KEY is a file"},
		{"NOMAD_CLIENT_CERT, key PEM", set(keyPEM), envCert, "nomad.key_pem", "nomad.key_pem is PEM text, and NOMAD_CLIENT_CERT is a file"},
		// The environment alone is no error of the configuration (see
		// the subtest below).
		{"NOMAD_CLIENT_CERT alone", nullNomadBlock(), envCert, "", ""},
		{"unknown key: not judged yet", set(both(certFile, func(n *nomadModel) { n.KeyPEM = types.StringUnknown() })), nil, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "NOMAD_CLIENT_KEY ignored" {
				c.n.IgnoreEnvVars = types.MapValueMust(types.BoolType, map[string]attr.Value{nomadconn.EnvClientKey: types.BoolValue(true)})
			}
			var resp provider.ValidateConfigResponse
			p := newWithEnv("test", nomadconn.MapEnv(c.env))()
			p.(provider.ProviderWithValidateConfig).ValidateConfig(context.Background(), provider.ValidateConfigRequest{Config: providerConfig(t, c.n)}, &resp)
			if c.want == "" {
				if resp.Diagnostics.HasError() {
					t.Fatalf("refused: %v", resp.Diagnostics)
				}
				return
			}
			if resp.Diagnostics.ErrorsCount() != 1 {
				t.Fatalf("want one error, got %v", resp.Diagnostics)
			}
			d := resp.Diagnostics.Errors()[0]
			got := ""
			if wp, ok := d.(diag.DiagnosticWithPath); ok {
				got = wp.Path().String()
			}
			if got != c.path || !strings.Contains(d.Detail(), c.want) {
				t.Errorf("error on %q: %q; want on %q, saying %q", got, d.Detail(), c.path, c.want)
			}
		})
	}
}

// TestNomadClientPairFromTheEnvironment: a pair wrong in the environment
// alone is reported when activation_host_usage uses the connection, naming
// the variable.
func TestNomadClientPairFromTheEnvironment(t *testing.T) {
	c := newNomadConnection(context.Background(), nil, nomadconn.MapEnv(map[string]string{nomadconn.EnvClientCert: "/env-c.pem"}))
	_, _, err := c.get(nomadusage.Options{})
	if err == nil || !strings.Contains(err.Error(), "NOMAD_CLIENT_CERT gives a client certificate, and no key is set") {
		t.Fatalf("get: %v", err)
	}
}

// providerConfig is the provider configuration with the nomad block n.
func providerConfig(t *testing.T, n *nomadModel) tfsdk.Config {
	t.Helper()
	return providerConfigOf(t, &providerModel{DefaultFirstModel: types.StringNull(), DefaultSecondModel: types.StringNull(), Nomad: n})
}

// providerConfigOf is the provider configuration m.
func providerConfigOf(t *testing.T, m *providerModel) tfsdk.Config {
	t.Helper()
	ctx := context.Background()
	var sresp provider.SchemaResponse
	New("test")().Schema(ctx, provider.SchemaRequest{}, &sresp)
	st := tfsdk.State{Schema: sresp.Schema}
	if diags := st.Set(ctx, m); diags.HasError() {
		t.Fatal(diags)
	}
	return tfsdk.Config{Schema: sresp.Schema, Raw: st.Raw}
}

// TestNomadConnectionColdStart: the first uses of a connection, from many
// reads at once as OpenTofu makes them, all get the same answer (here the
// error of a bad NOMAD_SKIP_VERIFY), with no data race (go test -race).
func TestNomadConnectionColdStart(t *testing.T) {
	c := newNomadConnection(context.Background(), nil, nomadconn.MapEnv(map[string]string{nomadconn.EnvSkipVerify: "maybe"}))
	var wg sync.WaitGroup
	errs := make([]error, 16)
	start := make(chan struct{})
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, _, errs[i] = c.get(nomadusage.Options{})
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err == nil || !strings.Contains(err.Error(), nomadconn.EnvSkipVerify) {
			t.Errorf("get: %v", err)
		}
	}
}

// TestConfigureUnknownDefaultModel: a default model known only after apply
// is no error for the provider (nor for data sources that name their own
// model): only the data sources that use it report it.
func TestConfigureUnknownDefaultModel(t *testing.T) {
	ctx := context.Background()
	p := newWithEnv("test", noEnv)()
	cfg := providerConfigOf(t, &providerModel{DefaultFirstModel: types.StringUnknown(), DefaultSecondModel: types.StringUnknown()})
	var resp provider.ConfigureResponse
	p.Configure(ctx, provider.ConfigureRequest{Config: cfg}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatalf("configure: %v", resp.Diagnostics)
	}
	pd, ok := resp.DataSourceData.(*providerData)
	if !ok {
		t.Fatalf("data source data %T", resp.DataSourceData)
	}
	r := &engine.Request{First: testFirst(t), Second: testSecond(t)}
	own := newCountsModel(r)
	own.FirstModel, own.SecondModel = types.StringValue(engine.DefaultFirstModel), types.StringValue(engine.DefaultSecondModel)
	if _, diags := readInProcess(t, pd, &own); diags.HasError() {
		t.Errorf("a data source naming its own models: %v", diags)
	}
	m := newCountsModel(r)
	m.SecondModel = types.StringValue(engine.DefaultSecondModel)
	_, diags := readInProcess(t, pd, &m)
	assertDiagOn(t, diags, path.Root(attrFirstModel), path.Root(attrFirstModel), "is unset, so the provider's default_first_model is used, which is not known until apply")
	if diags.ErrorsCount() != 1 {
		t.Errorf("only the host using the unknown default is at fault: %v", diags)
	}
}

// TestSentence: an error's text becomes a diagnostic's detail with a
// capital and a period, and is otherwise kept.
func TestSentence(t *testing.T) {
	for in, want := range map[string]string{
		"": "",
		"the provider's nomad block has values not known until apply (address)":    "The provider's nomad block has values not known until apply (address).",
		"nomad tls: Error loading CA File: open /x.pem: no such file or directory": "Nomad tls: Error loading CA File: open /x.pem: no such file or directory.",
		"Attribute nomad.cert_file: gives a client certificate.":                   "Attribute nomad.cert_file: gives a client certificate.",
		"élan": "Élan.",
	} {
		if got := sentence(in); got != want {
			t.Errorf("sentence(%q) = %q, want %q", in, got, want)
		}
	}
}
