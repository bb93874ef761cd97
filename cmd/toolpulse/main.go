// Command toolpulse runs synthetic checks against the HTTP tools agents and
// services depend on, and records a typed outcome for every run.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	// The time zone database: maintenance windows name IANA zones, and a
	// host (or the scratch image) may have no /usr/share/zoneinfo.
	_ "time/tzdata"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	e := &env{ctx: ctx, lookupEnv: os.LookupEnv, stdout: os.Stdout, stderr: os.Stderr, tuneGC: true}
	code := e.run(os.Args[1:])
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
	// tuneGC lets a command set the process's garbage collector
	// (withTightGC). Only main sets it: tests share one process.
	tuneGC bool
}
