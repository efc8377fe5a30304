package nomadplugin

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/hashicorp/go-hclog"
)

// TestSetConfig: both plugins connect through nomadconn from the agent's
// nomad_* keys, NOMAD_* in the plugin's environment filling what the agent
// does not pass; their own keys are typed; unknown keys are refused.
func TestSetConfig(t *testing.T) {
	w := newWorld(t, 1, 1)
	const token = "tok-setconfig-0123456789"
	w.s.RequireToken(token, nomadstandin.TokenPolicy{Write: true})
	type plugin struct {
		name string
		set  func(map[string]string) error
		call func() error
	}
	st, tg := NewStrategy(nil), NewTarget(nil)
	plugins := []plugin{
		{"strategy", st.SetConfig, func() error {
			ev, err := st.Run(newEval("setconfig", splitConfig()), 2)
			if err == nil && strings.HasPrefix(ev.Action.Reason, "no scaling") {
				err = errors.New(ev.Action.Reason)
			}
			return err
		}},
		{"target", tg.SetConfig, func() error { _, err := tg.Status(tcfg); return err }},
	}
	for _, p := range plugins {
		t.Run(p.name, func(t *testing.T) {
			cases := []struct {
				name    string
				cfg     map[string]string
				env     map[string]string
				wantErr string // from SetConfig
				callErr string // from the call ("" = it works)
			}{
				{name: "the agent's address and token", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), AgentKeyNomadToken: token}},
				{name: "the token from NOMAD_TOKEN", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL()}, env: map[string]string{"NOMAD_TOKEN": token}},
				{name: "the address from NOMAD_ADDR", cfg: map[string]string{AgentKeyNomadToken: token}, env: map[string]string{"NOMAD_ADDR": w.s.URL()}},
				{name: "no token: refused by Nomad", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL()}, callErr: "403"},
				{name: "bad skip-verify", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), AgentKeyNomadSkipVerify: "perhaps"}, wantErr: AgentKeyNomadSkipVerify},
				{name: "bad block-query wait", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), AgentKeyNomadBlockWait: "soon"}, wantErr: AgentKeyNomadBlockWait},
				{name: "bad ignore_env_vars", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), PluginKeyIgnoreEnvVars: "sometimes"}, wantErr: PluginKeyIgnoreEnvVars},
				{name: "a header without a name", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), PluginKeyHeaderPrefix: "x"}, wantErr: PluginKeyHeaderPrefix},
				{name: "ignore_env_vars: NOMAD_TOKEN is not read", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), PluginKeyIgnoreEnvVars: "true"},
					env: map[string]string{"NOMAD_TOKEN": token}, callErr: "403"},
				{name: "bad request timeout", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), PluginKeyRequestTimeout: "soon"}, wantErr: PluginKeyRequestTimeout},
				{name: "unknown plugin key", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), "request_timout": "1s"}, wantErr: `config "request_timout": unknown plugin config key: did you mean "request_timeout"?`},
				{name: "bad address", cfg: map[string]string{AgentKeyNomadAddress: "ftp://nomad"}, wantErr: "scheme"},
				// A misspelt agent setting: the SDK ignored it without a word.
				{name: "_ for - in an agent setting", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), "nomad_ca_path": "/etc/nomad/ca"}, wantErr: `config "nomad_ca_path": is no agent setting: did you mean "nomad_ca-path"?`},
				{name: "three _ for -", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), "nomad_block_query_wait_time": "5m"}, wantErr: `did you mean "nomad_block-query-wait-time"?`},
				{name: "a letter doubled", cfg: map[string]string{"nomad_addresss": w.s.URL()}, wantErr: `config "nomad_addresss": is no agent setting: did you mean "nomad_address"?`},
				// Further than two edits: the names of Nomad's environment
				// and of terraform-provider-nomad.
				{name: "NOMAD_ADDR's name", cfg: map[string]string{"nomad_addr": w.s.URL()}, wantErr: `config "nomad_addr": is no agent setting: did you mean "nomad_address"?`},
				{name: "the Nomad provider's name", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), "nomad_secret_id": token}, wantErr: `did you mean "nomad_token"?`},
				{name: "tls_skip_verify", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), "nomad_tls_skip_verify": "true"}, wantErr: `did you mean "nomad_skip-verify"?`},
				{name: "in capitals", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), "NOMAD_TOKEN": token}, wantErr: `config "NOMAD_TOKEN": unknown plugin config key: did you mean the agent setting "nomad_token"?`},
				{name: "the agent's inherit switch", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), AgentKeyNomadToken: token, "nomad_config_inherit": "false"}},
				// Far from every agent setting (a later agent's?): logged, not refused.
				{name: "another nomad_ key", cfg: map[string]string{AgentKeyNomadAddress: w.s.URL(), AgentKeyNomadToken: token, "nomad_telemetry_prefix": "x"}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					for k, v := range tc.env {
						t.Setenv(k, v)
					}
					err := p.set(tc.cfg)
					if tc.wantErr != "" {
						if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
							t.Fatalf("SetConfig: %v, want an error naming %q", err, tc.wantErr)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					err = p.call()
					switch {
					case tc.callErr == "" && err != nil:
						t.Fatalf("call: %v", err)
					case tc.callErr != "" && (err == nil || !strings.Contains(err.Error(), tc.callErr)):
						t.Fatalf("call: %v, want %q", err, tc.callErr)
					}
					if err != nil && strings.Contains(err.Error(), token) {
						t.Errorf("the error shows the token: %v", err)
					}
				})
			}
		})
	}
}

// TestRequestTimeout: request_timeout bounds each request to Nomad.
func TestRequestTimeout(t *testing.T) {
	w := newWorld(t, 1, 1)
	w.s.InjectFault(nomadstandin.Fault{Method: http.MethodGet, Path: "/v1/job/" + wJob + "/scale", Delay: 5 * time.Second})
	tg := w.target(t, PluginKeyRequestTimeout, "300ms")
	start := time.Now()
	_, err := tg.Status(tcfg)
	if el := time.Since(start); err == nil || el > 3*time.Second {
		t.Fatalf("status against a 5 s answer with request_timeout 300ms: %v after %s", err, el)
	}
	if !strings.Contains(err.Error(), "read scale status") || !strings.Contains(err.Error(), "one request ran past its "+PluginKeyRequestTimeout) {
		t.Errorf("the error does not say which call timed out and which key bounds it: %v", err)
	}
}

// TestPluginHeaders (issue 11.3 parity): a plugin's header.<name> keys are
// sent with every request to Nomad, and their values are redacted like the
// token when Nomad (or a proxy) echoes them.
func TestPluginHeaders(t *testing.T) {
	const secret = "proxy-secret-0123456789"
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Proxy-Auth"))
		mu.Unlock()
		http.Error(w, "proxy refused X-Proxy-Auth: "+r.Header.Get("X-Proxy-Auth"), http.StatusBadGateway)
	}))
	defer srv.Close()
	cfg := map[string]string{AgentKeyNomadAddress: srv.URL, PluginKeyHeaderPrefix + "X-Proxy-Auth": secret}
	tg := targetAt(t, cfg)
	_, statusErr := tg.Status(tcfg)
	st := NewStrategy(nil)
	must(t, st.SetConfig(cfg))
	ev, err := st.Run(newEval("headers", splitConfig()), 2)
	must(t, err)
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("%d requests reached the server, want the target's and the strategy's", len(got))
	}
	for _, h := range got {
		if h != secret {
			t.Errorf("a request came with X-Proxy-Auth %q, want the configured value", h)
		}
	}
	for what, text := range map[string]string{"status error": fmt.Sprint(statusErr), "reason": ev.Action.Reason} {
		if !strings.Contains(text, "proxy refused X-Proxy-Auth: "+nomadconn.Redacted) || strings.Contains(text, secret) {
			t.Errorf("the %s does not quote the answer with the header's value redacted: %s", what, text)
		}
	}
}

// TestPluginIgnoreEnvVars (issue 11.3 parity): with ignore_env_vars the
// plugin's NOMAD_NAMESPACE (which a plugin run inside a Nomad allocation
// inherits) is not read.
func TestPluginIgnoreEnvVars(t *testing.T) {
	w := newWorld(t, 3, 2)
	t.Setenv("NOMAD_NAMESPACE", "the-allocations-own")
	if st, err := w.target(t).Status(tcfg); st != nil || !errors.Is(err, ErrJobNotFound) || !strings.Contains(err.Error(), `"the-allocations-own"`) {
		t.Fatalf("the premise fails: with NOMAD_NAMESPACE read, status %+v, %v; want no job there", st, err)
	}
	st, err := w.target(t, PluginKeyIgnoreEnvVars, "true").Status(tcfg)
	if err != nil || st == nil || st.Count != 5 {
		t.Errorf("with ignore_env_vars: status %+v, %v; want the job in the default namespace", st, err)
	}
}

// TestSetConfigAgainClosesIdleConnections: an agent reload configures a
// plugin again; the connection it replaces closes its idle keep-alive
// connections then, instead of holding them until they time out (90 s).
func TestSetConfigAgainClosesIdleConnections(t *testing.T) {
	st, tg := NewStrategy(nil), NewTarget(nil)
	for _, p := range []struct {
		name string
		set  func(map[string]string) error
		conn func() *nomadconn.Conn
	}{
		{"strategy", st.SetConfig, func() *nomadconn.Conn { st.mu.Lock(); defer st.mu.Unlock(); return st.conn }},
		{"target", tg.SetConfig, func() *nomadconn.Conn { tg.mu.Lock(); defer tg.mu.Unlock(); return tg.conn }},
	} {
		t.Run(p.name, func(t *testing.T) {
			closed := make(chan struct{}, 16)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{}`)
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateClosed {
					closed <- struct{}{}
				}
			}
			srv.Start()
			defer srv.Close()
			cfg := map[string]string{AgentKeyNomadAddress: srv.URL, PluginKeyIgnoreEnvVars: "true"}
			must(t, p.set(cfg))
			if _, err := p.conn().Client().Agent().Self(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-closed:
				t.Fatal("the connection closed before any reload")
			case <-time.After(200 * time.Millisecond):
			}
			must(t, p.set(cfg))
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				t.Fatal("configured again, the old connection's idle keep-alive connection is still open after 5 s")
			}
		})
	}
}

// TestSetConfigLogsUnreadSettings: a nomad_* key far from every agent
// setting is named in a warning at SetConfig, by both plugins, and the
// warning carries no value (a token misplaced under it stays out of the
// log).
func TestSetConfigLogsUnreadSettings(t *testing.T) {
	w := newWorld(t, 1, 1)
	const secret = "tok-unread-0123456789"
	for _, name := range []string{"strategy", "target"} {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs})
			set := NewStrategy(logger).SetConfig
			if name == "target" {
				set = NewTarget(logger).SetConfig
			}
			cfg := map[string]string{AgentKeyNomadAddress: w.s.URL(), "nomad_telemetry_prefix": secret, "nomad_zz_later": "1"}
			if err := set(cfg); err != nil {
				t.Fatal(err)
			}
			out := logs.String()
			if !strings.Contains(out, "[WARN]") || !strings.Contains(out, "no agent setting the plugin reads; ignored") || !strings.Contains(out, `keys=["nomad_telemetry_prefix", "nomad_zz_later"]`) {
				t.Fatalf("no warning naming both keys:\n%s", out)
			}
			if strings.Contains(out, secret) {
				t.Fatalf("the warning shows a value:\n%s", out)
			}
			logs.Reset()
			if err := set(map[string]string{AgentKeyNomadAddress: w.s.URL()}); err != nil || strings.Contains(logs.String(), "ignored") {
				t.Fatalf("SetConfig without such a key: %v, logs:\n%s", err, logs.String())
			}
		})
	}
}

// TestSetConfigWarnsOfTwoCAs: nomad_ca-cert beside nomad_ca-path (which
// the agent makes of its own NOMAD_CACERT and a plugin block's
// nomad_ca-path) uses the file, not the directory: both plugins say so at
// SetConfig; the directory alone, or the file alone, gets no warning.
func TestSetConfigWarnsOfTwoCAs(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  map[string]string
		warn bool
	}{
		{"both", map[string]string{"nomad_ca-cert": caFile, "nomad_ca-path": dir}, true},
		{"the directory alone", map[string]string{"nomad_ca-path": dir}, false},
		{"the file alone", map[string]string{"nomad_ca-cert": caFile}, false},
	} {
		for _, plugin := range []string{"strategy", "target"} {
			t.Run(c.name+"/"+plugin, func(t *testing.T) {
				var logs bytes.Buffer
				logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs})
				set := NewStrategy(logger).SetConfig
				if plugin == "target" {
					set = NewTarget(logger).SetConfig
				}
				cfg := map[string]string{AgentKeyNomadAddress: srv.URL, PluginKeyIgnoreEnvVars: "true"}
				for k, v := range c.cfg {
					cfg[k] = v
				}
				if err := set(cfg); err != nil {
					t.Fatal(err)
				}
				got := strings.Contains(logs.String(), "nomad_ca-cert and nomad_ca-path are both set: the CA file is used and the directory is not")
				if got != c.warn || c.warn && !strings.Contains(logs.String(), "ca_cert="+caFile) {
					t.Fatalf("warned %v, want %v:\n%s", got, c.warn, logs.String())
				}
			})
		}
	}
}
