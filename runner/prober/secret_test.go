package prober

import (
	"bytes"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// TestSecretsNeverLeave sends a secret header to a provider that echoes it
// back everywhere it can, and requires that no field of the result, and no
// log line, carries it.
func TestSecretsNeverLeave(t *testing.T) {
	// A prefix of the configured value "Bearer sk-test-SECRET": finding
	// it anywhere means some or all of the secret got out.
	const secret = "sk-test"
	echoAs := func(encode func(string) string, status int, contentType, page string) func(testing.TB) string {
		return func(t testing.TB) string {
			return serve(t, func(w http.ResponseWriter, r *http.Request) {
				auth := encode(r.Header.Get("Authorization"))
				if r.URL.Path == "/token" {
					io.WriteString(w, `{"access_token": "sk-test/captured token+1"}`)
					return
				}
				page := strings.ReplaceAll(page, "URL", r.URL.RequestURI())
				w.Header().Set("Content-Type", contentType)
				w.Header().Set("X-Echo", auth)
				w.WriteHeader(status)
				io.WriteString(w, strings.ReplaceAll(page, "AUTH", auth))
			})
		}
	}
	echo := func(status int, contentType, page string) func(testing.TB) string {
		return echoAs(func(s string) string { return s }, status, contentType, page)
	}
	// odd is a credential with characters encoders escape.
	const odd = "Bearer sk-test/S&C<R>ET é"
	oddHeader := func(p *checks.Probe) { p.Steps[0].Request.Headers = map[string]checks.Secret{"Authorization": odd} }
	b64 := base64.StdEncoding.EncodeToString
	// loaded replaces the probe with one loaded from YAML, BASE being the
	// provider's address, ${...} read from env.
	loaded := func(yaml string, env map[string]string) func(*checks.Probe) {
		return func(p *checks.Probe) {
			base := strings.TrimSuffix(p.Steps[0].Request.URL, "/search")
			cfg, err := checks.Parse("checks.yaml", []byte(`version: 1
consumers: [{name: c, select: response.results}]
probes:
  - `+strings.ReplaceAll(yaml, "BASE", base)+"\n"), "", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if err != nil {
				panic(err)
			}
			*p = *cfg.Probes[0]
		}
	}
	tests := []struct {
		name     string
		provider func(testing.TB) string
		probe    func(*checks.Probe)
		code     results.Code
		// leaks are forms of the secret that must not show, besides
		// secret itself.
		leaks []string
		// where is the field that must show the redaction marker, so that
		// the test cannot pass by never looking at the echo.
		where func(results.Result) string
	}{
		{
			name:     "echoed in a JSON body",
			provider: echo(200, "application/json", `{"results":[],"echo":"AUTH","AUTH":true}`),
			code:     results.CodeEmptySelection,
			where:    func(r results.Result) string { return r.ResponseSample },
		},
		{
			name:     "echoed in an error page",
			provider: echo(500, "text/html", `<html><body><h1>500</h1><pre>Authorization: AUTH</pre></body></html>`),
			code:     results.CodeServerError,
			where:    func(r results.Result) string { return r.ResponseSample },
		},
		{
			name:     "echoed in a header a rule quotes",
			provider: echo(200, "application/json", bodyOriginalList),
			probe: func(p *checks.Probe) {
				p.Steps[0].Consumer = mustConsumer("quoting", `fail("echoed_header", "x-echo was " + headers["x-echo"])`, "")
			},
			code:  "echoed_header",
			where: func(r results.Result) string { return r.Error.Message },
		},
		{
			// Cutting the sample before redacting it would keep the start
			// of the secret: "...Bearer sk-test-SECR".
			name:     "echoed across the end of the sample",
			provider: echo(200, "application/json", straddle(`{"results":[],"pad":"`, `","echo":"AUTH"}`, len("Bearer sk-test-SECR"))),
			code:     results.CodeEmptySelection,
			where:    func(r results.Result) string { return r.ResponseSample },
		},
		{
			name:     "echoed in a page that is not JSON",
			provider: echo(200, "text/html", `<p>AUTH</p>`),
			code:     results.CodeInvalidJSON,
			where:    func(r results.Result) string { return r.ResponseSample },
		},
		{
			// As PHP writes it: \/ and \u00XX, here in upper-case hex.
			name: "echoed JSON-escaped with \\/ and \\u00XX",
			provider: echoAs(func(s string) string {
				return strings.NewReplacer("/", `\/`, "&", `\u0026`, "<", `\u003C`, ">", `\u003E`, "é", `\u00E9`).Replace(s)
			}, 200, "application/json", `{"results":[],"echo":"AUTH"}`),
			probe: oddHeader,
			code:  results.CodeEmptySelection,
			where: func(r results.Result) string { return r.ResponseSample },
		},
		{
			name:     "echoed base64'd",
			provider: echoAs(func(s string) string { return b64([]byte(s)) }, 200, "application/json", `{"results":[],"echo":"AUTH"}`),
			code:     results.CodeEmptySelection,
			leaks:    []string{b64([]byte("Bearer sk-test-SECRET"))},
			where:    func(r results.Result) string { return r.ResponseSample },
		},
		{
			name: "echoed base64'd, credential only, URL alphabet",
			provider: echoAs(func(s string) string {
				return base64.RawURLEncoding.EncodeToString([]byte(strings.TrimPrefix(s, "Bearer ")))
			}, 500, "text/plain", `rejected AUTH`),
			probe: oddHeader,
			code:  results.CodeServerError,
			leaks: []string{base64.RawURLEncoding.EncodeToString([]byte(strings.TrimPrefix(odd, "Bearer ")))},
			where: func(r results.Result) string { return r.ResponseSample },
		},
		{
			name:     "echoed query-escaped",
			provider: echoAs(url.QueryEscape, 200, "application/json", `{"results":[],"next":"/search?auth=AUTH"}`),
			probe:    oddHeader,
			code:     results.CodeEmptySelection,
			where:    func(r results.Result) string { return r.ResponseSample },
		},
		{
			name:     "an api_key in the query, echoed",
			provider: echo(200, "application/json", `{"results":[],"you_asked":"URL"}`),
			probe:    loaded(`{name: q, consumer: c, request: {url: "BASE/search?api_key=${KEY}&q=x"}}`, map[string]string{"KEY": "qk-sk-test-77"}),
			code:     results.CodeEmptySelection,
			where:    func(r results.Result) string { return r.ResponseSample },
		},
		{
			name:     "a token in the path, echoed in an error page",
			provider: echo(404, "text/plain", `no route URL`),
			probe:    loaded(`{name: bot, consumer: c, request: {url: "BASE/bot${TOKEN}/getMe"}}`, map[string]string{"TOKEN": "123:sk-test-bot"}),
			code:     results.CodeUnexpectedStatus,
			where:    func(r results.Result) string { return r.ResponseSample },
		},
		{
			// toolpulse itself query-escapes the captured token into the
			// next step's URL: "sk-test%2Fcaptured+token%2B1".
			name:     "a captured token query-escaped into the next URL, echoed",
			provider: echo(200, "application/json", `{"results":[],"you_asked":"URL"}`),
			probe: loaded(`name: steps
    steps:
      - {name: token, request: {method: POST, url: "BASE/token"}, capture: {access_token: {rule: response.access_token, secret: true}}}
      - {name: use, consumer: c, request: {url: "BASE/search?t={{access_token}}"}}`, nil),
			code:  results.CodeEmptySelection,
			where: func(r results.Result) string { return r.ResponseSample },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := testProbe(t, tt.provider(t))
			if tt.probe != nil {
				tt.probe(p)
			}
			var logs bytes.Buffer
			e := NewExecutor(Options{
				Logger:   slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
				Redactor: (&checks.Config{Probes: []*checks.Probe{p}}).Redactor(),
				Rand:     func() float64 { return 0.5 },
			})
			t.Cleanup(e.CloseIdleConnections)
			got := e.Run(t.Context(), p)

			if got.Code() != tt.code {
				t.Fatalf("code = %q, want %q\n%s", got.Code(), tt.code, dump(got))
			}
			if !strings.Contains(tt.where(got), results.Redacted) {
				t.Errorf("the echo was not redacted where expected: %q", tt.where(got))
			}
			for _, s := range append([]string{secret}, tt.leaks...) {
				for _, leak := range findString(reflect.ValueOf(got), "Result", s) {
					t.Errorf("secret %q in %s", s, leak)
				}
				if strings.Contains(logs.String(), s) {
					t.Errorf("secret %q in the logs:\n%s", s, logs.String())
				}
			}
		})
	}
}

// findString returns the path of every string reachable from v through
// exported fields, slices, maps and pointers that contains s.
func findString(v reflect.Value, path, s string) []string {
	switch v.Kind() {
	case reflect.String:
		if strings.Contains(v.String(), s) {
			return []string{path}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return findString(v.Elem(), path, s)
		}
	case reflect.Slice, reflect.Array:
		var out []string
		for i := range v.Len() {
			out = append(out, findString(v.Index(i), path+"["+strconv.Itoa(i)+"]", s)...)
		}
		return out
	case reflect.Map:
		var out []string
		for _, k := range v.MapKeys() {
			out = append(out, findString(k, path+"{key}", s)...)
			out = append(out, findString(v.MapIndex(k), path+"{"+k.String()+"}", s)...)
		}
		return out
	case reflect.Struct:
		var out []string
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				out = append(out, findString(v.Field(i), path+"."+f.Name, s)...)
			}
		}
		return out
	}
	return nil
}

// straddle builds a body of prefix, padding and suffix in which the
// suffix's AUTH starts so that only its first keep bytes fall inside the
// sample.
func straddle(prefix, suffix string, keep int) string {
	at := strings.Index(suffix, "AUTH")
	pad := sampleBytes - keep - len(prefix) - at
	return prefix + strings.Repeat("x", pad) + suffix
}
