package results

import (
	"cmp"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Drift is a change of what a probe answers: a path or kind its learned
// shape profile never showed, or a field the profile always had gone
// missing (SPEC §5), or a change of an MCP tool's listed definition (SPEC
// §10). It explains a contract change; the consumer rule proves the
// impact.
type Drift struct {
	// Kind says what changed: the response's shape, or an MCP tool's
	// definition. "" reads as DriftResponse.
	Kind        DriftKind
	Probe       string
	OperationID string // the run that showed the change
	DetectedAt  time.Time
	Baseline    string   // the fingerprint drifted from: a shape's, or a tool definition's
	Current     string   // the run's fingerprint, of the same kind
	Diff        []string // one line per changed path, baseline -> current (SPEC §5, §10)
	// Step is the step of a multi-step probe whose answer drifted from
	// that step's own baseline (SPEC §11); "" for a single probe's drift.
	Step string
	// Before and After are the tool's old and new description, capped at
	// DescriptionRunes, when a definition drift changed it; "" otherwise.
	Before, After string
}

// DriftKind is what a drift event is about (the drifts.kind column).
type DriftKind string

const (
	// DriftResponse: the response's shape changed (SPEC §5).
	DriftResponse DriftKind = "response"
	// DriftDefinition: an MCP tool's listed definition changed (SPEC §10).
	DriftDefinition DriftKind = "definition"
)

// DescriptionRunes caps the old and new description a definition drift
// carries: enough to read what an agent is now told, short enough for an
// alert.
const DescriptionRunes = 300

// KindOrResponse is d's kind, DriftResponse for a drift without one.
func (d *Drift) KindOrResponse() DriftKind {
	if d.Kind == "" {
		return DriftResponse
	}
	return d.Kind
}

// AlertKind says what an alert announces.
type AlertKind string

const (
	// AlertFiring: a probe started failing (after failure_threshold runs).
	AlertFiring AlertKind = "firing"
	// AlertReminder: a probe is still failing, repeat_interval later.
	AlertReminder AlertKind = "reminder"
	// AlertUpdate: a firing probe still fails, but in another mode (its
	// outcome changed, or its code): the story on-call was told is wrong.
	AlertUpdate AlertKind = "update"
	// AlertResolved: a probe that was alerted on passes again.
	AlertResolved AlertKind = "resolved"
	// AlertDrift: a probe's response shape (SPEC §5) or its MCP tool's
	// definition (SPEC §10) changed; Alert.Drift.Kind says which.
	AlertDrift AlertKind = "shape_drift"
	// AlertFlapping: a probe's failing/passing verdict changed more often
	// than notify.flapping allows (SPEC §13). No firing, update, reminder
	// or resolved alert follows until the verdict has been stable for
	// stable_for; then one firing or resolved alert says where it settled.
	AlertFlapping AlertKind = "flapping"
	// AlertLocationSilent: one location of a probe of several locations
	// recorded no run for two intervals (docs/locations.md). It tells of
	// that location only; the probe's own firing and resolved alerts stay
	// with the K-of-N decision. Alert.Locations holds that location's
	// view, and the alert quotes its newest run.
	AlertLocationSilent AlertKind = "location_silent"
	// AlertLocationBack: a location announced silent recorded again; it
	// ends the location_silent alert, as resolved ends firing.
	AlertLocationBack AlertKind = "location_back"
)

// DeliveryState is where an alert is in the outbox.
type DeliveryState string

const (
	// DeliveryPending: waiting for its first or next delivery attempt.
	DeliveryPending DeliveryState = "pending"
	// DeliveryDelivered: the receiver accepted it.
	DeliveryDelivered DeliveryState = "delivered"
	// DeliveryFailed: retries ran out, or the receiver refused it for good.
	DeliveryFailed DeliveryState = "failed"
	// DeliverySkipped: recorded only, because no receiver is configured.
	DeliverySkipped DeliveryState = "skipped"
)

// Alert is one message about one probe: what happened, with the facts of
// the run that caused it, so a receiver needs nothing else to render it.
type Alert struct {
	ID    int64 // outbox id; 0 until stored
	Kind  AlertKind
	Probe string
	// Labels are the probe's labels (checks.yaml), for receivers that
	// carry them and for routing by label (SPEC §8); nil when it has none.
	Labels map[string]string
	// Receiver is the key of the receiver the alert is for, such as
	// "default/slack" or "routes[0]/webhook": a route with several
	// receivers makes one alert for each. "" when it has none (a skipped
	// alert, or one recorded before receivers had keys).
	Receiver string
	// GroupKey names the group the alert is delivered with (see
	// GroupKey): its receiver and the values of its route's group_by
	// labels. "" when it goes alone, as every alert does without group_by.
	GroupKey    string
	CreatedAt   time.Time
	OperationID string
	Outcome     Outcome
	Code        Code // "" for a resolved alert or a drift of a passing run
	Message     string
	Attempts    int
	Duration    time.Duration
	HTTPStatus  int // 0 when no response arrived
	Consumer    ConsumerRef
	// Target names what the run called, for the reader who must go and
	// look: "POST https://search.example.com/v1/search" (see HTTPTarget),
	// "tool search at https://mcp.example.com/mcp" (see ToolTarget), with
	// "step NAME: " before it for the deciding step of a steps probe. It
	// never holds a query, userinfo or header. "" when unknown.
	Target string
	// ResponseExcerpt is the start of the body the run received, at most
	// ExcerptRunes characters cut from the stored response sample, which
	// is already scrubbed of every known secret: what a 503 said ("index
	// rebuilding"). Set for a run that did not pass and got a body; ""
	// otherwise.
	ResponseExcerpt string
	// Resolving marks a shape_drift alert whose run also resolved the
	// probe's failure: the resolved alert of the same run is recorded,
	// and so delivered, before it.
	Resolving bool
	// FailingSince is when the current failure began: set on firing,
	// reminder, update and resolved alerts (resolved says how long it
	// lasted).
	FailingSince time.Time
	Drift        *Drift // set on shape_drift alerts only
	// Previous is the mode the alerts before this one announced: set on
	// update alerts, whose own mode is Outcome and Code.
	Previous Mode
	// Modes are the failure's modes in the order they first appeared:
	// set on resolved alerts, at most MaxModes of them.
	Modes []Mode
	// Locations is the fleet-wide view of a probe that runs from several
	// locations (SPEC §13): each location's verdict side by side, in the
	// probe's order, on the alerts the fleet's decider makes. nil on an
	// alert about a probe of one location, which looks as it always did.
	Locations []LocationView
	// TraceID is the W3C trace id of the run the alert is about
	// (Result.TraceID, SPEC §10.1), so that the reader can find the run in
	// the provider's traces; "" for an untraced run. Stores read it from
	// the run's results row.
	TraceID string
	// Decider is the lease of the instance that decided the alert: the
	// decider's (DeciderLease) for a fleet-wide alert, whose outbox
	// delivers it; "" for an alert a run of one location raised.
	Decider string

	// Delivery bookkeeping, owned by the outbox.
	State         DeliveryState
	DeliveryTries int
	NextAttemptAt time.Time
	LastError     string
	DeliveredAt   time.Time
}

// NewAlert returns an alert of kind about run r, created at now.
func NewAlert(kind AlertKind, r *Result, now time.Time) Alert {
	a := Alert{
		Kind:        kind,
		Probe:       r.Probe,
		CreatedAt:   now,
		OperationID: r.OperationID,
		Outcome:     r.Outcome,
		Attempts:    r.AttemptCount(),
		Duration:    r.Duration,
		HTTPStatus:  r.HTTPStatus,
		Consumer:    r.Consumer,
		State:       DeliveryPending,
		TraceID:     r.TraceID,
	}
	if r.Error != nil {
		a.Code, a.Message = r.Error.Code, r.Error.Message
	}
	if r.Outcome != Pass {
		a.ResponseExcerpt = Excerpt(r.ResponseSample)
	}
	if r.MCP != nil {
		a.Target = ToolTarget(r.MCP.Tool, r.MCP.Server)
	}
	return a
}

// ExcerptRunes caps Alert.ResponseExcerpt: the first lines of an error page
// or a JSON error, enough to say why, not the body itself.
const ExcerptRunes = 500

// Excerpt returns the start of body as an alert shows it: surrounding
// whitespace trimmed, at most ExcerptRunes characters, the last an
// ellipsis when it had to cut. body must already be redacted: a cut made
// before redaction could keep the start of a secret.
func Excerpt(body string) string {
	body = strings.TrimSpace(body)
	clipped := Clip(body, ExcerptRunes)
	if clipped == body {
		return body
	}
	return strings.TrimRightFunc(strings.TrimSuffix(clipped, "…"), unicode.IsSpace) + "…"
}

// HTTPTarget names an HTTP call as alerts show it: the method, then the
// URL's scheme, host and path, "POST https://search.example.com/v1/search".
// It leaves out the userinfo, query and fragment, which may carry secrets.
// method "" reads as GET; "" when rawURL does not parse or has no host.
func HTTPTarget(method, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return ""
	}
	if method == "" {
		method = "GET"
	}
	return method + " " + u.Scheme + "://" + u.Host + u.Path
}

// ToolTarget names an MCP tool call as alerts and the status page show it:
// "tool search at https://mcp.example.com/mcp", server as MCPServer writes
// it (no credentials, no query); "tool search" without a server.
func ToolTarget(tool, server string) string {
	if tool == "" {
		return ""
	}
	if server == "" {
		return "tool " + tool
	}
	return "tool " + tool + " at " + server
}

// Mode is how a probe fails: its outcome and code.
type Mode struct {
	Outcome Outcome
	Code    Code
}

// ModeOf is the mode of r.
func ModeOf(r *Result) Mode {
	return Mode{Outcome: r.Outcome, Code: r.Code()}
}

// String is "unavailable (timeout)", or the outcome alone without a code.
func (m Mode) String() string {
	if m.Code == "" {
		return string(m.Outcome)
	}
	return string(m.Outcome) + " (" + string(m.Code) + ")"
}

// MaxModes bounds the modes a failure remembers: a probe that fails in
// more ways than this is described by its first ones.
const MaxModes = 8

// HasMode reports whether modes holds m.
func HasMode(modes []Mode, m Mode) bool {
	for _, have := range modes {
		if have == m {
			return true
		}
	}
	return false
}

// AddMode returns modes with m appended unless it is already there or the
// list is full. It never writes into modes' array, which an earlier state
// may share.
func AddMode(modes []Mode, m Mode) []Mode {
	if HasMode(modes, m) || len(modes) >= MaxModes {
		return modes
	}
	return append(modes[:len(modes):len(modes)], m)
}

// AlertState is a probe's alerting memory, persisted with every result so
// that a restart neither re-alerts a known failure nor forgets to resolve
// it.
type AlertState struct {
	Probe string
	// ConsecutiveFailures counts non-pass runs since the last pass.
	ConsecutiveFailures int
	// FailingSince is the start of the first non-pass run of the streak;
	// zero while passing.
	FailingSince time.Time
	// Firing is true once a firing alert went out for this streak, or a
	// flapping alert: the firing or resolved alert that ends it is owed.
	Firing bool
	// LastNotifiedAt is when the last firing, reminder or update alert
	// was made.
	LastNotifiedAt time.Time
	// Notified is the mode the last of those alerts announced; zero
	// until one went out.
	Notified Mode
	// Modes are the streak's modes in the order they first appeared, and
	// Announced those of them an alert announced; at most MaxModes each,
	// nil while passing.
	Modes, Announced []Mode
	// Receivers are the keys of the receivers an alert of the firing
	// streak went to, in the order they were first told: its resolved
	// alert goes to them, wherever the probe's route points by then. nil
	// while not firing.
	Receivers []string
	// SilencedAt is when the streak's last alert was recorded skipped
	// because a silence covered the probe; zero when none was since the
	// last alert went out. A silenced probe records its skipped alert at
	// most once per repeat_interval.
	SilencedAt time.Time

	// Failing is the verdict of the probe's thresholds (SPEC §13): set
	// when failure_threshold consecutive runs failed (or failure_window's
	// F of the last R), cleared after success_threshold consecutive
	// passes. Firing implies it; a failing probe whose outcome notify.on
	// does not list is failing without firing.
	Failing bool
	// ConsecutivePasses counts the passes since the last non-pass run
	// while Failing; 0 otherwise.
	ConsecutivePasses int
	// Window holds the outcomes of the last WindowRuns runs, the newest
	// in the lowest bit, 1 for a run that did not pass. Kept only while
	// notify.failure_window is set; it starts empty when the verdict
	// resolves. WindowRuns is at most MaxWindowRuns.
	Window     uint64
	WindowRuns int
	// Flapping is set while the verdict changes more often than
	// notify.flapping allows, since FlappingSince; alerts other than the
	// one flapping alert wait until it has been stable for stable_for.
	Flapping      bool
	FlappingSince time.Time
	// VerdictChanges are when Failing last changed, oldest first: those
	// within notify.flapping's window, and always the newest. Kept only
	// while notify.flapping is set; at most MaxFlapChanges+1.
	VerdictChanges []time.Time
	// SilentLocations are the locations of a probe of several locations
	// announced silent (a location_silent alert), each with when it was
	// announced; nil when none is. The decider keeps it, so that a new
	// decider neither announces one again nor misses its end.
	SilentLocations map[string]time.Time
}

// IsFailing reports whether the verdict is failing: Failing, or Firing,
// which implies it (a state kept before the verdict was has only Firing)
// unless the probe is flapping: then the flapping alert is what fired.
func (s AlertState) IsFailing() bool { return s.Failing || (s.Firing && !s.Flapping) }

// MaxWindowRuns bounds notify.failure_window's runs: the state keeps
// the outcomes of this many runs in AlertState.Window, one bit each.
const MaxWindowRuns = 64

// MaxFlapChanges bounds notify.flapping's changes: a probe is flapping
// once its verdict changed more than that many times in the window, so
// AlertState.VerdictChanges keeps at most one more.
const MaxFlapChanges = 32

// RunRecord is everything one operation changes, committed in one
// transaction: the result, the drift it showed, the probe's new alert
// state and the alerts to deliver. A crash leaves all of it or none.
type RunRecord struct {
	Result Result
	Drift  *Drift // nil when the shape did not drift (or was deduplicated)
	// DefinitionDrift is the run's definition drift (kind
	// DriftDefinition): its tool's definition differs from the probe's
	// previous one. nil when it does not, or the run is not an MCP one.
	DefinitionDrift *Drift
	// StepDrifts are the response drifts of a multi-step probe's steps,
	// one per step whose answer changed novelly, each naming its step;
	// nil for a single probe, whose response drift is Drift.
	StepDrifts []*Drift
	AlertState *AlertState // nil leaves the stored state unchanged
	Alerts     []Alert
	// Fence is the leadership the write claims (SPEC §12); the zero Fence
	// claims none. A store that keeps leases refuses a fenced record
	// (ErrFenced) once a newer epoch holds the lease.
	Fence Fence
	// Handover marks the run of a node that no longer leads (it was
	// deposed while the run was in flight or waited in the write queue):
	// the store keeps it as history (the result, its attempts and steps),
	// once, and nothing a leader decides from it: no drift, alert state,
	// alert or shape profile. A result already stored is not an error.
	Handover bool
}

// Drifts returns every drift event of the run record, those that are set:
// its response drift, its definition drift, then its steps' drifts.
func (rec *RunRecord) Drifts() []*Drift {
	var out []*Drift
	for _, d := range append([]*Drift{rec.Drift, rec.DefinitionDrift}, rec.StepDrifts...) {
		if d != nil {
			out = append(out, d)
		}
	}
	return out
}

// ByID sorts alerts by ID, oldest first, and returns them.
func ByID(alerts []Alert) []Alert {
	slices.SortFunc(alerts, func(a, b Alert) int { return cmp.Compare(a.ID, b.ID) })
	return alerts
}
