package consumers

import (
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	const okSelect = `response.results`
	tooLong := "[" + strings.Repeat("1,", maxRuleBytes/2) + "1]"
	for _, tc := range []struct {
		name           string
		select_, valid string
		want           []string // RuleError.Error() of each error, in order
	}{
		{"select syntax, end of rule", `response.results |`, ``,
			[]string{"select rule 1:18: unexpected token EOF"}},
		{"select syntax on line 3", "let raw = response.results;\n(type(raw) == \"array\" ? raw\n  : raw.items ==)", ``,
			[]string{`select rule 3:17: unexpected token Bracket(")")`}},
		{"select unknown top-level name", `respons.results`, ``,
			[]string{"select rule 1:1: unknown name respons (did you mean response?)"}},
		{"select unknown function", `filtr(response.results, true)`, ``,
			[]string{"select rule 1:1: unknown name filtr (did you mean filter?)"}},
		{"select misspelt function", `lenght(response.results) > 0 ? response.results : []`, ``,
			[]string{"select rule 1:1: unknown name lenght (did you mean len?)"}},
		{"select function named as in jq", `length(response.results) > 0 ? response.results : []`, ``,
			[]string{"select rule 1:1: unknown name length (did you mean len?)"}},
		{"select misspelt fail", "response.ok ? response.items\n  : fial(\"no_items\", \"x\")", ``,
			[]string{"select rule 2:5: unknown name fial (did you mean fail?)"}},
		{"select misspelt let variable", "let raw = response.results;\nrwa ?? []", ``,
			[]string{"select rule 2:1: unknown name rwa (did you mean raw?)"}},
		{"select capitalised env name", `Response.results`, ``,
			[]string{"select rule 1:1: unknown name Response (did you mean response?)"}},
		{"select misspelt headers, piped", `header["x-items"] | split(",")`, ``,
			[]string{"select rule 1:1: unknown name header (did you mean headers?)"}},
		// A name nothing is close to gets no guess, nor does a value
		// named like a function or a short name a letter or two from
		// many (id is .id, not int).
		{"select unknown name, nothing close", `widgets.results`, ``,
			[]string{"select rule 1:1: unknown name widgets"}},
		{"validate short name", okSelect, `id != ""`,
			[]string{"validate rule 1:1: unknown name id"}},
		{"validate misspelt status", okSelect, `stauts == 200 && .ok`,
			[]string{"validate rule 1:1: unknown name stauts (did you mean status?)"}},
		{"select columns count characters", `"é" + nope`, ``,
			[]string{"select rule 1:7: unknown name nope"}},
		{"select that can never be a list", `len(response) + 1`, ``,
			[]string{"select rule 1:1: select must evaluate to a list; this rule gives int"}},
		{"select empty", " \n ", ``,
			[]string{"select rule 1:1: select rule is empty"}},
		{"select over the size limit", tooLong, ``,
			[]string{"select rule 1:1: rule is 16387 bytes; the limit is 16384"}},
		{"fail with a literal code that is not snake_case", "response.ok\n  ? response.items\n  : fail(\"Bad-Code\", \"x\")", ``,
			[]string{`select rule 3:10: fail code "Bad-Code" is not snake_case (a lower-case letter, then up to 63 of a-z, 0-9 and _)`}},
		{"fail with an unavailable code", `fail("timeout", "pretend")`, ``,
			[]string{`select rule 1:6: fail code "timeout" is reserved for unavailable outcomes; a rule raises contract_error codes only`}},
		{"fail with the canceled code", `fail("canceled", "x")`, ``,
			[]string{`select rule 1:6: fail code "canceled" is reserved for unavailable outcomes; a rule raises contract_error codes only`}},
		{"fail with a metrics word", `fail("none", "x")`, ``,
			[]string{`select rule 1:6: fail code "none" is reserved by the metrics`}},
		{"validate fail with a bad literal code", okSelect, `.ok || fail("no good", "x")`,
			[]string{`validate rule 1:13: fail code "no good" is not snake_case (a lower-case letter, then up to 63 of a-z, 0-9 and _)`}},
		{"fail with wrong argument types", `fail(1, "x")`, ``,
			[]string{"select rule 1:6: cannot use int as argument (type string) to call fail "}},

		// The validate rule is compiled inside a wrapper that adds text
		// before line 1 and after the last line: positions must not show it.
		{"validate unknown name on line 1", okSelect, `type(.id) == "string" && nope`,
			[]string{"validate rule 1:26: unknown name nope"}},
		{"validate unknown name at column 1", okSelect, `nope && true`,
			[]string{"validate rule 1:1: unknown name nope"}},
		{"validate syntax on line 2", okSelect, "type(.id) == \"string\" &&\n  .score >= ) ",
			[]string{`validate rule 2:13: unexpected token Bracket(")")`}},
		{"validate unknown function on line 3", okSelect, "\n\n  unknownfn(.x)",
			[]string{"validate rule 3:3: unknown name unknownfn"}},
		{"validate ends too early", okSelect, `type(.id) == "string" &&`,
			[]string{"validate rule 1:25: unexpected token EOF"}},
		{"validate ends too early, YAML block", okSelect, "type(.id) == \"string\" &&\n",
			[]string{"validate rule 1:25: unexpected token EOF"}},
		{"select ends too early, YAML block", "response.results |\n", ``,
			[]string{"select rule 1:19: unexpected token EOF"}},
		{"validate unclosed comment", okSelect, `/* open`,
			[]string{"validate rule 1:8: unclosed comment"}},
		{"validate over the size limit", okSelect, tooLong,
			[]string{"validate rule 1:1: rule is 16387 bytes; the limit is 16384"}},
		{"both rules broken", `nope1`, `nope2`,
			[]string{"select rule 1:1: unknown name nope1", "validate rule 1:1: unknown name nope2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, errs := Compile(Source{Name: "x", Select: tc.select_, Validate: tc.valid})
			if c != nil {
				t.Fatalf("Compile returned a consumer, want errors %q", tc.want)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCompileAccepts(t *testing.T) {
	for _, tc := range []struct{ name, select_, valid string }{
		{"seed select_results", selectResults, validateResults},
		{"trailing comment in validate", `response.results`, `true // the wrapper must survive this`},
		{"let in validate", `response.results`, `let s = .score; s > 0`},
		{"no validate", `response.results`, ``},
		{"typed list", `split(response.csv, ",")`, ``},
		{"rule at the size limit", "[" + strings.Repeat(" ", maxRuleBytes-2) + "]", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, errs := Compile(Source{Name: "x", Select: tc.select_, Validate: tc.valid}); errs != nil {
				t.Errorf("Compile: %v", errs)
			}
		})
	}
}

func TestRuleHash(t *testing.T) {
	a := mustCompile(t, Source{Name: "a", Version: "1", Select: `response.results`, Validate: `true`})
	b := mustCompile(t, Source{Name: "b", Version: "9", Select: `response.results`, Validate: `true`})
	c := mustCompile(t, Source{Name: "a", Version: "1", Select: `response.results`, Validate: `false`})
	// The separator keeps text moving between the rules from colliding.
	d := mustCompile(t, Source{Name: "a", Version: "1", Select: `response.results `, Validate: `true`})
	if len(a.RuleHash) != 16 || strings.Trim(a.RuleHash, "0123456789abcdef") != "" {
		t.Fatalf("RuleHash = %q, want 16 lowercase hex characters", a.RuleHash)
	}
	if a.RuleHash != b.RuleHash {
		t.Errorf("name and version changed the hash: %s != %s", a.RuleHash, b.RuleHash)
	}
	if a.RuleHash == c.RuleHash || a.RuleHash == d.RuleHash {
		t.Errorf("different rules share a hash: %s", a.RuleHash)
	}
	if ref := a.Ref(); ref.Name != "a" || ref.Version != "1" || ref.RuleHash != a.RuleHash {
		t.Errorf("Ref() = %+v", ref)
	}
}
