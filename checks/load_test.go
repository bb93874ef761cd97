package checks

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

func noEnv(string) (string, bool) { return "", false }

// invalidConfigs is one config per validation rule, with the exact text
// Load must return for it: every error, sorted, each at file:line:col.
var invalidConfigs = []struct {
	rule string
	want []string
}{
	{rule: "api-url", want: []string{
		"testdata/invalid-api-url.yaml:6:14: notify.slack.api_url: expected an absolute http:// or https:// URL: no scheme",
	}},
	{rule: "budget", want: []string{
		"testdata/invalid-budget.yaml:9:14: probes[0].timeout: retries.budget (15s) must be at least timeout (20s), so that one attempt fits in it",
	}},
	{rule: "ca-file", want: []string{
		"testdata/invalid-ca-file.yaml:9:20: probes[0].tls.ca_file: cannot read testdata/certs/missing.pem: no such file or directory",
		"testdata/invalid-ca-file.yaml:13:20: probes[1].tls.ca_file: testdata/certs/not-pem.txt holds no PEM certificate; expected CA certificates in PEM form",
	}},
	{rule: "consumer-file-missing", want: []string{
		"testdata/invalid-consumer-file-missing.yaml:4:11: consumers[0].file: cannot read consumer file testdata/consumers/missing.yaml: no such file or directory",
	}},
	{rule: "consumer-file-typo", want: []string{
		"testdata/invalid-consumer-file-typo.yaml:4:11: consumers[0].file: cannot read consumer file testdata/consumers/select_result.yaml: no such file or directory (did you mean consumers/select_results.yaml?)",
		"testdata/invalid-consumer-file-typo.yaml:6:11: consumers[1].file: cannot read consumer file testdata/consumers/bad_select.yml: no such file or directory (did you mean consumers/bad-select.yaml?)",
	}},
	{rule: "consumer-name-mismatch", want: []string{
		`testdata/invalid-consumer-name-mismatch.yaml:3:11: consumers[0].name: "results" does not match the name "select_results" in testdata/consumers/select_results.yaml`,
	}},
	{rule: "duplicate-consumer", want: []string{
		`testdata/invalid-duplicate-consumer.yaml:5:11: consumers[1].name: duplicate consumer name "select_results"; first defined at line 3, column 11`,
	}},
	{rule: "duplicate-key", want: []string{
		`testdata/invalid-duplicate-key.yaml:5:3: defaults: duplicate key "interval"; first defined at line 3, column 3`,
	}},
	{rule: "duplicate-probe", want: []string{
		`testdata/invalid-duplicate-probe.yaml:9:11: probes[1].name: duplicate probe name "p"; first defined at line 6, column 11`,
	}},
	{rule: "duration", want: []string{
		`testdata/invalid-duration.yaml:3:13: defaults.interval: expected a duration in Go syntax such as 500ms, 30s or 1h30m, got "5 minutes"`,
		"testdata/invalid-duration.yaml:4:25: defaults.retries.base_delay: expected a duration with a unit, such as 30s, got 30",
	}},
	{rule: "failure-threshold", want: []string{
		"testdata/invalid-failure-threshold.yaml:3:22: notify.failure_threshold: must be at least 1 (consecutive non-pass runs before the first alert), got 0",
	}},
	{rule: "success-threshold", want: []string{
		"testdata/invalid-success-threshold.yaml:3:22: notify.success_threshold: must be at least 1 (consecutive passes before a failing probe is resolved), got 0",
	}},
	{rule: "failure-window", want: []string{
		"testdata/invalid-failure-window.yaml:3:39: notify.failure_window.runs: must be from 1 to 64, got 65",
		"testdata/invalid-failure-window.yaml:7:23: notify.routes[0].failure_window: failures is required, as in failure_window: {failures: 3, runs: 5}",
	}},
	{rule: "failure-window-order", want: []string{
		"testdata/invalid-failure-window-order.yaml:3:30: notify.failure_window.failures: 6 failures cannot happen in 5 runs; expected at most runs",
	}},
	{rule: "window-and-threshold", want: []string{
		"testdata/invalid-window-and-threshold.yaml:4:3: notify.failure_window: cannot be set with failure_threshold (line 3:3): a window of runs replaces consecutive failures; keep one",
		"testdata/invalid-window-and-threshold.yaml:8:7: notify.routes[0].failure_window: cannot be set with failure_threshold (line 9:7): a window of runs replaces consecutive failures; keep one",
	}},
	{rule: "flapping", want: []string{
		"testdata/invalid-flapping.yaml:3:23: notify.flapping.changes: must be from 1 to 32, got 0",
		"testdata/invalid-flapping.yaml:3:51: notify.flapping.stable_for: must be positive, got 0s",
		"testdata/invalid-flapping.yaml:7:17: notify.routes[0].flapping: window is required, as in flapping: {changes: 4, window: 30m, stable_for: 30m}",
	}},
	{rule: "fixture", want: []string{
		`testdata/invalid-fixture.yaml:8:17: consumers[0].fixtures[0].expect: unknown outcome "passed"; expected pass, contract_error or unavailable`,
		"testdata/invalid-fixture.yaml:11:39: consumers[0].fixtures[1].expect.code: a pass has no code; code is for contract_error and unavailable",
		"testdata/invalid-fixture.yaml:12:9: consumers[0].fixtures[2]: response or result is required: the decoded answer, or an MCP tool's whole CallToolResult",
		`testdata/invalid-fixture.yaml:13:46: consumers[0].fixtures[2].expect.code: "invalid_json" is not an unavailable code; expected one of timeout, connection_refused, connection_reset, dns_error, tls_error, network_error, server_error, rate_limited, canceled, tool_server_error, session_lost, tool_unavailable, server_exited`,
		"testdata/invalid-fixture.yaml:16:22: consumers[0].fixtures[3].min_results: must not be negative, got -1",
	}},
	{rule: "header-name", want: []string{
		"testdata/invalid-header-name.yaml:10:9: probes[0].request.headers: \"X Api Key\" is not a valid header name; expected letters, digits and !#$%&'*+-.^_`|~",
	}},
	{rule: "text", want: []string{
		"testdata/invalid-text.yaml:10:20: probes[0].request.headers.X-Api-Key: contains a NUL character",
	}},
	{rule: "utf8", want: []string{
		"testdata/invalid-utf8.yaml:12:16: not valid UTF-8; a config file is UTF-8 text",
	}},
	{rule: "jitter-interval", want: []string{
		"testdata/invalid-jitter-interval.yaml:11:13: probes[0].jitter: jitter (10s, probe p) must be less than interval (10s, from defaults)",
	}},
	{rule: "jitter-origin", want: []string{
		"testdata/invalid-jitter-origin.yaml:11:15: probes[0].interval: jitter (5s, from defaults) must be less than interval (5s, probe search)",
		"testdata/invalid-jitter-origin.yaml:15:13: probes[1].jitter: jitter (2m, probe tracker) must be less than interval (1m, the built-in default)",
	}},
	{rule: "jitter-negative", want: []string{
		"testdata/invalid-jitter-negative.yaml:3:11: defaults.jitter: must not be negative, got -1s",
	}},
	{rule: "json-and-body", want: []string{
		"testdata/invalid-json-and-body.yaml:10:7: probes[0].request: json and body are mutually exclusive; send either a JSON fixture or raw text",
	}},
	{rule: "label", want: []string{
		`testdata/invalid-label.yaml:9:14: probes[0].labels: "team-name" is not a valid label name; expected letters, digits and _, not starting with a digit or __`,
		`testdata/invalid-label.yaml:9:33: probes[0].labels: "code" is reserved for toolpulse's own metric labels (probe, outcome, code)`,
	}},
	{rule: "listen", want: []string{
		`testdata/invalid-listen.yaml:3:11: server.listen: expected host:port such as 127.0.0.1:9321, or "" to disable the server, got "localhost"`,
	}},
	{rule: "many", want: []string{
		`testdata/invalid-many.yaml:3:22: storage.retention: expected a duration in Go syntax such as 500ms, 30s or 1h30m, got "forever"`,
		"testdata/invalid-many.yaml:4:18: server.listen: 10.0.0.1:9321 is not a loopback address, so server.token is required (clients send it as a bearer token)",
		`testdata/invalid-many.yaml:6:12: defaults.timeout: expected a duration in Go syntax such as 500ms, 30s or 1h30m, got "5 s"`,
		"testdata/invalid-many.yaml:9:13: select rule (line 1, column 1): unknown name respons (did you mean response?)",
		`testdata/invalid-many.yaml:11:11: probes[0].name: "Bad Name" is not a valid probe name; use lower-case letters, digits, _, . and -`,
		`testdata/invalid-many.yaml:12:54: probes[0].request.method: unknown HTTP method "get"; expected one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`,
		`testdata/invalid-many.yaml:13:15: probes[0].consumer: unknown consumer "nope"; defined consumers: c`,
		`testdata/invalid-many.yaml:14:5: probes[0]: unknown key "colour"; expected one of name, request, mcp, steps, fixtures, consumer, interval, jitter, timeout, max_body_bytes, retries, expect, labels, tls, locations, alert_when, trace`,
	}},
	{rule: "max-attempts", want: []string{
		"testdata/invalid-max-attempts.yaml:3:27: defaults.retries.max_attempts: must be between 1 and 10 (attempts in total, the first included), got 0",
		"testdata/invalid-max-attempts.yaml:11:29: probes[0].retries.max_attempts: must be between 1 and 10 (attempts in total, the first included), got 11",
	}},
	{rule: "max-body-bytes", want: []string{
		"testdata/invalid-max-body-bytes.yaml:3:19: defaults.max_body_bytes: must be positive, got 0",
	}},
	{rule: "max-concurrency", want: []string{
		"testdata/invalid-max-concurrency.yaml:2:18: max_concurrency: must be at least 1, got 0",
	}},
	{rule: "max-delay", want: []string{
		"testdata/invalid-max-delay.yaml:3:40: defaults.retries.max_delay: retries.max_delay (500ms) must be at least retries.base_delay (1s)",
	}},
	{rule: "follow-redirects", want: []string{
		`testdata/invalid-follow-redirects.yaml:9:25: probes[0].request.follow_redirects: expected true or false, got "no"`,
	}},
	{rule: "mcp-allow-destructive", want: []string{
		`testdata/invalid-mcp-allow-destructive.yaml:7:82: probes[0].mcp.allow_destructive: expected true or false, got "yes please"`,
	}},
	{rule: "mcp-arguments", want: []string{
		"testdata/invalid-mcp-arguments.yaml:7:68: probes[0].mcp.arguments: expected a mapping of the tool's arguments (a JSON object), got a list",
		"testdata/invalid-mcp-arguments.yaml:10:68: probes[1].mcp.arguments: expected a mapping of the tool's arguments (a JSON object), got a string",
	}},
	{rule: "mcp-both", want: []string{
		"testdata/invalid-mcp-both.yaml:9:5: probes[0].mcp: not allowed next to request; a probe has exactly one of request, mcp or steps",
		"testdata/invalid-mcp-both.yaml:12:5: probes[1].request: not allowed next to mcp; a probe has exactly one of request, mcp or steps",
	}},
	{rule: "mcp-command", want: []string{
		"testdata/invalid-mcp-command.yaml:7:54: probes[0].mcp.command: not allowed next to url (line 7:16); an MCP server is reached either at a url or by starting a command",
		"testdata/invalid-mcp-command.yaml:10:10: probes[1].mcp: url or command is required: the server's Streamable HTTP endpoint, or the command that starts a stdio server",
		`testdata/invalid-mcp-command.yaml:13:20: probes[2].mcp.command: must not be empty; expected the program and its arguments, such as [npx, -y, "@scope/server@1.2.3"]`,
		"testdata/invalid-mcp-command.yaml:16:21: probes[3].mcp.command[0]: the program must not be empty",
		"testdata/invalid-mcp-command.yaml:19:20: probes[4].mcp.command: expected a list, got a string",
		"testdata/invalid-mcp-command.yaml:22:46: probes[5].mcp.headers: only for a server at a url; a stdio server takes its settings from command and env",
		"testdata/invalid-mcp-command.yaml:25:50: probes[6].mcp.env: only for a server started by command; a url's server has its own environment",
		"testdata/invalid-mcp-command.yaml:25:67: probes[6].mcp.dir: only for a server started by command",
		`testdata/invalid-mcp-command.yaml:28:43: probes[7].mcp.env: "A=B" is not a valid environment variable name; it must be non-empty and hold no = or NUL`,
		"testdata/invalid-mcp-command.yaml:28:59: probes[7].mcp.dir: must not be empty; leave dir out to start the server in toolpulse's own directory",
		"testdata/invalid-mcp-command.yaml:31:43: probes[8].mcp.auth: only for a server at a url; a stdio server takes its credentials from env",
	}},
	{rule: "mcp-header", want: []string{
		"testdata/invalid-mcp-header.yaml:11:9: probes[0].mcp.headers: \"X Api Key\" is not a valid header name; expected letters, digits and !#$%&'*+-.^_`|~",
		`testdata/invalid-mcp-header.yaml:13:9: probes[0].mcp.headers: header "authorization" repeats "Authorization"; header names are case-insensitive`,
	}},
	{rule: "mcp-is-error", want: []string{
		`testdata/invalid-mcp-is-error.yaml:7:67: probes[0].mcp.is_error: unknown outcome "pass" for a result with isError: true; expected contract_error or unavailable`,
	}},
	{rule: "mcp-watch", want: []string{
		`testdata/invalid-mcp-watch.yaml:7:74: probes[0].mcp.watch[1]: unknown listing "templates"; expected prompts or resources`,
		"testdata/invalid-mcp-watch.yaml:7:85: probes[0].mcp.watch[2]: prompts is listed twice",
		"testdata/invalid-mcp-watch.yaml:10:64: probes[1].mcp.watch: expected a list, got a string",
	}},
	{rule: "mcp-neither", want: []string{
		"testdata/invalid-mcp-neither.yaml:6:5: probes[0]: a probe needs one of request (an HTTP call, at least request.url), mcp (an MCP tool call, at least mcp.url and mcp.tool) or steps (a list of calls run in order, each a request or an mcp)",
	}},
	{rule: "mcp-result-count", want: []string{
		"testdata/invalid-mcp-result-count.yaml:8:9: consumers[0].fixtures[0].result: not allowed next to response; a fixture gives either response (the decoded answer) or result (an MCP tool's whole CallToolResult)",
		"testdata/invalid-mcp-result-count.yaml:10:9: consumers[0].fixtures[1]: response or result is required: the decoded answer, or an MCP tool's whole CallToolResult",
	}},
	{rule: "mcp-result", want: []string{
		"testdata/invalid-mcp-result.yaml:7:17: consumers[0].fixtures[0].result: expected a mapping, got a list",
		`testdata/invalid-mcp-result.yaml:10:17: consumers[0].fixtures[1].result: content is required: a list of content items, such as [{type: text, text: "..."}]`,
		"testdata/invalid-mcp-result.yaml:14:21: consumers[0].fixtures[2].result.content[0]: type is required: the content type, such as text, image or resource_link",
		"testdata/invalid-mcp-result.yaml:14:33: consumers[0].fixtures[2].result.content[1]: text is required in a content item of type text",
		"testdata/invalid-mcp-result.yaml:14:66: consumers[0].fixtures[2].result.content[2].text: expected a string, got an integer",
		"testdata/invalid-mcp-result.yaml:14:78: consumers[0].fixtures[2].result.content[3].type: expected the content type as a string, such as text, image or resource_link",
		"testdata/invalid-mcp-result.yaml:14:83: consumers[0].fixtures[2].result.content[4]: expected a mapping, got a string",
		"testdata/invalid-mcp-result.yaml:15:30: consumers[0].fixtures[2].result.structuredContent: expected a mapping (a JSON object), got a list",
		"testdata/invalid-mcp-result.yaml:16:20: consumers[0].fixtures[2].result.isError: expected true or false, got a string",
		`testdata/invalid-mcp-result.yaml:17:11: consumers[0].fixtures[2].result: unknown key "iserror" (did you mean "isError"?); expected one of content, structuredContent, isError, _meta`,
	}},
	{rule: "mcp-tool", want: []string{
		"testdata/invalid-mcp-tool.yaml:7:10: probes[0].mcp: tool is required: the name of the tool to call, as tools/list gives it",
		"testdata/invalid-mcp-tool.yaml:10:51: probes[1].mcp.tool: expected a string, got a list",
	}},
	{rule: "mcp-tool-empty", want: []string{
		"testdata/invalid-mcp-tool-empty.yaml:7:51: probes[0].mcp.tool: must not be empty; expected the name of the tool to call, as tools/list gives it",
	}},
	{rule: "mcp-unknown-key", want: []string{
		"testdata/invalid-mcp-unknown-key.yaml:7:10: probes[0].mcp: tool is required: the name of the tool to call, as tools/list gives it",
		`testdata/invalid-mcp-unknown-key.yaml:7:45: probes[0].mcp: unknown key "toll" (did you mean "tool"?); expected one of url, command, env, dir, headers, tool, arguments, is_error, allow_destructive, watch, auth`,
	}},
	{rule: "oauth", want: []string{
		"testdata/invalid-oauth.yaml:7:90: probes[0].mcp.auth.oauth_client_credentials: client_id is required",
		"testdata/invalid-oauth.yaml:10:80: probes[1].request.auth.oauth_client_credentials: client_secret is required (use ${VAR} to keep it out of the file)",
		`testdata/invalid-oauth.yaml:16:88: probes[2].request.auth.oauth_client_credentials.token_url: expected an absolute http:// or https:// URL: scheme "ftp"`,
		"testdata/invalid-oauth.yaml:16:123: probes[2].request.auth.oauth_client_credentials.scopes[0]: a scope is a non-empty word without spaces, quotes or backslashes (RFC 6749 §3.3)",
		"testdata/invalid-oauth.yaml:21:7: probes[3].request.headers: Authorization conflicts with auth: the OAuth token is sent as the Authorization header",
		"testdata/invalid-oauth.yaml:25:63: probes[4].mcp.auth: expected oauth_client_credentials",
		`testdata/invalid-oauth.yaml:25:64: probes[4].mcp.auth: unknown key "api_key"; expected one of oauth_client_credentials`,
		`testdata/invalid-oauth.yaml:28:123: probes[5].mcp.auth.oauth_client_credentials: unknown key "scope" (did you mean "scopes"?); expected one of client_id, client_secret, scopes, audience, resource, token_url`,
	}},
	{rule: "mcp-url", want: []string{
		"testdata/invalid-mcp-url.yaml:7:16: probes[0].mcp.url: expected an absolute http:// or https:// URL: no scheme",
		`testdata/invalid-mcp-url.yaml:10:16: probes[1].mcp.url: expected an absolute http:// or https:// URL: scheme "ws"`,
		"testdata/invalid-mcp-url.yaml:13:10: probes[2].mcp: url or command is required: the server's Streamable HTTP endpoint, or the command that starts a stdio server",
	}},
	{rule: "method", want: []string{
		`testdata/invalid-method.yaml:7:23: probes[0].request.method: unknown HTTP method "FETCH"; expected one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS`,
	}},
	{rule: "min-results", want: []string{
		"testdata/invalid-min-results.yaml:3:25: defaults.expect.min_results: must not be negative, got -1",
	}},
	{rule: "missing-consumer", want: []string{
		"testdata/invalid-missing-consumer.yaml:3:5: probes[0]: consumer is required: the name of a consumer under consumers:",
	}},
	{rule: "missing-version", want: []string{
		"testdata/invalid-missing-version.yaml:1:1: version is required; expected version: 1",
	}},
	{rule: "notify-on", want: []string{
		`testdata/invalid-notify-on.yaml:3:8: notify.on[0]: unknown alert trigger "pass"; expected contract_error, unavailable or shape_drift`,
	}},
	{rule: "positive-duration", want: []string{
		"testdata/invalid-positive-duration.yaml:9:15: probes[0].interval: must be positive, got 0s",
		"testdata/invalid-positive-duration.yaml:10:14: probes[0].timeout: must be positive, got -1s",
		"testdata/invalid-positive-duration.yaml:12:19: probes[0].retries.base_delay: must be positive, got 0s",
		"testdata/invalid-positive-duration.yaml:13:18: probes[0].retries.max_delay: must be positive, got 0s",
		"testdata/invalid-positive-duration.yaml:14:15: probes[0].retries.budget: must be positive, got -15s",
	}},
	{rule: "probe-name", want: []string{
		`testdata/invalid-probe-name.yaml:6:11: probes[0].name: "External Search" is not a valid probe name; use lower-case letters, digits, _, . and -`,
	}},
	{rule: "public-url", want: []string{
		"testdata/invalid-public-url.yaml:3:15: server.public_url: expected an absolute http:// or https:// URL such as https://toolpulse.example.com: no scheme",
	}},
	{rule: "group", want: []string{
		"testdata/invalid-group.yaml:3:24: notify.group_by[1]: provider is listed twice",
		`testdata/invalid-group.yaml:3:34: notify.group_by[2]: "probe" is reserved (probe, outcome, code); group by the probes' own labels, such as provider`,
		`testdata/invalid-group.yaml:3:41: notify.group_by[3]: "team-name" is not a valid label name; expected letters, digits and _, not starting with a digit or __`,
		"testdata/invalid-group.yaml:4:15: notify.group_wait: must not be negative (0 sends a group's first message at once), got -1s",
		"testdata/invalid-group.yaml:5:19: notify.group_interval: must be positive, got 0s",
		"testdata/invalid-group.yaml:9:23: notify.routes[0].group_interval: must be positive, got 0s",
	}},
	{rule: "repeat-interval", want: []string{
		"testdata/invalid-repeat-interval.yaml:3:20: notify.repeat_interval: must be positive, got 0s",
	}},
	{rule: "retention", want: []string{
		"testdata/invalid-retention.yaml:3:14: storage.retention: must not be negative (0 keeps everything), got -1h",
	}},
	{rule: "fail-code", want: []string{
		`testdata/invalid-fail-code.yaml:7:16: select rule (line 3, column 10): fail code "Not-Snake" is not snake_case (a lower-case letter, then up to 63 of a-z, 0-9 and _)`,
		`testdata/invalid-fail-code.yaml:8:34: validate rule (line 1, column 20): fail code "timeout" is reserved for unavailable outcomes; a rule raises contract_error codes only`,
	}},
	{rule: "routes", want: []string{
		"testdata/invalid-routes.yaml:4:7: notify.routes[0]: a route needs at least one receiver: slack, alertmanager, webhook",
		"testdata/invalid-routes.yaml:5:7: notify.routes[1]: match is required: the labels a probe must carry, such as match: {team: search}",
		"testdata/invalid-routes.yaml:6:14: notify.routes[2].match: must list at least one label; a route that matches every probe belongs in notify.slack",
		`testdata/invalid-routes.yaml:8:15: notify.routes[3].match: "team-name" is not a valid label name; expected letters, digits and _, not starting with a digit or __`,
		"testdata/invalid-routes.yaml:9:27: notify.routes[3].alertmanager.url: expected an absolute http:// or https:// URL: no scheme",
		"testdata/invalid-routes.yaml:10:26: notify.routes[3].failure_threshold: must be at least 1 (consecutive non-pass runs before the first alert), got 0",
		`testdata/invalid-routes.yaml:11:7: notify.routes[3]: unknown key "colour"; expected one of match, slack, alertmanager, webhook, on, failure_threshold, repeat_interval, send_resolved, update_on_code_change, success_threshold, failure_window, flapping, group_by, group_wait, group_interval`,
		"testdata/invalid-routes.yaml:13:16: notify.routes[4].webhook: secret is required: the key that signs every body",
		"testdata/invalid-routes.yaml:14:14: notify.routes[4].slack: expected webhook_url, or token with channel; a route's receiver cannot be empty",
		"testdata/invalid-routes.yaml:16:21: notify.routes[5].alertmanager: url is required, such as http://127.0.0.1:9093",
		`testdata/invalid-routes.yaml:17:12: notify.routes[5].on[0]: unknown alert trigger "pass"; expected contract_error, unavailable or shape_drift`,
		"testdata/invalid-routes.yaml:18:24: notify.routes[5].repeat_interval: must be positive, got 0s",
		`testdata/invalid-routes.yaml:19:15: notify.routes[6].match: "probe" is reserved (probe, outcome, code) and no probe carries it as a label; match the probe's own labels`,
		"testdata/invalid-routes.yaml:20:24: notify.routes[6].slack.channel: channel needs token (a Slack bot token)",
	}},
	{rule: "select-compile", want: []string{
		"testdata/consumers/bad-select.yaml:6:32: select rule (line 3, column 30): unknown name respons (did you mean response?)",
	}},
	{rule: "slack-both", want: []string{
		"testdata/invalid-slack-both.yaml:5:12: notify.slack.token: give either webhook_url, or token with channel, not both",
	}},
	{rule: "slack-channel", want: []string{
		"testdata/invalid-slack-channel.yaml:4:12: notify.slack.token: a bot token needs channel: the channel to post to",
	}},
	{rule: "storage-driver", want: []string{
		`testdata/invalid-storage-driver.yaml:3:11: storage.driver: unknown driver "mysql"; expected sqlite (the default: one file) or postgres (a fleet's shared database)`,
	}},
	{rule: "storage-postgres", want: []string{
		"testdata/invalid-storage-postgres.yaml:3:11: storage.driver: postgres needs storage.dsn, the database's connection string, such as ${TOOLPULSE_PG_DSN}",
		"testdata/invalid-storage-postgres.yaml:4:9: storage.path: the postgres driver keeps results in the database storage.dsn names, not in a file; remove path",
	}},
	{rule: "storage-dsn-sqlite", want: []string{
		"testdata/invalid-storage-dsn-sqlite.yaml:3:8: storage.dsn: a connection string goes with driver: postgres; the sqlite driver keeps results in the file storage.path names",
	}},
	{rule: "storage-dsn-url", want: []string{
		`testdata/invalid-storage-dsn-url.yaml:4:8: storage.dsn: expected a postgres:// URL or key=value settings such as host=127.0.0.1 dbname=toolpulse: scheme "mysql"; expected postgres or postgresql`,
	}},
	{rule: "fleet-node", want: []string{
		`testdata/invalid-fleet-node.yaml:3:9: fleet.node: "web 1" must not contain whitespace or control characters`,
	}},
	{rule: "fleet-lease", want: []string{
		"testdata/invalid-fleet-lease.yaml:3:10: fleet.lease: must be at least 2s, got 1.5s",
	}},
	{rule: "status", want: []string{
		"testdata/invalid-status.yaml:3:26: defaults.expect.status[1]: 600 is not an HTTP status code; expected 100 to 599",
		"testdata/invalid-status.yaml:11:22: probes[0].expect.status: must list at least one status code, such as [200]",
	}},
	{rule: "syntax", want: []string{
		"testdata/invalid-syntax.yaml:5:5: YAML syntax error: ',' or '}' must be specified",
	}},
	{rule: "token-required", want: []string{
		"testdata/invalid-token-required.yaml:3:11: server.listen: 0.0.0.0:9321 is not a loopback address, so server.token is required (clients send it as a bearer token)",
	}},
	{rule: "token-short", want: []string{
		"testdata/invalid-token-short.yaml:4:10: server.token: 0.0.0.0:9321 is not a loopback address, so the token is all that stands between the network and the server: it must be at least 16 characters, got 1 (generate one with: openssl rand -hex 32)",
	}},
	{rule: "token-whitespace", want: []string{
		"testdata/invalid-token-whitespace.yaml:4:10: server.token: :9321 is not a loopback address, so the token is all that stands between the network and the server: it must not contain whitespace or control characters",
	}},
	{rule: "unknown-consumer", want: []string{
		`testdata/invalid-unknown-consumer.yaml:8:15: probes[0].consumer: unknown consumer "select_result"; defined consumers: select_results`,
	}},
	{rule: "unknown-key", want: []string{
		`testdata/invalid-unknown-key.yaml:9:5: probes[0]: unknown key "intervall" (did you mean "interval"?); expected one of name, request, mcp, steps, fixtures, consumer, interval, jitter, timeout, max_body_bytes, retries, expect, labels, tls, locations, alert_when, trace`,
	}},
	{rule: "unset-env", want: []string{
		"testdata/invalid-unset-env.yaml:3:10: server.token: environment variable TOOLPULSE_TOKEN is not set; set it, or give a default with ${TOOLPULSE_TOKEN:-default}",
		"testdata/invalid-unset-env.yaml:11:40: probes[0].request.headers.Authorization: environment variable SEARCH_TOKEN is not set; set it, or give a default with ${SEARCH_TOKEN:-default}",
	}},
	{rule: "url", want: []string{
		"testdata/invalid-url.yaml:7:20: probes[0].request.url: expected an absolute http:// or https:// URL: no scheme",
		`testdata/invalid-url.yaml:10:20: probes[1].request.url: expected an absolute http:// or https:// URL: scheme "ftp"`,
		"testdata/invalid-url.yaml:13:14: probes[2].request: url is required",
	}},
	{rule: "validate-inline", want: []string{
		"testdata/invalid-validate-inline.yaml:5:40: validate rule (line 1, column 26): unknown name scroe",
	}},
	{rule: "version", want: []string{
		"testdata/invalid-version.yaml:1:10: version: unsupported version 2; expected 1",
	}},
	{rule: "webhook-url", want: []string{
		"testdata/invalid-webhook-url.yaml:4:18: notify.slack.webhook_url: expected an absolute http:// or https:// URL: no scheme",
	}},
	{rule: "wrong-type", want: []string{
		`testdata/invalid-wrong-type.yaml:4:19: defaults.retries.max_attempts: expected an integer, got "three"`,
		"testdata/invalid-wrong-type.yaml:5:18: max_concurrency: expected an integer, got a list",
		`testdata/invalid-wrong-type.yaml:7:18: notify.send_resolved: expected true or false, got "yes please"`,
	}},
}

func TestLoadInvalid(t *testing.T) {
	for _, tt := range invalidConfigs {
		t.Run(tt.rule, func(t *testing.T) {
			cfg, err := Load("testdata/invalid-"+tt.rule+".yaml", noEnv)
			if cfg != nil {
				t.Errorf("Load returned a config along with the error")
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Load error = %v (%T), want an ErrorList", err, err)
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, want)
			}
			for _, e := range list {
				if e.Line < 1 || e.Column < 1 {
					t.Errorf("error without a position: %v", e)
				}
			}
		})
	}
}

// TestInvalidConfigsCovered keeps the table and testdata/ in step: a new
// invalid-*.yaml without an expected text would otherwise prove nothing.
func TestInvalidConfigsCovered(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rule := strings.TrimSuffix(strings.TrimPrefix(f, "testdata/invalid-"), ".yaml")
		if !slices.ContainsFunc(invalidConfigs, func(c struct {
			rule string
			want []string
		}) bool {
			return c.rule == rule
		}) {
			t.Errorf("%s has no case in invalidConfigs", f)
		}
	}
}

func TestLoadValidFull(t *testing.T) {
	env := mapEnv(map[string]string{
		"TP_TOKEN":        "server-token-0123",
		"SLACK_BOT_TOKEN": "xoxb-bot-token-4567",
		"SEARCH_TOKEN":    "search-token-89ab",
	})
	cfg, err := Load("testdata/valid-full.yaml", env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dir, _ := filepath.Abs("testdata")

	if got, want := cfg.Path, filepath.Join(dir, "valid-full.yaml"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	if cfg.Version != 1 {
		t.Errorf("Version = %d, want 1", cfg.Version)
	}
	if got, want := cfg.Storage, (Storage{Driver: "sqlite", Path: filepath.Join(dir, "data/results.db"), Retention: 0}); got != want {
		t.Errorf("Storage = %+v, want %+v", got, want)
	}
	if got, want := cfg.Fleet, (Fleet{Node: "web-1", Lease: 30 * time.Second, Location: results.DefaultLocation}); got != want {
		t.Errorf("Fleet = %+v, want %+v", got, want)
	}
	if got, want := cfg.Server, (Server{Listen: "0.0.0.0:9400", Token: "server-token-0123"}); got != want {
		t.Errorf("Server = %#v (token %q), want listen %q", got, got.Token.Reveal(), want.Listen)
	}
	if cfg.MaxConcurrency != 8 {
		t.Errorf("MaxConcurrency = %d, want 8 (the ${TP_WORKERS:-8} default)", cfg.MaxConcurrency)
	}
	wantNotify := Notify{
		Slack:            Slack{Token: "xoxb-bot-token-4567", Channel: "#tool-health", APIURL: "http://127.0.0.1:9999/api/"},
		On:               []string{"contract_error", "shape_drift"},
		FailureThreshold: 3,
		RepeatInterval:   30 * time.Minute,
		SendResolved:     false,
		Grouping:         Grouping{GroupWait: DefaultGroupWait, GroupInterval: DefaultGroupInterval},
	}
	if !reflect.DeepEqual(cfg.Notify, wantNotify) {
		t.Errorf("Notify = %+v, want %+v", cfg.Notify, wantNotify)
	}

	// Consumers: one from a file, one inline, both compiled.
	if got := sortedKeys(cfg.Consumers); !slices.Equal(got, []string{"first_item", "select_results"}) {
		t.Fatalf("Consumers = %v", got)
	}
	sel := cfg.Consumers["select_results"]
	if sel.Version != "2" || !strings.HasPrefix(sel.Select, "let raw = response.results;\n") || len(sel.RuleHash) != 16 {
		t.Errorf("select_results = version %q, select %q, hash %q", sel.Version, sel.Select, sel.RuleHash)
	}
	wantFixtures := []consumers.Fixture{
		{Name: "original list layout",
			Response:   map[string]any{"results": []any{map[string]any{"id": "doc_784", "title": "API migration guide", "score": 0.93}}, "next_cursor": nil},
			MinResults: 1, Expect: consumers.Expectation{Outcome: results.Pass}},
		{Name: "wrapped items layout",
			Response: map[string]any{"results": map[string]any{"items": []any{map[string]any{"id": "doc_784", "title": "API migration guide", "score": 0.93}}}},
			Status:   200, Headers: map[string]string{"content-type": "application/json"},
			MinResults: 1, Expect: consumers.Expectation{Outcome: results.Pass, MinSelected: 1}},
		{Name: "string score",
			Response:   map[string]any{"results": []any{map[string]any{"id": "doc_784", "score": "0.93"}}},
			MinResults: 1, Expect: consumers.Expectation{Outcome: results.ContractError, Code: results.CodeRuleError}},
		{Name: "results is a string",
			Response:   map[string]any{"results": "none"},
			MinResults: 1, Expect: consumers.Expectation{Outcome: results.ContractError, Code: "unsupported_results_container"}},
		{Name: "overloaded", Status: 503, MinResults: 1, Expect: consumers.Expectation{Outcome: results.Unavailable}},
	}
	if !reflect.DeepEqual(sel.Fixtures, wantFixtures) {
		t.Errorf("select_results fixtures =\n%#v\nwant\n%#v", sel.Fixtures, wantFixtures)
	}
	wantMutations := []consumers.AcceptedMutation{{Mutation: "drop_optional_field", Reason: "title is informational; the agent only needs id and score"}}
	if !reflect.DeepEqual(sel.AcceptMutations, wantMutations) {
		t.Errorf("AcceptMutations = %+v, want %+v", sel.AcceptMutations, wantMutations)
	}
	first := cfg.Consumers["first_item"]
	if first.Version != "1" || first.Select != "response.items" || first.Validate != `type(.id) == "string"` {
		t.Errorf("first_item = %+v", first)
	}
	wantInline := []consumers.Fixture{{Name: "one item",
		Response:   map[string]any{"items": []any{map[string]any{"id": "a", "n": 1, "f": 1.5, "ok": true, "none": nil}}},
		MinResults: 1, Expect: consumers.Expectation{Outcome: results.Pass}},
		{Name: "none is fine here", Response: map[string]any{"items": []any{}}, MinResults: 0,
			Expect: consumers.Expectation{Outcome: results.Pass}}}
	if !reflect.DeepEqual(first.Fixtures, wantInline) {
		t.Errorf("first_item fixtures = %#v, want %#v", first.Fixtures, wantInline)
	}

	// Probes, in file order, with defaults: and built-ins filled in.
	wantProbes := []Probe{
		{
			Name: "external_search",
			Steps: []Step{{
				Request: Request{
					Method:  "POST", // implied by json
					URL:     "https://search.example.test/search",
					Headers: map[string]Secret{"Authorization": "Bearer search-token-89ab", "X-Team": "search"},
					Query:   map[string]string{"lang": "en", "page": "1"},
					JSON: map[string]any{"query": "API migration guide", "limit": 5,
						"filters": map[string]any{"fresh": true, "min": 0.5}, "tags": []any{"a", "b"}, "cursor": nil},
					HasJSON: true,
				},
				// probe
				Timeout: 4 * time.Second,
				// built-in
				Retries: Retries{MaxAttempts: 1, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay, Budget: 20 * time.Second},
				Expect:  Expect{Status: []int{200, 203}, MinResults: 2},
			}},
			Interval: 30 * time.Second,
			// probe
			Jitter: 0,
			// defaults:
			MaxBodyBytes: DefaultMaxBodyBytes,
			Locations:    []string{results.DefaultLocation},
			Trace:        true,
			Labels:       map[string]string{"team": "search", "tier": "1"},
		},
		{
			Name: "items.v2",
			Steps: []Step{{
				Request: Request{Method: "POST", URL: "http://127.0.0.1:8099/items?x=1", Body: "plain text costs $5"},
				Timeout: 4 * time.Second,
				Retries: Retries{MaxAttempts: 4, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay, Budget: 20 * time.Second},
				Expect:  Expect{Status: []int{200, 203}, MinResults: DefaultMinResults},
			}},
			Interval:     2 * time.Minute,
			Jitter:       DefaultJitter,
			MaxBodyBytes: DefaultMaxBodyBytes,
			Locations:    []string{results.DefaultLocation},
			Trace:        true,
		},
		{
			Name: "plain-get",
			Steps: []Step{{
				Request: Request{Method: "HEAD", URL: "http://localhost:8099/health"},
				Timeout: 4 * time.Second,
				Retries: Retries{MaxAttempts: 4, BaseDelay: DefaultBaseDelay, MaxDelay: DefaultMaxDelay, Budget: 20 * time.Second},
				Expect:  Expect{Status: []int{204}, MinResults: 0},
			}},
			Interval:     2 * time.Minute,
			Jitter:       DefaultJitter,
			MaxBodyBytes: DefaultMaxBodyBytes,
			Locations:    []string{results.DefaultLocation},
			Trace:        true,
		},
	}
	if len(cfg.Probes) != len(wantProbes) {
		t.Fatalf("got %d probes, want %d", len(cfg.Probes), len(wantProbes))
	}
	wantConsumer := []string{"select_results", "first_item", "first_item"}
	for i, p := range cfg.Probes {
		if p.Consumer() != cfg.Consumers[wantConsumer[i]] {
			t.Errorf("probe %s: Consumer is not %s", p.Name, wantConsumer[i])
		}
		got := *p
		got.Steps[0].Consumer, got.TLS = nil, nil
		if !reflect.DeepEqual(got, wantProbes[i]) {
			t.Errorf("probe %d =\n%#v\nwant\n%#v", i, got, wantProbes[i])
		}
	}
	if cfg.Probe("plain-get") != cfg.Probes[2] {
		t.Errorf("Probe(plain-get) did not find it")
	}

	pem, err := os.ReadFile("testdata/certs/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	if tc := cfg.Probes[0].TLS; tc == nil || tc.RootCAs == nil || !tc.RootCAs.Equal(pool) || tc.InsecureSkipVerify {
		t.Errorf("external_search TLS = %+v, want RootCAs from certs/ca.pem", tc)
	}
	if tc := cfg.Probes[1].TLS; tc == nil || tc.RootCAs != nil || !tc.InsecureSkipVerify {
		t.Errorf("items.v2 TLS = %+v, want InsecureSkipVerify only", tc)
	}
	if cfg.Probes[2].TLS != nil {
		t.Errorf("plain-get TLS = %+v, want nil (Go's defaults)", cfg.Probes[2].TLS)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestLoadDefaults checks every built-in default on a config that sets
// nothing it does not have to.
func TestLoadDefaults(t *testing.T) {
	src := `version: 1
consumers:
  - {name: c, select: response.items}
probes:
  - name: p
    request: {url: "http://127.0.0.1:8099/"}
    consumer: c
`
	cfg, err := Parse("checks.yaml", []byte(src), "conf", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("conf")
	want := Config{
		Path:           filepath.Join(abs, "checks.yaml"),
		Version:        1,
		Storage:        Storage{Driver: "sqlite", Path: filepath.Join(abs, "toolpulse.db"), Retention: 720 * time.Hour},
		Fleet:          Fleet{Node: hostPID(t), Lease: 10 * time.Second, Location: results.DefaultLocation},
		Server:         Server{Listen: "127.0.0.1:9321"},
		MaxConcurrency: 64,
		Notify: Notify{
			On:                 []string{"contract_error", "unavailable", "shape_drift"},
			FailureThreshold:   1,
			RepeatInterval:     time.Hour,
			SendResolved:       true,
			UpdateOnCodeChange: true,
			Grouping:           Grouping{GroupWait: 30 * time.Second, GroupInterval: 5 * time.Minute},
		},
	}
	got := *cfg
	got.Consumers, got.Probes, got.Digest = nil, nil, "" // TestDigest covers the digest
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config =\n%#v\nwant\n%#v", got, want)
	}
	if cfg.Notify.Slack.Enabled() {
		t.Errorf("Slack enabled without a webhook or token")
	}
	wantProbe := Probe{
		Name: "p",
		Steps: []Step{{
			Request: Request{Method: "GET", URL: "http://127.0.0.1:8099/"},
			Timeout: 5 * time.Second,
			Retries: Retries{MaxAttempts: 3, BaseDelay: 200 * time.Millisecond, MaxDelay: 2 * time.Second, Budget: 15 * time.Second},
			Expect:  Expect{Status: []int{200}, MinResults: 1},
		}},
		Interval:     time.Minute,
		Jitter:       5 * time.Second,
		MaxBodyBytes: 1048576,
		Locations:    []string{results.DefaultLocation},
		Trace:        true,
	}
	if len(cfg.Probes) != 1 {
		t.Fatalf("got %d probes", len(cfg.Probes))
	}
	gotProbe := *cfg.Probes[0]
	if gotProbe.Consumer() != cfg.Consumers["c"] || gotProbe.Steps[0].Consumer == nil {
		t.Errorf("probe consumer not resolved")
	}
	gotProbe.Steps = slices.Clone(gotProbe.Steps)
	gotProbe.Steps[0].Consumer = nil
	if !reflect.DeepEqual(gotProbe, wantProbe) {
		t.Errorf("probe =\n%#v\nwant\n%#v", gotProbe, wantProbe)
	}
	// Each probe owns its status list: the built-in one must not be shared.
	cfg.Probes[0].Steps[0].Expect.Status[0] = 999
	if DefaultStatus[0] != 200 {
		t.Errorf("a probe's Expect.Status aliases DefaultStatus")
	}
}

// TestLoadDefaultJitterFits: a jitter nobody wrote never makes a short
// interval invalid; it shrinks to a tenth of the interval, while one that
// is written stays as written.
func TestLoadDefaultJitterFits(t *testing.T) {
	tests := []struct {
		name     string
		defaults string   // the defaults: line, "" for none
		probe    []string // the probe's own tuning keys
		want     time.Duration
	}{
		{"interval 5s", "", []string{"interval: 5s"}, 500 * time.Millisecond},
		{"interval 1s", "", []string{"interval: 1s"}, 100 * time.Millisecond},
		{"interval 1ms", "", []string{"interval: 1ms"}, 100 * time.Microsecond},
		{"interval 30s", "", []string{"interval: 30s"}, 3 * time.Second},
		{"interval 1m", "", []string{"interval: 1m"}, DefaultJitter},
		{"interval 1h", "", []string{"interval: 1h"}, DefaultJitter},
		{"interval in defaults", "defaults: {interval: 2s}", nil, 200 * time.Millisecond},
		{"defaults interval, probe interval", "defaults: {interval: 2s}", []string{"interval: 1m"}, DefaultJitter},
		{"jitter written in defaults", "defaults: {jitter: 3s}", []string{"interval: 5s"}, 3 * time.Second},
		{"jitter written on the probe", "", []string{"interval: 5s", "jitter: 4s"}, 4 * time.Second},
		{"jitter 0 written", "defaults: {jitter: 0s}", []string{"interval: 1m"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\n" + tt.defaults + `
consumers:
  - {name: c, select: response.items}
probes:
  - name: p
    request: {url: "http://127.0.0.1:8099/"}
    consumer: c
`
			for _, kv := range tt.probe {
				src += "    " + kv + "\n"
			}
			cfg, err := Parse("checks.yaml", []byte(src), "conf", noEnv)
			if err != nil {
				t.Fatalf("Parse:\n%s\nerror: %v", src, err)
			}
			p := cfg.Probes[0]
			if p.Jitter != tt.want {
				t.Errorf("Jitter = %s, want %s", p.Jitter, tt.want)
			}
			if p.Jitter >= p.Interval {
				t.Errorf("Jitter %s is not less than Interval %s", p.Jitter, p.Interval)
			}
		})
	}
}

// TestLoadRepoConfig loads the checks.yaml at the repository root, so the
// example users start from can never rot, and runs its consumer on the
// seed-000 baseline and drifted answers.
func TestLoadRepoConfig(t *testing.T) {
	cfg, err := Load("../checks.yaml", noEnv)
	if err != nil {
		t.Fatalf("Load(../checks.yaml): %v", err)
	}
	p := cfg.Probe("external_search")
	if p == nil {
		t.Fatal("no external_search probe")
	}
	if p.Steps[0].Request.Method != "POST" || p.Steps[0].Request.URL != "http://127.0.0.1:8099/search" ||
		!reflect.DeepEqual(p.Steps[0].Request.JSON, map[string]any{"query": "API migration guide"}) {
		t.Errorf("request = %+v, want POST http://127.0.0.1:8099/search with the seed-000 query", p.Steps[0].Request)
	}
	if p.Consumer() == nil || p.Consumer().Name != "select_results" {
		t.Fatalf("consumer = %+v, want select_results", p.Consumer())
	}
	if cfg.Server.Token != "" || cfg.Notify.Slack.Enabled() {
		t.Errorf("with no environment the server token and Slack must be empty")
	}
	item := map[string]any{"id": "doc_784", "title": "API migration guide", "score": 0.93}
	baseline := map[string]any{"results": []any{item}, "next_cursor": nil}
	if v := p.Consumer().Apply(consumers.Input{Response: baseline, Status: 200}, p.Steps[0].Expect.MinResults); v.Err != nil {
		t.Errorf("baseline answer: %v, want a pass", v.Err)
	}
	unknown := map[string]any{"results": "moved", "next_cursor": nil}
	if v := p.Consumer().Apply(consumers.Input{Response: unknown, Status: 200}, p.Steps[0].Expect.MinResults); v.Err == nil {
		t.Errorf("an unknown results container passed")
	}
}

func TestLoadConsumer(t *testing.T) {
	c, err := LoadConsumer("testdata/consumers/select_results.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "select_results" || len(c.Fixtures) == 0 || c.Fixtures[0].MinResults != DefaultMinResults {
		t.Errorf("LoadConsumer = %s with %d fixtures (first %+v)", c.Name, len(c.Fixtures), c.Fixtures)
	}
	tests := []struct {
		path string
		want []string
	}{
		{"testdata/consumers/bad-select.yaml", []string{
			"testdata/consumers/bad-select.yaml:6:32: select rule (line 3, column 30): unknown name respons (did you mean response?)"}},
		{"testdata/consumers/no-name.yaml", []string{
			"testdata/consumers/no-name.yaml:1:1: name is required",
			`testdata/consumers/no-name.yaml:6:13: fixtures[0].expect: unknown outcome "maybe"; expected pass, contract_error or unavailable`}},
		{"testdata/consumers/missing.yaml", []string{
			"testdata/consumers/missing.yaml: cannot read consumer file: no such file or directory"}},
		{"testdata/consumers/select_result.yaml", []string{
			"testdata/consumers/select_result.yaml: cannot read consumer file: no such file or directory (did you mean testdata/consumers/select_results.yaml?)"}},
	}
	for _, tt := range tests {
		_, err := LoadConsumer(tt.path)
		var got []string
		var list ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				got = append(got, e.Error())
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("LoadConsumer(%s) errors\n got %q\nwant %q", tt.path, got, tt.want)
		}
	}
}

// TestDigest: Config.Digest is the digest of the bytes loaded, FileDigest
// gives the same one for the same file and another once a byte changes.
func TestDigest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checks.yaml")
	src := "version: 1\nprobes: []\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, noEnv)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(cfg.Digest) != 64 {
		t.Fatalf("Digest = %q, want 64 hex digits", cfg.Digest)
	}
	if got, err := FileDigest(path); err != nil || got != cfg.Digest {
		t.Errorf("FileDigest of the same file = %q, %v; want %q", got, err, cfg.Digest)
	}
	if err := os.WriteFile(path, []byte(src+"# edited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := FileDigest(path); err != nil || got == cfg.Digest {
		t.Errorf("FileDigest of the edited file = %q, %v; want another digest", got, err)
	}
	if _, err := FileDigest(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("FileDigest of a missing file: no error")
	}
}
