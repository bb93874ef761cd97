package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/examples/provider"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/runner/prober"
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
// tool, from examples/seeds/consumers, and, when verified, the refund's
// claim checked against the order record (SPEC §11).
type strength struct {
	name      string
	consumers map[string]string // tool → consumer name
	// verified makes each order one steps: probe, inventory → refund →
	// verify → tracker, with a clean-up that reverts the refund.
	verified bool
}

var envelopeConsumers = map[string]string{
	"inventory": "orders_inventory_envelope",
	"refund":    "orders_refund_envelope",
	"tracker":   "orders_tracker_envelope",
}

// strengths are the probe strengths measured: an uptime check's, the
// validated envelope's, and the envelope plus a verification step, which
// reads the order record after the refund processor claims success.
var strengths = []strength{
	{name: "shallow", consumers: map[string]string{
		"inventory": "orders_inventory_shallow",
		"refund":    "orders_refund_shallow",
		"tracker":   "orders_tracker_shallow",
	}},
	{name: "envelope", consumers: envelopeConsumers},
	{name: "verified", consumers: envelopeConsumers, verified: true},
}

// stepTool is the tool each step of a verified probe stands for: the
// verification belongs to the refund, whose claim it checks.
var stepTool = map[string]string{"inventory": "inventory", "refund": "refund", "verify": "refund", "tracker": "tracker"}

// Polling of the verification: the provider settles a real refund after
// settleDelay, so a verification that read the record once would fail
// every positive control.
const (
	settleDelay  = 100 * time.Millisecond
	verifyWithin = 600 * time.Millisecond
	verifyEvery  = 25 * time.Millisecond
)

// probeName names the probe of one tool call of one order; a verified
// strength's one probe per order has the tool "".
func probeName(tool string, order int) string {
	if tool == "" {
		return fmt.Sprintf("order_%02d", order)
	}
	return fmt.Sprintf("order_%02d_%s", order, tool)
}

// toolRequest is the request of one tool call for order c, as a YAML flow
// mapping; the refund sends headers too.
func toolRequest(tool string, c provider.OrderCase, baseURL, headers string) string {
	switch tool {
	case "inventory":
		return fmt.Sprintf("{url: %q}", fmt.Sprintf("%s/orders/%d/inventory", baseURL, c.ID))
	case "refund":
		return fmt.Sprintf("{method: POST, url: %q,%s json: {order_id: %d, amount: %g}}", baseURL+"/refunds", headers, c.ID, c.Amount)
	case "tracker":
		return fmt.Sprintf("{url: %q, query: {order: %q}}", baseURL+"/shipments", fmt.Sprint(c.ID))
	}
	return "{}" // not a tool: the config does not load, which says so
}

// probeYAML writes the probe of one tool call of one order as s checks it:
// one single-request HTTP probe per tool.
func probeYAML(s strength, tool string, c provider.OrderCase, baseURL string) string {
	return fmt.Sprintf("  - name: %s\n    request: %s\n    consumer: %s\n",
		probeName(tool, c.ID), toolRequest(tool, c, baseURL, ""), s.consumers[tool])
}

// verifiedProbeYAML writes order c's one probe under a verified strength:
// the agent's three calls as steps, each judged by its envelope consumer,
// with the refund's claim verified on the order record before the tracker
// is called, and a clean-up that reverts the refund so the next run finds
// the order paid. The refund sends the run's id as its Idempotency-Key, so
// a retry could not refund twice.
func verifiedProbeYAML(s strength, c provider.OrderCase, baseURL string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  - name: %s\n    steps:\n", probeName("", c.ID))
	step := func(name, request, rest string) {
		fmt.Fprintf(&b, "      - name: %s\n        request: %s\n%s", name, request, rest)
	}
	step("inventory", toolRequest("inventory", c, baseURL, ""), "        consumer: "+s.consumers["inventory"]+"\n")
	step("refund", toolRequest("refund", c, baseURL, ` headers: {Idempotency-Key: "{{operation_id}}"},`),
		"        consumer: "+s.consumers["refund"]+"\n        capture: {refund_id: response.refund.id}\n")
	step("verify", fmt.Sprintf("{url: %q}", fmt.Sprintf("%s/orders/%d", baseURL, c.ID)),
		fmt.Sprintf("        until: 'response.state == \"refunded\" && response.refund_id == vars.refund_id'\n"+
			"        within: %s\n        every: %s\n", verifyWithin, verifyEvery))
	step("tracker", toolRequest("tracker", c, baseURL, ""), "        consumer: "+s.consumers["tracker"]+"\n")
	step("cleanup", fmt.Sprintf("{method: DELETE, url: %q}", baseURL+"/refunds/{{refund_id}}"), "        always: true\n")
	return b.String()
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
		if s.verified {
			b.WriteString(verifiedProbeYAML(s, c, baseURL))
			continue
		}
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

// orderRun is what the agent did with one order: the tools it called, in
// order, and the result that decided the order. It stops at the first
// answer its check refuses.
type orderRun struct {
	order  provider.OrderCase
	called []string
	// stopped is the tool whose answer stopped the order, "" when every
	// answer passed and the order was logged resolved.
	stopped string
	// decided is the last result: the refused answer's, or the tracker's
	// (for a verified probe, the whole run's).
	decided results.Result
	// step is the step that refused the answer: for a single-request
	// probe, its tool.
	step string
}

// runAgent handles every order the way the seed's agent does, each tool
// call judged by its probe in probes; under a verified strength each
// order is one multi-step run.
func runAgent(ctx context.Context, exec *prober.Executor, s strength, probes map[string]*checks.Probe, orders []provider.OrderCase) []orderRun {
	runs := make([]orderRun, 0, len(orders))
	for _, c := range orders {
		if s.verified {
			runs = append(runs, verifiedRun(c, exec.Run(ctx, probes[probeName("", c.ID)])))
			continue
		}
		run := orderRun{order: c}
		for _, tool := range tools {
			res := exec.Run(ctx, probes[probeName(tool, c.ID)])
			run.called, run.decided = append(run.called, tool), res
			if res.Outcome != results.Pass {
				run.stopped, run.step = tool, tool
				break
			}
		}
		runs = append(runs, run)
	}
	return runs
}

// verifiedRun reads a verified probe's run as the agent's: a tool was
// called when one of its steps made an attempt, and the deciding step's
// tool stopped the order.
func verifiedRun(c provider.OrderCase, res results.Result) orderRun {
	run := orderRun{order: c, decided: res}
	for _, a := range res.Attempts {
		if tool, ok := stepTool[a.Step]; ok && !slices.Contains(run.called, tool) {
			run.called = append(run.called, tool)
		}
	}
	if res.Outcome != results.Pass {
		run.stopped, run.step = stepTool[res.Step], res.Step
	}
	return run
}

// score is the seed's metric for one strength.
type score struct {
	Injected             int
	Caught               []string // "N outcome code at step": the order, and how and where its check refused it
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
		if r.stopped != "" && r.stopped != injectedAt {
			s.FalseAlarms = append(s.FalseAlarms, fmt.Sprintf("order %d %s: %s %s", r.order.ID, r.step, r.decided.Outcome, r.decided.Code()))
		}
		if r.stopped == "" && !refunded(r.order.ID) {
			s.ResolvedButNotRefund = append(s.ResolvedButNotRefund, r.order.ID)
		}
		if injectedAt == "" {
			s.Controls++
			if r.stopped == "" {
				s.ControlsPassed++
			}
			continue
		}
		s.Injected++
		switch {
		case !slices.Contains(r.called, injectedAt):
			// A false alarm stopped the order first; FalseAlarms has it.
		case r.stopped == injectedAt:
			s.Caught = append(s.Caught, fmt.Sprintf("%d %s %s at %s", r.order.ID, r.decided.Outcome, r.decided.Code(), r.step))
		default:
			s.Missed = append(s.Missed, r.order.ID)
			if next := slices.Index(tools, injectedAt) + 1; next < len(tools) && slices.Contains(r.called, tools[next]) {
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
// every clean lie, its own limit; neither reaches the seed's 2 % bar. The
// envelope plus a verification step, which reads the order record after
// the refund processor claims success, catches all nine and passes every
// positive control, although real refunds settle late.
func TestSeed002Experiment(t *testing.T) {
	orders := provider.NewOrders()
	orders.SetSettleDelay(settleDelay)
	desk := &refundDesk{inner: orders.Handler()}
	srv := httptest.NewServer(desk)
	defer srv.Close()
	seeded := provider.Seeded()
	exec := prober.NewExecutor(prober.Options{Version: "test"})
	defer exec.CloseIdleConnections()

	envelopeCaught := []string{"7 contract_error out_of_stock at inventory", "16 unavailable server_error at tracker",
		"18 contract_error out_of_stock at inventory", "26 contract_error out_of_stock at inventory",
		"31 contract_error refund_rejected at refund", "34 contract_error tracker_error at tracker"}
	want := map[string]score{
		"shallow": {
			Injected:             9,
			Caught:               []string{"16 unavailable server_error at tracker"}, // only the tracker's 503
			Missed:               []int{7, 9, 18, 23, 26, 31, 34, 38},
			ErroneousActions:     []int{7, 9, 18, 23, 26, 31, 38},
			Controls:             31,
			ControlsPassed:       31,
			ResolvedButNotRefund: []int{9, 23, 31, 38},
		},
		"envelope": {
			Injected:             9,
			Caught:               envelopeCaught,
			Missed:               []int{9, 23, 38}, // the clean lies
			ErroneousActions:     []int{9, 23, 38},
			Controls:             31,
			ControlsPassed:       31,
			ResolvedButNotRefund: []int{9, 23, 38},
		},
		"verified": {
			Injected: 9,
			Caught: []string{"7 contract_error out_of_stock at inventory", "9 contract_error claim_mismatch at verify",
				"16 unavailable server_error at tracker", "18 contract_error out_of_stock at inventory",
				"23 contract_error claim_mismatch at verify", "26 contract_error out_of_stock at inventory",
				"31 contract_error refund_rejected at refund", "34 contract_error tracker_error at tracker",
				"38 contract_error claim_mismatch at verify"},
			Controls:       31,
			ControlsPassed: 31,
		},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-9s %6s %6s %12s %10s %9s\n", "strength", "caught", "missed", "silent rate", "erroneous", "controls")
	for _, s := range strengths {
		orders.Reset()
		probes := loadStrength(t, s, seeded, srv.URL)
		// A verified strength runs twice on the same provider: its
		// clean-up must leave every order as it found it.
		passes := 1
		if s.verified {
			passes = 2
		}
		for pass := 1; pass <= passes; pass++ {
			desk.reset()
			before := refundRequests(orders, seeded)
			runs := runAgent(t.Context(), exec, s, probes, seeded)
			time.Sleep(settleDelay) // the records show every real refund by now
			got := scoreRuns(runs, func(order int) bool { return desk.refundedAtCleanup(order) || isRefunded(t, srv.URL, order) })
			if w := want[s.name]; !equalScores(got, w) {
				t.Errorf("%s, run %d:\n got %+v\nwant %+v", s.name, pass, got, w)
			}
			// Every refund the agent sent was sent once: a check never
			// repeats a mutating call.
			after := refundRequests(orders, seeded)
			for i, c := range seeded {
				if n := after[i] - before[i]; n > 1 {
					t.Errorf("%s, run %d: order %d got %d refund requests", s.name, pass, c.ID, n)
				}
			}
			if s.verified {
				checkVerifiedRuns(t, runs, desk, srv.URL)
			}
			if pass == 1 {
				fmt.Fprintf(&table, "%-9s %6d %6d %10.1f %% %10d %6d/%d\n", s.name, len(got.Caught), len(got.Missed),
					got.SilentFailureRate(), len(got.ErroneousActions), got.ControlsPassed, got.Controls)
			}
		}
	}
	t.Logf("seed 002, 40 orders, 9 injected failures (bar: silent rate at most 2 %%, erroneous actions near 0):\n%s", table.String())
	const wantTable = `strength  caught missed  silent rate  erroneous  controls
shallow        1      8       88.9 %          7     31/31
envelope       6      3       33.3 %          3     31/31
verified       9      0        0.0 %          0     31/31
`
	if table.String() != wantTable {
		t.Errorf("table:\n%s\nwant:\n%s", table.String(), wantTable)
	}
}

// checkVerifiedRuns checks what the score cannot see of a verified
// strength's runs: each clean lie's message shows the state the
// verification observed; each positive control's verification polled
// before the settled refund showed; each refund request carried its run's
// id as the Idempotency-Key and was sent once; and the clean-up left every
// order paid.
func checkVerifiedRuns(t *testing.T, runs []orderRun, desk *refundDesk, baseURL string) {
	t.Helper()
	const lie = "step verify: claim not confirmed within 600ms ("
	for _, r := range runs {
		id, res := r.order.ID, r.decided
		switch r.order.Failure {
		case provider.CleanLie:
			if msg := res.Error.Message; !strings.HasPrefix(msg, lie) || !strings.HasSuffix(msg, `state: "paid"`) {
				t.Errorf("order %d: message %q, want it to start %q and end with the observed state: \"paid\"", id, msg, lie)
			}
		case provider.None:
			if polls := attemptsOf(res, "verify"); polls < 2 {
				t.Errorf("order %d: the verification read the record %d time(s); a refund that settles after %s needs more",
					id, polls, settleDelay)
			}
		}
		keys := desk.keysOf(id)
		switch {
		case r.order.Failure == provider.OutOfStock:
			if len(keys) != 0 {
				t.Errorf("order %d: refund requests with keys %q after the inventory refused it", id, keys)
			}
		case len(keys) != 1 || keys[0] != res.OperationID:
			t.Errorf("order %d: refund requests with Idempotency-Key %q, want one, keyed by the run's id %q", id, keys, res.OperationID)
		}
		if isRefunded(t, baseURL, id) {
			t.Errorf("order %d is still refunded after its run: the clean-up did not revert it", id)
		}
	}
}

// attemptsOf counts the attempts res made at step.
func attemptsOf(res results.Result, step string) int {
	n := 0
	for _, a := range res.Attempts {
		if a.Step == step {
			n++
		}
	}
	return n
}

// refundRequests reads the provider's refund request count of each order,
// in the order of seeded.
func refundRequests(o *provider.Orders, seeded []provider.OrderCase) []int {
	out := make([]int, len(seeded))
	for i, c := range seeded {
		out[i] = o.RefundRequests(c.ID)
	}
	return out
}

// refundDesk serves the order-support provider and records, for the
// score, what only the traffic shows: the Idempotency-Key of each refund
// request by order, and whether an order was refunded when its clean-up
// came to revert it (after the clean-up every order reads paid again).
type refundDesk struct {
	inner http.Handler

	mu       sync.Mutex
	keys     map[int][]string
	refunded map[int]bool
}

func (d *refundDesk) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys, d.refunded = map[int][]string{}, map[int]bool{}
}

func (d *refundDesk) keysOf(order int) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.keys[order])
}

func (d *refundDesk) refundedAtCleanup(order int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refunded[order]
}

func (d *refundDesk) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/refunds":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			OrderID int `json:"order_id"`
		}
		if json.Unmarshal(body, &req) == nil {
			d.mu.Lock()
			d.keys[req.OrderID] = append(d.keys[req.OrderID], r.Header.Get("Idempotency-Key"))
			d.mu.Unlock()
		}
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/refunds/"):
		var order, n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/refunds/"), "rf_%d_%d", &order, &n); err == nil {
			rec := httptest.NewRecorder()
			d.inner.ServeHTTP(rec, httptest.NewRequestWithContext(r.Context(), http.MethodGet, fmt.Sprintf("/orders/%d", order), nil))
			var record struct {
				State string `json:"state"`
			}
			if json.Unmarshal(rec.Body.Bytes(), &record) == nil && record.State == "refunded" {
				d.mu.Lock()
				d.refunded[order] = true
				d.mu.Unlock()
			}
		}
	}
	d.inner.ServeHTTP(w, r)
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
