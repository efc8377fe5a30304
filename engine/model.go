package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/activation-scheduler/terraform-provider-activation/internal/strictjson"
)

// ModelFormat is the value of a model file's "format" field.
const ModelFormat = "activation-model"

// ModelVersion is the only model file version this engine reads.
const ModelVersion = 1

// Limits on what a model file may hold. They keep a hostile or mistaken file
// from exhausting memory; the largest benchmark network (about 950k weights)
// fits well within them.
const (
	// MaxParameters is the largest number of weights plus biases a model may have.
	MaxParameters = 4 << 20
	// MaxLayerWidth is the widest layer (inputs included) a model may have.
	MaxLayerWidth = 8192
	// MaxLayers is the most layers (hidden and output) a model may have.
	MaxLayers = 64
	// MaxModelBytes is the largest model file Load reads.
	MaxModelBytes = 128 << 20
)

// Defaults for the two thresholds that say when a node holds data.
const (
	// DefaultInputEpsilon: an input node holds data when |x| > InputEpsilon.
	DefaultInputEpsilon = 1e-9
	// DefaultOutputThreshold: an output node holds data when its activation
	// is >= OutputThreshold.
	DefaultOutputThreshold = 0.5
)

// Activation names accepted in a layer's "activation" field.
const (
	ActivationReLU     = "relu"
	ActivationSigmoid  = "sigmoid"
	ActivationIdentity = "identity"
	ActivationTanh     = "tanh"
)

// Model is a processor as stored on disk: a feed-forward network with at
// least one hidden layer, its input schema, which inputs and outputs are
// countable slots, the two data thresholds and its provenance.
//
// Layer l maps the previous layer (the inputs for l = 0) to its own nodes:
// Weights[j][i] is the weight of the edge from node i of the previous layer
// to node j of this layer. A zero weight is no edge.
type Model struct {
	Format          string     `json:"format"`
	Version         int        `json:"version"`
	Name            string     `json:"name"`
	Description     string     `json:"description,omitempty"`
	Inputs          []Node     `json:"inputs"`
	Layers          []Layer    `json:"layers"`
	Outputs         []Node     `json:"outputs"`
	InputEpsilon    *float64   `json:"input_epsilon,omitempty"`
	OutputThreshold *float64   `json:"output_threshold,omitempty"`
	Provenance      Provenance `json:"provenance"`
}

// Node names one input or output node; Countable marks it as a slot.
type Node struct {
	Name      string `json:"name"`
	Countable bool   `json:"countable,omitempty"`
}

// Layer is one weighted layer. Its edges are given either densely, as
// Weights (Weights[j][i] is the edge from node i of the previous layer to
// node j, 0 = no edge), or sparsely, as Edges (only the edges that exist).
// A layer gives exactly one of the two; Biases gives its width.
type Layer struct {
	Activation string      `json:"activation"`
	Weights    [][]float64 `json:"weights,omitempty"`
	Edges      []Edge      `json:"edges,omitempty"`
	Biases     []float64   `json:"biases"`
	// sparse records that the layer was read with an "edges" field (which
	// may be empty: a layer with no edges at all).
	sparse bool
}

// Edge is one weighted edge of a sparse layer, written [to, from, weight]:
// from node From of the previous layer to node To of this layer.
type Edge struct {
	To, From int
	W        float64
}

// MarshalJSON writes the edge as [to, from, weight].
func (e Edge) MarshalJSON() ([]byte, error) {
	return json.Marshal([3]any{e.To, e.From, e.W})
}

// UnmarshalJSON reads [to, from, weight]: three JSON numbers (a number in
// a string, "0.5", is refused, as everywhere else in a model file).
func (e *Edge) UnmarshalJSON(b []byte) error {
	var compact bytes.Buffer
	if json.Compact(&compact, b) == nil {
		b = compact.Bytes() // the edge in one line, for the messages
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("an edge is [to, from, weight]: got %s", b)
	}
	if len(raw) != 3 {
		return fmt.Errorf("an edge is [to, from, weight]: got %d values, %s", len(raw), b)
	}
	nums := make([]json.Number, 3)
	for i, r := range raw {
		if len(r) == 0 || (r[0] != '-' && (r[0] < '0' || r[0] > '9')) {
			return fmt.Errorf("an edge is [to, from, weight] of numbers: its %s is %s, not a number", [...]string{"to", "from", "weight"}[i], r)
		}
		nums[i] = json.Number(r)
	}
	to, err1 := nums[0].Int64()
	from, err2 := nums[1].Int64()
	if err1 != nil || err2 != nil || to < 0 || from < 0 || to > math.MaxInt32 || from > math.MaxInt32 {
		return fmt.Errorf("an edge is [to, from, weight] with whole node indices >= 0: got %s", b)
	}
	w, err := nums[2].Float64()
	if err != nil {
		return fmt.Errorf("an edge's weight %s is not a number in range: got %s", nums[2], b)
	}
	e.To, e.From, e.W = int(to), int(from), w
	return nil
}

// UnmarshalJSON reads a layer, noting whether it gave "edges".
func (l *Layer) UnmarshalJSON(b []byte) error {
	type plain Layer
	var aux struct {
		plain
		Edges *[]json.RawMessage `json:"edges"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return err
	}
	*l = Layer(aux.plain)
	if aux.Edges != nil {
		l.Edges = make([]Edge, len(*aux.Edges))
		for k, raw := range *aux.Edges {
			if err := l.Edges[k].UnmarshalJSON(raw); err != nil {
				return &edgeError{index: k, err: err}
			}
		}
		l.sparse = true
	}
	return nil
}

// edgeError is a sparse layer's edge that does not decode, with its
// index, so that the error names the edge.
type edgeError struct {
	index int
	err   error
}

func (e *edgeError) Error() string { return e.err.Error() }
func (e *edgeError) Unwrap() error { return e.err }

// MarshalJSON writes "edges" for a sparse layer (even an empty one) and
// "weights" for a dense one.
func (l Layer) MarshalJSON() ([]byte, error) {
	if l.IsSparse() {
		edges := l.Edges
		if edges == nil {
			edges = []Edge{}
		}
		return json.Marshal(struct {
			Activation string    `json:"activation"`
			Edges      []Edge    `json:"edges"`
			Biases     []float64 `json:"biases"`
		}{l.Activation, edges, l.Biases})
	}
	return json.Marshal(struct {
		Activation string      `json:"activation"`
		Weights    [][]float64 `json:"weights"`
		Biases     []float64   `json:"biases"`
	}{l.Activation, l.Weights, l.Biases})
}

// IsSparse reports whether the layer gives its edges as Edges.
func (l *Layer) IsSparse() bool { return l.sparse || (l.Weights == nil && l.Edges != nil) }

// SparseLayer returns a layer with the given edges (a model builder's
// constructor: the layer is written with "edges" even when it has none).
func SparseLayer(activation string, edges []Edge, biases []float64) Layer {
	return Layer{Activation: activation, Edges: edges, Biases: biases, sparse: true}
}

// dense returns the layer's weights as rows (to x from), in. l must be valid.
func (l *Layer) dense(in int) [][]float64 {
	if !l.IsSparse() {
		return l.Weights
	}
	rows := make([][]float64, len(l.Biases))
	for j := range rows {
		rows[j] = make([]float64, in)
	}
	for _, e := range l.Edges {
		rows[e.To][e.From] = e.W
	}
	return rows
}

// Provenance says how a model was made and from what.
type Provenance struct {
	Method    string            `json:"method"`
	Generator string            `json:"generator,omitempty"`
	Data      []string          `json:"data,omitempty"`
	Settings  map[string]string `json:"settings,omitempty"`
	Metrics   map[string]string `json:"metrics,omitempty"`
	// Series names, per family, the series the model was fitted to:
	// those it trained and validated on (activation train writes them, in
	// the split's order). A held-out replay of another directory reads
	// them: a change of a family's files can move a series the model was
	// trained on to the held-out side of the split, and activation
	// simulate --split test leaves such a series out, saying so.
	Series map[string][]string `json:"series,omitempty"`
}

// ModelError is a validation failure: Field names the offending field in the
// model file (for example "layers[1].weights[3][7]") and Reason says why.
type ModelError struct {
	Field  string
	Reason string
}

func (e *ModelError) Error() string { return "model: " + e.fieldReason() }

// fieldReason is the field and the reason, or the reason alone.
func (e *ModelError) fieldReason() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

func modelErr(field, format string, args ...any) error {
	return &ModelError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Epsilon returns the input threshold in force (the default when unset).
func (m *Model) Epsilon() float64 {
	if m.InputEpsilon == nil {
		return DefaultInputEpsilon
	}
	return *m.InputEpsilon
}

// OutputActivation is the activation of the model's output layer: a hold
// band or a margin moves an output threshold in logits, so it needs
// ActivationSigmoid.
func (m *Model) OutputActivation() string { return m.Layers[len(m.Layers)-1].Activation }

// Threshold returns the output threshold in force (the default when unset).
func (m *Model) Threshold() float64 {
	if m.OutputThreshold == nil {
		return DefaultOutputThreshold
	}
	return *m.OutputThreshold
}

// LayerSizes returns the width of every layer, inputs first.
func (m *Model) LayerSizes() []int {
	out := make([]int, 0, len(m.Layers)+1)
	out = append(out, len(m.Inputs))
	for _, l := range m.Layers {
		out = append(out, len(l.Biases))
	}
	return out
}

// Parameters returns the number of weights and biases.
func (m *Model) Parameters() int {
	n := 0
	prev := len(m.Inputs)
	for _, l := range m.Layers {
		n += prev*len(l.Biases) + len(l.Biases)
		prev = len(l.Biases)
	}
	return n
}

// ParseModel decodes and validates a model file's bytes. Unknown fields, a
// name in another case than its own and a name given twice in one object
// are errors, so a misspelt or doubled field never passes silently.
func ParseModel(data []byte) (*Model, error) { return parseModel(data, true) }

// parseModel is ParseModel; strict checks the names (the built-in models,
// whose names a test checks, skip it: it about doubles the parse time).
func parseModel(data []byte, strict bool) (*Model, error) {
	if len(data) > MaxModelBytes {
		return nil, modelErr("", "file is %d bytes, more than the limit of %d", len(data), MaxModelBytes)
	}
	// A UTF-8 byte order mark, as editors may write, is no part of the
	// document (the digest is of the model, not of its bytes; byte
	// offsets in errors count from after it).
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Model
	if err := dec.Decode(&m); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, modelErr("", "not a valid model document: not valid JSON at byte %d: %v", se.Offset, se)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, modelErr("", "not a valid model document: it ends early (a truncated file?)")
		case errors.Is(err, io.EOF):
			return nil, modelErr("", "not a valid model document: it is empty (nothing but white space)")
		}
		// A layer decodes on its own (Layer.UnmarshalJSON): its errors
		// know neither the layer nor the byte in the file. Find the layer.
		if i, lerr := failingLayer(data); i >= 0 {
			field := fmt.Sprintf("layers[%d]", i)
			var ee *edgeError
			switch {
			case errors.As(lerr, &ee):
				field += fmt.Sprintf(".edges[%d]", ee.index)
			case errors.As(lerr, &te) && te.Field != "":
				field += "." + strings.TrimPrefix(te.Field, "plain.")
			}
			return nil, modelErr(field, "not a valid model document: %s", decodeReason(lerr))
		}
		if errors.As(err, &te) && te.Field != "" {
			return nil, modelErr(te.Field, "not a valid model document: %s (at byte %d)", decodeReason(err), te.Offset)
		}
		return nil, modelErr("", "not a valid model document: %v", err)
	}
	// Anything but white space after the document is refused (More does
	// not see a stray "]" or "}").
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, modelErr("", "trailing data after the model document")
	}
	// Every name exact and given once (Go's decoder takes a name in any
	// case and the last of two keys: a model file edited by hand could say
	// two things).
	if strict {
		if err := strictjson.Check(data, &m); err != nil {
			return nil, modelErr("", "not a valid model document: %v", err)
		}
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// failingLayer is the index of the first layer of a model document that
// does not decode, and its error, or -1.
func failingLayer(data []byte) (int, error) {
	var doc struct {
		Layers []json.RawMessage `json:"layers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return -1, err // not the layers' fault: the caller reports its own error
	}
	for i, raw := range doc.Layers {
		var l Layer
		if err := l.UnmarshalJSON(raw); err != nil {
			return i, err
		}
	}
	return -1, nil
}

// decodeReason says what a JSON decoding error found, in the document's
// terms (a number, a list...) rather than Go's types.
func decodeReason(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	want := "a value of another kind"
	switch te.Type.Kind() {
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		want = "a number in range"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Pointer:
		want = "an object"
	}
	return fmt.Sprintf("%s is not %s", te.Value, want)
}

// Validate checks every rule a model must meet and names the first field
// that breaks one.
func (m *Model) Validate() error {
	if m.Format != ModelFormat {
		return modelErr("format", "is %q, want %q", m.Format, ModelFormat)
	}
	if m.Version != ModelVersion {
		return modelErr("version", "unknown version %d (this engine reads version %d)", m.Version, ModelVersion)
	}
	if m.Name == "" {
		return modelErr("name", "must not be empty")
	}
	if len(m.Inputs) == 0 {
		return modelErr("inputs", "must list at least one input node")
	}
	if len(m.Inputs) > MaxLayerWidth {
		return modelErr("inputs", "has %d nodes, more than the limit of %d", len(m.Inputs), MaxLayerWidth)
	}
	if err := checkNodes("inputs", m.Inputs); err != nil {
		return err
	}
	if len(m.Layers) < 2 {
		return modelErr("layers", "has %d layers; a processor needs at least one hidden layer and an output layer", len(m.Layers))
	}
	if len(m.Layers) > MaxLayers {
		return modelErr("layers", "has %d layers, more than the limit of %d", len(m.Layers), MaxLayers)
	}
	// Count parameters before looking at values, so the limit is said first.
	params := 0
	prev := len(m.Inputs)
	for l, layer := range m.Layers {
		w := len(layer.Biases)
		if w == 0 {
			return modelErr(fmt.Sprintf("layers[%d].biases", l), "empty layer: a layer needs at least one node")
		}
		if w > MaxLayerWidth {
			return modelErr(fmt.Sprintf("layers[%d].biases", l), "layer has %d nodes, more than the limit of %d", w, MaxLayerWidth)
		}
		params += prev*w + w
		if params > MaxParameters {
			return modelErr("layers", "more than %d parameters (the limit) by layer %d", MaxParameters, l)
		}
		prev = w
	}
	prev = len(m.Inputs)
	for l, layer := range m.Layers {
		field := fmt.Sprintf("layers[%d]", l)
		switch layer.Activation {
		case ActivationReLU, ActivationSigmoid, ActivationIdentity, ActivationTanh:
		default:
			return modelErr(field+".activation", "unknown activation %q (want relu, sigmoid, tanh or identity)", layer.Activation)
		}
		if err := checkEdges(field, layer, prev); err != nil {
			return err
		}
		for j, b := range layer.Biases {
			if math.IsNaN(b) || math.IsInf(b, 0) {
				return modelErr(fmt.Sprintf("%s.biases[%d]", field, j), "bias is %v; biases must be finite", b)
			}
		}
		prev = len(layer.Biases)
	}
	if err := checkOverflow(m.Layers); err != nil {
		return err
	}
	if len(m.Outputs) != prev {
		return modelErr("outputs", "lists %d nodes but the last layer has %d", len(m.Outputs), prev)
	}
	if err := checkNodes("outputs", m.Outputs); err != nil {
		return err
	}
	if m.InputEpsilon != nil {
		if e := *m.InputEpsilon; math.IsNaN(e) || math.IsInf(e, 0) || e < 0 {
			return modelErr("input_epsilon", "is %v; it must be a finite number >= 0", e)
		}
	}
	if m.OutputThreshold != nil {
		t := *m.OutputThreshold
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return modelErr("output_threshold", "is %v; it must be finite", t)
		}
		// A threshold at or below the least value the output activation can
		// take would make every output hold data.
		switch act := m.Layers[len(m.Layers)-1].Activation; act {
		case ActivationSigmoid:
			if t <= 0 || t >= 1 {
				return modelErr("output_threshold", "is %v; with sigmoid outputs (values in (0, 1)) it must be in (0, 1)", t)
			}
		case ActivationTanh:
			if t <= -1 || t >= 1 {
				return modelErr("output_threshold", "is %v; with tanh outputs (values in (-1, 1)) it must be in (-1, 1)", t)
			}
		case ActivationReLU:
			if t <= 0 {
				return modelErr("output_threshold", "is %v; with relu outputs (values >= 0) it must be > 0", t)
			}
		}
	}
	if m.Provenance.Method == "" {
		return modelErr("provenance.method", "must say how the model was made")
	}
	return nil
}

// MaxInput is the largest magnitude an input the engine derives from an
// observation can take (a count of replicas; shares and fits are far
// below it): a model is checked against it for overflow.
const MaxInput = MaxReplicas

// maxActivation bounds every activation a valid model can reach, well
// inside a 64-bit float.
const maxActivation = 1e300

// checkOverflow refuses a model whose finite weights can still overflow
// a 64-bit float on an input the engine derives (every input of magnitude
// at most MaxInput): each layer's largest sum of |weight| over a node's
// edges, times the largest activation the layer before can hold, plus
// its largest |bias|, must stay within maxActivation (sigmoid and tanh
// layers hold at most 1). Such a model's decisions would be counted from
// the overflow (+Inf holds data, NaN does not).
func checkOverflow(layers []Layer) error {
	bound := float64(MaxInput)
	for l, layer := range layers {
		sums := make([]float64, len(layer.Biases))
		if layer.IsSparse() {
			for _, e := range layer.Edges {
				sums[e.To] += math.Abs(e.W)
			}
		} else {
			for j, row := range layer.Weights {
				for _, w := range row {
					sums[j] += math.Abs(w)
				}
			}
		}
		most := 0.0
		for j, sum := range sums {
			most = max(most, sum*bound+math.Abs(layer.Biases[j]))
		}
		if !(most <= maxActivation) { // NaN, +Inf included
			return modelErr(fmt.Sprintf("layers[%d]", l), "its weights can overflow a 64-bit float: a node can reach %.3g from inputs of at most %d (the limit is %g); scale the weights down", most, MaxInput, maxActivation)
		}
		switch layer.Activation {
		case ActivationSigmoid, ActivationTanh:
			bound = 1
		default:
			bound = most
		}
	}
	return nil
}

// checkEdges validates a layer's weights or edges against the width of the
// previous layer.
func checkEdges(field string, layer Layer, prev int) error {
	if layer.IsSparse() {
		if layer.Weights != nil {
			return modelErr(field, "gives both weights and edges; give one")
		}
		seen := make(map[[2]int]int, len(layer.Edges))
		for k, e := range layer.Edges {
			f := fmt.Sprintf("%s.edges[%d]", field, k)
			if e.To >= len(layer.Biases) {
				return modelErr(f, "goes to node %d, but the layer has %d nodes", e.To, len(layer.Biases))
			}
			if e.From >= prev {
				return modelErr(f, "comes from node %d, but the previous layer has %d nodes", e.From, prev)
			}
			if math.IsNaN(e.W) || math.IsInf(e.W, 0) {
				return modelErr(f, "weight is %v; weights must be finite", e.W)
			}
			if e.W == 0 {
				return modelErr(f, "weight is 0: a zero weight is no edge, leave it out")
			}
			if j, dup := seen[[2]int{e.To, e.From}]; dup {
				return modelErr(f, "repeats %s.edges[%d] (%d <- %d)", field, j, e.To, e.From)
			}
			seen[[2]int{e.To, e.From}] = k
		}
		return nil
	}
	if layer.Weights == nil {
		return modelErr(field, "gives neither weights nor edges")
	}
	if len(layer.Weights) != len(layer.Biases) {
		return modelErr(field+".weights", "has %d rows but the layer has %d biases (one row per node)", len(layer.Weights), len(layer.Biases))
	}
	for j, row := range layer.Weights {
		if len(row) != prev {
			return modelErr(fmt.Sprintf("%s.weights[%d]", field, j), "dimension mismatch: has %d weights, the previous layer has %d nodes", len(row), prev)
		}
		for i, w := range row {
			if math.IsNaN(w) || math.IsInf(w, 0) {
				return modelErr(fmt.Sprintf("%s.weights[%d][%d]", field, j, i), "weight is %v; weights must be finite", w)
			}
		}
	}
	return nil
}

func checkNodes(field string, nodes []Node) error {
	seen := make(map[string]int, len(nodes))
	for i, n := range nodes {
		if n.Name == "" {
			return modelErr(fmt.Sprintf("%s[%d].name", field, i), "must not be empty")
		}
		if j, dup := seen[n.Name]; dup {
			return modelErr(fmt.Sprintf("%s[%d].name", field, i), "%q repeats %s[%d]", n.Name, field, j)
		}
		seen[n.Name] = i
	}
	return nil
}

// Canonical returns the model's canonical JSON form: fields in a fixed order,
// no insignificant white space, numbers in Go's shortest round-trip form, the
// two thresholds written out even when they were defaulted, and every layer
// as sparse edges ordered by target then source. Two files that
// describe the same model have the same canonical form.
func (m *Model) Canonical() ([]byte, error) {
	c := *m
	eps, thr := m.Epsilon(), m.Threshold()
	c.InputEpsilon, c.OutputThreshold = &eps, &thr
	c.Layers = make([]Layer, len(m.Layers))
	prev := len(m.Inputs)
	for l := range m.Layers {
		c.Layers[l] = m.Layers[l].canonical(prev)
		prev = len(m.Layers[l].Biases)
	}
	return json.Marshal(&c)
}

// canonical returns the layer in sparse form, edges ordered by target then
// source, so that a dense and a sparse layer with the same edges agree.
func (l *Layer) canonical(in int) Layer {
	rows := l.dense(in)
	var edges []Edge
	for j, row := range rows {
		for i, w := range row {
			if w != 0 {
				edges = append(edges, Edge{To: j, From: i, W: w})
			}
		}
	}
	return SparseLayer(l.Activation, edges, l.Biases)
}

// Digest returns "sha256:" and the hex SHA-256 of the canonical form.
func (m *Model) Digest() (string, error) {
	b, err := m.Canonical()
	if err != nil {
		return "", fmt.Errorf("model %s: canonical form: %w", m.Name, err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// WriteModelFile validates m and writes it to path atomically: the bytes go
// to a temporary file in the same directory which is synced and renamed over
// path, so a reader never sees a partial model and a failure leaves any
// existing file as it was.
func WriteModelFile(path string, m *Model) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("writing model %s: %w", path, err)
	}
	data, err := EncodeModel(m)
	if err != nil {
		return fmt.Errorf("writing model %s: %w", path, err)
	}
	return writeFileAtomic(path, data)
}

// renameFile and linkFile are os.Rename and os.Link; tests replace them to
// fail a rename midway, or to have no hard links.
var renameFile, linkFile = os.Rename, os.Link

// WriteModelFiles writes several models as one change: every model is
// validated and written to a synced temporary file beside its path first,
// and only then are the files renamed into place, so a validation or write
// failure leaves every existing file as it was (a set of models, such as
// the admission and capacity pair, is never left half new, half old). A
// target that is a directory is refused before any rename, and a rename
// that fails puts the files already replaced back. (A crash between
// two renames can still leave one new: no file system renames two files
// as one.)
func WriteModelFiles(models map[string]*Model) (err error) {
	type staged struct{ tmp, path string }
	var done []staged
	defer func() {
		if err != nil {
			for _, st := range done {
				os.Remove(st.tmp)
			}
		}
	}()
	paths := make([]string, 0, len(models))
	for path := range models {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		m := models[path]
		if err := m.Validate(); err != nil {
			return fmt.Errorf("writing model %s: %w", path, err)
		}
		data, err := EncodeModel(m)
		if err != nil {
			return fmt.Errorf("writing model %s: %w", path, err)
		}
		tmp, err := writeTemp(path, data)
		if err != nil {
			return err
		}
		done = append(done, staged{tmp, path})
	}
	// A directory where a model goes would fail its rename after the ones
	// before it succeeded: refuse it first.
	for _, st := range done {
		if fi, err := os.Stat(st.path); err == nil && fi.IsDir() {
			return fmt.Errorf("writing %s: it is a directory; nothing was written", st.path)
		}
	}
	// Keep each existing file, to put it back if a later rename fails:
	// under a second name (a hard link), else (no hard links there, or
	// protected_hardlinks) its bytes.
	type kept struct {
		had  bool
		link string
		data []byte
	}
	old := make([]kept, len(done))
	defer func() {
		for _, o := range old {
			if o.link != "" {
				os.Remove(o.link)
			}
		}
	}()
	for i, st := range done {
		if _, err := os.Lstat(st.path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		old[i].had = true
		if link := st.tmp + ".old"; linkFile(st.path, link) == nil {
			old[i].link = link
			continue
		}
		data, err := os.ReadFile(st.path)
		if err != nil {
			return fmt.Errorf("writing %s: keeping the file it replaces: %w; nothing was written", st.path, err)
		}
		old[i].data = data
	}
	for i, st := range done {
		if err := renameFile(st.tmp, st.path); err != nil {
			// Put back the files already replaced (or remove them where
			// there was none), newest first.
			var undo []error
			for k := i - 1; k >= 0; k-- {
				var rerr error
				switch o := &old[k]; {
				case !o.had:
					rerr = os.Remove(done[k].path)
				case o.link != "":
					if rerr = renameFile(o.link, done[k].path); rerr != nil {
						rerr = fmt.Errorf("%w (the old %s is kept as %s)", rerr, done[k].path, o.link)
					}
					o.link = "" // put back, or kept for the user
				default:
					rerr = writeFileAtomic(done[k].path, o.data)
				}
				if rerr != nil {
					undo = append(undo, rerr)
				}
			}
			if len(undo) > 0 {
				return fmt.Errorf("writing %s: %w; putting back the files already written failed too: %w", st.path, err, errors.Join(undo...))
			}
			return fmt.Errorf("writing %s: %w; every file was left as it was", st.path, err)
		}
	}
	for _, st := range done {
		SyncDir(filepath.Dir(st.path))
	}
	return nil
}

// SyncDir flushes a directory's entries (a rename into it) to disk, so that
// a crash just after a write does not lose the new file. It is best
// effort: where a directory cannot be opened or synced (Windows) the
// rename stands as written.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// CreateTemp creates a temporary file beside path, named
// ".<base>.tmp-<random>", for a write renamed over path once whole. Its
// mode is that of the file at path, which it replaces, else 0666 less the
// process's umask, as a file written in place would keep or get
// (os.CreateTemp's 0600 would make a model file or a plot unreadable to
// the others a umask lets read it; a forced 0644, readable to those a
// umask of 077 or the file's own mode keeps out).
func CreateTemp(path string) (*os.File, error) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+".tmp-"
	for try := 0; ; try++ {
		f, err := os.OpenFile(filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 36)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		if err != nil {
			return nil, err
		}
		if st, serr := os.Stat(path); serr == nil && st.Mode().IsRegular() {
			if err := f.Chmod(st.Mode().Perm()); err != nil {
				f.Close()
				os.Remove(f.Name())
				return nil, err
			}
		}
		return f, nil
	}
}

// EncodeModel is a model file's text: indented JSON in which each weight
// row, each edge and each bias list takes one line, so that a model file is
// readable and diffs well however large its layers are.
func EncodeModel(m *Model) ([]byte, error) {
	var b bytes.Buffer
	field := func(name string, v any, last bool) error {
		data, err := json.MarshalIndent(v, " ", " ")
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(&b, " %q: %s", name, data)
		if !last {
			b.WriteString(",")
		}
		b.WriteString("\n")
		return nil
	}
	compact := func(v any) (string, error) {
		data, err := json.Marshal(v)
		return string(data), err
	}
	b.WriteString("{\n")
	for _, f := range []struct {
		name string
		v    any
		skip bool
	}{
		{"format", m.Format, false}, {"version", m.Version, false}, {"name", m.Name, false},
		{"description", m.Description, m.Description == ""},
		{"inputs", m.Inputs, false},
	} {
		if f.skip {
			continue
		}
		if err := field(f.name, f.v, false); err != nil {
			return nil, err
		}
	}
	b.WriteString(" \"layers\": [\n")
	for l := range m.Layers {
		layer := &m.Layers[l]
		act, _ := compact(layer.Activation)
		biases, err := compact(layer.Biases)
		if err != nil {
			return nil, fmt.Errorf("layers[%d].biases: %w", l, err)
		}
		fmt.Fprintf(&b, "  {\n   \"activation\": %s,\n   \"biases\": %s,\n", act, biases)
		rows := []string{}
		key := "weights"
		if layer.IsSparse() {
			key = "edges"
			for _, e := range layer.Edges {
				r, err := compact(e)
				if err != nil {
					return nil, fmt.Errorf("layers[%d].edges: %w", l, err)
				}
				rows = append(rows, r)
			}
		} else {
			for _, w := range layer.Weights {
				r, err := compact(w)
				if err != nil {
					return nil, fmt.Errorf("layers[%d].weights: %w", l, err)
				}
				rows = append(rows, r)
			}
		}
		fmt.Fprintf(&b, "   %q: [", key)
		for i, r := range rows {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n    ")
			b.WriteString(r)
		}
		if len(rows) > 0 {
			b.WriteString("\n   ")
		}
		b.WriteString("]\n  }")
		if l < len(m.Layers)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString(" ],\n")
	if err := field("outputs", m.Outputs, false); err != nil {
		return nil, err
	}
	if m.InputEpsilon != nil {
		if err := field("input_epsilon", *m.InputEpsilon, false); err != nil {
			return nil, err
		}
	}
	if m.OutputThreshold != nil {
		if err := field("output_threshold", *m.OutputThreshold, false); err != nil {
			return nil, err
		}
	}
	if err := field("provenance", m.Provenance, true); err != nil {
		return nil, err
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// writeTemp writes data to a synced temporary file in path's directory and
// returns its name.
func writeTemp(path string, data []byte) (name string, err error) {
	tmp, err := CreateTemp(path)
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return tmp.Name(), nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := renameFile(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	SyncDir(filepath.Dir(path))
	return nil
}
