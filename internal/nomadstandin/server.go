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
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
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

// Fault makes matching requests fail, slow down or hang. A request matches
// when Method (if set) equals its method, Path (if set) matches its path
// (see PathMatches), and Group (if set) equals the task group a scale
// request names. The first Skip matching requests pass untouched; the next
// Times (0 = all) get the fault. Only the first matching fault applies.
type Fault struct {
	Method string
	Path   string
	Group  string
	Skip   int
	Times  int
	// Delay holds the answer back this long (a slow server); with Status 0
	// the request is then answered normally.
	Delay time.Duration
	// Hang holds the request until the client gives up (its context is
	// cancelled or the connection closes) or the stand-in stops; it is
	// never answered.
	Hang bool
	// Status, when non-zero, answers with this code and Message (default
	// "injected fault") instead of the real answer; 404 answers "not found",
	// with Nomad's query meta (X-Nomad-Index) on a GET outside /v1/client/,
	// as Nomad answers a read of an object it does not have.
	Status  int
	Message string
	// seen counts matching requests so far.
	seen int
}

// Latency delays every request that matches Method (if set) and Path (see
// PathMatches) by Delay before it is served; the delays of all matching
// latencies add up, and apply before faults. A client that gives up stops
// the wait.
type Latency struct {
	Method string
	Path   string
	Delay  time.Duration
}

// UnmarshalJSON accepts Delay as nanoseconds or a string ("110ms").
func (l *Latency) UnmarshalJSON(b []byte) error {
	var aux struct {
		Method, Path string
		Delay        json.RawMessage
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	d, err := durationJSON(aux.Delay)
	if err != nil {
		return fmt.Errorf("delay: %w", err)
	}
	*l = Latency{Method: aux.Method, Path: aux.Path, Delay: d}
	return nil
}

// UnmarshalJSON accepts Delay as nanoseconds or a string ("20s"), as
// Latency's.
func (f *Fault) UnmarshalJSON(b []byte) error {
	type plain Fault // without this method
	var aux struct {
		plain
		Delay json.RawMessage
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	d, err := durationJSON(aux.Delay)
	if err != nil {
		return fmt.Errorf("delay: %w", err)
	}
	*f = Fault(aux.plain)
	f.Delay = d
	return nil
}

// PathMatches reports whether a request path matches a Fault or Latency
// path pattern: "" matches every path; a pattern ending in "*" with no
// other "*" matches every path with that prefix ("/v1/job/*"); a pattern
// with "*" elsewhere matches segment-wise, "*" standing for one path
// segment or part of one ("/v1/client/allocation/*/stats"); any other
// pattern must equal the path.
func PathMatches(pattern, p string) bool {
	if pattern == "" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok && !strings.Contains(prefix, "*") {
		return strings.HasPrefix(p, prefix)
	}
	if strings.Contains(pattern, "*") {
		ok, err := path.Match(pattern, p)
		return err == nil && ok
	}
	return pattern == p
}

// Request is one request the stand-in answered, for assertions.
type Request struct {
	Method string
	Path   string
	Query  string
	// Status is the answer's status code; 0 when no answer was sent (the
	// client gave up, or the stand-in stopped, first).
	Status int
	// HadToken says whether the request carried a token; the token itself
	// is never kept.
	HadToken bool
	// Route is the path with IDs replaced by placeholders, e.g.
	// "/v1/client/allocation/:id/stats".
	Route string
}

// Server is the stand-in. Create it with New, program it with AddNode,
// AddJob and the Set methods, point an api.Client at URL().
type Server struct {
	mu      sync.RWMutex
	index   uint64
	changed chan struct{} // closed and replaced on every index bump
	seq     uint64
	nodes   map[string]*node
	// nodeOrder is every node ID, sorted
	nodeOrder   []string
	allocs      map[string]*alloc
	allocSeq    uint64
	jobs        map[jobKey]*job
	evals       map[string]*api.Evaluation
	deployments map[string]*deploy
	blockedJobs map[jobKey]*job
	// table indexes, as Nomad answers list queries with them
	nodesIndex, allocsIndex, evalsIndex, jobsIndex, deploymentsIndex uint64
	policiesIndex                                                    uint64 // the scaling_policy table's
	algorithm                                                        api.SchedulerAlgorithm
	jobMaxCount                                                      int // SetJobMaxCount
	tokens                                                           map[string]TokenPolicy
	faults                                                           []*Fault
	latencies                                                        []Latency
	hook                                                             func(method, path string)
	// logMu guards the request log and counts, apart from mu: a request
	// is logged as its answer is written, which handlers do holding mu.
	logMu  sync.Mutex
	log    []Request
	counts RequestCounts
	// statsAge makes client and allocation stats carry a Timestamp this
	// far in the past (stale stats).
	statsAge time.Duration
	// statsEvery and statsFrom: a client's stats refreshed every
	// statsEvery from statsFrom (telemetry collection_interval), and
	// served as of the latest refresh; 0 is a refresh at every answer.
	statsEvery time.Duration
	statsFrom  time.Time
	// lifecycle
	addr string
	hs   *httptest.Server
	stop chan struct{} // closed when the current server generation stops
}

// TokenPolicy is what an ACL token may do.
type TokenPolicy struct {
	// Write allows writes (scaling, job registration, node drain and
	// eligibility); every token may read.
	Write bool
}

// New returns a started stand-in on a loopback address. Close it when done.
func New() (*Server, error) { return NewAt("127.0.0.1:0") }

// NewAt returns a started stand-in listening on addr ("127.0.0.1:0" picks
// a free port).
func NewAt(addr string) (*Server, error) {
	s := newServer()
	if err := s.start(addr); err != nil {
		return nil, err
	}
	return s, nil
}

func newServer() *Server {
	return &Server{
		index:       1,
		changed:     make(chan struct{}),
		nodes:       map[string]*node{},
		allocs:      map[string]*alloc{},
		jobs:        map[jobKey]*job{},
		evals:       map[string]*api.Evaluation{},
		deployments: map[string]*deploy{},
		blockedJobs: map[jobKey]*job{},
		algorithm:   api.SchedulerAlgorithmSpread,
		jobMaxCount: DefaultJobMaxCount,
		tokens:      map[string]TokenPolicy{},
		counts:      RequestCounts{ByRoute: map[string]int{}, ByPath: map[string]int{}},
	}
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
	s.mu.RLock()
	defer s.mu.RUnlock()
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

// Close stops the stand-in for good (and the timers of its deployments).
func (s *Server) Close() {
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.deployments {
		if d.timer != nil {
			d.timer.Stop()
		}
	}
}

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

// SetStatsInterval makes node client stats and allocation stats refresh
// every d from now on, as a Nomad client's telemetry collection_interval
// does: an answer carries the Timestamp of the latest refresh, so reads
// closer together than d repeat it. 0 (the default) refreshes at every
// answer.
func (s *Server) SetStatsInterval(d time.Duration) {
	s.mu.Lock()
	s.statsEvery, s.statsFrom = d, time.Now()
	s.mu.Unlock()
}

// statsTime is the Timestamp (Unix ns) of stats answered at now: the
// latest refresh, statsAge before it. The caller holds s.mu.
func (s *Server) statsTime(now time.Time) int64 {
	if s.statsEvery > 0 {
		now = s.statsFrom.Add(now.Sub(s.statsFrom).Truncate(s.statsEvery))
	}
	return now.Add(-s.statsAge).UnixNano()
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

// AddLatency delays every matching request by l.Delay (see Latency), e.g.
// AddLatency(Latency{Path: "/v1/client/allocation/*/stats", Delay: 110 *
// time.Millisecond}).
func (s *Server) AddLatency(l Latency) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies = append(s.latencies, l)
}

// ClearLatency removes every latency.
func (s *Server) ClearLatency() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies = nil
}

// Requests returns a copy of the request log (the last 100000 at most).
func (s *Server) Requests() []Request {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return append([]Request(nil), s.log...)
}

// RequestCounts counts the requests the stand-in served since it started
// (or since ResetRequests): in total, per "METHOD route" (IDs replaced by
// placeholders, e.g. "GET /v1/client/allocation/:id/stats") and per
// "METHOD path". Requests to /_standin/ are not counted.
type RequestCounts struct {
	Total   int
	ByRoute map[string]int
	ByPath  map[string]int
}

// RequestCounts returns a copy of the request counts.
func (s *Server) RequestCounts() RequestCounts {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	out := RequestCounts{Total: s.counts.Total, ByRoute: make(map[string]int, len(s.counts.ByRoute)), ByPath: make(map[string]int, len(s.counts.ByPath))}
	for k, v := range s.counts.ByRoute {
		out.ByRoute[k] = v
	}
	for k, v := range s.counts.ByPath {
		out.ByPath[k] = v
	}
	return out
}

// ResetRequests empties the request log and the counts.
func (s *Server) ResetRequests() {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	s.log = nil
	s.counts = RequestCounts{ByRoute: map[string]int{}, ByPath: map[string]int{}}
}

// Index is the current state index (what X-Nomad-Index reports).
func (s *Server) Index() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
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

// statusRecorder captures the status code for the request log, and logs
// the request (logf) as its status is written: before the client can have
// its answer, so that a caller that has its answer finds its request in
// Requests (logged once the handler returned, a large answer read in full
// before that was not yet there).
type statusRecorder struct {
	http.ResponseWriter
	status int
	logf   func(status int)
	logged bool
}

// log logs the request once.
func (r *statusRecorder) log() {
	if !r.logged {
		r.logged = true
		r.logf(r.status)
	}
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.log()
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.log()
	return r.ResponseWriter.Write(b)
}

// controlPrefix is where the stand-in's own endpoints live; Nomad has no
// such path.
const controlPrefix = "/_standin/"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, controlPrefix) {
		s.control(w, r)
		return
	}
	token := r.Header.Get("X-Nomad-Token")
	if token == "" {
		token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	route := routeOf(r.URL.Path)
	rec := &statusRecorder{ResponseWriter: w, logf: func(status int) {
		s.logMu.Lock()
		s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: status, HadToken: token != "", Route: route})
		if len(s.log) > 100000 {
			s.log = append([]Request(nil), s.log[len(s.log)/2:]...)
		}
		s.counts.Total++
		s.counts.ByRoute[r.Method+" "+route]++
		s.counts.ByPath[r.Method+" "+r.URL.Path]++
		s.logMu.Unlock()
	}}
	defer rec.log() // one that wrote nothing (its client gave up) as it ends

	s.mu.RLock()
	hook := s.hook
	s.mu.RUnlock()
	if hook != nil {
		hook(r.Method, r.URL.Path)
	}

	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err != nil {
			writeError(rec, errorf(http.StatusBadRequest, "reading request body: %v", err))
			return
		}
	}

	s.mu.Lock()
	stop := s.stop
	var delay time.Duration
	for _, l := range s.latencies {
		if (l.Method == "" || l.Method == r.Method) && PathMatches(l.Path, r.URL.Path) {
			delay += l.Delay
		}
	}
	fault := s.matchFaultLocked(r, body)
	policy, known := s.tokens[token]
	aclOn := len(s.tokens) > 0
	index := s.index
	s.mu.Unlock()

	if fault != nil {
		delay += fault.Delay
	}
	if !wait(r, stop, delay) {
		return
	}
	if fault != nil && fault.Hang {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
		return
	}
	if fault != nil && fault.Status != 0 {
		msg := fault.Message
		if msg == "" {
			msg = "injected fault"
			if fault.Status == http.StatusNotFound {
				msg = "not found"
			}
		}
		if fault.Status == http.StatusNotFound && r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/v1/client/") {
			// As Nomad's "not found" for an object of its state, with the
			// read's query meta (a client endpoint's 404 has none).
			setQueryMeta(rec.Header(), index)
		}
		writeError(rec, errorf(fault.Status, "%s", msg))
		return
	}
	if aclOn && !known {
		writeError(rec, errorf(http.StatusForbidden, "Permission denied"))
		return
	}
	isWrite := r.Method == http.MethodPut || r.Method == http.MethodPost || r.Method == http.MethodDelete
	if aclOn && isWrite && !policy.Write {
		writeError(rec, errorf(http.StatusForbidden, "Permission denied"))
		return
	}
	s.route(rec, r, body, stop)
}

// wait sleeps d; it reports false when the client gave up or the stand-in
// stopped first.
func wait(r *http.Request, stop chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-stop:
		return false
	}
}

// control serves the stand-in's own endpoints (not Nomad's):
// GET /_standin/requests answers RequestCounts as JSON, DELETE resets the
// log and the counts; PUT /_standin/usage sets a group's usage (a
// GroupUsage, as in a scenario), so that a trial of the plugins against the stand-in in its
// own process can change what its replicas use while it runs.
func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == controlPrefix+"requests" && r.Method == http.MethodGet:
		writeJSON(w, s.Index(), s.RequestCounts())
	case r.URL.Path == controlPrefix+"requests" && r.Method == http.MethodDelete:
		s.ResetRequests()
		writeJSON(w, s.Index(), s.RequestCounts())
	case r.URL.Path == controlPrefix+"usage" && r.Method == http.MethodPut:
		var u GroupUsage
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&u); err != nil {
			writeError(w, errorf(http.StatusBadRequest, "stand-in usage: %v", err))
			return
		}
		for _, f := range [...]struct {
			name string
			v    float64
		}{{"CPUMHz", u.CPUMHz}, {"MemoryMB", u.MemoryMB}} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
				writeError(w, errorf(http.StatusBadRequest, "stand-in usage: %s is %v; it must be a finite number >= 0", f.name, f.v))
				return
			}
		}
		if err := s.SetGroupUsage(u.Namespace, u.Job, u.Group, u.CPUMHz, u.MemoryMB); err != nil {
			writeError(w, errorf(http.StatusNotFound, "stand-in usage: %v", err)) // no such job or group
			return
		}
		writeJSON(w, s.Index(), u)
	default:
		writeError(w, errorf(http.StatusNotFound, "unknown stand-in control path %q", r.URL.Path))
	}
}

// routeOf replaces the IDs in a Nomad API path by placeholders.
func routeOf(p string) string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) < 3 || parts[0] != "v1" {
		return p
	}
	switch parts[1] {
	case "node", "job", "allocation", "evaluation", "deployment":
		parts[2] = ":id"
	case "scaling":
		if len(parts) >= 4 && parts[2] == "policy" {
			parts[3] = ":id"
		}
	case "client":
		if len(parts) >= 4 && parts[2] == "allocation" {
			parts[3] = ":id"
		}
	}
	return "/" + strings.Join(parts, "/")
}

// matchFaultLocked returns the fault that applies to r, if any, counting
// it against Skip and Times.
func (s *Server) matchFaultLocked(r *http.Request, body []byte) *Fault {
	for i, f := range s.faults {
		if f.Method != "" && f.Method != r.Method {
			continue
		}
		if !PathMatches(f.Path, r.URL.Path) {
			continue
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
	h := w.Header()
	h.Set("Content-Type", "application/json")
	setQueryMeta(h, index)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// setQueryMeta sets the headers of Nomad's query meta (its setMeta).
func setQueryMeta(h http.Header, index uint64) {
	h.Set("X-Nomad-Index", strconv.FormatUint(max(index, 1), 10))
	h.Set("X-Nomad-KnownLeader", "true")
	h.Set("X-Nomad-LastContact", "0")
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
		s.mu.RLock()
		idx, v, err := read()
		changed, now := s.changed, s.index
		s.mu.RUnlock()
		var ae *apiError
		if errors.As(err, &ae) && ae.code == http.StatusNotFound {
			// Nomad sets a read's query meta before it answers 404 for an
			// object it does not have (setMeta, then "job not found"):
			// its index headers tell that 404 from a path it does not
			// serve, or from a server that is not Nomad. The index is
			// the one read gave (a table's), else the stand-in's.
			setQueryMeta(w.Header(), cmp.Or(idx, now))
		}
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
