package consumers

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

// mcpInput is what an MCP probe gives a rule (SPEC §10): the response
// derived from the result, the whole result and the tool's definition.
func mcpInput(t *testing.T) Input {
	t.Helper()
	return Input{
		Response: mustDecode(t, `{"temperature": 21}`),
		Result: mustDecode(t, `{"content": [{"type": "text", "text": "{\"temperature\": 21}"}],
			"structuredContent": {"temperature": 21}, "isError": false}`).(map[string]any),
		Tool: mustDecode(t, `{"name": "get-weather", "description": "Weather now",
			"inputSchema": {"type": "object", "required": ["location"]},
			"annotations": {"readOnlyHint": true}}`).(map[string]any),
		Status: 200,
		Probe:  "weather_tool",
	}
}

// TestMCPRuleEnvironment: rules may name result and tool; an MCP input
// gives them their values, an HTTP input gives nil for both, and $env
// shows them only when they are given.
func TestMCPRuleEnvironment(t *testing.T) {
	tests := []struct {
		name, select_ string
		in            Input
		wantCode      results.Code // "" is a pass
	}{
		{name: "isError", select_: `result.isError ? fail("tool_said_error", "isError") : [1]`, in: mcpInput(t)},
		{name: "structuredContent", select_: `[result.structuredContent.temperature]`, in: mcpInput(t)},
		{name: "content text", select_: `filter(result.content, .type == "text" && .text contains "21")`, in: mcpInput(t)},
		{name: "tool definition", select_: `tool.name == "get-weather" && tool.annotations.readOnlyHint && "location" in tool.inputSchema.required ? [1] : fail("wrong_tool", tool.name)`, in: mcpInput(t)},
		{name: "missing outputSchema is nil", select_: `tool.outputSchema == nil ? [1] : []`, in: mcpInput(t)},
		{name: "HTTP: result is nil", select_: `result == nil && result?.isError == nil ? [1] : fail("saw_result", "result is set")`, in: Input{Response: map[string]any{}, Status: 200}},
		{name: "HTTP: tool is nil", select_: `tool == nil ? [1] : fail("saw_tool", "tool is set")`, in: Input{Response: map[string]any{}, Status: 200}},
		{name: "isError true", select_: `result.isError ? fail("tool_said_error", "isError") : [1]`,
			in: Input{Result: map[string]any{"content": []any{}, "isError": true}}, wantCode: "tool_said_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustCompile(t, Source{Select: tt.select_})
			v := c.Apply(tt.in, 1)
			if err := checkVerdict(v, 1); err != nil {
				t.Error(err)
			}
			switch {
			case tt.wantCode == "" && v.Err != nil:
				t.Errorf("Apply = %v, want a pass", v.Err)
			case tt.wantCode != "" && (v.Err == nil || v.Err.Code != tt.wantCode):
				t.Errorf("Apply = %+v, want %s", v, tt.wantCode)
			}
		})
	}

	c := mustCompile(t, Source{Select: `fail("env_dump", toJSON($env))`})
	// Small values: a failure's message is clipped.
	v := c.Apply(Input{Result: map[string]any{"isError": false}, Tool: map[string]any{"name": "get-weather"}}, 0)
	var dump map[string]any
	if err := json.Unmarshal([]byte(v.Err.Message), &dump); err != nil {
		t.Fatalf("toJSON($env) = %s: %v", v.Err.Message, err)
	}
	var names []string
	for k := range dump {
		names = append(names, k)
	}
	if want := []string{"headers", "probe", "request", "response", "result", "status", "tool"}; !sameSet(names, want) {
		t.Errorf("toJSON($env) of an MCP input has %v, want %v", names, want)
	}
	if got := dump["tool"].(map[string]any)["name"]; got != "get-weather" {
		t.Errorf("$env.tool.name = %v", got)
	}
}

func sameSet(a, b []string) bool {
	m := map[string]bool{}
	for _, x := range a {
		m[x] = true
	}
	if len(m) != len(b) {
		return false
	}
	for _, x := range b {
		if !m[x] {
			return false
		}
	}
	return true
}

// TestMCPNamesAreTaken: result and tool are the environment's, so a rule
// that declares its own variable of either name no longer compiles.
func TestMCPNamesAreTaken(t *testing.T) {
	for _, name := range []string{"result", "tool"} {
		_, errs := Compile(Source{Select: `let ` + name + ` = response.items; ` + name})
		if len(errs) != 1 || errs[0].Message != "cannot redeclare "+name {
			t.Errorf("let %s: errors %v, want cannot redeclare %s", name, errs, name)
		}
	}
}

// TestMCPInputIsMeasured: the cost bound measures result and tool as part
// of what a rule reads, so a rule over a huge result still runs with its
// charges and stops at the budget.
func TestMCPInputIsMeasured(t *testing.T) {
	pred := strings.Repeat("# >= 0 && ", 100) + "true"
	c := mustCompile(t, Source{Select: `filter(result.structuredContent.items, ` + pred + `)`})
	if c.selectFast == nil {
		t.Fatalf("no bound: %s", c.unbounded)
	}
	huge := map[string]any{"content": []any{}, "structuredContent": itemsBody(t, 50_000)}
	for name, in := range map[string]Input{
		"result": {Result: huge},
		"tool":   {Tool: huge, Result: map[string]any{"structuredContent": map[string]any{"items": []any{}}}},
	} {
		st := applyStates.Get().(*applyState)
		st.fill(in)
		if st.withinBound(&c.fastCost) {
			t.Errorf("%s of 50,000 items is within the bound %+v", name, c.fastCost)
		}
		st.release()
	}
	v, _ := applyBounded(t, c, Input{Result: huge})
	if v.Err == nil || v.Err.Code != results.CodeRuleError || !strings.Contains(v.Err.Message, budgetExceeded) {
		t.Errorf("Apply = %+v, want rule_error %q", v, budgetExceeded)
	}
}

// TestMCPReadFields: a rule's reads of the tool's definition are not
// response fields; its reads of the result are (structuredContent is what
// response holds).
func TestMCPReadFields(t *testing.T) {
	c := mustCompile(t, Source{Select: `tool.annotations.readOnlyHint ? result.structuredContent.items : []`})
	got := c.ReadFields()
	want := FieldSet{Known: true, Names: map[string]bool{"structuredContent": true, "items": true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadFields = %+v, want %+v", got, want)
	}
}
