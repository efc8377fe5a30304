package sim

import (
	"fmt"
	"slices"
)

// Chosen is a policy's setting chosen on one replay (the choosing one,
// such as the training series') and its figures read on another (such as
// the held-out series'): what a user who sets the knob from one set of
// series gets on series it was not set on.
type Chosen struct {
	Policy   string `json:"policy"`
	KnobName string `json:"knob_name,omitempty"`
	// FirstKnob and SecondKnob are the settings chosen for the first and
	// the second host of a pair, equal unless each host has its own
	// (HoldPerHost).
	FirstKnob  float64 `json:"first_knob"`
	SecondKnob float64 `json:"second_knob"`
	// Density is the density read at the settings (the mean of the two
	// hosts' under HoldPerHost, as Report.BestDensity reads it), and
	// ViolationRate the rate the holding holds within the budget read
	// there: the pair's under HoldPair, the worse host's otherwise. It
	// may exceed the budget: the setting was chosen elsewhere.
	Density       float64 `json:"density"`
	ViolationRate float64 `json:"violation_rate"`
	WithinBudget  bool    `json:"within_budget"`
}

// ChosenSummary compares the policies at settings chosen on another
// replay, held as Holding says on the choosing replay.
type ChosenSummary struct {
	Budget  float64 `json:"budget"`
	Holding string  `json:"holding"`
	// Policies are the policies with a setting within the budget on the
	// choosing replay, in the report's order; Unset names those with none
	// there (no figure is read for them).
	Policies []Chosen `json:"policies"`
	Unset    []string `json:"unset,omitempty"`
	// BestBaseline is the baseline of highest density read here, whatever
	// its violation rate (which Policies give), Activation the activation
	// policy's figures (nil when it has no setting), and OracleDensity the
	// oracle's density here (it has one setting).
	BestBaseline        string  `json:"best_baseline"`
	BestBaselineDensity float64 `json:"best_baseline_density"`
	// BestWithinBudget is the baseline of highest density among those
	// within the budget here ("" when none is), the one a reader who
	// keeps to the budget compares with when the best baseline ran over.
	BestWithinBudget        string  `json:"best_baseline_within_budget,omitempty"`
	BestWithinBudgetDensity float64 `json:"best_baseline_within_budget_density,omitempty"`
	Activation              *Chosen `json:"activation"`
	OracleDensity           float64 `json:"oracle_density"`
	// GainVsBestBaseline and GapClosed are the activation's density over
	// the best baseline's, minus one, and (activation - best baseline) /
	// (oracle - best baseline); null when undefined, when the activation
	// has no setting (Summary scores that as density 0), and when its
	// figures here are over the budget (a density over the budget is no
	// lead over one within it).
	GainVsBestBaseline *float64 `json:"gain_vs_best_baseline"`
	GapClosed          *float64 `json:"gap_closed"`
	// OverBudget names the policies whose figures here exceed the budget.
	OverBudget []string `json:"over_budget,omitempty"`
}

// SummarizeChosenOn chooses each policy's setting on the report on, held
// to budget as h says, and reads its figures on rep at that setting. Each
// of rep's policies must have been replayed on on with the same sweep (the
// same knob values in the same order); the two reports may hold other
// series (that is the point) but should share the scenario and models.
func (rep *Report) SummarizeChosenOn(on *Report, budget float64, h Holding) (ChosenSummary, error) {
	if h == HoldEverySeries {
		// A series' own rate is not in the figures read at a setting.
		return ChosenSummary{}, fmt.Errorf("%s: a setting chosen on one replay is read on another for the pair's or each host's budget only", h)
	}
	s := ChosenSummary{Budget: budget, Holding: h.String()}
	oneHost := rep.Scenario.Hosts == 1
	for i := range rep.Curves {
		c := &rep.Curves[i]
		o := on.Curve(c.Policy)
		if o == nil {
			return ChosenSummary{}, fmt.Errorf("policy %s: not replayed on the choosing replay", c.Policy)
		}
		if err := sameSweep(c, o); err != nil {
			return ChosenSummary{}, fmt.Errorf("policy %s: %w", c.Policy, err)
		}
		var ch Chosen
		switch h {
		case HoldPerHost:
			_, fi, ok1 := o.bestOf(budget, func(p Point) float64 { return p.FirstViolationRate }, func(p Point) float64 { return p.FirstDensity })
			_, si, ok2 := o.bestOf(budget, func(p Point) float64 { return p.SecondViolationRate }, func(p Point) float64 { return p.SecondDensity })
			if !ok1 || (!ok2 && !oneHost) {
				s.Unset = append(s.Unset, c.Policy)
				continue
			}
			first := c.Points[fi]
			ch = Chosen{Policy: c.Policy, FirstKnob: first.Knob, SecondKnob: first.Knob,
				Density: first.FirstDensity, ViolationRate: first.FirstViolationRate}
			if !oneHost {
				second := c.Points[si]
				ch.SecondKnob = second.Knob
				ch.Density = (first.FirstDensity + second.SecondDensity) / 2
				ch.ViolationRate = max(first.FirstViolationRate, second.SecondViolationRate)
			}
		case HoldEachHost:
			_, i, ok := o.BestEachHost(budget)
			if !ok {
				s.Unset = append(s.Unset, c.Policy)
				continue
			}
			p := c.Points[i]
			ch = Chosen{Policy: c.Policy, FirstKnob: p.Knob, SecondKnob: p.Knob, Density: p.Density,
				ViolationRate: max(p.FirstViolationRate, p.SecondViolationRate)}
		default:
			_, i, ok := o.Best(budget)
			if !ok {
				s.Unset = append(s.Unset, c.Policy)
				continue
			}
			p := c.Points[i]
			ch = Chosen{Policy: c.Policy, FirstKnob: p.Knob, SecondKnob: p.Knob, Density: p.Density, ViolationRate: p.ViolationRate}
		}
		ch.KnobName = c.KnobName
		ch.WithinBudget = ch.ViolationRate <= budget
		if !ch.WithinBudget {
			s.OverBudget = append(s.OverBudget, c.Policy)
		}
		s.Policies = append(s.Policies, ch)
	}
	for i := range s.Policies {
		ch := &s.Policies[i]
		switch {
		case IsBaseline(ch.Policy):
			if s.BestBaseline == "" || ch.Density > s.BestBaselineDensity {
				s.BestBaseline, s.BestBaselineDensity = ch.Policy, ch.Density
			}
			if ch.WithinBudget && (s.BestWithinBudget == "" || ch.Density > s.BestWithinBudgetDensity) {
				s.BestWithinBudget, s.BestWithinBudgetDensity = ch.Policy, ch.Density
			}
		case ch.Policy == PolicyActivation:
			s.Activation = ch
		case ch.Policy == PolicyOracle:
			s.OracleDensity = ch.Density
		}
	}
	if s.Activation == nil || !s.Activation.WithinBudget {
		return s, nil
	}
	s.GainVsBestBaseline = Gain(s.Activation.Density, s.BestBaselineDensity)
	s.GapClosed = gapClosed(s.Activation.Density, s.BestBaselineDensity, s.OracleDensity)
	return s, nil
}

// sameSweep says whether two curves of a policy swept the same knob over
// the same values, in the same order.
func sameSweep(c, o *Curve) error {
	if c.KnobName != o.KnobName {
		return fmt.Errorf("swept %q here and %q on the choosing replay", c.KnobName, o.KnobName)
	}
	if a, b := c.Knobs(), o.Knobs(); !slices.Equal(a, b) {
		a0, a1 := ends(a)
		b0, b1 := ends(b)
		return fmt.Errorf("swept %d settings here (%g to %g) and %d there (%g to %g), not the same values", len(a), a0, a1, len(b), b0, b1)
	}
	return nil
}

// ends are a sweep's first and last values (0 and 0 when empty).
func ends(k []float64) (float64, float64) {
	if len(k) == 0 {
		return 0, 0
	}
	return k[0], k[len(k)-1]
}

// WorstFamilyRates is pooled, a pooled replay of families (Pool), with
// each point's violation rates (the pair's and each host role's) the
// highest any of families reads at the same setting: the report to choose
// one setting for every family on that keeps each of them within a
// budget (densest on the pooled series among those). Its densities and
// other figures are pooled's; it serves to choose settings, not to read
// figures. Every family must hold each of pooled's policies with the same
// sweep.
func WorstFamilyRates(pooled *Report, families []*Report) (*Report, error) {
	if len(families) == 0 {
		return nil, fmt.Errorf("no families to hold within the budget")
	}
	out := *pooled
	out.Curves = make([]Curve, len(pooled.Curves))
	for i := range pooled.Curves {
		c := pooled.Curves[i]
		c.Points = slices.Clone(c.Points)
		for fi, f := range families {
			fc := f.Curve(c.Policy)
			if fc == nil {
				return nil, fmt.Errorf("family %s: policy %s was not replayed", f.Family, c.Policy)
			}
			if err := sameSweep(&c, fc); err != nil {
				return nil, fmt.Errorf("family %s: policy %s: %w", f.Family, c.Policy, err)
			}
			for j := range c.Points {
				p, q := &c.Points[j], &fc.Points[j]
				if fi == 0 { // the families' rates, not the pooled mean of them
					p.ViolationRate, p.FirstViolationRate, p.SecondViolationRate = q.ViolationRate, q.FirstViolationRate, q.SecondViolationRate
					continue
				}
				p.ViolationRate = max(p.ViolationRate, q.ViolationRate)
				p.FirstViolationRate = max(p.FirstViolationRate, q.FirstViolationRate)
				p.SecondViolationRate = max(p.SecondViolationRate, q.SecondViolationRate)
			}
		}
		out.Curves[i] = c
	}
	return &out, nil
}
