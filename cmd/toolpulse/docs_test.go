package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/alecthomas/kong"

	"github.com/toolpulse/toolpulse/checks"
)

// The docs are README.md (the front door) and docs/*.md (the reference).
// These tests keep them true to the program: every relative link and
// anchor resolves, every YAML block loads (or, for a fragment, uses only
// keys the loader knows) and every toolpulse command line parses with the
// command line's own definitions.

const docsRoot = "../.."

// mdPage is one Markdown file, its path relative to the repository root.
type mdPage struct {
	path string
	text string
}

func docsPages(t *testing.T) []mdPage {
	t.Helper()
	paths := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(docsRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("no docs/*.md found")
	}
	for _, m := range more {
		rel, _ := filepath.Rel(docsRoot, m)
		paths = append(paths, filepath.ToSlash(rel))
	}
	var pages []mdPage
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(docsRoot, p))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, mdPage{path: p, text: string(data)})
	}
	return pages
}

// fence is one fenced code block: the line of its opening fence (1-based),
// its info string, the marker comment just before it and its text with the
// fence's indentation removed.
type fence struct {
	line   int
	lang   string
	marker string
	body   string
	// lines are the page's line numbers of body's lines.
	lines []int
}

var (
	fenceOpen  = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^`\\s]*)\\s*$")
	markerLine = regexp.MustCompile(`^\s*<!--\s*(.*?)\s*-->\s*$`)
)

// splitFences returns the page's fenced blocks and its lines with every
// line of a fenced block (fences included) blanked, so that headings and
// links are looked for only in prose.
func splitFences(text string) ([]fence, []string) {
	lines := strings.Split(text, "\n")
	prose := make([]string, len(lines))
	var fences []fence
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil {
			prose[i] = lines[i]
			continue
		}
		indent, mark := m[1], m[2]
		f := fence{line: i + 1, lang: m[3]}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if mm := markerLine.FindStringSubmatch(lines[j]); mm != nil {
				f.marker = mm[1]
			}
			break
		}
		var body strings.Builder
		j := i + 1
		for ; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == mark {
				break
			}
			body.WriteString(strings.TrimPrefix(lines[j], indent))
			body.WriteString("\n")
			f.lines = append(f.lines, j+1)
		}
		f.body = body.String()
		fences = append(fences, f)
		i = j // the closing fence; prose stays blank for the block
	}
	return fences, prose
}

var (
	headingLine = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchor  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	inlineLink  = regexp.MustCompile(`\[([^\]]*)\]\(([^)]*)\)`)
	codeSpan    = regexp.MustCompile("(`+)([^`]|[^`][\\s\\S]*?[^`])(`+)")
)

// slug is GitHub's anchor for a heading: the text as rendered, lower-cased,
// with everything but letters, digits, spaces, '-' and '_' dropped and
// spaces turned into '-'.
func slug(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors returns every anchor a page defines: its headings' slugs, with
// -1, -2... for repeated ones, and <a id> / <a name> targets.
func anchors(text string) map[string]bool {
	_, prose := splitFences(text)
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := headingLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// proseLinks returns the link targets of a page's prose with the line each
// starts on; code spans and fenced blocks are not looked at, and a link may
// run over a line break.
func proseLinks(text string) []struct {
	line   int
	target string
} {
	_, prose := splitFences(text)
	joined := strings.Join(prose, "\n")
	// Blank code spans, keeping their line breaks, so that `[x](y)` in code
	// is not taken for a link.
	joined = codeSpan.ReplaceAllStringFunc(joined, func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '\n' {
				return r
			}
			return ' '
		}, s)
	})
	var out []struct {
		line   int
		target string
	}
	for _, m := range inlineLink.FindAllStringSubmatchIndex(joined, -1) {
		target := strings.TrimSpace(joined[m[4]:m[5]])
		if i := strings.IndexAny(target, " \t"); i >= 0 {
			target = target[:i] // a title after the URL
		}
		out = append(out, struct {
			line   int
			target string
		}{1 + strings.Count(joined[:m[0]], "\n"), target})
	}
	return out
}

// TestDocsLinks fails on a relative link to a file that does not exist and
// on an #anchor that no heading (or <a id>) of the target page defines.
func TestDocsLinks(t *testing.T) {
	pages := docsPages(t)
	anchorCache := map[string]map[string]bool{}
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchorCache[rel]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(docsRoot, rel))
		if err != nil {
			return nil, err
		}
		a := anchors(string(data))
		anchorCache[rel] = a
		return a, nil
	}
	checked := 0
	for _, p := range pages {
		for _, l := range proseLinks(p.text) {
			target := l.target
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			where := fmt.Sprintf("%s:%d", p.path, l.line)
			file, anchor, _ := strings.Cut(target, "#")
			rel := p.path
			if file != "" {
				rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(p.path), file)))
				if strings.HasPrefix(rel, "../") {
					t.Errorf("%s: link %q leaves the repository", where, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(docsRoot, rel)); err != nil {
					t.Errorf("%s: link %q: no such file %s", where, target, rel)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(rel, ".md") {
				t.Errorf("%s: link %q: an anchor into %s, which is not Markdown", where, target, rel)
				continue
			}
			a, err := anchorsOf(rel)
			if err != nil {
				t.Errorf("%s: link %q: %v", where, target, err)
				continue
			}
			if !a[anchor] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", where, target, rel, anchor)
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d relative links; the parser is missing some", checked)
	}
}

// TestDocsSlug pins the heading-slug rules the link test relies on.
func TestDocsSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Your first check in ten minutes", "your-first-check-in-ten-minutes"},
		{"`toolpulse test`: fixtures and contract mutations", "toolpulse-test-fixtures-and-contract-mutations"},
		{"checks.yaml reference", "checksyaml-reference"},
		{"Runs: outcomes, codes and how a run works", "runs-outcomes-codes-and-how-a-run-works"},
		{"The `max_body_bytes` cap", "the-max_body_bytes-cap"},
		{"Set-up", "set-up"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
	a := anchors("# A\n\n```\n# not a heading\n```\n\n## A\n\n### A\n\n<a id=\"kept\"></a>\n")
	for _, want := range []string{"a", "a-1", "a-2", "kept"} {
		if !a[want] {
			t.Errorf("anchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("anchors: a comment in a code block was taken for a heading")
	}
}

// yamlMarker is what the HTML comment just before a ```yaml block says the
// block is:
//
//	<!-- yaml: config -->                 a whole checks.yaml, loaded by checks.Parse
//	<!-- yaml: config dir=examples/mcp -->  the same, its relative paths resolved in that directory
//	<!-- yaml: consumer -->               a whole consumer file, loaded by checks.LoadConsumer
//	<!-- yaml: fragment of PATH -->       part of a larger file, at PATH: config (the top level),
//	                                      consumer (a consumer file), or a path into checks.yaml
//	                                      such as notify, probes[] or probes[].steps[]
//	<!-- yaml: continues -->              more of the page's previous yaml block, loaded with it
//	                                      as that block's marker says
//
// Words of the form NAME=VALUE with an upper-case NAME set that environment
// variable for the load.
type yamlMarker struct {
	kind string // config, consumer, fragment
	at   string // fragment: where it sits
	dir  string // config: relative to the repository root
	env  map[string]string
}

func parseYAMLMarker(s string) (yamlMarker, error) {
	rest, ok := strings.CutPrefix(s, "yaml:")
	if !ok {
		return yamlMarker{}, errors.New(`no marker; put <!-- yaml: config|consumer|fragment of PATH --> just before the block`)
	}
	words := strings.Fields(rest)
	if len(words) == 0 {
		return yamlMarker{}, errors.New("an empty yaml marker")
	}
	m := yamlMarker{kind: words[0], env: map[string]string{}}
	words = words[1:]
	switch m.kind {
	case "config", "consumer", "continues":
	case "fragment":
		if len(words) < 2 || words[0] != "of" {
			return m, errors.New(`a fragment marker reads "fragment of PATH"`)
		}
		m.at, words = words[1], words[2:]
	default:
		return m, fmt.Errorf("unknown yaml marker %q: want config, consumer, fragment of PATH or continues", m.kind)
	}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		switch {
		case ok && k == "dir" && m.kind == "config":
			m.dir = v
		case ok && k != "" && strings.ToUpper(k) == k:
			m.env[k] = v
		default:
			return m, fmt.Errorf("unknown word %q in yaml marker", w)
		}
	}
	return m, nil
}

// wrapFragment places a fragment at its path in a checks.yaml: "probes[]"
// makes it the body of the first probe, "notify" the value of notify. It
// returns the text and how many lines it put before the fragment's first.
func wrapFragment(body, at string) (string, int, error) {
	body = dedent(body)
	switch at {
	case "config":
		return body, 0, nil
	case "consumer":
		at = "consumers[]"
	}
	segs := strings.Split(at, ".")
	for i := len(segs) - 1; i >= 0; i-- {
		seg := segs[i]
		name, list := strings.CutSuffix(seg, "[]")
		if name == "" || strings.ContainsAny(name, "[]") {
			return "", 0, fmt.Errorf("bad fragment path %q", at)
		}
		var b strings.Builder
		b.WriteString(name + ":\n")
		for j, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
			switch {
			case list && j == 0:
				b.WriteString("  - " + l + "\n")
			case list:
				b.WriteString("    " + l + "\n")
			default:
				b.WriteString("  " + l + "\n")
			}
		}
		body = b.String()
	}
	return body, len(segs), nil
}

func dedent(s string) string {
	lines := strings.Split(s, "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || n < common {
			common = n
		}
	}
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			lines[i] = l[common:]
		}
	}
	return strings.Join(lines, "\n")
}

// fragmentProblem says whether a loader error on a wrapped fragment is the
// fragment's fault: a key the config does not know, a repeated key, or
// YAML that does not parse. Anything else (a missing required key, a
// consumer defined elsewhere) is the price of loading a part on its own.
func fragmentProblem(e *checks.Error) bool {
	for _, s := range []string{"unknown key", "duplicate key", "cannot parse YAML", "not valid UTF-8"} {
		if strings.Contains(e.Message, s) {
			return true
		}
	}
	return false
}

// relocate makes the positions of a loader's errors positions in the page:
// line skip+i of what was loaded is line lines[i-1] of the page.
func relocate(err error, page string, lines []int, skip int) error {
	var list checks.ErrorList
	if !errors.As(err, &list) {
		return err
	}
	out := make(checks.ErrorList, len(list))
	for i, e := range list {
		moved := *e
		moved.File = page
		if i := moved.Line - skip - 1; i >= 0 && i < len(lines) {
			moved.Line = lines[i]
		}
		out[i] = &moved
	}
	return out
}

// checkYAMLBlock loads one ```yaml block of page as its marker says.
func checkYAMLBlock(t *testing.T, page string, f fence) error {
	m, err := parseYAMLMarker(f.marker)
	if err != nil {
		return err
	}
	for k, v := range m.env {
		t.Setenv(k, v)
	}
	switch m.kind {
	case "config":
		dir := t.TempDir()
		if m.dir != "" {
			dir = filepath.Join(docsRoot, m.dir)
		}
		_, err := checks.Parse(page, []byte(f.body), dir, os.LookupEnv)
		return relocate(err, page, f.lines, 0)
	case "consumer":
		path := filepath.Join(t.TempDir(), "consumer.yaml")
		if err := os.WriteFile(path, []byte(f.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := checks.LoadConsumer(path)
		return relocate(err, page, f.lines, 0)
	default:
		text, before, err := wrapFragment(f.body, m.at)
		if err != nil {
			return err
		}
		_, err = checks.Parse(page, []byte(text), t.TempDir(), os.LookupEnv)
		err = relocate(err, page, f.lines, before)
		var list checks.ErrorList
		if err == nil || !errors.As(err, &list) {
			return err
		}
		var bad checks.ErrorList
		for _, e := range list {
			if fragmentProblem(e) {
				bad = append(bad, e)
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%w\n(columns count in the fragment placed at %s:\n%s)", bad, m.at, text)
		}
		return nil
	}
}

// TestDocsYAMLBlocks loads every ```yaml block of the docs as its marker
// says; a block without a marker fails.
func TestDocsYAMLBlocks(t *testing.T) {
	n := 0
	for _, p := range docsPages(t) {
		fences, _ := splitFences(p.text)
		var prev *fence
		for _, f := range fences {
			if f.lang != "yaml" && f.lang != "yml" {
				continue
			}
			n++
			where := fmt.Sprintf("%s:%d", p.path, f.line)
			if strings.TrimSpace(f.marker) == "yaml: continues" {
				if prev == nil {
					t.Errorf("%s: a yaml block marked continues follows no yaml block", where)
					continue
				}
				// Loaded as one block with the one before.
				f = fence{line: prev.line, lang: prev.lang, marker: prev.marker, body: prev.body + f.body,
					lines: append(append([]int{}, prev.lines...), f.lines...)}
			}
			prev = &f
			t.Run(where, func(t *testing.T) {
				if err := checkYAMLBlock(t, p.path, f); err != nil {
					t.Errorf("%s: yaml block (%s):\n%v", where, f.marker, err)
				}
			})
		}
	}
	if n < 10 {
		t.Errorf("found only %d yaml blocks", n)
	}
}

// shellWords splits a command line as sh would for our purposes: quotes,
// backslashes, a comment, and the operators that end one command (|, &&,
// ||, ;, &, >). Variables are left as written.
func shellWords(line string) [][]string {
	var cmds [][]string
	var words []string
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	end := func() {
		flush()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\'':
			inWord = true
			for i++; i < len(rs) && rs[i] != '\''; i++ {
				w.WriteRune(rs[i])
			}
		case r == '"':
			inWord = true
			for i++; i < len(rs) && rs[i] != '"'; i++ {
				if rs[i] == '\\' && i+1 < len(rs) {
					i++
				}
				w.WriteRune(rs[i])
			}
		case r == '\\' && i+1 < len(rs):
			inWord = true
			i++
			w.WriteRune(rs[i])
		case r == '#' && !inWord:
			end()
			return cmds
		case r == ' ' || r == '\t':
			flush()
		case r == '|' || r == ';' || r == '&' || r == '>' || r == '<':
			end()
			if r == '>' || r == '<' { // a redirection's target is no command
				for i+1 < len(rs) && (rs[i+1] == ' ' || rs[i+1] == '>') {
					i++
				}
				for i+1 < len(rs) && rs[i+1] != ' ' {
					i++
				}
			}
		default:
			inWord = true
			w.WriteRune(r)
		}
	}
	end()
	return cmds
}

// toolpulseArgs returns the arguments of a command that runs toolpulse
// (toolpulse, ./toolpulse, go run ./cmd/toolpulse), after any VAR=value
// assignments, and whether it is one.
func toolpulseArgs(words []string) ([]string, bool) {
	for len(words) > 0 && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(words[0]) {
		words = words[1:]
	}
	switch {
	case len(words) > 0 && (words[0] == "toolpulse" || words[0] == "./toolpulse"):
		if len(words) > 1 && strings.HasPrefix(words[1], "<") {
			return nil, false // toolpulse <version>: what it prints, not a command
		}
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && strings.TrimSuffix(words[2], "/") == "./cmd/toolpulse":
		return words[3:], true
	}
	return nil, false
}

// parseCommandLine parses args with the command line's own definitions
// (the cli struct and kong's options, as env.run builds them) without
// running the chosen command.
func parseCommandLine(args []string) (err error) {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("toolpulse"),
		kong.Writers(io.Discard, io.Discard),
		kong.Exit(func(code int) { panic(helpExit{code}) }),
		kong.Vars{"version": "docs"},
	)
	if err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			h, ok := p.(helpExit)
			if !ok {
				panic(p)
			}
			if h.code != 0 {
				err = fmt.Errorf("exit %d", h.code)
			}
		}
	}()
	_, err = parser.Parse(args)
	return err
}

// commandLines returns the command lines of a shell block: every line of
// sh/bash/shell (continuations joined), the "$ " lines of console.
func commandLines(f fence) []string {
	var out []string
	var cont strings.Builder
	for _, l := range strings.Split(f.body, "\n") {
		if f.lang == "console" {
			cmd, ok := strings.CutPrefix(l, "$ ")
			if !ok {
				continue
			}
			l = cmd
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cont.WriteString(s + " ")
			continue
		}
		cont.WriteString(l)
		if line := strings.TrimSpace(cont.String()); line != "" {
			out = append(out, line)
		}
		cont.Reset()
	}
	return out
}

// TestDocsCommands parses every toolpulse command of the docs' sh, bash
// and console blocks with the real subcommands and flags.
func TestDocsCommands(t *testing.T) {
	n := 0
	for _, p := range docsPages(t) {
		fences, _ := splitFences(p.text)
		for _, f := range fences {
			switch f.lang {
			case "sh", "bash", "shell", "console":
			default:
				continue
			}
			for _, line := range commandLines(f) {
				for _, words := range shellWords(line) {
					args, ok := toolpulseArgs(words)
					if !ok {
						continue
					}
					n++
					if err := parseCommandLine(args); err != nil {
						t.Errorf("%s:%d: %q does not parse: %v", p.path, f.line, line, err)
					}
				}
			}
		}
	}
	if n < 3 {
		t.Errorf("found only %d toolpulse commands", n)
	}
}

// TestDocsCommandParser pins that the parser refuses what it should, so
// TestDocsCommands cannot pass by accepting everything.
func TestDocsCommandParser(t *testing.T) {
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{"go run ./cmd/toolpulse demo     # the product, offline", true},
		{"toolpulse baseline reset --probe external_search", true},
		{`toolpulse mcp tools --url http://127.0.0.1:3901/mcp --header "Authorization=Bearer $MCP_TOKEN"`, true},
		{"./toolpulse -c $C test --mutate", true},
		{"toolpulse --version", true},
		{"toolpulse baseline reset --probes external_search", false},
		{"toolpulse baseline reset", false},
		{"toolpulse chek", false},
		{"toolpulse history --format yaml", false},
	} {
		cmds := shellWords(c.line)
		if len(cmds) == 0 {
			t.Errorf("%q: no command", c.line)
			continue
		}
		args, ok := toolpulseArgs(cmds[0])
		if !ok {
			t.Errorf("%q: not taken for a toolpulse command", c.line)
			continue
		}
		err := parseCommandLine(args)
		if (err == nil) != c.ok {
			t.Errorf("%q: parse error %v, want ok=%v", c.line, err, c.ok)
		}
	}
}

// TestREADMETestCommand keeps the README's test command the one .ci/run
// runs.
func TestREADMETestCommand(t *testing.T) {
	const cmd = "go test -race -count=1 ./..."
	readme, err := os.ReadFile(filepath.Join(docsRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	fences, _ := splitFences(string(readme))
	for _, f := range fences {
		for _, l := range commandLines(f) {
			if words := shellWords(l); len(words) > 0 && strings.Join(words[0], " ") == cmd {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("README.md has no block running %q", cmd)
	}
	ci, err := os.ReadFile(filepath.Join(docsRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(cmd) + `$`).Match(ci) {
		t.Errorf(".ci/run does not run the README's test command %q", cmd)
	}
}

// schemaKeys returns every key path checks.Schema knows: "storage.path",
// "probes[].request.method", "probes[].labels.*".
func schemaKeys(t *testing.T) map[string]bool {
	t.Helper()
	data, err := checks.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	var walk func(n map[string]any, path string)
	walk = func(n map[string]any, path string) {
		if props, ok := n["properties"].(map[string]any); ok {
			for k, v := range props {
				p := k
				if path != "" {
					p = path + "." + k
				}
				keys[p] = true
				if m, ok := v.(map[string]any); ok {
					walk(m, p)
				}
			}
		}
		if m, ok := n["additionalProperties"].(map[string]any); ok {
			walk(m, path+".*")
		}
		if m, ok := n["items"].(map[string]any); ok {
			walk(m, path+"[]")
		}
		for _, alt := range []string{"anyOf", "oneOf", "allOf"} {
			list, _ := n[alt].([]any)
			for _, a := range list {
				if m, ok := a.(map[string]any); ok {
					walk(m, path)
				}
			}
		}
	}
	walk(root, "")
	return keys
}

var backticked = regexp.MustCompile("`([^`]+)`")

// tableKeys returns the keys named in the first column of each "| key |"
// table of a page, with the line of each. A cell names one key in full and
// may add siblings of it (`notify.slack.token` + `channel`); a table under
// a heading that is a key path (### probes[].request) names keys under it.
func tableKeys(text string, roots map[string]bool) map[string]int {
	_, prose := splitFences(text)
	out := map[string]int{}
	heading, inTable := "", false
	for i, l := range prose {
		if m := headingLine.FindStringSubmatch(l); m != nil {
			heading = strings.Trim(m[1], "`")
			continue
		}
		if !strings.HasPrefix(l, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(l, "|")
		if len(cells) < 3 {
			continue
		}
		first := strings.TrimSpace(cells[1])
		if first == "key" {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(first, "---") {
			continue
		}
		names := backticked.FindAllStringSubmatch(first, -1)
		if len(names) == 0 {
			continue
		}
		full := names[0][1]
		if top, _, _ := strings.Cut(full, "."); !roots[strings.TrimSuffix(top, "[]")] {
			full = heading + "." + full
		}
		out[full] = i + 1
		parent := full[:strings.LastIndex(full, ".")+1]
		for _, n := range names[1:] {
			out[parent+n[1]] = i + 1
		}
	}
	return out
}

// TestDocsConfigKeys holds the key tables of the configuration and alerting
// pages to the loader's own table of keys (checks.Schema): every key a
// table names exists, and every key of the sections the tables cover is in
// one of them.
func TestDocsConfigKeys(t *testing.T) {
	known := schemaKeys(t)
	roots := map[string]bool{}
	for k := range known {
		if !strings.ContainsAny(k, ".[") {
			roots[k] = true
		}
	}
	documented := map[string]string{}
	for _, page := range []string{"docs/configuration.md", "docs/alerting.md"} {
		data, err := os.ReadFile(filepath.Join(docsRoot, page))
		if err != nil {
			t.Fatal(err)
		}
		for k, line := range tableKeys(string(data), roots) {
			where := fmt.Sprintf("%s:%d", page, line)
			if !known[k] {
				t.Errorf("%s: the table names %s, a key checks.yaml does not have", where, k)
			}
			if prev, ok := documented[k]; ok {
				t.Errorf("%s: %s is already in the table at %s", where, k, prev)
			}
			documented[k] = where
		}
	}
	// The sections the tables cover, whole: a prefix ending in "." covers
	// every key under it, one without covers the keys directly under it.
	covered := func(k string) bool {
		if strings.HasSuffix(k, ".*") || strings.Contains(k, ".*.") {
			return false // the free-form keys of labels, headers, match
		}
		for _, whole := range []string{"storage.", "fleet.", "server.", "defaults.", "notify.", "probes[].request.", "probes[].mcp.", "probes[].tls."} {
			if strings.HasPrefix(k, whole) {
				return true
			}
		}
		for _, direct := range []string{"", "consumers[].", "probes[]."} {
			if rest, ok := strings.CutPrefix(k, direct); ok && !strings.ContainsAny(rest, ".[") {
				return true
			}
		}
		return false
	}
	hasDocumentedChild := func(k string) bool {
		for d := range documented {
			if strings.HasPrefix(d, k+".") || strings.HasPrefix(d, k+"[]") {
				return true
			}
		}
		return false
	}
	for k := range known {
		if covered(k) && documented[k] == "" && !hasDocumentedChild(k) {
			t.Errorf("checks.yaml key %s is in no table of docs/configuration.md or docs/alerting.md", k)
		}
	}
	if len(documented) < 40 {
		t.Errorf("found only %d documented keys", len(documented))
	}
}

var synopsisFlag = regexp.MustCompile(`(?:^|[\s\[(|])(--?[a-z][a-z-]*)`)

// mentionProblems checks a command as prose mentions it, a synopsis
// (check [--probe N]...) or a part of a line (baseline reset --probe): the
// subcommand must exist and every flag shown must be one it (or the root)
// accepts. Values, arguments and required flags are not looked at.
func mentionProblems(parser *kong.Kong, args []string) []string {
	node := parser.Model.Node
	for i := 0; i < len(args); i++ {
		w := args[i]
		if strings.HasPrefix(w, "-") {
			if w == "-c" || w == "--config" || w == "--db" {
				i++
			}
			continue
		}
		var next *kong.Node
		for _, c := range node.Children {
			if c.Name == w {
				next = c
			}
		}
		if next == nil {
			break
		}
		node = next
	}
	if node == parser.Model.Node && !slices.Contains(args, "--version") && !slices.Contains(args, "--help") {
		return []string{"names no subcommand"}
	}
	flags := map[string]bool{}
	for _, group := range node.AllFlags(false) {
		for _, f := range group {
			flags["--"+f.Name] = true
			if f.Short != 0 {
				flags["-"+string(f.Short)] = true
			}
		}
	}
	// After --, the words are another program's (mcp tools -- COMMAND).
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	var out []string
	for _, f := range synopsisFlag.FindAllStringSubmatch(strings.Join(args, " "), -1) {
		if !flags[f[1]] {
			out = append(out, fmt.Sprintf("shows %s, which %q does not accept", f[1], node.Path()))
		}
	}
	return out
}

// TestDocsInlineCommands holds every toolpulse command the prose shows in
// a code span (the command table of docs/cli.md included) to the command
// line: its subcommand exists and it accepts every flag shown.
func TestDocsInlineCommands(t *testing.T) {
	parser, err := kong.New(&cli{}, kong.Name("toolpulse"), kong.Vars{"version": "docs"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range docsPages(t) {
		_, prose := splitFences(p.text)
		joined := strings.Join(prose, "\n")
		for _, m := range codeSpan.FindAllStringSubmatchIndex(joined, -1) {
			if joined[m[2]:m[3]] != joined[m[6]:m[7]] {
				continue // unbalanced backticks: not one span
			}
			text := strings.ReplaceAll(joined[m[4]:m[5]], `\|`, " | ")
			args, ok := toolpulseArgs(strings.Fields(text))
			if !ok {
				continue
			}
			n++
			where := fmt.Sprintf("%s:%d", p.path, 1+strings.Count(joined[:m[0]], "\n"))
			for _, problem := range mentionProblems(parser, args) {
				t.Errorf("%s: `%s` %s", where, text, problem)
			}
		}
	}
	if n < 40 {
		t.Errorf("found only %d toolpulse commands in code spans", n)
	}
}

var repoPath = regexp.MustCompile(`(?:^|[\s(` + "`" + `'"])((?:cmd|runner|results|checks|web|internal|examples|mcpsdk|docs|\.ci)/[A-Za-z0-9_./-]*[A-Za-z0-9_/])`)

var goIdent = regexp.MustCompile(`^(.*)\.[A-Z][A-Za-z0-9_]*$`)

// TestDocsRepoPaths fails on a file or folder of the repository that the
// docs name and that does not exist: the path of one run and the
// guarantees name the files that own each step and test each promise, and
// a rename must take the docs along.
func TestDocsRepoPaths(t *testing.T) {
	n := 0
	for _, p := range docsPages(t) {
		_, prose := splitFences(p.text)
		for i, l := range prose {
			for _, m := range repoPath.FindAllStringSubmatch(l, -1) {
				path := m[1]
				if pkg := goIdent.FindStringSubmatch(path); pkg != nil {
					path = pkg[1] // examples/provider.Orders: a package's name
				}
				n++
				if _, err := os.Stat(filepath.Join(docsRoot, path)); err != nil {
					t.Errorf("%s:%d: %s does not exist", p.path, i+1, path)
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("found only %d repository paths", n)
	}
}

// TestDocsJSONBlocks fails on a ```json block that is not one JSON value:
// the envelope and the mcp tools document are shown as toolpulse prints
// them.
func TestDocsJSONBlocks(t *testing.T) {
	n := 0
	for _, p := range docsPages(t) {
		fences, _ := splitFences(p.text)
		for _, f := range fences {
			if f.lang != "json" {
				continue
			}
			n++
			var v any
			if err := json.Unmarshal([]byte(f.body), &v); err != nil {
				t.Errorf("%s:%d: json block: %v", p.path, f.line, err)
			}
		}
	}
	if n == 0 {
		t.Error("found no json blocks")
	}
}
