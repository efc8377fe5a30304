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
	path, err := confine(h.prefix+KeyModel, source, c.modelDir)
	if err != nil {
		return nil, err
	}
	p, err := engine.Models.LoadFor(h.role, path)
	if err != nil {
		return nil, c.configError(err)
	}
	return p, nil
}

// confine returns the file a model source names inside dir, its symbolic
// links resolved, or an error naming key when it is outside: the source
// of a check's model is written by whoever writes the policy (a jobspec's
// scaling block included), and the agent reads it with its own rights. A
// relative path is taken in dir. Built-in models, and any source when dir
// is "", pass as they are. It is checked at every load, as the file is
// read at every evaluation: a link changed since the check was parsed is
// seen.
func confine(key, source, dir string) (string, error) {
	if dir == "" || source == "" || strings.HasPrefix(source, engine.BuiltinPrefix) {
		return source, nil
	}
	path := source
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", cfgErr(key, "is %q: %v", source, unwrapPath(err))
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", cfgErr(PluginKeyModelDir, "is %q: %v", dir, unwrapPath(err))
	}
	rel, err := filepath.Rel(realDir, resolved)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		which := ""
		if resolved != source {
			which = ", which is " + resolved + ","
		}
		return "", cfgErr(key, "is %q%s outside the plugin's %s %s: a check's model file must be in that directory", source, which, PluginKeyModelDir, realDir)
	}
	return resolved, nil
}

// unwrapPath is err without the path an *fs.PathError repeats (the
// message quotes the source already).
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}
