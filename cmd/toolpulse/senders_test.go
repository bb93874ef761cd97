package main

import (
	"maps"
	"slices"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results/alertmanager"
	"github.com/toolpulse/toolpulse/results/slack"
	"github.com/toolpulse/toolpulse/results/webhook"
)

func sendersConfig(amURL string, routes int) *checks.Config {
	cfg := &checks.Config{Notify: checks.Notify{Slack: checks.Slack{WebhookURL: "http://127.0.0.1:9/default"}}}
	all := []checks.Route{
		{Name: "routes[0]", Match: map[string]string{"team": "research"}, Alertmanager: checks.Alertmanager{URL: checks.Secret(amURL)}},
		{Name: "routes[1]", Match: map[string]string{"team": "payments"},
			Webhook: checks.Webhook{URL: "http://127.0.0.1:9/hook", Secret: "s"},
			Slack:   checks.Slack{WebhookURL: "http://127.0.0.1:9/payments"}},
	}
	cfg.Notify.Routes = all[:routes]
	return cfg
}

// TestSendersPerReceiver: one receiver of the right kind per receiver key,
// and a reload keeps every receiver it leaves as it was (the Alertmanager
// receiver remembers what it re-posts), builds the changed ones again and
// drops the removed ones.
func TestSendersPerReceiver(t *testing.T) {
	build := newSenders(nil)
	first, err := build(sendersConfig("http://127.0.0.1:9093", 2))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(first)), []string{"default/slack", "routes[0]/alertmanager", "routes[1]/slack", "routes[1]/webhook"}; !slices.Equal(got, want) {
		t.Fatalf("receivers %v, want %v", got, want)
	}
	_, okAM := first["routes[0]/alertmanager"].(*alertmanager.Notifier)
	_, okHook := first["routes[1]/webhook"].(*webhook.Notifier)
	_, okSlack := first["routes[1]/slack"].(*slack.Notifier)
	if !okAM || !okHook || !okSlack {
		t.Errorf("receiver kinds: alertmanager %v, webhook %v, slack %v; want each of its kind", okAM, okHook, okSlack)
	}

	same, err := build(sendersConfig("http://127.0.0.1:9093", 2))
	if err != nil {
		t.Fatal(err)
	}
	for key, s := range first {
		if same[key] != s {
			t.Errorf("an unchanged reload rebuilt %s", key)
		}
	}
	moved, err := build(sendersConfig("http://127.0.0.1:9094", 2))
	if err != nil {
		t.Fatal(err)
	}
	if moved["routes[0]/alertmanager"] == first["routes[0]/alertmanager"] {
		t.Errorf("a new Alertmanager URL kept the old receiver")
	}
	if moved["default/slack"] != first["default/slack"] {
		t.Errorf("the unchanged default Slack was rebuilt")
	}
	// Removing a route removes its secrets too: every receiver's redactor
	// changes, so every receiver is new.
	moved, err = build(sendersConfig("http://127.0.0.1:9094", 1))
	if err != nil {
		t.Fatal(err)
	}
	if moved["default/slack"] == first["default/slack"] {
		t.Errorf("a receiver kept its redactor after the config's secrets changed")
	}
	if _, ok := moved["routes[1]/webhook"]; ok || len(moved) != 2 {
		t.Errorf("after removing a route: receivers %v, want default/slack and routes[0]/alertmanager", slices.Sorted(maps.Keys(moved)))
	}
}
