package provider

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// This file reads and writes the container counts' values directly as
// tftypes values. The framework's reflection (Config.Get, State.Set) costs
// milliseconds on an observation of a few dozen samples, most of the plan
// time of a data source that is otherwise a microseconds-long engine call.

// valueError is a value that does not decode, at path.
type valueError struct {
	path path.Path
	msg  string
}

func (e *valueError) Error() string { return fmt.Sprintf("%s: %s", e.path, e.msg) }

// errUnknown: a value is not known yet (computed during apply).
var errUnknown = errors.New("value not known until apply")

func badValue(p path.Path, format string, args ...any) error {
	return &valueError{path: p, msg: fmt.Sprintf(format, args...)}
}

// objectAttrs returns an object's attributes; nil for a null object.
func objectAttrs(v tftypes.Value, p path.Path) (map[string]tftypes.Value, error) {
	if !v.IsKnown() {
		return nil, errUnknown
	}
	if v.IsNull() {
		return nil, nil
	}
	var m map[string]tftypes.Value
	if err := v.As(&m); err != nil {
		return nil, badValue(p, "not an object: %v", err)
	}
	return m, nil
}

// decoder reads numbers through one scratch big.Float, so reading a long
// usage window does not allocate per number.
type decoder struct{ bf big.Float }

// float reads attribute name of m as a float64; a null or absent one is 0.
// p is the path of m, used only in errors.
func (d *decoder) float(m map[string]tftypes.Value, name string, p path.Path) (float64, error) {
	v, ok := m[name]
	if !ok || v.IsNull() {
		return 0, nil
	}
	if !v.IsKnown() {
		return 0, errUnknown
	}
	if err := v.As(&d.bf); err != nil {
		return 0, badValue(p.AtName(name), "not a number: %v", err)
	}
	f, acc := d.bf.Float64()
	if math.IsInf(f, 0) || (f == 0 && acc != big.Exact) {
		return 0, badValue(p.AtName(name), "%s cannot be represented as a 64-bit floating point number", d.bf.String())
	}
	return f, nil
}

// integer reads attribute name of m as a whole number that fits an int32;
// null or absent is 0.
func (d *decoder) integer(m map[string]tftypes.Value, name string, p path.Path) (int64, error) {
	v, ok := m[name]
	if !ok || v.IsNull() {
		return 0, nil
	}
	if !v.IsKnown() {
		return 0, errUnknown
	}
	if err := v.As(&d.bf); err != nil {
		return 0, badValue(p.AtName(name), "not a number: %v", err)
	}
	if !d.bf.IsInt() {
		return 0, badValue(p.AtName(name), "%s is not a whole number", d.bf.String())
	}
	i, acc := d.bf.Int64()
	if acc != big.Exact {
		return 0, badValue(p.AtName(name), "%s does not fit in 64 bits", d.bf.String())
	}
	return i, nil
}

// str reads attribute name of m; null or absent is "".
func str(m map[string]tftypes.Value, name string, p path.Path) (string, error) {
	v, ok := m[name]
	if !ok || v.IsNull() {
		return "", nil
	}
	if !v.IsKnown() {
		return "", errUnknown
	}
	var s string
	if err := v.As(&s); err != nil {
		return "", badValue(p.AtName(name), "not a string: %v", err)
	}
	return s, nil
}

// isNull says whether attribute name of m is null or absent (an unknown
// value is neither).
func isNull(m map[string]tftypes.Value, name string) bool {
	v, ok := m[name]
	return !ok || v.IsNull()
}

// decodeObservation reads an observation object (fully known).
func (d *decoder) decodeObservation(v tftypes.Value, p path.Path) (engine.Observation, error) {
	var o engine.Observation
	m, err := objectAttrs(v, p)
	if err != nil {
		return o, err
	}
	if m == nil {
		return o, badValue(p, "the observation is required")
	}
	for _, f := range [...]struct {
		name string
		dst  *float64
	}{
		{obsCPUCapacityMHz, &o.CPUCapacityMHz}, {obsMemoryCapacityMB, &o.MemoryCapacityMB},
		{obsRequestedCPUMHz, &o.RequestedCPUMHz}, {obsRequestedMemoryMB, &o.RequestedMemoryMB},
		{obsReplicaCPUDemandMHz, &o.ReplicaCPUDemandMHz}, {obsReplicaMemoryDemandMB, &o.ReplicaMemoryDemandMB},
	} {
		if *f.dst, err = d.float(m, f.name, p); err != nil {
			return o, err
		}
	}
	for _, f := range [...]struct {
		name string
		dst  *int
	}{{obsRunningReplicas, &o.RunningReplicas}, {obsWantedReplicas, &o.WantedReplicas}} {
		i, err := d.integer(m, f.name, p)
		if err != nil {
			return o, err
		}
		if i < math.MinInt32 || i > math.MaxInt32 {
			return o, badValue(p.AtName(f.name), "%d is out of range", i)
		}
		*f.dst = int(i)
	}
	if o.Host, err = str(m, obsHost, p); err != nil {
		return o, err
	}
	var list []tftypes.Value
	if sv, ok := m[obsUsageSamples]; ok && !sv.IsNull() {
		if !sv.IsKnown() {
			return o, errUnknown
		}
		if err := sv.As(&list); err != nil {
			return o, badValue(p.AtName(obsUsageSamples), "not a list: %v", err)
		}
	}
	o.Samples = make([]engine.Sample, len(list))
	// sm is pointed at each sample's own attribute map by As (no copy): it
	// is only read, never written.
	var sm map[string]tftypes.Value
	for i, el := range list {
		if !el.IsKnown() {
			return o, errUnknown
		}
		if el.IsNull() {
			return o, badValue(p.AtName(obsUsageSamples).AtListIndex(i), "a usage sample must not be null")
		}
		if err := el.As(&sm); err != nil {
			return o, badValue(p.AtName(obsUsageSamples).AtListIndex(i), "not an object: %v", err)
		}
		s := &o.Samples[i]
		var errs [3]error
		s.Time, errs[0] = d.integer(sm, sampleTime, path.Empty())
		s.CPUMHz, errs[1] = d.float(sm, sampleCPUMHz, path.Empty())
		s.MemoryMB, errs[2] = d.float(sm, sampleMemoryMB, path.Empty())
		for _, e := range errs {
			if e != nil {
				return o, rerootSample(e, p, i)
			}
		}
	}
	return o, nil
}

// rerootSample puts a sample field's error under the sample's path (built
// only on failure, as paths allocate).
func rerootSample(err error, p path.Path, i int) error {
	var ve *valueError
	if errors.As(err, &ve) {
		ve.path = p.AtName(obsUsageSamples).AtListIndex(i).AtName(ve.path.String())
	}
	return err
}

// decodeQuota reads a quota object and fills its defaults; null is nil
// (the engine's default quota).
func (d *decoder) decodeQuota(v tftypes.Value, p path.Path) (*engine.Quota, error) {
	m, err := objectAttrs(v, p)
	if err != nil || m == nil {
		return nil, err
	}
	q := &engine.Quota{PerBranch: 1, Rounding: engine.RoundNearest}
	lo, err := d.integer(m, quotaMin, p)
	if err != nil {
		return nil, err
	}
	hi, err := d.integer(m, quotaMax, p)
	if err != nil {
		return nil, err
	}
	for name, x := range map[string]int64{quotaMin: lo, quotaMax: hi} {
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, badValue(p.AtName(name), "%d is out of range", x)
		}
	}
	q.Min, q.Max = int(lo), int(hi)
	if !isNull(m, quotaPerBranch) {
		if q.PerBranch, err = d.float(m, quotaPerBranch, p); err != nil {
			return nil, err
		}
	}
	if !isNull(m, quotaRounding) {
		if q.Rounding, err = str(m, quotaRounding, p); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// countsRequest builds the engine request from a fully known configuration
// of activation_container_counts; the provider's default models fill in
// models the configuration does not name.
func countsRequest(top map[string]tftypes.Value, defaults *providerData) (*engine.Request, error) {
	r := &engine.Request{}
	var d decoder
	var err error
	if r.First, err = d.decodeObservation(top[attrFirst], path.Root(attrFirst)); err != nil {
		return nil, err
	}
	if r.Second, err = d.decodeObservation(top[attrSecond], path.Root(attrSecond)); err != nil {
		return nil, err
	}
	if r.FirstModel, err = str(top, attrFirstModel, path.Empty()); err != nil {
		return nil, err
	}
	if r.SecondModel, err = str(top, attrSecondModel, path.Empty()); err != nil {
		return nil, err
	}
	if r.FirstQuota, err = d.decodeQuota(top[attrFirstQuota], path.Root(attrFirstQuota)); err != nil {
		return nil, err
	}
	if r.SecondQuota, err = d.decodeQuota(top[attrSecondQuota], path.Root(attrSecondQuota)); err != nil {
		return nil, err
	}
	if defaults != nil {
		if r.FirstModel == "" {
			r.FirstModel = defaults.DefaultFirstModel
		}
		if r.SecondModel == "" {
			r.SecondModel = defaults.DefaultSecondModel
		}
	}
	return r, nil
}

// Terraform types of the computed values.
var (
	tfQuotaType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		quotaMin: tftypes.Number, quotaMax: tftypes.Number, quotaPerBranch: tftypes.Number, quotaRounding: tftypes.String,
	}}
	tfStringList = tftypes.List{ElementType: tftypes.String}
	tfDecision   = tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		decRole: tftypes.String, decHost: tftypes.String, decLayer: tftypes.String,
		decContainers: tftypes.Number, decAmount: tftypes.Number, decUnclamped: tftypes.Number,
		decClamped: tftypes.Bool, decBranchTotal: tftypes.String, decQuota: tfQuotaType,
		decModelName: tftypes.String, decModelDigest: tftypes.String,
		decActivated: tfStringList, decStrongest: tfStringList, decReason: tftypes.String,
	}}
)

func tfInt(i int) tftypes.Value {
	return tftypes.NewValue(tftypes.Number, new(big.Float).SetInt64(int64(i)))
}

func tfStrings(xs []string) tftypes.Value {
	vs := make([]tftypes.Value, len(xs))
	for i, x := range xs {
		vs[i] = nodeNameValue(x)
	}
	return tftypes.NewValue(tfStringList, vs)
}

// nodeNames caches the string values of node names: a decision lists up to
// a model's every countable node, and the same names recur in every read.
// tftypes values are immutable, so sharing them is safe. The cache stops
// growing at maxCachedNames (a model file may name nodes freely).
var nodeNames struct {
	sync.RWMutex
	m map[string]tftypes.Value
}

const maxCachedNames = 1 << 14

func nodeNameValue(s string) tftypes.Value {
	nodeNames.RLock()
	v, ok := nodeNames.m[s]
	nodeNames.RUnlock()
	if ok {
		return v
	}
	v = tftypes.NewValue(tftypes.String, s)
	nodeNames.Lock()
	if nodeNames.m == nil {
		nodeNames.m = make(map[string]tftypes.Value)
	}
	if len(nodeNames.m) < maxCachedNames {
		nodeNames.m[s] = v
	}
	nodeNames.Unlock()
	return v
}

// decisionValue is the state value of a host decision; reason is
// h.Reason(), computed once by the caller.
func decisionValue(h *engine.HostDecision, reason string) tftypes.Value {
	host := tftypes.NewValue(tftypes.String, nil)
	if h.Host != "" {
		host = tftypes.NewValue(tftypes.String, h.Host)
	}
	branches := make([]string, len(h.Strongest))
	for i, b := range h.Strongest {
		branches[i] = joinNodes(b.Nodes)
	}
	return tftypes.NewValue(tfDecision, map[string]tftypes.Value{
		decRole:        tftypes.NewValue(tftypes.String, h.Role),
		decHost:        host,
		decLayer:       tftypes.NewValue(tftypes.String, h.Layer),
		decContainers:  tfInt(h.Containers),
		decAmount:      tfInt(h.Amount),
		decUnclamped:   tfInt(h.Unclamped),
		decClamped:     tftypes.NewValue(tftypes.Bool, h.Clamped),
		decBranchTotal: tftypes.NewValue(tftypes.String, h.BranchTotal),
		decQuota: tftypes.NewValue(tfQuotaType, map[string]tftypes.Value{
			quotaMin:       tfInt(h.Quota.Min),
			quotaMax:       tfInt(h.Quota.Max),
			quotaPerBranch: tftypes.NewValue(tftypes.Number, big.NewFloat(h.Quota.PerBranch)),
			quotaRounding:  tftypes.NewValue(tftypes.String, h.Quota.Rounding),
		}),
		decModelName:   tftypes.NewValue(tftypes.String, h.Model.Name),
		decModelDigest: tftypes.NewValue(tftypes.String, h.Model.Digest),
		decActivated:   tfStrings(h.Activated),
		decStrongest:   tfStrings(branches),
		decReason:      tftypes.NewValue(tftypes.String, reason),
	})
}

// joinNodes writes a branch as node names from input to output.
func joinNodes(nodes []string) string {
	n := 0
	for _, s := range nodes {
		n += len(s) + len(branchArrow)
	}
	b := make([]byte, 0, n)
	for i, s := range nodes {
		if i > 0 {
			b = append(b, branchArrow...)
		}
		b = append(b, s...)
	}
	return string(b)
}

const branchArrow = " -> "
