// Package refunddesk is the refund service of seed 002 for the tests of
// steps probes: a token endpoint, a refund that may lie, an order whose
// state tells whether the refund really happened, and a clean-up route;
// with the drill that probes it and printers of a steps run. Only tests
// import it.
package refunddesk

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// Desk is a refund service with its token endpoint and the order
// whose state tells whether a refund really happened (seed 002).
type Desk struct {
	mu           sync.Mutex
	Lie          bool          // refunds claim success and change nothing
	Settle       time.Duration // how long a real refund takes to show
	OrdersStatus int           // GET /orders answers this instead (0: 200)
	OrdersFlaky  int           // GET /orders answers 503 this many times first
	RefundStatus int           // POST /refunds answers this instead (0: 201)
	NoToken      bool          // the token endpoint answers without one

	State      string
	RefundedAt time.Time
	Refunds    int      // POST /refunds received
	Deletes    []string // DELETE paths received
	Keys       []string // Idempotency-Key of each refund request
	OrderPaths []string // GET /orders paths received, escaped
}

// Token is the access token the desk hands out and requires.
const Token = "tok-SECRET-7f3a9c"

// New returns a desk whose order 31 is paid and not yet refunded.
func New() *Desk { return &Desk{State: "paid"} }

// ServeHTTP answers the token, refund, order and clean-up routes.
func (d *Desk) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		if d.NoToken {
			fmt.Fprint(w, `{"token_type": "bearer"}`)
			return
		}
		fmt.Fprintf(w, `{"access_token": %q, "token_type": "bearer"}`, Token)
	case r.Method == http.MethodPost && r.URL.Path == "/refunds":
		d.Refunds++
		d.Keys = append(d.Keys, r.Header.Get("Idempotency-Key"))
		if r.Header.Get("Authorization") != "Bearer "+Token {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error": "bad credentials %s"}`, r.Header.Get("Authorization"))
			return
		}
		if d.RefundStatus != 0 {
			w.WriteHeader(d.RefundStatus)
			// A provider that echoes the credential it was sent.
			fmt.Fprintf(w, `{"error": "busy, retry later (%s)"}`, r.Header.Get("Authorization"))
			return
		}
		if !d.Lie {
			d.State, d.RefundedAt = "refunded", time.Now()
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"status": "success", "data": {"refund_id": "rf_31", "amount": 19.99}}`)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/orders/"):
		d.OrderPaths = append(d.OrderPaths, r.URL.EscapedPath())
		if d.OrdersFlaky > 0 {
			d.OrdersFlaky--
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error": "tracker busy"}`)
			return
		}
		if d.OrdersStatus != 0 {
			w.WriteHeader(d.OrdersStatus)
			fmt.Fprint(w, `{"error": "tracker down"}`)
			return
		}
		state, refundID := d.State, "null"
		if state == "refunded" && time.Since(d.RefundedAt) < d.Settle {
			state = "paid" // not visible yet
		}
		if state == "refunded" {
			refundID = `"rf_31"`
		}
		fmt.Fprintf(w, `{"id": 31, "state": %q, "refund_id": %s}`, state, refundID)
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/refunds/"):
		d.Deletes = append(d.Deletes, r.URL.Path)
		d.State = "paid"
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error": "no such route"}`)
	}
}

// Probe is SPEC §11's drill against the desk at url; edit changes
// the YAML before it is loaded.
func Probe(t testing.TB, url string, edit func(string) string) *checks.Probe {
	t.Helper()
	yaml := `version: 1
defaults:
  timeout: 2s
  retries: {max_attempts: 3, base_delay: 1ms, max_delay: 2ms, budget: 5s}
consumers:
  - name: refund_envelope
    select: 'response.status == "success" ? [response.data] : fail("refund_failed", "status is " + string(response.status))'
    validate: type(.refund_id) == "string"
probes:
  - name: refund_order_31
    steps:
      - name: token
        request: {method: POST, url: "${URL}/token", json: {client_id: probe}}
        capture: {access_token: {rule: response.access_token, secret: true}}
      - name: refund
        request:
          method: POST
          url: ${URL}/refunds
          headers: {Authorization: "Bearer {{access_token}}", Idempotency-Key: "{{operation_id}}"}
          json: {order_id: 31, amount: 19.99}
        expect: {status: [201]}
        consumer: refund_envelope
        capture: {refund_id: response.data.refund_id}
      - name: verify
        request: {url: "${URL}/orders/31"}
        until: 'response.state == "refunded" && response.refund_id == vars.refund_id'
        within: 600ms
        every: 50ms
      - name: cleanup
        always: true
        request: {method: DELETE, url: "${URL}/refunds/{{refund_id}}"}
        expect: {status: [204]}
`
	if edit != nil {
		yaml = edit(yaml)
	}
	cfg, err := checks.Parse("checks.yaml", []byte(yaml), t.TempDir(), func(k string) (string, bool) {
		if k == "URL" {
			return url, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Probes[0]
}

// Serve starts d on a loopback server that closes when the test ends
// and returns its URL.
func Serve(t testing.TB, d *Desk) string {
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return srv.URL
}

// StepsOf lists the step of each attempt, run-length encoded:
// "token refund verify×3 cleanup".
func StepsOf(res results.Result) string {
	var out []string
	n := 0
	for i, a := range res.Attempts {
		n++
		if i+1 < len(res.Attempts) && res.Attempts[i+1].Step == a.Step {
			continue
		}
		if n > 1 {
			out = append(out, fmt.Sprintf("%s×%d", a.Step, n))
		} else {
			out = append(out, a.Step)
		}
		n = 0
	}
	return strings.Join(out, " ")
}

// StepVerdicts lists each step of a run with its outcome and code.
func StepVerdicts(res results.Result) string {
	var out []string
	for _, s := range res.Steps {
		v := s.Name + " " + string(s.Outcome)
		if s.Error != nil {
			v += " " + string(s.Error.Code)
		}
		if s.Skipped {
			v += " (skipped)"
		}
		out = append(out, v)
	}
	return strings.Join(out, ", ")
}
