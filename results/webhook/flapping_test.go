package webhook

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// TestBodyFlapping pins the body of a flapping alert (SPEC §13): kind
// "flapping", the run that tipped it, and started_at the start of the
// failure it was in, or the alert's own time while passing.
func TestBodyFlapping(t *testing.T) {
	n, err := New(Config{URL: "https://hooks.example.com" + hookPath, Secret: secret, BaseURL: "https://toolpulse.example.com/"})
	if err != nil {
		t.Fatal(err)
	}
	a := firing()
	a.Kind = results.AlertFlapping
	body, err := n.Body(a)
	if err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, body, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	indented.WriteByte('\n')
	testkit.Golden(t, filepath.Join("testdata", "flapping.golden"), indented.Bytes())

	passing := resolved()
	passing.Kind, passing.FailingSince = results.AlertFlapping, time.Time{}
	if p := n.Payload(passing); p.Kind != results.AlertFlapping || !p.StartedAt.Equal(passing.CreatedAt) {
		t.Errorf("flapping while passing: kind %s, started_at %v; want flapping, %v", p.Kind, p.StartedAt, passing.CreatedAt)
	}
}
