package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// demoLog is the demo's log: the daemon's lines without their timestamp,
// and of the per-run lines ("probe run") only those that say something new
// (a probe's outcome, code or drift marker changed), so that what changes
// stays on the screen. Runs left out are counted, and told per act.
type demoLog struct {
	out io.Writer

	mu      sync.Mutex
	last    map[string]string // probe -> what its last printed run said
	skipped int               // runs left out since the last Skipped
}

func newDemoLog(out io.Writer) *demoLog {
	return &demoLog{out: out, last: map[string]string{}}
}

// Logger is the logger the daemon writes to.
func (l *demoLog) Logger() *slog.Logger {
	text := slog.NewTextHandler(l.out, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
				return slog.Attr{}
			}
			return a
		},
	})
	return slog.New(&changesOnly{Handler: text, log: l})
}

// Skipped returns how many runs were left out since it was last called.
func (l *demoLog) Skipped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.skipped
	l.skipped = 0
	return n
}

// news reports whether a run of probe that says state is news, and
// remembers it.
func (l *demoLog) news(probe, state string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last[probe] == state {
		l.skipped++
		return false
	}
	l.last[probe] = state
	return true
}

// changesOnly drops the "probe run" lines that repeat their probe's last.
type changesOnly struct {
	slog.Handler
	log *demoLog
}

func (h *changesOnly) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "probe run" {
		var probe, outcome, code, drift string
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "probe":
				probe = a.Value.String()
			case "outcome":
				outcome = a.Value.String()
			case "code":
				code = a.Value.String()
			case "drift":
				drift = a.Value.String()
			}
			return true
		})
		if !h.log.news(probe, fmt.Sprint(outcome, "/", code, "/", drift)) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h *changesOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &changesOnly{Handler: h.Handler.WithAttrs(attrs), log: h.log}
}

func (h *changesOnly) WithGroup(name string) slog.Handler {
	return &changesOnly{Handler: h.Handler.WithGroup(name), log: h.log}
}
