package runner

import (
	"context"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// Store is what the daemon needs of storage. results/sqlite implements it;
// cmd wires the two. Every method returns a Go error only when toolpulse
// itself failed (disk, lock, corruption), never for a provider's failure.
type Store interface {
	// RecordRun commits a result with its drift, alert state and alerts in
	// one transaction, and sets the ID of each stored alert.
	RecordRun(ctx context.Context, rec *results.RunRecord) error
	// ShapeProfile returns probe's stored shape profile (SPEC §5), and
	// false when it has none and was never reset. The Recorder reads it
	// once per probe and then keeps the profile in memory; RecordRun saves
	// what it learns (results.Shape.Profile).
	ShapeProfile(ctx context.Context, probe string) (results.StoredProfile, bool, error)
	// ProfileResets returns the probes whose profile was reset at or after
	// since, with the time of their latest reset. It is read every few
	// seconds, so it must be cheap whatever the number of probes.
	ProfileResets(ctx context.Context, since time.Time) (map[string]time.Time, error)
	// RecentShapes returns up to limit of the shapes probe's runs showed
	// at or after since (a store may count from the start of since's UTC
	// hour), most runs first, with their canonical text: what a probe
	// without a profile, recorded before profiles existed, starts from.
	RecentShapes(ctx context.Context, probe string, since time.Time, limit int) ([]results.ShapeSeen, error)
	// ToolDefinition returns the tool definition probe's latest MCP run
	// listed (SPEC §10), and false when it has none (it never listed its
	// tool, or was reset since). The Recorder reads it once per probe and
	// then keeps it in memory; RecordRun saves every run's
	// (results.Result.Tool).
	ToolDefinition(ctx context.Context, probe string) (results.ToolDefinition, bool, error)
	// AlertStates returns the persisted alert state of every probe.
	AlertStates(ctx context.Context) (map[string]results.AlertState, error)
	// DueAlerts returns up to limit pending alerts whose next attempt is at
	// or before now, oldest first.
	DueAlerts(ctx context.Context, now time.Time, limit int) ([]results.Alert, error)
	// NextAlertDue returns the earliest next attempt of a pending alert,
	// and false when none is pending.
	NextAlertDue(ctx context.Context) (time.Time, bool, error)
	// MarkAlertDelivered records a delivery the receiver accepted.
	MarkAlertDelivered(ctx context.Context, id int64, at time.Time) error
	// MarkAlertRetry records a failed delivery to be tried again at next.
	MarkAlertRetry(ctx context.Context, id int64, tries int, next time.Time, lastErr string) error
	// MarkAlertFailed records that an alert will not be delivered.
	MarkAlertFailed(ctx context.Context, id int64, tries int, lastErr string) error
}

// Silences is where the daemon reads the silences an operator added
// (results/sqlite implements it). It is read every few seconds, so a new
// silence takes effect without a reload.
type Silences interface {
	// Silences returns the silences not ended or expired at now, or every
	// silence with includeExpired. An error means the store failed.
	Silences(ctx context.Context, now time.Time, includeExpired bool) ([]results.Silence, error)
}

// Sender delivers one alert to its receiver (Slack, Alertmanager, a
// webhook). retry says whether a
// failure is worth another attempt; retryAfter, when positive, is the
// receiver's own wish (a 429's Retry-After). Messages in err must not
// contain secrets.
type Sender interface {
	Send(ctx context.Context, a results.Alert) (retry bool, retryAfter time.Duration, err error)
}

// Observer is told what the daemon does, for metrics (results/prometheus
// implements it). Methods are called on the hot path: they must be cheap,
// must not block and must be safe for concurrent use.
type Observer interface {
	// RunFinished is called once per run, after it was recorded: late, for
	// a run that waited in the daemon's write queue. A run that is never
	// recorded is counted by ResultsDropped instead.
	RunFinished(r *results.Result)
	// DriftDetected is called for every drift event: the first answer of
	// a probe that showed what its learned profile never did (the next
	// answers of the same change are marked drifted, but are no event).
	DriftDetected(d *results.Drift)
	// AlertDelivered is called when the receiver accepted an alert.
	AlertDelivered(a *results.Alert)
	// AlertFailed is called for every failed delivery attempt; final says
	// the alert will not be tried again.
	AlertFailed(a *results.Alert, final bool)
	// StoreError is called when a store operation failed; op names it
	// ("record_run", "due_alerts", ...).
	StoreError(op string)
	// ResultsDropped is called with n > 0 when n runs waiting to be
	// written are given up: pushed out of a full write queue, refused by
	// the store for good, still waiting when the daemon stopped, or
	// finished after the queue closed and not written then.
	ResultsDropped(n int)
	// SetProbes is called with the names of the configured probes when
	// the daemon is built and on every reload, before their runs.
	SetProbes(names []string)
	// SetReceivers is called with the keys of the configured receivers
	// ("default/slack", "routes[0]/webhook") when the daemon is built and
	// on every reload, before alerts go to them.
	SetReceivers(keys []string)
}

// nopObserver is the Observer of a daemon without metrics.
type nopObserver struct{}

func (nopObserver) RunFinished(*results.Result)      {}
func (nopObserver) DriftDetected(*results.Drift)     {}
func (nopObserver) AlertDelivered(*results.Alert)    {}
func (nopObserver) AlertFailed(*results.Alert, bool) {}
func (nopObserver) StoreError(string)                {}
func (nopObserver) ResultsDropped(int)               {}
func (nopObserver) SetProbes([]string)               {}
func (nopObserver) SetReceivers([]string)            {}

// observerOr returns o, or an Observer that does nothing when o is nil.
func observerOr(o Observer) Observer {
	if o == nil {
		return nopObserver{}
	}
	return o
}
