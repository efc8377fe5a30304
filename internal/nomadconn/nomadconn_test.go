package nomadconn

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	TakeEnv()
	os.Exit(m.Run())
}

func TestConfig(t *testing.T) {
	yes := true
	t.Setenv("NOMAD_ADDR", "http://env:4646")
	t.Setenv("NOMAD_NAMESPACE", "envns")
	t.Setenv("NOMAD_TOKEN", "envtok")
	for _, tc := range []struct {
		name                string
		s                   Settings
		addr, ns, tok, user string
		insecure            bool
		wait                time.Duration
	}{
		{name: "env fallbacks", addr: "http://env:4646", ns: "envns", tok: "envtok"},
		{name: "explicit wins", s: Settings{Address: "https://x:1", Namespace: "n", Token: "t", HTTPAuth: "u:p", SkipVerify: &yes, BlockWait: time.Second},
			addr: "https://x:1", ns: "n", tok: "t", user: "u", insecure: true, wait: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config(tc.s)
			if c.Address != tc.addr || c.Namespace != tc.ns || c.SecretID != tc.tok || c.TLSConfig.Insecure != tc.insecure {
				t.Errorf("config %+v", c)
			}
			if tc.user != "" && (c.HttpAuth == nil || c.HttpAuth.Username != tc.user) {
				t.Errorf("http auth %+v", c.HttpAuth)
			}
			if tc.wait != 0 && c.WaitTime != tc.wait {
				t.Errorf("wait %s", c.WaitTime)
			}
		})
	}
}

var errBase = errors.New("base")

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		token string
		want  string
	}{
		{"nil", nil, "tok", ""},
		{"no token", fmt.Errorf("x tok: %w", errBase), "", "x tok: base"},
		{"absent", fmt.Errorf("x: %w", errBase), "tok", "x: base"},
		{"twice", fmt.Errorf("tok x tok: %w", errBase), "tok", "<redacted> x <redacted>: base"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Redact(tc.err, tc.token)
			if got == nil {
				if tc.want != "" {
					t.Fatalf("nil, want %q", tc.want)
				}
				return
			}
			if got.Error() != tc.want {
				t.Errorf("%q, want %q", got.Error(), tc.want)
			}
			if !errors.Is(got, errBase) {
				t.Errorf("errors.Is lost the wrapped error")
			}
		})
	}
}

func TestRedactString(t *testing.T) {
	tests := []struct{ in, token, want string }{
		{"token abc in abc", "abc", "token " + Redacted + " in " + Redacted},
		{"nothing", "", "nothing"},
		{"no match", "abc", "no match"},
	}
	for _, tc := range tests {
		if got := RedactString(tc.in, tc.token); got != tc.want {
			t.Errorf("RedactString(%q, %q) = %q, want %q", tc.in, tc.token, got, tc.want)
		}
	}
}
