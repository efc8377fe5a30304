//go:build !unix

package e2e

import (
	"errors"
	"os"
	"os/exec"
	"testing"
)

// inOwnGroup fails the test: the agent and the plugins it starts are
// stopped as one Unix process group, which this system does not have.
func inOwnGroup(t testing.TB, _ *exec.Cmd) {
	t.Fatal("the end-to-end tests run the agent and its plugins as one Unix process group; run them on Linux or macOS")
}

var errNoGroups = errors.New("no Unix process groups on this system")

func interruptGroup(*os.Process) error { return errNoGroups }

func killGroup(*os.Process) error { return errNoGroups }
