package checks

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestProbeSame changes one thing at a time in a loaded probe: each must
// count as a change, and a probe loaded again with nothing changed must
// not, though its consumer is compiled anew and its CA pool built anew.
func TestProbeSame(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(consumer, validate string) *Probe {
		t.Helper()
		yaml := fmt.Sprintf(`version: 1
consumers: [{name: %s, version: "2", select: response.results, validate: %q}]
probes:
  - name: search
    request: {method: POST, url: "https://127.0.0.1:1/search", headers: {Authorization: "Bearer a"}, query: {lang: en}, json: {query: q}}
    consumer: %s
    interval: 1m
    labels: {team: search}
    tls: {ca_file: ca.pem}
`, consumer, validate, consumer)
		cfg, err := Parse("checks.yaml", []byte(yaml), dir, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Probes[0]
	}
	base := func() *Probe { return load("select_results", "type(.id) == 'string'") }
	tests := map[string]struct {
		change func(p *Probe)
		same   bool
	}{
		"loaded again":   {func(p *Probe) {}, true},
		"interval":       {func(p *Probe) { p.Interval = 2 * time.Minute }, false},
		"jitter":         {func(p *Probe) { p.Jitter = 0 }, false},
		"timeout":        {func(p *Probe) { p.Steps[0].Timeout = time.Second }, false},
		"url":            {func(p *Probe) { p.Steps[0].Request.URL += "x" }, false},
		"method":         {func(p *Probe) { p.Steps[0].Request.Method = http.MethodGet }, false},
		"header value":   {func(p *Probe) { p.Steps[0].Request.Headers["Authorization"] = "Bearer other" }, false},
		"query":          {func(p *Probe) { p.Steps[0].Request.Query["lang"] = "de" }, false},
		"json fixture":   {func(p *Probe) { p.Steps[0].Request.JSON = map[string]any{"query": "other"} }, false},
		"body":           {func(p *Probe) { p.Steps[0].Request.Body = "raw" }, false},
		"max body":       {func(p *Probe) { p.MaxBodyBytes++ }, false},
		"retries":        {func(p *Probe) { p.Steps[0].Retries.MaxAttempts++ }, false},
		"expect status":  {func(p *Probe) { p.Steps[0].Expect.Status = []int{200, 204} }, false},
		"min results":    {func(p *Probe) { p.Steps[0].Expect.MinResults = 2 }, false},
		"labels":         {func(p *Probe) { p.Labels["team"] = "other" }, false},
		"consumer rule":  {func(p *Probe) { p.Steps[0].Consumer = load("select_results", "true").Steps[0].Consumer }, false},
		"consumer name":  {func(p *Probe) { p.Steps[0].Consumer = load("other", "type(.id) == 'string'").Steps[0].Consumer }, false},
		"CA":             {func(p *Probe) { p.TLS = &tls.Config{RootCAs: x509.NewCertPool()} }, false},
		"insecure":       {func(p *Probe) { p.TLS = &tls.Config{RootCAs: p.TLS.RootCAs, InsecureSkipVerify: true} }, false},
		"TLS removed":    {func(p *Probe) { p.TLS = nil }, false},
		"system CA pool": {func(p *Probe) { p.TLS = &tls.Config{} }, false},
		"consumer version": {func(p *Probe) {
			c := *p.Steps[0].Consumer
			c.Version = "3"
			p.Steps[0].Consumer = &c
		}, false},
	}
	for name, tt := range tests {
		a, b := base(), base()
		tt.change(b)
		if got := a.Same(b); got != tt.same {
			t.Errorf("%s: Same = %v, want %v", name, got, tt.same)
		}
	}
}
