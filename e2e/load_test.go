package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/internal/nomadstandin"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// procStat returns a process's CPU time (user+system) and peak RSS.
func procStat(pid int) (cpu time.Duration, peakRSS int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	cpu = time.Duration(ut+st) * time.Second / 100 // USER_HZ
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			peakRSS = kb * 1024
		}
	}
	return cpu, peakRSS, nil
}

// children finds the agent's plugin processes by name.
func children(ppid int) map[string]int {
	out := map[string]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		name := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if pp, _ := strconv.Atoi(f[1]); pp == ppid {
			out[name] = pid
		}
	}
	return out
}

// BenchmarkAgent100Policies runs the real agent with 100 split policies at a
// 1 s evaluation interval against the stand-in (10 host pairs, 10 jobs per
// pair) for 30 s after a 10 s warm-up, and reports the evaluations per
// second the strategy made and each plugin process's CPU time and peak RSS.
// Run it alone:
//
//	go test ./e2e -run '^$' -bench BenchmarkAgent100Policies -benchtime 1x
func BenchmarkAgent100Policies(b *testing.B) {
	testsupport.StandinOnly(b, "10 host pairs, 100 jobs and replayed usage set from Go")
	autoscalerPath(b)
	pdir := pluginDir(b)
	for i := 0; i < b.N; i++ {
		s, err := nomadstandin.New()
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		pol := filepath.Join(dir, "policies")
		_ = os.MkdirAll(pol, 0o755)
		series := [2][]float64{loadSeries(b, "series3"), loadSeries(b, "series9")}
		var groups [2][][2]string
		for pair := 0; pair < 10; pair++ {
			var ids [2]string
			for h := 0; h < 2; h++ {
				if ids[h], err = s.AddNode(nomadstandin.NodeSpec{Name: fmt.Sprintf("p%d-h%d", pair, h), CPUMHz: hostCPU, MemoryMB: hostMem}); err != nil {
					b.Fatal(err)
				}
			}
			for j := 0; j < 10; j++ {
				job := fmt.Sprintf("job-%d-%d", pair, j)
				if err := s.AddJob(nomadstandin.JobSpec{ID: job, Groups: []nomadstandin.GroupSpec{
					{Name: "a", Count: 2, CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: ids[0]},
					{Name: "b", Count: 2, CPUMHz: reqCPU, MemoryMB: reqMem, NodeID: ids[1]},
				}}); err != nil {
					b.Fatal(err)
				}
				groups[0] = append(groups[0], [2]string{job, "a"})
				groups[1] = append(groups[1], [2]string{job, "b"})
				body := policyFile(job, "c-"+job, fmt.Sprintf(`        role             = "split"
        job              = %q
        first_node_name  = "p%d-h0"
        first_group      = "a"
        second_node_name = "p%d-h1"
        second_group     = "b"
        first_max        = "4"
        second_max       = "4"
`, job, pair, pair), fmt.Sprintf(`"host-quota" {
      job          = %q
      first_group  = "a"
      second_group = "b"
    }`, job))
				if err := os.WriteFile(filepath.Join(pol, job+".hcl"), []byte(body), 0o600); err != nil {
					b.Fatal(err)
				}
			}
		}
		rp := &replay{s: s, a: series[0], b: series[1], burst: 1, idx: 3000, groups: groups}
		rp.start(time.Second)
		a := startAgent(b, dir, agentConfig("DEBUG", pdir, s.URL(), pol))
		time.Sleep(10 * time.Second)
		count := func() int {
			n := 0
			for _, e := range a.entries(b) {
				if m := e.str("@message"); m == "decided" || m == "no scaling" {
					n++
				}
			}
			return n
		}
		procs := children(a.pid())
		// procs and cpu0 are keyed by the process's comm (its name cut
		// at 15 bytes).
		cpu0 := map[string]time.Duration{}
		for comm, pid := range procs {
			c, _, err := procStat(pid)
			if err != nil {
				b.Fatal(err)
			}
			cpu0[comm] = c
		}
		n0, t0 := count(), time.Now()
		b.ResetTimer()
		time.Sleep(30 * time.Second)
		b.StopTimer()
		n1, el := count(), time.Since(t0)
		b.ReportMetric(float64(n1-n0)/el.Seconds(), "evals/s")
		for _, name := range []string{"activation-quota", "host-quota"} {
			comm := name[:min(len(name), 15)]
			pid, ok := procs[comm]
			if !ok {
				b.Fatalf("plugin process %s not found among the agent's children %v", name, procs)
			}
			cpu, rss, err := procStat(pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(cpu-cpu0[comm])/float64(el), name+"-cpu-cores")
			b.ReportMetric(float64(rss)/(1<<20), name+"-peak-MiB")
		}
		_, arss, err := procStat(a.pid())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(arss)/(1<<20), "agent-peak-MiB")
		a.stop(b)
		rp.close()
		s.Close()
	}
}
