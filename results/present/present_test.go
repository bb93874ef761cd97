package present

import (
	"testing"
	"time"
)

// TestPrintable: each kind of character a terminal would act on, or that
// reorders or hides the text after it, is written as a visible escape;
// whitespace is a space; text anyone would write is left alone.
func TestPrintable(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text", `state: "paid" (item {"id": 1})`, `state: "paid" (item {"id": 1})`},
		{"letters, accents, emoji", "Zürich, 東京 ✓ 🙂", "Zürich, 東京 ✓ 🙂"},
		{"clear screen", "\x1b[2Jgone", `\x1b[2Jgone`},
		{"window title", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"carriage return", "FAIL\rALL PROBES PASS", "FAIL ALL PROBES PASS"},
		{"tab and newline", "a\tb\nc", "a b c"},
		{"NUL, DEL", "a\x00b\x7f", `a\x00b\x7f`},
		{"C1 CSI", "\u009b2J", `\u009b2J`},
		{"NEL is a line break", "a\u0085b", "a b"},
		{"line separator", "a\u2028b", "a b"},
		{"bidi override", "\u202eSSAP", `\u202eSSAP`},
		{"bidi isolates", "\u2066x\u2069\u2067y\u2069\u2068z\u2069", `\u2066x\u2069\u2067y\u2069\u2068z\u2069`},
		{"marks and zero width", "\u200ea\u200fb\u200bc\ufeff\u061c", `\u200ea\u200fb\u200bc\ufeff\u061c`},
		{"tag characters", "\U000e0041", `\U000e0041`},
		{"invalid UTF-8", "a\xffb", "a\ufffdb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Printable(tt.in); got != tt.want {
				t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseInstant(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"", time.Time{}, false},
		{"24h", now.Add(-24 * time.Hour), false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"2026-10-26T13:07:00Z", time.Date(2026, 10, 26, 13, 7, 0, 0, time.UTC), false},
		{"2026-10-26", time.Date(2026, 10, 26, 0, 0, 0, 0, time.UTC), false},
		{"-1h", time.Time{}, true},
		{"yesterday", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := ParseInstant(tt.in, now)
		if (err != nil) != tt.wantErr || !got.Equal(tt.want) {
			t.Errorf("ParseInstant(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
