package mcpsdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
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
		// The validator stops at its first finding; the keys missing and
		// extra anywhere in the answer are what an operator fixes together.
		first := firstLine(err.Error())
		var found []string
		keyViolations(resolved.Schema(), v, "", &found, 0)
		if len(found) == 0 {
			return errors.New(first)
		}
		if !strings.Contains(first, "missing properties") && !strings.Contains(first, "unexpected additional properties") {
			found = append(found, first)
		}
		msg := strings.Join(found[:min(len(found), maxViolations)], "; ")
		if len(found) > maxViolations {
			msg += fmt.Sprintf("; and %d more", len(found)-maxViolations)
		}
		return errors.New(msg)
	}
	return nil
}

// maxViolations bounds how many violations a message names.
const maxViolations = 8

// keyViolations appends to out, in order, every key an object of v lacks
// that its schema requires and every key it has that its schema forbids
// (additionalProperties: false), following properties and items into the
// answer, at most 8 levels deep. Each reads `missing key "k"` or
// `unexpected key "k"`, after the object's JSON Pointer when it is not
// the top level.
func keyViolations(s *jsonschema.Schema, v any, path string, out *[]string, depth int) {
	if s == nil || depth > 8 || len(*out) > maxViolations {
		return
	}
	at := ""
	if path != "" {
		at = path + ": "
	}
	switch v := v.(type) {
	case map[string]any:
		for _, k := range s.Required {
			if _, ok := v[k]; !ok {
				*out = append(*out, at+"missing key "+strconv.Quote(k))
			}
		}
		closed := s.AdditionalProperties != nil && s.AdditionalProperties.Not != nil &&
			reflect.ValueOf(*s.AdditionalProperties.Not).IsZero() && len(s.PatternProperties) == 0
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, declared := s.Properties[k]
			switch {
			case !declared && closed:
				*out = append(*out, at+"unexpected key "+strconv.Quote(k))
			case declared:
				keyViolations(sub, v[k], path+"/"+escapePointer(k), out, depth+1)
			}
		}
	case []any:
		for i, item := range v {
			if i >= 100 {
				break
			}
			keyViolations(s.Items, item, path+"/"+strconv.Itoa(i), out, depth+1)
		}
	}
}

// escapePointer escapes a key for a JSON Pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
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
