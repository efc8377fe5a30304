package e2e

import "syscall"

// dieWithTest has the kernel kill the agent if the test binary dies first.
func dieWithTest(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
