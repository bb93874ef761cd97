package results

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ProbeKind is what a probe calls: an HTTP endpoint or an MCP tool. Every
// surface that shows a result (the envelope, history, stats, the API, the
// status page, metrics) says which, so that an MCP probe reads as one.
type ProbeKind string

const (
	// ProbeHTTP is a probe that sends an HTTP request (`request:`). Results
	// recorded before kinds were are of this kind.
	ProbeHTTP ProbeKind = "http"
	// ProbeMCP is a probe that calls one MCP tool (`mcp:`, SPEC §10).
	ProbeMCP ProbeKind = "mcp"
	// ProbeSteps is a multi-step probe (`steps:`, SPEC §11).
	ProbeSteps ProbeKind = "steps"
)

// ProbeKinds lists every kind in a stable order.
var ProbeKinds = []ProbeKind{ProbeHTTP, ProbeMCP, ProbeSteps}

// Valid reports whether k is one of ProbeKinds.
func (k ProbeKind) Valid() bool { return k == ProbeHTTP || k == ProbeMCP || k == ProbeSteps }

// ParseProbeKind returns the kind named s, or an error naming the valid ones.
func ParseProbeKind(s string) (ProbeKind, error) {
	k := ProbeKind(s)
	if !k.Valid() {
		return "", fmt.Errorf("unknown probe kind %q (want http, mcp or steps)", s)
	}
	return k, nil
}

// MCPTarget is the MCP tool an MCP probe called and the server it called
// it on.
type MCPTarget struct {
	Tool string `json:"tool"`
	// Server is the endpoint as MCPServer writes it: no credentials, no
	// query.
	Server string `json:"server"`
}

// MCPServer is how every surface names the MCP server at rawURL: its
// scheme, host and path, without the userinfo, query or fragment, which
// may carry secrets. It returns "" for a URL that does not parse or has no
// host.
func MCPServer(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return ""
	}
	clean := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return clean.String()
}

// StdioServer is how every surface names a stdio MCP server started by
// argv: "stdio: " and the command, an argument with a space or a quote
// quoted. The command holds no secret; those go in its environment.
func StdioServer(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			a = strconv.Quote(a)
		}
		parts[i] = a
	}
	return "stdio: " + strings.Join(parts, " ")
}
