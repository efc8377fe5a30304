package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// Attribute names of the provider's nomad block. Each falls back to the
// NOMAD_* variable the Nomad CLI reads (see nomadconn.Settings).
const (
	attrNomad          = "nomad"
	nomadAddress       = "address"
	nomadToken         = "token"
	nomadSecretID      = "secret_id"
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

	// envAllocID is set inside a Nomad allocation, envTFCRunID in a
	// Terraform Cloud or Enterprise run (which runs in one): the task's own
	// NOMAD_NAMESPACE and NOMAD_REGION are then not the user's intent.
	envAllocID  = "NOMAD_ALLOC_ID"
	envTFCRunID = "TFC_RUN_ID"
)

// nomadModel is the provider's nomad block.
type nomadModel struct {
	Address       types.String `tfsdk:"address"`
	Token         types.String `tfsdk:"token"`
	SecretID      types.String `tfsdk:"secret_id"`
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
	paths := func(names []string) []path.Expression {
		var out []path.Expression
		for _, n := range names {
			out = append(out, blockPath(n))
		}
		return out
	}
	pemValidators := func(others ...string) []validator.String {
		return []validator.String{stringvalidator.LengthAtLeast(1), pemValidator(), stringvalidator.ConflictsWith(paths(others)...)}
	}
	fileValidators := func(others ...string) []validator.String {
		return []validator.String{stringvalidator.LengthAtLeast(1), stringvalidator.ConflictsWith(paths(others)...)}
	}
	const caEnv = " when no CA is set (in any of `ca_file`, `ca_pem`, `ca_path`): a CA set here takes none from the environment"
	env := func(name string) string { return " Falls back to `" + name + "`" }
	const mix = ": the Nomad API client takes a certificate and its key both as files or both as PEM text, never one of each."
	return schema.SingleNestedBlock{
		MarkdownDescription: "How to reach the Nomad HTTP API, for `activation_host_usage`. " +
			"Each attribute the Nomad CLI has a variable for (`address`, `region`, `namespace`, `token`, `http_auth`, `ca_file`, " +
			"`ca_path`, `cert_file`, `key_file`, `tls_server_name`, `skip_verify`) falls back to it when unset (unless `ignore_env_vars` " +
			"says otherwise); `headers` and the PEM attributes have none. " +
			"One connection is made per provider instance, on first use, and shared by every `activation_host_usage`. " +
			fmt.Sprintf("Each request to Nomad may take at most %s (a plan reads once, so the limit is wider than the plugins' "+
				"`request_timeout` of 10s, which an evaluation every 10 seconds needs); the data source's `timeouts.read` bounds the whole read. "+
				"When a request to Nomad's servers times out, every `activation_host_usage` read that starts within a minute of it fails at once, naming it, "+
				"unless a read succeeds in between: a plan over many nodes then fails in one request timeout, not one per batch of `-parallelism` reads "+
				"(a request the servers pass on to a client node, such as an allocation's stats, does not count, nor does one node's allocation list: one node that does not answer says nothing of the others). "+
				"A request for one job (the job, its allocation list) stops only the reads of that job, for a minute or until one of them succeeds: the reads of other jobs go on. ",
				nomadconn.DefaultRequestTimeout) +
			"Its values must be known when `activation_host_usage` is read: one known only at apply (an address from a resource " +
			"created in the same run) fails the plan. " +
			"Secrets (the token, the basic-auth password, header values, a password in the address) are never logged, and are " +
			"removed from every error when they are at least 4 characters long (a shorter one would mangle the message; use real secrets). " +
			"The attributes follow terraform-provider-nomad's provider configuration (`address`, `region`, `secret_id`, `http_auth`, " +
			"`headers`, `ca_file`, `ca_pem`, `cert_file`, `cert_pem`, `key_file`, `key_pem`, `skip_verify`, `ignore_env_vars`), " +
			"with these differences: the ACL token is `token`, and `secret_id` is accepted as its alias; `headers` is a map of " +
			"name to value, not repeated `headers { name, value }` blocks; `namespace`, `ca_path` and `tls_server_name` are added; " +
			"`auth_jwt` is not supported; `ignore_env_vars` may name any of the variables below (terraform-provider-nomad honours " +
			"only `NOMAD_NAMESPACE` and `NOMAD_REGION`), and its default also applies inside a Nomad allocation.",
		Attributes: map[string]schema.Attribute{
			nomadAddress: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Address of a Nomad agent, for example `https://nomad.example.com:4646`." + env(nomadconn.EnvAddress) +
					", then `" + nomadconn.DefaultAddress + "`. A password in it (`https://user:pass@...`) is redacted wherever the address is shown.",
				Validators: []validator.String{urlValidator()}},
			nomadToken: schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "ACL token (secret ID) sent with every request." + env(nomadconn.EnvToken) + ". Never logged. " +
					"Conflicts with `secret_id`, its alias.",
				Validators: []validator.String{tokenString{}, stringvalidator.ConflictsWith(blockPath(nomadSecretID))}},
			nomadSecretID: schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "Alias of `token`, under terraform-provider-nomad's name: the ACL token sent with every request." +
					env(nomadconn.EnvToken) + ". Never logged. Conflicts with `token`.",
				Validators: []validator.String{tokenString{}, stringvalidator.ConflictsWith(blockPath(nomadToken))}},
			nomadHTTPAuth: schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "HTTP basic authentication, `user` or `user:password`, for a Nomad behind an authenticating proxy." +
					env(nomadconn.EnvHTTPAuth) + ". Never logged.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
			nomadHeaders: schema.MapAttribute{Optional: true, Sensitive: true, ElementType: types.StringType,
				MarkdownDescription: "Headers sent with every request, name to value (a proxy's own credentials, for example): a map, " +
					"where terraform-provider-nomad takes repeated `headers { name, value }` blocks. Their values are treated as secrets. " +
					"A name that is not an HTTP header name (letters, digits and ``!#$%&'*+-.^_`|~``), or a value holding a control character " +
					"other than a tab, is refused at validate, naming the header.",
				Validators: []validator.Map{mapvalidator.SizeAtLeast(1), headerMap{}}},
			nomadRegion: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Nomad region to query." + env(nomadconn.EnvRegion) + ", then the agent's own region.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 128)}},
			nomadNamespace: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Nomad namespace for job and allocation reads." + env(nomadconn.EnvNamespace) + ", then `default`.",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 128)}},
			nomadCAFile: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Path of a PEM CA certificate to verify the agent's TLS certificate." + env(nomadconn.EnvCACert) + caEnv + ". Conflicts with `ca_pem` and `ca_path`.",
				Validators:          fileValidators(nomadCAPEM, nomadCAPath)},
			nomadCAPath: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Path of a directory of PEM CA certificates to verify the agent's TLS certificate." + env(nomadconn.EnvCAPath) + caEnv + ". Conflicts with `ca_file` and `ca_pem`.",
				Validators:          fileValidators(nomadCAFile, nomadCAPEM)},
			nomadCAPEM: schema.StringAttribute{Optional: true,
				MarkdownDescription: "PEM CA certificate to verify the agent's TLS certificate. Conflicts with `ca_file` and `ca_path`.",
				Validators:          pemValidators(nomadCAFile, nomadCAPath)},
			nomadCertFile: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Path of a PEM client certificate for mutual TLS." + env(nomadconn.EnvClientCert) + ". Conflicts with `cert_pem`. " +
					"Needs its key as a file: `key_file` (or `" + nomadconn.EnvClientKey + "`)" + mix,
				Validators: fileValidators(nomadCertPEM)},
			nomadCertPEM: schema.StringAttribute{Optional: true,
				MarkdownDescription: "PEM client certificate for mutual TLS. Conflicts with `cert_file`. Needs its key as PEM text: `key_pem`" + mix,
				Validators:          pemValidators(nomadCertFile)},
			nomadKeyFile: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Path of the PEM private key of the client certificate." + env(nomadconn.EnvClientKey) + ". Conflicts with `key_pem`. " +
					"Goes with a certificate file: `cert_file` (or `" + nomadconn.EnvClientCert + "`)" + mix,
				Validators: fileValidators(nomadKeyPEM)},
			nomadKeyPEM: schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "PEM private key of the client certificate. Conflicts with `key_file`. Goes with `cert_pem`" + mix,
				Validators:          pemValidators(nomadKeyFile)},
			nomadTLSServerName: schema.StringAttribute{Optional: true,
				MarkdownDescription: "Server name (SNI) to expect in the agent's TLS certificate." + env(nomadconn.EnvTLSServerName) + ".",
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 253)}},
			nomadSkipVerify: schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Skip verification of the agent's TLS certificate (testing only)." + env(nomadconn.EnvSkipVerify) +
					". With it, a CA (`ca_file`, `ca_pem`, `ca_path`) is not used to verify the agent.",
			},
			nomadIgnoreEnvVars: schema.MapAttribute{Optional: true, ElementType: types.BoolType,
				MarkdownDescription: "Environment variables not to fall back to, name to `true`; any of `" +
					strings.Join(nomadconn.EnvVars, "`, `") + "`. Unset or `{}`: none, except inside a Nomad allocation (`" + envAllocID +
					"` is set) or a Terraform Cloud or Enterprise run (`" + envTFCRunID + "` is set), where the default is " +
					"`{ NOMAD_NAMESPACE = true, NOMAD_REGION = true }`, as terraform-provider-nomad's, so that the task's own namespace " +
					"and region are not taken for the user's. A map that names any variable replaces that default: to ignore another " +
					"variable there as well, name `NOMAD_NAMESPACE` and `NOMAD_REGION` in it too.",
				Validators: []validator.Map{mapvalidator.KeysAre(stringvalidator.OneOf(nomadconn.EnvVars...))}},
		},
	}
}

// nomadConnection is a provider instance's way to Nomad: the nomad block's
// settings, and, made on first use and then shared by every
// activation_host_usage read (OpenTofu reads data sources in parallel), one
// nomadconn.Conn and one nomadusage.Reader per set of read options (in
// practice one: the options come from the data source's warmup).
type nomadConnection struct {
	settings nomadconn.Settings
	// getenv is the environment the settings fall back to, without the
	// variables ignore_env_vars names.
	getenv nomadconn.Getenv
	// unknown lists the block's attributes not known when the provider was
	// configured (values computed during apply).
	unknown []string
	// err is a problem found in the block itself, when it was read; it
	// never changes afterwards.
	err error
	// certFrom and keyFrom say where the client certificate and key come
	// from: an attribute of the block, or its variable.
	certFrom, keyFrom pairSource
	// tokenAttr is the block's attribute the token is read from (token,
	// or secret_id when token is unset); "" when neither is set.
	tokenAttr string

	once    sync.Once
	conn    *nomadconn.Conn
	connErr error // set by once, read after it

	mu      sync.Mutex
	readers map[nomadusage.Options]*nomadusage.Reader

	// unanswered holds, by scope (see unansweredScope), the last request
	// Nomad's servers did not answer within the request timeout (its
	// error, redacted) and when it timed out, until a read in that scope
	// succeeds: reads in that scope that start within unansweredFor of it
	// fail at once instead of waiting as long again (see
	// recentlyUnanswered). answeredAt is when a read in a scope last
	// succeeded. The scope "" is every read: Nomad's servers did not
	// answer a request every read makes (the node list, a node). A job's
	// scope holds a request for that job (the job, its allocations), so
	// that one job whose listing does not answer stops only its own reads:
	// the reads of other jobs go on, and fail, if they do, with their own
	// errors.
	unansweredMu sync.Mutex
	unanswered   map[string]unansweredRequest
	answeredAt   map[string]time.Time
}

// unansweredRequest is a request Nomad did not answer in time: its
// error (redacted), when it timed out, and its scope.
type unansweredRequest struct {
	msg, scope string
	at         time.Time
}

// unansweredFor is how long after a request Nomad did not answer a read
// fails without trying ("a minute" in the nomad block's description and
// the error): long enough for the rest of a plan's reads, which start in
// batches of -parallelism as earlier ones end.
const unansweredFor = time.Minute

// noteUnanswered records that a read in scope that started at started
// failed at at on a request Nomad's servers did not answer in time (msg:
// the error, redacted). A read that started before the last one in its
// scope that succeeded says nothing new (a request stuck on one server or
// connection while others answer), and is not recorded.
func (c *nomadConnection) noteUnanswered(scope, msg string, started, at time.Time) {
	c.unansweredMu.Lock()
	defer c.unansweredMu.Unlock()
	if started.Before(c.answeredAt[scope]) {
		return
	}
	if c.unanswered == nil {
		c.unanswered = map[string]unansweredRequest{}
	}
	c.unanswered[scope] = unansweredRequest{msg: msg, scope: scope, at: at}
}

// noteAnswered forgets the unanswered requests a read in scope that
// succeeded at at answers for: its scope's and every read's ("").
func (c *nomadConnection) noteAnswered(scope string, at time.Time) {
	c.unansweredMu.Lock()
	defer c.unansweredMu.Unlock()
	if c.answeredAt == nil {
		c.answeredAt = map[string]time.Time{}
	}
	for _, sc := range []string{"", scope} {
		delete(c.unanswered, sc)
		if at.After(c.answeredAt[sc]) {
			c.answeredAt[sc] = at
		}
	}
}

// recentlyUnanswered returns the request that stops a read in scope, if
// any: one Nomad did not answer in time within unansweredFor before now,
// in every read's scope or the read's.
func (c *nomadConnection) recentlyUnanswered(scope string, now time.Time) (unansweredRequest, bool) {
	c.unansweredMu.Lock()
	defer c.unansweredMu.Unlock()
	for _, sc := range []string{"", scope} {
		if u, found := c.unanswered[sc]; found && now.Sub(u.at) <= unansweredFor {
			return u, true
		}
	}
	return unansweredRequest{}, false
}

// pairSource is where one half of the client certificate pair comes from.
type pairSource struct {
	// attr is the block's attribute, or "" when the value comes from the
	// environment (env) or is unset.
	attr, env string
	pem       bool
}

func (s pairSource) set() bool { return s.attr != "" || s.env != "" }

// name is the attribute or the variable, for a message.
func (s pairSource) name() string {
	if s.attr != "" {
		return attrNomad + "." + s.attr
	}
	return s.env
}

// newNomadConnection reads the nomad block (nil when absent); getenv is the
// process environment the settings fall back to.
func newNomadConnection(ctx context.Context, n *nomadModel, getenv nomadconn.Getenv) *nomadConnection {
	c := &nomadConnection{readers: map[nomadusage.Options]*nomadusage.Reader{}}
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
	secretID := str(nomadSecretID, n.SecretID)
	switch {
	case s.Token != "":
		c.tokenAttr = nomadToken
	case secretID != "":
		s.Token, c.tokenAttr = secretID, nomadSecretID
	}
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
	case !n.IgnoreEnvVars.IsNull() && len(n.IgnoreEnvVars.Elements()) > 0:
		var m map[string]types.Bool
		diags.Append(n.IgnoreEnvVars.ElementsAs(ctx, &m, false)...)
		for k, v := range m {
			if v.IsUnknown() {
				c.unknown = append(c.unknown, nomadIgnoreEnvVars+"["+k+"]")
			}
			ignored[k] = v.ValueBool()
		}
	case inNomadOrTFC(getenv):
		ignored[nomadconn.EnvNamespace], ignored[nomadconn.EnvRegion] = true, true
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
	c.certFrom = pairHalf(s.ClientCertPEM, nomadCertPEM, s.ClientCert, nomadCertFile, nomadconn.EnvClientCert, c.getenv)
	c.keyFrom = pairHalf(s.ClientKeyPEM, nomadKeyPEM, s.ClientKey, nomadKeyFile, nomadconn.EnvClientKey, c.getenv)
	return c
}

// inNomadOrTFC reports whether the provider runs inside a Nomad allocation
// or a Terraform Cloud or Enterprise run.
func inNomadOrTFC(getenv nomadconn.Getenv) bool {
	for _, name := range []string{envAllocID, envTFCRunID} {
		if v, ok := getenv(name); ok && v != "" {
			return true
		}
	}
	return false
}

// pairHalf is where a client certificate (or key) comes from: its PEM
// attribute, its file attribute, then its variable, as nomadconn.Resolve
// fills them (the variable only when neither attribute is set).
func pairHalf(pemValue, pemAttr, fileValue, fileAttr, env string, getenv nomadconn.Getenv) pairSource {
	switch {
	case pemValue != "":
		return pairSource{attr: pemAttr, pem: true}
	case fileValue != "":
		return pairSource{attr: fileAttr}
	}
	if v, ok := getenv(env); ok && v != "" {
		return pairSource{env: env}
	}
	return pairSource{}
}

// clientPair checks the client certificate and its key as they resolve
// (the block, then the environment): both or neither, and both files or
// both PEM text, the only pairs the Nomad API client accepts. The error
// names the attribute at fault (or the variable, when the environment
// gave the half that is wrong) and the other half. A pair with a value
// not known yet is not judged.
func (c *nomadConnection) clientPair() *valueError {
	for _, u := range c.unknown {
		switch u {
		case nomadCertFile, nomadCertPEM, nomadKeyFile, nomadKeyPEM, nomadIgnoreEnvVars:
			return nil
		}
	}
	cert, key := c.certFrom, c.keyFrom
	at := func(s pairSource) path.Path {
		if s.attr == "" {
			return path.Empty()
		}
		return path.Root(attrNomad).AtName(s.attr)
	}
	kind := func(s pairSource) string {
		if s.pem {
			return "PEM text"
		}
		return "a file"
	}
	switch {
	case cert.set() && !key.set():
		return &valueError{path: at(cert), summary: "Client certificate without a key", reason: fmt.Sprintf(
			"%s gives a client certificate, and no key is set: set key_file or key_pem (or %s)", cert.name(), nomadconn.EnvClientKey)}
	case key.set() && !cert.set():
		return &valueError{path: at(key), summary: "Client key without a certificate", reason: fmt.Sprintf(
			"%s gives a client key, and no certificate is set: set cert_file or cert_pem (or %s)", key.name(), nomadconn.EnvClientCert)}
	case cert.set() && cert.pem != key.pem:
		fault, other := key, cert
		if key.attr == "" { // the key comes from the environment: the certificate's attribute is at fault
			fault, other = cert, key
		}
		return &valueError{path: at(fault), summary: "Client certificate and key of different kinds", reason: fmt.Sprintf(
			"%s is %s, and %s is %s: the Nomad API client takes a client certificate and its key both as files or both as PEM text",
			fault.name(), kind(fault), other.name(), kind(other))}
	}
	return nil
}

// get returns the shared connection and the reader for opts, making them
// on first use. Its errors never hold a secret.
func (c *nomadConnection) get(opts nomadusage.Options) (*nomadconn.Conn, *nomadusage.Reader, error) {
	if len(c.unknown) > 0 {
		return nil, nil, fmt.Errorf("the provider's nomad block has values not known until apply (%s): activation_host_usage needs them known when it is read",
			strings.Join(c.unknown, ", "))
	}
	if c.err != nil {
		return nil, nil, c.err
	}
	if err := c.clientPair(); err != nil {
		return nil, nil, err
	}
	c.once.Do(func() { c.conn, c.connErr = nomadconn.New(c.settings, c.getenv) })
	if c.connErr != nil {
		return nil, nil, c.connErr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.readers[opts]
	if !ok {
		r = &nomadusage.Reader{Client: c.conn.Client(), Options: opts}
		c.readers[opts] = r
	}
	return c.conn, r, nil
}

// nomadSource says where the connection's settings came from, for
// messages: the token's source (tokenSource) and whether the address is
// Nomad's default (neither the block nor NOMAD_ADDR set one).
type nomadSource struct {
	token          string
	defaultAddress bool
}

func (c *nomadConnection) source() nomadSource {
	addr, _ := c.getenv(nomadconn.EnvAddress)
	return nomadSource{token: c.tokenSource(), defaultAddress: c.settings.Address == "" && addr == ""}
}

// tokenSource names where the ACL token sent to Nomad comes from, for a
// message: the block's attribute, NOMAD_TOKEN, or "" when none is sent.
func (c *nomadConnection) tokenSource() string {
	if c.tokenAttr != "" {
		return "the provider's " + attrNomad + "." + c.tokenAttr
	}
	if v, ok := c.getenv(nomadconn.EnvToken); ok && v != "" {
		return nomadconn.EnvToken
	}
	return ""
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

// sentence is an error's text as a diagnostic's detail reads it: a capital
// first letter and a closing period (Go's error texts have neither).
func sentence(s string) string {
	if s == "" {
		return s
	}
	if r, n := utf8.DecodeRuneInString(s); unicode.IsLower(r) {
		s = string(unicode.ToUpper(r)) + s[n:]
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
