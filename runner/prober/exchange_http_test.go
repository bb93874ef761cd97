package prober

import (
	"strings"
	"testing"
)

// TestReadCappedOwnsBody: a body of unknown length is read into a reused
// buffer and must be copied out of it: a later read must not change a
// body returned earlier. Read limits are as for any body: up to limit+1
// bytes, the excess byte proving the body too large.
func TestReadCappedOwnsBody(t *testing.T) {
	e := NewExecutor(Options{})
	cases := []struct {
		name  string
		size  int
		limit int64
	}{
		{name: "small", size: 10, limit: 1 << 20},
		{name: "past the first buffer", size: pooledBodyStart + 1, limit: 1 << 20},
		{name: "past the pooled size", size: maxPooledBody + 1, limit: 1 << 20},
		{name: "at the limit", size: 100, limit: 100},
		{name: "over the limit", size: 200, limit: 100},
	}
	var kept [][]byte
	var wants []string
	// The pool may drop a buffer at any time (under -race it does so on
	// purpose), so several rounds make reuse certain.
	for round := range 5 {
		for i, c := range cases {
			fill := strings.Repeat(string(rune('a'+(round*len(cases)+i)%26)), c.size)
			got, err := e.readCapped(strings.NewReader(fill), c.limit, -1)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			want := fill[:min(int64(c.size), c.limit+1)]
			if string(got) != want {
				t.Fatalf("%s: read %d bytes, want %d", c.name, len(got), len(want))
			}
			kept, wants = append(kept, got), append(wants, want)
		}
	}
	for i := range kept {
		if string(kept[i]) != wants[i] {
			t.Fatalf("body %d (%s) changed after later reads", i, cases[i%len(cases)].name)
		}
	}
}
