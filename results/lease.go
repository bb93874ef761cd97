package results

import (
	"errors"
	"time"
)

// DefaultLocation is the location of an instance whose config names none,
// and of every run recorded before locations existed.
const DefaultLocation = "default"

// LocationOrDefault is location named, as a store keeps it:
// DefaultLocation for "" (see Result.Location).
func LocationOrDefault(location string) string {
	if location == "" {
		return DefaultLocation
	}
	return location
}

// ResultLocation is a stored location as Result.Location holds it: ""
// for DefaultLocation.
func ResultLocation(stored string) string {
	if stored == DefaultLocation {
		return ""
	}
	return stored
}

// A Lease is who leads a location's instances (SPEC §12): the node that
// holds it, the fencing epoch it holds it under, and when it lapses unless
// renewed. A new holder always gets a higher epoch than any before, so a
// write tagged with an older epoch can be refused.
type Lease struct {
	Location string
	Holder   string // "" when nobody holds it
	Epoch    int64
	Expires  time.Time // by the store's clock
}

// A Fence is the leadership a write claims: location's lease under Epoch.
// A store that keeps leases refuses the write (ErrFenced) unless that
// lease is still held under Epoch when it commits. The zero Fence claims
// none: the write of a single instance, which has no lease to lose.
type Fence struct {
	Location string
	Epoch    int64
}

// Fenced reports whether f claims a lease.
func (f Fence) Fenced() bool { return f.Epoch > 0 }

// ErrFenced is a write refused because a newer epoch holds the lease it
// claims: its writer was deposed, and what it decided is not its to
// record. It is permanent for that fence.
var ErrFenced = errors.New("results: refused: a newer leader holds the lease")

// A FleetNode is one instance pointed at the store, as its heartbeats
// left it (SPEC §12).
type FleetNode struct {
	Node     string
	Location string
	Version  string
	Started  time.Time // when the instance started
	LastSeen time.Time // its last heartbeat, by the store's clock
}

// Fleet is what a store knows of the instances sharing it: each
// location's lease, every node that has sent a heartbeat, and the store's
// clock when it answered (against which Lease.Expires and LastSeen are
// judged).
type Fleet struct {
	Now    time.Time
	Leases []Lease
	Nodes  []FleetNode
}
