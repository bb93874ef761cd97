// Package mcpsdk is toolpulse's one edge to the official MCP Go SDK,
// github.com/modelcontextprotocol/go-sdk: every other package reaches the
// SDK through this one, so that upgrading or swapping it touches one
// folder. It holds the SDK settings a probe depends on, and Call: one
// probe session of one tool, judged into the codes of SPEC §10 from what
// the wire carried, with every HTTP exchange recorded; and ListTools, the
// same session without the call, for `toolpulse mcp tools`. It also serves
// MCP: toolpulse's own endpoint (HealthHandler), and NewServer, a server
// of tools given as data, for the example provider.
package mcpsdk

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport returns a Streamable HTTP client transport to endpoint that
// makes one attempt per exchange, and resumes a request's SSE stream the
// server closed before the response after an event with an id: a GET with
// Last-Event-ID after the stream's retry: (MCP 2025-11-25 SSE polling), the
// one reconnection the protocol asks of a client. MaxRetries is 1, not the
// SDK's 5 with back-off, which would hide a failing server from the
// probe's own retry policy: a resumption that fails, or one that brings
// no new event, ends the call; one that brings new events may be followed
// by another, within the call's context. Each GET is an exchange of its
// own in the attempt rows. DisableStandaloneSSE is set: the SDK fails a
// session whose standalone stream fails or keeps ending, so only Call,
// whose wire keeps that stream from failing anything, turns it on, to
// hear a server that asks for input there. The SDK has no header option: headers
// (Authorization) go in through client's RoundTripper.
func Transport(endpoint string, client *http.Client) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{
		Endpoint:             endpoint,
		HTTPClient:           client,
		MaxRetries:           1,
		DisableStandaloneSSE: true,
	}
}
