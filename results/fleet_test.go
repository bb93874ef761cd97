package results

import (
	"testing"
	"time"
)

func TestFleetAliveAndLeader(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	const lease = 10 * time.Second
	f := Fleet{
		Now: now,
		Leases: []Lease{
			{Location: "default", Holder: "a", Epoch: 7, Expires: now.Add(4 * time.Second)},
			{Location: "eu", Holder: "e", Epoch: 2, Expires: now}, // lapsed at now
			{Location: "us", Epoch: 3, Expires: now.Add(time.Minute)},
		},
	}
	for _, tt := range []struct {
		ago  time.Duration
		want bool
	}{{0, true}, {SilentLeases * lease, true}, {SilentLeases*lease + time.Millisecond, false}, {-time.Second, true}} {
		if got := f.Alive(FleetNode{LastSeen: now.Add(-tt.ago)}, lease); got != tt.want {
			t.Errorf("Alive(last seen %v ago) = %v, want %v", tt.ago, got, tt.want)
		}
	}
	for _, tt := range []struct {
		location string
		node     string
		epoch    int64
	}{{"default", "a", 7}, {"eu", "", 0}, {"us", "", 0}, {"nowhere", "", 0}} {
		if node, epoch := f.Leader(tt.location); node != tt.node || epoch != tt.epoch {
			t.Errorf("Leader(%q) = %q, %d; want %q, %d", tt.location, node, epoch, tt.node, tt.epoch)
		}
	}
}
