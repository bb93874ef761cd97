package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/oauth"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

type mcpCallCmd struct {
	Tool             string        `required:"" placeholder:"NAME" help:"The tool to call, as tools/list names it."`
	Arguments        string        `placeholder:"JSON" default:"{}" help:"The tools/call arguments, one JSON object."`
	Header           []string      `placeholder:"K=V" sep:"none" help:"Add this header to every request (repeatable), such as Authorization=Bearer ...; values are never printed."`
	AllowDestructive bool          `help:"Call the tool even if its annotations say destructiveHint: true."`
	Format           string        `enum:"text,json" default:"text" help:"Output: text (one line, then the response), or json (as docs/cli.md shows it)."`
	Timeout          time.Duration `default:"10s" help:"Give up on the server after this long."`
	oauthFlags
	// URL comes last so that a harness may append it (the MCP conformance
	// suite runs a client as COMMAND URL).
	URL string `required:"" placeholder:"URL" help:"The server's Streamable HTTP endpoint (http:// or https://)."`
}

// Run calls one tool once, in one session, exactly as an mcp: probe's
// attempt does (handshake, tools/list, tools/call; no retry, no rules),
// and prints the verdict: the outcome and code a probe would record
// before its rules, and what its rules would see as response. Exit: 0 the
// tool answered, 1 contract_error, 2 unavailable.
func (m *mcpCallCmd) Run(e *env) error {
	endpoint, err := parseMCPURL(m.URL)
	if err != nil {
		return err
	}
	header, err := parseHeaders(m.Header)
	if err != nil {
		return err
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(m.Arguments), &args); err != nil || args == nil {
		return usageError("--arguments: want one JSON object, such as '{\"query\":\"release notes\"}'")
	}
	if m.Timeout <= 0 {
		return usageError("--timeout %v: want a positive duration, such as 10s", m.Timeout)
	}
	src, err := m.source(e, endpoint)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(e.ctx, m.Timeout)
	defer cancel()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	call := func(header http.Header, rt http.RoundTripper) callResult {
		ans, err := mcpsdk.Call(ctx, mcpsdk.Request{
			URL: endpoint, Header: header, Tool: m.Tool, Arguments: args, AllowDestructive: m.AllowDestructive,
			MaxBodyBytes: checks.DefaultMaxBodyBytes,
			// A redirect is not followed, as in a probe.
			HTTPClient: &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
			ClientName: "toolpulse", ClientVersion: results.ReadBuild().Version,
		})
		return callResult{ans, err}
	}
	var (
		got       callResult
		tokenRows []oauth.Exchange
	)
	if src == nil {
		got = call(header, transport)
	} else {
		var failed *results.Error
		if got, tokenRows, failed = withBearer(ctx, src, header, transport, call); failed != nil {
			got.ans = &mcpsdk.Answer{Err: failed} // no token: the verdict a probe's attempt would record
		}
	}
	ans, err := got.ans, got.err
	if err != nil {
		return softwareError(err)
	}
	out := callOutcome(ans, tokenRows)
	if m.Format == "json" {
		err = writeCallJSON(e.stdout, out)
	} else {
		err = writeCallText(e.stdout, out)
	}
	if err != nil {
		return softwareError(err)
	}
	switch out.Outcome {
	case results.ContractError:
		return exitStatus(exitContractError)
	case results.Unavailable:
		return exitStatus(exitUnavailable)
	}
	return nil
}

// callResult is what mcpsdk.Call returned.
type callResult struct {
	ans *mcpsdk.Answer
	err error
}

// callJSON is the --format json document of one call.
type callJSON struct {
	Outcome         results.Outcome `json:"outcome"`
	Code            *string         `json:"code"`
	Message         *string         `json:"message"`
	ProtocolVersion string          `json:"protocol_version"`
	IsError         bool            `json:"is_error"`
	HTTPStatus      *int            `json:"http_status"`
	Response        json.RawMessage `json:"response"`
	Exchanges       []callExchange  `json:"exchanges"`
}

type callExchange struct {
	Method     string  `json:"method"`
	Session    int     `json:"session"`
	HTTPStatus *int    `json:"http_status"`
	DurationMS float64 `json:"duration_ms"`
	Code       *string `json:"code"`
}

// callOutcome is a call's answer as a probe's attempt would judge it
// before its rules: pass when the tool answered a usable result. The
// OAuth metadata and token requests come first among the exchanges, as
// they are a probe's first rows (session 0: none of the MCP sessions).
func callOutcome(ans *mcpsdk.Answer, token []oauth.Exchange) callJSON {
	out := callJSON{Outcome: results.Pass, ProtocolVersion: ans.ProtocolVersion, IsError: ans.IsError,
		Response: ans.Response, Exchanges: make([]callExchange, 0, len(token)+len(ans.Exchanges))}
	for _, x := range token {
		row := callExchange{Method: x.Method, DurationMS: float64(x.Duration.Microseconds()) / 1000}
		if x.Status != 0 {
			row.HTTPStatus = &x.Status
		}
		out.Exchanges = append(out.Exchanges, row)
	}
	if ans.Err != nil {
		code, msg := string(ans.Err.Code), ans.Err.Message
		out.Outcome, out.Code, out.Message = ans.Err.Code.Outcome(), &code, &msg
	}
	if ans.Status != 0 {
		out.HTTPStatus = &ans.Status
	}
	if len(out.Response) == 0 {
		out.Response = json.RawMessage("null")
	}
	for _, x := range ans.Exchanges {
		row := callExchange{Method: x.Method, Session: x.Session, DurationMS: float64(x.Duration.Microseconds()) / 1000}
		if x.Status != 0 {
			row.HTTPStatus = &x.Status
		}
		if x.Code != "" {
			c := string(x.Code)
			row.Code = &c
		}
		out.Exchanges = append(out.Exchanges, row)
	}
	return out
}

func writeCallJSON(w io.Writer, out callJSON) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writeCallText prints the verdict on one line (outcome, code, message,
// protocol, exchanges), then the response when there is one.
func writeCallText(w io.Writer, out callJSON) error {
	var b strings.Builder
	b.WriteString(string(out.Outcome))
	if out.Code != nil {
		fmt.Fprintf(&b, " %s: %s", *out.Code, results.Shorten(*out.Message, present.MaxMessageRunes))
	}
	methods := make([]string, len(out.Exchanges))
	for i, x := range out.Exchanges {
		methods[i] = x.Method
	}
	fmt.Fprintf(&b, " (protocol %s; %s)\n", orDash(out.ProtocolVersion), strings.Join(methods, ", "))
	if string(out.Response) != "null" {
		b.Write(out.Response)
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
