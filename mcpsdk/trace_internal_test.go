package mcpsdk

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestTraceMeta: the trace goes into params._meta of every shape of
// JSON-RPC message the splice meets, and nothing else of the message
// changes.
func TestTraceMeta(t *testing.T) {
	const parent, state = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "toolpulse=synthetic:p"
	trace := map[string]any{"traceparent": parent, "tracestate": state}
	for _, tt := range []struct {
		name, in string
		want     string // the message expected, compared decoded; "" for not a message to mark
	}{
		{"no params", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{}}}`},
		{"empty params", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}`},
		{"params without _meta, tricky strings", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s","arguments":{"q":"a \"}\" {\\","n":[1,{"x":null}],"_meta":"not the params' own"}}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s","arguments":{"q":"a \"}\" {\\","n":[1,{"x":null}],"_meta":"not the params' own"},"_meta":{}}}`},
		{"_meta after an escaped quote", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{"q":"\"}"},"_meta":{"k":1}}}`,
			`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{"q":"\"}"},"_meta":{"k":1}}}`},
		{"_meta with other keys", `{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		{"empty _meta", `{ "jsonrpc" : "2.0", "id" : 4, "method" : "ping", "params" : { "_meta" : { } } }`,
			`{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{}}}`},
		{"a traceparent already there is replaced", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"traceparent":"old","k":1}}}`,
			`{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"k":1}}}`},
		{"a response", `{"jsonrpc":"2.0","id":6,"result":{}}`, ""},
		{"params as an array", `{"jsonrpc":"2.0","id":7,"method":"m","params":[1]}`, ""},
		{"not JSON", `{"jsonrpc":`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, ok := traceMeta([]byte(tt.in), parent, state)
			if tt.want == "" {
				if ok {
					t.Errorf("marked %s as %s; want it sent as it is", tt.in, out)
				}
				return
			}
			var got, want map[string]any
			if !ok || json.Unmarshal(out, &got) != nil {
				t.Fatalf("traceMeta(%s) = %s, %v; want a marked message", tt.in, out, ok)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			meta := want["params"].(map[string]any)["_meta"].(map[string]any)
			for k, v := range trace {
				meta[k] = v
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("traceMeta(%s)\n got  %s\n want %v", tt.in, out, want)
			}
		})
	}
}
