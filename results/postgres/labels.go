package postgres

import (
	"encoding/json"
	"fmt"
)

// nullLabels stores a probe's labels as a JSON object (alerts.labels), or
// NULL when it has none. encoding/json sorts the keys, so equal labels
// are equal text.
func nullLabels(labels map[string]string) (*string, error) {
	if len(labels) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(labels)
	if err != nil {
		return nil, err
	}
	return ptr(string(b)), nil
}

// parseLabels reads what nullLabels wrote.
func parseLabels(s *string) (map[string]string, error) {
	if s == nil {
		return nil, nil
	}
	var labels map[string]string
	if err := json.Unmarshal([]byte(*s), &labels); err != nil {
		return nil, fmt.Errorf("labels %q: %w", *s, err)
	}
	return labels, nil
}

// nullStrings stores a list of strings (alert_state.receivers) as a JSON
// array, or NULL when it is empty.
func nullStrings(list []string) (*string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	return ptr(string(b)), nil
}

// parseStrings reads what nullStrings wrote.
func parseStrings(s *string) ([]string, error) {
	if s == nil {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal([]byte(*s), &list); err != nil {
		return nil, fmt.Errorf("list %q: %w", *s, err)
	}
	return list, nil
}
