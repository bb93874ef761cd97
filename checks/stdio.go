package checks

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// The stdio side of an MCP probe (SPEC §10.1): mcp.command starts the
// server for each run and speaks MCP over its stdin and stdout.

// mcpServer checks that an mcp: names its server exactly one way, and
// that the settings of the other way are absent: headers belong to a URL,
// env and dir to a command.
func (l *loader) mcpServer(e entry, urlN, commandN, headersN, envN, dirN ast.Node) {
	d := l.d
	switch {
	case urlN == nil && commandN == nil:
		d.errorf(e.value, "%s: url or command is required: the server's Streamable HTTP endpoint, or the command that starts a stdio server", e.path)
	case urlN != nil && commandN != nil:
		line, col := d.pos(urlN)
		d.errorf(commandN, "%s.command: not allowed next to url (line %d:%d); an MCP server is reached either at a url or by starting a command", e.path, line, col)
	case urlN != nil:
		if envN != nil {
			d.errorf(envN, "%s.env: only for a server started by command; a url's server has its own environment", e.path)
		}
		if dirN != nil {
			d.errorf(dirN, "%s.dir: only for a server started by command", e.path)
		}
	case commandN != nil && headersN != nil:
		d.errorf(headersN, "%s.headers: only for a server at a url; a stdio server takes its settings from command and env", e.path)
	}
}

// command decodes mcp.command: the argv of a stdio server, run without a
// shell, the program first.
func (l *loader) command(x entry) []string {
	d := l.d
	items, ok := d.list(x.value, x.path)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		d.errorf(x.value, "%s: must not be empty; expected the program and its arguments, such as [npx, -y, \"@scope/server@1.2.3\"]", x.path)
		return nil
	}
	argv := make([]string, 0, len(items))
	for i, n := range items {
		path := fmt.Sprintf("%s[%d]", x.path, i)
		s, ok := d.str(n, path)
		if !ok {
			continue
		}
		if i == 0 && strings.TrimSpace(s) == "" {
			d.errorf(n, "%s: the program must not be empty", path)
			continue
		}
		argv = append(argv, s)
	}
	if len(argv) != len(items) {
		return nil
	}
	return argv
}

// commandEnv decodes mcp.env, variables added to a stdio server's
// environment. Values are secrets, as header values are: a server's
// credentials travel here.
func (l *loader) commandEnv(x entry) map[string]Secret {
	d := l.d
	values, es, _ := d.stringMap(x.value, x.path)
	out := make(map[string]Secret, len(values))
	for _, e := range es {
		if e.key == "" || strings.ContainsAny(e.key, "=\x00") {
			d.errorf(e.keyN, "%s: %q is not a valid environment variable name; it must be non-empty and hold no = or NUL", x.path, e.key)
			continue
		}
		if v, ok := values[e.key]; ok {
			out[e.key] = Secret(v)
		}
	}
	return out
}

// commandDir decodes mcp.dir, a stdio server's working directory; a
// relative one is the config's directory's, as every path of the config
// is. Whether it exists is the run's to find: a directory made after the
// daemon starts must not need a restart.
func (l *loader) commandDir(x entry) string {
	d := l.d
	s, ok := d.str(x.value, x.path)
	if !ok {
		return ""
	}
	if strings.TrimSpace(s) == "" {
		d.errorf(x.value, "%s: must not be empty; leave dir out to start the server in toolpulse's own directory", x.path)
		return ""
	}
	return l.abs(s)
}
