package runner

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// restoringSender is a Sender that keeps what Restore gave it.
type restoringSender struct {
	mu       sync.Mutex
	restored []results.Alert
}

func (s *restoringSender) Send(context.Context, results.Alert) (bool, time.Duration, error) {
	return false, 0, nil
}

func (s *restoringSender) SendGroup(context.Context, results.AlertGroup) (bool, time.Duration, error) {
	return false, 0, nil
}

func (s *restoringSender) Restore(_ context.Context, alerts []results.Alert) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restored = append(s.restored, alerts...)
	return nil
}

// activeByReceiver is ActiveAlerts answering from a map, failing for the
// receivers in fail.
type activeByReceiver struct {
	alerts map[string][]results.Alert
	fail   map[string]bool
	asked  []string
}

func (a *activeByReceiver) FiringAlerts(_ context.Context, receiver string) ([]results.Alert, error) {
	a.asked = append(a.asked, receiver)
	if a.fail[receiver] {
		return nil, errors.New("store down")
	}
	return a.alerts[receiver], nil
}

// TestReceiversRestoreActive: a new decider's term gives each receiver
// that re-posts (a Restorer: Alertmanager) what the store says it was
// last told is active, a location_silent alert as a firing one; a
// receiver that does not re-post is not asked about, and one whose read
// fails does not keep the others from theirs.
func TestReceiversRestoreActive(t *testing.T) {
	firing := results.Alert{ID: 1, Kind: results.AlertFiring, Probe: "search", Receiver: "default/alertmanager"}
	silent := results.Alert{ID: 2, Kind: results.AlertLocationSilent, Probe: "search", Receiver: "default/alertmanager",
		Locations: []results.LocationView{{Location: "ap-south", Silent: true}}}
	other := results.Alert{ID: 3, Kind: results.AlertLocationSilent, Probe: "billing", Receiver: "routes[1]/alertmanager"}
	am, am1, broken := &restoringSender{}, &restoringSender{}, &restoringSender{}
	set := &receiverSet{}
	set.set(Senders{
		"default/alertmanager":   am,
		"routes[0]/alertmanager": broken,
		"routes[1]/alertmanager": am1,
		"default/slack":          &fakeSender{},
	})
	store := &activeByReceiver{
		alerts: map[string][]results.Alert{"default/alertmanager": {firing, silent}, "routes[1]/alertmanager": {other}},
		fail:   map[string]bool{"routes[0]/alertmanager": true},
	}
	set.restore(context.Background(), store, slog.New(slog.DiscardHandler))
	if want := []string{"default/alertmanager", "routes[0]/alertmanager", "routes[1]/alertmanager"}; !reflect.DeepEqual(store.asked, want) {
		t.Errorf("asked the store about %v, want %v", store.asked, want)
	}
	if !reflect.DeepEqual(am.restored, []results.Alert{firing, silent}) {
		t.Errorf("default/alertmanager restored %+v, want the firing and the location_silent alert", am.restored)
	}
	if !reflect.DeepEqual(am1.restored, []results.Alert{other}) || broken.restored != nil {
		t.Errorf("routes[1] restored %+v, routes[0] (its read failed) %+v; want billing's, nothing", am1.restored, broken.restored)
	}
}
