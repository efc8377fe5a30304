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

// hostRoots are the attributes a host's input lives under; margin is the
// host's own margin (first_margin, second_margin), in place of the shared
// one when given.
type hostRoots struct {
	observation, quota, model, margin path.Path
}

// inputRoots say where each host's input lives, and where the settings
// both hosts share (min_samples, hold_band, margin) live. ownMargin holds
// the hosts whose own margin is given (withOwnMargins): an engine error
// about such a host's margin is on its own attribute, any other host's on
// the shared margin.
type inputRoots struct {
	hosts                        map[string]hostRoots
	minSamples, holdBand, margin path.Path
	ownMargin                    map[string]bool
}

// countsRoots are activation_container_counts' attributes.
var countsRoots = inputRoots{
	hosts: map[string]hostRoots{
		engine.RoleFirst:  {path.Root(attrFirst), path.Root(attrFirstQuota), path.Root(attrFirstModel), path.Root(attrFirstMargin)},
		engine.RoleSecond: {path.Root(attrSecond), path.Root(attrSecondQuota), path.Root(attrSecondModel), path.Root(attrSecondMargin)},
	},
	minSamples: path.Root(attrMinSamples),
	holdBand:   path.Root(attrHoldBand),
	margin:     path.Root(attrMargin),
}

// withOwnMargins are r for inputs in which the first and the second host's
// own margins are given or not (a margin the engine refuses for a host is
// the one the host was decided at: its own when given, else the shared
// one).
func (r inputRoots) withOwnMargins(first, second bool) inputRoots {
	r.ownMargin = map[string]bool{engine.RoleFirst: first, engine.RoleSecond: second}
	return r
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
		switch field {
		case attrMinSamples:
			return r.minSamples, true
		case attrHoldBand:
			return r.holdBand, true
		case attrMargin:
			if r.ownMargin[host] {
				return roots.margin, true
			}
			return r.margin, true
		}
		return fieldPath(roots.observation, observationFields, field), true
	case engine.PartQuota:
		return fieldPath(roots.quota, quotaFields, field), true
	case engine.PartModel:
		return roots.model, true
	}
	return path.Empty(), false
}

// subjectOf is the attribute a diagnostic about p is put on: p itself, or
// the Dynamic attribute p is inside (a quota, an observation). OpenTofu finds no configuration range for a path into a
// Dynamic value's elements and shows the whole block instead; the
// diagnostic's detail still names p in full (attributeDetail).
func (r inputRoots) subjectOf(p path.Path) path.Path {
	steps := p.Steps()
	if len(steps) < 2 {
		return p
	}
	root := path.Root(stepName(steps[0])) // the hosts' roots are top-level attributes
	for _, roots := range r.hosts {
		switch {
		case root.Equal(roots.quota):
			return root
		case root.Equal(roots.observation):
			return root
		}
	}
	return p
}

// stepName is an attribute step's name ("" for other steps).
func stepName(s path.PathStep) string {
	if n, ok := s.(path.PathStepAttributeName); ok {
		return string(n)
	}
	return ""
}

// fieldPath turns an engine field path such as "usage_samples[3].time"
// into an attribute path under root, following fields (the attributes
// under root): each name must be one of them, and an index may follow only
// a list. A part that does not parse or that fields do not have ends the
// path there, so the diagnostic still lands on the nearest attribute the
// schema has.
func fieldPath(root path.Path, fields []field, field string) path.Path {
	p := root
	if field == "" {
		return p
	}
	for _, part := range strings.Split(field, ".") {
		name, rest, indexed := strings.Cut(part, "[")
		f, ok := fieldNamed(fields, name)
		if !ok {
			return p
		}
		p, fields = p.AtName(name), f.nested
		list := f.kind == kindObjects || f.kind == kindWindow
		if !list {
			if indexed {
				return p
			}
			continue
		}
		if !indexed {
			return p // a list's elements have no names
		}
		idx, after, ok := strings.Cut(rest, "]")
		i, err := strconv.Atoi(idx)
		if !ok || err != nil || i < 0 {
			return p
		}
		p = p.AtListIndex(i)
		if after != "" {
			return p // the schema has no list of lists
		}
	}
	return p
}

// noPath reports whether p names no attribute (path.Path{} or
// path.Empty(), which Path.Equal tells apart).
func noPath(p path.Path) bool { return len(p.Steps()) == 0 }

// attributeDetail is the text of a diagnostic about the attribute at p.
func attributeDetail(p path.Path, reason string) string {
	return "Attribute " + p.String() + ": " + strings.TrimSuffix(reason, ".") + "."
}
