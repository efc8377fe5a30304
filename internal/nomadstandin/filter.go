package nomadstandin

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// This file evaluates the subset of Nomad's filter language (go-bexpr) that
// the stand-in serves on list endpoints. The grammar follows go-bexpr's
// (grammar/grammar.peg): `or`, `and`, `not`, parentheses, and the match
// expressions `Selector == Value`, `!=`, `contains`, `not contains`,
// `matches`, `not matches`, `is [not] empty`, `is [not] nil` and
// `Value [not] in Selector`. A value is a double-quoted string (no embedded
// double quote, escapes as in Go), a backquoted raw string, a number or a
// bare word. Collection expressions (`any`/`all`) and JSON-pointer
// selectors are refused with a clear message.
//
// Nomad answers 400 for a filter it cannot parse ("failed to create result
// paginator: failed to read filter expression: ...") and for one that fails
// on an object ("failed to read result page: ..."), e.g. an unknown field:
// `error finding value in datum: /Foo at part 0: couldn't find key: struct
// field with name "Foo"`. The stand-in answers the same way, and checks the
// selectors once before the first object (Nomad finds an unknown field only
// when an object is evaluated, so an empty list never fails there).

type fieldKind int

const (
	kindString fieldKind = iota
	kindBool
	kindUint
	kindInt
	kindMap
	kindPtr
)

// fieldValue is a resolved selector.
type fieldValue struct {
	kind    fieldKind
	present bool
	s       string
	b       bool
	u       uint64
	i       int64
	m       map[string]string
	isNil   bool
}

func strField(v string) fieldValue            { return fieldValue{kind: kindString, present: true, s: v} }
func boolField(v bool) fieldValue             { return fieldValue{kind: kindBool, present: true, b: v} }
func uintField(v uint64) fieldValue           { return fieldValue{kind: kindUint, present: true, u: v} }
func intField(v int64) fieldValue             { return fieldValue{kind: kindInt, present: true, i: v} }
func mapField(v map[string]string) fieldValue { return fieldValue{kind: kindMap, present: true, m: v} }
func ptrField(isNil bool) fieldValue          { return fieldValue{kind: kindPtr, present: true, isNil: isNil} }
func notPresent() fieldValue                  { return fieldValue{} }
func mapKey(m map[string]string, k string) fieldValue {
	if v, ok := m[k]; ok {
		return strField(v)
	}
	return notPresent()
}

// resolver resolves a selector path on one object.
type resolver func(path []string) (fieldValue, error)

// fieldSchema checks a selector path without an object: it answers an
// error for an unknown or an unsupported selector.
type fieldSchema func(path []string) error

type filterExpr interface {
	eval(r resolver) (bool, error)
	selectors(f func(path []string, text string))
}

type boolOp struct {
	and         bool
	left, right filterExpr
}

func (b *boolOp) eval(r resolver) (bool, error) {
	l, err := b.left.eval(r)
	if err != nil {
		return false, err
	}
	if b.and && !l {
		return false, nil
	}
	if !b.and && l {
		return true, nil
	}
	return b.right.eval(r)
}

func (b *boolOp) selectors(f func([]string, string)) {
	b.left.selectors(f)
	b.right.selectors(f)
}

type notOp struct{ inner filterExpr }

func (n *notOp) eval(r resolver) (bool, error) {
	v, err := n.inner.eval(r)
	return !v, err
}

func (n *notOp) selectors(f func([]string, string)) { n.inner.selectors(f) }

type matchOp int

const (
	opEqual matchOp = iota
	opNotEqual
	opIn // also "contains"
	opNotIn
	opMatches
	opNotMatches
	opIsEmpty
	opIsNotEmpty
	opIsNil
	opIsNotNil
)

type match struct {
	path  []string
	text  string // the selector as written
	op    matchOp
	value string
	re    *regexp.Regexp
}

func (m *match) selectors(f func([]string, string)) { f(m.path, m.text) }

func (m *match) eval(r resolver) (bool, error) {
	v, err := r(m.path)
	if err != nil {
		return false, err
	}
	if !v.present {
		// go-bexpr's NotPresentDisposition: a missing map key.
		switch m.op {
		case opNotEqual, opNotIn, opNotMatches, opIsEmpty, opIsNil:
			return true, nil
		}
		return false, nil
	}
	switch m.op {
	case opEqual, opNotEqual:
		eq, err := equalValue(v, m.value)
		if err != nil {
			return false, err
		}
		return eq == (m.op == opEqual), nil
	case opIn, opNotIn:
		var in bool
		switch v.kind {
		case kindString:
			in = strings.Contains(v.s, m.value)
		case kindMap:
			_, in = v.m[m.value]
		default:
			return false, fmt.Errorf("cannot perform in/contains operations on type %s for selector: %q", kindName(v.kind), m.text)
		}
		return in == (m.op == opIn), nil
	case opMatches, opNotMatches:
		if v.kind != kindString {
			return false, fmt.Errorf("value of type %s is not convertible to []byte", kindName(v.kind))
		}
		return m.re.MatchString(v.s) == (m.op == opMatches), nil
	case opIsEmpty, opIsNotEmpty:
		var empty bool
		switch v.kind {
		case kindString:
			empty = v.s == ""
		case kindMap:
			empty = len(v.m) == 0
		default:
			return false, fmt.Errorf("selector %q is of type %s which is not a map, slice, array or string", m.text, kindName(v.kind))
		}
		return empty == (m.op == opIsEmpty), nil
	case opIsNil, opIsNotNil:
		var isNil bool
		switch v.kind {
		case kindPtr:
			isNil = v.isNil
		case kindMap:
			isNil = v.m == nil
		default:
			return false, fmt.Errorf("selector %q is of type %s which is not nillable", m.text, kindName(v.kind))
		}
		return isNil == (m.op == opIsNil), nil
	}
	return false, fmt.Errorf("invalid match operation: %d", m.op)
}

func kindName(k fieldKind) string {
	switch k {
	case kindString:
		return "string"
	case kindBool:
		return "bool"
	case kindUint:
		return "uint64"
	case kindInt:
		return "int64"
	case kindMap:
		return "map[string]string"
	}
	return "ptr"
}

func equalValue(v fieldValue, raw string) (bool, error) {
	switch v.kind {
	case kindString:
		return v.s == raw, nil
	case kindBool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return false, fmt.Errorf("error getting match value in expression: %w", err)
		}
		return v.b == b, nil
	case kindUint:
		u, err := strconv.ParseUint(raw, 10, 64)
		if err != nil {
			return false, fmt.Errorf("error getting match value in expression: %w", err)
		}
		return v.u == u, nil
	case kindInt:
		i, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return false, fmt.Errorf("error getting match value in expression: %w", err)
		}
		return v.i == i, nil
	}
	return false, fmt.Errorf("unable to find suitable primitive comparison function for matching")
}

// filter is a parsed filter for one kind of object.
type filter struct {
	expr filterExpr
}

// parseFilterFor parses expr and checks its selectors against schema. The
// error is the 400 answer Nomad gives.
func parseFilterFor(expr string, schema fieldSchema) (*filter, error) {
	if expr == "" {
		return nil, nil
	}
	e, err := parseFilter(expr)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "failed to create result paginator: failed to read filter expression: %v", err)
	}
	var serr error
	e.selectors(func(path []string, text string) {
		if serr == nil {
			serr = schema(path)
		}
	})
	if serr != nil {
		return nil, errorf(http.StatusBadRequest, "failed to read result page: %v", serr)
	}
	return &filter{expr: e}, nil
}

// match evaluates the filter on one object; a nil filter matches all.
func (f *filter) match(r resolver) (bool, error) {
	if f == nil {
		return true, nil
	}
	ok, err := f.expr.eval(r)
	if err != nil {
		return false, errorf(http.StatusBadRequest, "failed to read result page: %v", err)
	}
	return ok, nil
}

// unknownField is go-bexpr's (pointerstructure's) error for a struct field
// the object does not have.
func unknownField(path []string, part int) error {
	return fmt.Errorf("error finding value in datum: /%s at part %d: couldn't find key: struct field with name %q",
		strings.Join(path, "/"), part, path[part])
}

// unsupportedField is the stand-in's own answer for a field Nomad has but
// the stand-in does not evaluate.
func unsupportedField(path []string, supported string) error {
	return fmt.Errorf("the Nomad stand-in does not evaluate the filter selector %q (it evaluates %s); filter on the client side",
		strings.Join(path, "."), supported)
}

// --- parser ---

type fparser struct {
	s   string
	pos int
}

type parseError struct {
	pos int
	msg string
}

func (e *parseError) Error() string { return fmt.Sprintf("1:%d (%d): %s", e.pos+1, e.pos, e.msg) }

func parseFilter(s string) (filterExpr, error) {
	p := &fparser{s: s}
	p.ws()
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.pos < len(p.s) {
		return nil, p.fail("unexpected %q: expected an operator, \"and\", \"or\" or the end", p.rest())
	}
	return e, nil
}

func (p *fparser) fail(format string, args ...any) error {
	return &parseError{pos: p.pos, msg: fmt.Sprintf(format, args...)}
}

func (p *fparser) rest() string {
	r := p.s[p.pos:]
	if len(r) > 20 {
		r = r[:20] + "..."
	}
	return r
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '_' || c == '/' }

// ws skips whitespace and reports whether there was any.
func (p *fparser) ws() bool {
	start := p.pos
	for p.pos < len(p.s) && isSpace(p.s[p.pos]) {
		p.pos++
	}
	return p.pos > start
}

// word reports whether the keyword kw is at the position (not followed by
// an identifier character), and consumes it.
func (p *fparser) word(kw string) bool {
	if !strings.HasPrefix(p.s[p.pos:], kw) {
		return false
	}
	end := p.pos + len(kw)
	if end < len(p.s) && isIdentChar(p.s[end]) {
		return false
	}
	p.pos = end
	return true
}

// keywords tries "ws kw1 ws kw2 ... ws"; on failure the position is kept.
func (p *fparser) keywords(kws ...string) bool {
	save := p.pos
	for _, kw := range kws {
		if !p.ws() || !p.word(kw) {
			p.pos = save
			return false
		}
	}
	if !p.ws() && p.pos < len(p.s) {
		// a keyword must be followed by whitespace (or the end, for
		// `is empty`, which the callers check)
		p.pos = save
		return false
	}
	return true
}

func (p *fparser) or() (filterExpr, error) {
	left, err := p.and()
	if err != nil {
		return nil, err
	}
	for {
		save := p.pos
		if p.ws() && p.word("or") && p.ws() {
			right, err := p.and()
			if err != nil {
				return nil, err
			}
			left = &boolOp{and: false, left: left, right: right}
			continue
		}
		p.pos = save
		return left, nil
	}
}

func (p *fparser) and() (filterExpr, error) {
	left, err := p.not()
	if err != nil {
		return nil, err
	}
	for {
		save := p.pos
		if p.ws() && p.word("and") && p.ws() {
			right, err := p.not()
			if err != nil {
				return nil, err
			}
			left = &boolOp{and: true, left: left, right: right}
			continue
		}
		p.pos = save
		return left, nil
	}
}

func (p *fparser) not() (filterExpr, error) {
	save := p.pos
	if p.word("not") && p.ws() {
		inner, err := p.not()
		if err != nil {
			return nil, err
		}
		return &notOp{inner: inner}, nil
	}
	p.pos = save
	return p.paren()
}

func (p *fparser) paren() (filterExpr, error) {
	if p.pos < len(p.s) && p.s[p.pos] == '(' {
		p.pos++
		p.ws()
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.s) || p.s[p.pos] != ')' {
			return nil, p.fail("Unmatched parentheses")
		}
		p.pos++
		return e, nil
	}
	return p.match()
}

func (p *fparser) match() (filterExpr, error) {
	if p.pos >= len(p.s) {
		return nil, p.fail("unexpected end of the expression: expected a selector or a value")
	}
	c := p.s[p.pos]
	if c == 'a' && (p.word("any") || p.word("all")) {
		return nil, p.fail("collection expressions (any/all) are not supported by the Nomad stand-in")
	}
	if c == '"' || c == '`' || c == '-' || c >= '0' && c <= '9' {
		if c == '"' && strings.HasPrefix(p.s[p.pos:], `"/`) {
			return nil, p.fail("JSON pointer selectors are not supported by the Nomad stand-in")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		return p.valueInSelector(v)
	}
	if !isIdentStart(c) {
		return nil, p.fail("unexpected %q: expected a selector, a value or \"(\"", p.rest())
	}
	start := p.pos
	path, err := p.selector()
	if err != nil {
		return nil, err
	}
	text := p.s[start:p.pos]
	m := &match{path: path, text: text}
	save := p.pos
	p.ws()
	switch {
	case strings.HasPrefix(p.s[p.pos:], "=="):
		m.op = opEqual
	case strings.HasPrefix(p.s[p.pos:], "!="):
		m.op = opNotEqual
	}
	if strings.HasPrefix(p.s[p.pos:], "==") || strings.HasPrefix(p.s[p.pos:], "!=") {
		p.pos += 2
		p.ws()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m.value = v
		return m, nil
	}
	p.pos = save
	switch {
	case p.isOp("is", "not", "empty"):
		m.op = opIsNotEmpty
		return m, nil
	case p.isOp("is", "empty"):
		m.op = opIsEmpty
		return m, nil
	case p.isOp("is", "not", "nil"):
		m.op = opIsNotNil
		return m, nil
	case p.isOp("is", "nil"):
		m.op = opIsNil
		return m, nil
	case p.keywords("not", "contains"):
		m.op = opNotIn
	case p.keywords("contains"):
		m.op = opIn
	case p.keywords("not", "matches"):
		m.op = opNotMatches
	case p.keywords("matches"):
		m.op = opMatches
	case p.keywords("not", "in"), p.keywords("in"):
		// The first word was a bare value: `value in Selector`.
		p.pos = save
		return p.valueInSelector(text)
	default:
		return nil, p.fail("unexpected %q after selector %q: expected ==, !=, contains, matches, in, is empty or is nil", p.rest(), text)
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	m.value = v
	if m.op == opMatches || m.op == opNotMatches {
		re, err := regexp.Compile(v)
		if err != nil {
			return nil, p.fail("failed to compile regular expression %q: %v", v, err)
		}
		m.re = re
	}
	return m, nil
}

// isOp matches `ws is [ws not] ws empty|nil` ending the match expression.
func (p *fparser) isOp(kws ...string) bool {
	save := p.pos
	for _, kw := range kws {
		if !p.ws() || !p.word(kw) {
			p.pos = save
			return false
		}
	}
	return true
}

func (p *fparser) valueInSelector(v string) (filterExpr, error) {
	m := &match{value: v}
	switch {
	case p.keywords("not", "in"):
		m.op = opNotIn
	case p.keywords("in"):
		m.op = opIn
	default:
		return nil, p.fail("unexpected %q after value %q: expected \"in\" or \"not in\" and a selector", p.rest(), v)
	}
	if p.pos >= len(p.s) || !isIdentStart(p.s[p.pos]) {
		return nil, p.fail("Invalid selector")
	}
	start := p.pos
	path, err := p.selector()
	if err != nil {
		return nil, err
	}
	m.path, m.text = path, p.s[start:p.pos]
	return m, nil
}

func (p *fparser) ident() string {
	start := p.pos
	if p.pos < len(p.s) && isIdentStart(p.s[p.pos]) {
		p.pos++
		for p.pos < len(p.s) && isIdentChar(p.s[p.pos]) {
			p.pos++
		}
	}
	return p.s[start:p.pos]
}

func (p *fparser) selector() ([]string, error) {
	path := []string{p.ident()}
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case '.':
			p.pos++
			if p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
				start := p.pos
				for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
					p.pos++
				}
				path = append(path, p.s[start:p.pos])
				continue
			}
			id := p.ident()
			if id == "" {
				return nil, p.fail("expected an identifier after \".\"")
			}
			path = append(path, id)
		case '[':
			p.pos++
			p.ws()
			if p.pos >= len(p.s) || (p.s[p.pos] != '"' && p.s[p.pos] != '`') {
				return nil, p.fail("Invalid index")
			}
			k, err := p.stringLit()
			if err != nil {
				return nil, err
			}
			p.ws()
			if p.pos >= len(p.s) || p.s[p.pos] != ']' {
				return nil, p.fail("Unclosed index expression")
			}
			p.pos++
			path = append(path, k)
		default:
			return path, nil
		}
	}
	return path, nil
}

func (p *fparser) stringLit() (string, error) {
	q := p.s[p.pos]
	end := strings.IndexByte(p.s[p.pos+1:], q)
	if end < 0 {
		return "", p.fail("Unterminated string literal")
	}
	lit := p.s[p.pos : p.pos+1+end+1]
	v, err := strconv.Unquote(lit)
	if err != nil {
		return "", p.fail("invalid string literal %s: %v", lit, err)
	}
	p.pos += len(lit)
	return v, nil
}

func (p *fparser) value() (string, error) {
	if p.pos >= len(p.s) {
		return "", p.fail("unexpected end of the expression: expected a value")
	}
	c := p.s[p.pos]
	switch {
	case c == '"' || c == '`':
		return p.stringLit()
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		if c == '-' {
			p.pos++
		}
		digits := p.pos
		for p.pos < len(p.s) && (p.s[p.pos] >= '0' && p.s[p.pos] <= '9' || p.s[p.pos] == '.') {
			p.pos++
		}
		if p.pos == digits || (p.pos < len(p.s) && !isSpace(p.s[p.pos]) && p.s[p.pos] != ')') {
			return "", p.fail("Invalid number literal")
		}
		return p.s[start:p.pos], nil
	case isIdentStart(c):
		start := p.pos
		if _, err := p.selector(); err != nil {
			return "", err
		}
		return p.s[start:p.pos], nil
	}
	return "", p.fail("unexpected %q: expected a value", p.rest())
}
