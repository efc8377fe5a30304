package nomadplugin

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// metaInt reads a count from action meta: over the agent's gRPC boundary
// numbers arrive as float64; in-process they may be ints.
func metaInt(meta map[string]any, key string) (int64, bool, error) {
	v, ok := meta[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	if f, ok := v.(float32); ok {
		v = float64(f)
	}
	var n int64
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, true, fmt.Errorf("meta %q is %v; want a whole number", key, x)
		}
		n = int64(x)
	case int:
		n = int64(x)
	case int64:
		n = x
	case int32:
		n = int64(x)
	case uint64:
		if x > 1<<53 {
			return 0, true, fmt.Errorf("meta %q is %d; too large", key, x)
		}
		n = int64(x)
	case json.Number, string:
		i, err := strconv.ParseInt(fmt.Sprint(x), 10, 64)
		if err != nil {
			return 0, true, fmt.Errorf("meta %q is %q; want a whole number", key, fmt.Sprint(x))
		}
		n = i
	default:
		return 0, true, fmt.Errorf("meta %q is a %T; want a number", key, v)
	}
	if n < 0 {
		return 0, true, fmt.Errorf("meta %q is %d; a count must be >= 0", key, n)
	}
	return n, true, nil
}

// Quota is each group's [min, max] count.
type Quota [2][2]int64

// unbounded is the quota of groups without known bounds.
var unbounded = Quota{{0, math.MaxInt32}, {0, math.MaxInt32}}

// quotaKeys are the meta keys of each host's [min, max].
var quotaKeys = [2][2]string{{MetaFirstMin, MetaFirstMax}, {MetaSecondMin, MetaSecondMax}}

// metaQuota reads the hosts' quotas from action (or event) meta: bounds
// not given are unbounded; found says whether any was given.
func metaQuota(meta map[string]any) (Quota, bool, error) {
	q := unbounded
	found := false
	for i, keys := range quotaKeys {
		for j, k := range keys {
			v, ok, err := metaInt(meta, k)
			if err != nil {
				return q, found, err
			}
			if ok {
				q[i][j], found = v, true
			}
		}
		if q[i][0] > q[i][1] {
			return q, found, fmt.Errorf("meta %q is %d, above %q %d", keys[0], q[i][0], keys[1], q[i][1])
		}
	}
	return q, found, nil
}

// metaSplit reads the strategy's split from action meta; ok is false when
// the action carries none (an action the agent makes itself).
func metaSplit(meta map[string]any) (split [2]int64, ok bool, err error) {
	f, okF, err := metaInt(meta, MetaFirstCount)
	if err != nil {
		return split, false, err
	}
	s, okS, err := metaInt(meta, MetaSecondCount)
	if err != nil {
		return split, false, err
	}
	return [2]int64{f, s}, okF && okS, nil
}

// SplitWithin returns the two group counts for the agent's final count
// total, each within its host's quota q. The strategy's split from meta
// applies as is when its sum is total and both counts are within q.
// Otherwise (the agent clamped the sum to the policy's min/max, the action
// came from the agent itself with no split, or the split does not fit the
// quota) the total is shared in proportion to the split, or else to the
// groups' current counts, the first group taking the rounding (evenly when
// both are zero); then each group is kept within its quota, the remainder
// moving to the other group.
//
// With a split, no group is ever set above both its strategy count and its
// current count: that would ask for replicas the engine did not decide (and
// that placement never checked). When no split of total satisfies the
// quotas and that bound, it returns an error and no counts.
func SplitWithin(total int64, meta map[string]any, current [2]int64, q Quota) ([2]int64, string, error) {
	split, hasSplit, err := metaSplit(meta)
	if err != nil {
		return [2]int64{}, "", err
	}
	hi, err := splitBounds(total, split, hasSplit, current, q)
	if err != nil {
		return [2]int64{}, "", err
	}
	within := func(c [2]int64) bool {
		return c[0] >= q[0][0] && c[0] <= hi[0] && c[1] >= q[1][0] && c[1] <= hi[1]
	}
	basis, how := split, "strategy split"
	if !hasSplit {
		basis, how = current, "no split in the action: current proportions"
	}
	if basis[0]+basis[1] == total && within(basis) {
		return basis, how, nil
	}
	switch {
	case hasSplit && split[0]+split[1] != total:
		how = fmt.Sprintf("agent count %d differs from the split %d + %d: proportional within each host's quota", total, split[0], split[1])
	case hasSplit:
		how = fmt.Sprintf("the split %d + %d is outside the hosts' quotas: proportional within them", split[0], split[1])
	default:
		how += ", within each host's quota"
	}
	sum := basis[0] + basis[1]
	var first int64
	if sum == 0 {
		first = (total + 1) / 2
	} else {
		first = int64(math.Round(float64(total) * float64(basis[0]) / float64(sum)))
	}
	// Keep the first group in its range, then the second in its range by
	// moving the remainder; the range checks above make both fit.
	first = min(max(first, q[0][0]), hi[0])
	second := min(max(total-first, q[1][0]), hi[1])
	first = total - second
	return [2]int64{first, second}, how, nil
}

// splitBounds is each group's highest count for total: its quota's max,
// and with a split no more than the larger of its strategy count and its
// current count. The error says which bound no split of total meets.
func splitBounds(total int64, split [2]int64, hasSplit bool, current [2]int64, q Quota) ([2]int64, error) {
	for i := range q {
		if q[i][0] > q[i][1] || q[i][0] < 0 {
			return [2]int64{}, fmt.Errorf("quota of group %d is [%d, %d]: not a range of counts", i+1, q[i][0], q[i][1])
		}
	}
	if total < q[0][0]+q[1][0] || total > q[0][1]+q[1][1] {
		return [2]int64{}, fmt.Errorf("agent count %d cannot be split within the hosts' quotas (first [%d, %d], second [%d, %d]): "+
			"set the policy's min and max within [%d, %d]; no group was changed", total, q[0][0], q[0][1], q[1][0], q[1][1], q[0][0]+q[1][0], q[0][1]+q[1][1])
	}
	hi := [2]int64{q[0][1], q[1][1]}
	if !hasSplit {
		return hi, nil
	}
	for i := range hi {
		hi[i] = min(hi[i], max(split[i], current[i]))
	}
	if total > hi[0]+hi[1] || hi[0] < q[0][0] || hi[1] < q[1][0] {
		why := "the agent raised the strategy's sum (the policy's min?), and the engine decided no such replicas; set the policy's min at or below the hosts' quota minimums"
		for i, host := range [2]string{RoleFirst, RoleSecond} {
			if split[i] < q[i][0] || split[i] > q[i][1] {
				// The strategy's count is outside the quota (a count
				// held outside it, meta not the strategy's, a quota from
				// the job's scaling block): that, not the agent's sum,
				// is what no split can meet.
				why = fmt.Sprintf("the strategy's %s count %d is outside the %s host's quota [%d, %d]", host, split[i], host, q[i][0], q[i][1])
				break
			}
		}
		return hi, fmt.Errorf("agent count %d cannot be split without setting a group above both the strategy's count and its current count "+
			"(first: strategy %d, current %d, quota [%d, %d]; second: strategy %d, current %d, quota [%d, %d]): %s; no group was changed",
			total, split[0], current[0], q[0][0], q[0][1], split[1], current[1], q[1][0], q[1][1], why)
	}
	return hi, nil
}

// configuredMins puts back, from an older event's meta, each host's quota
// min as configured (MetaQuotaMin) where the limits had lowered it for a
// node they held: that hold says nothing about a later action.
func configuredMins(q *Quota, meta map[string]any) error {
	for i, role := range []string{RoleFirst, RoleSecond} {
		v, ok, err := metaInt(meta, HostMeta(role, MetaQuotaMin))
		if err != nil {
			return err
		}
		if ok && v > q[i][0] && v <= q[i][1] {
			q[i][0] = v
		}
	}
	return nil
}
