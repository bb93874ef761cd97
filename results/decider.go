package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DeciderLease is the lease the fleet-wide decider holds (SPEC §13): one
// instance of the fleet, elected as each location elects its runner,
// decides the alerts of the probes that run from several locations. A
// location is lower-case letters, digits and '-', so no location can
// take this name.
const DeciderLease = "_decider"

// A LocationView is one location's part of a fleet-wide decision: the
// verdict of its runs by the probe's own thresholds, and its newest run.
type LocationView struct {
	Location string
	// Failing: its runs make it failing by the probe's thresholds. Never
	// set while Silent.
	Failing bool
	// Silent: it recorded no run for two intervals (plus a grace), so it
	// counts neither as passing nor as failing.
	Silent bool
	// Outcome and Code are its newest run's ("" when it never ran).
	Outcome Outcome
	Code    Code
	// LastRun is when its newest run started; zero when it never ran.
	LastRun time.Time
}

// A DecisionRecord is what the decider commits about one probe in one
// transaction: the probe's alert state and the alerts the decision calls
// for, with no run of its own (the runs were recorded by each location).
type DecisionRecord struct {
	// Probe is the probe decided about; At, when (the alert state's
	// updated_at).
	Probe string
	At    time.Time
	// AlertState is the probe's new alert state; nil leaves it as stored.
	AlertState *AlertState
	Alerts     []Alert
	// Fence is the decider's lease (Location DeciderLease) under its
	// epoch; a store that keeps leases refuses the record (ErrFenced)
	// once a newer epoch holds it. The zero Fence claims none.
	Fence Fence
}

// locationJSON is a LocationView as the stores keep it (alerts.locations)
// and the webhook sends it.
type locationJSON struct {
	Location string    `json:"location"`
	Failing  bool      `json:"failing"`
	Silent   bool      `json:"silent"`
	Outcome  Outcome   `json:"outcome,omitempty"`
	Code     Code      `json:"code,omitempty"`
	LastRun  time.Time `json:"last_run,omitzero"`
}

// EncodeLocations is views as JSON, "" for none.
func EncodeLocations(views []LocationView) (string, error) {
	if len(views) == 0 {
		return "", nil
	}
	out := make([]locationJSON, len(views))
	for i, v := range views {
		out[i] = locationJSON(v)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode locations: %w", err)
	}
	return string(b), nil
}

// DecodeLocations reads what EncodeLocations wrote; "" is none.
func DecodeLocations(s string) ([]LocationView, error) {
	if s == "" {
		return nil, nil
	}
	var in []locationJSON
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, fmt.Errorf("decode locations: %w", err)
	}
	out := make([]LocationView, len(in))
	for i, v := range in {
		out[i] = LocationView(v)
		out[i].LastRun = v.LastRun.UTC()
	}
	return out, nil
}

// Validate refuses a decision record that breaks the domain's invariants:
// an alert state or alert of another probe, an alert about a drift (the
// decider decides no drift) or in a delivered state, a fence of a
// location's lease.
func (rec *DecisionRecord) Validate() error {
	switch {
	case rec.Probe == "":
		return errors.New("invalid decision: no probe")
	case rec.At.IsZero():
		return errors.New("invalid decision: zero time")
	case rec.Fence.Fenced() && rec.Fence.Location != DeciderLease:
		return fmt.Errorf("invalid decision: fenced by %q's lease, want %q", rec.Fence.Location, DeciderLease)
	case rec.Fence.Epoch < 0:
		return fmt.Errorf("invalid decision: epoch %d", rec.Fence.Epoch)
	}
	run := RunRecord{Result: Result{Probe: rec.Probe}, AlertState: rec.AlertState}
	if st := rec.AlertState; st != nil {
		switch {
		case st.Probe != rec.Probe:
			return fmt.Errorf("invalid decision: alert state of %q, want %q", st.Probe, rec.Probe)
		case st.ConsecutiveFailures < 0 || st.ConsecutivePasses < 0 || st.WindowRuns < 0 || st.WindowRuns > MaxWindowRuns:
			return errors.New("invalid decision: negative counters in the alert state")
		case len(st.VerdictChanges) > MaxFlapChanges+1:
			return fmt.Errorf("invalid decision: %d verdict changes, want at most %d", len(st.VerdictChanges), MaxFlapChanges+1)
		}
	}
	for i := range rec.Alerts {
		if err := validateAlert(&rec.Alerts[i], &run); err != nil {
			return fmt.Errorf("invalid decision: alert %d (%s): %w", i, rec.Alerts[i].Kind, err)
		}
	}
	return nil
}

// String is v in one line, as messages list locations side by side:
// "eu-west: failing, unavailable timeout", "us-east: passing",
// "ap-south: silent since 14:02:05Z".
func (v LocationView) String() string {
	switch {
	case v.Silent && v.LastRun.IsZero():
		return v.Location + ": silent, never ran"
	case v.Silent:
		return v.Location + ": silent since " + v.LastRun.UTC().Format("2006-01-02 15:04:05Z")
	case v.Failing:
		s := v.Location + ": failing, " + string(v.Outcome)
		if v.Code != "" {
			s += " " + string(v.Code)
		}
		return s
	}
	s := v.Location + ": passing"
	if v.Outcome != "" && v.Outcome != Pass {
		// Below its threshold: it failed, but is not failing yet.
		s += " (last run " + string(v.Outcome) + " " + string(v.Code) + ")"
	}
	return s
}

// LocationLines is views in one line each, joined by newlines.
func LocationLines(views []LocationView) string {
	lines := make([]string, len(views))
	for i, v := range views {
		lines[i] = v.String()
	}
	return strings.Join(lines, "\n")
}

// EncodeSilentLocations is an alert state's SilentLocations as the stores
// keep them (alert_state.silent_locations): a JSON object of location to
// the time it was announced silent; "" for none.
func EncodeSilentLocations(m map[string]time.Time) (string, error) {
	if len(m) == 0 {
		return "", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode silent locations: %w", err)
	}
	return string(b), nil
}

// DecodeSilentLocations reads what EncodeSilentLocations wrote; "" is
// none (nil).
func DecodeSilentLocations(s string) (map[string]time.Time, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]time.Time
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("decode silent locations: %w", err)
	}
	for k, t := range m {
		m[k] = t.UTC()
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// SilentLocation is the location a location_silent or location_back
// alert is about; "" for an alert of another kind.
func (a *Alert) SilentLocation() string {
	if (a.Kind != AlertLocationSilent && a.Kind != AlertLocationBack) || len(a.Locations) == 0 {
		return ""
	}
	return a.Locations[0].Location
}
