//go:build unix && !linux

package e2e

import "syscall"

// dieWithTest does nothing here: only Linux kills a child when its parent
// dies, so an agent whose test binary was killed outright outlives it
// (a test that ends, passing or failing, still stops it).
func dieWithTest(*syscall.SysProcAttr) {}
