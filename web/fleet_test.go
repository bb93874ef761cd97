package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// fakeFleet is a FleetStore that answers what the test sets.
type fakeFleet struct {
	mu    sync.Mutex
	fleet results.Fleet
	err   error
}

func (f *fakeFleet) Fleet(context.Context) (results.Fleet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fleet, f.err
}

// fleetFixture serves the surface of node b, a standby in a fleet where a
// leads location default under epoch 7 and c has been silent for a
// minute (more than three 10 s leases).
type fleetFixture struct {
	srv     *httptest.Server
	now     time.Time
	role    Role
	healthy error
	fleet   *fakeFleet
	mu      sync.Mutex
}

func newFleetFixture(t *testing.T, withFleet bool) *fleetFixture {
	t.Helper()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	started := now.Add(-time.Hour)
	f := &fleetFixture{now: now, role: Role{Node: "b", Location: results.DefaultLocation}}
	f.fleet = &fakeFleet{fleet: results.Fleet{
		Now: now,
		Leases: []results.Lease{
			{Location: "default", Holder: "a", Epoch: 7, Expires: now.Add(8 * time.Second)},
			{Location: "eu", Holder: "e", Epoch: 2, Expires: now.Add(-time.Second)}, // lapsed
		},
		Nodes: []results.FleetNode{
			{Node: "c", Location: "default", Version: "v1.3.0", Started: started, LastSeen: now.Add(-time.Minute)},
			{Node: "b", Location: "default", Version: "v1.3.0", Started: started, LastSeen: now.Add(-2 * time.Second)},
			{Node: "a", Location: "default", Version: "v1.3.0", Started: started, LastSeen: now.Add(-time.Second)},
			{Node: "e", Location: "eu", Version: "v1.2.9", Started: started, LastSeen: now.Add(-30 * time.Second)},
		},
	}}
	deps := Deps{
		Logger: slog.New(slog.DiscardHandler),
		Healthy: func(context.Context) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.healthy
		},
		Metrics: http.NotFoundHandler(),
		Store:   emptyStore(t),
		Probes:  func() []*checks.Probe { return nil },
		Now:     func() time.Time { return now },
		Role: func() Role {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.role
		},
		Lease:   10 * time.Second,
		Started: started,
	}
	if withFleet {
		deps.Fleet = f.fleet
	}
	f.srv = httptest.NewServer(NewServer(deps))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fleetFixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestHealthzRole: /healthz is 200 on leader and standby alike and says
// which; ?role=leader is 503 not_leader on a healthy standby; an
// unhealthy instance is 503 unhealthy whatever its role.
func TestHealthzRole(t *testing.T) {
	f := newFleetFixture(t, true)
	leader := Role{Node: "a", Location: "default", Leading: true, Epoch: 7}
	standby := Role{Node: "b", Location: "default"}
	tests := []struct {
		name       string
		role       Role
		unhealthy  error
		query      string
		wantStatus int
		wantBody   string
	}{
		{"leader", leader, nil, "", 200, `{"status":"ok","role":"leader","node":"a","location":"default","epoch":7}`},
		{"standby is healthy too", standby, nil, "", 200, `{"status":"ok","role":"standby","node":"b","location":"default","epoch":0}`},
		{"leader asked for the leader", leader, nil, "?role=leader", 200, `{"status":"ok","role":"leader","node":"a","location":"default","epoch":7}`},
		{"standby asked for the leader", standby, nil, "?role=leader", 503,
			`{"error":{"code":"not_leader","message":"this instance (b) is a standby; another leads location default"}}`},
		{"unhealthy leader", leader, errors.New("store: connection refused"), "", 503,
			`{"error":{"code":"unhealthy","message":"store: connection refused"}}`},
		{"unhealthy leader asked for the leader", leader, errors.New("scheduler is stopped"), "?role=leader", 503,
			`{"error":{"code":"unhealthy","message":"scheduler is stopped"}}`},
		{"unknown role", leader, nil, "?role=primary", 400,
			`{"error":{"code":"bad_request","message":"role: want leader or nothing, got \"primary\""}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.mu.Lock()
			f.role, f.healthy = tt.role, tt.unhealthy
			f.mu.Unlock()
			status, body := f.get(t, "/healthz"+tt.query)
			if status != tt.wantStatus || strings.TrimSpace(body) != tt.wantBody {
				t.Errorf("GET /healthz%s = %d %s, want %d %s", tt.query, status, body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}

// TestAPIFleet: /api/v1/fleet lists the nodes (alive within three
// leases), each location's lease (held or lapsed) and this instance's
// role; without a fleet store it answers with this instance alone.
func TestAPIFleet(t *testing.T) {
	f := newFleetFixture(t, true)
	status, body := f.get(t, "/api/v1/fleet")
	if status != 200 {
		t.Fatalf("GET /api/v1/fleet = %d %s", status, body)
	}
	want := `{"role":"standby","node":"b","location":"default","epoch":0,"now":"2026-12-03T12:00:00.000Z","decider":null,` +
		`"nodes":[` +
		`{"node":"a","location":"default","version":"v1.3.0","started":"2026-12-03T11:00:00.000Z","last_seen":"2026-12-03T11:59:59.000Z","alive":true},` +
		`{"node":"b","location":"default","version":"v1.3.0","started":"2026-12-03T11:00:00.000Z","last_seen":"2026-12-03T11:59:58.000Z","alive":true},` +
		`{"node":"c","location":"default","version":"v1.3.0","started":"2026-12-03T11:00:00.000Z","last_seen":"2026-12-03T11:59:00.000Z","alive":false},` +
		`{"node":"e","location":"eu","version":"v1.2.9","started":"2026-12-03T11:00:00.000Z","last_seen":"2026-12-03T11:59:30.000Z","alive":true}],` +
		`"leases":[` +
		`{"location":"default","holder":"a","epoch":7,"expires":"2026-12-03T12:00:08.000Z","held":true},` +
		`{"location":"eu","holder":"e","epoch":2,"expires":"2026-12-03T11:59:59.000Z","held":false}]}`
	if strings.TrimSpace(body) != want {
		t.Errorf("GET /api/v1/fleet =\n%s\nwant\n%s", body, want)
	}

	f.fleet.mu.Lock()
	f.fleet.fleet.Leases = []results.Lease{{Location: "default", Epoch: 3, Expires: f.now.Add(-time.Minute)}}
	f.fleet.mu.Unlock()
	if _, body := f.get(t, "/api/v1/fleet"); !strings.Contains(body, `"leases":[{"location":"default","holder":null,"epoch":3,"expires":"2026-12-03T11:59:00.000Z","held":false}]`) {
		t.Errorf("a lease nobody holds: %s", body)
	}
	f.fleet.mu.Lock()
	f.fleet.fleet.Leases = []results.Lease{{Location: "default", Epoch: 4}}
	f.fleet.mu.Unlock()
	if _, body := f.get(t, "/api/v1/fleet"); !strings.Contains(body, `"leases":[{"location":"default","holder":null,"epoch":4,"expires":null,"held":false}]`) {
		t.Errorf("a released lease: %s", body)
	}

	f.fleet.mu.Lock()
	f.fleet.err = errors.New("dial tcp 10.0.0.5:5432: connection refused")
	f.fleet.mu.Unlock()
	if status, body := f.get(t, "/api/v1/fleet"); status != 500 || strings.TrimSpace(body) != `{"error":{"code":"store_error","message":"reading the fleet failed"}}` {
		t.Errorf("store down: GET /api/v1/fleet = %d %s, want 500 store_error without the store's address", status, body)
	}
	if status, body := f.get(t, "/api/v1/fleet?node=a"); status != 400 || !strings.Contains(body, `unknown query parameter \"node\"; /api/v1/fleet takes no query parameters`) {
		t.Errorf("GET /api/v1/fleet?node=a = %d %s, want 400 naming the parameter", status, body)
	}
}

// TestAPIFleetSingleInstance: a store without a fleet (SQLite) gives the
// one instance, alive, leading without a lease.
func TestAPIFleetSingleInstance(t *testing.T) {
	f := newFleetFixture(t, false)
	f.role = Role{Node: "solo", Location: "default", Leading: true}
	status, body := f.get(t, "/api/v1/fleet")
	var got struct {
		Role, Node string
		Epoch      int64
		Nodes      []struct {
			Node, Location, Version, Started, LastSeen string
			Alive                                      bool
		}
		Leases []json.RawMessage
	}
	if err := json.Unmarshal([]byte(body), &got); status != 200 || err != nil {
		t.Fatalf("GET /api/v1/fleet = %d %s (%v)", status, body, err)
	}
	if got.Role != "leader" || got.Node != "solo" || got.Epoch != 0 || got.Leases == nil || len(got.Leases) != 0 {
		t.Errorf("single instance: %s, want leader solo, epoch 0, leases []", body)
	}
	if len(got.Nodes) != 1 || got.Nodes[0].Node != "solo" || !got.Nodes[0].Alive || got.Nodes[0].Started != "2026-12-03T11:00:00.000Z" ||
		got.Nodes[0].Version != results.ReadBuild().Label() || got.Nodes[0].Location != "default" {
		t.Errorf("single instance: nodes %+v, want solo alone, alive, started an hour ago", got.Nodes)
	}
}

var fleetRow = regexp.MustCompile(`<tr class="node" data-node="([^"]+)" data-role="([^"]+)"( data-silent)?( data-decider)?>`)

// TestStatusFleetSection: the overview shows the fleet (who leads, under
// which epoch, each node's last heartbeat, a node silent for more than
// three leases marked so, a location nobody leads) only when there is a
// fleet store; a fleet that cannot be read is said, and the page stands.
func TestStatusFleetSection(t *testing.T) {
	f := newFleetFixture(t, true)
	status, page := f.get(t, "/")
	if status != 200 {
		t.Fatalf("GET / = %d", status)
	}
	var rows []string
	for _, m := range fleetRow.FindAllStringSubmatch(page, -1) {
		rows = append(rows, m[1]+" "+m[2]+m[3]+m[4])
	}
	if got, want := strings.Join(rows, ", "), "a leader, b standby, c standby data-silent, e standby"; got != want {
		t.Errorf("fleet rows = %s, want %s", got, want)
	}
	for _, want := range []string{
		`<h2 id="fleet">Fleet</h2>`,
		`<td><strong>leader</strong></td>
<td>7</td>`,
		`<span class="name">b</span> <span class="caption">(this instance)</span>`,
		`<time datetime="2026-12-03T11:59:00.000Z" title="2026-12-03T11:59:00.000Z">1m ago</time> <span class="badge silent">silent for 1m</span>`,
		`No instance leads location <code>eu</code>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	if strings.Contains(page, "(this instance)</span></td>\n<td>default</td>\n<td><strong>leader") {
		t.Error("the standby serving the page is shown as the leader")
	}
	if n := strings.Count(page, `badge silent`); n != 1 {
		t.Errorf("%d nodes marked silent, want 1 (c)", n)
	}

	f.fleet.mu.Lock()
	f.fleet.err = errors.New("connection refused")
	f.fleet.mu.Unlock()
	status, page = f.get(t, "/")
	if status != 200 || !strings.Contains(page, `<p class="warning">The fleet could not be read from the store.</p>`) {
		t.Errorf("fleet unreadable: GET / = %d, want 200 saying so", status)
	}

	single := newFleetFixture(t, false)
	if _, page := single.get(t, "/"); strings.Contains(page, "Fleet") || strings.Contains(page, `class="fleet"`) {
		t.Error("a single instance's overview has a Fleet section")
	}
}

// TestFleetDecider: /healthz, /api/v1/fleet and the status page's Fleet
// section name the instance holding the decider's lease and its epoch;
// the lease is not a location nobody leads; a lapsed decider's lease is
// said, a released one (no probe of several locations) is not.
func TestFleetDecider(t *testing.T) {
	f := newFleetFixture(t, true)
	setDecider := func(l results.Lease) {
		f.fleet.mu.Lock()
		defer f.fleet.mu.Unlock()
		f.fleet.fleet.Leases = append(f.fleet.fleet.Leases[:2:2], l)
	}
	setDecider(results.Lease{Location: results.DeciderLease, Holder: "c", Epoch: 3, Expires: f.now.Add(5 * time.Second)})

	if _, body := f.get(t, "/healthz"); strings.TrimSpace(body) !=
		`{"status":"ok","role":"standby","node":"b","location":"default","epoch":0,"decider":{"node":"c","epoch":3}}` {
		t.Errorf("GET /healthz with c deciding = %s", body)
	}
	if _, body := f.get(t, "/api/v1/fleet"); !strings.Contains(body, `"now":"2026-12-03T12:00:00.000Z","decider":{"node":"c","epoch":3},"nodes":`) {
		t.Errorf("GET /api/v1/fleet with c deciding = %s", body)
	}
	_, page := f.get(t, "/")
	var rows []string
	for _, m := range fleetRow.FindAllStringSubmatch(page, -1) {
		rows = append(rows, m[1]+" "+m[2]+m[3]+m[4])
	}
	if got, want := strings.Join(rows, ", "), "a leader, b standby, c standby data-silent data-decider, e standby"; got != want {
		t.Errorf("fleet rows = %s, want %s", got, want)
	}
	if want := `<td>standby, <strong class="decider">decider</strong> <span class="caption">(epoch 3)</span></td>`; !strings.Contains(page, want) {
		t.Errorf("the overview lacks %q", want)
	}
	if strings.Contains(page, "<code>"+results.DeciderLease+"</code>") || strings.Contains(page, "no-decider") {
		t.Error("the decider's lease, held, is shown as a location nobody leads or a lapsed decider")
	}

	// Lapsed: nobody decides until another takes it.
	setDecider(results.Lease{Location: results.DeciderLease, Holder: "c", Epoch: 3, Expires: f.now.Add(-time.Second)})
	if _, body := f.get(t, "/healthz"); strings.Contains(body, "decider") {
		t.Errorf("GET /healthz with the decider's lease lapsed = %s, want no decider", body)
	}
	if _, body := f.get(t, "/api/v1/fleet"); !strings.Contains(body, `"decider":null`) {
		t.Errorf("GET /api/v1/fleet with the decider's lease lapsed = %s, want decider null", body)
	}
	if _, page := f.get(t, "/"); !strings.Contains(page, `<p class="warning no-decider" role="alert">No instance decides`) ||
		strings.Contains(page, "data-decider") || strings.Contains(page, "<code>"+results.DeciderLease+"</code>") {
		t.Error("a lapsed decider's lease: the overview does not say that nobody decides, or names a decider")
	}

	// Released (the fleet's probes all run from one location): nothing to say.
	setDecider(results.Lease{Location: results.DeciderLease, Epoch: 3})
	if _, page := f.get(t, "/"); strings.Contains(page, "no-decider") || strings.Contains(page, "data-decider") {
		t.Error("a released decider's lease is shown")
	}
}
