package results

import (
	"fmt"
	"time"
)

// Error is the typed failure of one operation: a stable code, a message a
// person can act on, and whether another attempt could help. It is data
// about a provider, not a Go error of toolpulse's own.
type Error struct {
	Code      Code   `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// NewError returns an Error for code with a formatted message; Retryable
// follows from the code.
func NewError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: code.Retryable()}
}

// Error implements the error interface so that a failure can travel through
// code that expects one; callers recover it with errors.As.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Attempt is one HTTP exchange of an operation. Every attempt is recorded,
// including those of a run that passed after retries. An HTTP probe makes
// one exchange per try of the retry loop; an MCP probe's try is a whole
// session (SPEC §10) and makes one row per exchange of it, the try's
// verdict on the exchange it was found in.
type Attempt struct {
	Number int // 1-based position in the operation
	// Try is the try of the retry loop the exchange belongs to, 1-based,
	// counted per call: per step in a multi-step run, and per poll of a
	// verification, since a poll is a new question, not a retry. 0 (a row
	// stored before tries were recorded) means Number.
	Try int
	// Poll is the poll of a verification (a step with until) the exchange
	// belongs to, 1-based; 0 for a call that does not poll.
	Poll int
	// Method is what the exchange was: the JSON-RPC method of an MCP
	// exchange ("initialize", "tools/call", "DELETE session"...); "" for an
	// HTTP probe's attempt.
	Method     string
	StartedAt  time.Time     // when the request was sent
	Duration   time.Duration // until the body was read or the attempt failed
	HTTPStatus int           // 0 when no response arrived
	Code       Code          // "" when this attempt produced a usable exchange
	Message    string        // why the attempt failed; with Code "", why an MCP exchange got no answer (Verdict)
	Wait       time.Duration // back-off before the next try, on the try's last row; 0 otherwise
	// Step is the step of a multi-step probe the attempt belongs to
	// (SPEC §11); "" for a single probe.
	Step string
}

// TryNumber is the try a belongs to: Try, or Number for a row without one.
func (a Attempt) TryNumber() int {
	if a.Try > 0 {
		return a.Try
	}
	return a.Number
}

// Verdict is how the exchange went, as a table shows it: its code, "ok",
// "fallback" for a server/discover that a server of the 2025 era
// refused with a 4xx: the client then falls back to initialize, the normal
// way with such servers (SPEC §10), not a failure; or "no answer" for an
// MCP exchange without a code that got no answer (its Message says why:
// a stream the server closed and the client resumed, a request the call
// ended before its response).
func (a Attempt) Verdict() string {
	switch {
	case a.Code != "":
		return string(a.Code)
	case a.Message != "":
		return "no answer"
	case a.Method == "server/discover" && a.HTTPStatus >= 400 && a.HTTPStatus < 500:
		return "fallback"
	}
	return "ok"
}

// Shape is the structural shape of a JSON response body: its canonical text,
// its 16-hex fingerprint and, once drift detection has run, the path-level
// diff against the probe's baseline.
type Shape struct {
	Fingerprint string
	Canonical   string
	// Baseline is the fingerprint of the probe's latest answer that fitted
	// its learned profile, when Drift is not empty; Drift the diff lines
	// from the profile to this answer, SPEC §5 wording, empty when the
	// answer fitted (or drift detection did not run). Both are stored with
	// the run.
	Baseline string
	Drift    []string
	// Sample is the whole body that showed this shape, every known secret
	// scrubbed, so that a real answer of the shape can be replayed later;
	// for an MCP probe, the whole CallToolResult the shape's response came
	// from.
	// Only a passing run whose fingerprint differs from its probe's
	// previous pass carries it (the first pass of a process, and every
	// change of shape among passes), and only when the scrubbed body fits
	// in ShapeSampleBytes; otherwise it is "". The store keeps the first sample of each fingerprint and
	// never replaces it.
	Sample string
	// Profile is the probe's learned profile after this answer, when drift
	// detection changed it, for the store to save with the run; nil leaves
	// the stored profile as it is. It is never read back.
	Profile *ProfileUpdate
	// Structure is the shape itself as results/shape built it, so that
	// drift detection in the same process judges it without reading
	// Canonical back; nil for a Shape read from a store. Never stored.
	Structure any
}

// ShapeSampleBytes bounds Shape.Sample. A body is kept whole or not at
// all: a cut body would no longer be JSON, so a larger body gets no
// sample.
const ShapeSampleBytes = 64 << 10

// ConsumerRef names the consumer rule that judged a response, with the
// version its author gave and a hash of the rule text, so a result can be
// traced to the exact logic that produced it.
type ConsumerRef struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	RuleHash string `json:"rule_hash"`
}

// Result is one operation: one run of one probe, ending in exactly one
// outcome.
type Result struct {
	OperationID string
	Probe       string
	// Kind is the kind of probe that ran; the runner sets it on every
	// result. "" counts as ProbeHTTP (see EffectiveKind).
	Kind ProbeKind
	// MCP is the tool an MCP probe called and its server; nil for an HTTP
	// probe.
	MCP       *MCPTarget
	StartedAt time.Time
	Duration  time.Duration
	Outcome   Outcome
	Error     *Error // nil exactly when Outcome is Pass
	// Step is the step of a multi-step probe that decided the outcome:
	// the first that failed; "" when every step passed, and for a single
	// probe (SPEC §11).
	Step           string
	Attempts       []Attempt
	HTTPStatus     int // final status; 0 when no response arrived
	SelectedCount  int
	ValidatedCount int
	Shape          *Shape // nil when no JSON body was decoded
	Consumer       ConsumerRef
	// ResponseSample is the start of the body, capped and with every known
	// secret scrubbed; it is kept for runs that did not pass.
	ResponseSample string
	// Steps are a multi-step probe's steps as they ran; nil for a single
	// probe.
	Steps []StepResult
	// Tool is the definition of the tool an MCP run listed (SPEC §10),
	// whatever the outcome after the listing; nil for an HTTP probe and
	// for a run that never got the tool's tools/list entry.
	Tool *ToolDefinition
	// Node is the fleet.node of the instance whose daemon ran the
	// operation (SPEC §12); "" for a run no daemon recorded (toolpulse
	// check) and for rows stored before nodes were.
	Node string
	// Location is the location the run ran from: its daemon's
	// fleet.location (SPEC §13). "" stands for DefaultLocation, the
	// location of a single instance, of a run no daemon recorded and of
	// every run stored before locations were: a store keeps "" as
	// DefaultLocation and reads DefaultLocation back as "", so that a
	// result of today's single instance is what it was. RanFrom names it.
	Location string
	// TraceID is the W3C trace id every request of the run carried in its
	// traceparent (SPEC §10.1), 32 hex digits, so that the provider's trace
	// of the run can be found; "" for a probe with trace: false and for
	// rows stored before traces were.
	TraceID string
}

// RanFrom is the location r ran from, named: DefaultLocation for "".
func (r *Result) RanFrom() string { return LocationOrDefault(r.Location) }

// ToolDefinition is the watched part of an MCP tool's tools/list entry,
// with what the server says of itself and the listings the probe watches
// (results/tooldef, SPEC §10.1): its fingerprint and its canonical JSON,
// what definition drift compares from run to run.
type ToolDefinition struct {
	Fingerprint string
	// Canonical is the definition's canonical JSON; "" when a store read
	// it back after the probe's definitions were forgotten.
	Canonical string
}

// EffectiveKind is r.Kind, or ProbeHTTP when it is unset.
func (r *Result) EffectiveKind() ProbeKind {
	if r.Kind == "" {
		return ProbeHTTP
	}
	return r.Kind
}

// StepResult is how one step of a multi-step probe's run went (SPEC §11):
// each step the run reached has one, in the order they ran, always steps
// last.
type StepResult struct {
	Name      string
	Outcome   Outcome
	Error     *Error // nil exactly when Outcome is Pass
	StartedAt time.Time
	Duration  time.Duration
	// Polls is how many answers a verification judged; 0 for a step
	// without until.
	Polls int
	// Always marks a step that runs whatever happened, whose failure never
	// changes the run's outcome; Skipped one that did not run because a
	// capture it needs was never made.
	Always, Skipped bool
	// Shape is the shape of the step's last answer, when it was JSON a
	// rule read: each step has a baseline of its own.
	Shape *Shape
}

// StepKey is the key a step's answers are baselined under, where a
// probe's are under its name (learned profiles, hourly shape counts):
// "PROBE/STEP". A probe name never holds a '/', so a step's key never
// collides with a probe's.
func StepKey(probe, step string) string { return probe + "/" + step }

// Code returns the result's code, or "" on pass.
func (r *Result) Code() Code {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// Fail sets the outcome and error from a typed failure.
func (r *Result) Fail(e *Error) {
	r.Error = e
	r.Outcome = e.Code.Outcome()
}

// AttemptCount is how many tries the run made of what it asked: 1, plus
// one for every retry, the number of tries of a single probe. A retry is
// another try of the same exchange after a transient failure: an MCP try
// makes several rows but is one try, and the steps of a multi-step run and
// the polls of a verification are questions of their own, not retries. So
// a clean multi-step run is 1 whatever its steps and polls, and a run
// whose count is above 1 was retried somewhere (SPEC §2's attempts > 1).
func (r *Result) AttemptCount() int {
	if len(r.Attempts) == 0 {
		return 0
	}
	type call struct {
		step string
		poll int
	}
	tries := map[call]int{}
	for _, a := range r.Attempts {
		c := call{a.Step, a.Poll}
		tries[c] = max(tries[c], a.TryNumber())
	}
	n := 1
	for _, t := range tries {
		n += t - 1
	}
	return n
}

// TimeLayout is how toolpulse writes instants: RFC 3339 in UTC with
// milliseconds, so that stored timestamps sort as text.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t in TimeLayout, in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }
