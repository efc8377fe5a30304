package nomadplugin

import (
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
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

// nomadClient builds a Nomad API client from the agent's config map
// through nomadconn: the agent's keys win, NOMAD_* in the plugin's
// environment fill what the agent does not pass. It returns the client,
// the namespace and the token (for redaction only).
func nomadClient(m map[string]string) (*api.Client, string, string, error) {
	s := nomadconn.Settings{
		Address: m[AgentKeyNomadAddress], Region: m[AgentKeyNomadRegion], Namespace: m[AgentKeyNomadNamespace],
		Token: m[AgentKeyNomadToken], HTTPAuth: m[AgentKeyNomadHTTPAuth],
		CACert: m[AgentKeyNomadCACert], CAPath: m[AgentKeyNomadCAPath],
		ClientCert: m[AgentKeyNomadClientCert], ClientKey: m[AgentKeyNomadClientKey], TLSServerName: m[AgentKeyNomadTLSServer],
	}
	if v := m[AgentKeyNomadSkipVerify]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, "", "", cfgErr(AgentKeyNomadSkipVerify, "is %q; it must be true or false", v)
		}
		s.SkipVerify = &b
	}
	if v := m[AgentKeyNomadBlockWait]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, "", "", cfgErr(AgentKeyNomadBlockWait, "is %q; it must be a positive Go duration", v)
		}
		s.BlockWait = d
	}
	c, cfg, err := nomadconn.NewClient(s)
	if err != nil {
		return nil, "", "", err
	}
	return c, cfg.Namespace, cfg.SecretID, nil
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
