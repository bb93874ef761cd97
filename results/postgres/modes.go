package postgres

import (
	"encoding/json"
	"fmt"

	"github.com/toolpulse/toolpulse/results"
)

// storedMode is a results.Mode as stored in JSON, as results/sqlite stores it.
type storedMode struct {
	Outcome results.Outcome `json:"outcome"`
	Code    results.Code    `json:"code,omitempty"`
}

// nullMode is m as a JSON object, NULL for the zero mode.
func nullMode(m results.Mode) (*string, error) {
	if m == (results.Mode{}) {
		return nil, nil
	}
	b, err := json.Marshal(storedMode(m))
	if err != nil {
		return nil, err
	}
	return ptr(string(b)), nil
}

// nullModes is modes as a JSON array, NULL for none.
func nullModes(modes []results.Mode) (*string, error) {
	if len(modes) == 0 {
		return nil, nil
	}
	stored := make([]storedMode, len(modes))
	for i, m := range modes {
		stored[i] = storedMode(m)
	}
	b, err := json.Marshal(stored)
	if err != nil {
		return nil, err
	}
	return ptr(string(b)), nil
}

// parseMode reads what nullMode wrote.
func parseMode(s *string) (results.Mode, error) {
	if s == nil {
		return results.Mode{}, nil
	}
	var m storedMode
	if err := json.Unmarshal([]byte(*s), &m); err != nil {
		return results.Mode{}, fmt.Errorf("mode %q: %w", *s, err)
	}
	return results.Mode(m), nil
}

// parseModes reads what nullModes wrote.
func parseModes(s *string) ([]results.Mode, error) {
	if s == nil {
		return nil, nil
	}
	var stored []storedMode
	if err := json.Unmarshal([]byte(*s), &stored); err != nil {
		return nil, fmt.Errorf("modes %q: %w", *s, err)
	}
	modes := make([]results.Mode, len(stored))
	for i, m := range stored {
		modes[i] = results.Mode(m)
	}
	return modes, nil
}
