package provider

import (
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// The engine names what an invalid input is about with typed errors:
// engine.FieldOf gives the host (first, second), the part of the host's
// input (observation, quota, model) and the field path in the engine's JSON
// names, which are the attribute names. This file turns that into an
// attribute path; nothing here reads an error's text.

// hostRoots are the attributes a host's input lives under.
type hostRoots struct {
	observation, quota, model path.Path
}

// inputRoots say where each host's input lives, and where the settings
// both hosts share (min_samples) live.
type inputRoots struct {
	hosts      map[string]hostRoots
	minSamples path.Path
}

// countsRoots are activation_container_counts' attributes.
var countsRoots = inputRoots{
	hosts: map[string]hostRoots{
		engine.RoleFirst:  {path.Root(attrFirst), path.Root(attrFirstQuota), path.Root(attrFirstModel)},
		engine.RoleSecond: {path.Root(attrSecond), path.Root(attrSecondQuota), path.Root(attrSecondModel)},
	},
	minSamples: path.Root(attrMinSamples),
}

// pathOf returns the attribute an engine error is about; ok is false when
// the error names no input of these roots.
func (r inputRoots) pathOf(err error) (p path.Path, ok bool) {
	host, part, field, ok := engine.FieldOf(err)
	if !ok {
		return path.Empty(), false
	}
	roots, ok := r.hosts[host]
	if !ok {
		return path.Empty(), false
	}
	switch part {
	case engine.PartObservation:
		if field == attrMinSamples {
			return r.minSamples, true
		}
		return fieldPath(roots.observation, field), true
	case engine.PartQuota:
		return fieldPath(roots.quota, field), true
	case engine.PartModel:
		return roots.model, true
	}
	return path.Empty(), false
}

// fieldPath turns an engine field path such as "usage_samples[3].time"
// into an attribute path under root. A part that does not parse ends the
// path there, so the diagnostic still lands on the nearest attribute.
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
			if after == "" {
				break
			}
			if !strings.HasPrefix(after, "[") {
				return p
			}
			rest = after[1:]
		}
	}
	return p
}

// attributeDetail is the text of a diagnostic about the attribute at p.
func attributeDetail(p path.Path, reason string) string {
	return "Attribute " + p.String() + ": " + strings.TrimSuffix(reason, ".") + "."
}
