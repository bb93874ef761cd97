package checks

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

const secretValue = "hunter2-very-secret-value"

func TestSecretNeverPrints(t *testing.T) {
	s := Secret(secretValue)
	type holder struct {
		Name  string
		Token Secret
		Ptr   *Secret
		Map   map[string]Secret
	}
	h := holder{Name: "n", Token: s, Ptr: &s, Map: map[string]Secret{"Authorization": s}}

	for _, format := range []string{"%v", "%s", "%+v", "%#v", "%q", "%x", "%X", "%d", "%10.3s"} {
		for name, v := range map[string]any{"secret": s, "pointer": &s, "struct": h, "struct pointer": &h, "map": h.Map, "slice": []Secret{s}} {
			if got := fmt.Sprintf(format, v); strings.Contains(got, secretValue) || strings.Contains(got, fmt.Sprintf("%x", secretValue)) ||
				strings.Contains(strings.ToLower(got), fmt.Sprintf("%x", secretValue)) {
				t.Errorf("Sprintf(%s, %s) = %s: the secret shows", format, name, got)
			}
		}
	}
	if got := fmt.Sprint(s); got != "<redacted>" {
		t.Errorf("Sprint = %q, want <redacted>", got)
	}

	var buf bytes.Buffer
	for _, handler := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		slog.New(handler).Info("probe", "token", s, "holder", h, slog.Any("ptr", &s), slog.Group("g", "token", s))
	}
	if strings.Contains(buf.String(), secretValue) || !strings.Contains(buf.String(), "<redacted>") {
		t.Errorf("slog output shows the secret or no <redacted>:\n%s", buf.String())
	}

	out, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), secretValue) {
		t.Errorf("json.Marshal = %s: the secret shows", out)
	}
	if s.Reveal() != secretValue {
		t.Errorf("Reveal = %q", s.Reveal())
	}
}

// TestConfigErrorsHideSecrets loads configs whose mistakes sit next to secret
// values and requires every error to leave the values out, while still
// naming a position.
func TestConfigErrorsHideSecrets(t *testing.T) {
	env := mapEnv(map[string]string{"SECRET": secretValue})
	base := "version: 1\nconsumers:\n  - {name: c, select: response.items}\n"
	probe := func(request string) string {
		return base + "probes:\n  - name: p\n    consumer: c\n    request:\n      url: http://127.0.0.1:1/\n" + request
	}
	tests := map[string]string{
		"header value with a line break":                 probe(`      headers: {Authorization: "Bearer ` + secretValue + `\nX-Evil: 1"}` + "\n"),
		"header value from env with a control character": probe("      headers: {Authorization: \"${SECRET}\\u0001\"}\n"),
		"header value of the wrong type":                 probe("      headers: {Authorization: [" + secretValue + "]}\n"),
		"header value, mapping":                          probe("      headers: {Authorization: {v: " + secretValue + "}}\n"),
		"invalid header name next to a secret":           probe("      headers: {\"Bad Name\": " + secretValue + "}\n"),
		"duplicate header":                               probe("      headers: {Authorization: " + secretValue + ", authorization: " + secretValue + "}\n"),
		"unset variable in a header":                     probe("      headers: {Authorization: \"Bearer " + secretValue + " ${NOPE}\"}\n"),
		"malformed reference in a header":                probe("      headers: {Authorization: \"" + secretValue + "${1" + secretValue + "}\"}\n"),
		"unterminated reference in a header":             probe("      headers: {Authorization: \"${" + secretValue + "\"}\n"),
		"unterminated quote in a header":                 probe("      headers: {Authorization: \"Bearer " + secretValue + "}\n"),
		"token and webhook both":                         base + "notify: {slack: {webhook_url: \"https://hooks.example/" + secretValue + "\", token: " + secretValue + ", channel: x}}\n",
		"webhook without a scheme":                       base + "notify: {slack: {webhook_url: \"hooks.example/" + secretValue + "\"}}\n",
		"webhook that does not parse":                    base + "notify: {slack: {webhook_url: \"http://[" + secretValue + "/x\"}}\n",
		"server token of the wrong type":                 base + "server: {token: [" + secretValue + "]}\n",
		"request url with a key in the query":            probe("      method: get\n") + "  - name: q\n    consumer: c\n    request: {url: \"ftp://h/?key=" + secretValue + "\"}\n",
		"server token from env, bad listen":              base + "server: {token: \"${SECRET}\", listen: \"nope\"}\n",
		"server token with a space, on the network":      base + "server: {token: \"" + secretValue + " x\", listen: \"0.0.0.0:9321\"}\n",
		"duplicate key holding a secret":                 base + "server: {token: " + secretValue + ", token: " + secretValue + "}\n",
		"mcp url with a password, wrong scheme":          base + "probes:\n  - {name: m, consumer: c, mcp: {tool: t, url: \"ws://u:" + secretValue + "@h/mcp\"}}\n",
		"mcp url that does not parse":                    base + "probes:\n  - {name: m, consumer: c, mcp: {tool: t, url: \"http://u:" + secretValue + "@[h/mcp\"}}\n",
		"mcp header value with a line break":             base + "probes:\n  - {name: m, consumer: c, mcp: {tool: t, url: \"http://h/\", headers: {Authorization: \"Bearer " + secretValue + "\\nX: 1\"}}}\n",
		"mcp header value of the wrong type":             base + "probes:\n  - {name: m, consumer: c, mcp: {tool: t, url: \"http://h/\", headers: {Authorization: [" + secretValue + "]}}}\n",
		"mcp header next to request":                     base + "probes:\n  - {name: m, consumer: c, request: {url: \"http://h/\"}, mcp: {tool: t, url: \"http://h/\", headers: {X-Key: \"${SECRET}\"}}}\n",
	}
	for name, src := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("checks.yaml", []byte(src), "testdata", env)
			if err == nil {
				t.Fatalf("no error for\n%s", src)
			}
			if strings.Contains(err.Error(), secretValue) || strings.Contains(err.Error(), secretValue[:12]) {
				t.Errorf("the error shows the secret:\n%s", err)
			}
			t.Log(err)
			for _, e := range err.(ErrorList) {
				if e.Line < 1 || e.Column < 1 {
					t.Errorf("error without a position: %v", e)
				}
			}
		})
	}
}

// TestLoadedConfigHidesSecrets prints a loaded config every way a log line
// or a debug dump might, and finds no secret in it.
func TestLoadedConfigHidesSecrets(t *testing.T) {
	env := mapEnv(map[string]string{
		"TP_TOKEN": "server-token-0123", "SLACK_BOT_TOKEN": "xoxb-bot-token-4567", "SEARCH_TOKEN": "search-token-89ab",
	})
	cfg, err := Load("testdata/valid-full.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	var dump strings.Builder
	fmt.Fprintf(&dump, "%v %+v %#v\n", *cfg, cfg.Server, cfg.Notify)
	for _, p := range cfg.Probes {
		fmt.Fprintf(&dump, "%v %+v %#v\n", *p, p.Steps[0].Request, p.Steps[0].Request.Headers)
	}
	out, _ := json.Marshal(cfg.Probes[0].Steps[0].Request)
	dump.Write(out)
	slog.New(slog.NewJSONHandler(&dump, nil)).Info("config", "server", cfg.Server, "request", cfg.Probes[0].Steps[0].Request)
	for _, s := range []string{"server-token-0123", "xoxb-bot-token-4567", "search-token-89ab"} {
		if strings.Contains(dump.String(), s) {
			t.Errorf("%s shows in:\n%s", s, dump.String())
		}
	}
	if got := strings.Join(cfg.Secrets(), ","); !strings.Contains(got, "server-token-0123") || !strings.Contains(got, "Bearer search-token-89ab") {
		t.Errorf("Secrets() = %q, want every secret for the redactor", got)
	}
}

func TestSecretsIncludeURLCredentials(t *testing.T) {
	cfg, err := Parse("checks.yaml", []byte(`version: 1
consumers: [{name: c, select: response.items}]
probes:
  - name: p
    request: {url: "https://svc:url-pass-77@api.example.test/items"}
    consumer: c
`), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Secrets()
	basic := base64.StdEncoding.EncodeToString([]byte("svc:url-pass-77"))
	if !slices.Contains(got, "url-pass-77") || !slices.Contains(got, basic) {
		t.Errorf("Secrets() = %q, want the URL's password and its Basic form %q", got, basic)
	}
}
