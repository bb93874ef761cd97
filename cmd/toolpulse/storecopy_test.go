package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/internal/storetest"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/postgres"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// sampleDB records storetest's sample history of n plain runs into a new
// SQLite file and returns its path.
func sampleDB(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolpulse.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	storetest.RecordSample(t, s, n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// reads is what the readers of a store see of a history, ids left out
// (a copy's ids are the target's own).
func reads(t *testing.T, s storetest.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	put := func(name string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
	hist, err := s.History(ctx, results.HistoryQuery{Limit: 100_000})
	put("History", hist, err)
	start := storetest.SampleStart
	// Whole hours and partial ones: probe_hours and results both answer.
	for _, w := range [][2]time.Time{{start.Add(-time.Hour), start.Add(48 * time.Hour)}, {start.Add(17 * time.Minute), start.Add(3*time.Hour + 5*time.Minute)}} {
		st, err := s.Stats(ctx, w[0], w[1])
		put("Stats "+w[0].String(), st, err)
	}
	latest, err := s.Latest(ctx)
	put("Latest", latest, err)
	states, err := s.AlertStates(ctx)
	put("AlertStates", states, err)
	alerts, err := s.Alerts(ctx)
	for i := range alerts {
		alerts[i].ID = 0
	}
	put("Alerts", alerts, err)
	sil, err := s.Silences(ctx, start, true)
	for i := range sil {
		sil[i].ID = 0
	}
	put("Silences", sil, err)
	for _, p := range []string{"alpha", "external_search", "refund_order_31"} {
		d, err := s.Drifts(ctx, p, time.Time{}, 100)
		put("Drifts "+p, d, err)
	}
	recent, err := s.RecentShapes(ctx, "external_search", time.Time{}, 10)
	put("RecentShapes", recent, err)
	return out
}

func openPostgres(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sameReads fails unless the Postgres at dsn reads what the SQLite at path
// reads.
func sameReads(t *testing.T, path, dsn string) {
	t.Helper()
	src, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want, got := reads(t, src), reads(t, openPostgres(t, dsn))
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s on Postgres after the copy:\n%s\nwant, as on SQLite:\n%s", name, got[name], w)
		}
	}
}

// counts is the number of rows of each table the copy fills, and of the
// rollups.
func counts(t *testing.T, dsn string) string {
	t.Helper()
	var q []string
	for _, tb := range append(sqlite.ExportTables(), sqlite.ExportTable{Name: "probe_hours"}, sqlite.ExportTable{Name: "shape_counts"}) {
		q = append(q, "SELECT '"+tb.Name+" ' || count(*) FROM "+tb.Name)
	}
	return pgtest.Exec(t, dsn, strings.Join(q, " UNION ALL "))
}

// TestStoreCopy copies a SQLite history into Postgres with `toolpulse
// store copy`: every reader then answers on Postgres what it answers on
// SQLite (history, stats from the rebuilt rollups, latest, alert state,
// the outbox with its drift, silences, drifts, shapes), and a second copy
// copies nothing and changes nothing.
func TestStoreCopy(t *testing.T) {
	path := sampleDB(t, 300)
	dsn := pgtest.Database(t)
	storeCopy := func() string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"store", "copy", "--from", path, "--to", dsn}, func(string) (string, bool) { return "", false }, &out, &errOut); code != exitOK {
			t.Fatalf("store copy: exit %d\n%s%s", code, out.String(), errOut.String())
		}
		if !strings.Contains(errOut.String(), "100%") {
			t.Errorf("store copy's progress never reached 100%%:\n%s", errOut.String())
		}
		return out.String()
	}
	first := storeCopy()
	if !regexpLine(first, `results\s+305\s+0`) || !regexpLine(first, `drifts\s+1\s+0`) || !regexpLine(first, `silences\s+1\s+0`) {
		t.Errorf("first copy's summary:\n%s", first)
	}
	sameReads(t, path, dsn)
	before := counts(t, dsn)

	second := storeCopy()
	if !regexpLine(second, `results\s+0\s+305`) || !regexpLine(second, `alerts\s+0\s+3`) || !regexpLine(second, `silences\s+0\s+1`) {
		t.Errorf("second copy's summary:\n%s", second)
	}
	if after := counts(t, dsn); after != before {
		t.Errorf("a second copy changed the row counts:\n%s\nwas\n%s", after, before)
	}
	sameReads(t, path, dsn)
}

// TestStoreCopyInterrupted cancels a copy in the middle of its results,
// then runs it again: the second run finishes it, nothing doubled.
func TestStoreCopyInterrupted(t *testing.T) {
	path := sampleDB(t, 250)
	dsn := pgtest.Database(t)
	src, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := openPostgres(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	_, err = copyHistory(ctx, src, dst, 100, func(table string, done, total int64) {
		if table == "results" {
			cancel() // after its first batch
		}
	})
	if err == nil {
		t.Fatal("a copy cancelled half-way returned no error")
	}
	if n := pgtest.Exec(t, dsn, "SELECT count(*) FROM results"); n != "100" {
		t.Errorf("the cancelled copy left %s results, want its first batch, 100", n)
	}
	summary, err := copyHistory(context.Background(), src, dst, 100, func(string, int64, int64) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range summary {
		if s.table == "results" && (s.copied != 155 || s.there != 100) {
			t.Errorf("results on the second run: %d copied, %d already there; want 155 and 100", s.copied, s.there)
		}
	}
	sameReads(t, path, dsn)
}

func regexpLine(text, re string) bool {
	return regexp.MustCompile(`(?m)^` + re + `\s*$`).MatchString(text)
}

// TestStoreCopyExitCodes: a --to that is not a Postgres URL is bad usage
// (64); a --from that does not exist is missing input (66), and no SQLite
// file is created in its place.
func TestStoreCopyExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.db")
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"store", "copy", "--from", missing, "--to", filepath.Join(t.TempDir(), "x.db")}, exitUsage},
		{[]string{"store", "copy", "--from", missing, "--to", "postgres://nobody@127.0.0.1:1/none"}, exitNoInput},
	} {
		var out bytes.Buffer
		if code := run(context.Background(), c.args, func(string) (string, bool) { return "", false }, &out, &out); code != c.want {
			t.Errorf("toolpulse %s: exit %d, want %d\n%s", strings.Join(c.args, " "), code, c.want, out.String())
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("store copy created %s", missing)
	}
}
