package mcpsdk

import (
	"encoding/json"
	"testing"
)

// TestResultWith: a response put back into a result lands where
// ResponseOf takes it from, so the two round-trip, and the original
// result is left as it was.
func TestResultWith(t *testing.T) {
	tests := []struct {
		name, result string
		response     any
		want         string
	}{
		{"structuredContent", `{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}`,
			map[string]any{"b": "2"}, `{"b":"2"}`},
		{"JSON text", `{"content":[{"type":"image"},{"type":"text","text":"{\"a\":1}"}]}`,
			[]any{"b"}, `["b"]`},
		{"plain text", `{"content":[{"type":"text","text":"no results"}]}`, "nothing at all", `"nothing at all"`},
		{"plain text, mutated to an object", `{"content":[{"type":"text","text":"no results"}]}`,
			map[string]any{}, `{}`},
		{"no text", `{"content":[{"type":"image"}]}`, map[string]any{"b": "2"}, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var result map[string]any
			if err := json.Unmarshal([]byte(tt.result), &result); err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(ResultWith(result, tt.response))
			if err != nil {
				t.Fatal(err)
			}
			resp, _ := ResponseOf(got)
			if string(resp) != tt.want {
				t.Errorf("ResponseOf(ResultWith(...)) = %s, want %s (result %s)", resp, tt.want, got)
			}
			if again, _ := json.Marshal(result); string(again) != compact(t, tt.result) {
				t.Errorf("the result changed: %s", again)
			}
		})
	}
}

func compact(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
