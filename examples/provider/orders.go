package provider

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file is seed 002's order-support back end: 40 synthetic orders
// behind three tools that were never designed together, each with its own
// ad hoc answer (none of them the {status, data, error, tool_name,
// schema_version} envelope), and an order record an observer can read
// independently of what the tools claim. The injected failures are in
// seededOrders; the endpoints and their shapes are documented on
// Orders.Handler.

// Failure is the failure injected into one order, if any.
type Failure int

// The injected failures. Each lives in exactly one tool (Failure.Tool).
const (
	// None: a positive control; every tool answers truthfully, and a
	// refund really refunds the order.
	None Failure = iota
	// OutOfStock: the inventory lookup answers 200 with "available": 0.
	OutOfStock
	// RefundRejected: the refund processor declines the order in a
	// top-level object that as a whole means failure (declined, an error,
	// no refund) while "result": "ok" sits two levels down, in
	// processor.response.
	RefundRejected
	// CleanLie: the refund processor answers a well-formed success with a
	// refund id, exactly as for a real refund, and the order stays paid.
	CleanLie
	// TrackerOutage: the shipping tracker fails, either with a 503 or
	// with a 200 whose ad hoc body carries an error and no tracking
	// (OrderCase.Status says which).
	TrackerOutage
)

// Tool names the tool a failure is injected into: "inventory", "refund",
// "tracker", or "" for None.
func (f Failure) Tool() string {
	switch f {
	case OutOfStock:
		return "inventory"
	case RefundRejected, CleanLie:
		return "refund"
	case TrackerOutage:
		return "tracker"
	}
	return ""
}

// String returns the failure's snake_case name.
func (f Failure) String() string {
	switch f {
	case None:
		return "none"
	case OutOfStock:
		return "out_of_stock"
	case RefundRejected:
		return "refund_rejected"
	case CleanLie:
		return "clean_lie"
	case TrackerOutage:
		return "tracker_outage"
	}
	return "failure(" + strconv.Itoa(int(f)) + ")"
}

// OrderCase is one synthetic order and the failure injected into it: the
// ground truth an experiment scores a probe against.
type OrderCase struct {
	ID        int
	SKU       string
	Warehouse string
	Carrier   string
	Amount    float64 // the order total, the most a refund may return
	Failure   Failure
	// Status is the HTTP status of the failing tool's answer: 200 for
	// every injected failure except the tracker outage that answers 503.
	Status int
}

// seededOrders is the table of the 40 orders. Nine carry an injected
// failure, the rest are positive controls:
//
//	order  failure          where      what the tool answers
//	 7     out_of_stock     inventory  200 {"available": 0, ...}
//	 9     clean_lie        refund     200 well-formed success, order stays paid
//	16     tracker_outage   tracker    503 {"message": ...}
//	18     out_of_stock     inventory  200 {"available": 0, ...}
//	23     clean_lie        refund     200 well-formed success, order stays paid
//	26     out_of_stock     inventory  200 {"available": 0, ...}
//	31     refund_rejected  refund     200 declined, with "result": "ok" in processor.response
//	34     tracker_outage   tracker    200 {"tracking": null, "errors": [...]}
//	38     clean_lie        refund     200 well-formed success, order stays paid
var seededOrders = func() []OrderCase {
	injected := map[int]struct {
		failure Failure
		status  int
	}{
		7:  {OutOfStock, http.StatusOK},
		9:  {CleanLie, http.StatusOK},
		16: {TrackerOutage, http.StatusServiceUnavailable},
		18: {OutOfStock, http.StatusOK},
		23: {CleanLie, http.StatusOK},
		26: {OutOfStock, http.StatusOK},
		31: {RefundRejected, http.StatusOK},
		34: {TrackerOutage, http.StatusOK},
		38: {CleanLie, http.StatusOK},
	}
	warehouses := []string{"AMS-2", "FRA-1", "MAD-3"}
	carriers := []string{"DHL", "UPS", "PostNL", "GLS"}
	orders := make([]OrderCase, 40)
	for i := range orders {
		id := i + 1
		c := OrderCase{
			ID:        id,
			SKU:       fmt.Sprintf("SKU-%04d", 1000+id),
			Warehouse: warehouses[id%len(warehouses)],
			Carrier:   carriers[id%len(carriers)],
			Amount:    float64(1000+id*125) / 100, // 11.25 … 60.00
			Status:    http.StatusOK,
		}
		if f, ok := injected[id]; ok {
			c.Failure, c.Status = f.failure, f.status
		}
		orders[i] = c
	}
	return orders
}()

// Seeded returns the 40 orders in id order (ids 1 to 40) with their
// injected failures. The slice is a copy.
func Seeded() []OrderCase { return append([]OrderCase(nil), seededOrders...) }

// refund is one refund the processor has answered with a refund id: a real
// one, or a clean lie that never touched the order.
type refund struct {
	id      string
	order   int
	amount  float64
	real    bool
	settles time.Time // when a real refund becomes visible on the order
}

// idempotent is the answer a refund request with an Idempotency-Key got,
// replayed for every later request with the same key.
type idempotent struct {
	order  int
	amount float64
	status int
	body   any
}

// Orders serves seed 002's three tools and the order records. All state is
// in memory and deterministic: refund ids count up per order, nothing is
// random. It is safe for concurrent use.
type Orders struct {
	mu          sync.Mutex
	settleDelay time.Duration
	// refundOf is each order's refund in force (a real one), by order id.
	refundOf map[int]*refund
	// refunds holds every refund id answered and not reverted, real or a
	// lie.
	refunds map[string]*refund
	// issued counts the refund ids answered per order, for the next id.
	issued map[int]int
	// requests counts POST /refunds requests per order, replays included.
	requests map[int]int
	keys     map[string]idempotent
	// lying lists the orders whose refunds are clean lies on top of the
	// seeded ones (SetLying).
	lying map[int]bool
}

// NewOrders returns the order-support provider with every order paid and
// no settle delay.
func NewOrders() *Orders {
	o := &Orders{}
	o.reset()
	return o
}

// Reset puts every order back to paid and forgets every refund, request
// count and idempotency key. The settle delay is kept.
func (o *Orders) Reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reset()
}

func (o *Orders) reset() {
	o.refundOf = map[int]*refund{}
	o.refunds = map[string]*refund{}
	o.issued = map[int]int{}
	o.requests = map[int]int{}
	o.keys = map[string]idempotent{}
}

// SetLying makes the refund processor lie cleanly about order id from now
// on (lie true): a well-formed success, a refund id, and the order stays
// paid, as for the seeded clean lies; false restores the order's seeded
// behaviour. toolpulse demo uses it to show a verification catching one.
func (o *Orders) SetLying(id int, lie bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lying == nil {
		o.lying = map[int]bool{}
	}
	o.lying[id] = lie
}

// SetSettleDelay makes a real refund visible on GET /orders/{id} only d
// after the processor answered, as a payment system that settles
// asynchronously would, so that a verification has to poll. The processor's
// own answer is immediate either way.
func (o *Orders) SetSettleDelay(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.settleDelay = d
}

// RefundRequests returns how many POST /refunds requests named the order,
// replays of an idempotency key and rejected requests included: the count
// a test reads to prove a refund was not sent twice.
func (o *Orders) RefundRequests(order int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requests[order]
}

// Handler returns the order-support routes. Every answer is JSON; bad
// input (an unknown order or route, a malformed id or body, a wrong method)
// is a 4xx with {"error": "..."}.
//
// Inventory lookup:
//
//	GET /orders/{id}/inventory
//	200 {"sku": "SKU-1031", "available": 2, "warehouse": "FRA-1"}
//	out of stock: the same with "available": 0, still 200
//
// Refund processor (an Idempotency-Key header makes a retry safe: the same
// key replays the first answer without a second refund; the same key with
// another body is a 422):
//
//	POST /refunds {"order_id": 31, "amount": 42.5}
//	200 {"processor": {"name": "payfast", "response": {"result": "ok", "code": "00"}},
//	     "declined": false, "error": null,
//	     "refund": {"id": "rf_0031_1", "order_id": 31, "amount": 42.5, "status": "processed"}}
//	order 31: 200 {"processor": {"name": "payfast", "response": {"result": "ok", "code": "05"}},
//	     "declined": true, "error": {"code": "issuer_declined", "message": "..."}, "refund": null}
//	clean lie: the success answer, while the order stays paid
//	409 when the order is already refunded; 422 for an amount not in (0, total]
//
// Order record, the independently observable artifact (a real refund shows
// after the settle delay):
//
//	GET /orders/{id}
//	200 {"id": 31, "state": "paid", "refund_id": null}
//	200 {"id": 31, "state": "refunded", "refund_id": "rf_0031_1"}
//
// Shipping tracker:
//
//	GET /shipments?order=31
//	200 {"tracking": {"carrier": "GLS", "number": "GL00000031", "status": "in_transit",
//	     "events": [{"at": "2026-11-21T16:00:00Z", "status": "label_created", "location": "FRA-1"}, ...]}}
//	outage: 503 {"message": "tracking backend unavailable"}
//	outage: 200 {"tracking": null, "errors": [{"code": "CARRIER_TIMEOUT", "detail": "..."}]}
//
// Clean-up, so a probe can refund every interval:
//
//	DELETE /refunds/{id}
//	200 {"refund_id": "rf_0031_1", "order_id": 31, "state": "paid"}
//	404 for a refund id the processor never answered
func (o *Orders) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/orders/{id}/inventory", only(http.MethodGet, o.inventory))
	mux.HandleFunc("/orders/{id}", only(http.MethodGet, o.order))
	mux.HandleFunc("/refunds", only(http.MethodPost, o.refund))
	mux.HandleFunc("/refunds/{id}", only(http.MethodDelete, o.cancelRefund))
	mux.HandleFunc("/shipments", only(http.MethodGet, o.shipments))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route "+r.URL.Path)
	})
	return mux
}

// only answers a method other than method with a JSON 405 (the mux's own
// 405 is plain text). GET also serves HEAD, as the mux's GET patterns do.
func only(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed here; use "+method)
			return
		}
		h(w, r)
	}
}

func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]any{"error": message})
}

// lookup finds the order an id names, answering 400 or 404 itself when
// there is none.
func lookup(w http.ResponseWriter, raw string) (OrderCase, bool) {
	id, err := strconv.Atoi(raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("order id %q is not an integer", raw))
		return OrderCase{}, false
	}
	if id < 1 || id > len(seededOrders) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no order %d", id))
		return OrderCase{}, false
	}
	return seededOrders[id-1], true
}

func (o *Orders) inventory(w http.ResponseWriter, r *http.Request) {
	c, ok := lookup(w, r.PathValue("id"))
	if !ok {
		return
	}
	available := 1 + c.ID%5
	if c.Failure == OutOfStock {
		available = 0
	}
	writeJSON(w, http.StatusOK, map[string]any{"sku": c.SKU, "available": available, "warehouse": c.Warehouse})
}

func (o *Orders) order(w http.ResponseWriter, r *http.Request) {
	c, ok := lookup(w, r.PathValue("id"))
	if !ok {
		return
	}
	o.mu.Lock()
	rf := o.refundOf[c.ID]
	now := time.Now()
	o.mu.Unlock()
	body := map[string]any{"id": c.ID, "state": "paid", "refund_id": nil}
	if rf != nil && !now.Before(rf.settles) {
		body["state"], body["refund_id"] = "refunded", rf.id
	}
	writeJSON(w, http.StatusOK, body)
}

// refundRequest is the body of POST /refunds. Both fields are pointers so
// that a missing one is told apart from zero.
type refundRequest struct {
	OrderID *int     `json:"order_id"`
	Amount  *float64 `json:"amount"`
}

func (o *Orders) refund(w http.ResponseWriter, r *http.Request) {
	var req refundRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.Decode(&struct{}{}) != io.EOF {
		writeError(w, http.StatusBadRequest, `body must be one JSON object {"order_id": int, "amount": number}`)
		return
	}
	if req.OrderID == nil || req.Amount == nil {
		writeError(w, http.StatusBadRequest, "order_id and amount are required")
		return
	}
	c, ok := lookup(w, strconv.Itoa(*req.OrderID))
	if !ok {
		return
	}
	status, body := o.refundOnce(c, *req.Amount, strings.TrimSpace(r.Header.Get("Idempotency-Key")))
	writeJSON(w, status, body)
}

// refundOnce counts a refund request for c and answers it: a replay of
// the first answer when key was seen before with the same request, a 422
// when it was seen with another, a new decision otherwise.
func (o *Orders) refundOnce(c OrderCase, amount float64, key string) (int, any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests[c.ID]++
	if prev, seen := o.keys[key]; key != "" && seen {
		if prev.order != c.ID || prev.amount != amount {
			return http.StatusUnprocessableEntity, map[string]any{
				"error": "Idempotency-Key " + key + " was used for another refund request"}
		}
		return prev.status, prev.body
	}
	status, body := o.decide(c, amount)
	if key != "" {
		o.keys[key] = idempotent{order: c.ID, amount: amount, status: status, body: body}
	}
	return status, body
}

// decide answers one new refund request for c and applies it. The caller
// holds o.mu.
func (o *Orders) decide(c OrderCase, amount float64) (int, any) {
	if amount <= 0 || amount > c.Amount {
		return http.StatusUnprocessableEntity, map[string]any{
			"error": fmt.Sprintf("amount must be more than 0 and at most the order total %.2f", c.Amount)}
	}
	if rf := o.refundOf[c.ID]; rf != nil {
		return http.StatusConflict, map[string]any{
			"error": fmt.Sprintf("order %d is already refunded (%s)", c.ID, rf.id)}
	}
	if c.Failure == RefundRejected {
		return http.StatusOK, map[string]any{
			"processor": map[string]any{"name": "payfast", "response": map[string]any{"result": "ok", "code": "05"}},
			"declined":  true,
			"error":     map[string]any{"code": "issuer_declined", "message": "the card issuer declined the refund"},
			"refund":    nil,
		}
	}
	o.issued[c.ID]++
	rf := &refund{
		id:      fmt.Sprintf("rf_%04d_%d", c.ID, o.issued[c.ID]),
		order:   c.ID,
		amount:  amount,
		real:    c.Failure != CleanLie && !o.lying[c.ID],
		settles: time.Now().Add(o.settleDelay),
	}
	o.refunds[rf.id] = rf
	if rf.real {
		o.refundOf[c.ID] = rf
	}
	return http.StatusOK, map[string]any{
		"processor": map[string]any{"name": "payfast", "response": map[string]any{"result": "ok", "code": "00"}},
		"declined":  false,
		"error":     nil,
		"refund":    map[string]any{"id": rf.id, "order_id": c.ID, "amount": amount, "status": "processed"},
	}
}

// cancelRefund reverts a refund. A clean lie's id is accepted too: the
// processor keeps its story straight, and the order was paid all along.
func (o *Orders) cancelRefund(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	order, ok := o.revert(id)
	if !ok {
		writeError(w, http.StatusNotFound, "no refund "+id)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"refund_id": id, "order_id": order, "state": "paid"})
}

// revert forgets the refund id and, when it is the order's refund in force,
// puts the order back to paid. It reports the order, and false for an id
// the processor never answered (or already reverted).
func (o *Orders) revert(id string) (order int, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	rf, ok := o.refunds[id]
	if !ok {
		return 0, false
	}
	delete(o.refunds, id)
	if o.refundOf[rf.order] == rf {
		delete(o.refundOf, rf.order)
	}
	return rf.order, true
}

// trackingEpoch anchors the tracker's event times, so answers are the same
// on every run.
var trackingEpoch = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

func (o *Orders) shipments(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("order")
	if raw == "" {
		writeError(w, http.StatusBadRequest, "query parameter order is required")
		return
	}
	c, ok := lookup(w, raw)
	if !ok {
		return
	}
	if c.Failure == TrackerOutage {
		if c.Status != http.StatusOK {
			writeJSON(w, c.Status, map[string]any{"message": "tracking backend unavailable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"tracking": nil,
			"errors":   []any{map[string]any{"code": "CARRIER_TIMEOUT", "detail": c.Carrier + " did not answer within 5s"}},
		})
		return
	}
	shipped := trackingEpoch.Add(time.Duration(c.ID) * time.Hour)
	events := []any{
		map[string]any{"at": shipped.Format(time.RFC3339), "status": "label_created", "location": c.Warehouse},
		map[string]any{"at": shipped.Add(6 * time.Hour).Format(time.RFC3339), "status": "picked_up", "location": c.Warehouse},
	}
	writeJSON(w, http.StatusOK, map[string]any{"tracking": map[string]any{
		"carrier": c.Carrier,
		"number":  fmt.Sprintf("%s%08d", strings.ToUpper(c.Carrier[:2]), c.ID),
		"status":  "in_transit",
		"events":  events,
	}})
}

// Mux serves the whole example provider: p's search, tracker and MCP
// endpoints, and o's order tools on their paths (/orders/, /refunds,
// /refunds/, /shipments).
func Mux(p *Provider, o *Orders) http.Handler {
	mux := http.NewServeMux()
	h := o.Handler()
	for _, path := range []string{"/orders/", "/refunds", "/refunds/", "/shipments"} {
		mux.Handle(path, h)
	}
	mux.Handle("/", p.Handler())
	return mux
}
