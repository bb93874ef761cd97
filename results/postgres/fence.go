package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/groupcommit"
)

// Fencing (SPEC §12). A write that claims a lease (a results.Fence with an
// epoch) reads its location's lease row FOR SHARE in its own transaction
// and is refused with results.ErrFenced unless the lease is still held
// under that epoch. The share lock is held until the transaction ends, and
// a takeover's AcquireLease updates the row, so the takeover waits for the
// write's COMMIT: no write of an older epoch commits once a newer epoch
// was granted.

// lockFences locks, FOR SHARE in tx, the lease row of every location a
// fenced record of batch claims, and returns each location's epoch; a
// location without a lease row is missing from the map. One statement
// serves the whole batch, whatever number of fences it claims.
func lockFences(ctx context.Context, tx pgx.Tx, batch []*groupcommit.Request) (map[string]int64, error) {
	var locations []string
	for _, r := range batch {
		if f := r.Rec.Fence; f.Fenced() && !slices.Contains(locations, f.Location) {
			locations = append(locations, f.Location)
		}
	}
	if len(locations) == 0 {
		return nil, nil
	}
	return lockLeases(ctx, tx, locations)
}

// fencedIdleTimeout is how long a transaction that holds a lease row's
// share lock may sit idle between its statements before the server ends
// it. Its statements follow each other at once, so an idle one means its
// client is paused (SIGSTOP, a VM frozen) or cut off; without the limit
// its lock would hold a standby's takeover for as long as the pause lasts.
// Half the shortest fleet.lease: a takeover waits at most that long more.
const fencedIdleTimeout = "1s"

// lockLeases reads the epoch of each of locations' leases FOR SHARE in
// tx, in location order (so that two transactions never wait for each
// other's rows in opposite orders), and limits how long tx may then sit
// idle (fencedIdleTimeout).
func lockLeases(ctx context.Context, tx pgx.Tx, locations []string) (map[string]int64, error) {
	if _, err := tx.Exec(ctx, "SET LOCAL idle_in_transaction_session_timeout = '"+fencedIdleTimeout+"'"); err != nil {
		return nil, fmt.Errorf("lock the leases: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT location, epoch FROM fleet WHERE location = ANY($1)
ORDER BY location FOR SHARE`, locations)
	if err != nil {
		return nil, fmt.Errorf("lock the leases: %w", err)
	}
	defer rows.Close()
	epochs := make(map[string]int64, len(locations))
	for rows.Next() {
		var location string
		var epoch int64
		if err := rows.Scan(&location, &epoch); err != nil {
			return nil, fmt.Errorf("lock the leases: %w", err)
		}
		epochs[location] = epoch
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock the leases: %w", err)
	}
	return epochs, nil
}

// fenceError is nil when f claims no lease or the lease of f's location
// is held under f's epoch (epochs as lockLeases read them), and otherwise
// the refusal, wrapping results.ErrFenced.
func fenceError(f results.Fence, epochs map[string]int64) error {
	if !f.Fenced() {
		return nil
	}
	epoch, ok := epochs[f.Location]
	switch {
	case !ok:
		return refuse(fmt.Errorf("%w: location %q has no lease; the write claims epoch %d", results.ErrFenced, f.Location, f.Epoch))
	case epoch != f.Epoch:
		return refuse(fmt.Errorf("%w: location %q's lease is at epoch %d; the write claims epoch %d", results.ErrFenced, f.Location, epoch, f.Epoch))
	}
	return nil
}

// validFence refuses a record whose fence and handover flag contradict
// each other: a handover is written by a node that no longer leads, so it
// claims no lease.
func validFence(rec *results.RunRecord) error {
	f := rec.Fence
	switch {
	case f.Epoch < 0:
		return fmt.Errorf("invalid fence: epoch %d", f.Epoch)
	case f.Fenced() && f.Location == "":
		return fmt.Errorf("invalid fence: epoch %d without a location", f.Epoch)
	case f.Fenced() && rec.Handover:
		return fmt.Errorf("invalid fence: a handover claims no lease, but the record claims %q's epoch %d", f.Location, f.Epoch)
	}
	return nil
}

// errOtherRun explains an ErrDuplicate that is not the retry of the same
// record.
var errOtherRun = errors.New("the stored run is another")

// resolveDuplicate decides, once rec's transaction has ended, what a
// duplicate operation id means for rec. A handover's operation already
// stored is success (its history is there). A retry of a RecordRun whose
// COMMIT succeeded while its answer was lost (the connection dropped) is
// success too, with the alert ids of the stored alerts: the stored result
// is the same node's run started at the same time (a result without a
// node cannot be told apart from another's), and it has as many alerts as
// rec. Anything else stays dup. An error reading the stored run is a
// fault, so that the caller tries again rather than drop the run.
func (s *Store) resolveDuplicate(ctx context.Context, rec *results.RunRecord, dup error) ([]int64, error) {
	if rec.Handover {
		return nil, nil
	}
	r := &rec.Result
	if r.Node == "" {
		return nil, dup
	}
	var (
		node      *string
		startedAt time.Time
		ids       []int64
	)
	err := s.pool.QueryRow(ctx, `SELECT node, started_at,
    ARRAY(SELECT id FROM alerts WHERE operation_id = $1 ORDER BY id)
FROM results WHERE operation_id = $1`, r.OperationID).Scan(&node, &startedAt, &ids)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, dup // pruned since: nothing to vouch for it
	}
	if err != nil {
		return nil, fmt.Errorf("%v, and reading the stored run failed: %w", dup, err)
	}
	if str(node) != r.Node || !startedAt.Equal(dbTime(r.StartedAt)) || len(ids) != len(rec.Alerts) {
		return nil, fmt.Errorf("%w (%w: node %q started at %s with %d alerts)", dup, errOtherRun,
			str(node), startedAt.UTC().Format(time.RFC3339Nano), len(ids))
	}
	return ids, nil
}
