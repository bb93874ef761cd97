package checks

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolpulse/toolpulse/results"
)

// The committed checks.schema.json at the repository root is Schema's
// output; TestSchemaFile fails when they differ. Regenerate it with:
//
//go:generate go test -run ^TestSchemaFile$ . -update

// SchemaID is the $id of the schema of checks.yaml.
const SchemaID = "https://github.com/toolpulse/toolpulse/checks.schema.json"

// Schema returns the JSON Schema of checks.yaml for editors
// (yaml-language-server), in draft-07, which they all read. It is built
// from the loader's own tables of known keys, so that a key the loader
// accepts or rejects is one the schema accepts or rejects; a key without a
// type here is an error. A schema sees one file's text: what needs the
// environment, another file, an expr compile or two settings at once (a
// consumer that exists, jitter below interval, a CA file that parses) only
// Load checks.
func Schema() ([]byte, error) {
	b := schemaBuilder{}
	str := scalarString
	integer := func(min int64) map[string]any { return intSchema(&min, nil) }
	tuning := map[string]any{
		"interval":       durationSchema("how often the probe runs", true),
		"jitter":         durationSchema("the first run starts at a random offset in [0, jitter); unset everywhere, it is 5s or a tenth of the interval, whichever is smaller", false),
		"timeout":        durationSchema("per attempt, including reading the body", true),
		"max_body_bytes": withDoc(integer(1), "largest response body read"),
		"trace":          withDoc(boolSchema(), "send a W3C traceparent and a tracestate marking the call synthetic with every request, and keep the trace id with the run; default true"),
		"retries": b.object("retries", retriesKeys, nil, map[string]any{
			"max_attempts": withDoc(intSchema(ptr(int64(1)), ptr(int64(10))), "attempts in total, the first included"),
			"base_delay":   durationSchema("first back-off", true),
			"max_delay":    durationSchema("longest back-off", true),
			"budget":       durationSchema("time for all attempts and back-offs", true),
		}),
		"expect": b.object("expect", expectKeys, nil, map[string]any{
			"status": map[string]any{
				"type":     "array",
				"minItems": 1,
				"items":    intSchema(ptr(int64(100)), ptr(int64(599))),
			},
			"min_results": withDoc(integer(0), "fewest selected items a pass needs"),
		}),
	}
	outcomes := make([]string, len(results.Outcomes))
	for i, o := range results.Outcomes {
		outcomes[i] = string(o)
	}
	expectation := map[string]any{"anyOf": []any{
		map[string]any{"enum": outcomes},
		b.object("expectation", expectationKeys, []string{"outcome"}, map[string]any{
			"outcome":      map[string]any{"enum": outcomes},
			"code":         str(),
			"min_selected": integer(0),
		}),
	}}
	contentItem := map[string]any{
		"type":     "object",
		"required": []string{"type"},
		"properties": map[string]any{
			"type": map[string]any{"type": "string", "pattern": `\S`},
		},
		"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": "text"}}},
		"then": map[string]any{"required": []string{"text"}, "properties": map[string]any{"text": map[string]any{"type": "string"}}},
	}
	object := func(d string) map[string]any { return map[string]any{"type": "object", "description": d} }
	fixture := b.object("fixture", fixtureKeys, []string{"name", "expect"}, map[string]any{
		"name":     str(),
		"response": map[string]any{"description": "the decoded JSON answer"},
		"result": b.object("result", toolResultKeys, []string{"content"}, map[string]any{
			"content":           map[string]any{"type": "array", "items": contentItem},
			"structuredContent": object("what the rule sees as response when present"),
			"isError":           map[string]any{"type": "boolean"},
			"_meta":             object("metadata, passed through"),
		}),
		"status":      intSchema(ptr(int64(100)), ptr(int64(599))),
		"headers":     stringMap(),
		"min_results": integer(0),
		"expect":      expectation,
	})
	fixture["oneOf"] = []any{
		map[string]any{"required": []string{"response"}},
		map[string]any{"required": []string{"result"}},
	}
	mutation := b.object("accepted mutation", mutationKeys, mutationKeys, map[string]any{
		"mutation": nonEmptyString(),
		"reason":   nonEmptyString(),
	})
	consumer := b.object("consumer", consumerRefKeys, nil, map[string]any{
		"name":             str(),
		"file":             withDoc(nonEmptyString(), "a consumer file, relative to checks.yaml; nothing else may be given with it"),
		"version":          str(),
		"select":           withDoc(str(), "expr rule evaluating to the list of items the caller uses"),
		"validate":         withDoc(str(), "expr rule every selected item must satisfy"),
		"fixtures":         map[string]any{"type": "array", "items": fixture},
		"accept_mutations": map[string]any{"type": "array", "items": mutation},
	})
	// A consumer is a file (its name may be in the file) or inline rules
	// with a name, never both.
	inline := []any{}
	for _, k := range consumerRefKeys {
		if k != "name" && k != "file" {
			inline = append(inline, map[string]any{"required": []string{k}})
		}
	}
	consumer["if"] = map[string]any{"required": []string{"file"}}
	consumer["then"] = map[string]any{"not": map[string]any{"anyOf": inline}}
	consumer["else"] = map[string]any{"required": []string{"name", "select"}}

	locationList := map[string]any{"type": "array", "minItems": 1, "uniqueItems": true, "items": locationSchema(false),
		"description": "where the probe runs from; default: every location the probes name, or the single location default"}
	auth := b.object("auth", authKeys, []string{"oauth_client_credentials"}, map[string]any{
		"oauth_client_credentials": b.object("oauth_client_credentials", oauthKeys, []string{"client_id", "client_secret"}, map[string]any{
			"client_id":     withDoc(nonEmptyString(), "the OAuth client's id"),
			"client_secret": withDoc(nonEmptyString(), "the OAuth client's secret; a secret: write ${VAR}"),
			"scopes":        map[string]any{"type": "array", "items": map[string]any{"type": "string", "pattern": `^[^\s"\\]+$`}, "description": "the scopes the token request asks for"},
			"audience":      withDoc(str(), "sent to the token endpoint as its audience parameter"),
			"resource":      withDoc(map[string]any{"type": "string", "pattern": "^(https?://|\\$\\{)"}, "sent to the token endpoint as its resource parameter (RFC 8707); default: the resource the discovered metadata names"),
			"token_url":     withDoc(map[string]any{"type": "string", "pattern": "^(https?://|\\$\\{)"}, "the token endpoint; default: discovered from the server's protected resource metadata (RFC 9728) and its authorization server's (RFC 8414)"),
		}),
	})
	probeProps := map[string]any{
		"locations": locationList,
		"alert_when": b.object("alert_when", alertWhenKeys, nil, map[string]any{
			"locations": withDoc(integer(1), "locations that must be failing before the probe alerts, at most the probe's locations; default: all of one or two, a majority of three or more"),
		}),
		"name": map[string]any{"type": "string", "pattern": probeName.String()},
		"request": b.object("request", requestKeys, []string{"url"}, map[string]any{
			"method":           map[string]any{"enum": methods},
			"url":              map[string]any{"type": "string", "pattern": "^(https?://|\\$\\{)", "description": "absolute http:// or https:// URL"},
			"headers":          stringMap(),
			"query":            stringMap(),
			"json":             map[string]any{"description": "the JSON body sent"},
			"body":             str(),
			"follow_redirects": withDoc(boolSchema(), "follow 3xx answers, up to 10, never into link-local addresses, nor private or loopback ones unless the probe's own host is there; false: the 3xx is the answer, judged by expect.status; default true"),
			"auth":             auth,
		}),
		"mcp": mcpSchema(b.object("mcp", mcpKeys, []string{"tool"}, map[string]any{
			"url":     map[string]any{"type": "string", "pattern": "^(https?://|\\$\\{)", "description": "the MCP server's Streamable HTTP endpoint, absolute http:// or https://"},
			"command": map[string]any{"type": "array", "minItems": 1, "items": scalarString(), "description": "start a stdio MCP server for each run: the program and its arguments, no shell"},
			"env":     withDoc(stringMap(), "added to the stdio server's environment; values are secrets"),
			"dir":     withDoc(nonEmptyString(), "the stdio server's working directory"),
			"headers": stringMap(),
			"tool":    withDoc(nonEmptyString(), "the name of the tool to call, as tools/list gives it"),
			"arguments": map[string]any{"type": []string{"object", "null"},
				"description": "the tool's arguments, the known fixture; default {}"},
			"is_error":          map[string]any{"enum": isErrorOutcomes, "description": "how a result with isError: true counts; default contract_error"},
			"allow_destructive": withDoc(boolSchema(), "call a tool annotated destructiveHint: true; default false"),
			"watch": map[string]any{
				"type":        []string{"array", "null"},
				"uniqueItems": true,
				"items":       map[string]any{"enum": watchables},
				"description": "listings besides tools/list whose change is a definition drift: prompts, resources; default none",
			},
			"auth": auth,
		})),
		"consumer": str(),
		"labels": map[string]any{
			"type":                 "object",
			"propertyNames":        map[string]any{"pattern": labelName.String(), "not": map[string]any{"anyOf": labelNameExclusions()}},
			"additionalProperties": scalarString(),
		},
		"tls": b.object("tls", tlsKeys, nil, map[string]any{
			"ca_file":  nonEmptyString(),
			"insecure": boolSchema(),
		}),
	}
	capture := map[string]any{
		"type":          "object",
		"propertyNames": map[string]any{"pattern": varName.String(), "not": map[string]any{"const": OperationIDVar}},
		"additionalProperties": map[string]any{"anyOf": []any{
			withDoc(nonEmptyString(), "an expr rule over the step's answer"),
			b.object("capture", captureKeys, []string{"rule"}, map[string]any{
				"rule":   withDoc(nonEmptyString(), "an expr rule over the step's answer"),
				"secret": withDoc(boolSchema(), "scrub the captured value from every output"),
			}),
		}},
		"description": "values of the answer for later steps: {{name}} in their calls, vars.name in their rules",
	}
	stepProps := map[string]any{
		"name":     map[string]any{"type": "string", "pattern": probeName.String()},
		"request":  probeProps["request"],
		"mcp":      probeProps["mcp"],
		"consumer": withDoc(str(), "judge this step's answer as a single probe's; default: an accepted status is enough"),
		"capture":  capture,
		"until":    withDoc(nonEmptyString(), "poll until this expr rule is true: a verification"),
		"within":   durationSchema("how long a verification may take to become true", true),
		"every":    durationSchema("between polls; default 1s", true),
		"always":   withDoc(boolSchema(), "run last, whatever happened; never changes the outcome"),
		"timeout":  tuning["timeout"],
		"retries":  tuning["retries"],
		"expect":   tuning["expect"],
	}
	step := b.object("step", stepKeys, []string{"name"}, stepProps)
	step["oneOf"] = []any{map[string]any{"required": []string{"request"}}, map[string]any{"required": []string{"mcp"}}}
	probeProps["steps"] = map[string]any{"type": "array", "minItems": 1, "items": step,
		"description": "calls run in order within one operation, each a request or an mcp"}
	answer := b.object("answer", answerKeys, nil, map[string]any{
		"response": fixture["properties"].(map[string]any)["response"],
		"result":   fixture["properties"].(map[string]any)["result"],
		"status":   intSchema(ptr(int64(100)), ptr(int64(599))),
		"headers":  stringMap(),
	})
	probeProps["fixtures"] = map[string]any{"type": "array", "description": "canned runs of a probe with steps, for toolpulse test",
		"items": b.object("probe fixture", probeFixtureKeys, probeFixtureKeys, map[string]any{
			"name": str(),
			"answers": map[string]any{"type": "object", "description": "each step's canned answer, or a list of them (one per attempt or poll)",
				"additionalProperties": map[string]any{"anyOf": []any{answer, map[string]any{"type": "array", "minItems": 1, "items": answer}}}},
			"expect": map[string]any{"anyOf": []any{
				map[string]any{"enum": outcomes},
				b.object("probe expectation", stepExpectationKeys, []string{"outcome"}, map[string]any{
					"outcome":      map[string]any{"enum": outcomes},
					"code":         str(),
					"min_selected": integer(0),
					"step":         withDoc(str(), "the step that must decide the outcome"),
				}),
			}},
		})}
	for k, v := range tuning {
		probeProps[k] = v
	}
	probe := b.object("probe", probeKeys, []string{"name"}, probeProps)
	// A single call is judged by the probe's consumer; steps by their own.
	probe["if"] = map[string]any{"required": []string{"steps"}}
	probe["then"] = map[string]any{"not": map[string]any{"required": []string{"consumer"}}}
	probe["else"] = map[string]any{"required": []string{"consumer"}}
	// Exactly one of the keys that say what the probe calls.
	kinds := []any{}
	for _, k := range probeKinds {
		kinds = append(kinds, map[string]any{"required": []string{k.key}})
	}
	probe["oneOf"] = kinds
	probe["not"] = map[string]any{"properties": map[string]any{"request": map[string]any{"required": []string{"json", "body"}}}, "required": []string{"request"}}

	alertTriggers := slices.Clone(alertOn)
	slackReceiver := func(name string) map[string]any {
		return b.object(name, slackKeys, nil, map[string]any{
			"webhook_url": str(),
			"token":       str(),
			"channel":     str(),
			"api_url":     str(),
		})
	}
	onList := map[string]any{
		"type":        "array",
		"uniqueItems": true,
		"items":       map[string]any{"enum": alertTriggers},
	}
	route := b.object("route", routeKeys, []string{"match"}, withGrouping(b.withHysteresis(map[string]any{
		"match": map[string]any{
			"type":                 "object",
			"minProperties":        1,
			"propertyNames":        map[string]any{"pattern": labelName.String(), "not": map[string]any{"anyOf": labelNameExclusions()}},
			"additionalProperties": scalarString(),
			"description":          "the labels a probe must carry, every one of them",
		},
		"slack":                 slackReceiver("route slack"),
		"alertmanager":          b.object("alertmanager", alertmanagerKeys, []string{"url"}, map[string]any{"url": str()}),
		"webhook":               b.object("webhook", webhookKeys, []string{"url", "secret"}, map[string]any{"url": str(), "secret": str()}),
		"on":                    onList,
		"failure_threshold":     integer(1),
		"repeat_interval":       durationSchema("a still-failing probe is re-alerted at most this often", true),
		"send_resolved":         boolSchema(),
		"update_on_code_change": boolSchema(),
	})))
	route = exclusiveWindowSchema(route)
	route["anyOf"] = []any{
		map[string]any{"required": []string{"slack"}},
		map[string]any{"required": []string{"alertmanager"}},
		map[string]any{"required": []string{"webhook"}},
	}
	storage := b.object("storage", storageKey, nil, map[string]any{
		"driver": map[string]any{"anyOf": []any{map[string]any{"enum": []string{DriverSQLite, DriverPostgres}}, map[string]any{"type": "string", "pattern": envRef}},
			"description": "sqlite (the default): one file; postgres: a database several instances share"},
		"path":      withDoc(nonEmptyString(), "the SQLite file, relative to checks.yaml; not with driver: postgres"),
		"dsn":       withDoc(scalarString(), "the Postgres connection string, a secret: postgres://user:pass@host/db or key=value settings; only with driver: postgres"),
		"retention": durationSchema("prune older results; 0 keeps everything", false),
	})
	// postgres needs a dsn and has no file; sqlite takes no dsn but an
	// empty one, or a ${VAR} only Load can expand.
	storage["if"] = map[string]any{"required": []string{"driver"}, "properties": map[string]any{"driver": map[string]any{"const": DriverPostgres}}}
	storage["then"] = map[string]any{"required": []string{"dsn"}, "not": map[string]any{"required": []string{"path"}}}
	storage["else"] = map[string]any{"properties": map[string]any{"dsn": map[string]any{"anyOf": []any{
		map[string]any{"type": "null"}, map[string]any{"const": ""}, map[string]any{"type": "string", "pattern": envRef}}}}}
	root := b.object("checks.yaml", topKeys, []string{"version"}, map[string]any{
		"version": map[string]any{"const": 1},
		"storage": storage,
		"fleet": b.object("fleet", fleetKeys, nil, map[string]any{
			"node": map[string]any{"type": []string{"string", "null"}, "pattern": `^[^\s\x00-\x1f\x7f-\x9f]*$`, "maxLength": MaxNodeLength,
				"description": "this instance's name, unique in the fleet; default: the host name and the process id"},
			"lease":    withDoc(durationSchema("leadership lapses this long after its holder stops renewing it", true), "at least 2s; default 10s"),
			"location": withDoc(locationSchema(true), "where this instance runs: it claims this location's lease and its leader runs the probes that run from it; default: default"),
		}),
		"server": b.object("server", serverKeys, nil, map[string]any{
			"listen": withDoc(str(), "host:port of the status page, API and /metrics; \"\" disables it"),
			"token":  withDoc(str(), "bearer token; a non-loopback listen requires one of at least 16 characters, without whitespace"),
			"public_url": map[string]any{"type": "string", "pattern": "^(https?://|\\$\\{)",
				"description": "absolute http(s) URL of the status page, for links in alerts"},
		}),
		"max_concurrency": withDoc(integer(1), "runs in flight at once, across all probes"),
		"defaults":        b.object("defaults", defaultsKeys, nil, withLocations(tuning, locationList)),
		"notify": exclusiveWindowSchema(b.object("notify", notifyKeys, nil, withGrouping(b.withHysteresis(map[string]any{
			"slack":                 slackReceiver("slack"),
			"routes":                map[string]any{"type": "array", "items": route, "description": "the first route whose match a probe's labels meet takes its alerts"},
			"on":                    onList,
			"failure_threshold":     withDoc(integer(1), "consecutive non-pass runs before the first alert"),
			"repeat_interval":       durationSchema("a still-failing probe is re-alerted at most this often", true),
			"send_resolved":         boolSchema(),
			"update_on_code_change": boolSchema(),
		})))),
		"consumers":   map[string]any{"type": "array", "items": consumer},
		"probes":      map[string]any{"type": "array", "items": probe},
		"maintenance": map[string]any{"type": "array", "items": maintenanceSchema(&b), "description": "recurring windows that mute the alerts of the probes they cover; resolves are never muted"},
	})
	if b.err != nil {
		return nil, b.err
	}
	root["$schema"] = "http://json-schema.org/draft-07/schema#"
	root["$id"] = SchemaID
	root["title"] = "toolpulse checks.yaml"
	out, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// schemaBuilder collects the first table that does not match its types.
type schemaBuilder struct{ err error }

// object is a closed object whose properties are exactly the keys of
// known, the table the loader rejects unknown keys with.
func (b *schemaBuilder) object(name string, known, required []string, props map[string]any) map[string]any {
	for _, k := range known {
		if _, ok := props[k]; !ok && b.err == nil {
			b.err = fmt.Errorf("checks: Schema: %s key %q has no type", name, k)
		}
	}
	for k := range props {
		if !slices.Contains(known, k) && b.err == nil {
			b.err = fmt.Errorf("checks: Schema: %s has a type for %q, which the loader does not know", name, k)
		}
	}
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// envRef matches a scalar written as a ${VAR} reference, which only Load
// can resolve.
const envRef = `\$\{`

// scalarString is a string setting: the loader takes any scalar as its text.
func scalarString() map[string]any {
	return map[string]any{"type": []string{"string", "number", "boolean", "null"}}
}

func nonEmptyString() map[string]any {
	return map[string]any{"type": "string", "pattern": `\S`}
}

func stringMap() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": scalarString()}
}

func boolSchema() map[string]any {
	return map[string]any{"anyOf": []any{map[string]any{"type": "boolean"}, map[string]any{"type": "string", "pattern": envRef}}}
}

// intSchema is an integer within [min, max] (nil: unbounded), or a string
// the loader reads as one.
func intSchema(min, max *int64) map[string]any {
	n := map[string]any{"type": "integer"}
	if min != nil {
		n["minimum"] = *min
	}
	if max != nil {
		n["maximum"] = *max
	}
	return map[string]any{"anyOf": []any{n, map[string]any{"type": "string", "pattern": `^\s*[-+]?[0-9]+\s*$|` + envRef}}}
}

// durationSchema is a Go duration with a unit, never negative, or a bare
// 0; a positive one refuses every spelling of zero.
func durationSchema(description string, positive bool) map[string]any {
	unit := `([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)`
	written := map[string]any{"pattern": `^\s*\+?(` + unit + `)+\s*$|^\s*0\s*$`}
	if positive {
		zero := `([0]+(\.0*)?|\.0+)(ns|us|µs|μs|ms|s|m|h)`
		written["not"] = map[string]any{"pattern": `^\s*\+?(` + zero + `)+\s*$|^\s*0\s*$`}
	}
	alts := []any{map[string]any{"type": "string", "anyOf": []any{map[string]any{"pattern": envRef}, written}}}
	if !positive {
		alts = append(alts, map[string]any{"const": 0})
	}
	return map[string]any{"anyOf": alts, "description": description + " (Go syntax: 500ms, 30s, 1h30m)"}
}

func labelNameExclusions() []any {
	out := []any{map[string]any{"pattern": "^__"}}
	for _, l := range reservedLabels {
		out = append(out, map[string]any{"const": l})
	}
	return out
}

func withDoc(s map[string]any, d string) map[string]any {
	s["description"] = d
	return s
}

func ptr[T any](v T) *T { return &v }

// maintenanceSchema is one maintenance window. Which probes exist and
// what their labels are, only Load knows.
func maintenanceSchema(b *schemaBuilder) map[string]any {
	var names []string
	for _, d := range weekdays {
		name := d.String()
		names = append(names, anyCase(name[:3])+"("+anyCase(name[3:])+")?")
	}
	w := b.object("maintenance window", maintenanceKeys, []string{"start", "duration"}, map[string]any{
		"probes": map[string]any{"type": "array", "minItems": 1, "uniqueItems": true, "items": nonEmptyString(),
			"description": "the probes it covers, by name; with labels, a probe must be named and carry them"},
		"labels": map[string]any{
			"type":                 "object",
			"minProperties":        1,
			"propertyNames":        map[string]any{"pattern": labelName.String(), "not": map[string]any{"anyOf": labelNameExclusions()}},
			"additionalProperties": scalarString(),
			"description":          "the labels a probe must carry, every one of them",
		},
		"every": map[string]any{"type": "array", "uniqueItems": true,
			"items":       map[string]any{"type": "string", "pattern": `^\s*(` + strings.Join(names, "|") + `)\s*$|` + envRef},
			"description": "the weekdays it starts on (Mon to Sun); empty or left out: every day"},
		"start": map[string]any{"type": "string", "pattern": `^\s*` + strings.Trim(clockTime.String(), "^$") + `\s*$|` + envRef,
			"description": "the time of day it starts, HH:MM in its time zone; a start the clocks skip is taken at the jump"},
		"duration": withDoc(durationSchema("how long it lasts, in elapsed time", true), "more than 0, less than a week"),
		"timezone": withDoc(nonEmptyString(), "an IANA time zone such as Europe/Berlin; default UTC"),
	})
	w["anyOf"] = []any{
		map[string]any{"required": []string{"probes"}},
		map[string]any{"required": []string{"labels"}},
	}
	return w
}

// anyCase is a pattern matching s in any case.
func anyCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteString("[" + strings.ToUpper(string(r)) + strings.ToLower(string(r)) + "]")
	}
	return b.String()
}

// locationSchema is a location's name (checks/locations.go); empty, null
// or a ${VAR} too where the default may be asked for.
func locationSchema(orDefault bool) map[string]any {
	name := map[string]any{"type": "string", "pattern": locationName.String(), "maxLength": MaxLocationLength}
	if !orDefault {
		return name
	}
	return map[string]any{"anyOf": []any{name, map[string]any{"const": ""}, map[string]any{"type": "null"},
		map[string]any{"type": "string", "pattern": envRef}}}
}

// withLocations is defaults:'s properties: the tuning keys and locations.
func withLocations(tuning, locations map[string]any) map[string]any {
	out := make(map[string]any, len(tuning)+1)
	for k, v := range tuning {
		out[k] = v
	}
	out["locations"] = locations
	return out
}

// mcpSchema adds to mcp's object schema what the loader checks across its
// keys: exactly one of url and command, headers only with url, env and dir
// only with command.
func mcpSchema(o map[string]any) map[string]any {
	o["oneOf"] = []any{
		map[string]any{"required": []string{"url"}, "not": map[string]any{"anyOf": []any{
			map[string]any{"required": []string{"env"}}, map[string]any{"required": []string{"dir"}}}}},
		map[string]any{"required": []string{"command"}, "not": map[string]any{"required": []string{"headers"}}},
	}
	return o
}
