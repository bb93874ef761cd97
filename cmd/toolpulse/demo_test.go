package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDemo runs the whole demo, faster, and checks that a user sees what
// the README promises: passes, the seed-000 drift and its contract_error,
// an unavailable tracker, and the alerts in the Slack stand-in, ending with
// where the database is.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about 15 s")
	}
	var out, errOut bytes.Buffer
	lookup := func(string) (string, bool) { return "", false }
	code := run(context.Background(), []string{"demo", "--dir", t.TempDir(), "--interval", "250ms", "--phase", "5s"},
		lookup, &out, &errOut)
	if code != exitOK {
		t.Fatalf("demo exit %d\n%s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{
		"outcome=pass",
		"probe=search_list_only outcome=contract_error code=unsupported_results_container",
		"probe=tracker_runs outcome=unavailable code=server_error attempts=3",
		"Slack message",
		":warning: search_list_only response shape changed",
		"results: list<object(3 keys)> -> object(1 keys)",
		":red_circle: search_list_only contract_error (unsupported_results_container): results is map",
		":large_orange_circle: tracker_runs unavailable (server_error)",
		":large_green_circle: tracker_runs resolved: passing again after failing for",
		"sqlite3 -readonly",
		"status:   http://127.0.0.1:",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", out.String())
	}
}
