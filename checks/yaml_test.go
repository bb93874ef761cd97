package checks

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// parseErr parses src as checks.yaml in testdata/ and returns its error text.
func parseErr(t *testing.T, src string, env func(string) (string, bool)) string {
	t.Helper()
	_, err := Parse("checks.yaml", []byte(src), "testdata", env)
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestRuleErrorPositions maps a compile error inside a rule to the file for
// each way a rule can be written.
func TestRuleErrorPositions(t *testing.T) {
	tests := []struct {
		name string
		rule string // the YAML after "    select: "
		want string
	}{
		{name: "plain scalar", rule: "response.itms + respons",
			want: "checks.yaml:4:29: select rule (line 1, column 17): unknown name respons (did you mean response?)"},
		{name: "double-quoted scalar", rule: `"response.items + respons"`,
			want: "checks.yaml:4:31: select rule (line 1, column 18): unknown name respons (did you mean response?)"},
		{name: "single-quoted scalar", rule: `'response.items + respons'`,
			want: "checks.yaml:4:31: select rule (line 1, column 18): unknown name respons (did you mean response?)"},
		{name: "block scalar", rule: "|\n      response.items\n        + respons",
			want: "checks.yaml:6:11: select rule (line 2, column 5): unknown name respons (did you mean response?)"},
		{name: "block scalar with comment and strip", rule: "|-   # the rule\n      response.items\n        + respons",
			want: "checks.yaml:6:11: select rule (line 2, column 5): unknown name respons (did you mean response?)"},
		{name: "block scalar with a blank first line", rule: "|\n\n      response.items + respons",
			want: "checks.yaml:6:24: select rule (line 2, column 18): unknown name respons (did you mean response?)"},
		{name: "block scalar with indentation indicator", rule: "|2\n        response.items + respons",
			want: "checks.yaml:5:26: select rule (line 1, column 20): unknown name respons (did you mean response?)"},
		{name: "folded scalar: start of the block", rule: ">\n      response.items\n      + respons",
			want: "checks.yaml:5:7: select rule (line 1, column 18): unknown name respons (did you mean response?)"},
		{name: "empty rule", rule: `""`,
			want: "checks.yaml:4:13: consumers[0]: a consumer needs a select rule that evaluates to the list of items the caller uses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\nconsumers:\n  - name: c\n    select: " + tt.rule + "\n"
			if got := parseErr(t, src, noEnv); got != tt.want {
				t.Errorf("got  %s\nwant %s\nfor\n%s", got, tt.want, src)
			}
		})
	}
}

// TestYAMLFeatures covers the YAML constructs a hand-written decoder must
// handle or refuse explicitly.
func TestYAMLFeatures(t *testing.T) {
	base := "version: 1\nconsumers:\n  - {name: c, select: response.items}\n"
	tests := []struct {
		name string
		src  string
		want string
	}{
		{name: "anchor and alias", src: base + `probes:
  - name: a
    request: {url: "http://127.0.0.1:1/", headers: &auth {X-Key: k}}
    consumer: c
  - name: b
    request: {url: "http://127.0.0.1:1/", headers: *auth}
    consumer: c
`},
		{name: "unknown alias", src: base + "max_concurrency: *nope\n",
			want: "checks.yaml:4:18: max_concurrency: alias *nope refers to no anchor &nope"},
		{name: "cyclic alias", src: base + "probes: &loop [*loop]\n",
			want: "checks.yaml:4:16: probes[0]: alias *loop refers to itself"},
		{name: "merge key", src: base + "defaults:\n  <<: {interval: 1m}\n",
			want: "checks.yaml:5:3: defaults: merge keys (<<) are not supported; put settings shared by probes under defaults:"},
		{name: "str tag", src: base + "storage: {path: !!str 123}\n"},
		{name: "unsupported tag", src: base + "storage: {path: !secret x}\n",
			want: "checks.yaml:4:17: storage.path: YAML tag !secret is not supported"},
		{name: "two documents", src: base + "---\nversion: 1\n",
			want: "checks.yaml:5:1: a second YAML document; expected exactly one"},
		{name: "empty file", src: "# nothing\n",
			want: "checks.yaml:1:1: the file is empty; expected a YAML mapping"},
		{name: "not a mapping", src: "- version: 1\n",
			want: "checks.yaml:1:1: top level: expected a mapping, got a list"},
		{name: "null sections are empty", src: base + "storage:\nserver:\nnotify:\ndefaults:\nprobes:\n"},
		{name: "tab indentation", src: "version: 1\nstorage:\n\tpath: x\n",
			want: "checks.yaml:3:1: YAML syntax error: found character '\t' that cannot start any token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseErr(t, tt.src, noEnv); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestAliasBomb feeds a json: fixture that expands to 10^7 values through
// aliases: the decoder must stop at its budget, quickly, with an error.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nconsumers:\n  - {name: c, select: response.items}\n")
	b.WriteString("probes:\n  - name: p\n    consumer: c\n    request:\n      url: http://127.0.0.1:1/\n      json:\n")
	b.WriteString("        a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&b, "        a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	got := parseErr(t, b.String(), noEnv)
	if !strings.Contains(got, "the document expands to more than 1048576 values; simplify its aliases") || strings.Count(got, "\n") != 0 {
		t.Errorf("got %q, want one error about the expansion limit", got)
	}
}

// TestEnvExpansionInConfig checks that expansion happens after parsing: a
// value cannot add YAML structure, positions stay those of the file, and
// consumer rules are left alone.
func TestEnvExpansionInConfig(t *testing.T) {
	env := mapEnv(map[string]string{
		"INJECT":  "x\nprobes: []\n  - {",
		"WORKERS": "12",
		"SECS":    "45s",
	})
	src := `version: 1
max_concurrency: ${WORKERS}
defaults: {interval: "${SECS}"}
server: {token: "${INJECT}"}
consumers:
  - name: c
    select: 'response["${HOME}"] ?? []'
probes:
  - name: p
    request: {url: "http://127.0.0.1:1/", body: "${INJECT}"}
    consumer: c
`
	cfg, err := Parse("checks.yaml", []byte(src), "testdata", env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxConcurrency != 12 || cfg.Probes[0].Interval.String() != "45s" {
		t.Errorf("max_concurrency %d, interval %s; want 12 and 45s from the environment", cfg.MaxConcurrency, cfg.Probes[0].Interval)
	}
	if cfg.Server.Token.Reveal() != "x\nprobes: []\n  - {" || cfg.Probes[0].Steps[0].Request.Body != "x\nprobes: []\n  - {" {
		t.Errorf("an environment value changed the document's structure")
	}
	if got := cfg.Consumers["c"].Select; got != `response["${HOME}"] ?? []` {
		t.Errorf("select = %q; rules must not be expanded", got)
	}
}

func TestErrorList(t *testing.T) {
	list := ErrorList{
		{File: "b.yaml", Line: 1, Column: 1, Message: "later file"},
		{File: "a.yaml", Line: 3, Column: 2, Message: "second"},
		{File: "a.yaml", Line: 1, Column: 9, Message: "first"},
		{File: "a.yaml", Line: 3, Column: 2, Message: "second"},
	}
	err := list.Err()
	want := "a.yaml:1:9: first\na.yaml:3:2: second\nb.yaml:1:1: later file"
	if err.Error() != want {
		t.Errorf("Err() =\n%s\nwant\n%s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Message != "first" {
		t.Errorf("errors.As(*Error) = %v, want the first error", e)
	}
	if (ErrorList{}).Err() != nil {
		t.Errorf("an empty list is not an error")
	}
}

// TestLoadFileNames checks that errors name files as the user gave them:
// a relative config keeps relative names, an absolute one absolute names.
func TestLoadFileNames(t *testing.T) {
	abs, err := filepath.Abs("testdata/invalid-consumer-file-missing.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(abs)
	for _, tt := range []struct{ path, want string }{
		{"testdata/invalid-consumer-file-missing.yaml",
			"testdata/invalid-consumer-file-missing.yaml:4:11: consumers[0].file: cannot read consumer file testdata/consumers/missing.yaml: no such file or directory"},
		{"./testdata/../testdata/invalid-consumer-file-missing.yaml",
			"./testdata/../testdata/invalid-consumer-file-missing.yaml:4:11: consumers[0].file: cannot read consumer file testdata/consumers/missing.yaml: no such file or directory"},
		{abs,
			abs + ":4:11: consumers[0].file: cannot read consumer file " + dir + "/consumers/missing.yaml: no such file or directory"},
	} {
		if _, err := Load(tt.path, noEnv); err == nil || err.Error() != tt.want {
			t.Errorf("Load(%s) =\n%v\nwant\n%s", tt.path, err, tt.want)
		}
	}

	_, err = Load("testdata/no-such-config.yaml", noEnv)
	if err == nil || err.Error() != "testdata/no-such-config.yaml: cannot read config: no such file or directory" {
		t.Errorf("Load(missing) = %v", err)
	}
}
