package alertmanager

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// alertmanagerBinary returns the Alertmanager to test against. Without one
// the test is skipped, unless TOOLPULSE_ALERTMANAGER_TEST=required or
// CI=true, where a missing binary fails the test instead: a receiver that
// never met a real Alertmanager is not tested.
func alertmanagerBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("TOOLPULSE_ALERTMANAGER_TEST") == "required" || os.Getenv("CI") == "true" {
		t.Fatal("no prometheus-alertmanager on PATH (apt-get install prometheus-alertmanager), and the test is required here")
	}
	t.Skip("no prometheus-alertmanager on PATH (set TOOLPULSE_ALERTMANAGER_TEST=required to fail instead)")
	return ""
}

// startAlertmanager runs a real Alertmanager on a free loopback port with
// a throw-away config and storage, clustering off, and returns its URL.
// It is stopped when the test ends.
func startAlertmanager(t *testing.T) string {
	t.Helper()
	bin := alertmanagerBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte("route:\n  receiver: none\nreceivers:\n  - name: none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	log := &testkit.Log{}
	cmd := exec.Command(bin,
		"--config.file="+cfg,
		"--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--cluster.listen-address=",
	)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			lines, _ := log.Tail(20)
			for _, l := range lines {
				t.Log("alertmanager: " + l)
			}
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case err := <-exited:
			lines, _ := log.Tail(20)
			t.Fatalf("alertmanager exited before it was ready: %v\n%v", err, lines)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("alertmanager at %s not ready after 20s (last error: %v)", base, err)
		}
	}
}

// gettable is the part of Alertmanager's GettableAlert the test reads.
type gettable struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Status      struct {
		State string `json:"state"`
	} `json:"status"`
}

// activeAlerts lists what Alertmanager holds as active now, by alertname
// and probe; an alert past its endsAt is resolved and not listed.
func activeAlerts(t *testing.T, c *http.Client, base string) []gettable {
	t.Helper()
	resp, err := c.Get(base + "/api/v2/alerts?active=true&silenced=false&inhibited=false")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []gettable
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

func only(t *testing.T, c *http.Client, base, alertname string) (gettable, bool) {
	t.Helper()
	var found []gettable
	for _, a := range activeAlerts(t, c, base) {
		if a.Labels["alertname"] == alertname {
			found = append(found, a)
		}
	}
	if len(found) > 1 {
		t.Fatalf("%d active %s alerts, want at most one: %+v", len(found), alertname, found)
	}
	if len(found) == 0 {
		return gettable{}, false
	}
	return found[0], true
}

// TestRealAlertmanager posts to a real Alertmanager and reads back what it
// holds: a firing alert with its labels and annotations, kept active by
// re-posts past its TTL, replaced when its code changes, and resolved by
// the resolve; a drift as its own alert; Run stops without leaking.
func TestRealAlertmanager(t *testing.T) {
	base := startAlertmanager(t)
	checkLeaks := testkit.NoLeaks(t)
	const ttl = 1500 * time.Millisecond
	// One transport for the test's reads and the Notifier's posts, so that
	// its idle connections can be closed before looking for leaks.
	tr := &http.Transport{}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	n, err := New(Config{URL: base + "/", BaseURL: "https://toolpulse.example.com", HTTPClient: client,
		RepostInterval: 250 * time.Millisecond, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return within 5s of its context ending")
		}
		tr.CloseIdleConnections()
		checkLeaks()
	}()

	send := func(a results.Alert) {
		t.Helper()
		if retry, _, err := n.Send(context.Background(), a); err != nil {
			t.Fatalf("Send(%s) = %v (retry %v)", a.Kind, err, retry)
		}
	}

	f := firing()
	f.FailingSince = time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	send(f)
	got, ok := only(t, client, base, AlertNameFailing)
	if !ok {
		t.Fatalf("no active %s alert after the firing post; active: %+v", AlertNameFailing, activeAlerts(t, client, base))
	}
	wantLabels := map[string]string{"alertname": AlertNameFailing, "probe": "external_search",
		"outcome": "contract_error", "code": "unsupported_results_container", "team": "search", "tier": "1"}
	if fmt.Sprint(got.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("labels = %v, want %v", got.Labels, wantLabels)
	}
	wantAnn := map[string]string{
		"summary":      "external_search contract_error (unsupported_results_container): results is map",
		"message":      "results is map",
		"operation_id": f.OperationID,
		"link":         "https://toolpulse.example.com/probes/external_search",
		// What was called, and what the failed run's body said.
		"target":           f.Target,
		"response_excerpt": f.ResponseExcerpt,
	}
	if fmt.Sprint(got.Annotations) != fmt.Sprint(wantAnn) {
		t.Errorf("annotations = %v, want %v", got.Annotations, wantAnn)
	}
	if !got.StartsAt.Equal(f.FailingSince) {
		t.Errorf("startsAt = %v, want the failure's start %v", got.StartsAt, f.FailingSince)
	}
	if got.Status.State != "active" {
		t.Errorf("state = %q, want active", got.Status.State)
	}

	// Past two TTLs the alert is still active only if Run re-posted it.
	time.Sleep(2 * ttl)
	if got, ok := only(t, client, base, AlertNameFailing); !ok {
		t.Fatalf("the firing alert ended %v after its first post; re-posts should keep it active", 2*ttl)
	} else if !got.EndsAt.After(time.Now()) {
		t.Errorf("endsAt = %v, want it in the future", got.EndsAt)
	}

	// A reminder with another code replaces the alert: one failure, one alert.
	r := f
	r.Kind, r.Outcome, r.Code, r.Message = results.AlertReminder, results.Unavailable, "connection_refused", "dial tcp: refused"
	send(r)
	if got, ok := only(t, client, base, AlertNameFailing); !ok || got.Labels["code"] != "connection_refused" || got.Labels["outcome"] != "unavailable" {
		t.Errorf("after a change of code the active alert is %+v (found %v), want code connection_refused, outcome unavailable", got, ok)
	}

	d := drift()
	d.CreatedAt = time.Now()
	send(d)
	if got, ok := only(t, client, base, AlertNameDrift); !ok {
		t.Errorf("no active %s alert after the drift post", AlertNameDrift)
	} else {
		if got.Labels["fingerprint"] != "3a105e99edea2dbb" || got.Labels["probe"] != "external_search" {
			t.Errorf("drift labels = %v, want fingerprint 3a105e99edea2dbb and the probe", got.Labels)
		}
		if left := time.Until(got.EndsAt); left < 50*time.Minute {
			t.Errorf("the drift alert ends in %v, want about DriftTTL (1h)", left)
		}
	}

	res := resolved()
	res.FailingSince = f.FailingSince
	send(res)
	if got, ok := only(t, client, base, AlertNameFailing); ok {
		t.Errorf("after the resolve Alertmanager still holds %+v as active", got)
	}
	// Re-posts stopped with the resolve: it stays resolved.
	time.Sleep(3 * 250 * time.Millisecond)
	if got, ok := only(t, client, base, AlertNameFailing); ok {
		t.Errorf("a re-post brought the resolved alert back: %+v", got)
	}
}
