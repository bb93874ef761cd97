package results

import (
	"runtime/debug"
	"testing"
)

func TestBuildOf(t *testing.T) {
	vcs := func(rev, at, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "15ff437abcde0123456789abcdef0123456789ab"
	tests := []struct {
		name          string
		version       string
		settings      []debug.BuildSetting
		label, string string
	}{
		{"go install of a tag", "v1.2.3", nil,
			"v1.2.3", "toolpulse v1.2.3 (go1.26.8)"},
		{"checkout at a clean tag", "v1.2.3", vcs(rev, "2026-12-01T12:00:00Z", "false"),
			"v1.2.3", "toolpulse v1.2.3 (commit " + rev + ", 2026-12-01T12:00:00Z, go1.26.8)"},
		{"checkout past a tag", "v1.2.4-0.20261201120000-15ff437abcde", vcs(rev, "2026-12-01T12:00:00Z", "false"),
			"dev-15ff437abcde", "toolpulse dev-15ff437abcde (commit " + rev + ", 2026-12-01T12:00:00Z, go1.26.8)"},
		{"untagged checkout with changes", "v0.0.0-20261201120000-15ff437abcde+dirty", vcs(rev, "2026-12-01T12:00:00Z", "true"),
			"dev-15ff437abcde-dirty", "toolpulse dev-15ff437abcde-dirty (commit " + rev + ", 2026-12-01T12:00:00Z, modified, go1.26.8)"},
		{"tag with changes", "v1.2.3+dirty", vcs(rev, "2026-12-01T12:00:00Z", "true"),
			"dev-15ff437abcde-dirty", "toolpulse dev-15ff437abcde-dirty (commit " + rev + ", 2026-12-01T12:00:00Z, modified, go1.26.8)"},
		{"go test or -buildvcs=false", "(devel)", nil,
			"dev", "toolpulse dev (go1.26.8)"},
		{"nothing stamped", "", nil, "dev", "toolpulse dev (go1.26.8)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/toolpulse/toolpulse", Version: tt.version}, Settings: tt.settings}
			b := BuildOf(info)
			if got := b.Label(); got != tt.label {
				t.Errorf("Label() = %q, want %q", got, tt.label)
			}
			if got := b.String(); got != tt.string {
				t.Errorf("String() = %q, want %q", got, tt.string)
			}
		})
	}
}
