package main

import (
	"strings"

	"github.com/toolpulse/toolpulse/mcpsdk"
)

// stdioCommand is the stdio server `mcp tools -- COMMAND` starts, nil
// when the listing is of a --url; exactly one of the two is given.
func (m *mcpToolsCmd) stdioCommand() (*mcpsdk.Command, error) {
	argv := m.Command
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	switch {
	case len(argv) == 0 && m.URL == "":
		return nil, usageError("want --url URL, or a stdio server's command after --")
	case len(argv) > 0 && m.URL != "":
		return nil, usageError("--url and a command: want one server, at a URL or started by the command")
	case len(argv) == 0:
		if len(m.Env) > 0 || m.Dir != "" {
			return nil, usageError("--env and --dir are for a stdio server's command, not a --url")
		}
		return nil, nil
	case len(m.Header) > 0:
		return nil, usageError("--header is for a --url; a stdio server takes --env")
	case argv[0] == "":
		return nil, usageError("the command's program is empty")
	}
	env := make(map[string]string, len(m.Env))
	for i, kv := range m.Env {
		// A value may be a secret, and a mistyped flag may put one before
		// the =: the flag is named by its position.
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsRune(k, 0) {
			return nil, usageError("--env #%d: want NAME=VALUE (the value is not shown)", i+1)
		}
		env[k] = v
	}
	return &mcpsdk.Command{Argv: argv, Env: env, Dir: m.Dir}, nil
}
