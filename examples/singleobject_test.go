package examples_test

import (
	"os"
	"strings"
	"testing"
)

// TestSingleObjectMatchesREADME keeps docs/consumers.md's "A provider that
// answers one object" true: its YAML block is examples/single-object's consumer,
// byte for byte (TestDemoConfigLoads loads that config and runs its
// fixtures), so neither can change without the other.
func TestSingleObjectMatchesREADME(t *testing.T) {
	page, err := os.ReadFile("../docs/consumers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## A provider that answers one object\n")
	if !ok {
		t.Fatal(`docs/consumers.md has no "## A provider that answers one object" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the section has no YAML block")
	}
	want, err := os.ReadFile("single-object/consumers/order_record.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if block != string(want) {
		t.Errorf("docs/consumers.md block differs from examples/single-object/consumers/order_record.yaml:\ndocs/consumers.md:\n%s\nfile:\n%s", block, want)
	}
}
