package checks

import (
	"strconv"
	"strings"
	"testing"
)

func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestExpandEnv(t *testing.T) {
	env := mapEnv(map[string]string{
		"TOKEN":  "s3cr3t",
		"EMPTY":  "",
		"YAML":   "a: [b]\n- c", // must come out as text, never as structure
		"DOLLAR": "${TOKEN}",    // a value is inserted as is, never expanded again
		"_x1":    "under",
	})
	tests := []struct {
		name string
		in   string
		want string
		errs []string // "offset: message"
	}{
		{name: "no reference", in: "plain text", want: "plain text"},
		{name: "set", in: "Bearer ${TOKEN}", want: "Bearer s3cr3t"},
		{name: "twice", in: "${TOKEN}${TOKEN}", want: "s3cr3ts3cr3t"},
		{name: "set but empty", in: "[${EMPTY}]", want: "[]"},
		{name: "underscore name", in: "${_x1}", want: "under"},
		{name: "default when unset", in: "${NOPE:-fallback}", want: "fallback"},
		{name: "default when empty", in: "${EMPTY:-fallback}", want: "fallback"},
		{name: "default ignored when set", in: "${TOKEN:-fallback}", want: "s3cr3t"},
		{name: "empty default", in: "${NOPE:-}", want: ""},
		{name: "default is literal", in: "${NOPE:-a:-b $x}", want: "a:-b $x"},
		{name: "value is not re-expanded", in: "${DOLLAR}", want: "${TOKEN}"},
		{name: "value cannot add structure", in: "${YAML}", want: "a: [b]\n- c"},
		{name: "escaped dollar", in: "costs $$5", want: "costs $5"},
		{name: "escaped reference", in: "$${TOKEN}", want: "${TOKEN}"},
		{name: "escape then reference", in: "$$$${TOKEN}", want: "$${TOKEN}"},
		{name: "lone dollar kept", in: "5$ and $HOME", want: "5$ and $HOME"},
		{name: "trailing dollar kept", in: "end$", want: "end$"},
		{name: "unset", in: "Bearer ${NOPE}", want: "Bearer ",
			errs: []string{"7: environment variable NOPE is not set; set it, or give a default with ${NOPE:-default}"}},
		{name: "every error reported", in: "${A} ${B}", want: " ",
			errs: []string{
				"0: environment variable A is not set; set it, or give a default with ${A:-default}",
				"5: environment variable B is not set; set it, or give a default with ${B:-default}",
			}},
		{name: "unterminated", in: "x ${TOKEN", want: "x ${TOKEN",
			errs: []string{"2: unterminated ${: expected ${NAME} or ${NAME:-default}; write a literal $ as $$"}},
		{name: "empty name", in: "${}", want: "",
			errs: []string{"0: invalid ${...}: expected ${NAME} or ${NAME:-default}, NAME made of letters, digits and _ and not starting with a digit"}},
		{name: "leading digit", in: "${1A}", want: "",
			errs: []string{"0: invalid ${...}: expected ${NAME} or ${NAME:-default}, NAME made of letters, digits and _ and not starting with a digit"}},
		{name: "shell default without colon", in: "${NOPE-x}", want: "",
			errs: []string{"0: invalid ${...}: expected ${NAME} or ${NAME:-default}, NAME made of letters, digits and _ and not starting with a digit"}},
		{name: "assign form", in: "${NOPE:=x}", want: "",
			errs: []string{"0: unsupported ${...} form: expected ${NAME} or ${NAME:-default}"}},
		{name: "nested default", in: "${NOPE:-${TOKEN}}", want: "}",
			errs: []string{"0: ${NOPE:-...}: a default is literal text; nested ${...} is not supported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := expandEnv(tt.in, env)
			if got != tt.want {
				t.Errorf("expandEnv(%q) = %q, want %q", tt.in, got, tt.want)
			}
			var gotErrs []string
			for _, e := range errs {
				gotErrs = append(gotErrs, strconv.Itoa(e.Offset)+": "+e.Message)
			}
			if strings.Join(gotErrs, "\n") != strings.Join(tt.errs, "\n") {
				t.Errorf("expandEnv(%q) errors:\n%s\nwant:\n%s", tt.in, strings.Join(gotErrs, "\n"), strings.Join(tt.errs, "\n"))
			}
		})
	}
}

// FuzzExpandEnv checks that expansion never panics, that error offsets point
// at a "${" in the input, and that escaping every $ as $$ gives the input
// back unchanged and without errors.
func FuzzExpandEnv(f *testing.F) {
	for _, s := range []string{"", "plain", "${A}", "${A:-b}", "$$", "${", "${:-}", "$${A}", "${A:-${B}}", "a$b$"} {
		f.Add(s)
	}
	env := mapEnv(map[string]string{"A": "x", "B": ""})
	f.Fuzz(func(t *testing.T, s string) {
		_, errs := expandEnv(s, env)
		for _, e := range errs {
			if e.Offset < 0 || e.Offset+e.Length > len(s) || !strings.HasPrefix(s[e.Offset:], "${") {
				t.Fatalf("expandEnv(%q): error offset %d length %d does not point at a ${", s, e.Offset, e.Length)
			}
		}
		escaped := strings.ReplaceAll(s, "$", "$$")
		got, errs := expandEnv(escaped, env)
		if got != s || len(errs) != 0 {
			t.Fatalf("expandEnv(%q) = %q, %v; want the unescaped input back", escaped, got, errs)
		}
	})
}
