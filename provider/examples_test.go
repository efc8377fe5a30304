package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// demoQuota is the quota examples/demo/main.tf sets for both hosts.
var demoQuota = engine.Quota{Min: 1, Max: 24, PerBranch: 1, Rounding: engine.RoundNearest}

// TestAccDemo plans and applies examples/demo as it is and checks that its
// counts are the engine's for the bundled observations, and that the
// rendered jobspec carries them.
func TestAccDemo(t *testing.T) {
	read := func(name string) engine.Observation {
		data, err := os.ReadFile(filepath.Join(demoDir, name))
		if err != nil {
			t.Fatal(err)
		}
		var o engine.Observation
		if err := json.Unmarshal(data, &o); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return o
	}
	fq, sq := demoQuota, demoQuota
	want := mustDecide(t, &engine.Request{First: read("first-host.json"), Second: read("second-host.json"), FirstQuota: &fq, SecondQuota: &sq})
	jobspec := knownvalue.StringFunc(func(s string) error {
		for _, g := range []struct {
			name string
			n    int
		}{{"pool-a", want.First.Containers}, {"pool-b", want.Second.Containers}} {
			block := fmt.Sprintf("group %q {", g.name)
			i := strings.Index(s, block)
			if i < 0 {
				return fmt.Errorf("jobspec has no %s", block)
			}
			if !strings.Contains(s[i:], fmt.Sprintf("count = %d\n", g.n)) {
				return fmt.Errorf("group %s does not have count = %d", g.name, g.n)
			}
		}
		return nil
	})
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		// The demo has its own provider block: the provider goes on the step.
		ProtoV6ProviderFactories: providerFactories,
		ConfigDirectory:          config.StaticDirectory(demoDir),
		ConfigStateChecks: append(decisionChecks("data.activation_container_counts.pools", want),
			statecheck.ExpectKnownOutputValue("first_containers", knownvalue.Int64Exact(int64(want.First.Containers))),
			statecheck.ExpectKnownOutputValue("second_containers", knownvalue.Int64Exact(int64(want.Second.Containers))),
			statecheck.ExpectKnownOutputValue("jobspec", jobspec),
		),
	}}})
}

// TestAccExamplesValidate runs `tofu validate` on every example directory
// against the provider built from this tree (dev_overrides), so the
// examples the docs show are valid configurations.
func TestAccExamplesValidate(t *testing.T) {
	accPreCheck(t)
	t.Parallel()
	tofu := os.Getenv(envTerraformPath)
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "terraform-provider-activation"), "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	rc := filepath.Join(work, "tofu.tfrc")
	writeFile(t, work, "tofu.tfrc", []byte(fmt.Sprintf(
		"provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n", "activation-scheduler/activation", bin)))
	dirs, err := filepath.Glob(filepath.Join("..", "examples", "data-sources", "*"))
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, filepath.Join("..", "examples", "provider"), demoDir)
	for _, src := range dirs {
		t.Run(filepath.Base(src), func(t *testing.T) {
			dst := t.TempDir()
			entries, err := os.ReadDir(src)
			if err != nil {
				t.Fatal(err)
			}
			hasTerraformBlock := false
			for _, e := range entries {
				data, err := os.ReadFile(filepath.Join(src, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				hasTerraformBlock = hasTerraformBlock || strings.Contains(string(data), "required_providers")
				writeFile(t, dst, e.Name(), data)
			}
			if !hasTerraformBlock {
				// Doc examples leave out the terraform block; name the source here.
				writeFile(t, dst, "zz_providers.tf", []byte("terraform {\n  required_providers {\n    activation = {\n      source = \"activation-scheduler/activation\"\n    }\n  }\n}\n"))
			}
			cmd := exec.Command(tofu, "validate", "-no-color")
			cmd.Dir = dst
			cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_DATA_DIR="+filepath.Join(dst, ".terraform"), "CHECKPOINT_DISABLE=1")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "The configuration is valid") {
				t.Fatalf("tofu validate %s: %v\n%s", src, err, out)
			}
		})
	}
}
