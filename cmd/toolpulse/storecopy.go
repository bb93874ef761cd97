package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results/postgres"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// storeCmd groups the commands on a store as a whole.
type storeCmd struct {
	Copy storeCopyCmd `cmd:"" help:"Copy a SQLite history into a Postgres database; a second run copies nothing twice."`
}

type storeCopyCmd struct {
	From string `required:"" placeholder:"FILE" help:"The SQLite database to copy from (toolpulse.db)."`
	To   string `required:"" placeholder:"URL" help:"The Postgres database to copy into: a postgres:// URL; migrated if new."`
}

// Help is `toolpulse store copy --help`'s description: what is copied and
// how a second run knows what is there.
func (c *storeCopyCmd) Help() string {
	return `Copies results, attempts, run steps, shapes, drifts, the alert outbox, alert state, silences, shape profiles and tool definitions, in batches of 20,000 rows (COPY into a temporary table, then INSERT of the rows not there yet). A row already in the target is skipped: a result by its operation_id, an attempt or run step by its operation_id and number or position, a shape by its fingerprint, alert state and a profile by the probe, a tool definition by probe and fingerprint, a drift, an alert or a silence by what it says (ids are the target's own). The hourly rollups (probe_hours, shape_counts) are rebuilt from all the target's results at the end. Interrupted, the same command run again finishes the copy. See docs/operations.md, "Moving from SQLite".`
}

// copyBatch is how many rows one transaction of a copy writes: large
// enough that COPY's speed shows, small enough that an interrupted copy
// loses little.
const copyBatch = 20_000

// copied is what a copy did to one table.
type copied struct {
	table         string
	copied, there int64
}

// Run copies every table of the SQLite history that Postgres keeps, then
// rebuilds Postgres's rollups from the results. Each batch is one
// transaction; rows already in the target (by their key: a result's
// operation_id, an attempt's operation_id and number...; see docs/cli.md)
// are skipped, so a copy interrupted half-way is finished by running it
// again.
func (c *storeCopyCmd) Run(e *env, root *cli) error {
	if to := dbStorage(c.To, checks.Storage{}); to.Driver != checks.DriverPostgres {
		return usageError("--to %q: want a postgres:// or postgresql:// URL", c.To)
	}
	from, err := openSQLite(e.ctx, c.From, storeRead)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := postgres.Open(e.ctx, c.To)
	if err != nil {
		return softwareError(err)
	}
	defer to.Close()
	progress := newCopyProgress(e.stderr)
	summary, err := copyHistory(e.ctx, from.(*sqlite.Store), to, copyBatch, progress.update)
	progress.done()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			err = fmt.Errorf("%w; run the same command again to finish the copy", err)
		}
		return softwareError(err)
	}
	w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TABLE\tCOPIED\tALREADY THERE")
	for _, s := range summary {
		fmt.Fprintf(w, "%s\t%d\t%d\n", s.table, s.copied, s.there)
	}
	return w.Flush()
}

// copyHistory copies every table sqlite.ExportTables names from src into
// dst, in batches, reading the next batch while the last one is written,
// batch rows to a transaction, then rebuilds dst's rollups. progress hears the rows done so far out of
// the rows src held when the copy started.
func copyHistory(ctx context.Context, src *sqlite.Store, dst *postgres.Store, batch int, progress func(table string, done, total int64)) ([]copied, error) {
	tables := sqlite.ExportTables()
	var total, done int64
	for _, t := range tables {
		n, err := src.ExportCount(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		total += n
	}
	var summary []copied
	for _, t := range tables {
		sum := copied{table: t.Name}
		batches, errc := readBatches(ctx, src, t.Name, batch)
		for rows := range batches {
			n, err := dst.CopyRows(ctx, t.Name, t.Columns, rows)
			if err != nil {
				drain(batches)
				return summary, err
			}
			sum.copied += n
			sum.there += int64(len(rows)) - n
			done += int64(len(rows))
			progress(t.Name, done, max(total, done))
		}
		if err := <-errc; err != nil {
			return summary, err
		}
		summary = append(summary, sum)
	}
	progress("rollups", done, max(total, done))
	if err := dst.RebuildRollups(ctx); err != nil {
		return summary, err
	}
	return summary, nil
}

// readBatches reads table in batches on a goroutine of its own, so that
// reading SQLite and writing Postgres overlap; errc has the reading's
// error, or nil, once batches is closed.
func readBatches(ctx context.Context, src *sqlite.Store, table string, batch int) (<-chan [][]any, <-chan error) {
	batches := make(chan [][]any, 2)
	errc := make(chan error, 1)
	go func() {
		defer close(batches)
		var cursor sqlite.ExportCursor
		for {
			rows, next, err := src.ExportRows(ctx, table, cursor, batch)
			if err != nil || len(rows) == 0 {
				errc <- err
				return
			}
			select {
			case batches <- rows:
			case <-ctx.Done():
				errc <- ctx.Err()
				return
			}
			cursor = next
		}
	}()
	return batches, errc
}

func drain(batches <-chan [][]any) {
	for range batches {
	}
}

// copyProgress shows how far a copy is: on a terminal one line rewritten
// in place, elsewhere a line at every tenth of the rows.
type copyProgress struct {
	w       io.Writer
	tty     bool
	shown   bool
	lastTen int64
}

func newCopyProgress(w io.Writer) *copyProgress {
	p := &copyProgress{w: w, lastTen: -1}
	if f, ok := w.(*os.File); ok {
		info, err := f.Stat()
		p.tty = err == nil && info.Mode()&os.ModeCharDevice != 0
	}
	return p
}

func (p *copyProgress) update(table string, done, total int64) {
	pct := int64(100)
	if total > 0 {
		pct = done * 100 / total
	}
	line := fmt.Sprintf("toolpulse: copying %s: %d%% (%d of %d rows)", table, pct, done, total)
	if table == "rollups" {
		line = fmt.Sprintf("toolpulse: read %d rows; rebuilding the hourly rollups", done)
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r%-78s", line)
		p.shown = true
		return
	}
	if ten := pct / 10; ten > p.lastTen || table == "rollups" {
		p.lastTen = ten
		fmt.Fprintln(p.w, line)
	}
}

// done ends the rewritten line, if any.
func (p *copyProgress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r"+strings.Repeat(" ", 78)+"\r")
	}
}
