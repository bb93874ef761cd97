package e2e

import (
	"strings"
	"syscall"
	"testing"

	"github.com/toolpulse/toolpulse/internal/harness"
	"github.com/toolpulse/toolpulse/internal/testkit"
)

// TestDaemon starts the real binary, waits for it, stops it with SIGTERM
// and finds it exited 0, with its log captured and no goroutine of the
// daemon's left in the test.
func TestDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs toolpulse")
	}
	Binary(t)
	slack, url := Slack(t) // its server outlives the check below
	check := testkit.NoLeaks(t)
	cfg := harness.Fast("http://"+FreeAddr(t), url, "gone")
	d := Start(t, Config(t, t.TempDir(), cfg))
	d.WaitFor("the alert about the unreachable probe", func() bool { return slack.Count("gone unavailable") >= 1 })
	if err := d.Stop(syscall.SIGTERM); err != nil {
		d.T.Errorf("SIGTERM: %v, want exit 0", err)
	}
	if log := d.Log.String(); !strings.Contains(log, "toolpulse started") || !strings.Contains(log, "toolpulse stopped") {
		d.T.Errorf("the log lacks the start and the stop")
	}
	check()
}
