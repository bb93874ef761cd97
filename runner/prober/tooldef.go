package prober

import (
	"encoding/json"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/tooldef"
)

// toolDefinitionOf is the definition of an MCP run's tools/list entry;
// nil when the run got none, or one that is not a JSON object (mcpsdk
// checks that it is). Its fingerprint is of the whole definition, its
// text what tooldef keeps of it (Stored), which is also what the next
// run's is compared with.
func toolDefinitionOf(entry json.RawMessage) *results.ToolDefinition {
	if len(entry) == 0 {
		return nil
	}
	d, err := tooldef.Parse(entry)
	if err != nil {
		return nil
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
