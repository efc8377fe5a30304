package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Step is a limit on how far a count moves in one decision: an absolute
// number of replicas, or a percentage of the current count (as Kubernetes'
// HPA behavior policies have them). The zero Step is no limit.
type Step struct {
	Replicas int
	Percent  float64
}

// StepNone is the written form of no limit (the strategy's keys and the
// CLI's flags take it).
const StepNone = "none"

// ParseStep reads "4" (replicas) or "50%" (of the current count); "" and
// StepNone are no limit.
func ParseStep(s string) (Step, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == StepNone {
		return Step{}, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || badNumber(v) || v <= 0 || v > 1e6 {
			return Step{}, fmt.Errorf("%q: a percentage must be a number > 0 and at most 1000000, such as \"50%%\"", s)
		}
		return Step{Percent: v}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxQuotaCount {
		return Step{}, fmt.Errorf("%q: want a whole number of replicas from 1 to %d, or a percentage such as \"50%%\"", s, MaxQuotaCount)
	}
	return Step{Replicas: n}, nil
}

// String writes the step as ParseStep reads it.
func (s Step) String() string {
	switch {
	case s.Percent > 0:
		return strconv.FormatFloat(s.Percent, 'g', -1, 64) + "%"
	case s.Replicas > 0:
		return strconv.Itoa(s.Replicas)
	}
	return ""
}

// IsZero reports whether the step sets no limit.
func (s Step) IsZero() bool { return s.Replicas == 0 && s.Percent == 0 }

// of is the largest move allowed from current, and the hysteresis band: a
// percentage of the current count rounded up, as Kubernetes' HPA rounds
// its percent policies both ways (25% of 9 allows 3: HPA's scale-down
// keeps int(9 x 0.75) = 6; a band of 10% at 11 replicas, 1.1, holds a
// change of 1, less than 10%), at least one replica. The share is taken
// to nine decimals first, so that a decimal percentage whose share is
// whole (2.2% of 1500, 33) is not rounded up past it by the float's error.
func (s Step) of(current int) int {
	if s.Percent > 0 {
		share := math.Round(float64(current)*s.Percent/100*1e9) / 1e9
		return max(1, int(math.Ceil(share)))
	}
	return s.Replicas
}

// Steps limits how a controller moves a count towards the engine's: at most
// MaxUp replicas up and MaxDown down per decision, and no change at all
// when the move is smaller than Hysteresis (a band that holds a wobble).
// A percentage of the current count is rounded up (Step.of), at least one
// replica.
// A controller applies them to the count the engine decided; the count
// never leaves the quota's [min, max] (a current count outside it moves
// into it at once, whatever the limits).
type Steps struct {
	MaxUp, MaxDown Step
	Hysteresis     Step
}

// StepResult is a limited move.
type StepResult struct {
	// Count is the count to set.
	Count int
	// Held is how many replicas the limits held back (target minus Count),
	// 0 when the target was reached.
	Held int
	// Why says which limit held it, empty when none did.
	Why string
}

// Apply moves current towards target within the limits and the bounds
// [lo, hi].
func (st Steps) Apply(current, target, lo, hi int) StepResult {
	target = min(max(target, lo), hi)
	res := StepResult{Count: target}
	switch {
	case current < lo || current > hi:
		// Outside the quota: move into it at once, whatever the steps say,
		// and no further in this decision.
		res.Count = min(max(current, lo), hi)
		if res.Count != target {
			res.Why = fmt.Sprintf("the current count %d is outside the quota [%d, %d]: moved to its edge first", current, lo, hi)
		}
	case target == current:
	case !st.Hysteresis.IsZero() && abs(target-current) < st.Hysteresis.of(current):
		res.Count = current
		res.Why = fmt.Sprintf("hysteresis: a change of %d is within the band of %s", target-current, st.Hysteresis)
	case target > current && !st.MaxUp.IsZero() && target-current > st.MaxUp.of(current):
		res.Count = current + st.MaxUp.of(current)
		res.Why = fmt.Sprintf("max_scale_up %s: at most +%d from %d", st.MaxUp, st.MaxUp.of(current), current)
	case target < current && !st.MaxDown.IsZero() && current-target > st.MaxDown.of(current):
		res.Count = current - st.MaxDown.of(current)
		res.Why = fmt.Sprintf("max_scale_down %s: at most -%d from %d", st.MaxDown, st.MaxDown.of(current), current)
	}
	res.Count = min(max(res.Count, lo), hi)
	res.Held = target - res.Count
	return res
}

// Control is Apply for a controller moving from the count in force
// (current) to the engine's (target): hysteresis holds a wobble, not a
// safety move, so it is waived for a scale-down the running replicas need
// (overloaded: HostDecision.Overloads; a band of "2" would hold one
// overloaded replica running for good) and for a group's first replica
// from 0 (a band would never start it). The step limits still apply.
// Waived says so when the band would have held the move, "" otherwise.
// The Nomad strategy and the simulator's stepped replay both move by it.
func (st Steps) Control(current, target, lo, hi int, overloaded bool) (res StepResult, waived string) {
	target = min(max(target, lo), hi)
	safety := (overloaded && target < current) || current == 0
	if st.Hysteresis.IsZero() || target == current || !safety {
		return st.Apply(current, target, lo, hi), ""
	}
	if (Steps{Hysteresis: st.Hysteresis}).Apply(current, target, lo, hi).Count == current {
		if current == 0 {
			waived = fmt.Sprintf("hysteresis %s not applied: the group's first replica", st.Hysteresis)
		} else {
			waived = fmt.Sprintf("hysteresis %s not applied: the running replicas do not fit", st.Hysteresis)
		}
	}
	st.Hysteresis = Step{}
	return st.Apply(current, target, lo, hi), waived
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
