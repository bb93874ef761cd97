package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
)

// deciderConfig is one config for three locations' instances: search runs
// from all three (K = 2, a majority), and pages through Slack.
const deciderConfig = `version: 1
storage:
  driver: postgres
  dsn: ${TP_PG_DSN}
fleet:
  node: ${TP_NODE}
  location: ${TP_LOCATION}
  lease: 2s
server:
  listen: ""
notify:
  slack: {webhook_url: "${TP_SLACK}"}
  on: [unavailable]
  send_resolved: true
consumers:
  - {name: c, select: response.items}
probes:
  - name: search
    request: {headers: {X-Location: "${TP_LOCATION}"}, url: "${TP_PROVIDER}"}
    consumer: c
    interval: 1s
    locations: [eu-west, us-east, ap-south]
`

// TestDeciderOnPostgres: three locations' instances on one Postgres, the
// provider failing for some of them. One location failing pages nobody;
// two of three page once, the message listing each location; the
// decider stopping hands over without paging again; all passing resolves
// once, from the new decider; with a location killed (silent) and one failing, nobody
// is paged: the dead location counts neither way, and is announced once
// on its own (location_silent).
func TestDeciderOnPostgres(t *testing.T) {
	db := pgtest.Database(t)
	var mu sync.Mutex
	failing := map[string]bool{"eu-west": true}
	calls := map[string]int{}
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		loc := r.Header.Get("X-Location")
		mu.Lock()
		calls[loc]++
		fail := failing[loc]
		mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"items":[{"id":1}]}`)
	}))
	t.Cleanup(provider.Close)
	var posts []string
	slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, string(body))
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(slack.Close)
	cfgPath := filepath.Join(t.TempDir(), "checks.yaml")
	if err := os.WriteFile(cfgPath, []byte(deciderConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	type instance struct {
		stop func()
		out  *bytes.Buffer
	}
	start := func(node, location string) *instance {
		out := &bytes.Buffer{}
		env := map[string]string{"TP_PG_DSN": db, "TP_PROVIDER": provider.URL, "TP_SLACK": slack.URL,
			"TP_NODE": node, "TP_LOCATION": location}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"-c", cfgPath, "run"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, out, out)
		}()
		var once sync.Once
		in := &instance{out: out, stop: func() {
			once.Do(func() {
				cancel()
				if code := <-done; code != exitOK {
					t.Errorf("run %s: exit %d\n%s", node, code, out.String())
				}
			})
		}}
		t.Cleanup(in.stop)
		return in
	}
	eu, us, ap := start("eu-1", "eu-west"), start("us-1", "us-east"), start("ap-1", "ap-south")
	logs := func() string {
		return "eu:\n" + eu.out.String() + "\nus:\n" + us.out.String() + "\nap:\n" + ap.out.String()
	}

	// runsOf waits until each of locations made n more calls.
	runsOf := func(n int, locations ...string) {
		t.Helper()
		mu.Lock()
		from := map[string]int{}
		for _, l := range locations {
			from[l] = calls[l]
		}
		mu.Unlock()
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			done := true
			for _, l := range locations {
				done = done && calls[l] >= from[l]+n
			}
			mu.Unlock()
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %d runs of %v: %v\n%s", n, locations, calls, logs())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	sent := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), posts...)
	}
	waitPosts := func(n int) []string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(sent()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %d messages, got %d\n%s", n, len(sent()), logs())
			}
			time.Sleep(50 * time.Millisecond)
		}
		return sent()
	}
	setFailing := func(locations ...string) {
		mu.Lock()
		failing = map[string]bool{}
		for _, l := range locations {
			failing[l] = true
		}
		mu.Unlock()
	}

	// One of three failing: a network's problem, nobody is paged.
	runsOf(4, "eu-west", "us-east", "ap-south")
	time.Sleep(2 * time.Second)
	if got := sent(); len(got) != 0 {
		t.Fatalf("one location of three failing sent %d messages:\n%s", len(got), strings.Join(got, "\n"))
	}

	// Two of three: one page, listing each location.
	setFailing("eu-west", "us-east")
	page := waitPosts(1)[0]
	for _, w := range []string{"eu-west: failing, unavailable", "us-east: failing, unavailable", "ap-south: passing"} {
		if !strings.Contains(page, w) {
			t.Errorf("the page lacks %q:\n%s", w, page)
		}
	}
	runsOf(3, "eu-west", "us-east", "ap-south")
	time.Sleep(2 * time.Second)
	if got := sent(); len(got) != 1 {
		t.Errorf("two of three failing for a while: %d messages, want 1:\n%s", len(got), strings.Join(got, "\n"))
	}

	// The decider stops while the page fires; its location goes on with a
	// second instance. The next decider neither pages again nor misses
	// the resolve.
	holder := func() string {
		return strings.TrimSpace(pgtest.Exec(t, db, `SELECT coalesce(holder, '') FROM fleet WHERE location = '_decider' AND expires_at > now()`))
	}
	first := holder()
	byNode := map[string]struct {
		in       *instance
		location string
	}{"eu-1": {eu, "eu-west"}, "us-1": {us, "us-east"}, "ap-1": {ap, "ap-south"}}
	old, ok := byNode[first]
	if !ok {
		t.Fatalf("the decider's lease is held by %q, want one of the instances\n%s", first, logs())
	}
	replacement := start(first+"-b", old.location)
	switch old.location {
	case "eu-west":
		eu = replacement
	case "us-east":
		us = replacement
	default:
		ap = replacement
	}
	old.in.stop()
	deadline := time.Now().Add(30 * time.Second)
	for h := holder(); h == "" || h == first; h = holder() {
		if time.Now().After(deadline) {
			t.Fatalf("no new decider after %s stopped\n%s", first, logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	runsOf(3, "eu-west", "us-east", "ap-south")
	time.Sleep(2 * time.Second)
	if got := sent(); len(got) != 1 {
		t.Errorf("after the decider's failover, still two of three failing: %d messages, want 1:\n%s", len(got), strings.Join(got, "\n"))
	}

	// All passing: resolved, once.
	setFailing()
	resolved := waitPosts(2)[1]
	if !strings.Contains(resolved, "ap-south: passing") {
		t.Errorf("the resolved message lacks the locations:\n%s", resolved)
	}

	// ap-south fails alone (nobody paged), then dies failing. Once it is
	// silent (two intervals and the grace), eu-west fails alone:
	// ap-south's last verdict and eu-west's would be two, but a silent
	// location never fires the probe.
	setFailing("ap-south")
	runsOf(3, "ap-south")
	ap.stop()
	time.Sleep(2*time.Second + 10*time.Second + 2*time.Second)
	setFailing("eu-west")
	runsOf(4, "eu-west", "us-east")
	time.Sleep(time.Second)
	// ap-south's silence is announced on its own, once; it pages nobody.
	if got := sent(); len(got) != 3 || !strings.Contains(got[2], "search: location ap-south silent") {
		t.Errorf("with ap-south dead and eu-west failing: %d messages, want 2 and ap-south's location_silent:\n%s", len(got), strings.Join(got[min(2, len(got)):], "\n"))
	}
	if n := pgtest.Exec(t, db, `SELECT count(*) FROM alerts WHERE probe = 'search' AND decider = '_decider' AND kind = 'firing'`); strings.TrimSpace(n) != "1" {
		t.Errorf("firing alerts the decider recorded: %s, want 1", n)
	}
	if n := pgtest.Exec(t, db, `SELECT count(*) FROM alerts WHERE probe = 'search' AND kind = 'location_silent' AND locations->0->>'location' = 'ap-south'`); strings.TrimSpace(n) != "1" {
		t.Errorf("location_silent alerts recorded: %s, want 1 about ap-south", n)
	}
}
