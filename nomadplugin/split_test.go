package nomadplugin

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		name    string
		total   int64
		meta    map[string]any
		current [2]int64
		want    [2]int64
		wantErr string
	}{
		{"as decided, ints", 7, map[string]any{MetaFirstCount: 4, MetaSecondCount: 3}, [2]int64{1, 1}, [2]int64{4, 3}, ""},
		{"as decided, float64 over gRPC", 7, map[string]any{MetaFirstCount: 4.0, MetaSecondCount: 3.0}, [2]int64{1, 1}, [2]int64{4, 3}, ""},
		{"json.Number", 7, map[string]any{MetaFirstCount: json.Number("4"), MetaSecondCount: json.Number("3")}, [2]int64{}, [2]int64{4, 3}, ""},
		{"clamped down, proportional", 5, map[string]any{MetaFirstCount: 6.0, MetaSecondCount: 4.0}, [2]int64{}, [2]int64{3, 2}, ""},
		{"raised from zero: above the split and the current counts", 3, map[string]any{MetaFirstCount: 0.0, MetaSecondCount: 0.0}, [2]int64{}, [2]int64{}, "above both"},
		{"raised within the current counts", 6, map[string]any{MetaFirstCount: 1.0, MetaSecondCount: 1.0}, [2]int64{4, 4}, [2]int64{3, 3}, ""},
		{"no split: current proportions", 6, map[string]any{}, [2]int64{1, 2}, [2]int64{2, 4}, ""},
		{"no split, nothing running", 1, nil, [2]int64{}, [2]int64{1, 0}, ""},
		{"fraction refused", 7, map[string]any{MetaFirstCount: 3.5, MetaSecondCount: 3.5}, [2]int64{}, [2]int64{}, "whole number"},
		{"negative refused", 7, map[string]any{MetaFirstCount: -1.0, MetaSecondCount: 8.0}, [2]int64{}, [2]int64{}, ">= 0"},
		{"NaN refused", 7, map[string]any{MetaFirstCount: math.NaN(), MetaSecondCount: 8.0}, [2]int64{}, [2]int64{}, "whole number"},
		{"wrong type refused", 7, map[string]any{MetaFirstCount: true, MetaSecondCount: 8.0}, [2]int64{}, [2]int64{}, "want a number"},
		// The agent clamped the sum; each group stays within its host's quota.
		{"clamped down, first at its min", 5, quotaMeta(1, 9, 4, 8, 0, 8), [2]int64{6, 6}, [2]int64{4, 1}, ""},
		{"clamped down, second at its min", 5, quotaMeta(8, 1, 0, 8, 3, 8), [2]int64{6, 6}, [2]int64{2, 3}, ""},
		{"a split below its quota's min, no room to raise it", 5, quotaMeta(1, 9, 4, 8, 0, 8), [2]int64{}, [2]int64{}, "above both"},
		{"raised, within the current counts and the quotas", 12, quotaMeta(2, 2, 0, 4, 0, 10), [2]int64{4, 9}, [2]int64{4, 8}, ""},
		{"below both mins", 3, quotaMeta(4, 4, 2, 8, 2, 8), [2]int64{}, [2]int64{}, "within [4, 16]"},
		{"above both maxes", 20, quotaMeta(4, 4, 0, 8, 0, 8), [2]int64{}, [2]int64{}, "within [0, 16]"},
		{"min above max refused", 5, quotaMeta(4, 4, 9, 8, 0, 8), [2]int64{}, [2]int64{}, MetaFirstMin},
		// Issue 13: a split whose sum is the total but whose first count is
		// above the first host's max gave [10 0]; moving the remainder to
		// the second group would raise it past both its split and its
		// current count.
		{"regression: the split's sum is right but first is past its max", 10,
			map[string]any{MetaFirstCount: 10.0, MetaSecondCount: 0.0, MetaFirstMax: 5.0}, [2]int64{}, [2]int64{}, "above both"},
		// Issue S1: current [2, 14], the second host's max 5, the split
		// (11, 14) of a step that held the second group outside its quota:
		// the remainder went to the first group, [20, 5].
		{"regression: a held group outside its quota", 25, quotaMeta(11, 14, 0, 20, 0, 5), [2]int64{2, 14}, [2]int64{}, "above both"},
		// A user trial: the error blamed the agent's sum (the policy's
		// min?) for a count the action's own quota refuses.
		{"the action's count above its own quota's max", 20, quotaMeta(15, 5, 0, 10, 0, 10), [2]int64{}, [2]int64{}, "the strategy's first count 15 is outside the first host's quota [0, 10]"},
		{"the sum raised by the agent", 3, quotaMeta(1, 1, 0, 10, 0, 10), [2]int64{}, [2]int64{}, "the agent raised the strategy's sum"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, _, err := metaQuota(c.meta)
			if err == nil {
				var got [2]int64
				got, _, err = SplitWithin(c.total, c.meta, c.current, q)
				if err == nil && c.wantErr == "" && (got != c.want || got[0]+got[1] != c.total) {
					t.Errorf("SplitWithin = %v, want %v (total %d)", got, c.want, c.total)
				}
			}
			switch {
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("err = %v, want %q", err, c.wantErr)
			case c.wantErr == "" && err != nil:
				t.Fatal(err)
			}
		})
	}
}

// TestSplitWithinBounds: for every total, quota pair, split and current
// count, SplitWithin either answers counts summing to the total, each
// within its quota and (with a split) at most its split or current count,
// or, exactly when no such counts exist, an error.
func TestSplitWithinBounds(t *testing.T) {
	quotas := []Quota{{{0, 3}, {0, 20}}, {{2, 5}, {1, 4}}, {{0, 0}, {0, 9}}, {{4, 8}, {0, 8}}}
	for _, q := range quotas {
		for total := int64(0); total <= q[0][1]+q[1][1]+2; total++ {
			for f := int64(0); f <= 12; f += 3 {
				for s := int64(0); s <= 12; s += 4 {
					for _, meta := range []map[string]any{{MetaFirstCount: f, MetaSecondCount: s}, {}} {
						current := [2]int64{s, f}
						hi := [2]int64{q[0][1], q[1][1]}
						if len(meta) > 0 {
							hi = [2]int64{min(hi[0], max(f, current[0])), min(hi[1], max(s, current[1]))}
						}
						feasible := hi[0] >= q[0][0] && hi[1] >= q[1][0] && total >= q[0][0]+q[1][0] && total <= hi[0]+hi[1]
						got, _, err := SplitWithin(total, meta, current, q)
						if (err == nil) != feasible {
							t.Fatalf("quota %v total %d split %d+%d current %v meta %v: err %v, feasible %v", q, total, f, s, current, meta, err, feasible)
						}
						if err == nil && (got[0]+got[1] != total || got[0] < q[0][0] || got[0] > hi[0] || got[1] < q[1][0] || got[1] > hi[1]) {
							t.Fatalf("quota %v total %d split %d+%d current %v meta %v: got %v", q, total, f, s, current, meta, got)
						}
					}
				}
			}
		}
	}
}
