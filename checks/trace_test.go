package checks

import (
	"strings"
	"testing"
)

// TestLoadTrace: trace is on unless trace: false says otherwise, on the
// probe or in defaults:, and a probe's own traceparent header turns it off.
func TestLoadTrace(t *testing.T) {
	tests := []struct {
		name     string
		defaults string
		probe    string // the probe's extra keys, flow style
		want     bool
	}{
		{"on by default", "", "", true},
		{"off on the probe", "", "trace: false", false},
		{"off in defaults", "  trace: false\n", "", false},
		{"the probe overrides defaults", "  trace: false\n", "trace: true", true},
		{"a traceparent header of its own wins", "", `request: {url: "http://127.0.0.1:8099/", headers: {TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`, false},
		{"an MCP traceparent header wins", "", `mcp: {url: "http://127.0.0.1:8099/mcp", tool: t, headers: {traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := locationsBase
			if tt.defaults != "" {
				src += "defaults:\n" + tt.defaults
			}
			probe := "  - {name: p, consumer: c"
			if !strings.Contains(tt.probe, "request:") && !strings.Contains(tt.probe, "mcp:") {
				probe += ", request: {url: http://127.0.0.1:8099/}"
			}
			if tt.probe != "" {
				probe += ", " + tt.probe
			}
			src += "probes:\n" + probe + "}\n"
			cfg, err := Parse("checks.yaml", []byte(src), "conf", noEnv)
			if err != nil {
				t.Fatalf("Parse:\n%s\n%v", src, err)
			}
			if got := cfg.Probes[0].Trace; got != tt.want {
				t.Errorf("Trace = %v, want %v\n%s", got, tt.want, src)
			}
		})
	}
}

func TestLoadTraceNotBoolean(t *testing.T) {
	src := locationsBase + "probes:\n  - {name: p, consumer: c, request: {url: http://127.0.0.1:8099/}, trace: sometimes}\n"
	_, err := Parse("checks.yaml", []byte(src), "conf", noEnv)
	if err == nil || !strings.Contains(err.Error(), "probes[0].trace") {
		t.Fatalf("Parse: %v, want an error at probes[0].trace", err)
	}
}
