package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/internal/testfifo"
)

func validModel(t *testing.T) *Model {
	t.Helper()
	return testModel(
		[]Node{{Name: "slot_0", Countable: true}, {Name: "cpu_fit_max"}},
		[]Node{{Name: "o0", Countable: true}},
		0.1, 0.5,
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1, 2}, {0, -1}}, Biases: []float64{0, 0.5}},
		Layer{Activation: ActivationSigmoid, Weights: [][]float64{{1, 1}}, Biases: []float64{-0.25}},
	)
}

func validModelJSON(t *testing.T) map[string]any {
	t.Helper()
	m := testModel(
		[]Node{{Name: "x0", Countable: true}, {Name: "x1"}},
		[]Node{{Name: "o0", Countable: true}},
		0.1, 0.5,
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1, 2}, {0, -1}}, Biases: []float64{0, 0.5}},
		Layer{Activation: ActivationSigmoid, Weights: [][]float64{{1, 1}}, Biases: []float64{-0.25}},
	)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestParseModelErrorsNameTheField(t *testing.T) {
	layer := func(doc map[string]any, l int) map[string]any {
		return doc["layers"].([]any)[l].(map[string]any)
	}
	tests := []struct {
		name   string
		edit   func(doc map[string]any)
		raw    func(doc string) string // edits the marshalled document as text when set
		field  string
		reason string
	}{
		{name: "unknown version", edit: func(d map[string]any) { d["version"] = 2 }, field: "version", reason: "unknown version 2"},
		{name: "wrong format", edit: func(d map[string]any) { d["format"] = "onnx" }, field: "format", reason: `"onnx"`},
		{name: "no name", edit: func(d map[string]any) { d["name"] = "" }, field: "name", reason: "empty"},
		{name: "dimension mismatch", edit: func(d map[string]any) {
			layer(d, 1)["weights"] = []any{[]any{1.0, 1.0, 1.0}}
		}, field: "layers[1].weights[0]", reason: "dimension mismatch"},
		{name: "rows and biases differ", edit: func(d map[string]any) {
			layer(d, 0)["biases"] = []any{0.0}
		}, field: "layers[0].weights", reason: "2 rows but the layer has 1 biases"},
		{name: "NaN weight", raw: func(s string) string { return strings.Replace(s, `[1,2]`, `[NaN,2]`, 1) }, field: "", reason: "not a valid model document"},
		{name: "weight out of range", raw: func(s string) string { return strings.Replace(s, `[0,-1]`, `[1e400,-1]`, 1) }, field: "layers[0].weights", reason: "number 1e400 is not a number in range"},
		{name: "a layer's misspelt field", edit: func(d map[string]any) { layer(d, 1)["biasses"] = []any{0.0} }, field: "layers[1]", reason: `unknown field "biasses"`}, //nolint:misspell // the misspelling is the test
		{name: "layers not a list", edit: func(d map[string]any) { d["layers"] = "a" }, field: "layers", reason: "string is not a list (at byte"},
		{name: "truncated", raw: func(s string) string { return s[:len(s)/2] }, field: "", reason: "ends early"},
		{name: "empty", raw: func(string) string { return "" }, field: "", reason: "it is empty (nothing but white space)"},
		{name: "white space", raw: func(string) string { return " \n\t" }, field: "", reason: "it is empty"},
		{name: "a stray closing brace", raw: func(s string) string { return s + "}" }, field: "", reason: "trailing data"},
		{name: "unknown activation", edit: func(d map[string]any) { layer(d, 0)["activation"] = "gelu" }, field: "layers[0].activation", reason: `unknown activation "gelu"`},
		{name: "empty layer", edit: func(d map[string]any) {
			layer(d, 0)["weights"] = []any{}
			layer(d, 0)["biases"] = []any{}
		}, field: "layers[0].biases", reason: "empty layer"},
		{name: "no hidden layer", edit: func(d map[string]any) { d["layers"] = d["layers"].([]any)[1:] }, field: "layers", reason: "at least one hidden layer"},
		{name: "outputs do not match", edit: func(d map[string]any) { d["outputs"] = []any{} }, field: "outputs", reason: "lists 0 nodes but the last layer has 1"},
		{name: "duplicate input", edit: func(d map[string]any) {
			d["inputs"] = []any{map[string]any{"name": "x0"}, map[string]any{"name": "x0"}}
		}, field: "inputs[1].name", reason: "repeats"},
		{name: "negative epsilon", edit: func(d map[string]any) { d["input_epsilon"] = -1 }, field: "input_epsilon", reason: ">= 0"},
		{name: "no provenance", edit: func(d map[string]any) { d["provenance"] = map[string]any{} }, field: "provenance.method", reason: "how the model was made"},
		{name: "unknown field", edit: func(d map[string]any) { d["wieghts"] = 1 }, field: "", reason: "unknown field"}, //nolint:misspell // the misspelt field is the test

		{name: "too many parameters", edit: func(d map[string]any) {
			big := make([]any, 3000)
			for i := range big {
				big[i] = 0.0
			}
			var rows []any
			for j := 0; j < 1500; j++ {
				rows = append(rows, big)
			}
			in := make([]any, 3000)
			for i := range in {
				in[i] = map[string]any{"name": "x" + itoa(i)}
			}
			d["inputs"] = in
			layer(d, 0)["weights"] = rows
			layer(d, 0)["biases"] = make([]any, 1500)
			for i := range layer(d, 0)["biases"].([]any) {
				layer(d, 0)["biases"].([]any)[i] = 0.0
			}
		}, field: "layers", reason: "parameters"},
		{name: "trailing data", raw: func(s string) string { return s + " {}" }, field: "", reason: "trailing data"},
		// Go's decoder takes a name in any case and the last of two keys.
		{name: "a name in capitals", raw: func(s string) string { return strings.Replace(s, `"name":`, `"NAME":"x","name":`, 1) }, field: "", reason: `field inputs[0].NAME: names are case-sensitive: want "name"`},
		{name: "a name given twice", raw: func(s string) string {
			return strings.Replace(s, `"input_epsilon":`, `"input_epsilon":1,"input_epsilon":`, 1)
		}, field: "", reason: "field input_epsilon: given twice"},
		{name: "a layer's name in capitals", raw: func(s string) string { return strings.Replace(s, `"activation":`, `"ACTIVATION":`, 1) }, field: "", reason: `field layers[0].ACTIVATION: names are case-sensitive: want "activation"`},
		{name: "a layer field given twice", raw: func(s string) string {
			return strings.Replace(s, `"activation":`, `"activation":"relu","activation":`, 1)
		}, field: "", reason: "field layers[0].activation: given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := validModelJSON(t)
			if tc.edit != nil {
				tc.edit(doc)
			}
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			if tc.raw != nil {
				edited := tc.raw(string(data))
				if edited == string(data) {
					t.Fatal("the text edit did not apply")
				}
				data = []byte(edited)
			}
			m, err := ParseModel(data)
			if err == nil {
				t.Fatalf("model accepted: %+v", m)
			}
			var me *ModelError
			if !errors.As(err, &me) {
				t.Fatalf("error %v is not a *ModelError", err)
			}
			if me.Field != tc.field || !strings.Contains(me.Reason, tc.reason) {
				t.Fatalf("got field %q reason %q, want field %q and a reason containing %q", me.Field, me.Reason, tc.field, tc.reason)
			}
		})
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestDigestIsCanonical(t *testing.T) {
	doc := validModelJSON(t)
	a, _ := json.Marshal(doc)
	b, _ := json.MarshalIndent(doc, "", "    ")
	ma, err := ParseModel(a)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := ParseModel(b)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := ma.Digest()
	db, _ := mb.Digest()
	if da != db || !strings.HasPrefix(da, "sha256:") || len(da) != len("sha256:")+64 {
		t.Fatalf("digests %s and %s of the same model differ or are malformed", da, db)
	}
	// A UTF-8 byte order mark, as editors may write, is read past: the
	// same model, the same digest (it was refused: "invalid character 'ï'").
	mm, err := ParseModel(append([]byte("\xef\xbb\xbf"), b...))
	if err != nil {
		t.Fatalf("a model file with a byte order mark: %v", err)
	}
	if dm, _ := mm.Digest(); dm != da {
		t.Fatalf("a byte order mark changed the digest: %s vs %s", dm, da)
	}
	// Leaving a threshold at its default gives the same digest as writing
	// the default out.
	delete(doc, "output_threshold")
	c, _ := json.Marshal(doc)
	mc, err := ParseModel(c)
	if err != nil {
		t.Fatal(err)
	}
	if dc, _ := mc.Digest(); dc != da {
		t.Fatalf("defaulted threshold changed the digest: %s vs %s", dc, da)
	}
	mb.Layers[0].Weights[0][0] = 1.0000001
	if d2, _ := mb.Digest(); d2 == da {
		t.Fatal("changing a weight did not change the digest")
	}
}

func TestWriteModelFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	doc := validModelJSON(t)
	data, _ := json.Marshal(doc)
	m, err := ParseModel(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteModelFile(path, m); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	back, err := LoadModelFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := m.Digest()
	d2, _ := back.Digest()
	if d1 != d2 {
		t.Fatal("model changed on a round trip through a file")
	}
	// An invalid model is refused and the file on disk is left as it was,
	// with no temporary files behind.
	bad := *m
	bad.Version = 9
	if err := WriteModelFile(path, &bad); err == nil {
		t.Fatal("invalid model written")
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Fatal("failed write changed the existing file")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left %d files in the directory, want 1", len(entries))
	}
	// A directory that cannot be written: error, nothing created.
	if err := WriteModelFile(filepath.Join(dir, "missing", "m.json"), m); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	// A valid model whose last step, the rename over the old file, fails
	// (a crash there, a full disk): the old file stays whole and no
	// temporary file is left. A write in place would have changed it.
	other := *m
	other.Name = "renamed-model"
	renameFile = func(from, to string) error { return errors.New("injected rename failure") }
	t.Cleanup(func() { renameFile = os.Rename })
	if err := WriteModelFile(path, &other); err == nil || !strings.Contains(err.Error(), "injected rename failure") {
		t.Fatalf("a failed rename: error %v, want it", err)
	}
	renameFile = os.Rename
	after, _ = os.ReadFile(path)
	if string(before) != string(after) {
		t.Fatal("a failed rename changed the existing file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a failed rename left %d files in the directory, want 1", len(entries))
	}
}

func TestBuiltinModelsLoad(t *testing.T) {
	for _, name := range []string{BuiltinAdmission, BuiltinCapacity} {
		p, err := Models.Load(BuiltinPrefix + name)
		if err != nil {
			t.Fatal(err)
		}
		m := p.Model()
		if !strings.HasPrefix(m.Provenance.Method, "trained") || len(m.Provenance.Data) == 0 {
			t.Errorf("%s: provenance does not say it was trained from data: %+v", name, m.Provenance)
		}
		if p.CountableInputs() == 0 && p.CountableOutputs() == 0 {
			t.Errorf("%s has no countable slots", name)
		}
	}
	if _, err := Models.Load("builtin:nope"); err == nil || !strings.Contains(err.Error(), "admission") {
		t.Fatalf("unknown built-in: %v", err)
	}
	if _, err := Models.Load(""); err == nil {
		t.Fatal("empty source accepted")
	}
	if _, err := Models.Load(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestWriteModelFilesIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	doc := validModelJSON(t)
	data, _ := json.Marshal(doc)
	good, err := ParseModel(data)
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if err := WriteModelFiles(map[string]*Model{a: good, b: good}); err != nil {
		t.Fatal(err)
	}
	beforeA, _ := os.ReadFile(a)
	beforeB, _ := os.ReadFile(b)
	changed := *good
	changed.Name = "changed"
	bad := *good
	bad.Version = 7
	// One invalid model: neither file changes, no temporary files remain.
	if err := WriteModelFiles(map[string]*Model{a: &changed, b: &bad}); err == nil {
		t.Fatal("a set with an invalid model was written")
	}
	afterA, _ := os.ReadFile(a)
	afterB, _ := os.ReadFile(b)
	if string(afterA) != string(beforeA) || string(afterB) != string(beforeB) {
		t.Fatal("a failed set changed a file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("%d files in the directory, want 2", len(entries))
	}
}

// A target that is a directory is refused before any rename: the other
// file of the set keeps its old model.
func TestWriteModelFilesRefusesADirectory(t *testing.T) {
	dir := t.TempDir()
	data, _ := json.Marshal(validModelJSON(t))
	good, err := ParseModel(data)
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if err := WriteModelFile(a, good); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(a)
	changed := *good
	changed.Name = "changed"
	err = WriteModelFiles(map[string]*Model{a: &changed, b: &changed})
	if err == nil || !strings.Contains(err.Error(), "is a directory; nothing was written") {
		t.Fatalf("err = %v, want the directory refused", err)
	}
	if after, _ := os.ReadFile(a); string(after) != string(before) {
		t.Error("the other model file was replaced")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d entries in the directory, want 2 (no temporary file left)", len(entries))
	}
}

// A rename that fails midway puts back the files already replaced, and
// removes the ones that did not exist before; nothing else is left.
func TestWriteModelFilesPutsBack(t *testing.T) {
	data, _ := json.Marshal(validModelJSON(t))
	good, err := ParseModel(data)
	if err != nil {
		t.Fatal(err)
	}
	changed := *good
	changed.Name = "changed"
	for _, tc := range []struct {
		name    string
		exist   bool // a.json exists before
		noLinks bool // the file system makes no hard links (its bytes are kept)
	}{{"a file replaced", true, false}, {"a file replaced, no hard links", true, true}, {"a file new", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
			if tc.exist {
				if err := WriteModelFile(a, good); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(a)
			calls := 0
			renameFile = func(from, to string) error {
				if calls++; calls == 2 {
					return errors.New("injected rename failure")
				}
				return os.Rename(from, to)
			}
			t.Cleanup(func() { renameFile, linkFile = os.Rename, os.Link })
			if tc.noLinks {
				linkFile = func(string, string) error { return errors.New("operation not permitted") }
			}
			err := WriteModelFiles(map[string]*Model{a: &changed, b: &changed})
			if err == nil || !strings.Contains(err.Error(), "injected rename failure; every file was left as it was") {
				t.Fatalf("err = %v", err)
			}
			after, aerr := os.ReadFile(a)
			if tc.exist && string(after) != string(before) {
				t.Error("a.json was not put back")
			}
			if !tc.exist && aerr == nil {
				t.Error("a.json, new, was left behind")
			}
			var names []string
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				names = append(names, e.Name())
			}
			want := 0
			if tc.exist {
				want = 1
			}
			if len(names) != want {
				t.Errorf("directory holds %v, want %d file(s)", names, want)
			}
		})
	}
}

func TestSparseAndDenseLayersAreOneModel(t *testing.T) {
	in := []Node{{Name: "cpu_fit_max"}, {Name: "cpu_fit_mean"}}
	out := []Node{{Name: "o", Countable: true}}
	dense := testModel(in, out, DefaultInputEpsilon, 0.5,
		Layer{Activation: ActivationReLU, Weights: [][]float64{{1, 0}, {0, -2}}, Biases: []float64{0, 0.5}},
		Layer{Activation: ActivationSigmoid, Weights: [][]float64{{3, 0}}, Biases: []float64{-1}})
	sparse := testModel(in, out, DefaultInputEpsilon, 0.5,
		SparseLayer(ActivationReLU, []Edge{{To: 1, From: 1, W: -2}, {To: 0, From: 0, W: 1}}, []float64{0, 0.5}),
		SparseLayer(ActivationSigmoid, []Edge{{To: 0, From: 0, W: 3}}, []float64{-1}))
	dd, err := dense.Digest()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := sparse.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if dd != sd {
		t.Fatalf("the same edges dense and sparse give digests %s and %s", dd, sd)
	}
	// Written and read back, the sparse model is the same model.
	data, err := EncodeModel(sparse)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseModel(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if bd, _ := back.Digest(); bd != sd {
		t.Fatalf("round trip changed the digest: %s -> %s", sd, bd)
	}
	x := []float64{2, 0.1}
	for _, m := range []*Model{dense, back} {
		p, err := NewProcessor(m)
		if err != nil {
			t.Fatal(err)
		}
		an, err := p.Analyze(x, NewWorkspace(p))
		if err != nil {
			t.Fatal(err)
		}
		if got := an.Outputs[0]; math.Abs(got-1/(1+math.Exp(-5))) > 1e-12 {
			t.Fatalf("output %v", got)
		}
	}
}

func TestSparseLayerErrorsNameTheEdge(t *testing.T) {
	base := `{"format":"activation-model","version":1,"name":"m","inputs":[{"name":"cpu_fit_max"}],
	"layers":[%s,{"activation":"sigmoid","edges":[[0,0,1]],"biases":[0]}],
	"outputs":[{"name":"o","countable":true}],"provenance":{"method":"test"}}`
	tests := []struct{ layer, field string }{
		{`{"activation":"relu","edges":[[1,0,1]],"biases":[0]}`, "layers[0].edges[0]"},
		{`{"activation":"relu","edges":[[0,3,1]],"biases":[0]}`, "layers[0].edges[0]"},
		{`{"activation":"relu","edges":[[0,0,0]],"biases":[0]}`, "layers[0].edges[0]"},
		{`{"activation":"relu","edges":[[0,0,1],[0,0,2]],"biases":[0]}`, "layers[0].edges[1]"},
		{`{"activation":"relu","edges":[[0,0,1]],"weights":[[1]],"biases":[0]}`, "layers[0]"},
		{`{"activation":"relu","biases":[0]}`, "layers[0]"},
	}
	for _, tc := range tests {
		_, err := ParseModel([]byte(fmt.Sprintf(base, tc.layer)))
		var me *ModelError
		if !errors.As(err, &me) || me.Field != tc.field {
			t.Errorf("%s: %v, want an error on %s", tc.layer, err, tc.field)
		}
	}
	if _, err := ParseModel([]byte(fmt.Sprintf(base, `{"activation":"relu","edges":[[0,0,"x"]],"biases":[0]}`))); err == nil {
		t.Error("a non-numeric edge accepted")
	}
	// A decoding error names the edge and what is wrong with it: a weight
	// out of range is not blamed on the node indices.
	for _, tc := range []struct{ layer, field, reason string }{
		{`{"activation":"relu","edges":[[0,0,1],[0,0,1e309]],"biases":[0]}`, "layers[0].edges[1]", "weight 1e309 is not a number in range"},
		{`{"activation":"relu","edges":[[0,-1,1]],"biases":[0]}`, "layers[0].edges[0]", "whole node indices >= 0"},
		{`{"activation":"relu","edges":[[0,0]],"biases":[0]}`, "layers[0].edges[0]", "got 2 values"},
	} {
		_, err := ParseModel([]byte(fmt.Sprintf(base, tc.layer)))
		var me *ModelError
		if !errors.As(err, &me) || me.Field != tc.field || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: %v, want an error on %s saying %q", tc.layer, err, tc.field, tc.reason)
		}
	}
}

func TestOutputThresholdMustLeaveOutputsEmpty(t *testing.T) {
	for _, thr := range []float64{-1, 0, 1, 2} {
		m := testModel([]Node{{Name: "cpu_fit_max"}}, []Node{{Name: "o", Countable: true}}, DefaultInputEpsilon, thr,
			Layer{Activation: ActivationReLU, Weights: [][]float64{{1}}, Biases: []float64{0}},
			Layer{Activation: ActivationSigmoid, Weights: [][]float64{{1}}, Biases: []float64{0}})
		var me *ModelError
		if err := m.Validate(); !errors.As(err, &me) || me.Field != "output_threshold" {
			t.Errorf("sigmoid outputs with threshold %v: %v", thr, err)
		}
	}
}

func TestModelCacheReloadsOnlyChangedFiles(t *testing.T) {
	c := &ModelCache{}
	path := filepath.Join(t.TempDir(), "m.json")
	m := validModel(t)
	if err := WriteModelFile(path, m); err != nil {
		t.Fatal(err)
	}
	p1, err := c.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p2, _ := c.Load(path); p2 != p1 {
		t.Fatal("an unchanged file was compiled again")
	}
	// Same content rewritten (new modification time): same processor.
	time.Sleep(10 * time.Millisecond)
	if err := WriteModelFile(path, m); err != nil {
		t.Fatal(err)
	}
	if p3, _ := c.Load(path); p3 != p1 {
		t.Fatal("a file rewritten with the same content was compiled again")
	}
	// New content: a new processor.
	m2 := *m
	m2.Name = "changed"
	if err := WriteModelFile(path, &m2); err != nil {
		t.Fatal(err)
	}
	p4, err := c.Load(path)
	if err != nil || p4 == p1 || p4.Model().Name != "changed" {
		t.Fatalf("a changed file was not reloaded: %v, %v", p4, err)
	}
	// Another file renamed over it with the same size and modification
	// time (cp -p, rsync -t, tar, then mv): reloaded.
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	m3 := *m
	m3.Name = "chang3d" // the same length as "changed"
	next := filepath.Join(filepath.Dir(path), "next.json")
	if err := WriteModelFile(next, &m3); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(next, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if nst, err := os.Stat(next); err != nil || nst.Size() != st.Size() {
		t.Fatalf("premise: sizes %d and %v (%v)", st.Size(), nst, err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	p5, err := c.Load(path)
	if err != nil || p5.Model().Name != "chang3d" {
		t.Fatalf("a file renamed over the model with the same size and time was not reloaded: %v, %v", p5, err)
	}
	// The same file rewritten in place with other content of the same
	// size, its modification time put back (cp -p onto it, rsync
	// --inplace, a build with fixed timestamps): the same inode, size and
	// time, and still reloaded.
	st, err = os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inPlace := bytes.Replace(data, []byte(`"chang3d"`), []byte(`"chang4d"`), 1)
	if bytes.Equal(inPlace, data) {
		t.Fatal("premise: the name is not in the file")
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(inPlace, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if nst, err := os.Stat(path); err != nil || !os.SameFile(st, nst) || nst.Size() != st.Size() || !nst.ModTime().Equal(st.ModTime()) {
		t.Fatalf("premise: the file's identity, size or time moved (%v)", err)
	}
	p6, err := c.Load(path)
	if err != nil || p6.Model().Name != "chang4d" {
		t.Fatalf("a file rewritten in place with the same size and time was not reloaded: %v, %v", p6, err)
	}
}

// A file that does not compile is not parsed again until it changes: the
// same error comes back; once fixed, it loads.
func TestModelCacheRemembersAFailure(t *testing.T) {
	c := &ModelCache{}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := os.WriteFile(path, []byte(`{"format": "activation-model", "version": 1, "name": "x"`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err1 := c.Load(path)
	_, err2 := c.Load(path)
	if err1 == nil || err1 != err2 { //nolint:errorlint // the identity is the test: one parse, one error
		t.Fatalf("errors %v and %v: want one error, remembered", err1, err2)
	}
	time.Sleep(10 * time.Millisecond)
	if err := WriteModelFile(path, validModel(t)); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Load(path); err != nil || p == nil {
		t.Fatalf("the fixed file: %v", err)
	}
}

// TestLoadForIn: a model file read through a root loads when it is inside
// the root's directory, and is refused when ".." or a symbolic link takes
// it outside (not read: the outside file is a valid model); errors name
// the source the caller gives, once, not the name relative to the root.
func TestLoadForIn(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "models"), filepath.Join(base, "elsewhere")
	for _, d := range []string{dir, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(dir, "m.json"), filepath.Join(outside, "x.json")} {
		if err := WriteModelFile(p, validModel(t)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "x.json"), filepath.Join(dir, "out.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("m.json", filepath.Join(dir, "in.json")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, c := range []struct {
		name, file, want string // want "": it loads
	}{
		{"inside", "m.json", ""},
		{"a link inside to inside", "in.json", ""},
		{"a link leading out", "out.json", "escapes"},
		{"dot-dot", "../elsewhere/x.json", "escapes"},
		{"missing", "gone.json", "second host model /srv/gone.json: no such file or directory"},
		{"the directory", ".", "second host model /srv/.: is a directory, not a file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			source := "/srv/" + c.file // what the caller calls it
			p, err := (&ModelCache{}).LoadForIn(RoleSecond, root, c.file, source)
			switch {
			case c.want == "" && (err != nil || p == nil):
				t.Fatalf("LoadForIn: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("LoadForIn = %v, %v; want an error containing %q", p, err, c.want)
			case c.want != "" && strings.Count(err.Error(), c.file) != 1:
				t.Fatalf("error %q names %s other than once", err, c.file)
			}
		})
	}
}

// TestBuiltinModelNamesExact: the built-in models, parsed without the
// check of names (ParseModel's strict part), pass it.
func TestBuiltinModelNamesExact(t *testing.T) {
	entries, err := builtinFS.ReadDir("models")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := builtinFS.ReadFile("models/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseModel(data); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d built-in models, want 2", n)
	}
}

// TestLoadModelFileNotAFile: a source that is not a regular file says what
// it is, and nothing is read from it (a FIFO would block).
func TestLoadModelFileNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.fifo")
	testfifo.Mkfifo(t, fifo)
	for _, c := range []struct{ path, want string }{
		{dir, "is a directory, not a file"},
		{fifo, "is a named pipe, not a file"},
		{os.DevNull, "is a character device, not a file"},
	} {
		_, err := LoadModelFile(c.path)
		if err == nil || !strings.Contains(err.Error(), "loading model "+c.path+": "+c.want) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
}

// TestModelSourceErrorNamesTheSourceOnce: a host's model that does not load
// names its source once, then why (not "first host model m.json: loading
// model m.json: model: ..."); the load error read alone keeps the path, and
// the cause is still there to errors.As and errors.Is.
func TestModelSourceErrorNamesTheSourceOnce(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := filepath.Join(dir, "missing.json")
	for _, c := range []struct {
		name, source, want string
		is                 error
	}{
		{"missing", missing, "first host model " + missing + ": no such file or directory", fs.ErrNotExist},
		{"directory", dir, "first host model " + dir + ": is a directory, not a file", nil},
		{"wrong format", write("format.json", `{}`), `first host model ` + filepath.Join(dir, "format.json") + `: format: is "", want "activation-model"`, nil},
		{"empty", write("empty.json", ""), "first host model " + filepath.Join(dir, "empty.json") + ": not a valid model document: it is empty", nil},
		{"no such built-in", "builtin:nope", `first host model builtin:nope: no built-in model "nope"`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Models.LoadFor(RoleFirst, c.source)
			var se *ModelSourceError
			if !errors.As(err, &se) {
				t.Fatalf("%v: not a *ModelSourceError", err)
			}
			if got := err.Error(); !strings.HasPrefix(got, c.want) || strings.Count(got, c.source) != 1 {
				t.Errorf("got  %q\nwant %q..., the source once", got, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("%v: not %v", err, c.is)
			}
			if strings.HasPrefix(c.source, BuiltinPrefix) {
				return
			}
			// Alone, as the provider shows it beside the attribute, the
			// load error keeps the path.
			// without the source's host, and again naming the source once.
			if got := Reason(err); !strings.HasPrefix(got, "loading model "+c.source+": ") || strings.Count(got, c.source) != 1 || strings.Contains(got, "model: ") {
				t.Errorf("Reason: %q, want it to start with loading model %s, the source once", got, c.source)
			}
		})
	}
}

// TestEdgeJSON: an edge is three JSON numbers; a number in a string (which
// encoding/json's Number takes) is refused as every other quoted number of
// a model file is, and a message shows the edge on one line.
func TestEdgeJSON(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Edge
		err  string
	}{
		{`[2, 0, 0.5]`, Edge{To: 2, From: 0, W: 0.5}, ""},
		{`[0,1,-1e-3]`, Edge{To: 0, From: 1, W: -1e-3}, ""},
		{`[2, 0, "0.5"]`, Edge{}, `its weight is "0.5", not a number`},
		{`["2", 0, 0.5]`, Edge{}, `its to is "2", not a number`},
		{`[2, true, 0.5]`, Edge{}, `its from is true, not a number`},
		{`[2, 0, null]`, Edge{}, `its weight is null, not a number`},
		{"[\n  2,\n  0,\n  1e400\n]", Edge{}, `an edge's weight 1e400 is not a number in range: got [2,0,1e400]`},
		{`[0.5, 0, 0.1]`, Edge{}, `whole node indices >= 0: got [0.5,0,0.1]`},
		{`[1, 2]`, Edge{}, `got 2 values, [1,2]`},
		{`{"to": 1}`, Edge{}, `an edge is [to, from, weight]: got {"to":1}`},
	} {
		var e Edge
		err := json.Unmarshal([]byte(c.in), &e)
		switch {
		case c.err == "" && (err != nil || e != c.want):
			t.Errorf("%s: %+v, %v; want %+v", c.in, e, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: %v; want one line holding %q", c.in, err, c.err)
		}
	}
}
