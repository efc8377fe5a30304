// Package nomadconn builds Nomad API client settings from explicit values
// with NOMAD_* environment fallbacks, and keeps the token out of errors.
package nomadconn

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Settings are explicit connection settings; an empty field falls back to
// the NOMAD_* environment variable the Nomad CLI reads (api.DefaultConfig),
// then to Nomad's default.
type Settings struct {
	Address   string
	Region    string
	Namespace string
	Token     string
	// HTTPAuth is "user:password" for HTTP basic auth.
	HTTPAuth string
	// TLS files and options.
	CACert, CAPath        string
	ClientCert, ClientKey string
	TLSServerName         string
	// SkipVerify, when non-nil, overrides NOMAD_SKIP_VERIFY.
	SkipVerify *bool
	// BlockWait, when > 0, is the blocking query wait time.
	BlockWait time.Duration
}

// Config returns the api.Config for s: api.DefaultConfig (which reads
// NOMAD_ADDR, NOMAD_TOKEN, NOMAD_NAMESPACE, NOMAD_REGION, NOMAD_CACERT...)
// with every explicit setting applied over it.
func Config(s Settings) *api.Config {
	cfg := api.DefaultConfig()
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&cfg.Address, s.Address)
	set(&cfg.Region, s.Region)
	set(&cfg.Namespace, s.Namespace)
	set(&cfg.SecretID, s.Token)
	if s.HTTPAuth != "" {
		user, pass, _ := strings.Cut(s.HTTPAuth, ":")
		cfg.HttpAuth = &api.HttpBasicAuth{Username: user, Password: pass}
	}
	if cfg.TLSConfig == nil {
		cfg.TLSConfig = &api.TLSConfig{}
	}
	set(&cfg.TLSConfig.CACert, s.CACert)
	set(&cfg.TLSConfig.CAPath, s.CAPath)
	set(&cfg.TLSConfig.ClientCert, s.ClientCert)
	set(&cfg.TLSConfig.ClientKey, s.ClientKey)
	set(&cfg.TLSConfig.TLSServerName, s.TLSServerName)
	if s.SkipVerify != nil {
		cfg.TLSConfig.Insecure = *s.SkipVerify
	}
	if s.BlockWait > 0 {
		cfg.WaitTime = s.BlockWait
	}
	return cfg
}

// NewClient builds a client for s. Its error names the address, never the
// token.
func NewClient(s Settings) (*api.Client, *api.Config, error) {
	cfg := Config(s)
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("nomad API client for %s: %w", cfg.Address, Redact(err, cfg.SecretID))
	}
	return c, cfg, nil
}

// Redacted is the text that replaces a token.
const Redacted = "<redacted>"

// Redact returns err with every occurrence of token in its text replaced
// by Redacted (Nomad echoes request details, and a proxy may echo headers,
// in error bodies). errors.Is/As still reach the original error through
// Unwrap. A nil error, or an empty token, is returned as is.
func Redact(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), token, Redacted), err: err}
}

// RedactString replaces every occurrence of token in s.
func RedactString(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, Redacted)
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

var _ interface{ Unwrap() error } = (*redactedError)(nil)

// IsStatus reports whether err is a Nomad API answer with this HTTP status.
func IsStatus(err error, code int) bool {
	var ue api.UnexpectedResponseError
	return errors.As(err, &ue) && ue.StatusCode() == code
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
