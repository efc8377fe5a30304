package engine

// Request is one decision asked for in data, as the command line reads it
// and the golden vectors hold it: the two observations, the model sources
// and the quotas. Front ends that hold their inputs in other forms build
// HostInputs directly; Inputs is the one place a Request is resolved.
type Request struct {
	First  Observation `json:"first"`
	Second Observation `json:"second"`
	// FirstModel and SecondModel are model sources ("builtin:<name>" or a
	// file path); empty means the role's built-in model.
	FirstModel  string `json:"first_model,omitempty"`
	SecondModel string `json:"second_model,omitempty"`
	// FirstQuota and SecondQuota: unset fields take the defaults (see
	// QuotaSpec.Resolve).
	FirstQuota  *QuotaSpec `json:"first_quota,omitempty"`
	SecondQuota *QuotaSpec `json:"second_quota,omitempty"`
	// MinSamples is the fewest usage samples each host's window must hold
	// (0: DefaultMinSamples).
	MinSamples int `json:"min_samples,omitempty"`
	// HoldBand, when > 0, asks both hosts' hold ranges (HostInput.HoldBand).
	HoldBand float64 `json:"hold_band,omitempty"`
	// Margin moves both models' output thresholds (HostInput.Margin),
	// but where a host has its own (FirstMargin, SecondMargin).
	Margin float64 `json:"margin,omitempty"`
	// FirstMargin and SecondMargin, when set, are the first and the
	// second host's margins in place of Margin (the two processors need
	// not meet a budget at one threshold).
	FirstMargin  *float64 `json:"first_margin,omitempty"`
	SecondMargin *float64 `json:"second_margin,omitempty"`
}

// HostMargins are the margins the request asks of its first and second
// hosts: FirstMargin and SecondMargin where set, Margin otherwise.
func (r *Request) HostMargins() (first, second float64) {
	first, second = r.Margin, r.Margin
	if r.FirstMargin != nil {
		first = *r.FirstMargin
	}
	if r.SecondMargin != nil {
		second = *r.SecondMargin
	}
	return first, second
}

// Inputs resolves the request's model sources through the model cache.
// When both fail, the error holds both, one per host (Errors), as
// Decide's does.
func (r *Request) Inputs() (first, second HostInput, err error) {
	firstMargin, secondMargin := r.HostMargins()
	first = HostInput{Observation: &r.First, Quota: r.FirstQuota, MinSamples: r.MinSamples, HoldBand: r.HoldBand, Margin: firstMargin}
	second = HostInput{Observation: &r.Second, Quota: r.SecondQuota, MinSamples: r.MinSamples, HoldBand: r.HoldBand, Margin: secondMargin}
	var errFirst, errSecond error
	first.Model, errFirst = Models.LoadFor(RoleFirst, r.FirstModel)
	second.Model, errSecond = Models.LoadFor(RoleSecond, r.SecondModel)
	switch {
	case errFirst != nil && errSecond != nil:
		err = &hostErrors{errs: []error{errFirst, errSecond}}
	case errFirst != nil:
		err = errFirst
	default:
		err = errSecond
	}
	return
}

// Decide resolves the request and decides.
func (r *Request) Decide() (*Decision, error) {
	first, second, err := r.Inputs()
	if err != nil {
		return nil, err
	}
	return Decide(first, second)
}
