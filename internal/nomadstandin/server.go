// Package nomadstandin is an in-process stand-in for the parts of the Nomad
// HTTP API that the activation plugins and provider use: nodes and their
// stats, allocations and their stats, job read, job scale status and job
// scaling with events, latest deployment, blocking queries, ACL tokens and
// fault injection. It serves the real github.com/hashicorp/nomad/api types
// over loopback HTTP, so code under test talks to it with an unmodified
// *api.Client. See README.md for what it models and what it does not.
package nomadstandin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Blocking query limits, as Nomad has them.
const (
	defaultBlockingWait = 5 * time.Minute
	maxBlockingWait     = 10 * time.Minute
)

// Fault makes matching requests fail or slow down. A request matches when
// Method (if set) equals its method, Path (if set) equals its path or, when
// Path ends in "*", starts with the rest, and Group (if set) equals the
// task group a scale request names. The first Skip matching requests pass
// untouched; the next Times (0 = all) get the fault.
type Fault struct {
	Method string
	Path   string
	Group  string
	Skip   int
	Times  int
	// Delay holds the answer back this long (a slow server); with Status 0
	// the request is then answered normally.
	Delay time.Duration
	// Status, when non-zero, answers with this code and Message (default
	// "injected fault") instead of the real answer; 404 answers "not found".
	Status  int
	Message string
	// seen counts matching requests so far.
	seen int
}

// Request is one request the stand-in answered, for assertions.
type Request struct {
	Method string
	Path   string
	Query  string
	Status int
	// HadToken says whether the request carried a token; the token itself
	// is never kept.
	HadToken bool
}

// Server is the stand-in. Create it with New, program it with AddNode,
// AddJob and the Set methods, point an api.Client at URL().
type Server struct {
	mu      sync.Mutex
	index   uint64
	changed chan struct{} // closed and replaced on every index bump
	seq     uint64
	nodes   map[string]*node
	allocs  map[string]*alloc
	jobs    map[jobKey]*job
	tokens  map[string]TokenPolicy
	faults  []*Fault
	log     []Request
	hook    func(method, path string)
	// statsAge makes client and allocation stats carry a Timestamp this
	// far in the past (stale stats).
	statsAge time.Duration
	// lifecycle
	addr string
	hs   *httptest.Server
	stop chan struct{} // closed when the current server generation stops
}

// TokenPolicy is what an ACL token may do.
type TokenPolicy struct {
	// Write allows scaling; every token may read.
	Write bool
}

// New returns a started stand-in on a loopback address. Close it when done.
func New() (*Server, error) {
	s := &Server{
		index:   1,
		changed: make(chan struct{}),
		nodes:   map[string]*node{},
		allocs:  map[string]*alloc{},
		jobs:    map[jobKey]*job{},
		tokens:  map[string]TokenPolicy{},
	}
	if err := s.start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) start(addr string) error {
	var ln net.Listener
	var err error
	// The old socket may linger briefly after a stop; retry for a moment.
	for try := 0; try < 50; try++ {
		ln, err = net.Listen("tcp", addr)
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("nomadstandin: listen on %s: %w", addr, err)
	}
	hs := httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	hs.Listener.Close()
	hs.Listener = ln
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.hs = hs
	s.stop = make(chan struct{})
	s.mu.Unlock()
	hs.Start()
	return nil
}

// URL is the stand-in's address, e.g. "http://127.0.0.1:41234".
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr
}

// Client returns an api.Client pointed at the stand-in with the given
// token (may be empty).
func (s *Server) Client(token string) (*api.Client, error) {
	// An explicit config: api.DefaultConfig would pick up NOMAD_* from the
	// environment (a real cluster's address or token).
	return api.NewClient(&api.Config{Address: s.URL(), SecretID: token, TLSConfig: &api.TLSConfig{}})
}

// Stop stops serving (connections are refused) but keeps the state and the
// address. Blocking queries in flight end with a closed connection.
func (s *Server) Stop() {
	s.mu.Lock()
	hs, stop := s.hs, s.stop
	s.hs = nil
	s.mu.Unlock()
	if hs == nil {
		return
	}
	close(stop)
	hs.CloseClientConnections()
	hs.Close()
}

// Start serves again on the same address after Stop.
func (s *Server) Start() error {
	s.mu.Lock()
	running, addr := s.hs != nil, s.addr
	s.mu.Unlock()
	if running {
		return nil
	}
	return s.start(addr)
}

// Restart stops the stand-in, stays down for down, and starts it again on
// the same address with the same state, as a Nomad server restart would.
func (s *Server) Restart(down time.Duration) error {
	s.Stop()
	time.Sleep(down)
	return s.Start()
}

// Close stops the stand-in for good.
func (s *Server) Close() { s.Stop() }

// RequireToken turns ACLs on (if not yet) and adds a token with policy p.
// With ACLs on, a request without a known token is answered 403
// "Permission denied", as is a scale request from a read-only token.
func (s *Server) RequireToken(secret string, p TokenPolicy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[secret] = p
}

// SetHook calls f (outside the stand-in's lock) at the start of every
// request, before faults and ACLs, with its method and path. A test can use
// it to advance replayed usage in step with a client's reads. nil removes it.
func (s *Server) SetHook(f func(method, path string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = f
}

// SetStatsAge makes node client stats and allocation stats carry a
// Timestamp age before the time of the answer (0: now), as a Nomad client
// whose stats collection stalled would.
func (s *Server) SetStatsAge(age time.Duration) {
	s.mu.Lock()
	s.statsAge = age
	s.mu.Unlock()
}

// InjectFault adds a fault; faults are checked in the order added.
func (s *Server) InjectFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Requests returns a copy of the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Index is the current state index (what X-Nomad-Index reports).
func (s *Server) Index() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.index
}

// apiError is an answer with a status other than 200.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) error {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// statusRecorder captures the status code for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	token := r.Header.Get("X-Nomad-Token")
	if token == "" {
		token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	defer func() {
		s.mu.Lock()
		s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: rec.status, HadToken: token != ""})
		if len(s.log) > 100000 {
			s.log = append([]Request(nil), s.log[len(s.log)/2:]...)
		}
		s.mu.Unlock()
	}()

	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(r.Method, r.URL.Path)
	}

	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			writeError(rec, errorf(http.StatusBadRequest, "reading request body: %v", err))
			return
		}
	}

	s.mu.Lock()
	stop := s.stop
	fault := s.matchFaultLocked(r, body)
	policy, known := s.tokens[token]
	aclOn := len(s.tokens) > 0
	s.mu.Unlock()

	if fault != nil && fault.Delay > 0 {
		select {
		case <-time.After(fault.Delay):
		case <-r.Context().Done():
			return
		case <-stop:
			return
		}
	}
	if fault != nil && fault.Status != 0 {
		msg := fault.Message
		if msg == "" {
			msg = "injected fault"
			if fault.Status == http.StatusNotFound {
				msg = "not found"
			}
		}
		writeError(rec, errorf(fault.Status, "%s", msg))
		return
	}
	if aclOn && !known {
		writeError(rec, errorf(http.StatusForbidden, "Permission denied"))
		return
	}
	isWrite := r.Method == http.MethodPut || r.Method == http.MethodPost
	if aclOn && isWrite && !policy.Write {
		writeError(rec, errorf(http.StatusForbidden, "Permission denied"))
		return
	}
	s.route(rec, r, body, stop)
}

// matchFaultLocked returns the fault that applies to r, if any, counting
// it against Skip and Times.
func (s *Server) matchFaultLocked(r *http.Request, body []byte) *Fault {
	for i, f := range s.faults {
		if f.Method != "" && f.Method != r.Method {
			continue
		}
		if f.Path != "" {
			if prefix, ok := strings.CutSuffix(f.Path, "*"); ok {
				if !strings.HasPrefix(r.URL.Path, prefix) {
					continue
				}
			} else if f.Path != r.URL.Path {
				continue
			}
		}
		if f.Group != "" {
			var req api.ScalingRequest
			if json.Unmarshal(body, &req) != nil || req.Target["Group"] != f.Group {
				continue
			}
		}
		f.seen++
		if f.seen <= f.Skip {
			continue
		}
		if f.Times > 0 && f.seen-f.Skip >= f.Times {
			// last use: drop it
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		return f
	}
	return nil
}

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var ae *apiError
	if errors.As(err, &ae) {
		code = ae.code
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, err.Error())
}

func writeJSON(w http.ResponseWriter, index uint64, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "encoding answer: %v", err))
		return
	}
	if index == 0 {
		index = 1
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	h.Set("X-Nomad-KnownLeader", "true")
	h.Set("X-Nomad-LastContact", "0")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// parseWait reads the blocking query parameters: index and wait
// ("500ms", "5s", "1m" or a bare number of seconds).
func parseWait(r *http.Request) (index uint64, wait time.Duration, err error) {
	q := r.URL.Query()
	if v := q.Get("index"); v != "" {
		index, err = strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, errorf(http.StatusBadRequest, "Invalid index: %v", err)
		}
	}
	if v := q.Get("wait"); v != "" {
		wait, err = time.ParseDuration(v)
		if err != nil {
			secs, err2 := strconv.ParseUint(v, 10, 64)
			if err2 != nil {
				return 0, 0, errorf(http.StatusBadRequest, "Invalid wait time: %v", err)
			}
			wait = time.Duration(secs) * time.Second
		}
	}
	if index > 0 && wait == 0 {
		wait = defaultBlockingWait
	}
	if wait > maxBlockingWait {
		wait = maxBlockingWait
	}
	return index, wait, nil
}

// blocking answers a read as a blocking query: it calls read (under the
// lock) until the index it reports passes the asked index or the wait ends,
// then writes the last answer.
func (s *Server) blocking(w http.ResponseWriter, r *http.Request, stop chan struct{}, read func() (uint64, any, error)) {
	minIndex, wait, err := parseWait(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var deadline <-chan time.Time
	if minIndex > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		s.mu.Lock()
		idx, v, err := read()
		changed := s.changed
		s.mu.Unlock()
		if err != nil {
			writeError(w, err)
			return
		}
		if idx == 0 {
			idx = 1
		}
		if minIndex == 0 || idx > minIndex {
			writeJSON(w, idx, v)
			return
		}
		select {
		case <-changed:
		case <-deadline:
			writeJSON(w, idx, v)
			return
		case <-r.Context().Done():
			return
		case <-stop:
			return
		}
	}
}
