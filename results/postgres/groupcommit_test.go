package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
)

// runWithID is failingRun(id) or, when pass is set, a passing run.
func runWithID(id string, pass bool) *results.RunRecord {
	if pass {
		return &results.RunRecord{Result: passRun(id), AlertState: &results.AlertState{Probe: "external_search"}}
	}
	return failingRun(id)
}

// contents dumps every row RecordRun writes, without row ids (an alert's
// drift is named by its operation id), one sorted line per row, so that
// two stores that recorded the same runs compare equal.
func contents(t *testing.T, dsn string) []string {
	t.Helper()
	out := pgtest.Exec(t, dsn, `SELECT line FROM (
    SELECT 'results ' || ((to_jsonb(r) - 'id'))::text AS line FROM results r
    UNION ALL SELECT 'attempts ' || (to_jsonb(a))::text FROM attempts a
    UNION ALL SELECT 'shapes ' || (to_jsonb(s))::text FROM shapes s
    UNION ALL SELECT 'shape_counts ' || (to_jsonb(c))::text FROM shape_counts c
    UNION ALL SELECT 'probe_hours ' || (to_jsonb(h))::text FROM probe_hours h
    UNION ALL SELECT 'drifts ' || ((to_jsonb(d) - 'id'))::text FROM drifts d
    UNION ALL SELECT 'alert_state ' || (to_jsonb(st))::text FROM alert_state st
    UNION ALL SELECT 'alerts ' || ((to_jsonb(a) - 'id' - 'drift_id'))::text || ' ' || coalesce(d.operation_id, '')
        FROM alerts a LEFT JOIN drifts d ON d.id = a.drift_id
) x ORDER BY line`)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// TestConcurrentRecordRunsStoredOnce has 20 goroutines record 26 runs
// each at once: every run is stored exactly once, with its alerts, whose
// ids RecordRun set, distinct and naming the run's own rows, and runs
// shared commits.
func TestConcurrentRecordRunsStoredOnce(t *testing.T) {
	const writers, each = 20, 26
	ctx := context.Background()
	s, dsn := newStore(t)

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		recs = map[string]*results.RunRecord{}
	)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("op-%d-%d", w, i)
				rec := runWithID(id, i%2 == 0)
				if err := s.RecordRun(ctx, rec); err != nil {
					t.Errorf("RecordRun(%s): %v", id, err)
					continue
				}
				mu.Lock()
				recs[id] = rec
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	stored := map[string]string{}
	for _, line := range strings.Split(pgtest.Exec(t, dsn, `SELECT id || ' ' || operation_id FROM alerts`), "\n") {
		id, op, _ := strings.Cut(line, " ")
		stored[id] = op
	}
	alerts := 0
	for id, rec := range recs {
		for i, a := range rec.Alerts {
			alerts++
			if got, ok := stored[fmt.Sprint(a.ID)]; !ok || got != id {
				t.Errorf("%s: alert %d has ID %d, which is stored for %q", id, i, a.ID, got)
			}
		}
	}
	if len(stored) != alerts {
		t.Errorf("alerts stored: got %d, want %d", len(stored), alerts)
	}
	for query, want := range map[string]int{
		"SELECT count(*) FROM results":                     writers * each,
		"SELECT count(DISTINCT operation_id) FROM results": writers * each,
		"SELECT sum(runs) FROM probe_hours":                writers * each,
		"SELECT seen_count FROM shapes":                    writers * each / 2,
	} {
		if got := count(t, dsn, query); got != want {
			t.Errorf("%s: got %d, want %d", query, got, want)
		}
	}
	commits, runs := postgres.Commits(s)
	if runs != writers*each || commits >= runs {
		t.Errorf("%d runs committed in %d commits, want %d runs in fewer commits", runs, commits, writers*each)
	}
	t.Logf("%d runs in %d commits", runs, commits)
}

// errRefused stands for the error of refuseAlertOf's trigger.
var errRefused = errors.New("refused by the test")

// refuseAlertOf makes the database refuse the firing alert of operation
// id, the last row RecordRun writes of it, with a constraint error.
func refuseAlertOf(t *testing.T, dsn, id string) {
	t.Helper()
	pgtest.Exec(t, dsn, `CREATE FUNCTION refuse_alert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'refused by the test' USING ERRCODE = 'check_violation'; END $$;
CREATE TRIGGER refuse_alert BEFORE INSERT ON alerts FOR EACH ROW
WHEN (NEW.kind = 'firing' AND NEW.operation_id = '`+id+`') EXECUTE FUNCTION refuse_alert()`)
}

// TestBatchIsolatesFailedRuns records runs of which some fail in one
// transaction: only the runs that fail get an error, a permanent one, the
// others are committed in one commit, and the store holds exactly what
// recording the successful runs one by one would have stored: nothing of
// a failed run remains, not even the shape counts, probe hour or alert
// state written before it failed.
func TestBatchIsolatesFailedRuns(t *testing.T) {
	tests := []struct {
		name    string
		before  []string // recorded first, one by one
		trigger bool     // op-bad's alert is refused, after the rest of it was written
		batch   []string // "+" marks a passing run
		want    []error  // per run of batch; errRefused is the trigger's
	}{
		{name: "duplicate of an earlier batch",
			before: []string{"op-1"}, batch: []string{"op-2", "op-1", "+op-3"},
			want: []error{nil, postgres.ErrDuplicate, nil}},
		{name: "duplicate within the batch",
			batch: []string{"op-1", "+op-2", "op-1", "op-3"},
			want:  []error{nil, nil, postgres.ErrDuplicate, nil}},
		{name: "first and last fail",
			before: []string{"op-1"}, batch: []string{"op-1", "op-2", "+op-3", "op-2"},
			want: []error{postgres.ErrDuplicate, nil, nil, postgres.ErrDuplicate}},
		{name: "constraint half-way through a run",
			trigger: true, batch: []string{"op-1", "op-bad", "+op-2"},
			want: []error{nil, errRefused, nil}},
		{name: "every run fails",
			before: []string{"op-1", "op-2"}, batch: []string{"op-2", "op-1"},
			want: []error{postgres.ErrDuplicate, postgres.ErrDuplicate}},
		{name: "a run alone that fails",
			before: []string{"op-1"}, batch: []string{"op-1"},
			want: []error{postgres.ErrDuplicate}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dsn := newStore(t)
			ref, refDSN := newStore(t)
			if tt.trigger {
				refuseAlertOf(t, dsn, "op-bad")
			}
			for _, id := range tt.before {
				for _, st := range []*postgres.Store{s, ref} {
					if err := st.RecordRun(context.Background(), runWithID(id, false)); err != nil {
						t.Fatal(err)
					}
				}
			}
			commits, runs := postgres.Commits(s)

			recs := make([]*results.RunRecord, len(tt.batch))
			for i, id := range tt.batch {
				recs[i] = runWithID(strings.TrimPrefix(id, "+"), strings.HasPrefix(id, "+"))
			}
			errs := recordBatch(t, s, recs)

			committed := 0
			for i, err := range errs {
				rec, want := recs[i], tt.want[i]
				switch {
				case want == nil && err != nil:
					t.Errorf("run %d (%s): %v, want it recorded", i, rec.Result.OperationID, err)
				case want == errRefused && (err == nil || !strings.Contains(err.Error(), "refused by the test") || !postgres.Permanent(err)):
					t.Errorf("run %d (%s): %v, want the trigger's refusal, permanent", i, rec.Result.OperationID, err)
				case want != nil && want != errRefused && (!errors.Is(err, want) || !postgres.Permanent(err)):
					t.Errorf("run %d (%s): %v, want %v, permanent", i, rec.Result.OperationID, err, want)
				}
				for j, a := range rec.Alerts {
					if (err == nil) != (a.ID != 0) {
						t.Errorf("run %d (%s), alert %d: ID %d after RecordRun returned %v", i, rec.Result.OperationID, j, a.ID, err)
					}
				}
				if err == nil {
					committed++
					if err := ref.RecordRun(context.Background(), runWithID(rec.Result.OperationID, strings.HasPrefix(tt.batch[i], "+"))); err != nil {
						t.Fatal(err)
					}
				}
			}
			c, r := postgres.Commits(s)
			wantCommits := 0
			if committed > 0 {
				wantCommits = 1
			}
			if c-commits != int64(wantCommits) || r-runs != int64(committed) {
				t.Errorf("the batch took %d commits for %d runs, want %d for %d", c-commits, r-runs, wantCommits, committed)
			}
			got, want := contents(t, dsn), contents(t, refDSN)
			if !slices.Equal(got, want) {
				t.Errorf("the store after the batch against recording the successful runs one by one:\n got  %q\n want %q", got, want)
			}
		})
	}
}

// TestPermanent: refusals of one record are permanent, faults that may
// clear are not.
func TestPermanent(t *testing.T) {
	ctx := context.Background()
	s, dsn := newStore(t)
	if err := s.Record(ctx, passRun("op-1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, passRun("op-1")); !errors.Is(err, postgres.ErrDuplicate) || !postgres.Permanent(err) {
		t.Errorf("duplicate: got %v, want ErrDuplicate, permanent", err)
	}
	bad := passRun("op-2")
	bad.Outcome = "maybe"
	if err := s.Record(ctx, bad); err == nil || !postgres.Permanent(err) {
		t.Errorf("invalid result: got %v, want a permanent refusal", err)
	}
	// A server that takes no writes is a fault: it may come back.
	pgtest.Exec(t, dsn, `ALTER DATABASE "`+dbName(dsn)+`" SET default_transaction_read_only = on`)
	s2 := openStore(t, dsn)
	err := s2.Record(ctx, passRun("op-3"))
	if err == nil || postgres.Permanent(err) {
		t.Errorf("read-only database: got %v, want a fault that is not permanent", err)
	}
	if err := s2.Ping(ctx); err == nil {
		t.Errorf("Ping on a read-only database: got nil error")
	}
	if postgres.Permanent(nil) || postgres.Permanent(context.Canceled) {
		t.Errorf("nil or context.Canceled counted as permanent")
	}
}

// dbName is the database dsn names.
func dbName(dsn string) string {
	name := dsn[strings.LastIndex(dsn, "/")+1:]
	name, _, _ = strings.Cut(name, "?")
	return name
}
