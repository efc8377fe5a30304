//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// reraise ends the process on s, with the signal's default action, so that
// a shell sees the program killed by it.
func reraise(s os.Signal) {
	sig, ok := s.(syscall.Signal)
	if !ok {
		return
	}
	signal.Reset(sig)
	if syscall.Kill(os.Getpid(), sig) == nil {
		time.Sleep(time.Second) // the signal ends the process meanwhile
	}
}
