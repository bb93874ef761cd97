package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner/prober"
)

// TestSeedDrills runs the verified drills of examples/seeds/checks.yaml
// against the handler this command serves: order 31 is refused at the
// refund (the envelope already sees the buried ok), order 9's clean lie
// at the verification, showing the state it read; each refund is sent
// once, and the clean-up leaves order 9 paid with no refund in force.
func TestSeedDrills(t *testing.T) {
	orders := provider.NewOrders()
	srv := httptest.NewServer(provider.Mux(provider.New(), orders))
	defer srv.Close()
	cfg, err := checks.Load(filepath.Join("..", "..", "seeds", "checks.yaml"), func(name string) (string, bool) {
		if name == "SEEDS_PROVIDER_URL" {
			return srv.URL, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	probes := map[string]*checks.Probe{}
	for _, p := range cfg.Probes {
		probes[p.Name] = p
	}
	exec := prober.NewExecutor(prober.Options{Version: "test"})
	defer exec.CloseIdleConnections()

	tests := []struct {
		probe    string
		order    int
		outcome  results.Outcome
		code     results.Code
		step     string
		message  string // the start of the message
		observed string // the end of the message
		refundID string // the refund id the processor answers, "" for none
	}{
		{"refund_order_31_verified", 31, results.ContractError, "refund_rejected", "refund",
			"step refund: the processor declined the refund: issuer_declined", "", ""},
		{"refund_clean_lie_verified", 9, results.ContractError, results.CodeClaimMismatch, "verify",
			"step verify: claim not confirmed within 3s (", `state: "paid"`, "rf_0009_1"},
	}
	for _, tt := range tests {
		t.Run(tt.probe, func(t *testing.T) {
			p := probes[tt.probe]
			if p == nil {
				t.Fatalf("examples/seeds/checks.yaml has no probe %s", tt.probe)
			}
			res := exec.Run(t.Context(), p)
			if res.Outcome != tt.outcome || res.Code() != tt.code || res.Step != tt.step {
				t.Fatalf("run = %s %v at step %q; want %s %s at %q", res.Outcome, res.Error, res.Step, tt.outcome, tt.code, tt.step)
			}
			if msg := res.Error.Message; !strings.HasPrefix(msg, tt.message) || !strings.HasSuffix(msg, tt.observed) {
				t.Errorf("message %q; want it to start %q and end %q", msg, tt.message, tt.observed)
			}
			if n := orders.RefundRequests(tt.order); n != 1 {
				t.Errorf("order %d got %d refund requests, want 1", tt.order, n)
			}
			// The clean-up reverted the refund id the processor answered:
			// a second DELETE finds nothing.
			if tt.refundID != "" {
				if code := deleteStatus(t, srv.URL+"/refunds/"+tt.refundID); code != http.StatusNotFound {
					t.Errorf("DELETE %s after the run: %d, want 404: the clean-up left it in force", tt.refundID, code)
				}
			}
		})
	}

	// The example provider's own tools are still served beside them.
	for _, path := range []string{"/runs?config=cfg-9f2c", "/orders/31/inventory", "/shipments?order=31"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", path, resp.StatusCode)
		}
	}
}

func deleteStatus(t *testing.T, url string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
