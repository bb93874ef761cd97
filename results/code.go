package results

import "regexp"

// Code says why an operation did not pass. Codes are stable snake_case
// strings: users alert, query and script on them.
type Code string

// Codes of the unavailable outcome: no usable HTTP exchange. All are retried.
const (
	CodeTimeout           Code = "timeout"
	CodeConnectionRefused Code = "connection_refused"
	CodeConnectionReset   Code = "connection_reset"
	CodeDNSError          Code = "dns_error"
	CodeTLSError          Code = "tls_error"
	CodeNetworkError      Code = "network_error"
	CodeServerError       Code = "server_error"
	CodeRateLimited       Code = "rate_limited"
	// CodeCanceled marks a run that toolpulse itself stopped (shutdown)
	// before it could finish; it says nothing about the provider.
	CodeCanceled Code = "canceled"
)

// Codes of the unavailable outcome that only MCP probes produce (SPEC §10),
// beside the transport codes above, which they share at every step of a
// session.
const (
	// CodeToolServerError is a JSON-RPC error that says the server failed:
	// -32603 (internal error), a server-defined -32000…-32099 that no other
	// code claims, or an application-defined code outside the range
	// JSON-RPC reserves.
	CodeToolServerError Code = "tool_server_error"
	// CodeSessionLost is a server that forgot the session (404, or 400
	// naming the session) again after one re-initialization.
	CodeSessionLost Code = "session_lost"
	// CodeToolUnavailable is a result with isError: true from a probe
	// whose mcp.is_error says unavailable: the tool says it cannot do the
	// work now, which the probe counts as the tool being down, and retries.
	CodeToolUnavailable Code = "tool_unavailable"
	// CodeServerExited is a stdio MCP server (mcp.command) that could not
	// be started, or whose process ended or closed its stdout before the
	// session was done (SPEC §10.1).
	CodeServerExited Code = "server_exited"
)

// Codes of the contract_error outcome: a response arrived but the caller
// could not use it. None is retried. A rule's fail(code, message) adds its
// own codes to this set.
const (
	CodeUnexpectedStatus Code = "unexpected_status"
	CodeResponseTooLarge Code = "response_too_large"
	CodeInvalidJSON      Code = "invalid_json"
	CodeRuleError        Code = "rule_error"
	CodeSelectionNotList Code = "selection_not_list"
	CodeInvalidItem      Code = "invalid_item"
	CodeEmptySelection   Code = "empty_selection"
	CodeTooFewResults    Code = "too_few_results"
	// CodeInternalError marks a run that failed inside toolpulse (a recovered
	// panic); it is recorded so that it is never lost, and never retried.
	CodeInternalError Code = "internal_error"
)

// Codes of the contract_error outcome that only MCP probes produce (SPEC
// §10).
const (
	// CodeToolMissing is a tool that tools/list does not show, or that the
	// server says does not exist when it is called (a JSON-RPC error, an
	// isError result or an HTTP 400 naming it).
	CodeToolMissing Code = "tool_missing"
	// CodeToolInput is a server that rejects the fixture's arguments: -32602
	// on tools/call, or an isError result saying the input is invalid.
	CodeToolInput Code = "tool_input"
	// CodeToolError is a result with isError: true. A probe with is_error:
	// unavailable gets CodeToolUnavailable instead.
	CodeToolError Code = "tool_error"
	// CodeOutputSchema is a tool that declares an outputSchema and answers
	// without structuredContent, or with one that does not validate.
	CodeOutputSchema Code = "output_schema"
	// CodeMCPProtocol is an answer that breaks the protocol: not JSON-RPC,
	// a wrong content type, no protocol version in common, a response to
	// another request's id, an SSE event that is not JSON.
	CodeMCPProtocol Code = "mcp_protocol"
	// CodeNeedsInput is a server that asks the client for input a probe
	// cannot give: sampling, elicitation, a client capability it lacks.
	CodeNeedsInput Code = "needs_input"
	// CodeDestructiveTool is a tool whose annotations say destructiveHint:
	// true, which a probe without allow_destructive never calls.
	CodeDestructiveTool Code = "destructive_tool"

	// Codes of a multi-step probe (SPEC §11).

	// CodeClaimMismatch is a verification whose until rule was still
	// false when its within ran out: the claim an earlier step made was
	// not observed.
	CodeClaimMismatch Code = "claim_mismatch"
	// CodeCaptureFailed is a capture whose rule failed or gave null, or
	// whose value cannot go where a later step puts it.
	CodeCaptureFailed Code = "capture_failed"

	// CodeRedirectRefused is a redirect the probe's policy does not
	// follow: into a link-local address (cloud metadata), or a private or
	// loopback one from a probe whose own host is not on one. The
	// redirect's target is never connected to, so its answer is never
	// stored.
	CodeRedirectRefused Code = "redirect_refused"

	// Codes of a probe with OAuth client credentials (SPEC §10.1).

	// CodeAuthRejected is a token endpoint that refused the probe's client
	// credentials (HTTP 400, 401 or 403: invalid_client, invalid_scope,
	// unauthorized_client...). An endpoint that cannot be reached is
	// unavailable with the transport's code instead.
	CodeAuthRejected Code = "auth_rejected"
	// CodeAuthDiscovery is a probe without token_url whose token endpoint
	// could not be found: no protected resource metadata (RFC 9728), no
	// authorization server metadata (RFC 8414 or OpenID Connect) or one
	// without a token endpoint, or a token answer without an access token.
	CodeAuthDiscovery Code = "auth_discovery"
)

// UnavailableCodes lists every code of the unavailable outcome.
var UnavailableCodes = []Code{
	CodeTimeout, CodeConnectionRefused, CodeConnectionReset, CodeDNSError,
	CodeTLSError, CodeNetworkError, CodeServerError, CodeRateLimited, CodeCanceled,
	CodeToolServerError, CodeSessionLost, CodeToolUnavailable, CodeServerExited,
}

// ContractCodes lists every built-in code of the contract_error outcome.
var ContractCodes = []Code{
	CodeUnexpectedStatus, CodeResponseTooLarge, CodeInvalidJSON, CodeRuleError,
	CodeSelectionNotList, CodeInvalidItem, CodeEmptySelection, CodeTooFewResults,
	CodeInternalError,
	CodeToolMissing, CodeToolInput, CodeToolError, CodeOutputSchema, CodeMCPProtocol,
	CodeNeedsInput, CodeDestructiveTool,
	CodeClaimMismatch, CodeCaptureFailed, CodeRedirectRefused,
	CodeAuthRejected, CodeAuthDiscovery,
}

// Outcome returns the outcome a code belongs to. Unknown codes, such as those
// raised by a rule's fail(), are contract errors.
func (c Code) Outcome() Outcome {
	for _, u := range UnavailableCodes {
		if c == u {
			return Unavailable
		}
	}
	return ContractError
}

// Retryable reports whether a failure with this code may succeed on another
// attempt. Only unavailable causes are (SPEC §2); a cancelled run is not
// retried because toolpulse itself stopped it.
func (c Code) Retryable() bool {
	return c.Outcome() == Unavailable && c != CodeCanceled
}

var codePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// reservedCodes are label values metrics use on their own: "none" on pass,
// "other" beyond the per-probe cap of custom codes.
var reservedCodes = map[string]bool{"none": true, "other": true}

// ValidCustomCode reports whether s may be used as a code raised by a rule:
// snake_case, starting with a letter, at most 64 characters, not one of
// the unavailable codes (a rule cannot claim the provider was unreachable)
// and not a reserved word.
func ValidCustomCode(s string) bool {
	return codePattern.MatchString(s) && Code(s).Outcome() == ContractError && !reservedCodes[s]
}
