package consumers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// DecodeJSON decodes a response body into rule values: objects as
// map[string]any, arrays as []any, integral numbers as int and other
// numbers as float64 (SPEC §4).
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return Normalize(v), nil
}

// Normalize converts decoded values to rule values (json.Number to int or
// float64).
func Normalize(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return int(i)
		}
		f, _ := t.Float64()
		return f
	case []any:
		for i := range t {
			t[i] = Normalize(t[i])
		}
	case map[string]any:
		for k := range t {
			t[k] = Normalize(t[k])
		}
	}
	return v
}
