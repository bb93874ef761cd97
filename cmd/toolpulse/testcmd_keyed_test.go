package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/shape"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// TestTestFromDBKeyedByProfile: the recorded answer of a probe whose
// profile learned facets' keys (src_001, src_007...) are data is mutated
// with facets as one path, facets.*, as drift names it; the answer alone,
// or with the consumer's fixtures, would not tell its keys from names.
func TestTestFromDBKeyedByProfile(t *testing.T) {
	const (
		recorded = `{"results":[{"id":"a"}],"facets":{"src_001":{"count":1},"src_002":{"count":2},"src_003":{"count":3}}}`
		other    = `{"results":[{"id":"b"}],"facets":{"src_007":{"count":4},"src_042":{"count":5},"src_013":{"count":6}}}`
	)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "checks.yaml"), `version: 1
storage: {path: results.db}
consumers:
  - name: whole
    select: "[response]"
    validate: "true"
    fixtures:
      - name: plain
        response: {results: [{id: a}]}
        expect: pass
probes:
  - name: search
    request: {url: "http://127.0.0.1:9/"}
    consumer: whole
`)

	// What the daemon would have stored after answers alternating
	// between the two sets of keys.
	var p shape.Profile
	at := time.Now().UTC().Add(-time.Hour)
	for i := range shape.ProfileWarmup {
		body := recorded
		if i%2 == 1 {
			body = other
		}
		v, err := consumers.DecodeJSON([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		p.Learn(shape.Of(v), at.Add(time.Duration(i)*time.Minute))
	}
	data, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := consumers.DecodeJSON([]byte(recorded))
	sh := p.Canonical(shape.Of(v))
	if !strings.Contains(sh.String(), "facets:map<") {
		t.Fatalf("the profile does not key facets: %s", sh)
	}
	store, err := sqlite.Open(context.Background(), filepath.Join(dir, "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	r := results.Result{OperationID: "op-1", Probe: "search", StartedAt: at.Add(10 * time.Minute), Outcome: results.Pass,
		Consumer: results.ConsumerRef{Name: "whole", Version: "1", RuleHash: "h"},
		Shape: &results.Shape{Fingerprint: sh.Fingerprint(), Canonical: sh.String(), Sample: recorded,
			Profile: &results.ProfileUpdate{Data: string(data), Answers: p.Answers()}}}
	if err := store.Record(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runIn(t, dir, "test", "--mutate", "--from-db")
	if code == exitUsage || code == exitSoftware || code == exitConfig {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"retype facets.*.count number->string  [db: search]",
		"facets.*.count: number -> string",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s%s", want, out, errOut)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "[db: search]") && strings.Contains(line, "src_") {
			t.Errorf("a mutation names a key of facets: %s", line)
		}
	}
}
