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
	if !strings.Contains(stderr.String(), "activation train: stopping (interrupt again to kill)") {
		t.Errorf("stderr %q; want it to say at once that it is stopping", stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted; nothing written") {
		t.Errorf("stderr %q; want it to say it was interrupted", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(parent, "new")); !os.IsNotExist(err) {
		t.Errorf("the directories made for --out are left (stat: %v)", err)
	}
}

// TestAfterSignal: a command that finished its work before the signal
// came keeps its exit code (train ended on SIGTERM, 143, after writing
// both models, and a script read that as nothing written); one the signal
// stopped ends on it.
func TestAfterSignal(t *testing.T) {
	for _, c := range []struct {
		name     string
		code     int
		want     int
		end      bool
		stderrIs string
	}{
		{"stopped by it", exitInterrupted, 128 + int(syscall.SIGTERM), true, ""},
		{"done before it", exitOK, exitOK, false, "activation train: the interrupt came once its work was done (kept)\n"},
		{"failed before it", exitError, exitError, false, ""},
		{"a usage error", exitUsage, exitUsage, false, ""},
	} {
		var stderr bytes.Buffer
		code, end := afterSignal(c.code, syscall.SIGTERM, &stderr, "train")
		if code != c.want || end != c.end || stderr.String() != c.stderrIs {
			t.Errorf("%s: code %d, end on the signal %v, stderr %q; want %d, %v, %q", c.name, code, end, stderr.String(), c.want, c.end, c.stderrIs)
		}
	}
}
