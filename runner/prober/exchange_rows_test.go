package prober

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/results"
)

// rowsOf writes a run's attempt rows one a line, as "number try method
// status code", for comparing with what a test expects.
func rowsOf(as []results.Attempt) string {
	var b strings.Builder
	for _, a := range as {
		code := string(a.Code)
		if v := a.Verdict(); v == "no answer" {
			code = "(" + v + ")"
		}
		fmt.Fprintf(&b, "%d %d %s %d %s\n", a.Number, a.Try, a.Method, a.HTTPStatus, code)
	}
	return b.String()
}

// TestMCPExchangeRows: every HTTP exchange of an MCP session is an attempt
// row with its JSON-RPC method and the try it belongs to; the try's
// verdict sits on the exchange that caused it, the back-off on the try's
// last row, and the run's attempt count counts tries. A session the server
// forgot keeps its trace (session_lost on the exchange it was lost at),
// and an exchange that got no answer does not read as ok.
func TestMCPExchangeRows(t *testing.T) {
	legacySession := func(try int, first int, callStatus int, callCode results.Code) string {
		rows := []string{"server/discover 400 ", "initialize 200 ", "notifications/initialized 202 ", "tools/list 200 ",
			fmt.Sprintf("tools/call %d %s", callStatus, callCode), "DELETE session 200 "}
		var b strings.Builder
		for i, r := range rows {
			fmt.Fprintf(&b, "%d %d %s\n", first+i, try, r)
		}
		return b.String()
	}
	for _, tt := range []struct {
		name     string
		era      mcptest.Era
		faults   []mcptest.Fault
		want     string
		outcome  results.Outcome
		attempts int
		status   int // 200 when 0
	}{
		{name: "one session", want: legacySession(1, 1, 200, ""), outcome: results.Pass, attempts: 1},
		{name: "a retried session", faults: []mcptest.Fault{mcptest.InternalError("tools/call").Once()},
			want:    legacySession(1, 1, 200, results.CodeToolServerError) + legacySession(2, 7, 200, ""),
			outcome: results.Pass, attempts: 2},
		{name: "a forgotten session", faults: []mcptest.Fault{mcptest.ForgetSession("tools/call", 404).Once()},
			want: strings.Join([]string{
				"1 1 server/discover 400 ", "2 1 initialize 200 ", "3 1 notifications/initialized 202 ", "4 1 tools/list 200 ",
				"5 1 tools/call 404 session_lost",
				"6 1 server/discover 400 ", "7 1 initialize 200 ", "8 1 notifications/initialized 202 ", "9 1 tools/call 200 ",
				"10 1 DELETE session 200 ", ""}, "\n"),
			outcome: results.Pass, attempts: 1},
		{name: "a stream cut and not given back", faults: []mcptest.Fault{mcptest.SSECut("tools/call")}, era: mcptest.Stateless,
			want: "1 1 server/discover 200 \n2 1 tools/list 200 \n3 1 tools/call 200 (no answer)\n" +
				"4 1 GET tools/call (resumed) 405 connection_reset\n",
			outcome: results.Unavailable, attempts: 1, status: 405},
		{name: "a stateless session", era: mcptest.Stateless,
			want:    "1 1 server/discover 200 \n2 1 tools/list 200 \n3 1 tools/call 200 \n",
			outcome: results.Pass, attempts: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := mcptest.Start(t, mcptest.Config{Era: tt.era, Tools: []mcptest.Tool{searchTool()}, Faults: tt.faults})
			p := mcpProbe(srv, results.ContractError)
			if tt.outcome == results.Unavailable {
				p.Steps[0].Retries.MaxAttempts = 1
			}
			res := NewExecutor(Options{}).Run(context.Background(), p)
			status := tt.status
			if status == 0 {
				status = 200
			}
			if res.Outcome != tt.outcome || res.AttemptCount() != tt.attempts || res.HTTPStatus != status {
				t.Errorf("run = %s %v, %d tries, HTTP %d; want %s in %d, HTTP %d (the tools/call's)",
					res.Outcome, res.Error, res.AttemptCount(), res.HTTPStatus, tt.outcome, tt.attempts, status)
			}
			if got := rowsOf(res.Attempts); got != tt.want {
				t.Errorf("rows (number try method status code):\n%s\nwant:\n%s", got, tt.want)
			}
			for i, a := range res.Attempts {
				last := i == len(res.Attempts)-1 || res.Attempts[i+1].Try != a.Try
				if (a.Wait != 0) != (last && i != len(res.Attempts)-1) {
					t.Errorf("row %d (try %d, %s) waits %s: the back-off belongs to the last row of a retried try", a.Number, a.Try, a.Method, a.Wait)
				}
				if a.Code != "" && a.Message == "" {
					t.Errorf("row %d: code %q with message %q", a.Number, a.Code, a.Message)
				}
			}
		})
	}
}
