package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// locationsFleetConfig is one config for six instances, two in each of
// three locations, on one Postgres: search runs from all three (K = 2, a
// majority) and wobbly from two of them (K = 2, both), with flap
// detection on its route. The provider answers per location and probe
// (the X-Location header and the path).
const locationsFleetConfig = `version: 1
storage:
  driver: postgres
  dsn: "${TOOLPULSE_PG_DSN}"
fleet: {node: "${TOOLPULSE_NODE}", location: "${TOOLPULSE_LOCATION}", lease: 2s}
server: {listen: "${TOOLPULSE_LISTEN}"}
defaults:
  interval: 1s
  jitter: 100ms
  timeout: 2s
  retries: {max_attempts: 1}
notify:
  slack: {webhook_url: "${TP_SLACK}"}
  on: [unavailable]
  failure_threshold: 1
  send_resolved: true
  routes:
    - match: {team: search}
      slack: {webhook_url: "${TP_SLACK}"}
      alertmanager: {url: "${TP_AM}"}
    - match: {team: wobbly}
      slack: {webhook_url: "${TP_SLACK}"}
      flapping: {changes: 2, window: 40s, stable_for: 4s}
consumers:
  - {name: c, select: response.items}
probes:
  - name: search
    request: {headers: {X-Location: "${TOOLPULSE_LOCATION}"}, url: "${TP_PROVIDER}/search"}
    consumer: c
    labels: {team: search}
    locations: [eu-west, us-east, ap-south]
  - name: wobbly
    request: {headers: {X-Location: "${TOOLPULSE_LOCATION}"}, url: "${TP_PROVIDER}/wobbly"}
    consumer: c
    labels: {team: wobbly}
    locations: [eu-west, us-east]
`

// locationsProvider answers each probe (by path) and location (by
// header): 503 while the test says that probe fails from that location,
// a list otherwise. It counts the calls.
type locationsProvider struct {
	mu      sync.Mutex
	failing map[string]bool // "probe location"
	calls   map[string]int
}

func (p *locationsProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/") + " " + r.Header.Get("X-Location")
	p.mu.Lock()
	p.calls[key]++
	fail := p.failing[key]
	p.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"items":[{"id":1}]}`)
}

// fail makes probe fail from locations, and pass from every other.
func (p *locationsProvider) fail(probe string, locations ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.failing {
		if strings.HasPrefix(k, probe+" ") {
			delete(p.failing, k)
		}
	}
	for _, l := range locations {
		p.failing[probe+" "+l] = true
	}
}

func (p *locationsProvider) count(probe, location string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[probe+" "+location]
}

// locationNode is one instance of TestLocationsFleet.
type locationNode struct {
	name, location, addr string
	proc                 *e2e.Daemon
	dead                 bool
}

// TestLocationsFleet runs three locations of two instances each as real
// processes on one Postgres, a provider that fails per location and a
// loopback Slack. (c) The decider is killed (kill -9) while a page fires:
// another instance takes the decider's lease, and the page and its
// resolve are each sent once. (b) wobbly fails from both its locations by
// turns: one firing, one resolved, one flapping message, then quiet
// until it settles (one resolved). (a) Both instances of ap-south are
// killed while eu-west fails alone: ap-south goes silent, announced once
// (location_silent), and nobody is paged; when us-east fails too, two
// locations really fail and search pages once, ap-south shown silent.
func TestLocationsFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("six instances for about a minute; skipped with -short")
	}
	dsn := pgtest.Database(t)
	e2e.Binary(t)
	began := time.Now()
	prov := &locationsProvider{failing: map[string]bool{}, calls: map[string]int{}}
	provURL := e2e.Serve(t, prov)
	slack, slackURL := e2e.Slack(t)
	amURL := e2e.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	config := filepath.Join(t.TempDir(), "checks.yaml")
	if err := os.WriteFile(config, []byte(locationsFleetConfig), 0o644); err != nil {
		t.Fatal(err)
	}

	var nodes []*locationNode
	for _, loc := range []string{"eu-west", "us-east", "ap-south"} {
		for i := 1; i <= 2; i++ {
			n := &locationNode{name: fmt.Sprintf("%s-%d", loc[:2], i), location: loc, addr: e2e.FreeAddr(t)}
			n.proc = e2e.StartCommand(t, harness.Command{
				Args: []string{"-c", config, "run", "--grace", "2s"},
				Env: []string{"TOOLPULSE_PG_DSN=" + dsn, "TOOLPULSE_NODE=" + n.name, "TOOLPULSE_LOCATION=" + loc,
					"TOOLPULSE_LISTEN=" + n.addr, "TP_PROVIDER=" + provURL, "TP_SLACK=" + slackURL, "TP_AM=" + amURL},
			})
			nodes = append(nodes, n)
		}
	}
	logf := func(format string, args ...any) {
		t.Logf("%6.2fs "+format, append([]any{time.Since(began).Seconds()}, args...)...)
	}
	waitFor := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %v waiting for %s; Slack got:\n%s", timeout, what, slackTexts(slack))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// runs waits until probe made n more calls from each of locations.
	runs := func(n int, probe string, locations ...string) {
		t.Helper()
		from := map[string]int{}
		for _, l := range locations {
			from[l] = prov.count(probe, l)
		}
		waitFor(fmt.Sprintf("%d runs of %s from %v", n, probe, locations), 20*time.Second, func() bool {
			for _, l := range locations {
				if prov.count(probe, l) < from[l]+n {
					return false
				}
			}
			return true
		})
	}
	// posts counts the accepted Slack messages whose text contains substr.
	posts := slack.Count
	decider := func() string {
		return pgtest.Exec(t, dsn, `SELECT coalesce(holder, '') FROM fleet WHERE location = '_decider' AND expires_at > now()`)
	}
	settled := func() bool {
		return pgtest.Exec(t, dsn, `SELECT count(*) FROM alerts WHERE state NOT IN ('delivered', 'skipped')`) == "0"
	}
	kill := func(n *locationNode) {
		t.Helper()
		_ = n.proc.Stop(syscall.SIGKILL)
		n.dead = true
		logf("kill -9 %s (%s)", n.name, n.location)
	}

	// Every location runs both probes, and some instance decides.
	runs(2, "search", "eu-west", "us-east", "ap-south")
	runs(2, "wobbly", "eu-west", "us-east")
	waitFor("a decider", 15*time.Second, func() bool { return decider() != "" })
	logf("running; %s decides", decider())

	// (c) Two of three fail: one page. Its decider is killed once the page
	// is delivered; another takes over, and the resolve comes once.
	prov.fail("search", "eu-west", "us-east")
	waitFor("search's page", 15*time.Second, func() bool { return posts(":large_orange_circle: search unavailable") >= 1 && settled() })
	first := decider()
	for _, n := range nodes {
		if n.name == first {
			kill(n)
		}
	}
	waitFor("a new decider", 10*time.Second, func() bool { h := decider(); return h != "" && h != first })
	now := decider()
	logf("%s decides after %s", now, first)
	// Every living instance's /healthz names the new decider.
	for _, n := range nodes {
		if n.dead {
			continue
		}
		var v struct{ Decider struct{ Node string } }
		_, body := healthzBodyWithin("http://"+n.addr+"/healthz", 2*time.Second)
		if err := json.Unmarshal([]byte(body), &v); err != nil || v.Decider.Node != now {
			t.Errorf("%s's /healthz after the decider's failover: %s, want decider %s", n.name, body, now)
		}
	}
	runs(2, "search", "eu-west", "us-east", "ap-south")
	prov.fail("search")
	waitFor("search's resolve", 15*time.Second, func() bool { return posts("search resolved") >= 1 && settled() })
	runs(2, "search", "eu-west", "us-east", "ap-south")
	if got, want := posts(":large_orange_circle: search unavailable"), 1; got != want {
		t.Errorf("search's pages across the decider's failover: %d, want %d", got, want)
	}
	if got, want := posts("search resolved"), 1; got != want {
		t.Errorf("search's resolves across the decider's failover: %d, want %d", got, want)
	}

	// (b) wobbly fails from both locations by turns: firing, resolved,
	// then the third change is flapping, and every change after it is
	// quiet. Once passing for stable_for, it settles: resolved.
	for i := range 6 {
		if i%2 == 0 {
			prov.fail("wobbly", "eu-west", "us-east")
		} else {
			prov.fail("wobbly")
		}
		runs(2, "wobbly", "eu-west", "us-east")
	}
	prov.fail("wobbly")
	waitFor("wobbly's flapping, then its settling", 20*time.Second, func() bool {
		return posts("wobbly flapping") == 1 && posts("wobbly resolved") == 2 && settled()
	})
	for kind, want := range map[string]int{":large_orange_circle: wobbly unavailable": 1, "wobbly resolved": 2, "wobbly flapping": 1} {
		if got := posts(kind); got != want {
			t.Errorf("wobbly flapping from both locations: %d messages %q, want %d", got, kind, want)
		}
	}
	logf("wobbly flapped and settled")

	// (a) ap-south fails alone, then dies failing. Once silent (two
	// intervals and the grace), it is announced once and counts neither
	// way: eu-west failing then would make two with ap-south's last
	// verdict, but a silent location never fires the probe.
	prov.fail("search", "ap-south")
	runs(3, "search", "ap-south")
	for _, n := range nodes {
		if n.location == "ap-south" && !n.dead {
			kill(n)
		}
	}
	waitFor("ap-south's location_silent", 25*time.Second, func() bool {
		return posts("search: location ap-south") >= 1 && settled()
	})
	logf("ap-south announced silent")
	prov.fail("search", "eu-west")
	runs(3, "search", "eu-west", "us-east")
	if got := posts(":large_orange_circle: search unavailable"); got != 1 {
		t.Errorf("eu-west failing and ap-south dead: %d pages of search in all, want the first one only", got)
	}
	// Two locations really fail: one page, ap-south shown silent.
	prov.fail("search", "eu-west", "us-east")
	waitFor("search's second page", 15*time.Second, func() bool { return posts(":large_orange_circle: search unavailable") >= 2 && settled() })
	runs(2, "search", "eu-west", "us-east")
	if got := posts(":large_orange_circle: search unavailable"); got != 2 {
		t.Errorf("eu-west and us-east failing, ap-south dead: %d pages of search in all, want 2", got)
	}
	page := lastContaining(slack, ":large_orange_circle: search unavailable")
	for _, w := range []string{"eu-west: failing, unavailable", "us-east: failing, unavailable", "ap-south: silent since"} {
		if !strings.Contains(page, w) {
			t.Errorf("the page with ap-south dead lacks %q:\n%s", w, page)
		}
	}
	if got := posts("search: location ap-south"); got != 1 {
		t.Errorf("ap-south's location_silent messages: %d, want 1", got)
	}

	// (c, again) The decider is killed while search fires and ap-south is
	// silent: the next one takes over what Alertmanager was told is
	// active, both, to re-post them.
	last := decider()
	for _, n := range nodes {
		if n.name == last {
			kill(n)
		}
	}
	waitFor("a third decider", 10*time.Second, func() bool { h := decider(); return h != "" && h != last })
	next := decider()
	logf("%s decides after %s", next, last)
	for _, n := range nodes {
		if n.name != next {
			continue
		}
		n.proc.WaitWithin("the new decider restoring Alertmanager", 10*time.Second, func() bool {
			return strings.Contains(n.proc.Log.String(), `msg="re-posting the alerts still active" role=decider`)
		})
		line := ""
		for l := range strings.Lines(n.proc.Log.String()) {
			if strings.Contains(l, `msg="re-posting the alerts still active" role=decider`) {
				line = l
			}
		}
		if !strings.Contains(line, "receiver=routes[0]/alertmanager alerts=2") {
			t.Errorf("the new decider restored: %s; want routes[0]/alertmanager's two (search firing, ap-south silent)", line)
		}
	}

	// The store agrees with Slack: each transition recorded once, by the
	// decider.
	for kind, want := range map[string]string{"firing": "3", "resolved": "3", "flapping": "1", "location_silent": "1"} {
		got := pgtest.Exec(t, dsn, `SELECT count(*) FROM alerts WHERE decider = '_decider' AND receiver LIKE '%/slack' AND kind = '`+kind+`'`)
		if got != want {
			t.Errorf("the decider's %s alerts in the store: %s, want %s", kind, got, want)
		}
	}
	if n := pgtest.Exec(t, dsn, `SELECT count(*) FROM alerts WHERE receiver = 'routes[0]/alertmanager' AND kind = 'location_silent'`); n != "1" {
		t.Errorf("location_silent alerts to Alertmanager: %s, want 1", n)
	}
	if n := pgtest.Exec(t, dsn, `SELECT count(*) FROM alerts WHERE decider IS DISTINCT FROM '_decider'`); n != "0" {
		t.Errorf("alerts not from the decider: %s, want 0 (every probe runs from several locations)", n)
	}
	logf("done: %d Slack messages", len(slack.Messages()))
}

// slackTexts is every message's fallback text, one a line.
func slackTexts(s *harness.Slack) string {
	var b strings.Builder
	for _, m := range s.Messages() {
		fmt.Fprintf(&b, "%s %s\n", m.At.Format("15:04:05.000"), m.Text)
	}
	return b.String()
}

// lastContaining is the whole post of the last message whose text
// contains substr.
func lastContaining(s *harness.Slack, substr string) string {
	ms := s.Messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if strings.Contains(ms[i].Text, substr) {
			return string(ms[i].Body)
		}
	}
	return ""
}
