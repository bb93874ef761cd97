package consumers

import "testing"

func TestSuggest(t *testing.T) {
	keys := []string{"name", "request", "interval", "jitter", "timeout", "tool", "url"}
	for _, tc := range []struct {
		word  string
		known []string
		want  string
	}{
		{"intervall", keys, "interval"},
		{"toll", keys, "tool"},     // one substitution in a short word
		{"jtiter", keys, "jitter"}, // neighbours swapped: one edit
		{"reqeust", keys, "request"},
		{"serach", []string{"search", "tracker"}, "search"},
		{"timeuot", keys, "timeout"},
		{"colour", keys, ""},                // nothing close
		{"ur", keys, ""},                    // half of a two-letter word is too much
		{"foo", []string{"now", "bar"}, ""}, // two edits of three letters is a guess
		{"nam", keys, "name"},
		{"tol", []string{"tool", "toll"}, "tool"}, // a tie goes to the first
		{"select_result.yaml", []string{"first_item.yaml", "select_results.yaml"}, "select_results.yaml"},
		{"x", nil, ""},
	} {
		if got := Suggest(tc.word, tc.known); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "abc", 0},
		{"fial", "fail", 1},
		{"ab", "ba", 1},
		{"abcd", "badc", 2},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment: no edit of a swapped pair
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := editDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.want)
		}
	}
}
