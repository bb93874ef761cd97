package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/results"
)

// TestAPI serves the JSON API over a real database filled by `check`
// (healthy, then the seed-000 drift) and reads it as a dashboard would.
func TestAPI(t *testing.T) {
	h := newCLIRun(t)
	h.run("check")
	h.provider.SetDrifted(true)
	h.run("check")

	srv, _ := storedServer(t, h)

	get := func(path string, into any) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(body), testSecret) {
			t.Errorf("GET %s leaked the secret", path)
		}
		if into != nil {
			if err := json.Unmarshal(body, into); err != nil {
				t.Fatalf("GET %s: %v\n%s", path, err, body)
			}
		}
		return resp.StatusCode
	}

	var probes struct {
		Probes []struct {
			Name   string            `json:"name"`
			Latest *results.Envelope `json:"latest"`
		} `json:"probes"`
	}
	if code := get("/api/v1/probes", &probes); code != http.StatusOK || len(probes.Probes) != 3 {
		t.Fatalf("/api/v1/probes: %d, %d probes, want 200 and 3", code, len(probes.Probes))
	}
	for _, p := range probes.Probes {
		if p.Latest == nil {
			t.Fatalf("%s has no latest envelope", p.Name)
		}
		if p.Name == "search_strict" && (p.Latest.Status != "contract_error" || p.Latest.Error == nil || p.Latest.Data != nil) {
			t.Errorf("search_strict latest = %+v, want the contract error", p.Latest)
		}
	}

	var page struct {
		Results []json.RawMessage `json:"results"`
	}
	if code := get("/api/v1/probes/search_strict/results?limit=1", &page); code != http.StatusOK || len(page.Results) != 1 ||
		!strings.Contains(string(page.Results[0]), `"code":"unsupported_results_container"`) {
		t.Errorf("results page: %d %s", code, page.Results)
	}
	if code := get("/api/v1/probes/search_strict/results?since=24h", &page); code != http.StatusOK || len(page.Results) != 2 {
		t.Errorf("results since 24h: %d, %d results, want 2", code, len(page.Results))
	}

	// apiError is an error body as a client reads it.
	type apiError struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	var apiErr apiError
	for path, want := range map[string]struct {
		status int
		code   string
	}{
		"/api/v1/probes/nope/results":              {http.StatusNotFound, "not_found"},
		"/api/v1/probes/search/results?limit=zero": {http.StatusBadRequest, "bad_request"},
		"/api/v1/drifts?since=yesterday":           {http.StatusBadRequest, "bad_request"},
		"/api/v1/drifts?probe=nope":                {http.StatusNotFound, "not_found"},
	} {
		apiErr = apiError{}
		if code := get(path, &apiErr); code != want.status || apiErr.Error.Code != want.code {
			t.Errorf("GET %s = %d %q, want %d %q", path, code, apiErr.Error.Code, want.status, want.code)
		}
	}
	// A filter an endpoint does not have is refused by name, never ignored.
	for path, want := range map[string]string{
		"/api/v1/probes?outcome=pass":                       `unknown query parameter "outcome"; /api/v1/probes takes no query parameters`,
		"/api/v1/probes/search_strict/results?outcome=pass": `unknown query parameter "outcome"; /api/v1/probes/search_strict/results takes since, limit, location`,
		"/api/v1/drifts?limit=5&until=1h&code=x":            `unknown query parameters "code", "until"; /api/v1/drifts takes probe, since, limit`,
	} {
		apiErr = apiError{}
		if code := get(path, &apiErr); code != http.StatusBadRequest || apiErr.Error.Code != "bad_request" || apiErr.Error.Message != want {
			t.Errorf("GET %s = %d %+v, want 400 bad_request %q", path, code, apiErr.Error, want)
		}
	}
	// A probe that is configured but has never drifted is an empty list.
	var none struct {
		Drifts []json.RawMessage `json:"drifts"`
	}
	if code := get("/api/v1/drifts?probe=tracker", &none); code != http.StatusOK || none.Drifts == nil || len(none.Drifts) != 0 {
		t.Errorf("/api/v1/drifts?probe=tracker: %d %+v, want 200 and []", code, none)
	}
	var drifts struct {
		Drifts []json.RawMessage `json:"drifts"`
	}
	if code := get("/api/v1/drifts", &drifts); code != http.StatusOK || drifts.Drifts == nil {
		t.Errorf("/api/v1/drifts: %d %+v, want 200 and a list", code, drifts)
	}
}
