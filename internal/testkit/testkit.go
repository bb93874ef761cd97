// Package testkit is what toolpulse's tests share to report a failure an
// operator can read: the log of the program under test goes to the test's
// output only when the test fails, cut to its last lines, and the test's
// own failures come after it, last, where the eye lands. Only tests import
// it.
package testkit

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TailLines is how many of its last lines a Log shows on a failure, and
// MaxLineBytes how much of each: a JSON log line may carry a stack.
const (
	TailLines    = 40
	MaxLineBytes = 400
)

// Log is a log the program under test writes to, safe for concurrent use.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns the whole log.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Tail returns the last n lines of the log, each cut to MaxLineBytes, and
// how many lines it has in all.
func (l *Log) Tail(n int) (lines []string, total int) {
	all := strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
	if len(all) == 1 && all[0] == "" {
		return nil, 0
	}
	tail := all[max(0, len(all)-n):]
	out := make([]string, len(tail))
	for i, line := range tail {
		if len(line) > MaxLineBytes {
			line = line[:MaxLineBytes] + fmt.Sprintf(" … (%d bytes more)", len(line)-MaxLineBytes)
		}
		out[i] = line
	}
	return out, len(all)
}

// T is a *testing.T whose failures are held back and printed at the end
// of the test, after the tails of the logs attached to it: a failing test
// prints its assertions last. Each failure keeps the file and line it was
// raised at, skipping the functions that called Helper, as testing does.
// Use it where t would be used; pass it on as a testing.TB.
type T struct {
	*testing.T

	mu       sync.Mutex
	helpers  map[string]bool // functions that called Helper
	failures []string
	logs     []attached
	reported bool // a failure raised after the report is printed at once
}

type attached struct {
	name string
	log  *Log
}

// New returns t's T. The report is written by a cleanup that New
// registers, so it comes after every cleanup registered later (a daemon
// stopped by one has written its last lines by then).
func New(t *testing.T) *T {
	tt := &T{T: t, helpers: map[string]bool{}}
	t.Cleanup(tt.report)
	return tt
}

// Attach adds a log to show, under name, should the test fail.
func (t *T) Attach(name string, log *Log) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.logs = append(t.logs, attached{name, log})
}

// Helper marks the calling function as a test helper: a failure raised in
// it is reported at its caller's line.
func (t *T) Helper() {
	t.T.Helper()
	pc, _, _, ok := runtime.Caller(1)
	if !ok {
		return
	}
	name := runtime.FuncForPC(pc).Name()
	t.mu.Lock()
	t.helpers[name] = true
	t.mu.Unlock()
}

// Errorf records a failure and marks the test failed; it is printed at the
// end of the test.
func (t *T) Errorf(format string, args ...any) { t.fail(fmt.Sprintf(format, args...)) }

// Error is Errorf with the formatting of fmt.Sprintln.
func (t *T) Error(args ...any) { t.fail(sprintln(args...)) }

// Fatalf is Errorf, then FailNow.
func (t *T) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
	t.T.FailNow()
}

// Fatal is Error, then FailNow.
func (t *T) Fatal(args ...any) {
	t.fail(sprintln(args...))
	t.T.FailNow()
}

func sprintln(args ...any) string {
	s := fmt.Sprintln(args...)
	return s[:len(s)-1]
}

func (t *T) fail(msg string) {
	loc := t.caller()
	t.mu.Lock()
	late := t.reported
	if !late {
		t.failures = append(t.failures, loc+msg)
	}
	t.mu.Unlock()
	if late {
		fmt.Fprintf(t.Output(), "%s%s\n", loc, msg)
	}
	t.T.Fail()
}

// caller is "file.go:line: " of the first frame that is neither a method
// of T nor a helper.
func (t *T) caller() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		f, more := frames.Next()
		if !t.helpers[f.Function] && !strings.HasPrefix(f.Function, "github.com/toolpulse/toolpulse/internal/testkit.(*T).") {
			file := f.File
			if i := strings.LastIndexByte(file, '/'); i >= 0 {
				file = file[i+1:]
			}
			return fmt.Sprintf("%s:%d: ", file, f.Line)
		}
		if !more {
			return ""
		}
	}
}

// report writes, on a failure, each attached log's tail and then the
// failures, to the test's output.
func (t *T) report() {
	if !t.Failed() {
		t.mu.Lock()
		t.reported = true
		t.mu.Unlock()
		return
	}
	t.mu.Lock()
	logs, failures := t.logs, t.failures
	t.reported = true
	t.mu.Unlock()
	var b strings.Builder
	for _, a := range logs {
		lines, total := a.log.Tail(TailLines)
		if total > len(lines) {
			fmt.Fprintf(&b, "%s log, the last %d of %d lines:\n", a.name, len(lines), total)
		} else {
			fmt.Fprintf(&b, "%s log, %d lines:\n", a.name, total)
		}
		for _, line := range lines {
			fmt.Fprintf(&b, "    %s\n", line)
		}
	}
	if len(failures) > 0 && b.Len() > 0 {
		b.WriteString("failed:\n")
	}
	for _, f := range failures {
		fmt.Fprintf(&b, "%s\n", f)
	}
	fmt.Fprint(t.Output(), b.String())
}
