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
// clamp(Min, Max, round(amount * PerBranch)).
type Quota struct {
	Min       int     `json:"min"`
	Max       int     `json:"max"`
	PerBranch float64 `json:"per_branch"`
	Rounding  string  `json:"rounding"`
}

// DefaultQuota is one container per activated branch, from 0 to max.
func DefaultQuota(max int) Quota {
	return Quota{Min: 0, Max: max, PerBranch: 1, Rounding: RoundNearest}
}

// QuotaError names the quota field that is wrong and why.
type QuotaError struct {
	Host   string
	Field  string
	Reason string
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%s host quota: %s: %s", e.Host, e.Field, e.Reason)
}

// Validate checks the quota; role labels the host in errors.
func (q Quota) Validate(role string) error {
	bad := func(field, format string, args ...any) error {
		return &QuotaError{Host: role, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if q.Min < 0 {
		return bad("min", "is %d; it must be >= 0", q.Min)
	}
	if q.Max > MaxQuotaCount {
		return bad("max", "is %d; it must be <= %d", q.Max, MaxQuotaCount)
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

// Unclamped returns round(amount * PerBranch) before the clamp.
func (q Quota) Unclamped(amount int) int {
	x := float64(amount) * q.PerBranch
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
