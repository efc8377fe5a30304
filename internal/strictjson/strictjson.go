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
	"reflect"
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

func check(data []byte, v any, known bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec, known: known}
	return w.walk(reflect.TypeOf(v), "")
}

// walker walks one document; known: unknown keys are refused.
type walker struct {
	dec   *json.Decoder
	known bool
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// walk consumes one value from the decoder, checking it against t (nil:
// any).
func (w *walker) walk(t reflect.Type, path string) error {
	dec := w.dec
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
	var elem reflect.Type
	switch {
	case t != nil && t.Kind() == reflect.Struct:
		fields = map[string]reflect.Type{}
		collect(t, fields)
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
	return err
}

// collect gathers t's fields by JSON name, embedded structs' included; a
// field of t hides an embedded struct's of the same name, as in Go's
// decoder.
func collect(t reflect.Type, fields map[string]reflect.Type) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
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
