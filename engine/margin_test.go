package engine_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	. "github.com/activation-scheduler/terraform-provider-activation/engine"
)

// A margin is the model's output threshold moved by that many logits: the
// whole decision (counts, activated branches, limits, explanation) is the
// one a model with the moved threshold gives, the counts never rise with
// the margin, and the hold band is read about the moved threshold.
func TestMargin(t *testing.T) {
	obs := seriesObservation(t, "series3", 3000, 120, 6, 0.1)
	for _, role := range []string{RoleFirst, RoleSecond} {
		p, err := Models.LoadFor(role, "")
		if err != nil {
			t.Fatal(err)
		}
		moved := func(m float64) *Processor {
			return withThreshold(t, p, ShiftThreshold(p.Model().Threshold(), m))
		}
		decide := func(in HostInput) HostDecision { return decideHost(t, role, in) }
		if d := decide(HostInput{Observation: &obs}); d.Margin != 0 || strings.Contains(d.Reason(), "margin") {
			t.Fatalf("%s host: margin %v without one (%s)", role, d.Margin, d.Reason())
		}
		prev, seen := math.MaxInt, map[int]bool{}
		for _, m := range []float64{-3, -1, 0, 0.5, 2, 4, 8} {
			got := decide(HostInput{Observation: &obs, Margin: m, HoldBand: 1})
			want := decide(HostInput{Observation: &obs, Model: moved(m), HoldBand: 1})
			if got.Margin != m {
				t.Errorf("%s host, margin %v: the decision says %v", role, m, got.Margin)
			}
			say := fmt.Sprintf(" with a margin of %g logits,", m)
			if m == -1 {
				say = " with a margin of -1 logit," // one logit, singular
			}
			if m != 0 && !strings.Contains(got.Reason(), say) {
				t.Errorf("%s host, margin %v: the reason does not say %q: %s", role, m, say, got.Reason())
			}
			// The model's digest differs from the moved model's: compare
			// the rest.
			got.Model, want.Model, got.Margin = ModelRef{}, ModelRef{}, 0
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s host, margin %v: the decision differs from the model with its threshold moved:\n got %+v\nwant %+v", role, m, got, want)
			}
			if got.Containers > prev {
				t.Errorf("%s host, margin %v: %d containers, more than at a smaller margin (%d)", role, m, got.Containers, prev)
			}
			prev = got.Containers
			seen[got.Containers] = true
		}
		if len(seen) < 3 {
			t.Errorf("%s host: the margins gave %d distinct counts: the test needs a wider range", role, len(seen))
		}
	}
}

func TestMarginErrors(t *testing.T) {
	obs := seriesObservation(t, "series3", 3000, 120, 6, 0.1)
	for _, m := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), MaxMargin + 0.5, -MaxMargin - 0.5} {
		for _, role := range []string{RoleFirst, RoleSecond} {
			in, other := HostInput{Observation: &obs, Margin: m}, HostInput{Observation: &obs}
			var err error
			if role == RoleFirst {
				_, err = Decide(in, other)
			} else {
				_, err = Decide(other, in)
			}
			var oe *ObservationError
			if !errors.As(err, &oe) || oe.Field != "margin" || oe.Host != role {
				t.Errorf("%s host, margin %v: error %v, want one naming margin", role, m, err)
			}
		}
	}
	for _, m := range []float64{-MaxMargin, MaxMargin} {
		if why := MarginReason(m); why != "" {
			t.Errorf("margin %v refused: %s", m, why)
		}
	}
	// A model whose outputs are not sigmoid has no logits to move.
	_, err := Decide(HostInput{Observation: &obs}, HostInput{Observation: &obs, Model: identityOutputs(t), Margin: 1})
	var oe *ObservationError
	if !errors.As(err, &oe) || oe.Field != "margin" {
		t.Errorf("identity outputs with a margin: error %v, want one naming margin", err)
	}
	// A request's margin reaches both hosts.
	r := Request{First: obs, Second: obs, Margin: 3}
	d, err := r.Decide()
	if err != nil {
		t.Fatal(err)
	}
	if d.First.Margin != 3 || d.Second.Margin != 3 {
		t.Errorf("a request's margin 3 gave the hosts %v and %v", d.First.Margin, d.Second.Margin)
	}
}

// TestRequestHostMargins: a request's first_margin and second_margin
// replace its margin on their own host only, and decide as a HostInput
// with that margin does.
func TestRequestHostMargins(t *testing.T) {
	obs := seriesObservation(t, "series3", 3000, 120, 6, 0.1)
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name          string
		margin        float64
		first, second *float64
		want          [2]float64
	}{
		{"margin alone", 3, nil, nil, [2]float64{3, 3}},
		{"first only", 3, f(-2), nil, [2]float64{-2, 3}},
		{"second only", 3, nil, f(5), [2]float64{3, 5}},
		{"both, no margin", 0, f(1.5), f(-0.5), [2]float64{1.5, -0.5}},
		{"an explicit 0 replaces the margin", 4, f(0), nil, [2]float64{0, 4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Request{First: obs, Second: obs, Margin: tc.margin, FirstMargin: tc.first, SecondMargin: tc.second}
			if a, b := r.HostMargins(); a != tc.want[0] || b != tc.want[1] {
				t.Fatalf("HostMargins() = %v, %v, want %v", a, b, tc.want)
			}
			d, err := r.Decide()
			if err != nil {
				t.Fatal(err)
			}
			want, err := Decide(HostInput{Observation: &obs, Margin: tc.want[0]}, HostInput{Observation: &obs, Margin: tc.want[1]})
			if err != nil {
				t.Fatal(err)
			}
			if d.First.Margin != tc.want[0] || d.Second.Margin != tc.want[1] ||
				d.First.Containers != want.First.Containers || d.Second.Containers != want.Second.Containers {
				t.Errorf("got margins %v / %v and %d / %d containers, want %v and %d / %d",
					d.First.Margin, d.Second.Margin, d.First.Containers, d.Second.Containers, tc.want, want.First.Containers, want.Second.Containers)
			}
		})
	}
	// The two margins decide apart: a first margin far stricter than the
	// second's lowers the first host's count and not the second's.
	loose, err := (&Request{First: obs, Second: obs}).Decide()
	if err != nil {
		t.Fatal(err)
	}
	strict, err := (&Request{First: obs, Second: obs, FirstMargin: f(MaxMargin)}).Decide()
	if err != nil {
		t.Fatal(err)
	}
	if strict.First.Containers >= loose.First.Containers || strict.Second.Containers != loose.Second.Containers {
		t.Errorf("first_margin %d gave %d / %d containers, margin 0 %d / %d: want fewer on the first host only",
			MaxMargin, strict.First.Containers, strict.Second.Containers, loose.First.Containers, loose.Second.Containers)
	}
	// A host's own margin out of range is refused, naming margin and the host.
	_, err = (&Request{First: obs, Second: obs, SecondMargin: f(MaxMargin + 1)}).Decide()
	var oe *ObservationError
	if !errors.As(err, &oe) || oe.Field != "margin" || oe.Host != RoleSecond {
		t.Errorf("second_margin %d: error %v, want the second host's margin named", MaxMargin+1, err)
	}
}

// identityOutputs is the built-in capacity processor with identity
// outputs (threshold 0.5): a model whose outputs are not probabilities.
func identityOutputs(t *testing.T) *Processor {
	t.Helper()
	p, err := Models.LoadFor(RoleSecond, "")
	if err != nil {
		t.Fatal(err)
	}
	m := *p.Model()
	m.Layers = append([]Layer(nil), m.Layers...)
	last := m.Layers[len(m.Layers)-1]
	last.Activation = ActivationIdentity
	m.Layers[len(m.Layers)-1] = last
	thr := 0.5
	m.OutputThreshold = &thr
	q, err := NewProcessor(&m)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
