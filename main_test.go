package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/activation-scheduler/terraform-provider-activation/provider"
)

// TestAccDebugReattach serves the provider as -debug does and attaches the
// real OpenTofu to it with the printed TF_REATTACH_PROVIDERS line, for a
// configuration that names the provider by its source as users do (OpenTofu
// resolves it on registry.opentofu.org): init and apply must use the
// provider served here, not look for it in a registry.
func TestAccDebugReattach(t *testing.T) {
	tofu := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tofu == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is not set: this test drives the real OpenTofu (make test builds it)")
	}
	// A provider served for a debugger logs every request to its stderr;
	// keep the test's log to what it checks.
	t.Setenv("TF_LOG_SDK", "OFF")
	t.Setenv("TF_LOG_PROVIDER", "OFF")
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- serveDebug(ctx, w, providerserver.NewProtocol6(provider.New("test")()))
		w.Close()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	defer func() {
		cancel()
		go func() {
			for range lines { // drain until serveDebug closes w
			}
		}()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("serveDebug: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("serveDebug did not stop 10 s after its context ended")
		}
	}()

	quoted := regexp.MustCompile(`^\s*TF_REATTACH_PROVIDERS='(.*)'$`)
	var value string
	deadline := time.After(30 * time.Second)
	for value == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("serveDebug's output ended with no TF_REATTACH_PROVIDERS line")
			}
			if m := quoted.FindStringSubmatch(l); m != nil {
				value = m[1]
			}
		case <-deadline:
			t.Fatal("no TF_REATTACH_PROVIDERS line within 30 s")
		}
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal([]byte(value), &entries); err != nil {
		t.Fatalf("the reattach value is not a JSON object: %v\n%s", err, value)
	}
	for _, a := range []string{provider.OpenTofuAddress, provider.Address} {
		if _, ok := entries[a]; !ok {
			t.Errorf("the reattach value has no entry for %s: %s", a, value)
		}
	}

	dir := t.TempDir()
	cfg := `terraform {
  required_providers {
    activation = {
      source = "activation-scheduler/activation"
    }
  }
}

data "activation_model" "capacity" {
  source = "builtin:capacity"
}

output "name" {
  value = data.activation_model.capacity.name
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.tfrc")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(tofu, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+value, "TF_CLI_CONFIG_FILE="+empty,
			"TF_DATA_DIR="+filepath.Join(dir, ".terraform"), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tofu %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("init", "-no-color", "-input=false")
	run("apply", "-no-color", "-input=false", "-auto-approve")
	if got := strings.TrimSpace(run("output", "-no-color", "-raw", "name")); got != "capacity" {
		t.Fatalf("output name = %q, want capacity (the built-in capacity model, read by the provider served here)", got)
	}
}
