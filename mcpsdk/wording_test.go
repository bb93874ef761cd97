package mcpsdk_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// forecastSchema nests the argument a validator names deep in its
// message, well past the first maxExcerpt characters of it.
const forecastSchema = `{"type":"object","required":["location"],"properties":{
	"location":{"type":"string"},
	"options":{"type":"object","properties":{"forecast":{"type":"object","properties":{
		"units":{"enum":["celsius-degrees-metric","fahrenheit-degrees-imperial","kelvin-absolute-thermodynamic","rankine-absolute-imperial","reaumur-historic-scale"]}}}}}}}`

// goSDKServer is a server on the go-sdk whose typed tools validate their
// arguments as the SDK does: get-weather ({location}) and forecast
// (forecastSchema).
func goSDKServer(t *testing.T) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "validating", Version: "1.0.0"}, nil)
	type weather struct {
		Location string `json:"location"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "get-weather"}, func(_ context.Context, _ *mcp.CallToolRequest, in weather) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Sunny in " + in.Location}}}, nil, nil
	})
	type forecast struct {
		Location string `json:"location"`
		Options  any    `json:"options"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "forecast", InputSchema: json.RawMessage(forecastSchema)},
		func(_ context.Context, _ *mcp.CallToolRequest, in forecast) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Rain in " + in.Location}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCallToolInputWordings: arguments a real server's own validation
// rejects are tool_input, not tool_error, in the words of the go-sdk
// (`validating "arguments": …`) and of the TypeScript SDK ("MCP error
// -32602: Input validation error: …"), and the message quotes the
// refusal around the argument it names, however deep in it that is.
func TestCallToolInputWordings(t *testing.T) {
	deep := map[string]any{"location": "Oslo", "options": map[string]any{"forecast": map[string]any{"units": "kelvin"}}}
	t.Run("go-sdk", func(t *testing.T) {
		t.Cleanup(testkit.NoLeaks(t))
		url := goSDKServer(t)
		for _, c := range []callCase{
			{name: "missing", args: map[string]any{}, code: results.CodeToolInput,
				message: `the result rejects the arguments: "validating \"arguments\": validating root: required: missing properties: [\"location\"]"`},
			{name: "deep", tool: "forecast", args: deep, code: results.CodeToolInput,
				message: `/properties/units: enum: kelvin does not equal any of`},
		} {
			t.Run(c.name, func(t *testing.T) {
				a := call(t, url, c)
				t.Logf("%s", describe(a))
				checkAnswer(t, a, c.code, c.message)
				if n := len([]rune(a.Err.Message)); n > 300 {
					t.Errorf("message of %d characters, want it bounded", n)
				}
			})
		}
	})
	t.Run("TypeScript SDK", func(t *testing.T) {
		t.Cleanup(testkit.NoLeaks(t))
		url := mcptest.StartTSServer(t)
		a := call(t, url, callCase{tool: "echo", args: map[string]any{"message": 5}})
		t.Logf("%s", describe(a))
		checkAnswer(t, a, results.CodeToolInput, "Input validation error")
		if !strings.Contains(a.Err.Message, "received number at message") {
			t.Errorf("message %q does not name the argument", a.Err.Message)
		}
	})
}

// TestCallOutputSchemaNamesEveryViolation: structuredContent that breaks
// a go-sdk tool's outputSchema in several places is output_schema with
// every missing and extra key named, at the top level and inside, where
// the validator alone names only its first finding.
func TestCallOutputSchemaNamesEveryViolation(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	server := mcp.NewServer(&mcp.Implementation{Name: "drifting", Version: "1.0.0"}, nil)
	server.AddTool(&mcp.Tool{Name: "get-weather", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["temperature","unit","wind"],"additionalProperties":false,"properties":{
			"temperature":{"type":"number"},"unit":{"type":"string"},
			"wind":{"type":"object","required":["speed"],"additionalProperties":false,"properties":{"speed":{"type":"number"}}}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"temp":21.5,"unit":"C","wind":{"kmh":12}}`),
				Content: []mcp.Content{&mcp.TextContent{Text: `{"temp":21.5}`}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	a := call(t, srv.URL, callCase{args: map[string]any{}})
	t.Logf("%s", describe(a))
	checkAnswer(t, a, results.CodeOutputSchema, `structuredContent does not match the outputSchema: missing key "temperature"; unexpected key "temp"; /wind: missing key "speed"; /wind: unexpected key "kmh"`)
}

// TestCallTaskRequired: a tool a TypeScript SDK server lists with
// execution.taskSupport: required is not called (the server would answer a
// plain call "method not found", read as a missing tool) and ends as
// needs_input with a message that says why.
func TestCallTaskRequired(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	url := mcptest.StartTSServer(t)
	a := call(t, url, callCase{tool: "task-only", args: map[string]any{}})
	t.Logf("%s", describe(a))
	checkAnswer(t, a, results.CodeNeedsInput, `tools/call "task-only" not made: tools/list says execution.taskSupport: "required"`)
	for _, x := range a.Exchanges {
		if x.Method == "tools/call" {
			t.Error("the tool was called")
		}
	}
	if !strings.Contains(string(a.Tool), `"taskSupport":"required"`) {
		t.Errorf("the tool's definition %s lacks its execution", a.Tool)
	}
}

// TestCallInputAskedOutOfBand: a TypeScript SDK server whose tool asks the
// client for input on the standalone SSE stream (elicitInput, unrelated
// to the call) ends the call as needs_input at once, not as a timeout when
// the tool waits for an answer that never comes; the stream is a row of
// its own.
func TestCallInputAskedOutOfBand(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	url := mcptest.StartTSServer(t)
	start := time.Now()
	a := call(t, url, callCase{tool: "ask", args: map[string]any{}, timeout: 5 * time.Second})
	t.Logf("%s", describe(a))
	checkAnswer(t, a, results.CodeNeedsInput, `tools/call "ask": the server asked the client for elicitation/create on its standalone SSE stream, which a probe cannot give`)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %s: the request for input should end the call when it arrives", took)
	}
	found := false
	for _, x := range a.Exchanges {
		found = found || (x.Method == "GET elicitation/create (standalone stream)" && x.Code == results.CodeNeedsInput)
	}
	if !found {
		t.Errorf("no row for the standalone stream that carried the request: %s", describe(a))
	}
}

// TestCallInputRefusedByServer: a TypeScript SDK server whose tool asks for
// input through elicitInput checks the client's capabilities first and
// answers isError "Client does not support form elicitation."; that is
// needs_input, not the tool's own error.
func TestCallInputRefusedByServer(t *testing.T) {
	t.Cleanup(testkit.NoLeaks(t))
	url := mcptest.StartTSServer(t)
	a := call(t, url, callCase{tool: "ask-checked", args: map[string]any{}})
	t.Logf("%s", describe(a))
	checkAnswer(t, a, results.CodeNeedsInput, `the result says the tool needs input the client does not offer, which a probe cannot give: "Client does not support form elicitation."`)
}
