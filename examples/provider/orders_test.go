package provider

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// ordersServer serves a fresh Orders on loopback.
func ordersServer(t *testing.T) (*Orders, *httptest.Server) {
	t.Helper()
	o := NewOrders()
	srv := httptest.NewServer(o.Handler())
	t.Cleanup(srv.Close)
	return o, srv
}

// call sends one request and decodes its JSON answer; a body that is not
// JSON, or an answer without the JSON content type, fails the test.
func call(t *testing.T, method, url, body string, header http.Header) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, url, ct)
	}
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatalf("%s %s: answer is not a JSON object: %v", method, url, err)
	}
	return resp.StatusCode, got
}

// asJSON re-encodes v so answers compare as the wire shows them.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func refundBody(order int, amount float64) string {
	return fmt.Sprintf(`{"order_id": %d, "amount": %g}`, order, amount)
}

func TestSeededTable(t *testing.T) {
	orders := Seeded()
	if len(orders) != 40 {
		t.Fatalf("%d orders, want 40", len(orders))
	}
	perKind := map[Failure][]int{}
	for i, c := range orders {
		if c.ID != i+1 {
			t.Errorf("orders[%d].ID = %d, want %d", i, c.ID, i+1)
		}
		perKind[c.Failure] = append(perKind[c.Failure], c.ID)
	}
	want := map[Failure][]int{
		OutOfStock:     {7, 18, 26},
		RefundRejected: {31},
		CleanLie:       {9, 23, 38},
		TrackerOutage:  {16, 34},
	}
	for kind, ids := range want {
		if !reflect.DeepEqual(perKind[kind], ids) {
			t.Errorf("%v orders %v, want %v", kind, perKind[kind], ids)
		}
	}
	if n := len(perKind[None]); n != 31 {
		t.Errorf("%d positive controls, want 31", n)
	}
	if orders[15].Status != http.StatusServiceUnavailable || orders[33].Status != http.StatusOK {
		t.Errorf("tracker outages: order 16 status %d, order 34 status %d; want one 503 and one 200",
			orders[15].Status, orders[33].Status)
	}
	orders[0].Failure = CleanLie
	if Seeded()[0].Failure != None {
		t.Errorf("Seeded shares its table with the caller")
	}
}

func TestInventoryShapes(t *testing.T) {
	_, srv := ordersServer(t)
	tests := []struct {
		name  string
		order int
		want  string
	}{
		{"positive control", 31, `{"available":2,"sku":"SKU-1031","warehouse":"FRA-1"}`},
		{"out of stock, still 200", 7, `{"available":0,"sku":"SKU-1007","warehouse":"FRA-1"}`},
		{"a refund-failure order looks up normally", 9, `{"available":5,"sku":"SKU-1009","warehouse":"AMS-2"}`},
	}
	for _, tt := range tests {
		status, got := call(t, "GET", fmt.Sprintf("%s/orders/%d/inventory", srv.URL, tt.order), "", nil)
		if status != http.StatusOK || asJSON(t, got) != tt.want {
			t.Errorf("%s: got %d %s, want 200 %s", tt.name, status, asJSON(t, got), tt.want)
		}
	}
}

func TestRefundShapes(t *testing.T) {
	o, srv := ordersServer(t)
	tests := []struct {
		name   string
		order  int
		want   string
		state  string // the order's state afterwards
		refund any    // the order's refund_id afterwards
	}{
		{"positive control", 5,
			`{"declined":false,"error":null,"processor":{"name":"payfast","response":{"code":"00","result":"ok"}},` +
				`"refund":{"amount":12.5,"id":"rf_0005_1","order_id":5,"status":"processed"}}`,
			"refunded", "rf_0005_1"},
		{"order 31, declined with a buried ok", 31,
			`{"declined":true,"error":{"code":"issuer_declined","message":"the card issuer declined the refund"},` +
				`"processor":{"name":"payfast","response":{"code":"05","result":"ok"}},"refund":null}`,
			"paid", nil},
		{"clean lie", 9,
			`{"declined":false,"error":null,"processor":{"name":"payfast","response":{"code":"00","result":"ok"}},` +
				`"refund":{"amount":12.5,"id":"rf_0009_1","order_id":9,"status":"processed"}}`,
			"paid", nil},
	}
	for _, tt := range tests {
		status, got := call(t, "POST", srv.URL+"/refunds", refundBody(tt.order, 12.5), nil)
		if status != http.StatusOK || asJSON(t, got) != tt.want {
			t.Errorf("%s: got %d %s\nwant 200 %s", tt.name, status, asJSON(t, got), tt.want)
		}
		_, order := call(t, "GET", fmt.Sprintf("%s/orders/%d", srv.URL, tt.order), "", nil)
		wantOrder := map[string]any{"id": float64(tt.order), "state": tt.state, "refund_id": tt.refund}
		if !reflect.DeepEqual(order, wantOrder) {
			t.Errorf("%s: order afterwards %v, want %v", tt.name, order, wantOrder)
		}
		if n := o.RefundRequests(tt.order); n != 1 {
			t.Errorf("%s: RefundRequests = %d, want 1", tt.name, n)
		}
	}
	// Order 31's answer says "ok" where a reader of the one field looks,
	// and failure everywhere else.
	_, got := call(t, "POST", srv.URL+"/refunds", refundBody(31, 12.5), nil)
	buried := got["processor"].(map[string]any)["response"].(map[string]any)["result"]
	if buried != "ok" || got["declined"] != true || got["refund"] != nil || got["error"] == nil {
		t.Errorf("order 31: want a declined answer with result ok two levels down, got %s", asJSON(t, got))
	}
}

func TestRefundSettlesAfterTheDelay(t *testing.T) {
	o, srv := ordersServer(t)
	const delay = 150 * time.Millisecond
	o.SetSettleDelay(delay)
	start := time.Now()
	status, got := call(t, "POST", srv.URL+"/refunds", refundBody(12, 20), nil)
	if status != http.StatusOK || got["refund"] == nil {
		t.Fatalf("refund: %d %v", status, got)
	}
	if _, order := call(t, "GET", srv.URL+"/orders/12", "", nil); order["state"] != "paid" {
		t.Errorf("before the settle delay: state %v, want paid", order["state"])
	}
	for {
		_, order := call(t, "GET", srv.URL+"/orders/12", "", nil)
		if order["state"] == "refunded" {
			if elapsed := time.Since(start); elapsed < delay {
				t.Errorf("refunded after %v, before the settle delay %v", elapsed, delay)
			}
			if order["refund_id"] != "rf_0012_1" {
				t.Errorf("refund_id %v, want rf_0012_1", order["refund_id"])
			}
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("order 12 still %v 5s after a refund with a %v settle delay", order["state"], delay)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A clean lie never settles.
	call(t, "POST", srv.URL+"/refunds", refundBody(23, 20), nil)
	time.Sleep(2 * delay)
	if _, order := call(t, "GET", srv.URL+"/orders/23", "", nil); order["state"] != "paid" || order["refund_id"] != nil {
		t.Errorf("clean lie, after the settle delay: order %v, want paid with no refund", order)
	}
}

func TestRefundIdempotencyKey(t *testing.T) {
	o, srv := ordersServer(t)
	key := http.Header{"Idempotency-Key": {"op-1"}}
	_, first := call(t, "POST", srv.URL+"/refunds", refundBody(3, 10), key)
	status, again := call(t, "POST", srv.URL+"/refunds", refundBody(3, 10), key)
	if status != http.StatusOK || asJSON(t, again) != asJSON(t, first) {
		t.Errorf("the same key again: got %d %s, want the first answer %s", status, asJSON(t, again), asJSON(t, first))
	}
	if n := o.RefundRequests(3); n != 2 {
		t.Errorf("RefundRequests(3) = %d, want 2 (a replay is still a request)", n)
	}
	_, order := call(t, "GET", srv.URL+"/orders/3", "", nil)
	if order["refund_id"] != "rf_0003_1" {
		t.Errorf("order 3 refund_id %v, want rf_0003_1 (one refund)", order["refund_id"])
	}
	// Without a key, a second refund of a refunded order is refused.
	if status, got := call(t, "POST", srv.URL+"/refunds", refundBody(3, 10), nil); status != http.StatusConflict || got["error"] == nil {
		t.Errorf("a second refund without a key: %d %v, want 409 with an error", status, got)
	}
	// The same key for another request is refused, not replayed.
	if status, got := call(t, "POST", srv.URL+"/refunds", refundBody(4, 10), key); status != http.StatusUnprocessableEntity || got["error"] == nil {
		t.Errorf("the key reused for order 4: %d %v, want 422 with an error", status, got)
	}
	if _, order := call(t, "GET", srv.URL+"/orders/4", "", nil); order["state"] != "paid" {
		t.Errorf("order 4 after a refused key: state %v, want paid", order["state"])
	}
}

func TestCleanupRevertsARefund(t *testing.T) {
	o, srv := ordersServer(t)
	_, got := call(t, "POST", srv.URL+"/refunds", refundBody(5, 10), nil)
	id := got["refund"].(map[string]any)["id"].(string)
	status, deleted := call(t, "DELETE", srv.URL+"/refunds/"+id, "", nil)
	if want := `{"order_id":5,"refund_id":"rf_0005_1","state":"paid"}`; status != http.StatusOK || asJSON(t, deleted) != want {
		t.Errorf("DELETE: got %d %s, want 200 %s", status, asJSON(t, deleted), want)
	}
	if _, order := call(t, "GET", srv.URL+"/orders/5", "", nil); order["state"] != "paid" || order["refund_id"] != nil {
		t.Errorf("after clean-up: order %v, want paid with no refund", order)
	}
	if status, _ := call(t, "DELETE", srv.URL+"/refunds/"+id, "", nil); status != http.StatusNotFound {
		t.Errorf("DELETE twice: status %d, want 404", status)
	}
	// The next interval refunds again, with a new id.
	_, got = call(t, "POST", srv.URL+"/refunds", refundBody(5, 10), nil)
	if id := got["refund"].(map[string]any)["id"]; id != "rf_0005_2" {
		t.Errorf("refund after clean-up: id %v, want rf_0005_2", id)
	}
	// A clean lie's id is accepted, and the order stays paid.
	_, got = call(t, "POST", srv.URL+"/refunds", refundBody(9, 10), nil)
	lie := got["refund"].(map[string]any)["id"].(string)
	if status, _ := call(t, "DELETE", srv.URL+"/refunds/"+lie, "", nil); status != http.StatusOK {
		t.Errorf("DELETE of a clean lie's refund: status %d, want 200", status)
	}
	o.Reset()
	if _, order := call(t, "GET", srv.URL+"/orders/5", "", nil); order["state"] != "paid" {
		t.Errorf("after Reset: order 5 %v, want paid", order["state"])
	}
	if n := o.RefundRequests(5); n != 0 {
		t.Errorf("after Reset: RefundRequests(5) = %d, want 0", n)
	}
}

func TestTrackerShapes(t *testing.T) {
	_, srv := ordersServer(t)
	tests := []struct {
		name   string
		order  int
		status int
		want   string
	}{
		{"positive control", 31, http.StatusOK,
			`{"tracking":{"carrier":"GLS","events":[` +
				`{"at":"2026-11-21T16:00:00Z","location":"FRA-1","status":"label_created"},` +
				`{"at":"2026-11-21T22:00:00Z","location":"FRA-1","status":"picked_up"}],` +
				`"number":"GL00000031","status":"in_transit"}}`},
		{"outage, 503", 16, http.StatusServiceUnavailable, `{"message":"tracking backend unavailable"}`},
		{"outage, 200 with an error body", 34, http.StatusOK,
			`{"errors":[{"code":"CARRIER_TIMEOUT","detail":"PostNL did not answer within 5s"}],"tracking":null}`},
	}
	for _, tt := range tests {
		status, got := call(t, "GET", fmt.Sprintf("%s/shipments?order=%d", srv.URL, tt.order), "", nil)
		if status != tt.status || asJSON(t, got) != tt.want {
			t.Errorf("%s: got %d %s\nwant %d %s", tt.name, status, asJSON(t, got), tt.status, tt.want)
		}
	}
}

func TestOrdersBadInput(t *testing.T) {
	o, srv := ordersServer(t)
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"unknown order", "GET", "/orders/41", "", http.StatusNotFound},
		{"order zero", "GET", "/orders/0/inventory", "", http.StatusNotFound},
		{"order id not a number", "GET", "/orders/abc", "", http.StatusBadRequest},
		{"inventory by POST", "POST", "/orders/5/inventory", "{}", http.StatusMethodNotAllowed},
		{"order record by DELETE", "DELETE", "/orders/5", "", http.StatusMethodNotAllowed},
		{"refunds by GET", "GET", "/refunds", "", http.StatusMethodNotAllowed},
		{"refund with bad JSON", "POST", "/refunds", `{"order_id": 5,`, http.StatusBadRequest},
		{"refund with two objects", "POST", "/refunds", refundBody(5, 10) + refundBody(6, 10), http.StatusBadRequest},
		{"refund with an unknown field", "POST", "/refunds", `{"order_id": 5, "amount": 10, "reason": "x"}`, http.StatusBadRequest},
		{"refund without an amount", "POST", "/refunds", `{"order_id": 5}`, http.StatusBadRequest},
		{"refund without an order", "POST", "/refunds", `{"amount": 10}`, http.StatusBadRequest},
		{"refund of an unknown order", "POST", "/refunds", refundBody(99, 10), http.StatusNotFound},
		{"refund of a negative amount", "POST", "/refunds", refundBody(5, -1), http.StatusUnprocessableEntity},
		{"refund above the order total", "POST", "/refunds", refundBody(5, 500), http.StatusUnprocessableEntity},
		{"shipments without an order", "GET", "/shipments", "", http.StatusBadRequest},
		{"shipments of an unknown order", "GET", "/shipments?order=41", "", http.StatusNotFound},
		{"shipments of a non-number", "GET", "/shipments?order=x", "", http.StatusBadRequest},
		{"cleanup of an unknown refund", "DELETE", "/refunds/rf_9999_1", "", http.StatusNotFound},
		{"an unknown route", "GET", "/orders", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		status, got := call(t, tt.method, srv.URL+tt.path, tt.body, nil)
		if msg, _ := got["error"].(string); status != tt.want || msg == "" {
			t.Errorf("%s: got %d %v, want %d with an error message", tt.name, status, got, tt.want)
		}
	}
	if _, order := call(t, "GET", srv.URL+"/orders/5", "", nil); order["state"] != "paid" {
		t.Errorf("after refused refunds: order 5 %v, want paid", order["state"])
	}
	// Refused bodies never reached an order; the amount checks did.
	if n := o.RefundRequests(5); n != 2 {
		t.Errorf("RefundRequests(5) = %d, want 2 (the two refused amounts)", n)
	}
}

// TestOrdersConcurrentRefunds sends the same keyed refund from many
// goroutines at once: exactly one refund comes of it, under -race.
func TestOrdersConcurrentRefunds(t *testing.T) {
	o, srv := ordersServer(t)
	const n = 16
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", srv.URL+"/refunds", strings.NewReader(refundBody(8, 10)))
			req.Header.Set("Idempotency-Key", "same")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var body struct {
				Refund struct{ ID string } `json:"refund"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			ids[i] = body.Refund.ID
		})
	}
	wg.Wait()
	for i, id := range ids {
		if id != "rf_0008_1" {
			t.Errorf("request %d: refund id %q, want rf_0008_1", i, id)
		}
	}
	if got := o.RefundRequests(8); got != n {
		t.Errorf("RefundRequests(8) = %d, want %d", got, n)
	}
}

// TestSetLying: an order made to lie answers a refund exactly as a real
// one, and stays paid; set back, it refunds for real again.
func TestSetLying(t *testing.T) {
	o, srv := ordersServer(t)
	o.SetLying(12, true)
	_, lie := call(t, "POST", srv.URL+"/refunds", refundBody(12, 10), nil)
	if lie["declined"] != false || lie["refund"].(map[string]any)["status"] != "processed" {
		t.Errorf("a lying refund answers %s, want a well-formed success", asJSON(t, lie))
	}
	if _, order := call(t, "GET", srv.URL+"/orders/12", "", nil); order["state"] != "paid" {
		t.Errorf("after a lying refund: order %v, want paid", order)
	}
	o.SetLying(12, false)
	_, real := call(t, "POST", srv.URL+"/refunds", refundBody(12, 10), nil)
	id := real["refund"].(map[string]any)["id"]
	if _, order := call(t, "GET", srv.URL+"/orders/12", "", nil); order["state"] != "refunded" || order["refund_id"] != id {
		t.Errorf("after a real refund: order %v, want refunded by %v", order, id)
	}
}

// TestMux: the whole example provider answers both the provider's
// endpoints and the order tools.
func TestMux(t *testing.T) {
	srv := httptest.NewServer(Mux(New(), NewOrders()))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/orders/12", "/shipments?order=12", "/runs?config=cfg-9f2c"} {
		if status, _ := call(t, "GET", srv.URL+path, "", nil); status != http.StatusOK {
			t.Errorf("GET %s: status %d", path, status)
		}
	}
}
