package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
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

// HostInput is everything one host's decision needs.
type HostInput struct {
	// Observation is the host's observation; required.
	Observation *Observation
	// Model is the host's processor; nil is the role's built-in model
	// (the admission processor for the first host, the capacity processor
	// for the second).
	Model *Processor
	// Quota turns the amount into a count; nil is every default (see
	// QuotaSpec.Resolve).
	Quota *QuotaSpec
	// MinSamples is the fewest usage samples the host's window must hold
	// for a decision; 0 is DefaultMinSamples.
	MinSamples int
	// HoldBand, when > 0, also reads the counts at output thresholds
	// HoldBand logits stricter and looser than the model's (HostDecision.
	// Hold): a controller may keep a current count that lies between them.
	// At most MaxHoldBand; the model's outputs must be sigmoid.
	HoldBand float64
	// Margin moves the model's output threshold by Margin logits: > 0 is
	// stricter (fewer containers, a host overloaded less often), < 0
	// looser; 0 is the model's own threshold. From -MaxMargin to
	// MaxMargin; a margin other than 0 needs sigmoid outputs. With the
	// sigmoid outputs sigmoid(alpha (1 - cost)), a margin of m logits keeps
	// m / alpha of the host free beyond the processor's estimate.
	Margin float64
}

// MaxMargin is the largest margin either way, in logits.
const MaxMargin = 10

// MarginReason says why m is not a margin Decide accepts, or "" when it
// is: a number from -MaxMargin to MaxMargin. Front ends check their
// settings with it.
func MarginReason(m float64) string {
	if m >= -MaxMargin && m <= MaxMargin {
		return ""
	}
	return fmt.Sprintf("is %v; it must be a number of logits from %d to %d (0: the model's own threshold)", m, -MaxMargin, MaxMargin)
}

// MaxHoldBand is the widest hold band, in logits.
const MaxHoldBand = 10

// HoldBandOK reports whether b is a hold band Decide accepts: a number
// from 0 (off) to MaxHoldBand. Front ends check their settings with it.
func HoldBandOK(b float64) bool { return b >= 0 && b <= MaxHoldBand }

// HoldBandReason says why b is not a hold band Decide accepts, or "" when
// it is (HoldBandOK).
func HoldBandReason(b float64) string {
	if HoldBandOK(b) {
		return ""
	}
	return fmt.Sprintf("is %v; it must be a number from 0 to %d (logits)", b, MaxHoldBand)
}

// MinSamplesReason says why n is not a sample minimum Decide accepts, or
// "" when it is: 0 (DefaultMinSamples) or 1 to MaxSamples. Front ends
// check their settings with it.
func MinSamplesReason(n int) string {
	if n < 0 || n > MaxSamples {
		return fmt.Sprintf("is %d; it must be 0 (the default, %d) or from 1 to %d", n, DefaultMinSamples, MaxSamples)
	}
	return ""
}

// HoldRange is the range of counts the models find about as safe as the
// decided one: the counts, through the same quota, at output thresholds
// Band logits stricter (Low) and looser (High) than the model's. Low <=
// Containers <= High.
type HoldRange struct {
	Band float64 `json:"band"`
	Low  int     `json:"low"`
	High int     `json:"high"`
}

// Keeps reports whether a controller at count current may stay there: the
// current count lies within the range.
func (h *HoldRange) Keeps(current int) bool {
	return h != nil && current >= h.Low && current <= h.High
}

// ShiftThreshold moves an output threshold in (0, 1) by d logits (d > 0:
// stricter, fewer outputs hold data). The result is never on the other
// side of t (the round trip through the logit is not exact).
func ShiftThreshold(t, d float64) float64 {
	u := 1 / (1 + math.Exp(-(math.Log(t/(1-t)) + d)))
	if d >= 0 {
		return max(u, t)
	}
	return min(u, t)
}

// Decision is the method's answer for the two hosts.
type Decision struct {
	First  HostDecision `json:"first"`
	Second HostDecision `json:"second"`
}

// Limits: what bounded a host's amount (before the quota).
const (
	// LimitCPU: the host's CPU, by its predicted usage.
	LimitCPU = "cpu"
	// LimitMemory: the host's memory, by its peak.
	LimitMemory = "memory"
	// LimitDemand: every replica that wants to run was admitted (first
	// host): nothing more was asked.
	LimitDemand = "demand"
	// LimitSlots: every countable slot of the model holds data.
	LimitSlots = "slots"
)

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
	// Limit is what bounded the amount: "cpu", "memory", "demand" or
	// "slots" (see the Limit constants).
	Limit string `json:"limit"`
	// Refused is the first host's first refused replica (nil when every
	// replica that wants to run was admitted, and for the second host).
	Refused *RefusedSlot `json:"refused,omitempty"`
	// Evidence says how the usage window was read.
	Evidence Evidence `json:"evidence"`
	// BranchTotal is the exact number of activated branches, in decimal.
	BranchTotal string   `json:"branch_total"`
	Quota       Quota    `json:"quota"`
	Model       ModelRef `json:"model"`
	// Activated names the countable nodes counted in Amount.
	Activated []string `json:"activated"`
	// Strongest are the strongest activated branches, node names from the
	// input to the output.
	Strongest []BranchPath `json:"strongest"`
	// Placement says how the count meets the scheduler's placement by
	// requested resources.
	Placement Placement `json:"placement"`
	// Hold is the range of counts about as safe as Containers, when the
	// input asked for a hold band (nil otherwise).
	Hold *HoldRange `json:"hold,omitempty"`
	// Margin is the input's margin, in logits (HostInput.Margin; 0: the
	// model's own output threshold).
	Margin float64 `json:"margin,omitempty"`
}

// Overloads reports whether the models find that some of the running
// replicas do not fit the host, so that a scale-down is a safety move: on
// the first host a running replica's slot is refused (the queue puts the
// running ones first), on the second the safe amount is below the running
// replicas, bound by CPU or memory. It reads the amount, in replicas, not
// the count, which the quota's per_branch scales. A controller's
// hysteresis does not hold such a move (Steps.Control).
func (h *HostDecision) Overloads(running int) bool {
	if h.Layer == LayerInput {
		return h.Refused != nil && h.Refused.Running
	}
	return h.Amount < running && (h.Limit == LimitCPU || h.Limit == LimitMemory)
}

// RefusedSlot is the first replica the admission processor refused.
type RefusedSlot struct {
	Slot     int     `json:"slot"`
	Name     string  `json:"name"`
	Running  bool    `json:"running"`
	CPUMHz   float64 `json:"cpu_mhz"`
	MemoryMB float64 `json:"memory_mb,omitempty"`
	// Resource is "cpu" or "memory": the one that refused it.
	Resource string `json:"resource"`
	Reason   string `json:"reason"`
}

// ModelRef identifies the model that made a decision.
type ModelRef struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// BranchPath is one activated branch by node names.
type BranchPath struct {
	Nodes []string `json:"nodes"`
	// LogStrength is the log of the product of the edge contributions
	// along the branch. A model whose activations could overflow a
	// float64 is refused when it loads, and an analysis in which one did
	// is refused; an infinite strength, should one come from elsewhere,
	// JSON, having no infinity, writes as null.
	LogStrength float64 `json:"log_strength"`
}

// branchPathJSON is BranchPath's JSON form.
type branchPathJSON struct {
	Nodes       []string `json:"nodes"`
	LogStrength *float64 `json:"log_strength"`
}

// MarshalJSON writes a strength that overflowed as null.
func (b BranchPath) MarshalJSON() ([]byte, error) {
	j := branchPathJSON{Nodes: b.Nodes}
	if !math.IsInf(b.LogStrength, 0) && !math.IsNaN(b.LogStrength) {
		j.LogStrength = &b.LogStrength
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a null strength as one that overflowed (+Inf); a
// missing one is 0, and a null branch leaves b as it is.
func (b *BranchPath) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	var j struct {
		Nodes       []string        `json:"nodes"`
		LogStrength json.RawMessage `json:"log_strength"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	b.Nodes, b.LogStrength = j.Nodes, 0
	switch {
	case len(j.LogStrength) == 0:
	case string(j.LogStrength) == "null":
		b.LogStrength = math.Inf(1)
	default:
		if err := json.Unmarshal(j.LogStrength, &b.LogStrength); err != nil {
			return fmt.Errorf("log_strength: %w", err)
		}
	}
	return nil
}

// Reason is a one-line account of the host's count.
func (h *HostDecision) Reason() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s host", h.Role)
	if h.Host != "" {
		fmt.Fprintf(&b, " %s", h.Host)
	}
	containers := "containers"
	if h.Containers == 1 {
		containers = "container"
	}
	fmt.Fprintf(&b, ": %d %s = clamp(%d, %d, %s(%d x %s))", h.Containers, containers, h.Quota.Min, h.Quota.Max, h.Quota.Rounding, h.Amount, strconv.FormatFloat(h.Quota.PerBranch, 'g', -1, 64))
	amountName := "A_in"
	if h.Layer == LayerOutput {
		amountName = "A_out"
	}
	fmt.Fprintf(&b, " from %s=%d at the %s layer of %s (%s)", amountName, h.Amount, h.Layer, h.Model.Name, shortDigest(h.Model.Digest))
	if h.Margin != 0 {
		unit := "logits"
		if math.Abs(h.Margin) == 1 {
			unit = "logit"
		}
		fmt.Fprintf(&b, " with a margin of %s %s", strconv.FormatFloat(h.Margin, 'g', -1, 64), unit)
	}
	fmt.Fprintf(&b, ", bound by %s", h.Limit)
	if h.Refused != nil {
		fmt.Fprintf(&b, " (%s refused: %s)", h.Refused.Name, h.Refused.Resource)
	}
	fmt.Fprintf(&b, "; %s activated branches", h.BranchTotal)
	// The host bound the amount, and the count asks for more replicas
	// than the models find it can run: a quota's min above it (a user
	// trial read only "clamped"), or a per_branch above 1. The count is
	// read in replicas, as the placement reads it; the amount is what the
	// host fits.
	over := 0
	if h.Limit == LimitCPU || h.Limit == LimitMemory {
		over = max(h.Containers-h.Amount, 0)
	}
	if h.Clamped {
		bound := "max"
		if h.Unclamped < h.Quota.Min {
			bound = "min"
		}
		fmt.Fprintf(&b, "; clamped from %d to the quota's %s", h.Unclamped, bound)
		if over > 0 {
			fmt.Fprintf(&b, ", %d above what the host fits by its %s: expect it overloaded", over, h.Limit)
		}
	} else if over > 0 {
		fmt.Fprintf(&b, "; %d above what the host fits by its %s (per_branch %s): expect it overloaded", over, h.Limit, strconv.FormatFloat(h.Quota.PerBranch, 'g', -1, 64))
	}
	if h.Hold != nil {
		fmt.Fprintf(&b, "; hold band %s: %d to %d", strconv.FormatFloat(h.Hold.Band, 'g', -1, 64), h.Hold.Low, h.Hold.High)
	}
	return b.String()
}

func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}

// Explain is a readable, multi-line account of the decision: each host's
// (HostDecision.Explain), the first host's first.
func (d *Decision) Explain() string {
	return d.First.Explain() + d.Second.Explain()
}

// Explain is a readable, multi-line account of the host's decision, each
// line ending in a newline.
func (h *HostDecision) Explain() string {
	var b strings.Builder
	b.WriteString(h.Reason())
	b.WriteString("\n")
	fmt.Fprintf(&b, "  usage: %s\n", h.Evidence.Note)
	what := "admitted demand slots"
	if h.Layer == LayerOutput {
		what = "safe-count outputs"
	}
	fmt.Fprintf(&b, "  %s (%d): %s\n", what, len(h.Activated), strings.Join(h.Activated, " "))
	if r := h.Refused; r != nil {
		fmt.Fprintf(&b, "  first refused: %s\n", r.Reason)
	}
	for i, br := range h.Strongest {
		fmt.Fprintf(&b, "  strongest branch %d: %s (log strength %.3f)\n", i+1, strings.Join(br.Nodes, " -> "), br.LogStrength)
	}
	fmt.Fprintf(&b, "  placement: %s\n", h.Placement.Summary(h.Containers))
	return b.String()
}

// Decide is the method, the one entry point every front end calls: the
// first host's count from the activated-branch amount at the input layer of
// its admission processor, the second host's from the amount at the output
// layer of its capacity processor, each through its quota. Defaults (the
// built-in models, the quota defaults, the sample minimum) are filled here
// and nowhere else. It is deterministic and safe for concurrent use. Any
// invalid input is an error naming the field (*ObservationError,
// *QuotaError, *ModelSourceError), and then there is no decision. When both
// hosts' inputs are wrong the error holds both, the first host's first
// (Errors splits it, one per host; Problems into every problem), so that
// a caller can report every one.
func Decide(first, second HostInput) (*Decision, error) {
	d := &Decision{}
	errFirst := decideHost(&first, RoleFirst, &d.First)
	errSecond := decideHost(&second, RoleSecond, &d.Second)
	switch {
	case errFirst != nil && errSecond != nil:
		return nil, &hostErrors{errs: []error{errFirst, errSecond}}
	case errFirst != nil:
		return nil, errFirst
	case errSecond != nil:
		return nil, errSecond
	}
	return d, nil
}

func decideHost(in *HostInput, role string, h *HostDecision) error {
	o := in.Observation
	if o == nil {
		return obsErr(role, "", "the host's observation is required")
	}
	if err := o.Validate(role); err != nil {
		return err
	}
	if err := o.CheckRole(role); err != nil {
		return err
	}
	if why := MinSamplesReason(in.MinSamples); why != "" {
		return obsErr(role, "min_samples", "%s", why)
	}
	if err := o.checkEvidence(role, in.MinSamples); err != nil {
		return err
	}
	p := in.Model
	if p == nil {
		var err error
		if p, err = Models.LoadFor(role, ""); err != nil {
			return err
		}
	} else if err := p.canServe(role); err != nil {
		return &ModelSourceError{Host: role, Source: p.model.Name, Err: err}
	}
	q, err := in.Quota.Resolve(role, p.Slots(role))
	if err != nil {
		return err
	}
	if b := in.HoldBand; b != 0 {
		if why := HoldBandReason(b); why != "" {
			return obsErr(role, "hold_band", "%s", why)
		}
		if act := p.model.OutputActivation(); act != ActivationSigmoid {
			return obsErr(role, "hold_band", "model %s has %s outputs; a hold band needs sigmoid outputs (a band in logits)", p.model.Name, act)
		}
	}
	if m := in.Margin; m != 0 {
		if why := MarginReason(m); why != "" {
			return obsErr(role, "margin", "%s", why)
		}
		if act := p.model.OutputActivation(); act != ActivationSigmoid {
			return obsErr(role, "margin", "model %s has %s outputs; a margin needs sigmoid outputs (a margin in logits)", p.model.Name, act)
		}
	}
	return p.decideHost(o, role, q, in.HoldBand, in.Margin, h)
}

// CheckRole refuses, as Decide does, what the host's role does not take: a
// queue of new replicas on the second host (secondHostQueue). For front
// ends that check what they know before deciding.
func (o *Observation) CheckRole(role string) error {
	if role == RoleSecond {
		return secondHostQueue(o)
	}
	return nil
}

// secondHostQueue refuses a queue of new replicas on the second host, an
// empty one too (it held the placeable count to the running replicas): its
// count is how many replicas of the observed workload its capacity
// processor reads as safe, which no queue moves. Taken, a queue counted
// its replicas inside that count and cut the reservation of the others
// (the placement), while the count itself ignored them.
func secondHostQueue(o *Observation) error {
	const why = "the second host's count is how many replicas of the observed workload its capacity processor reads as safe, and no queue moves it (a queue of new replicas is the first host's, whose admission processor reads one slot per replica); give what other workloads take of this host as other_reserved_cpu_mhz and other_reserved_memory_mb"
	switch {
	case o.QueuedReplicas != nil:
		return obsErr(RoleSecond, "queued_replicas", "is given (%d replica(s)): %s", len(o.QueuedReplicas), why)
	case o.WantedReplicas != 0:
		return obsErr(RoleSecond, "wanted_replicas", "is %d: %s", o.WantedReplicas, why)
	}
	return nil
}

func (p *Processor) decideHost(o *Observation, role string, q Quota, band, margin float64, h *HostDecision) error {
	w := p.getWork()
	defer p.putWork(w)
	w.thr = p.thr
	if margin != 0 {
		w.thr = ShiftThreshold(p.thr, margin)
	}
	w.fw.compute(o)
	p.features.fill(&w.fw, o, w.x)
	an, err := p.analyzeAt(w.x, w.ws, w.thr)
	if err != nil {
		return fmt.Errorf("%s host: %w", role, err)
	}
	layer := LayerOutput
	counted, names := an.ActivatedOutputs, p.model.Outputs
	h.Amount = an.OutputAmount
	if role == RoleFirst {
		layer = LayerInput
		counted, names = an.ActivatedInputs, p.model.Inputs
		h.Amount = an.InputAmount
	}
	h.Role, h.Host, h.Layer, h.Quota, h.Margin = role, o.Host, layer, q, margin
	h.Containers, h.Clamped = q.Apply(h.Amount)
	h.Unclamped = q.Unclamped(h.Amount)
	h.BranchTotal = an.TotalString()
	h.Model = ModelRef{Name: p.model.Name, Digest: p.digest}
	h.Evidence = w.fw.evidence(o, p.features.slots > 0)
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
	// What bound the amount. Strongest is done with ws, so the
	// counterfactual analysis (memory not judged) may reuse it.
	if role == RoleFirst {
		p.admissionLimit(o, w, h)
	} else {
		p.capacityLimit(w, h)
	}
	h.Placement = placement(o, &w.fw, h.Containers)
	if band > 0 {
		ts := [2]float64{ShiftThreshold(w.thr, band), ShiftThreshold(w.thr, -band)}
		var am [2]int
		if err := p.sweepInput(w.x, w.ws, role, ts[:], am[:]); err != nil {
			return fmt.Errorf("%s host: hold band: %w", role, err)
		}
		lo, _ := q.Apply(am[0])
		hi, _ := q.Apply(am[1])
		h.Hold = &HoldRange{Band: band, Low: lo, High: hi}
	}
	return nil
}

// capacityLimit names what bound the second host's amount: the model's
// slots, memory (the amount rises when memory is not judged) or CPU.
func (p *Processor) capacityLimit(w *decideWork, h *HostDecision) {
	switch {
	case h.Amount >= len(p.countableOut):
		h.Limit = LimitSlots
	case w.fw.ev.MemoryJudged && p.readsMemory():
		p.withoutMemory(w.x, w.cf)
		an, err := p.analyzeAt(w.cf, w.ws, w.thr)
		if err == nil && an.OutputAmount > h.Amount {
			h.Limit = LimitMemory
			return
		}
		h.Limit = LimitCPU
	default:
		h.Limit = LimitCPU
	}
}

// admissionLimit names what bound the first host's amount and its first
// refused replica.
func (p *Processor) admissionLimit(o *Observation, w *decideWork, h *HostDecision) {
	fw := &w.fw
	admitted := make(map[int]bool, h.Amount)
	refused := -1
	an := &w.ws.an
	for _, i := range an.ActivatedInputs {
		admitted[i] = true
	}
	// The countable inputs are the CPU slots; find the lowest slot that
	// holds a replica and was not admitted.
	for _, i := range p.countableIn {
		k := p.features.slot[i]
		if p.features.feature[i] != slotCPUSource || k < 0 || k >= fw.slotsFilled || admitted[i] {
			continue
		}
		if refused < 0 || k < p.features.slot[refused] {
			refused = i
		}
	}
	if refused < 0 {
		h.Limit = LimitDemand
		if fw.slotsFilled >= len(p.countableIn) {
			h.Limit = LimitSlots
		}
		return
	}
	k := p.features.slot[refused]
	roomCPU, roomMem := o.room()
	// The figures are the replica's own, not the shares the processor
	// reads (capped at MaxShare of a room that may be next to none).
	r := &RefusedSlot{Slot: k, Name: p.model.Inputs[refused].Name, Running: fw.slotRun[k] == 1 && k < o.RunningReplicas,
		CPUMHz: fw.slotCPUMHz[k]}
	if o.MemoryCapacityMB > 0 {
		r.MemoryMB = fw.slotMemMB[k]
	}
	r.Resource = LimitCPU
	if fw.ev.MemoryJudged && p.readsMemory() {
		p.withoutMemory(w.x, w.cf)
		if cf, err := p.analyzeAt(w.cf, w.ws, w.thr); err == nil {
			for _, i := range cf.ActivatedInputs {
				if i == refused {
					r.Resource = LimitMemory
				}
			}
		}
	}
	what := "new replica"
	cpuWhat := fmt.Sprintf("%.0f MHz", r.CPUMHz)
	if r.Running {
		// The figure is its request; what the processor reads is the
		// window's usage per replica, or with none warm the larger of
		// its peak and the request (a 4000 MHz replica refused on a
		// 20000 MHz room read as a contradiction without it).
		what = "running replica"
		cpuWhat = fmt.Sprintf("%.0f MHz requested; read at up to %.0f MHz per replica", r.CPUMHz, fw.lastSum.Max*roomCPU)
	} else if fw.slotRun[k] == 1 {
		// The stopped basis: the figure is its request, its usage the
		// stopped replicas'.
		what = "new replica, counted at what the replicas that stopped used"
		cpuWhat = fmt.Sprintf("%.0f MHz requested; their window reads up to %.0f MHz each", r.CPUMHz, fw.lastSum.Max*roomCPU)
	}
	if r.Resource == LimitMemory {
		var used float64
		for i := 0; i < k; i++ {
			used += fw.slotMemMB[i]
		}
		before := fmt.Sprintf("with the replicas before it (%.0f MB at their peak) it brings", used)
		if k == 0 {
			before = "alone it brings"
		}
		r.Reason = fmt.Sprintf("%s (%s, %.0f MB): memory: %s the memory peak to %.0f MB of the %.0f MB this workload may use, more than the processor admits (the built-in models keep 10%% of it free)",
			r.Name, what, r.MemoryMB, before, used+r.MemoryMB, roomMem)
	} else if k == 0 {
		r.Reason = fmt.Sprintf("%s (%s, %s): cpu: the processor's predicted usage of this replica alone, with the safety allowance it learned, does not fit the %.0f MHz this workload may use",
			r.Name, what, cpuWhat, roomCPU)
	} else {
		r.Reason = fmt.Sprintf("%s (%s, %s): cpu: the processor's predicted usage of the replicas before it, with the safety allowance it learned, leaves less than it needs of the %.0f MHz this workload may use",
			r.Name, what, cpuWhat, roomCPU)
	}
	h.Refused = r
	h.Limit = r.Resource
}

// readsMemory says whether any input of the model is memory.
func (p *Processor) readsMemory() bool {
	for _, src := range p.features.feature {
		switch src {
		case fMemFit, fMemReplicaMax, fMemHostMax, fMemReplicaDemand, slotMemSource:
			return true
		}
	}
	return false
}
