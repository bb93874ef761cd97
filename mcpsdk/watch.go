package mcpsdk

import (
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/results"
)

// Server-level definition drift (SPEC §10.1): besides the tool's entry, a
// call keeps what the server says of itself in the handshake and, where
// the probe watches them, the prompts/list and resources/list listings,
// read from the wire as tools/list is, every page of them.

// Watch names the listings besides tools/list a Call reads, for
// definition drift.
type Watch struct {
	Prompts   bool
	Resources bool
}

// watched is one listing a Call can read.
type watched struct {
	method string // prompts/list
	key    string // the result's list: prompts
}

var (
	watchPrompts   = watched{method: "prompts/list", key: "prompts"}
	watchResources = watched{method: "resources/list", key: "resources"}
)

// serverOf is what the session's handshake said of the server; the zero
// ServerInfo before one.
func serverOf(cs *mcp.ClientSession) ServerInfo {
	init := cs.InitializeResult()
	if init == nil {
		return ServerInfo{}
	}
	s := ServerInfo{Instructions: init.Instructions}
	if init.ServerInfo != nil {
		s.Name, s.Title, s.Version = init.ServerInfo.Name, init.ServerInfo.Title, init.ServerInfo.Version
	}
	return s
}

// watch reads the listings req.Watch asks for, once per call: a second
// session after a re-initialization does not read them again. A server
// that declares no such capability has an empty listing, without an
// exchange: a listing that later appears is then a change. A listing
// that fails fails the call, as tools/list does: the definition the run
// records would otherwise say the server has no prompts.
func (c *call) watch(cs *mcp.ClientSession) *verdict {
	var caps *mcp.ServerCapabilities
	if init := cs.InitializeResult(); init != nil {
		caps = init.Capabilities
	}
	if c.req.Watch.Prompts && c.prompts == nil {
		if caps == nil || caps.Prompts == nil {
			c.prompts = []json.RawMessage{}
		} else if v := c.readListing(cs, watchPrompts, &c.prompts); v != nil {
			return v
		}
	}
	if c.req.Watch.Resources && c.resources == nil {
		if caps == nil || caps.Resources == nil {
			c.resources = []json.RawMessage{}
		} else if v := c.readListing(cs, watchResources, &c.resources); v != nil {
			return v
		}
	}
	return nil
}

// readListing pages through one listing (at most maxPages pages),
// setting *into to its entries only when every page read.
func (c *call) readListing(cs *mcp.ClientSession, w watched, into *[]json.RawMessage) *verdict {
	entries := []json.RawMessage{}
	cursor := ""
	for page := 1; page <= maxPages; page++ {
		from := c.rec.count()
		var err error
		switch w {
		case watchPrompts:
			_, err = cs.ListPrompts(c.op, &mcp.ListPromptsParams{Cursor: cursor})
		case watchResources:
			_, err = cs.ListResources(c.op, &mcp.ListResourcesParams{Cursor: cursor})
		}
		i := c.rec.last(w.method, from)
		if err != nil {
			return c.stepFailure(w.method, i, err)
		}
		items, next, perr := parseListing(c.rec.get(i).response, w.key)
		if perr != nil {
			return &verdict{code: results.CodeMCPProtocol, exchange: i, message: w.method + ": " + perr.Error()}
		}
		entries = append(entries, items...)
		if next == "" {
			break
		}
		cursor = next
	}
	*into = entries
	return nil
}

// parseListing reads a raw prompts/list or resources/list response: the
// entries of its key's list and its nextCursor.
func parseListing(response json.RawMessage, key string) ([]json.RawMessage, string, error) {
	var m struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(response, &m); err != nil || m.Result == nil {
		return nil, "", errors.New("the answer is not a list result")
	}
	var items []json.RawMessage
	if raw, ok := m.Result[key]; !ok || json.Unmarshal(raw, &items) != nil {
		return nil, "", errors.New("the answer has no " + key + " list")
	}
	for _, it := range items {
		if !isObject(it) {
			return nil, "", errors.New("an entry of " + key + " is not an object")
		}
	}
	var next string
	if raw, ok := m.Result["nextCursor"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &next) != nil {
			return nil, "", errors.New("its nextCursor is not a string")
		}
	}
	return items, next, nil
}
