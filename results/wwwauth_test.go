package results

import (
	"reflect"
	"testing"
)

// TestParseChallenges: schemes with auth-params, token68 or nothing;
// quoted strings with commas, escapes and spaces; several challenges in
// one header line and across lines; names in any case; and what is not a
// challenge skipped without losing the rest.
func TestParseChallenges(t *testing.T) {
	type params = map[string]string
	for _, tt := range []struct {
		name   string
		values []string
		want   []Challenge
	}{
		{"none", nil, nil},
		{"empty line", []string{"  "}, nil},
		{"scheme alone", []string{"Negotiate"},
			[]Challenge{{Scheme: "Negotiate", Params: params{}}}},
		{"token param", []string{"Bearer error=invalid_token"},
			[]Challenge{{Scheme: "Bearer", Params: params{"error": "invalid_token"}}}},
		{"quoted params", []string{`Bearer realm="example", scope="docs:read docs:write"`},
			[]Challenge{{Scheme: "Bearer", Params: params{"realm": "example", "scope": "docs:read docs:write"}}}},
		{"quoted comma and escapes", []string{`Bearer realm="a, b", error_description="say \"no\" \\ back"`},
			[]Challenge{{Scheme: "Bearer", Params: params{"realm": "a, b", "error_description": `say "no" \ back`}}}},
		{"spaces around equals", []string{`Bearer realm = "x" ,  error= invalid_token`},
			[]Challenge{{Scheme: "Bearer", Params: params{"realm": "x", "error": "invalid_token"}}}},
		{"names in any case, first of a repeat", []string{`Bearer Realm="first", REALM="second"`},
			[]Challenge{{Scheme: "Bearer", Params: params{"realm": "first"}}}},
		{"token68", []string{"Basic YWxhZGRpbjpvcGVuc2VzYW1l"},
			[]Challenge{{Scheme: "Basic", Token68: "YWxhZGRpbjpvcGVuc2VzYW1l", Params: params{}}}},
		{"token68 with padding and slash", []string{"Negotiate a+b/c==, Basic realm=x"},
			[]Challenge{{Scheme: "Negotiate", Token68: "a+b/c==", Params: params{}}, {Scheme: "Basic", Params: params{"realm": "x"}}}},
		{"two challenges in one line", []string{`Basic realm="x", Bearer scope="a b", resource_metadata="https://r.example/m"`},
			[]Challenge{{Scheme: "Basic", Params: params{"realm": "x"}}, {Scheme: "Bearer", Params: params{"scope": "a b", "resource_metadata": "https://r.example/m"}}}},
		{"scheme without params before another", []string{`Bearer, Basic realm="x"`},
			[]Challenge{{Scheme: "Bearer", Params: params{}}, {Scheme: "Basic", Params: params{"realm": "x"}}}},
		{"RFC 9110 example", []string{`Basic realm="simple", Newauth realm="apps", type=1, title="Login to \"apps\""`},
			[]Challenge{{Scheme: "Basic", Params: params{"realm": "simple"}}, {Scheme: "Newauth", Params: params{"realm": "apps", "type": "1", "title": `Login to "apps"`}}}},
		{"across lines", []string{`Basic realm="x"`, `bearer resource_metadata=https://r.example/m`},
			[]Challenge{{Scheme: "Basic", Params: params{"realm": "x"}}, {Scheme: "bearer", Params: params{"resource_metadata": "https://r.example/m"}}}},
		{"unquoted URL up to the comma", []string{`Bearer resource_metadata=https://r.example/m?a=1, error="e"`},
			[]Challenge{{Scheme: "Bearer", Params: params{"resource_metadata": "https://r.example/m?a=1", "error": "e"}}}},
		{"unclosed quote runs to the end", []string{`Bearer error="e", realm="open, scope=x`},
			[]Challenge{{Scheme: "Bearer", Params: params{"error": "e", "realm": "open, scope=x"}}}},
		{"empty quoted value", []string{`Bearer realm=""`},
			[]Challenge{{Scheme: "Bearer", Params: params{"realm": ""}}}},
		{"garbage skipped", []string{`"junk, here", Bearer realm="x" trailing, error="e"`},
			[]Challenge{{Scheme: "Bearer", Params: params{"realm": "x", "error": "e"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseChallenges(tt.values); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseChallenges(%q)\n got %#v\nwant %#v", tt.values, got, tt.want)
			}
		})
	}
}

func TestChallengeIs(t *testing.T) {
	c := Challenge{Scheme: "bEaReR"}
	if !c.Is("Bearer") || c.Is("Basic") {
		t.Errorf("%q: Is(Bearer) = %v, Is(Basic) = %v; want true, false", c.Scheme, c.Is("Bearer"), c.Is("Basic"))
	}
}
