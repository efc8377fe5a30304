package engine

import (
	"crypto/sha256"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
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

// Default model sources of the two hosts.
const (
	DefaultFirstModel  = BuiltinPrefix + BuiltinAdmission
	DefaultSecondModel = BuiltinPrefix + BuiltinCapacity
)

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
		m, err := parseModel(data, false) // TestBuiltinModelNamesExact
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

// DefaultModelFor returns the model source a host of role uses when none is
// given: the admission processor for the first host, the capacity
// processor for the second.
func DefaultModelFor(role string) string {
	if role == RoleFirst {
		return DefaultFirstModel
	}
	return DefaultSecondModel
}

// ModelCache compiles model sources and keeps them: a built-in model is
// compiled once; a file is read and hashed at every load and compiled
// again only when its content digest changed, so that a plugin deciding
// every few seconds compiles its model once and decides with what the
// file holds now, however it was written (renamed over, or rewritten in
// place with the same size and modification time, as cp -p or rsync
// --inplace may). Reading and hashing a model file costs well under a
// millisecond for the built-in models' size. A file that does not compile
// keeps its error until its content changes. It is safe for concurrent
// use.
type ModelCache struct {
	mu    sync.Mutex
	files map[string]*cachedModel
}

type cachedModel struct {
	sum  [sha256.Size]byte // the content's digest
	proc *Processor
	err  error // the file does not compile: it is not parsed again until it changes
}

// Models is the process-wide model cache every front end loads through.
var Models = &ModelCache{}

// Load resolves a model source: "builtin:<name>" for a built-in model,
// anything else is the path of a model file, which must be a regular file
// (a FIFO or a device would block or never end).
func (c *ModelCache) Load(source string) (*Processor, error) {
	if strings.TrimSpace(source) == "" {
		return nil, fmt.Errorf("model source is empty: want %s<name> or a file path", BuiltinPrefix)
	}
	if name, ok := strings.CutPrefix(source, BuiltinPrefix); ok {
		return Builtin(name)
	}
	return c.loadFile(nil, source, source)
}

// loadFile reads, hashes and compiles the model file name, opened through
// root when root is not nil (name is then relative to it), and keeps it
// under source, which errors name.
func (c *ModelCache) loadFile(root *os.Root, name, source string) (*Processor, error) {
	f, st, err := openRegular(root, name)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok && pe.Path == name {
			// The root's error names the file relative to it.
			err = &fs.PathError{Op: pe.Op, Path: source, Err: pe.Err}
		}
		return nil, &loadError{source: source, err: err}
	}
	defer f.Close()
	if st.Size() > MaxModelBytes {
		return nil, &loadError{source: source, err: modelErr("", "file is %d bytes, more than the limit of %d", st.Size(), MaxModelBytes)}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxModelBytes+1))
	if err != nil {
		return nil, &loadError{source: source, err: err}
	}
	sum := sha256.Sum256(data)
	c.mu.Lock()
	e := c.files[source]
	c.mu.Unlock()
	if e != nil && e.sum == sum {
		return e.proc, e.err
	}
	p, err := compile(data)
	if err != nil {
		// Remembered, so that a plugin deciding every few seconds does not
		// parse a bad file (up to MaxModelBytes) again at every decision.
		err = &loadError{source: source, err: err}
		c.store(source, &cachedModel{sum: sum, err: err})
		return nil, err
	}
	c.store(source, &cachedModel{sum: sum, proc: p})
	return p, nil
}

// loadError is why a model file does not load: "loading model <path>: ..."
// on its own, and only the cause inside a *ModelSourceError, which names
// the source already.
type loadError struct {
	source string
	err    error
}

func (e *loadError) Error() string { return "loading model " + e.source + ": " + e.cause() }

// cause is why, naming the source no more: a file system error on the
// source is its reason alone, and a model file's field its name and
// reason, without the "model: " a model error read alone starts with.
func (e *loadError) cause() string {
	if pe, ok := e.err.(*fs.PathError); ok && pe.Path == e.source {
		return pe.Err.Error()
	}
	if me, ok := e.err.(*ModelError); ok {
		return me.fieldReason()
	}
	return e.err.Error()
}

func (e *loadError) Unwrap() error { return e.err }

// compile parses and compiles a model file's bytes.
func compile(data []byte) (*Processor, error) {
	m, err := ParseModel(data)
	if err != nil {
		return nil, err
	}
	return NewProcessor(m)
}

// maxCachedFiles bounds the cache; past it the cache starts afresh.
const maxCachedFiles = 256

func (c *ModelCache) store(source string, e *cachedModel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil || len(c.files) >= maxCachedFiles {
		c.files = map[string]*cachedModel{}
	}
	c.files[source] = e
}

// LoadFor resolves the model source of a host of role ("" is the role's
// default) through the cache; a failure is a *ModelSourceError.
func (c *ModelCache) LoadFor(role, source string) (*Processor, error) {
	if source == "" {
		source = DefaultModelFor(role)
	}
	p, err := c.Load(source)
	return servingRole(role, source, p, err)
}

// LoadForIn is LoadFor of the model file name inside root's directory,
// opened through root: neither ".." nor a symbolic link takes the read
// outside the directory, whatever changes in it between a caller's own
// checks and the read. source names the file in errors and in the cache.
func (c *ModelCache) LoadForIn(role string, root *os.Root, name, source string) (*Processor, error) {
	p, err := c.loadFile(root, name, source)
	return servingRole(role, source, p, err)
}

// servingRole is a loaded model, or a *ModelSourceError when it did not
// load or cannot serve role.
func servingRole(role, source string, p *Processor, err error) (*Processor, error) {
	if err != nil {
		return nil, &ModelSourceError{Host: role, Source: source, Err: err}
	}
	if err := p.canServe(role); err != nil {
		return nil, &ModelSourceError{Host: role, Source: source, Err: err}
	}
	return p, nil
}

// LoadModelFile reads and validates a model file (uncached).
func LoadModelFile(path string) (*Model, error) {
	f, _, err := openRegular(nil, path)
	if err != nil {
		return nil, fmt.Errorf("loading model %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxModelBytes+1))
	if err != nil {
		return nil, fmt.Errorf("loading model %s: %w", path, err)
	}
	m, err := ParseModel(data)
	if err != nil {
		return nil, fmt.Errorf("loading model %s: %w", path, err)
	}
	return m, nil
}

// openRegular opens path for reading only if it is a regular file: it is
// opened without blocking (a FIFO would otherwise wait for a writer
// forever) and checked before anything is read. With a root, path is
// opened through it.
func openRegular(root *os.Root, path string) (*os.File, os.FileInfo, error) {
	const flags = os.O_RDONLY | syscall.O_NONBLOCK
	var f *os.File
	var err error
	if root != nil {
		f, err = root.OpenFile(path, flags, 0)
	} else {
		f, err = os.OpenFile(path, flags, 0)
	}
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("is %s, not a file", fileKind(st.Mode()))
	}
	return f, st, nil
}

// fileKind names what a path that is not a regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return fmt.Sprintf("of type %s", m.Type())
}
