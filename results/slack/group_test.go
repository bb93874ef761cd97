package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// searchGroup is a group of n failing probes of provider=search, the
// first `resolved` of them resolved instead, one of the failing ones an
// update and one a reminder.
func searchGroup(n, resolvedN int) results.AlertGroup {
	g := results.AlertGroup{Key: `default/slack{provider="search"}`, Labels: map[string]string{"provider": "search"}}
	for i := range n {
		a := firingServerError()
		a.Probe = fmt.Sprintf("search_%02d", i)
		a.CreatedAt = created.Add(time.Duration(i) * time.Second)
		switch {
		case i < resolvedN:
			a = resolved()
			a.Probe = fmt.Sprintf("search_%02d", i)
		case i == resolvedN:
			a = update()
			a.Probe = fmt.Sprintf("search_%02d", i)
		case i == resolvedN+1:
			a = reminder()
			a.Probe = fmt.Sprintf("search_%02d", i)
		}
		g.Alerts = append(g.Alerts, a)
	}
	return g
}

// TestRenderGroupGolden pins the grouped message's layout.
func TestRenderGroupGolden(t *testing.T) {
	tests := []struct {
		name  string
		group results.AlertGroup
		title string
	}{
		{"group_failing", searchGroup(5, 0), ":red_circle: 5 probes of provider=search failing"},
		{"group_mixed", searchGroup(5, 2), ":red_circle: 3 probes of provider=search failing, 2 resolved"},
		{"group_resolved", searchGroup(2, 2), ":large_green_circle: 2 probes of provider=search resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := RenderGroup(tt.group)
			if !strings.HasPrefix(m.Text, tt.title+": ") {
				t.Errorf("fallback %q, want it to start with %q", m.Text, tt.title)
			}
			checkLimits(t, m)
			golden(t, tt.name, payload(t, m))
		})
	}
}

// TestRenderGroupSays: every probe of a group is named with its outcome
// and code, resolved ones struck through, within Slack's limits; a list
// longer than a screen says how many it left out; a group of one is the
// alert's own message.
func TestRenderGroupSays(t *testing.T) {
	m := RenderGroup(searchGroup(20, 3))
	text := string(payload(t, m))
	for i := 3; i < 20; i++ {
		if !strings.Contains(text, fmt.Sprintf("`search_%02d`", i)) {
			t.Errorf("failing probe search_%02d not listed", i)
		}
	}
	for i := range 3 {
		if !strings.Contains(text, fmt.Sprintf("~`search_%02d`~ passing again", i)) {
			t.Errorf("resolved probe search_%02d not struck through", i)
		}
	}
	for _, want := range []string{"unavailable (`server_error`), HTTP 503", "17 probes of provider=search failing, 3 resolved", "was contract_error (unsupported_results_container)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the message lacks %q:\n%s", want, text)
		}
	}

	big := RenderGroup(searchGroup(500, 100))
	checkLimits(t, big)
	if len(big.Blocks) > maxBlocks {
		t.Errorf("%d blocks, Slack allows %d", len(big.Blocks), maxBlocks)
	}
	text = string(payload(t, big))
	for _, want := range []string{"_…and 370 more_", "_…and 70 more_", "400 probes of provider=search failing, 100 resolved"} {
		if !strings.Contains(text, want) {
			t.Errorf("a long group's message lacks %q", want)
		}
	}
	if strings.Contains(text, "`search_499`") {
		t.Errorf("a long group's message lists every probe; want the first %d", maxGroupLines)
	}

	one := searchGroup(1, 0)
	if got, want := string(payload(t, RenderGroup(one))), string(payload(t, Render(one.Alerts[0]))); got != want {
		t.Errorf("a group of one:\n%s\nwant the alert's own message:\n%s", got, want)
	}
}

// TestSendGroupPostsOnce: SendGroup makes one post for the whole group,
// scrubbed of secrets like Send's.
func TestSendGroupPostsOnce(t *testing.T) {
	secret := "tok3n-S3CRET-value"
	srv, got := slackServer(t, respond(200, "ok"))
	n, err := New(Config{WebhookURL: srv.URL + webhookPath, Redactor: results.NewRedactor(secret)})
	if err != nil {
		t.Fatal(err)
	}
	g := searchGroup(20, 0)
	g.Alerts[7].Probe = "search_" + secret
	if _, _, err := n.SendGroup(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if !strings.Contains(string(r.body), "20 probes of provider=search failing") {
		t.Errorf("posted %s, want the group's message", r.body)
	}
	if strings.Contains(string(r.body), secret) {
		t.Errorf("the grouped message contains the secret:\n%s", r.body)
	}
	select {
	case extra := <-got:
		t.Errorf("a second post for one group: %s", extra.body)
	default:
	}
}
