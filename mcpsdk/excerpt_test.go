package mcpsdk

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

// zodRefusal is how the TypeScript SDK words arguments its input schema
// rejects: the argument's name is deep in a pretty-printed list, well
// past the first 120 characters.
const zodRefusal = "MCP error -32602: Input validation error: Invalid arguments for tool get-weather: [\n" +
	"  {\n    \"code\": \"invalid_type\",\n    \"expected\": \"string\",\n    \"received\": \"undefined\",\n" +
	"    \"path\": [\n      \"location\"\n    ],\n    \"message\": \"Required\"\n  }\n]"

// TestToolInputNamesTheArgument: a tool_input message keeps the name of
// the argument the server rejects, however the server says it, on one line.
func TestToolInputNamesTheArgument(t *testing.T) {
	c := &call{req: Request{Tool: "get-weather"}}
	result, err := json.Marshal(map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": zodRefusal}}})
	if err != nil {
		t.Fatal(err)
	}
	c.result = result
	tests := []struct {
		name string
		v    *verdict
		want string
	}{
		{"JSON-RPC -32602, go-sdk", c.judgeRPCError("tools/call", 1, rpcInvalidParams,
			`validating "arguments": validating root: required: missing properties: ["location"]`, nil, ""),
			`missing properties: [\"location\"]`},
		{"JSON-RPC -32602, TypeScript SDK", c.judgeRPCError("tools/call", 1, rpcInvalidParams, zodRefusal, nil, ""),
			`\"path\": [ \"location\" ]`},
		{"isError result, TypeScript SDK", c.judgeResult(1), `\"path\": [ \"location\" ]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.v.code != results.CodeToolInput {
				t.Errorf("code %s, want tool_input (%s)", tt.v.code, tt.v.message)
			}
			if !strings.Contains(tt.v.message, tt.want) {
				t.Errorf("message %q lacks %q", tt.v.message, tt.want)
			}
			if !strings.HasPrefix(tt.v.message, `tools/call "get-weather": `) || strings.Contains(tt.v.message, `\n`) {
				t.Errorf("message %q: want the exchange first, on one line", tt.v.message)
			}
		})
	}
}

// TestExcerptBounded: a server's text is quoted whole up to maxExcerpt
// characters; longer, its middle gives way.
func TestExcerptBounded(t *testing.T) {
	long := strings.Repeat("a", 150) + strings.Repeat("b", 150) + " the end"
	got := excerpt([]byte(long))
	if n := len([]rune(got)); n > maxExcerpt+2 || !strings.HasPrefix(got, `"aaa`) || !strings.HasSuffix(got, `b the end"`) || !strings.Contains(got, "…") {
		t.Errorf("excerpt of %d characters = %q (%d): want its start and end, at most %d characters quoted", len(long), got, n, maxExcerpt)
	}
	if got := excerpt([]byte("Internal error")); got != `"Internal error"` {
		t.Errorf("excerpt of a short text = %s, want it whole", got)
	}
}
