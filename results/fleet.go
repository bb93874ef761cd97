package results

import "time"

// SilentLeases is how many leases a node may go without a heartbeat
// before the fleet counts it gone: one missed renewal is a hiccup, three
// are an instance that stopped (or lost the store).
const SilentLeases = 3

// Alive reports whether n sent a heartbeat within SilentLeases × lease of
// the store's clock when f was read.
func (f Fleet) Alive(n FleetNode, lease time.Duration) bool {
	return f.Now.Sub(n.LastSeen) <= SilentLeases*lease
}

// Leader returns the node holding location's lease at f.Now, or "" when
// nobody does (no lease yet, or it lapsed), with the lease's epoch.
func (f Fleet) Leader(location string) (node string, epoch int64) {
	for _, l := range f.Leases {
		if l.Location == location && l.Holder != "" && l.Expires.After(f.Now) {
			return l.Holder, l.Epoch
		}
	}
	return "", 0
}
