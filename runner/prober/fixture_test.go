package prober

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

func TestJudgeFixture(t *testing.T) {
	c, errs := consumers.Compile(consumers.Source{Name: "items", Version: "1",
		Select:   `headers["x-mode"] == "strict" && len(response.items) > 1 ? fail("too_many", "strict mode wants one") : response.items`,
		Validate: `type(.id) == "string"`})
	if errs != nil {
		t.Fatal(errs)
	}
	items := func(ids ...any) any {
		list := []any{}
		for _, id := range ids {
			list = append(list, map[string]any{"id": id})
		}
		return map[string]any{"items": list}
	}
	tests := []struct {
		name     string
		fixture  consumers.Fixture
		expect   []int
		outcome  results.Outcome
		code     results.Code
		selected int
	}{
		{"pass", consumers.Fixture{Response: items("a", "b"), MinResults: 1}, []int{200}, results.Pass, "", 2},
		{"status 0 means 200", consumers.Fixture{Response: items("a"), Status: 0, MinResults: 1}, []int{200}, results.Pass, "", 1},
		{"a 503 is unavailable before any rule runs", consumers.Fixture{Response: items("a"), Status: 503, MinResults: 1},
			[]int{200}, results.Unavailable, results.CodeServerError, 0},
		{"a 429 is rate limited", consumers.Fixture{Status: 429, MinResults: 1}, []int{200}, results.Unavailable, results.CodeRateLimited, 0},
		{"a status the probe does not expect", consumers.Fixture{Response: items("a"), Status: 404, MinResults: 1},
			[]int{200}, results.ContractError, results.CodeUnexpectedStatus, 0},
		{"a status the probe expects reaches the rules", consumers.Fixture{Response: items("a"), Status: 404, MinResults: 1},
			[]int{200, 404}, results.Pass, "", 1},
		{"empty under min_results 1", consumers.Fixture{Response: items(), MinResults: 1}, []int{200}, results.ContractError, results.CodeEmptySelection, 0},
		{"empty under min_results 0", consumers.Fixture{Response: items(), MinResults: 0}, []int{200}, results.Pass, "", 0},
		{"an invalid item", consumers.Fixture{Response: items(7), MinResults: 1}, []int{200}, results.ContractError, results.CodeInvalidItem, 1},
		{"headers reach the rules, lower-cased by the loader", consumers.Fixture{Response: items("a", "b"), MinResults: 1,
			Headers: map[string]string{"x-mode": "strict"}}, []int{200}, results.ContractError, "too_many", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewExecutor(Options{}).JudgeFixture(c, tt.fixture, tt.expect)
			if v.Outcome != tt.outcome || v.Code() != tt.code || v.Selected != tt.selected || (v.Error == nil) != (tt.outcome == results.Pass) {
				t.Errorf("JudgeFixture = %s %s (%v), %d selected; want %s %s, %d selected",
					v.Outcome, v.Code(), v.Error, v.Selected, tt.outcome, tt.code, tt.selected)
			}
		})
	}
}

// TestJudgeResultFixture: a result: fixture (an MCP tool's whole
// CallToolResult) is judged on what a live call would show the rules:
// structuredContent, else the JSON in the first text item, else that text;
// isError is a tool error before any rule runs; and rules see result too.
func TestJudgeResultFixture(t *testing.T) {
	c, errs := consumers.Compile(consumers.Source{Name: "items", Version: "1",
		Select:   `result.isError == true ? fail("unreachable", "isError reached the rules") : response.items`,
		Validate: `type(.id) == "string"`})
	if errs != nil {
		t.Fatal(errs)
	}
	text := func(s string) map[string]any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	}
	structured := text("ignored when structuredContent is there")
	structured["structuredContent"] = map[string]any{"items": []any{map[string]any{"id": "a"}}}
	failed := text("the index is rebuilding")
	failed["isError"] = true
	tests := []struct {
		name    string
		result  map[string]any
		outcome results.Outcome
		code    results.Code
	}{
		{"structured content", structured, results.Pass, ""},
		{"JSON in the text", text(` {"items":[{"id":"a"},{"id":"b"}]}`), results.Pass, ""},
		{"plain text is a string", text("no results"), results.ContractError, results.CodeRuleError},
		{"isError", failed, results.ContractError, results.CodeToolError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewExecutor(Options{}).JudgeFixture(c, consumers.Fixture{Name: tt.name, Result: tt.result, MinResults: 1}, []int{200})
			if v.Outcome != tt.outcome || v.Code() != tt.code {
				t.Errorf("verdict %s %s (%v), want %s %s", v.Outcome, v.Code(), v.Error, tt.outcome, tt.code)
			}
		})
	}
}

// TestFixtureBaseMutatesResult: a result: fixture is mutated where its
// response came from, so a rule that reads result.structuredContent (or
// the JSON in the text item) is mutation-tested exactly as the same rule
// reading response: the same mutations are killed and the same survive.
func TestFixtureBaseMutatesResult(t *testing.T) {
	compile := func(sel string) *consumers.Consumer {
		c, errs := consumers.Compile(consumers.Source{Name: "items", Version: "1", Select: sel,
			Validate: `type(.id) == "string"`})
		if errs != nil {
			t.Fatal(errs)
		}
		return c
	}
	items := map[string]any{"items": []any{map[string]any{"id": "a", "title": "A"}}}
	structured := map[string]any{"content": []any{map[string]any{"type": "text", "text": "see structuredContent"}},
		"structuredContent": items}
	text := map[string]any{"content": []any{map[string]any{"type": "text", "text": `{"items":[{"id":"a","title":"A"}]}`}}}
	tests := []struct {
		name, sel string
		result    map[string]any
	}{
		{"structuredContent", `result.structuredContent.items`, structured},
		{"text item", `fromJSON(result.content[0].text).items`, text},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := json.Marshal(tt.result)
			f := consumers.Fixture{Name: "ok", Result: tt.result, MinResults: 1}
			base, err := FixtureBase(f)
			if err != nil {
				t.Fatal(err)
			}
			got := compile(tt.sel).MutationTest([]consumers.MutationBase{base})
			want := compile(`response.items`).MutationTest([]consumers.MutationBase{base})
			if len(got.Bases) != 1 {
				t.Fatalf("the fixture was not mutated: skipped %v", got.Skipped)
			}
			if got.Total == 0 || got.Total != want.Total || got.Killed != want.Killed {
				t.Errorf("reading result: %d of %d killed; reading response: %d of %d", got.Killed, got.Total, want.Killed, want.Total)
			}
			if g, w := survivorNames(got), survivorNames(want); !slices.Equal(g, w) {
				t.Errorf("reading result, survivors %v; reading response, %v", g, w)
			}
			if after, _ := json.Marshal(tt.result); string(after) != string(before) {
				t.Errorf("mutating changed the fixture's result: %s, was %s", after, before)
			}
		})
	}
}

func survivorNames(r consumers.MutationReport) []string {
	var out []string
	for _, s := range r.Survivors {
		out = append(out, s.Mutation.Name)
	}
	return out
}
