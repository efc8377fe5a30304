// Package golden reads the engine's golden decision vectors: observations in,
// expected decisions out. The engine's tests keep them current; every front
// end (the command line, the Terraform data source, the Nomad strategy)
// checks that it gives the same decisions for the same requests.
package golden

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// Vector is one golden case.
type Vector struct {
	Name    string          `json:"name"`
	Request engine.Request  `json:"request"`
	Want    engine.Decision `json:"want"`
}

// Path returns the location of the golden file in the source tree. It is
// meant for tests, which run with the source present.
func Path() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("engine", "testdata", "golden.json")
	}
	return filepath.Join(filepath.Dir(file), "..", "testdata", "golden.json")
}

// Load reads the golden vectors at path.
func Load(path string) ([]Vector, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("golden vectors: %w", err)
	}
	var vs []Vector
	if err := json.Unmarshal(data, &vs); err != nil {
		return nil, fmt.Errorf("golden vectors %s: %w", path, err)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("golden vectors %s: no vectors", path)
	}
	return vs, nil
}
