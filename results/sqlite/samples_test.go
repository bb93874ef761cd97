package sqlite_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/sqlite"
)

// withSample is r with its shape's sample set, on a copy of the shape.
func withSample(r results.Result, sample string) results.Result {
	sh := *r.Shape
	sh.Sample = sample
	r.Shape = &sh
	return r
}

// TestShapeSampleKeptOnce records runs of one shape, each bringing a sample
// or none, and checks the shape's stored sample: the first one brought,
// never replaced, and NULL until one is.
func TestShapeSampleKeptOnce(t *testing.T) {
	tests := []struct {
		name    string
		samples []string // one run each, in order; "" brings none
		want    any      // shapes.sample: a string, or nil for NULL
	}{
		{"stored on first sight", []string{`{"a":1}`}, `{"a":1}`},
		{"a later sample does not replace it", []string{`{"a":1}`, `{"a":2}`}, `{"a":1}`},
		{"a run without one keeps it", []string{`{"a":1}`, ""}, `{"a":1}`},
		{"NULL without one", []string{"", ""}, nil},
		{"a NULL sample is filled later", []string{"", `{"a":2}`}, `{"a":2}`},
		{"and then kept", []string{"", `{"a":2}`, `{"a":3}`, ""}, `{"a":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := newStore(t)
			for i, sample := range tt.samples {
				r := withSample(passAfterRetry(fmt.Sprint("op-", i)), sample)
				r.StartedAt = t0.Add(time.Duration(i) * time.Minute)
				record(t, s, r)
			}
			got := queryMaps(t, operatorDB(t, path, "mode=ro"), "SELECT sample, seen_count FROM shapes")
			want := []map[string]any{{"sample": tt.want, "seen_count": int64(len(tt.samples))}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("shapes:\n got  %v\n want %v", got, want)
			}
		})
	}
}

// TestRecordShapeSampleCap checks that a sample over results.ShapeSampleBytes
// is refused with the run, as any record a bug upstream broke is, and that
// one of exactly the cap is stored.
func TestRecordShapeSampleCap(t *testing.T) {
	tests := []struct {
		name string
		size int
		want string // "": stored
	}{
		{"exactly the cap", results.ShapeSampleBytes, ""},
		{"one byte over", results.ShapeSampleBytes + 1, "over results.ShapeSampleBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := newStore(t)
			err := s.Record(context.Background(), withSample(passAfterRetry("op-1"), strings.Repeat("x", tt.size)))
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Record: got %v, want an error containing %q", err, tt.want)
			}
			stored := 0
			if tt.want == "" {
				stored = 1
			}
			if n := count(t, operatorDB(t, path, "mode=ro"), "SELECT count(*) FROM shapes WHERE length(sample) = ?", tt.size); n != stored {
				t.Errorf("shapes with the sample: got %d, want %d", n, stored)
			}
		})
	}
}

func TestLatestPassSamples(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	minute := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	shape := func(fp string) *results.Shape {
		return &results.Shape{Fingerprint: fp, Canonical: "object{" + fp + ":number}"}
	}
	// run is a run of probe with outcome, at minute m, showing fingerprint
	// fp and bringing sample ("" brings none).
	run := func(id, probe string, m int, outcome results.Outcome, fp, sample string) results.Result {
		code := results.Code("")
		if outcome != results.Pass {
			code = "unsupported_results_container"
		}
		r := runAt(id, probe, minute(m), outcome, code, 10, 1)
		r.Shape = shape(fp)
		r.Shape.Sample = sample
		return r
	}
	const (
		fpOld, fpNew, fpBroken, fpBare, fpTieA, fpTieB = "1111111111111111", "2222222222222222",
			"3333333333333333", "4444444444444444", "5555555555555555", "6666666666666666"
	)
	record(t, s,
		// external_search: an older pass, its latest pass, then a failure.
		run("es-1", "external_search", 0, results.Pass, fpOld, `{"old":1}`),
		run("es-2", "external_search", 2, results.Pass, fpNew, `{"new":1}`),
		run("es-3", "external_search", 3, results.ContractError, fpBroken, `{"broken":1}`),
		// weather never passed.
		run("w-1", "weather", 1, results.ContractError, fpBroken, ""),
		// bare: its latest pass has a shape without a sample; an older
		// pass's shape has one, and must not stand in for it.
		run("b-1", "bare", 0, results.Pass, fpOld, ""),
		run("b-2", "bare", 4, results.Pass, fpBare, ""),
		// borrowed: its shape's sample was brought by another probe's run.
		run("x-1", "borrowed", 5, results.Pass, fpNew, ""),
		// tie: two passes in one millisecond; the one recorded last is the
		// latest, as in history.
		run("t-2", "tie", 6, results.Pass, fpTieB, `{"b":1}`),
		run("t-1", "tie", 6, results.Pass, fpTieA, `{"a":1}`),
	)
	es := sqlite.PassSample{Probe: "external_search", OperationID: "es-2", StartedAt: minute(2),
		Fingerprint: fpNew, Body: `{"new":1}`}
	borrowed := sqlite.PassSample{Probe: "borrowed", OperationID: "x-1", StartedAt: minute(5),
		Fingerprint: fpNew, Body: `{"new":1}`}
	tie := sqlite.PassSample{Probe: "tie", OperationID: "t-1", StartedAt: minute(6),
		Fingerprint: fpTieA, Body: `{"a":1}`}
	tests := []struct {
		name   string
		probes []string
		want   map[string]sqlite.PassSample
	}{
		{"the latest pass, not a later failure or an earlier pass", []string{"external_search"},
			map[string]sqlite.PassSample{"external_search": es}},
		{"no pass, no sample, no runs: absent", []string{"weather", "bare", "unknown"}, map[string]sqlite.PassSample{}},
		{"a sample another probe brought", []string{"borrowed"}, map[string]sqlite.PassSample{"borrowed": borrowed}},
		{"of two in one millisecond, the last recorded", []string{"tie"}, map[string]sqlite.PassSample{"tie": tie}},
		{"a probe named twice", []string{"tie", "tie"}, map[string]sqlite.PassSample{"tie": tie}},
		{"all probes", nil, map[string]sqlite.PassSample{"external_search": es, "borrowed": borrowed, "tie": tie}},
		{"all probes, empty list", []string{}, map[string]sqlite.PassSample{"external_search": es, "borrowed": borrowed, "tie": tie}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.LatestPassSamples(ctx, tt.probes)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("LatestPassSamples(%q)\n got  %+v\n want %+v", tt.probes, got, tt.want)
			}
		})
	}
}

func TestLatestPassSamplesEmptyStore(t *testing.T) {
	s, _ := newStore(t)
	got, err := s.LatestPassSamples(context.Background(), nil)
	if err != nil || len(got) != 0 {
		t.Errorf("LatestPassSamples on an empty store: got %v, %v, want an empty map", got, err)
	}
}
