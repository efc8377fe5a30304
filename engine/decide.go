package engine

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Layers the two hosts are read at.
const (
	LayerInput  = "input"
	LayerOutput = "output"
)

// Roles of the two hosts.
const (
	RoleFirst  = "first"
	RoleSecond = "second"
)

// StrongestBranches is how many branches an explanation names per host.
const StrongestBranches = 3

// Config is what Decide needs besides the two observations.
type Config struct {
	// Admission is the first host's processor, read at its input layer;
	// Capacity is the second host's, read at its output layer. Nil means
	// the built-in default.
	Admission *Processor
	Capacity  *Processor
	// FirstQuota and SecondQuota turn the two amounts into counts.
	FirstQuota  Quota
	SecondQuota Quota
}

// Decision is the method's answer for the two hosts.
type Decision struct {
	First  HostDecision `json:"first"`
	Second HostDecision `json:"second"`
}

// HostDecision is one host's count and how it came about.
type HostDecision struct {
	Role string `json:"role"`
	Host string `json:"host,omitempty"`
	// Layer is where the amount was read: "input" (first host) or
	// "output" (second host).
	Layer string `json:"layer"`
	// Containers is the count: Quota applied to Amount, within [min, max].
	Containers int `json:"containers"`
	// Amount is A_in for the first host and A_out for the second.
	Amount int `json:"amount"`
	// Unclamped is round(Amount x per_branch) before the clamp; Clamped
	// says whether the clamp changed it.
	Unclamped int  `json:"unclamped"`
	Clamped   bool `json:"clamped"`
	// BranchTotal is the exact number of activated branches, in decimal.
	BranchTotal string   `json:"branch_total"`
	Quota       Quota    `json:"quota"`
	Model       ModelRef `json:"model"`
	// Activated names the countable nodes counted in Amount.
	Activated []string `json:"activated"`
	// Strongest are the strongest activated branches, node names from the
	// input to the output.
	Strongest []BranchPath `json:"strongest"`
}

// ModelRef identifies the model that made a decision.
type ModelRef struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// BranchPath is one activated branch by node names.
type BranchPath struct {
	Nodes       []string `json:"nodes"`
	LogStrength float64  `json:"log_strength"`
}

// Reason is a one-line account of the host's count.
func (h *HostDecision) Reason() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s host", h.Role)
	if h.Host != "" {
		fmt.Fprintf(&b, " %s", h.Host)
	}
	fmt.Fprintf(&b, ": %d containers = clamp(%d, %d, %s(%d x %s))", h.Containers, h.Quota.Min, h.Quota.Max, h.Quota.Rounding, h.Amount, strconv.FormatFloat(h.Quota.PerBranch, 'g', -1, 64))
	amountName := "A_in"
	if h.Layer == LayerOutput {
		amountName = "A_out"
	}
	fmt.Fprintf(&b, " from %s=%d at the %s layer of %s (%s)", amountName, h.Amount, h.Layer, h.Model.Name, shortDigest(h.Model.Digest))
	fmt.Fprintf(&b, "; %s activated branches", h.BranchTotal)
	if h.Clamped {
		fmt.Fprintf(&b, "; clamped from %d", h.Unclamped)
	}
	return b.String()
}

func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// Explain is a readable, multi-line account of the decision.
func (d *Decision) Explain() string {
	var b strings.Builder
	for _, h := range []*HostDecision{&d.First, &d.Second} {
		b.WriteString(h.Reason())
		b.WriteString("\n")
		what := "admitted demand slots"
		if h.Layer == LayerOutput {
			what = "safe-count outputs"
		}
		fmt.Fprintf(&b, "  %s (%d): %s\n", what, len(h.Activated), strings.Join(h.Activated, " "))
		for i, br := range h.Strongest {
			fmt.Fprintf(&b, "  strongest branch %d: %s (log strength %.3f)\n", i+1, strings.Join(br.Nodes, " -> "), br.LogStrength)
		}
	}
	return b.String()
}

// decideWork is one goroutine's scratch space for one processor.
type decideWork struct {
	ws *Workspace
	fw featureWork
	x  []float64
}

func (p *Processor) getWork() *decideWork {
	if w, ok := p.pool.Get().(*decideWork); ok {
		return w
	}
	return &decideWork{ws: NewWorkspace(p), x: make([]float64, len(p.model.Inputs))}
}

// Decide is the method: the first host's count from the activated-branch
// amount at the input layer of the admission processor, the second host's
// from the amount at the output layer of the capacity processor, each through
// its quota. It is deterministic and safe for concurrent use. Any invalid
// input is an error naming the field, and then there is no decision.
func Decide(first, second *Observation, cfg Config) (*Decision, error) {
	if first == nil || second == nil {
		return nil, fmt.Errorf("decide: both host observations are required")
	}
	adm, capy := cfg.Admission, cfg.Capacity
	var err error
	if adm == nil {
		if adm, err = Builtin(BuiltinAdmission); err != nil {
			return nil, err
		}
	}
	if capy == nil {
		if capy, err = Builtin(BuiltinCapacity); err != nil {
			return nil, err
		}
	}
	if err := first.Validate(RoleFirst); err != nil {
		return nil, err
	}
	if err := second.Validate(RoleSecond); err != nil {
		return nil, err
	}
	if err := cfg.FirstQuota.Validate(RoleFirst); err != nil {
		return nil, err
	}
	if err := cfg.SecondQuota.Validate(RoleSecond); err != nil {
		return nil, err
	}
	d := &Decision{}
	if err := adm.decideHost(first, RoleFirst, LayerInput, cfg.FirstQuota, &d.First); err != nil {
		return nil, err
	}
	if err := capy.decideHost(second, RoleSecond, LayerOutput, cfg.SecondQuota, &d.Second); err != nil {
		return nil, err
	}
	return d, nil
}

func (p *Processor) decideHost(o *Observation, role, layer string, q Quota, h *HostDecision) error {
	if p.featuresErr != nil {
		return fmt.Errorf("%s host: model %s cannot read an observation: %w", role, p.model.Name, p.featuresErr)
	}
	if layer == LayerInput && len(p.countableIn) == 0 {
		return fmt.Errorf("%s host: model %s has no countable inputs to read at the input layer", role, p.model.Name)
	}
	if layer == LayerOutput && len(p.countableOut) == 0 {
		return fmt.Errorf("%s host: model %s has no countable outputs to read at the output layer", role, p.model.Name)
	}
	w := p.getWork()
	defer p.pool.Put(w)
	w.fw.compute(o)
	if err := p.features.fill(p.model, &w.fw, o, role, w.x); err != nil {
		return err
	}
	an, err := p.Analyze(w.x, w.ws)
	if err != nil {
		return fmt.Errorf("%s host: %w", role, err)
	}
	var counted []int
	var names []Node
	if layer == LayerInput {
		h.Amount, counted, names = an.InputAmount, an.ActivatedInputs, p.model.Inputs
	} else {
		h.Amount, counted, names = an.OutputAmount, an.ActivatedOutputs, p.model.Outputs
	}
	h.Role, h.Host, h.Layer, h.Quota = role, o.Host, layer, q
	h.Containers, h.Clamped = q.Apply(h.Amount)
	h.Unclamped = q.Unclamped(h.Amount)
	h.BranchTotal = an.TotalString()
	h.Model = ModelRef{Name: p.model.Name, Digest: p.digest}
	h.Activated = make([]string, len(counted))
	for i, c := range counted {
		h.Activated[i] = names[c].Name
	}
	br := p.Strongest(w.ws, StrongestBranches)
	h.Strongest = make([]BranchPath, len(br))
	for i, b := range br {
		nodes := make([]string, len(b.Nodes))
		for l, n := range b.Nodes {
			nodes[l] = p.nodeNames[l][n]
		}
		h.Strongest[i] = BranchPath{Nodes: nodes, LogStrength: b.LogStrength}
	}
	return nil
}

// poolHolder is embedded in Processor.
type poolHolder struct{ pool sync.Pool }
