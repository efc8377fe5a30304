//go:build !unix

package main

import "os"

// reraise does nothing where signals cannot be sent to oneself: the
// process exits with exitInterrupted.
func reraise(os.Signal) {}
