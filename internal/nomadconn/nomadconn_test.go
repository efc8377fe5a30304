package nomadconn

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func TestMain(m *testing.M) {
	TakeEnv()
	os.Exit(m.Run())
}

// Every NOMAD_* variable the Nomad CLI reads fills its setting when the
// setting is empty; an explicit setting wins; IgnoreEnv reads none.
func TestResolveEnvironment(t *testing.T) {
	env := map[string]string{
		EnvAddress: "https://env:4646", EnvRegion: "env-region", EnvNamespace: "env-ns", EnvToken: "env-token",
		EnvHTTPAuth: "envuser:envpass", EnvCACert: "/env/ca.pem", EnvCAPath: "/env/cas", EnvClientCert: "/env/cert.pem",
		EnvClientKey: "/env/key.pem", EnvTLSServerName: "env.example", EnvSkipVerify: "true",
	}
	get := func(s Settings) Settings {
		t.Helper()
		r, err := s.Resolve(MapEnv(env))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := get(Settings{})
	checks := []struct{ name, got, want string }{
		{EnvAddress, r.Address, env[EnvAddress]}, {EnvRegion, r.Region, env[EnvRegion]},
		{EnvNamespace, r.Namespace, env[EnvNamespace]}, {EnvToken, r.Token, env[EnvToken]},
		{EnvHTTPAuth, r.HTTPAuth, env[EnvHTTPAuth]}, {EnvCACert, r.CACert, env[EnvCACert]},
		{EnvCAPath, r.CAPath, env[EnvCAPath]}, {EnvClientCert, r.ClientCert, env[EnvClientCert]},
		{EnvClientKey, r.ClientKey, env[EnvClientKey]}, {EnvTLSServerName, r.TLSServerName, env[EnvTLSServerName]},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	if r.SkipVerify == nil || !*r.SkipVerify {
		t.Errorf("%s: not applied", EnvSkipVerify)
	}
	if len(checks)+1 != len(EnvVars) {
		t.Fatalf("the test checks %d variables, EnvVars lists %d", len(checks)+1, len(EnvVars))
	}
	no := false
	explicit := get(Settings{Address: "http://set:1", Namespace: "set-ns", Token: "set-token", SkipVerify: &no, CACertPEM: "-----BEGIN CERT"})
	if explicit.Address != "http://set:1" || explicit.Namespace != "set-ns" || explicit.Token != "set-token" || *explicit.SkipVerify || explicit.CACert != "" || explicit.CAPath != "" {
		t.Errorf("explicit settings lost: %+v", explicit)
	}
	// A CA configured in any form takes none from the environment: the
	// environment's file would otherwise be the CA trusted (a file wins).
	for _, s := range []Settings{{CAPath: "/set/cas"}, {CACert: "/set/ca.pem"}, {CACertPEM: "-----BEGIN CERT"}} {
		r := get(s)
		if r.CACert != s.CACert || r.CAPath != s.CAPath || r.CACertPEM != s.CACertPEM {
			t.Errorf("CA configured as %+v resolved to file %q, directory %q, PEM %q", s, r.CACert, r.CAPath, r.CACertPEM)
		}
	}
	ignored := get(Settings{IgnoreEnv: true})
	if ignored.Address != DefaultAddress || ignored.Namespace != "" || ignored.Token != "" || ignored.SkipVerify != nil {
		t.Errorf("IgnoreEnv read the environment: %+v", ignored)
	}
}

func TestResolveRefusesBadSettings(t *testing.T) {
	tests := []struct {
		name    string
		s       Settings
		env     map[string]string
		setting string
	}{
		{"bad skip verify", Settings{}, map[string]string{EnvSkipVerify: "maybe"}, EnvSkipVerify},
		{"ftp address", Settings{Address: "ftp://x"}, nil, "address"},
		{"no host", Settings{Address: "http://"}, nil, "address"},
		{"cert without key", Settings{ClientCert: "/c.pem"}, nil, "client certificate"},
		{"bad header", Settings{Headers: map[string]string{"X Bad": "v"}}, nil, "headers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.s.Resolve(MapEnv(tc.env))
			var se *SettingsError
			if !errors.As(err, &se) || se.Setting != tc.setting {
				t.Fatalf("%v, want a settings error on %s", err, tc.setting)
			}
		})
	}
}

// A header Go's HTTP client would refuse at every request is refused by
// name, every one at once, and a header's value is never shown.
func TestCheckHeader(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        string // "" for accepted
	}{
		{"X-Proxy-Token", "s3cr3t", ""},
		{"x_a.b~!#$%&'*+^`|", "a\tb", ""},
		{"", "v", `"" is not a valid header name`},
		{"X Bad", "v", `"X Bad" is not a valid header name: ' ' is not allowed`},
		{"X:Y", "v", `"X:Y" is not a valid header name: ':'`},
		{"Ä", "v", `"Ä" is not a valid header name`},
		{"X-Token", "s3cr3t\n", `the value of header "X-Token" holds a control character`},
		{"X-Token", "s3cr3t\x7f", `the value of header "X-Token" holds a control character`},
	} {
		err := CheckHeader(tc.name, tc.value)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %q refused: %v", tc.name, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %q: error %v, want one holding %s", tc.name, tc.value, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "s3cr3t"):
			t.Errorf("%q: the error shows the value: %v", tc.name, err)
		}
	}
	_, err := Settings{Headers: map[string]string{"X Bad": "v", "": "v", "X-Ok": "v", "X-Token": "s3cr3t\r\n"}}.Resolve(MapEnv(nil))
	want := `headers: "" is not a valid header name; "X Bad" is not a valid header name: ' ' is not allowed in one (letters, digits and !#$%&'*+-.^_` + "`|~ are); " +
		`the value of header "X-Token" holds a control character (a newline?), which no request can carry`
	var se *SettingsError
	if !errors.As(err, &se) || se.Setting != "headers" || !strings.Contains(err.Error(), want) {
		t.Errorf("Resolve: %v, want every bad header, sorted: %s", err, want)
	}
}

// Secrets never come out of the connection: Nomad (or a proxy) echoing the
// token, the basic-auth password, a header value, or their URL-encoded
// forms in an error answer is redacted before any caller sees it.
func TestSecretsAreRedactedAtTheBoundary(t *testing.T) {
	const token, pass, header = "s3cr3t-token/with+chars", "hunter2!", "proxy-key-123"
	var sawAuth, sawHeader bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, p, _ := r.BasicAuth()
		sawAuth = p == pass
		sawHeader = r.Header.Get("X-Proxy-Key") == header
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "denied %s %s %s %s %s", r.Header.Get("X-Nomad-Token"), url.QueryEscape(token), p, header, r.URL.String())
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword("user", pass)
	c, err := New(Settings{Address: u.String(), Token: token, Headers: map[string]string{"X-Proxy-Key": header}}, MapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Client().Nodes().List(nil)
	if err == nil {
		t.Fatal("no error from a 500")
	}
	if !sawAuth || !sawHeader {
		t.Fatalf("the request did not carry the basic auth (%v) or the header (%v)", sawAuth, sawHeader)
	}
	for _, secret := range []string{token, url.QueryEscape(token), pass, header} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error holds the secret %q: %v", secret, err)
		}
	}
	if !strings.Contains(err.Error(), Redacted) || !IsStatus(err, http.StatusInternalServerError) {
		t.Fatalf("error %v: want the redacted text and the status", err)
	}
	if strings.Contains(c.Address(), pass) || !strings.HasPrefix(c.Address(), "http://127.0.0.1") {
		t.Fatalf("address %q", c.Address())
	}
	if got := c.Redact(fmt.Errorf("wrapped: %w", api.UnexpectedResponseError{})); got == nil {
		t.Fatal("Redact dropped an error")
	}
}

// A secret too short to redact inside words (three bytes) is redacted
// wherever it stands alone, as an echoed header or query value does, and
// the words that merely hold it are left as they are.
func TestShortSecretsAreRedactedAlone(t *testing.T) {
	c, err := New(Settings{Address: "http://127.0.0.1:1", Token: "ab1"}, MapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"token ab1 refused", "token " + Redacted + " refused"},
		{"X-Nomad-Token: ab1", "X-Nomad-Token: " + Redacted},
		{"?token=ab1&x=ab1", "?token=" + Redacted + "&x=" + Redacted},
		{"ab1", Redacted},
		{"tab1e and ab12 stay", "tab1e and ab12 stay"},
		{"ab1ab1 and xab1 stay", "ab1ab1 and xab1 stay"},
		{"ab1 ab1", Redacted + " " + Redacted},
		{"nothing here", "nothing here"},
	} {
		if got := c.RedactString(tc.in); got != tc.want {
			t.Errorf("RedactString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A short header value is no credential: text and meta keys that hold
	// it as a word ("1", "min") are left alone.
	h, err := New(Settings{Address: "http://127.0.0.1:1", Headers: map[string]string{"X-Env": "1", "X-Plan": "min"}}, MapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"HTTP/1.1 500: 1 of 2 allocations", "activation.first.min"} {
		if got := h.RedactString(text); got != text {
			t.Errorf("short header values: RedactString(%q) = %q", text, got)
		}
	}
}

func TestRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := New(Settings{Address: srv.URL, RequestTimeout: 100 * time.Millisecond}, MapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = c.Client().Nodes().List(nil)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("a hung server: %v after %s", err, time.Since(start))
	}
}

func TestRedactURL(t *testing.T) {
	if got := RedactURL("https://u:p4ss@nomad:4646/x"); strings.Contains(got, "p4ss") || strings.Contains(got, "u@") {
		t.Fatalf("RedactURL kept user information: %q", got)
	}
	if got := RedactURL("http://nomad:4646"); got != "http://nomad:4646" {
		t.Fatalf("RedactURL changed a plain address: %q", got)
	}
}

// CheckAddress accepts what the Nomad API client reaches and names what is
// wrong otherwise, never quoting a password: not even one the parser reads
// as a port or a path ("/" in a password).
func TestCheckAddress(t *testing.T) {
	for _, tc := range []struct {
		addr, want string // want "": accepted
	}{
		{"http://nomad:4646", ""},
		{"https://ops:pw@nomad.example:4646", ""},
		{"unix:///var/run/nomad.sock", ""},
		{"https://ops:s3cr3t/pw@nomad:4646", `"https://<redacted>@nomad:4646" is not a URL`},
		{"http://ops:1234/xy@nomad:4646", `"http://<redacted>@nomad:4646" has an "@" after its host`},
		{"http://nomad:4646/x?to=ops@example", `"http://<redacted>@example" has an "@" after its host`},
		{"ftp://ops:hunter2@nomad:4646", `"ftp://nomad:4646" has scheme "ftp"`},
		{"http://", `"http://" has no host`},
		{"unix://", `"unix://" has no socket path`},
		{"nomad:4646", `"nomad:4646" has no scheme: write http://nomad:4646`},
		{"127.0.0.1:4646", `"127.0.0.1:4646" has no scheme: write http://127.0.0.1:4646`},
		{"ops:hunter2@nomad:4646", `"<redacted>@nomad:4646" has no scheme`},
		{"", `"" is empty: give the Nomad API's URL`},
		{" ", `" " is empty`},
		{"unix:/var/run/nomad.sock", ""},
		{"UNIX:/var/run/nomad.sock", ""},
		{"HTTP://nomad:4646", ""},
		{"http://[::1]:4646", ""},
		{"http:nomad:4646", `"http:nomad:4646" has no host`},
		{"http://nomad:4646\n", `"http://nomad:4646\n" has spaces or line breaks around it`},
		{" http://nomad:4646", `has spaces or line breaks around it`},
		{"not a url", `"not a url" holds a space or a line break: a URL has none`}, // (it suggested http://not a url)
		{"http://nomad :4646", `holds a space or a line break`},
		{"http://nomad:4646/", ""},
		{"https://gw.example/nomad", ""}, // the API client drops the path: an answer there without Nomad's headers says so
	} {
		err := CheckAddress(tc.addr)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckAddress(%q): %v", tc.addr, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckAddress(%q): %v; want %s", tc.addr, err, tc.want)
		case err != nil && (strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "1234/xy") || strings.Contains(err.Error(), "hunter2")):
			t.Errorf("CheckAddress(%q) shows the password: %v", tc.addr, err)
		}
		if got := RedactURL(tc.addr); strings.Contains(got, "s3cr3t") || strings.Contains(got, "1234/xy") || strings.Contains(got, "hunter2") {
			t.Errorf("RedactURL(%q) = %q", tc.addr, got)
		}
	}
}

// An address that does not parse never shows its password, in errors or
// when printed.
func TestUnparseableAddressKeepsItsPassword(t *testing.T) {
	for _, addr := range []string{"https://ops:s3cretpw@host:46x6", "https://ops:s3cr et@host:4646", "http://ops:p%zzw@host:4646"} {
		if got := RedactURL(addr); strings.Contains(got, "s3cr") || strings.Contains(got, "p%zzw") {
			t.Errorf("RedactURL(%q) = %q", addr, got)
		}
		_, err := New(Settings{Address: addr}, MapEnv(nil))
		if err == nil {
			continue
		}
		if strings.Contains(err.Error(), "s3cr") || strings.Contains(err.Error(), "p%zzw") {
			t.Errorf("error for %q holds the password: %v", addr, err)
		}
	}
}

// The forms an error answer can take that the redaction once missed: a
// gzip body (the client asks for gzip and unzips after the transport), an
// answer that is not an error status but not 200 either (the client makes
// an error of it, body included), the Basic form of the address's user
// information, a bare http_auth user name, and a secret straddling the cut
// at maxErrorBody.
func TestSecretsAreRedactedInEveryAnswerForm(t *testing.T) {
	const token, pass, bare = "3f1c2a9e-0000-4bad-beef-123456789abc", "s3cretpass", "bare-user-credential"
	basic := base64.StdEncoding.EncodeToString([]byte("ops:" + pass))
	echo := func(r *http.Request) string {
		return fmt.Sprintf("token %s auth %s", r.Header.Get("X-Nomad-Token"), r.Header.Get("Authorization"))
	}
	cases := []struct {
		name     string
		handler  func(w http.ResponseWriter, r *http.Request)
		settings func(addr string) Settings
		secrets  []string
	}{
		{"a gzip 403", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(http.StatusForbidden)
			zw := gzip.NewWriter(w)
			fmt.Fprint(zw, echo(r))
			zw.Close()
		}, func(addr string) Settings { return Settings{Address: addr, Token: token} }, []string{token}},
		{"a 202", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, echo(r))
		}, func(addr string) Settings { return Settings{Address: addr, Token: token} }, []string{token}},
		{"a 300 without a location", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusMultipleChoices)
			fmt.Fprint(w, echo(r))
		}, func(addr string) Settings { return Settings{Address: addr, Token: token} }, []string{token}},
		{"the address's user information as Basic", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, echo(r))
		}, func(addr string) Settings {
			return Settings{Address: strings.Replace(addr, "http://", "http://ops:"+pass+"@", 1)}
		}, []string{pass, basic}},
		{"a bare http_auth user name", func(w http.ResponseWriter, r *http.Request) {
			u, _, _ := r.BasicAuth()
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, "user "+u+" "+echo(r))
		}, func(addr string) Settings { return Settings{Address: addr, HTTPAuth: bare} }, []string{bare, base64.StdEncoding.EncodeToString([]byte(bare + ":"))}},
		{"an address with a user and no password", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, echo(r))
		}, func(addr string) Settings {
			return Settings{Address: strings.Replace(addr, "http://", "http://"+bare+"@", 1)}
		}, []string{base64.StdEncoding.EncodeToString([]byte(bare + ":"))}},
		{"a secret across the cut", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, strings.Repeat("x", maxErrorBody-20)+r.Header.Get("X-Nomad-Token")+" and more")
		}, func(addr string) Settings { return Settings{Address: addr, Token: token} }, []string{token, token[:20]}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(tc.handler))
			defer srv.Close()
			c, err := New(tc.settings(srv.URL), MapEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = c.Client().Nodes().List(nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tc.secrets {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("the error holds %q: %.300s", s, err)
				}
			}
			if !strings.Contains(err.Error(), Redacted) {
				t.Fatalf("the error shows no redaction: %.300s", err)
			}
		})
	}
}

// No redirect is followed: Go's client would carry X-Nomad-Token and the
// configured headers to another host.
func TestRedirectsAreNotFollowed(t *testing.T) {
	const token, header = "3f1c2a9e-0000-4bad-beef-123456789abc", "proxy-secret-value"
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = append(leaked, r.Header.Get("X-Nomad-Token")+"|"+r.Header.Get("X-Proxy-Auth"))
		fmt.Fprint(w, "[]")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c, err := New(Settings{Address: srv.URL, Token: token, Headers: map[string]string{"X-Proxy-Auth": header}}, MapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Client().Nodes().List(nil)
	if err == nil || !IsStatus(err, http.StatusTemporaryRedirect) {
		t.Fatalf("a redirect: %v, want the 307 as an error", err)
	}
	if len(leaked) > 0 {
		t.Fatalf("the redirect was followed, carrying %q", leaked)
	}
	if !strings.Contains(err.Error(), "redirected to "+other.URL+"/v1/nodes, which is not followed") {
		t.Errorf("the error does not say where the redirect pointed: %v", err)
	}
}

// An answer whose body cannot be read keeps its status (a stats read's 404
// must still read as one): an empty gzip body is empty, a truncated one is
// what was read and why the rest was not.
func TestUnreadableAnswerKeepsItsStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		body func(w http.ResponseWriter)
		want string
	}{
		{"an empty gzip body", func(http.ResponseWriter) {}, ""},
		{"a truncated gzip body", func(w http.ResponseWriter) {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			fmt.Fprint(zw, strings.Repeat("Unknown allocation ", 50))
			zw.Close()
			_, _ = w.Write(b.Bytes()[:b.Len()/2]) // the test reads what arrives
		}, "could not be read whole"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				w.WriteHeader(http.StatusNotFound)
				tc.body(w)
			}))
			defer srv.Close()
			c, err := New(Settings{Address: srv.URL, Token: "3f1c2a9e-0000-4bad-beef-123456789abc"}, MapEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			// (a client endpoint: Nomad's client answers "Unknown
			// allocation" there without index headers)
			_, err = c.Client().Allocations().Stats(&api.Allocation{ID: "a1", NodeID: "n1"}, nil)
			if !IsStatus(err, http.StatusNotFound) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want the 404 kept (and %q)", err, tc.want)
			}
		})
	}
}

// An answer to a read of Nomad's state (200, or 404 for a missing object)
// is Nomad's only with its index headers: another server's (a wrong
// address) is ErrNotNomad, naming the path and what came back, without the
// address's password. Writes and client endpoints answer their 404s
// without the headers, and keep them.
func TestStateReadsNeedNomadsHeaders(t *testing.T) {
	nomad := map[string]string{"X-Nomad-Index": "42", "X-Nomad-KnownLeader": "true"}
	for _, tc := range []struct {
		name    string
		status  int
		headers map[string]string
		body    string
		want    string // "" for an answer read as Nomad's
	}{
		{"Nomad's job not found", 404, nomad, "job not found", ""},
		{"Nomad's job", 200, nomad, `{"ID":"web"}`, ""},
		{"another server's 404", 404, nil, "404 page not found", `GET /v1/job/web answered 404 (text/plain; charset=utf-8: "404 page not found") without it`},
		{"a web page", 200, map[string]string{"Content-Type": "text/html"}, "<!DOCTYPE html>\n<html>\n<head><title>Welcome</title>" + strings.Repeat(" x", 200), `GET /v1/job/web answered 200 (text/html: "<!DOCTYPE html> <html> <head><title>Welcome</title> x x`},
		{"another API's JSON", 200, map[string]string{"Content-Type": "application/json"}, `{"hello":"world"}`, `answered 200 (application/json: "{\"hello\":\"world\"}") without it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.headers {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			u, _ := url.Parse(srv.URL)
			u.User = url.UserPassword("user", "s3cret-pass")
			c, err := New(Settings{Address: u.String()}, MapEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = c.Client().Jobs().Info("web", nil)
			switch {
			case tc.want == "" && errors.Is(err, ErrNotNomad):
				t.Errorf("Nomad's answer read as another server's: %v", err)
			case tc.want == "" && tc.status == 404 && !IsStatus(err, http.StatusNotFound):
				t.Errorf("Nomad's 404: %v; want it as Nomad answered it", err)
			case tc.want != "" && (!errors.Is(err, ErrNotNomad) || !strings.Contains(err.Error(), tc.want) || IsStatus(err, http.StatusNotFound)):
				t.Errorf("err = %v; want ErrNotNomad with %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret-pass") {
				t.Errorf("the address's password in %v", err)
			}
			if tc.headers != nil && tc.headers["X-Nomad-Index"] != "" {
				return
			}
			// Nomad answers a write's 404 and a client endpoint's from an
			// RPC error, without its headers: those keep their status.
			_, _, err = c.Client().Jobs().Scale("web", "g", nil, "", false, nil, nil)
			if tc.status == 404 && (!IsStatus(err, http.StatusNotFound) || errors.Is(err, ErrNotNomad)) {
				t.Errorf("a write's 404: %v; want it as Nomad answered it", err)
			}
			_, err = c.Client().Allocations().Stats(&api.Allocation{ID: "a1", NodeID: "n1"}, nil)
			if errors.Is(err, ErrNotNomad) {
				t.Errorf("a client endpoint's answer: %v; want it as Nomad answered it", err)
			}
		})
	}
}

// TestNotNomadRedacts: an answer without Nomad's headers that echoes a
// secret shows none of it, whether the secret crosses the cut of the
// answer's first bytes or holds a character the quoting escapes; and the
// address's path, which the API client drops, is named.
func TestNotNomadRedacts(t *testing.T) {
	const token = "3f1c2a9e-0000-4bad-beef-123456789abc"
	const password = `pa"ss\wo rd`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "%s%s and %s", strings.Repeat("x", 70), r.Header.Get("X-Nomad-Token"), password)
	}))
	defer srv.Close()
	c, err := New(Settings{Address: srv.URL + "/nomad", Token: token, HTTPAuth: "ops:" + password}, MapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Client().Nodes().List(nil)
	if !errors.Is(err, ErrNotNomad) {
		t.Fatalf("err = %v; want ErrNotNomad", err)
	}
	for _, secret := range []string{token[:8], "pa\\\"ss", "wo rd", strconv.Quote(password)} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("err shows %q: %v", secret, err)
		}
	}
	if !strings.Contains(err.Error(), "the address's path (/nomad) is not used") {
		t.Errorf("err = %v; want the address's path named", err)
	}
}

// TestTLSErrorsNamePart: a TLS setting that does not load is named by its
// part, the CA's or the client's certificate and key (it read "nomad tls:"
// whatever the part).
func TestTLSErrorsNamePart(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    Settings
		want string
	}{
		{"a CA file that is missing", Settings{Address: "https://nomad:4646", CACert: filepath.Join(dir, "missing.pem")}, "nomad TLS CA certificate: Error loading CA File"},
		{"a CA file that is not PEM", Settings{Address: "https://nomad:4646", CACert: notPEM}, "nomad TLS CA certificate: Error loading CA File: Couldn't parse PEM"},
		{"a client pair that does not load", Settings{Address: "https://nomad:4646", ClientCert: notPEM, ClientKey: notPEM}, "nomad TLS client certificate and key: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.s, func(string) (string, bool) { return "", false })
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want it to start %q", err, tc.want)
			}
		})
	}
}

// TestAnswersAreBounded: a successful answer is read up to the Conn's
// bound, unzipped: a larger one (a compressed answer that unzips to far
// more than it weighs, or a plain one) is an error naming the path and
// the bound, and nothing past it is decoded; one at the bound, zipped or
// not, is read whole; a body that says it is gzip and is not is named.
func TestAnswersAreBounded(t *testing.T) {
	const limit = 1 << 20
	nodes := func(nameLen int) []byte { // a node list whose JSON is 31+nameLen bytes
		return []byte(`[{"ID":"n1","Name":"` + strings.Repeat("a", nameLen) + `"}]`)
	}
	zip := func(b []byte) []byte {
		var out bytes.Buffer
		zw := gzip.NewWriter(&out)
		_, _ = zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	atLimit := limit - len(nodes(0))
	for _, tc := range []struct {
		name    string
		body    []byte
		gzipped bool
		want    string // "" for a node list read whole
	}{
		{"plain, at the bound", nodes(atLimit), false, ""},
		{"gzip, at the bound", zip(nodes(atLimit)), true, ""},
		{"plain, a byte past it", nodes(atLimit + 1), false, "GET /v1/nodes: the answer is larger than 1048576 bytes (unzipped)"},
		{"gzip, unzipping to 64 times the bound", zip(nodes(64 * limit)), true, "GET /v1/nodes: the answer is larger than 1048576 bytes (unzipped)"},
		{"not gzip", []byte("plain text"), true, "GET /v1/nodes: the answer says it is gzip-compressed and is not"},
		// An empty gzip body reads as the empty answer it is (the API
		// client's own message for it, not a failed unzip).
		{"an empty gzip body", nil, true, "Got 0 byte response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Nomad-Index", "7")
				if tc.gzipped {
					w.Header().Set("Content-Encoding", "GZIP") // compared without case, as the error path does
				}
				_, _ = w.Write(tc.body)
			}))
			defer srv.Close()
			c, err := New(Settings{Address: srv.URL}, MapEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			c.maxAnswer = limit
			got, _, err := c.Client().Nodes().List(nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "" && (len(got) != 1 || len(got[0].Name) != atLimit):
				t.Fatalf("read %d nodes, want the one, whole", len(got))
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// A body of exactly the bound read to its end is whole; a byte more
	// fails at the bound.
	for _, n := range []int{limit, limit + 1} {
		b := &cappedBody{r: strings.NewReader(strings.Repeat("x", n)), body: io.NopCloser(nil), left: limit, limit: limit, what: "GET /x"}
		got, err := io.ReadAll(b)
		if want := n == limit; (err == nil) != want || len(got) != limit {
			t.Errorf("a body of %d bytes under a bound of %d: read %d, err %v", n, limit, len(got), err)
		}
	}
	// The bound a Conn starts with.
	if c, err := New(Settings{Address: "http://127.0.0.1:4646"}, MapEnv(nil)); err != nil || c.maxAnswer != MaxAnswerBytes {
		t.Errorf("a new Conn's bound: %v %v", c, err)
	}
}
