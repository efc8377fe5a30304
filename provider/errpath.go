package provider

import (
	"errors"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// fieldPath turns an engine field name such as "usage_samples[3].time" into
// an attribute path under root. The engine names observation and quota
// fields exactly as the schema does, so the mapping is mechanical. A part
// that does not parse ends the path there (the diagnostic still lands on
// the nearest attribute).
func fieldPath(root path.Path, field string) path.Path {
	p := root
	if field == "" {
		return p
	}
	for _, part := range strings.Split(field, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name == "" {
			return p
		}
		p = p.AtName(name)
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			if !ok {
				return p
			}
			i, err := strconv.Atoi(idx)
			if err != nil || i < 0 {
				return p
			}
			p = p.AtListIndex(i)
			rest = strings.TrimPrefix(after, "[")
			if after != "" && !strings.HasPrefix(after, "[") {
				return p
			}
		}
	}
	return p
}

// Roots of the two hosts' inputs.
type hostRoots struct {
	observation, model, quota path.Path
}

var rootsByRole = map[string]hostRoots{
	engine.RoleFirst:  {path.Root(attrFirst), path.Root(attrFirstModel), path.Root(attrFirstQuota)},
	engine.RoleSecond: {path.Root(attrSecond), path.Root(attrSecondModel), path.Root(attrSecondQuota)},
}

// errorPath says which attribute an engine error is about, and the reason
// to show. ok is false when the error names no attribute.
func errorPath(err error) (p path.Path, reason string, ok bool) {
	var oe *engine.ObservationError
	if errors.As(err, &oe) {
		if r, found := rootsByRole[oe.Host]; found {
			return fieldPath(r.observation, oe.Field), oe.Reason, true
		}
	}
	var qe *engine.QuotaError
	if errors.As(err, &qe) {
		if r, found := rootsByRole[qe.Host]; found {
			return fieldPath(r.quota, qe.Field), qe.Reason, true
		}
	}
	msg := err.Error()
	// DecideRequest prefixes model loading errors with the request field;
	// Decide prefixes a model that cannot serve a role with the role.
	for prefix, role := range map[string]string{
		"first_model: ": engine.RoleFirst, "second_model: ": engine.RoleSecond,
		"first host: ": engine.RoleFirst, "second host: ": engine.RoleSecond,
	} {
		if rest, found := strings.CutPrefix(msg, prefix); found {
			return rootsByRole[role].model, rest, true
		}
	}
	return path.Empty(), msg, false
}
