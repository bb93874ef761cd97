package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// storedMode is a results.Mode as migration 0006 stores it.
type storedMode struct {
	Outcome results.Outcome `json:"outcome"`
	Code    results.Code    `json:"code,omitempty"`
}

// nullMode is m as a JSON object, NULL for the zero mode.
func nullMode(m results.Mode) (sql.NullString, error) {
	if m == (results.Mode{}) {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(storedMode(m))
	return sql.NullString{String: string(b), Valid: err == nil}, err
}

// nullModes is modes as a JSON array, NULL for none.
func nullModes(modes []results.Mode) (sql.NullString, error) {
	if len(modes) == 0 {
		return sql.NullString{}, nil
	}
	stored := make([]storedMode, len(modes))
	for i, m := range modes {
		stored[i] = storedMode(m)
	}
	b, err := json.Marshal(stored)
	return sql.NullString{String: string(b), Valid: err == nil}, err
}

// parseMode reads what nullMode wrote.
func parseMode(s sql.NullString) (results.Mode, error) {
	if !s.Valid {
		return results.Mode{}, nil
	}
	var m storedMode
	if err := json.Unmarshal([]byte(s.String), &m); err != nil {
		return results.Mode{}, fmt.Errorf("mode %q: %w", s.String, err)
	}
	return results.Mode(m), nil
}

// parseModes reads what nullModes wrote.
func parseModes(s sql.NullString) ([]results.Mode, error) {
	if !s.Valid {
		return nil, nil
	}
	var stored []storedMode
	if err := json.Unmarshal([]byte(s.String), &stored); err != nil {
		return nil, fmt.Errorf("modes %q: %w", s.String, err)
	}
	modes := make([]results.Mode, len(stored))
	for i, m := range stored {
		modes[i] = results.Mode(m)
	}
	return modes, nil
}

// nullTimes is times as a JSON array of stored times, NULL for none.
func nullTimes(times []time.Time) (sql.NullString, error) {
	if len(times) == 0 {
		return sql.NullString{}, nil
	}
	stored := make([]string, len(times))
	for i, t := range times {
		stored[i] = results.FormatTime(t)
	}
	b, err := json.Marshal(stored)
	return sql.NullString{String: string(b), Valid: err == nil}, err
}

// parseTimes reads what nullTimes wrote.
func parseTimes(s sql.NullString) ([]time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	var stored []string
	if err := json.Unmarshal([]byte(s.String), &stored); err != nil {
		return nil, fmt.Errorf("times %q: %w", s.String, err)
	}
	times := make([]time.Time, len(stored))
	for i, v := range stored {
		t, err := parseTime(v)
		if err != nil {
			return nil, err
		}
		times[i] = t
	}
	return times, nil
}
