package engine

import "fmt"

// Request is one decision asked for in data: the two observations, the model
// sources and the quotas. The command line, the Terraform data source and the
// Nomad strategy all build a Request and call DecideRequest, so the same
// inputs give the same decision whichever front end asks.
type Request struct {
	First  Observation `json:"first"`
	Second Observation `json:"second"`
	// FirstModel and SecondModel are model sources ("builtin:<name>" or a
	// file path); empty means the built-in defaults.
	FirstModel  string `json:"first_model,omitempty"`
	SecondModel string `json:"second_model,omitempty"`
	// FirstQuota and SecondQuota default to DefaultQuota of the model's
	// countable slot count when nil.
	FirstQuota  *Quota `json:"first_quota,omitempty"`
	SecondQuota *Quota `json:"second_quota,omitempty"`
}

// Defaults for the model sources.
const (
	DefaultFirstModel  = BuiltinPrefix + BuiltinAdmission
	DefaultSecondModel = BuiltinPrefix + BuiltinCapacity
)

// DecideRequest resolves the request's models and quotas and calls Decide.
func DecideRequest(r *Request) (*Decision, error) {
	firstSrc, secondSrc := r.FirstModel, r.SecondModel
	if firstSrc == "" {
		firstSrc = DefaultFirstModel
	}
	if secondSrc == "" {
		secondSrc = DefaultSecondModel
	}
	adm, err := LoadSource(firstSrc)
	if err != nil {
		return nil, fmt.Errorf("first_model: %w", err)
	}
	capy, err := LoadSource(secondSrc)
	if err != nil {
		return nil, fmt.Errorf("second_model: %w", err)
	}
	cfg := Config{Admission: adm, Capacity: capy}
	if r.FirstQuota != nil {
		cfg.FirstQuota = *r.FirstQuota
	} else {
		cfg.FirstQuota = DefaultQuota(len(adm.countableIn))
	}
	if r.SecondQuota != nil {
		cfg.SecondQuota = *r.SecondQuota
	} else {
		cfg.SecondQuota = DefaultQuota(len(capy.countableOut))
	}
	return Decide(&r.First, &r.Second, cfg)
}

// CountableInputs is the number of countable input nodes (the first host's
// largest possible amount).
func (p *Processor) CountableInputs() int { return len(p.countableIn) }

// CountableOutputs is the number of countable output nodes (the second
// host's largest possible amount).
func (p *Processor) CountableOutputs() int { return len(p.countableOut) }
