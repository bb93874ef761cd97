package checks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/lexer"
)

func TestBigMapping(t *testing.T) {
	keys := func(indent string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%sk%d: v\n", indent, i)
		}
		return b.String()
	}
	flowKeys := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("k%d: v", i)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	probes := func(n int) string {
		var b strings.Builder
		b.WriteString("probes:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - name: p%d\n    consumer: c\n    labels: {team: t}\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name     string
		src      string
		wantLine int // 0: no mapping is too big
	}{
		{"a block mapping at the limit", "x:\n" + keys("  ", maxMapKeys), 0},
		{"one key past the limit", "x:\n" + keys("  ", maxMapKeys+1), maxMapKeys + 2},
		{"the top level past the limit", keys("", maxMapKeys+1), maxMapKeys + 1},
		{"sibling mappings share a column", "a:\n" + keys("  ", maxMapKeys) + "b:\n" + keys("  ", maxMapKeys), 0},
		{"a long probe list is a sequence", probes(3 * maxMapKeys), 0},
		{"a flow mapping at the limit", "x: " + flowKeys(maxMapKeys) + "\n", 0},
		{"a flow mapping past the limit", "x: " + flowKeys(maxMapKeys+1) + "\n", 1},
		{"single-pair maps in a flow sequence", "x: [" + strings.Repeat("a: 1, ", 2*maxMapKeys) + "]\n", 0},
		{"a mapping inside a sequence item", "l:\n  - x: 1\n" + keys("    ", maxMapKeys), maxMapKeys + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := bigMapping(lexer.Tokenize(tt.src))
			switch {
			case tt.wantLine == 0 && key != nil:
				t.Fatalf("bigMapping = key %q at line %d, want none", key.Value, key.Position.Line)
			case tt.wantLine != 0 && key == nil:
				t.Fatalf("bigMapping = nil, want the key at line %d", tt.wantLine)
			case tt.wantLine != 0 && key.Position.Line != tt.wantLine:
				t.Fatalf("bigMapping = key %q at line %d, want line %d", key.Value, key.Position.Line, tt.wantLine)
			}
		})
	}
}

// TestParseRefusesBigMapping checks the loader reports the limit at the
// key that crosses it, before the parser spends quadratic time.
func TestParseRefusesBigMapping(t *testing.T) {
	src := hostileBase + "x:\n"
	var b strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&b, "  k%d: v\n", i)
	}
	_, err := Parse("checks.yaml", []byte(src+b.String()), "testdata", mapEnv(nil))
	want := fmt.Sprintf("checks.yaml:%d:3: a mapping with more than %d keys", 4+1+maxMapKeys, maxMapKeys)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Parse error = %v, want it to contain %q", err, want)
	}
}
