package e2e

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
	"github.com/activation-scheduler/terraform-provider-activation/nomadplugin"
)

func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode()|0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(f, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestE2EExamples loads examples/nomad as written in the real agent: the
// agent config, with the plugins in its ./plugins, the split policies (the
// config's own policy dir) and then the per-host policies, against a
// stand-in shaped like the example job, its scaling blocks read from
// web.nomad.hcl (disabled: the Nomad policy source, on as in agent.hcl,
// finds them and leaves them alone); then agent-job-policies.hcl with the
// policy in the jobspec, web-with-policy.nomad.hcl's scaling blocks, read
// by the Nomad policy source, which must decide as the split policy file
// does. Only what must differ from a real cluster is given as flags: the
// stand-in's address and a free HTTP port.
func TestE2EExamples(t *testing.T) {
	testsupport.StandinOnly(t, "the examples' nodes, pools and replayed usage set from Go")
	autoscalerPath(t)
	pdir := pluginDir(t)
	a3, b9 := loadSeries(t, "series3"), loadSeries(t, "series9")
	const step = 3000
	start, want := exampleStart(t, [2]float64{a3[step], b9[step]})
	examples := filepath.Join(moduleRoot(), "examples", "nomad")
	// The jobspec's policy is the split policy file's: the same
	// strategy and target keys, as the plugins get them (text).
	fileCfg, jobCfg := policyKeys(t, filepath.Join(examples, "policies", "split", "web.hcl"), ""), policyKeys(t, filepath.Join(examples, "web-with-policy.nomad.hcl"), "front")
	for _, k := range []string{"target.job", "target.first_group", "target.dry_run"} {
		delete(fileCfg, k) // the job and the first group come from where the block sits; dry_run is false
	}
	if !maps.Equal(fileCfg, jobCfg) {
		t.Fatalf("web-with-policy.nomad.hcl's policy has the keys\n%v\npolicies/split/web.hcl has\n%v", jobCfg, fileCfg)
	}
	for _, tc := range []struct {
		name      string
		config    string // the agent config
		policyDir string // "" = the config's own
		jobspec   string // the scaling blocks' jobspec
		roles     map[string]string
		first     [2]int // the first counts the policies set: the ones exampleStart computed
	}{
		{"split", "agent.hcl", "", "web.nomad.hcl", map[string]string{"front": nomadplugin.RoleSplit, "back": nomadplugin.RoleSplit}, want.split},
		{"per-host", "agent.hcl", "policies/per-host", "web.nomad.hcl", map[string]string{"front": nomadplugin.RoleFirst, "back": nomadplugin.RoleSecond}, want.perHost},
		{"jobspec", "agent-job-policies.hcl", "", "web-with-policy.nomad.hcl", map[string]string{"front": nomadplugin.RoleSplit, "back": nomadplugin.RoleSplit}, want.split},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := nomadstandin.New()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			a1, err := s.AddNode(nomadstandin.NodeSpec{Name: "n1", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "activation-first"})
			if err != nil {
				t.Fatal(err)
			}
			a2, err := s.AddNode(nomadstandin.NodeSpec{Name: "n2", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "activation-second"})
			if err != nil {
				t.Fatal(err)
			}
			groups := []nomadstandin.GroupSpec{
				{Name: "front", Count: start[0], CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: a1},
				{Name: "back", Count: start[1], CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: a2},
			}
			for i, g := range groups {
				sc, err := readJobspecScaling(filepath.Join(examples, tc.jobspec), g.Name)
				if err != nil || sc == nil || sc.Min == nil || sc.Max == nil {
					t.Fatalf("%s, group %s: scaling block %+v (%v): want one with min and max", tc.jobspec, g.Name, sc, err)
				}
				groups[i].ScalingMin, groups[i].ScalingMax, groups[i].ScalingPolicy = sc.Min, sc.Max, sc.Policy
				groups[i].ScalingDisabled = sc.Enabled != nil && !*sc.Enabled
			}
			if err := s.AddJob(nomadstandin.JobSpec{ID: "web", Groups: groups}); err != nil {
				t.Fatal(err)
			}
			// Frozen: the first evaluation's decision is the one exampleStart
			// computed.
			rp := &replay{s: s, a: a3, b: b9, burst: 1, idx: step, frozen: true,
				groups: [2][][2]string{{{"web", "front"}}, {{"web", "back"}}}}
			rp.start(time.Second)
			defer rp.close()

			dir := t.TempDir()
			copyTree(t, examples, dir)
			copyTree(t, pdir, filepath.Join(dir, "plugins"))
			cfg, err := os.ReadFile(filepath.Join(dir, tc.config))
			if err != nil {
				t.Fatal(err)
			}
			flags := []string{"-nomad-address", s.URL()}
			if tc.policyDir != "" {
				flags = append(flags, "-policy-dir", filepath.Join(dir, tc.policyDir))
			}
			a := startAgent(t, dir, string(cfg), flags...)
			// The example policies evaluate every 10s and decide from their
			// third sample (the engine's default min_samples).
			eventually(t, 75*time.Second, "both groups scaled by the example policies", func() (bool, string) {
				for g, role := range tc.roles {
					gs, err := s.Group("", "web", g)
					if err != nil {
						t.Fatal(err)
					}
					ok := false
					for _, ev := range gs.Events {
						if _, set := eventCount(ev); set && ev.Meta[nomadplugin.MetaRole] == role {
							ok = true
						}
					}
					if !ok {
						return false, fmt.Sprintf("no scaling event with role %q on group %s yet (%d events)", role, g, len(gs.Events))
					}
				}
				return true, ""
			})
			// The first count set on each group is the example policy's
			// decision on the frozen usage, with the example's quotas,
			// step limits, hysteresis and warm-up.
			for h, g := range []string{"front", "back"} {
				gs, err := s.Group("", "web", g)
				if err != nil {
					t.Fatal(err)
				}
				for _, ev := range gs.Events {
					if n, set := eventCount(ev); set && ev.Meta[nomadplugin.MetaRole] == tc.roles[g] {
						if n != tc.first[h] {
							t.Errorf("group %s: the first count set is %d, want %d (exampleStart's decision from %d)", g, n, tc.first[h], start[h])
						}
						break
					}
				}
			}
			for _, e := range a.entries(t) {
				if e.str("@level") == "error" {
					t.Errorf("the agent logged an error: %s %v", e.str("@message"), e)
				}
			}
		})
	}
}

// exampleStart returns start counts for which the strategy, on the first
// evaluations' observations (per-replica usage v, every replica still
// warming as the example's 2m warm-up has it), changes both groups under
// both example configurations: the split policy's quotas (first_max 48,
// second_max 48, second_rounding floor; the sum changes too, or the split
// would take two evaluations 30 s apart) and step limits, and the per-host
// policies' defaults and step limits, both after the default placement
// cap. It fails when no such counts exist.
func exampleStart(t testing.TB, v [2]float64) ([2]int, exampleCounts) {
	t.Helper()
	split := func(r *engine.Request) *engine.Request {
		max48, floor := 48, "floor"
		r.FirstQuota = &engine.QuotaSpec{Max: &max48}
		r.SecondQuota = &engine.QuotaSpec{Max: &max48, Rounding: &floor}
		return r
	}
	times := [2][]int64{{1_700_000_000, 1_700_000_010, 1_700_000_020}, {1_700_000_000, 1_700_000_010, 1_700_000_020}}
	warming := func(r *engine.Request) *engine.Request {
		r.First.WarmingReplicas, r.Second.WarmingReplicas = r.First.RunningReplicas, r.Second.RunningReplicas
		r.MinSamples = 0
		return r
	}
	// asked is the count the strategy asks for: the engine's, never more
	// than the stand-in can place (fits: the example hosts run nothing
	// else), moved from the current count within the policy's step limits
	// and hysteresis.
	step := func(v string) engine.Step {
		st, err := engine.ParseStep(v)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	splitSteps := engine.Steps{MaxUp: step("4"), MaxDown: step("25%"), Hysteresis: step("2")}
	perHostSteps := engine.Steps{MaxUp: step("4"), MaxDown: step("25%"), Hysteresis: step(nomadplugin.DefaultHysteresis)}
	asked := func(r *engine.Request, st engine.Steps) [2]int {
		d, err := r.Decide()
		if err != nil {
			t.Fatal(err)
		}
		var out [2]int
		for h, hd := range []engine.HostDecision{d.First, d.Second} {
			cur := []int{r.First.RunningReplicas, r.Second.RunningReplicas}[h]
			target := min(hd.Containers, int(fits))
			res, _ := st.Control(cur, target, hd.Quota.Min, hd.Quota.Max, hd.Overloads(cur)) // as the strategy moves
			out[h] = res.Count
		}
		return out
	}
	var tried []string
	for _, c := range [][2]int{{2, 2}, {1, 1}, {4, 4}, {8, 8}, {1, 6}, {6, 1}, {12, 12}, {30, 30}} {
		ds := asked(split(warming(expectedRequest(v, c, times))), splitSteps)
		dd := asked(warming(expectedRequest(v, c, times)), perHostSteps)
		tried = append(tried, fmt.Sprintf("%v -> split %v, per-host %v", c, ds, dd))
		if ds[0] != c[0] && ds[1] != c[1] && ds[0]+ds[1] != c[0]+c[1] && min(dd[0], 48) != c[0] && min(dd[1], 48) != c[1] {
			t.Logf("example start counts %v: %s", c, tried[len(tried)-1])
			return c, exampleCounts{split: ds, perHost: [2]int{min(dd[0], 48), min(dd[1], 48)}}
		}
	}
	t.Fatalf("no start counts make the engine change both groups under the example policies; tried:\n%s", strings.Join(tried, "\n"))
	return [2]int{}, exampleCounts{}
}

// exampleCounts are the first counts the example policies set, per group
// (front, back): split's and the per-host policies' (quota max 48).
type exampleCounts struct{ split, perHost [2]int }
