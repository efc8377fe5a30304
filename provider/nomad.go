package provider

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/terraform-plugin-framework-validators/boolvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Attribute names of the provider's nomad block, and the environment
// variable each falls back to.
const (
	nomadAddress       = "address"
	nomadToken         = "token"
	nomadRegion        = "region"
	nomadNamespace     = "namespace"
	nomadCAFile        = "ca_file"
	nomadCAPEM         = "ca_pem"
	nomadCertFile      = "cert_file"
	nomadCertPEM       = "cert_pem"
	nomadKeyFile       = "key_file"
	nomadKeyPEM        = "key_pem"
	nomadTLSServerName = "tls_server_name"
	nomadSkipVerify    = "skip_verify"

	envNomadAddr          = "NOMAD_ADDR"
	envNomadToken         = "NOMAD_TOKEN"
	envNomadRegion        = "NOMAD_REGION"
	envNomadNamespace     = "NOMAD_NAMESPACE"
	envNomadCACert        = "NOMAD_CACERT"
	envNomadClientCert    = "NOMAD_CLIENT_CERT"
	envNomadClientKey     = "NOMAD_CLIENT_KEY"
	envNomadTLSServerName = "NOMAD_TLS_SERVER_NAME"
	envNomadSkipVerify    = "NOMAD_SKIP_VERIFY"

	// defaultNomadAddress is Nomad's own default agent address.
	defaultNomadAddress = "http://127.0.0.1:4646"
)

// nomadModel is the provider's nomad block.
type nomadModel struct {
	Address       types.String `tfsdk:"address"`
	Token         types.String `tfsdk:"token"`
	Region        types.String `tfsdk:"region"`
	Namespace     types.String `tfsdk:"namespace"`
	CAFile        types.String `tfsdk:"ca_file"`
	CAPEM         types.String `tfsdk:"ca_pem"`
	CertFile      types.String `tfsdk:"cert_file"`
	CertPEM       types.String `tfsdk:"cert_pem"`
	KeyFile       types.String `tfsdk:"key_file"`
	KeyPEM        types.String `tfsdk:"key_pem"`
	TLSServerName types.String `tfsdk:"tls_server_name"`
	SkipVerify    types.Bool   `tfsdk:"skip_verify"`
}

// nomadSettings is the resolved way to reach Nomad.
type nomadSettings struct {
	Config api.Config
	// Unknown lists the nomad block's attributes that were unknown when
	// the provider was configured (values computed during apply).
	Unknown []string
	// Err says why the settings cannot be used (for example a bad
	// NOMAD_SKIP_VERIFY); nil when they can.
	Err error
}

func nomadBlockSchema() schema.SingleNestedBlock {
	blockPath := func(name string) path.Expression { return path.MatchRelative().AtParent().AtName(name) }
	pemValidators := func(other string) []validator.String {
		return []validator.String{
			stringvalidator.LengthAtLeast(1),
			pemValidator(),
			stringvalidator.ConflictsWith(blockPath(other)),
		}
	}
	fileValidators := func(other string) []validator.String {
		return []validator.String{
			stringvalidator.LengthAtLeast(1),
			stringvalidator.ConflictsWith(blockPath(other)),
		}
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "How to reach the Nomad HTTP API, for `activation_host_usage`. Every attribute falls back " +
			"to Nomad's usual environment variable when unset.",
		Attributes: map[string]schema.Attribute{
			nomadAddress: schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Address of a Nomad agent, for example `https://nomad.example.com:4646`. Falls back to `" +
					envNomadAddr + "`, then `" + defaultNomadAddress + "`.",
				Validators: []validator.String{urlValidator()},
			},
			nomadToken: schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "ACL token (secret ID) sent with every request. Falls back to `" + envNomadToken + "`. Never logged.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 1024)},
			},
			nomadRegion: schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Nomad region to query. Falls back to `" + envNomadRegion + "`, then the agent's own region.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 128)},
			},
			nomadNamespace: schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Nomad namespace for allocation reads. Falls back to `" + envNomadNamespace + "`, then `default`.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 128)},
			},
			nomadCAFile: schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Path of a PEM CA certificate to verify the agent's TLS certificate. Falls back to `" + envNomadCACert + "`. Conflicts with `ca_pem`.",
				Validators:          fileValidators(nomadCAPEM),
			},
			nomadCAPEM: schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM CA certificate to verify the agent's TLS certificate. Conflicts with `ca_file`.",
				Validators:          pemValidators(nomadCAFile),
			},
			nomadCertFile: schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Path of a PEM client certificate for mutual TLS. Falls back to `" + envNomadClientCert + "`. Needs a key; conflicts with `cert_pem`.",
				Validators:          fileValidators(nomadCertPEM),
			},
			nomadCertPEM: schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM client certificate for mutual TLS. Needs a key; conflicts with `cert_file`.",
				Validators:          pemValidators(nomadCertFile),
			},
			nomadKeyFile: schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Path of the PEM private key of the client certificate. Falls back to `" + envNomadClientKey + "`. Conflicts with `key_pem`.",
				Validators:          fileValidators(nomadKeyPEM),
			},
			nomadKeyPEM: schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "PEM private key of the client certificate. Conflicts with `key_file`.",
				Validators:          pemValidators(nomadKeyFile),
			},
			nomadTLSServerName: schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Server name (SNI) to expect in the agent's TLS certificate. Falls back to `" + envNomadTLSServerName + "`.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 253)},
			},
			nomadSkipVerify: schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Skip verification of the agent's TLS certificate (testing only). Falls back to `" + envNomadSkipVerify +
					"`. Conflicts with `ca_file` and `ca_pem`.",
				Validators: []validator.Bool{boolvalidator.ConflictsWith(blockPath(nomadCAFile), blockPath(nomadCAPEM))},
			},
		},
	}
}

// validateNomadTLSPairs checks that a client certificate and its key come
// together.
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

// resolveNomadSettings merges the nomad block with the NOMAD_* environment
// variables: a value set in the block wins; an unset one falls back to its
// variable; the address finally falls back to Nomad's default.
func resolveNomadSettings(n *nomadModel, getenv func(string) (string, bool)) nomadSettings {
	if n == nil {
		n = &nomadModel{}
	}
	var s nomadSettings
	pick := func(name string, v types.String, env string) string {
		if v.IsUnknown() {
			s.Unknown = append(s.Unknown, name)
			return ""
		}
		if !v.IsNull() {
			return v.ValueString()
		}
		if env == "" {
			return ""
		}
		e, _ := getenv(env)
		return e
	}
	tls := &api.TLSConfig{}
	s.Config.Address = pick(nomadAddress, n.Address, envNomadAddr)
	if s.Config.Address == "" {
		s.Config.Address = defaultNomadAddress
	}
	s.Config.SecretID = pick(nomadToken, n.Token, envNomadToken)
	s.Config.Region = pick(nomadRegion, n.Region, envNomadRegion)
	s.Config.Namespace = pick(nomadNamespace, n.Namespace, envNomadNamespace)
	// A file in the block, or a PEM in the block, beats the environment.
	if pem := pick(nomadCAPEM, n.CAPEM, ""); pem != "" {
		tls.CACertPEM = []byte(pem)
	} else {
		tls.CACert = pick(nomadCAFile, n.CAFile, envNomadCACert)
	}
	if pem := pick(nomadCertPEM, n.CertPEM, ""); pem != "" {
		tls.ClientCertPEM = []byte(pem)
	} else {
		tls.ClientCert = pick(nomadCertFile, n.CertFile, envNomadClientCert)
	}
	if pem := pick(nomadKeyPEM, n.KeyPEM, ""); pem != "" {
		tls.ClientKeyPEM = []byte(pem)
	} else {
		tls.ClientKey = pick(nomadKeyFile, n.KeyFile, envNomadClientKey)
	}
	tls.TLSServerName = pick(nomadTLSServerName, n.TLSServerName, envNomadTLSServerName)
	switch {
	case n.SkipVerify.IsUnknown():
		s.Unknown = append(s.Unknown, nomadSkipVerify)
	case !n.SkipVerify.IsNull():
		tls.Insecure = n.SkipVerify.ValueBool()
	default:
		if v, ok := getenv(envNomadSkipVerify); ok && v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				s.Err = fmt.Errorf("%s is %q: want true or false", envNomadSkipVerify, v)
			}
			tls.Insecure = b
		}
	}
	s.Config.TLSConfig = tls
	return s
}

// client returns a Nomad API client for the settings, or an error that says
// which setting stops it. The token never appears in the error.
func (s *nomadSettings) client() (*api.Client, error) {
	if len(s.Unknown) > 0 {
		return nil, fmt.Errorf("the provider's nomad block has values not known until apply (%v); activation_host_usage needs them known when it is read", s.Unknown)
	}
	if s.Err != nil {
		return nil, s.Err
	}
	cfg := s.Config
	tls := *s.Config.TLSConfig
	cfg.TLSConfig = &tls
	c, err := api.NewClient(&cfg)
	if err != nil {
		return nil, fmt.Errorf("nomad client for %s: %w", cfg.Address, err)
	}
	return c, nil
}
