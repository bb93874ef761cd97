package main

import (
	"encoding/base64"
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
	"github.com/toolpulse/toolpulse/internal/oauthtest"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// TestSecretsStayHidden drives every failure path the daemon has with a
// recognisable secret in each place config can hold one: a header value,
// a URL's credentials, the Slack webhook URL and server.token. Providers
// echo whatever credentials they get, in bodies and in error pages. Then
// it searches everything toolpulse wrote or served: its logs, the
// database files, every page and API response, /metrics and every Slack
// message. Each secret is also searched in the base64 form Basic auth
// sends. Credentials in a URL, a query's api_key and a ${VAR} token in the
// path of an HTTP or MCP URL, must not show either, nor reach a webhook or
// an Alertmanager. Nor may an OAuth client secret, or any access token a
// real authorization server issued to a probe and the provider echoed.
func TestSecretsStayHidden(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon for a few seconds")
	}
	const (
		headerSecret  = "hdr-secret-5d1c9a"
		urlSecret     = "url-secret-7e2b4f"
		webhookSecret = "hook-secret-3a9c1d"
		tokenSecret   = "srv-token-8f6e2b"
		querySecret   = "qkey-secret-4b8d"
		botSecret     = "123456:bot-secret-9c2e"
		mcpSecret     = "mcp-secret-1f7a"
		oauthSecret   = "oauth-secret-6b3e"
	)
	secrets := []string{headerSecret, urlSecret, webhookSecret, tokenSecret, harness.MintedToken,
		base64.StdEncoding.EncodeToString([]byte("svc:" + urlSecret)), querySecret, botSecret, mcpSecret,
		oauthSecret, base64.StdEncoding.EncodeToString([]byte("probe:" + oauthSecret)), "wrong-oauth-secret-2c7d"}

	// A real authorization server: the OAuth probes' tokens come from it
	// (SPEC §10.1), and each one it issued is a secret too.
	as := oauthtest.Start(t, oauthtest.Config{ClientID: "probe", ClientSecret: oauthSecret})

	// An echo provider: /ok echoes the Authorization header inside valid
	// JSON the consumer rejects; /err answers 500 with it in the body; /key
	// echoes it as an object key.
	echo := e2e.Serve(t, harness.EchoCredentials())
	// A Slack stand-in that records every message, and answers every third
	// with an error page that echoes the URL it was called on. The webhook
	// URL is Slack's own address for it, so the path is not recorded: only
	// what toolpulse put in the message.
	slack, slackURL := e2e.Slack(t)
	slack.FailEvery(3, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no_service: "+r.URL.String(), http.StatusNotFound)
	})

	// The receivers of the probes with credentials in their URLs: a
	// webhook and an Alertmanager that record what they are sent.
	var mu sync.Mutex
	var received strings.Builder
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		fmt.Fprintf(&received, "%s %s\n%s\n", r.Method, r.URL, body)
		mu.Unlock()
	})
	webhook, alertmanager := e2e.Serve(t, record), e2e.Serve(t, record)
	receivedBoth := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(received.String(), "/api/v2/alerts") >= 3 && strings.Count(received.String(), "POST /hook") >= 3
	}

	dir, addr := t.TempDir(), e2e.FreeAddr(t)
	host := strings.TrimPrefix(echo, "http://")
	probe := func(name, url string, headers map[string]string) harness.Probe {
		return harness.Probe{Name: name, Request: harness.Request{URL: url, Headers: headers}, Consumer: "list_only"}
	}
	bearer := map[string]string{"Authorization": "Bearer " + headerSecret}
	urlLabels := map[string]string{"secrets": "url"}
	stepsProbe := func(name, url string) harness.Probe {
		return harness.Probe{Name: name, Steps: []harness.Step{
			{Name: "token", Request: harness.Request{Method: "POST", URL: echo + "/token"},
				Capture: map[string]harness.Capture{"access_token": {Rule: "response.access_token", Secret: true}}},
			{Name: "use", Request: harness.Request{URL: url, Headers: map[string]string{"Authorization": "Bearer {{access_token}}"}},
				Consumer: "list_only"},
		}}
	}
	cfg := harness.Config{
		Storage: harness.Storage{Path: "results.db"},
		Server:  harness.Server{Listen: addr, Token: tokenSecret},
		Defaults: harness.Defaults{Interval: 200 * time.Millisecond, Jitter: 50 * time.Millisecond, Timeout: time.Second,
			Retries: harness.Retries{MaxAttempts: 2, BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond, Budget: 2 * time.Second}},
		Notify: &harness.Notify{WebhookURL: slackURL + "/services/T000/B000/" + webhookSecret, FailureThreshold: 1, RepeatInterval: time.Second,
			Routes: []harness.Route{{Match: map[string]string{"secrets": "url"}, SlackWebhookURL: slackURL + "/services/T000/B001/" + webhookSecret,
				AlertmanagerURL: alertmanager, WebhookURL: webhook + "/hook", WebhookSecret: "hook-signing-2d4f"}}},
		Consumers: []harness.Consumer{{Name: "list_only",
			Select: `type(response.results) == "array" ? response.results : fail("unsupported_results_container", "results is " + type(response.results))`}},
		Probes: []harness.Probe{
			probe("echo_body", echo+"/ok", bearer),
			probe("echo_error", echo+"/err", map[string]string{"X-Api-Key": headerSecret}),
			probe("echo_key", echo+"/key", bearer),
			probe("url_creds", "http://svc:"+urlSecret+"@"+host+"/ok", nil),
			probe("url_creds_down", "http://svc:"+urlSecret+"@"+e2e.FreeAddr(t)+"/ok", nil),
			// A token learnt at run time (SPEC §11): a step captures it as a
			// secret, the next sends it, and the provider echoes it back.
			stepsProbe("captured_token", echo+"/ok"),
			stepsProbe("captured_token_error", echo+"/err"),
			// Credentials in URLs: a query key the provider echoes, a bot
			// token in the path, an MCP server's token in its path.
			{Name: "query_key", Request: harness.Request{URL: echo + "/ok?api_key=${TP_QUERY_KEY}"}, Consumer: "list_only", Labels: urlLabels},
			{Name: "bot_path", Request: harness.Request{URL: echo + "/bot${TP_BOT_TOKEN}/getMe"}, Consumer: "list_only", Labels: urlLabels},
			{Name: "mcp_path", MCP: &harness.MCP{URL: "http://" + e2e.FreeAddr(t) + "/t/${TP_MCP_TOKEN}/mcp", Tool: "search"},
				Consumer: "list_only", Labels: urlLabels},
			// OAuth client credentials: the provider echoes the token it
			// gets; a token endpoint refuses a wrong secret; an MCP
			// server that is down is reached with a token in hand.
			{Name: "oauth_echo", Request: harness.Request{URL: echo + "/ok", OAuth: oauthCreds("${TP_OAUTH_SECRET}", as.TokenURL())}, Consumer: "list_only"},
			{Name: "oauth_echo_error", Request: harness.Request{URL: echo + "/err", OAuth: oauthCreds("${TP_OAUTH_SECRET}", as.TokenURL())}, Consumer: "list_only"},
			{Name: "oauth_refused", Request: harness.Request{URL: echo + "/ok", OAuth: oauthCreds("wrong-oauth-secret-2c7d", as.TokenURL())}, Consumer: "list_only"},
			{Name: "oauth_mcp", MCP: &harness.MCP{URL: "http://" + e2e.FreeAddr(t) + "/mcp", Tool: "search", OAuth: oauthCreds("${TP_OAUTH_SECRET}", as.TokenURL())},
				Consumer: "list_only"},
		},
	}
	d := e2e.StartCommand(t, harness.Command{Args: []string{"-c", e2e.Config(t, dir, cfg), "run", "--grace", "2s"},
		Env: []string{"TP_QUERY_KEY=" + querySecret, "TP_BOT_TOKEN=" + botSecret, "TP_MCP_TOKEN=" + mcpSecret, "TP_OAUTH_SECRET=" + oauthSecret}})
	db := filepath.Join(dir, "results.db")
	d.WaitFor("every probe to fail twice and alerts to go out", func() bool {
		return countRows(t, db, "SELECT count(DISTINCT probe) FROM results WHERE outcome <> 'pass'") == 14 &&
			countRows(t, db, "SELECT count(*) FROM results") >= 17 && len(slack.Messages()) >= 9 && receivedBoth()
	})

	var served strings.Builder
	get := func(path, auth string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			d.T.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(&served, "%s %d %v\n%s\n", path, resp.StatusCode, resp.Header, body)
	}
	for _, p := range []string{"/", "/?show=failing", "/api/v1/probes", "/api/v1/drifts", "/api/v1/silences", "/metrics", "/healthz",
		"/probes/echo_body", "/probes/echo_error", "/probes/echo_key", "/probes/url_creds", "/probes/url_creds_down",
		"/probes/captured_token", "/probes/captured_token_error", "/api/v1/probes/captured_token/results", "/api/v1/probes/captured_token_error/results",
		"/api/v1/probes/echo_body/results", "/api/v1/probes/url_creds/results", "/api/v1/probes/url_creds_down/results", "/nope",
		"/probes/query_key", "/probes/bot_path", "/probes/mcp_path", "/?show=all",
		"/api/v1/probes/query_key/results", "/api/v1/probes/bot_path/results", "/api/v1/probes/mcp_path/results",
		"/probes/oauth_echo", "/probes/oauth_echo_error", "/probes/oauth_refused", "/probes/oauth_mcp",
		"/api/v1/probes/oauth_echo/results", "/api/v1/probes/oauth_echo_error/results", "/api/v1/probes/oauth_refused/results",
		"/api/v1/probes/oauth_mcp/results"} {
		get(p, "Bearer "+tokenSecret)
	}
	get("/", "Bearer wrong") // a refused request says nothing either
	get("/", "Basic "+base64.StdEncoding.EncodeToString([]byte("x:"+tokenSecret)))

	if err := d.Stop(syscall.SIGTERM); err != nil {
		d.T.Fatalf("SIGTERM: %v", err)
	}
	var stored strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() == "checks.yaml" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			d.T.Fatal(err)
		}
		stored.Write(b)
	}
	var slackText strings.Builder
	for _, m := range slack.Messages() {
		fmt.Fprintf(&slackText, "%s\n", m.Body)
	}
	mu.Lock()
	receivers := received.String()
	mu.Unlock()
	issued := as.Issued()
	if len(issued) == 0 {
		d.T.Errorf("the authorization server issued no token: the OAuth probes prove nothing")
	}
	secrets = append(secrets, issued...)
	outputs := map[string]string{
		"the daemon's logs": d.Log.String(), "the database files": stored.String(),
		"the pages and API": served.String(), "the Slack messages": slackText.String(),
		"the webhook and Alertmanager payloads": receivers,
	}
	for where, text := range outputs {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				i := strings.Index(text, s)
				d.T.Errorf("%s show the secret %q: …%s…", where, s, text[max(0, i-120):min(len(text), i+60)])
			}
		}
	}
	// Controls: the echoes did reach what was searched, scrubbed.
	for where, text := range map[string]string{"the pages": served.String(), "the database": stored.String(), "the receivers": receivers} {
		if !strings.Contains(text, "redacted") {
			d.T.Errorf("no redaction marker in %s: the echoes never got there, so the search proves nothing", where)
		}
	}
	if !strings.Contains(served.String(), "connection_refused") || !strings.Contains(served.String(), "server_error") ||
		!strings.Contains(served.String(), "auth_rejected") {
		d.T.Errorf("the pages do not show the failures the test drove")
	}
}

// oauthCreds are an OAuth probe's client credentials with secret.
func oauthCreds(secret, tokenURL string) *harness.OAuth {
	return &harness.OAuth{ClientID: "probe", ClientSecret: secret, TokenURL: tokenURL, Scopes: []string{"search:read"}}
}
