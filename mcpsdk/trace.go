package mcpsdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

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
	parent, err := t.trace.Traceparent()
	if err != nil {
		// No random bytes: the request goes unmarked rather than not at all.
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Traceparent", parent)
	req.Header.Set("Tracestate", t.trace.State)
	if req.Method == http.MethodPost && req.GetBody != nil {
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
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil || msg["method"] == nil {
		return nil, false
	}
	params := map[string]json.RawMessage{}
	if p, ok := msg["params"]; ok && !isNull(p) {
		if json.Unmarshal(p, &params) != nil {
			return nil, false
		}
	}
	meta := map[string]json.RawMessage{}
	if m, ok := params["_meta"]; ok && !isNull(m) {
		if json.Unmarshal(m, &meta) != nil {
			return nil, false
		}
	}
	var err1, err2, err3, err4, err5 error
	meta["traceparent"], err1 = marshal(parent)
	meta["tracestate"], err2 = marshal(state)
	params["_meta"], err3 = marshal(meta)
	msg["params"], err4 = marshal(params)
	out, err5 := marshal(msg)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, false
	}
	return out, true
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
