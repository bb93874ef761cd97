package checks

import (
	"reflect"
	"testing"
	"time"
)

// TestLoadGrouping: notify's grouping keys are every route's defaults, and
// a route overrides each on its own; group_by: [] turns grouping off.
func TestLoadGrouping(t *testing.T) {
	src := `version: 1
notify:
  slack: {webhook_url: "http://127.0.0.1:9/hook"}
  group_by: [provider]
  group_wait: 10s
  routes:
    - match: {team: search}
      webhook: {url: "http://127.0.0.1:9/hook", secret: s3cret}
      group_by: [provider, region]
      group_interval: 1m
    - match: {team: pay}
      webhook: {url: "http://127.0.0.1:9/hook", secret: s3cret}
      group_by: []
    - match: {team: mail}
      webhook: {url: "http://127.0.0.1:9/hook", secret: s3cret}
`
	cfg, err := Parse("checks.yaml", []byte(src), "conf", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		route string
		want  Grouping
	}{
		{"routes[0]", Grouping{GroupBy: []string{"provider", "region"}, GroupWait: 10 * time.Second, GroupInterval: time.Minute}},
		{"routes[1]", Grouping{GroupBy: []string{}, GroupWait: 10 * time.Second, GroupInterval: DefaultGroupInterval}},
		{"routes[2]", Grouping{GroupBy: []string{"provider"}, GroupWait: 10 * time.Second, GroupInterval: DefaultGroupInterval}},
		{"default", Grouping{GroupBy: []string{"provider"}, GroupWait: 10 * time.Second, GroupInterval: DefaultGroupInterval}},
	}
	for _, tt := range tests {
		t.Run(tt.route, func(t *testing.T) {
			for _, r := range cfg.Notify.AllRoutes() {
				if r.Name != tt.route {
					continue
				}
				if !reflect.DeepEqual(r.Notify.Grouping, tt.want) {
					t.Errorf("grouping = %+v, want %+v", r.Notify.Grouping, tt.want)
				}
				if got, want := r.Notify.Grouping.Enabled(), len(tt.want.GroupBy) > 0; got != want {
					t.Errorf("Enabled = %v, want %v", got, want)
				}
				return
			}
			t.Fatalf("no route %s", tt.route)
		})
	}
}
