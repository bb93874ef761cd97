package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results/sqlite"
)

// TestBaselineReset: `baseline reset --probe NAME` empties the probe's
// stored profile and says what happens next; a missing database exits 66,
// a misspelt probe 64 with a suggestion, a missing --probe 64.
func TestBaselineReset(t *testing.T) {
	h := newCLIRun(t)
	code, _, errOut := h.run("baseline", "reset", "--probe", "search")
	if code != exitNoInput || !strings.Contains(errOut, "no database at") {
		t.Errorf("reset before any run: exit %d, stderr %q; want %d and no database", code, errOut, exitNoInput)
	}
	if code, _, errOut := h.run("check", "--probe", "search"); code != exitOK {
		t.Fatalf("check: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = h.run("baseline", "reset", "--probe", "serach")
	if want := `toolpulse: unknown probe "serach" (did you mean "search"?)` + "\n"; code != exitUsage || errOut != want {
		t.Errorf("misspelt probe: exit %d, stderr %q; want %d, %q", code, errOut, exitUsage, want)
	}
	if code, _, _ := h.run("baseline", "reset"); code != exitUsage {
		t.Errorf("no --probe: exit %d, want %d", code, exitUsage)
	}
	code, out, errOut := h.run("baseline", "reset", "--probe", "search")
	if code != exitOK || !strings.HasPrefix(out, "reset the shape baseline of search: its next 5 answers learn a new one") {
		t.Fatalf("reset: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	store, err := sqlite.Open(context.Background(), filepath.Join(h.dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sp, found, err := store.ShapeProfile(context.Background(), "search")
	if err != nil || !found || sp.ResetAt.IsZero() || sp.Data != "" {
		t.Errorf("stored profile after the reset: %+v, found %v, %v; want an empty profile with its reset time", sp, found, err)
	}
}
