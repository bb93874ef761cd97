package prober

import (
	"net/http"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
)

// phaseMCP is the phase of an MCP attempt, for messages.
const phaseMCP = "in the MCP session"

// mcpExchange is an MCP probe's conversation (SPEC §10): one attempt is
// one fresh session with the server, mcpsdk.Call (handshake, tools/list,
// tools/call, close), so that a transient failure at any step retries the
// whole session under the probe's retry policy, and no session outlives
// its attempt. The session's own verdict (SPEC §10 codes) is the
// attempt's; expect.status judges the tools/call exchange's status.
type mcpExchange struct {
	e       *Executor
	s       *checks.Step
	maxBody int64 // the probe's max_body_bytes
	client  *http.Client
	last    *mcpsdk.Answer // what the last attempt got; nil before one
	// auth is the OAuth client credentials, nil without; challenges then
	// sees the session's 401s.
	auth       *bearer
	challenges *challengeRecorder
	trace      results.Trace // the run's; the zero Trace with trace off
}

// newMCPExchange builds step s's exchange around the shared transport t.
// Redirects are not followed: the auth headers travel with every request
// of the session, and a redirect to another origin must not take them
// along; a 3xx is judged as any unexpected status.
// With auth, every request of the session carries the OAuth token.
func newMCPExchange(e *Executor, s *checks.Step, maxBody int64, t http.RoundTripper, auth *bearer) *mcpExchange {
	x := &mcpExchange{e: e, s: s, maxBody: maxBody, auth: auth}
	if auth != nil {
		x.challenges = &challengeRecorder{next: t}
		t = x.challenges
	}
	x.client = &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return x
}

func (x *mcpExchange) attempt(a *attempt) attemptResult {
	if x.auth == nil {
		return x.session(a, "")
	}
	return x.auth.attempt(a, func(token string) sent {
		x.challenges.take()
		res := x.session(a, token)
		got, challenges := x.challenges.take()
		return sent{res: res, unauthorized: got, challenges: challenges}
	})
}

// session runs one MCP session, its requests with token as their bearer
// token when it is not "".
func (x *mcpExchange) session(a *attempt, token string) attemptResult {
	m := x.s.MCP
	header := make(http.Header, len(m.Headers)+2)
	for k, v := range m.Headers {
		header.Set(k, v.Reveal())
	}
	if header.Get("User-Agent") == "" {
		header.Set("User-Agent", x.e.userAgent)
	}
	if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	x.last = nil
	req := mcpsdk.Request{
		URL: m.URL, Header: header, Tool: m.Tool, Arguments: m.Arguments, AllowDestructive: m.AllowDestructive,
		MaxBodyBytes: x.maxBody, HTTPClient: x.client, ClientName: "toolpulse", ClientVersion: x.e.mcpVersion,
		Now: x.e.now, Schemas: &x.e.schemas, Watch: mcpsdk.Watch{Prompts: m.Watch.Prompts, Resources: m.Watch.Resources},
		Trace: x.trace,
	}
	if len(m.Command) > 0 {
		req.URL, req.Header, req.HTTPClient, req.Command = "", nil, nil, stdioCommand(m)
	}
	ans, err := mcpsdk.Call(a.ctx, req)
	if err != nil {
		// The loader makes every Request Call accepts; this is a bug.
		return attemptResult{code: results.CodeInternalError, message: "building the MCP call: " + err.Error()}
	}
	x.last = ans
	res := attemptResult{httpStatus: ans.Status, retryAfter: ans.RetryAfter, retryAfterSet: ans.RetryAfterSet}
	res.exchanges, res.blamed = exchangeRows(ans.Exchanges, ans.Err)
	if f := ans.Err; f != nil {
		res.code, res.message = f.Code, f.Message
		switch {
		case f.Code == results.CodeToolError && m.IsError == results.Unavailable:
			res.code = results.CodeToolUnavailable
		case a.ctx.Err() != nil:
			// The attempt's timeout, the budget or the caller ended the
			// session: say whose it was, as an HTTP attempt does.
			res.code, res.message = a.failure(a.ctx.Err(), phaseMCP)
		}
		return res
	}
	if len(m.Command) > 0 {
		return res // a stdio session has no HTTP status for expect.status to judge
	}
	if code := codeOf(nil, ans.Status, x.s.Expect.Status); code != "" {
		res.code, res.message = code, "tools/call answered HTTP "+http.StatusText(ans.Status)
		res.blamed = lastCall(res.exchanges)
	}
	return res
}

// stdioCommand is the stdio server of m (SPEC §10.1), its env revealed
// for the process alone.
func stdioCommand(m *checks.MCP) *mcpsdk.Command {
	env := make(map[string]string, len(m.Env))
	for k, v := range m.Env {
		env[k] = v.Reveal()
	}
	return &mcpsdk.Command{Argv: m.Command, Env: env, Dir: m.Dir}
}

// exchangeRows are a session's exchanges as attempt rows, and the index
// of the one mcpsdk found the session's failure in (-1: none). The loop
// numbers the rows and gives the blamed one the attempt's verdict, which
// may be the probe's reading of mcpsdk's (is_error: unavailable).
func exchangeRows(xs []mcpsdk.Exchange, verdict *results.Error) ([]results.Attempt, int) {
	blamed := -1
	rows := make([]results.Attempt, 0, len(xs))
	for i, x := range xs {
		method := x.Method
		if method == http.MethodDelete {
			method = "DELETE session"
		}
		// An exchange the session's verdict does not name keeps its own
		// note: why it got no answer, or the session the server forgot.
		rows = append(rows, results.Attempt{Method: method, StartedAt: x.StartedAt, Duration: x.Duration, HTTPStatus: x.Status,
			Code: x.Code, Message: x.Message})
		if verdict != nil && x.Code == verdict.Code && x.Message == verdict.Message && blamed < 0 {
			blamed = i
		}
	}
	return rows, blamed
}

// lastCall is the index of the last tools/call row, the exchange
// expect.status judges; -1 when there is none.
func lastCall(rows []results.Attempt) int {
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Method == "tools/call" {
			return i
		}
	}
	return -1
}

// answer is what rules see of the last result: response as the payload,
// and the whole result and the tool's definition beside it.
func (x *mcpExchange) answer() ([]byte, answerMeta) {
	if x.last == nil {
		return nil, answerMeta{}
	}
	return x.last.Response, answerMeta{status: x.last.Status, headers: x.last.Headers,
		result: x.last.Result, tool: x.last.Tool, session: x.last}
}

var _ exchange = (*mcpExchange)(nil)
