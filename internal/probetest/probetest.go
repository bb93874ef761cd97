// Package probetest holds the providers, probes and printers that the
// engine's tests (runner/prober) and the daemon's tests (runner) both run
// the engine with. Only tests import it; it imports neither runner nor
// runner/prober. The larger refund desk is internal/refunddesk.
package probetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/results"
)

// The seed-000 consumer, as SPEC §4 writes it.
const (
	SeedSelect = `let raw = response.results;
(type(raw) == "array" ? raw
  : type(raw) == "map" && type(raw?.items) == "array" ? raw.items
  : fail("unsupported_results_container", "results is " + type(raw)))
| filter(.score >= 0.75)
`
	SeedValidate = `type(.id) == "string" && type(.score) in ["int", "float"]`
)

// The seed-000 fixtures (seed 000, "The regression suite needs fixtures for")
// and the request Probe sends.
const (
	BodyOriginalList = `{"results":[{"id":"doc_784","title":"API migration guide","score":0.93}],"next_cursor":null}`
	BodyItemsWrapper = `{"results":{"items":[{"id":"doc_784","title":"API migration guide","score":0.93}]},"next_cursor":null}`
	FixtureQuery     = "API migration guide"
	QueryLanguage    = "en"
)

// MustConsumer compiles a consumer; the rules are the test's own, so a
// compile error is a bug in the test.
func MustConsumer(name, sel, validate string) *consumers.Consumer {
	c, errs := consumers.Compile(consumers.Source{Name: name, Version: "2", Select: sel, Validate: validate})
	if errs != nil {
		panic(fmt.Sprintf("compile %s: %v", name, errs[0]))
	}
	return c
}

// Probe is a probe of baseURL with the seed-000 consumer and tiny
// retry delays, so that retried rows cost milliseconds.
func Probe(tb testing.TB, baseURL string) *checks.Probe {
	tb.Helper()
	return &checks.Probe{
		Name: "external_search",
		Steps: []checks.Step{{
			Request: checks.Request{
				Method:  http.MethodPost,
				URL:     baseURL + "/search",
				Headers: map[string]checks.Secret{"Authorization": "Bearer sk-test-SECRET"},
				Query:   map[string]string{"lang": QueryLanguage},
				JSON:    map[string]any{"query": FixtureQuery},
				HasJSON: true,
			},
			Consumer: MustConsumer("select_results", SeedSelect, SeedValidate),
			Timeout:  2 * time.Second,
			Retries: checks.Retries{
				MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, Budget: 10 * time.Second,
			},
			Expect: checks.Expect{Status: []int{200}, MinResults: 1},
		}},
		MaxBodyBytes: 1 << 20,
	}
}

// Serve starts a loopback provider for the test.
func Serve(t testing.TB, h http.HandlerFunc) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

// JSONBody serves body with status on every request.
func JSONBody(status int, body string) func(testing.TB) string {
	return func(t testing.TB) string {
		return Serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
		})
	}
}

// ClosedPort returns the URL of a loopback port nothing listens on.
func ClosedPort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// SearchBody is a search answer with n results, all selected.
func SearchBody(n int) string {
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

// SearchTool answers like the seed-000 search provider, as structured
// content.
func SearchTool() mcptest.Tool {
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

// MCPProbe is an MCP probe of srv's search tool, with the seed-000
// consumer and tiny retry delays.
func MCPProbe(srv *mcptest.Server, isError results.Outcome) *checks.Probe {
	return &checks.Probe{
		Name: "docs_search",
		Steps: []checks.Step{{
			MCP: &checks.MCP{URL: srv.URL, Tool: "search", Arguments: map[string]any{"query": "API migration guide"},
				Headers: map[string]checks.Secret{"Authorization": "Bearer sk-mcp-SECRET"}, IsError: isError},
			Consumer: MustConsumer("select_results", SeedSelect, SeedValidate),
			Timeout:  2 * time.Second,
			Retries:  checks.Retries{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, Budget: 10 * time.Second},
			Expect:   checks.Expect{Status: []int{200}, MinResults: 1},
		}},
		MaxBodyBytes: 1 << 20,
	}
}

// Dump prints a result for a failure message.
func Dump(r results.Result) string {
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
