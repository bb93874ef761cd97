package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

func TestSinceAndAgo(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(o results.Outcome, ago time.Duration) results.RecentRun {
		return results.RecentRun{Outcome: o, StartedAt: now.Add(-ago)}
	}
	streak := func(n int) []results.RecentRun {
		runs := make([]results.RecentRun, n)
		for i := range runs {
			runs[i] = at(results.Pass, time.Duration(n-i)*time.Minute)
		}
		return runs
	}
	tests := []struct {
		name string
		runs []results.RecentRun
		want string
	}{
		{"no runs", nil, ""},
		{"from the start of the streak",
			[]results.RecentRun{at(results.Pass, 9*time.Minute), at(results.ContractError, 5*time.Minute), at(results.ContractError, time.Minute)},
			"for 5m"},
		{"a streak broken by another outcome restarts",
			[]results.RecentRun{at(results.Unavailable, 3*time.Hour), at(results.Pass, 2*time.Hour), at(results.Unavailable, 30*time.Second)},
			"for 30s"},
		{"a streak shorter than the window that fills the runs", streak(3), "for 3m"},
		{"a streak that fills the whole window", streak(stripRuns), fmt.Sprintf("for %d+ runs", stripRuns)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := since(now, tt.runs); got != tt.want {
				t.Errorf("since = %q, want %q", got, tt.want)
			}
		})
	}
	for d, want := range map[time.Duration]string{
		0: "just now", 999 * time.Millisecond: "just now", 59 * time.Second: "59s ago", time.Minute: "1m ago",
		59 * time.Minute: "59m ago", 47 * time.Hour: "47h ago", 48 * time.Hour: "2d ago",
	} {
		if got := ago(d); got != want {
			t.Errorf("ago(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRefreshOf(t *testing.T) {
	tests := []struct {
		query   string
		want    time.Duration
		wantErr bool
	}{
		{"", defaultRefresh, false},
		{"refresh=0", 0, false},
		{"refresh=30", 30 * time.Second, false},
		{"refresh=1", minRefresh, false},
		{"refresh=999999", maxRefresh, false},
		{"refresh=-1", 0, true},
		{"refresh=soon", 0, true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/?"+tt.query, nil)
		got, err := refreshOf(r)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("refreshOf(%q) = %v, %v; want %v, error %v", tt.query, got, err, tt.want, tt.wantErr)
		}
	}
}

// statusFixture is a store holding a known story, served by the real
// HTTP surface with a fixed clock:
//   - search: passed twice, then drifted into a contract error (with a
//     response sample), and has failed since;
//   - tracker: unavailable after three attempts, every time;
//   - weather: passes;
//   - fresh: configured, never run;
//   - retired: has results but is no longer configured.
type statusFixture struct {
	srv   *httptest.Server
	now   time.Time
	store *sqlite.Store
}

func newStatusFixture(t *testing.T) *statusFixture {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "toolpulse.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ref := results.ConsumerRef{Name: "select_results", Version: "2", RuleHash: "9f86d081884c7d65"}
	listShape := &results.Shape{Fingerprint: "99ba02a8b482ce41", Canonical: "object{results:list<object{id:string}>}"}
	mapShape := &results.Shape{Fingerprint: "3a105e99edea2dbb", Canonical: "object{results:object{items:list<object{id:string}>}}"}
	n := 0
	runAt := func(probe string, ago time.Duration, o results.Outcome, ms int) results.Result {
		n++
		at := now.Add(-ago)
		r := results.Result{OperationID: fmt.Sprintf("op-%03d", n), Probe: probe, StartedAt: at,
			Duration: time.Duration(ms) * time.Millisecond, Outcome: o, Consumer: ref, HTTPStatus: 200,
			Attempts: []results.Attempt{{Number: 1, StartedAt: at, Duration: time.Duration(ms) * time.Millisecond, HTTPStatus: 200}}}
		switch o {
		case results.Pass:
			r.SelectedCount, r.ValidatedCount, r.Shape = 3, 3, listShape
		case results.ContractError:
			r.Error = results.NewError("unsupported_results_container", "results is map")
			r.Shape, r.ResponseSample = mapShape, `{"results":{"items":[{"id":"doc_784"}]}}`
		case results.Unavailable:
			r.Error, r.HTTPStatus = results.NewError(results.CodeServerError, "HTTP 503 after 3 attempts"), 503
			r.Attempts = nil
			for i := range 3 {
				r.Attempts = append(r.Attempts, results.Attempt{Number: i + 1, StartedAt: at.Add(time.Duration(i) * time.Second),
					Duration: 5 * time.Millisecond, HTTPStatus: 503, Code: results.CodeServerError, Message: "HTTP 503",
					Wait: time.Second * time.Duration(min(1, 2-i))})
			}
		}
		return r
	}
	record := func(r results.Result, drift *results.Drift) {
		t.Helper()
		if err := store.RecordRun(ctx, &results.RunRecord{Result: r, Drift: drift}); err != nil {
			t.Fatal(err)
		}
	}
	record(runAt("search", 4*time.Minute, results.Pass, 120), nil)
	record(runAt("search", 3*time.Minute, results.Pass, 80), nil)
	drifted := runAt("search", 2*time.Minute, results.ContractError, 40)
	record(drifted, &results.Drift{Probe: "search", OperationID: drifted.OperationID, DetectedAt: drifted.StartedAt,
		Baseline: listShape.Fingerprint, Current: mapShape.Fingerprint, Diff: []string{"results: list<object(1 keys)> -> object(1 keys)"}})
	// The latest search run fires an alert that Slack has refused once;
	// its answer still drifts (the profile has not learned it yet).
	firing := runAt("search", time.Minute, results.ContractError, 45)
	stillDrifted := *mapShape
	stillDrifted.Baseline, stillDrifted.Drift = listShape.Fingerprint, []string{"results: list<object(1 keys)> -> object(1 keys)"}
	firing.Shape = &stillDrifted
	alert := results.NewAlert(results.AlertFiring, &firing, firing.StartedAt)
	alert.Receiver = "default/slack"
	rec := &results.RunRecord{Result: firing, Alerts: []results.Alert{alert}, AlertState: &results.AlertState{Probe: "search",
		ConsecutiveFailures: 2, FailingSince: drifted.StartedAt, Firing: true, LastNotifiedAt: firing.StartedAt}}
	if err := store.RecordRun(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := store.MarkAlertRetry(ctx, rec.Alerts[0].ID, 1, now.Add(time.Minute), "HTTP 503 from Slack"); err != nil {
		t.Fatal(err)
	}
	record(runAt("tracker", 90*time.Second, results.Unavailable, 3015), nil)
	record(runAt("weather", 30*time.Second, results.Pass, 60), nil)
	record(runAt("retired", 72*time.Hour, results.Pass, 10), nil)

	probes := []*checks.Probe{
		{Name: "weather", Interval: time.Minute},
		{
			Name: "search",
			Steps: []checks.Step{{
				Request: checks.Request{Method: "POST", URL: "https://search.example.com/v1/search?api_key=k3y-in-the-query"},
				Consumer: &consumers.Consumer{Name: ref.Name, Version: ref.Version, RuleHash: ref.RuleHash,
					Select: "response.results | filter(.score >= 0.75)", Validate: `type(.id) == "string"`},
			}},
			Interval: 30 * time.Second,
			Labels:   map[string]string{"team": "search", "tier": "1"},
		},
		{Name: "fresh", Steps: []checks.Step{{MCP: &checks.MCP{URL: "http://user:pw-SECRET@tools.example.com:3901/mcp?token=t0k3n", Tool: "get-weather"}}}, Interval: time.Minute},
		{Name: "tracker", Interval: time.Minute},
	}
	srv := httptest.NewServer(NewServer(Deps{
		Logger: slog.New(slog.DiscardHandler), Healthy: func(context.Context) error { return nil }, Metrics: http.NotFoundHandler(),
		Store: store, Probes: func() []*checks.Probe { return probes }, Now: func() time.Time { return now },
	}))
	t.Cleanup(srv.Close)
	return &statusFixture{srv: srv, now: now, store: store}
}

func (f *statusFixture) get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// externalRef is an attribute or stylesheet reference to another site.
var externalRef = regexp.MustCompile(`(?i)(=\s*["']?|url\(\s*["']?)(https?:)?//`)

var rowState = regexp.MustCompile(`<tr class="probe" data-probe="([^"]+)" data-state="([^"]+)">`)

func TestStatusOverview(t *testing.T) {
	f := newStatusFixture(t)
	resp, body := f.get(t, "/")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET / = %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// Failing first (unavailable, then contract_error), then no data, then
	// pass; the retired probe is not listed.
	var rows []string
	for _, m := range rowState.FindAllStringSubmatch(body, -1) {
		rows = append(rows, m[1]+"="+m[2])
	}
	if got, want := strings.Join(rows, " "), "tracker=unavailable search=contract_error fresh=none weather=pass"; got != want {
		t.Errorf("rows %q, want %q", got, want)
	}
	for _, want := range []string{
		`4 probe(s):`,
		`<span class="sym" aria-hidden="true">✓</span> 1 pass`,
		`<span class="sym" aria-hidden="true">✗</span> 1 contract_error`,
		`<span class="sym" aria-hidden="true">!</span> 1 unavailable`,
		`<span class="sym" aria-hidden="true">·</span> 1 no data`,
		// The word is always there beside the colour.
		`<span class="badge contract_error"><span class="sym" aria-hidden="true">✗</span> contract_error</span>`,
		// search: the streak began with the drift, two minutes ago.
		`<div class="caption">for 2m</div>`,
		`<a class="name" href="/probes/search">search</a>`,
		`<span class="label">team=search</span> <span class="label">tier=1</span>`,
		`aria-label="last 4 runs, oldest to newest: 2 pass, 2 contract_error"`,
		`<div class="caption">2/4 pass</div>`,
		// the alert that fires, and that Slack has not taken yet
		`<strong>alert firing</strong> since <time datetime="2026-11-30T11:58:00.000Z" title="2026-11-30T11:58:00.000Z">2m ago</time>, notified <time datetime="2026-11-30T11:59:00.000Z" title="2026-11-30T11:59:00.000Z">1m ago</time>; last message (firing) <span class="delivery retrying">retrying</span>: HTTP 503 from Slack`,
		`<div class="caption">last 45ms · p95 120ms</div>`,
		`<code>unsupported_results_container</code></div><div class="message">results is map</div>`,
		`<time datetime="2026-11-30T11:58:00.000Z" title="2026-11-30T11:58:00.000Z">2m ago</time>: <code>99ba02a8b482ce41</code> → <code>3a105e99edea2dbb</code>`,
		"<pre class=\"diff\">results: list&lt;object(1 keys)&gt; -&gt; object(1 keys)\n</pre>",
		`<meta http-equiv="refresh" content="15">`,
		`<a href="/?refresh=0">stop</a>`,
		`<span class="muted">never</span>`, // fresh has not run
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	if strings.Contains(body, "retired") {
		t.Errorf("the overview lists a probe that is no longer configured")
	}

	_, failing := f.get(t, "/?show=failing&refresh=0")
	rows = rows[:0]
	for _, m := range rowState.FindAllStringSubmatch(failing, -1) {
		rows = append(rows, m[1])
	}
	if got := strings.Join(rows, " "); got != "tracker search" {
		t.Errorf("?show=failing lists %q, want tracker and search", got)
	}
	if strings.Contains(failing, `http-equiv="refresh"`) || !strings.Contains(failing, `4 probe(s):`) {
		t.Errorf("?refresh=0 still refreshes, or the counts no longer cover every probe")
	}
}

// TestDriftNow: the status page says whether the latest answer is drifted,
// as recorded, and how it stands against the last drift event.
func TestDriftNow(t *testing.T) {
	d := results.Drift{Baseline: "bbbb", Current: "cccc"}
	run := func(fp string, drift ...string) *results.Result {
		return &results.Result{Shape: &results.Shape{Fingerprint: fp, Drift: drift}}
	}
	tests := []struct {
		name   string
		latest *results.Result
		want   string
	}{
		{"no run", nil, ""},
		{"no shape", &results.Result{}, "the latest run has no shape (no JSON answer)"},
		{"still drifted", run("cccc", "a: number -> string"), "the latest run is in this drifted shape"},
		{"drifted elsewhere", run("dddd", "b: added (null)"), "the latest run is drifted too, in another shape, dddd"},
		{"back", run("bbbb"), "the latest run is back to the baseline shape"},
		{"learned", run("cccc"), "the latest run is in this shape, now learned: it no longer drifts"},
		{"fits", run("eeee"), "the latest run fits the learned shape, in eeee"},
	}
	for _, tt := range tests {
		if got := driftNow(d, tt.latest); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestStatusProbePage(t *testing.T) {
	f := newStatusFixture(t)
	resp, body := f.get(t, "/probes/tracker")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /probes/tracker = %d\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{
		`<h1>tracker <span class="badge unavailable"><span class="sym" aria-hidden="true">!</span> unavailable</span></h1>`,
		`<p class="message">HTTP 503 after 3 attempts</p>`,
		// each attempt of the last failure, with its back-off
		`<tr><td>1</td><td><time datetime="2026-11-30T11:58:30.000Z" title="2026-11-30T11:58:30.000Z">1m ago</time></td><td>5ms</td><td>503</td><td><code>server_error</code></td><td>HTTP 503</td><td>1000ms</td></tr>`,
		`<tr><td>3</td>`,
		`No response body was kept`,
		`No drift is recorded.`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/probes/tracker lacks %q", want)
		}
	}

	// An MCP probe shows its tool and server, without credentials or query.
	_, body = f.get(t, "/probes/fresh")
	if want := `<dt>MCP tool</dt><dd><code>get-weather</code> at <code>http://tools.example.com:3901/mcp</code></dd>`; !strings.Contains(body, want) {
		t.Errorf("/probes/fresh lacks %q", want)
	}
	if strings.Contains(body, "pw-SECRET") || strings.Contains(body, "t0k3n") {
		t.Errorf("/probes/fresh shows the MCP URL's credentials or query")
	}

	_, body = f.get(t, "/probes/search")
	for _, want := range []string{
		"<pre class=\"sample\">{&#34;results&#34;:{&#34;items&#34;:[{&#34;id&#34;:&#34;doc_784&#34;}]}}</pre>",
		`<pre class="shape">object{results:object{items:list&lt;object{id:string}&gt;}}</pre>`,
		`<dt>Interval</dt><dd>30s</dd>`,
		`<dd>select_results v2 <code>9f86d081884c7d65</code></dd>`,
		"results: list&lt;object(1 keys)&gt; -&gt; object(1 keys)",
		// the request without its query, the rules as written, and
		// whether the latest run is still in the drifted shape
		`<dt>Request</dt><dd><code>POST search.example.com/v1/search</code></dd>`,
		`<pre class="rule">response.results | filter(.score &gt;= 0.75)</pre>`,
		`<pre class="rule">type(.id) == &#34;string&#34;</pre>`,
		`<div class="caption">the latest run is in this drifted shape</div>`,
		`<dt>Alert</dt><dd><div class="caption alert"><strong>alert firing</strong>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/probes/search lacks %q", want)
		}
	}
	if strings.Contains(body, "k3y-in-the-query") || strings.Contains(body, "api_key") {
		t.Errorf("/probes/search shows the request's query")
	}
	if got := strings.Count(body, `<tr data-state=`); got != 4 {
		t.Errorf("/probes/search lists %d runs, want 4", got)
	}
	// Newest first: the last run listed is the first pass.
	if i, j := strings.Index(body, `<tr data-state="contract_error">`), strings.LastIndex(body, `<tr data-state="pass">`); i < 0 || j < i {
		t.Errorf("recent runs are not newest first")
	}

	_, body = f.get(t, "/probes/tracker")
	if !strings.Contains(body, "<dt>Alert</dt><dd>never alerted</dd>") {
		t.Errorf("/probes/tracker does not say it was never alerted")
	}
	_, body = f.get(t, "/probes/weather")
	if !strings.Contains(body, "No failed run is recorded.") {
		t.Errorf("/probes/weather does not say it never failed")
	}
	resp, body = f.get(t, "/probes/retired")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "not in the running config") {
		t.Errorf("/probes/retired = %d; want 200 with its stored results and a warning", resp.StatusCode)
	}
	resp, body = f.get(t, "/probes/fresh")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "No runs yet.") {
		t.Errorf("/probes/fresh = %d; want 200 saying it has not run", resp.StatusCode)
	}
}

func TestStatusPageErrorsAndHeaders(t *testing.T) {
	f := newStatusFixture(t)
	tests := []struct {
		path   string
		status int
		text   string
	}{
		{"/probes/nope", http.StatusNotFound, "no probe named &#34;nope&#34;"},
		{"/?refresh=soon", http.StatusBadRequest, "refresh: want a number of seconds"},
		{"/?show=everything", http.StatusBadRequest, "show: want failing or nothing"},
		{"/probes/search?refresh=-5", http.StatusBadRequest, "refresh:"},
	}
	for _, tt := range tests {
		resp, body := f.get(t, tt.path)
		if resp.StatusCode != tt.status || !strings.Contains(body, tt.text) || !strings.Contains(body, "<!doctype html>") {
			t.Errorf("GET %s = %d, want %d and an HTML page saying %q\n%s", tt.path, resp.StatusCode, tt.status, tt.text, body)
		}
	}
	for _, path := range []string{"/", "/probes/search", "/probes/nope"} {
		resp, body := f.get(t, path)
		csp := resp.Header.Get("Content-Security-Policy")
		for header, want := range map[string]string{
			"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
			"Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
		} {
			if got := resp.Header.Get(header); got != want {
				t.Errorf("GET %s: %s = %q, want %q", path, header, got, want)
			}
		}
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "style-src 'sha256-") || strings.Contains(csp, "script-src") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		// An MCP probe's server is shown as text (http://...), never as an
		// address the page loads or links to.
		if strings.Contains(body, "<script") || externalRef.MatchString(body) || strings.Contains(body, "style=") {
			t.Errorf("GET %s: the page loads something external, runs a script or uses inline style attributes", path)
		}
	}
}

// TestAPIProbesAlertState: /api/v1/probes says of each probe whether it
// fires, since when, when it was last notified and where its last message
// is; a probe never alerted has no message.
func TestAPIProbesAlertState(t *testing.T) {
	f := newStatusFixture(t)
	resp, body := f.get(t, "/api/v1/probes")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/probes = %d\n%s", resp.StatusCode, body)
	}
	var got struct {
		Probes []struct {
			Name  string     `json:"name"`
			Alert probeAlert `json:"alert"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	alerts := map[string]probeAlert{}
	for _, p := range got.Probes {
		alerts[p.Name] = p.Alert
	}
	search := alerts["search"]
	if !search.Firing || search.FailingSince != "2026-11-30T11:58:00.000Z" || search.LastNotifiedAt != "2026-11-30T11:59:00.000Z" {
		t.Errorf("search alert = %+v, want firing since 11:58, notified 11:59", search)
	}
	if m := search.LastMessage; m == nil || m.Kind != results.AlertFiring || m.Receiver != "default/slack" || m.Delivery != "retrying" ||
		m.Tries != 1 || m.LastError != "HTTP 503 from Slack" {
		t.Errorf("search last message = %+v, want the firing alert, retrying after one failure", m)
	}
	if w := alerts["weather"]; w.Firing || w.LastMessage != nil {
		t.Errorf("weather alert = %+v, want not firing and no message", w)
	}
	if !strings.Contains(body, `"last_message":null`) {
		t.Errorf("a probe never alerted does not show last_message null:\n%s", body)
	}
}

// TestNothingSelected: a run that selected nothing shows "–" in the check
// and history tables and on the probe page, never counts of zero that read
// like a measurement.
func TestNothingSelected(t *testing.T) {
	tests := []struct {
		name             string
		r                results.Result
		message, counted string
	}{
		{"pass with items", results.Result{Outcome: results.Pass, SelectedCount: 3, ValidatedCount: 3},
			"3 selected, 3 validated", "3/3"},
		{"pass of an empty list (min_results 0)", results.Result{Outcome: results.Pass},
			"–", "–"},
		{"unavailable", results.Result{Outcome: results.Unavailable, Error: results.NewError(results.CodeServerError, "HTTP 503")},
			"HTTP 503", "–"},
		{"empty selection", results.Result{Outcome: results.ContractError, Error: results.NewError(results.CodeEmptySelection, "none")},
			"none", "–"},
		{"invalid item", results.Result{Outcome: results.ContractError, SelectedCount: 2, ValidatedCount: 1,
			Error: results.NewError(results.CodeInvalidItem, "item 1")}, "item 1", "2/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := present.CodeAndMessage(&tt.r); got != tt.message {
				t.Errorf("table message %q, want %q", got, tt.message)
			}
			if got := newRunView(time.Now(), &tt.r).Selected; got != tt.counted {
				t.Errorf("probe page selected/validated %q, want %q", got, tt.counted)
			}
		})
	}
}
