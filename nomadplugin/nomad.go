package nomadplugin

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Keys the agent passes to every plugin's SetConfig: the agent's own Nomad
// settings (inherited unless the plugin's config sets them).
const (
	AgentKeyNomadAddress    = "nomad_address"
	AgentKeyNomadRegion     = "nomad_region"
	AgentKeyNomadNamespace  = "nomad_namespace"
	AgentKeyNomadToken      = "nomad_token"
	AgentKeyNomadHTTPAuth   = "nomad_http-auth"
	AgentKeyNomadCACert     = "nomad_ca-cert"
	AgentKeyNomadCAPath     = "nomad_ca-path"
	AgentKeyNomadClientCert = "nomad_client-cert"
	AgentKeyNomadClientKey  = "nomad_client-key"
	AgentKeyNomadTLSServer  = "nomad_tls-server-name"
	AgentKeyNomadSkipVerify = "nomad_skip-verify"
	AgentKeyNomadBlockWait  = "nomad_block-query-wait-time"
)

// nomadClient builds a Nomad API client from the agent's config map. It
// starts from api.DefaultConfig (so NOMAD_* in the plugin's environment
// fill what the agent does not pass) and applies the agent's keys.
func nomadClient(m map[string]string) (*api.Client, string, error) {
	cfg := api.DefaultConfig()
	if v := m[AgentKeyNomadAddress]; v != "" {
		cfg.Address = v
	}
	if v := m[AgentKeyNomadRegion]; v != "" {
		cfg.Region = v
	}
	if v := m[AgentKeyNomadNamespace]; v != "" {
		cfg.Namespace = v
	}
	if v := m[AgentKeyNomadToken]; v != "" {
		cfg.SecretID = v
	}
	if v := m[AgentKeyNomadHTTPAuth]; v != "" {
		user, pass, _ := strings.Cut(v, ":")
		cfg.HttpAuth = &api.HttpBasicAuth{Username: user, Password: pass}
	}
	if cfg.TLSConfig == nil {
		cfg.TLSConfig = &api.TLSConfig{}
	}
	for key, dst := range map[string]*string{
		AgentKeyNomadCACert: &cfg.TLSConfig.CACert, AgentKeyNomadCAPath: &cfg.TLSConfig.CAPath,
		AgentKeyNomadClientCert: &cfg.TLSConfig.ClientCert, AgentKeyNomadClientKey: &cfg.TLSConfig.ClientKey,
		AgentKeyNomadTLSServer: &cfg.TLSConfig.TLSServerName,
	} {
		if v := m[key]; v != "" {
			*dst = v
		}
	}
	if v := m[AgentKeyNomadSkipVerify]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, "", cfgErr(AgentKeyNomadSkipVerify, "is %q; it must be true or false", v)
		}
		cfg.TLSConfig.Insecure = b
	}
	if v := m[AgentKeyNomadBlockWait]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, "", cfgErr(AgentKeyNomadBlockWait, "is %q; it must be a Go duration", v)
		}
		cfg.WaitTime = d
	}
	c, err := api.NewClient(cfg)
	if err != nil {
		// The error names the address, never the token.
		return nil, "", fmt.Errorf("Nomad API client for %s: %w", cfg.Address, err)
	}
	return c, cfg.Namespace, nil
}

// safeKeys lists a config map's keys, never its values, for logs.
func safeKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
