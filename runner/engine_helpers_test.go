package runner

// Providers, probes and printers of the engine's tests that the daemon's
// tests run through the engine too. They are copies of runner/prober's
// test helpers: test files cannot be shared across packages.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
	"github.com/toolpulse/toolpulse/runner/prober"
)

const (
	seedSelect = `let raw = response.results;
(type(raw) == "array" ? raw
  : type(raw) == "map" && type(raw?.items) == "array" ? raw.items
  : fail("unsupported_results_container", "results is " + type(raw)))
| filter(.score >= 0.75)
`
	seedValidate = `type(.id) == "string" && type(.score) in ["int", "float"]`

	bodyOriginalList  = `{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null}`
	bodyItemsWrapper  = `{"results":{"items":[{"id":"doc_784","title":"API migration guide","score":0.93}]},"next_cursor":null}`
	testFixtureQuery  = "API migration guide"
	testQueryLanguage = "en"
)

// mustConsumer compiles a consumer; the rules are the test's own, so a
// compile error is a bug in the test.
func mustConsumer(name, sel, validate string) *consumers.Consumer {
	c, errs := consumers.Compile(consumers.Source{Name: name, Version: "2", Select: sel, Validate: validate})
	if errs != nil {
		panic(fmt.Sprintf("compile %s: %v", name, errs[0]))
	}
	return c
}

// testProbe is a probe of baseURL with the seed-000 consumer and tiny
// retry delays, so that retried rows cost milliseconds.
func testProbe(tb testing.TB, baseURL string) *checks.Probe {
	tb.Helper()
	return &checks.Probe{
		Name: "external_search",
		Request: checks.Request{
			Method:  http.MethodPost,
			URL:     baseURL + "/search",
			Headers: map[string]checks.Secret{"Authorization": "Bearer sk-test-SECRET"},
			Query:   map[string]string{"lang": testQueryLanguage},
			JSON:    map[string]any{"query": testFixtureQuery},
			HasJSON: true,
		},
		Consumer:     mustConsumer("select_results", seedSelect, seedValidate),
		Timeout:      2 * time.Second,
		MaxBodyBytes: 1 << 20,
		Retries: checks.Retries{
			MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, Budget: 10 * time.Second,
		},
		Expect: checks.Expect{Status: []int{200}, MinResults: 1},
	}
}

// serve starts a loopback provider for the test.
func serve(t testing.TB, h http.HandlerFunc) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

func jsonBody(status int, body string) func(testing.TB) string {
	return func(t testing.TB) string {
		return serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
		})
	}
}

// dump prints a result for a failure message.
func dump(r results.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q status=%d selected=%d validated=%d", r.Outcome, r.Code(), r.HTTPStatus, r.SelectedCount, r.ValidatedCount)
	if r.Error != nil {
		fmt.Fprintf(&b, " message=%q retryable=%v", r.Error.Message, r.Error.Retryable)
	}
	for _, a := range r.Attempts {
		fmt.Fprintf(&b, "\n  attempt %d: status=%d code=%q wait=%v duration=%v message=%q",
			a.Number, a.HTTPStatus, a.Code, a.Wait, a.Duration, a.Message)
	}
	return b.String()
}

// searchTool answers like the seed-000 search provider, as structured
// content.
func searchTool() mcptest.Tool {
	return mcptest.Tool{
		Name:        "search",
		Description: "Search the docs.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Handler: func(context.Context, json.RawMessage) mcptest.Result {
			return mcptest.Result{
				Content:           []mcptest.Content{{Type: "text", Text: `{"results":[{"id":"doc_1","title":"t","score":0.93}]}`}},
				StructuredContent: map[string]any{"results": []any{map[string]any{"id": "doc_1", "title": "t", "score": 0.93}}},
			}
		},
	}
}

// mcpProbe is an MCP probe of srv's search tool, with the seed-000
// consumer and tiny retry delays.
func mcpProbe(srv *mcptest.Server, isError results.Outcome) *checks.Probe {
	return &checks.Probe{
		Name: "docs_search",
		MCP: &checks.MCP{URL: srv.URL, Tool: "search", Arguments: map[string]any{"query": "API migration guide"},
			Headers: map[string]checks.Secret{"Authorization": "Bearer sk-mcp-SECRET"}, IsError: isError},
		Consumer:     mustConsumer("select_results", seedSelect, seedValidate),
		Timeout:      2 * time.Second,
		MaxBodyBytes: 1 << 20,
		Retries:      checks.Retries{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, Budget: 10 * time.Second},
		Expect:       checks.Expect{Status: []int{200}, MinResults: 1},
	}
}

// refundDesk is a refund service with its token endpoint and the order
// whose state tells whether a refund really happened (seed 002).
type refundDesk struct {
	mu           sync.Mutex
	lie          bool          // refunds claim success and change nothing
	settle       time.Duration // how long a real refund takes to show
	ordersStatus int           // GET /orders answers this instead (0: 200)
	ordersFlaky  int           // GET /orders answers 503 this many times first
	refundStatus int           // POST /refunds answers this instead (0: 201)
	noToken      bool          // the token endpoint answers without one

	state      string
	refundedAt time.Time
	refunds    int      // POST /refunds received
	deletes    []string // DELETE paths received
	keys       []string // Idempotency-Key of each refund request
	orderPaths []string // GET /orders paths received, escaped
}

const deskToken = "tok-SECRET-7f3a9c"

func newRefundDesk() *refundDesk { return &refundDesk{state: "paid"} }

func (d *refundDesk) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		if d.noToken {
			fmt.Fprint(w, `{"token_type": "bearer"}`)
			return
		}
		fmt.Fprintf(w, `{"access_token": %q, "token_type": "bearer"}`, deskToken)
	case r.Method == http.MethodPost && r.URL.Path == "/refunds":
		d.refunds++
		d.keys = append(d.keys, r.Header.Get("Idempotency-Key"))
		if r.Header.Get("Authorization") != "Bearer "+deskToken {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error": "bad credentials %s"}`, r.Header.Get("Authorization"))
			return
		}
		if d.refundStatus != 0 {
			w.WriteHeader(d.refundStatus)
			// A provider that echoes the credential it was sent.
			fmt.Fprintf(w, `{"error": "busy, retry later (%s)"}`, r.Header.Get("Authorization"))
			return
		}
		if !d.lie {
			d.state, d.refundedAt = "refunded", time.Now()
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"status": "success", "data": {"refund_id": "rf_31", "amount": 19.99}}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/orders/"):
		d.orderPaths = append(d.orderPaths, r.URL.EscapedPath())
		if d.ordersFlaky > 0 {
			d.ordersFlaky--
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error": "tracker busy"}`)
			return
		}
		if d.ordersStatus != 0 {
			w.WriteHeader(d.ordersStatus)
			fmt.Fprint(w, `{"error": "tracker down"}`)
			return
		}
		state, refundID := d.state, "null"
		if state == "refunded" && time.Since(d.refundedAt) < d.settle {
			state = "paid" // not visible yet
		}
		if state == "refunded" {
			refundID = `"rf_31"`
		}
		fmt.Fprintf(w, `{"id": 31, "state": %q, "refund_id": %s}`, state, refundID)
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/refunds/"):
		d.deletes = append(d.deletes, r.URL.Path)
		d.state = "paid"
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error": "no such route"}`)
	}
}

// refundProbe is SPEC §11's drill against the desk at url; edit changes
// the YAML before it is loaded.
func refundProbe(t *testing.T, url string, edit func(string) string) *checks.Probe {
	t.Helper()
	yaml := `version: 1
defaults:
  timeout: 2s
  retries: {max_attempts: 3, base_delay: 1ms, max_delay: 2ms, budget: 5s}
consumers:
  - name: refund_envelope
    select: 'response.status == "success" ? [response.data] : fail("refund_failed", "status is " + string(response.status))'
    validate: type(.refund_id) == "string"
probes:
  - name: refund_order_31
    steps:
      - name: token
        request: {method: POST, url: "${URL}/token", json: {client_id: probe}}
        capture: {access_token: {rule: response.access_token, secret: true}}
      - name: refund
        request:
          method: POST
          url: ${URL}/refunds
          headers: {Authorization: "Bearer {{access_token}}", Idempotency-Key: "{{operation_id}}"}
          json: {order_id: 31, amount: 19.99}
        expect: {status: [201]}
        consumer: refund_envelope
        capture: {refund_id: response.data.refund_id}
      - name: verify
        request: {url: "${URL}/orders/31"}
        until: 'response.state == "refunded" && response.refund_id == vars.refund_id'
        within: 600ms
        every: 50ms
      - name: cleanup
        always: true
        request: {method: DELETE, url: "${URL}/refunds/{{refund_id}}"}
        expect: {status: [204]}
`
	if edit != nil {
		yaml = edit(yaml)
	}
	cfg, err := checks.Parse("checks.yaml", []byte(yaml), t.TempDir(), func(k string) (string, bool) {
		if k == "URL" {
			return url, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Probes[0]
}

func serveDesk(t *testing.T, d *refundDesk) string {
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return srv.URL
}

// stepsOf lists the step of each attempt, run-length encoded:
// "token refund verify×3 cleanup".
func stepsOf(res results.Result) string {
	var out []string
	n := 0
	for i, a := range res.Attempts {
		n++
		if i+1 < len(res.Attempts) && res.Attempts[i+1].Step == a.Step {
			continue
		}
		if n > 1 {
			out = append(out, fmt.Sprintf("%s×%d", a.Step, n))
		} else {
			out = append(out, a.Step)
		}
		n = 0
	}
	return strings.Join(out, " ")
}

func runSteps(t *testing.T, p *checks.Probe) results.Result {
	t.Helper()
	return prober.NewExecutor(prober.Options{Redactor: results.NewRedactor()}).Run(context.Background(), p)
}

// stepVerdicts lists each step of a run with its outcome and code.
func stepVerdicts(res results.Result) string {
	var out []string
	for _, s := range res.Steps {
		v := s.Name + " " + string(s.Outcome)
		if s.Error != nil {
			v += " " + string(s.Error.Code)
		}
		if s.Skipped {
			v += " (skipped)"
		}
		out = append(out, v)
	}
	return strings.Join(out, ", ")
}

// shapeOf is the structural shape of a decoded JSON body (SPEC §5), kept
// behind one function so the operation does not depend on how results/shape
// spells it.
func shapeOf(v any) *results.Shape {
	s := shape.Of(v)
	return &results.Shape{Fingerprint: s.Fingerprint(), Canonical: s.String(), Structure: s}
}

// closedPort returns the URL of a loopback port nothing listens on.
func closedPort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// searchBody is a search answer with n results, all selected.
func searchBody(n int) string {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{
			"id":      fmt.Sprintf("doc_%d", i),
			"title":   fmt.Sprintf("API migration guide, part %d", i),
			"url":     fmt.Sprintf("https://docs.example.com/api/migration/%d", i),
			"snippet": "How to move from the v1 search endpoint to v2, with the new pagination cursor.",
			"score":   0.75 + float64(i)/100,
		}
	}
	b, _ := json.Marshal(map[string]any{"results": items, "next_cursor": nil})
	return string(b)
}
