package results

import (
	"testing"
	"time"
)

// TestLocationLines: each location in one line, failing with its outcome
// and code, silent with when it last ran, passing (and a failure below
// its threshold said as such).
func TestLocationLines(t *testing.T) {
	at := time.Date(2026, 12, 3, 14, 2, 5, 0, time.UTC)
	got := LocationLines([]LocationView{
		{Location: "eu-west", Failing: true, Outcome: Unavailable, Code: CodeTimeout, LastRun: at},
		{Location: "us-east", Outcome: Pass, LastRun: at},
		{Location: "ap-south", Silent: true, Outcome: Pass, LastRun: at},
		{Location: "sa-east", Outcome: Unavailable, Code: CodeServerError, LastRun: at},
		{Location: "af-south", Silent: true},
	})
	want := "eu-west: failing, unavailable timeout\nus-east: passing\nap-south: silent since 2026-12-03 14:02:05Z\n" +
		"sa-east: passing (last run unavailable server_error)\naf-south: silent, never ran"
	if got != want {
		t.Errorf("LocationLines:\n%s\nwant\n%s", got, want)
	}
}
