package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
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
// stand-in shaped like the example job. Only what must differ from a real
// cluster is given as flags: the stand-in's address, a free HTTP port, and
// -policy-source-disable-nomad (the stand-in serves no scaling policies).
func TestE2EExamples(t *testing.T) {
	autoscalerPath(t)
	pdir := pluginDir(t)
	for _, tc := range []struct {
		name      string
		policyDir string // "" = the config's own
		roles     map[string]string
	}{
		{"split", "", map[string]string{"front": nomadplugin.RoleSplit, "back": nomadplugin.RoleSplit}},
		{"per-host", "policies/per-host", map[string]string{"front": nomadplugin.RoleFirst, "back": nomadplugin.RoleSecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := nomadstandin.New()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			a1, _ := s.AddNode(nomadstandin.NodeSpec{Name: "n1", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "activation-first"})
			a2, _ := s.AddNode(nomadstandin.NodeSpec{Name: "n2", CPUMHz: hostCPU, MemoryMB: hostMem, NodePool: "activation-second"})
			lo, hi := int64(0), int64(48)
			if err := s.AddJob(nomadstandin.JobSpec{ID: "web", Groups: []nomadstandin.GroupSpec{
				{Name: "front", Count: 2, CPUMHz: 2000, MemoryMB: 512, NodeID: a1, ScalingMin: &lo, ScalingMax: &hi},
				{Name: "back", Count: 2, CPUMHz: 2000, MemoryMB: 512, NodeID: a2, ScalingMin: &lo, ScalingMax: &hi},
			}}); err != nil {
				t.Fatal(err)
			}
			rp := &replay{s: s, a: loadSeries(t, "series3"), b: loadSeries(t, "series9"), burst: 1, idx: 3000,
				groups: [2][][2]string{{{"web", "front"}}, {{"web", "back"}}}}
			rp.start(time.Second)
			defer rp.close()

			dir := t.TempDir()
			copyTree(t, filepath.Join(moduleRoot(), "examples", "nomad"), dir)
			copyTree(t, pdir, filepath.Join(dir, "plugins"))
			cfg, err := os.ReadFile(filepath.Join(dir, "agent.hcl"))
			if err != nil {
				t.Fatal(err)
			}
			flags := []string{"-nomad-address", s.URL(), "-policy-source-disable-nomad"}
			if tc.policyDir != "" {
				flags = append(flags, "-policy-dir", filepath.Join(dir, tc.policyDir))
			}
			a := startAgent(t, dir, string(cfg), flags...)
			// The example policies evaluate every 10s.
			eventually(t, 45*time.Second, "both groups scaled by the example policies", func() (bool, string) {
				for g, role := range tc.roles {
					gs, err := s.Group("", "web", g)
					if err != nil {
						t.Fatal(err)
					}
					ok := false
					for _, ev := range gs.Events {
						if ev.Count != nil && ev.Meta[nomadplugin.MetaRole] == role {
							ok = true
						}
					}
					if !ok {
						return false, fmt.Sprintf("no scaling event with role %q on group %s yet (%d events)", role, g, len(gs.Events))
					}
				}
				return true, ""
			})
			for _, e := range a.entries(t) {
				if e.str("@level") == "error" {
					t.Errorf("the agent logged an error: %s %v", e.str("@message"), e)
				}
			}
		})
	}
}
