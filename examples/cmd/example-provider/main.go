// Command example-provider serves the bundled example tools
// (examples/provider) on a fixed address, so that the root checks.yaml,
// examples/seeds/checks.yaml and hand-written configs have something to
// probe: the search and experiment tracker, and seed 002's order-support
// tools (/orders/, /refunds, /shipments):
//
//	go run ./examples/cmd/example-provider -listen 127.0.0.1:8099 -drifted -mcp-drifted
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/toolpulse/toolpulse/examples/provider"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "example-provider:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("example-provider", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8099", "address to serve on")
	drifted := fs.Bool("drifted", false, "serve /search in the {\"items\": [...]} layout of seed 000")
	down := fs.Bool("down", false, "answer /runs with 503 and Retry-After")
	mcpDrifted := fs.Bool("mcp-drifted", false, "serve the MCP tool search_docs' next release: results renamed documents, and an instruction in its description")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p := provider.New()
	p.SetDrifted(*drifted)
	p.SetDown(*down)
	p.SetMCPDrifted(*mcpDrifted)
	defer p.Close()
	srv := &http.Server{Addr: *listen, Handler: provider.Mux(p, provider.NewOrders()), ReadHeaderTimeout: 5 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Fprintf(os.Stderr, "example provider on http://%s (POST /search, GET /runs, MCP at /mcp, /orders/, /refunds, /shipments)\n", *listen)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
