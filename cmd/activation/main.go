// Command activation runs the activation engine's tools: the replay
// benchmark against production-style policies (simulate), the trainer of the
// two default processors (train) and one decision explained (explain).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // bad command line
)

// env is what a command sees of the process, so tests can run commands
// in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// isTerminal reports whether stdout is a terminal (for the progress bar).
	isTerminal bool
}

// command is one subcommand: its name, a one-line summary and what runs it.
type command struct {
	name, summary string
	run           func(args []string, e env) error
}

// commands is the command table, in the order the usage lists them.
var commands = []command{
	{"simulate", "replay usage series and compare replica-count policies at a violation budget", cmdSimulate},
	{"train", "train the two default processors (admission and capacity) from usage series", cmdTrain},
	{"explain", "decide one engine request and explain the decision", cmdExplain},
	{"tune", "choose the model's shape by nested validation inside the training split", cmdTune},
	{"version", "print the version (also --version)", cmdVersion},
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
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, isTerminal: isTerminal(os.Stdout)}
	os.Exit(run(os.Args[1:], e))
}

func run(args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usageText())
		return exitUsage
	}
	switch args[0] {
	case "help":
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

// parse parses args and rejects stray positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	buf, _ := fs.Output().(*bytes.Buffer)
	if buf != nil {
		buf.Reset()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if buf != nil {
				return &helpText{buf.String()}
			}
			return err
		}
		return usagef("%v (%s -h lists the flags)", err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
