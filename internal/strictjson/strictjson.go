// Package strictjson checks what encoding/json lets through when it
// decodes into a struct: object keys that match a field only when case is
// ignored ("MAX" for "max"), and keys given twice in one object (the last
// wins). Both silently change what a document says.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Check walks the JSON document data along the type of v (a value or a
// pointer to one, as passed to json.Unmarshal) and returns an error naming
// the first key, by its path ("first_quota.max"), that is given twice in
// its object or that names a struct field other than by its exact JSON
// name (in any case, as Go's decoder folds it: "MAX", "ſhared" for
// "shared"). A struct that decodes itself (json.Unmarshaler) is checked
// against its fields' names too (keys none of them names are its own
// business); other values that decode themselves, and interface values,
// are checked for duplicate keys only. It does not check what
// json.Unmarshal checks (syntax, types, unknown fields).
func Check(data []byte, v any) error {
	return check(data, v, false)
}

// CheckKnown is Check that also refuses, by its path, a key that names no
// field of a struct that does not decode itself: json.Decoder's
// DisallowUnknownFields refuses it too, but names the key alone, not where
// it is.
func CheckKnown(data []byte, v any) error {
	return check(data, v, true)
}

// CheckComplete is CheckKnown that also refuses, by its path
// ("first.usage_samples[3].cpu_mhz"), what Go's decoder would read as a
// zero value without a word: a field of a struct that does not decode
// itself left out although its tag has neither omitempty nor omitzero (a
// required field), null given for any field (an optional one is left
// out: null and "left out" need not mean the same, as an empty list and no
// list do not; a type that decodes itself reads its own null), a value of the wrong JSON type for a number, string,
// boolean, object or array field, and a number its field cannot hold (a
// fraction or 1e20 for an int64, 1e400 for a float64); the decoder's own
// errors for the last two name the field without the index of the array
// element it is in. It is written for plain data types such as the
// engine's: a field with the ",string" tag option, a []byte given as
// base64 text and a type that decodes itself only as text
// (encoding.TextUnmarshaler) are refused as the wrong type.
func CheckComplete(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec, known: true, complete: true}
	return w.walk(reflect.TypeOf(v), "")
}

func check(data []byte, v any, known bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec, known: known}
	return w.walk(reflect.TypeOf(v), "")
}

// walker walks one document; known: unknown keys are refused; complete:
// required fields, nulls and scalar types are checked too.
type walker struct {
	dec      *json.Decoder
	known    bool
	complete bool
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// walk consumes one value from the decoder, checking it against t (nil:
// any).
func (w *walker) walk(t reflect.Type, path string) error {
	dec := w.dec
	declared := t // before the pointers are taken off: a pointer takes null
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t.Kind() != reflect.Struct && (t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler)) {
		t = nil // it decodes itself: keys are its business, duplicates ours
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	// a struct that decodes itself
	self := t != nil && t.Kind() == reflect.Struct && (t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler))
	if w.complete && t != nil && path != "" {
		if err := scalarFits(tok, declared, path); err != nil {
			return err
		}
	}
	switch tok {
	case json.Delim('{'):
		return w.walkObject(t, path, self)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := w.walk(elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ]
		return err
	}
	return nil
}

// walkObject consumes an object's keys and values, its '{' read; self: t
// decodes itself (its keys no field names are its own business).
func (w *walker) walkObject(t reflect.Type, path string, self bool) error {
	dec := w.dec
	var fields map[string]reflect.Type // exact JSON name: type
	var required []string              // in declaration order
	var elem reflect.Type
	switch {
	case t != nil && t.Kind() == reflect.Struct:
		fields = map[string]reflect.Type{}
		collect(t, fields)
		if w.complete && !self {
			required = requiredFields(t)
		}
	case t != nil && t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		at := key
		if path != "" {
			at = path + "." + key
		}
		if seen[key] {
			return fmt.Errorf("field %s: given twice (a JSON object names each field once)", at)
		}
		seen[key] = true
		vt := elem
		if fields != nil {
			ft, ok := fields[key]
			if !ok {
				for name := range fields {
					if strings.EqualFold(name, key) { // Go's decoder's folding
						return fmt.Errorf("field %s: names are case-sensitive: want %q", at, name)
					}
				}
				if w.known && !self {
					return fmt.Errorf("field %s: unknown field", at)
				}
			}
			vt = ft
		}
		if err := w.walk(vt, at); err != nil {
			return err
		}
	}
	_, err := dec.Token() // }
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	if err != nil {
		return err
	}
	// Every required field left out of this object at once: a request
	// that leaves out a host's fields should not be fixed one per run.
	var missing []string
	for _, name := range required {
		if !seen[name] {
			at := name
			if path != "" {
				at = path + "." + name
			}
			missing = append(missing, at)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("field %s: missing (required)", missing[0])
	}
	return fmt.Errorf("fields %s and %s: missing (required)", strings.Join(missing[:len(missing)-1], ", "), missing[len(missing)-1])
}

// scalarFits reports, naming path, a null (Go's decoder leaves the zero
// value, or no value: a nil list, which a field may read otherwise than
// an empty one) and a JSON value of the wrong kind for a number, string or
// boolean.
func scalarFits(tok json.Token, t reflect.Type, path string) error {
	if tok == nil {
		if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
			return nil
		}
		return fmt.Errorf("field %s: null: give a value, or leave the field out where it is optional", path)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
		return nil // its own business
	}
	k := t.Kind()
	var want string
	ok := true
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, isNum := tok.(json.Number)
		if !isNum {
			ok, want = false, "a whole number"
			break
		}
		// Go's decoder names such a field without its array index.
		var err error
		if k >= reflect.Uint && k <= reflect.Uint64 {
			_, err = strconv.ParseUint(string(n), 10, t.Bits())
		} else {
			_, err = strconv.ParseInt(string(n), 10, t.Bits())
		}
		if err != nil {
			return fmt.Errorf("field %s: %s: want a whole number that fits %s", path, n, t.Kind())
		}
	case reflect.Float32, reflect.Float64:
		n, isNum := tok.(json.Number)
		if !isNum {
			ok, want = false, "a number"
			break
		}
		if f, err := strconv.ParseFloat(string(n), t.Bits()); err != nil && math.IsInf(f, 0) {
			return fmt.Errorf("field %s: %s: beyond a %d-bit floating point number", path, n, t.Bits())
		}
	case reflect.String:
		_, ok = tok.(string)
		want = "a string"
	case reflect.Bool:
		_, ok = tok.(bool)
		want = "true or false"
	case reflect.Struct, reflect.Map:
		ok = tok == json.Delim('{')
		want = "an object"
	case reflect.Slice, reflect.Array:
		ok = tok == json.Delim('[')
		want = "an array"
	}
	if ok {
		return nil
	}
	return fmt.Errorf("field %s: %s: want %s", path, kindOf(tok), want)
}

// kindOf names a JSON token's kind as a message reads it.
func kindOf(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + v.String()
	case bool:
		return fmt.Sprintf("%t", v)
	}
	return "null"
}

// jsonField is how Go's decoder sees a struct field: skipped (tag "-",
// unexported), an embedded struct whose fields it promotes (embedded), or
// a field of that JSON name with the tag's options.
func jsonField(f reflect.StructField) (name, opts string, embedded reflect.Type, skip bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", "", nil, true
	}
	name, opts, _ = strings.Cut(tag, ",")
	if f.Anonymous && name == "" {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			return "", "", ft, false
		}
	}
	if !f.IsExported() {
		return "", "", nil, true
	}
	if name == "" {
		name = f.Name
	}
	return name, opts, nil, false
}

// requiredFields lists t's exported fields, embedded structs' included
// (less those a field of t hides), whose JSON tag has neither omitempty
// nor omitzero, by JSON name.
func requiredFields(t reflect.Type) []string {
	var out, inner []string
	own := map[string]bool{}
	for i := range t.NumField() {
		name, opts, embedded, skip := jsonField(t.Field(i))
		switch {
		case skip:
			continue
		case embedded != nil:
			inner = append(inner, requiredFields(embedded)...)
			continue
		}
		own[name] = true
		optional := false
		for o := range strings.SplitSeq(opts, ",") {
			optional = optional || o == "omitempty" || o == "omitzero"
		}
		if !optional {
			out = append(out, name)
		}
	}
	for _, name := range inner {
		if !own[name] {
			out = append(out, name)
		}
	}
	return out
}

// collect gathers t's fields by JSON name, embedded structs' included; a
// field of t hides an embedded struct's of the same name, as in Go's
// decoder.
func collect(t reflect.Type, fields map[string]reflect.Type) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, et, skip := jsonField(f)
		switch {
		case skip:
			continue
		case et != nil:
			embedded = append(embedded, et)
			continue
		}
		fields[name] = f.Type
	}
	for _, et := range embedded {
		inner := map[string]reflect.Type{}
		collect(et, inner)
		for name, ft := range inner {
			if _, shallower := fields[name]; !shallower {
				fields[name] = ft
			}
		}
	}
}
