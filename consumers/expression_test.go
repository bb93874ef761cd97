package consumers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolpulse/toolpulse/results"
)

func mustExpression(t *testing.T, rule, text string) *Expression {
	t.Helper()
	x, err := CompileExpression(rule, text)
	if err != nil {
		t.Fatalf("CompileExpression(%q): %v", text, err)
	}
	return x
}

// TestExpressionEval: a capture or until rule sees what a select rule
// sees, vars included, and fails as a rule does.
func TestExpressionEval(t *testing.T) {
	in := Input{
		Response: mustDecode(t, `{"access_token": "tok-1", "data": {"refund_id": "rf_31"}, "state": "pending"}`),
		Status:   201,
		Vars:     map[string]any{"refund_id": "rf_31"},
	}
	tests := []struct {
		rule string
		want any
		code results.Code // "" is no failure
	}{
		{`response.access_token`, "tok-1", ""},
		{`response.data.refund_id == vars.refund_id`, true, ""},
		{`status`, 201, ""},
		{`response.missing`, nil, ""},
		{`vars.unknown`, nil, ""},
		{`response.state == "pending" ? fail("still_pending", "not yet") : true`, nil, "still_pending"},
		{`response.state.x.y`, nil, results.CodeRuleError},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			got, failure := mustExpression(t, "capture x", tt.rule).Eval(in)
			switch {
			case tt.code != "" && (failure == nil || failure.Code != tt.code):
				t.Fatalf("Eval = %v, %v; want code %s", got, failure, tt.code)
			case tt.code == "" && failure != nil:
				t.Fatalf("Eval = %v", failure)
			case tt.code == "" && got != tt.want:
				t.Errorf("Eval = %#v, want %#v", got, tt.want)
			}
		})
	}
	if _, failure := mustExpression(t, "capture x", `response.state.x.y`).Eval(in); !strings.HasPrefix(failure.Message, "capture x rule 1:") {
		t.Errorf("a rule error says %q, want it to name the capture and the position", failure.Message)
	}
}

// TestExpressionCompileErrors: a capture's errors are positioned in its
// own text, and an empty rule is refused.
func TestExpressionCompileErrors(t *testing.T) {
	for _, text := range []string{"", "  ", "response.", "vars.a +"} {
		if _, err := CompileExpression("until", text); err == nil {
			t.Errorf("CompileExpression(%q) compiled", text)
		} else if err.Rule != "until" || err.Line < 1 || err.Column < 1 {
			t.Errorf("CompileExpression(%q) = %+v, want it positioned in the until rule", text, err)
		}
	}
}

// TestExpressionBudget: a capture over a huge answer is bounded like any
// rule: it stops with rule_error instead of running for hours.
func TestExpressionBudget(t *testing.T) {
	in := Input{Response: itemsBody(t, 10_000)}
	x := mustExpression(t, "capture all", `filter(response.items, all(response.items, all(response.items, true)))`)
	done := make(chan *results.Error, 1)
	go func() { _, f := x.Eval(in); done <- f }()
	select {
	case f := <-done:
		if f == nil || f.Code != results.CodeRuleError || !strings.Contains(f.Message, budgetExceeded) {
			t.Errorf("Eval = %v, want rule_error %q", f, budgetExceeded)
		}
	case <-time.After(time.Minute):
		t.Fatal("Eval still running after a minute: the evaluation is not bounded")
	}
}

// TestExpressionVars: the loader learns which captures a rule reads.
func TestExpressionVars(t *testing.T) {
	tests := []struct {
		rule    string
		names   []string
		dynamic bool
	}{
		{`response.id == vars.refund_id && vars["order"] == 31 && vars.refund_id != ""`, []string{"refund_id", "order"}, false},
		{`response.state == "refunded"`, nil, false},
		{`vars[response.key] == 1`, nil, true},
		{`len(vars) > 0`, nil, true},
		{`filter(response.items, .id == vars.id)`, []string{"id"}, false},
	}
	for _, tt := range tests {
		names, dynamic := mustExpression(t, "until", tt.rule).Vars()
		if !slices.Equal(names, tt.names) || dynamic != tt.dynamic {
			t.Errorf("Vars(%s) = %v, %v; want %v, %v", tt.rule, names, dynamic, tt.names, tt.dynamic)
		}
	}
}

// TestExpressionObserved: a claim still false says what was observed:
// the first false clause and the values it read.
func TestExpressionObserved(t *testing.T) {
	x := mustExpression(t, "until", `response.state == "refunded" && response.refund_id == vars.refund_id`)
	vars := map[string]any{"refund_id": "rf_31"}
	tests := []struct{ body, want string }{
		{`{"state": "pending", "refund_id": null}`, "`response.state == \"refunded\"` was false: state: \"pending\""},
		{`{"state": "refunded", "refund_id": "rf_7"}`, "`response.refund_id == vars.refund_id` was false: refund_id: \"rf_7\", vars.refund_id: \"rf_31\""},
		{`{"state": "refunded", "refund_id": "rf_31"}`, ""},
	}
	for _, tt := range tests {
		if got := x.Observed(Input{Response: mustDecode(t, tt.body), Vars: vars}); got != tt.want {
			t.Errorf("Observed(%s) = %q, want %q", tt.body, got, tt.want)
		}
	}
	loop := mustExpression(t, "until", `all(response.items, .ok)`)
	if got := loop.Observed(Input{Response: mustDecode(t, `{"items": [{"ok": false}]}`)}); got != "" {
		t.Errorf("a loop is explained as %q; want nothing (it cannot run outside the budget)", got)
	}
}

// TestExpressionObservedLongClause: a clause longer than what Observed may
// say is cut, never the values it read.
func TestExpressionObservedLongClause(t *testing.T) {
	var states []string
	for i := range 30 {
		states = append(states, fmt.Sprintf("%q", fmt.Sprintf("refund_state_%02d", i)))
	}
	x := mustExpression(t, "until", "response.state in ["+strings.Join(states, ", ")+"] && response.refund_id != nil")
	got := x.Observed(Input{Response: mustDecode(t, `{"state": "paid", "refund_id": null}`)})
	if !strings.HasPrefix(got, "`response.state in [\"refund_state_00\"") || !strings.HasSuffix(got, "…` was false: state: \"paid\"") {
		t.Errorf("Observed = %q, want the clause's start and all it read", got)
	}
	if n := utf8.RuneCountInString(got); n > maxObservedRunes {
		t.Errorf("Observed says %d characters, want at most %d", n, maxObservedRunes)
	}
}
