// Command activation runs the activation engine's tools: the replay
// benchmark against production-style policies (simulate), the trainer of the
// two default processors (train) and one decision explained (explain).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1   // the command failed
	exitUsage       = 2   // bad command line
	exitInterrupted = 130 // the user interrupted it (128 + SIGINT)
)

// env is what a command sees of the process, so tests can run commands
// in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// isTerminal reports whether stderr is a terminal: progress is drawn
	// there, apart from the results on stdout, which may be piped.
	isTerminal bool
	// ctx ends when the user interrupts the command (Ctrl-C, SIGTERM);
	// nil is never.
	ctx context.Context
}

// context is the command's context: it ends on an interrupt.
func (e env) context() context.Context {
	if e.ctx == nil {
		return context.Background()
	}
	return e.ctx
}

// interrupted says whether err ends a command the user interrupted.
func (e env) interrupted(err error) bool {
	return e.context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, errInterrupted))
}

// errInterrupted is returned by work that the user interrupted.
var errInterrupted = errors.New("interrupted")

// interruptible runs f and returns its error, or errInterrupted as soon as
// ctx ends (f, which cannot be stopped, is left to end with the process).
// Whatever the command created so far its deferred clean-ups remove.
func interruptible(ctx context.Context, f func() error) error {
	if ctx.Err() != nil {
		return errInterrupted // not started
	}
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errInterrupted
	}
}

// command is one subcommand: its name, a one-line summary and what runs it.
type command struct {
	name, summary string
	run           func(args []string, e env) error
	// stoppable: the command watches its context, so that an interrupt
	// stops it and it removes what it made; the others end on the
	// signal, as any program does.
	stoppable bool
}

// commands is the command table, in the order the usage lists them.
var commands = []command{
	{"simulate", "replay usage series and compare replica-count policies at a violation budget", cmdSimulate, true},
	{"train", "train the two default processors (admission and capacity) from usage series", cmdTrain, true},
	{"explain", "decide one engine request and explain the decision", cmdExplain, false},
	{"tune", "choose the model's shape by nested validation inside the training split", cmdTune, true},
	{"version", "print the version (also --version)", cmdVersion, false},
}

func usageText() string {
	var b strings.Builder
	b.WriteString("usage: activation <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'activation <command> -h' for a command's flags and examples.\n")
	return b.String()
}

func main() {
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, isTerminal: isTerminal(os.Stderr)}
	if len(os.Args) < 2 || !stoppable(os.Args[1]) {
		os.Exit(run(os.Args[1:], e))
	}
	// A stoppable command: the first interrupt ends its context, so that
	// it stops and removes what it made; a second one kills the process.
	// Then a command the signal stopped ends on it, as a shell expects of
	// an interrupted program (a loop running it stops too); one that had
	// finished or failed on its own keeps its exit code (afterSignal). SIGINT, when
	// the process was started with it ignored (a background job of a
	// shell), stays ignored (Go reports SIGTERM as never ignored).
	var watched []os.Signal
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		if !signal.Ignored(s) {
			watched = append(watched, s)
		}
	}
	if len(watched) == 0 {
		os.Exit(run(os.Args[1:], e))
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, watched...)
	ctx, cancel := context.WithCancel(context.Background())
	var got atomic.Value
	go func() {
		s := <-sigs
		got.Store(s)
		signal.Reset(watched...)
		// Said at once, before the command is told: it may take a moment
		// to stop, and a user who sees nothing interrupts again, which
		// kills it.
		fmt.Fprintf(e.stderr, "\nactivation %s: stopping (interrupt again to kill)\n", os.Args[1])
		cancel()
	}()
	e.ctx = ctx
	code := run(os.Args[1:], e)
	if s, ok := got.Load().(os.Signal); ok {
		var end bool
		code, end = afterSignal(code, s, e.stderr, os.Args[1])
		if end {
			reraise(s)
		}
	}
	os.Exit(code)
}

// afterSignal is the exit code of a command that got signal s and returned
// code, and whether the process should end on the signal instead. A
// command the signal stopped ends on it, as a shell expects of an
// interrupted program (a loop running it stops too), or, where the process
// cannot, with 128 + the signal's number. One that had finished its work
// when the signal came (its models or plots written) keeps its own code:
// ending on the signal would tell a script that nothing was done.
func afterSignal(code int, s os.Signal, stderr io.Writer, name string) (int, bool) {
	if code != exitInterrupted {
		if code == exitOK {
			fmt.Fprintf(stderr, "activation %s: the interrupt came once its work was done (kept)\n", name)
		}
		return code, false
	}
	if sig, ok := s.(syscall.Signal); ok {
		code = 128 + int(sig)
	}
	return code, true
}

// stoppable says whether the command called name stops on an interrupt.
func stoppable(name string) bool {
	for _, c := range commands {
		if c.name == name {
			return c.stoppable
		}
	}
	return false
}

func run(args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usageText())
		return exitUsage
	}
	switch args[0] {
	case "help":
		if len(args) > 2 {
			fmt.Fprintf(e.stderr, "activation help: %q after the command: help takes at most one command\n\n%s", args[2], usageText())
			return exitUsage
		}
		if len(args) == 2 && args[1] != "help" { // help COMMAND is COMMAND -h
			return run([]string{args[1], "-h"}, e)
		}
		fmt.Fprint(e.stdout, usageText())
		return exitOK
	case "-h", "-help", "--help":
		fmt.Fprint(e.stdout, usageText())
		return exitOK
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == args[0] {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		fmt.Fprintf(e.stderr, "activation: unknown command %q\n\n%s", args[0], usageText())
		return exitUsage
	}
	err := cmd.run(args[1:], e)
	var ue *usageError
	var ht *helpText
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ht):
		fmt.Fprint(e.stdout, ht.text)
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "activation %s: %v\n", args[0], err)
		return exitUsage
	case e.interrupted(err):
		fmt.Fprintf(e.stderr, "activation %s: interrupted; nothing written\n", args[0])
		return exitInterrupted
	default:
		fmt.Fprintf(e.stderr, "activation %s: %v\n", args[0], err)
		return exitError
	}
}

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// help is what a subcommand's -h prints above its flags.
type help struct {
	synopsis    string   // after "usage: activation <name> "
	description string   // a paragraph
	examples    []string // command lines, each with a comment line before it
}

// newFlags returns a flag set that reports errors instead of exiting and,
// given a help, whose -h gives the synopsis, the description, examples and
// the flags. It writes into a buffer: parse returns -h's text as a
// helpText, which run prints to standard output (so that `activation
// train -h | grep epochs` works), and a mistake's error alone.
func newFlags(name string, hs ...help) *flag.FlagSet {
	fs := flag.NewFlagSet("activation "+name, flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	if len(hs) == 0 {
		return fs
	}
	h := hs[0]
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: activation %s %s\n\n%s\n", name, h.synopsis, h.description)
		if len(h.examples) > 0 {
			fmt.Fprintf(w, "\nexamples:\n")
			for _, ex := range h.examples {
				fmt.Fprintf(w, "  %s\n", ex)
			}
		}
		fmt.Fprintf(w, "\nflags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// helpText is a subcommand's -h: its help, for standard output.
type helpText struct{ text string }

func (h *helpText) Error() string { return "help requested" }

// Unwrap makes a helpText a flag.ErrHelp.
func (h *helpText) Unwrap() error { return flag.ErrHelp }

// parse parses args and rejects stray positional arguments and a flag
// given more than once (the flag package keeps the last: `--traces a
// --traces b` replayed b alone).
func parse(fs *flag.FlagSet, args []string) error {
	buf, _ := fs.Output().(*bytes.Buffer)
	if buf != nil {
		buf.Reset()
	}
	given := map[string]int{}
	restore := countSets(fs, given)
	err := fs.Parse(args)
	restore()
	if err == nil {
		var twice []string
		fs.Visit(func(f *flag.Flag) { // in name order
			if given[f.Name] > 1 {
				twice = append(twice, f.Name)
			}
		})
		if len(twice) > 0 {
			hint := ""
			if slices.Contains(twice, "traces") {
				hint = "; several directories go in one comma-separated list: --traces DIR,DIR"
			}
			return usagef("flag -%s given %d times: give it once%s", twice[0], given[twice[0]], hint)
		}
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if buf != nil {
				return &helpText{buf.String()}
			}
			return err
		}
		return usagef("%v (%s -h lists the flags)", err, fs.Name())
	}
	if fs.NArg() > 0 {
		hint := ""
		if i := len(args) - fs.NArg(); i > 0 && isBoolFlag(fs, args[i-1]) {
			if _, err := strconv.ParseBool(fs.Arg(0)); err == nil {
				hint = fmt.Sprintf(": a boolean flag takes its value after =: write %s=%s", args[i-1], fs.Arg(0))
			}
		}
		return usagef("unexpected argument %q%s", fs.Arg(0), hint)
	}
	return nil
}

// isBoolFlag says whether arg is a boolean flag of fs written alone
// (-name or --name, no =value).
func isBoolFlag(fs *flag.FlagSet, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if name == arg || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// countSets makes every flag of fs count its settings in given, until the
// returned restore puts the flags back as they were (so that -h prints
// them as defined).
func countSets(fs *flag.FlagSet, given map[string]int) (restore func()) {
	orig := map[string]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		orig[f.Name] = f.Value
		f.Value = countingValue{Value: f.Value, name: f.Name, given: given}
	})
	restore = func() {
		fs.VisitAll(func(f *flag.Flag) { f.Value = orig[f.Name] })
	}
	if usage := fs.Usage; usage != nil {
		fs.Usage = func() {
			restore()
			usage()
		}
		prev := restore
		restore = func() {
			prev()
			fs.Usage = usage
		}
	}
	return restore
}

// countingValue is a flag's value that counts how often it is set.
type countingValue struct {
	flag.Value
	name  string
	given map[string]int
}

func (c countingValue) Set(s string) error {
	c.given[c.name]++
	err := c.Value.Set(s)
	if err == nil {
		return nil
	}
	// The flag package says only "parse error" or "value out of range" for
	// a number it cannot read: say what the flag takes.
	if g, ok := c.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case uint64, uint:
			return errors.New("want a whole number >= 0")
		case int, int64:
			return errors.New("want a whole number")
		case float64:
			return errors.New("want a number")
		case bool:
			return errors.New("want true or false (write --" + c.name + "=false: a boolean flag takes its value after =)")
		}
	}
	return err
}

func (c countingValue) String() string {
	if c.Value == nil {
		return ""
	}
	return c.Value.String()
}

// IsBoolFlag keeps a boolean flag one that takes no value.
func (c countingValue) IsBoolFlag() bool {
	b, ok := c.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// mkdirs makes directory path and its missing parents, as os.MkdirAll
// does, and returns the directories it made, deepest last.
func mkdirs(path string) (made []string, err error) {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		made = append([]string{p}, made...)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		removeMade(made)
		return nil, err
	}
	return made, nil
}

// removeMade removes the directories mkdirs made, deepest first, each only
// if it is empty.
func removeMade(made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		os.Remove(made[i])
	}
}
