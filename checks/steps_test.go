package checks

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// refundDrill is SPEC §11's example, with the consumer it names.
const refundDrill = `version: 1
defaults:
  retries: {max_attempts: 3, budget: 15s}
consumers:
  - name: refund_envelope
    select: '[response.data]'
probes:
  - name: refund_order_31
    interval: 5m
    steps:
      - name: token
        request: {method: POST, url: "http://127.0.0.1:8098/token", json: {client_id: probe}}
        capture: {access_token: {rule: response.access_token, secret: true}}
      - name: refund
        request:
          method: POST
          url: http://127.0.0.1:8099/refunds
          headers: {Authorization: "Bearer {{access_token}}", Idempotency-Key: "{{operation_id}}"}
          json: {order_id: 31, amount: 19.99}
        consumer: refund_envelope
        capture: {refund_id: response.data.refund_id}
      - name: verify
        request: {url: "http://127.0.0.1:8099/orders/31"}
        until: 'response.state == "refunded" && response.refund_id == vars.refund_id'
        within: 10s
        every: 1s
      - name: cleanup
        always: true
        request: {method: DELETE, url: "http://127.0.0.1:8099/refunds/{{refund_id}}"}
`

func TestLoadSteps(t *testing.T) {
	cfg, err := Parse("checks.yaml", []byte(refundDrill), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Probes[0]
	if p.Kind() != results.ProbeSteps || p.Consumer() != nil || len(p.Steps) != 4 {
		t.Fatalf("kind %s, consumer %v, %d steps", p.Kind(), p.Consumer(), len(p.Steps))
	}
	token, refund, verify, cleanup := p.Steps[0], p.Steps[1], p.Steps[2], p.Steps[3]
	if len(token.Capture) != 1 || token.Capture[0].Name != "access_token" || !token.Capture[0].Secret || token.Capture[0].Rule == nil {
		t.Errorf("token captures %+v", token.Capture)
	}
	if refund.Consumer == nil || refund.Consumer.Name != "refund_envelope" || refund.Capture[0].Secret {
		t.Errorf("refund: consumer %v, captures %+v", refund.Consumer, refund.Capture)
	}
	if verify.Until == nil || verify.Within != 10*time.Second || verify.Every != time.Second || verify.Always {
		t.Errorf("verify: until %v within %s every %s", verify.Until, verify.Within, verify.Every)
	}
	if !slices.Equal(verify.Needs, []string{"refund_id"}) || !slices.Equal(cleanup.Needs, []string{"refund_id"}) || refund.Needs[0] != "access_token" || token.Needs != nil {
		t.Errorf("needs: token %v, refund %v, verify %v, cleanup %v", token.Needs, refund.Needs, verify.Needs, cleanup.Needs)
	}
	if !cleanup.Always || cleanup.Request.Method != "DELETE" {
		t.Errorf("cleanup: always %v, method %s", cleanup.Always, cleanup.Request.Method)
	}
	// Never repeat a refund blindly: a POST without an Idempotency-Key
	// makes one attempt; with one, or for a GET, the probe's policy holds.
	for _, tt := range []struct {
		step Step
		want int
	}{{token, 1}, {refund, 3}, {verify, 3}, {cleanup, 1}} {
		if tt.step.Retries.MaxAttempts != tt.want {
			t.Errorf("step %s: %d attempts, want %d", tt.step.Name, tt.step.Retries.MaxAttempts, tt.want)
		}
	}
	if got, want := p.RunBudget(), 25*time.Second; got != want {
		t.Errorf("RunBudget = %s, want %s (the budget plus verify's within)", got, want)
	}
	// A templated header is not a secret of its own; the capture is.
	for _, s := range cfg.Secrets() {
		if strings.Contains(s, "{{") {
			t.Errorf("Secrets holds the template %q", s)
		}
	}
}

// TestStepRetries: a mutating step that sets retries gets them.
func TestStepRetries(t *testing.T) {
	cfg, err := Parse("checks.yaml", []byte(`version: 1
probes:
  - name: p
    retries: {max_attempts: 2}
    steps:
      - {name: a, request: {method: PATCH, url: "http://h/x"}, retries: {max_attempts: 4}}
      - {name: b, request: {method: PUT, url: "http://h/x", headers: {idempotency-key: "k-{{operation_id}}"}}}
      - {name: c, request: {method: HEAD, url: "http://h/x"}, timeout: 1s}
      - {name: d, request: {method: POST, url: "http://h/x"}, expect: {status: [201]}}
      - {name: e, mcp: {url: "http://h/mcp", tool: search}}
      - {name: f, mcp: {url: "http://h/mcp", tool: search}, retries: {max_attempts: 3}}
`), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := cfg.Probes[0].Steps
	for i, want := range []int{4, 2, 2, 1, 1, 3} {
		if got := steps[i].Retries.MaxAttempts; got != want {
			t.Errorf("step %s: %d attempts, want %d", steps[i].Name, got, want)
		}
	}
	if steps[2].Timeout != time.Second || steps[3].Expect.Status[0] != 201 || steps[0].Expect.Status[0] != 200 {
		t.Errorf("a step's own timeout or expect is lost: %s %v %v", steps[2].Timeout, steps[3].Expect, steps[0].Expect)
	}
}

// TestStepsInvalid: every mistake in a steps probe is a positioned error.
func TestStepsInvalid(t *testing.T) {
	const head = "version: 1\nconsumers: [{name: c, select: '[vars.ghost]'}, {name: ok, select: response.items}]\nprobes:\n"
	tests := []struct{ name, probes, want string }{
		{"neither request nor mcp", `  - {name: p, steps: [{name: a}]}`,
			"checks.yaml:4:23: probes[0].steps[0]: a step needs request (an HTTP call) or mcp (an MCP tool call)"},
		{"both", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, mcp: {url: "http://h/", tool: t}}]}`,
			"checks.yaml:4:62: probes[0].steps[0].mcp: not allowed next to request; a step has exactly one of request or mcp"},
		{"no name", `  - {name: p, steps: [{request: {url: "http://h/"}}]}`,
			"checks.yaml:4:23: probes[0].steps[0]: name is required"},
		{"duplicate name", "  - name: p\n    steps:\n      - {name: a, request: {url: \"http://h/\"}}\n      - {name: a, request: {url: \"http://h/\"}}",
			"checks.yaml:7:16: probes[0].steps[1].name: duplicate step name \"a\"; first defined at line 6, column 16"},
		{"empty", `  - {name: p, steps: []}`, "checks.yaml:4:22: probes[0].steps: must list at least one step"},
		{"probe consumer", `  - {name: p, consumer: ok, steps: [{name: a, request: {url: "http://h/"}}]}`,
			"checks.yaml:4:25: probes[0].consumer: a probe with steps judges each answer by its step's own consumer; move it to the step whose answer it reads"},
		{"unknown template in url", `  - {name: p, steps: [{name: a, request: {url: "http://h/{{id}}"}}]}`,
			"checks.yaml:4:48: probes[0].steps[0].request.url: {{id}} is not captured by an earlier step; known here: operation_id"},
		{"template in a header names a later capture", "  - name: p\n    steps:\n      - {name: a, request: {url: \"http://h/\", headers: {X-Id: \"{{id}}\"}}}\n      - {name: b, request: {url: \"http://h/\"}, capture: {id: response.id}}",
			"checks.yaml:6:63: probes[0].steps[0].request.headers.X-Id: {{id}} is not captured by an earlier step; known here: operation_id"},
		{"template in json", "  - name: p\n    steps:\n      - {name: a, request: {url: \"http://h/\"}, capture: {id: response.id}}\n      - {name: b, request: {url: \"http://h/\", json: {n: [\"{{nope}}\"]}}}",
			"checks.yaml:7:53: probes[0].steps[1].request.json: {{nope}} is not captured by an earlier step; known here: id, operation_id"},
		{"template in body and query", `  - {name: p, steps: [{name: a, request: {url: "http://h/", body: "{{b}}", query: {q: "{{q}}"}}}]}`,
			"checks.yaml:4:67: probes[0].steps[0].request.body: {{b}} is not captured by an earlier step; known here: operation_id\n" +
				"checks.yaml:4:87: probes[0].steps[0].request.query.q: {{q}} is not captured by an earlier step; known here: operation_id"},
		{"unclosed template", `  - {name: p, steps: [{name: a, request: {url: "http://h/{{id"}}]}`,
			"checks.yaml:4:48: probes[0].steps[0].request.url: a {{ is not closed by }}; a template is {{name}}"},
		{"a template that is not a name", `  - {name: p, steps: [{name: a, request: {url: "http://h/{{ a b }}"}}]}`,
			"checks.yaml:4:48: probes[0].steps[0].request.url: a {{...}} does not name a capture; a template is {{name}}, the name in lower-case letters, digits and _"},
		{"templated url still checked", `  - {name: p, steps: [{name: a, request: {url: "{{operation_id}}/x"}}]}`,
			"checks.yaml:4:48: probes[0].steps[0].request.url: expected an absolute http:// or https:// URL: no scheme"},
		{"template in a single probe", `  - {name: p, consumer: ok, request: {url: "http://h/{{id}}"}}`,
			"checks.yaml:4:44: probes[0].request.url: {{id}} is not captured by an earlier step; known here: operation_id"},
		{"template in mcp arguments", `  - {name: p, steps: [{name: a, mcp: {url: "http://h/", tool: t, arguments: {q: "{{q}}"}}}]}`,
			"checks.yaml:4:77: probes[0].steps[0].mcp.arguments: {{q}} is not captured by an earlier step; known here: operation_id"},
		{"until reads an unknown var", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, until: "vars.x == 1", within: 1s}]}`,
			"checks.yaml:4:69: probes[0].steps[0].until: vars.x is not captured by an earlier step; known here: operation_id"},
		{"until reads its own step's capture", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, until: "vars.x == 1", within: 1s, capture: {x: response.x}}]}`,
			"checks.yaml:4:69: probes[0].steps[0].until: vars.x is not captured by an earlier step; known here: operation_id"},
		{"until by a computed name", "  - name: p\n    steps:\n      - {name: a, request: {url: \"http://h/\"}, capture: {x: response.x}}\n      - {name: b, request: {url: \"http://h/\"}, until: 'vars[response.k] == 1', within: 1s}",
			"checks.yaml:7:55: probes[0].steps[1].until: reads vars by a computed name; write vars.NAME, with NAME captured by an earlier step"},
		{"consumer reads an unknown var", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, consumer: c}]}`,
			"checks.yaml:4:72: probes[0].steps[0].consumer: vars.ghost is not captured by an earlier step; known here: operation_id"},
		{"single probe's consumer reads vars", `  - {name: p, consumer: c, request: {url: "http://h/"}}`,
			"checks.yaml:4:25: probes[0].consumer: vars.ghost is not captured by an earlier step; known here: operation_id"},
		{"until compile error", "  - name: p\n    steps:\n      - name: a\n        request: {url: \"http://h/\"}\n        until: response.state ==\n        within: 1s",
			"checks.yaml:8:32: probes[0].steps[0].until: until rule (line 1, column 17): unexpected token EOF"},
		{"until without within", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, until: "true"}]}`,
			"checks.yaml:4:62: probes[0].steps[0]: until needs within: how long the claim may take to become true, such as within: 10s"},
		{"within without until", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, within: 1s, every: 1s}]}`,
			"checks.yaml:4:62: probes[0].steps[0].within: only a verification polls; within belongs next to until\n" +
				"checks.yaml:4:74: probes[0].steps[0].every: only a verification polls; every belongs next to until"},
		{"every over within", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, until: "true", within: 1s, every: 2s}]}`,
			"checks.yaml:4:96: probes[0].steps[0].every: every (2s) must not exceed within (1s)"},
		{"capture names", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, capture: {Token: response.t, operation_id: response.o, ok: {secret: true}}}]}`,
			"checks.yaml:4:72: probes[0].steps[0].capture: \"Token\" is not a valid capture name; use lower-case letters, digits and _, not starting with a digit\n" +
				"checks.yaml:4:91: probes[0].steps[0].capture: \"operation_id\" is reserved: {{operation_id}} is the run's own id\n" +
				"checks.yaml:4:121: probes[0].steps[0].capture.ok: rule is required: an expr rule over the step's answer, such as response.access_token"},
		{"capture twice", "  - name: p\n    steps:\n      - {name: a, request: {url: \"http://h/\"}, capture: {x: response.x}}\n      - {name: b, request: {url: \"http://h/\"}, capture: {x: response.y}}",
			"checks.yaml:7:58: probes[0].steps[1].capture: \"x\" is already captured by step \"a\""},
		{"capture rule error", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, capture: {x: "response.a +"}}]}`,
			"checks.yaml:4:87: probes[0].steps[0].capture.x: capture x rule (line 1, column 12): unexpected token EOF"},
		{"unknown step key", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, poll: 1s}]}`,
			"checks.yaml:4:62: probes[0].steps[0]: unknown key \"poll\"; expected one of name, request, mcp, consumer, capture, until, within, every, always, timeout, retries, expect"},
		{"unknown consumer", `  - {name: p, steps: [{name: a, request: {url: "http://h/"}, consumer: nope}]}`,
			"checks.yaml:4:72: probes[0].steps[0].consumer: unknown consumer \"nope\"; defined consumers: c, ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("checks.yaml", []byte(head+tt.probes+"\n"), t.TempDir(), nil)
			if err == nil || err.Error() != tt.want {
				t.Errorf("errors:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}
