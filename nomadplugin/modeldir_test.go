package nomadplugin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// writeModel writes the built-in capacity model to path.
func writeModel(t *testing.T, path string) {
	t.Helper()
	p, err := engine.Builtin(engine.BuiltinCapacity)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.WriteModelFile(path, p.Model()); err != nil {
		t.Fatal(err)
	}
}

// TestConfine: with a model_dir, a check's model file must resolve inside
// it (a relative path is taken in it); a path or a link leading out is
// refused naming the key; built-in models pass.
func TestConfine(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir()) // the paths as the messages resolve them
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "models")
	outside := filepath.Join(root, "elsewhere")
	for _, d := range []string{dir, outside, filepath.Join(dir, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeModel(t, filepath.Join(dir, "m.json"))
	writeModel(t, filepath.Join(dir, "sub", "n.json"))
	writeModel(t, filepath.Join(outside, "x.json"))
	if err := os.Symlink(filepath.Join(outside, "x.json"), filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "m.json"), filepath.Join(outside, "in.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere.json"), filepath.Join(dir, "dangling.json")); err != nil {
		t.Fatal(err)
	}
	linkedDir := filepath.Join(root, "linked-models")
	if err := os.Symlink(dir, linkedDir); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, source, dir string
		want              string // the path returned, or with err the error's text
		err               bool
	}{
		{"no model_dir: anything", "/etc/passwd", "", "/etc/passwd", false},
		{"built-in", "builtin:capacity", dir, "builtin:capacity", false},
		{"the default", "", dir, "", false},
		{"inside", filepath.Join(dir, "m.json"), dir, filepath.Join(dir, "m.json"), false},
		{"relative: taken in model_dir", "sub/n.json", dir, filepath.Join(dir, "sub", "n.json"), false},
		{"a link from outside to inside: outside as written", filepath.Join(outside, "in.json"), dir, `config "first_model": is "` + filepath.Join(outside, "in.json") + `" outside the plugin's model_dir`, true},
		{"a missing file outside: no word of its existence", filepath.Join(outside, "gone.json"), dir, `config "first_model": is "` + filepath.Join(outside, "gone.json") + `" outside the plugin's model_dir`, true},
		{"a link inside to a missing file: its target named", "dangling.json", dir, filepath.Join(dir, "nowhere.json"), true},
		{"model_dir itself a link", "m.json", linkedDir, filepath.Join(dir, "m.json"), false},
		{"outside", filepath.Join(outside, "x.json"), dir, `config "first_model": is "` + filepath.Join(outside, "x.json") + `" outside the plugin's model_dir ` + dir + `: a check's model file must be in that directory`, true},
		{"relative, climbing out", "../elsewhere/x.json", dir, "outside the plugin's model_dir", true},
		{"a link inside leading out", "link.json", dir, `is "link.json", which is ` + filepath.Join(outside, "x.json") + ", outside", true},
		{"model_dir itself", dir, dir, "", false},
		{"missing", "gone.json", dir, `config "first_model": is "gone.json": lstat: no such file or directory`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := confine(PrefixFirst+KeyModel, c.source, c.dir)
			switch {
			case c.err && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("confine = %q, %v; want an error containing %q", got, err, c.want)
			case !c.err && err != nil:
				t.Fatalf("confine: %v", err)
			case !c.err && c.want != "" && got != c.want:
				t.Fatalf("confine = %q, want %q", got, c.want)
			}
			var ce *ConfigError
			if c.err && (!errors.As(err, &ce) || ce.Key != PrefixFirst+KeyModel) {
				t.Fatalf("error %v does not name %s", err, PrefixFirst+KeyModel)
			}
		})
	}
}

// TestConfinedReadRefusesASwap: a file, or a directory on its path, that
// confine found inside model_dir and that is replaced by a link leading out
// before the read is refused by the read itself (the read goes through an
// *os.Root on model_dir), and the check's error names its key as confine
// would now; the model outside is never loaded.
func TestConfinedReadRefusesASwap(t *testing.T) {
	for _, swap := range []struct{ name, replaced, target string }{
		{"the file", "sub/m.json", "x.json"},
		{"a directory on its path", "sub", ""},
	} {
		t.Run(swap.name, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			dir, outside := filepath.Join(base, "models"), filepath.Join(base, "elsewhere")
			for _, d := range []string{filepath.Join(dir, "sub"), outside} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeModel(t, filepath.Join(dir, "sub", "m.json"))
			writeModel(t, filepath.Join(outside, "m.json"))
			writeModel(t, filepath.Join(outside, "x.json"))
			key := PrefixSecond + KeyModel
			path, root, err := confine(key, "sub/m.json", dir)
			if err != nil || root != dir || path != filepath.Join(dir, "sub", "m.json") {
				t.Fatalf("confine = %q, %q, %v; want the file inside and the directory", path, root, err)
			}
			// The swap, after confine looked.
			replaced := filepath.Join(dir, filepath.FromSlash(swap.replaced))
			if err := os.RemoveAll(replaced); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, swap.target), replaced); err != nil {
				t.Fatal(err)
			}
			if _, err := loadConfined(engine.RoleSecond, root, path); err == nil {
				t.Fatal("the read followed a link out of model_dir")
			}
			// The check's read, with what confine gave before the swap:
			// refused, naming the key and the file outside as confine
			// now sees it (not the root's "path escapes from parent").
			c := &strategyConfig{modelDir: dir}
			_, err = c.readConfined(key, "sub/m.json", engine.RoleSecond, path, root)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != key || !strings.Contains(err.Error(), "outside the plugin's model_dir") {
				t.Fatalf("readConfined after the swap: %v; want an error on %s saying the file is outside", err, key)
			}
			// And a check loaded after it: confine refuses it first.
			h := &hostConfig{role: engine.RoleSecond, prefix: PrefixSecond}
			if _, err = c.loadModel(h, "sub/m.json"); !errors.As(err, &ce) || ce.Key != key || !strings.Contains(err.Error(), "outside the plugin's model_dir") {
				t.Fatalf("loadModel after the swap: %v; want an error on %s saying the file is outside", err, key)
			}
		})
	}
}

// TestModelDir: the strategy's model_dir, set by the agent's plugin block,
// confines every check's model file: a check whose model is outside fails
// naming its key, at every evaluation, and one inside decides; the key
// itself must name a directory.
func TestModelDir(t *testing.T) {
	w := newWorld(t, 1, 1)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	writeModel(t, filepath.Join(dir, "capacity.json"))
	writeModel(t, filepath.Join(outside, "capacity.json"))
	file := filepath.Join(dir, "capacity.json")
	for _, c := range []struct {
		name, value, want string
	}{
		{"empty", " ", `config "model_dir": is empty`},
		{"relative", "models", `config "model_dir": is "models", a relative path: give the directory's absolute path`},
		{"missing", filepath.Join(dir, "gone"), `config "model_dir": is "` + filepath.Join(dir, "gone") + `": stat`},
		{"a file", file, `config "model_dir": is "` + file + `", not a directory`},
	} {
		if err := NewStrategy(nil).SetConfig(map[string]string{AgentKeyNomadAddress: w.s.URL(), PluginKeyModelDir: c.value}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: SetConfig: %v, want %q", c.name, err, c.want)
		}
	}
	st := NewStrategy(nil)
	if err := st.SetConfig(map[string]string{AgentKeyNomadAddress: w.s.URL(), PluginKeyModelDir: dir}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		model string
		err   string
	}{
		{"capacity.json", ""},
		{filepath.Join(dir, "capacity.json"), ""},
		{filepath.Join(outside, "capacity.json"), `config "second_model": is "` + filepath.Join(outside, "capacity.json") + `"`},
	} {
		_, err := st.Run(newEval("modeldir", withKeys(splitConfig(), PrefixSecond+KeyModel, c.model)), 2)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.model, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "outside the plugin's model_dir")):
			t.Errorf("%s: %v, want %q", c.model, err, c.err)
		}
	}
	// A link checked at the check's first run and retargeted after it is
	// checked again at the next run (the config is cached, the model is
	// not).
	link := filepath.Join(dir, "current.json")
	if err := os.Symlink(filepath.Join(dir, "capacity.json"), link); err != nil {
		t.Fatal(err)
	}
	cfg := withKeys(splitConfig(), PrefixSecond+KeyModel, "current.json")
	if _, err := st.Run(newEval("relinked", cfg), 2); err != nil {
		t.Fatalf("the link inside: %v", err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "capacity.json"), link); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Run(newEval("relinked", cfg), 2); err == nil || !strings.Contains(err.Error(), `is "current.json", which is `+filepath.Join(outside, "capacity.json")+`, outside the plugin's model_dir`) {
		t.Fatalf("the link retargeted outside: %v", err)
	}
	// Without model_dir, the file outside is read as before.
	free := NewStrategy(nil)
	if err := free.SetConfig(map[string]string{AgentKeyNomadAddress: w.s.URL()}); err != nil {
		t.Fatal(err)
	}
	if _, err := free.Run(newEval("free", withKeys(splitConfig(), PrefixSecond+KeyModel, filepath.Join(outside, "capacity.json"))), 2); err != nil {
		t.Errorf("no model_dir: %v", err)
	}
}
