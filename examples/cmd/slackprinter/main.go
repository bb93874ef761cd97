// Command slackprinter is a local stand-in for Slack's incoming webhooks
// (examples/slackprinter): point notify.slack.webhook_url at it and it
// prints every message toolpulse sends, the way `toolpulse demo` does:
//
//	go run ./examples/cmd/slackprinter -listen 127.0.0.1:8098 -brief -width 120
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/toolpulse/toolpulse/examples/slackprinter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "slackprinter:", err)
		os.Exit(1)
	}
}

// run serves the printer until ctx ends. ready, when not nil, receives the
// address it listens on.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("slackprinter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8098", "address to serve on")
	brief := fs.Bool("brief", false, "print each message's notification text and only the diff or description it leaves out")
	width := fs.Int("width", 0, "wrap printed lines to this many columns (0: leave them whole)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	p := slackprinter.NewWithOptions(stdout, slackprinter.Options{Width: *width, Brief: *brief})
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Fprintf(stderr, "Slack stand-in on http://%s/: set notify.slack.webhook_url to it\n", ln.Addr())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
