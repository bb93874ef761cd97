package postgres

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/internal/pgtest"
)

// sent is the binary form a real Postgres sends the arrays of exprs in
// (array_send), concatenated as statsSums concatenates an hour's after
// another's.
func sent(t *testing.T, dsn string, exprs ...string) []byte {
	t.Helper()
	values := make([]string, len(exprs))
	for i, e := range exprs {
		values[i] = "(" + strconv.Itoa(i) + ", " + e + ")"
	}
	out := pgtest.Exec(t, dsn, "SELECT coalesce(string_agg(array_send(a), ''::bytea ORDER BY n), '') FROM (VALUES "+
		strings.Join(values, ", ")+") AS v (n, a)")
	b, err := hex.DecodeString(strings.TrimPrefix(out, `\x`))
	if err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	return b
}

// TestReadInt8Arrays reads bigint arrays as Postgres sends them, and
// refuses what the bucket columns never hold: more dimensions, nulls,
// another element type, bytes cut short.
func TestReadInt8Arrays(t *testing.T) {
	dsn := pgtest.Database(t)
	for _, tt := range []struct {
		arrays []string
		want   []int64
	}{
		{[]string{"'{}'::bigint[]"}, nil},
		{[]string{"ARRAY[20]::bigint[]"}, []int64{20}},
		{[]string{"ARRAY[0, 127, 128, 130]::bigint[]", "'{}'::bigint[]", "ARRAY[20, 9223372036854775807]::bigint[]"},
			[]int64{0, 127, 128, 130, 20, 9223372036854775807}},
		{[]string{"ARRAY[-3]::bigint[]"}, []int64{-3}}, // read; hourBuckets refuses it
	} {
		got, err := readInt8Arrays(sent(t, dsn, tt.arrays...), nil)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: got %v, %v; want %v", tt.arrays, got, err, tt.want)
		}
	}
	if got, err := readInt8Arrays(nil, nil); err != nil || got != nil {
		t.Errorf("no bytes: got %v, %v", got, err)
	}
	whole := sent(t, dsn, "ARRAY[20, 131]::bigint[]")
	for name, data := range map[string][]byte{
		"two dimensions": sent(t, dsn, "ARRAY[[1, 2], [3, 4]]::bigint[]"),
		"a null":         sent(t, dsn, "ARRAY[1, NULL]::bigint[]"),
		"integer[]":      sent(t, dsn, "ARRAY[1, 2]::integer[]"),
		"cut in header":  whole[:10],
		"cut in dims":    whole[:14],
		"cut in values":  whole[:len(whole)-1],
		"trailing bytes": append(append([]byte{}, whole...), 0, 0),
	} {
		if _, err := readInt8Arrays(data, nil); !errors.Is(err, errBuckets) {
			t.Errorf("%s: got %v, want errBuckets", name, err)
		}
	}
}

// TestHourBuckets pairs the two arrays and refuses buckets RecordRun never
// writes.
func TestHourBuckets(t *testing.T) {
	dsn := pgtest.Database(t)
	var b hourBuckets
	if err := b.read(sent(t, dsn, "ARRAY[20, 128]::bigint[]", "ARRAY[20]::bigint[]"),
		sent(t, dsn, "ARRAY[3, 1]::bigint[]", "ARRAY[4]::bigint[]")); err != nil {
		t.Fatal(err)
	}
	if want := (hourBuckets{ms: []int64{20, 128, 20}, runs: []int64{3, 1, 4}}); !reflect.DeepEqual(b, want) {
		t.Errorf("got %v, want %v", b, want)
	}
	for name, arrays := range map[string][2]string{
		"not a bucket":    {"ARRAY[129]::bigint[]", "ARRAY[1]::bigint[]"}, // 128 holds 129
		"negative bucket": {"ARRAY[-20]::bigint[]", "ARRAY[1]::bigint[]"},
		"negative runs":   {"ARRAY[20]::bigint[]", "ARRAY[-1]::bigint[]"},
		"fewer counts":    {"ARRAY[20, 21]::bigint[]", "ARRAY[1]::bigint[]"},
	} {
		if err := b.read(sent(t, dsn, arrays[0]), sent(t, dsn, arrays[1])); !errors.Is(err, errBuckets) {
			t.Errorf("%s: got %v, want errBuckets", name, err)
		}
	}
}
