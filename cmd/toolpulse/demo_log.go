package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/results/present"
)

// demoLog is the demo's log. The daemon's whole log goes to a file, as
// `run` would write it; the terminal gets the story: one short line for each
// run that says something new (its probe's outcome, code or drift marker
// changed), and the warnings and errors. Runs left out are counted, and
// told per act.
type demoLog struct {
	file io.Writer // every record, as text with its time and level
	term io.Writer // the story

	mu      sync.Mutex
	last    map[string]string // probe -> what its last told run said
	skipped int               // runs left out since the last Skipped
}

func newDemoLog(file, term io.Writer) *demoLog {
	return &demoLog{file: file, term: term, last: map[string]string{}}
}

// Logger is the logger the daemon writes to.
func (l *demoLog) Logger() *slog.Logger {
	return slog.New(&demoHandler{file: slog.NewTextHandler(l.file, nil), log: l})
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

// demoHandler writes every record to the log file and tells the terminal
// what the story needs of it.
type demoHandler struct {
	file  slog.Handler
	attrs []slog.Attr // from WithAttrs, for the terminal line
	log   *demoLog
}

func (h *demoHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.file.Enabled(ctx, level)
}

func (h *demoHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.file.Handle(ctx, r)
	attrs := map[string]string{}
	for _, a := range h.attrs {
		attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	switch {
	case r.Message == "probe run":
		probe := attrs["probe"]
		if h.log.news(probe, fmt.Sprint(attrs["outcome"], "/", attrs["code"], "/", attrs["drift"])) {
			fmt.Fprintln(h.log.term, runLine(attrs))
		}
	case r.Level >= slog.LevelWarn:
		// What went wrong, in one line; its details are in the file.
		what := strings.ToLower(r.Level.String()) + ": "
		if p := attrs["probe"]; p != "" {
			what += p + ": "
		}
		what += r.Message
		if e := attrs["error"]; e != "" {
			what += ": " + e
		}
		fmt.Fprintln(h.log.term, results.Clip("  "+present.Printable(what), demoWidth))
	}
	return err
}

// runLine is one run as the demo tells it: the probe, its outcome and
// code, and what else is worth a glance (retries, a drift marker).
func runLine(attrs map[string]string) string {
	what := attrs["outcome"]
	if code := attrs["code"]; code != "" {
		what += " (" + code + ")"
	}
	if n := attrs["attempts"]; n != "" && n != "1" {
		what += " after " + n + " attempts"
	}
	if attrs["drift"] == "true" {
		what += ", shape drift"
	}
	return fmt.Sprintf("  %-19s %s", present.Printable(attrs["probe"]), present.Printable(what))
}

func (h *demoHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &demoHandler{file: h.file.WithAttrs(attrs), attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...), log: h.log}
}

func (h *demoHandler) WithGroup(name string) slog.Handler {
	// The daemon groups no attributes; a group would only change the
	// file's keys.
	return &demoHandler{file: h.file.WithGroup(name), attrs: h.attrs, log: h.log}
}
