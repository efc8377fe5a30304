package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// demoQuota is the quota examples/demo/main.tf sets for both hosts.
var demoQuota = testsupport.Quota(1, 24, 1, engine.RoundNearest)

// jobGroup is one task group of a rendered jobspec.
type jobGroup struct {
	name, node                        string
	count, cpu, memoryMB, memoryMaxMB int
}

// groupRE finds a group of the demo's jobspec with its node constraint,
// count and resources.
var groupRE = regexp.MustCompile(`(?s)group "([^"]+)" \{.*?count = (\d+).*?value\s*= "([^"]+)".*?resources \{\s*cpu\s*= (\d+)\s*memory\s*= (\d+)\s*memory_max\s*= (\d+)\s*\}`)

func parseJobspec(s string) ([]jobGroup, error) {
	var out []jobGroup
	for _, m := range groupRE.FindAllStringSubmatch(s, -1) {
		g := jobGroup{name: m[1], node: m[3]}
		for i, dst := range []*int{&g.count, &g.cpu, &g.memoryMB, &g.memoryMaxMB} {
			n, err := strconv.Atoi(m[[]int{2, 4, 5, 6}[i]])
			if err != nil {
				return nil, err
			}
			*dst = n
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no task group with a count and resources in the jobspec:\n%s", s)
	}
	return out, nil
}

// TestAccDemo plans and applies examples/demo as it is and checks that its
// counts are the engine's for the bundled observations, and that the
// rendered jobspec is placeable: for each task group, count x the task's
// reservation fits its host's allocatable resources less what other jobs
// reserve there, as Nomad's scheduler requires.
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
	hosts := map[string]engine.Observation{}
	for _, f := range []string{"first-host.json", "second-host.json"} {
		o := read(f)
		hosts[o.Host] = o
	}
	want := mustDecide(t, &engine.Request{First: read("first-host.json"), Second: read("second-host.json"), FirstQuota: demoQuota, SecondQuota: demoQuota})
	decisions := map[string]*engine.HostDecision{"pool-a": &want.First, "pool-b": &want.Second}
	// Today's reservations would leave replicas queued on at least one
	// host: the demo shows what the placement reservation is for.
	if want.First.Containers <= want.First.Placement.Placeable && want.Second.Containers <= want.Second.Placement.Placeable {
		t.Fatalf("the demo's counts fit at today's reservations (%d/%d, %d/%d): it no longer shows placement",
			want.First.Containers, want.First.Placement.Placeable, want.Second.Containers, want.Second.Placement.Placeable)
	}
	jobspec := knownvalue.StringFunc(func(s string) error {
		groups, err := parseJobspec(s)
		if err != nil {
			return err
		}
		if len(groups) != 2 {
			return fmt.Errorf("%d task groups, want 2", len(groups))
		}
		for _, g := range groups {
			d, h := decisions[g.name], hosts[g.node]
			if d == nil || h.CPUCapacityMHz == 0 {
				return fmt.Errorf("group %s on %s: not a demo group and host", g.name, g.node)
			}
			if g.count != d.Containers {
				return fmt.Errorf("group %s has count = %d, the engine says %d", g.name, g.count, d.Containers)
			}
			pl := d.Placement
			if g.cpu != pl.CPUMHz || g.memoryMB != pl.MemoryMB || g.memoryMaxMB != pl.MemoryMaxMB {
				return fmt.Errorf("group %s reserves %d MHz, %d MB (max %d), the decision's placement is %d, %d (max %d)",
					g.name, g.cpu, g.memoryMB, g.memoryMaxMB, pl.CPUMHz, pl.MemoryMB, pl.MemoryMaxMB)
			}
			freeCPU := h.CPUCapacityMHz - h.OtherReservedCPUMHz
			freeMem := h.MemoryCapacityMB - h.OtherReservedMemoryMB
			if cpu := float64(g.count * g.cpu); cpu > freeCPU {
				return fmt.Errorf("group %s: %d x %d MHz = %v MHz does not fit the %v MHz %s has left", g.name, g.count, g.cpu, cpu, freeCPU, g.node)
			}
			if mem := float64(g.count * g.memoryMB); mem > freeMem {
				return fmt.Errorf("group %s: %d x %d MB = %v MB does not fit the %v MB %s has left", g.name, g.count, g.memoryMB, mem, freeMem, g.node)
			}
			if g.memoryMaxMB < g.memoryMB {
				return fmt.Errorf("group %s: memory_max %d below memory %d", g.name, g.memoryMaxMB, g.memoryMB)
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

// TestParseJobspec: the placement check reads the jobspec the template
// renders, and sees a group that does not fit.
func TestParseJobspec(t *testing.T) {
	groups, err := parseJobspec(`job "web" {
  group "pool-a" {
    # reason
    count = 12

    constraint {
      attribute = "${node.unique.name}"
      value     = "pool-a-1"
    }

    task "app" {
      resources {
        cpu        = 1666
        memory     = 512
        memory_max = 768
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []jobGroup{{name: "pool-a", node: "pool-a-1", count: 12, cpu: 1666, memoryMB: 512, memoryMaxMB: 768}}
	if !reflect.DeepEqual(groups, want) {
		t.Fatalf("got %+v, want %+v", groups, want)
	}
}

// requiredProvidersBlock finds a required_providers block (not a comment
// that names one).
var requiredProvidersBlock = regexp.MustCompile(`(?m)^\s*required_providers\s*\{`)

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
	fns, err := filepath.Glob(filepath.Join("..", "examples", "functions", "*"))
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, fns...)
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
				hasTerraformBlock = hasTerraformBlock || requiredProvidersBlock.Match(data) // not a comment naming it
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

// TestAccReadmeExample plans the README's HCL example as it is, with the
// demo's observations as its first-host.json and second-host.json, and
// checks its output is the engine's counts.
func TestAccReadmeExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```hcl\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no ```hcl example")
	}
	dir := t.TempDir()
	writeFile(t, dir, "main.tf", m[1])
	obs := map[string]engine.Observation{}
	for _, name := range []string{"first-host.json", "second-host.json"} {
		data, err := os.ReadFile(filepath.Join(demoDir, name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, name, data)
		var o engine.Observation
		if err := json.Unmarshal(data, &o); err != nil {
			t.Fatal(err)
		}
		obs[name] = o
	}
	want := mustDecide(t, &engine.Request{First: obs["first-host.json"], Second: obs["second-host.json"],
		FirstQuota: &engine.QuotaSpec{Min: ptr(1), Max: ptr(24)}, SecondQuota: &engine.QuotaSpec{Min: ptr(0), Max: ptr(12)}})
	accTest(t, resource.TestCase{Steps: []resource.TestStep{{
		ProtoV6ProviderFactories: providerFactories,
		ConfigDirectory:          config.StaticDirectory(dir),
		ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownOutputValue("counts", knownvalue.ListExact([]knownvalue.Check{
			knownvalue.Int64Exact(int64(want.First.Containers)), knownvalue.Int64Exact(int64(want.Second.Containers)),
		}))},
	}}})
}

// holdRuleCheck checks the example's first_count_held output against the
// strategy's hold rule: the current count stays when it lies within the
// hold range, else the count is the engine's.
type holdRuleCheck struct {
	current int
	// tells: the case must tell the rule from clamping into the range
	// (max(low, min(high, current)), which the docs once gave); inside:
	// the current count must lie within the range.
	tells, inside bool
}

func (c holdRuleCheck) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	if req.State == nil || req.State.Values == nil {
		resp.Error = fmt.Errorf("no state")
		return
	}
	num := func(name string) int {
		o, ok := req.State.Values.Outputs[name]
		if !ok {
			resp.Error = fmt.Errorf("no output %s", name)
			return 0
		}
		switch v := o.Value.(type) {
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				resp.Error = fmt.Errorf("output %s = %v: %w", name, v, err)
			}
			return int(n)
		case float64:
			return int(v)
		}
		resp.Error = fmt.Errorf("output %s = %v (%T), want a number", name, o.Value, o.Value)
		return 0
	}
	held, lo, hi, containers := num("first_count_held"), num("zz_low"), num("zz_high"), num("first_containers")
	if resp.Error != nil {
		return
	}
	want := containers
	if c.current >= lo && c.current <= hi {
		want = c.current
	}
	if held != want {
		resp.Error = fmt.Errorf("current %d, hold [%d, %d], containers %d: the example keeps %d, the strategy's rule %d", c.current, lo, hi, containers, held, want)
		return
	}
	if c.inside && (c.current < lo || c.current > hi) {
		resp.Error = fmt.Errorf("current %d is outside the hold range [%d, %d]: the case no longer tests a count kept", c.current, lo, hi)
		return
	}
	if clamped := max(lo, min(hi, c.current)); c.tells && clamped == want {
		resp.Error = fmt.Errorf("current %d, hold [%d, %d], containers %d: the case cannot tell clamping into the range from the strategy's rule", c.current, lo, hi, containers)
	}
}

// TestAccExampleHoldRule applies the data source's example, whose
// first_count_held output shows HCL users how to apply the hold range,
// with current counts below, inside and above the range: it must give
// what the Nomad strategy's hold_band does.
func TestAccExampleHoldRule(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "examples", "data-sources", "activation_container_counts", "data-source.tf")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	// A wider band than the example's, so that the range holds more than
	// the engine's count and a rule that clamps into it differs.
	wide := strings.Replace(string(data), "hold_band = 1\n", "hold_band = 8\n", 1)
	if wide == string(data) {
		t.Fatal("the example sets no hold_band = 1 to widen")
	}
	writeFile(t, dir, "main.tf", []byte(wide))
	writeFile(t, dir, "zz_test.tf", []byte(`terraform {
  required_providers {
    activation = { source = "activation-scheduler/activation" }
  }
}
output "zz_low" {
  value = data.activation_container_counts.pools.first_decision.hold.low
}
output "zz_high" {
  value = data.activation_container_counts.pools.first_decision.hold.high
}
`))
	second, err := filepath.Abs(filepath.Join(demoDir, "second-host.json"))
	if err != nil {
		t.Fatal(err)
	}
	var steps []resource.TestStep
	for _, c := range []holdRuleCheck{{current: 0, tells: true}, {current: 1000}, {current: 7, inside: true}} { // below (min is 1), above (max is 24), inside (today's range is 7 to 8)
		steps = append(steps, resource.TestStep{
			ProtoV6ProviderFactories: providerFactories,
			ConfigDirectory:          config.StaticDirectory(dir),
			ConfigVariables:          config.Variables{"second_host_file": config.StringVariable(second), "first_current_count": config.IntegerVariable(c.current)},
			ConfigStateChecks:        []statecheck.StateCheck{c},
		})
	}
	accTest(t, resource.TestCase{Steps: steps})
}
