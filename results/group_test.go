package results

import (
	"reflect"
	"testing"
)

// TestGroupKeyRoundTrip: a key names its receiver and labels, and parses
// back to them, whatever the values hold.
func TestGroupKeyRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		receiver string
		names    []string
		labels   map[string]string
		key      string
	}{
		{"one", "default/slack", []string{"provider"}, map[string]string{"provider": "search", "team": "x"}, `default/slack{provider="search"}`},
		{"missing", "routes[0]/webhook", []string{"provider", "region"}, map[string]string{"provider": "search"}, `routes[0]/webhook{provider="search",region=""}`},
		{"quotes and commas", "default/slack", []string{"a", "b"}, map[string]string{"a": `x",b="y`, "b": "{}=,"}, `default/slack{a="x\",b=\"y",b="{}=,"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := GroupKey(tt.receiver, tt.names, tt.labels)
			if key != tt.key {
				t.Errorf("GroupKey = %s, want %s", key, tt.key)
			}
			receiver, labels, err := ParseGroupKey(key)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for _, n := range tt.names {
				want[n] = tt.labels[n]
			}
			if receiver != tt.receiver || !reflect.DeepEqual(labels, want) {
				t.Errorf("ParseGroupKey = %s %v, want %s %v", receiver, labels, tt.receiver, want)
			}
		})
	}
	for _, bad := range []string{"", "default/slack", `default/slack{provider}`, `default/slack{provider="x}`} {
		if _, _, err := ParseGroupKey(bad); err == nil {
			t.Errorf("ParseGroupKey(%q) = nil error, want one", bad)
		}
	}
}

// TestLocationGroupSummary: a location group's line counts the silent
// probes and those back, singular for one.
func TestLocationGroupSummary(t *testing.T) {
	for _, tt := range []struct {
		name         string
		silent, back int
		want         string
	}{
		{"silent", 10, 0, "location ap-south silent: 10 probes"},
		{"one silent", 1, 0, "location ap-south silent: 1 probe"},
		{"back", 0, 3, "location ap-south back: 3 probes"},
		{"one back", 0, 1, "location ap-south back: 1 probe"},
		{"both", 10, 2, "location ap-south silent: 10 probes, 2 back"},
		{"one silent, one back", 1, 1, "location ap-south silent: 1 probe, 1 back"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := LocationGroupSummary("ap-south", tt.silent, tt.back); got != tt.want {
				t.Errorf("LocationGroupSummary(ap-south, %d, %d) = %q, want %q", tt.silent, tt.back, got, tt.want)
			}
		})
	}
}
