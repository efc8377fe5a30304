package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// TestE2EModelPin: a policy whose second_model_digest is not its model's
// digest is refused through the real agent: the agent logs the check's
// error naming the key and both digests, and no group moves.
func TestE2EModelPin(t *testing.T) {
	testsupport.StandinOnly(t, "a model file written by the test")
	autoscalerPath(t)
	path, _, p := testsupport.BuiltinModelFile(t, engine.BuiltinCapacity, engine.RoleSecond)
	wrong := "sha256:" + strings.Repeat("0", 64)
	c := startSplitCase(t, splitSetup{start: [2]int{10, 10}, reqCPU: 1000, usage: 1000,
		policy: noLimits + fmt.Sprintf(`        second_model        = %q
        second_model_digest = %q
`, path, wrong), cooldown: "200ms"})
	want := "second_model_digest"
	var refusals []string
	eventually(t, 40*time.Second, "three refusals naming the pin", func() (bool, string) {
		refusals = refusals[:0]
		for _, e := range c.a.entries(t) {
			line := fmt.Sprint(e)
			if strings.Contains(line, want) {
				refusals = append(refusals, line)
			}
		}
		return len(refusals) >= 3, fmt.Sprintf("%d so far", len(refusals))
	})
	for _, r := range refusals {
		if !strings.Contains(r, "is "+wrong+", but the model "+path+" is "+p.Digest()+": not the pinned model") {
			t.Errorf("a refusal does not give both digests: %s", r)
		}
	}
	if len(c.logged(t, 0, "decided", "")) != 0 {
		t.Error("the strategy decided with a model its pin refuses")
	}
	if got := c.counts(t); got != [2]int{10, 10} {
		t.Errorf("groups at %v, want both unmoved at 10", got)
	}
}

// TestE2EModelDir: the strategy's model_dir, set in the agent's plugin
// block, reaches the plugin through the real agent and confines a
// policy's model file: a model outside it is refused at every evaluation,
// naming the key, and no group moves.
func TestE2EModelDir(t *testing.T) {
	testsupport.StandinOnly(t, "a model file written by the test")
	autoscalerPath(t)
	path, _, _ := testsupport.BuiltinModelFile(t, engine.BuiltinCapacity, engine.RoleSecond)
	dir := t.TempDir()
	c := startSplitCase(t, splitSetup{start: [2]int{10, 10}, reqCPU: 1000, usage: 1000,
		policy:   noLimits + fmt.Sprintf("        second_model        = %q\n", path),
		strategy: fmt.Sprintf("    model_dir = %q", dir), cooldown: "200ms"})
	var refusals []string
	eventually(t, 40*time.Second, "three refusals naming the model outside model_dir", func() (bool, string) {
		refusals = refusals[:0]
		for _, e := range c.a.entries(t) {
			if line := fmt.Sprint(e); strings.Contains(line, "outside the plugin's model_dir") {
				refusals = append(refusals, line)
			}
		}
		return len(refusals) >= 3, fmt.Sprintf("%d so far", len(refusals))
	})
	for _, r := range refusals {
		if !strings.Contains(r, `second_model`) || !strings.Contains(r, path) {
			t.Errorf("a refusal does not name the key and the file: %s", r)
		}
	}
	if len(c.logged(t, 0, "decided", "")) != 0 {
		t.Error("the strategy decided with a model outside model_dir")
	}
	if got := c.counts(t); got != [2]int{10, 10} {
		t.Errorf("groups at %v, want both unmoved at 10", got)
	}
}
