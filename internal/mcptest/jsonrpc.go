package mcptest

import (
	"encoding/json"
	"strconv"
)

// message is a JSON-RPC message as the client sends it.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func (m message) call() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// metaVersion is the protocol version a stateless request carries in
// params._meta.
func (m message) metaVersion() string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(p.Meta["io.modelcontextprotocol/protocolVersion"], &v)
	return v
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func encode(id json.RawMessage, result any, rerr *rpcError) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(response{JSONRPC: "2.0", ID: id, Result: result, Error: rerr})
	if err != nil {
		// Only a handler's structuredContent can fail to marshal; say so
		// on the wire rather than hide it.
		b, _ = json.Marshal(response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: -32603, Message: "mcptest: " + err.Error()}})
	}
	return b
}

// otherID returns an id that is not id.
func otherID(id json.RawMessage) json.RawMessage {
	var n json.Number
	if json.Unmarshal(id, &n) == nil {
		if i, err := n.Int64(); err == nil {
			return json.RawMessage(strconv.FormatInt(i+1000, 10))
		}
	}
	var str string
	if json.Unmarshal(id, &str) == nil {
		b, _ := json.Marshal(str + "-other")
		return b
	}
	return json.RawMessage("1000")
}
