package postgres

import (
	"errors"
	"reflect"
	"testing"
)

// TestParseBucketsText reads duration_buckets objects as Postgres prints
// them, and refuses what RecordRun never writes: keys that are not
// buckets, negative or fractional counts, text out of shape.
func TestParseBucketsText(t *testing.T) {
	type pair struct{ b, n int64 }
	for _, tt := range []struct {
		text string
		want []pair
	}{
		{"", nil},
		{"{}", nil},
		{`{"20": 3}`, []pair{{20, 3}}},
		{`{"0": 1, "127": 2, "128": 5, "130": 1},{},{"20": 4}`, []pair{{0, 1}, {127, 2}, {128, 5}, {130, 1}, {20, 4}}},
		{`{"2048": 0}`, []pair{{2048, 0}}},
	} {
		var got []pair
		if err := parseBucketsText([]byte(tt.text), func(b, n int64) { got = append(got, pair{b, n}) }); err != nil {
			t.Errorf("%q: %v", tt.text, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %v, want %v", tt.text, got, tt.want)
		}
	}
	for _, text := range []string{
		`{"129": 1}`,                   // not a bucket: 128 holds it
		`{"20": -1}`,                   // negative
		`{"20": 1.5}`,                  // fractional
		`{"x": 1}`,                     // not a number
		`{"20": 1`,                     // cut short
		`{"20": 1}{}`,                  // no comma
		`{"20": 1},`,                   // trailing comma
		`{"20":1}`,                     // not as Postgres prints it
		`{"20": 1, }`,                  // empty member
		`[1]`,                          // not an object
		`{"20": "1"}`,                  // a string count
		`{"-20": 1}`,                   // negative key
		`{"20": 99999999999999999999}`, // past int64
	} {
		err := parseBucketsText([]byte(text), func(int64, int64) {})
		if !errors.Is(err, errBuckets) {
			t.Errorf("%q: got %v, want errBuckets", text, err)
		}
	}
}
