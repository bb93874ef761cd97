package prober

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/toolpulse/toolpulse/results"
)

// Causes of our own that codeOf maps to codes; everything else reaching
// codeOf comes from net/http, net and crypto/tls.
var (
	// errCanceled marks an attempt that toolpulse itself stopped because the
	// caller's context ended (shutdown, or the caller's own deadline).
	errCanceled = errors.New("run canceled")
)

// tooLargeError is a body that exceeds the probe's max_body_bytes, either
// announced by Content-Length or found while reading (decoded) bytes.
type tooLargeError struct {
	limit    int64
	declared int64 // Content-Length, or -1 when the excess was found by reading
}

func (e *tooLargeError) Error() string {
	if e.declared >= 0 {
		return fmt.Sprintf("Content-Length %d exceeds max_body_bytes (%d)", e.declared, e.limit)
	}
	return fmt.Sprintf("response body exceeds max_body_bytes (%d bytes, after decoding)", e.limit)
}

// jsonError is a body that consumers.DecodeJSON rejected.
// contentType is the answer's Content-Type header, "" when it had none:
// an HTML error page or text/plain says at once where the fault lies.
type jsonError struct {
	err         error
	contentType string
}

func (e *jsonError) Error() string {
	ct := "no Content-Type"
	if e.contentType != "" {
		v := e.contentType
		if len(v) > 100 {
			v = strings.ToValidUTF8(v[:100], "") + "…"
		}
		ct = "Content-Type " + strconv.Quote(v)
	}
	return "response is not valid JSON (" + ct + "): " + e.err.Error()
}
func (e *jsonError) Unwrap() error { return e.err }

// panicError is a panic recovered inside Run.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("internal error: panic: %v", e.value) }

// codeOf is the one place where a cause becomes a code. With err == nil it
// judges an HTTP status: "" when expect lists it, otherwise the status's
// code. With err != nil it judges the error and ignores status. The order
// of the checks matters: our own causes first, then cancellation (so a
// shutdown never reads as a timeout), then the most specific network
// causes, with network_error as the fallback for any other failure to get
// an HTTP exchange.
func codeOf(err error, status int, expect []int) results.Code {
	if err == nil {
		if slices.Contains(expect, status) {
			return ""
		}
		if code := results.TransientStatusCode(status); code != "" {
			return code // 408, 429, 5xx but 501
		}
		return results.CodeUnexpectedStatus
	}

	var (
		tooLarge *tooLargeError
		badJSON  *jsonError
		panicked *panicError
		refused  *redirectRefusedError
	)
	switch {
	case errors.As(err, &panicked):
		return results.CodeInternalError
	case errors.As(err, &refused):
		return results.CodeRedirectRefused
	case errors.As(err, &tooLarge):
		return results.CodeResponseTooLarge
	case errors.As(err, &badJSON):
		return results.CodeInvalidJSON
	case errors.Is(err, errCanceled):
		return results.CodeCanceled
	default:
		// The network's causes, in the order results.TransportCode keeps
		// for every edge that speaks HTTP (cancellation first).
		return results.TransportCode(err)
	}
}
