package web

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// Role is what this instance is in its fleet at one moment, as /healthz,
// the API and the status page show it.
type Role struct {
	Node     string // fleet.node
	Location string // the location whose lease it claims
	Leading  bool   // it schedules probes and delivers alerts
	Epoch    int64  // the lease's epoch while Leading; 0 for a single instance
	// Idle: no probe runs from Location, so the instance runs nothing
	// (SPEC §13).
	Idle bool
}

// Name is "leader" or "standby".
func (r Role) Name() string {
	if r.Leading {
		return "leader"
	}
	return "standby"
}

// FleetStore is a store shared by a fleet of instances (Postgres): what it
// knows of them. Fleet's error means the store could not answer.
type FleetStore interface {
	Fleet(ctx context.Context) (results.Fleet, error)
}

// role returns what this instance is now; without deps.Role, a single
// instance that leads alone.
func (deps Deps) role() Role {
	if deps.Role == nil {
		return Role{Location: results.DefaultLocation, Leading: true}
	}
	return deps.Role()
}

// roleJSON is this instance's role as /healthz and /api/v1/fleet show it.
type roleJSON struct {
	Role     string `json:"role"` // leader or standby
	Node     string `json:"node"`
	Location string `json:"location"`
	Epoch    int64  `json:"epoch"` // 0 on a standby and on a single instance
	// Idle is true when no probe runs from the instance's location: it
	// runs nothing, leading or not. Left out otherwise.
	Idle bool `json:"idle,omitempty"`
}

func toRoleJSON(r Role) roleJSON {
	return roleJSON{Role: r.Name(), Node: r.Node, Location: r.Location, Epoch: r.Epoch, Idle: r.Idle}
}

// fleetNodeJSON is one instance as /api/v1/fleet shows it.
type fleetNodeJSON struct {
	Node     string `json:"node"`
	Location string `json:"location"`
	Version  string `json:"version"`
	Started  string `json:"started"`
	LastSeen string `json:"last_seen"`
	// Alive: its last heartbeat is within results.SilentLeases leases.
	Alive bool `json:"alive"`
}

// leaseJSON is one location's lease as /api/v1/fleet shows it.
type leaseJSON struct {
	Location string  `json:"location"`
	Holder   *string `json:"holder"` // null when nobody ever held it
	Epoch    int64   `json:"epoch"`
	Expires  *string `json:"expires"` // null once released
	// Held: the holder's lease had not lapsed when the store answered.
	Held bool `json:"held"`
}

// deciderJSON is the instance holding the decider's lease
// (results.DeciderLease) and the lease's epoch, as /healthz and
// /api/v1/fleet show it.
type deciderJSON struct {
	Node  string `json:"node"`
	Epoch int64  `json:"epoch"`
}

// deciderOf is who decides f's fleet-wide alerts at f.Now: nil when
// nobody holds the decider's lease.
func deciderOf(f results.Fleet) *deciderJSON {
	node, epoch := f.Leader(results.DeciderLease)
	if node == "" {
		return nil
	}
	return &deciderJSON{Node: node, Epoch: epoch}
}

// fleetJSON is the body of /api/v1/fleet.
type fleetJSON struct {
	roleJSON
	Now string `json:"now"` // the store's clock, which last_seen and expires are judged by
	// Decider holds the decider's lease now; null when nobody does (no
	// probe of several locations, a single instance, or a lapse).
	Decider *deciderJSON    `json:"decider"`
	Nodes   []fleetNodeJSON `json:"nodes"`
	Leases  []leaseJSON     `json:"leases"`
}

// readFleet returns the fleet as the store knows it, or, without a fleet
// store, a fleet of this instance alone (no lease: it leads without one).
func (deps Deps) readFleet(ctx context.Context, now time.Time) (results.Fleet, error) {
	if deps.Fleet == nil {
		r := deps.role()
		return results.Fleet{Now: now, Nodes: []results.FleetNode{{Node: r.Node, Location: r.Location,
			Version: results.ReadBuild().Label(), Started: deps.Started, LastSeen: now}}}, nil
	}
	return deps.Fleet.Fleet(ctx)
}

// handleFleet answers /api/v1/fleet: this instance's role, the nodes
// sharing the store and each location's lease.
func handleFleet(deps Deps) http.Handler {
	now := deps.nowFunc()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !onlyParams(w, r) {
			return
		}
		role := deps.role()
		f, err := deps.readFleet(r.Context(), now())
		if err != nil {
			deps.Logger.Error("API: reading the fleet failed", "error", err)
			writeAPIError(w, http.StatusInternalServerError, "store_error", "reading the fleet failed")
			return
		}
		out := fleetJSON{roleJSON: toRoleJSON(role), Now: results.FormatTime(f.Now), Decider: deciderOf(f),
			Nodes: []fleetNodeJSON{}, Leases: []leaseJSON{}}
		for _, n := range sortedNodes(f) {
			out.Nodes = append(out.Nodes, fleetNodeJSON{Node: n.Node, Location: n.Location, Version: n.Version,
				Started: results.FormatTime(n.Started), LastSeen: results.FormatTime(n.LastSeen),
				Alive: f.Alive(n, deps.lease())})
		}
		leases := slices.Clone(f.Leases)
		slices.SortFunc(leases, func(a, b results.Lease) int { return strings.Compare(a.Location, b.Location) })
		for _, l := range leases {
			lj := leaseJSON{Location: l.Location, Epoch: l.Epoch}
			if !l.Expires.IsZero() {
				expires := results.FormatTime(l.Expires)
				lj.Expires = &expires
			}
			if l.Holder != "" {
				lj.Holder = &l.Holder
				lj.Held = l.Expires.After(f.Now)
			}
			out.Leases = append(out.Leases, lj)
		}
		writeJSON(w, out)
	})
}

// sortedNodes returns f's nodes by location, then name.
func sortedNodes(f results.Fleet) []results.FleetNode {
	nodes := slices.Clone(f.Nodes)
	slices.SortFunc(nodes, func(a, b results.FleetNode) int {
		return cmp.Or(strings.Compare(a.Location, b.Location), strings.Compare(a.Node, b.Node))
	})
	return nodes
}

// fleetView is the status page's Fleet section.
type fleetView struct {
	Error      string // the fleet could not be read; the rest is empty
	Nodes      []fleetNodeView
	Leaderless []string // locations whose lease nobody holds now
	// DeciderLapsed: the decider's lease was held and has lapsed, not
	// been released: nobody decides the fleet-wide alerts until another
	// instance takes it.
	DeciderLapsed bool
}

type fleetNodeView struct {
	Node, Location, Version string
	Self                    bool // the instance serving the page
	Leads                   bool
	Epoch                   int64 // the lease's, while it Leads
	// Decides: it holds the decider's lease, under DeciderEpoch.
	Decides      bool
	DeciderEpoch int64
	Started      moment
	LastSeen     moment
	Silent       string // "" while heard from; else how long it has been silent
}

// fleetSection builds the Fleet section, or nil without a fleet store (a
// single instance has nothing to show there). A failed read is shown, not
// fatal: the rest of the page still stands.
func (sp *statusPages) fleetSection(ctx context.Context) *fleetView {
	if sp.deps.Fleet == nil {
		return nil
	}
	f, err := sp.deps.Fleet.Fleet(ctx)
	if err != nil {
		sp.logger.Error("status page: reading the fleet failed", "error", err)
		return &fleetView{Error: "The fleet could not be read from the store."}
	}
	self := sp.deps.role()
	v := &fleetView{}
	locations := map[string]bool{}
	for _, n := range sortedNodes(f) {
		nv := fleetNodeView{Node: n.Node, Location: n.Location, Version: n.Version, Self: n.Node == self.Node,
			Started: momentOf(f.Now, n.Started), LastSeen: momentOf(f.Now, n.LastSeen)}
		if leader, epoch := f.Leader(n.Location); leader == n.Node {
			nv.Leads, nv.Epoch = true, epoch
		}
		if decider, epoch := f.Leader(results.DeciderLease); decider == n.Node {
			nv.Decides, nv.DeciderEpoch = true, epoch
		}
		if !f.Alive(n, sp.deps.lease()) {
			nv.Silent = "silent for " + strings.TrimSuffix(ago(f.Now.Sub(n.LastSeen)), " ago")
		}
		locations[n.Location] = true
		v.Nodes = append(v.Nodes, nv)
	}
	for _, l := range f.Leases {
		if l.Location == results.DeciderLease {
			// Not a location: nobody holding it is said on its own,
			// and only when it lapsed (a fleet whose probes all run
			// from one location releases it, and needs no decider).
			v.DeciderLapsed = l.Holder != "" && !l.Expires.IsZero() && !l.Expires.After(f.Now)
			continue
		}
		locations[l.Location] = true
	}
	for loc := range locations {
		if leader, _ := f.Leader(loc); leader == "" {
			v.Leaderless = append(v.Leaderless, loc)
		}
	}
	slices.Sort(v.Leaderless)
	return v
}
