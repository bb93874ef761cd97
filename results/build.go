package results

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
)

// Build is which toolpulse is running, as the Go toolchain stamped it into
// the binary: the one source of `toolpulse --version`, the
// toolpulse_build_info metric and the User-Agent of every probe request.
type Build struct {
	// Version is the module version of a tagged build (`go install
	// …@v1.2.3`, or a build from a checkout at a clean tag) and "dev" for
	// any other build.
	Version  string
	Revision string    // vcs.revision: the commit built; "" without VCS stamping
	Time     time.Time // vcs.time: that commit's time; zero when unknown
	Modified bool      // vcs.modified: the checkout had uncommitted changes
	Go       string    // the Go version that built it
}

// ReadBuild reads the running binary's build information.
func ReadBuild() Build {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Build{Version: "dev"}
	}
	return BuildOf(info)
}

// pseudoVersion matches the versions the go command makes up for an
// untagged commit (v0.0.0-20261201120000-15ff437abcde) and for a dirty
// checkout (+dirty): neither is a release.
var pseudoVersion = regexp.MustCompile(`(^|[-.])\d{14}-[0-9a-f]{12}(\+dirty)?$|\+dirty$`)

// BuildOf reads the build information info describes.
func BuildOf(info *debug.BuildInfo) Build {
	b := Build{Version: "dev", Go: info.GoVersion}
	if v := info.Main.Version; v != "" && v != "(devel)" && !pseudoVersion.MatchString(v) {
		b.Version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// Label is the version as one word, for a metric label and a User-Agent:
// the release ("v1.2.3"), or for any other build "dev", then the first 12
// hex digits of the commit when known, then "-dirty" for uncommitted
// changes ("dev-15ff437abcde-dirty").
func (b Build) Label() string {
	if b.Version != "dev" {
		return b.Version
	}
	label := "dev"
	if b.Revision != "" {
		label += "-" + b.Revision[:min(12, len(b.Revision))]
	}
	if b.Modified {
		label += "-dirty"
	}
	return label
}

// String is what `toolpulse --version` prints: the label, then what else
// is known of the build, as "toolpulse dev-15ff437abcde-dirty (commit
// 15ff437abcde…, 2026-12-01T12:00:00Z, modified, go1.26.8)".
func (b Build) String() string {
	var about []string
	if b.Revision != "" {
		about = append(about, "commit "+b.Revision)
	}
	if !b.Time.IsZero() {
		about = append(about, b.Time.UTC().Format(time.RFC3339))
	}
	if b.Modified {
		about = append(about, "modified")
	}
	if b.Go != "" {
		about = append(about, b.Go)
	}
	if len(about) == 0 {
		return "toolpulse " + b.Label()
	}
	return fmt.Sprintf("toolpulse %s (%s)", b.Label(), strings.Join(about, ", "))
}
