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

// UnavailableCodes lists every code of the unavailable outcome.
var UnavailableCodes = []Code{
	CodeTimeout, CodeConnectionRefused, CodeConnectionReset, CodeDNSError,
	CodeTLSError, CodeNetworkError, CodeServerError, CodeRateLimited, CodeCanceled,
}

// ContractCodes lists every built-in code of the contract_error outcome.
var ContractCodes = []Code{
	CodeUnexpectedStatus, CodeResponseTooLarge, CodeInvalidJSON, CodeRuleError,
	CodeSelectionNotList, CodeInvalidItem, CodeEmptySelection, CodeTooFewResults,
	CodeInternalError,
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
