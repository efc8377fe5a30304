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
