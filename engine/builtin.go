package engine

import (
	"embed"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// The default processors ship inside every binary. They are regenerated
// from the real usage series by `go generate ./engine` (see gen.go).
//
//go:embed models
var builtinFS embed.FS

// Names of the built-in models.
const (
	BuiltinAdmission = "admission"
	BuiltinCapacity  = "capacity"
)

// BuiltinPrefix marks a model source that names a built-in model.
const BuiltinPrefix = "builtin:"

var builtins struct {
	once  sync.Once
	procs map[string]*Processor
	err   error
}

func loadBuiltins() {
	builtins.procs = map[string]*Processor{}
	entries, err := builtinFS.ReadDir("models")
	if err != nil {
		builtins.err = fmt.Errorf("built-in models: %w", err)
		return
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := builtinFS.ReadFile("models/" + e.Name())
		if err != nil {
			builtins.err = fmt.Errorf("built-in model %s: %w", e.Name(), err)
			return
		}
		m, err := ParseModel(data)
		if err != nil {
			builtins.err = fmt.Errorf("built-in model %s: %w", e.Name(), err)
			return
		}
		p, err := NewProcessor(m)
		if err != nil {
			builtins.err = fmt.Errorf("built-in model %s: %w", e.Name(), err)
			return
		}
		builtins.procs[strings.TrimSuffix(e.Name(), ".json")] = p
	}
}

// Builtin returns the compiled built-in model called name.
func Builtin(name string) (*Processor, error) {
	builtins.once.Do(loadBuiltins)
	if builtins.err != nil {
		return nil, builtins.err
	}
	p, ok := builtins.procs[name]
	if !ok {
		return nil, fmt.Errorf("no built-in model %q (have %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	return p, nil
}

// BuiltinNames lists the built-in models.
func BuiltinNames() []string {
	builtins.once.Do(loadBuiltins)
	names := make([]string, 0, len(builtins.procs))
	for n := range builtins.procs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LoadSource resolves a model source: "builtin:<name>" for a built-in model,
// anything else is a path to a model file.
func LoadSource(source string) (*Processor, error) {
	if source == "" {
		return nil, fmt.Errorf("model source is empty: want %s<name> or a file path", BuiltinPrefix)
	}
	if name, ok := strings.CutPrefix(source, BuiltinPrefix); ok {
		return Builtin(name)
	}
	m, err := LoadModelFile(source)
	if err != nil {
		return nil, err
	}
	return NewProcessor(m)
}
