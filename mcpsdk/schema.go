package mcpsdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	// google/jsonschema-go rather than santhosh-tekuri/jsonschema: the SDK
	// already depends on it (it infers and checks schemas with it), so it
	// costs toolpulse no module of its own in the binary; it validates
	// JSON Schema 2020-12 and draft-07, chosen by $schema as SPEC §10 asks;
	// santhosh-tekuri stays what only checks/ tests use.
	"github.com/google/jsonschema-go/jsonschema"
)

// maxSchemas bounds how many compiled schemas a Schemas holds: one per
// tool probed is the normal count; a server that sends a different schema
// on every run must not grow it without end.
const maxSchemas = 1024

// Schemas keeps the outputSchemas that calls have compiled, keyed by the
// schema's text as the server listed it, so that a probe of a tool that
// declares one parses and resolves it once rather than on every run (the
// larger part of checking an answer against it). A schema that cannot be
// used is not kept: each call reports it anew. The zero value is ready to
// use and safe for concurrent use.
type Schemas struct {
	mu       sync.Mutex
	resolved map[string]*jsonschema.Resolved
}

// resolve returns schema compiled, from s when it holds it; a nil s
// compiles it every time.
func (s *Schemas) resolve(schema json.RawMessage) (*jsonschema.Resolved, error) {
	if s != nil {
		s.mu.Lock()
		r, ok := s.resolved[string(schema)]
		s.mu.Unlock()
		if ok {
			return r, nil
		}
	}
	r, err := compileSchema(schema)
	if err != nil {
		return nil, errors.New("the outputSchema " + err.Error())
	}
	if s != nil {
		s.mu.Lock()
		if len(s.resolved) >= maxSchemas {
			clear(s.resolved)
		}
		if s.resolved == nil {
			s.resolved = map[string]*jsonschema.Resolved{}
		}
		s.resolved[string(schema)] = r
		s.mu.Unlock()
	}
	return r, nil
}

// Len is how many compiled schemas s holds.
func (s *Schemas) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.resolved)
}

// validateOutput checks structuredContent against a tool's outputSchema:
// JSON Schema 2020-12 unless the schema's $schema names draft-07. A schema
// that cannot be used (not a schema, remote references, another draft) is
// an error too: the probe cannot vouch for the answer. The compiled schema
// comes from schemas when it holds it (nil compiles it anew).
func validateOutput(schemas *Schemas, schema, instance json.RawMessage) error {
	resolved, err := schemas.resolve(schema)
	if err != nil {
		return err
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
