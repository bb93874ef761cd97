// Package mcptest is a configurable MCP server over Streamable HTTP for
// toolpulse's tests: in process, on loopback, written with net/http and
// encoding/json only, so that it can misbehave at the byte level where an
// SDK's server would refuse to. In its normal mode it is a correct server
// of either era of the transport (Legacy: 2025-03-26 … 2025-11-25 with
// initialize and sessions; Stateless: 2026-07-28 with server/discover and
// per-request metadata; or both at once), answering in JSON or SSE. Each
// Fault makes it misbehave the way a real server has, per method and for
// a number of requests. Every request it receives is recorded, so a test
// can count exchanges and read their headers.
//
// It also runs @modelcontextprotocol/server-everything from npm, a real
// server nobody here wrote, inside a private network namespace
// (FindEverything, Everything.Start, InPrivateNetwork), and
// @modelcontextprotocol/inspector-cli, a real client nobody here wrote
// (FindInspector, Inspector.Run).
//
// Only tests import it.
package mcptest
