package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/toolpulse/toolpulse/internal/harness"
)

const (
	// healthTimeout bounds the daemon's start: opening a large database
	// and scheduling every probe.
	healthTimeout = 2 * time.Minute
	// stopTimeout bounds its drain after SIGTERM; nothing is in flight.
	stopTimeout = 30 * time.Second
)

// daemonTimings starts `toolpulse run` on db with a probe for each name in
// probes, and times its start, the JSON API and the status page.
func daemonTimings(ctx context.Context, bin, db, tmp string, probes []string, probe string, repeat int, prog *progress) ([]timing, error) {
	listen, closed, err := loopbackPorts()
	if err != nil {
		return nil, fmt.Errorf("loopback ports for the daemon: %w", err)
	}
	cfg, err := writeDaemonConfig(tmp, db, listen, closed, probes)
	if err != nil {
		return nil, err
	}
	prog.printf("starting toolpulse run with %s probes on %s", commas(int64(len(probes))), listen)
	d, err := startDaemon(ctx, bin, []string{"-c", cfg, "run", "--grace", "1s", "--log-level", "warn"}, nil, nil)
	if err != nil {
		return nil, err
	}
	base := "http://" + listen
	client := &http.Client{Timeout: time.Minute}
	started, err := d.waitHealthy(ctx, client, base+"/healthz")
	if err != nil {
		_ = d.stop() // it is the failure to start that matters
		return nil, err
	}
	out := []timing{newTiming("toolpulse run: start until /healthz answers 200", "startup",
		[]time.Duration{started}, "once, not repeated")}

	routes := []struct {
		path     string
		optional bool // the status page: n/a where this toolpulse does not serve it yet
	}{
		{"/api/v1/probes", false},
		{"/", true},
		{"/probes/" + probe, true},
	}
	for _, r := range routes {
		prog.printf("timing GET %s", r.path)
		t, err := timeRoute(ctx, client, base, r.path, r.optional, repeat)
		if err != nil {
			_ = d.stop() // the failed measurement is what matters
			return nil, err
		}
		out = append(out, t)
	}
	prog.printf("stopping toolpulse run")
	if err := d.stop(); err != nil {
		return nil, err
	}
	return out, nil
}

// timeRoute times GET path. An optional route that answers 404 is n/a.
func timeRoute(ctx context.Context, client *http.Client, base, path string, optional bool, repeat int) (timing, error) {
	name := "GET " + path
	status, _, err := get(ctx, client, base+path)
	if err != nil {
		return timing{}, err
	}
	if status == http.StatusNotFound && optional {
		return newTiming(name, "http", nil, "n/a: 404, not served by this toolpulse"), nil
	}
	if status != http.StatusOK {
		return timing{}, fmt.Errorf("GET %s: HTTP %d", path, status)
	}
	var size int64
	ds, err := sample(ctx, repeat, func(ctx context.Context) error {
		status, n, err := get(ctx, client, base+path)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("GET %s: HTTP %d", path, status)
		}
		size = n
		return err
	})
	if err != nil {
		return timing{}, err
	}
	return newTiming(name, "http", ds, humanBytes(size)+" body"), nil
}

// get requests url and reads the whole body, as a client must before the
// answer is of any use; it returns the status and the body's size.
func get(ctx context.Context, client *http.Client, url string) (int, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return 0, 0, fmt.Errorf("GET %s: read the body: %w", url, err)
	}
	return resp.StatusCode, n, nil
}

// loopbackPorts returns an address for the daemon to listen on and a port
// where nothing listens, for the probes to point at.
func loopbackPorts() (listen string, closed int, err error) {
	a, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, err
	}
	defer a.Close()
	b, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, err
	}
	defer b.Close()
	return a.Addr().String(), b.Addr().(*net.TCPAddr).Port, nil
}

// writeDaemonConfig writes a config for the daemon: db as it is (no
// retention), the server on listen, and the bench consumer with one probe
// per name, pointed at a closed port.
//
// The probes must be configured, for the API and the status page to list
// them, but must not run while we measure. A probe's first run falls at a
// random point within its jitter, so a one-year interval with a jitter just
// under it makes even one run among 1,000 probes during a minute's
// measurement unlikely (about 0.2%); with the default 5s jitter, every probe
// would run at once.
func writeDaemonConfig(dir, db, listen string, closed int, probes []string) (string, error) {
	abs, err := filepath.Abs(db)
	if err != nil {
		return "", err
	}
	cfg := harness.Config{
		Storage:   harness.Storage{Path: harness.Literal(abs), Retention: harness.Retain(0)},
		Server:    harness.Server{Listen: listen},
		Defaults:  harness.Defaults{Interval: 8760 * time.Hour, Jitter: 8759 * time.Hour, Timeout: time.Second, Retries: harness.Retries{MaxAttempts: 1}},
		Consumers: []harness.Consumer{{Name: consumerName, Version: consumerVersion, Select: consumerSelect, Validate: consumerValidate}},
	}
	url := harness.Literal("http://127.0.0.1:" + strconv.Itoa(closed) + "/search")
	for _, p := range probes {
		cfg.Probes = append(cfg.Probes, harness.Probe{Name: p, Request: harness.Request{URL: url}, Consumer: consumerName})
	}
	path := filepath.Join(dir, "checks.yaml")
	if err := os.WriteFile(path, []byte(cfg.YAML()), 0o600); err != nil {
		return "", fmt.Errorf("write the daemon's config: %w", err)
	}
	return path, nil
}

// daemon is a running `toolpulse run`.
type daemon struct {
	proc   *harness.Process
	stderr *bytes.Buffer // read only once the process has exited
}

// startDaemon starts `toolpulse run` with args and the extra environment
// env; its log goes to log as well as to the daemon's buffer. Should ctx
// end, the daemon drains as on a normal stop rather than be killed.
func startDaemon(ctx context.Context, bin string, args, env []string, log io.Writer) (*daemon, error) {
	d := &daemon{stderr: &bytes.Buffer{}}
	var out io.Writer = d.stderr
	if log != nil {
		out = io.MultiWriter(log, d.stderr)
	}
	p, err := harness.Start(ctx, harness.Command{Bin: bin, Args: args, Env: append([]string{"NO_COLOR=1"}, env...),
		Output: out, StopTimeout: stopTimeout})
	if err != nil {
		return nil, fmt.Errorf("start toolpulse run: %w", err)
	}
	d.proc = p
	return d, nil
}

// exited is closed once the daemon has exited.
func (d *daemon) exited() <-chan struct{} { return d.proc.Exited() }

// exitErr is how the daemon ended, with its log; only once it has exited.
func (d *daemon) exitErr() error {
	return fmt.Errorf("%v\n%s", d.proc.Err(), d.stderr)
}

// waitHealthy polls url until it answers 200 and returns how long that took
// since the daemon started.
func (d *daemon) waitHealthy(ctx context.Context, client *http.Client, url string) (time.Duration, error) {
	start := time.Now()
	deadline := time.NewTimer(healthTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if status, _, err := get(ctx, client, url); err == nil && status == http.StatusOK {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-d.exited():
			return 0, fmt.Errorf("toolpulse run exited before it was healthy: %w", d.exitErr())
		case <-deadline.C:
			return 0, fmt.Errorf("toolpulse run not healthy after %s", healthTimeout)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM and waits for the daemon to exit; it must exit 0.
func (d *daemon) stop() error {
	err := d.proc.Stop(syscall.SIGTERM, stopTimeout)
	switch {
	case errors.Is(err, harness.ErrNoExit):
		return fmt.Errorf("toolpulse run did not stop within %s of SIGTERM; %s", stopTimeout, d.keepOutput())
	case err != nil:
		return fmt.Errorf("toolpulse run: %w", d.exitErr())
	}
	return nil
}

// keepOutput writes the daemon's output, with the goroutines' stacks it
// wrote on SIGQUIT when it did not stop, to a file of its own that
// outlives the bench's directory, and says where; only once the daemon
// has exited.
func (d *daemon) keepOutput() string {
	f, err := os.CreateTemp("", "toolpulse-run-*.log")
	if err != nil {
		return fmt.Sprintf("its output was not kept: %v", err)
	}
	_, werr := f.Write(d.stderr.Bytes())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Sprintf("its output was not kept: %v", werr)
	}
	return "its output and its goroutines' stacks are in " + f.Name()
}
