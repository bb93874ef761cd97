package runner

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/toolpulse/toolpulse/results"
)

// Causes of our own that classify maps to codes; everything else reaching
// classify comes from net/http, net and crypto/tls.
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

// classify is the one place where a cause becomes a code. With err == nil it
// judges an HTTP status: "" when expect lists it, otherwise the status's
// code. With err != nil it judges the error and ignores status. The order
// of the checks matters: our own causes first, then cancellation (so a
// shutdown never reads as a timeout), then the most specific network
// causes, with network_error as the fallback for any other failure to get
// an HTTP exchange.
func classify(err error, status int, expect []int) results.Code {
	if err == nil {
		switch {
		case slices.Contains(expect, status):
			return ""
		case status == http.StatusRequestTimeout:
			return results.CodeTimeout
		case status == http.StatusTooManyRequests:
			return results.CodeRateLimited
		case status >= 500 && status <= 599 && status != http.StatusNotImplemented:
			return results.CodeServerError
		default:
			return results.CodeUnexpectedStatus
		}
	}

	var (
		tooLarge *tooLargeError
		badJSON  *jsonError
		panicked *panicError
		dnsErr   *net.DNSError
		timeout  interface{ Timeout() bool }
	)
	switch {
	case errors.As(err, &panicked):
		return results.CodeInternalError
	case errors.As(err, &tooLarge):
		return results.CodeResponseTooLarge
	case errors.As(err, &badJSON):
		return results.CodeInvalidJSON
	case errors.Is(err, errCanceled), errors.Is(err, context.Canceled):
		return results.CodeCanceled
	case errors.As(err, &dnsErr):
		// Before timeout: a resolver that times out is still a DNS problem.
		return results.CodeDNSError
	case isTLSError(err):
		return results.CodeTLSError
	case errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &timeout) && timeout.Timeout():
		return results.CodeTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return results.CodeConnectionRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED),
		// The peer closed the connection before the response was complete.
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return results.CodeConnectionReset
	default:
		return results.CodeNetworkError
	}
}

// isTLSError reports whether err is a failed TLS handshake or certificate
// check. crypto/tls reports some handshake failures as plain errors, so
// after the typed checks a "tls: " message anywhere in the chain counts.
func isTLSError(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		header   tls.RecordHeaderError
		alert    tls.AlertError
		echErr   *tls.ECHRejectionError
		op       *net.OpError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname),
		errors.As(err, &invalid), errors.As(err, &header), errors.As(err, &alert),
		errors.As(err, &echErr),
		// An https URL pointing at a plain-HTTP server.
		errors.Is(err, http.ErrSchemeMismatch):
		return true
	case errors.As(err, &op) && (op.Op == "remote error" || op.Op == "local error"):
		// crypto/tls sends and receives alerts as net.OpError with these ops.
		return true
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.HasPrefix(e.Error(), "tls: ") {
			return true
		}
	}
	return false
}
