package provider

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/activation-scheduler/terraform-provider-activation/internal/editdist"
)

// This file is the one checker of values whose type the schema does not
// fix: the usage window (a dynamic attribute of both observations) and the
// container_counts function's arguments (dynamic parameters). It checks a
// value against a field table (observation.go) the way Terraform checks a
// typed attribute: an object (or map) with the table's attributes, none
// other, every required one set, numbers where the table says a number and
// strings where it says a string, with Terraform's conversions (a numeric
// string is a number; a number or a bool is a string). A list may be a list
// or a tuple, never a set: the elements' order (time order, queue order)
// is part of the value, and a set has none. Every refusal is a *valueError
// at the path of the value at fault; the data source reports it on that
// attribute, the function on that argument.

// valueError is a configured value that does not fit the engine's type, or
// a model source that does not load, at path: reported by the provider
// (range errors are the engine's).
type valueError struct {
	path path.Path
	// summary is the diagnostic's summary; empty is "Invalid value".
	summary string
	reason  string
}

func (e *valueError) Error() string {
	if noPath(e.path) {
		return strings.TrimSuffix(e.reason, ".") + "."
	}
	return attributeDetail(e.path, e.reason)
}

// valueErrors is every attribute at fault in one value (conformAttributes):
// a user fixes them in one go, not one per plan.
type valueErrors []*valueError

func (e valueErrors) Error() string {
	texts := make([]string, len(e))
	for i, ve := range e {
		texts[i] = ve.Error()
	}
	return strings.Join(texts, "\n")
}

// valueErrorsOf is err's *valueError, or each of its valueErrors, or err
// at p when it is neither.
func valueErrorsOf(err error, p path.Path) []*valueError {
	var ves valueErrors
	if errors.As(err, &ves) {
		return ves
	}
	var ve *valueError
	if errors.As(err, &ve) {
		return []*valueError{ve}
	}
	return []*valueError{{path: p, reason: err.Error()}}
}

func (e *valueError) diagSummary() string {
	if e.summary == "" {
		return "Invalid value"
	}
	return e.summary
}

// conformObject checks v (an object or a map) against fields and returns
// it as an object of fields' type (fieldTypes), absent optional attributes
// null. Nested objects and lists of objects are conformed too; a usage
// window (kindWindow) is checked to be a list and kept as it is: its
// samples are checked as they are read (windowOf).
func conformObject(v attr.Value, fields []field, p path.Path) (types.Object, error) {
	a, why := attributesOf(v)
	if why != "" {
		return types.Object{}, &valueError{path: p, reason: why}
	}
	a, err := conformAttributes(a, fields, p)
	if err != nil {
		return types.Object{}, err
	}
	return typedObject(a, fields, p)
}

// objectsOf checks v, a list or tuple of objects, against fields and
// returns each element's attributes with conformAttributes' conversions
// (nil for an element not known yet, during validation).
func objectsOf(v attr.Value, fields []field, p path.Path) ([]map[string]attr.Value, error) {
	elems, why := elementsOf(v)
	if why != "" {
		return nil, &valueError{path: p, reason: why}
	}
	out := make([]map[string]attr.Value, len(elems))
	for i, e := range elems {
		if underlying(e).IsUnknown() {
			continue // during validation: checked once known
		}
		a, why := attributesOf(e)
		if why != "" {
			return nil, &valueError{path: p.AtListIndex(i), reason: why}
		}
		var err error
		if out[i], err = conformAttributes(a, fields, p.AtListIndex(i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// windowOf checks a usage window (a dynamic value) and returns its samples'
// attributes.
func windowOf(w types.Dynamic, p path.Path) ([]map[string]attr.Value, error) {
	if w.IsNull() || w.IsUnderlyingValueNull() {
		return nil, &valueError{path: p, reason: "is required"}
	}
	return objectsOf(w.UnderlyingValue(), sampleFields, p)
}

// conformAttributes checks an object's attributes against fields: none
// that fields do not have, every required one set (not null), scalars of
// the field's kind after Terraform's conversions, nested objects and lists
// conformed. It returns the attributes with conversions applied (the map
// itself when there were none); absent attributes stay absent. Unknown
// values (during validation) are kept as they are.
func conformAttributes(a map[string]attr.Value, fields []field, p path.Path) (map[string]attr.Value, error) {
	if len(a) > len(fields) || !namesKnown(a, fields) {
		var extra []string
		for name := range a {
			if _, ok := fieldNamed(fields, name); !ok {
				extra = append(extra, name)
			}
		}
		sort.Strings(extra)
		var b strings.Builder
		for i, name := range extra {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", name)
			if near := nearestField(name, fields); near != "" {
				fmt.Fprintf(&b, " (did you mean %q?)", near)
			}
		}
		what := "an attribute " + b.String() + ", which is not one of"
		if len(extra) > 1 {
			what = "attributes " + b.String() + ", which are not among"
		}
		return nil, &valueError{path: p, reason: fmt.Sprintf("has %s: %s", what, fieldNames(fields))}
	}
	var missing []string
	for _, f := range fields {
		if v := underlying(a[f.name]); f.required && (v == nil || v.IsNull()) {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 1 {
		return nil, &valueError{path: p, reason: "is missing the required attributes " + strings.Join(missing, ", ")}
	}
	out, copied := a, false
	set := func(name string, v attr.Value) {
		if !copied {
			out, copied = make(map[string]attr.Value, len(a)), true
			for k, x := range a {
				out[k] = x
			}
		}
		out[name] = v
	}
	var errs []*valueError // every attribute at fault
	for _, f := range fields {
		v := underlying(a[f.name])
		if v == nil || v.IsNull() {
			if f.required {
				errs = append(errs, &valueError{path: p.AtName(f.name), reason: "is required"})
			}
			continue
		}
		if v.IsUnknown() {
			continue
		}
		at := p.AtName(f.name)
		switch f.kind {
		case kindFigure, kindWhole, kindString:
			x, why := scalarOf(v, f.kind)
			if why != "" {
				errs = append(errs, &valueError{path: at, reason: why})
				continue
			}
			if x != a[f.name] {
				set(f.name, x)
			}
		case kindObject:
			o, err := conformObject(v, f.nested, at)
			if err != nil {
				errs = append(errs, valueErrorsOf(err, at)...)
				continue
			}
			set(f.name, o)
		case kindObjects:
			elems, err := objectsOf(v, f.nested, at)
			if err != nil {
				errs = append(errs, valueErrorsOf(err, at)...)
				continue
			}
			et := types.ObjectType{AttrTypes: fieldTypes(f.nested)}
			list := make([]attr.Value, len(elems))
			for i, e := range elems {
				if e == nil {
					list[i] = types.ObjectUnknown(et.AttrTypes)
				} else if list[i], err = typedObject(e, f.nested, at.AtListIndex(i)); err != nil {
					return nil, err // (a bug: conformed attributes that do not type)
				}
			}
			l, diags := types.ListValue(et, list)
			if diags.HasError() {
				return nil, &valueError{path: at, reason: diags.Errors()[0].Detail()}
			}
			set(f.name, l)
		case kindWindow:
			if _, why := elementsOf(v); why != "" {
				errs = append(errs, &valueError{path: at, reason: why})
				continue
			}
			if _, ok := a[f.name].(basetypes.DynamicValue); !ok {
				set(f.name, types.DynamicValue(v))
			}
		}
	}
	switch len(errs) {
	case 0:
	case 1:
		return nil, errs[0]
	default:
		return nil, valueErrors(errs)
	}
	return out, nil
}

// typedObject is an object of fields' type from conformed attributes.
func typedObject(a map[string]attr.Value, fields []field, p path.Path) (types.Object, error) {
	ts := fieldTypes(fields)
	full := make(map[string]attr.Value, len(fields))
	for _, f := range fields {
		v, ok := a[f.name]
		switch {
		case ok && f.kind == kindWindow:
			if _, dyn := v.(basetypes.DynamicValue); !dyn {
				v = types.DynamicValue(v)
			}
		case !ok || v.IsNull():
			v = nullOf(ts[f.name])
		case v.IsUnknown():
			// During validation a value not known yet may come untyped (a
			// variable without a type, each.value, a module output) or of
			// another type than the field's: it waits, typed as the field.
			v = unknownOf(ts[f.name])
		}
		full[f.name] = v
	}
	o, diags := types.ObjectValue(ts, full)
	if diags.HasError() {
		return types.Object{}, &valueError{path: p, reason: diags.Errors()[0].Detail()}
	}
	return o, nil
}

// nullOf is the null value of t.
func nullOf(t attr.Type) attr.Value { return placeholderOf(t, false) }

// unknownOf is the unknown value of t.
func unknownOf(t attr.Type) attr.Value { return placeholderOf(t, true) }

// placeholderOf is t's unknown value, or its null value.
func placeholderOf(t attr.Type, unknown bool) attr.Value {
	switch t := t.(type) {
	case types.ObjectType:
		if unknown {
			return types.ObjectUnknown(t.AttrTypes)
		}
		return types.ObjectNull(t.AttrTypes)
	case types.ListType:
		if unknown {
			return types.ListUnknown(t.ElemType)
		}
		return types.ListNull(t.ElemType)
	case basetypes.DynamicType:
		if unknown {
			return types.DynamicUnknown()
		}
		return types.DynamicNull()
	case basetypes.StringType:
		if unknown {
			return types.StringUnknown()
		}
		return types.StringNull()
	}
	if unknown {
		return types.NumberUnknown()
	}
	return types.NumberNull()
}

// underlying is v without a dynamic wrapper (nil stays nil).
func underlying(v attr.Value) attr.Value {
	if d, ok := v.(basetypes.DynamicValue); ok {
		if d.IsNull() {
			return types.DynamicNull()
		}
		if d.IsUnknown() {
			return d
		}
		return d.UnderlyingValue()
	}
	return v
}

// attributesOf is the attributes of an object or a map, or why v is not
// one.
func attributesOf(v attr.Value) (map[string]attr.Value, string) {
	v = underlying(v)
	if v == nil || v.IsNull() {
		return nil, "must be an object, not null"
	}
	switch o := v.(type) {
	case basetypes.ObjectValue:
		return o.Attributes(), ""
	case basetypes.MapValue:
		return o.Elements(), ""
	}
	return nil, "must be an object, not " + kindName(v)
}

// elementsOf is the elements of a list or a tuple, or why v is not one;
// an unknown list has none yet.
func elementsOf(v attr.Value) ([]attr.Value, string) {
	v = underlying(v)
	switch {
	case v == nil || v.IsNull():
		return nil, "must be a list of objects, not null"
	case v.IsUnknown():
		return nil, ""
	}
	switch l := v.(type) {
	case basetypes.ListValue:
		return l.Elements(), ""
	case basetypes.TupleValue:
		return l.Elements(), ""
	case basetypes.SetValue:
		return nil, "must be a list, not a set: a set has no order, and the elements' order is part of the value " +
			"(time order, queue order); write a list ([...]), not toset()"
	}
	return nil, "must be a list of objects, not " + kindName(v)
}

// scalarOf is v as a value of kind k, with Terraform's conversions: a
// number from a number or a numeric string, a string from a string, a
// number or a bool.
func scalarOf(v attr.Value, k fieldKind) (attr.Value, string) {
	switch x := v.(type) {
	case basetypes.NumberValue:
		if k == kindString {
			return types.StringValue(x.ValueBigFloat().Text('f', -1)), ""
		}
		return x, ""
	case basetypes.StringValue:
		if k == kindString {
			return x, ""
		}
		f, _, err := big.ParseFloat(x.ValueString(), 10, 512, big.ToNearestEven)
		if err != nil {
			return nil, fmt.Sprintf("must be a number, not the string %q", x.ValueString())
		}
		return types.NumberValue(f), ""
	case basetypes.BoolValue:
		if k == kindString {
			return types.StringValue(fmt.Sprint(x.ValueBool())), ""
		}
	}
	want := "a number"
	if k == kindString {
		want = "a string"
	}
	return nil, "must be " + want + ", not " + kindName(v)
}

// kindName names a value's type as HCL users know it, with its article.
func kindName(v attr.Value) string {
	switch underlying(v).(type) {
	case basetypes.StringValue:
		return "a string"
	case basetypes.NumberValue:
		return "a number"
	case basetypes.BoolValue:
		return "a bool"
	case basetypes.ListValue:
		return "a list"
	case basetypes.TupleValue:
		return "a tuple"
	case basetypes.SetValue:
		return "a set"
	case basetypes.ObjectValue:
		return "an object"
	case basetypes.MapValue:
		return "a map"
	}
	return "a " + v.Type(context.Background()).String()
}

// fieldNamed is the field of fields called name.
func fieldNamed(fields []field, name string) (field, bool) {
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

// namesKnown reports whether every attribute of a is one of fields.
func namesKnown(a map[string]attr.Value, fields []field) bool {
	for name := range a {
		if _, ok := fieldNamed(fields, name); !ok {
			return false
		}
	}
	return true
}

func fieldNames(fields []field) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// nearestField is the field name closest to name, when one is close enough
// to be a misspelling of it (an edit or two away, or one a prefix of the
// other); "" otherwise.
func nearestField(name string, fields []field) string {
	best, bestD := "", 3
	lower := strings.ToLower(name)
	for _, f := range fields {
		d := editdist.Levenshtein(lower, f.name)
		if len(lower) >= 3 && (strings.HasPrefix(f.name, lower) || strings.HasPrefix(lower, f.name)) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.name, d
		}
	}
	return best
}
