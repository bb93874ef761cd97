// Command toolpulse runs synthetic checks against the HTTP tools agents and
// services depend on, and records a typed outcome for every run.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is everything a command may use from the outside world; tests build
// their own.
type env struct {
	ctx       context.Context
	lookupEnv func(string) (string, bool)
	stdout    io.Writer
	stderr    io.Writer
}
