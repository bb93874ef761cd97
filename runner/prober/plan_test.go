package prober

import (
	"reflect"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
)

// TestExpandStepEachPlace: a template is expanded wherever a request holds
// it, even when it is the request's only one, and the config's step is
// left as it was.
func TestExpandStepEachPlace(t *testing.T) {
	v := newVars("op-1")
	v.captured["order_id"] = 31
	tests := []struct {
		name string
		req  checks.Request
		want checks.Request
	}{
		{"url",
			checks.Request{URL: "http://x/orders/{{order_id}}"},
			checks.Request{URL: "http://x/orders/31"}},
		{"header",
			checks.Request{URL: "http://x", Headers: map[string]checks.Secret{"Idempotency-Key": "{{operation_id}}"}},
			checks.Request{URL: "http://x", Headers: map[string]checks.Secret{"Idempotency-Key": "op-1"}}},
		{"query",
			checks.Request{URL: "http://x", Query: map[string]string{"order": "{{order_id}}"}},
			checks.Request{URL: "http://x", Query: map[string]string{"order": "31"}}},
		{"json, inside a list",
			checks.Request{URL: "http://x", HasJSON: true, JSON: map[string]any{"ids": []any{"a", "{{order_id}}"}}},
			checks.Request{URL: "http://x", HasJSON: true, JSON: map[string]any{"ids": []any{"a", 31}}}},
		{"body",
			checks.Request{URL: "http://x", Body: "order={{order_id}}"},
			checks.Request{URL: "http://x", Body: "order=31"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &checks.Step{Request: tt.req}
			q, err := expandStep(s, v)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(q.Request, tt.want) {
				t.Errorf("expanded %+v, want %+v", q.Request, tt.want)
			}
			if !reflect.DeepEqual(s.Request, tt.req) {
				t.Errorf("the config's step changed to %+v", s.Request)
			}
		})
	}
}
