package slackprinter

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPrinter(t *testing.T) {
	var out bytes.Buffer
	p := New(&out)
	srv := httptest.NewServer(p)
	defer srv.Close()

	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantOut    []string
	}{
		{"block kit message", `{"text":":red_circle: search contract_error","blocks":[
			{"type":"header","text":{"type":"plain_text","text":"search is failing"}},
			{"type":"section","fields":[{"type":"mrkdwn","text":"*Outcome*\ncontract_error"}]},
			{"type":"section","text":{"type":"mrkdwn","text":"results: list&lt;object(3 keys)&gt; -&gt; object(1 keys)"}},
			{"type":"context","elements":[{"type":"mrkdwn","text":"op 1234 <!date^1761484020^{date_short} {time}|2026-10-26 13:07 UTC>"}]}]}`,
			http.StatusOK, []string{"Slack message 1 ─ :red_circle: search contract_error", "│ search is failing", "│ Outcome: contract_error",
				"│ results: list<object(3 keys)> -> object(1 keys)", "│ op 1234 2026-10-26 13:07 UTC"}},
		{"not json", `nope`, http.StatusBadRequest, nil},
		{"no fallback text", `{"blocks":[]}`, http.StatusBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out.Reset()
			resp, err := http.Post(srv.URL, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
	if p.Received() != 1 {
		t.Errorf("Received() = %d, want 1", p.Received())
	}
}
