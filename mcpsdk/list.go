package mcpsdk

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/results"
)

// ListRequest is one listing of a server's tools, for `toolpulse mcp
// tools`: the settings of a Request that a session without a tools/call
// uses, with the same meaning.
type ListRequest struct {
	// URL is the server's Streamable HTTP endpoint; exactly one of URL and
	// Command is set.
	URL string
	// Command starts a stdio server for the listing, as in Request.
	Command *Command
	// Header is added to every HTTP request of the session; values are
	// secrets, as in Request.
	Header http.Header
	// MaxBodyBytes bounds each answer of the session. It must be positive.
	MaxBodyBytes int64
	// HTTPClient sends every exchange; the deadline is the context's.
	HTTPClient *http.Client
	// ClientName and ClientVersion are the clientInfo the session
	// announces; "toolpulse" and "dev" when empty.
	ClientName, ClientVersion string
	// Now is the clock exchanges are timed by; nil is time.Now.
	Now func() time.Time
}

// ToolList is a server's tools/list, every page of it (at most 10), as
// the server sent it.
type ToolList struct {
	// ProtocolVersion is the version the session negotiated.
	ProtocolVersion string
	// Server is the serverInfo of the handshake (initialize, or
	// server/discover in the 2026-07-28 era).
	Server ServerInfo
	// Tools are the listed entries in the server's order, invalid ones
	// included.
	Tools []ListedTool
	// Truncated is set when the tenth page still had a nextCursor: the
	// server lists more tools than these, which no probe would find.
	Truncated bool
}

// ListedTool is one entry of tools/list.
type ListedTool struct {
	// Name is the entry's name; "" when the entry has none.
	Name string
	// Definition is the entry exactly as the server sent it.
	Definition json.RawMessage
	// Invalid says why a client would not use the entry, "" when nothing
	// is wrong with it: not an object with a name, or a definition the SDK
	// drops from its own listing (an x-mcp-header annotation it refuses),
	// with the SDK's reason.
	Invalid string
}

// ListTools opens one fresh session to req.URL, reads tools/list from the
// wire, following nextCursor for at most 10 pages, and closes the session.
// It speaks both eras of the transport and makes one attempt per exchange,
// as Call does, and re-initializes once a session the server forgets.
//
// A Request it cannot use is a plain error. Whatever else went wrong is a
// *results.Error with the codes of SPEC §1 and §10 (connection_refused,
// mcp_protocol, tool_server_error…) whose message names the step and never
// quotes a header; a failed listing never returns a partial or empty
// list.
func ListTools(ctx context.Context, req ListRequest) (*ToolList, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	c := newCall(ctx, Request{
		URL: req.URL, Command: req.Command, Header: req.Header, MaxBodyBytes: req.MaxBodyBytes, HTTPClient: req.HTTPClient,
		ClientName: req.ClientName, ClientVersion: req.ClientVersion, Now: req.Now,
	})
	c.listing = &listing{}
	defer c.end()
	c.run()
	if v := c.failure; v != nil {
		return nil, results.NewError(v.code, "%s", c.failureText(v))
	}
	l := c.listing
	return &ToolList{ProtocolVersion: c.version, Server: l.server, Tools: l.tools, Truncated: l.truncated}, nil
}

func (r ListRequest) check() error {
	if r.Command != nil {
		return Request{URL: r.URL, Command: r.Command, Tool: "-", MaxBodyBytes: r.MaxBodyBytes}.checkCommand()
	}
	switch {
	case r.URL == "":
		return errors.New("mcpsdk: ListRequest.URL is empty")
	case r.MaxBodyBytes <= 0:
		return errors.New("mcpsdk: ListRequest.MaxBodyBytes must be positive")
	case r.HTTPClient == nil:
		return errors.New("mcpsdk: ListRequest.HTTPClient is nil")
	}
	if _, err := url.Parse(r.URL); err != nil {
		return errors.New("mcpsdk: ListRequest.URL does not parse")
	}
	return nil
}

// listing is what a ListTools session found; a call with one lists every
// tool and calls none.
type listing struct {
	server    ServerInfo
	tools     []ListedTool
	truncated bool
}

// listAll pages through tools/list, keeping every entry. A page the SDK
// cannot decode (an entry that is not an object, say) is still listed from
// the wire when the wire shows a ListToolsResult: a person reading the
// listing wants to see what is wrong, not only that something is.
func (c *call) listAll(cs *mcp.ClientSession) *verdict {
	l := c.listing
	l.tools, l.truncated = nil, false
	if init := cs.InitializeResult(); init != nil && init.ServerInfo != nil {
		l.server = ServerInfo{Name: init.ServerInfo.Name, Title: init.ServerInfo.Title, Version: init.ServerInfo.Version}
	}
	cursor := ""
	for page := 1; page <= maxPages; page++ {
		from := c.rec.count()
		c.drops.reset()
		res, err := cs.ListTools(c.op, &mcp.ListToolsParams{Cursor: cursor})
		i := c.rec.last("tools/list", from)
		var sdkErr string
		if err != nil {
			if v := c.stopped("tools/list"); v != nil {
				return v
			}
			if v := c.judgeExchange("tools/list", i); v != nil {
				return v
			}
			if _, perr := parsePage(c.rec.get(i).response); perr != nil {
				return c.sdkFailure("tools/list", i, err)
			}
			sdkErr = "the SDK cannot decode the page it is on: " + firstLine(err.Error())
		}
		p, perr := parsePage(c.rec.get(i).response)
		if perr != nil {
			return &verdict{code: results.CodeMCPProtocol, exchange: i, message: "tools/list: " + perr.Error()}
		}
		kept := map[string]int{}
		if res != nil {
			for _, t := range res.Tools {
				kept[t.Name]++
			}
		}
		for _, raw := range p.tools {
			t := ListedTool{Definition: raw}
			def, ok := parseTool(raw)
			switch {
			case !ok:
				t.Invalid = "not a tool definition: not an object with a name"
			case sdkErr != "":
				t.Name, t.Invalid = def.Name, sdkErr
			case kept[def.Name] > 0:
				t.Name = def.Name
				kept[def.Name]--
			default:
				t.Name, t.Invalid = def.Name, "the SDK drops it from its listing: "+c.drops.reason(def.Name)
			}
			l.tools = append(l.tools, t)
		}
		if p.next == "" {
			return nil
		}
		cursor = p.next
	}
	l.truncated = true
	return nil
}

// dropLog is the SDK client's logger while a listing runs: the SDK drops a
// tool it finds invalid from ListTools and says why only in its log.
type dropLog struct {
	mu      sync.Mutex
	reasons map[string]string // tool name → the SDK's error
}

func (d *dropLog) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reasons = nil
}

// reason is the SDK's last logged reason for dropping tool.
func (d *dropLog) reason(tool string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.reasons[tool]; r != "" {
		return r
	}
	return "invalid"
}

// Enabled lets through only errors, the level the SDK drops a tool at, so
// that a probe's Call pays nothing for the SDK's other logging.
func (d *dropLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelError }

func (d *dropLog) Handle(_ context.Context, r slog.Record) error {
	var tool, reason string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "tool":
			tool = a.Value.String()
		case "error":
			reason = firstLine(a.Value.String())
		}
		return true
	})
	if tool == "" || reason == "" {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.reasons == nil {
		d.reasons = map[string]string{}
	}
	d.reasons[tool] = reason
	return nil
}

func (d *dropLog) WithAttrs([]slog.Attr) slog.Handler { return d }
func (d *dropLog) WithGroup(string) slog.Handler      { return d }
