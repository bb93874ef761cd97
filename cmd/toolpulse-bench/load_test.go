package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

func TestParseMix(t *testing.T) {
	for _, c := range []struct {
		in   string
		want benchMix
	}{
		{"pass=90,contract_error=5,unavailable=5", benchMix{90, 5, 5}},
		{"pass=1", benchMix{Pass: 1}},
		{" unavailable=3 , pass=1", benchMix{Pass: 1, Unavailable: 3}},
	} {
		got, err := parseMix(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseMix(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "pass", "pass=x", "pass=-1", "pass=0", "pass=1,pass=2", "flaky=1"} {
		if _, err := parseMix(bad); err == nil {
			t.Errorf("parseMix(%q): no error", bad)
		}
	}
	if got := (benchMix{18, 1, 1}).String(); got != "pass=90,contract_error=5,unavailable=5" {
		t.Errorf("String() = %s", got)
	}
}

// TestMixPick checks that the answers follow the weights over many runs,
// and that both kinds of each failure occur.
func TestMixPick(t *testing.T) {
	m := benchMix{Pass: 90, ContractError: 5, Unavailable: 5}
	var n [answerKinds]int
	const probes, runs = 100, 100
	for p := range probes {
		for seq := range uint64(runs) {
			n[m.pick(p, seq)]++
		}
	}
	total := float64(probes * runs)
	share := func(kinds ...int) float64 {
		s := 0
		for _, k := range kinds {
			s += n[k]
		}
		return 100 * float64(s) / total
	}
	for _, c := range []struct {
		name   string
		got    float64
		lo, hi float64
	}{
		{"pass", share(answerPass), 89, 91},
		{"contract_error", share(answerResultsMap, answerStringScore), 4.3, 5.7},
		{"unavailable", share(answer503, answerClose), 4.3, 5.7},
		{"results map", share(answerResultsMap), 1.5, 3.5},
		{"connection closed", share(answerClose), 1.5, 3.5},
	} {
		if c.got < c.lo || c.got > c.hi {
			t.Errorf("%s: %.2f %%, want %v to %v", c.name, c.got, c.lo, c.hi)
		}
	}
	if n[answerPassItems] != 0 {
		t.Errorf("the mix drifted %d answers; only drift probes do", n[answerPassItems])
	}
}

// TestCannedAnswers runs every canned answer through the built-in consumer
// and through consumers/select_results.yaml, which it stands in for: each
// must end in the outcome the provider means by it, the same in both, and
// the two must also agree on every fixture of the file.
func TestCannedAnswers(t *testing.T) {
	builtin, errs := consumers.Compile(consumers.Source{
		Name: builtinConsumerName, Version: builtinConsumerVersion,
		Select: builtinConsumerSelect, Validate: builtinConsumerValidate,
	})
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	file, err := checks.LoadConsumer("../../consumers/select_results.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if file.Name != builtinConsumerName || file.Version != builtinConsumerVersion {
		t.Errorf("select_results.yaml is %s@%s, the built-in %s@%s", file.Name, file.Version, builtinConsumerName, builtinConsumerVersion)
	}
	apply := func(c *consumers.Consumer, body any) results.Code {
		v := c.Apply(consumers.Input{Response: body, Status: 200}, 1)
		if v.Err == nil {
			return ""
		}
		return v.Err.Code
	}

	answers := cannedAnswers(20, 2048)
	if n := len(answers[answerPass].body); n < 1900 || n > 2100 {
		t.Errorf("passing answer: %d bytes, want about 2048", n)
	}
	for kind, want := range map[int]results.Code{
		answerPass:        "",
		answerPassItems:   "",
		answerResultsMap:  "unsupported_results_container",
		answerStringScore: results.CodeRuleError,
	} {
		body, err := consumers.DecodeJSON(answers[kind].body)
		if err != nil {
			t.Fatalf("%s: %v", answerNames[kind], err)
		}
		if got := apply(builtin, body); got != want {
			t.Errorf("%s: built-in consumer says %q, want %q", answerNames[kind], got, want)
		}
		if got := apply(file, body); got != want {
			t.Errorf("%s: select_results.yaml says %q, want %q", answerNames[kind], got, want)
		}
		if v := builtin.Apply(consumers.Input{Response: body, Status: 200}, 1); want == "" && v.Validated != 20 {
			t.Errorf("%s: %d items validated, want all 20", answerNames[kind], v.Validated)
		}
	}
	if answers[answer503].status != http.StatusServiceUnavailable {
		t.Errorf("503 answer has status %d", answers[answer503].status)
	}
	for _, f := range file.Fixtures {
		body := consumers.Normalize(f.Response)
		if a, b := apply(builtin, body), apply(file, body); a != b {
			t.Errorf("fixture %q: built-in %q, select_results.yaml %q", f.Name, a, b)
		}
	}
}

// TestProvider drives the provider in process: arrivals are recorded per
// probe, the mix decides ordinary probes, alert probes flip at their time
// after the epoch and note their first failing answer, and unknown paths
// are 404.
func TestProvider(t *testing.T) {
	p, err := newProvider(providerSpec{
		Probes: 3, Items: 2, ResponseBytes: 100, Mix: benchMix{Unavailable: 1}, Capacity: 4,
		Special: []specialProbe{
			{Probe: 1, Kind: specialAlert, At: 50 * time.Millisecond},
			{Probe: 2, Kind: specialDrift, Period: time.Hour},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	post := func(path string) (int, string, error) {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(`{"query":"x"}`))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	// Probe 0 is all unavailable: 503s and closed connections.
	var statuses, closed int
	for range 20 {
		status, _, err := post("/p/0")
		if err != nil {
			closed++
		} else if status == http.StatusServiceUnavailable {
			statuses++
		}
	}
	if statuses == 0 || closed == 0 || statuses+closed != 20 {
		t.Errorf("probe 0: %d 503s, %d closed connections of 20", statuses, closed)
	}
	// Before the epoch, special probes pass in the list layout.
	if status, body, err := post("/p/1"); err != nil || status != 200 || !strings.HasPrefix(body, `{"results":[`) {
		t.Errorf("alert probe before the epoch: %d %q %v", status, body, err)
	}
	if status, body, _ := post("/p/2"); status != 200 || !strings.HasPrefix(body, `{"results":[`) {
		t.Errorf("drift probe before the epoch: %d %q", status, body)
	}
	epoch := time.Now()
	resp, err := srv.Client().Post(srv.URL+epochPath+"?ns="+itoa64(epoch.UnixNano()), "", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("set the epoch: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, body, _ := post("/p/2"); !strings.HasPrefix(body, `{"results":{"items":`) {
		t.Errorf("drift probe in its first period: %q, want the items layout", body)
	}
	if _, body, _ := post("/p/1"); !strings.HasPrefix(body, `{"results":[`) {
		t.Errorf("alert probe before its flip: %q", body)
	}
	time.Sleep(time.Until(epoch.Add(60 * time.Millisecond)))
	for range 2 {
		if _, body, _ := post("/p/1"); !strings.HasPrefix(body, `{"results":{"hits":`) {
			t.Errorf("alert probe after its flip: %q, want results as a map", body)
		}
	}
	if status, _, _ := post("/p/3"); status != http.StatusNotFound {
		t.Errorf("/p/3 of 3 probes: %d, want 404", status)
	}

	r, err := srv.Client().Get(srv.URL + reportPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var rep providerReport
	if err := json.NewDecoder(r.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if got := []int{len(rep.Arrivals[0]), len(rep.Arrivals[1]), len(rep.Arrivals[2])}; !slices.Equal(got, []int{20, 4, 2}) {
		t.Errorf("arrivals per probe %v, want [20 4 2]", got)
	}
	if !slices.IsSorted(rep.Arrivals[0]) {
		t.Errorf("arrivals of probe 0 out of order")
	}
	ff := rep.FirstFail[1]
	if ff < epoch.Add(50*time.Millisecond).UnixNano() || ff < rep.Arrivals[1][2] || ff > rep.Arrivals[1][3] {
		t.Errorf("first failing answer at %d, want at the third arrival (%v), after the flip", ff, rep.Arrivals[1])
	}
	if rep.FirstFail[0] != 0 || rep.FirstFail[2] != 0 {
		t.Errorf("first fail noted for probes that are not alert probes: %v", rep.FirstFail)
	}
	if rep.Served["results_map"] != 2 || rep.Served["pass_items_layout"] != 1 || rep.Served["status_503"]+rep.Served["connection_closed"] != 20 {
		t.Errorf("served %v", rep.Served)
	}
}

func itoa64(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestStartLags(t *testing.T) {
	const ms = int64(time.Millisecond)
	iv := time.Second
	base := int64(1_000_000) * ms
	at := func(k int64, lag int64) int64 { return base + k*int64(iv) + lag*ms }
	arrivals := [][]int64{
		// The first run is 10ms late; the 4th (k=3) is skipped; k=2 is
		// retried 300ms after its first attempt.
		{at(0, 10), at(1, 0), at(2, 2), at(2, 302), at(4, 5), at(5, 1)},
		// Out of order, as concurrent handlers may record them; k=0 is
		// before the window.
		{at(1, 3) + 500*ms, at(0, 0) + 500*ms, at(2, 1) + 500*ms},
		// Late by more than half an interval, every run: lags are
		// measured from the most punctual run.
		{at(1, 700), at(2, 650), at(3, 720)},
		{},
	}
	got := startLags(arrivals, iv, at(1, 0), at(6, 0))
	// Lags 0, 2, 5, 1; 3, 1; 50, 0, 70.
	want := startLag{Runs: 9, SkippedTicks: 1, P50MS: 2, P99MS: 70, MaxMS: 70}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := startLags(nil, iv, 0, 1); got != (startLag{}) {
		t.Errorf("no arrivals: %+v", got)
	}
}

func TestParseMachineCPU(t *testing.T) {
	got, err := parseMachineCPU([]byte("cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"))
	if err != nil || got.Busy != 1610*time.Millisecond || got.Idle != 10200*time.Millisecond {
		t.Errorf("got %+v, %v; want busy 1.61s, idle 10.2s", got, err)
	}
	if _, err := parseMachineCPU([]byte("intr 1 2 3\n")); err == nil {
		t.Error("a /proc/stat without a cpu line parsed")
	}
}

func TestNearestRank(t *testing.T) {
	s := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[int]int64{50: 5, 99: 10, 10: 1, 1: 1, 100: 10} {
		if got := nearestRank(s, p); got != want {
			t.Errorf("p%d = %d, want %d", p, got, want)
		}
	}
}

func TestParseProc(t *testing.T) {
	// A command name with spaces and a parenthesis, as /proc allows.
	stat := []byte("4242 (tool pulse) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 9 0 100 123456 789 18446744073709551615\n")
	cpu, err := parseProcCPU(stat)
	if err != nil || cpu != 3250*time.Millisecond {
		t.Errorf("parseProcCPU = %v, %v; want 3.25s (250 + 75 ticks)", cpu, err)
	}
	if _, err := parseProcCPU([]byte("4242 (x) S 1")); err == nil {
		t.Error("a short stat line parsed")
	}
	status := []byte("Name:\ttoolpulse\nVmHWM:\t   81920 kB\nVmRSS:\t   40960 kB\nThreads:\t12\n")
	rss, hwm, threads, err := parseProcStatus(status)
	if err != nil || rss != 40<<20 || hwm != 80<<20 || threads != 12 {
		t.Errorf("parseProcStatus = %d, %d, %d, %v", rss, hwm, threads, err)
	}
	if _, _, _, err := parseProcStatus([]byte("Name:\tx\nVmRSS:\t1 kB\n")); err == nil {
		t.Error("a status without VmHWM and Threads parsed")
	}
	// The real thing, for this process.
	if ps, err := readProcStat(0); err != nil || ps.RSS <= 0 || ps.HWM < ps.RSS || ps.Threads <= 0 {
		t.Errorf("readProcStat(self) = %+v, %v", ps, err)
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP toolpulse_runs_total Runs finished.
# TYPE toolpulse_runs_total counter
toolpulse_runs_total{code="none",outcome="pass",probe="probe-0001"} 12
toolpulse_runs_total{code="rule_error",outcome="contract_error",probe="a } b"} 3
toolpulse_go_goroutines 42
toolpulse_build_info{version="(devel)"} 1
toolpulse_go_memstats_heap_inuse_bytes 1.2e+07
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"toolpulse_runs_total": 15, goroutinesMetric: 42, heapInuseMetric: 12e6} {
		if m[name] != want {
			t.Errorf("%s = %v, want %v", name, m[name], want)
		}
	}
	if _, err := parseMetrics(strings.NewReader("x{a=\"b\" 1\n")); err == nil {
		t.Error("unterminated labels parsed")
	}
}

func TestScanDaemonLog(t *testing.T) {
	log := []byte(`{"time":"t","level":"WARN","msg":"alert delivery failed; will retry"}
{"time":"t","level":"ERROR","msg":"recording the run failed"}

{"time":"t","level":"INFO","msg":"probe run"}
panic: boom
`)
	got := scanDaemonLog(log)
	if got.ErrorLines != 2 || got.WarnLines != 1 || len(got.FirstErrors) != 2 || got.FirstErrors[1] != "panic: boom" {
		t.Errorf("got %+v", got)
	}
	if clean := scanDaemonLog([]byte(`{"level":"INFO","msg":"x"}` + "\n")); clean.ErrorLines != 0 || clean.FirstErrors == nil {
		t.Errorf("clean log: %+v", clean)
	}
}

func TestExpandSoakShorthand(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"--soak", "10m", "--probes", "5"}, []string{"soak", "--duration", "10m", "--probes", "5"}},
		{[]string{"-soak=2m"}, []string{"soak", "--duration", "2m"}},
		{[]string{"soak", "--duration", "1m"}, []string{"soak", "--duration", "1m"}},
		{[]string{"--soak"}, []string{"--soak"}},
		{[]string{"run", "--soak", "1m"}, []string{"run", "--soak", "1m"}},
	} {
		if got := expandSoakShorthand(c.in); !slices.Equal(got, c.want) {
			t.Errorf("%v: %v, want %v", c.in, got, c.want)
		}
	}
}

// TestWriteConfig loads a generated config with toolpulse's own loader:
// the probes, the built-in consumer, the clamped jitter and the Slack sink
// must all be accepted as written.
func TestWriteConfig(t *testing.T) {
	dir := t.TempDir()
	o, err := parseRunFlags([]string{"--probes", "3", "--interval", "2s", "--jitter", "5s", "--max-attempts", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{opts: o.loadOptions, dir: dir, cfgPath: dir + "/checks.yaml", dbPath: dir + "/x$y.db",
		listen: "127.0.0.1:1", names: benchProbeNames(3),
		provider: &providerProc{addr: "127.0.0.1:2"}, slackURL: "http://127.0.0.1:3/services/bench"}
	if err := s.prepareConsumer(); err != nil {
		t.Fatal(err)
	}
	if err := s.writeConfig([]int{0, 2}); err != nil {
		t.Fatal(err)
	}
	cfg, err := checks.Load(s.cfgPath, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Probes) != 2 || cfg.Probes[0].Name != "probe-0001" || cfg.Probes[1].Name != "probe-0003" {
		t.Fatalf("probes %v", cfg.Probes)
	}
	p := cfg.Probes[1]
	if p.Interval != 2*time.Second || p.Jitter != 2*time.Second-time.Millisecond || p.Steps[0].Retries.MaxAttempts != 2 {
		t.Errorf("probe %+v", p)
	}
	if p.Consumer().Name != builtinConsumerName || cfg.Storage.Path != dir+"/x$y.db" || cfg.Notify.FailureThreshold != 1 {
		t.Errorf("consumer %s, storage %s, threshold %d", p.Consumer().Name, cfg.Storage.Path, cfg.Notify.FailureThreshold)
	}
}
