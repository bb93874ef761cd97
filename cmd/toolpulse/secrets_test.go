package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestSecretsStayHidden drives every failure path the daemon has with a
// recognisable secret in each place config can hold one: a header value,
// a URL's credentials, the Slack webhook URL and server.token. Providers
// echo whatever credentials they get, in bodies and in error pages. Then
// it searches everything toolpulse wrote or served: its logs, the
// database files, every page and API response, /metrics and every Slack
// message. Each secret is also searched in the base64 form Basic auth
// sends.
func TestSecretsStayHidden(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon for a few seconds")
	}
	const (
		headerSecret  = "hdr-secret-5d1c9a"
		urlSecret     = "url-secret-7e2b4f"
		webhookSecret = "hook-secret-3a9c1d"
		tokenSecret   = "srv-token-8f6e2b"
	)
	secrets := []string{headerSecret, urlSecret, webhookSecret, tokenSecret,
		base64.StdEncoding.EncodeToString([]byte("svc:" + urlSecret))}

	// An echo provider: /ok echoes the Authorization header inside valid
	// JSON the consumer rejects; /err answers 500 with it in the body; /key
	// echoes it as an object key.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/ok":
			fmt.Fprintf(w, `{"results": {"echo": %q, "url": %q}}`, auth, r.URL.String())
		case "/key":
			fmt.Fprintf(w, `{%q: [1]}`, auth)
		default:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "upstream rejected %s", auth)
		}
	}))
	defer echo.Close()
	// A Slack stand-in that records every message, and answers some with
	// an error page that echoes the URL it was called on.
	var (
		mu    sync.Mutex
		slack strings.Builder
		posts int
	)
	slackSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		posts++
		// The webhook URL is Slack's own address for it, so the path is
		// not recorded: only what toolpulse put in the message.
		fmt.Fprintf(&slack, "%s\n", body)
		if posts%3 == 0 {
			http.Error(w, "no_service: "+r.URL.String(), http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer slackSrv.Close()

	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	host := strings.TrimPrefix(echo.URL, "http://")
	config := fmt.Sprintf(`version: 1
storage: {path: results.db}
server: {listen: %q, token: %q}
defaults:
  interval: 200ms
  jitter: 50ms
  timeout: 1s
  retries: {max_attempts: 2, base_delay: 10ms, max_delay: 20ms, budget: 2s}
notify:
  slack: {webhook_url: %q}
  failure_threshold: 1
  repeat_interval: 1s
consumers:
  - name: list_only
    select: 'type(response.results) == "array" ? response.results : fail("unsupported_results_container", "results is " + type(response.results))'
probes:
  - {name: echo_body, request: {url: %q, headers: {Authorization: "Bearer %s"}}, consumer: list_only}
  - {name: echo_error, request: {url: %q, headers: {X-Api-Key: %q}}, consumer: list_only}
  - {name: echo_key, request: {url: %q, headers: {Authorization: "Bearer %s"}}, consumer: list_only}
  - {name: url_creds, request: {url: "http://svc:%s@%s/ok"}, consumer: list_only}
  - {name: url_creds_down, request: {url: "http://svc:%s@%s/ok"}, consumer: list_only}
`, addr, tokenSecret, slackSrv.URL+"/services/T000/B000/"+webhookSecret,
		echo.URL+"/ok", headerSecret, echo.URL+"/err", headerSecret, echo.URL+"/key", headerSecret,
		urlSecret, host, urlSecret, freeLoopbackAddr(t))
	path := filepath.Join(dir, "checks.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, path)
	db := filepath.Join(dir, "results.db")
	waitFor(t, "every probe to fail twice and alerts to go out", d, func() bool {
		mu.Lock()
		n := posts
		mu.Unlock()
		return countRows(t, db, "SELECT count(DISTINCT probe) FROM results WHERE outcome <> 'pass'") == 5 &&
			countRows(t, db, "SELECT count(*) FROM results") >= 10 && n >= 6
	})

	var served strings.Builder
	get := func(path, auth string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			d.t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(&served, "%s %d %v\n%s\n", path, resp.StatusCode, resp.Header, body)
	}
	bearer := "Bearer " + tokenSecret
	for _, p := range []string{"/", "/?show=failing", "/api/v1/probes", "/api/v1/drifts", "/metrics", "/healthz",
		"/probes/echo_body", "/probes/echo_error", "/probes/echo_key", "/probes/url_creds", "/probes/url_creds_down",
		"/api/v1/probes/echo_body/results", "/api/v1/probes/url_creds/results", "/api/v1/probes/url_creds_down/results", "/nope"} {
		get(p, bearer)
	}
	get("/", "Bearer wrong") // a refused request says nothing either
	get("/", basic("x", tokenSecret))

	if err := d.stop(syscall.SIGTERM); err != nil {
		d.t.Fatalf("SIGTERM: %v", err)
	}
	var stored strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() == "checks.yaml" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			d.t.Fatal(err)
		}
		stored.Write(b)
	}
	mu.Lock()
	slackText := slack.String()
	mu.Unlock()
	outputs := map[string]string{
		"the daemon's logs": d.logs.String(), "the database files": stored.String(),
		"the pages and API": served.String(), "the Slack messages": slackText,
	}
	for where, text := range outputs {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				i := strings.Index(text, s)
				d.t.Errorf("%s show the secret %q: …%s…", where, s, text[max(0, i-120):min(len(text), i+60)])
			}
		}
	}
	// Controls: the echoes did reach what was searched, scrubbed.
	for where, text := range map[string]string{"the pages": served.String(), "the database": stored.String()} {
		if !strings.Contains(text, "redacted") {
			d.t.Errorf("no redaction marker in %s: the echoes never got there, so the search proves nothing", where)
		}
	}
	if !strings.Contains(served.String(), "connection_refused") || !strings.Contains(served.String(), "server_error") {
		d.t.Errorf("the pages do not show the failures the test drove")
	}
}
