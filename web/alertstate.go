package web

import (
	"context"
	"fmt"
	"time"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// probeAlert is what the status page and the API say of a probe's
// alerting: whether it is firing and since when, when it was last
// notified, and where its last message is in the outbox.
type probeAlert struct {
	Firing         bool          `json:"firing"`
	FailingSince   string        `json:"failing_since,omitempty"`    // RFC 3339; "" while passing
	LastNotifiedAt string        `json:"last_notified_at,omitempty"` // the last firing, reminder or update
	LastMessage    *alertMessage `json:"last_message"`               // null before the first alert
	// Flapping: the probe's verdict changes too often (notify.flapping),
	// and its alerts wait until it is stable; since FlappingSince.
	Flapping      bool   `json:"flapping"`
	FlappingSince string `json:"flapping_since,omitempty"` // RFC 3339; "" while not flapping
}

// alertMessage is a probe's newest alert and its delivery.
type alertMessage struct {
	Kind results.AlertKind `json:"kind"`
	// Receiver is the receiver key it was for ("default/slack"); "" for
	// one recorded skipped, for no receiver.
	Receiver    string `json:"receiver,omitempty"`
	CreatedAt   string `json:"created_at"`
	Delivery    string `json:"delivery"` // delivered, retrying, pending, failed or skipped
	Tries       int    `json:"tries"`
	DeliveredAt string `json:"delivered_at,omitempty"`
	LastError   string `json:"last_error,omitempty"` // secrets scrubbed when it was stored
}

// deliveryWord says where an alert is: "retrying" is a pending alert that
// has already failed once, so an operator tells a message on its way from
// one the receiver keeps refusing.
func deliveryWord(a results.Alert) string {
	if a.State == results.DeliveryPending && a.DeliveryTries > 0 {
		return "retrying"
	}
	return string(a.State)
}

// readAlerts reads the alert state and the newest alert of each of names.
func readAlerts(ctx context.Context, store Store, names []string) (map[string]probeAlert, error) {
	states, err := store.AlertStates(ctx)
	if err != nil {
		return nil, fmt.Errorf("alert states: %w", err)
	}
	latest, err := store.LatestAlerts(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("latest alerts: %w", err)
	}
	out := make(map[string]probeAlert, len(names))
	for _, name := range names {
		var pa probeAlert
		if st, ok := states[name]; ok {
			pa.Firing = st.Firing
			if !st.FailingSince.IsZero() {
				pa.FailingSince = results.FormatTime(st.FailingSince)
			}
			if !st.LastNotifiedAt.IsZero() {
				pa.LastNotifiedAt = results.FormatTime(st.LastNotifiedAt)
			}
			if pa.Flapping = st.Flapping; !st.FlappingSince.IsZero() {
				pa.FlappingSince = results.FormatTime(st.FlappingSince)
			}
		}
		if a, ok := latest[name]; ok {
			m := &alertMessage{Kind: a.Kind, Receiver: a.Receiver, CreatedAt: results.FormatTime(a.CreatedAt), Delivery: deliveryWord(a),
				Tries: a.DeliveryTries, LastError: a.LastError}
			if !a.DeliveredAt.IsZero() {
				m.DeliveredAt = results.FormatTime(a.DeliveredAt)
			}
			pa.LastMessage = m
		}
		out[name] = pa
	}
	return out, nil
}

// alertView is a probeAlert as the status page shows it.
type alertView struct {
	Firing   bool
	Since    *moment // when the failure began; nil while passing
	Notified *moment // the last firing, reminder or update
	Kind     string  // of the last message; "" before the first alert
	Delivery string
	Error    string
	Flapping bool
	// FlappingSince is when it started flapping; nil while it is not.
	FlappingSince *moment
}

func newAlertView(now time.Time, pa probeAlert) *alertView {
	v := &alertView{Firing: pa.Firing, Since: momentAt(now, pa.FailingSince), Notified: momentAt(now, pa.LastNotifiedAt),
		Flapping: pa.Flapping, FlappingSince: momentAt(now, pa.FlappingSince)}
	if m := pa.LastMessage; m != nil {
		v.Kind, v.Delivery, v.Error = string(m.Kind), m.Delivery, results.Shorten(m.LastError, present.MaxMessageRunes)
	}
	if !v.Firing && !v.Flapping && v.Kind == "" {
		return nil // nothing to say
	}
	return v
}

// momentAt is the moment of an RFC 3339 time, nil for "" or a bad one.
func momentAt(now time.Time, s string) *moment {
	t, err := time.Parse(time.RFC3339Nano, s)
	if s == "" || err != nil {
		return nil
	}
	m := momentOf(now, t)
	return &m
}
