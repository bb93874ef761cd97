package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner"
)

// Seed 002's experiment (../shared/seeds/002_*.txt), reproduced with the
// real loader, runner and consumers against provider.Orders: an
// order-support agent handles 40 synthetic orders, calling three tools in
// sequence for each (inventory lookup, refund processor, shipping
// tracker), and judges every answer with the consumer of one probe
// strength. Nine orders carry an injected failure (provider.Seeded).
//
// The agent, as the seed describes it: an answer its check passes is
// acted on, so it goes on to the next tool (and after the tracker, logs
// the order resolved); an answer its check refuses stops the order there,
// routed to retry or escalation.
//
// The seed's metric, per strength:
//   - an injected failure is caught when the check of the tool it was
//     injected into refuses that answer, and missed when the check passes
//     it;
//   - the silent-failure rate is missed / injected, in percent (the seed's
//     bar: at most 2 %);
//   - an erroneous action is the agent acting on a failure it missed: the
//     next tool is called after a missed failure at the inventory (a refund
//     issued, a shipment tracked and released, for an order that should
//     have stopped) or at the refund processor (the order moves on to the
//     tracker as refunded: "a refund marked complete when it wasn't"). A
//     missed tracker outage is silent too, but nothing in the run acts on
//     it, so it is not an action;
//   - a positive control passes when all three of its answers pass.

// tools are the seed agent's three calls, in the order it makes them; the
// names are provider.Failure.Tool's.
var tools = []string{"inventory", "refund", "tracker"}

// strength is one way the agent checks a tool's answer: a consumer per
// tool, from examples/seeds/consumers.
type strength struct {
	name      string
	consumers map[string]string // tool → consumer name
}

// strengths are the probe strengths measured today. The third, the
// envelope plus a verification step (the refund checked against GET
// /orders/{id}, SPEC §11), needs steps: probes; it is added here with its
// refund probe written by probeYAML.
var strengths = []strength{
	{"shallow", map[string]string{
		"inventory": "orders_inventory_shallow",
		"refund":    "orders_refund_shallow",
		"tracker":   "orders_tracker_shallow",
	}},
	{"envelope", map[string]string{
		"inventory": "orders_inventory_envelope",
		"refund":    "orders_refund_envelope",
		"tracker":   "orders_tracker_envelope",
	}},
}

// probeName names the probe of one tool call of one order.
func probeName(tool string, order int) string { return fmt.Sprintf("order_%02d_%s", order, tool) }

// probeYAML writes the probe of one tool call of one order as s checks it:
// one single-request HTTP probe per tool. A strength that verifies a claim
// writes its refund call here as a steps: probe instead.
func probeYAML(s strength, tool string, c provider.OrderCase, baseURL string) string {
	var request string
	switch tool {
	case "inventory":
		request = fmt.Sprintf("{url: %q}", fmt.Sprintf("%s/orders/%d/inventory", baseURL, c.ID))
	case "refund":
		request = fmt.Sprintf("{method: POST, url: %q, json: {order_id: %d, amount: %g}}", baseURL+"/refunds", c.ID, c.Amount)
	case "tracker":
		request = fmt.Sprintf("{url: %q, query: {order: %q}}", baseURL+"/shipments", fmt.Sprint(c.ID))
	}
	return fmt.Sprintf("  - name: %s\n    request: %s\n    consumer: %s\n", probeName(tool, c.ID), request, s.consumers[tool])
}

// loadStrength writes and loads the config of s: its three consumers and a
// probe per tool call of every order.
func loadStrength(t *testing.T, s strength, orders []provider.OrderCase, baseURL string) map[string]*checks.Probe {
	t.Helper()
	var b strings.Builder
	b.WriteString("version: 1\nserver: {listen: \"\"}\n")
	b.WriteString("defaults: {retries: {max_attempts: 1}, jitter: 0s}\nconsumers:\n")
	for _, tool := range tools {
		file, err := filepath.Abs(filepath.Join("seeds", "consumers", s.consumers[tool]+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  - {name: %s, file: %q}\n", s.consumers[tool], file)
	}
	b.WriteString("probes:\n")
	for _, c := range orders {
		for _, tool := range tools {
			b.WriteString(probeYAML(s, tool, c, baseURL))
		}
	}
	path := filepath.Join(t.TempDir(), "checks.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := checks.Load(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%s: the generated config does not load:\n%v", s.name, err)
	}
	probes := map[string]*checks.Probe{}
	for _, p := range cfg.Probes {
		probes[p.Name] = p
	}
	return probes
}

// orderRun is what the agent did with one order: the result of each tool
// call it made, in order; it stops at the first answer its check refuses.
type orderRun struct {
	order provider.OrderCase
	calls []results.Result
}

// stoppedAt is the tool whose answer stopped the order, or "" when every
// answer passed and the order was logged resolved.
func (r orderRun) stoppedAt() string {
	last := r.calls[len(r.calls)-1]
	if last.Outcome == results.Pass {
		return ""
	}
	return tools[len(r.calls)-1]
}

// runAgent handles every order the way the seed's agent does, each tool
// call judged by its probe in probes.
func runAgent(ctx context.Context, exec *runner.Executor, probes map[string]*checks.Probe, orders []provider.OrderCase) []orderRun {
	runs := make([]orderRun, 0, len(orders))
	for _, c := range orders {
		run := orderRun{order: c}
		for _, tool := range tools {
			res := exec.Run(ctx, probes[probeName(tool, c.ID)])
			run.calls = append(run.calls, res)
			if res.Outcome != results.Pass {
				break
			}
		}
		runs = append(runs, run)
	}
	return runs
}

// score is the seed's metric for one strength.
type score struct {
	Injected             int
	Caught               []string // "N code": the order and the code its check refused the answer with
	Missed               []int    // order ids, in order
	ErroneousActions     []int    // order ids, in order
	Controls             int
	ControlsPassed       int
	FalseAlarms          []string // "order N tool: outcome code" for a refused answer without an injected failure
	ResolvedButNotRefund []int    // orders logged resolved whose record is not refunded
}

// SilentFailureRate is the share of injected failures missed, in percent.
func (s score) SilentFailureRate() float64 {
	return 100 * float64(len(s.Missed)) / float64(s.Injected)
}

// scoreRuns computes the seed's metric from the runs and the ground truth
// in each order's case; refunded reports whether the order's record shows
// it refunded now.
func scoreRuns(runs []orderRun, refunded func(order int) bool) score {
	var s score
	for _, r := range runs {
		injectedAt := r.order.Failure.Tool()
		stopped := r.stoppedAt()
		for i, res := range r.calls {
			if res.Outcome != results.Pass && tools[i] != injectedAt {
				s.FalseAlarms = append(s.FalseAlarms, fmt.Sprintf("order %d %s: %s %s", r.order.ID, tools[i], res.Outcome, res.Code()))
			}
		}
		if stopped == "" && !refunded(r.order.ID) {
			s.ResolvedButNotRefund = append(s.ResolvedButNotRefund, r.order.ID)
		}
		if injectedAt == "" {
			s.Controls++
			if stopped == "" {
				s.ControlsPassed++
			}
			continue
		}
		s.Injected++
		reached := slices.Index(tools, injectedAt) < len(r.calls)
		switch {
		case !reached:
			// A false alarm stopped the order first; FalseAlarms has it.
		case stopped == injectedAt:
			s.Caught = append(s.Caught, fmt.Sprintf("%d %s", r.order.ID, r.calls[len(r.calls)-1].Code()))
		default:
			s.Missed = append(s.Missed, r.order.ID)
			if next := slices.Index(tools, injectedAt) + 1; next < len(r.calls) {
				s.ErroneousActions = append(s.ErroneousActions, r.order.ID)
			}
		}
	}
	return s
}

// TestSeed002Experiment runs the seed's 40 orders under each probe strength
// and checks the seed's metric against what the seed found: a shallow
// check lets nearly every failure through; the validated envelope catches
// out of stock, order 31's buried ok and both tracker outages, and misses
// every clean lie, its own limit. Neither reaches the seed's 2 % bar.
func TestSeed002Experiment(t *testing.T) {
	orders := provider.NewOrders()
	srv := httptest.NewServer(orders.Handler())
	defer srv.Close()
	seeded := provider.Seeded()
	exec := runner.NewExecutor(runner.Options{Version: "test"})
	defer exec.CloseIdleConnections()

	want := map[string]score{
		"shallow": {
			Injected:             9,
			Caught:               []string{"16 server_error"}, // only the tracker's 503
			Missed:               []int{7, 9, 18, 23, 26, 31, 34, 38},
			ErroneousActions:     []int{7, 9, 18, 23, 26, 31, 38},
			Controls:             31,
			ControlsPassed:       31,
			ResolvedButNotRefund: []int{9, 23, 31, 38},
		},
		"envelope": {
			Injected: 9,
			Caught: []string{"7 out_of_stock", "16 server_error", "18 out_of_stock", "26 out_of_stock",
				"31 refund_rejected", "34 tracker_error"},
			Missed:               []int{9, 23, 38}, // the clean lies
			ErroneousActions:     []int{9, 23, 38},
			Controls:             31,
			ControlsPassed:       31,
			ResolvedButNotRefund: []int{9, 23, 38},
		},
	}
	for _, s := range strengths {
		orders.Reset()
		probes := loadStrength(t, s, seeded, srv.URL)
		runs := runAgent(t.Context(), exec, probes, seeded)
		got := scoreRuns(runs, func(order int) bool { return isRefunded(t, srv.URL, order) })
		t.Logf("%-8s injected %d, caught %d, missed %d (silent-failure rate %.1f %%, bar 2 %%), erroneous actions %d, positive controls %d/%d",
			s.name, got.Injected, len(got.Caught), len(got.Missed), got.SilentFailureRate(), len(got.ErroneousActions),
			got.ControlsPassed, got.Controls)
		if w := want[s.name]; !equalScores(got, w) {
			t.Errorf("%s:\n got %+v\nwant %+v", s.name, got, w)
		}
		// Every refund the agent sent was sent once: a check never
		// repeats a mutating call.
		for _, c := range seeded {
			if n := orders.RefundRequests(c.ID); n > 1 {
				t.Errorf("%s: order %d got %d refund requests", s.name, c.ID, n)
			}
		}
	}
}

func equalScores(a, b score) bool {
	return a.Injected == b.Injected && slices.Equal(a.Caught, b.Caught) && slices.Equal(a.Missed, b.Missed) &&
		slices.Equal(a.ErroneousActions, b.ErroneousActions) && a.Controls == b.Controls &&
		a.ControlsPassed == b.ControlsPassed && slices.Equal(a.FalseAlarms, b.FalseAlarms) &&
		slices.Equal(a.ResolvedButNotRefund, b.ResolvedButNotRefund)
}

// isRefunded reads the order's record, the observation no tool's answer
// can fake.
func isRefunded(t *testing.T, baseURL string, order int) bool {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("%s/orders/%d", baseURL, order), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var record struct {
		State string `json:"state"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&record); err != nil {
		t.Fatalf("order %d: %v", order, err)
	}
	return record.State == "refunded"
}
