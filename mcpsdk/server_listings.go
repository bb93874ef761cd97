package mcpsdk

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Server's prompts and resources, as data: what prompts/list and
// resources/list show, which is what a probe that watches them compares
// from one run to the next (SPEC §10.1). A server declares each
// capability once it has one prompt or resource.

// ServerPrompt is one prompt of a Server. Its prompts/get answers one user
// message, the description.
type ServerPrompt struct {
	Name, Title, Description string
	Arguments                []PromptArgument
}

// PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name, Description string
	Required          bool
}

// ServerResource is one resource of a Server, read as its Text.
type ServerResource struct {
	// URI is absolute: it has a scheme.
	URI                                string
	Name, Title, Description, MIMEType string
	Text                               string
}

// SetPrompt adds p, or replaces the prompt of its name. A prompt without a
// name is an error and changes nothing.
func (s *Server) SetPrompt(p ServerPrompt) error {
	if p.Name == "" {
		return errors.New("mcpsdk: ServerPrompt.Name is empty")
	}
	prompt := &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
	for _, a := range p.Arguments {
		prompt.Arguments = append(prompt.Arguments, &mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
	}
	s.srv.AddPrompt(prompt, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Description: p.Description,
			Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: p.Description}}}}, nil
	})
	return nil
}

// RemovePrompt removes the prompt of that name, if there is one.
func (s *Server) RemovePrompt(name string) { s.srv.RemovePrompts(name) }

// SetResource adds r, or replaces the resource of its URI. A URI that is
// not absolute, or a resource without a name, is an error and changes
// nothing.
func (s *Server) SetResource(r ServerResource) error {
	if u, err := url.Parse(r.URI); err != nil || u.Scheme == "" {
		return fmt.Errorf("mcpsdk: resource URI %q is not absolute", r.URI)
	}
	if r.Name == "" {
		return errors.New("mcpsdk: ServerResource.Name is empty")
	}
	s.srv.AddResource(&mcp.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.URI, MIMEType: r.MIMEType, Text: r.Text}}}, nil
		})
	return nil
}
