//go:build !unix

package testfifo

import "testing"

// Mkfifo skips the test: this system has no named pipes in its file system.
func Mkfifo(t testing.TB, path string) {
	t.Helper()
	t.Skipf("no named pipes here (%s)", path)
}
