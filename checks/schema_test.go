package checks

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolpulse/toolpulse/internal/testkit"
)

// schemaFile is the schema editors load, committed at the repository root
// beside checks.yaml.
const schemaFile = "../checks.schema.json"

// TestSchemaFile: the committed schema is what Schema generates from the
// loader's key tables today (go generate ./checks rewrites it).
func TestSchemaFile(t *testing.T) {
	got, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, schemaFile, got)
}

// TestSchemaCoversKeyTables: a key added to a table the loader checks
// without a type in the schema fails Schema, and so does a type for a key
// the loader would reject.
func TestSchemaCoversKeyTables(t *testing.T) {
	saved := slices.Clone(tlsKeys)
	defer func() { tlsKeys = saved }()
	tlsKeys = append(tlsKeys, "client_cert")
	if _, err := Schema(); err == nil || !strings.Contains(err.Error(), `"client_cert"`) {
		t.Errorf("Schema with an untyped tls key: err = %v, want it named", err)
	}
	tlsKeys = saved[:1]
	if _, err := Schema(); err == nil || !strings.Contains(err.Error(), `"insecure"`) {
		t.Errorf("Schema with a type for a key the loader dropped: err = %v, want it named", err)
	}
}

// compiledSchema compiles the committed schema file.
func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("compiling %s: %v", schemaFile, err)
	}
	return s
}

// validate checks a YAML file against the schema as an editor would: the
// file's own text, before environment expansion.
func validate(t *testing.T, s *jsonschema.Schema, path string) error {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return err
	}
	return s.Validate(doc)
}

// TestSchemaAcceptsExamples: every config in the repository that Load
// accepts, the schema accepts too.
func TestSchemaAcceptsExamples(t *testing.T) {
	s := compiledSchema(t)
	configs := []string{"../checks.yaml", "testdata/valid-full.yaml", "testdata/valid-mcp.yaml", "testdata/valid-mcp-stdio.yaml"}
	err := fs.WalkDir(os.DirFS("../examples"), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "checks.yaml" {
			configs = append(configs, filepath.Join("../examples", p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(configs) < 4 {
		t.Fatalf("found only %v", configs)
	}
	modeline := regexp.MustCompile(`(?m)^# yaml-language-server: \$schema=(\S+)$`)
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range configs {
		if err := validate(t, s, path); err != nil {
			t.Errorf("%s: the schema rejects it:\n%v", path, err)
		}
		// An editor follows the modeline relative to the file.
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if m := modeline.FindSubmatch(data); m != nil {
			got, err := os.ReadFile(filepath.Join(filepath.Dir(path), string(m[1])))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: its $schema=%s is not checks.schema.json (%v)", path, m[1], err)
			}
		}
	}
}

// beyondSchema are the invalid fixtures a JSON Schema cannot reject, with
// why: the loader alone sees other files, the environment, expr and
// relations between values. Every other fixture must be rejected, by the
// schema or by the YAML parse before it (duplicate keys, bad bytes). The
// list is exact: a fixture the schema comes to reject must leave it.
var beyondSchema = map[string]string{
	"budget":                 "compares retries.budget with timeout",
	"ca-file":                "reads the CA file",
	"consumer-file-missing":  "reads the consumer file",
	"consumer-file-typo":     "reads the consumer file",
	"consumer-name-mismatch": "reads the consumer file",
	"duplicate-consumer":     "names must be unique across items",
	"duplicate-probe":        "names must be unique across items",
	"jitter-interval":        "compares jitter with interval",
	"jitter-origin":          "compares jitter with interval",
	"max-delay":              "compares max_delay with base_delay",
	"select-compile":         "compiles expr",
	"token-required":         "relates the listen address to the token",
	"token-short":            "relates the listen address to the token",
	"token-whitespace":       "relates the listen address to the token",
	"unknown-consumer":       "refers to another item",
	"unset-env":              "needs the environment",
	"validate-inline":        "compiles expr",
	"fail-code":              "compiles expr: the code is a literal inside a rule",
	"header-name":            "header names are keys of a free map",
	"mcp-header":             "header names are keys of a free map",
	"listen":                 "host:port syntax",
	"api-url":                "URL syntax",
	"webhook-url":            "URL syntax",
	"storage-dsn-url":        "URL syntax",
	"fleet-lease":            "a duration's lower bound",
	"failure-window-order":   "relates failures to runs",
	"slack-channel":          "relates token to channel",
	"slack-both":             "relates webhook_url to token",
}

// TestSchemaRejectsInvalid: each of the loader's invalid fixtures that a
// schema can judge, the schema rejects.
func TestSchemaRejectsInvalid(t *testing.T) {
	s := compiledSchema(t)
	rules := map[string]bool{}
	for _, c := range invalidConfigs {
		rules[c.rule] = true
		path := "testdata/invalid-" + c.rule + ".yaml"
		_, beyond := beyondSchema[c.rule]
		err := validate(t, s, path)
		switch {
		case err == nil && !beyond:
			t.Errorf("%s: the schema accepts it; Load says %q", path, c.want[0])
		case err != nil && beyond:
			t.Errorf("%s: the schema rejects it now (%v); take it off beyondSchema", path, firstLineOf(err))
		}
	}
	for rule := range beyondSchema {
		if !rules[rule] {
			t.Errorf("beyondSchema lists %q, which is not an invalid fixture", rule)
		}
	}
}

func firstLineOf(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
