//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// reraise ends the process on s, with the signal's default action, so that
// a shell sees the program killed by it. As process 1 (a container's
// entrypoint) it returns: the kernel drops a signal process 1 sends itself
// whose action is the default.
func reraise(s os.Signal) {
	sig, ok := s.(syscall.Signal)
	if !ok || os.Getpid() == 1 {
		return
	}
	signal.Reset(sig)
	if syscall.Kill(os.Getpid(), sig) == nil {
		time.Sleep(time.Second) // the signal ends the process meanwhile
	}
}
