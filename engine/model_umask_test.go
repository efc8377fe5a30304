//go:build unix

package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestModelFilesFollowTheUmask: a model file written is as readable as a
// file the process creates in place: 0666 less its umask (0644 under 022,
// 0600 under 077), not os.CreateTemp's 0600 nor a fixed 0644. (The umask
// is the process's: this test does not run in parallel.)
func TestModelFilesFollowTheUmask(t *testing.T) {
	data, _ := json.Marshal(validModelJSON(t))
	m, err := ParseModel(data)
	if err != nil {
		t.Fatal(err)
	}
	// write writes the model to path under umask mask and gives the
	// file's mode.
	write := func(path string, mask int) os.FileMode {
		t.Helper()
		old := syscall.Umask(mask)
		err := WriteModelFiles(map[string]*Model{path: m})
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	for _, mask := range []int{0o022, 0o077, 0o027, 0o002} {
		if got, want := write(filepath.Join(t.TempDir(), "m.json"), mask), os.FileMode(0o666&^mask); got != want {
			t.Errorf("umask %03o: mode %v, want %v", mask, got, want)
		}
	}
	// A file written again keeps its own mode, as one written in place
	// would: a model kept private stays so under a looser umask.
	path := filepath.Join(t.TempDir(), "m.json")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if got := write(path, 0o002); got != 0o640 {
		t.Errorf("a model file of mode 0640 written again: %v", got)
	}
}
