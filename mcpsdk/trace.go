package mcpsdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/toolpulse/toolpulse/results"
)

// traceTripper marks every HTTP request of a session with the run's trace
// (SPEC §10.1): a traceparent of a span of its own and the synthetic
// tracestate, as headers and, in a JSON-RPC request or notification, the
// same two in params._meta, the carrier the MCP convention (SEP-414) and
// OpenTelemetry's MCP conventions name, since one HTTP request's headers
// say nothing of the messages a stream carries. The client's answers to
// server requests have no params and carry the headers only.
type traceTripper struct {
	next  http.RoundTripper
	trace results.Trace
}

func (t *traceTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req, parent := t.trace.Mark(req)
	if parent != "" && req.Method == http.MethodPost && req.GetBody != nil {
		if body, ok := withTraceMeta(req, parent, t.trace.State); ok {
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			req.ContentLength = int64(len(body))
		}
	}
	return t.next.RoundTrip(req)
}

// withTraceMeta is req's JSON-RPC body with traceparent and tracestate set
// in params._meta, keeping whatever else _meta holds; ok is false when the
// body is not one JSON-RPC message with a method, which is then sent as it
// is.
func withTraceMeta(req *http.Request, parent, state string) ([]byte, bool) {
	rc, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, false
	}
	return traceMeta(data, parent, state)
}

// traceMeta is data, one JSON-RPC message, with the trace in its
// params._meta. The SDK's messages are spliced, not decoded and encoded
// again: every request of a traced session passes here, and a tools/call
// carries the probe's whole fixture. What the splice cannot place (a _meta
// that already names traceparent or tracestate) is decoded and encoded.
func traceMeta(data []byte, parent, state string) ([]byte, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	if _, _, ok := member(data, "method"); !ok {
		return nil, false
	}
	var entries bytes.Buffer
	entries.WriteString(`"traceparent":`)
	entries.Write(quoted(parent))
	entries.WriteString(`,"tracestate":`)
	entries.Write(quoted(state))
	ps, pe, ok := member(data, "params")
	if !ok {
		// {"jsonrpc":…,"method":…} → …,"params":{"_meta":{…}}}
		end := bytes.LastIndexByte(data, '}')
		return splice(data, end, end, `,"params":{"_meta":{`+entries.String()+`}}`), true
	}
	params := data[ps:pe]
	if params[0] != '{' {
		return nil, false // a JSON-RPC request's params may be an array; it has no _meta
	}
	ms, me, ok := member(params, "_meta")
	if !ok {
		at := ps + 1
		sep := ","
		if isEmptyObject(params) {
			sep = ""
		}
		return splice(data, at, at, `"_meta":{`+entries.String()+`}`+sep), true
	}
	meta := params[ms:me]
	_, _, hasParent := member(meta, "traceparent")
	_, _, hasState := member(meta, "tracestate")
	if meta[0] != '{' || hasParent || hasState {
		return reencodeMeta(data, parent, state)
	}
	at := ps + ms + 1
	sep := ","
	if isEmptyObject(meta) {
		sep = ""
	}
	return splice(data, at, at, entries.String()+sep), true
}

// reencodeMeta sets the trace in params._meta by decoding the message and
// encoding it again.
func reencodeMeta(data []byte, parent, state string) ([]byte, bool) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil {
		return nil, false
	}
	params := map[string]json.RawMessage{}
	if json.Unmarshal(msg["params"], &params) != nil {
		return nil, false
	}
	meta := map[string]json.RawMessage{}
	if m, ok := params["_meta"]; ok && !isNull(m) {
		if json.Unmarshal(m, &meta) != nil {
			return nil, false
		}
	}
	meta["traceparent"], meta["tracestate"] = quoted(parent), quoted(state)
	var err1, err2, err3 error
	params["_meta"], err1 = marshal(meta)
	msg["params"], err2 = marshal(params)
	out, err3 := marshal(msg)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, false
	}
	return out, true
}

// splice is data with data[from:to] replaced by s, in a new slice.
func splice(data []byte, from, to int, s string) []byte {
	out := make([]byte, 0, len(data)-(to-from)+len(s))
	out = append(out, data[:from]...)
	out = append(out, s...)
	return append(out, data[to:]...)
}

// quoted is s as a JSON string. A traceparent and a tracestate are
// printable ASCII without quotes or backslashes, so this never fails.
func quoted(s string) json.RawMessage {
	b, _ := marshal(s)
	return b
}

// isEmptyObject reports whether obj, a valid JSON object, has no members.
func isEmptyObject(obj []byte) bool {
	return len(bytes.TrimSpace(obj[1:len(obj)-1])) == 0
}

// member finds key among the members of obj, a valid JSON value, and
// returns where its value starts and ends in obj; ok is false when obj is
// not an object or has no such member. Keys are compared as written, which
// is how the SDK writes them (no escapes in the names it uses).
func member(obj []byte, key string) (start, end int, ok bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return 0, 0, false
		}
		ks := i
		i = skipValue(obj, i) // the key, a string
		name := obj[ks+1 : i-1]
		i = skipSpace(obj, i) + 1 // ':'
		vs := skipSpace(obj, i)
		ve := skipValue(obj, vs)
		if string(name) == key {
			return vs, ve, true
		}
		i = skipSpace(obj, ve)
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at i in
// b, which is valid JSON.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return i
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipValue(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) && strings.IndexByte(",}] \t\n\r", b[i]) < 0 {
		i++
	}
	return i
}

// marshal is json.Marshal without HTML escaping, so that the values the
// message carried go out byte for byte as they came, only compacted.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
