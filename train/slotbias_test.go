package train

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// A run with slot biases is the run without them but for each named
// processor's output biases, raised by beta ln(k+1) at output k, and says
// so in its provenance; the other processor is untouched.
func TestSlotBiasRaisesOnlyTheOutputs(t *testing.T) {
	all, s, plain := plainSmallRun(t)
	for _, m := range []*engine.Model{plain.Capacity, plain.Admission} {
		if set := m.Provenance.Settings; set["slot_bias"] != "" || set["admission_slot_bias"] != "" || strings.Contains(m.Provenance.Method, "ln(k+1)") {
			t.Fatalf("%s without a slot bias: settings %v, method %q", m.Name, set, m.Provenance.Method)
		}
	}
	for _, tc := range []struct {
		name     string
		cap, adm float64
	}{
		{"capacity only", 0.4, 0},
		{"admission only", 0, 0.3},
		{"both", 0.8, 0.2},
		{"stricter", -0.5, -0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := s
			sb.SlotBias, sb.AdmissionSlotBias = tc.cap, tc.adm
			got, err := Train(all, sb, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []struct {
				got, was *engine.Model
				beta     float64
				key      string
			}{{got.Capacity, plain.Capacity, tc.cap, "slot_bias"}, {got.Admission, plain.Admission, tc.adm, "admission_slot_bias"}} {
				moved := outputBiasChange(t, p.got, p.was)
				if len(moved) != s.Slots {
					t.Fatalf("%s: %d outputs, want one per slot (%d)", p.got.Name, len(moved), s.Slots)
				}
				for k, d := range moved {
					if want := p.beta * math.Log(float64(k+1)); math.Abs(d-want) > 1e-12 {
						t.Fatalf("%s: output %d raised by %v, want %v ln(%d) = %v", p.got.Name, k, d, p.beta, k+1, want)
					}
				}
				method := strings.Contains(p.got.Provenance.Method, "ln(k+1)")
				if method != (p.beta != 0) {
					t.Errorf("%s (bias %v): method %q", p.got.Name, p.beta, p.got.Provenance.Method)
				}
				// The settings describe the pair's training: both keys, in both models.
				for k, v := range map[string]float64{"slot_bias": tc.cap, "admission_slot_bias": tc.adm} {
					want := ""
					if v != 0 {
						want = strconv.FormatFloat(v, 'g', -1, 64)
					}
					if got := p.got.Provenance.Settings[k]; got != want {
						t.Errorf("%s: setting %s %q, want %q", p.got.Name, k, got, want)
					}
				}
			}
		})
	}
}

// The settings check refuses a slot bias that is not a number from
// -MaxSlotBias to MaxSlotBias, naming which.
func TestSlotBiasCheck(t *testing.T) {
	for _, tc := range []struct {
		cap, adm float64
		want     string
	}{
		{-2.1, 0, "slot bias: -2.1"},
		{math.NaN(), 0, "slot bias: NaN"},
		{MaxSlotBias + 0.01, 0, "slot bias: 2.01"},
		{0, math.Inf(1), "admission slot bias: +Inf"},
		{0, -3, "admission slot bias: -3"},
	} {
		s := DefaultSettings()
		s.SlotBias, s.AdmissionSlotBias = tc.cap, tc.adm
		err := s.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "need a number from -2 to 2") {
			t.Errorf("slot biases %v, %v: Check() = %v, want an error containing %q", tc.cap, tc.adm, err, tc.want)
		}
	}
	for _, ok := range []float64{0, 0.4, MaxSlotBias, -MaxSlotBias} {
		s := DefaultSettings()
		s.SlotBias, s.AdmissionSlotBias = ok, ok
		if err := s.Check(); err != nil {
			t.Errorf("slot biases %v: %v", ok, err)
		}
	}
}
