package runner

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
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
	echo := func(status int, contentType, page string) func(testing.TB) string {
		return func(t testing.TB) string {
			return serve(t, func(w http.ResponseWriter, r *http.Request) {
				auth := r.Header.Get("Authorization")
				w.Header().Set("Content-Type", contentType)
				w.Header().Set("X-Echo", auth)
				w.WriteHeader(status)
				io.WriteString(w, strings.ReplaceAll(page, "AUTH", auth))
			})
		}
	}
	tests := []struct {
		name     string
		provider func(testing.TB) string
		probe    func(*checks.Probe)
		code     results.Code
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
				p.Consumer = mustConsumer("quoting", `fail("echoed_header", "x-echo was " + headers["x-echo"])`, "")
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
			for _, leak := range findString(reflect.ValueOf(got), "Result", secret) {
				t.Errorf("secret in %s", leak)
			}
			if strings.Contains(logs.String(), secret) {
				t.Errorf("secret in the logs:\n%s", logs.String())
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
