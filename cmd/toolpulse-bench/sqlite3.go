package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// The bench never links an SQLite driver of its own: only results/sqlite
// may import one (cmd/toolpulse/imports_test.go). What it cannot do
// through results/sqlite's API it does with the sqlite3 shell.

// sqliteShell runs the sqlite3 shell on db with args before the file name
// and stdin as its input, writing what it prints to stdout. Its error
// carries what the shell printed on stderr.
func sqliteShell(ctx context.Context, db string, args []string, stdin io.Reader, stdout io.Writer) error {
	// -init: a user's ~/.sqliterc must not change modes or settings.
	full := append([]string{"-init", os.DevNull, "-bail", "-batch"}, args...)
	cmd := exec.CommandContext(ctx, "sqlite3", append(full, db)...)
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("sqlite3: %w: %s", err, msg)
		}
		return fmt.Errorf("sqlite3: %w", err)
	}
	return nil
}

// querySQLite runs sql read-only on db and returns what the shell printed.
func querySQLite(ctx context.Context, db string, args []string, sql string) (string, error) {
	var out bytes.Buffer
	args = append([]string{"-readonly"}, args...)
	if err := sqliteShell(ctx, db, args, strings.NewReader(sql), &out); err != nil {
		return "", err
	}
	return out.String(), nil
}

// runScript runs script on db, showing each "progress ..." line that it
// prints as it comes.
func runScript(ctx context.Context, db string, script []byte, prog *progress) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := sqliteShell(ctx, db, nil, bytes.NewReader(script), pw)
		pw.CloseWithError(err)
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if msg, ok := strings.CutPrefix(sc.Text(), "progress "); ok {
			prog.printf("  %s", msg)
		}
	}
	// Drain, so that the shell never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, pr)
	return <-done
}

// sqliteVersion is the version of the sqlite3 shell, such as 3.40.1.
func sqliteVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "sqlite3", "-version").Output()
	if err != nil {
		return "", fmt.Errorf("sqlite3 -version: %w", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 {
		return "", fmt.Errorf("sqlite3 -version printed nothing")
	}
	return fields[0], nil
}
