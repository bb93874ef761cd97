package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
)

// TestJSONLogDurations: a duration in a JSON log line is text a person can
// read ("1.5s"), never slog's default of nanoseconds, at the top level and
// inside a group.
func TestJSONLogDurations(t *testing.T) {
	var buf bytes.Buffer
	logger := newLogger(&buf, "json", "info")
	logger.Info("retrying", "wait", 1500*time.Millisecond, slog.Group("retry", "budget", 15*time.Second),
		"attempt", 2, slog.Duration("grace", 10*time.Second))
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	retry, _ := line["retry"].(map[string]any)
	for name, got := range map[string]any{"wait": line["wait"], "retry.budget": retry["budget"], "grace": line["grace"]} {
		want := map[string]string{"wait": "1.5s", "retry.budget": "15s", "grace": "10s"}[name]
		if got != want {
			t.Errorf("%s = %#v, want %q\n%s", name, got, want, buf.String())
		}
	}
	if line["attempt"] != float64(2) {
		t.Errorf("attempt = %#v, want the number 2: only durations change", line["attempt"])
	}
}
