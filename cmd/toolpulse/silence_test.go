package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// newSilenceRun is a CLI run whose database exists, as the daemon's does
// once it has started.
func newSilenceRun(t *testing.T) *cliRun {
	t.Helper()
	h := newCLIRun(t)
	store, err := sqlite.Open(context.Background(), filepath.Join(h.dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestSilenceNeedsTheDatabase: a silence given a database path where none
// exists (a forgotten --db) is refused with exit 66, and no database is
// made there: a silence in it would mute nothing.
func TestSilenceNeedsTheDatabase(t *testing.T) {
	h := newCLIRun(t)
	for _, args := range [][]string{
		{"silence", "add", "--probe", "search", "--for", "1h", "--reason", "x"},
		{"silence", "list"},
		{"silence", "expire", "1"},
	} {
		code, out, errOut := h.run(args...)
		if code != exitNoInput || out != "" || !strings.Contains(errOut, "no database at") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, no database", args, code, out, errOut, exitNoInput)
		}
	}
	if _, err := os.Stat(filepath.Join(h.dir, "results.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused silence commands made a database: %v", err)
	}
}

// TestSilenceCommands adds silences by probe and by label, lists them as a
// table and as JSON, expires one, and lists the expired one only with --all.
func TestSilenceCommands(t *testing.T) {
	h := newSilenceRun(t)
	code, out, errOut := h.run("silence", "add", "--probe", "search", "--probe", "tracker", "--for", "2h", "--reason", "provider maintenance")
	if code != exitOK || strings.TrimSpace(out) != "1" {
		t.Fatalf("silence add by probe: exit %d, stdout %q, stderr %q; want 0 and id 1", code, out, errOut)
	}
	code, out, errOut = h.run("silence", "add", "--label", "team=search", "--label", "env=prod", "--for", "30m", "--reason", "deploy")
	if code != exitOK || strings.TrimSpace(out) != "2" {
		t.Fatalf("silence add by label: exit %d, stdout %q, stderr %q; want 0 and id 2", code, out, errOut)
	}

	code, out, errOut = h.run("silence", "list")
	if code != exitOK {
		t.Fatalf("silence list: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"ID", "probe=search,tracker", "provider maintenance", "env=prod team=search", "deploy"} {
		if !strings.Contains(out, want) {
			t.Errorf("silence list: no %q in\n%s", want, out)
		}
	}

	if code, _, errOut := h.run("silence", "expire", "1"); code != exitOK {
		t.Fatalf("silence expire 1: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := h.run("silence", "expire", "1"); code != exitOK {
		t.Errorf("silence expire 1 again: exit %d, stderr %q; want 0 (nothing to do)", code, errOut)
	}
	ids := func(args ...string) (got []int64, expired map[int64]bool) {
		t.Helper()
		code, out, errOut := h.run(append([]string{"silence", "list", "--format", "json"}, args...)...)
		if code != exitOK {
			t.Fatalf("silence list %v: exit %d, stderr %q", args, code, errOut)
		}
		expired = map[int64]bool{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var row present.SilenceRow
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatalf("silence list --format json: %v\n%s", err, line)
			}
			got = append(got, row.ID)
			expired[row.ID] = row.ExpiredAt != nil
		}
		return got, expired
	}
	if got, _ := ids(); len(got) != 1 || got[0] != 2 {
		t.Errorf("active after expiring 1: got %v, want [2]", got)
	}
	if got, expired := ids("--all"); len(got) != 2 || !expired[1] || expired[2] {
		t.Errorf("--all after expiring 1: got %v, expired %v; want [1 2], only 1 expired", got, expired)
	}
}

// TestSilenceAddStart: --start plans a silence ahead, as an RFC 3339 time
// or a duration from now; it is listed from the moment it is added, and
// lasts --for from its start.
func TestSilenceAddStart(t *testing.T) {
	h := newSilenceRun(t)
	start := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	if code, _, errOut := h.run("silence", "add", "--probe", "search", "--start", start.Format(time.RFC3339), "--for", "2h", "--reason", "planned"); code != exitOK {
		t.Fatalf("silence add --start TIME: exit %d, stderr %q", code, errOut)
	}
	before := time.Now()
	if code, _, errOut := h.run("silence", "add", "--probe", "search", "--start", "45m", "--for", "30m", "--reason", "soon"); code != exitOK {
		t.Fatalf("silence add --start 45m: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut := h.run("silence", "list", "--format", "json")
	if code != exitOK {
		t.Fatalf("silence list: exit %d, stderr %q", code, errOut)
	}
	var rows []present.SilenceRow
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row present.SilenceRow
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%v\n%s", err, line)
		}
		rows = append(rows, row)
	}
	if len(rows) != 2 {
		t.Fatalf("silence list: %d silences, want the 2 planned ones:\n%s", len(rows), out)
	}
	parse := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(results.TimeLayout, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got, end := parse(rows[0].StartsAt), parse(rows[0].EndsAt); !got.Equal(start) || !end.Equal(start.Add(2*time.Hour)) {
		t.Errorf("--start %s --for 2h: starts %s, ends %s", start.Format(time.RFC3339), rows[0].StartsAt, rows[0].EndsAt)
	}
	if got := parse(rows[1].StartsAt).Sub(before); got < 45*time.Minute-time.Second || got > 45*time.Minute+time.Minute {
		t.Errorf("--start 45m: starts %s, %v after the command ran; want 45m", rows[1].StartsAt, got)
	}
}

// TestSilenceAddWarnsWhenNothingMatches: a label silence that matches no
// configured probe is added (a coming config may add such probes) with a
// warning, since a typo would otherwise mute nothing, silently; one that
// matches says nothing more than its id.
func TestSilenceAddWarnsWhenNothingMatches(t *testing.T) {
	h := newSilenceRun(t)
	code, out, errOut := h.run("silence", "add", "--label", "team=serach", "--for", "1h", "--reason", "x")
	if code != exitOK || strings.TrimSpace(out) != "1" || !strings.Contains(errOut, "warning: no probe of") || !strings.Contains(errOut, "team=serach") {
		t.Errorf("a silence matching nothing: exit %d, stdout %q, stderr %q; want 0, its id and a warning naming team=serach", code, out, errOut)
	}
	code, out, errOut = h.run("silence", "add", "--probe", "search", "--for", "1h", "--reason", "x")
	if code != exitOK || strings.TrimSpace(out) != "2" || errOut != "" {
		t.Errorf("a silence matching search: exit %d, stdout %q, stderr %q; want 0, its id, nothing on stderr", code, out, errOut)
	}
}

// TestSilenceUsageErrors: what cannot be a silence exits 64 with a message
// naming the flag, and nothing is added.
func TestSilenceUsageErrors(t *testing.T) {
	h := newSilenceRun(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing to match", []string{"silence", "add", "--for", "2h", "--reason", "x"}, "toolpulse: silence add: name what to silence with --probe NAME or --label KEY=VALUE\n"},
		{"close to a probe", []string{"silence", "add", "--probe", "serach", "--for", "2h", "--reason", "x"}, `toolpulse: unknown probe "serach" (did you mean "search"?)` + "\n"},
		{"label without a value", []string{"silence", "add", "--label", "team", "--for", "2h", "--reason", "x"}, "toolpulse: --label \"team\": want KEY=VALUE\n"},
		{"negative duration", []string{"silence", "add", "--probe", "search", "--for=-1h", "--reason", "x"}, "toolpulse: --for -1h0m0s: want a positive duration, such as 2h\n"},
		{"blank reason", []string{"silence", "add", "--probe", "search", "--for", "1h", "--reason", " "}, "toolpulse: --reason: must not be empty\n"},
		{"start not a time", []string{"silence", "add", "--probe", "search", "--start", "tomorrow", "--for", "1h", "--reason", "x"},
			"toolpulse: --start \"tomorrow\": want an RFC 3339 time such as 2026-12-03T02:00:00Z, or a duration from now such as 45m\n"},
		{"ended before now", []string{"silence", "add", "--probe", "search", "--start", "2020-01-01T00:00:00Z", "--for", "1h", "--reason", "x"},
			"toolpulse: --start 2020-01-01T00:00:00Z --for 1h0m0s: the silence would have ended at 2020-01-01T01:00:00.000Z, before now\n"},
		{"expire, not a number", []string{"silence", "expire", "abc"}, "toolpulse: silence expire \"abc\": want a silence id, a positive number\n"},
		{"expire, unknown id", []string{"silence", "expire", "7"}, "toolpulse: silence expire 7: no such silence (see toolpulse silence list --all)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := h.run(tt.args...)
			if code != exitUsage || errOut != tt.want || out != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want %d and %q", code, errOut, out, exitUsage, tt.want)
			}
		})
	}
	if code, out, errOut := h.run("silence", "add", "--probe", "search", "--reason", "x"); code != exitUsage || out != "" || !strings.Contains(errOut, "--for") {
		t.Errorf("without --for: exit %d, stdout %q, stderr %q; want %d naming --for", code, out, errOut, exitUsage)
	}
	if code, out, _ := h.run("silence", "list", "--all"); code != exitOK || out != "no silences\n" {
		t.Errorf("after refused adds: exit %d, list %q; want no silences", code, out)
	}
}

// TestAPISilences: GET /api/v1/silences lists the active silences, and
// with all=true the expired ones too.
func TestAPISilences(t *testing.T) {
	h := newSilenceRun(t)
	for _, args := range [][]string{
		{"silence", "add", "--probe", "search", "--for", "2h", "--reason", "maintenance"},
		{"silence", "add", "--label", "team=search", "--for", "1h", "--reason", "deploy"},
		{"silence", "expire", "2"},
	} {
		if code, _, errOut := h.run(args...); code != exitOK {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	srv, _ := storedServer(t, h)
	get := func(path string) (int, []present.SilenceRow) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Silences []present.SilenceRow `json:"silences"`
		}
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		return resp.StatusCode, body.Silences
	}
	if code, got := get("/api/v1/silences"); code != http.StatusOK || len(got) != 1 || got[0].ID != 1 ||
		got[0].Reason != "maintenance" || got[0].Matchers.Probes[0] != "search" {
		t.Errorf("GET /api/v1/silences: %d %+v, want 200 and silence 1 only", code, got)
	}
	if code, got := get("/api/v1/silences?all=true"); code != http.StatusOK || len(got) != 2 || got[1].ExpiredAt == nil {
		t.Errorf("GET /api/v1/silences?all=true: %d %+v, want 200 and both, 2 expired", code, got)
	}
	if code, _ := get("/api/v1/silences?all=maybe"); code != http.StatusBadRequest {
		t.Errorf("GET /api/v1/silences?all=maybe: %d, want 400", code)
	}

	// The status page names the active silence, not the expired one.
	for _, path := range []string{"/", "/probes/search"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page := string(body)
		if !strings.Contains(page, "silence 1: <code>probe=search</code>") || !strings.Contains(page, "maintenance") {
			t.Errorf("GET %s does not show silence 1:\n%s", path, page)
		}
		if strings.Contains(page, "deploy") {
			t.Errorf("GET %s shows the expired silence 2", path)
		}
	}
}

// TestSilenceListMaintenance: the table of silence list adds the config's
// maintenance windows, each on or off with its next instant; the JSON
// lines stay silences only.
func TestSilenceListMaintenance(t *testing.T) {
	h := newSilenceRun(t)
	cfg := testConfig + `maintenance:
  - probes: [tracker]
    start: "00:00"
    duration: 24h
  - probes: [search]
    every: [Sun]
    start: "02:00"
    duration: 1m
    timezone: Europe/Berlin
`
	if err := os.WriteFile(filepath.Join(h.dir, "checks.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := h.run("silence", "list")
	if code != exitOK {
		t.Fatalf("silence list: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"no silences", "MAINTENANCE", "maintenance[0]", "probe=tracker", "every day 00:00 UTC for 24h", "on until ",
		"maintenance[1]", "probe=search", "Sun 02:00 Europe/Berlin for 1m", "off, next from "} {
		if !strings.Contains(out, want) {
			t.Errorf("silence list: no %q in\n%s", want, out)
		}
	}
	code, out, _ = h.run("silence", "list", "--format", "json")
	if code != exitOK || strings.TrimSpace(out) != "" {
		t.Errorf("silence list --format json: exit %d, %q; want no lines: windows are not silences", code, out)
	}
}
