package prober

import (
	"encoding/json"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/mcpsdk"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/tooldef"
)

// definitionOf is the definition an MCP run showed (SPEC §10, §10.1): its
// tools/list entry, what the server said of itself in the handshake, and
// the listings the probe watches; nil when the run got no entry, or one
// that is not a JSON object (mcpsdk checks that it is). Its fingerprint is
// of the whole definition, its text what tooldef keeps of it (Stored),
// which is also what the next run's is compared with.
//
// A run that did not read a listing it watches (the listing failed, which
// fails the run) has no definition either: the last whole one stays the
// baseline, and the next whole one is compared with it, so that a change
// made while the listing failed is still announced.
func definitionOf(a *mcpsdk.Answer, watch checks.MCPWatch) *results.ToolDefinition {
	if a == nil || len(a.Tool) == 0 || (watch.Prompts && a.Prompts == nil) || (watch.Resources && a.Resources == nil) {
		return nil
	}
	d, err := tooldef.Parse(a.Tool)
	if err != nil {
		return nil
	}
	d.WithServer(tooldef.Server{Name: a.Server.Name, Version: a.Server.Version, Instructions: a.Server.Instructions})
	for listing, entries := range map[string][]json.RawMessage{tooldef.PartPrompts: a.Prompts, tooldef.PartResources: a.Resources} {
		if entries != nil {
			// mcpsdk hands over only objects, which WithListing takes.
			_ = d.WithListing(listing, entries)
		}
	}
	return &results.ToolDefinition{Fingerprint: d.Fingerprint(), Canonical: d.Stored().Canonical()}
}

// redactDefinition scrubs known secrets from a definition's text; the
// fingerprint stays as computed. A scrubbed text that is no longer JSON
// (a secret with a quote in it) is replaced by an empty object, since the
// store keeps definitions as JSON: the run's diff then says little, but
// says no secret.
func redactDefinition(t *results.ToolDefinition, redact func(string) string) {
	if t == nil {
		return
	}
	if scrubbed := redact(t.Canonical); scrubbed != t.Canonical {
		if !json.Valid([]byte(scrubbed)) {
			scrubbed = "{}"
		}
		t.Canonical = scrubbed
	}
}
