package nomadplugin

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad-autoscaler/sdk"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/nomadusage"
)

// stepFirstOfTwo is MetaStep's value on the first step of a split at an
// unchanged sum.
const stepFirstOfTwo = "1/2"

// hostPlan is how one host's count goes from the engine's decision to the
// count asked for.
type hostPlan struct {
	role    string
	decided int // the engine's count
	// clamped: the engine clamped unclamped into the quota to decide it
	clamped   bool
	unclamped int
	reason    string // the engine's one-line account
	current   int    // the group's count now (see MetaCurrent)
	// start is where the limits start: current, or below it what Nomad
	// can place when the excess is queued replicas (cap mode, with a job)
	start     int
	running   int
	placeable int
	lo, hi    int // the quota, as the limits applied it
	quotaMin  int // the quota's min as configured (lo may be lowered)
	final     int // the count asked for
	queued    int // of final, more than Nomad can place
	held      int // held back by the hold band and the step limits
	claimed   int // other groups' replicas claimed on the node, counted as reserved
	limit     string
	refused   string // the first refused slot in short (meta)
	why       string // and why, with its figures (the reason)
	hold      *engine.HoldRange
	notes     []string
	model     string  // the model's digest
	margin    float64 // the decision's margin, logits
}

// plan limits the engine's count of one host, from current: placement
// (cap mode never asks for more than Nomad can place, running replicas
// aside, unless the quota's min says more), node state (a node that is
// down, draining or ineligible is never scaled up, not even into the
// quota), the hold band (a current count within the engine's hold range
// stays, where placement and node state allow it), then the step limits
// and hysteresis within the quota (in cap mode, read with a job, from what
// Nomad can place when the current count is above it: the excess is queued
// replicas).
func (c *strategyConfig) plan(h *hostConfig, hd *engine.HostDecision, rd *nomadusage.Reading, o *engine.Observation, current int) hostPlan {
	p := hostPlan{role: h.role, decided: hd.Containers, reason: hd.Reason(), current: current, running: o.RunningReplicas,
		placeable: hd.Placement.Placeable, lo: hd.Quota.Min, hi: hd.Quota.Max, quotaMin: hd.Quota.Min, limit: hd.Limit, refused: refusedSlot(hd.Refused),
		hold: hd.Hold, clamped: hd.Clamped, unclamped: hd.Unclamped, model: hd.Model.Digest, margin: hd.Margin}
	if hd.Refused != nil {
		p.why = hd.Refused.Reason
	}
	target := p.decided
	bound := max(p.placeable, p.running)
	if c.placement == PlacementCap && target > bound {
		p.note("placement cap: Nomad can place %d at today's reservations (%.0f MHz, %.0f MB free beside this group's own replicas), not %d",
			bound, hd.Placement.FreeCPUMHz, hd.Placement.FreeMemoryMB, target)
		target = bound
	}
	if why := rd.Node.Why(); why != "" {
		target = p.holdOnNode(rd.NodeName, why, target)
	}
	// The hold band keeps the current count when the models find it about
	// as safe, unless the placement cap would not keep it (queued replicas
	// above what Nomad can place) or the node places nothing new (its state
	// decides the count).
	//
	// Read with a job, a current count above both what Nomad can place
	// and what runs is queued replicas (the group's pending ones are in
	// what Nomad can place): they go at once, and the hold band, the step
	// limits and hysteresis apply from what Nomad can place (a band wider
	// than the excess held them queued for good). Without a job the
	// group's pending replicas read as others' reservations, so the
	// excess may be placed: the limits apply from the current count.
	p.start = p.current
	queuedExcess := c.placement == PlacementCap && h.query.Job != "" && p.current > bound && target < p.current
	if queuedExcess {
		p.start = bound
	}
	placeable := c.placement != PlacementCap || p.start <= bound
	if hd.Hold.Keeps(p.start) && target != p.start && placeable && rd.Node.Schedulable() {
		p.note("hold band %g: %d stays (the models find %d to %d about as safe)", hd.Hold.Band, p.start, hd.Hold.Low, hd.Hold.High)
		p.held = target - p.start
		target = p.start
	}
	st, waived := c.steps.Control(p.start, target, p.lo, p.hi, hd.Overloads(o.RunningReplicas))
	if waived != "" {
		p.note("%s", waived)
	}
	if queuedExcess && st.Count < p.current {
		p.note("the %d of the current %d that Nomad cannot place go at once; the hold band, step limits and hysteresis apply from %d", p.current-bound, p.current, bound)
	}
	p.final = st.Count
	if st.Why != "" {
		p.held = st.Held
		p.note("%s (held back %d)", st.Why, max(st.Held, -st.Held))
	}
	if c.placement == PlacementCap && p.final > bound && p.final == p.lo {
		p.note("the quota's min %d is above what Nomad can place (%d): the quota wins over the placement cap", p.lo, bound)
	}
	if p.final > p.placeable {
		p.queued = p.final - p.placeable
		p.note("%d of %d will stay queued: Nomad can place %d at today's reservations", p.queued, p.final, p.placeable)
	}
	return p
}

// placedOf is the part of count Nomad can place, as a claim records it:
// never more than the current count or what Nomad can place, whichever is
// more.
func (p *hostPlan) placedOf(count int) int { return min(count, max(p.current, p.placeable)) }

// holdOnNode keeps the count of a host whose node Nomad places nothing new
// on: never up, not even into the quota (its min becomes the current count
// when that is below it); down is allowed.
func (p *hostPlan) holdOnNode(node, why string, target int) int {
	if p.current < p.lo {
		p.note("node %s %s: the quota's min %d is not enforced, the count stays at %d", node, why, p.lo, p.current)
		p.lo = p.current
	}
	if target > p.current {
		p.note("node %s %s: not scaled up from %d", node, why, p.current)
		return p.current
	}
	return target
}

func (p *hostPlan) note(format string, args ...any) {
	p.notes = append(p.notes, fmt.Sprintf(format, args...))
}

// refusedSlot is the first host's first refused slot in words.
func refusedSlot(r *engine.RefusedSlot) string {
	if r == nil {
		return ""
	}
	what := "new replica"
	if r.Running {
		what = "running replica"
	}
	return fmt.Sprintf("%s (%s): %s", r.Name, what, r.Resource)
}

// summary is the plan in words, for the scaling reason.
func (p *hostPlan) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d (engine %d", p.role, p.final, p.decided)
	if p.clamped {
		// A count the quota made: what bound the models' own, and their
		// first refused slot, are theirs, not the count's.
		fmt.Fprintf(&b, " = the models' %d clamped to the quota; theirs bound by %s", p.unclamped, p.limit)
	} else {
		fmt.Fprintf(&b, ", bound by %s", p.limit)
	}
	if p.why != "" {
		fmt.Fprintf(&b, ", first refused %s", p.why)
	}
	b.WriteString(")")
	if len(p.notes) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(p.notes, "; "))
	}
	return b.String()
}

// hostMetaKeys are each host's meta keys for the count applied, the
// engine's count and account, and the quota.
var hostMetaKeys = map[string]struct{ count, decided, reason, min, max string }{
	RoleFirst:  {MetaFirstCount, MetaFirstDecided, MetaFirstReason, MetaFirstMin, MetaFirstMax},
	RoleSecond: {MetaSecondCount, MetaSecondDecided, MetaSecondReason, MetaSecondMin, MetaSecondMax},
}

// meta writes the host's meta, with count the count a target applies now.
func (p *hostPlan) meta(m map[string]any, count int) {
	k := hostMetaKeys[p.role]
	m[k.count], m[k.decided], m[k.reason], m[k.min], m[k.max] = count, p.decided, p.reason, p.lo, p.hi
	m[HostMeta(p.role, MetaLimit)] = p.limit
	if p.refused != "" {
		m[HostMeta(p.role, MetaRefused)] = p.refused
	}
	m[HostMeta(p.role, MetaCurrent)] = p.current
	m[HostMeta(p.role, MetaQuotaMin)] = p.quotaMin
	m[HostMeta(p.role, MetaPlaceable)] = p.placeable
	m[HostMeta(p.role, MetaQueued)] = p.queued
	m[HostMeta(p.role, MetaHeld)] = p.held
	m[HostMeta(p.role, MetaClaimed)] = p.claimed
	if p.model != "" {
		m[HostMeta(p.role, MetaModelDigest)] = p.model
	}
	if p.margin != 0 {
		m[HostMeta(p.role, MetaMargin)] = p.margin
	}
	if p.hold != nil {
		m[HostMeta(p.role, MetaHoldLow)], m[HostMeta(p.role, MetaHoldHigh)] = p.hold.Low, p.hold.High
	}
	if len(p.notes) > 0 {
		m[HostMeta(p.role, MetaHeldBy)] = strings.Join(p.notes, "; ")
	}
}

// act fills the action from the plans of the hosts read: the role's
// host's count, or for role "split" both (see splitStep; noLower: the
// last decision's first step lowered the sum at these counts, and the
// agent did not apply it).
func act(a *sdk.ScalingAction, c *strategyConfig, plans []hostPlan, count int64, noLower bool) {
	a.Meta[MetaRole] = c.role
	a.Meta[MetaPlacement] = c.placement
	if job := c.job(); job != "" {
		a.Meta[MetaJob] = job
		a.Meta[MetaNamespace] = namespaceName(c.readHosts()[0].query.Namespace)
	}
	for _, h := range c.readHosts() {
		if h.query.Group != "" {
			a.Meta[HostMeta(h.role, MetaGroup)] = h.query.Group
		}
	}
	if c.role == RoleSplit {
		splitAction(a, &plans[0], &plans[1], count, noLower)
	} else {
		p := &plans[0]
		p.meta(a.Meta, p.final)
		a.Count = int64(p.final)
		a.Reason = p.summary() + "; " + p.reason
	}
	switch {
	case a.Count > count:
		a.Direction = sdk.ScaleDirectionUp
	case a.Count < count:
		a.Direction = sdk.ScaleDirectionDown
	default:
		a.Direction = sdk.ScaleDirectionNone
	}
}

// splitAction is the sum of the two counts, both in meta.
func splitAction(a *sdk.ScalingAction, f, s *hostPlan, count int64, noLower bool) {
	applyF, applyS, step := splitStep(f, s, count, noLower)
	f.meta(a.Meta, applyF)
	s.meta(a.Meta, applyS)
	a.Count = int64(applyF + applyS)
	var b strings.Builder
	fmt.Fprintf(&b, "split %d = %d + %d", applyF+applyS, applyF, applyS)
	if step {
		a.Meta[MetaStep] = stepFirstOfTwo
		fmt.Fprintf(&b, " (step 1 of 2 towards %d + %d at an unchanged sum)", f.final, s.final)
	}
	fmt.Fprintf(&b, "; %s; %s; %s; %s", f.summary(), s.summary(), f.reason, s.reason)
	a.Reason = b.String()
}

// splitStep returns the counts to apply now. The agent skips an action
// whose count equals its current one, so a new split at an unchanged sum
// goes in two steps: one group moves to its new count while the other is
// held at its current count, clamped into its quota (a group outside its
// quota is never held there, nor above what Nomad can place when its
// excess is queued); the next evaluation moves the other. A step
// that raises the sum (the growing group first) is preferred, then any
// step that changes it; when none does (the split is the current counts
// clamped into the quotas) the split is returned as it is, and the agent
// skips it. But when a shrinking group's engine count is below what runs
// of it (its host cannot safely keep its running replicas, or its quota
// no longer allows them), a step that lowers the sum (that group first)
// is preferred: growing the other first would leave the overloaded
// replicas running for one more cooldown. Unless noLower: such a step at
// the same counts was not applied (the agent raises a count below the
// policy's min, and skips it when that is the current count), and
// preferring it again would hold both groups for good.
func splitStep(f, s *hostPlan, count int64, noLower bool) (applyF, applyS int, step bool) {
	if int64(f.final+s.final) != count || int64(f.current+s.current) != count || (f.final == f.current && s.final == s.current) {
		return f.final, s.final, false
	}
	held := func(p *hostPlan) int { return min(max(p.start, p.lo), p.hi) } // never the queued excess
	steps := [2][2]int{{f.final, held(s)}, {held(f), s.final}}
	first := 1 // the preferred step's sign: raise the sum
	if (f.overloaded() || s.overloaded()) && !noLower {
		first = -1
	}
	for _, want := range []int{first, 0} {
		for _, c := range steps {
			sum := int64(c[0] + c[1])
			if (want > 0 && sum > count) || (want < 0 && sum < count) || (want == 0 && sum != count) {
				return c[0], c[1], true
			}
		}
	}
	return f.final, s.final, false
}

// overloaded says the plan shrinks a group whose engine count is below
// its running replicas.
func (p *hostPlan) overloaded() bool { return p.final < p.current && p.decided < p.running }
