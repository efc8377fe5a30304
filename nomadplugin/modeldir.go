package nomadplugin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// parseModelDir reads the strategy's model_dir: "" when unset, else a
// directory that exists, cleaned.
func parseModelDir(m map[string]string) (string, error) {
	v, ok := m[PluginKeyModelDir]
	if !ok {
		return "", nil
	}
	dir := strings.TrimSpace(v)
	if dir == "" {
		return "", cfgErr(PluginKeyModelDir, "is empty; name the directory the checks' model files are in, or leave the key out")
	}
	if !filepath.IsAbs(dir) {
		// It would be read from the agent's working directory, wherever
		// the agent was started.
		return "", cfgErr(PluginKeyModelDir, "is %q, a relative path: give the directory's absolute path", dir)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", cfgErr(PluginKeyModelDir, "is %q: %v", dir, err)
	}
	if !st.IsDir() {
		return "", cfgErr(PluginKeyModelDir, "is %q, not a directory", dir)
	}
	return filepath.Clean(dir), nil
}

// loadModel loads a host's model from source ("" is the role's built-in
// model) for the check, a model file confined to the plugin's model_dir
// when it has one.
func (c *strategyConfig) loadModel(h *hostConfig, source string) (*engine.Processor, error) {
	key := h.prefix + KeyModel
	path, root, err := confine(key, source, c.modelDir)
	if err != nil {
		return nil, err
	}
	if root != "" {
		return c.readConfined(key, source, h.role, path, root)
	}
	p, err := engine.Models.LoadFor(h.role, path)
	if err != nil {
		return nil, c.configError(err)
	}
	return p, nil
}

// readConfined loads the model file confine found at path inside root
// (loadConfined); when the read fails because the file or a directory on
// its path became a link leading out since confine looked, the error is
// confine's now, naming the key and the file outside.
func (c *strategyConfig) readConfined(key, source, role, path, root string) (*engine.Processor, error) {
	p, err := loadConfined(role, root, path)
	if err == nil {
		return p, nil
	}
	if _, _, now := confine(key, source, c.modelDir); now != nil {
		return nil, now
	}
	return nil, c.configError(err)
}

// loadConfined loads the model file path, inside the directory root (both
// with their links resolved, as confine gives them), through an *os.Root
// on root: a file or directory below root replaced by a link leading out
// between confine's look and the read is refused by the read itself. The
// root is opened by its path: root itself, or a directory above it,
// replaced in that window is not caught (that takes write access outside
// model_dir).
func loadConfined(role, root, path string) (*engine.Processor, error) {
	name, err := filepath.Rel(root, path)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, cfgErr(PluginKeyModelDir, "is %q: %v", root, unwrapPath(err, root))
	}
	defer r.Close()
	return engine.Models.LoadForIn(role, r, name, path)
}

// confine returns the file a model source names inside dir and dir, both
// with their symbolic links resolved (root is "" when the source is not
// confined), or an error naming key when it is outside: the source
// of a check's model is written by whoever writes the policy (a jobspec's
// scaling block included), and the agent reads it with its own rights. A
// relative path is taken in dir. The path must be inside dir as written
// (checked before the file system is asked anything, so that an error
// says nothing of files outside) and once its links are resolved.
// Built-in models, and any source when dir is "", pass as they are. It is
// checked at every load, as the file is read at every evaluation: a link
// changed since the check was parsed is seen (and loadConfined reads
// through root, so that one changed after this look is refused too).
func confine(key, source, dir string) (path, root string, err error) {
	if dir == "" || source == "" || strings.HasPrefix(source, engine.BuiltinPrefix) {
		return source, "", nil
	}
	path = modelPath(source, dir)
	outside := func(resolved string) error {
		which := ""
		if resolved != "" && resolved != source {
			which = ", which is " + resolved + ","
		}
		return cfgErr(key, "is %q%s outside the plugin's %s %s: a check's model file must be in that directory", source, which, PluginKeyModelDir, dir)
	}
	if !within(dir, path) {
		return "", "", outside("")
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", "", cfgErr(key, "is %q: %v", source, unwrapPath(err, path))
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", "", cfgErr(PluginKeyModelDir, "is %q: %v", dir, unwrapPath(err, dir))
	}
	if !within(realDir, resolved) {
		return "", "", outside(resolved)
	}
	return resolved, realDir, nil
}

// modelPath is the file a model source names: a relative one is taken in
// dir when there is one.
func modelPath(source, dir string) string {
	if dir == "" || source == "" || strings.HasPrefix(source, engine.BuiltinPrefix) || filepath.IsAbs(source) {
		return source
	}
	return filepath.Join(dir, source)
}

// within says whether path, absolute and clean, is dir or inside it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// unwrapPath is err without the path an *fs.PathError repeats when it is
// the one the message quotes (path); another (a link's missing target)
// is kept.
func unwrapPath(err error, path string) error {
	if pe, ok := err.(*os.PathError); ok && pe.Path == path {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}
