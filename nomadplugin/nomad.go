package nomadplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	sdknomad "github.com/hashicorp/nomad-autoscaler/sdk/helper/nomad"

	"github.com/activation-scheduler/terraform-provider-activation/internal/editdist"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
)

// Keys of the agent's Nomad settings that every plugin's SetConfig gets
// (inherited unless the plugin's config sets them). The SDK's
// sdk/helper/nomad reads all twelve; the plugins name these few in their
// own messages and checks.
const (
	AgentKeyNomadAddress    = "nomad_address"
	AgentKeyNomadNamespace  = "nomad_namespace"
	AgentKeyNomadToken      = "nomad_token"
	AgentKeyNomadSkipVerify = "nomad_skip-verify"
	AgentKeyNomadBlockWait  = "nomad_block-query-wait-time"
)

// agentSettings are the nomad_* keys the agent (v0.4.6, and its SDK to
// this day) puts into a plugin's config, or lets its plugin block set:
// the twelve its sdk/helper/nomad reads, and nomad_config_inherit, which
// says whether the plugin inherits them.
var agentSettings = []string{
	AgentKeyNomadAddress, "nomad_region", AgentKeyNomadNamespace, AgentKeyNomadToken,
	"nomad_http-auth", "nomad_ca-cert", "nomad_ca-path", "nomad_client-cert", "nomad_client-key",
	"nomad_tls-server-name", AgentKeyNomadSkipVerify, AgentKeyNomadBlockWait, "nomad_config_inherit",
}

// Prefixes of the keys the agent itself puts into a plugin's config: its
// Nomad settings, and internal keys such as
// "_nomad_autoscaler_grpc_timeout" (which a check's strategy config may
// carry too).
const (
	agentSettingPrefix  = "nomad_"
	agentInternalPrefix = "_nomad_autoscaler"
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
	// PluginKeyScaleTimeout bounds one target Scale call up to its write;
	// the scaling events a split register records after it have their own
	// budget, request_timeout. Default DefaultScaleTimeout.
	PluginKeyScaleTimeout = "scale_timeout"
	// PluginKeyIgnoreEnvVars: "true" reads no NOMAD_* variable of the
	// plugin's environment (terraform-provider-nomad's ignore_env_vars):
	// only the agent's settings and the plugin's keys apply. Default
	// "false".
	PluginKeyIgnoreEnvVars = "ignore_env_vars"
	// PluginKeyModelDir (strategy): the directory every check's model
	// file must be in, symbolic links resolved; a relative model path is
	// taken in it. Unset: a model path may name any file the agent can
	// read (a policy in a jobspec is written by whoever may submit the
	// job).
	PluginKeyModelDir = "model_dir"
	// PluginKeyHeaderPrefix + a header name: a header sent with every
	// request to Nomad, such as a proxy's own authentication
	// ("header.X-Proxy-Auth"); its value is a secret, redacted like the
	// token.
	PluginKeyHeaderPrefix = "header."
)

// Deadline defaults.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultStatusTimeout  = 15 * time.Second
	DefaultScaleTimeout   = 30 * time.Second
)

// isAgentKey says whether the agent itself puts key into a plugin config.
func isAgentKey(k string) bool {
	return strings.HasPrefix(k, agentSettingPrefix) || strings.HasPrefix(k, agentInternalPrefix)
}

// pluginConfig is what SetConfig reads: the Nomad connection and the
// plugin's own durations; unread are the nomad_* keys that are no agent
// setting the plugin knows, and caOverPath the CA file given beside a CA
// directory (the file wins), for SetConfig to log (warn).
type pluginConfig struct {
	conn       *nomadconn.Conn
	durations  map[string]time.Duration
	unread     []string
	caOverPath string
}

// warn logs what SetConfig accepted but will not read.
func (pc *pluginConfig) warn(logger hclog.Logger) {
	if len(pc.unread) > 0 {
		logger.Warn("plugin config keys that are no agent setting the plugin reads; ignored", "keys", pc.unread)
	}
	if pc.caOverPath != "" {
		// The agent fills nomad_ca-cert from its own NOMAD_CACERT (or its
		// ca_cert) when the plugin block sets none, so a block's
		// nomad_ca-path can lose to the agent's environment.
		logger.Warn("nomad_ca-cert and nomad_ca-path are both set: the CA file is used and the directory is not; the agent gives its plugins its own CA file (ca_cert, or NOMAD_CACERT in its environment) unless the plugin block sets nomad_ca-cert",
			"ca_cert", pc.caOverPath)
	}
}

// connect reads SetConfig's map: the agent's nomad_* keys, read by the
// SDK's sdk/helper/nomad, become nomadconn.Settings (NOMAD_* in the
// plugin's environment fill what the agent does not pass, unless
// ignore_env_vars), with the plugin's headers; own lists the plugin-level
// duration keys the plugin accepts with their defaults. Unknown keys are
// refused.
func connect(m map[string]string, own map[string]time.Duration, text ...string) (*pluginConfig, error) {
	if err := checkPluginKeys(m, own, text); err != nil {
		return nil, err
	}
	unread, err := checkAgentSettings(m)
	if err != nil {
		return nil, err
	}
	pc := &pluginConfig{durations: map[string]time.Duration{}, unread: unread}
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
	s, err := settings(m)
	if err != nil {
		return nil, err
	}
	s.RequestTimeout = pc.durations[PluginKeyRequestTimeout]
	if s.CACert != "" && s.CAPath != "" {
		pc.caOverPath = s.CACert
	}
	if pc.conn, err = nomadconn.New(s, nil); err != nil {
		return nil, err
	}
	return pc, nil
}

// checkPluginKeys refuses a key that is neither the plugin's (own, its
// durations, and text, its other keys), a header, nor the agent's.
func checkPluginKeys(m map[string]string, own map[string]time.Duration, text []string) error {
	var unknown []string
	for k := range m {
		if _, ok := own[k]; !ok && !slices.Contains(text, k) && k != PluginKeyIgnoreEnvVars && !strings.HasPrefix(k, PluginKeyHeaderPrefix) && !isAgentKey(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	names := append([]string{PluginKeyIgnoreEnvVars, PluginKeyHeaderPrefix + "<name>"}, text...)
	for k := range own {
		names = append(names, k)
	}
	sort.Strings(names)
	hint := didYouMean(unknown[0], names)
	if near := nearAgentSetting(unknown[0]); near != "" {
		hint = fmt.Sprintf(": did you mean the agent setting %q?", near) // NOMAD_ADDRESS
	}
	return cfgErr(unknown[0], "unknown plugin config key%s (the plugin accepts %s and the agent's nomad_* settings)",
		hint, strings.Join(names, ", "))
}

// checkAgentSettings refuses a nomad_* key that is a misspelt agent
// setting (nomad_ca_path for nomad_ca-path, nomad_addresss), which the SDK
// would ignore without a word: the plugin would reach Nomad with the
// agent's setting or none. Another nomad_* key, too far from every agent
// setting to be one misspelt (perhaps a later agent's), is returned to be
// logged, not refused, so that a newer agent does not stop the plugin.
func checkAgentSettings(m map[string]string) (unread []string, err error) {
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, agentSettingPrefix) && !slices.Contains(agentSettings, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if near := nearAgentSetting(k); near != "" {
			return nil, cfgErr(k, "is no agent setting: did you mean %q? (the agent's Nomad settings are %s; a misspelt one is ignored by the agent, so the plugin would reach Nomad without it)", near, strings.Join(agentSettings, ", "))
		}
		unread = append(unread, k)
	}
	return unread, nil
}

// agentSettingAliases are other names of the agent's settings, as
// Nomad's environment variables (NOMAD_ADDR) and terraform-provider-nomad
// (secret_id, ca_file) spell them, after nomad_ and in lower case: further
// than two edits from the setting, and the likeliest to be written.
var agentSettingAliases = map[string]string{
	"nomad_addr":            AgentKeyNomadAddress,
	"nomad_secret_id":       AgentKeyNomadToken,
	"nomad_ca_file":         "nomad_ca-cert",
	"nomad_cert_file":       "nomad_client-cert",
	"nomad_key_file":        "nomad_client-key",
	"nomad_tls_skip_verify": AgentKeyNomadSkipVerify,
	"nomad_insecure":        AgentKeyNomadSkipVerify,
}

// nearAgentSetting is the agent setting k misspells, or "": one that
// differs from it in case or in _ for - alone (nomad_block_query_wait_time),
// another name of it (agentSettingAliases), else one at most two edits
// away.
func nearAgentSetting(k string) string {
	fold := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	fk := fold(k)
	if a, ok := agentSettingAliases[fk]; ok {
		return a
	}
	best, bestD := "", 3
	for _, a := range agentSettings {
		fa := fold(a)
		if fa == fk {
			return a
		}
		if d := editdist.Levenshtein(fk, fa); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

// settings turns the config map into nomadconn.Settings: the agent's
// nomad_* keys through the SDK's ConfigFromNamespacedMap (which ignores a
// malformed boolean or duration: those two are checked here first, so the
// error names the key), the plugin's headers and ignore_env_vars.
func settings(m map[string]string) (nomadconn.Settings, error) {
	var s nomadconn.Settings
	if v := m[AgentKeyNomadSkipVerify]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return s, cfgErr(AgentKeyNomadSkipVerify, "is %q; it must be true or false", v)
		}
		s.SkipVerify = &b
	}
	if v := m[AgentKeyNomadBlockWait]; v != "" {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return s, cfgErr(AgentKeyNomadBlockWait, "is %q; it must be a positive Go duration", v)
		}
	}
	if v, ok := m[PluginKeyIgnoreEnvVars]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return s, cfgErr(PluginKeyIgnoreEnvVars, "is %q; it must be true or false", v)
		}
		s.IgnoreEnv = b
	}
	c := sdknomad.ConfigFromNamespacedMap(m)
	s.Address, s.Region, s.Namespace, s.Token, s.BlockWait = c.Address, c.Region, c.Namespace, c.SecretID, c.WaitTime
	s.CACert, s.CAPath, s.ClientCert, s.ClientKey = c.TLSConfig.CACert, c.TLSConfig.CAPath, c.TLSConfig.ClientCert, c.TLSConfig.ClientKey
	s.TLSServerName = c.TLSConfig.TLSServerName
	if a := c.HttpAuth; a != nil {
		s.HTTPAuth = a.Username
		if a.Password != "" {
			s.HTTPAuth += ":" + a.Password
		}
	}
	for k, v := range m {
		if name, ok := strings.CutPrefix(k, PluginKeyHeaderPrefix); ok {
			if name == "" {
				return s, cfgErr(k, "names no header: write %s<name>, such as %sX-Proxy-Auth", PluginKeyHeaderPrefix, PluginKeyHeaderPrefix)
			}
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers[name] = v
		}
	}
	return s, nil
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
	// One request's own limit (the HTTP client's timeout) is not the
	// call's budget: name its key.
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%s: one request ran past its %s: %w", call, PluginKeyRequestTimeout, err)
	}
	return fmt.Errorf("%s: %w", call, err)
}
