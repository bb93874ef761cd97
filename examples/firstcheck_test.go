package examples_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestFirstCheckMatchesREADME keeps the README's "Your first check in ten
// minutes" true: its two YAML blocks are the files in examples/first-check/,
// byte for byte (TestDemoConfigLoads loads that config and runs its
// fixtures), so neither can change without the other.
func TestFirstCheckMatchesREADME(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Your first check in ten minutes\n")
	if !ok {
		t.Fatal(`README.md has no "## Your first check in ten minutes" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)   ```yaml\n(.*?)   ```").FindAllStringSubmatch(section, -1)
	files := []string{"first-check/consumers/resumable_runs.yaml", "first-check/checks.yaml"}
	if len(blocks) != len(files) {
		t.Fatalf("the section has %d YAML blocks, want %d: %v", len(blocks), len(files), files)
	}
	for i, file := range files {
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for _, line := range strings.SplitAfter(blocks[i][1], "\n") {
			got.WriteString(strings.TrimPrefix(line, "   "))
		}
		if got.String() != string(want) {
			t.Errorf("README block %d differs from examples/%s:\nREADME:\n%s\nfile:\n%s", i+1, file, got.String(), want)
		}
	}
}
