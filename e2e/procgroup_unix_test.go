//go:build unix

package e2e

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// inOwnGroup starts cmd in a process group of its own, which the plugins
// the agent starts join, so that stopping the group stops them all.
func inOwnGroup(_ testing.TB, cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithTest(cmd.SysProcAttr)
}

// interruptGroup sends SIGINT to the group p leads.
func interruptGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGINT) }

// killGroup sends SIGKILL to the group p leads.
func killGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }
