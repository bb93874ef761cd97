package sqlite

import (
	"context"
	"io/fs"
	"path/filepath"
	"reflect"
	"testing"
	"testing/fstest"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// TestUpgradeTo0004AddsShapeSamples fills a database the way the release
// that shipped migrations 0001 to 0003 did, opens it with this release, and
// checks that shapes gained a sample column, NULL for the shapes already
// there, that the rows are intact, and that the next run of an old shape
// fills its sample.
func TestUpgradeTo0004AddsShapeSamples(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	before := fstest.MapFS{}
	for _, name := range []string{"0001_init.sql", "0002_drifts_alerts.sql", "0003_operator_views.sql"} {
		text, err := fs.ReadFile(embedded, name)
		if err != nil {
			t.Fatal(err)
		}
		before[name] = &fstest.MapFile{Data: text}
	}
	old := writerDB(t, path, writeParams)
	if err := migrate(ctx, old, before); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO shapes VALUES ('f1', 'object{a:number}', '2026-10-26T10:00:00.000Z', '2026-10-26T10:01:00.000Z', 2)`,
		`INSERT INTO results (operation_id, probe, started_at, duration_ms, outcome, attempts,
			consumer, consumer_version, rule_hash, shape_fingerprint)
			VALUES ('op-1', 'p', '2026-10-26T10:00:00.000Z', 10, 'pass', 1, 'c', '1', 'h', 'f1'),
			       ('op-2', 'p', '2026-10-26T10:01:00.000Z', 10, 'pass', 1, 'c', '1', 'h', 'f1')`,
	} {
		if _, err := old.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	shapes := func() []any {
		t.Helper()
		var fp, canonical string
		var seen int
		var sample *string
		err := s.reader.QueryRow(`SELECT fingerprint, canonical, seen_count, sample FROM shapes`).Scan(&fp, &canonical, &seen, &sample)
		if err != nil {
			t.Fatal(err)
		}
		return []any{fp, canonical, seen, sample}
	}
	if got, want := shapes(), []any{"f1", "object{a:number}", 2, (*string)(nil)}; !reflect.DeepEqual(got, want) {
		t.Errorf("shapes after the upgrade: got %v, want %v", got, want)
	}
	if got, err := s.LatestPassSamples(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("LatestPassSamples after the upgrade: got %v, %v, want none: no shape has a sample yet", got, err)
	}

	at := time.Date(2026, 10, 26, 10, 2, 0, 0, time.UTC)
	r := results.Result{OperationID: "op-3", Probe: "p", StartedAt: at, Outcome: results.Pass,
		Shape: &results.Shape{Fingerprint: "f1", Canonical: "object{a:number}", Sample: `{"a":1}`}, Consumer: results.ConsumerRef{Name: "c"}}
	if err := s.Record(ctx, r); err != nil {
		t.Fatal(err)
	}
	sample := `{"a":1}`
	if got, want := shapes(), []any{"f1", "object{a:number}", 3, &sample}; !reflect.DeepEqual(got, want) {
		t.Errorf("shapes after a run of the old shape: got %v, want %v", got, want)
	}
	got, err := s.LatestPassSamples(ctx, nil)
	want := map[string]results.PassSample{"p": {Probe: "p", OperationID: "op-3", StartedAt: at, Fingerprint: "f1", Body: sample}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("LatestPassSamples after a run of the old shape: got %+v, %v, want %+v", got, err, want)
	}
}
