package results

import "time"

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
