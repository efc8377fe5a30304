// Package nomadconn is the project's one boundary with the Nomad HTTP API:
// one settings struct (terraform-provider-nomad's attributes, every NOMAD_*
// variable the Nomad CLI reads, an ignore_env_vars switch), one connection
// type built from it, and the redaction of secrets (the ACL token, a
// basic-auth password, header values), done once, where answers come in.
// The provider, the usage reader and both Nomad Autoscaler plugins connect
// through it.
package nomadconn

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/nomad/api"
)

// Environment variables the Nomad CLI reads, and the settings they fill.
const (
	EnvAddress       = "NOMAD_ADDR"
	EnvRegion        = "NOMAD_REGION"
	EnvNamespace     = "NOMAD_NAMESPACE"
	EnvToken         = "NOMAD_TOKEN"
	EnvHTTPAuth      = "NOMAD_HTTP_AUTH"
	EnvCACert        = "NOMAD_CACERT"
	EnvCAPath        = "NOMAD_CAPATH"
	EnvClientCert    = "NOMAD_CLIENT_CERT"
	EnvClientKey     = "NOMAD_CLIENT_KEY"
	EnvTLSServerName = "NOMAD_TLS_SERVER_NAME"
	EnvSkipVerify    = "NOMAD_SKIP_VERIFY"
)

// EnvVars lists every variable Settings falls back to.
var EnvVars = []string{EnvAddress, EnvRegion, EnvNamespace, EnvToken, EnvHTTPAuth, EnvCACert, EnvCAPath,
	EnvClientCert, EnvClientKey, EnvTLSServerName, EnvSkipVerify}

// DefaultAddress is Nomad's own default agent address.
const DefaultAddress = "http://127.0.0.1:4646"

// DefaultRequestTimeout bounds one HTTP request when Settings sets none.
const DefaultRequestTimeout = 30 * time.Second

// Settings say how to reach Nomad. An empty field falls back to its NOMAD_*
// variable (unless IgnoreEnv), then to Nomad's default.
type Settings struct {
	Address   string
	Region    string
	Namespace string
	Token     string
	// HTTPAuth is "user" or "user:password" for HTTP basic auth.
	HTTPAuth string
	// Headers are sent with every request (a proxy's own authentication,
	// for example); their values are treated as secrets.
	Headers map[string]string
	// TLS: files, or PEM text. Of the CA's forms a file is taken first,
	// then PEM, then a directory; the environment fills none of them when
	// one is set.
	CACert, CAPath              string
	ClientCert, ClientKey       string
	CACertPEM, ClientCertPEM    string
	ClientKeyPEM, TLSServerName string
	SkipVerify                  *bool
	// IgnoreEnv: read no NOMAD_* variable (inside a Nomad allocation the
	// task's own NOMAD_NAMESPACE and NOMAD_ADDR would otherwise leak in).
	IgnoreEnv bool
	// BlockWait, when > 0, is the blocking query wait time.
	BlockWait time.Duration
	// RequestTimeout bounds one HTTP request; 0 is DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// Getenv looks a variable up; os.LookupEnv is the process environment.
type Getenv func(string) (string, bool)

// SettingsError names the setting (or variable) that is wrong.
type SettingsError struct {
	Setting string
	Reason  string
}

func (e *SettingsError) Error() string { return fmt.Sprintf("nomad %s: %s", e.Setting, e.Reason) }

// Resolve applies the environment fallbacks and Nomad's defaults and
// checks the result. getenv nil is the process environment.
func (s Settings) Resolve(getenv Getenv) (Settings, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	if s.IgnoreEnv {
		getenv = func(string) (string, bool) { return "", false }
	}
	fill := func(dst *string, env string) {
		if *dst == "" {
			if v, ok := getenv(env); ok {
				*dst = v
			}
		}
	}
	fill(&s.Address, EnvAddress)
	fill(&s.Region, EnvRegion)
	fill(&s.Namespace, EnvNamespace)
	fill(&s.Token, EnvToken)
	fill(&s.HTTPAuth, EnvHTTPAuth)
	// The CA is one setting in three forms (a file, PEM text, a
	// directory): one configured, the environment gives none of them, or
	// its file would win over the configured PEM or directory (the TLS
	// library takes a file first, then PEM, then a directory) and trust a
	// CA the configuration never named.
	if s.CACert == "" && s.CACertPEM == "" && s.CAPath == "" {
		fill(&s.CACert, EnvCACert)
		fill(&s.CAPath, EnvCAPath)
	}
	if s.ClientCertPEM == "" {
		fill(&s.ClientCert, EnvClientCert)
	}
	if s.ClientKeyPEM == "" {
		fill(&s.ClientKey, EnvClientKey)
	}
	fill(&s.TLSServerName, EnvTLSServerName)
	if s.SkipVerify == nil {
		if v, ok := getenv(EnvSkipVerify); ok && v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return s, &SettingsError{EnvSkipVerify, fmt.Sprintf("is %q; want true or false", v)}
			}
			s.SkipVerify = &b
		}
	}
	if s.Address == "" {
		s.Address = DefaultAddress
	}
	if err := CheckAddress(s.Address); err != nil {
		return s, &SettingsError{"address", err.Error()}
	}
	if (s.ClientCert != "" || s.ClientCertPEM != "") != (s.ClientKey != "" || s.ClientKeyPEM != "") {
		return s, &SettingsError{"client certificate", "a client certificate needs its key and a key its certificate"}
	}
	var bad []string
	for name, value := range s.Headers {
		if err := CheckHeader(name, value); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad) // every bad header at once, in an order that repeats
		return s, &SettingsError{"headers", strings.Join(bad, "; ")}
	}
	if s.RequestTimeout < 0 || s.BlockWait < 0 {
		return s, &SettingsError{"timeout", "must not be negative"}
	}
	return s, nil
}

// CheckHeader refuses a header Go's HTTP client would refuse at every
// request: a name that is not an HTTP token (RFC 9110: letters, digits
// and !#$%&'*+-.^_`|~), or a value holding a control character other than
// a tab (a newline, most likely). The value is a secret: the error names
// the header, never the value.
func CheckHeader(name, value string) error {
	if name == "" {
		return errors.New(`"" is not a valid header name`)
	}
	token := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)
	}
	for _, r := range name {
		if !token(r) {
			return fmt.Errorf("%q is not a valid header name: %q is not allowed in one (letters, digits and !#$%%&'*+-.^_`|~ are)", name, r)
		}
	}
	for _, c := range []byte(value) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return fmt.Errorf("the value of header %q holds a control character (a newline?), which no request can carry", name)
		}
	}
	return nil
}

// Conn is a connection to Nomad: an API client whose error answers have
// every secret of the settings redacted before the client sees them, the
// namespace to use, and an address safe to print.
type Conn struct {
	client    *api.Client
	transport *http.Transport
	namespace string
	address   string
	secrets   []string
	longest   int // the longest secret's length
	// maxAnswer bounds a successful answer, unzipped (MaxAnswerBytes).
	maxAnswer int64
}

// MaxAnswerBytes bounds a successful answer from Nomad, unzipped: the
// largest a client of the plugins and the provider reads (a node's
// allocations, each with its job; a job's allocation list) is far below
// it on clusters of thousands of nodes, and an endpoint that is not
// Nomad, or a proxy, cannot make the reader hold more than this (a
// compressed answer of a few megabytes could unzip to gigabytes).
const MaxAnswerBytes = 256 << 20

// New resolves s (see Resolve) and connects. Its errors never hold a
// secret.
func New(s Settings, getenv Getenv) (*Conn, error) {
	s, err := s.Resolve(getenv)
	if err != nil {
		return nil, err
	}
	c := &Conn{namespace: s.Namespace, address: RedactURL(s.Address), secrets: secrets(s), maxAnswer: MaxAnswerBytes}
	for _, v := range c.secrets {
		c.longest = max(c.longest, len(v))
	}
	cfg := &api.Config{
		Address: s.Address, Region: s.Region, Namespace: s.Namespace, SecretID: s.Token,
		WaitTime: s.BlockWait,
		TLSConfig: &api.TLSConfig{
			CACert: s.CACert, CAPath: s.CAPath, ClientCert: s.ClientCert, ClientKey: s.ClientKey,
			CACertPEM: []byte(s.CACertPEM), ClientCertPEM: []byte(s.ClientCertPEM), ClientKeyPEM: []byte(s.ClientKeyPEM),
			TLSServerName: s.TLSServerName,
		},
	}
	if s.SkipVerify != nil {
		cfg.TLSConfig.Insecure = *s.SkipVerify
	}
	if s.HTTPAuth != "" {
		user, pass, _ := strings.Cut(s.HTTPAuth, ":")
		cfg.HttpAuth = &api.HttpBasicAuth{Username: user, Password: pass}
	}
	if len(s.Headers) > 0 {
		cfg.Headers = http.Header{}
		for k, v := range s.Headers {
			cfg.Headers.Set(k, v)
		}
	}
	timeout := s.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        100,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
	}
	if u, _ := url.Parse(s.Address); u != nil && u.Scheme == "unix" {
		socket := u.EscapedPath()
		transport.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}
		cfg.Address = "http://127.0.0.1"
	}
	// No redirect is followed: Nomad answers none but to clean a path, and
	// Go's client would carry X-Nomad-Token and the configured headers to
	// wherever a redirect points (another host, plain http).
	hc := &http.Client{Transport: transport, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// Which part of the TLS settings is at fault, named: the CA's (a file,
	// a directory or PEM text), then the client's certificate and key.
	ca := &api.TLSConfig{CACert: s.CACert, CAPath: s.CAPath, CACertPEM: []byte(s.CACertPEM)}
	scratch := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	if err := api.ConfigureTLS(scratch, ca); err != nil {
		return nil, &SettingsError{"TLS CA certificate", c.RedactString(err.Error())}
	}
	if err := api.ConfigureTLS(hc, cfg.TLSConfig); err != nil {
		return nil, &SettingsError{"TLS client certificate and key", c.RedactString(err.Error())}
	}
	hc.Transport = &redactingTransport{next: transport, conn: c}
	cfg.HttpClient = hc
	client, err := api.NewClient(cfg)
	if err != nil {
		return nil, c.Redact(fmt.Errorf("nomad API client for %s: %w", c.address, err))
	}
	c.client, c.transport = client, transport
	return c, nil
}

// CloseIdleConnections closes the connection's idle keep-alive
// connections, for a caller that replaces it with another (a plugin the
// agent configures again): requests in flight finish, and their
// connections close as they go idle.
func (c *Conn) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// Client is the API client.
func (c *Conn) Client() *api.Client { return c.client }

// Namespace is the namespace the settings name ("" for Nomad's default).
func (c *Conn) Namespace() string { return c.namespace }

// Address is the agent's address with any user information removed: safe
// to print.
func (c *Conn) Address() string { return c.address }

// Redacted is the text that replaces a secret.
const Redacted = "<redacted>"

// secrets lists every secret of s, with the forms it takes in URLs.
func secrets(s Settings) []string {
	var out []string
	add := func(v string) {
		if v == "" {
			return
		}
		out = append(out, v)
		for _, f := range []string{url.QueryEscape(v), url.PathEscape(v)} {
			if f != v {
				out = append(out, f)
			}
		}
	}
	add(s.Token)
	if _, pass, ok := strings.Cut(s.HTTPAuth, ":"); ok {
		add(pass)
	} else {
		add(s.HTTPAuth) // a bare user name used as the credential
		add(base64.StdEncoding.EncodeToString([]byte(s.HTTPAuth + ":")))
	}
	if u, err := url.Parse(s.Address); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		// The API client sends the address's user information as a Basic
		// Authorization header (user:password, or user: without one).
		p, ok := u.User.Password()
		if !ok {
			add(u.User.Username()) // a bare user name used as the credential
		}
		add(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + p)))
	} else if i, j := strings.Index(s.Address, "://"), strings.LastIndex(s.Address, "@"); i >= 0 && j > i {
		// An address that does not parse, or whose "@" was read as part
		// of its path: its whole user information.
		add(s.Address[i+3 : j])
	}
	if s.HTTPAuth != "" {
		// The Authorization header's form of the credential.
		add(base64.StdEncoding.EncodeToString([]byte(s.HTTPAuth)))
	}
	for _, v := range s.Headers {
		// A header may carry anything ("1", "min"): one too short to
		// redact without mangling text is no credential.
		if len(v) >= shortSecret {
			add(v)
		}
	}
	add(s.ClientKeyPEM)
	return out
}

// RedactString replaces every secret in text.
func (c *Conn) RedactString(text string) string {
	if c == nil {
		return text
	}
	for _, s := range c.secrets {
		if len(s) < shortSecret {
			text = redactWord(text, s)
		} else {
			text = strings.ReplaceAll(text, s, Redacted)
		}
	}
	return text
}

// shortSecret: a secret shorter than this is redacted where it stands
// alone (redactWord), not inside every word that holds it, which would
// mangle the text around it.
const shortSecret = 4

// redactWord replaces each occurrence of s in text that no letter or
// digit touches on either side (in text as given: "ab1ab1" holds none).
func redactWord(text, s string) string {
	var b strings.Builder
	last := 0 // text[:last] is written
	for from := 0; ; {
		i := strings.Index(text[from:], s)
		if i < 0 {
			break
		}
		i += from
		end := i + len(s)
		if (i == 0 || !isWordByte(text[i-1])) && (end == len(text) || !isWordByte(text[end])) {
			b.WriteString(text[last:i])
			b.WriteString(Redacted)
			last = end
		}
		from = i + 1
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// Redact returns err with every secret in its text replaced; errors.Is and
// errors.As still reach the original error. Nil stays nil.
func (c *Conn) Redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := c.RedactString(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// CheckAddress says what is wrong with a Nomad address, if anything: it
// must be an http, https or unix URL with a host (or a socket path). The
// error quotes the address without its user information, and never the
// URL parser's own text, which quotes pieces of it.
func CheckAddress(addr string) error {
	red := RedactURL(addr)
	if strings.TrimSpace(addr) == "" {
		return fmt.Errorf("%q is empty: give the Nomad API's URL, such as http://127.0.0.1:4646", addr)
	}
	if strings.TrimSpace(addr) != addr {
		return fmt.Errorf("%q has spaces or line breaks around it: give the URL alone", red)
	}
	if strings.ContainsFunc(addr, unicode.IsSpace) {
		return fmt.Errorf("%q holds a space or a line break: a URL has none (give the Nomad API's URL, such as http://127.0.0.1:4646)", red)
	}
	// 127.0.0.1:4646 does not parse, and nomad:4646 parses with the
	// scheme "nomad": either way the scheme is what is missing. (What
	// comes before the first colon, in any case, as url.Parse reads it.)
	if scheme, _, _ := strings.Cut(addr, ":"); !slices.Contains([]string{"http", "https", "unix"}, strings.ToLower(scheme)) && !strings.Contains(addr, "://") {
		return fmt.Errorf("%q has no scheme: write http://%s (or https://, or unix:// for a socket)", red, red)
	}
	u, err := url.Parse(addr)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL (a password holding \"/\", \"?\", \"#\" or \"%%\" must be percent-encoded)", red)
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "unix":
		return fmt.Errorf("%q has scheme %q; want http, https or unix", red, u.Scheme)
	case u.Scheme != "unix" && u.Host == "":
		return fmt.Errorf("%q has no host", red)
	case u.Scheme == "unix" && u.Path == "" && u.Host == "":
		return fmt.Errorf("%q has no socket path", red)
	case u.Scheme != "unix" && u.User == nil && strings.Contains(addr, "@"):
		// http://ops:pa/ss@nomad:4646 parses as host "ops:pa", path
		// "/ss@nomad:4646": the password would be sent nowhere and printed.
		return fmt.Errorf("%q has an \"@\" after its host (a password holding \"/\", \"?\" or \"#\" must be percent-encoded)", red)
	}
	return nil
}

// RedactURL removes the user information (a basic-auth password) from an
// address before it is printed. An address that does not parse, or whose
// "@" the parser read as part of its path (a password holding a "/"),
// loses everything between "://" and its last "@" all the same.
func RedactURL(addr string) string {
	u, err := url.Parse(addr)
	if err == nil {
		if u.User != nil {
			u.User = nil
			return u.String()
		}
		if !strings.Contains(addr, "@") {
			return addr
		}
	}
	if i := strings.Index(addr, "://"); i >= 0 {
		if j := strings.LastIndex(addr, "@"); j > i {
			return addr[:i+3] + Redacted + "@" + addr[j+1:]
		}
	}
	if j := strings.LastIndex(addr, "@"); j >= 0 {
		return Redacted + "@" + addr[j+1:]
	}
	return addr
}

// redactingTransport redacts the secrets from every answer but a 200 (the
// API client turns any other into an error holding its body, and Nomad and
// proxies may echo request details in it) and from transport errors. Such an
// answer is unzipped first (the client asks for gzip and unzips only after
// the transport, so a secret in a compressed body would not be found) and
// kept to maxErrorBody, unzipped.
type redactingTransport struct {
	next http.RoundTripper
	conn *Conn
}

// maxErrorBody bounds how much of an error answer is kept.
const maxErrorBody = 1 << 20

func (t *redactingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, t.conn.Redact(err)
	}
	if (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound) && stateRead(req) && resp.Header.Get("X-Nomad-Index") == "" {
		return nil, t.conn.Redact(t.notNomad(req, resp))
	}
	if resp.StatusCode == http.StatusOK {
		return t.capped(req, resp)
	}
	// The answer keeps its status whatever its body: a body that cannot
	// be read becomes what was read, and why not.
	var r io.Reader = resp.Body
	var unreadable error
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		resp.Header.Del("Content-Encoding")
		resp.Uncompressed = true
		zr, err := gzip.NewReader(resp.Body)
		switch {
		case err == nil:
			r = zr
		case errors.Is(err, io.EOF): // an empty body, as the API client takes it
			r = strings.NewReader("")
		default:
			r, unreadable = strings.NewReader(""), err
		}
	}
	body, err := io.ReadAll(io.LimitReader(r, int64(maxErrorBody+t.conn.longest)))
	if err != nil && unreadable == nil {
		unreadable = err
	}
	resp.Body.Close()
	text := t.conn.RedactString(string(cutAt(body, maxErrorBody, t.conn.secrets)))
	if unreadable != nil {
		text += t.conn.RedactString(fmt.Sprintf(" (the answer's body could not be read whole: %v)", unreadable))
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
		// Not followed (see New): say where it pointed, so that the
		// address can be set there.
		text = fmt.Sprintf("redirected to %s, which is not followed (the token would go with it): set the address to where Nomad answers", RedactURL(t.conn.RedactString(loc)))
	}
	resp.Body = io.NopCloser(strings.NewReader(text))
	resp.ContentLength = int64(len(text))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// capped bounds a successful answer's body to the Conn's maxAnswer
// bytes, unzipped: a gzip answer is unzipped here (the API client unzips
// only what says it is compressed) and its reader then fails past the
// bound, as a plain one does, so that nothing decodes more.
func (t *redactingTransport) capped(req *http.Request, resp *http.Response) (*http.Response, error) {
	var r io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(resp.Body)
		switch {
		case errors.Is(err, io.EOF): // an empty body, as the API client takes it
			r = strings.NewReader("")
			resp.ContentLength = 0
		case err != nil:
			resp.Body.Close()
			return nil, t.conn.Redact(fmt.Errorf("%s %s: the answer says it is gzip-compressed and is not: %w", req.Method, req.URL.Path, err))
		default:
			r = zr
			resp.ContentLength = -1
		}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.Uncompressed = true
	}
	resp.Body = &cappedBody{r: r, body: resp.Body, left: t.conn.maxAnswer, limit: t.conn.maxAnswer, what: req.Method + " " + req.URL.Path}
	return resp, nil
}

// cappedBody reads an answer's body and fails once it has given limit
// bytes and more are left.
type cappedBody struct {
	r           io.Reader
	body        io.Closer
	left, limit int64
	what        string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := io.ReadFull(b.r, one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("%s: the answer is larger than %d bytes (unzipped), the most the reader takes: refused (an answer this large is an endpoint that is not Nomad, a proxy altering it, or a node holding an unusual number of allocations with large jobs)", b.what, b.limit)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.body.Close() }

// cutAt keeps body's first n bytes, and the rest of any secret that starts
// before n (so that the secret is whole, and redacted, not cut into a part
// the redaction cannot recognise).
func cutAt(body []byte, n int, secrets []string) []byte {
	if len(body) <= n {
		return body
	}
	cut := n
	for _, s := range secrets {
		for from := max(0, n-len(s)+1); from < n; {
			i := bytes.Index(body[from:min(len(body), n+len(s)-1)], []byte(s))
			if i < 0 {
				break
			}
			cut = max(cut, from+i+len(s))
			from += i + 1
		}
	}
	return body[:cut]
}

// stateReads are the paths of Nomad's reads of its state that this
// project makes (jobs, their allocations, scale status and deployments;
// nodes and their allocations) and their kin: Nomad's handlers for those
// reads set the read's query meta (X-Nomad-Index) before they answer, a
// 404 for a job, node, allocation or deployment it does not have included
// (some endpoints under these paths do not, such as an allocation's
// checks: this project reads none of them). Other
// endpoints (the agent's /v1/agent/self, /v1/status, the client
// endpoints) send no index, and writes answer their errors from an RPC
// error, without it.
var stateReads = []string{"/v1/job/", "/v1/jobs", "/v1/node/", "/v1/nodes", "/v1/allocation/", "/v1/allocations",
	"/v1/deployment/", "/v1/deployments", "/v1/evaluation/", "/v1/evaluations"}

// stateRead says whether req is a read of Nomad's state (see stateReads).
func stateRead(req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	for _, p := range stateReads {
		if req.URL.Path == strings.TrimSuffix(p, "/") || strings.HasPrefix(req.URL.Path, p) {
			return true
		}
	}
	return false
}

// ErrNotNomad: an answer to a read of Nomad's state (200 or 404) without
// Nomad's X-Nomad-Index header. A wrong address that reaches another HTTP
// server (a web page, a login page, another API, a path a proxy does not
// forward) would otherwise read as a missing job, as no node, or as a JSON
// error; the transport refuses it instead.
var ErrNotNomad = errors.New("the address may not be Nomad's HTTP API (another server, or a path a proxy does not forward): " +
	"Nomad sends an X-Nomad-Index header with every answer to a read of its state")

// notNomad is ErrNotNomad for an answer: its request, status, content
// type and first bytes (secrets redacted before the text is cut, folded
// and quoted, as for an error answer), and the address's path when it has
// one (Nomad's API client drops it: a proxy serving Nomad under a prefix
// is asked for /v1/... at its root). It closes the answer's body.
func (t *redactingTransport) notNomad(req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	const most = 80
	text := "(compressed)"
	if !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, int64(most+1+t.conn.longest)))
		cut := cutAt(head, most, t.conn.secrets)
		text = strings.Join(strings.Fields(strings.ToValidUTF8(t.conn.RedactString(string(cut)), "")), " ")
		if len(head) > len(cut) {
			text += "..."
		}
	}
	kind := resp.Header.Get("Content-Type")
	if kind == "" {
		kind = "no content type"
	}
	err := fmt.Errorf("%w: GET %s answered %d (%s: %q) without it", ErrNotNomad, req.URL.Path, resp.StatusCode, kind, text)
	if u, perr := url.Parse(t.conn.address); perr == nil && u.Scheme != "unix" && strings.Trim(u.Path, "/") != "" {
		err = fmt.Errorf("%w; the address's path (%s) is not used: Nomad's API client sends its requests to /v1/... at the host, so Nomad must answer at the root of the address", err, u.Path)
	}
	return err
}

// IsStatus reports whether err is a Nomad API answer with this HTTP status.
func IsStatus(err error, code int) bool {
	var ue api.UnexpectedResponseError
	return errors.As(err, &ue) && ue.HasStatusCode() && ue.StatusCode() == code
}

// TakeEnv removes every NOMAD_* variable from the process environment and
// returns them. Tests against the stand-in call it first, so a developer's
// NOMAD_TOKEN or NOMAD_NAMESPACE never reaches the stand-in; a test that
// runs against a real cluster (when NOMAD_ADDR was set) uses what it returns.
func TakeEnv() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "NOMAD_") {
			env[k] = v
			os.Unsetenv(k)
		}
	}
	return env
}

// MapEnv is a Getenv over a map (tests, and the agent's plugin config).
func MapEnv(m map[string]string) Getenv {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}
