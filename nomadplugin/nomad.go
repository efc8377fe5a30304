package nomadplugin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad-autoscaler/sdk"

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

// Plugin-level keys (the `config` map of the agent's `strategy` or
// `target` block, which SetConfig receives).
const (
	// PluginKeyRequestTimeout bounds one HTTP request to Nomad (both
	// plugins). Default DefaultRequestTimeout.
	PluginKeyRequestTimeout = "request_timeout"
	// PluginKeyStatusTimeout bounds one target Status call (every Nomad
	// read it makes), and never more than nine tenths of the agent's own
	// gRPC deadline for the call. Default DefaultStatusTimeout.
	PluginKeyStatusTimeout = "status_timeout"
	// PluginKeyScaleTimeout bounds one target Scale call. Default
	// DefaultScaleTimeout.
	PluginKeyScaleTimeout = "scale_timeout"
)

// Deadline defaults.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultStatusTimeout  = 15 * time.Second
	DefaultScaleTimeout   = 30 * time.Second
)

// isAgentKey says whether the agent itself puts key into a plugin config:
// inherited nomad_* settings and internal keys such as
// "_nomad_autoscaler_grpc_timeout".
func isAgentKey(k string) bool {
	return strings.HasPrefix(k, "_nomad_autoscaler") || strings.HasPrefix(k, "nomad_")
}

// pluginConfig is what SetConfig reads: the Nomad connection and the
// plugin's own durations.
type pluginConfig struct {
	conn      *nomadconn.Conn
	durations map[string]time.Duration
}

// connect reads SetConfig's map: the agent's nomad_* keys become
// nomadconn.Settings (NOMAD_* in the plugin's environment fill what the
// agent does not pass), own lists the plugin-level duration keys the plugin
// accepts with their defaults. Unknown keys are refused.
func connect(m map[string]string, own map[string]time.Duration) (*pluginConfig, error) {
	var unknown []string
	for k := range m {
		if _, ok := own[k]; !ok && !isAgentKey(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		names := make([]string, 0, len(own))
		for k := range own {
			names = append(names, k)
		}
		sort.Strings(names)
		return nil, cfgErr(unknown[0], "unknown plugin config key (the plugin accepts %s and the agent's nomad_* settings)", strings.Join(names, ", "))
	}
	pc := &pluginConfig{durations: map[string]time.Duration{}}
	for k, def := range own {
		pc.durations[k] = def
		if v, ok := m[k]; ok {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil || d <= 0 {
				return nil, cfgErr(k, "is %q; it must be a positive Go duration such as \"10s\"", v)
			}
			pc.durations[k] = d
		}
	}
	s := nomadconn.Settings{
		Address: m[AgentKeyNomadAddress], Region: m[AgentKeyNomadRegion], Namespace: m[AgentKeyNomadNamespace],
		Token: m[AgentKeyNomadToken], HTTPAuth: m[AgentKeyNomadHTTPAuth],
		CACert: m[AgentKeyNomadCACert], CAPath: m[AgentKeyNomadCAPath],
		ClientCert: m[AgentKeyNomadClientCert], ClientKey: m[AgentKeyNomadClientKey], TLSServerName: m[AgentKeyNomadTLSServer],
		RequestTimeout: pc.durations[PluginKeyRequestTimeout],
	}
	if v := m[AgentKeyNomadSkipVerify]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, cfgErr(AgentKeyNomadSkipVerify, "is %q; it must be true or false", v)
		}
		s.SkipVerify = &b
	}
	if v := m[AgentKeyNomadBlockWait]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, cfgErr(AgentKeyNomadBlockWait, "is %q; it must be a positive Go duration", v)
		}
		s.BlockWait = d
	}
	conn, err := nomadconn.New(s, nil)
	if err != nil {
		return nil, err
	}
	pc.conn = conn
	return pc, nil
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

// deadlineErr says which call ran out of which budget when ctx's deadline
// passed, and wraps err; other errors pass through.
func deadlineErr(ctx context.Context, budgetKey string, budget time.Duration, call string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: the %s budget of %s ran out: %w", call, budgetKey, budget, err)
	}
	return fmt.Errorf("%s: %w", call, err)
}

// The plugin boundary: everything a plugin returns to the agent (errors,
// reasons, meta) and every action it writes to Nomad passes through the
// connection's redaction once, here. Nomad's own answers are redacted
// where they come in (nomadconn's transport).

// redactError is the boundary for errors.
func redactError(conn *nomadconn.Conn, err error) error {
	if conn == nil {
		return err
	}
	return conn.Redact(err)
}

// redactAction is the boundary for actions: their reason and string meta.
func redactAction(conn *nomadconn.Conn, a *sdk.ScalingAction) {
	if conn == nil || a == nil {
		return
	}
	a.Reason = conn.RedactString(a.Reason)
	if len(a.Meta) == 0 {
		return
	}
	m := make(map[string]any, len(a.Meta))
	for k, v := range a.Meta {
		if s, ok := v.(string); ok {
			v = conn.RedactString(s)
		}
		m[k] = v
	}
	a.Meta = m
}
