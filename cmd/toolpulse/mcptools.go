package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/oauth"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// mcpCmd groups the commands that look at an MCP server.
type mcpCmd struct {
	Tools mcpToolsCmd `cmd:"" help:"List an MCP server's tools with their schemas and annotations, to help write an mcp: probe."`
	Call  mcpCallCmd  `cmd:"" help:"Call one tool of an MCP server once, as an mcp: probe's attempt does, and print the verdict."`
}

type mcpToolsCmd struct {
	URL     string        `placeholder:"URL" help:"The server's Streamable HTTP endpoint (http:// or https://); or give a stdio server's command after --."`
	Header  []string      `placeholder:"K=V" sep:"none" help:"Add this header to every request (repeatable), such as Authorization=Bearer ...; values are never printed."`
	Env     []string      `placeholder:"K=V" sep:"none" help:"With a command: add this variable to the stdio server's environment (repeatable); values are never printed."`
	Dir     string        `placeholder:"DIR" help:"With a command: the stdio server's working directory."`
	Command []string      `arg:"" optional:"" passthrough:"" placeholder:"COMMAND" help:"A stdio server to start instead of --url, after --: the program and its arguments, run without a shell, such as -- npx -y @modelcontextprotocol/server-memory@2026.8.31."`
	Format  string        `enum:"table,json" default:"table" help:"Output: table, or json (the raw definitions and the server, as docs/cli.md shows it)."`
	Timeout time.Duration `default:"10s" help:"Give up on the server after this long."`
	oauthFlags
}

// Run opens one session to the server, lists every tool (at most 10
// pages) and prints the listing. A server that cannot be reached or
// fails is exit 69; one whose answers are not usable MCP is exit 65.
func (m *mcpToolsCmd) Run(e *env) error {
	stdio, err := m.stdioCommand()
	if err != nil {
		return err
	}
	var endpoint string
	if stdio == nil {
		if endpoint, err = parseMCPURL(m.URL); err != nil {
			return err
		}
	}
	header, err := parseHeaders(m.Header)
	if err != nil {
		return err
	}
	if m.Timeout <= 0 {
		return usageError("--timeout %v: want a positive duration, such as 10s", m.Timeout)
	}
	var src *oauth.Source
	if stdio == nil {
		if src, err = m.source(e, endpoint); err != nil {
			return err
		}
	} else if m.OAuthClientID != "" {
		return usageError("--oauth-client-id: a stdio server takes no bearer token; give its credentials with --env")
	}
	ctx, cancel := context.WithTimeout(e.ctx, m.Timeout)
	defer cancel()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	session := func(header http.Header, rt http.RoundTripper) listResult {
		req := mcpsdk.ListRequest{
			URL: endpoint, Header: header, MaxBodyBytes: checks.DefaultMaxBodyBytes,
			// A redirect is not followed, as in a probe: the headers ride on
			// every request, and would go wherever the server points.
			HTTPClient: &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
			ClientName: "toolpulse", ClientVersion: results.ReadBuild().Version,
		}
		if stdio != nil {
			req = mcpsdk.ListRequest{Command: stdio, MaxBodyBytes: req.MaxBodyBytes, ClientName: req.ClientName, ClientVersion: req.ClientVersion}
		}
		l, err := mcpsdk.ListTools(ctx, req)
		return listResult{l, err}
	}
	var got listResult
	if src == nil {
		got = session(header, transport)
	} else if res, _, failed := withBearer(ctx, src, header, transport, session); failed != nil {
		got.err = failed
	} else {
		got = res
	}
	list, err := got.list, got.err
	var failed *results.Error
	switch {
	case errors.As(err, &failed):
		return &exitError{code: listFailureExit(failed.Code), err: fmt.Errorf("mcp tools: %s: %s", failed.Code, failed.Message)}
	case err != nil:
		return softwareError(err)
	}
	if m.Format == "json" {
		err = writeToolsJSON(e.stdout, list)
	} else {
		err = writeToolsTable(e.stdout, list)
	}
	if err != nil {
		return softwareError(err)
	}
	return nil
}

// listResult is what mcpsdk.ListTools returned.
type listResult struct {
	list *mcpsdk.ToolList
	err  error
}

// listFailureExit is the exit code of a failed listing: EX_UNAVAILABLE for
// the unavailable codes (the server is down, refuses, fails), EX_DATAERR
// for the rest (it answered, but not in usable MCP).
func listFailureExit(code results.Code) int {
	if code.Outcome() == results.Unavailable {
		return exitServiceUnavailable
	}
	return exitDataError
}

// parseMCPURL accepts an absolute http or https URL; the message of a bad
// one shows it without credentials.
func parseMCPURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", usageError("--url: not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", usageError("--url %s: want an http:// or https:// URL", u.Redacted())
	}
	if u.Host == "" {
		return "", usageError("--url %s: no host", u.Redacted())
	}
	return raw, nil
}

// parseHeaders reads --header K=V flags. Values may be secrets, and a
// mistyped flag ("Authorization: Bearer …") puts one before the =, so no
// message quotes a flag: it is named by its position.
func parseHeaders(flags []string) (http.Header, error) {
	header := http.Header{}
	for i, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, usageError("--header #%d: want NAME=VALUE (the value is not shown)", i+1)
		}
		if !validHeaderName(k) {
			return nil, usageError("--header #%d: the part before = is not a header name (the flag is not shown)", i+1)
		}
		header.Add(k, v)
	}
	return header, nil
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func validHeaderName(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return s != ""
}

// listedDef is what the table and the JSON read of a listed definition.
type listedDef struct {
	Name         json.RawMessage `json:"name"`
	Title        json.RawMessage `json:"title"`
	Description  json.RawMessage `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
	Execution    json.RawMessage `json:"execution"`
}

// toolsJSON is the --format json document. The definitions keep MCP's
// field names (those rules see as tool); what toolpulse adds is snake_case
// as in its other JSON.
type toolsJSON struct {
	Server struct {
		Name    string `json:"name"`
		Title   string `json:"title"`
		Version string `json:"version"`
	} `json:"server"`
	ProtocolVersion string          `json:"protocol_version"`
	Truncated       bool            `json:"truncated"`
	Tools           []toolJSONEntry `json:"tools"`
}

type toolJSONEntry struct {
	listedDef
	// Invalid is why a client would not use the definition; null when
	// nothing is wrong with it.
	Invalid *string `json:"invalid"`
}

// definitionOf reads the fields of a raw definition, null for those it
// lacks (and all of them for an entry that is not an object).
func definitionOf(raw json.RawMessage) listedDef {
	var d listedDef
	_ = json.Unmarshal(raw, &d)
	null := json.RawMessage("null")
	for _, f := range []*json.RawMessage{&d.Name, &d.Title, &d.Description, &d.InputSchema, &d.OutputSchema, &d.Annotations, &d.Execution} {
		if len(*f) == 0 {
			*f = null
		}
	}
	return d
}

func writeToolsJSON(w io.Writer, list *mcpsdk.ToolList) error {
	var doc toolsJSON
	doc.Server.Name, doc.Server.Title, doc.Server.Version = list.Server.Name, list.Server.Title, list.Server.Version
	doc.ProtocolVersion, doc.Truncated = list.ProtocolVersion, list.Truncated
	doc.Tools = make([]toolJSONEntry, 0, len(list.Tools))
	for _, t := range list.Tools {
		entry := toolJSONEntry{listedDef: definitionOf(t.Definition)}
		if t.Invalid != "" {
			entry.Invalid = &t.Invalid
		}
		doc.Tools = append(doc.Tools, entry)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // schemas' patterns and descriptions contain < > &
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// maxCellRunes keeps a cell of a server's text from flooding a row;
// maxFlagRunes leaves room for the SDK's reason a tool is flagged.
const (
	maxCellRunes = 60
	maxFlagRunes = 200
)

func writeToolsTable(w io.Writer, list *mcpsdk.ToolList) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tHINT\tOUTPUT SCHEMA\tREQUIRED\tTASKS")
	var flagged []string
	for _, t := range list.Tools {
		d := definitionOf(t.Definition)
		name := t.Name
		if name == "" {
			name = "?"
		}
		name = cell(name)
		output := "no"
		if !isJSONNull(d.OutputSchema) {
			output = "yes"
		}
		tasks := taskSupportOf(d.Execution)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, hintOf(d.Annotations), output, requiredOf(d.InputSchema), tasks)
		if t.Invalid != "" {
			flagged = append(flagged, name+": "+present.OneLine(present.Printable(t.Invalid), maxFlagRunes))
		}
		if tasks == "required" {
			flagged = append(flagged, name+": execution.taskSupport is required: the tool runs only as a task, and a probe of it ends as needs_input without calling it")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	server := cell(list.Server.Name)
	if list.Server.Version != "" {
		server += " " + cell(list.Server.Version)
	}
	if list.Server.Title != "" {
		server += " (" + cell(list.Server.Title) + ")"
	}
	if server == "" {
		server = "(unnamed)"
	}
	more := ""
	if list.Truncated {
		more = "; the listing goes on past 10 pages, which no probe reads"
	}
	if _, err := fmt.Fprintf(w, "\nserver %s, protocol %s: %s%s\n", server, cell(list.ProtocolVersion), plural(len(list.Tools), "tool"), more); err != nil {
		return err
	}
	for _, f := range flagged {
		if _, err := fmt.Fprintln(w, "flagged: "+f); err != nil {
			return err
		}
	}
	return nil
}

// taskSupportOf is a definition's execution.taskSupport (forbidden,
// optional, required), "-" when it does not say.
func taskSupportOf(execution json.RawMessage) string {
	var e struct {
		TaskSupport string `json:"taskSupport"`
	}
	if json.Unmarshal(execution, &e) != nil || e.TaskSupport == "" {
		return "-"
	}
	return cell(e.TaskSupport)
}

// hintOf is the table's reading of a tool's annotations: read-only or
// destructive when the annotations say so, "-" when they say neither. A
// probe refuses only a tool whose listing says destructiveHint: true
// (SPEC §10), so the table shows what the listing says, not the
// protocol's defaults for an absent hint.
func hintOf(annotations json.RawMessage) string {
	var a struct {
		ReadOnly    *bool `json:"readOnlyHint"`
		Destructive *bool `json:"destructiveHint"`
	}
	_ = json.Unmarshal(annotations, &a)
	switch {
	case a.ReadOnly != nil && *a.ReadOnly:
		return "read-only"
	case a.Destructive != nil && *a.Destructive:
		return "destructive"
	}
	return "-"
}

// requiredOf lists the input schema's required arguments, "-" for none.
func requiredOf(schema json.RawMessage) string {
	var s struct {
		Required []any `json:"required"`
	}
	_ = json.Unmarshal(schema, &s)
	var names []string
	for _, r := range s.Required {
		if name, ok := r.(string); ok {
			names = append(names, cell(name))
		}
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}

// cell is a server's text made safe for one table cell: printable (a
// tool name is the server's to choose, escape sequences included), one
// line, bounded.
func cell(s string) string { return present.OneLine(present.Printable(s), maxCellRunes) }

func isJSONNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
