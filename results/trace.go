package results

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Trace is the W3C Trace Context (https://www.w3.org/TR/trace-context/) of
// one run (SPEC §10.1): one trace per run, so that a provider can find every
// request of a probe's run in its own traces and tell it from real traffic.
// Each request of the run is a span of its own (Traceparent), and every
// request says in tracestate that it is synthetic and which probe made it.
// The zero Trace is no trace: a probe with trace: false.
type Trace struct {
	// ID is the trace id, 32 lower-case hex digits, never all zeros; ""
	// for no trace.
	ID string
	// State is the run's tracestate header: toolpulse's one list member,
	// TraceStateKey=synthetic:<probe>.
	State string
	rand  io.Reader
}

// TraceStateKey is the tracestate key toolpulse's entry goes under.
const TraceStateKey = "toolpulse"

// NewTrace returns a fresh trace for a run of probe, its id and each of its
// span ids read from rand (crypto/rand.Reader in production). Its error is
// rand's.
func NewTrace(rand io.Reader, probe string) (Trace, error) {
	var id [16]byte
	if err := readNonZero(rand, id[:]); err != nil {
		return Trace{}, fmt.Errorf("trace id: %w", err)
	}
	return Trace{ID: hex.EncodeToString(id[:]), State: TraceStateKey + "=" + traceStateValue(probe), rand: rand}, nil
}

// On reports whether t is a trace rather than the zero Trace.
func (t Trace) On() bool { return t.ID != "" }

// Traceparent returns a traceparent header for a new span of t: version 00,
// t's trace id, a fresh span id and the sampled flag, so that a provider
// that samples by its caller's decision keeps the probe's calls. Its error
// is the random source's.
func (t Trace) Traceparent() (string, error) {
	var span [8]byte
	if err := readNonZero(t.rand, span[:]); err != nil {
		return "", fmt.Errorf("span id: %w", err)
	}
	return "00-" + t.ID + "-" + hex.EncodeToString(span[:]) + "-01", nil
}

// Mark returns a copy of req marked as a new span of t: its traceparent
// and t's tracestate headers, and the traceparent. When no span id can be
// drawn it returns req itself and "": the request goes unmarked rather
// than not at all, since the trace helps find a run and is not what the
// run checks.
func (t Trace) Mark(req *http.Request) (*http.Request, string) {
	parent, err := t.Traceparent()
	if err != nil {
		return req, ""
	}
	req = req.Clone(req.Context())
	req.Header.Set("Traceparent", parent)
	req.Header.Set("Tracestate", t.State)
	return req, parent
}

// readNonZero fills b from r until it is not all zeros, which W3C forbids
// for both ids; a source that keeps returning zeros is an error.
func readNonZero(r io.Reader, b []byte) error {
	if r == nil {
		return fmt.Errorf("no random source")
	}
	for range 4 {
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for _, c := range b {
			if c != 0 {
				return nil
			}
		}
	}
	return fmt.Errorf("the random source returned only zeros")
}

// traceStateValueMax is the longest value a tracestate list member may
// have.
const traceStateValueMax = 256

// traceStateValue is "synthetic:<probe>" as a tracestate value may hold
// it: W3C allows the printable ASCII characters but ',' and '=' (and no
// trailing space), at most 256 of them. Probe names already fit; any other
// byte, and '%' itself, is percent-encoded, and a value too long is cut
// before a whole escape.
func traceStateValue(probe string) string {
	var b strings.Builder
	b.WriteString("synthetic:")
	for i := 0; i < len(probe); i++ {
		c := probe[i]
		var enc string
		if c > 0x20 && c <= 0x7e && c != ',' && c != '=' && c != '%' {
			enc = string(c)
		} else {
			enc = fmt.Sprintf("%%%02X", c)
		}
		if b.Len()+len(enc) > traceStateValueMax {
			break
		}
		b.WriteString(enc)
	}
	return b.String()
}

// ParseTraceparent returns the trace id of a version-00 traceparent
// header, and whether h is one.
func ParseTraceparent(h string) (string, bool) {
	parts := strings.Split(strings.TrimSpace(h), "-")
	if len(parts) != 4 || parts[0] != "00" || !lowerHex(parts[1], 32) || !lowerHex(parts[2], 16) || !lowerHex(parts[3], 2) {
		return "", false
	}
	if strings.Trim(parts[1], "0") == "" || strings.Trim(parts[2], "0") == "" {
		return "", false
	}
	return parts[1], true
}

func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
