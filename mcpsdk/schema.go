package mcpsdk

import (
	"encoding/json"
	"errors"
	"fmt"

	// google/jsonschema-go rather than santhosh-tekuri/jsonschema: the SDK
	// already depends on it (it infers and checks schemas with it), so it
	// costs toolpulse no module of its own in the binary; it validates
	// JSON Schema 2020-12 and draft-07, chosen by $schema as SPEC §10 asks;
	// santhosh-tekuri stays what only checks/ tests use.
	"github.com/google/jsonschema-go/jsonschema"
)

// validateOutput checks structuredContent against a tool's outputSchema:
// JSON Schema 2020-12 unless the schema's $schema names draft-07. A schema
// that cannot be used (not a schema, remote references, another draft) is
// an error too: the probe cannot vouch for the answer.
func validateOutput(schema, instance json.RawMessage) error {
	resolved, err := compileSchema(schema)
	if err != nil {
		return errors.New("the outputSchema " + err.Error())
	}
	var v any
	if err := json.Unmarshal(instance, &v); err != nil {
		return errors.New("structuredContent is not JSON")
	}
	if err := resolved.Validate(v); err != nil {
		return errors.New(firstLine(err.Error()))
	}
	return nil
}

// compileSchema reads and resolves a JSON Schema a tool declares: JSON
// Schema 2020-12 unless its $schema names draft-07. Its errors read after
// the schema's name ("the outputSchema is not a JSON Schema: …").
func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	if len(raw) == 0 {
		return nil, errors.New("is missing")
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("is not a JSON Schema: %s", firstLine(err.Error()))
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("cannot be used: %s", firstLine(err.Error()))
	}
	return r, nil
}
