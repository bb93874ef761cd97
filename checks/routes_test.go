package checks

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLoadRoutes(t *testing.T) {
	cfg, err := Load("testdata/valid-routes.yaml", noEnv)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := cfg.Server.PublicURL, "https://toolpulse.example.com"; got != want {
		t.Errorf("PublicURL = %q, want %q (trailing slash dropped)", got, want)
	}
	// The top-level policy, written after routes, is what routes start from.
	top := Notify{On: DefaultNotifyOn, FailureThreshold: 2, RepeatInterval: 2 * time.Hour,
		SendResolved: true, UpdateOnCodeChange: true,
		Grouping: Grouping{GroupWait: DefaultGroupWait, GroupInterval: DefaultGroupInterval}}

	tests := []struct {
		probe     string
		name      string
		receivers []string
		policy    func(n *Notify)
	}{
		{probe: "search", name: "routes[0]", receivers: []string{"routes[0]/slack"}, policy: func(n *Notify) {
			n.On = []string{"contract_error", "shape_drift"}
			n.RepeatInterval = 30 * time.Minute
		}},
		// One label of two is not a match: every listed label must equal.
		{probe: "research", name: "default", receivers: []string{"default/slack"}, policy: func(*Notify) {}},
		{probe: "research_gold", name: "routes[1]", receivers: []string{"routes[1]/alertmanager"}, policy: func(n *Notify) {
			n.FailureThreshold = 4
		}},
		{probe: "pay", name: "routes[2]", receivers: []string{"routes[2]/slack", "routes[2]/webhook"}, policy: func(n *Notify) {
			n.SendResolved = false
			n.UpdateOnCodeChange = false
		}},
		{probe: "other", name: "default", receivers: []string{"default/slack"}, policy: func(*Notify) {}},
	}
	for _, tt := range tests {
		t.Run(tt.probe, func(t *testing.T) {
			r := cfg.RouteFor(cfg.Probe(tt.probe))
			if r.Name != tt.name {
				t.Errorf("route = %s, want %s", r.Name, tt.name)
			}
			if got := r.Receivers(); !slices.Equal(got, tt.receivers) {
				t.Errorf("receivers = %v, want %v", got, tt.receivers)
			}
			want := top
			want.On = slices.Clone(top.On)
			tt.policy(&want)
			if !reflect.DeepEqual(r.Notify, want) {
				t.Errorf("policy = %+v, want %+v", r.Notify, want)
			}
		})
	}

	r := cfg.Notify.Routes
	if got, want := r[1].Alertmanager.URL.Reveal(), "http://am:am-pass-77@127.0.0.1:9093"; got != want {
		t.Errorf("alertmanager url = %q, want %q", got, want)
	}
	if got := r[2].Webhook; got.URL.Reveal() != "https://hooks.example.com/toolpulse" || got.Secret.Reveal() != "hook-secret-42" {
		t.Errorf("webhook = %q %q", got.URL.Reveal(), got.Secret.Reveal())
	}
	if got := r[2].Slack; got.Token.Reveal() != "xoxb-payments-1" || got.Channel != "#payments" {
		t.Errorf("slack = %+v", got)
	}
	if got := routeNames(cfg.Notify.AllRoutes()); !slices.Equal(got, []string{"routes[0]", "routes[1]", "routes[2]", "default"}) {
		t.Errorf("AllRoutes = %v", got)
	}
}

func routeNames(routes []Route) []string {
	var out []string
	for _, r := range routes {
		out = append(out, r.Name)
	}
	return out
}

// TestRoutesHideSecrets: every receiver secret is known to the redactor and
// none shows when the config is printed.
func TestRoutesHideSecrets(t *testing.T) {
	cfg, err := Load("testdata/valid-routes.yaml", noEnv)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	secrets := []string{"SEARCHSECRET", "am-pass-77", "hook-secret-42", "xoxb-payments-1", "hooks.example.com/toolpulse"}
	known := strings.Join(cfg.Secrets(), "\n")
	printed := fmt.Sprintf("%v %+v %#v", cfg.Notify, cfg.Notify, cfg.Notify)
	for _, s := range secrets {
		if !strings.Contains(known, s) {
			t.Errorf("Secrets() lacks %q", s)
		}
		if strings.Contains(printed, s) {
			t.Errorf("printed config shows %q", s)
		}
	}
	if strings.Contains(known, "127.0.0.1:9093") {
		t.Errorf("Secrets() holds the whole Alertmanager URL; only its password is secret")
	}
}

func TestRouteMatches(t *testing.T) {
	r := Route{Match: map[string]string{"team": "search", "tier": "gold"}}
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
		match  map[string]string
	}{
		{"all equal", map[string]string{"team": "search", "tier": "gold"}, true, nil},
		{"extra labels", map[string]string{"team": "search", "tier": "gold", "env": "prod"}, true, nil},
		{"one missing", map[string]string{"team": "search"}, false, nil},
		{"one differs", map[string]string{"team": "search", "tier": "silver"}, false, nil},
		{"empty value is not absent", map[string]string{"team": "search", "tier": ""}, false, nil},
		{"no labels", nil, false, nil},
		{"an empty value needs the label", nil, false, map[string]string{"team": ""}},
		{"an empty value matches an empty label", map[string]string{"team": ""}, true, map[string]string{"team": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := r
			if tt.match != nil {
				r.Match = tt.match
			}
			if got := r.Matches(tt.labels); got != tt.want {
				t.Errorf("Matches(%v) = %v, want %v", tt.labels, got, tt.want)
			}
		})
	}
}
