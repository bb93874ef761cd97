package mcpsdk

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

const temperatureSchema = `{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}`

// TestSchemasKeepCompiled: a schema is compiled once and then served from
// the cache, and still judges each answer; one that cannot be used is
// never kept and fails every call; a nil cache compiles every time.
func TestSchemasKeepCompiled(t *testing.T) {
	var s Schemas
	schema := json.RawMessage(temperatureSchema)
	if err := validateOutput(&s, schema, json.RawMessage(`{"temperature":21.5}`)); err != nil {
		t.Fatalf("a matching answer: %v", err)
	}
	first := s.resolved[temperatureSchema]
	if first == nil || len(s.resolved) != 1 {
		t.Fatalf("after one call the cache holds %d schemas, want the one compiled", len(s.resolved))
	}
	err := validateOutput(&s, schema, json.RawMessage(`{"temperature":"warm"}`))
	if err == nil || !strings.Contains(err.Error(), "temperature") {
		t.Errorf("a mismatching answer against the cached schema: %v, want the mismatch named", err)
	}
	if s.resolved[temperatureSchema] != first || len(s.resolved) != 1 {
		t.Errorf("the second call compiled the schema again")
	}

	bad := json.RawMessage(`{"$ref":"https://example.com/remote.json"}`)
	for range 2 {
		if err := validateOutput(&s, bad, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "cannot be used") {
			t.Errorf("a remote $ref: %v, want the schema refused on every call", err)
		}
	}
	if len(s.resolved) != 1 {
		t.Errorf("the cache holds %d schemas, want the unusable one left out", len(s.resolved))
	}

	if err := validateOutput(nil, schema, json.RawMessage(`{"temperature":"warm"}`)); err == nil {
		t.Errorf("with no cache a mismatching answer passed")
	}
}

// TestSchemasBounded: a server that lists a new schema on every run
// cannot grow the cache past maxSchemas.
func TestSchemasBounded(t *testing.T) {
	var s Schemas
	for i := range maxSchemas + 10 {
		schema := json.RawMessage(`{"type":"object","description":"v` + strconv.Itoa(i) + `"}`)
		if err := validateOutput(&s, schema, json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		if len(s.resolved) > maxSchemas {
			t.Fatalf("after %d schemas the cache holds %d, want at most %d", i+1, len(s.resolved), maxSchemas)
		}
	}
}
