package webhook

import (
	"encoding/json"
	"testing"
)

// TestBodyTrace: the body names a traced run's trace id (SPEC §10.1) and
// leaves trace_id out for an untraced run.
func TestBodyTrace(t *testing.T) {
	n, err := New(Config{URL: "https://hooks.example.com/x", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	a := firing()
	a.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, tt := range []struct {
		traceID string
		want    any
	}{{a.TraceID, a.TraceID}, {"", nil}} {
		a.TraceID = tt.traceID
		body, err := n.Body(a)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got["trace_id"] != tt.want {
			t.Errorf("trace_id = %v, want %v", got["trace_id"], tt.want)
		}
	}
}
