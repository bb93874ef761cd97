package mcpsdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// The protocol's values as the call reads them from the wire, raw: the
// SDK's types drop what they find invalid and normalise the rest, and a
// probe must see what the server sent.

// page is one tools/list answer.
type page struct {
	tools []json.RawMessage
	next  string
}

// parsePage reads a raw tools/list response.
func parsePage(response json.RawMessage) (page, error) {
	var m struct {
		Result *struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor *string           `json:"nextCursor"`
		} `json:"result"`
	}
	if err := json.Unmarshal(response, &m); err != nil || m.Result == nil {
		return page{}, errors.New("the answer is not a ListToolsResult")
	}
	p := page{tools: m.Result.Tools}
	if m.Result.NextCursor != nil {
		p.next = *m.Result.NextCursor
	}
	return p, nil
}

// toolDef is what the call needs of a listed tool.
type toolDef struct {
	Name         string          `json:"name"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	// Execution is read when needed: a malformed one must not hide the
	// tool.
	Execution   json.RawMessage `json:"execution"`
	Annotations *struct {
		DestructiveHint *bool `json:"destructiveHint"`
	} `json:"annotations"`
}

// parseTool reads one raw tools/list entry; false when it is not an object
// with a name.
func parseTool(raw json.RawMessage) (toolDef, bool) {
	var d toolDef
	if json.Unmarshal(raw, &d) != nil || d.Name == "" {
		return toolDef{}, false
	}
	return d, true
}

// destructive reports whether the listing says destructiveHint: true. The
// protocol gives an absent hint the default true, for a tool that is not
// read-only; SPEC §10 refuses only the tools whose listing says so, or
// every tool of a server that leaves annotations out would be refused.
func (d toolDef) destructive() bool {
	return d.Annotations != nil && d.Annotations.DestructiveHint != nil && *d.Annotations.DestructiveHint
}

func (d toolDef) hasOutputSchema() bool { return !isNull(d.OutputSchema) }

// content is one content item of a CallToolResult.
type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func firstText(items []content) string {
	for _, c := range items {
		if c.Type == "text" {
			return c.Text
		}
	}
	return ""
}

// ResponseOf computes what rules see as response from a raw
// CallToolResult (SPEC §10): its structuredContent when present; else the
// JSON value of the first text content item when that text is JSON; else
// that text as a JSON string; else null. It also returns the result's
// isError. A live call and a fixture's result: go through it alike.
func ResponseOf(result json.RawMessage) (json.RawMessage, bool) {
	var r struct {
		Content           []content       `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if json.Unmarshal(result, &r) != nil {
		return json.RawMessage("null"), false
	}
	return responseFrom(r.Content, r.StructuredContent), r.IsError
}

// responseFrom is ResponseOf on a result already read.
func responseFrom(items []content, structured json.RawMessage) json.RawMessage {
	if !isNull(structured) {
		return structured
	}
	for _, c := range items {
		if c.Type != "text" {
			continue
		}
		if t := bytes.TrimSpace([]byte(c.Text)); json.Valid(t) {
			return json.RawMessage(t)
		}
		b, _ := json.Marshal(c.Text)
		return b
	}
	return json.RawMessage("null")
}

// ResultWith returns a copy of result, a CallToolResult as rule values,
// with response put where ResponseOf took it from: structuredContent when
// present, else the first text content item (as JSON text, or the string
// itself when response is one and the text was not JSON). A result with
// neither is returned as it is. toolpulse test uses it to show a rule
// reading result the mutation a rule reading response sees.
func ResultWith(result map[string]any, response any) map[string]any {
	out := maps.Clone(result)
	if sc, ok := out["structuredContent"]; ok && sc != nil {
		out["structuredContent"] = response
		return out
	}
	items, _ := out["content"].([]any)
	for i, item := range items {
		c, ok := item.(map[string]any)
		if !ok || c["type"] != "text" {
			continue
		}
		text, _ := c["text"].(string)
		c = maps.Clone(c)
		if s, isString := response.(string); isString && !json.Valid(bytes.TrimSpace([]byte(text))) {
			c["text"] = s
		} else {
			b, err := json.Marshal(response)
			if err != nil {
				return out
			}
			c["text"] = string(b)
		}
		items = slices.Clone(items)
		items[i] = c
		out["content"] = items
		return out
	}
	return out
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

func quote(s string) string { return strconv.Quote(s) }

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

func sortStrings(list []string) { slices.Sort(list) }

// inputNames are the names of the properties the tool's inputSchema
// declares at its top level.
func (d toolDef) inputNames() []string {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(d.InputSchema, &schema) != nil {
		return nil
	}
	names := make([]string, 0, len(schema.Properties))
	for name := range schema.Properties {
		names = append(names, name)
	}
	return names
}

// taskSupport is the tool's execution.taskSupport ("forbidden",
// "optional", "required"); "" when the listing does not say.
func (d toolDef) taskSupport() string {
	var e struct {
		TaskSupport string `json:"taskSupport"`
	}
	_ = json.Unmarshal(d.Execution, &e)
	return e.TaskSupport
}
