package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
)

// TestE2ESharedCheckName: two policies whose checks share a name (as every
// example's check "activation" does) scale two jobs whose groups run on
// the same node, through the real agent, which gives an external strategy
// no policy ID. Each job's usage window fills from its own reads only: the
// "too few samples" reasons the strategy logs for a job count 1, then 2, of
// that job's samples, and both jobs then decide. (With one window for
// both, the second job's first evaluation would find the first job's
// sample.) On the real cluster at NOMAD_ADDR when the tests were started
// with it, else on the stand-in, as TestE2ECluster.
func TestE2ESharedCheckName(t *testing.T) {
	autoscalerPath(t)
	c := newE2ECluster(t)
	pdir := pluginDir(t)
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	jobs := [2]string{"activation-shared-" + hex.EncodeToString(suffix), "activation-shared-" + hex.EncodeToString(suffix) + "-b"}
	for _, id := range jobs {
		c.register(t, c.clusterJob(t, id))
		if c.registered != nil {
			c.registered(t, id)
		}
	}
	dir := t.TempDir()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(pol, 0o700); err != nil {
		t.Fatal(err)
	}
	const check, minSamples = "activation", 3
	for i, id := range jobs {
		keys := fmt.Sprintf("        role = %q\n        job = %q\n        window = \"%d\"\n        min_samples = \"%d\"\n"+
			"        first_node_id = %q\n        first_group = %q\n        first_min = \"1\"\n        first_max = \"%d\"\n",
			nomadplugin.RoleFirst, id, minSamples, minSamples, c.nodes[0].ID, clusterGroups[0], c.max)
		target := fmt.Sprintf(`"host-quota" {
      job   = %q
      group = %q
    }`, id, clusterGroups[0])
		body := policyFileWith(fmt.Sprintf("shared-%d", i), check, keys+noSteps, target, "1s", "1s")
		if err := os.WriteFile(filepath.Join(pol, fmt.Sprintf("shared-%d.hcl", i)), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a := startAgent(t, dir, agentConfigNomad("DEBUG", pdir, c.nomad, pol))

	// The strategy's lines for a job: "no scaling" and "decided".
	tooFew := regexp.MustCompile(`has (\d+) sample\(s\); at least 3 are needed`)
	lines := func(job string) (counts []int, decided int) {
		for _, e := range a.entries(t) {
			if e.str("check") != check || e.str("job") != job {
				continue
			}
			switch e.str("@message") {
			case "decided":
				decided++
			case "no scaling":
				if m := tooFew.FindStringSubmatch(e.str("reason")); m != nil {
					n, _ := strconv.Atoi(m[1])
					counts = append(counts, n)
				}
			}
		}
		return counts, decided
	}
	eventually(t, 3*time.Minute, "both jobs decide", func() (bool, string) {
		for _, id := range jobs {
			counts, decided := lines(id)
			if decided == 0 {
				return false, fmt.Sprintf("job %s: no decision yet (too-few-samples lines so far: %v)", id, counts)
			}
		}
		return true, ""
	})
	a.stop(t)
	for _, id := range jobs {
		counts, decided := lines(id)
		// Each job's window fills from its own reads: the too-few lines
		// count 1, then 2, one sample per evaluation (an evaluation whose
		// read failed adds none, so a count may repeat).
		ok := len(counts) >= minSamples-1 && counts[0] == 1 && counts[len(counts)-1] == minSamples-1
		for i := 1; ok && i < len(counts); i++ {
			ok = counts[i]-counts[i-1] == 0 || counts[i]-counts[i-1] == 1
		}
		if !ok {
			t.Errorf("job %s: the too-few-samples reasons counted %v samples, want 1 up to %d, one at a time (its own reads only)", id, counts, minSamples-1)
		}
		t.Logf("job %s: too-few-samples counts %v, then %d decisions", id, counts, decided)
	}
}
