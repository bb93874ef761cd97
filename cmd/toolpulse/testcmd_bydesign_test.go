package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestMutateByDesign: a change into what another passing fixture
// shows is printed as by design, with the fixture that shows it, and does
// not fail the run.
func TestTestMutateByDesign(t *testing.T) {
	const config = `version: 1
consumers:
  - name: pages
    select: '"next_cursor" in response && type(response.next_cursor) in ["string", "nil"] ? response.results : fail("bad_cursor", "no cursor")'
    validate: type(.id) == "string"
    fixtures:
      - name: more pages
        response: {results: [{id: a}], next_cursor: c2}
        expect: pass
      - name: last page
        response: {results: [{id: a}], next_cursor: null}
        expect: pass
probes:
  - name: p
    request: {url: "http://127.0.0.1:9/"}
    consumer: pages
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "checks.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runIn(t, dir, "test", "--mutate")
	if code != exitOK {
		t.Errorf("exit %d, want 0\n%s%s", code, out, errOut)
	}
	want := "    by design   retype next_cursor string->null  [more pages]\n" +
		"                next_cursor: string -> null\n" +
		"                next_cursor turned from string into null and the rule still passes, by design: the passing base \"last page\" already shows that at next_cursor\n"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks\n%s\n%s", want, out)
	}
	if strings.Contains(out, "BLIND SPOT") {
		t.Errorf("a blind spot\n%s", out)
	}
}
