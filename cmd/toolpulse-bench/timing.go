package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// sample runs f once untimed, then repeat times, and returns how long each
// timed run took. The untimed run pays for what only a first run pays
// for: cold caches, and a migration on the first open of a database.
func sample(ctx context.Context, repeat int, f func(context.Context) error) ([]time.Duration, error) {
	if err := f(ctx); err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, repeat)
	for range repeat {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := f(ctx); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// newTiming sums up the durations of a measurement.
func newTiming(name, kind string, ds []time.Duration, note string) timing {
	t := timing{Name: name, Kind: kind, Runs: len(ds), Note: note}
	if len(ds) == 0 {
		return t
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		median = (sorted[len(sorted)/2-1] + median) / 2
	}
	lo, mid, hi := ms(sorted[0]), ms(median), ms(sorted[len(sorted)-1])
	t.MinMS, t.MedianMS, t.MaxMS = &lo, &mid, &hi
	return t
}

// processTimings times `toolpulse stats` and `toolpulse history` on db, each
// a process of its own as a user runs them, and `toolpulse stats` on an
// empty database: what starting a process and opening a store costs
// whatever the data.
func processTimings(ctx context.Context, bin, db, tmp, probe string, repeat int, prog *progress) ([]timing, error) {
	empty := filepath.Join(tmp, "empty.db")
	if err := createSchema(ctx, empty); err != nil {
		return nil, err
	}
	cases := []struct {
		name string
		args []string
	}{
		{"toolpulse stats --since 24h --format json", []string{"--db", db, "stats", "--since", "24h", "--format", "json"}},
		{"toolpulse history --probe " + probe + " --limit 100 --format json",
			[]string{"--db", db, "history", "--probe", probe, "--limit", "100", "--format", "json"}},
		{"toolpulse stats on an empty database (start-up)", []string{"--db", empty, "stats", "--since", "24h", "--format", "json"}},
	}
	var out []timing
	for _, c := range cases {
		prog.printf("timing %s", c.name)
		var lines int
		ds, err := sample(ctx, repeat, func(ctx context.Context) error {
			stdout, err := runToolpulse(ctx, bin, c.args...)
			lines = bytes.Count(stdout, []byte("\n"))
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, newTiming(c.name, "process", ds, fmt.Sprintf("%s lines out", commas(int64(lines)))))
	}
	return out, nil
}

// runToolpulse runs toolpulse with args and returns what it printed on
// stdout; it fails unless toolpulse exits 0.
func runToolpulse(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("toolpulse %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// inProcessTimings times the store calls behind `toolpulse stats --since
// 24h` and `toolpulse history --probe P --limit 100`, without a process to
// start, a store to open or output to format.
func inProcessTimings(ctx context.Context, db, probe string, repeat int, prog *progress) ([]timing, error) {
	store, err := sqlite.Open(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("open the store in process: %w", err)
	}
	defer store.Close()
	return storeTimings(ctx, store, probe, repeat, prog)
}

// readStore is what storeTimings calls, on either store.
type readStore interface {
	Stats(ctx context.Context, since, until time.Time, locations ...string) ([]results.ProbeStats, error)
	History(ctx context.Context, q results.HistoryQuery) ([]results.Result, error)
}

// storeTimings times Store.Stats over the last 24 hours and Store.History
// of one probe, limit 100, on an open store.
func storeTimings(ctx context.Context, store readStore, probe string, repeat int, prog *progress) ([]timing, error) {
	var out []timing
	prog.printf("timing Store.Stats in process")
	var probes int
	ds, err := sample(ctx, repeat, func(ctx context.Context) error {
		now := time.Now()
		st, err := store.Stats(ctx, now.Add(-24*time.Hour), now)
		probes = len(st)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("Store.Stats: %w", err)
	}
	out = append(out, newTiming("Store.Stats, last 24h", "in-process", ds, fmt.Sprintf("%s probes", commas(int64(probes)))))

	prog.printf("timing Store.History in process")
	var rows int
	ds, err = sample(ctx, repeat, func(ctx context.Context) error {
		rs, err := store.History(ctx, results.HistoryQuery{Probes: []string{probe}, Limit: 100})
		rows = len(rs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("Store.History: %w", err)
	}
	out = append(out, newTiming("Store.History, "+probe+", limit 100", "in-process", ds, fmt.Sprintf("%s results", commas(int64(rows)))))
	return out, nil
}
