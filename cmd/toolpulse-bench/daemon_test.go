package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestKeepOutput: the output of a daemon that did not stop, its stacks
// included, is kept in a file the message names.
func TestKeepOutput(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	out := "level=WARN msg=\"grace period over\"\ngoroutine 1 [select]:\n"
	d := &daemon{stderr: bytes.NewBufferString(out)}
	msg := d.keepOutput()
	path, ok := strings.CutPrefix(msg, "its output and its goroutines' stacks are in ")
	if !ok {
		t.Fatalf("message %q names no file", msg)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != out {
		t.Errorf("kept %q, want the daemon's output %q", got, out)
	}
}
