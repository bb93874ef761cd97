package alertmanager

import "testing"

// TestTraceAnnotation: an alert about a traced run carries its trace id
// in the trace_id annotation (SPEC §10.1); an untraced run's has none.
func TestTraceAnnotation(t *testing.T) {
	n, err := New(Config{URL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.postable(firing()).Annotations["trace_id"]; ok {
		t.Error("an untraced run's alert has a trace_id annotation")
	}
	a := firing()
	a.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	if got := n.postable(a).Annotations["trace_id"]; got != a.TraceID {
		t.Errorf("trace_id annotation %q, want %s", got, a.TraceID)
	}
}
