package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The provider is the fake HTTP tool the daemon probes during `run` and
// `soak`. It runs as a process of its own, the bench binary started again
// in the hidden `provider` mode, so that its CPU is not the bench's nor the
// daemon's, and /proc can tell all three apart.

// providerEnv marks the re-executed bench as the provider. The mode is
// chosen by its arguments; the variable lets a test binary, which has no
// modes of its own, hand over to run() (see TestMain).
const providerEnv = "TOOLPULSE_BENCH_CHILD"

// Paths of the provider: probe i is served at /p/i; the bench talks to
// the provider through the other two.
const (
	probePathPrefix = "/p/"
	epochPath       = "/_bench/epoch"
	reportPath      = "/_bench/report"
)

// providerSpec is everything the provider serves; the bench writes it as
// JSON for the provider to read.
type providerSpec struct {
	Probes        int      `json:"probes"`
	Items         int      `json:"items"`
	ResponseBytes int      `json:"response_bytes"`
	Mix           benchMix `json:"mix"`
	// Capacity is how many arrivals to preallocate per probe.
	Capacity int            `json:"capacity"`
	Special  []specialProbe `json:"special"`
	// Kind is what each probe path serves: kindHTTP (the JSON API),
	// kindMCP (one tool of an MCP server, in MCPEra; see mcpserver.go) or
	// kindSteps (a three-step flow; see stepsserver.go).
	Kind   string `json:"kind"`
	MCPEra string `json:"mcp_era,omitempty"`
}

// What the probes call (--kind).
const (
	kindHTTP  = "http"
	kindMCP   = "mcp"
	kindSteps = "steps"
)

// exchangesPerRun is how many HTTP requests a passing run of a probe of
// kind makes: the daemon's CPU per run divided by it is its CPU per
// exchange, the unit in which other kinds are compared with an HTTP
// probe's run.
func exchangesPerRun(kind, mcpEra string) int {
	switch {
	case kind == kindSteps:
		return 3 // create, confirm, verify
	case kind == kindMCP && mcpEra == mcpLegacy:
		return 6 // server/discover (refused), initialize, initialized, tools/list, tools/call, DELETE
	case kind == kindMCP:
		return 3 // server/discover, tools/list, tools/call
	}
	return 1
}

// Kinds of special probe: those the mix does not decide.
const (
	// specialAlert passes until At after the epoch, then fails for good:
	// its first failing answer starts an alert latency measurement.
	specialAlert = "alert"
	// specialFlap passes until At after the epoch, then fails and passes
	// in turn, Period each: alerts fire and resolve.
	specialFlap = "flap"
	// specialDrift answers in the list layout until At after the epoch,
	// then switches layouts every Period: both pass, and the shape drifts.
	specialDrift = "drift"
)

// specialProbe is a probe whose answers follow the clock. Before the bench
// sets the epoch, every special probe passes.
type specialProbe struct {
	Probe  int           `json:"probe"`
	Kind   string        `json:"kind"`
	At     time.Duration `json:"at_ns"`
	Period time.Duration `json:"period_ns,omitempty"`
}

// providerReport is what the provider saw, fetched once the measurement is
// over.
type providerReport struct {
	// Arrivals are the Unix times in nanoseconds at which each probe's
	// requests arrived, per probe.
	Arrivals [][]int64 `json:"arrivals"`
	// FirstFail is when the first failing answer of each alert probe was
	// served, in Unix nanoseconds; 0 when none was.
	FirstFail []int64 `json:"first_fail"`
	// Served counts the answers by kind.
	Served map[string]int64 `json:"served"`
	// Connections counts the TCP connections the daemon opened: far fewer
	// than requests when it keeps them alive.
	Connections int64 `json:"connections"`
}

var answerNames = [answerKinds]string{
	answerPass: "pass", answerPassItems: "pass_items_layout", answerResultsMap: "results_map",
	answerStringScore: "string_score", answer503: "status_503", answerClose: "connection_closed",
}

// cannedAnswer is a pre-encoded answer.
type cannedAnswer struct {
	status int
	body   []byte
	length []string // Content-Length, formatted once
}

var jsonContentType = []string{"application/json"}

type provider struct {
	spec    providerSpec
	answers [answerKinds]cannedAnswer
	probes  []providerProbe
	epoch   atomic.Int64 // Unix ns; 0 until the bench sets it
	served  [answerKinds]atomic.Int64
	conns   atomic.Int64
	mcp     *mcpEndpoint // nil unless the spec's kind is MCP
}

type providerProbe struct {
	mu        sync.Mutex
	arrivals  []int64
	requests  uint64
	firstFail int64
	special   *specialProbe
	// jobs counts the jobs a steps probe created: the probe's open job is
	// the last one (a probe never overlaps itself), confirmed or not.
	jobs      uint64
	confirmed bool
}

func newProvider(spec providerSpec) (*provider, error) {
	if spec.Probes < 1 || spec.Items < 1 {
		return nil, fmt.Errorf("provider: %d probes, %d items", spec.Probes, spec.Items)
	}
	p := &provider{spec: spec, probes: make([]providerProbe, spec.Probes)}
	p.answers = cannedAnswers(spec.Items, spec.ResponseBytes)
	switch spec.Kind {
	case "", kindHTTP, kindSteps:
	case kindMCP:
		if spec.MCPEra != mcpLegacy && spec.MCPEra != mcpStateless {
			return nil, fmt.Errorf("provider: MCP era %q", spec.MCPEra)
		}
		p.mcp = newMCPEndpoint(spec.MCPEra, p.answers)
	default:
		return nil, fmt.Errorf("provider: kind %q", spec.Kind)
	}
	for i := range p.probes {
		p.probes[i].arrivals = make([]int64, 0, spec.Capacity)
	}
	for i := range spec.Special {
		s := &spec.Special[i]
		if s.Probe < 0 || s.Probe >= spec.Probes {
			return nil, fmt.Errorf("provider: special probe %d of %d", s.Probe, spec.Probes)
		}
		if s.Kind != specialAlert && s.Period <= 0 {
			return nil, fmt.Errorf("provider: %s probe %d without a period", s.Kind, s.Probe)
		}
		p.probes[s.Probe].special = s
	}
	return p, nil
}

// cannedAnswers encodes every answer once. The passing body holds items
// results, each scored at least 0.8 so that select_results keeps them all,
// with titles padded so that the body is about responseBytes long.
func cannedAnswers(items, responseBytes int) [answerKinds]cannedAnswer {
	list := func(title string, stringScore bool) string {
		var b strings.Builder
		b.WriteByte('[')
		for i := range items {
			if i > 0 {
				b.WriteByte(',')
			}
			score := strconv.FormatFloat(0.8+float64(i%20)/100, 'f', 2, 64)
			if stringScore {
				score = strconv.Quote(score)
			}
			fmt.Fprintf(&b, `{"id":"doc_%05d","title":%q,"score":%s}`, i+1, title, score)
		}
		b.WriteByte(']')
		return b.String()
	}
	const base = "API migration guide"
	title := base
	if overhead := len(`{"results":,"next_cursor":null}`) + len(list("", false)); responseBytes > overhead {
		if n := (responseBytes - overhead) / items; n > len(base) {
			title = base + strings.Repeat(".", n-len(base))
		}
	}
	items1 := list(title, false)
	var a [answerKinds]cannedAnswer
	set := func(kind, status int, body string) {
		a[kind] = cannedAnswer{status: status, body: []byte(body), length: []string{strconv.Itoa(len(body))}}
	}
	set(answerPass, http.StatusOK, `{"results":`+items1+`,"next_cursor":null}`)
	set(answerPassItems, http.StatusOK, `{"results":{"items":`+items1+`},"next_cursor":null}`)
	set(answerResultsMap, http.StatusOK, `{"results":{"hits":`+items1+`},"next_cursor":null}`)
	set(answerStringScore, http.StatusOK, `{"results":`+list(title, true)+`,"next_cursor":null}`)
	set(answer503, http.StatusServiceUnavailable, `{"error":"service unavailable"}`)
	return a
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UnixNano()
	i, rest, ok := probeOfPath(r.URL.Path, len(p.probes))
	if !ok {
		p.control(w, r)
		return
	}
	pp := &p.probes[i]
	switch {
	case p.spec.Kind == kindSteps:
		p.serveStep(w, r, i, pp, rest, now)
		return
	case rest != "":
		http.NotFound(w, r)
		return
	case p.mcp != nil:
		p.serveMCP(w, r, i, pp)
		return
	}
	pp.mu.Lock()
	pp.arrivals = append(pp.arrivals, now)
	seq := pp.requests
	pp.requests++
	pp.mu.Unlock()

	kind, open := p.decide(w, i, pp, seq, now)
	if !open {
		return
	}
	a := &p.answers[kind]
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = a.length
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// decide picks and counts the answer the mix (or the probe's clock) gives
// the seq-th request of probe i at now. When that answer is a closed
// connection, decide closes it and open is false; otherwise the caller
// writes kind (a 503 where the connection could not be taken over).
func (p *provider) decide(w http.ResponseWriter, i int, pp *providerProbe, seq uint64, now int64) (kind int, open bool) {
	kind = p.answer(i, pp.special, seq, now)
	p.served[kind].Add(1)
	p.noteFailure(pp, kind)
	if kind != answerClose {
		return kind, true
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return kind, false
		}
	}
	return answer503, true
}

// noteFailure remembers when an alert probe was first answered kind, if
// that is a failure: the start of its alert latency.
func (p *provider) noteFailure(pp *providerProbe, kind int) {
	if s := pp.special; s != nil && s.Kind == specialAlert && kind != answerPass {
		pp.mu.Lock()
		if pp.firstFail == 0 {
			pp.firstFail = time.Now().UnixNano()
		}
		pp.mu.Unlock()
	}
}

func (p *provider) connState(_ net.Conn, state http.ConnState) {
	if state == http.StateNew {
		p.conns.Add(1)
	}
}

// probeOfPath parses /p/N and /p/N/REST, for N below n; rest is "" or
// starts with a slash.
func probeOfPath(path string, n int) (i int, rest string, ok bool) {
	tail, ok := strings.CutPrefix(path, probePathPrefix)
	if !ok {
		return 0, "", false
	}
	num := tail
	if j := strings.IndexByte(tail, '/'); j >= 0 {
		num, rest = tail[:j], tail[j:]
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 || i >= n {
		return 0, "", false
	}
	return i, rest, true
}

// answer decides the answer to the seq-th request of probe i at now.
func (p *provider) answer(i int, s *specialProbe, seq uint64, now int64) int {
	if s == nil {
		return p.spec.Mix.pick(i, seq)
	}
	epoch := p.epoch.Load()
	if epoch == 0 || now < epoch+int64(s.At) {
		return answerPass
	}
	if s.Kind == specialAlert {
		return answerResultsMap
	}
	turn := (now - epoch - int64(s.At)) / int64(s.Period)
	switch {
	case s.Kind == specialFlap && turn%2 == 0:
		return answerResultsMap
	case s.Kind == specialDrift && turn%2 == 0:
		return answerPassItems
	}
	return answerPass
}

func (p *provider) control(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == epochPath && r.Method == http.MethodPost:
		ns, err := strconv.ParseInt(r.URL.Query().Get("ns"), 10, 64)
		if err != nil || ns <= 0 {
			http.Error(w, "ns: want Unix nanoseconds", http.StatusBadRequest)
			return
		}
		p.epoch.Store(ns)
	case r.URL.Path == reportPath && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.report())
	default:
		http.NotFound(w, r)
	}
}

func (p *provider) report() providerReport {
	rep := providerReport{
		Arrivals:  make([][]int64, len(p.probes)),
		FirstFail: make([]int64, len(p.probes)),
		Served:    map[string]int64{},
	}
	for i := range p.probes {
		pp := &p.probes[i]
		pp.mu.Lock()
		rep.Arrivals[i] = append([]int64(nil), pp.arrivals...)
		rep.FirstFail[i] = pp.firstFail
		pp.mu.Unlock()
	}
	for k := range p.served {
		rep.Served[answerNames[k]] = p.served[k].Load()
	}
	rep.Connections = p.conns.Load()
	return rep
}

// runProvider is the hidden provider mode: it serves the spec on a
// loopback port, prints the address as its first line, and serves until
// stdin closes or a signal ends ctx. It logs nothing per request.
func runProvider(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("provider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	specPath := fs.String("spec", "", "the provider's spec, as JSON")
	if err := fs.Parse(args); err != nil {
		return &usageError{err}
	}
	b, err := os.ReadFile(*specPath)
	if err != nil {
		return err
	}
	var spec providerSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("%s: %w", *specPath, err)
	}
	p, err := newProvider(spec)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ConnState: p.connState}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Fprintln(stdout, ln.Addr().String()); err != nil {
		srv.Close()
		return err
	}
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	select {
	case <-ctx.Done():
	case <-stdinClosed:
	case err := <-served:
		return err
	}
	return srv.Close()
}

// providerProc is the provider process, seen from the bench.
type providerProc struct {
	cmd    *exec.Cmd
	addr   string
	stdin  io.WriteCloser
	stderr *bytes.Buffer // read only once exited is closed
	exited chan struct{}
	err    error
	client *http.Client
}

// startProvider writes spec into dir and starts the provider on it.
func startProvider(dir string, spec providerSpec) (*providerProc, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	specPath := filepath.Join(dir, "provider.json")
	if err := os.WriteFile(specPath, b, 0o644); err != nil {
		return nil, fmt.Errorf("write the provider's spec: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the bench binary to start the provider: %w", err)
	}
	cmd := exec.Command(exe, "provider", "--spec", specPath)
	cmd.Env = append(os.Environ(), providerEnv+"=provider")
	first := &firstLine{line: make(chan string, 1)}
	p := &providerProc{cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{}),
		client: &http.Client{Timeout: time.Minute}}
	cmd.Stdout, cmd.Stderr = first, p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the provider: %w", err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.addr = <-first.line:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("the provider exited: %v\n%s", p.err, p.stderr)
	case <-time.After(30 * time.Second):
		_ = p.stop()
		return nil, errors.New("the provider printed no address within 30s")
	}
}

func (p *providerProc) pid() int { return p.cmd.Process.Pid }

// url is where probe i is served.
func (p *providerProc) url(i int) string {
	return "http://" + p.addr + probePathPrefix + strconv.Itoa(i)
}

// setEpoch starts the clock of the special probes.
func (p *providerProc) setEpoch(ctx context.Context, t time.Time) error {
	url := "http://" + p.addr + epochPath + "?ns=" + strconv.FormatInt(t.UnixNano(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("provider: set the epoch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("provider: set the epoch: HTTP %d", resp.StatusCode)
	}
	return nil
}

// collect fetches what the provider saw.
func (p *providerProc) collect(ctx context.Context) (providerReport, error) {
	var rep providerReport
	resp, err := getOK(ctx, p.client, "http://"+p.addr+reportPath)
	if err != nil {
		return rep, fmt.Errorf("provider: report: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return rep, fmt.Errorf("provider: report: %w", err)
	}
	return rep, nil
}

// stop ends the provider: closing its stdin asks it to; SIGKILL follows
// if it has not exited after 10 seconds. Killing it ourselves is not a
// failure; the provider failing on its own is.
func (p *providerProc) stop() error {
	select {
	case <-p.exited:
	default:
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.exited
			return errors.New("the provider did not exit within 10s of its stdin closing")
		}
	}
	if p.err != nil {
		return fmt.Errorf("the provider: %w\n%s", p.err, p.stderr)
	}
	return nil
}

// firstLine is a writer that hands the first line written to it to line,
// and discards everything.
type firstLine struct {
	buf  []byte
	sent bool
	line chan string
}

func (f *firstLine) Write(b []byte) (int, error) {
	if !f.sent {
		f.buf = append(f.buf, b...)
		if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
			f.line <- strings.TrimSpace(string(f.buf[:i]))
			f.sent, f.buf = true, nil
		}
	}
	return len(b), nil
}
