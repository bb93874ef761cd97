package slack

import (
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

// flapping is the alert of a probe whose verdict changed too often
// (SPEC §13), made on the run that tipped it: a failure here.
func flapping() results.Alert {
	a := firingUnavailable()
	a.Kind = results.AlertFlapping
	return a
}

// TestRenderFlapping: the flapping alert says what happens and what comes
// next, in its fallback and its blocks.
func TestRenderFlapping(t *testing.T) {
	m := Render(flapping())
	want := ":repeat: tracker flapping: quiet until it settles; this run: unavailable (connection_refused): dial tcp 127.0.0.1:9: connect: connection refused"
	if m.Text != want {
		t.Errorf("fallback text\ngot:  %s\nwant: %s", m.Text, want)
	}
	checkLimits(t, m)
	golden(t, "flapping", payload(t, m))
	all := strings.Join(texts(t, m), "\n")
	for _, w := range []string{"tracker flapping: failing and passing by turns", "notify.flapping",
		"settled failing or passing", "connection_refused"} {
		if !strings.Contains(all, w) {
			t.Errorf("message lacks %q\n%s", w, all)
		}
	}
}
