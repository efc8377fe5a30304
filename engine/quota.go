package engine

import (
	"fmt"
	"math"
)

// Rounding rules for turning amount x per-branch scale into a count.
const (
	RoundNearest = "nearest" // half away from zero
	RoundFloor   = "floor"
	RoundCeil    = "ceil"
)

// MaxQuotaCount is the largest count a quota may allow.
const MaxQuotaCount = 1 << 20

// MaxPerBranch is the largest per-branch scale a quota may have.
const MaxPerBranch = 1 << 20

// Quota turns an activated-branch amount into a container count:
// clamp(Min, Max, round(amount * PerBranch)). It is the resolved form, every
// field set; QuotaSpec is what a front end gives.
type Quota struct {
	Min       int     `json:"min"`
	Max       int     `json:"max"`
	PerBranch float64 `json:"per_branch"`
	Rounding  string  `json:"rounding"`
}

// QuotaSpec is a quota as configured: every field optional. Resolve fills
// the defaults, the same in every front end: min 0, max the model's number
// of countable slots, per_branch 1, rounding "nearest".
type QuotaSpec struct {
	Min       *int     `json:"min,omitempty"`
	Max       *int     `json:"max,omitempty"`
	PerBranch *float64 `json:"per_branch,omitempty"`
	Rounding  *string  `json:"rounding,omitempty"`
}

// DefaultQuota is one container per activated branch, from 0 to the
// model's slot count.
func DefaultQuota(slots int) Quota {
	return Quota{Min: 0, Max: slots, PerBranch: 1, Rounding: RoundNearest}
}

// Spec returns q as a spec with every field given.
func (q Quota) Spec() *QuotaSpec {
	return &QuotaSpec{Min: &q.Min, Max: &q.Max, PerBranch: &q.PerBranch, Rounding: &q.Rounding}
}

// Resolve fills the spec's unset fields with the defaults for a model with
// slots countable slots and validates the result; role labels the host in
// errors. A nil spec is every default.
func (s *QuotaSpec) Resolve(role string, slots int) (Quota, error) {
	q := DefaultQuota(min(slots, MaxQuotaCount))
	if s != nil {
		if s.Min != nil {
			q.Min = *s.Min
		}
		if s.Max != nil {
			q.Max = *s.Max
		} else if q.Min > q.Max {
			return Quota{}, &QuotaError{Host: role, Field: "min", Reason: fmt.Sprintf("is %d, above the default max (the model's %d slots): set max as well", q.Min, q.Max)}
		}
		if s.PerBranch != nil {
			q.PerBranch = *s.PerBranch
		}
		if s.Rounding != nil {
			q.Rounding = *s.Rounding
		}
	}
	return q, q.Validate(role)
}

// Check reports every problem of the spec's set fields that Resolve would
// report whatever the model, each as a *QuotaError (a min above the
// model's slot count with max unset depends on the model: Resolve alone
// reports it). Front ends check a configuration with it before any model
// is loaded.
func (s *QuotaSpec) Check(role string) []error {
	if s == nil {
		return nil
	}
	var errs []error
	one := func(set func(q *Quota)) {
		q := DefaultQuota(MaxQuotaCount)
		set(&q)
		if err := q.Validate(role); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Min != nil {
		one(func(q *Quota) { q.Min = *s.Min })
	}
	if s.Max != nil {
		one(func(q *Quota) { q.Max = *s.Max })
	}
	if s.PerBranch != nil {
		one(func(q *Quota) { q.PerBranch = *s.PerBranch })
	}
	if s.Rounding != nil {
		one(func(q *Quota) { q.Rounding = *s.Rounding })
	}
	if s.Min != nil && s.Max != nil && len(errs) == 0 {
		one(func(q *Quota) { q.Min, q.Max = *s.Min, *s.Max })
	}
	return errs
}

// Validate checks the quota; role labels the host in errors.
func (q Quota) Validate(role string) error {
	bad := func(field, format string, args ...any) error {
		return &QuotaError{Host: role, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if q.Min < 0 || q.Min > MaxQuotaCount {
		return bad("min", "is %d; it must be a whole number from 0 to %d", q.Min, MaxQuotaCount)
	}
	if q.Max < 0 || q.Max > MaxQuotaCount {
		return bad("max", "is %d; it must be a whole number from 0 to %d", q.Max, MaxQuotaCount)
	}
	if q.Max < q.Min {
		return bad("max", "is %d, below min %d", q.Max, q.Min)
	}
	if badNumber(q.PerBranch) || q.PerBranch <= 0 || q.PerBranch > MaxPerBranch {
		return bad("per_branch", "is %v; it must be a finite number > 0 and <= %d", q.PerBranch, MaxPerBranch)
	}
	switch q.Rounding {
	case RoundNearest, RoundFloor, RoundCeil:
	default:
		return bad("rounding", "is %q; it must be one of %q, %q, %q", q.Rounding, RoundNearest, RoundFloor, RoundCeil)
	}
	return nil
}

// Unclamped returns round(amount * PerBranch) before the clamp. The
// product is taken to the nearest half when it lies within a billionth of
// one (of itself, below 1), so that a per_branch written as a decimal
// rounds as the decimal product does: 25 x 0.28 is 7.0000000000000009 in
// binary floating point, whose ceiling is 8, and 25 x 0.58 is
// 14.499999999999998, which rounds to 14 rather than 15. A product below
// a billionth is never taken to 0 (a positive product is never a rounding
// error of 0): its ceiling is 1.
func (q Quota) Unclamped(amount int) int {
	x := float64(amount) * q.PerBranch
	if h := math.Round(2*x) / 2; math.Abs(x-h) <= 1e-9*math.Min(1, math.Abs(x)) {
		x = h
	}
	switch q.Rounding {
	case RoundFloor:
		x = math.Floor(x)
	case RoundCeil:
		x = math.Ceil(x)
	default:
		x = math.Round(x)
	}
	return int(x)
}

// Apply returns the count for amount and whether the clamp changed it. The
// count is never outside [Min, Max]. q must be valid.
func (q Quota) Apply(amount int) (count int, clamped bool) {
	x := q.Unclamped(amount)
	switch {
	case x < q.Min:
		return q.Min, true
	case x > q.Max:
		return q.Max, true
	}
	return x, false
}
