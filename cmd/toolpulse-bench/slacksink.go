package main

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// slackSink stands in for a Slack incoming webhook, inside the bench: it
// answers every post as Slack does, counts messages by kind, and notes when
// each firing alert of the watched probes arrived.
type slackSink struct {
	srv *http.Server
	url string
	// watch maps the watched probes' names to their slots in firing; it
	// is not written after newSlackSink.
	watch map[string]int

	mu     sync.Mutex
	kinds  map[string]int
	firing [][]int64 // Unix ns
}

// Kinds of Slack message, told apart by their fallback text (see
// results/slack's fallback).
const (
	slackFiring   = "firing"
	slackResolved = "resolved"
	slackReminder = "reminder"
	slackDrift    = "shape_drift"
	slackInvalid  = "invalid"
)

// newSlackSink listens on a loopback port and serves until close.
func newSlackSink(watched []string) (*slackSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &slackSink{
		url:    "http://" + ln.Addr().String() + "/services/bench",
		watch:  make(map[string]int, len(watched)),
		kinds:  map[string]int{},
		firing: make([][]int64, len(watched)),
	}
	for i, name := range watched {
		s.watch[name] = i
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *slackSink) close() error {
	if err := s.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeHTTP takes one webhook post. Only the fallback text is decoded: it
// names the probe and the kind of alert.
func (s *slackSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UnixNano()
	var msg struct {
		Text string `json:"text"`
	}
	err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&msg)
	probe, kind := slackMessageKind(msg.Text)
	if err != nil || msg.Text == "" {
		kind = slackInvalid
	}
	s.mu.Lock()
	s.kinds[kind]++
	if slot, ok := s.watch[probe]; ok && kind == slackFiring {
		s.firing[slot] = append(s.firing[slot], now)
	}
	s.mu.Unlock()
	if kind == slackInvalid {
		http.Error(w, "invalid_payload", http.StatusBadRequest)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

// slackMessageKind reads the probe and the kind of alert from a message's
// fallback text: ":emoji: PROBE outcome ...", ":emoji: PROBE resolved: ...",
// ":emoji: PROBE still failing ..." or ":emoji: PROBE response shape
// changed ...".
func slackMessageKind(text string) (probe, kind string) {
	_, rest, ok := strings.Cut(text, " ")
	if !ok {
		return "", slackInvalid
	}
	probe, rest, _ = strings.Cut(rest, " ")
	switch {
	case strings.HasPrefix(rest, "resolved"):
		return probe, slackResolved
	case strings.HasPrefix(rest, "still failing"):
		return probe, slackReminder
	case strings.HasPrefix(rest, "response shape changed"):
		return probe, slackDrift
	}
	return probe, slackFiring
}

// counts returns the messages received by kind.
func (s *slackSink) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.kinds))
	for k, v := range s.kinds {
		out[k] = v
	}
	return out
}

// firstFiringSince returns when the first firing alert of the i-th watched
// probe arrived at or after since (Unix ns), or 0 if none has.
func (s *slackSink) firstFiringSince(i int, since int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.firing[i] {
		if t >= since {
			return t
		}
	}
	return 0
}
