package harness

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// Slack stands in for a Slack incoming webhook: it records every post,
// answered or refused, and answers as Slack does, "ok" with status 200,
// unless told to fail. It is an http.Handler, safe for concurrent use; the
// path it is posted to is not recorded, since a webhook URL is Slack's own
// address, not part of the message.
//
// A post is answered, in this order: 400 invalid_payload when it is not
// JSON with a text (as Slack does); else by the next Reply of Script; else
// 500 while SetDown(true); else by FailEvery's Reply on every n-th post;
// else ok.
type Slack struct {
	mu         sync.Mutex
	messages   []Message
	script     []Reply
	down       bool
	every      int
	everyReply Reply
}

// Message is one post as the Slack stand-in received it.
type Message struct {
	At     time.Time
	Text   string          // the fallback text
	Blocks json.RawMessage // the Block Kit blocks, as sent
	Body   []byte          // the whole post
	// Probe and Kind are read from the fallback text; Kind is KindInvalid
	// for a post that is not a message.
	Probe string
	Kind  results.AlertKind
	// OperationID is the run's operation id from the context block.
	OperationID string
	// Accepted says the post was answered ok.
	Accepted bool
}

// KindInvalid is the Kind of a post that is not JSON with a text.
const KindInvalid results.AlertKind = "invalid"

// A Reply answers a post instead of Slack's "ok".
type Reply func(w http.ResponseWriter, r *http.Request)

// RateLimited answers 429 rate_limited with a Retry-After of seconds.
func RateLimited(seconds string) Reply {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", seconds)
		http.Error(w, "rate_limited", http.StatusTooManyRequests)
	}
}

// Fail answers status with Slack's reason, such as "internal_error".
func Fail(status int, reason string) Reply {
	return func(w http.ResponseWriter, _ *http.Request) { http.Error(w, reason, status) }
}

// Script answers the next posts with replies, one a post, before any
// other rule applies.
func (s *Slack) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// SetDown makes Slack refuse every post with 500 internal_error, until
// set back.
func (s *Slack) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// FailEvery answers every n-th post (counting every post from the first)
// with reply; n of 0 stops it.
func (s *Slack) FailEvery(n int, reply Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.every, s.everyReply = n, reply
}

var operationID = regexp.MustCompile("operation `([0-9a-f-]{36})`")

func (s *Slack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := Message{At: time.Now()}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var msg struct {
		Text   string          `json:"text"`
		Blocks json.RawMessage `json:"blocks"`
	}
	if err == nil {
		err = json.Unmarshal(body, &msg)
	}
	m.Body, m.Text, m.Blocks = body, msg.Text, msg.Blocks
	m.Probe, m.Kind = MessageKind(msg.Text)
	if err != nil || msg.Text == "" {
		m.Kind = KindInvalid
	}
	if id := operationID.FindSubmatch(body); id != nil {
		m.OperationID = string(id[1])
	}

	s.mu.Lock()
	var reply Reply
	switch {
	case m.Kind == KindInvalid:
		reply = Fail(http.StatusBadRequest, "invalid_payload")
	case len(s.script) > 0:
		reply, s.script = s.script[0], s.script[1:]
	case s.down:
		reply = Fail(http.StatusInternalServerError, "internal_error")
	case s.every > 0 && (len(s.messages)+1)%s.every == 0:
		reply = s.everyReply
	}
	m.Accepted = reply == nil
	s.messages = append(s.messages, m)
	s.mu.Unlock()

	if reply != nil {
		reply(w, r)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

// MessageKind reads the probe and the kind of alert from a message's
// fallback text: ":emoji: PROBE outcome ...", ":emoji: PROBE resolved: ...",
// ":emoji: PROBE still failing, now ..." (an update), ":emoji: PROBE still
// failing ..." or ":emoji: PROBE response shape changed ..." (see
// results/slack's fallback).
func MessageKind(text string) (probe string, kind results.AlertKind) {
	_, rest, ok := strings.Cut(text, " ")
	if !ok {
		return "", KindInvalid
	}
	probe, rest, _ = strings.Cut(rest, " ")
	switch {
	case strings.HasPrefix(rest, "resolved"):
		return probe, results.AlertResolved
	case strings.HasPrefix(rest, "still failing, now"):
		return probe, results.AlertUpdate
	case strings.HasPrefix(rest, "still failing"):
		return probe, results.AlertReminder
	case strings.HasPrefix(rest, "response shape changed"):
		return probe, results.AlertDrift
	case strings.HasPrefix(rest, "step ") && strings.Contains(rest, " response shape changed"):
		return probe, results.AlertDrift
	}
	return probe, results.AlertFiring
}

// Messages returns every post so far, in the order they arrived.
func (s *Slack) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Count returns how many accepted messages have a text containing substr.
func (s *Slack) Count(substr string) int {
	return s.count(func(m Message) bool { return strings.Contains(m.Text, substr) })
}

// CountPrefix returns how many accepted messages have a text starting
// with prefix.
func (s *Slack) CountPrefix(prefix string) int {
	return s.count(func(m Message) bool { return strings.HasPrefix(m.Text, prefix) })
}

func (s *Slack) count(match func(Message) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.messages {
		if m.Accepted && match(m) {
			n++
		}
	}
	return n
}

// Refused returns how many posts were not answered ok.
func (s *Slack) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.messages {
		if !m.Accepted {
			n++
		}
	}
	return n
}

// Kinds counts every post by kind, refused ones included.
func (s *Slack) Kinds() map[results.AlertKind]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[results.AlertKind]int{}
	for _, m := range s.messages {
		out[m.Kind]++
	}
	return out
}

// FirstSince returns when the first post of kind about probe arrived at
// or after since, or the zero time if none has.
func (s *Slack) FirstSince(probe string, kind results.AlertKind, since time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.messages {
		if m.Probe == probe && m.Kind == kind && !m.At.Before(since) {
			return m.At
		}
	}
	return time.Time{}
}
