package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/longmessage"
)

// TestTablesKeepTheObservation: the check and history tables shorten a
// long message by its rule text and middle, never by what was observed.
func TestTablesKeepTheObservation(t *testing.T) {
	all := longmessage.Results(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	var check, history bytes.Buffer
	if err := printTable(&check, all); err != nil {
		t.Fatal(err)
	}
	if err := writeHistoryTable(&history, all, true, false); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"check": check.String(), "history --attempts": history.String()} {
		for _, want := range longmessage.Kept {
			if !strings.Contains(out, want) {
				t.Errorf("the %s table lacks %q:\n%s", name, want, out)
			}
		}
		if strings.Contains(out, "vars.refund_id") {
			t.Errorf("the %s table shows the whole rule, it is longer than a row:\n%s", name, out)
		}
	}
	// The attempt row shows the server's words too.
	if n := strings.Count(history.String(), `[\"location\"]`); n != 2 {
		t.Errorf("history --attempts names the argument %d times, want the run's row and its attempt's:\n%s", n, history.String())
	}
}
