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

// TestFilesFollowTheUmask: a plot and a trained model file are as readable
// as a file made in place under the process's umask (0600 under 077), not
// a fixed 0644. (The umask is the process's: not in parallel.)
func TestFilesFollowTheUmask(t *testing.T) {
	dir := seriesDir(t, 3, 2500)
	out := t.TempDir()
	plot := filepath.Join(out, "p.png")
	models := filepath.Join(out, "models")
	old := syscall.Umask(0o077)
	code, _, stderr := runCmd(t, "", false, "simulate", "--traces", dir, "--split", "all", "--plot", plot)
	code2, _, stderr2 := runCmd(t, "", false, "train", "--traces", dir, "--out", models, "--epochs", "1", "--patience", "1", "--quiet")
	syscall.Umask(old)
	if code != exitOK || code2 != exitOK {
		t.Fatalf("simulate exit %d: %s; train exit %d: %s", code, stderr, code2, stderr2)
	}
	files, _ := filepath.Glob(filepath.Join(models, "*.json"))
	if len(files) == 0 {
		t.Fatal("train wrote no model file")
	}
	for _, p := range append([]string{plot}, files...) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v under umask 077, want -rw-------", filepath.Base(p), st.Mode().Perm())
		}
	}
}
