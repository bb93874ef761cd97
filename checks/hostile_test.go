package checks

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var updateCorpus = flag.Bool("update-corpus", false, "write the hostile inputs to testdata/fuzz as seed corpus")

const hostileBase = "version: 1\nconsumers:\n  - {name: c, select: response.items}\n"

// laughs is a billion-laughs document: levels anchors, each a list of ten
// aliases to the one before, 10^levels values in all.
func laughs(indent string, levels int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n", indent)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "%sl%d: &l%d [%s]\n", indent, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	return b.String()
}

// hostileConfigs are checks.yaml files written to hurt the loader. corpus
// marks the ones small enough to keep as fuzz seeds.
func hostileConfigs() []struct {
	name   string
	src    string
	corpus bool
} {
	probe := "probes:\n  - name: p\n    consumer: c\n    request:\n      url: http://127.0.0.1:1/\n      json:\n"
	return []struct {
		name   string
		src    string
		corpus bool
	}{
		{"deep flow nesting", hostileBase + "x: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n", true},
		{"deep flow nesting in a fixture", hostileBase + probe + "        a: " + strings.Repeat("{a: ", 3000) + "1" + strings.Repeat("}", 3000) + "\n", true},
		{"deep block nesting", hostileBase + "x:\n" + func() string {
			var b strings.Builder
			for i := 1; i <= 300; i++ {
				b.WriteString(strings.Repeat(" ", i) + "k:\n")
			}
			return b.String()
		}(), true},
		{"billion laughs in a fixture", hostileBase + probe + laughs("        ", 9), true},
		{"billion laughs under an unknown key", hostileBase + "junk:\n" + laughs("  ", 9), true},
		{"billion laughs through merge keys", hostileBase + "a: &a {x: 1, y: 2}\nb: &b {<<: *a, c: *a, d: *a, e: *a}\nc: &c {<<: *b, f: *b, g: *b, h: *b}\nd: {<<: *c, i: *c, j: *c, k: *c}\n", true},
		{"alias to itself", hostileBase + "probes: &p [*p]\n", true},
		{"huge scalar", hostileBase + "server: {token: \"" + strings.Repeat("x", 4<<20) + "\"}\n", false},
		{"huge key", hostileBase + strings.Repeat("k", 1<<20) + ": 1\n", false},
		{"many keys", hostileBase + "x:\n" + func() string {
			var b strings.Builder
			for i := range 20000 {
				fmt.Fprintf(&b, "  k%d: v\n", i)
			}
			return b.String()
		}(), false},
		{"invalid UTF-8 in a value", hostileBase + "server: {token: \"\xff\xfe\xfd\"}\n", true},
		{"invalid UTF-8 in a key", hostileBase + "\xff\xfe: 1\n", true},
		{"invalid UTF-8 in a rule", "version: 1\nconsumers:\n  - {name: c, select: \"response.\xff\"}\n", true},
		{"unterminated ${", hostileBase + "server: {token: \"${\"}\n", true},
		{"empty ${}", hostileBase + "server: {token: \"${}\"}\n", true},
		{"unclosed ${A", hostileBase + "server: {token: \"${TP_TOKEN\"}\n", true},
		{"nested ${ defaults", hostileBase + "server: {token: \"${A:-${B:-${C:-${D}}}}\"}\n", true},
		{"${ with a bad name", hostileBase + "server: {token: \"${1BAD} ${A-B} ${ A}\"}\n", true},
		{"escaped $${", hostileBase + "server: {token: \"$${TP_TOKEN}\"}\n", true},
		{"many ${", hostileBase + "server: {token: \"" + strings.Repeat("${", 50000) + "\"}\n", false},
		{"${ in a key", hostileBase + "${TP_TOKEN}: 1\n", true},
		{"NUL byte", "version: 1\x00\n" + hostileBase[len("version: 1\n"):], true},
		{"NUL in a string", hostileBase + "server: {token: \"a\x00b\"}\n", true},
		{"escaped NUL", hostileBase + "server: {token: \"a\\0b\"}\n", true},
		{"duplicate keys", hostileBase + "version: 1\nversion: 2\n", true},
		{"duplicate keys in a flow map", hostileBase + "server: {token: a, token: b}\n", true},
		{"tab indentation", hostileBase + "server:\n\ttoken: a\n", true},
		{"tab after a colon", "version:\t1\nconsumers:\t[]\n", true},
		{"byte order mark", "\ufeff" + hostileBase, true},
		{"two documents", hostileBase + "---\n" + hostileBase, true},
		{"only a document marker", "---\n", true},
		{"custom tag", hostileBase + "max_concurrency: !boom 3\n", true},
		{"binary tag", hostileBase + "server: {token: !!binary aGVsbG8=}\n", true},
		{"CR line endings", strings.ReplaceAll(hostileBase, "\n", "\r"), true},
		{"unclosed flow", hostileBase + "x: [1, {a: \n", true},
		{"unclosed quote", hostileBase + "x: \"abc\n", true},
		{"empty", "", true},
	}
}

// TestHostileConfigs feeds each hostile file to Parse: it must answer with
// a config or with positioned errors, never panic, and finish (a minute is
// the hang guard, not a performance bound; times are logged).
func TestHostileConfigs(t *testing.T) {
	env := mapEnv(map[string]string{"TP_TOKEN": "t0ken-value"})
	for _, tt := range hostileConfigs() {
		t.Run(tt.name, func(t *testing.T) {
			type answer struct {
				cfg   *Config
				err   error
				panic any
			}
			done := make(chan answer, 1)
			start := time.Now()
			go func() {
				defer func() {
					if p := recover(); p != nil {
						done <- answer{panic: p}
					}
				}()
				cfg, err := Parse("checks.yaml", []byte(tt.src), "testdata", env)
				done <- answer{cfg: cfg, err: err}
			}()
			var a answer
			select {
			case a = <-done:
			case <-time.After(time.Minute):
				t.Fatalf("Parse still running after a minute")
			}
			if a.panic != nil {
				t.Fatalf("Parse panicked: %v", a.panic)
			}
			took := time.Since(start)
			if a.err == nil {
				if a.cfg == nil {
					t.Fatalf("no config and no error")
				}
				t.Logf("%v: valid config", took)
				return
			}
			var list ErrorList
			if !errors.As(a.err, &list) || len(list) == 0 {
				t.Fatalf("error %v (%T) is not a non-empty ErrorList", a.err, a.err)
			}
			for _, e := range list {
				if e.Line < 1 || e.Column < 1 || e.File == "" || e.Message == "" {
					t.Errorf("error without a position: %#v", e)
				}
			}
			first := list[0].Error()
			if len(first) > 200 {
				first = first[:200] + "…"
			}
			t.Logf("%v: %d errors, first %s", took, len(list), first)
		})
	}
}

// TestAliasExpansionIsBounded: a billion laughs (10^9 values from a few
// hundred bytes) in a fixture, in a consumer file and under an unknown key
// must stop at maxNodes with one positioned error.
func TestAliasExpansionIsBounded(t *testing.T) {
	want := fmt.Sprintf("the document expands to more than %d values", maxNodes)
	probe := "probes:\n  - name: p\n    consumer: c\n    request:\n      url: http://127.0.0.1:1/\n      json:\n"
	got := parseErr(t, hostileBase+probe+laughs("        ", 9), noEnv)
	if !strings.Contains(got, want) {
		t.Errorf("fixture: got %q, want %q", got, want)
	}

	file := filepath.Join(t.TempDir(), "c.yaml")
	src := "name: c\nselect: response.items\nfixtures:\n  - name: f\n    expect: pass\n    response:\n" + laughs("      ", 9)
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := LoadConsumer(file)
	t.Logf("consumer file: %v in %v", err, time.Since(start))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("consumer file: got %v, want %q", err, want)
	}
}

// FuzzLoadConsumer feeds arbitrary bytes to LoadConsumer through a file: it
// must never panic, and every error must carry a position.
func FuzzLoadConsumer(f *testing.F) {
	addFileSeeds(f, "testdata/consumers/*.yaml", "../consumers/select_results.yaml")
	f.Add([]byte("name: c\nselect: response.items\nfixtures:\n  - name: f\n    expect: pass\n    response:\n" + laughs("      ", 4)))
	f.Add([]byte("name: c\nselect: |\n  filter(response.items, all(response.items, true))\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(dir, "consumer.yaml")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadConsumer(file)
		if err == nil {
			if c == nil {
				t.Fatal("no consumer and no error")
			}
			return
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("error %v (%T) is not a non-empty ErrorList", err, err)
		}
		for _, e := range list {
			if e.Line < 1 || e.Column < 1 || e.File == "" || e.Message == "" {
				t.Fatalf("error without a position, file or message: %#v", e)
			}
		}
	})
}

// TestHostileCorpus keeps the small hostile inputs in FuzzParse's seed
// corpus; -update-corpus writes them.
func TestHostileCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	for _, tt := range hostileConfigs() {
		if !tt.corpus {
			continue
		}
		name := filepath.Join(dir, "hostile-"+strings.NewReplacer(" ", "-", "$", "dollar", "{", "brace", "}", "", "/", "-").Replace(tt.name))
		want := "go test fuzz v1\n[]byte(" + strconv.Quote(tt.src) + ")\n"
		if *updateCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(name)
		if err != nil || string(got) != want {
			t.Errorf("%s is missing or stale (err %v); run go test -run TestHostileCorpus -update-corpus ./checks", name, err)
		}
	}
}
