package runner

import (
	"context"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// Store is what the daemon needs of storage (results/sqlite). Its errors
// mean toolpulse itself failed (disk, lock, corruption), never a provider.
type Store interface {
	// RecordRun commits rec in one transaction and sets each alert's ID.
	RecordRun(ctx context.Context, rec *results.RunRecord) error
	// ShapeProfile returns probe's stored shape profile (SPEC §5), false
	// when it has none and was never reset. RecordRun saves its updates.
	ShapeProfile(ctx context.Context, probe string) (results.StoredProfile, bool, error)
	// ProfileResets returns the probes reset at or after since, with their
	// latest reset. Read every few seconds: it must be cheap.
	ProfileResets(ctx context.Context, since time.Time) (map[string]time.Time, error)
	// RecentShapes returns up to limit shapes probe's runs showed since
	// (a store may count from the start of since's UTC hour), most runs
	// first, with their canonical text.
	RecentShapes(ctx context.Context, probe string, since time.Time, limit int) ([]results.ShapeSeen, error)
	// ToolDefinition returns the tool definition probe's latest MCP run
	// listed (SPEC §10), false when none (never listed, or reset since).
	ToolDefinition(ctx context.Context, probe string) (results.ToolDefinition, bool, error)
	// AlertStates returns the persisted alert state of every probe.
	AlertStates(ctx context.Context) (map[string]results.AlertState, error)
	Outbox
}

// Outbox is the alert outbox as the deliverer drains it.
type Outbox interface {
	// DueAlerts returns up to limit pending alerts due by now, oldest first.
	DueAlerts(ctx context.Context, now time.Time, limit int) ([]results.Alert, error)
	// NextAlertDue returns the earliest due pending alert's time, false
	// when none is pending.
	NextAlertDue(ctx context.Context) (time.Time, bool, error)
	// MarkAlertDelivered records a delivery the receiver accepted.
	MarkAlertDelivered(ctx context.Context, id int64, at time.Time) error
	// MarkAlertRetry records a failed delivery to be tried again at next.
	MarkAlertRetry(ctx context.Context, id int64, tries int, next time.Time, lastErr string) error
	// MarkAlertFailed records that an alert will not be delivered.
	MarkAlertFailed(ctx context.Context, id int64, tries int, lastErr string) error
	// PendingGroup returns the pending alerts whose GroupKey is key,
	// oldest first, due or not, and when an alert of the group was last
	// delivered (zero: never). A fenced outbox claims them all for its
	// epoch, waiting for rows another transaction holds, so that a group is
	// never split between two claims.
	PendingGroup(ctx context.Context, key string) (results.AlertGroup, error)
}

// FleetStore is what an instance of a fleet needs of a store that keeps
// leases (results/postgres): its location's lease, its heartbeat, and the
// outbox as the leader drains it.
type FleetStore interface {
	LeaseStore
	// Heartbeat records that n is alive, dated by the store's clock.
	Heartbeat(ctx context.Context, n results.FleetNode) error
	// FencedOutbox returns the outbox as the holder of f's lease drains
	// it: DueAlerts claims the rows it returns for f's epoch (skipping rows
	// another transaction holds), and every read and mark is refused with
	// results.ErrFenced once a newer epoch holds the lease.
	FencedOutbox(f results.Fence) Outbox
}

// Silences is where the daemon reads operators' silences, every
// SilenceRefresh, so that a new one needs no reload.
type Silences interface {
	// Silences returns the silences active at now, or all with
	// includeExpired. An error means the store failed.
	Silences(ctx context.Context, now time.Time, includeExpired bool) ([]results.Silence, error)
}

// Sender delivers one alert, or one group of alerts, to its receiver
// (Slack, Alertmanager, a webhook) as one message. retry says whether a
// failure is worth another attempt; retryAfter, when positive, is the
// receiver's wish (Retry-After). err must not contain secrets.
type Sender interface {
	Send(ctx context.Context, a results.Alert) (retry bool, retryAfter time.Duration, err error)
	// SendGroup sends g's alerts, all to one receiver, in one message
	// (notify.group_by); it succeeds or fails for all of them.
	SendGroup(ctx context.Context, g results.AlertGroup) (retry bool, retryAfter time.Duration, err error)
}

// Observer is told what the daemon does, for metrics (results/prometheus).
// Its methods are on the hot path: cheap, non-blocking, concurrency-safe.
type Observer interface {
	// RunFinished is called once per run once it is written (late, for a
	// run that waited in the write queue); ResultsDropped counts the rest.
	RunFinished(r *results.Result)
	// DriftDetected is called for every drift event (a change's first
	// answer; its next drifted answers are no event).
	DriftDetected(d *results.Drift)
	// AlertDelivered is called when the receiver accepted an alert.
	AlertDelivered(a *results.Alert)
	// AlertFailed is called for every failed delivery attempt; final says
	// the alert will not be tried again.
	AlertFailed(a *results.Alert, final bool)
	// StoreError is called when a store operation failed; op names it.
	StoreError(op string)
	// ResultsDropped is called with n > 0 when n runs are given up
	// unwritten: pushed out of a full write queue, refused for good,
	// still queued at the stop, or finished after the queue closed.
	ResultsDropped(n int)
	// SetProbes is called with the configured probes' names at start and
	// on every reload, before their runs.
	SetProbes(names []string)
	// SetReceivers is called likewise with the receiver keys
	// ("default/slack", "routes[0]/webhook").
	SetReceivers(keys []string)
	// SetLeader is called with true when the instance starts leading its
	// location (at Run for a single instance) and false when it stops.
	SetLeader(leading bool)
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
func (nopObserver) SetLeader(bool)                   {}

// observerOr returns o, or a no-op Observer when o is nil.
func observerOr(o Observer) Observer {
	if o == nil {
		return nopObserver{}
	}
	return o
}
