// Package e2e runs the real nomad-autoscaler agent (v0.4.6) with the
// activation-quota strategy and host-quota target plugins against the Nomad
// API stand-in, and TestE2ECluster against the real cluster at NOMAD_ADDR
// when the tests are started with it. `make test` builds the agent
// (tools/build-autoscaler.sh) and sets ACTIVATION_AUTOSCALER_PATH; without
// it the tests fail.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/activation-scheduler/terraform-provider-activation/engine"
	"github.com/activation-scheduler/terraform-provider-activation/internal/testsupport"
)

// autoscalerPath is the agent binary; the test fails when it is not given.
func autoscalerPath(t testing.TB) string {
	t.Helper()
	p := os.Getenv("ACTIVATION_AUTOSCALER_PATH")
	if p == "" {
		t.Fatal("ACTIVATION_AUTOSCALER_PATH is not set: run `make test`, or " +
			"`ACTIVATION_AUTOSCALER_PATH=$(tools/build-autoscaler.sh) go test ./e2e/`")
	}
	if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("ACTIVATION_AUTOSCALER_PATH=%s is not an executable file (%v): rebuild it with tools/build-autoscaler.sh", p, err)
	}
	return p
}

// moduleRoot is the repository root (this file is in e2e/).
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

var plugins struct {
	once sync.Once
	dir  string
	err  error
}

// pluginDir builds both plugins once per test binary into a temporary
// plugin_dir, each under its driver name.
func pluginDir(t testing.TB) string {
	t.Helper()
	plugins.once.Do(func() {
		// Shared by every test of the binary (built once), so not the first
		// test's t.TempDir: TestMain removes it.
		dir, err := os.MkdirTemp("", "activation-plugins-") //nolint:usetesting // see above
		if err != nil {
			plugins.err = err
			return
		}
		for _, name := range []string{"activation-quota", "host-quota"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./cmd/"+name)
			cmd.Dir = moduleRoot()
			if out, err := cmd.CombinedOutput(); err != nil {
				plugins.err = fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, out)
				return
			}
		}
		plugins.dir = dir
	})
	if plugins.err != nil {
		t.Fatal(plugins.err)
	}
	return plugins.dir
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// agent is a running nomad-autoscaler.
type agent struct {
	cmd     *exec.Cmd
	logPath string
	port    int
	done    chan error

	// The JSON log, parsed incrementally: offset is how far the file has
	// been read (whole lines only).
	mu       sync.Mutex
	offset   int64
	parsed   []logEntry
	byDigest map[string]*engine.Request
	byCheck  map[string][]string
}

// startAgent runs `nomad-autoscaler agent -config cfg` plus extra flags,
// logging to a file, and waits for its health endpoint.
// agentConfig is the agent configuration of the tests without ACLs: JSON
// logs at level, the plugins in pluginDir, the stand-in at nomadAddr, file
// policies from policyDir and the Nomad policy source disabled.
func agentConfig(level, pluginDir, nomadAddr, policyDir string) string {
	return agentConfigNomad(level, pluginDir, fmt.Sprintf("address = %q", nomadAddr), policyDir)
}

// agentConfigNomad is agentConfig with the agent's whole nomad block body.
func agentConfigNomad(level, pluginDir, nomadBlock, policyDir string) string {
	return fmt.Sprintf(`log_level = %q
log_json = true
plugin_dir = %q
nomad {
%s
}
policy {
  dir = %q
  source "nomad" { enabled = false }
}
strategy "activation-quota" { driver = "activation-quota" }
target "host-quota" { driver = "host-quota" }
`, level, pluginDir, nomadBlock, policyDir)
}

// agentConfigJobPolicies is agentConfigNomad with the policies read from
// the jobs' scaling blocks by the agent's Nomad policy source, and no
// policy files.
func agentConfigJobPolicies(level, pluginDir, nomadBlock string) string {
	return fmt.Sprintf(`log_level = %q
log_json = true
plugin_dir = %q
nomad {
%s
}
policy {
  source "nomad" { enabled = true }
}
strategy "activation-quota" { driver = "activation-quota" }
target "host-quota" { driver = "host-quota" }
`, level, pluginDir, nomadBlock)
}

func startAgent(t testing.TB, dir, configHCL string, extra ...string) *agent {
	t.Helper()
	bin := autoscalerPath(t)
	cfgPath := filepath.Join(dir, "agent.hcl")
	if err := os.WriteFile(cfgPath, []byte(configHCL), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &agent{logPath: filepath.Join(dir, "agent.log"), port: freePort(t), done: make(chan error, 1)}
	logf, err := os.Create(a.logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"agent", "-config", cfgPath, "-http-bind-address", "127.0.0.1", "-http-bind-port", fmt.Sprint(a.port)}, extra...)
	a.cmd = exec.Command(bin, args...)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	a.cmd.Dir = dir
	// Its own process group (the plugins it starts join it), killed as a
	// whole on stop, and (on Linux) SIGKILL if the test binary dies first.
	inOwnGroup(t, a.cmd)
	// The agent and its plugins get no NOMAD_* from the test's environment.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NOMAD_") {
			a.cmd.Env = append(a.cmd.Env, kv)
		}
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.done <- a.cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		a.stop(t)
		if t.Failed() {
			keep := filepath.Join(os.TempDir(), fmt.Sprintf("e2e-agent-%d.log", time.Now().UnixNano()))
			_ = os.WriteFile(keep, a.log(t), 0o600)
			t.Logf("agent log kept at %s; last lines:\n%s", keep, tail(a.log(t), 30))
		}
	})
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-a.done:
			a.done <- err
			t.Fatalf("the agent exited at start (%v); log:\n%s", err, tail(a.log(t), 40))
		default:
		}
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/health", a.port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent did not become healthy in 60s; log:\n%s", tail(a.log(t), 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop interrupts the agent, kills its process group (the agent and its
// plugins) if it has not stopped within 15s, and then kills whatever of
// the group is left.
func (a *agent) stop(t testing.TB) {
	if a.cmd.Process == nil {
		return
	}
	p := a.cmd.Process
	defer func() { _ = killGroup(p) }()
	select {
	case err := <-a.done:
		a.done <- err
		return
	default:
	}
	_ = interruptGroup(p)
	select {
	case err := <-a.done:
		a.done <- err
	case <-time.After(15 * time.Second):
		_ = killGroup(p)
		err := <-a.done
		a.done <- err
		t.Logf("the agent did not stop on SIGINT within 15s; killed its process group")
	}
}

func (a *agent) pid() int { return a.cmd.Process.Pid }

func (a *agent) log(t testing.TB) []byte {
	b, err := os.ReadFile(a.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logEntry is one JSON log line of the agent (its plugins' lines are
// re-logged by the agent with their fields).
type logEntry map[string]any

func (e logEntry) str(k string) string { s, _ := e[k].(string); return s }

// scan parses the log lines written since the last scan.
func (a *agent) scan(t testing.TB) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byDigest == nil {
		a.byDigest, a.byCheck = map[string]*engine.Request{}, map[string][]string{}
	}
	f, err := os.Open(a.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	end := bytes.LastIndexByte(b, '\n')
	if end < 0 {
		return
	}
	a.offset += int64(end + 1)
	for _, line := range bytes.Split(b[:end], []byte("\n")) {
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e logEntry
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		a.parsed = append(a.parsed, e)
		if e.str("@message") != "decision request" {
			continue
		}
		var r engine.Request
		if err := json.Unmarshal([]byte(e.str("request")), &r); err != nil {
			t.Fatalf("logged decision request does not parse: %v", err)
		}
		d := e.str("digest")
		a.byDigest[d] = &r
		a.byCheck[e.str("check")] = append(a.byCheck[e.str("check")], d)
	}
}

// entries returns the agent's JSON log lines parsed so far, after a scan.
func (a *agent) entries(t testing.TB) []logEntry {
	a.scan(t)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.parsed[:len(a.parsed):len(a.parsed)]
}

// requests returns the engine requests the strategy logged, by digest,
// and the digests of each check in log order (copies).
func (a *agent) requests(t testing.TB) (map[string]*engine.Request, map[string][]string) {
	a.scan(t)
	a.mu.Lock()
	defer a.mu.Unlock()
	byDigest := make(map[string]*engine.Request, len(a.byDigest))
	for k, v := range a.byDigest {
		byDigest[k] = v
	}
	byCheck := make(map[string][]string, len(a.byCheck))
	for k, v := range a.byCheck {
		byCheck[k] = append([]string(nil), v...)
	}
	return byDigest, byCheck
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	last := ""
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not reached in %s: %s", what, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// TestMain clears NOMAD_* (a developer's token or namespace must not leak
// into stand-in runs; the real-cluster tests alone read them, from
// testsupport.ClusterEnv, to run on the cluster at NOMAD_ADDR, and the
// stand-in-only tests then skip) and removes the plugin_dir built for the
// run.
func TestMain(m *testing.M) {
	testsupport.TakeNomadEnv()
	code := m.Run()
	if plugins.dir != "" {
		_ = os.RemoveAll(plugins.dir)
	}
	os.Exit(code)
}
