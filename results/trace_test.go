package results_test

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

func TestTraceHeaders(t *testing.T) {
	tr, err := results.NewTrace(rand.Reader, "search_api")
	if err != nil {
		t.Fatal(err)
	}
	if !tr.On() || len(tr.ID) != 32 {
		t.Fatalf("trace id = %q, want 32 hex digits", tr.ID)
	}
	if got, want := tr.State, "toolpulse=synthetic:search_api"; got != want {
		t.Errorf("tracestate = %q, want %q", got, want)
	}
	a, err := tr.Traceparent()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tr.Traceparent()
	for _, h := range []string{a, b} {
		id, ok := results.ParseTraceparent(h)
		if !ok || id != tr.ID || !strings.HasPrefix(h, "00-") || !strings.HasSuffix(h, "-01") {
			t.Errorf("traceparent %q: trace id %q (valid %v), want version 00, %s, sampled", h, id, ok, tr.ID)
		}
	}
	if a == b {
		t.Errorf("two spans of one run share the traceparent %q; each request is a span of its own", a)
	}
	other, _ := results.NewTrace(rand.Reader, "search_api")
	if other.ID == tr.ID {
		t.Errorf("two runs share trace id %s; each run is a trace of its own", tr.ID)
	}
}

func TestTraceZeroIDsRedrawn(t *testing.T) {
	// W3C forbids an all-zero trace or span id: a source that starts with
	// zeros is read again.
	src := bytes.NewReader(append(make([]byte, 16), bytes.Repeat([]byte{0xab}, 64)...))
	tr, err := results.NewTrace(src, "p")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tr.ID, strings.Repeat("ab", 16); got != want {
		t.Errorf("trace id = %s, want %s", got, want)
	}
	if _, err := results.NewTrace(bytes.NewReader(make([]byte, 256)), "p"); err == nil {
		t.Error("a source of zeros made a trace; want an error")
	}
}

func TestTraceStateValueGrammar(t *testing.T) {
	for _, tc := range []struct{ name, probe, want string }{
		{"probe name as is", "a.b_c-9", "toolpulse=synthetic:a.b_c-9"},
		{"comma, equals, percent, space escaped", "a,b=c%d e", "toolpulse=synthetic:a%2Cb%3Dc%25d%20e"},
		{"non-ASCII escaped byte by byte", "é", "toolpulse=synthetic:%C3%A9"},
		{"cut at 256 before a whole escape", strings.Repeat("x", 245) + ",,", "toolpulse=synthetic:" + strings.Repeat("x", 245)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := results.NewTrace(rand.Reader, tc.probe)
			if err != nil {
				t.Fatal(err)
			}
			if tr.State != tc.want {
				t.Errorf("tracestate = %q, want %q", tr.State, tc.want)
			}
			value := strings.TrimPrefix(tr.State, "toolpulse=")
			if len(value) > 256 {
				t.Errorf("value has %d characters, W3C allows 256", len(value))
			}
			for _, c := range []byte(value) {
				if c < 0x21 || c > 0x7e || c == ',' || c == '=' {
					t.Errorf("value %q holds %q, outside W3C's nblk-chr", value, c)
				}
			}
		})
	}
}

func TestParseTraceparent(t *testing.T) {
	for _, tc := range []struct {
		h  string
		ok bool
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", false},
	} {
		if _, ok := results.ParseTraceparent(tc.h); ok != tc.ok {
			t.Errorf("ParseTraceparent(%q) ok = %v, want %v", tc.h, ok, tc.ok)
		}
	}
}

// TestNewAlertKeepsTrace: an alert names the trace of the run it is about,
// so that every receiver can show it.
func TestNewAlertKeepsTrace(t *testing.T) {
	r := results.Result{OperationID: "op", Probe: "p", Outcome: results.Unavailable,
		Error: results.NewError(results.CodeTimeout, "no answer"), TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
	if a := results.NewAlert(results.AlertFiring, &r, r.StartedAt); a.TraceID != r.TraceID {
		t.Errorf("NewAlert: trace %q, want the run's %s", a.TraceID, r.TraceID)
	}
}
