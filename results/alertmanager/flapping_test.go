package alertmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// TestPostsFlapping: a flapping alert replaces the probe's firing alert
// (ended in the same post) under its own alertname, stays active, and is
// ended by the firing alert of a probe that settled failing, or by the
// resolved alert of one that settled passing.
func TestPostsFlapping(t *testing.T) {
	for _, settle := range []results.Alert{firing(), resolved()} {
		t.Run(string(settle.Kind), func(t *testing.T) {
			srv, got := fakeAM(t, respond(200, ""))
			now := t0
			n, err := New(Config{URL: srv.URL, BaseURL: "https://toolpulse.example.com", Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			flapping := firing()
			flapping.Kind, flapping.CreatedAt = results.AlertFlapping, t0.Add(3*time.Minute)
			var posts [][]postable
			var at []time.Time
			for _, a := range []results.Alert{firing(), flapping, settle} {
				now = now.Add(time.Minute)
				if _, _, err := n.Send(context.Background(), a); err != nil {
					t.Fatalf("%s: %v", a.Kind, err)
				}
				body := <-got
				at = append(at, now)
				posts = append(posts, decode(t, body))
				if a.Kind == results.AlertFlapping && settle.Kind == results.AlertResolved {
					var indented bytes.Buffer
					if err := json.Indent(&indented, body, "", "  "); err != nil {
						t.Fatal(err)
					}
					indented.WriteByte('\n')
					testkit.Golden(t, filepath.Join("testdata", "flapping.golden"), indented.Bytes())
				}
			}
			flap := posts[1]
			if len(flap) != 2 || flap[0].Labels["alertname"] != AlertNameFlapping || !flap[0].EndsAt.After(at[1]) ||
				flap[1].Labels["alertname"] != AlertNameFailing || !flap[1].EndsAt.Equal(at[1]) {
				t.Errorf("flapping post %+v, want the flapping alert active and the firing one ended", flap)
			}
			end := posts[2]
			ended := end[len(end)-1]
			if ended.Labels["alertname"] != AlertNameFlapping || !ended.EndsAt.Equal(at[2]) {
				t.Errorf("%s post %+v, want the flapping alert ended", settle.Kind, end)
			}
			_, active := n.active[settle.Probe]
			if active != (settle.Kind == results.AlertFiring) {
				t.Errorf("after %s: active %v", settle.Kind, n.active)
			}
		})
	}
}
