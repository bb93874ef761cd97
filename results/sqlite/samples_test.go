package sqlite_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
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
