package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/pgtest"
	"github.com/toolpulse/toolpulse/internal/testkit/e2e"
)

// locationsConfig is one config for two locations' instances, which
// differ in ${TP_LOCATION} and ${TP_NODE} alone: p-eu runs from eu-west,
// p-us from us-east, p-both from both.
const locationsConfig = `version: 1
storage:
  driver: postgres
  dsn: ${TP_PG_DSN}
fleet:
  node: ${TP_NODE}
  location: ${TP_LOCATION}
  lease: 2s
server:
  listen: ${TP_LISTEN}
consumers:
  - {name: c, select: response.items}
defaults:
  interval: 1s
probes:
  - name: p-eu
    request: {url: "${TP_PROVIDER}/eu"}
    consumer: c
    locations: [eu-west]
  - name: p-us
    request: {url: "${TP_PROVIDER}/us"}
    consumer: c
    locations: [us-east]
  - name: p-both
    request: {url: "${TP_PROVIDER}/both"}
    consumer: c
`

// TestLocationsOnPostgres: two instances of one config on one Postgres,
// one in eu-west and one in us-east. Each leads its own location and runs
// only that location's probes (the provider sees which instance calls
// what); every run records its location; history shows both and filters
// by one; /healthz names each instance's location.
func TestLocationsOnPostgres(t *testing.T) {
	db := pgtest.Database(t)
	var mu sync.Mutex
	calls := map[string]map[string]int{} // path -> caller's location -> calls
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if calls[r.URL.Path] == nil {
			calls[r.URL.Path] = map[string]int{}
		}
		calls[r.URL.Path][r.Header.Get("X-Location")]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"items":[{"id":1}]}`)
	}))
	t.Cleanup(provider.Close)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "checks.yaml")
	// Each instance says where it runs from in a header, so that the
	// provider can tell the callers apart.
	cfg := strings.ReplaceAll(locationsConfig, `request: {url: "${TP_PROVIDER}/`, `request: {headers: {X-Location: "${TP_LOCATION}"}, url: "${TP_PROVIDER}/`)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	type instance struct {
		location, addr string
		out            bytes.Buffer
	}
	start := func(node, location string) *instance {
		in := &instance{location: location, addr: e2e.FreeAddr(t)}
		env := map[string]string{"TP_PG_DSN": db, "TP_PROVIDER": provider.URL, "TP_NODE": node,
			"TP_LOCATION": location, "TP_LISTEN": in.addr}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"-c", cfgPath, "run"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &in.out, &in.out)
		}()
		t.Cleanup(func() {
			cancel()
			if code := <-done; code != exitOK {
				t.Errorf("run %s: exit %d\n%s", node, code, in.out.String())
			}
		})
		return in
	}
	eu, us := start("eu-1", "eu-west"), start("us-1", "us-east")

	healthz := func(in *instance) (int, map[string]any) {
		resp, err := http.Get("http://" + in.addr + "/healthz")
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		enough := calls["/eu"]["eu-west"] >= 2 && calls["/us"]["us-east"] >= 2 &&
			calls["/both"]["eu-west"] >= 2 && calls["/both"]["us-east"] >= 2
		mu.Unlock()
		if enough {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for both locations' runs; provider saw %v\neu:\n%s\nus:\n%s", calls, eu.out.String(), us.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	if n := calls["/eu"]["us-east"] + calls["/us"]["eu-west"]; n != 0 {
		t.Errorf("a location ran another's probe %d times: %v", n, calls)
	}
	mu.Unlock()
	for _, in := range []*instance{eu, us} {
		if status, body := healthz(in); status != http.StatusOK || body["location"] != in.location || body["role"] != "leader" {
			t.Errorf("%s: /healthz = %d %v, want the leader of %s", in.location, status, body, in.location)
		}
	}

	history := func(args ...string) map[string]map[string]int {
		t.Helper()
		var out, errOut bytes.Buffer
		env := map[string]string{"TP_PG_DSN": db, "TP_PROVIDER": provider.URL, "TP_NODE": "reader", "TP_LOCATION": "", "TP_LISTEN": ""}
		code := run(context.Background(), append([]string{"-c", cfgPath, "history", "--format", "json", "--limit", "1000"}, args...),
			func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &out, &errOut)
		if code != exitOK {
			t.Fatalf("history %v: exit %d %s", args, code, errOut.String())
		}
		got := map[string]map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var row struct{ Probe, Location string }
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if got[row.Probe] == nil {
				got[row.Probe] = map[string]int{}
			}
			got[row.Probe][row.Location]++
		}
		return got
	}
	all := history()
	if all["p-eu"]["eu-west"] == 0 || all["p-us"]["us-east"] == 0 || all["p-both"]["eu-west"] == 0 || all["p-both"]["us-east"] == 0 ||
		len(all["p-eu"]) != 1 || len(all["p-us"]) != 1 || len(all["p-both"]) != 2 {
		t.Errorf("history by probe and location: %v, want p-eu from eu-west, p-us from us-east, p-both from both", all)
	}
	if us := history("--location", "us-east"); len(us["p-eu"]) != 0 || us["p-us"]["us-east"] == 0 || len(us["p-both"]) != 1 {
		t.Errorf("history --location us-east: %v", us)
	}
	// The fleet's decider alone keeps p-both's alert state: passing
	// everywhere, it is not failing, and nothing alerted.
	if n := pgtest.Exec(t, db, `SELECT count(*) || ' ' || bool_or(failing OR firing) FROM alert_state WHERE probe = 'p-both'`); strings.TrimSpace(n) != "1 false" {
		t.Errorf("alert state of p-both: %s, want the decider's one, not failing", n)
	}
	if n := pgtest.Exec(t, db, `SELECT count(*) FROM alerts WHERE probe = 'p-both'`); strings.TrimSpace(n) != "0" {
		t.Errorf("alerts of p-both: %s, want none", n)
	}
}
