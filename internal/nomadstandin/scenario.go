package nomadstandin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Scenario describes a stand-in to build, in Go or as JSON (the file the
// stand-in process reads). Durations in JSON are nanoseconds or strings
// ("110ms").
type Scenario struct {
	// Addr is where the process listens (default "127.0.0.1:0").
	Addr string `json:",omitempty"`
	// Token, when set, turns ACLs on with this one read-write token;
	// Tokens adds more.
	Token  string          `json:",omitempty"`
	Tokens []ScenarioToken `json:",omitempty"`
	// SchedulerAlgorithm is "spread" (default) or "binpack".
	SchedulerAlgorithm string `json:",omitempty"`
	// Nodes are added first, in order; then NodeSets.
	Nodes    []NodeSpec `json:",omitempty"`
	NodeSets []NodeSet  `json:",omitempty"`
	// Jobs and OtherJobs are added after the nodes, in order. A group may
	// pin a node by NodeName (its ID may be unknown to the scenario); an
	// other job's NodeID may be a node's name.
	Jobs      []JobSpec      `json:",omitempty"`
	OtherJobs []OtherJobSpec `json:",omitempty"`
	// GroupUsage and NodeUsage set usage (SetGroupUsage, SetNodeUsage;
	// a node is named by ID or name).
	GroupUsage []GroupUsage `json:",omitempty"`
	NodeUsage  []NodeUsage  `json:",omitempty"`
	// Latency is injected per route (AddLatency), Faults after it.
	Latency []Latency `json:",omitempty"`
	Faults  []Fault   `json:",omitempty"`
}

// ScenarioToken is an ACL token of a scenario.
type ScenarioToken struct {
	Secret string
	Write  bool
}

// NodeSet is Count nodes made from Template (see AddNodes).
type NodeSet struct {
	Count    int
	Template NodeSpec
}

// GroupUsage is the usage of each allocation of a group.
type GroupUsage struct {
	Namespace, Job, Group string
	CPUMHz, MemoryMB      float64
}

// NodeUsage is a node's background usage; Node is its ID or name.
type NodeUsage struct {
	Node             string
	CPUMHz, MemoryMB float64
}

// NewFromScenario starts a stand-in on sc.Addr (default 127.0.0.1:0) and
// sets it up as sc says.
func NewFromScenario(sc Scenario) (*Server, error) {
	addr := sc.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s, err := NewAt(addr)
	if err != nil {
		return nil, err
	}
	if err := s.Apply(sc); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Apply sets up a running stand-in as sc says (its Addr is not used).
func (s *Server) Apply(sc Scenario) error {
	if sc.Token != "" {
		s.RequireToken(sc.Token, TokenPolicy{Write: true})
	}
	for _, t := range sc.Tokens {
		s.RequireToken(t.Secret, TokenPolicy{Write: t.Write})
	}
	if sc.SchedulerAlgorithm != "" {
		if err := s.SetSchedulerAlgorithm(api.SchedulerAlgorithm(sc.SchedulerAlgorithm)); err != nil {
			return err
		}
	}
	for _, n := range sc.Nodes {
		if _, err := s.AddNode(n); err != nil {
			return err
		}
	}
	for _, set := range sc.NodeSets {
		if _, err := s.AddNodes(set.Count, set.Template); err != nil {
			return err
		}
	}
	for _, j := range sc.Jobs {
		if err := s.AddJob(j); err != nil {
			return err
		}
	}
	for _, o := range sc.OtherJobs {
		o.NodeID = s.nodeIDByName(o.NodeID)
		if err := s.AddOtherJob(o); err != nil {
			return err
		}
	}
	for _, u := range sc.GroupUsage {
		if err := s.SetGroupUsage(u.Namespace, u.Job, u.Group, u.CPUMHz, u.MemoryMB); err != nil {
			return err
		}
	}
	for _, u := range sc.NodeUsage {
		id := s.nodeIDByName(u.Node)
		if err := s.SetNodeUsage(id, u.CPUMHz, u.MemoryMB); err != nil {
			return err
		}
	}
	for _, l := range sc.Latency {
		s.AddLatency(l)
	}
	for _, f := range sc.Faults {
		s.InjectFault(f)
	}
	return nil
}

// nodeIDByName resolves a node ID or name to an ID.
func (s *Server) nodeIDByName(idOrName string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.nodes[idOrName]; ok {
		return idOrName
	}
	for _, n := range s.nodes {
		if n.spec.Name == idOrName {
			return n.spec.ID
		}
	}
	return idOrName
}

// FetchRequestCounts reads GET /_standin/requests from a stand-in at
// baseURL (e.g. one StartProcess started).
func FetchRequestCounts(ctx context.Context, baseURL string) (RequestCounts, error) {
	var rc RequestCounts
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+controlPrefix+"requests", nil)
	if err != nil {
		return rc, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rc, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return rc, fmt.Errorf("GET %s: %s: %s", req.URL, resp.Status, b)
	}
	return rc, json.NewDecoder(resp.Body).Decode(&rc)
}

// cmdDir is the stand-in process's source directory.
func cmdDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("nomadstandin: cannot find the package's source directory")
	}
	return filepath.Join(filepath.Dir(file), "cmd", "standin"), nil
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		return filepath.Join(strings.TrimSpace(string(out)), "bin", "go")
	}
	return "go"
}

// StartProcess builds the stand-in command (go build into a temporary
// directory) and starts it as a separate process serving sc, for
// benchmarks that must not share a process with the stand-in. It returns
// the stand-in's URL and a stop function (idempotent) that ends the
// process (stdin closed, then SIGTERM, then kill) and removes the
// temporary directory. Cancelling ctx also stops it.
func StartProcess(ctx context.Context, sc Scenario) (url string, stop func(), err error) {
	src, err := cmdDir()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "nomadstandin-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	bin := filepath.Join(dir, "standin")
	build := exec.CommandContext(ctx, goTool(), "build", "-o", bin, ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("nomadstandin: go build %s: %w\n%s", src, err, out)
	}
	scFile := filepath.Join(dir, "scenario.json")
	b, err := json.Marshal(sc)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	if err := os.WriteFile(scFile, b, 0o600); err != nil {
		cleanup()
		return "", nil, err
	}
	addr := sc.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	cmd := exec.Command(bin, "-scenario", scFile, "-addr", addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cleanup()
		return "", nil, err
	}
	exited := make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	var once sync.Once
	stopDone := make(chan struct{})
	stop = func() {
		once.Do(func() {
			defer close(stopDone)
			_ = stdin.Close()
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(5 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			}
			cleanup()
		})
	}
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, "http://") {
			stop() // waits for the exit: waitErr is set
			return "", nil, fmt.Errorf("nomadstandin: the stand-in process did not print its URL (got %q, exit %v): %s", line, waitErr, stderr.String())
		}
		url = line
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	case <-time.After(60 * time.Second):
		stop()
		return "", nil, fmt.Errorf("nomadstandin: the stand-in process did not start in 60s: %s", stderr.String())
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-stopDone:
		}
	}()
	return url, stop, nil
}
