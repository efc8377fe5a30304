// Command activation runs the activation engine's tools: the replay
// benchmark against production-style policies (simulate), the trainer of the
// two default processors (train) and one decision explained (explain).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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

const usage = `usage: activation <command> [flags]

commands:
  simulate  replay usage series and compare replica-count policies at a violation budget
  train     train the two default processors (admission and capacity) from usage series
  explain   decide one engine request and explain the decision

Run 'activation <command> -h' for a command's flags.
`

func main() {
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, isTerminal: isTerminal(os.Stdout)}
	os.Exit(run(os.Args[1:], e))
}

func run(args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "simulate":
		err = cmdSimulate(args[1:], e)
	case "train":
		err = cmdTrain(args[1:], e)
	case "explain":
		err = cmdExplain(args[1:], e)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(e.stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(e.stderr, "activation: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	var ue *usageError
	switch {
	case err == nil:
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

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet("activation "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// parse parses args and rejects stray positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
