package provider

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// This file is the one description of a host decision in Terraform: the
// computed attributes activation_container_counts returns per host (and the
// container_counts function returns), the typed model and the conversion
// from engine.HostDecision.

// Attribute names of a host decision.
const (
	decRole        = "role"
	decHost        = "host"
	decLayer       = "layer"
	decContainers  = "containers"
	decAmount      = "amount"
	decUnclamped   = "unclamped"
	decClamped     = "clamped"
	decLimit       = "limit"
	decRefused     = "refused"
	decEvidence    = "evidence"
	decPlacement   = "placement"
	decBranchTotal = "branch_total"
	decQuota       = "quota"
	decModelName   = "model_name"
	decModelDigest = "model_digest"
	decActivated   = "activated"
	decStrongest   = "strongest_branches"
	decReason      = "reason"
	decHold        = "hold"
	decMargin      = "margin"

	refSlot     = "slot"
	refName     = "name"
	refRunning  = "running"
	refCPUMHz   = "cpu_mhz"
	refMemoryMB = "memory_mb"
	refResource = "resource"
	refReason   = "reason"

	evBasis        = "basis"
	evNote         = "note"
	evMemoryJudged = "memory_judged"
	evRunning      = "running"
	evWarming      = "warming"

	plPlaceable       = "placeable"
	plFreeCPUMHz      = "free_cpu_mhz"
	plFreeMemoryMB    = "free_memory_mb"
	plReplicaCPUMHz   = "replica_cpu_mhz"
	plReplicaMemoryMB = "replica_memory_mb"
	plCPUMHz          = "cpu_mhz"
	plMemoryMB        = "memory_mb"
	plMemoryMaxMB     = "memory_max_mb"
	plFits            = "fits"
	plQueued          = "queued"

	holdBand = "band"
	holdLow  = "low"
	holdHigh = "high"

	quotaMin       = "min"
	quotaMax       = "max"
	quotaPerBranch = "per_branch"
	quotaRounding  = "rounding"
)

func computedInt(desc string) schema.Int64Attribute {
	return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
}

func computedFloat(desc string) schema.Float64Attribute {
	return schema.Float64Attribute{Computed: true, MarkdownDescription: desc}
}

func computedString(desc string) schema.StringAttribute {
	return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
}

func computedBool(desc string) schema.BoolAttribute {
	return schema.BoolAttribute{Computed: true, MarkdownDescription: desc}
}

func computedStrings(desc string) schema.ListAttribute {
	return schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: desc}
}

// decisionAttributes are a host decision's attributes. The two hosts'
// decisions have the same type; role and layer only change the words.
func decisionAttributes(role, layer, amountName string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		decRole:       computedString("`" + role + "`."),
		decHost:       computedString("The observation's host label, if any."),
		decLayer:      computedString("Layer the amount is read at: `" + layer + "`."),
		decContainers: computedInt("The container count, within the quota's `[min, max]`."),
		decAmount: computedInt("The activated-branch amount `" + amountName + "`: the number of countable " + layer +
			" nodes on at least one activated branch."),
		decUnclamped: computedInt("`rounding(amount x per_branch)` before the clamp to `[min, max]`."),
		decClamped:   computedBool("Whether the clamp to `[min, max]` changed the count."),
		decLimit: computedString("What bounded the amount: `cpu` (the host's CPU by its predicted usage), `memory` (its memory by the peak), " +
			"`demand` (every replica that wants to run was admitted) or `slots` (every countable slot of the model holds data)."),
		decRefused: schema.SingleNestedAttribute{Computed: true,
			MarkdownDescription: "The first replica the admission processor refused (first host only; null when every replica that wants to run was admitted).",
			Attributes: map[string]schema.Attribute{
				refSlot:     computedInt("Position of the replica in the queue (0 is the first running replica)."),
				refName:     computedString("Name of its demand slot, e.g. `slot_10`."),
				refRunning:  computedBool("Whether it is a running replica (false: a new one)."),
				refCPUMHz:   computedFloat("Its CPU demand, MHz."),
				refMemoryMB: computedFloat("Its memory demand, MB (0 when memory is not judged)."),
				refResource: computedString("`cpu` or `memory`: the resource that refused it."),
				refReason:   computedString("Why, in words."),
			}},
		decEvidence: schema.SingleNestedAttribute{Computed: true, MarkdownDescription: "How the usage window was read.",
			Attributes: map[string]schema.Attribute{
				evBasis: computedString("`observed` (a replica uses what the warm replicas used), `requested` (replicas running but none warm, or no usage " +
					"reported: each counts at the larger of its peak usage and its requested resources) or `demand` (no replica running: a replica counts at its demand)."),
				evNote:         computedString("One line saying the same in words."),
				evMemoryJudged: computedBool("False when the host's memory capacity is unknown, so memory did not bound the count."),
				evRunning:      computedInt("Running replicas in the observation."),
				evWarming:      computedInt("Of which warming up."),
			}},
		decPlacement: schema.SingleNestedAttribute{Computed: true,
			MarkdownDescription: "How the count meets Nomad's placement, which admits a replica only while the reservations (requested resources) of " +
				"everything on the host fit its allocatable resources. Render `cpu_mhz`, `memory_mb` and `memory_max_mb` as the task's " +
				"`resources` of the count's replicas other than the `queued` ones (all of them without `queued_replicas`; queue entries keep " +
				"their own demands) and Nomad can place every replica when `fits` is true (see the provider's documentation).",
			Attributes: map[string]schema.Attribute{
				plPlaceable: computedInt("How many replicas Nomad can place at today's reservations (`replica_cpu_mhz`, `replica_memory_mb`), in queue order: " +
					"with `queued_replicas`, the running replicas and then the queue's entries at their own demand, so at most the running ones plus the queue; " +
					"otherwise as many replicas of the workload's size as fit, whatever `wanted_replicas` says."),
				plFreeCPUMHz:   computedFloat("The host's CPU capacity less what other workloads reserve, MHz."),
				plFreeMemoryMB: computedFloat("Its memory capacity less what other workloads reserve, MB (0 when the capacity is unknown)."),
				plReplicaCPUMHz: computedFloat(fmt.Sprintf("What one replica reserves today: the running replicas' CPU request each, else the demand, "+
					"never below Nomad's smallest, %d MHz.", engine.MinReservationCPUMHz)),
				plReplicaMemoryMB: computedFloat(fmt.Sprintf("Likewise for memory, MB: never below Nomad's smallest, %d MB, where memory is judged "+
					"(`memory_capacity_mb` set); else the request or demand as given (0 when none).", engine.MinReservationMemoryMB)),
				plCPUMHz: computedInt(fmt.Sprintf("Per-replica CPU reservation (Nomad's `cpu`, MHz) with which the decided count fits (see `fits`): "+
					"never below Nomad's smallest, %d MHz, and otherwise never above today's.", engine.MinReservationCPUMHz)),
				plMemoryMB: computedInt(fmt.Sprintf("Per-replica memory reservation (Nomad's `memory`, MB) with which the decided count fits (see `fits`): "+
					"never below Nomad's smallest, %d MB, and otherwise never above today's.", engine.MinReservationMemoryMB)),
				plMemoryMaxMB: computedInt("Per-replica hard memory limit (Nomad's `memory_max`, MB): at least the replica's observed memory peak, " +
					"so a smaller reservation never caps real use. Needs Nomad's memory oversubscription."),
				plFits: computedBool(fmt.Sprintf("Whether the decided count fits what the host has left (`free_cpu_mhz`, `free_memory_mb`), "+
					"the workload's replicas at `cpu_mhz` and `memory_mb` each and the `queued` ones at their own demand, so that Nomad places "+
					"every replica. False only when even Nomad's smallest reservation (%d MHz, %d MB per replica) does not fit: Nomad then "+
					"leaves replicas queued whatever the reservation, and a lower `max` in the quota (or more room on the host) is the remedy.",
					engine.MinReservationCPUMHz, engine.MinReservationMemoryMB)),
				plQueued: computedInt("How many of the decided count are `queued_replicas` entries (the first ones): each keeps its own demand " +
					"as its reservation, and `cpu_mhz`, `memory_mb` and `memory_max_mb` are for the others, the observed workload's replicas. " +
					"0 without `queued_replicas`."),
			}},
		decHold: schema.SingleNestedAttribute{Computed: true,
			MarkdownDescription: "With `hold_band`: the range of counts about as safe as `containers`, null without. A controller " +
				"already at a count from `low` to `high` may keep it instead of following every small move; a count outside the range moves to " +
				"`containers` (`current >= low && current <= high ? current : containers`).",
			Attributes: map[string]schema.Attribute{
				holdBand: computedFloat("The band, logits."),
				holdLow:  computedInt("The count at the output threshold `band` logits stricter than the model's, through the same quota; at most `containers`."),
				holdHigh: computedInt("The count at the output threshold `band` logits looser than the model's, through the same quota; at least `containers`."),
			}},
		decMargin:      computedFloat("The margin the count was decided at, logits over the model's output threshold (the host's own `first_margin` or `second_margin` when set, else `margin`; 0: the model's own threshold)."),
		decBranchTotal: computedString("Exact number of activated branches (input-to-output paths), in decimal: it may exceed 64 bits."),
		decQuota: schema.SingleNestedAttribute{Computed: true, MarkdownDescription: "The quota applied, defaults filled in by the engine.",
			Attributes: map[string]schema.Attribute{
				quotaMin:       computedInt("Fewest containers."),
				quotaMax:       computedInt("Most containers."),
				quotaPerBranch: computedFloat("Containers per activated branch."),
				quotaRounding:  computedString("Rounding rule."),
			}},
		decModelName:   computedString("Name of the model that decided."),
		decModelDigest: computedString("`sha256:` digest of the model's canonical form; pin it to notice a model change."),
		decActivated:   computedStrings("Names of the countable nodes counted in `amount`."),
		decStrongest:   computedStrings("The strongest activated branches, each as node names from input to output joined by ` -> `."),
		decReason:      computedString("One-line account of the count."),
	}
}

func decisionOutputAttribute(role, layer, amountName string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Computed: true, MarkdownDescription: "How the " + role + " host's count came about.",
		Attributes: decisionAttributes(role, layer, amountName)}
}

// decisionAttrTypes is the object type of a host decision.
var decisionAttrTypes = func() map[string]attr.Type {
	ot, ok := decisionOutputAttribute(engine.RoleFirst, engine.LayerInput, "A_in").GetType().(types.ObjectType)
	if !ok {
		panic("a decision's type is not an object type")
	}
	return ot.AttrTypes
}()

type refusedModel struct {
	Slot     int64   `tfsdk:"slot"`
	Name     string  `tfsdk:"name"`
	Running  bool    `tfsdk:"running"`
	CPUMHz   float64 `tfsdk:"cpu_mhz"`
	MemoryMB float64 `tfsdk:"memory_mb"`
	Resource string  `tfsdk:"resource"`
	Reason   string  `tfsdk:"reason"`
}

type evidenceModel struct {
	Basis        string `tfsdk:"basis"`
	Note         string `tfsdk:"note"`
	MemoryJudged bool   `tfsdk:"memory_judged"`
	Running      int64  `tfsdk:"running"`
	Warming      int64  `tfsdk:"warming"`
}

type placementModel struct {
	Placeable       int64   `tfsdk:"placeable"`
	FreeCPUMHz      float64 `tfsdk:"free_cpu_mhz"`
	FreeMemoryMB    float64 `tfsdk:"free_memory_mb"`
	ReplicaCPUMHz   float64 `tfsdk:"replica_cpu_mhz"`
	ReplicaMemoryMB float64 `tfsdk:"replica_memory_mb"`
	CPUMHz          int64   `tfsdk:"cpu_mhz"`
	MemoryMB        int64   `tfsdk:"memory_mb"`
	MemoryMaxMB     int64   `tfsdk:"memory_max_mb"`
	Fits            bool    `tfsdk:"fits"`
	Queued          int64   `tfsdk:"queued"`
}

type holdModel struct {
	Band float64 `tfsdk:"band"`
	Low  int64   `tfsdk:"low"`
	High int64   `tfsdk:"high"`
}

type quotaOutModel struct {
	Min       int64   `tfsdk:"min"`
	Max       int64   `tfsdk:"max"`
	PerBranch float64 `tfsdk:"per_branch"`
	Rounding  string  `tfsdk:"rounding"`
}

type decisionModel struct {
	Role        string         `tfsdk:"role"`
	Host        types.String   `tfsdk:"host"`
	Layer       string         `tfsdk:"layer"`
	Containers  int64          `tfsdk:"containers"`
	Amount      int64          `tfsdk:"amount"`
	Unclamped   int64          `tfsdk:"unclamped"`
	Clamped     bool           `tfsdk:"clamped"`
	Limit       string         `tfsdk:"limit"`
	Refused     *refusedModel  `tfsdk:"refused"`
	Evidence    evidenceModel  `tfsdk:"evidence"`
	Placement   placementModel `tfsdk:"placement"`
	Hold        *holdModel     `tfsdk:"hold"`
	Margin      float64        `tfsdk:"margin"`
	BranchTotal string         `tfsdk:"branch_total"`
	Quota       quotaOutModel  `tfsdk:"quota"`
	ModelName   string         `tfsdk:"model_name"`
	ModelDigest string         `tfsdk:"model_digest"`
	Activated   []string       `tfsdk:"activated"`
	Strongest   []string       `tfsdk:"strongest_branches"`
	Reason      string         `tfsdk:"reason"`
}

// branchArrow joins a branch's node names.
const branchArrow = " -> "

// decisionFromEngine is the state form of a host decision.
func decisionFromEngine(h *engine.HostDecision) *decisionModel {
	m := &decisionModel{
		Role: h.Role, Host: types.StringValue(h.Host), Layer: h.Layer,
		Containers: int64(h.Containers), Amount: int64(h.Amount), Unclamped: int64(h.Unclamped), Clamped: h.Clamped,
		Limit: h.Limit,
		Evidence: evidenceModel{Basis: h.Evidence.Basis, Note: h.Evidence.Note, MemoryJudged: h.Evidence.MemoryJudged,
			Running: int64(h.Evidence.Running), Warming: int64(h.Evidence.Warming)},
		Placement: placementModel{
			Placeable: int64(h.Placement.Placeable), FreeCPUMHz: h.Placement.FreeCPUMHz, FreeMemoryMB: h.Placement.FreeMemoryMB,
			ReplicaCPUMHz: h.Placement.ReplicaCPUMHz, ReplicaMemoryMB: h.Placement.ReplicaMemoryMB,
			CPUMHz: int64(h.Placement.CPUMHz), MemoryMB: int64(h.Placement.MemoryMB), MemoryMaxMB: int64(h.Placement.MemoryMaxMB),
			Fits: h.Placement.Fits, Queued: int64(h.Placement.Queued),
		},
		BranchTotal: h.BranchTotal, Margin: h.Margin,
		Quota:     quotaOutModel{Min: int64(h.Quota.Min), Max: int64(h.Quota.Max), PerBranch: h.Quota.PerBranch, Rounding: h.Quota.Rounding},
		ModelName: h.Model.Name, ModelDigest: h.Model.Digest,
		Activated: h.Activated,
		Strongest: make([]string, len(h.Strongest)),
		Reason:    h.Reason(),
	}
	if h.Host == "" {
		m.Host = types.StringNull()
	}
	if m.Activated == nil {
		m.Activated = []string{}
	}
	if r := h.Refused; r != nil {
		m.Refused = &refusedModel{Slot: int64(r.Slot), Name: r.Name, Running: r.Running, CPUMHz: r.CPUMHz, MemoryMB: r.MemoryMB,
			Resource: r.Resource, Reason: r.Reason}
	}
	if hr := h.Hold; hr != nil {
		m.Hold = &holdModel{Band: hr.Band, Low: int64(hr.Low), High: int64(hr.High)}
	}
	for i, b := range h.Strongest {
		m.Strongest[i] = strings.Join(b.Nodes, branchArrow)
	}
	return m
}

// countsResultModel is what activation_container_counts computes (and the
// container_counts function returns).
// Its fields are null in a configuration.
type countsResultModel struct {
	FirstContainers  types.Int64    `tfsdk:"first_containers"`
	SecondContainers types.Int64    `tfsdk:"second_containers"`
	FirstDecision    *decisionModel `tfsdk:"first_decision"`
	SecondDecision   *decisionModel `tfsdk:"second_decision"`
	Explanation      types.String   `tfsdk:"explanation"`
}

func countsResult(d *engine.Decision) countsResultModel {
	return countsResultModel{
		FirstContainers:  types.Int64Value(int64(d.First.Containers)),
		SecondContainers: types.Int64Value(int64(d.Second.Containers)),
		FirstDecision:    decisionFromEngine(&d.First),
		SecondDecision:   decisionFromEngine(&d.Second),
		Explanation:      types.StringValue(d.Explain()),
	}
}

// countsResultAttrTypes is the object type of countsResultModel.
var countsResultAttrTypes = map[string]attr.Type{
	attrFirstContainers:  types.Int64Type,
	attrSecondContainers: types.Int64Type,
	attrFirstDecision:    types.ObjectType{AttrTypes: decisionAttrTypes},
	attrSecondDecision:   types.ObjectType{AttrTypes: decisionAttrTypes},
	attrExplanation:      types.StringType,
}
