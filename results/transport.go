package results

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// TransportCode returns the unavailable code of err, a failure to complete
// an HTTP exchange as net/http, net and crypto/tls report it (SPEC §1). The
// order of the checks matters: cancellation first (so a shutdown never
// reads as a timeout), then the most specific network causes, with
// network_error as the fallback for any other failure.
//
// It is the rule runner's classify applies to an HTTP probe's transport
// errors, for the edges that speak HTTP on their own (mcpsdk).
func TransportCode(err error) Code {
	var (
		dnsErr  *net.DNSError
		timeout interface{ Timeout() bool }
	)
	switch {
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	case errors.As(err, &dnsErr):
		// Before timeout: a resolver that times out is still a DNS problem.
		return CodeDNSError
	case IsTLSError(err):
		return CodeTLSError
	case errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &timeout) && timeout.Timeout():
		return CodeTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return CodeConnectionRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED),
		// The peer closed the connection before the response was complete.
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return CodeConnectionReset
	default:
		return CodeNetworkError
	}
}

// TransientStatusCode returns the unavailable code of an HTTP status that
// SPEC §1 counts as transient: timeout for 408, rate_limited for 429,
// server_error for 5xx other than 501; "" for every other status.
func TransientStatusCode(status int) Code {
	switch {
	case status == http.StatusRequestTimeout:
		return CodeTimeout
	case status == http.StatusTooManyRequests:
		return CodeRateLimited
	case status >= 500 && status <= 599 && status != http.StatusNotImplemented:
		return CodeServerError
	}
	return ""
}

// IsTLSError reports whether err is a failed TLS handshake or certificate
// check. crypto/tls reports some handshake failures as plain errors, so
// after the typed checks a "tls: " message anywhere in the chain counts.
func IsTLSError(err error) bool {
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
