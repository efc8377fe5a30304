package provider

import (
	"archive/zip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
)

// TestAccFilesystemMirror installs the provider as the README says for a
// release's zip: the zip, named as the release names it and holding the
// binary the release builds, in a directory laid out as a registry mirror,
// a CLI configuration whose filesystem_mirror names it, then `tofu init`
// and `tofu plan` with the real OpenTofu. The lock file must record the
// provider at its version with a hash, and the plan must run the
// installed provider.
func TestAccFilesystemMirror(t *testing.T) {
	accPreCheck(t)
	t.Parallel()
	tofu := os.Getenv(envTerraformPath)
	const version = "0.0.1-mirror"
	work := t.TempDir()
	bin := filepath.Join(work, "build", "terraform-provider-activation_v"+version)
	build := exec.Command("go", "build", "-ldflags", "-X github.com/activation-scheduler/terraform-provider-activation/internal/version.Version="+version, "-o", bin, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	mirror := filepath.Join(work, "mirror")
	dir := filepath.Join(mirror, "registry.opentofu.org", "activation-scheduler", "activation")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeZip(t, filepath.Join(dir, fmt.Sprintf("terraform-provider-activation_%s_%s_%s.zip", version, runtime.GOOS, runtime.GOARCH)), bin)
	rc := writeFile(t, work, "mirror.tfrc", []byte(fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["registry.opentofu.org/activation-scheduler/activation"]
  }
  direct {
    exclude = ["registry.opentofu.org/activation-scheduler/activation"]
  }
}
`, mirror)))
	cfg := filepath.Join(work, "cfg")
	if err := os.Mkdir(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, "main.tf", []byte(fmt.Sprintf(`terraform {
  required_providers {
    activation = {
      source  = "activation-scheduler/activation"
      version = %q
    }
  }
}

data "activation_model" "capacity" {
  source = "builtin:capacity"
}

output "digest" {
  value = data.activation_model.capacity.digest
}
`, version)))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(tofu, append(args, "-no-color")...)
		cmd.Dir = cfg
		cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tofu %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("init")
	lock, err := os.ReadFile(filepath.Join(cfg, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?s)provider "registry.opentofu.org/activation-scheduler/activation" \{\s*version\s*= "` + regexp.QuoteMeta(version) + `".*?"h1:[A-Za-z0-9+/=]+"`)
	if !want.Match(lock) {
		t.Fatalf("the lock file does not record the provider at %s with a hash:\n%s", version, lock)
	}
	out := run("plan")
	p, err := engine.Builtin(engine.BuiltinCapacity)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, fmt.Sprintf("digest = %q", p.Digest())) {
		t.Fatalf("the plan does not show the built-in capacity model's digest %s:\n%s", p.Digest(), out)
	}
}

// writeZip writes a zip at path holding the file src under its base name,
// executable, as a release's provider zip holds its binary.
func writeZip(t *testing.T, path, src string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: filepath.Base(src), Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
