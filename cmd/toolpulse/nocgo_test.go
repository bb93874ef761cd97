package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildWithoutCgoSaysWhy: a CGO_ENABLED=0 build of the command stops,
// rather than making a binary that cannot open its database, and its first
// error names the fix (results/sqlite/cgo_required.go).
func TestBuildWithoutCgoSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command's dependencies without cgo")
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(t.TempDir(), "toolpulse"), ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("a CGO_ENABLED=0 build succeeded; it must stop, since the binary could not open its database")
	}
	// The first error is the one a reader sees: it must be the fix, not
	// the driver's missing types that follow it.
	const want = "undefined: toolpulse_needs_cgo_set_CGO_ENABLED_1_and_install_a_C_compiler"
	first := ""
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, ": ") && !strings.HasPrefix(line, "#") {
			first = line
			break
		}
	}
	if !strings.Contains(first, want) {
		t.Errorf("the build's first error is %q, want one naming the fix %q:\n%s", first, want, out)
	}
}
