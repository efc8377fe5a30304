package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework-validators/boolvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// Attribute names of the provider's nomad block. Each falls back to the
// NOMAD_* variable the Nomad CLI reads (see nomadconn.Settings), as in
// terraform-provider-nomad.
const (
	nomadAddress       = "address"
	nomadToken         = "token"
	nomadHTTPAuth      = "http_auth"
	nomadHeaders       = "headers"
	nomadRegion        = "region"
	nomadNamespace     = "namespace"
	nomadCAFile        = "ca_file"
	nomadCAPath        = "ca_path"
	nomadCAPEM         = "ca_pem"
	nomadCertFile      = "cert_file"
	nomadCertPEM       = "cert_pem"
	nomadKeyFile       = "key_file"
	nomadKeyPEM        = "key_pem"
	nomadTLSServerName = "tls_server_name"
	nomadSkipVerify    = "skip_verify"
	nomadIgnoreEnvVars = "ignore_env_vars"

	// envAllocID is set inside a Nomad allocation: the task's own
	// NOMAD_NAMESPACE and NOMAD_REGION are then not the user's intent.
	envAllocID = "NOMAD_ALLOC_ID"
)

// nomadModel is the provider's nomad block.
type nomadModel struct {
	Address       types.String `tfsdk:"address"`
	Token         types.String `tfsdk:"token"`
	HTTPAuth      types.String `tfsdk:"http_auth"`
	Headers       types.Map    `tfsdk:"headers"`
	Region        types.String `tfsdk:"region"`
	Namespace     types.String `tfsdk:"namespace"`
	CAFile        types.String `tfsdk:"ca_file"`
	CAPath        types.String `tfsdk:"ca_path"`
	CAPEM         types.String `tfsdk:"ca_pem"`
	CertFile      types.String `tfsdk:"cert_file"`
	CertPEM       types.String `tfsdk:"cert_pem"`
	KeyFile       types.String `tfsdk:"key_file"`
	KeyPEM        types.String `tfsdk:"key_pem"`
	TLSServerName types.String `tfsdk:"tls_server_name"`
	SkipVerify    types.Bool   `tfsdk:"skip_verify"`
	IgnoreEnvVars types.Map    `tfsdk:"ignore_env_vars"`
}

func nomadBlockSchema() schema.SingleNestedBlock {
	blockPath := func(name string) path.Expression { return path.MatchRelative().AtParent().AtName(name) }
	pemValidators := func(other string) []validator.String {
		return []validator.String{stringvalidator.LengthAtLeast(1), pemValidator(), stringvalidator.ConflictsWith(blockPath(other))}
	}
	fileValidators := func(other string) []validator.String {
		return []validator.String{stringvalidator.LengthAtLeast(1), stringvalidator.ConflictsWith(blockPath(other))}
	}
	env := func(name string) string { return " Falls back to `" + name + "`" }
	return schema.SingleNestedBlock{
		MarkdownDescription: "How to reach the Nomad HTTP API, for `activation_host_usage`: the attributes of terraform-provider-nomad. " +
			"Every attribute falls back to the Nomad CLI's environment variable when unset (unless `ignore_env_vars` says otherwise). " +
			"One connection is made per provider instance, on first use, and shared by every `activation_host_usage`. " +
			"Secrets (the token, the basic-auth password, header values, a password in the address) are never logged and are " +
			"removed from every error.",
		Attributes: map[string]schema.Attribute{
			nomadAddress: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Address of a Nomad agent, for example `https://nomad.example.com:4646`." + env(nomadconn.EnvAddress) +
					", then `" + nomadconn.DefaultAddress + "`. A password in it (`https://user:pass@...`) is redacted wherever the address is shown.",
				Validators: []validator.String{urlValidator()}},
			nomadToken: schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "ACL token (secret ID) sent with every request." + env(nomadconn.EnvToken) + ". Never logged.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 1024)}},
			nomadHTTPAuth: schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "HTTP basic authentication, `user` or `user:password`, for a Nomad behind an authenticating proxy." +
					env(nomadconn.EnvHTTPAuth) + ". Never logged.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
			nomadHeaders: schema.MapAttribute{Optional: true, Sensitive: true, ElementType: types.StringType,
				MarkdownDescription: "Headers sent with every request, name to value (a proxy's own credentials, for example). " +
					"Their values are treated as secrets.",
				Validators: []validator.Map{mapvalidator.SizeAtLeast(1)}},
			nomadRegion: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Nomad region to query." + env(nomadconn.EnvRegion) + ", then the agent's own region.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 128)}},
			nomadNamespace: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Nomad namespace for job and allocation reads." + env(nomadconn.EnvNamespace) + ", then `default`.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 128)}},
			nomadCAFile: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Path of a PEM CA certificate to verify the agent's TLS certificate." + env(nomadconn.EnvCACert) + ". Conflicts with `ca_pem`.",
				Validators:          fileValidators(nomadCAPEM)},
			nomadCAPath: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Path of a directory of PEM CA certificates to verify the agent's TLS certificate." + env(nomadconn.EnvCAPath) + ".",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
			nomadCAPEM: schema.StringAttribute{Optional: true,
				MarkdownDescription: "PEM CA certificate to verify the agent's TLS certificate. Conflicts with `ca_file`.",
				Validators:          pemValidators(nomadCAFile)},
			nomadCertFile: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Path of a PEM client certificate for mutual TLS." + env(nomadconn.EnvClientCert) + ". Needs a key; conflicts with `cert_pem`.",
				Validators:          fileValidators(nomadCertPEM)},
			nomadCertPEM: schema.StringAttribute{Optional: true,
				MarkdownDescription: "PEM client certificate for mutual TLS. Needs a key; conflicts with `cert_file`.",
				Validators:          pemValidators(nomadCertFile)},
			nomadKeyFile: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Path of the PEM private key of the client certificate." + env(nomadconn.EnvClientKey) + ". Conflicts with `key_pem`.",
				Validators:          fileValidators(nomadKeyPEM)},
			nomadKeyPEM: schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "PEM private key of the client certificate. Conflicts with `key_file`.",
				Validators:          pemValidators(nomadKeyFile)},
			nomadTLSServerName: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Server name (SNI) to expect in the agent's TLS certificate." + env(nomadconn.EnvTLSServerName) + ".",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 253)}},
			nomadSkipVerify: schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Skip verification of the agent's TLS certificate (testing only)." + env(nomadconn.EnvSkipVerify) +
					". Conflicts with `ca_file` and `ca_pem`.",
				Validators: []validator.Bool{boolvalidator.ConflictsWith(blockPath(nomadCAFile), blockPath(nomadCAPEM))}},
			nomadIgnoreEnvVars: schema.MapAttribute{Optional: true, ElementType: types.BoolType,
				MarkdownDescription: "Environment variables to ignore, name to `true`, for example `{ NOMAD_NAMESPACE = true }`; any of `" +
					strings.Join(nomadconn.EnvVars, "`, `") + "`. Unset inside a Nomad allocation (`" + envAllocID + "` is set): " +
					"`{ NOMAD_NAMESPACE = true, NOMAD_REGION = true }`, as terraform-provider-nomad does, so that the task's own " +
					"namespace and region are not taken for the user's.",
				Validators: []validator.Map{mapvalidator.KeysAre(stringvalidator.OneOf(nomadconn.EnvVars...))}},
		},
	}
}

// validateNomadTLSPairs checks that a client certificate and its key come
// together (Terraform-side: the pair is incomplete whatever the values).
func validateNomadTLSPairs(ctx context.Context, cfg tfsdk.Config, resp *provider.ValidateConfigResponse) {
	var n *nomadModel
	resp.Diagnostics.Append(cfg.GetAttribute(ctx, path.Root("nomad"), &n)...)
	if resp.Diagnostics.HasError() || n == nil {
		return
	}
	given := func(v types.String) bool { return !v.IsNull() } // unknown counts as given
	cert := given(n.CertFile) || given(n.CertPEM)
	key := given(n.KeyFile) || given(n.KeyPEM)
	switch {
	case cert && !key:
		resp.Diagnostics.AddAttributeError(path.Root("nomad").AtName(nomadCertFile), "Client certificate without a key",
			"A client certificate (cert_file or cert_pem) needs its private key: set key_file or key_pem as well.")
	case key && !cert:
		resp.Diagnostics.AddAttributeError(path.Root("nomad").AtName(nomadKeyFile), "Client key without a certificate",
			"A client key (key_file or key_pem) needs its certificate: set cert_file or cert_pem as well.")
	}
}

// nomadConnection is a provider instance's way to Nomad: the nomad block's
// settings, and, made on first use and then shared by every
// activation_host_usage read (OpenTofu reads data sources in parallel), one
// nomadconn.Conn and one nomadusage.Reader.
type nomadConnection struct {
	settings nomadconn.Settings
	// getenv is the environment the settings fall back to, without the
	// variables ignore_env_vars names.
	getenv nomadconn.Getenv
	// unknown lists the block's attributes not known when the provider was
	// configured (values computed during apply).
	unknown []string
	// err is a problem found in the block itself.
	err error

	once   sync.Once
	conn   *nomadconn.Conn
	reader *nomadusage.Reader
}

// newNomadConnection reads the nomad block (nil when absent); getenv is the
// process environment the settings fall back to.
func newNomadConnection(ctx context.Context, n *nomadModel, getenv nomadconn.Getenv) *nomadConnection {
	c := &nomadConnection{}
	if n == nil {
		n = &nomadModel{}
	}
	str := func(name string, v types.String) string {
		if v.IsUnknown() {
			c.unknown = append(c.unknown, name)
		}
		return v.ValueString()
	}
	s := &c.settings
	s.Address = str(nomadAddress, n.Address)
	s.Token = str(nomadToken, n.Token)
	s.HTTPAuth = str(nomadHTTPAuth, n.HTTPAuth)
	s.Region = str(nomadRegion, n.Region)
	s.Namespace = str(nomadNamespace, n.Namespace)
	s.CACert = str(nomadCAFile, n.CAFile)
	s.CAPath = str(nomadCAPath, n.CAPath)
	s.CACertPEM = str(nomadCAPEM, n.CAPEM)
	s.ClientCert = str(nomadCertFile, n.CertFile)
	s.ClientCertPEM = str(nomadCertPEM, n.CertPEM)
	s.ClientKey = str(nomadKeyFile, n.KeyFile)
	s.ClientKeyPEM = str(nomadKeyPEM, n.KeyPEM)
	s.TLSServerName = str(nomadTLSServerName, n.TLSServerName)
	switch {
	case n.SkipVerify.IsUnknown():
		c.unknown = append(c.unknown, nomadSkipVerify)
	case !n.SkipVerify.IsNull():
		b := n.SkipVerify.ValueBool()
		s.SkipVerify = &b
	}
	var diags diag.Diagnostics
	switch {
	case n.Headers.IsUnknown():
		c.unknown = append(c.unknown, nomadHeaders)
	case !n.Headers.IsNull():
		var h map[string]types.String
		diags.Append(n.Headers.ElementsAs(ctx, &h, false)...)
		s.Headers = make(map[string]string, len(h))
		for k, v := range h {
			if v.IsUnknown() {
				c.unknown = append(c.unknown, nomadHeaders+"["+k+"]")
			}
			s.Headers[k] = v.ValueString()
		}
	}
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	ignored := map[string]bool{}
	switch {
	case n.IgnoreEnvVars.IsUnknown():
		c.unknown = append(c.unknown, nomadIgnoreEnvVars)
	case !n.IgnoreEnvVars.IsNull():
		var m map[string]types.Bool
		diags.Append(n.IgnoreEnvVars.ElementsAs(ctx, &m, false)...)
		for k, v := range m {
			if v.IsUnknown() {
				c.unknown = append(c.unknown, nomadIgnoreEnvVars+"["+k+"]")
			}
			ignored[k] = v.ValueBool()
		}
	default:
		if id, ok := getenv(envAllocID); ok && id != "" {
			ignored[nomadconn.EnvNamespace], ignored[nomadconn.EnvRegion] = true, true
		}
	}
	if diags.HasError() {
		c.err = fmt.Errorf("the provider's nomad block: %s", diags.Errors()[0].Detail())
	}
	all := true
	for _, name := range nomadconn.EnvVars {
		all = all && ignored[name]
	}
	s.IgnoreEnv = all
	c.getenv = func(name string) (string, bool) {
		if ignored[name] {
			return "", false
		}
		return getenv(name)
	}
	return c
}

// get returns the shared connection and reader, making them on first use.
// Its errors never hold a secret.
func (c *nomadConnection) get() (*nomadconn.Conn, *nomadusage.Reader, error) {
	if len(c.unknown) > 0 {
		return nil, nil, fmt.Errorf("the provider's nomad block has values not known until apply (%s); activation_host_usage needs them known when it is read",
			strings.Join(c.unknown, ", "))
	}
	if c.err != nil {
		return nil, nil, c.err
	}
	c.once.Do(func() {
		conn, err := nomadconn.New(c.settings, c.getenv)
		if err != nil {
			c.err = err
			return
		}
		c.conn, c.reader = conn, &nomadusage.Reader{Client: conn.Client()}
	})
	return c.conn, c.reader, c.err
}

// logFields describe the settings for a debug log: where, and which
// secrets are set, never their values.
func (c *nomadConnection) logFields() map[string]any {
	s, err := c.settings.Resolve(c.getenv)
	f := map[string]any{
		"nomad_address":        nomadconn.RedactURL(s.Address),
		"nomad_namespace":      s.Namespace,
		"nomad_region":         s.Region,
		"nomad_token_set":      s.Token != "",
		"nomad_http_auth_set":  s.HTTPAuth != "",
		"nomad_unknown":        c.unknown,
		"nomad_settings_valid": err == nil,
	}
	names := make([]string, 0, len(s.Headers))
	for k := range s.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	f["nomad_header_names"] = names
	return f
}
