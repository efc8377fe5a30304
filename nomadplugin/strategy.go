package nomadplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad-autoscaler/plugins/base"
	"github.com/hashicorp/nomad-autoscaler/plugins/strategy"
	"github.com/hashicorp/nomad-autoscaler/sdk"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadconn"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// StrategyName is the strategy plugin's name: its binary's name in the
// agent's plugin_dir and the name a check's strategy block uses.
const StrategyName = "activation-quota"

// Meta keys the strategy sets on its action. Numbers cross the agent's gRPC
// boundary as JSON, so a target reads them as float64.
const (
	MetaRole = "activation.role"
	// MetaFirstCount and MetaSecondCount are the counts a target applies
	// now: the engine's, limited as the reason says.
	MetaFirstCount  = "activation.first.count"
	MetaSecondCount = "activation.second.count"
	// MetaFirstDecided and MetaSecondDecided are the engine's counts.
	MetaFirstDecided  = "activation.first.decided"
	MetaSecondDecided = "activation.second.decided"
	// MetaFirstReason and MetaSecondReason are the engine's one-line
	// accounts (HostDecision.Reason).
	MetaFirstReason  = "activation.first.reason"
	MetaSecondReason = "activation.second.reason"
	// MetaFirstMin, MetaFirstMax, MetaSecondMin and MetaSecondMax are each
	// host's quota bounds, so that the host-quota target keeps each group
	// within its quota when the agent clamped the sum.
	MetaFirstMin  = "activation.first.min"
	MetaFirstMax  = "activation.first.max"
	MetaSecondMin = "activation.second.min"
	MetaSecondMax = "activation.second.max"
	// MetaStep is set to "1/2" when a split whose sum does not change is
	// applied in two evaluations (the agent skips an action whose count
	// equals the current one): first the growing group, then the other.
	MetaStep = "activation.step"
	// MetaJobModifyIndex is the job's JobModifyIndex the strategy read:
	// the host-quota target writes the split only if the job is still at
	// it (check-and-set).
	MetaJobModifyIndex = "activation.job_modify_index"
	// MetaPlacement is the check's placement mode ("cap" or "report").
	MetaPlacement = "activation.placement"
	// MetaRequestDigest is set only when the plugin logs at trace level:
	// the first 16 hex digits of the SHA-256 of the engine request's JSON,
	// which the "decision request" trace line carries in full, so that a
	// scaling event can be matched with the request that made it.
	MetaRequestDigest = "activation.request_digest"
)

// Per-host meta: "activation.<first|second>.<name>".
const (
	// MetaLimit: what bounded the engine's amount (engine.Limit*).
	MetaLimit = "limit"
	// MetaRefused: the first host's first refused slot and the resource
	// that refused it, e.g. "slot_7 (new replica): cpu".
	MetaRefused = "refused"
	// MetaCurrent: the count the limits started from (the group's count in
	// the job, or its running replicas without a job).
	MetaCurrent = "current"
	// MetaPlaceable: how many replicas Nomad can place on the host at
	// today's reservations.
	MetaPlaceable = "placeable"
	// MetaQueued: how many of the count will stay queued (more than Nomad
	// can place).
	MetaQueued = "queued"
	// MetaHeld: how many replicas the step limits held back (the engine's
	// count less the count asked for, after placement and node state).
	MetaHeld = "held"
	// MetaHeldBy: which limits changed the engine's count, in words.
	MetaHeldBy = "held_by"
)

// HostMeta is the per-host meta key of role ("first" or "second").
func HostMeta(role, name string) string { return "activation." + role + "." + name }

// UsageReader reads the hosts' usage; *nomadusage.Reader is the real one.
type UsageReader interface {
	ReadHosts(ctx context.Context, qs []nomadusage.Query, opts nomadusage.Options) ([]*nomadusage.Reading, error)
}

var _ strategy.Strategy = (*Strategy)(nil)

// Strategy is the activation-quota strategy plugin.
type Strategy struct {
	logger hclog.Logger
	now    func() time.Time

	mu        sync.Mutex
	reader    UsageReader
	conn      *nomadconn.Conn
	fixedRead bool // the reader came from WithReader
	configs   map[string]*strategyConfig
	windows   map[string]*windowEntry
}

type windowEntry struct {
	w        *nomadusage.Window
	lastUsed time.Time
}

// StrategyOption configures a Strategy made by NewStrategy.
type StrategyOption func(*Strategy)

// WithReader makes the strategy read usage through r instead of the Nomad
// connection SetConfig builds (tests and benchmarks).
func WithReader(r UsageReader) StrategyOption {
	return func(s *Strategy) { s.reader, s.fixedRead = r, true }
}

// WithClock sets the strategy's clock.
func WithClock(now func() time.Time) StrategyOption { return func(s *Strategy) { s.now = now } }

// NewStrategy returns the strategy; logger is the one the plugin SDK gives.
func NewStrategy(logger hclog.Logger, opts ...StrategyOption) *Strategy {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s := &Strategy{logger: logger, now: time.Now, configs: map[string]*strategyConfig{}, windows: map[string]*windowEntry{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// PluginInfo implements base.Base.
func (s *Strategy) PluginInfo() (*base.PluginInfo, error) {
	return &base.PluginInfo{Name: StrategyName, PluginType: sdk.PluginTypeStrategy}, nil
}

// strategyPluginKeys are the strategy's plugin-level keys and defaults.
var strategyPluginKeys = map[string]time.Duration{PluginKeyRequestTimeout: DefaultRequestTimeout}

// SetConfig implements base.Base: it receives the agent's Nomad settings
// (nomad_address, nomad_token, nomad_namespace...) and the plugin block's
// config, and connects through nomadconn.
func (s *Strategy) SetConfig(config map[string]string) error {
	s.logger.Debug("set config", "keys", safeKeys(config))
	pc, err := connect(config, strategyPluginKeys)
	if err != nil {
		return fmt.Errorf("%s: %w", StrategyName, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn = pc.conn
	if !s.fixedRead {
		s.reader = &nomadusage.Reader{Client: pc.conn.Client(), Now: s.now}
	}
	s.configs = map[string]*strategyConfig{}
	return nil
}

func (s *Strategy) connection() *nomadconn.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

func (s *Strategy) config(m map[string]string) (*strategyConfig, error) {
	key := canonical(m)
	s.mu.Lock()
	c, ok := s.configs[key]
	ns := ""
	if s.conn != nil {
		ns = s.conn.Namespace()
	}
	s.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := parseStrategyConfig(m, ns)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.configs) > 4096 {
		s.configs = map[string]*strategyConfig{}
	}
	s.configs[key] = c
	s.mu.Unlock()
	return c, nil
}

// window returns the usage window kept for one host of one check.
func (s *Strategy) window(key string, c *strategyConfig, now time.Time) *nomadusage.Window {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.windows[key]
	if !ok || e.w.Size() != c.window || e.w.MaxAge() != c.maxAge {
		w, _ := nomadusage.NewWindow(c.window, c.maxAge) // validated by the config
		e = &windowEntry{w: w}
		s.windows[key] = e
		// Forget windows no check used for a long while.
		if len(s.windows)%256 == 0 {
			for k, o := range s.windows {
				if now.Sub(o.lastUsed) > 10*o.w.MaxAge() {
					delete(s.windows, k)
				}
			}
		}
	}
	e.lastUsed = now
	return e.w
}

// noScale is the evaluation with no action, and why.
func noScale(eval *sdk.ScalingCheckEvaluation, count int64, reason string) *sdk.ScalingCheckEvaluation {
	eval.Action.Count = count
	eval.Action.Direction = sdk.ScaleDirectionNone
	eval.Action.Reason = "no scaling: " + reason
	return eval
}

// Run implements strategy.Strategy: read both hosts' usage (one
// nomadusage ReadHosts call), make one engine.Decide call, limit each
// host's count (placement, node state, steps) and return the role's count.
// Its result and error are redacted here, at the plugin boundary.
func (s *Strategy) Run(eval *sdk.ScalingCheckEvaluation, count int64) (*sdk.ScalingCheckEvaluation, error) {
	out, err := s.run(eval, count)
	conn := s.connection()
	err = redactError(conn, err)
	if out == nil || out.Action == nil {
		return out, err
	}
	redactAction(conn, out.Action)
	check := ""
	if out.Check != nil {
		check = out.Check.Name
	}
	if strings.HasPrefix(out.Action.Reason, "no scaling: ") {
		s.logger.Warn("no scaling", "check", check, "reason", strings.TrimPrefix(out.Action.Reason, "no scaling: "))
	} else {
		s.logger.Debug("decided", "check", check, "count", out.Action.Count, "direction", out.Action.Direction.String(),
			"first", out.Action.Meta[MetaFirstCount], "second", out.Action.Meta[MetaSecondCount], "reason", out.Action.Reason)
	}
	return out, err
}

func (s *Strategy) run(eval *sdk.ScalingCheckEvaluation, count int64) (*sdk.ScalingCheckEvaluation, error) {
	if eval == nil || eval.Check == nil || eval.Check.Strategy == nil {
		return nil, fmt.Errorf("%s: evaluation without a check strategy", StrategyName)
	}
	if eval.Action == nil {
		eval.Action = &sdk.ScalingAction{}
	}
	eval.Action.Canonicalize()
	c, err := s.config(eval.Check.Strategy.Config)
	if err != nil {
		return nil, fmt.Errorf("%s check %q: %w", StrategyName, eval.Check.Name, err)
	}
	s.mu.Lock()
	reader := s.reader
	s.mu.Unlock()
	if reader == nil {
		return nil, fmt.Errorf("%s: no Nomad connection: SetConfig was not called", StrategyName)
	}
	now := s.now()
	policy, _ := eval.Action.Meta["nomad_policy_id"].(string)
	checkKey := policy + "\x00" + eval.Check.Name

	ctx, cancel := context.WithTimeout(context.Background(), c.readTimeout)
	defer cancel()
	rds, err := reader.ReadHosts(ctx, []nomadusage.Query{c.first.query, c.second.query}, c.opts)
	if err != nil {
		return noScale(eval, count, deadlineErr(ctx, KeyReadTimeout, c.readTimeout, "reading the hosts' usage from Nomad", err).Error()), nil
	}
	if len(rds) != 2 || rds[0] == nil || rds[1] == nil {
		return nil, fmt.Errorf("%s: the usage reader returned %d readings for 2 hosts", StrategyName, len(rds))
	}
	var obs [2]engine.Observation
	var in [2]engine.HostInput
	req := &engine.Request{MinSamples: c.minSamples}
	for i, h := range c.hosts() {
		o, why := s.observe(checkKey, c, h, rds[i], eval.Metrics, now)
		if why != "" {
			return noScale(eval, count, why), nil
		}
		obs[i] = o
		source := h.model
		if source == "" {
			source = engine.DefaultModelFor(h.role)
		}
		p, err := engine.Models.LoadFor(h.role, source)
		if err != nil {
			return nil, fmt.Errorf("%s check %q: %w", StrategyName, eval.Check.Name, c.configError(err))
		}
		in[i] = engine.HostInput{Observation: &obs[i], Model: p, Quota: h.quota, MinSamples: c.minSamples}
		if i == 0 {
			req.FirstModel, req.FirstQuota = source, h.quota
		} else {
			req.SecondModel, req.SecondQuota = source, h.quota
		}
	}
	req.First, req.Second = obs[0], obs[1]
	digest := ""
	if s.logger.IsTrace() {
		if b, err := json.Marshal(req); err == nil {
			sum := sha256.Sum256(b)
			digest = hex.EncodeToString(sum[:8])
			s.logger.Trace("decision request", "check", eval.Check.Name, "digest", digest, "request", string(b))
		}
	}
	d, err := engine.Decide(in[0], in[1])
	if err != nil {
		if key, ok := c.keyFor(err); ok {
			return nil, fmt.Errorf("%s check %q: %w", StrategyName, eval.Check.Name, &ConfigError{Key: key, Reason: engine.Reason(err)})
		}
		if errors.Is(err, engine.ErrTooFewSamples) {
			return noScale(eval, count, fmt.Sprintf("keeping the current count: %v", err)), nil
		}
		if _, part, _, ok := engine.FieldOf(err); ok && part == engine.PartObservation {
			return noScale(eval, count, fmt.Sprintf("the engine refused the usage read: %v", err)), nil
		}
		return nil, fmt.Errorf("%s check %q: %w", StrategyName, eval.Check.Name, err)
	}
	if s.logger.IsTrace() {
		s.logger.Trace("decision", "check", eval.Check.Name, "explain", d.Explain())
	}
	plans := [2]hostPlan{c.plan(&c.first, &d.First, rds[0], &obs[0]), c.plan(&c.second, &d.Second, rds[1], &obs[1])}
	act(eval.Action, c, d, plans, count)
	if c.first.query.Job != "" {
		eval.Action.Meta[MetaJobModifyIndex] = rds[0].JobModifyIndex
	}
	if digest != "" {
		eval.Action.Meta[MetaRequestDigest] = digest
	}
	return eval, nil
}

// observe returns a host's observation, or why there is none.
func (s *Strategy) observe(checkKey string, c *strategyConfig, h *hostConfig, r *nomadusage.Reading, metrics sdk.TimestampedMetrics, now time.Time) (engine.Observation, string) {
	if h.usage == UsageAPM {
		return apmObservation(h, c, r, metrics, now)
	}
	if len(r.Observation.Samples) == 0 {
		return engine.Observation{}, fmt.Sprintf("%s host (%s): Nomad's reading carries no usage sample", h.role, h.query.Host)
	}
	// The reading's time is when Nomad took the stats (the oldest
	// allocation's, or the node's): old stats are no usage to decide on.
	if age := now.Sub(r.Time); age > c.maxAge {
		return engine.Observation{}, fmt.Sprintf("%s host (%s): usage is stale: Nomad's stats were taken at %s, %s ago, beyond %s = %s",
			h.role, h.query.Host, r.Time.UTC().Format(time.RFC3339), age.Round(time.Second), KeyMaxAge, c.maxAge)
	}
	w := s.window(checkKey+"\x00"+h.role+"\x00"+h.query.Host.String(), c, now)
	if err := w.Add(r); err != nil {
		return engine.Observation{}, fmt.Sprintf("%s host (%s): %v", h.role, h.query.Host, err)
	}
	o, err := w.Observation(now)
	if err != nil {
		return engine.Observation{}, fmt.Sprintf("%s host (%s): %v", h.role, h.query.Host, err)
	}
	return o, ""
}

// apmObservation takes the host's usage samples from the check's query
// result (CPU MHz summed over the host's replicas, newest last) and
// everything else from the Nomad reading. The engine judges the values.
func apmObservation(h *hostConfig, c *strategyConfig, r *nomadusage.Reading, metrics sdk.TimestampedMetrics, now time.Time) (engine.Observation, string) {
	o := r.Observation
	o.Samples = nil
	if len(metrics) == 0 {
		return engine.Observation{}, fmt.Sprintf("%s host: the check's query returned no usage metrics", h.role)
	}
	for _, m := range metrics {
		if now.Sub(m.Timestamp) > c.maxAge {
			continue
		}
		t := m.Timestamp.Unix()
		if n := len(o.Samples); n > 0 && o.Samples[n-1].Time >= t {
			o.Samples[n-1] = engine.Sample{Time: t, CPUMHz: m.Value}
			continue
		}
		o.Samples = append(o.Samples, engine.Sample{Time: t, CPUMHz: m.Value})
	}
	if len(o.Samples) == 0 {
		newest := metrics[len(metrics)-1].Timestamp
		return engine.Observation{}, fmt.Sprintf("%s host: usage is stale: the newest metric is %s old, max age %s", h.role, now.Sub(newest).Round(time.Second), c.maxAge)
	}
	if len(o.Samples) > c.window {
		o.Samples = o.Samples[len(o.Samples)-c.window:]
	}
	return o, ""
}

// hostPlan is how one host's count goes from the engine's decision to the
// count asked for.
type hostPlan struct {
	role      string
	decided   int // the engine's count
	current   int // where the limits start: the group's count, or its running replicas
	running   int
	placeable int
	final     int // the count asked for
	queued    int // of final, more than Nomad can place
	held      int // held back by the step limits
	limit     string
	refused   string
	notes     []string
}

// plan limits the engine's count of one host: placement (cap mode never
// asks for more than Nomad can place, running replicas aside), node state
// (a node that is down, draining or ineligible is never scaled up), then
// the step limits and hysteresis within the quota.
func (c *strategyConfig) plan(h *hostConfig, hd *engine.HostDecision, rd *nomadusage.Reading, o *engine.Observation) hostPlan {
	p := hostPlan{role: h.role, decided: hd.Containers, running: o.RunningReplicas, placeable: hd.Placement.Placeable,
		limit: hd.Limit, current: o.RunningReplicas}
	if h.query.Job != "" {
		p.current = rd.DesiredCount
	}
	if r := hd.Refused; r != nil {
		what := "new replica"
		if r.Running {
			what = "running replica"
		}
		p.refused = fmt.Sprintf("%s (%s): %s", r.Name, what, r.Resource)
	}
	target := p.decided
	if c.placement == PlacementCap {
		if bound := max(p.placeable, p.running); target > bound {
			p.notes = append(p.notes, fmt.Sprintf("placement cap: Nomad can place %d at today's reservations (%.0f MHz, %.0f MB free), not %d",
				bound, hd.Placement.FreeCPUMHz, hd.Placement.FreeMemoryMB, target))
			target = bound
		}
	}
	if why := rd.Node.Why(); why != "" && target > p.current {
		p.notes = append(p.notes, fmt.Sprintf("node %s %s: not scaled up from %d", rd.NodeName, why, p.current))
		target = p.current
	}
	st := c.steps.Apply(p.current, target, hd.Quota.Min, hd.Quota.Max)
	p.final = st.Count
	if st.Why != "" {
		p.held = st.Held
		p.notes = append(p.notes, fmt.Sprintf("%s (held back %d)", st.Why, abs(st.Held)))
	}
	if p.final > p.placeable {
		p.queued = p.final - p.placeable
		p.notes = append(p.notes, fmt.Sprintf("%d of %d will stay queued: Nomad can place %d at today's reservations", p.queued, p.final, p.placeable))
	}
	return p
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// summary is the plan in words, for the scaling reason.
func (p *hostPlan) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d (engine %d, bound by %s", p.role, p.final, p.decided, p.limit)
	if p.refused != "" {
		fmt.Fprintf(&b, ", first refused %s", p.refused)
	}
	b.WriteString(")")
	if len(p.notes) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(p.notes, "; "))
	}
	return b.String()
}

func (p *hostPlan) meta(m map[string]any) {
	m[HostMeta(p.role, MetaLimit)] = p.limit
	if p.refused != "" {
		m[HostMeta(p.role, MetaRefused)] = p.refused
	}
	m[HostMeta(p.role, MetaCurrent)] = p.current
	m[HostMeta(p.role, MetaPlaceable)] = p.placeable
	m[HostMeta(p.role, MetaQueued)] = p.queued
	m[HostMeta(p.role, MetaHeld)] = p.held
	if len(p.notes) > 0 {
		m[HostMeta(p.role, MetaHeldBy)] = strings.Join(p.notes, "; ")
	}
}

// act fills the action from the decision and the plans.
func act(a *sdk.ScalingAction, c *strategyConfig, d *engine.Decision, plans [2]hostPlan, count int64) {
	f, sc := &plans[0], &plans[1]
	firstReason, secondReason := d.First.Reason(), d.Second.Reason()
	a.Meta[MetaRole] = c.role
	a.Meta[MetaPlacement] = c.placement
	a.Meta[MetaFirstDecided] = f.decided
	a.Meta[MetaSecondDecided] = sc.decided
	a.Meta[MetaFirstReason] = firstReason
	a.Meta[MetaSecondReason] = secondReason
	a.Meta[MetaFirstMin], a.Meta[MetaFirstMax] = d.First.Quota.Min, d.First.Quota.Max
	a.Meta[MetaSecondMin], a.Meta[MetaSecondMax] = d.Second.Quota.Min, d.Second.Quota.Max
	f.meta(a.Meta)
	sc.meta(a.Meta)
	applyF, applyS := f.final, sc.final
	switch c.role {
	case RoleFirst:
		a.Count = int64(applyF)
		a.Reason = f.summary() + "; " + firstReason
	case RoleSecond:
		a.Count = int64(applyS)
		a.Reason = sc.summary() + "; " + secondReason
	default:
		step := ""
		if int64(applyF+applyS) == count && int64(f.current+sc.current) == count && (applyF != f.current || applyS != sc.current) {
			// Same sum, new split: the agent would skip an action whose
			// count equals the current one. Grow the growing group now;
			// the next evaluation shrinks the other.
			if applyF > f.current {
				applyS = sc.current
			} else {
				applyF = f.current
			}
			step = "1/2"
			a.Meta[MetaStep] = step
		}
		a.Count = int64(applyF + applyS)
		var b strings.Builder
		fmt.Fprintf(&b, "split %d = %d + %d", applyF+applyS, applyF, applyS)
		if step != "" {
			fmt.Fprintf(&b, " (step 1 of 2 towards %d + %d at an unchanged sum)", f.final, sc.final)
		}
		fmt.Fprintf(&b, "; %s; %s; %s; %s", f.summary(), sc.summary(), firstReason, secondReason)
		a.Reason = b.String()
	}
	a.Meta[MetaFirstCount] = applyF
	a.Meta[MetaSecondCount] = applyS
	switch {
	case a.Count > count:
		a.Direction = sdk.ScaleDirectionUp
	case a.Count < count:
		a.Direction = sdk.ScaleDirectionDown
	default:
		a.Direction = sdk.ScaleDirectionNone
	}
}
