package web

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	ratelimit "golang.org/x/time/rate"
)

// /mcp has a budget of its own per client, counted in MCP requests rather
// than HTTP requests: one question from an MCP client is several HTTP
// requests (initialize, notifications/initialized, tools/list, tools/call;
// server/discover first on the 2026 wire), and an agent that asks before
// every tool call it makes must not run out after a few questions.
const (
	// mcpRate and mcpBurst bound JSON-RPC requests per client and budget:
	// a burst of 40 questions of three requests each, then 10 questions
	// a second. The other messages to /mcp (notifications, GET) have a
	// bucket of the same size beside it: a session sends fewer of them
	// than requests.
	mcpRate  = ratelimit.Limit(30) // requests per second
	mcpBurst = 120
	// mcpMaxBodyBytes is the largest message the guard reads to count
	// its requests: the handler's own limit (mcpsdk's streamableHandler).
	// A larger body is the handler's to refuse, and costs one message.
	mcpMaxBodyBytes = 64 << 10
	// jsonrpcRateLimited is the JSON-RPC error code of a refused request,
	// in the range JSON-RPC leaves to servers.
	jsonrpcRateLimited = -32000
)

// mcpMessages is what the guard reads of a POST to /mcp before it counts
// it: the ids of its requests, in order. Notifications and responses (a
// client's answers to server requests) carry no question, and a body that
// is not JSON-RPC is the handler's to refuse; those cost one message of
// the transport's budget.
type mcpMessages struct {
	ids   []json.RawMessage // each request's id, as sent
	batch bool              // the body was a JSON array of messages
}

// readMCPMessages reads the body of r, at most mcpMaxBodyBytes+1 bytes,
// and puts it back for the handler whatever it finds. An error is a body
// that could not be read; the handler then sees what is left of it.
func readMCPMessages(r *http.Request) (mcpMessages, error) {
	head, err := io.ReadAll(io.LimitReader(r.Body, mcpMaxBodyBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil {
		return mcpMessages{}, err
	}
	var m mcpMessages
	if len(head) > mcpMaxBodyBytes {
		return m, nil
	}
	body := bytes.TrimLeft(head, " \t\r\n")
	var raws []json.RawMessage
	if len(body) > 0 && body[0] == '[' {
		m.batch = true
		if json.Unmarshal(body, &raws) != nil {
			return mcpMessages{}, nil
		}
	} else {
		raws = []json.RawMessage{body}
	}
	for _, raw := range raws {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if json.Unmarshal(raw, &msg) != nil {
			continue
		}
		if msg.Method != nil && len(msg.ID) > 0 {
			m.ids = append(m.ids, msg.ID)
		}
	}
	return m, nil
}

// chargeMCP spends r's cost from its client's MCP budgets: the JSON-RPC
// requests POSTed to /mcp from the requests' budget, one each; any other
// message (notifications, a client's responses, a body that is not
// JSON-RPC) and a GET of /mcp from the transport's, one per HTTP request.
// Neither is the budget of the other routes, so an MCP client and a
// dashboard never starve each other. Refused, it answers 429 with
// Retry-After and a JSON-RPC error for each request (null id when there
// is none), so that an MCP client reads why, and reports false.
func (g *guard) chargeMCP(w http.ResponseWriter, r *http.Request, b budget) bool {
	var msgs mcpMessages
	if r.Method == http.MethodPost {
		var err error
		if msgs, err = readMCPMessages(r); err != nil {
			msgs = mcpMessages{}
		}
	}
	key, n := budgetKey(b, clientAddr(r))+" requests", len(msgs.ids)
	if n == 0 {
		key, n = budgetKey(b, clientAddr(r))+" transport", 1
	}
	wait, ok := g.mcpLimits.allowN(key, n, time.Now())
	if !ok {
		writeMCPRateLimited(w, wait, msgs)
	}
	return ok
}

// jsonrpcError is one JSON-RPC error response.
type jsonrpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code              string `json:"code"`
			RetryAfterSeconds int    `json:"retry_after_seconds"`
		} `json:"data"`
	} `json:"error"`
}

// writeMCPRateLimited answers 429 with Retry-After and, for each request
// of msgs, a JSON-RPC error with its id: one object, or an array for a
// batch; one error with a null id when msgs holds no request.
func writeMCPRateLimited(w http.ResponseWriter, wait time.Duration, msgs mcpMessages) {
	seconds := retryAfterSeconds(wait)
	ids := msgs.ids
	if len(ids) == 0 {
		ids = []json.RawMessage{json.RawMessage("null")}
	}
	errs := make([]jsonrpcError, len(ids))
	for i, id := range ids {
		e := &errs[i]
		e.JSONRPC, e.ID = "2.0", id
		e.Error.Code = jsonrpcRateLimited
		e.Error.Message = "rate limited: too many MCP requests from this client; retry after " + strconv.Itoa(seconds) + "s"
		e.Error.Data.Code, e.Error.Data.RetryAfterSeconds = "rate_limited", seconds
	}
	w.Header().Set("Retry-After", strconv.Itoa(seconds))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	if msgs.batch {
		_ = json.NewEncoder(w).Encode(errs)
		return
	}
	_ = json.NewEncoder(w).Encode(errs[0])
}

// retryAfterSeconds is a wait as Retry-After gives it: whole seconds, at
// least 1.
func retryAfterSeconds(wait time.Duration) int {
	return max(1, int(wait.Round(time.Second)/time.Second))
}
