package results

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Messages as the engine builds them: a verification's claim_mismatch
// (runner/verify.go with consumers' Expression.Observed) and tool_input as
// mcpsdk words it for the go-sdk's and the TypeScript SDK's refusals.
const (
	claimPaid = "step verify: claim not confirmed within 10s (11 polls): " +
		"`response.state == \"refunded\"` was false: state: \"paid\""
	claimLongRule = "step verify: claim not confirmed within 10s (4 polls): " +
		"`response.state == \"refunded\" && response.refund_id == vars.refund_id && len(response.lines) > 0` " +
		"was false: state: \"pending\""
	claimLongValues = "step verify: claim not confirmed within 1m0s (60 polls): " +
		"`response.refund_id == vars.refund_id` was false: " +
		"refund_id: \"rf_01J9ZQ7M3KX8T2V4B6N8P0R2S4\", vars.refund_id: \"rf_01J9ZQ7M3KX8T2V4B6N8P0R2S5\""
	toolInputGo = `tools/call "get-weather": JSON-RPC error -32602 "validating \"arguments\": validating root: ` +
		`required: missing properties: [\"location\"]": the server rejects the arguments`
	claimWant = "step verify: claim not confirmed within 10s (4 polls): state: \"pending\" " +
		"(want `response.state == \"refunded\" && response.refund_id == vars.refund_id`)"
	invalidItem = "item 0 failed validate: `type(.priority) == \"int\"` was false: priority is string " +
		"(item {\"id\":\"doc_1\",\"priority\":\"high\",\"title\":\"Release notes\"})"
	unexpectedStatus = `tools/call "get-weather": HTTP 422 Unprocessable Entity ("request rejected by the gateway: ` +
		`invalid value for \"units\": want one of [\"celsius\",\"fahrenheit\"]")`
	toolInputTS = `tools/call "get-weather": the result rejects the arguments: "MCP error -32602: Input validation ` +
		`error: Invalid arguments for tool get-weather: [ { \"code\": \"invalid_type\", \"path\": [ \"location\" ], ` +
		`\"message\": \"Required\" } ]"`
)

func TestShorten(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		n    int
		want string
	}{
		{"short enough", "HTTP 503 after 3 attempts", 100, "HTTP 503 after 3 attempts"},
		{"exactly n", "0123456789", 10, "0123456789"},
		{"whitespace folds", "line one\n\tline  two ", 100, "line one line two"},
		{"the rule gives way to the observation", claimPaid, 100,
			"step verify: claim not confirmed within 10s (11 polls): `response.state =…` was false: state: \"paid\""},
		{"a long rule is cut to what is needed", claimLongRule, 100,
			"step verify: claim not confirmed within 10s (4 polls): `response.state…` was false: state: \"pending\""},
		{"then the middle goes, the end stays", claimLongValues, 100,
			"step verify: claim not confirmed …X8T2V4B6N8P0R2S4\", vars.refund_id: \"rf_01J9ZQ7M3KX8T2V4B6N8P0R2S5\""},
		{"a rule quoted after the observation gives way too", claimWant, 100,
			"step verify: claim not confirmed within 10s (4 polls): state: \"pending\" (want `response.state == …`)"},
		{"tool_input keeps the argument's name", toolInputGo, 100,
			`tools/call "get-weather": JSON-RP…sing properties: [\"location\"]": the server rejects the arguments`},
		{"an item gives way to what the rule saw in it", invalidItem, 100,
			"item 0 failed validate: `type(.priori…` was false: priority is string (item {\"id\":\"doc_1\",\"priorit…)"},
		{"a server's words in parentheses are not an aside", unexpectedStatus, 100,
			`tools/call "get-weather": HTTP 42…id value for \"units\": want one of [\"celsius\",\"fahrenheit\"]")`},
		{"without backticks, the middle", "abcdefghij klmnopqrst", 10, "abc…opqrst"},
		{"characters, not bytes", "ééééééééééééééééééééé", 10, "ééé…éééééé"},
		{"n of one", "abc", 1, "…"},
		{"n of zero", "abc", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Shorten(tt.msg, tt.n); got != tt.want {
				t.Errorf("Shorten(%q, %d)\n got %q\nwant %q", tt.msg, tt.n, got, tt.want)
			}
		})
	}
}

// TestShortenKeepsTheObservation: at the widths messages are shown in
// (a table row, an excerpt), what was observed survives, the context at
// the start too.
func TestShortenKeepsTheObservation(t *testing.T) {
	tests := []struct {
		name        string
		msg         string
		keep        []string
		widths      []int
		ruleShorter bool // the rule text is cut, not the rest
	}{
		{"claim_mismatch", claimPaid, []string{"step verify:", `state: "paid"`}, []int{100, 90, 80}, true},
		{"claim_mismatch, rule last", claimWant, []string{"step verify:", `state: "pending" (want`}, []int{100, 80, 60}, false},
		{"claim_mismatch, long rule", claimLongRule, []string{"step verify:", `state: "pending"`}, []int{100, 90}, true},
		{"tool_input, go-sdk", toolInputGo, []string{"tools/call", `[\"location\"]`}, []int{100, 90}, false},
		{"tool_input, TypeScript SDK", toolInputTS, []string{"tools/call", `[ \"location\" ]`}, []int{100, 90}, false},
		{"invalid_item", invalidItem, []string{"item 0 failed validate:", "was false: priority is string (item"}, []int{100, 80}, false},
	}
	for _, tt := range tests {
		for _, n := range tt.widths {
			got := Shorten(tt.msg, n)
			if c := utf8.RuneCountInString(got); c > n {
				t.Errorf("%s at %d: %d characters: %q", tt.name, n, c, got)
			}
			for _, k := range tt.keep {
				if !strings.Contains(got, k) {
					t.Errorf("%s at %d: %q lost %q", tt.name, n, got, k)
				}
			}
			if tt.ruleShorter && !strings.Contains(got, "…` was false: ") {
				t.Errorf("%s at %d: %q: want the rule text cut", tt.name, n, got)
			}
		}
	}
}

func FuzzShorten(f *testing.F) {
	for _, s := range []string{claimPaid, claimLongRule, claimWant, toolInputGo, toolInputTS, invalidItem, unexpectedStatus,
		"`a` `b", "```", "\xff`\xfe", "`a` (b)", "`a` (()", "`a` )"} {
		f.Add(s, 40)
	}
	f.Fuzz(func(t *testing.T, msg string, n int) {
		n = n%300 + 1
		if n < 1 {
			n += 300
		}
		got := Shorten(msg, n)
		if c := utf8.RuneCountInString(got); c > n {
			t.Fatalf("Shorten(%q, %d) = %q: %d characters", msg, n, got, c)
		}
		if folded := strings.Join(strings.Fields(msg), " "); utf8.RuneCountInString(folded) <= n && got != folded {
			t.Fatalf("Shorten(%q, %d) = %q, want it whole", msg, n, got)
		}
	})
}

func TestClip(t *testing.T) {
	tests := []struct {
		name, s string
		n       int
		want    string
	}{
		{"short", "short", 10, "short"},
		{"exactly n", "exactly10!", 10, "exactly10!"},
		{"cut", "abcdefghijkl", 10, "abcdefghi…"},
		{"characters, not bytes", "ééééééééééé", 4, "ééé…"},
		{"whitespace kept", "a  b\ncdef", 5, "a  b…"},
		{"room for the mark only", "abc", 1, ""},
		{"no room", "abc", 0, ""},
		{"empty", "", 0, ""},
		{"invalid UTF-8 counts per byte", "ab\xffcdef", 4, "ab\xff…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Clip(tt.s, tt.n)
			if got != tt.want {
				t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > max(tt.n, 0) {
				t.Errorf("Clip(%q, %d) has %d characters", tt.s, tt.n, n)
			}
		})
	}
}

func TestClipBytes(t *testing.T) {
	tests := []struct {
		name, s string
		n       int
		want    string
	}{
		{"short", "short", 10, "short"},
		{"exactly n", "exactly10!", 10, "exactly10!"},
		{"the mark comes on top", "abcdefghijkl", 10, "abcdefghij…"},
		{"never half a character", "aéé", 4, "aé…"}, // é is 2 bytes: byte 4 is inside the second
		{"a character ending at n is kept", "aééé", 5, "aéé…"},
		{"no room", "éa", 1, "…"},
		{"zero", "abc", 0, "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClipBytes(tt.s, tt.n)
			if got != tt.want {
				t.Errorf("ClipBytes(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("ClipBytes(%q, %d) = %q, not valid UTF-8", tt.s, tt.n, got)
			}
		})
	}
}
