// Command toolpulse-bench measures toolpulse. Each mode is a subcommand:
//
//	toolpulse-bench read [flags]
//	toolpulse-bench run [flags]
//	toolpulse-bench soak [flags]   (or: toolpulse-bench --soak DURATION)
//
// read generates (or reuses) a database of synthetic results, then times
// `toolpulse stats` and `toolpulse history` as separate processes, the same
// reads in process, and the daemon's API and status page; --explain adds
// the SQLite query plans.
//
// run starts the real `toolpulse run` on generated probes against a
// loopback provider (this binary again, in a process of its own) and a
// Slack stand-in, and measures from the outside: runs completed against
// expected, CPU per run, memory, start lag, SQLite growth per run and alert
// latency. soak runs the same set-up for a long time under a mixed load,
// reloading the config with SIGHUP, and says whether memory and goroutines
// stayed flat. Run `toolpulse-bench MODE -h` for a mode's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// run dispatches to a mode and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	args = expandSoakShorthand(args)
	var err error
	switch mode := args[0]; mode {
	case "read":
		err = runRead(ctx, args[1:], stdout, stderr)
	case "run":
		err = runRunMode(ctx, args[1:], stdout, stderr)
	case "soak":
		err = runSoakMode(ctx, args[1:], stdout, stderr)
	case "peer":
		err = runPeerMode(ctx, args[1:], stdout, stderr)
	case "provider": // hidden: the load generator of run and soak
		err = runProvider(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	default:
		fmt.Fprintf(stderr, "toolpulse-bench: unknown mode %q\n", mode)
		usage(stderr)
		return exitUsage
	}
	var usageErr *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &usageErr):
		fmt.Fprintf(stderr, "toolpulse-bench %s: %v\n", args[0], err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "toolpulse-bench %s: %v\n", args[0], err)
		return exitFailed
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: toolpulse-bench MODE [flags]

modes:
  read    generate or reuse a large database and time toolpulse's reads:
          stats, history, the API and the status page
  run     run the real daemon on generated probes against a loopback provider
          and measure runs completed, CPU per run, memory, start lag, SQLite
          growth and alert latency
  soak    run the daemon for long (--duration 10m) under a mixed load with
          SIGHUP reloads and check that memory and goroutines stay flat;
          --soak DURATION is short for soak --duration DURATION
  peer    run Gatus (--gatus BIN) on the load of run and measure checks per
          second, CPU per check, memory and start lag, to compare with run
`)
}

// expandSoakShorthand turns `--soak D [flags]` into `soak --duration D
// [flags]`.
func expandSoakShorthand(args []string) []string {
	first := strings.TrimLeft(args[0], "-")
	if len(first) == len(args[0]) {
		return args // a mode, not a flag
	}
	if d, ok := strings.CutPrefix(first, "soak="); ok {
		return append([]string{"soak", "--duration", d}, args[1:]...)
	}
	if first == "soak" && len(args) > 1 {
		return append([]string{"soak", "--duration", args[1]}, args[2:]...)
	}
	return args
}

// parseFlags parses a mode's flags, which take no positional arguments. It
// returns flag.ErrHelp for -h, and a usageError for anything else wrong.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	return nil
}

// usageError is a bad flag or argument.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// progress prints what the bench is doing on stderr, with the time since it
// started.
type progress struct {
	w     io.Writer
	start time.Time
}

func newProgress(w io.Writer) *progress { return &progress{w: w, start: time.Now()} }

func (p *progress) printf(format string, args ...any) {
	elapsed := time.Since(p.start).Truncate(100 * time.Millisecond)
	fmt.Fprintf(p.w, "[%7s] %s\n", elapsed, fmt.Sprintf(format, args...))
}
