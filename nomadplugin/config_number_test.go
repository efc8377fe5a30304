package nomadplugin

import (
	"fmt"
	"strings"
	"testing"
)

// TestWholeNumberFromJobspec: a whole-number key takes what the agent
// hands a plugin for a number written in a jobspec's scaling block (Nomad
// keeps it as a JSON number; the agent formats it with %v, so 1000000
// arrives as "1e+06" and 3 as "3"), and still refuses a fraction or a word.
func TestWholeNumberFromJobspec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"3", 3, true},
		{fmt.Sprintf("%v", 3.0), 3, true},
		{fmt.Sprintf("%v", 1e6), 1000000, true},
		{"1.048576e+06", 1048576, true},
		{"-2", -2, true},
		{"1e+16", 0, false}, // whole, beyond an int32
		{"1e+09", 1000000000, true},
		{"3.5", 0, false},
		{"1.0000000000000001", 0, false}, // whole only after rounding to a float64
		{"0x1p4", 0, false},
		{"1_000", 0, false},
		{"1e+300", 0, false},
		{"NaN", 0, false},
		{"lots", 0, false},
		{"", 0, false},
	} {
		got, err := wholeNumber(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("wholeNumber(%q) = %d, %v; want %d, ok %t", tc.in, got, err, tc.want, tc.ok)
		}
	}
	// Through the strategy's and the target's config readers.
	m := map[string]string{KeyRole: RoleSplit, KeyJob: "web", PrefixFirst + KeyNodeName: "a", PrefixSecond + KeyNodeName: "b",
		PrefixFirst + KeyGroup: "front", PrefixSecond + KeyGroup: "back", KeyStatsSample: fmt.Sprintf("%v", 1e6)}
	c, err := parseStrategyConfig(m, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.opts.StatsSample != 1000000 {
		t.Errorf("stats_sample %q read as %d, want 1000000", m[KeyStatsSample], c.opts.StatsSample)
	}
}

// TestTargetQuotaFromJobspec: the target's quota keys read a jobspec
// number as the agent formats it.
func TestTargetQuotaFromJobspec(t *testing.T) {
	c := &targetConfig{}
	m := map[string]string{TargetKeyFirstMax: fmt.Sprintf("%v", 1e6), TargetKeySecondMax: fmt.Sprintf("%v", 48.0)}
	if err := c.parseQuotas(m); err != nil {
		t.Fatal(err)
	}
	if c.quota[0][1] != 1000000 || c.quota[1][1] != 48 {
		t.Errorf("quotas %v, want max 1000000 and 48", c.quota)
	}
	m[TargetKeyFirstMax] = "4.5"
	if err := (&targetConfig{}).parseQuotas(m); err == nil {
		t.Error("first_max 4.5 accepted")
	}
}

// TestFloatBelowAFloat64: a number key's value nearer 0 than a float64 can
// hold is refused naming the key, not read as 0 (and then refused, or
// used, as 0); 0 itself, and a small value a float64 holds, stay.
func TestFloatBelowAFloat64(t *testing.T) {
	for _, tc := range []struct {
		in, wantErr string
		want        float64
	}{
		{"1e-400", `config "hold_band": is "1e-400"; closer to 0 than a 64-bit floating point number can hold`, 0},
		{"-1e-400", `config "hold_band": is "-1e-400"; closer to 0`, 0},
		{"0", "", 0},
		{"0.0e-400", "", 0},
		{"-0", "", 0},
		{"1e-300", "", 1e-300},
		{"0.5", "", 0.5},
	} {
		var got float64
		r := &configReader{m: map[string]string{KeyHoldBand: tc.in}}
		r.float(KeyHoldBand, &got)
		err := r.err
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v, want %v", tc.in, err, tc.want)
		case tc.wantErr == "" && got != tc.want:
			t.Errorf("%q read as %v, want %v", tc.in, got, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.wantErr)
		}
	}
}

// TestQueuedBelowAFloat64: a queued replica's figure nearer 0 than a
// float64 holds is refused naming the key (a review: it read as 0).
func TestQueuedBelowAFloat64(t *testing.T) {
	if _, err := parseQueued(PrefixFirst+KeyQueued, "500:256,1e-400:256"); err == nil ||
		!strings.Contains(err.Error(), `item 2 is "1e-400:256" (closer to 0 than a 64-bit floating point number can hold`) {
		t.Errorf("error %v, want item 2 refused as below a float64", err)
	}
	if q, err := parseQueued(PrefixFirst+KeyQueued, "500:256, 0.5:0"); err != nil || len(q) != 2 || q[1].CPUMHz != 0.5 {
		t.Errorf("%v, %v; want two replicas", q, err)
	}
}
