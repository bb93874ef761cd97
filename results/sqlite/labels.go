package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
)

// nullLabels stores a probe's labels as a JSON object (alerts.labels), or
// NULL when it has none. encoding/json sorts the keys, so equal labels
// are equal text.
func nullLabels(labels map[string]string) (sql.NullString, error) {
	if len(labels) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(labels)
	return sql.NullString{String: string(b), Valid: err == nil}, err
}

// parseLabels reads what nullLabels wrote.
func parseLabels(s sql.NullString) (map[string]string, error) {
	if !s.Valid {
		return nil, nil
	}
	var labels map[string]string
	if err := json.Unmarshal([]byte(s.String), &labels); err != nil {
		return nil, fmt.Errorf("labels %q: %w", s.String, err)
	}
	return labels, nil
}

// nullStrings stores a list of strings (alert_state.receivers) as a JSON
// array, or NULL when it is empty.
func nullStrings(list []string) (sql.NullString, error) {
	if len(list) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(list)
	return sql.NullString{String: string(b), Valid: err == nil}, err
}

// parseStrings reads what nullStrings wrote.
func parseStrings(s sql.NullString) ([]string, error) {
	if !s.Valid {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(s.String), &list); err != nil {
		return nil, fmt.Errorf("list %q: %w", s.String, err)
	}
	return list, nil
}
