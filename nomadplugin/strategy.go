package nomadplugin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	// host's quota bounds as the limits applied them, so that the
	// host-quota target keeps each group within its quota when the agent
	// clamped the sum. On a node Nomad places nothing new on, min is the
	// current count when that is below the quota's min (never scaled up).
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
	// MetaJob is the job the check decided for; the host-quota target
	// refuses an action decided for another job.
	MetaJob = "activation.job"
	// MetaNamespace is that job's namespace (the check's namespace, else
	// the agent's nomad_namespace, else Nomad's "default"); the host-quota
	// target refuses an action decided for a job of another namespace.
	MetaNamespace = "activation.namespace"
	// MetaRegion is the region of the job the strategy read (the job's own
	// Region); the host-quota target refuses an action decided for a job
	// of the same ID in another region (the plugins' Nomad settings
	// differing in nomad_region or address).
	MetaRegion = "activation.region"
	// MetaPlacement is the check's placement mode ("cap" or "report").
	MetaPlacement = "activation.placement"
	// MetaRequestDigest is set when the plugin logs at trace level (as an
	// external plugin it always does: the agent filters its logs): the
	// first 16 hex digits of the SHA-256 of the engine request's JSON,
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
	// MetaCurrent: the count the limits started from: with role "split"
	// the group's count in the job (its desired count, queued allocations
	// included); with role "first" or "second" the agent's current count
	// (what the target's Status reports), which the agent compares the
	// action with.
	MetaCurrent = "current"
	// MetaQuotaMin: the host's quota min as configured. MetaFirstMin and
	// MetaSecondMin carry the min the limits applied, lowered to the
	// current count on a node Nomad places nothing new on; the target reads
	// this one when it takes the quotas from an older scaling event, so
	// that a hold long past does not lower a group's min.
	MetaQuotaMin = "quota_min"
	// MetaPlaceable: how many replicas Nomad can place on the host at
	// today's reservations.
	MetaPlaceable = "placeable"
	// MetaQueued: how many of the count will stay queued (more than Nomad
	// can place).
	MetaQueued = "queued"
	// MetaHeld: how many replicas the hold band or the step limits held
	// back (the engine's count less the count asked for, after placement
	// and node state).
	MetaHeld = "held"
	// MetaHeldBy: the plan's notes on the engine's count, in words: the
	// limits that changed it, other groups' replicas counted as reserved
	// on the node, what will stay queued (set whether or not any held).
	MetaHeldBy = "held_by"
	// MetaHoldLow and MetaHoldHigh: with hold_band, the engine's hold
	// range (a current count within it stays).
	MetaHoldLow  = "hold_low"
	MetaHoldHigh = "hold_high"
	// MetaModelDigest: the digest of the model the host's count was
	// decided with (the decision's reason names its first characters).
	MetaModelDigest = "model_digest"
	// MetaMargin: the margin the host's count was decided at, in logits,
	// when it is not 0: the host's own (KeyMargin with its prefix), else
	// the check's KeyMargin.
	MetaMargin = "margin"
	// MetaGroup: the task group the host's count was decided for; the
	// host-quota target refuses to write it to another group.
	MetaGroup = "group"
	// MetaClaimed: how many replicas of other groups this plugin asked
	// for on the host's node, not shown placed in the node's allocation
	// list the reading used, were counted as reserved (see claimLedger).
	MetaClaimed = "claimed"
)

// HostMeta is the per-host meta key of role ("first" or "second").
func HostMeta(role, name string) string { return "activation." + role + "." + name }

// usageReader reads the hosts' usage; *nomadusage.Reader is the real one.
type usageReader interface {
	ReadHosts(ctx context.Context, qs []nomadusage.Query, opts nomadusage.Options) ([]*nomadusage.Reading, error)
}

var _ strategy.Strategy = (*Strategy)(nil)

// Strategy is the activation-quota strategy plugin.
type Strategy struct {
	logger hclog.Logger
	now    func() time.Time

	mu        sync.Mutex
	reader    usageReader
	conn      *nomadconn.Conn
	modelDir  string // model_dir: where every check's model file must be ("": anywhere)
	fixedRead bool   // the reader came from withReader
	configs   map[string]*strategyConfig
	configGen uint64 // SetConfig calls: a config parsed before one is not cached after it
	// afterParse, when set (tests), runs between parsing a check's config
	// and caching it.
	afterParse func()
	windows    map[string]*windowEntry
	// decisions is what each check's last decision left to remember
	// (see checkMemo), by decisionKey.
	decisions map[string]*checkMemo
	claims    claimLedger
	// placing serializes what runs between reading the claims and
	// recording an evaluation's own (the engine call, in memory), so that
	// two evaluations of groups on one node never both take its room.
	placing sync.Mutex
}

type windowEntry struct {
	w        *nomadusage.Window
	lastUsed time.Time
	// added counts the readings of distinct stats times added since the
	// last decision on the window (a reading that repeats the last one's
	// time, stats collected less often than the agent evaluates, adds
	// none); lastAt is the last one's time.
	added  int
	lastAt time.Time
	// decidedAt is when the window's last decision was made, actedAt
	// when the last one that changed the count was (zero: none yet).
	decidedAt, actedAt time.Time
	// apmRan, for a host read from the APM (whose samples are not
	// added to w), is one replica's usage as the engine read it at the
	// last evaluation with replicas running, and apmDemand the replica
	// demand then (see apmStopped).
	apmRan    []engine.Sample
	apmDemand [2]float64
	apmAt     time.Time // when apmRan was kept
	apmNone   bool      // an evaluation with none running came since
}

// starved is, among the Nomad-read windows of a check's hosts whose
// observation (obs[i], hosts[i]'s) holds fewer than need samples, the most
// readings of distinct stats times added to one since its last decision:
// more than need, and samples leave the window (max_age) faster than
// readings fill it.
func (s *Strategy) starved(check string, c *strategyConfig, hosts []*hostConfig, obs []engine.Observation, need int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	most := 0
	for i, h := range hosts {
		e, ok := s.windows[windowKey(check, c, h)]
		if !ok || h.usage == UsageAPM || len(obs[i].Samples) >= need {
			continue
		}
		most = max(most, e.added)
	}
	return most
}

// decided restarts the count of readings added to the check's windows,
// and notes when they were decided on.
func (s *Strategy) decided(check string, c *strategyConfig, hosts []*hostConfig, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range hosts {
		if e, ok := s.windows[windowKey(check, c, h)]; ok {
			e.added = 0
			e.decidedAt = now
		}
	}
}

// acted notes that the check's decision at now changed the count (the
// agent's cooldown follows).
func (s *Strategy) acted(check string, c *strategyConfig, hosts []*hostConfig, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range hosts {
		if e, ok := s.windows[windowKey(check, c, h)]; ok {
			e.actedAt = now
		}
	}
}

// agedSinceAction is, among the Nomad-read windows of a check's hosts
// whose observation holds fewer than need samples, that were not decided
// on since their last scaling action (these are the first evaluations
// after it) and whose samples read while replicas ran in the max_age
// before it, aged out since, would have made need, the longest time
// since that action (0 when there is none).
func (s *Strategy) agedSinceAction(check string, c *strategyConfig, hosts []*hostConfig, obs []engine.Observation, need int, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var most time.Duration
	for i, h := range hosts {
		e, ok := s.windows[windowKey(check, c, h)]
		if !ok || h.usage == UsageAPM || len(obs[i].Samples) >= need || e.actedAt.IsZero() || e.decidedAt.After(e.actedAt) {
			continue
		}
		// Enough samples from the max_age before the action, aged out
		// since, to have decided on (not readings with none running,
		// which a scale-up from 0 leaves out whatever their age).
		if len(obs[i].Samples)+e.w.AgedSince(e.actedAt.Add(-c.maxAge), now) < need {
			continue
		}
		most = max(most, now.Sub(e.actedAt))
	}
	return most
}

// strategyOption configures a Strategy made by newStrategy (tests and
// benchmarks).
type strategyOption func(*Strategy)

// withReader makes the strategy read usage through r instead of the Nomad
// connection SetConfig builds.
func withReader(r usageReader) strategyOption {
	return func(s *Strategy) { s.reader, s.fixedRead = r, true }
}

// withClock sets the strategy's clock.
func withClock(now func() time.Time) strategyOption { return func(s *Strategy) { s.now = now } }

// NewStrategy returns the strategy; logger is the one the plugin SDK gives.
func NewStrategy(logger hclog.Logger) *Strategy { return newStrategy(logger) }

func newStrategy(logger hclog.Logger, opts ...strategyOption) *Strategy {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s := &Strategy{logger: logger, now: time.Now, configs: map[string]*strategyConfig{}, windows: map[string]*windowEntry{},
		decisions: map[string]*checkMemo{}}
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
	modelDir, err := parseModelDir(config)
	if err != nil {
		return fmt.Errorf("%s: %w", StrategyName, err)
	}
	pc, err := connect(config, strategyPluginKeys, PluginKeyModelDir)
	if err != nil {
		return fmt.Errorf("%s: %w", StrategyName, err)
	}
	pc.warn(s.logger)
	s.mu.Lock()
	old := s.conn
	s.conn, s.modelDir = pc.conn, modelDir
	if !s.fixedRead {
		s.reader = &nomadusage.Reader{Client: pc.conn.Client(), Now: s.now}
	}
	s.configs = map[string]*strategyConfig{}
	s.configGen++
	s.mu.Unlock()
	// (an agent reload configures a plugin again: the old connection's
	// idle keep-alives would otherwise stay open until they time out)
	if old != nil {
		old.CloseIdleConnections()
	}
	return nil
}

// config parses a check's config once per distinct map; reader is the
// usage reader, taken with it.
func (s *Strategy) config(m map[string]string) (*strategyConfig, usageReader, error) {
	key := canonical(m)
	s.mu.Lock()
	c, ok := s.configs[key]
	reader := s.reader
	gen := s.configGen
	ns, modelDir := "", s.modelDir
	if s.conn != nil {
		ns = s.conn.Namespace()
	}
	s.mu.Unlock()
	if !ok {
		var err error
		if c, err = parseStrategyConfig(m, ns, modelDir); err != nil {
			return nil, nil, err
		}
		if s.afterParse != nil {
			s.afterParse()
		}
		s.mu.Lock()
		if len(s.configs) > 4096 {
			s.configs = map[string]*strategyConfig{}
		}
		// A SetConfig meanwhile (an agent reload) may have changed the
		// agent's namespace c was parsed with: c serves this evaluation
		// only, not the cache of the new configuration.
		if s.configGen == gen {
			s.configs[key] = c
		}
		s.mu.Unlock()
	}
	if reader == nil {
		return nil, nil, fmt.Errorf("no Nomad connection: SetConfig was not called")
	}
	return c, reader, nil
}

// window returns the usage window kept for one host of one check.
func (s *Strategy) window(key string, c *strategyConfig, now time.Time) *windowEntry {
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
	return e
}

// checkMemo is what a check's last decision left to remember.
type checkMemo struct {
	// short is the decision in short (see decisionChanged).
	short string
	// unappliedSaid: the decision in short was logged at info level as
	// decided again, not applied (see decisionChanged).
	unappliedSaid bool
	// moved: the last decision had a direction (up or down).
	moved bool
	// models are the digests of the models the last decision used, by
	// host role (see modelSeen).
	models map[string]string
	// loweredAt, when set, is the groups' counts at which the last
	// decision was a split's first step that lowered the sum (an
	// overloaded group first).
	loweredAt []int
	// parked are the host roles whose group the last decision kept at 0
	// by what its stopped replicas used (see parkedSeen).
	parked map[string]bool
}

// decisionKey names a check's decisions: its name and every host it
// reads, as its windows do (two policies may share a check name).
func decisionKey(check string, c *strategyConfig) string {
	var b strings.Builder
	b.WriteString(c.role)
	for _, h := range c.readHosts() {
		b.WriteString("\x00")
		b.WriteString(windowKey(check, c, h))
	}
	return b.String()
}

// memo returns key's memo, made when there is none; s.mu must be held.
func (s *Strategy) memo(key string) *checkMemo {
	m, ok := s.decisions[key]
	if !ok {
		if len(s.decisions) >= maxDecisionsKept {
			clear(s.decisions) // many checks gone: each starts afresh
		}
		m = &checkMemo{}
		s.decisions[key] = m
	}
	return m
}

// decisionChanged records a's decision in short as key's last, and says
// whether it differs from the one recorded before (or none was), and
// whether it is that decision again with a direction after one with a
// direction, once per decision: the count has not moved to it (an applied
// action is decided again with direction none), as when another check of
// the policy outvoted it. After a decision with direction none, the same
// decision with a direction is the count moved away (an operator's edit),
// not a decision left unapplied.
func (s *Strategy) decisionChanged(key string, a *sdk.ScalingAction) (changed, unapplied bool) {
	// Not the direction (an action the agent applied is the same
	// decision at the next evaluation, direction none; the agent logs
	// its scaling), nor the first refused slot's number (it moves with
	// the models' count under a quota's clamp, the action unchanged):
	// its kind (running or new replica) and resource only, so that a
	// group held at 0 for what its stopped replicas used says so once.
	refused := func(role string) string {
		r, _ := a.Meta[HostMeta(role, MetaRefused)].(string)
		_, kind, _ := strings.Cut(r, " ")
		return kind
	}
	short := fmt.Sprintf("%v|%v|%v|%v|%v|%v|%v", a.Count, a.Meta[MetaFirstCount], a.Meta[MetaSecondCount],
		a.Meta[HostMeta(RoleFirst, MetaLimit)], refused(RoleFirst), a.Meta[HostMeta(RoleSecond, MetaLimit)], refused(RoleSecond))
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.memo(key)
	changed = m.short != short
	moved := a.Direction != sdk.ScaleDirectionNone
	movedBefore := m.moved
	m.short, m.moved = short, moved
	if changed || !moved || !movedBefore {
		m.unappliedSaid = false
		return changed, false
	}
	unapplied = !m.unappliedSaid
	m.unappliedSaid = true
	return false, unapplied
}

// modelSeen logs at INFO level when a check's host decides with another
// model than at its last evaluation (a model file rewritten or replaced
// while the agent runs): the decision lines name only the digest's first
// characters, and an unchanged count is logged at DEBUG level.
func (s *Strategy) modelSeen(key, check, job, role, source, digest string) {
	s.mu.Lock()
	m := s.memo(key)
	if m.models == nil {
		m.models = map[string]string{}
	}
	prev := m.models[role]
	m.models[role] = digest
	s.mu.Unlock()
	if prev != "" && prev != digest {
		s.logger.Info("model changed", "check", check, "job", job, "host", role, "source", source, "from", prev, "to", digest)
	}
}

// parkedSeen logs at WARN level when a check's host group comes to stay
// at 0 because its replicas stopped for their usage (the engine counts the
// next one at what they used, so it starts only when the host has that
// room: with a quota min of 0 it may never), and at INFO when it leaves
// that state: once each, not at every evaluation (a soak trial saw a group
// parked for 17 minutes with debug lines only).
func (s *Strategy) parkedSeen(key, check, job, role string, parked bool, why string) {
	s.mu.Lock()
	m := s.memo(key)
	if m.parked == nil {
		m.parked = map[string]bool{}
	}
	was := m.parked[role]
	m.parked[role] = parked
	s.mu.Unlock()
	switch {
	case parked && !was:
		s.logger.Warn("group stays at 0", "check", check, "job", job, "host", role,
			"why", why, "action", "it starts again when the host has room for one replica at what the stopped ones used; raise the host's quota min to keep one running, or scale it by hand")
	case !parked && was:
		s.logger.Info("group no longer held at 0", "check", check, "job", job, "host", role)
	}
}

// loweredBefore says whether key's last decision was a split's first step
// that lowered the sum at these same counts: the agent did not apply it
// (it raises a count below the policy's min, and then skips an action at
// the current count), so this one must not lower it again.
func (s *Strategy) loweredBefore(key string, current []int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.decisions[key]
	return ok && m.loweredAt != nil && slices.Equal(m.loweredAt, current)
}

// noteLowered records whether key's decision at current lowered the sum
// in a split's first step.
func (s *Strategy) noteLowered(key string, current []int, lowered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.memo(key)
	m.loweredAt = nil
	if lowered {
		m.loweredAt = slices.Clone(current)
	}
}

// maxDecisionsKept bounds the checks whose last decision is remembered.
const maxDecisionsKept = 4096

// noScalingPrefix starts the reason of an evaluation with no action.
const noScalingPrefix = "no scaling: "

// outcome is how an evaluation ended, for the plugin's log: an action, an
// expected state with no action (a window still filling), or a failure
// with no action (Nomad unreadable, stale or refused usage).
type outcome int

const (
	outcomeDecided outcome = iota
	outcomeExpected
	outcomeFailed
)

// noScale is the evaluation with no action, and why.
func noScale(eval *sdk.ScalingCheckEvaluation, count int64, reason string) *sdk.ScalingCheckEvaluation {
	eval.Action.Count = count
	eval.Action.Direction = sdk.ScaleDirectionNone
	eval.Action.Reason = noScalingPrefix + reason
	return eval
}

// Run implements strategy.Strategy: read the role's hosts' usage (one
// nomadusage ReadHosts call: both hosts for role "split", the role's host
// otherwise), make one engine.Decide call, limit each host's count
// (placement, node state, steps) and return the role's count. Everything
// it returns came through nomadconn, which redacts Nomad's answers.
func (s *Strategy) Run(eval *sdk.ScalingCheckEvaluation, count int64) (*sdk.ScalingCheckEvaluation, error) {
	if eval == nil || eval.Check == nil || eval.Check.Strategy == nil {
		return nil, fmt.Errorf("%s: evaluation without a check strategy", StrategyName)
	}
	if eval.Action == nil {
		eval.Action = &sdk.ScalingAction{}
	}
	eval.Action.Canonicalize()
	c, reader, err := s.config(eval.Check.Strategy.Config)
	if err != nil {
		return nil, checkErr(eval.Check, err)
	}
	if count < 0 {
		// The agent passes the target's count (its dry-run marker, -1, is
		// set on the action it applies, never passed here).
		return nil, checkErr(eval.Check, fmt.Errorf("the target's current count is %d; a count is >= 0", count))
	}
	for _, h := range c.readHosts() {
		if h.usage == UsageAPM && strings.TrimSpace(eval.Check.Query) == "" {
			// Every evaluation would find no metrics, a warning each time.
			err := &ConfigError{Key: h.role + "_" + KeyUsage, Reason: fmt.Sprintf("is %q, but the check has no query: give the check a query for the host's CPU (MHz summed over its replicas), or read the host from Nomad", UsageAPM)}
			return nil, checkErr(eval.Check, err)
		}
	}
	e := &checkRun{s: s, c: c, eval: eval, count: count, now: s.now()}
	how, err := e.run(reader)
	// Whatever Nomad's answers put in a reason or an error, no secret
	// leaves the plugin (the connection redacts its answers already).
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if err != nil {
		return nil, conn.Redact(checkErr(eval.Check, err))
	}
	if conn != nil {
		redactAction(conn, eval.Action)
	}
	s.log(eval, c, how)
	return eval, nil
}

// checkErr is Run's error for the check, saying what the agent (v0.4.6,
// policyeval's base worker) does with it: it leaves an erring check out of
// the policy's merge, so that the other checks decide alone and may scale
// down (where a check that cannot see its hosts votes none and holds
// them), unless the check's on_error is "fail", or it is unset and the
// policy's on_check_error is "fail". Neither key crosses the plugin's gRPC
// boundary (the agent sends a check's name, source, query, window and
// strategy only), so the note is always given.
func checkErr(check *sdk.ScalingPolicyCheck, err error) error {
	return fmt.Errorf("%s check %q: %w (the agent leaves an erring check out and the policy's other checks decide alone, scale-downs included, unless the check's on_error is %q, or it is unset and the policy's on_check_error is %q)",
		StrategyName, check.Name, err, sdk.ScalingPolicyOnErrorFail, sdk.ScalingPolicyOnErrorFail)
}

// log writes the evaluation's outcome: a decision at info level when it
// differs from the check's last one (its counts, what bound each host and
// the kind of its first refused replica), else at debug level; no action at info level
// when it was expected, at warn level otherwise. The agent logs no action
// it skips, so a group held where it is (at 0, say) is explained at info
// level once, when that starts. The check name alone does not tell two
// policies apart (every example's check is "activation"), so each line
// also names the job.
func (s *Strategy) log(eval *sdk.ScalingCheckEvaluation, c *strategyConfig, how outcome) {
	a, job := eval.Action, c.job()
	switch how {
	case outcomeDecided:
		level := hclog.Debug
		changed, unapplied := s.decisionChanged(decisionKey(eval.Check.Name, c), a)
		if changed || unapplied {
			level = hclog.Info
		}
		args := []any{"check", eval.Check.Name, "job", job, "count", a.Count, "direction", a.Direction.String()}
		if unapplied {
			args = append(args, "again", "the last evaluation decided this too and the count has not moved to it: another check of the policy may have outvoted it (in split mode the direction is the sum's), the policy's min or max clamped it, the target skipped or failed it, the agent runs dry, or the target's count lags (the built-in nomad-target reports running allocations)")
		}
		// (a per-host role decides one host: the other has no count)
		for _, h := range []struct{ key, meta string }{{"first", MetaFirstCount}, {"second", MetaSecondCount}} {
			if v, ok := a.Meta[h.meta]; ok {
				args = append(args, h.key, v)
			}
		}
		s.logger.Log(level, "decided", append(args, "reason", a.Reason)...)
	case outcomeExpected:
		s.logger.Info("no scaling", "check", eval.Check.Name, "job", job, "reason", strings.TrimPrefix(a.Reason, noScalingPrefix))
	default:
		s.logger.Warn("no scaling", "check", eval.Check.Name, "job", job, "reason", strings.TrimPrefix(a.Reason, noScalingPrefix))
	}
}

// checkRun is one evaluation of a check.
type checkRun struct {
	s     *Strategy
	c     *strategyConfig
	eval  *sdk.ScalingCheckEvaluation
	count int64
	now   time.Time
}

// run reads, decides, limits and acts; a state with no action is the
// evaluation's reason, an error a configuration or programming fault.
func (e *checkRun) run(reader usageReader) (outcome, error) {
	hosts := e.c.readHosts()
	rds, why := e.read(reader, hosts)
	if why != "" {
		e.noScale(why)
		return outcomeFailed, nil
	}
	e.s.placing.Lock()
	defer e.s.placing.Unlock()
	obs := make([]engine.Observation, len(hosts))
	claimed := make([]claimedOnNode, len(hosts))
	current := make([]int, len(hosts))
	for i, h := range hosts {
		current[i] = int(e.count)
		if e.c.role == RoleSplit {
			current[i] = rds[i].DesiredCount
		}
		if why := othersAsReplicas(h, rds[i], current[i]); why != "" {
			e.noScale(why)
			return outcomeFailed, nil
		}
		if why := groupElsewhere(h, rds[i]); why != "" {
			e.noScale(why)
			return outcomeFailed, nil
		}
		if obs[i], why = e.s.observe(e.eval.Check.Name, e.c, h, rds[i], e.eval.Metrics, e.now); why != "" {
			e.noScale(why)
			return outcomeFailed, nil
		}
		if k := readingKey(rds[i]); k.node != "" {
			// Whether a claim was carried out is the job's count for the
			// group, which a write changes at once: the agent's count may
			// be the group's running allocations (the built-in
			// nomad-target), which lag behind while new ones start.
			e.s.claims.settle(k, rds[i].DesiredCount)
		}
		claimed[i] = e.claimedByOthers(rds[i])
	}
	d, how, err := e.decide(hosts, obs)
	if d == nil {
		return how, err
	}
	plans := make([]hostPlan, len(hosts))
	for i, h := range hosts {
		hd := d.of(h.role)
		if i > 0 && rds[i].NodeID != "" && rds[i].NodeID == rds[0].NodeID {
			// Both hosts are one node: the first host's new replicas
			// take room the second's reading still shows free.
			claimed[i].addSibling(plans[0], d.of(hosts[0].role).Placement)
		}
		claimed[i].bound(hd, obs[i])
		plans[i] = e.c.plan(h, hd, rds[i], &obs[i], current[i])
		claimed[i].note(&plans[i], rds[i].NodeName)
	}
	key := decisionKey(e.eval.Check.Name, e.c)
	for i, h := range hosts {
		hd := d.of(h.role)
		e.s.parkedSeen(key, e.eval.Check.Name, e.c.job(), h.role, plans[i].final == 0 && hd.Evidence.Basis == engine.BasisStopped, hd.Evidence.Note)
	}
	act(e.eval.Action, e.c, plans, e.count, e.s.loweredBefore(key, current))
	if e.eval.Action.Direction != sdk.ScaleDirectionNone {
		e.s.acted(e.eval.Check.Name, e.c, hosts, e.now)
	}
	_, step := e.eval.Action.Meta[MetaStep]
	e.s.noteLowered(key, current, step && e.eval.Action.Count < e.count)
	e.claim(hosts, rds, plans, d)
	if hosts[0].query.Job != "" {
		e.eval.Action.Meta[MetaJobModifyIndex] = rds[0].JobModifyIndex
		if r := rds[0].Region; r != "" {
			e.eval.Action.Meta[MetaRegion] = r
		}
	}
	return outcomeDecided, nil
}

func (e *checkRun) noScale(why string) { noScale(e.eval, e.count, why) }

// read reads the hosts within read_timeout; why says why not.
func (e *checkRun) read(reader usageReader, hosts []*hostConfig) ([]*nomadusage.Reading, string) {
	ctx, cancel := context.WithTimeout(context.Background(), e.c.readTimeout)
	defer cancel()
	qs := make([]nomadusage.Query, len(hosts))
	for i, h := range hosts {
		qs[i] = h.query
	}
	rds, err := reader.ReadHosts(ctx, qs, e.c.opts)
	if err != nil {
		return nil, deadlineErr(ctx, KeyReadTimeout, e.c.readTimeout, "reading the hosts' usage from Nomad", err).Error()
	}
	if len(rds) != len(hosts) || slices.Contains(rds, nil) {
		return nil, fmt.Sprintf("the usage reader returned %d readings for %d hosts", len(rds), len(hosts))
	}
	return rds, ""
}

// decision is the engine's decision of the hosts read.
type decision struct{ d *engine.Decision }

func (d decision) of(role string) *engine.HostDecision {
	if role == engine.RoleFirst {
		return &d.d.First
	}
	return &d.d.Second
}

// decide makes the one engine.Decide call. A per-host role reads and
// decides one host, and engine.Decide takes both: the other slot gets the
// same observation with the other role's built-in model and default quota,
// and its decision is discarded (no Nomad read is made for it). A nil
// decision comes with the outcome: no action (the evaluation's reason
// says why) or an error.
func (e *checkRun) decide(hosts []*hostConfig, obs []engine.Observation) (*decision, outcome, error) {
	in, req, err := e.inputs(hosts, obs)
	if err != nil {
		return nil, outcomeFailed, err
	}
	e.traceRequest(req)
	d, err := engine.Decide(in[0], in[1])
	if err != nil {
		err = e.ownHost(e.oneError(err))
		if key, ok := e.c.keyFor(err); ok {
			return nil, outcomeFailed, &ConfigError{Key: key, Reason: itemReason(err)}
		}
		if errors.Is(err, engine.ErrTooFewSamples) {
			e.noScale(fmt.Sprintf("keeping the current count: %v", err))
			// A window fills with min_samples readings of distinct stats
			// times; one that has taken twice that many and still holds
			// too few loses its samples to max_age before enough gather
			// (max_age below the time between readings times
			// min_samples - 1): say so at warn level, not as a window
			// still filling.
			need := e.c.minSamples
			if need == 0 {
				need = engine.DefaultMinSamples
			}
			if n := e.s.starved(e.eval.Check.Name, e.c, hosts, obs, need); n > 2*need {
				e.noScale(fmt.Sprintf("keeping the current count: %v; the window has taken %d readings since its last decision and holds too few: its samples age out (%s %s) before %d gather; raise %s above the time between new stats times (the larger of the evaluation interval and the clients' stats collection interval) x %d",
					err, n, KeyMaxAge, e.c.maxAge, need, KeyMaxAge, need-1))
				return nil, outcomeFailed, nil
			}
			// The first evaluations after a scaling action, whose
			// samples from before it aged out while none was read (the
			// agent's cooldown): every action then waits for min_samples
			// new readings. A setting to change: warn level.
			if since := e.s.agedSinceAction(e.eval.Check.Name, e.c, hosts, obs, need, e.now); since > 0 {
				e.noScale(fmt.Sprintf("keeping the current count: %v; the last scaling action was %s ago and the samples read before it aged out (%s %s): if the policy's cooldown is that long, every action waits for %d new readings; keep %s above the cooldown plus %d intervals between new stats times (a changed %s starts the window afresh: a group stopped for its usage is then tried again at its demand)",
					err, since.Round(time.Second), KeyMaxAge, e.c.maxAge, need, KeyMaxAge, need-1, KeyMaxAge))
				return nil, outcomeFailed, nil
			}
			return nil, outcomeExpected, nil
		}
		if _, part, _, ok := engine.FieldOf(err); ok && part == engine.PartObservation {
			e.noScale(fmt.Sprintf("the engine refused the usage read: %v", err))
			return nil, outcomeFailed, nil
		}
		return nil, outcomeFailed, err
	}
	e.s.decided(e.eval.Check.Name, e.c, hosts, e.now)
	if e.s.logger.IsTrace() {
		// The job and the request's digest tell apart two policies
		// whose checks share a name, as on the request's line.
		// A per-host check's other slot is discarded: its account would
		// read as another host's.
		var explain string
		if e.c.role == RoleSplit {
			explain = d.Explain()
		} else {
			explain = decision{d}.of(e.c.role).Explain()
		}
		e.s.logger.Trace("decision", "check", e.eval.Check.Name, "job", e.c.job(), "digest", e.eval.Action.Meta[MetaRequestDigest], "explain", explain)
	}
	return &decision{d}, outcomeDecided, nil
}

// inputs are the engine's two host inputs and the request that logs them.
func (e *checkRun) inputs(hosts []*hostConfig, obs []engine.Observation) ([2]engine.HostInput, *engine.Request, error) {
	var in [2]engine.HostInput
	req := &engine.Request{MinSamples: e.c.minSamples, HoldBand: e.c.holdBand, Margin: e.c.margin}
	for i, h := range hosts {
		source := h.model
		if source == "" {
			source = engine.DefaultModelFor(h.role)
		}
		p, err := e.c.loadModel(h, source)
		if err != nil {
			return in, nil, err
		}
		if err := h.checkPin(p); err != nil {
			return in, nil, err
		}
		e.s.modelSeen(decisionKey(e.eval.Check.Name, e.c), e.eval.Check.Name, e.c.job(), h.role, source, p.Digest())
		slot := roleIndex(h.role)
		in[slot] = engine.HostInput{Observation: &obs[i], Model: p, Quota: h.quota, MinSamples: e.c.minSamples, HoldBand: e.c.holdBand, Margin: e.c.marginOf(h)}
		// (a relative model path as the strategy read it: in model_dir,
		// for explain wherever it runs)
		setRequestHost(req, h.role, obs[i], modelPath(source, e.c.modelDir), h.quota, h.margin)
	}
	if len(hosts) == 1 {
		// The other slot: the same observation, the other role's built-in
		// model and default quota; its decision is discarded.
		// (the second host takes no queue of new replicas: a first
		// host's, in the second slot, is dropped)
		other := otherRole(hosts[0].role)
		o := obs[0]
		if other == engine.RoleSecond {
			o.WantedReplicas, o.QueuedReplicas = 0, nil
		}
		in[roleIndex(other)] = engine.HostInput{Observation: &o, MinSamples: e.c.minSamples}
		setRequestHost(req, other, o, engine.DefaultModelFor(other), nil, nil)
	}
	return in, req, nil
}

// oneError is the one error of a decision the evaluation acts on when
// both hosts' inputs are wrong (engine.Errors): a per-host role's own
// host's, and otherwise the first that is not a window still filling
// (engine.ErrTooFewSamples), so that a refusal is never reported as
// waiting for samples.
func (e *checkRun) oneError(err error) error {
	errs := engine.Errors(err)
	if len(errs) == 1 {
		return errs[0]
	}
	if e.c.role != RoleSplit {
		return errs[roleIndex(e.c.role)] // the other slot's decision is discarded (decide)
	}
	for _, err := range errs {
		if !errors.Is(err, engine.ErrTooFewSamples) {
			return err
		}
	}
	return errs[0]
}

// ownHost maps an observation error of the discarded slot of a per-host
// role (which holds the role's own observation) to the role's host.
func (e *checkRun) ownHost(err error) error {
	if e.c.role == RoleSplit {
		return err
	}
	probs := engine.Problems(err) // every problem of it (Validate reports them all)
	changed := false
	for i, p := range probs {
		var oe *engine.ObservationError
		if errors.As(p, &oe) && oe.Host != e.c.role {
			own := *oe
			own.Host = e.c.role
			probs[i], changed = &own, true
		}
	}
	switch {
	case !changed:
		return err
	case len(probs) == 1:
		return probs[0]
	}
	return errors.Join(probs...)
}

// traceRequest logs the engine request in full at trace level and puts its
// digest in the action's meta, so that a scaling event can be matched with
// the request that made it.
func (e *checkRun) traceRequest(req *engine.Request) {
	if !e.s.logger.IsTrace() {
		return
	}
	b, err := json.Marshal(req)
	if err != nil {
		return
	}
	sum := sha256.Sum256(b)
	digest := hex.EncodeToString(sum[:8])
	e.s.logger.Trace("decision request", "check", e.eval.Check.Name, "job", e.c.job(), "digest", digest, "request", string(b))
	e.eval.Action.Meta[MetaRequestDigest] = digest
}

// roleIndex is a host's slot in engine.Decide: 0 first, 1 second.
func roleIndex(role string) int {
	if role == engine.RoleFirst {
		return 0
	}
	return 1
}

func otherRole(role string) string {
	if role == engine.RoleFirst {
		return engine.RoleSecond
	}
	return engine.RoleFirst
}

// setRequestHost sets one host of the request: its observation, model
// source, quota and own margin (nil: the request's Margin).
func setRequestHost(req *engine.Request, role string, o engine.Observation, source string, q *engine.QuotaSpec, margin *float64) {
	if margin != nil {
		m := *margin
		margin = &m
	}
	if role == engine.RoleFirst {
		req.First, req.FirstModel, req.FirstQuota, req.FirstMargin = o, source, q, margin
		return
	}
	req.Second, req.SecondModel, req.SecondQuota, req.SecondMargin = o, source, q, margin
}

// windowKey identifies a host's usage window: what its readings depend on
// (the job's namespace, job and group, the node selector, the warm-up that
// tells warming replicas), the window's shape (size and maximum age: a
// window of another shape is rebuilt), and the check's name and the host's
// role. The agent gives a strategy no policy ID over gRPC (the action it
// sends is empty), so two policies whose checks share a name are told
// apart by their jobs and nodes; two that read the very same usage into
// the same shape may share the window. Tuning how the reads are made
// (concurrency, sample, min_answered) keeps it.
func windowKey(check string, c *strategyConfig, h *hostConfig) string {
	q := &h.query
	return fmt.Sprintf("%q %s ns=%q job=%q group=%q host=%s warmup=%s window=%d max_age=%s",
		check, h.role, q.Namespace, q.Job, q.Group, q.Host, c.opts.Warmup, c.window, c.maxAge)
}

// observe returns a host's observation, or why there is none.
func (s *Strategy) observe(check string, c *strategyConfig, h *hostConfig, r *nomadusage.Reading, metrics sdk.TimestampedMetrics, now time.Time) (engine.Observation, string) {
	if h.usage == UsageAPM {
		o, why := apmObservation(h, c, r, metrics, now)
		if why != "" || h.query.QueuedReplicas != nil {
			return o, why
		}
		return s.apmStopped(windowKey(check, c, h), h.role, c, o, now), ""
	}
	if len(r.Observation.Samples) == 0 {
		if r.NoUsage != "" {
			return engine.Observation{}, fmt.Sprintf("%s host (%s): no usage to decide on: %s", h.role, h.query.Host, r.NoUsage)
		}
		return engine.Observation{}, fmt.Sprintf("%s host (%s): Nomad's reading carries no usage sample", h.role, h.query.Host)
	}
	// The reading's time is when Nomad took the stats (the allocations'
	// median, or the node's): old stats are no usage to decide on.
	if age := now.Sub(r.Time); age > c.maxAge {
		return engine.Observation{}, fmt.Sprintf("%s host (%s): usage is stale: Nomad's stats were taken at %s, %s ago, beyond %s = %s",
			h.role, h.query.Host, r.Time.UTC().Format(time.RFC3339), age.Round(time.Second), KeyMaxAge, c.maxAge)
	}
	// Stats from a clock far ahead of the agent's would become the
	// window's newest sample, and every reading after them would be
	// refused as older, until real time passed them (a day, for a clock a
	// day ahead): they are not taken.
	// (The clock read now, not the evaluation's start: a long read's
	// own times are not ahead.)
	if clock := s.now(); r.Time.Sub(clock) >= nomadusage.StatsLag {
		return engine.Observation{}, fmt.Sprintf("%s host (%s): usage is stamped ahead of this agent's clock: Nomad's stats were taken at %s, %s ahead of %s (%s or more): a client's clock set ahead? The reading is not used",
			h.role, h.query.Host, r.Time.UTC().Format(time.RFC3339), r.Time.Sub(clock).Round(time.Second), clock.UTC().Format(time.RFC3339), nomadusage.StatsLag)
	}
	if r.MemoryUnmeasured > 0 {
		s.logger.Debug("memory not measured", "check", check, "job", c.job(), "host", h.role, "allocations", r.MemoryUnmeasured,
			"note", "their stats carry no memory use (a driver that measures none): each counts at its memory reservation")
	}
	entry := s.window(windowKey(check, c, h), c, now)
	w := entry.w
	if err := w.Add(r); err != nil {
		return engine.Observation{}, fmt.Sprintf("%s host (%s): %v", h.role, h.query.Host, err)
	}
	// Only a reading that moves the stats time forward can add a sample
	// (one that repeats it, or is a little older, adds none).
	s.mu.Lock()
	if r.Time.After(entry.lastAt) {
		entry.added++
		entry.lastAt = r.Time
	}
	s.mu.Unlock()
	// A group this strategy may have stopped for its usage: what its
	// replicas used stands for a new one (see ObservationWithStopped);
	// not with a queue, which gives each new replica's size itself.
	var o engine.Observation
	var err error
	if h.query.QueuedReplicas != nil {
		o, err = w.Observation(now)
	} else {
		o, err = w.ObservationWithStopped(now, cmp.Or(c.minSamples, engine.DefaultMinSamples))
	}
	if err != nil {
		return engine.Observation{}, fmt.Sprintf("%s host (%s): %v", h.role, h.query.Host, err)
	}
	return o, ""
}

// apmStopped is, for a host read from the APM, what
// nomadusage.Window.ObservationWithStopped is for one read from Nomad:
// while replicas run it keeps o's samples as one replica's usage, as the
// engine reads them (over the warm replicas, or every running one; at the
// larger of their peak and the request when none is warm or their CPU is
// zero throughout); with none running, and at least min_samples kept for
// the same replica demand, those stand for one replica (StoppedReplicas
// 1), so that a group stopped for its usage is not started again at its
// request. The APM's points carry no replica count: each is read over
// the replicas running at the evaluation, as the engine reads them. Points
// the engine refuses (role's rules) are not kept.
func (s *Strategy) apmStopped(key, role string, c *strategyConfig, o engine.Observation, now time.Time) engine.Observation {
	e := s.window(key, c, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	demand := nomadusage.ReplicaDemand(&o)
	need := cmp.Or(c.minSamples, engine.DefaultMinSamples)
	if o.RunningReplicas > 0 {
		if len(o.Samples) < need {
			return o // too few to decide on: what was kept stands
		}
		if err := o.Validate(role); err != nil {
			// The engine refuses this observation (a NaN, an infinite
			// or negative figure from the query): what was kept stands,
			// so that it does not stand for the replicas once none run.
			return o
		}
		e.apmRan = nomadusage.OneReplica(e.apmRan[:0], &o)
		e.apmDemand, e.apmAt, e.apmNone = demand, now, false
		return o
	}
	if !e.apmNone && now.Sub(e.apmAt) > nomadusage.StoppedHorizon*c.maxAge {
		// The first evaluation with none running comes too long after
		// the last with replicas running (a policy paused, an APM
		// down): what they used then is not taken (as for a window).
		e.apmRan = e.apmRan[:0]
	}
	e.apmNone = true
	if len(e.apmRan) >= need && e.apmDemand == demand {
		o.Samples = slices.Clone(e.apmRan)
		o.StoppedReplicas = 1
	}
	return o
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
	// Points stamped far ahead of the agent's clock (an APM's clock set
	// ahead, or times in another unit) would pass max_age for as long as
	// they are ahead, and go on deciding after the APM's data stopped: as
	// with Nomad's stats, they are not used.
	ahead := metrics[0].Timestamp
	for _, m := range metrics[1:] {
		if m.Timestamp.After(ahead) {
			ahead = m.Timestamp
		}
	}
	if ahead.Sub(now) >= nomadusage.StatsLag {
		return engine.Observation{}, fmt.Sprintf("%s host: usage is stamped ahead of this agent's clock: the check's query gave a metric at %s, %s ahead of %s (%s or more): the APM's clock set ahead, or its times in another unit? The metrics are not used",
			h.role, ahead.UTC().Format(time.RFC3339), ahead.Sub(now).Round(time.Second), now.UTC().Format(time.RFC3339), nomadusage.StatsLag)
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

// othersAsReplicas says why a host read without a job cannot be decided
// on: every running allocation on its node counts as a replica of the
// scaled group, so allocations of other groups there (several groups
// running, or more running than the group's count) would have the count
// ask the group for their room too.
func othersAsReplicas(h *hostConfig, r *nomadusage.Reading, current int) string {
	if h.query.Job != "" {
		return ""
	}
	running := r.Observation.RunningReplicas
	if len(r.RunningGroups) <= 1 && running <= current {
		return ""
	}
	return fmt.Sprintf("%s host (%s): without %s, every running allocation on node %s counts as a replica of the scaled group, but it runs %d allocations of %d groups (%s) for a group count of %d: set %s and %s%s",
		h.role, h.query.Host, KeyJob, r.NodeName, running, len(r.RunningGroups), strings.Join(r.RunningGroups, ", "), current, KeyJob, h.prefix, KeyGroup)
}

// groupElsewhere says why a host's group cannot be decided on when it runs
// allocations on other nodes than the host's: its count is the host's
// count, so the replicas elsewhere would follow this node's usage and
// room (a selector that names the wrong node, or a group without a
// constraint to its host).
func groupElsewhere(h *hostConfig, r *nomadusage.Reading) string {
	if len(r.RunningElsewhere) == 0 {
		return ""
	}
	n, where := 0, make([]string, len(r.RunningElsewhere))
	for i, e := range r.RunningElsewhere {
		n += e.Count
		where[i] = fmt.Sprintf("%d on %s", e.Count, e.Node)
	}
	return fmt.Sprintf("%s host (%s): group %q of job %q runs %d allocation(s) on other nodes (%s) and %d on node %s, but its count is this host's count: select the node the group runs on, or constrain the group to node %s",
		h.role, h.query.Host, r.Group, r.Job, n, strings.Join(where, ", "), r.Observation.RunningReplicas, r.NodeName, r.NodeName)
}

// claimedOnNode is what other groups' claims added to a host's reading;
// sibling replicas, of those, are the first host's new replicas when both
// hosts of a split are one node.
type claimedOnNode struct {
	replicas       int
	cpu, mem       float64
	sibling        int
	sibCPU, sibMem float64
}

// addSibling counts the replicas the first host's plan adds to its
// group's count (at most what Nomad can place, as claim records them) as
// reserved, at what one of them reserves today. Replicas an earlier
// evaluation added are in the node's listing or the claims already.
func (c *claimedOnNode) addSibling(first hostPlan, pl engine.Placement) {
	n := max(0, first.placedOf(first.final)-first.current)
	c.replicas += n
	c.sibling += n
	c.sibCPU, c.sibMem = float64(n)*pl.ReplicaCPUMHz, float64(n)*pl.ReplicaMemoryMB
	c.cpu += c.sibCPU
	c.mem += c.sibMem
}

// readingKey is the claim key of the group a reading covers ("" node when it
// covers no group).
func readingKey(rd *nomadusage.Reading) claimKey {
	if rd.Job == "" || rd.NodeID == "" {
		return claimKey{}
	}
	return newClaimKey(rd.NodeID, rd.Namespace, rd.Job, rd.Group)
}

// claimedByOthers is the replicas this plugin asked for on the node of rd
// for other groups that Nomad's allocation list behind rd does not show
// placed.
func (e *checkRun) claimedByOthers(rd *nomadusage.Reading) claimedOnNode {
	k := readingKey(rd)
	if k.node == "" {
		return claimedOnNode{}
	}
	var c claimedOnNode
	c.replicas, c.cpu, c.mem = e.s.claims.others(k, rd.NodeGroups, e.now)
	return c
}

// bound takes the claimed replicas' reservations off what Nomad can place
// (hd's placement, from o). Only the placement: the engine's judgement of
// the room reads the reservations Nomad lists, so that two groups' counts
// on one node do not chase each other's fresh scale-ups at every
// evaluation.
func (c claimedOnNode) bound(hd *engine.HostDecision, o engine.Observation) {
	if c.replicas == 0 {
		return
	}
	o.OtherReservedCPUMHz += c.cpu
	o.OtherReservedMemoryMB += c.mem
	hd.Placement.Placeable = engine.Placeable(&o)
	hd.Placement.FreeCPUMHz -= c.cpu
	if hd.Placement.FreeMemoryMB > 0 {
		hd.Placement.FreeMemoryMB -= c.mem
	}
}

// note says in p what the claims added.
func (c claimedOnNode) note(p *hostPlan, node string) {
	p.claimed = c.replicas
	if c.sibling > 0 {
		p.notes = append([]string{fmt.Sprintf("the first host's %s on the same node %s %s as reserved in what Nomad can place (%.0f MHz, %.0f MB)",
			nReplicas(c.sibling, "new replica"), node, verb(c.sibling, "counts", "count"), c.sibCPU, c.sibMem)}, p.notes...)
	}
	if others := c.replicas - c.sibling; others > 0 {
		p.notes = append([]string{fmt.Sprintf("%s of other groups this plugin asked for on node %s, not placed in Nomad's allocation list it read, %s as reserved in what Nomad can place (%.0f MHz, %.0f MB)",
			nReplicas(others, "replica"), node, verb(others, "counts", "count"), c.cpu-c.sibCPU, c.mem-c.sibMem)}, p.notes...)
	}
}

// nReplicas writes n and noun, with the noun's plural unless n is 1: "1
// replica", "3 new replicas".
func nReplicas(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// verb is one's form of a verb when n is 1, else many's.
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// claim records the replicas the action adds on each host's node (at most
// what Nomad can place there), at what one replica reserves, so that other
// groups' readings count them until Nomad's allocation list shows them. An
// action the agent skips (no change) claims nothing.
func (e *checkRun) claim(hosts []*hostConfig, rds []*nomadusage.Reading, plans []hostPlan, d *decision) {
	if e.eval.Action.Direction == sdk.ScaleDirectionNone {
		return
	}
	for i, h := range hosts {
		k := readingKey(rds[i])
		if k.node == "" {
			continue
		}
		applied, _ := e.eval.Action.Meta[hostMetaKeys[h.role].count].(int)
		target := plans[i].placedOf(applied)
		pl := d.of(h.role).Placement
		// From the group's count in the job, as settle reads it: the
		// agent's count may be the running allocations (the built-in
		// nomad-target), below the job's while replicas are pending.
		e.s.claims.add(k, rds[i].DesiredCount, target, pl.ReplicaCPUMHz, pl.ReplicaMemoryMB, e.s.now())
	}
}
