// Package storetest is the contract every toolpulse store keeps: one table
// of behaviours that the daemon (runner.Store) and the commands (history,
// stats, retention, the status page and API, test --from-db) rely on,
// written against an interface rather than a database. A store's own
// package runs it from one test:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, storetest.Impl{Open: openInTempDir, ErrNotFound: ErrNotFound, ErrDuplicate: ErrDuplicate})
//	}
//
// results/sqlite runs it on a file in t.TempDir(); a Postgres store (SPEC
// §12) adds the same one test. What only one store can check (its schema,
// its SQL, its locks) stays in that store's own tests.
//
// It is test-support code: it imports testing, and only tests import it.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner"
)

// Store is what the contract exercises: runner.Store, which the daemon
// writes and reads through, plus the reads and the upkeep that cmd does
// on the store.
type Store interface {
	runner.Store

	// ResetProfile empties probe's shape profile at at and reports whether
	// the probe had a profile or runs.
	ResetProfile(ctx context.Context, probe string, at time.Time) (bool, error)
	// Record stores r alone: RecordRun with no drift, alert state or
	// alerts.
	Record(ctx context.Context, r results.Result) error
	// Result returns the stored result of one operation, with its
	// attempts and shape, or an error wrapping Impl.ErrNotFound.
	Result(ctx context.Context, operationID string) (results.Result, error)
	// History returns the results q selects, newest first (by started_at,
	// then recording order).
	History(ctx context.Context, q results.HistoryQuery) ([]results.Result, error)
	// NewestRuns returns, for each of want in its order, the newest runs
	// of its probe from its location, newest first.
	NewestRuns(ctx context.Context, want []results.RunsFrom) ([][]results.Result, error)
	// Latest returns the latest result of every probe, sorted by probe.
	Latest(ctx context.Context) ([]results.Result, error)
	// Drifts returns up to limit drifts of probe ("" every probe)
	// detected at or after since, newest first.
	Drifts(ctx context.Context, probe string, since time.Time, limit int) ([]results.Drift, error)
	// RecentRuns returns the last n runs of each of probes, oldest first.
	RecentRuns(ctx context.Context, probes []string, n int) (map[string][]results.RecentRun, error)
	// LastDrifts returns the latest drift of each of probes that has one.
	LastDrifts(ctx context.Context, probes []string) (map[string]results.Drift, error)
	// LatestPassSamples returns the sample of the shape of each probe's
	// latest pass.
	LatestPassSamples(ctx context.Context, probes []string) (map[string]results.PassSample, error)
	// Stats sums up each probe's runs started in [since, until), from
	// any of locations (SPEC §13); none: from every location.
	Stats(ctx context.Context, since, until time.Time, locations ...string) ([]results.ProbeStats, error)
	// Prune deletes what is older than before and returns how many
	// results it deleted.
	Prune(ctx context.Context, before time.Time, batch int) (int, error)
	// RecordDecision commits a fleet-wide decision about one probe: its
	// alert state and alerts, without a run (SPEC §13).
	RecordDecision(ctx context.Context, rec *results.DecisionRecord) error
	// Alerts returns every stored alert in recording order, whatever its
	// delivery state.
	Alerts(ctx context.Context) ([]results.Alert, error)
	// LatestAlerts returns the newest alert about each of probes that has
	// one, in any delivery state.
	LatestAlerts(ctx context.Context, probes []string) (map[string]results.Alert, error)
	// FiringAlerts returns, for each firing probe, the newest firing,
	// reminder or update alert of its failure delivered to receiver.
	FiringAlerts(ctx context.Context, receiver string) ([]results.Alert, error)
	// RecordedRuns returns the results of probe ("" every probe) in the
	// order they were recorded.
	RecordedRuns(ctx context.Context, probe string) ([]results.Result, error)
	// AddSilence stores a silence and returns its id.
	AddSilence(ctx context.Context, s results.Silence) (int64, error)
	// Silences returns the silences not ended or expired at now, or
	// every silence with includeExpired, in id order.
	Silences(ctx context.Context, now time.Time, includeExpired bool) ([]results.Silence, error)
	// ExpireSilence ends silence id at now, does nothing to one already
	// ended or expired, and fails wrapping Impl.ErrNotFound for an
	// unknown id.
	ExpireSilence(ctx context.Context, id int64, now time.Time) error
	// Ping checks that the store can read and take its write lock.
	Ping(ctx context.Context) error
	// Close closes the store; calling it again does nothing.
	Close() error
}

// Impl is the store under test.
type Impl struct {
	// Open returns a new, empty store that t's cleanup closes. A
	// behaviour may close it earlier.
	Open func(t *testing.T) Store
	// ErrNotFound is what the store wraps when what was asked for is not
	// stored: Result of an unknown operation, a Mark* of an alert that is
	// not pending.
	ErrNotFound error
	// ErrDuplicate is what RecordRun wraps for an operation id already
	// stored.
	ErrDuplicate error
}

// behaviour is one row of the contract.
type behaviour struct {
	name string
	test func(t *testing.T, impl Impl)
}

// behaviours is the contract, one row per thing a caller relies on.
var behaviours = []behaviour{
	// Recording.
	{"RecordRun/round trip", recordRoundTrip},
	{"RecordRun/drift and linked alert", recordDriftAndAlerts},
	{"RecordRun/an MCP run's exchanges and tool definition", recordMCPRun},
	{"RecordRun/definition drift beside response drift", recordDefinitionDrift},
	{"RecordRun/a steps probe's run, its steps and their shapes", recordStepsRun},
	{"RecordRun/each step's drift, and a reset of the probe resets its steps", recordStepDrift},
	{"RecordRun/the node that ran it reads back", recordNode},
	{"RecordRun/the location it ran from reads back, and History filters by it", recordLocation},
	{"RecordRun/the trace its requests carried reads back", recordTraceID},
	{"NewestRuns/each probe's newest runs from each location, in one call", newestRuns},
	{"RecordDecision/the alert state and alerts, with each location's view, read back", recordDecision},
	{"RecordDecision/the locations announced silent and their alerts, read back", silentLocations},
	{"FiringAlerts/the locations still silent, as told to the receiver", firingSilentLocations},
	{"RecordRun/duplicate keeps the first", recordDuplicate},
	{"RecordRun/refused record leaves nothing", recordRefused},
	{"RecordRun/concurrent callers read their run once answered", recordConcurrent},
	{"RecordedRuns/recording order", recordedRunsOrder},
	// Alert state.
	{"AlertStates/round trip", alertStatesRoundTrip},
	{"AlertStates/the alert policy's verdict, window and flapping", alertPolicyRoundTrip},
	// Outbox.
	{"Outbox/lifecycle", outboxLifecycle},
	{"Outbox/marks refuse nonsense", outboxRefusesNonsense},
	{"Outbox/due order and limit", outboxDueOrderAndLimit},
	{"Outbox/failure modes read back", outboxModes},
	{"Outbox/latest alert of each probe", outboxLatest},
	{"Outbox/receiver and labels read back", outboxReceivers},
	{"Outbox/what each receiver was last told is firing", outboxFiring},
	{"Outbox/what each receiver was last told of a flapping probe", outboxFiringFlapping},
	{"Outbox/target, body excerpt and resolving read back", outboxContext},
	{"Outbox/a group's pending alerts and last delivery", outboxGroups},
	// Drift.
	{"ShapeProfile/saved with the run", profileSavedWithRun},
	{"ShapeProfile/reset", profileReset},
	{"RecentShapes", recentShapes},
	// Reads for cmd.
	{"History/filters", historyFilters},
	{"History/window boundaries", historyWindow},
	{"History/default limit and order", historyDefaultLimit},
	{"History/attempts of every result", historyAttempts},
	{"History/unknown outcome", historyUnknownOutcome},
	{"Latest", latest},
	{"Drifts", drifts},
	{"RecentRuns", recentRuns},
	{"LastDrifts", lastDrifts},
	{"LatestPassSamples", latestPassSamples},
	// Stats.
	{"Stats/percentiles", statsPercentiles},
	{"Stats/outcome since", statsOutcomeSince},
	{"Stats/drift events", statsDriftEvents},
	{"Stats/empty", statsEmpty},
	{"Stats/window edges", statsWindowEdges},
	{"Stats/last run's kind", statsLastKind},
	{"Stats/of some locations", statsLocations},
	// Silences.
	{"Silences/lifecycle", silencesLifecycle},
	// Retention.
	{"Prune/deletes only older", pruneOlder},
	{"Prune/refuses a zero cutoff", pruneZeroCutoff},
	{"Prune/a steps run goes with its steps", pruneSteps},
	// Faults.
	{"Faults/cancelled context", faultCancelled},
	{"Faults/closed store", faultClosed},
}

// Run runs every behaviour of the contract against impl, each on a store
// of its own, as a subtest named for it.
func Run(t *testing.T, impl Impl) {
	t.Helper()
	if impl.Open == nil || impl.ErrNotFound == nil || impl.ErrDuplicate == nil {
		t.Fatal("storetest: Impl needs Open, ErrNotFound and ErrDuplicate")
	}
	for _, b := range behaviours {
		t.Run(b.name, func(t *testing.T) { b.test(t, impl) })
	}
}
