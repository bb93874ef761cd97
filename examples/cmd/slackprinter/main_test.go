package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/slack"
)

// TestWebhookURL: a message toolpulse renders for Slack, posted to the
// address this command says it listens on, is printed, wrapped to -width,
// and answered "ok", as Slack answers.
func TestWebhookURL(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-brief", "-width", "80"}, &out, &errOut, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run ended before serving: %v\n%s", err, errOut.String())
	case <-time.After(10 * time.Second):
		t.Fatal("slackprinter did not start")
	}
	url := "http://" + addr + "/"
	if !strings.Contains(errOut.String(), url) {
		t.Errorf("it does not say where it listens: %q", errOut.String())
	}
	msg, err := json.Marshal(slack.Render(results.Alert{Kind: results.AlertFiring, Probe: "tracker_runs",
		Outcome: results.Unavailable, Code: "connection_refused", Message: "connection refused", Attempts: 3}))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	var body [8]byte
	n, _ := resp.Body.Read(body[:])
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body[:n]) != "ok" {
		t.Errorf("answer %d %q, want 200 \"ok\"", resp.StatusCode, body[:n])
	}
	if want := "┌─ Slack message 1 ─ :large_orange_circle: tracker_runs unavailable\n│ (connection_refused): connection refused\n└─\n"; out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if utf8.RuneCountInString(line) > 80 {
			t.Errorf("line wider than -width 80: %s", line)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("slackprinter did not stop")
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
