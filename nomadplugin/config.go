package nomadplugin

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/editdist"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// Strategy check configuration keys (the `config` map of a check's
// `strategy "activation-quota"` block). Per-host keys are written with the
// host's prefix: PrefixFirst+KeyNodeName is "first_node_name".
// docs/nomad/activation-quota.md gives each key's default and meaning.
//
// The strategy checks only that a value has the right type and that the
// keys a mode needs are present; every range rule on an observation, a
// quota, a model or the sample minimum is the engine's, and an engine error
// is mapped back to the key that set the field (engine.FieldOf).
const (
	// KeyRole: "first" or "second" returns that host's count; "split"
	// returns the sum, with both counts in the action's meta, for the
	// host-quota target. Required.
	KeyRole = "role"
	// KeyNamespace: the namespace of KeyJob; default the agent's
	// nomad_namespace, else Nomad's default. "*" is refused.
	KeyNamespace = "namespace"
	// KeyJob: the job whose allocations' usage is read on each host.
	KeyJob = "job"
	// KeyWindow: the most usage samples kept per host. Default 60.
	KeyWindow = "window"
	// KeyMaxAge: samples older than this leave the window. Default 15m.
	KeyMaxAge = "max_age"
	// KeyMinSamples: the fewest samples a host's window must hold for a
	// decision; fewer keeps the current count. Default the engine's (3).
	KeyMinSamples = "min_samples"
	// KeyWarmup: a running allocation younger than this, or with no CPU
	// ticks yet, is warming. Default 2m; "0" turns the rule off.
	KeyWarmup = "warmup"
	// KeyMaxScaleUp, KeyMaxScaleDown: the largest move of a host's count
	// per evaluation, "4" (replicas) or "50%" (of the current count,
	// rounded up, at least one: engine.Step);
	// "none" is no limit. Defaults "100%" and "none": a falling count is
	// mostly the host's safe move (its running replicas no longer fit), so
	// it is not limited unless a policy asks.
	KeyMaxScaleUp   = "max_scale_up"
	KeyMaxScaleDown = "max_scale_down"
	// KeyHysteresis: a move smaller than this is not made. Default "10%";
	// "none" turns it off.
	KeyHysteresis = "hysteresis"
	// KeyHoldBand: a host keeps its count while it lies between the
	// engine's counts at output thresholds this many logits stricter and
	// looser than the model's (engine.HostDecision.Hold): a hold measured
	// in the models' output logits (a margin on the host). Default 0 (off); 0 to engine.MaxHoldBand.
	KeyHoldBand = "hold_band"
	// KeyMargin moves both models' output thresholds by this many logits
	// (engine.HostInput.Margin): > 0 is stricter (fewer replicas, a host
	// overloaded less often), < 0 looser. Default 0 (the models' own
	// thresholds); -engine.MaxMargin to engine.MaxMargin. `activation
	// simulate` on a cluster's own usage series gives the margin that meets
	// a violation budget.
	//
	// KeyMargin is a per-host key too (PrefixFirst+KeyMargin is
	// "first_margin"): that host's margin, in logits, in place of `margin`
	// for it only (same range; unset: `margin`; "0" is the model's own
	// threshold whatever `margin` says). The two processors need not meet
	// a budget at one threshold: `activation simulate` on a cluster's own
	// usage series, with the strategy's step settings, prints the margin
	// per host that holds each host within a budget
	// (`steps_margins_per_host` in its JSON).
	KeyMargin = "margin"
	// KeyPlacement: "cap" (never ask for more replicas than Nomad can place
	// at today's reservations) or "report" (ask anyway and say how many
	// will queue). Default "cap".
	KeyPlacement = "placement"
	// KeyReadConcurrency: allocation stats reads in flight per evaluation.
	// Default nomadusage.DefaultConcurrency (32).
	KeyReadConcurrency = "read_concurrency"
	// KeyReadTimeout: the evaluation's budget for its Nomad reads. Default
	// 10s.
	KeyReadTimeout = "read_timeout"
	// KeyMinAnswered: the share of a host's allocations whose stats must
	// answer for the evaluation to decide. Default 0.8.
	KeyMinAnswered = "min_answered"
	// KeyStatsSample: at most this many of a host's allocations have their
	// stats read per evaluation, drawn at random; the others are stood for
	// by the ones read. Default nomadusage.DefaultStatsSample (256).
	KeyStatsSample = "stats_sample"

	// PrefixFirst and PrefixSecond start every per-host key.
	PrefixFirst  = "first_"
	PrefixSecond = "second_"

	// Per-host keys (and KeyMargin, a check-wide key that a host's own
	// overrides). A host is found by KeyNodeID alone, or by any of
	// KeyNodeName, KeyNodePool, KeyNodeClass and KeyNodeDatacenter (a
	// server-side filter: all given must match, and exactly one node
	// must).
	KeyNodeID         = "node_id"
	KeyNodeName       = "node_name"
	KeyNodePool       = "node_pool"
	KeyNodeClass      = "node_class"
	KeyNodeDatacenter = "node_datacenter"
	// KeyGroup: the task group of KeyJob on this host.
	KeyGroup = "group"
	// KeyReplicaCPU and KeyReplicaMemory: one replica's expected demand
	// (MHz, MB); default the task group's request.
	KeyReplicaCPU    = "replica_cpu_mhz"
	KeyReplicaMemory = "replica_memory_mb"
	// KeyWantedReplicas: replicas of one size that want to run (running
	// ones included); default 0 = every slot. The first host's alone, as
	// KeyQueued: the second host refuses both.
	KeyWantedReplicas = "wanted_replicas"
	// KeyQueued: new replicas queued for the host after the running ones,
	// each with its own size: "cpu_mhz:memory_mb" items separated by
	// commas ("500:256,500:256,4000:2048"; "500" is 500 MHz and no memory);
	// "" is nobody new. Not with KeyWantedReplicas.
	KeyQueued = "queued"
	// KeyModel: "builtin:<name>" or a model file path.
	KeyModel = "model"
	// KeyModelDigest pins the host's model: "sha256:<64 hex digits>", the
	// digest activation train, activation_model and every decision
	// report. A model whose digest is another (a model file rewritten or
	// replaced) is refused, naming this key, until the pin moves: what
	// OpenTofu's precondition on activation_model.digest does for a plan.
	KeyModelDigest = "model_digest"
	// Quota keys: count = clamp(min, max, rounding(amount x per_branch)).
	KeyMin       = "min"
	KeyMax       = "max"
	KeyPerBranch = "per_branch"
	KeyRounding  = "rounding"
	// KeyUsage: "nomad" (allocation or client stats) or "apm" (the check's
	// query result). Default "nomad".
	KeyUsage = "usage"
)

// Roles.
const (
	RoleFirst  = "first"
	RoleSecond = "second"
	RoleSplit  = "split"
)

// Usage sources.
const (
	UsageNomad = "nomad"
	UsageAPM   = "apm"
)

// Placement modes.
const (
	PlacementCap    = "cap"
	PlacementReport = "report"
)

// StepNone is the value of a step key that sets no limit.
const StepNone = engine.StepNone

// Defaults.
const (
	DefaultWindow       = 60
	DefaultMaxAge       = 15 * time.Minute
	DefaultWarmup       = 2 * time.Minute
	DefaultMaxScaleUp   = "100%"
	DefaultMaxScaleDown = StepNone
	DefaultHysteresis   = "10%"
	DefaultPlacement    = PlacementCap
	DefaultReadTimeout  = 10 * time.Second
	// MaxWindow bounds KeyWindow.
	MaxWindow = engine.MaxSamples
)

var globalKeys = []string{KeyRole, KeyNamespace, KeyJob, KeyWindow, KeyMaxAge, KeyMinSamples, KeyWarmup,
	KeyMaxScaleUp, KeyMaxScaleDown, KeyHysteresis, KeyHoldBand, KeyMargin, KeyPlacement, KeyReadConcurrency, KeyReadTimeout, KeyMinAnswered, KeyStatsSample}

var hostKeys = []string{KeyNodeID, KeyNodeName, KeyNodePool, KeyNodeClass, KeyNodeDatacenter, KeyGroup, KeyReplicaCPU, KeyReplicaMemory,
	KeyWantedReplicas, KeyQueued, KeyModel, KeyModelDigest, KeyMin, KeyMax, KeyPerBranch, KeyRounding, KeyUsage, KeyMargin}

// StrategyKeys lists every key the strategy accepts.
func StrategyKeys() []string {
	keys := append([]string(nil), globalKeys...)
	for _, p := range []string{PrefixFirst, PrefixSecond} {
		for _, k := range hostKeys {
			keys = append(keys, p+k)
		}
	}
	return keys
}

// ConfigError names the configuration key that is wrong and why.
type ConfigError struct {
	Key    string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("config %q: %s", e.Key, e.Reason) }

func cfgErr(key, format string, args ...any) error {
	return &ConfigError{Key: key, Reason: fmt.Sprintf(format, args...)}
}

type hostConfig struct {
	role   string // engine.RoleFirst / RoleSecond
	prefix string
	// read: the check reads this host (both hosts for role "split", the
	// role's host otherwise).
	read  bool
	query nomadusage.Query
	model string            // model source; "" is the role's default
	pin   string            // the model's digest it must have; "" is any
	quota *engine.QuotaSpec // only the keys given; nil when none is
	usage string
	// margin is the host's own margin (KeyMargin with its prefix); nil
	// when not given: the check's margin applies (marginOf).
	margin *float64
}

type strategyConfig struct {
	modelDir      string // the plugin's model_dir ("": a model file may be anywhere)
	role          string
	first, second hostConfig
	window        int
	maxAge        time.Duration
	minSamples    int // 0 is the engine's default
	steps         engine.Steps
	holdBand      float64 // 0: no hold band
	margin        float64 // 0: the models' own thresholds
	placement     string
	readTimeout   time.Duration
	opts          nomadusage.Options
	// given holds every key the check sets.
	given map[string]bool
}

func (c *strategyConfig) hosts() [2]*hostConfig { return [2]*hostConfig{&c.first, &c.second} }

// marginOf is the margin h is decided at: its own <host>_margin when
// given (0 included), else the check's margin.
func (c *strategyConfig) marginOf(h *hostConfig) float64 {
	if h.margin != nil {
		return *h.margin
	}
	return c.margin
}

// marginKey is the key that sets h's margin: its own <host>_margin when
// given, else the check's margin.
func (c *strategyConfig) marginKey(h *hostConfig) string {
	if h.margin != nil {
		return h.prefix + KeyMargin
	}
	return KeyMargin
}

// job is the check's job (KeyJob; every host's query reads it).
func (c *strategyConfig) job() string { return c.first.query.Job }

// readHosts are the hosts an evaluation reads and decides: both for role
// "split", the role's host otherwise.
func (c *strategyConfig) readHosts() []*hostConfig {
	switch c.role {
	case RoleFirst:
		return []*hostConfig{&c.first}
	case RoleSecond:
		return []*hostConfig{&c.second}
	}
	return []*hostConfig{&c.first, &c.second}
}

// configReader reads typed values from a check's config map, checking only
// the type.
type configReader struct {
	m   map[string]string
	err error
}

func (r *configReader) get(key string) (string, bool) {
	v, ok := r.m[key]
	return strings.TrimSpace(v), ok
}

// refuseEmpty refuses the first of keys given empty: a template that
// rendered nothing is not a key left out.
func (r *configReader) refuseEmpty(keys ...string) error {
	for _, k := range keys {
		if v, ok := r.get(k); ok && v == "" {
			return cfgErr(k, "is empty; give a value, or leave the key out")
		}
	}
	return nil
}

func (r *configReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *configReader) int(key string, dst *int) {
	if v, ok := r.get(key); ok {
		n, err := wholeNumber(v)
		if err != nil {
			r.fail(cfgErr(key, "is %q; it must be a whole number", v))
			return
		}
		*dst = n
	}
}

// decimalNumber is a number as Go's %v formats a float64: digits, a
// fraction, an exponent.
var decimalNumber = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// wholeNumber reads a whole-number key's value: decimal digits, or a
// number the agent formatted from a policy in a jobspec's scaling block
// (Nomad keeps `max = 1000000` as a JSON number, and the agent hands it to
// the plugins with Go's %v: "1e+06") whose exact value is whole and fits
// an int32 (the keys' ranges are far smaller).
func wholeNumber(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err == nil || !decimalNumber.MatchString(v) {
		return n, err
	}
	f, _, perr := big.ParseFloat(v, 10, 512, big.ToNearestEven)
	if perr != nil || !f.IsInt() {
		return 0, err
	}
	i, acc := f.Int64()
	if acc != big.Exact || i < math.MinInt32 || i > math.MaxInt32 {
		return 0, err
	}
	return int(i), nil
}

// parseFigure reads a number, refusing one a float64 cannot hold:
// ParseFloat reads "1e-400" as 0 without an error, which a rule would then
// refuse as "0", a value never given (or use as 0).
func parseFigure(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, errors.New("it must be a number")
	}
	if f == 0 {
		if b, _, err := big.ParseFloat(v, 0, 64, big.ToNearestEven); err == nil && b.Sign() != 0 {
			return 0, errors.New("closer to 0 than a 64-bit floating point number can hold: check the units")
		}
	}
	return f, nil
}

func (r *configReader) float(key string, dst *float64) {
	if v, ok := r.get(key); ok {
		f, err := parseFigure(v)
		if err != nil {
			r.fail(cfgErr(key, "is %q; %v", v, err))
			return
		}
		*dst = f
	}
}

func (r *configReader) duration(key string, dst *time.Duration, zeroOK bool) {
	if v, ok := r.get(key); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || (d == 0 && !zeroOK) {
			want := "a positive Go duration such as \"30s\""
			if zeroOK {
				want = "a Go duration >= 0 such as \"2m\" (0 turns it off)"
			}
			r.fail(cfgErr(key, "is %q; it must be %s", v, want))
			return
		}
		*dst = d
	}
}

func (r *configReader) oneOf(key string, dst *string, values ...string) {
	if v, ok := r.get(key); ok {
		for _, w := range values {
			if v == w {
				*dst = v
				return
			}
		}
		r.fail(cfgErr(key, "is %q; it must be %s", v, quoteList(values)))
	}
}

// step reads a step limit: engine.ParseStep's form, or StepNone.
func (r *configReader) step(key, def string, dst *engine.Step) {
	v, ok := r.get(key)
	if !ok {
		v = def
	}
	if v == "" {
		// engine.ParseStep reads "" as no limit: written here (a
		// template's unset variable) it would lift the default limit.
		r.fail(cfgErr(key, "is empty; it must be a whole number of replicas, a percentage such as \"50%%\", or %q for no limit (unset: %s)", StepNone, def))
		return
	}
	s, err := engine.ParseStep(v) // StepNone is no limit
	if err != nil {
		r.fail(cfgErr(key, "%v, or %q for no limit", err, StepNone))
		return
	}
	*dst = s
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	if len(q) == 2 {
		return q[0] + " or " + q[1]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// parseStrategyConfig reads a check's strategy config. defaultNamespace is
// the agent's nomad_namespace. The engine judges every value it has a rule
// for (probe); errors are *ConfigError naming the key.
func parseStrategyConfig(m map[string]string, defaultNamespace, modelDir string) (*strategyConfig, error) {
	if err := checkStrategyKeys(m); err != nil {
		return nil, err
	}
	r := &configReader{m: m}
	c, err := parseGlobals(r)
	if err != nil {
		return nil, err
	}
	c.modelDir = modelDir
	if err := r.refuseEmpty(KeyJob, KeyNamespace); err != nil {
		return nil, err
	}
	ns, err := namespaceOf(r, defaultNamespace)
	if err != nil {
		return nil, err
	}
	job, _ := r.get(KeyJob)
	if err := refuseJobPattern(KeyJob, job); err != nil {
		return nil, err
	}
	if c.role == RoleSplit && job == "" {
		return nil, cfgErr(KeyJob, "is required with role %q: the strategy reads each group's running replicas", RoleSplit)
	}
	c.first = hostConfig{role: engine.RoleFirst, prefix: PrefixFirst}
	c.second = hostConfig{role: engine.RoleSecond, prefix: PrefixSecond}
	for _, h := range c.hosts() {
		h.read = c.role == RoleSplit || c.role == h.role
		if err := parseHost(r, h, ns, job, c.role); err != nil {
			return nil, err
		}
	}
	if g := c.second.query.Group; c.role == RoleSplit && g == c.first.query.Group {
		// (the host-quota target refuses it as well, in its own block:
		// this names the mistake where it was made)
		return nil, cfgErr(PrefixSecond+KeyGroup, "is %q, the same as %s: a split check scales two groups, one on each host", g, PrefixFirst+KeyGroup)
	}
	if c.first.usage == UsageAPM && c.second.usage == UsageAPM && c.role == RoleSplit {
		return nil, cfgErr(PrefixSecond+KeyUsage, "both hosts use %q, but a check has one query: read one host from Nomad", UsageAPM)
	}
	if err := c.probe(); err != nil {
		return nil, err
	}
	return c, c.checkWindow()
}

// checkStrategyKeys refuses a key the strategy does not know (the agent's
// internal keys aside).
func checkStrategyKeys(m map[string]string) error {
	known := StrategyKeys()
	var unknown []string
	for k := range m {
		if !slices.Contains(known, k) && !strings.HasPrefix(k, agentInternalPrefix) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return cfgErr(unknown[0], "unknown key%s (the strategy accepts %s)", didYouMean(unknown[0], known), strings.Join(known, ", "))
}

// didYouMean is `: did you mean "x"?` for the known keys k (three
// characters or more) starts, up to five ("first_node" for the five
// first_node_* keys, where the nearest key is first_model; "max_scale_d"
// for max_scale_down), else for the known key nearest k, when one is
// within two edits of it (a typo), else "".
func didYouMean(k string, known []string) string {
	var longer []string
	for _, c := range known {
		if len(k) >= 3 && c != k && strings.HasPrefix(c, k) {
			longer = append(longer, strconv.Quote(c))
		}
	}
	switch n := len(longer); {
	case n == 1:
		return ": did you mean " + longer[0] + "?"
	case n > 1 && n <= 5:
		return ": did you mean " + strings.Join(longer[:n-1], ", ") + " or " + longer[n-1] + "?"
	}
	best, bestD := "", 3
	for _, c := range known {
		if d := editdist.Levenshtein(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(": did you mean %q?", best)
}

// parseGlobals reads the check-wide keys.
func parseGlobals(r *configReader) (*strategyConfig, error) {
	c := &strategyConfig{window: DefaultWindow, maxAge: DefaultMaxAge, placement: DefaultPlacement,
		readTimeout: DefaultReadTimeout, given: map[string]bool{}}
	for k := range r.m {
		c.given[k] = true
	}
	c.opts.Warmup = DefaultWarmup
	r.oneOf(KeyRole, &c.role, RoleFirst, RoleSecond, RoleSplit)
	if c.role == "" && r.err == nil {
		return nil, cfgErr(KeyRole, "is required: %s", quoteList([]string{RoleFirst, RoleSecond, RoleSplit}))
	}
	r.int(KeyWindow, &c.window)
	r.duration(KeyMaxAge, &c.maxAge, false)
	r.int(KeyMinSamples, &c.minSamples)
	r.duration(KeyWarmup, &c.opts.Warmup, true)
	r.step(KeyMaxScaleUp, DefaultMaxScaleUp, &c.steps.MaxUp)
	r.step(KeyMaxScaleDown, DefaultMaxScaleDown, &c.steps.MaxDown)
	r.step(KeyHysteresis, DefaultHysteresis, &c.steps.Hysteresis)
	r.float(KeyHoldBand, &c.holdBand)
	r.float(KeyMargin, &c.margin)
	r.oneOf(KeyPlacement, &c.placement, PlacementCap, PlacementReport)
	r.int(KeyReadConcurrency, &c.opts.Concurrency)
	r.duration(KeyReadTimeout, &c.readTimeout, false)
	r.float(KeyMinAnswered, &c.opts.MinAnswered)
	r.int(KeyStatsSample, &c.opts.StatsSample)
	if r.err != nil {
		return nil, r.err
	}
	if !engine.HoldBandOK(c.holdBand) {
		return nil, cfgErr(KeyHoldBand, "is %v; it must be a number of logits from 0 (off) to %d", c.holdBand, engine.MaxHoldBand)
	}
	if why := engine.MarginReason(c.margin); why != "" {
		return nil, cfgErr(KeyMargin, "%s", why)
	}
	if c.window < 1 || c.window > MaxWindow {
		return nil, cfgErr(KeyWindow, "is %d; it must be a whole number from 1 to %d", c.window, MaxWindow)
	}
	if c.minSamples < 0 {
		return nil, cfgErr(KeyMinSamples, "is %d; it must be a whole number from 1 to %d (unset: %d)", c.minSamples, engine.MaxSamples, engine.DefaultMinSamples)
	}
	// 0 is the reader's (and the engine's) "unset": written in a check it
	// would silently mean the default (min_answered 0, "no minimum",
	// would mean 0.8; min_samples 0 would mean 3).
	for _, z := range []struct {
		key    string
		zero   bool
		range_ string
	}{
		{KeyMinSamples, c.minSamples == 0, fmt.Sprintf("a whole number from 1 to %d (unset: %d)", engine.MaxSamples, engine.DefaultMinSamples)},
		{KeyReadConcurrency, c.opts.Concurrency == 0, fmt.Sprintf("a whole number from 1 to %d (unset: %d)", nomadusage.MaxConcurrency, nomadusage.DefaultConcurrency)},
		{KeyMinAnswered, c.opts.MinAnswered == 0, fmt.Sprintf("a share > 0 and <= 1 (unset: %v)", nomadusage.DefaultMinAnswered)},
		{KeyStatsSample, c.opts.StatsSample == 0, fmt.Sprintf("a whole number from 1 to %d (unset: %d)", nomadusage.MaxStatsSample, nomadusage.DefaultStatsSample)},
	} {
		if c.given[z.key] && z.zero {
			return nil, cfgErr(z.key, "is 0; it must be %s", z.range_)
		}
	}
	if _, err := c.opts.Resolve(); err != nil {
		var oe *nomadusage.OptionError
		if errors.As(err, &oe) {
			key := map[string]string{nomadusage.OptionConcurrency: KeyReadConcurrency, nomadusage.OptionMinAnswered: KeyMinAnswered, nomadusage.OptionWarmup: KeyWarmup, nomadusage.OptionStatsSample: KeyStatsSample}[oe.Option]
			return nil, cfgErr(key, "%s", oe.Reason)
		}
		return nil, err
	}
	return c, nil
}

// namespaceOf is the check's namespace, else the agent's; "*" is refused.
func namespaceOf(r *configReader, defaultNamespace string) (string, error) {
	ns, _ := r.get(KeyNamespace)
	nsKey := KeyNamespace
	if ns == "" {
		ns, nsKey = defaultNamespace, AgentKeyNomadNamespace
	}
	if ns == "*" {
		return "", cfgErr(KeyNamespace, "is \"*\" (from %s): that names every namespace, and a job lives in one: set %s to the job's namespace", nsKey, KeyNamespace)
	}
	return ns, nil
}

// refuseJobPattern refuses "*" as a job (key): a wildcard, as the
// namespace's "*" is, where a check reads and a policy scales one job.
func refuseJobPattern(key, job string) error {
	if job == "*" {
		return cfgErr(key, "is \"*\": the key names one job, not a pattern (a policy per job)")
	}
	return nil
}

// checkWindow refuses a window no evaluation could decide on.
func (c *strategyConfig) checkWindow() error {
	if c.minSamples > c.window {
		return cfgErr(KeyWindow, "is %d, fewer than %s %d: no evaluation could decide", c.window, KeyMinSamples, c.minSamples)
	}
	if c.minSamples == 0 && c.window < engine.DefaultMinSamples {
		return cfgErr(KeyWindow, "is %d, fewer than the engine's default %s %d: no evaluation could decide; set %s as well", c.window, KeyMinSamples, engine.DefaultMinSamples, KeyMinSamples)
	}
	return nil
}

// parseHost reads one host's keys. A host the check does not read (the
// other host of a per-host role) needs no selector; its keys, if given,
// are still judged.
func parseHost(r *configReader, h *hostConfig, ns, job, mode string) error {
	p := h.prefix
	get := func(k string) string { v, _ := r.get(p + k); return v }
	// (an empty group read as the job's only group, an empty node name
	// as no condition on it)
	if err := r.refuseEmpty(p+KeyGroup, p+KeyNodeID, p+KeyNodeName, p+KeyNodePool, p+KeyNodeClass, p+KeyNodeDatacenter); err != nil {
		return err
	}
	q := &h.query
	q.Namespace, q.Job, q.Label = ns, job, h.role
	q.Host = nomadusage.HostSelector{NodeID: get(KeyNodeID), Name: get(KeyNodeName), Pool: get(KeyNodePool),
		Class: get(KeyNodeClass), Datacenter: get(KeyNodeDatacenter)}
	if err := checkSelector(h, q.Host); err != nil {
		return err
	}
	q.Group = get(KeyGroup)
	if q.Group != "" && job == "" {
		return cfgErr(p+KeyGroup, "is set without %q", KeyJob)
	}
	if mode == RoleSplit && q.Group == "" {
		return cfgErr(p+KeyGroup, "is required with role %q: it names the task group the host-quota target scales", RoleSplit)
	}
	r.float(p+KeyReplicaCPU, &q.ReplicaCPUDemandMHz)
	r.float(p+KeyReplicaMemory, &q.ReplicaMemoryDemandMB)
	r.int(p+KeyWantedReplicas, &q.WantedReplicas)
	if v, ok := r.get(p + KeyQueued); ok {
		queued, err := parseQueued(p+KeyQueued, v)
		if err != nil {
			return err
		}
		q.QueuedReplicas = queued
		if p == PrefixFirst && q.WantedReplicas != 0 {
			return cfgErr(p+KeyWantedReplicas, "is given with %s: give %s (replicas of one size) or %s (each with its own demand), not both", p+KeyQueued, p+KeyWantedReplicas, p+KeyQueued)
		}
	}
	if p == PrefixSecond {
		// The engine refuses a queue on the second host too; said here
		// with the key, before an engine rule on the pair could name its
		// own fields.
		_, queued := r.get(p + KeyQueued)
		for _, c := range []struct {
			key   string
			given bool
		}{{KeyQueued, queued}, {KeyWantedReplicas, q.WantedReplicas != 0}} {
			if c.given {
				return cfgErr(p+c.key, "is the first host's alone: the second host's count is how many replicas of the observed workload its capacity processor reads as safe, which no queue moves")
			}
		}
	}
	h.model = get(KeyModel)
	if v, ok := r.get(p + KeyModel); ok && v == "" {
		// Read as unset, it would be the built-in model without a word
		// (a template's unset variable naming a model file).
		r.fail(cfgErr(p+KeyModel, "is empty; name a model (builtin:<name> or a model file), or leave the key out for the built-in one"))
	}
	if v, ok := r.get(p + KeyModelDigest); ok {
		if !validDigest(v) {
			r.fail(cfgErr(p+KeyModelDigest, "is %q; it must be \"sha256:\" and 64 lower-case hex digits, a digest as activation train and every decision give it", v))
		}
		h.pin = v
	}
	if _, ok := r.get(p + KeyMargin); ok {
		h.margin = new(float64)
		r.float(p+KeyMargin, h.margin)
		if why := engine.MarginReason(*h.margin); why != "" {
			r.fail(cfgErr(p+KeyMargin, "%s", why))
		}
	}
	r.oneOf(p+KeyUsage, &h.usage, UsageNomad, UsageAPM)
	if h.usage == "" {
		h.usage = UsageNomad
	}
	if err := parseQuota(r, h); err != nil {
		return err
	}
	if r.err != nil {
		return r.err
	}
	if _, given := r.get(p + KeyReplicaCPU); h.read && job == "" && !given {
		return cfgErr(p+KeyReplicaCPU, "is required when no %q is set (there is no task group to take the request from)", KeyJob)
	}
	q.NoStats = h.usage == UsageAPM
	return nil
}

// checkSelector checks a host's selector: required when the host is read;
// a node ID alone, or filters a Nomad filter expression can write.
func checkSelector(h *hostConfig, sel nomadusage.HostSelector) error {
	p := h.prefix
	if sel.IsZero() {
		if h.read {
			return cfgErr(p+KeyNodeID, "the %s host needs %s, or any of %s, %s, %s and %s", h.role, p+KeyNodeID, p+KeyNodeName, p+KeyNodePool, p+KeyNodeClass, p+KeyNodeDatacenter)
		}
		return nil
	}
	for _, kv := range []struct{ key, v string }{{KeyNodeName, sel.Name}, {KeyNodePool, sel.Pool}, {KeyNodeClass, sel.Class}, {KeyNodeDatacenter, sel.Datacenter}} {
		if kv.v == "" {
			continue
		}
		if _, err := (nomadusage.HostSelector{Name: kv.v}).Filter(); err != nil {
			return cfgErr(p+kv.key, "%v", err)
		}
	}
	if err := nomadusage.CheckNodeID(sel.NodeID); err != nil {
		return cfgErr(p+KeyNodeID, "is %q: a Nomad node ID is a UUID (hexadecimal digits and dashes)", sel.NodeID)
	}
	if filter, _ := sel.Filter(); sel.NodeID != "" && filter != "" {
		return cfgErr(p+KeyNodeID, "is given with a name, pool, class or datacenter filter: give the node ID alone, or the filters")
	}
	return nil
}

// parseQueued reads "cpu:memory,cpu:memory,...".
func parseQueued(key, v string) ([]engine.Replica, error) {
	out := []engine.Replica{}
	if v == "" {
		return out, nil
	}
	for i, item := range strings.Split(v, ",") {
		cpuText, memText, hasMem := strings.Cut(strings.TrimSpace(item), ":")
		var r engine.Replica
		var err error
		if r.CPUMHz, err = parseFigure(strings.TrimSpace(cpuText)); err != nil {
			return nil, cfgErr(key, "item %d is %q (%v); want cpu_mhz or cpu_mhz:memory_mb, such as \"500:256\"", i+1, item, err)
		}
		if hasMem {
			if r.MemoryMB, err = parseFigure(strings.TrimSpace(memText)); err != nil {
				return nil, cfgErr(key, "item %d is %q (%v); want cpu_mhz or cpu_mhz:memory_mb, such as \"500:256\"", i+1, item, err)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// parseQuota reads the quota keys given (types only): the engine fills the
// rest and judges them.
func parseQuota(r *configReader, h *hostConfig) error {
	var spec engine.QuotaSpec
	given := false
	if _, ok := r.get(h.prefix + KeyMin); ok {
		spec.Min = new(int)
		r.int(h.prefix+KeyMin, spec.Min)
		given = true
	}
	if _, ok := r.get(h.prefix + KeyMax); ok {
		spec.Max = new(int)
		r.int(h.prefix+KeyMax, spec.Max)
		given = true
	}
	if _, ok := r.get(h.prefix + KeyPerBranch); ok {
		spec.PerBranch = new(float64)
		r.float(h.prefix+KeyPerBranch, spec.PerBranch)
		given = true
	}
	if v, ok := r.get(h.prefix + KeyRounding); ok {
		spec.Rounding = &v
		given = true
	}
	if given {
		h.quota = &spec
	}
	return r.err
}

// validDigest reports whether v is a model digest as the engine writes
// one: "sha256:" and 64 lower-case hex digits.
func validDigest(v string) bool {
	hexPart, ok := strings.CutPrefix(v, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	for _, r := range hexPart {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// checkPin refuses a model whose digest is not the host's pin (when it
// has one), naming the pin's key.
func (h *hostConfig) checkPin(p *engine.Processor) error {
	if h.pin == "" || p.Digest() == h.pin {
		return nil
	}
	source := h.model
	if source == "" {
		source = engine.DefaultModelFor(h.role)
	}
	return cfgErr(h.prefix+KeyModelDigest, "is %s, but the model %s is %s: not the pinned model (changed since it was pinned, or the pin is mistyped); review the model and move the pin, or put the pinned model back", h.pin, source, p.Digest())
}

// probe asks the engine to judge every value the check sets that the
// engine has a rule for (models, quotas, demands, wanted and queued
// replicas, the sample minimum): one decision on an idle host of the
// largest capacity the engine accepts, so that only the config's own
// values can be refused.
func (c *strategyConfig) probe() error {
	var in [2]engine.HostInput
	// Both hosts' models first, every problem of them at once (two wrong
	// model keys, a model and a pin), then the values.
	var procs [2]*engine.Processor
	var modelErrs []error
	for i, h := range c.hosts() {
		p, err := c.loadModel(h, h.model)
		if err != nil {
			modelErrs = append(modelErrs, err)
			continue
		}
		if err := h.checkPin(p); err != nil {
			modelErrs = append(modelErrs, err)
			continue
		}
		procs[i] = p
	}
	if len(modelErrs) > 0 {
		return errors.Join(modelErrs...)
	}
	for i, h := range c.hosts() {
		p := procs[i]
		q := h.query
		o := &engine.Observation{CPUCapacityMHz: engine.MaxResource, MemoryCapacityMB: engine.MaxResource,
			ReplicaCPUDemandMHz: q.ReplicaCPUDemandMHz, ReplicaMemoryDemandMB: q.ReplicaMemoryDemandMB,
			WantedReplicas: q.WantedReplicas, QueuedReplicas: q.QueuedReplicas}
		if !c.given[h.prefix+KeyReplicaCPU] {
			o.ReplicaCPUDemandMHz = 1 // the group's request, read later
		}
		n := min(max(c.minSamples, engine.DefaultMinSamples, 1), engine.MaxSamples)
		for k := range n {
			o.Samples = append(o.Samples, engine.Sample{Time: int64(k)})
		}
		in[i] = engine.HostInput{Observation: o, Model: p, Quota: h.quota, MinSamples: c.minSamples, HoldBand: c.holdBand, Margin: c.marginOf(h)}
	}
	if _, err := engine.Decide(in[0], in[1]); err != nil {
		return c.configError(err)
	}
	return nil
}

// observationKeys maps the observation fields a check's config sets to
// their per-host keys.
var observationKeys = map[string]string{
	"replica_cpu_demand_mhz":   KeyReplicaCPU,
	"replica_memory_demand_mb": KeyReplicaMemory,
	"wanted_replicas":          KeyWantedReplicas,
	"queued_replicas":          KeyQueued,
}

// keyFor returns the config key that set the input an engine error is
// about, if the config set it.
func (c *strategyConfig) keyFor(err error) (string, bool) {
	host, part, field, ok := engine.FieldOf(err)
	if !ok {
		return "", false
	}
	h := &c.first
	if host == engine.RoleSecond {
		h = &c.second
	}
	switch part {
	case engine.PartQuota:
		return h.prefix + field, true
	case engine.PartModel:
		return h.prefix + KeyModel, true
	}
	switch field {
	case "min_samples":
		return KeyMinSamples, true
	case "hold_band":
		return KeyHoldBand, true
	case "margin":
		return c.marginKey(h), true
	}
	base, _, _ := strings.Cut(field, "[")
	if k, ok := observationKeys[base]; ok && c.given[h.prefix+k] {
		return h.prefix + k, true
	}
	return "", false
}

// configError turns an engine error about a configured value into a
// *ConfigError naming the key; other errors pass through.
func (c *strategyConfig) configError(err error) error {
	if key, ok := c.keyFor(err); ok {
		return &ConfigError{Key: key, Reason: itemReason(err)}
	}
	return err
}

// itemReason is an engine error's reason, led by the item of a list key it
// is about ("queued_replicas[1].memory_mb" is item 2 of <host>_queued).
func itemReason(err error) string {
	why := engine.Reason(err)
	_, _, field, _ := engine.FieldOf(err)
	_, rest, ok := strings.Cut(field, "[")
	if !ok {
		return why
	}
	idx, sub, _ := strings.Cut(rest, "]")
	i, convErr := strconv.Atoi(idx)
	if convErr != nil {
		return why
	}
	if sub = strings.TrimPrefix(sub, "."); sub != "" {
		return fmt.Sprintf("item %d, its %s: %s", i+1, sub, why)
	}
	return fmt.Sprintf("item %d: %s", i+1, why)
}

// canonical is a stable string form of a config map, to cache parses.
func canonical(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return b.String()
}
