//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptEndsOnTheSignal: the real binary, signalled while it
// trains, removes the directories it made for --out and ends on the
// signal (a shell loop running it then stops, as for any program), not
// with an exit status.
func TestInterruptEndsOnTheSignal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "activation")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	parent := t.TempDir()
	out := filepath.Join(parent, "new", "models")
	// Training this takes seconds (early stopping ends it, not --epochs);
	// the signal goes as soon as --out is made.
	cmd := exec.Command(bin, "train", "--traces", seriesDir(t, 6, 4000), "--out", out, "--epochs", "500", "--restarts", "2", "--quiet")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// --out is made before the series are read and the training starts.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(out); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("--out was never made: %s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("wait: %v; want the process ended by SIGTERM (stderr %q): did the training end before the signal?", err, stderr.String())
	}
	ws, _ := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("ended with %v (exit status %d); want killed by SIGTERM after its clean-up", ee, ws.ExitStatus())
	}
	if !strings.Contains(stderr.String(), "interrupted; nothing written") {
		t.Errorf("stderr %q; want it to say it was interrupted", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(parent, "new")); !os.IsNotExist(err) {
		t.Errorf("the directories made for --out are left (stat: %v)", err)
	}
}
