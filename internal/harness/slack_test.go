package harness

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func message(text string) string {
	return fmt.Sprintf(`{"text": %q, "blocks": [{"type": "context", "elements": [{"type": "mrkdwn", "text": "operation `+"`%s`"+`"}]}]}`,
		text, "0190d8a4-7c1e-7b3a-9f00-2b6c1d5e8a41")
}

// TestSlackAnswers: the rules a post is answered by, in their order, and
// what is recorded of each post.
func TestSlackAnswers(t *testing.T) {
	s := &Slack{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	firing := message(":red_circle: search contract_error (unsupported_results_container): results is map")

	s.Script(RateLimited("1"), Fail(http.StatusInternalServerError, "internal_error"))
	for i, want := range []struct {
		body   string
		status int
		reply  string
	}{
		{`not json`, 400, "invalid_payload"},
		{`{"blocks": []}`, 400, "invalid_payload"},
		{firing, 429, "rate_limited"},
		{firing, 500, "internal_error"},
		{firing, 200, "ok"},
	} {
		if status, reply := post(t, srv.URL+"/services/T/B/x", want.body); status != want.status || reply != want.reply {
			t.Errorf("post %d: %d %q, want %d %q", i+1, status, reply, want.status, want.reply)
		}
	}
	s.SetDown(true)
	if status, _ := post(t, srv.URL, firing); status != 500 {
		t.Errorf("down: %d, want 500", status)
	}
	s.SetDown(false)
	s.FailEvery(2, Fail(http.StatusNotFound, "no_service"))
	for i, want := range []int{200, 404, 200, 404} { // posts 7 to 10
		if status, _ := post(t, srv.URL, message(":large_green_circle: search resolved: passing again")); status != want {
			t.Errorf("post %d with FailEvery(2): %d, want %d", i+7, status, want)
		}
	}

	msgs := s.Messages()
	if len(msgs) != 10 {
		t.Fatalf("%d messages recorded, want all 10 posts", len(msgs))
	}
	m := msgs[4]
	if !m.Accepted || m.Probe != "search" || m.Kind != results.AlertFiring || m.OperationID != "0190d8a4-7c1e-7b3a-9f00-2b6c1d5e8a41" ||
		!strings.Contains(string(m.Blocks), "context") || string(m.Body) != firing || m.At.IsZero() {
		t.Errorf("the accepted firing post was recorded as %+v", m)
	}
	if got := s.Count("search contract_error"); got != 1 {
		t.Errorf("Count = %d, want 1: only accepted posts count", got)
	}
	if got := s.CountPrefix(":large_green_circle: search resolved"); got != 2 {
		t.Errorf("CountPrefix = %d, want 2", got)
	}
	if got := s.CountPrefix("search"); got != 0 {
		t.Errorf("CountPrefix matched inside the text: %d", got)
	}
	if got := s.Refused(); got != 7 {
		t.Errorf("Refused = %d, want 7: the invalid, scripted, down and FailEvery posts", got)
	}
	want := map[results.AlertKind]int{KindInvalid: 2, results.AlertFiring: 4, results.AlertResolved: 4}
	if got := s.Kinds(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Kinds = %v, want %v", got, want)
	}
	if at := s.FirstSince("search", results.AlertFiring, msgs[3].At); !at.Equal(msgs[3].At) {
		t.Errorf("FirstSince = %v, want the 4th post's %v", at, msgs[3].At)
	}
	if at := s.FirstSince("search", results.AlertFiring, time.Now()); !at.IsZero() {
		t.Errorf("FirstSince now = %v, want none", at)
	}
}

// TestSlackConcurrent: posts from many goroutines are all recorded (and
// -race sees no race between posting and reading).
func TestSlackConcurrent(t *testing.T) {
	s := &Slack{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			post(t, srv.URL, message(fmt.Sprintf(":red_circle: p%d unavailable", i)))
			s.Count("p")
		})
	}
	wg.Wait()
	if got := s.Count("unavailable"); got != 20 {
		t.Errorf("%d of 20 concurrent posts recorded", got)
	}
}

func TestMessageKind(t *testing.T) {
	for text, want := range map[string]struct {
		probe string
		kind  results.AlertKind
	}{
		":red_circle: probe-0001 contract_error (unsupported_results_container): results is map": {"probe-0001", results.AlertFiring},
		":large_orange_circle: probe-0002 unavailable (server_error): HTTP 503":                  {"probe-0002", results.AlertFiring},
		":red_circle: probe-0003 still failing after 1h5m: contract_error (rule_error): x":       {"probe-0003", results.AlertReminder},
		":large_green_circle: probe-0004 resolved: passing again after failing for 12m30s":       {"probe-0004", results.AlertResolved},
		":warning: probe-0005 response shape changed (a → b): results: x -> y; this run: pass":   {"probe-0005", results.AlertDrift},
		"nonsense": {"", KindInvalid},
	} {
		probe, kind := MessageKind(text)
		if probe != want.probe || kind != want.kind {
			t.Errorf("%q: %s %s, want %s %s", text, probe, kind, want.probe, want.kind)
		}
	}
}

// TestListen: the loopback server serves until Close, which leaves no
// goroutine behind.
func TestListen(t *testing.T) {
	check := testkit.NoLeaks(t)
	s := &Slack{}
	srv, err := Listen(s)
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := post(t, srv.URL+"/services/bench", message(":red_circle: a unavailable")); status != 200 {
		t.Errorf("status %d", status)
	}
	if err := srv.Close(); err != nil {
		t.Error(err)
	}
	http.DefaultClient.CloseIdleConnections()
	check()
	if _, err := http.Post(srv.URL, "application/json", strings.NewReader("{}")); err == nil {
		t.Error("the server still answers after Close")
	}
}
