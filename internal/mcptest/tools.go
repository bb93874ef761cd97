package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
)

// Tool is one tool the server lists and answers. The zero InputSchema is
// {"type":"object"}; a nil OutputSchema or Annotations is left out of the
// listing, as real servers do.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  *Annotations
	// Execution is the tool's execution object as listed
	// ({"taskSupport":"required"}); nil leaves it out.
	Execution json.RawMessage
	// Handler answers a tools/call. Nil echoes the arguments as a text
	// item, and also as structuredContent when the tool has an
	// OutputSchema.
	Handler func(ctx context.Context, arguments json.RawMessage) Result
}

// Annotations are a tool's behaviour hints. Each is a pointer because the
// protocol gives an absent hint a default (destructiveHint: true,
// readOnlyHint: false): absent and false are different listings.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Bool returns a pointer to b, for Annotations.
func Bool(b bool) *bool { return &b }

// Result is what a tool handler returns: the CallToolResult's content,
// structuredContent (nil leaves it out) and isError.
type Result struct {
	Content           []Content
	StructuredContent any
	IsError           bool
}

// Content is one content item of a CallToolResult.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// Text returns a text content item.
func Text(s string) Content { return Content{Type: "text", Text: s} }

// TextResult returns a result with one text item.
func TextResult(s string) Result { return Result{Content: []Content{Text(s)}} }

// listed is a tool as tools/list shows it.
type listed struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	Execution    json.RawMessage `json:"execution,omitempty"`
}

func (t Tool) listing() listed {
	in := t.InputSchema
	if len(in) == 0 {
		in = json.RawMessage(`{"type":"object"}`)
	}
	return listed{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: in, OutputSchema: t.OutputSchema, Annotations: t.Annotations,
		Execution: t.Execution}
}

// call runs the tool's handler, or the echo default.
func (t Tool) call(ctx context.Context, args json.RawMessage) Result {
	if t.Handler != nil {
		return t.Handler(ctx, args)
	}
	res := TextResult(string(args))
	if len(t.OutputSchema) > 0 {
		var v any
		if json.Unmarshal(args, &v) == nil {
			res.StructuredContent = v
		}
	}
	return res
}

// missingRequired names the first property the input schema requires that
// args lacks: the one input check a server without a JSON Schema library
// can make exactly.
func (t Tool) missingRequired(args json.RawMessage) (string, bool) {
	var schema struct {
		Required []string `json:"required"`
	}
	if json.Unmarshal(t.InputSchema, &schema) != nil || len(schema.Required) == 0 {
		return "", false
	}
	var got map[string]json.RawMessage
	if json.Unmarshal(args, &got) != nil {
		return schema.Required[0], true
	}
	for _, name := range schema.Required {
		if _, ok := got[name]; !ok {
			return name, true
		}
	}
	return "", false
}

// callResult is the wire form of a CallToolResult.
type callResult struct {
	ResultType        string    `json:"resultType,omitempty"`
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
}

func (r Result) wire() callResult {
	content := r.Content
	if content == nil {
		content = []Content{}
	}
	return callResult{Content: content, StructuredContent: r.StructuredContent, IsError: r.IsError}
}

// breakStructured returns a structuredContent meant not to validate
// against schema: every property the schema declares with a type gets a
// value of another JSON type. A schema with no typed properties gets an
// object with one extra property and none of its required ones, which
// breaks it only if it requires something or forbids extras; give
// Fault.Value for any other schema.
func breakStructured(schema json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := map[string]any{}
	for name, p := range s.Properties {
		if p.Type == nil {
			continue
		}
		if p.Type == "string" {
			out[name] = 12345
		} else {
			out[name] = fmt.Sprintf("not a %v", p.Type)
		}
	}
	if len(out) == 0 {
		out["unexpected"] = "property"
	}
	return out
}
