package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// failingEnv, when set, lets TestDeliberateFailure fail: the test below
// runs this test binary again with it, and reads what a failure prints.
const failingEnv = "TESTKIT_DELIBERATE_FAILURE"

// helperThatFails fails its caller, as a wait helper does.
func helperThatFails(t *T) {
	t.Helper()
	t.Fatalf("timed out waiting for %s", "the thing")
}

func TestDeliberateFailure(t *testing.T) {
	if os.Getenv(failingEnv) == "" {
		t.Skip("run by TestFailureReport")
	}
	tk := New(t)
	log := &Log{}
	tk.Attach("daemon", log)
	for i := range 1000 {
		fmt.Fprintf(log, "line %d %s\n", i, strings.Repeat("x", i%3*300))
	}
	tk.Errorf("first assertion: got %d, want %d", 1, 2)
	helperThatFails(tk)
}

// TestFailureReport runs a test that fails over a 1,000-line log: its
// output shows the log's last TailLines lines, each cut, and then both
// failures, in order, at the lines they were raised at (a helper's failure
// at its caller's), and nothing after them.
func TestFailureReport(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeliberateFailure$", "-test.count=1")
	cmd.Env = append(os.Environ(), failingEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the deliberate failure passed:\n%s", out)
	}
	text := string(out)
	if !strings.Contains(text, fmt.Sprintf("daemon log, the last %d of 1000 lines:", TailLines)) {
		t.Errorf("no log header with the line counts:\n%s", text)
	}
	if strings.Contains(text, "line 959 ") || !strings.Contains(text, "line 960 ") || !strings.Contains(text, "line 999 ") {
		t.Errorf("the log is not cut to its last %d lines:\n%s", TailLines, text)
	}
	if !strings.Contains(text, "bytes more)") || strings.Contains(text, strings.Repeat("x", MaxLineBytes+1)) {
		t.Errorf("long lines are not cut to %d bytes:\n%s", MaxLineBytes, text)
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "FAIL") && !strings.HasPrefix(l, "exit status") {
			lines = append(lines, l)
		}
	}
	n := len(lines)
	if n < 3 || lines[n-3] != "failed:" ||
		lines[n-2] != "testkit_test.go:31: first assertion: got 1, want 2" ||
		lines[n-1] != "testkit_test.go:32: timed out waiting for the thing" {
		t.Errorf("the failures are not the last lines, in order, at their lines:\n%s", text)
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		log   string
		n     int
		want  []string
		total int
	}{
		{log: "", n: 3, want: nil, total: 0},
		{log: "a\n", n: 3, want: []string{"a"}, total: 1},
		{log: "a\nb\nc\nd", n: 2, want: []string{"c", "d"}, total: 4},
	} {
		l := &Log{}
		l.Write([]byte(tc.log))
		got, total := l.Tail(tc.n)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || total != tc.total {
			t.Errorf("Tail(%d) of %q = %q, %d; want %q, %d", tc.n, tc.log, got, total, tc.want, tc.total)
		}
	}
}
