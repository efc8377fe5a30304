//go:build unix

// Package testfifo makes named pipes for tests, where the system has them.
package testfifo

import (
	"syscall"
	"testing"
)

// Mkfifo makes a named pipe at path (a source a reader must not block on).
func Mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}
