package nomadplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
	MetaRole        = "activation.role"
	MetaFirstCount  = "activation.first.count"
	MetaSecondCount = "activation.second.count"
	// MetaFirstDecided and MetaSecondDecided are the engine's counts; they
	// differ from the counts above only on the first step of a two-step
	// split (see MetaStep).
	MetaFirstDecided  = "activation.first.decided"
	MetaSecondDecided = "activation.second.decided"
	MetaFirstReason   = "activation.first.reason"
	MetaSecondReason  = "activation.second.reason"
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
	// MetaRequestDigest is set only when the plugin logs at trace level:
	// the first 16 hex digits of the SHA-256 of the engine request's JSON,
	// which the "decision request" trace line carries in full, so that a
	// scaling event can be matched with the request that made it.
	MetaRequestDigest = "activation.request_digest"
)

// readTimeout bounds one evaluation's Nomad reads.
const readTimeout = 10 * time.Second

// UsageReader reads one host's usage; *nomadusage.Reader is the real one.
type UsageReader interface {
	Read(ctx context.Context, q nomadusage.Query) (*nomadusage.Reading, error)
}

var _ strategy.Strategy = (*Strategy)(nil)

// Strategy is the activation-quota strategy plugin.
type Strategy struct {
	logger hclog.Logger
	now    func() time.Time

	mu        sync.Mutex
	reader    UsageReader
	namespace string // the agent's nomad_namespace
	token     string // the agent's nomad_token, kept only to redact it
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
// API client SetConfig builds (tests and benchmarks).
func WithReader(r UsageReader) StrategyOption { return func(s *Strategy) { s.reader = r } }

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

// SetConfig implements base.Base: it receives the agent's Nomad settings
// (nomad_address, nomad_token, nomad_namespace...) and the plugin block's
// config, and builds the Nomad API client.
func (s *Strategy) SetConfig(config map[string]string) error {
	s.logger.Debug("set config", "keys", safeKeys(config))
	client, ns, token, err := nomadClient(config)
	if err != nil {
		return fmt.Errorf("%s: %w", StrategyName, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A reader given with WithReader stays; the Nomad reader follows the
	// agent's settings.
	if _, isNomad := s.reader.(*nomadusage.Reader); s.reader == nil || isNomad {
		s.reader = &nomadusage.Reader{Client: client, Now: s.now}
	}
	s.namespace, s.token = ns, token
	s.configs = map[string]*strategyConfig{}
	return nil
}

func (s *Strategy) config(m map[string]string) (*strategyConfig, error) {
	key := canonical(m)
	s.mu.Lock()
	c, ok := s.configs[key]
	ns := s.namespace
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

// noScale returns the evaluation with no action and says why.
func (s *Strategy) noScale(eval *sdk.ScalingCheckEvaluation, count int64, reason string) (*sdk.ScalingCheckEvaluation, error) {
	// Nomad's error texts may echo request details: never pass the token on.
	reason = nomadconn.RedactString(reason, s.tokenValue())
	s.logger.Warn("no scaling", "check", eval.Check.Name, "reason", reason)
	eval.Action.Count = count
	eval.Action.Direction = sdk.ScaleDirectionNone
	eval.Action.Reason = "no scaling: " + reason
	return eval, nil
}

func (s *Strategy) tokenValue() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

// Run implements strategy.Strategy: read both hosts' usage, make one
// engine.DecideRequest call, and return the role's count.
func (s *Strategy) Run(eval *sdk.ScalingCheckEvaluation, count int64) (*sdk.ScalingCheckEvaluation, error) {
	out, err := s.run(eval, count)
	return out, nomadconn.Redact(err, s.tokenValue())
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
		return nil, fmt.Errorf("%s: no Nomad client: SetConfig was not called", StrategyName)
	}
	now := s.now()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	policy, _ := eval.Action.Meta["nomad_policy_id"].(string)
	checkKey := policy + "\x00" + eval.Check.Name

	var obs [2]engine.Observation
	for i, h := range []*hostConfig{&c.first, &c.second} {
		o, why := s.observe(ctx, checkKey, c, h, eval.Metrics, reader, now)
		if why != "" {
			return s.noScale(eval, count, why)
		}
		obs[i] = o
	}
	req := &engine.Request{
		First: obs[0], Second: obs[1],
		FirstModel: c.first.model, SecondModel: c.second.model,
		FirstQuota: c.first.quota, SecondQuota: c.second.quota,
	}
	digest := ""
	if s.logger.IsTrace() {
		if b, err := json.Marshal(req); err == nil {
			sum := sha256.Sum256(b)
			digest = hex.EncodeToString(sum[:8])
			s.logger.Trace("decision request", "check", eval.Check.Name, "digest", digest, "request", string(b))
		}
	}
	d, err := engine.DecideRequest(req)
	if err != nil {
		var oe *engine.ObservationError
		if errors.As(err, &oe) {
			return s.noScale(eval, count, err.Error())
		}
		return nil, fmt.Errorf("%s check %q: %w", StrategyName, eval.Check.Name, err)
	}
	if s.logger.IsTrace() {
		s.logger.Trace("decision", "check", eval.Check.Name, "explain", d.Explain())
	}
	s.act(eval, c, d, obs, count)
	if digest != "" {
		eval.Action.Meta[MetaRequestDigest] = digest
	}
	s.logger.Debug("decided", "check", eval.Check.Name, "role", c.role, "count", eval.Action.Count,
		"first", d.First.Containers, "second", d.Second.Containers, "direction", eval.Action.Direction.String())
	return eval, nil
}

// observe returns a host's observation, or why there is none.
func (s *Strategy) observe(ctx context.Context, checkKey string, c *strategyConfig, h *hostConfig, metrics sdk.TimestampedMetrics, reader UsageReader, now time.Time) (engine.Observation, string) {
	r, err := reader.Read(ctx, h.query)
	if err != nil {
		return engine.Observation{}, fmt.Sprintf("%s host (%s): %v", h.role, h.query.Host, err)
	}
	if h.usage == UsageAPM {
		return apmObservation(h, c, r, metrics, now)
	}
	// The reading's time is when Nomad took the stats (the oldest
	// allocation's, or the node's): old stats are no usage to decide on.
	if age := now.Sub(r.Time); age > c.maxAge {
		return engine.Observation{}, fmt.Sprintf("%s host (%s): usage is stale: Nomad's stats were taken at %s, %s ago, beyond %s = %s",
			h.role, h.query.Host, r.Time.UTC().Format(time.RFC3339), age.Round(time.Second), KeyMaxAge, c.maxAge)
	}
	if err := r.Observation.Validate(h.role); err != nil {
		return engine.Observation{}, fmt.Sprintf("%s host (%s) usage refused: %v", h.role, h.query.Host, err)
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
// result and everything else from the Nomad reading.
func apmObservation(h *hostConfig, c *strategyConfig, r *nomadusage.Reading, metrics sdk.TimestampedMetrics, now time.Time) (engine.Observation, string) {
	o := r.Observation
	o.Samples = nil
	if len(metrics) == 0 {
		return engine.Observation{}, fmt.Sprintf("%s host: the check's query returned no usage metrics", h.role)
	}
	for _, m := range metrics {
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || m.Value < 0 {
			return engine.Observation{}, fmt.Sprintf("%s host: the check's query returned usage %v at %s; usage must be a finite number >= 0", h.role, m.Value, m.Timestamp.UTC().Format(time.RFC3339))
		}
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

// act fills the evaluation's action from the decision.
func (s *Strategy) act(eval *sdk.ScalingCheckEvaluation, c *strategyConfig, d *engine.Decision, obs [2]engine.Observation, count int64) {
	a := eval.Action
	f, sc := d.First.Containers, d.Second.Containers
	firstReason, secondReason := d.First.Reason(), d.Second.Reason()
	a.Meta[MetaRole] = c.role
	a.Meta[MetaFirstDecided] = f
	a.Meta[MetaSecondDecided] = sc
	a.Meta[MetaFirstReason] = firstReason
	a.Meta[MetaSecondReason] = secondReason
	a.Meta[MetaFirstMin], a.Meta[MetaFirstMax] = d.First.Quota.Min, d.First.Quota.Max
	a.Meta[MetaSecondMin], a.Meta[MetaSecondMax] = d.Second.Quota.Min, d.Second.Quota.Max
	applyF, applyS := f, sc
	switch c.role {
	case RoleFirst:
		a.Count = int64(f)
		a.Reason = firstReason
	case RoleSecond:
		a.Count = int64(sc)
		a.Reason = secondReason
	default:
		curF, curS := obs[0].RunningReplicas, obs[1].RunningReplicas
		step := ""
		if int64(f+sc) == count && int64(curF+curS) == count && (f != curF || sc != curS) {
			// Same sum, new split: the agent would skip an action whose
			// count equals the current one. Grow the growing group now;
			// the next evaluation shrinks the other.
			if f > curF {
				applyS = curS
			} else {
				applyF = curF
			}
			step = "1/2"
			a.Meta[MetaStep] = step
		}
		a.Count = int64(applyF + applyS)
		var b strings.Builder
		fmt.Fprintf(&b, "split %d = %d + %d", applyF+applyS, applyF, applyS)
		if step != "" {
			fmt.Fprintf(&b, " (step 1 of 2 towards %d + %d at an unchanged sum)", f, sc)
		}
		b.WriteString("; ")
		b.WriteString(firstReason)
		b.WriteString("; ")
		b.WriteString(secondReason)
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
