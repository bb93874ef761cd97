package mcptest

import (
	"net/http"
	"time"
)

// FaultKind names one way a server misbehaves.
type FaultKind int

// The fault kinds. Each constructor below says what its kind puts on the
// wire and which real server or report it imitates.
const (
	faultNone FaultKind = iota
	KindWrongID
	KindSSENeverEnds
	KindSSEGarbage
	KindNotAcceptable
	KindPlainBadRequest
	KindUnknownTool
	KindInvalidInput
	KindInvalidInputResult
	KindToolError
	KindStructuredMismatch
	KindStructuredMissing
	KindHuge
	KindDrip
	KindForgetSession
	KindAskSampling
	KindAskElicitation
	KindRPCError
	KindNoCommonVersion
	KindSSECut
)

// UnknownToolStyle is how a server says a tool does not exist; real
// servers disagree.
type UnknownToolStyle int

const (
	// UnknownAsInvalidParams is a JSON-RPC error -32602 whose message names
	// the tool ("Unknown tool: x"), what the 2025-11-25 tools page asks
	// for and what modelcontextprotocol/servers#4159 expected.
	UnknownAsInvalidParams UnknownToolStyle = iota
	// UnknownAsMethodNotFound is a JSON-RPC error -32601 naming the tool,
	// as the Python SDK answered after modelcontextprotocol/python-sdk#1149
	// and the PHP SDK before modelcontextprotocol/php-sdk#423.
	UnknownAsMethodNotFound
	// UnknownAsResult is a successful JSON-RPC answer carrying a
	// CallToolResult with isError: true and the text "MCP error -32602:
	// Tool x not found": what the TypeScript SDK's servers send, among them
	// @modelcontextprotocol/server-everything 2026.8.31 and
	// server-filesystem (modelcontextprotocol/servers#4159).
	UnknownAsResult
	// UnknownAsHTTP400 is HTTP 400 whose body is a JSON-RPC error -32602
	// naming the tool, as the go-sdk's stateless server answers.
	UnknownAsHTTP400
)

// Fault is one misbehaviour, selected per server (Config.Faults, or
// Server.SetFaults) and, through Method, per JSON-RPC method: "initialize",
// "server/discover", "tools/list", "tools/call", or "" for every method
// the kind can apply to. The first fault that matches a request is the
// one applied; one request gets at most one fault.
type Fault struct {
	Kind FaultKind
	// Method is the JSON-RPC method the fault hits; "" hits every one.
	Method string
	// Count is how many matching requests the fault hits before it is
	// spent; 0 hits every one.
	Count int

	Code    int              // KindRPCError: the JSON-RPC error code
	Status  int              // KindForgetSession: 404 or 400
	Style   UnknownToolStyle // KindUnknownTool
	Size    int64            // KindHuge: bytes of text in the result
	Every   time.Duration    // KindDrip: the pause after each byte
	Text    string           // KindToolError, KindRPCError: the message
	Version string           // KindNoCommonVersion: the version answered
	Value   any              // KindStructuredMismatch: the structuredContent sent instead of the computed one
}

// Times returns f hitting only the first n matching requests.
func (f Fault) Times(n int) Fault { f.Count = n; return f }

// Once returns f hitting only the first matching request.
func (f Fault) Once() Fault { return f.Times(1) }

// WrongID answers method with a response whose id is not the request's
// (the request's id plus 1000 for a number, with "-other" appended for a
// string). radareorg/radare2-mcp#68 (every response id 0) and the
// cross-wired ids of modelcontextprotocol/typescript-sdk#2433 are the
// real cases.
func WrongID(method string) Fault { return Fault{Kind: KindWrongID, Method: method} }

// SSENeverEnds answers method with 200 text/event-stream, sends the
// headers and then never an event, until the client goes away or the
// server closes: the "empty 200 that hangs for exactly 240 s" of
// modelcontextprotocol/typescript-sdk#2433, and the stalled streams of
// QwenLM/qwen-code#8550.
func SSENeverEnds(method string) Fault { return Fault{Kind: KindSSENeverEnds, Method: method} }

// SSEGarbage answers method with 200 text/event-stream whose events carry
// data that is not JSON, then ends the stream without a response.
func SSEGarbage(method string) Fault { return Fault{Kind: KindSSEGarbage, Method: method} }

// SSECut answers method with 200 text/event-stream carrying one priming
// event (an id and empty data, which the TypeScript SDK's servers send
// first so that a client may resume with Last-Event-ID; server-everything
// 2026.8.31 does) and then ends the stream without the response, as a
// server restart or a proxy's idle timeout does. A client that resumes
// sends a GET with Last-Event-ID, which this server answers 405.
func SSECut(method string) Fault { return Fault{Kind: KindSSECut, Method: method} }

// NotAcceptable answers method with 406 and the TypeScript SDK's body
// ({"jsonrpc":"2.0","error":{"code":-32000,"message":"Not Acceptable:
// Client must accept both application/json and text/event-stream"},
// "id":null}), whatever the client's Accept header says; hosted servers
// do this behind proxies that drop the header
// (bh-rat/context-awesome#11).
func NotAcceptable(method string) Fault { return Fault{Kind: KindNotAcceptable, Method: method} }

// PlainBadRequest answers method with 400 and a text/plain body that is
// not JSON-RPC, as net/http's http.Error and many proxies do.
func PlainBadRequest(method string) Fault { return Fault{Kind: KindPlainBadRequest, Method: method} }

// UnknownTool makes tools/call answer that the tool does not exist, in the
// given style, even for a tool tools/list shows: a tool removed between
// the listing and the call, or a server whose list and call registries
// disagree (modelcontextprotocol/typescript-sdk#288). A name the server
// never listed is answered in Config.UnknownTool's style without a fault.
func UnknownTool(style UnknownToolStyle) Fault {
	return Fault{Kind: KindUnknownTool, Method: "tools/call", Style: style}
}

// InvalidInput makes tools/call reject the arguments with a JSON-RPC error
// -32602 "Invalid params" that names the tool and the argument.
func InvalidInput() Fault { return Fault{Kind: KindInvalidInput, Method: "tools/call"} }

// InvalidInputResult makes tools/call reject the arguments the way the
// TypeScript SDK's servers do: a CallToolResult with isError: true and the
// text "MCP error -32602: Input validation error: Invalid arguments for
// tool x: ..." (what @modelcontextprotocol/server-everything 2026.8.31
// answers for echo {"message": 5}).
func InvalidInputResult() Fault { return Fault{Kind: KindInvalidInputResult, Method: "tools/call"} }

// ToolError makes tools/call answer a CallToolResult with isError: true
// and text as its one text item, whatever the handler would have said:
// the answer clients have recorded as success (google-gemini/gemini-cli#6194,
// anomalyco/opencode#16988, bytedance/trae-agent#429).
func ToolError(text string) Fault {
	return Fault{Kind: KindToolError, Method: "tools/call", Text: text}
}

// StructuredMismatch makes tools/call answer a structuredContent that does
// not validate against the tool's outputSchema (Value if set, else one
// computed from the schema: see breakStructured). No SDK client checks it
// (the go-sdk does not; MCPJam/inspector#1513 relied on the TypeScript
// SDK to).
func StructuredMismatch() Fault { return Fault{Kind: KindStructuredMismatch, Method: "tools/call"} }

// StructuredMissing makes tools/call leave structuredContent out although
// the tool declares an outputSchema: anthropics/claude-code#14465 (tools
// advertise outputSchema but return no structuredContent) and
// IBM/mcp-context-forge#4042.
func StructuredMissing() Fault { return Fault{Kind: KindStructuredMissing, Method: "tools/call"} }

// Huge makes tools/call answer a text item of size bytes (50 MB for 0),
// streamed in chunks so that neither side needs it whole in memory.
func Huge(size int64) Fault { return Fault{Kind: KindHuge, Method: "tools/call", Size: size} }

// Drip answers method correctly but one byte at a time, flushed, with a
// pause of every after each byte (100 ms for 0): a server behind a
// congested link or a proxy that trickles.
func Drip(method string, every time.Duration) Fault {
	return Fault{Kind: KindDrip, Method: method, Every: every}
}

// ForgetSession makes the server forget the session a request to method
// carries, as a restart does, and answer status: 404 with a JSON-RPC error
// -32001 "Session not found", which the spec requires and a client must
// answer with a new initialize; or 400 with a JSON-RPC error -32000 "Bad
// Request: No valid session ID provided" and no id, which the TypeScript
// SDK's servers send (server-everything 2026.8.31, punkpeye/fastmcp#121,
// PrefectHQ/fastmcp#3073, diegosouzapw/OmniRoute#5191). Once() forgets a
// single time, so a re-initialized session works; without it every
// session is forgotten at its first request to method, however often the
// client re-initializes. A stateless server has no session to forget and
// ignores the fault.
func ForgetSession(method string, status int) Fault {
	if status != http.StatusBadRequest {
		status = http.StatusNotFound
	}
	return Fault{Kind: KindForgetSession, Method: method, Status: status}
}

// AskSampling makes tools/call ask the client for an LLM completion before
// it answers. In the legacy era the answer becomes an SSE stream that
// first carries a sampling/createMessage request; the server waits for the
// client's response (a POST it answers with 202), then sends the tool's
// result, or an isError result if the client answered with an error
// (the "MCP error -32601: Method not found" of
// modelcontextprotocol/use-mcp#29). It waits for as long as the client
// keeps the stream open. In the stateless era, where a server must not
// send requests, the answer is an input_required result carrying the
// request in inputRequests (the 2026-07-28 multi round-trip pattern); a
// retry carrying inputResponses gets the tool's result.
func AskSampling() Fault { return Fault{Kind: KindAskSampling, Method: "tools/call"} }

// AskElicitation is AskSampling with an elicitation/create request for a
// form, as servers do to confirm a write (anthropics/claude-ai-mcp#1046).
func AskElicitation() Fault { return Fault{Kind: KindAskElicitation, Method: "tools/call"} }

// InternalError answers method with a JSON-RPC error -32603 "Internal
// error".
func InternalError(method string) Fault {
	return Fault{Kind: KindRPCError, Method: method, Code: -32603, Text: "Internal error"}
}

// ServerError answers method with a server-defined JSON-RPC error, code in
// -32000…-32099 (-32000 for 0), such as the "-32001 Request timed out" an
// upstream behind a gateway produces
// (TheArchitectit/agent-guardrails-template#3).
func ServerError(method string, code int) Fault {
	if code == 0 {
		code = -32000
	}
	return Fault{Kind: KindRPCError, Method: method, Code: code, Text: "Server error: upstream unavailable"}
}

// NoCommonVersion makes the handshake end without a version both sides
// speak. In the legacy era initialize answers protocolVersion "1999-12-31"
// (or Version), which the client did not offer and no revision has. In
// the stateless era every request is refused with 400 and the
// UnsupportedProtocolVersionError (-32022) listing only that version.
func NoCommonVersion() Fault { return Fault{Kind: KindNoCommonVersion, Version: "1999-12-31"} }

// applies reports whether f hits a message for method; call is false for
// a notification, which no fault shapes.
func (f Fault) applies(method string, call bool) bool {
	if !call || (f.Method != "" && f.Method != method) {
		return false
	}
	switch f.Kind {
	case KindUnknownTool, KindInvalidInput, KindInvalidInputResult, KindToolError,
		KindStructuredMismatch, KindStructuredMissing, KindHuge, KindAskSampling, KindAskElicitation:
		return method == "tools/call"
	}
	return true
}
