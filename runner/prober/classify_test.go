package prober

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

// TestClassifyStatus covers the status edges the provider table does not:
// 501 is a contract answer ("not implemented" will not get better), other
// 5xx are transient, and an expected status wins over everything.
func TestClassifyStatus(t *testing.T) {
	tests := []struct {
		status int
		expect []int
		want   results.Code
	}{
		{200, []int{200}, ""},
		{204, []int{200, 204}, ""},
		{201, []int{200}, results.CodeUnexpectedStatus},
		{301, []int{200}, results.CodeUnexpectedStatus},
		{400, []int{200}, results.CodeUnexpectedStatus},
		{401, []int{200}, results.CodeUnexpectedStatus},
		{408, []int{200}, results.CodeTimeout},
		{429, []int{200}, results.CodeRateLimited},
		{500, []int{200}, results.CodeServerError},
		{501, []int{200}, results.CodeUnexpectedStatus},
		{502, []int{200}, results.CodeServerError},
		{503, []int{200}, results.CodeServerError},
		{599, []int{200}, results.CodeServerError},
		{600, []int{200}, results.CodeUnexpectedStatus},
		{503, []int{200, 503}, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d in %v", tt.status, tt.expect), func(t *testing.T) {
			if got := codeOf(nil, tt.status, tt.expect); got != tt.want {
				t.Errorf("codeOf(%d) = %q, want %q", tt.status, got, tt.want)
			}
		})
	}
}

// TestClassifyOrder pins the precedence between causes that wrap one
// another: a cancellation is never a timeout, a resolver timeout is a DNS
// problem, and anything unknown is a network error, never a pass.
func TestClassifyOrder(t *testing.T) {
	urlErr := func(err error) error { return &url.Error{Op: "Post", URL: "http://x", Err: err} }
	tests := []struct {
		name string
		err  error
		want results.Code
	}{
		{"shutdown while timing out", fmt.Errorf("%w: %w", errCanceled, context.DeadlineExceeded), results.CodeCanceled},
		{"context canceled", urlErr(context.Canceled), results.CodeCanceled},
		{"resolver timeout", urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "i/o timeout", IsTimeout: true}}), results.CodeDNSError},
		{"bare deadline", context.DeadlineExceeded, results.CodeTimeout},
		{"unexpected EOF", urlErr(io.ErrUnexpectedEOF), results.CodeConnectionReset},
		{"unknown", errors.New("something new"), results.CodeNetworkError},
		{"too large wins over its cause", &tooLargeError{limit: 1, declared: -1}, results.CodeResponseTooLarge},
		{"panic", &panicError{value: "x"}, results.CodeInternalError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := codeOf(tt.err, 0, nil); got != tt.want {
				t.Errorf("codeOf(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
