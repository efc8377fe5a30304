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
	for _, mask := range []int{0o022, 0o077, 0o027, 0o002} {
		old := syscall.Umask(mask)
		path := filepath.Join(t.TempDir(), "m.json")
		err := WriteModelFiles(map[string]*Model{path: m})
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := st.Mode().Perm(), os.FileMode(0o666&^mask); got != want {
			t.Errorf("umask %03o: mode %v, want %v", mask, got, want)
		}
	}
}
