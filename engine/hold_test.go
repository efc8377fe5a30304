package engine_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	. "github.com/activation-scheduler/terraform-provider-activation/engine"
)

// The hold range is the decision at thresholds band logits stricter and
// looser than the model's, through the same quota: exactly what Decide
// gives with the model's threshold moved, and it widens with the band.
func TestHoldRange(t *testing.T) {
	obs := seriesObservation(t, "series3", 3000, 120, 6, 0.1)
	for _, role := range []string{RoleFirst, RoleSecond} {
		p, err := Models.LoadFor(role, "")
		if err != nil {
			t.Fatal(err)
		}
		at := func(thr float64) int {
			return decideOne(t, role, obs, withThreshold(t, p, thr), 0).Containers
		}
		if h := decideOne(t, role, obs, p, 0).Hold; h != nil {
			t.Fatalf("%s host: hold range %+v without a band", role, h)
		}
		prevLo, prevHi := math.MaxInt, -1
		for _, band := range []float64{0.25, 1, 3} {
			d := decideOne(t, role, obs, p, band)
			h := d.Hold
			if h == nil {
				t.Fatalf("%s host, band %v: no hold range", role, band)
			}
			if h.Band != band || h.Low > d.Containers || h.High < d.Containers {
				t.Errorf("%s host, band %v: hold %+v around %d", role, band, *h, d.Containers)
			}
			thr := p.Model().Threshold()
			if lo, hi := at(ShiftThreshold(thr, band)), at(ShiftThreshold(thr, -band)); h.Low != lo || h.High != hi {
				t.Errorf("%s host, band %v: hold [%d, %d], the moved thresholds give [%d, %d]", role, band, h.Low, h.High, lo, hi)
			}
			if h.Low > prevLo || h.High < prevHi {
				t.Errorf("%s host, band %v: hold [%d, %d] narrower than a smaller band's [%d, %d]", role, band, h.Low, h.High, prevLo, prevHi)
			}
			prevLo, prevHi = h.Low, h.High
		}
		if prevLo == prevHi {
			t.Errorf("%s host: a 3-logit band holds only %d: the test needs a wider range", role, prevLo)
		}
	}
	var h *HoldRange
	if h.Keeps(3) {
		t.Error("no hold range keeps a count")
	}
	if r := (&HoldRange{Low: 2, High: 4}); !r.Keeps(2) || !r.Keeps(4) || r.Keeps(1) || r.Keeps(5) {
		t.Errorf("range %+v keeps the wrong counts", *r)
	}
}

func TestHoldBandErrors(t *testing.T) {
	obs := seriesObservation(t, "series3", 3000, 120, 6, 0.1)
	for _, band := range []float64{-1, math.NaN(), math.Inf(1), MaxHoldBand + 1} {
		_, err := Decide(HostInput{Observation: &obs, HoldBand: band}, HostInput{Observation: &obs})
		var oe *ObservationError
		if !errors.As(err, &oe) || oe.Field != "hold_band" {
			t.Errorf("band %v: error %v, want one naming hold_band", band, err)
		}
	}
	// A model whose outputs are not sigmoid has no logits to move.
	_, err := Decide(HostInput{Observation: &obs}, HostInput{Observation: &obs, Model: identityOutputs(t), HoldBand: 1})
	var oe *ObservationError
	if !errors.As(err, &oe) || oe.Field != "hold_band" {
		t.Errorf("identity outputs with a band: error %v, want one naming hold_band", err)
	}
}

func decideOne(t *testing.T, role string, obs Observation, p *Processor, band float64) HostDecision {
	t.Helper()
	return decideHost(t, role, HostInput{Observation: &obs, Model: p, HoldBand: band})
}

// decideHost is role's decision for in, the other host reading the same
// observation with its defaults.
func decideHost(t *testing.T, role string, in HostInput) HostDecision {
	t.Helper()
	other := HostInput{Observation: in.Observation}
	if role == RoleFirst {
		d, err := Decide(in, other)
		if err != nil {
			t.Fatal(err)
		}
		return d.First
	}
	d, err := Decide(other, in)
	if err != nil {
		t.Fatal(err)
	}
	return d.Second
}

// A shift never lands on the wrong side of the threshold, however small
// (the round trip through the logit is not exact), so Low <= Containers <=
// High holds for any band.
func TestShiftThresholdSide(t *testing.T) {
	for _, thr := range []float64{0.9, 0.8933094060543487, 0.5, 1e-9, 1 - 1e-9} {
		for _, d := range []float64{1e-300, 1e-15, 1e-3, 2} {
			if s := ShiftThreshold(thr, d); s < thr {
				t.Errorf("ShiftThreshold(%v, %v) = %v, looser than the threshold", thr, d, s)
			}
			if s := ShiftThreshold(thr, -d); s > thr {
				t.Errorf("ShiftThreshold(%v, %v) = %v, stricter than the threshold", thr, -d, s)
			}
		}
	}
	obs := seriesObservation(t, "series3", 3000, 120, 6, 0.1)
	d := decideOne(t, RoleSecond, obs, nil, 1e-300)
	if h := d.Hold; h == nil || h.Low > d.Containers || h.High < d.Containers {
		t.Errorf("a tiny band: hold %+v around %d", h, d.Containers)
	}
	if !strings.Contains(d.Reason(), "hold band 1e-300:") {
		t.Errorf("the reason does not give the hold range: %s", d.Reason())
	}
}

// withThreshold is p's model with its output threshold set to thr.
func withThreshold(t *testing.T, p *Processor, thr float64) *Processor {
	t.Helper()
	m := *p.Model()
	m.OutputThreshold = &thr
	q, err := NewProcessor(&m)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
