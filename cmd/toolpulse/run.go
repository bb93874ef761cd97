package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
	"github.com/toolpulse/toolpulse/web"
)

type runCmd struct {
	Grace     time.Duration `default:"10s" help:"On SIGTERM/SIGINT, how long in-flight runs may finish before they are cancelled (and recorded as canceled)."`
	LogFormat string        `enum:"text,json" default:"text" help:"Log format on stderr: text or json."`
	LogLevel  string        `enum:"debug,info,warn,error" default:"info" help:"Lowest level logged."`

	// Profiling, for toolpulse-bench; hidden from --help.
	CPUProfile  string `name:"cpu-profile" hidden:"" placeholder:"FILE" help:"Write a CPU profile of the whole run, until the drain ends, to FILE."`
	HeapProfile string `name:"heap-profile" hidden:"" placeholder:"FILE" help:"Write a heap profile to FILE when SIGTERM/SIGINT arrives, after a GC and before the drain."`
}

// Run is the daemon: it schedules every probe, records and alerts, reloads
// on SIGHUP (a bad new config is logged and the old one keeps running) and
// drains on SIGTERM/SIGINT, exiting 0.
func (c *runCmd) Run(e *env, root *cli) (err error) {
	started := time.Now()
	logger := newLogger(e.stderr, c.LogFormat, c.LogLevel)
	e.setMemoryLimit(logger, memlimit.FromCgroup)
	cfg, err := root.loadConfig(e)
	if err != nil {
		return err
	}
	prof, err := startProfiles(c.CPUProfile, c.HeapProfile)
	if err != nil {
		return usageError("%v", err)
	}
	defer func() {
		if perr := prof.stop(); perr != nil && err == nil {
			err = softwareError(perr)
		}
	}()
	// Listen before anything starts, so that a taken port fails the start
	// instead of leaving a daemon nobody can see.
	var ln net.Listener
	if cfg.Server.Listen != "" {
		if ln, err = net.Listen("tcp", cfg.Server.Listen); err != nil {
			return softwareError(fmt.Errorf("server.listen: %w", err))
		}
	}
	s, err := newStack(e.ctx, cfg, logger, stackOptions{grace: c.Grace})
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return softwareError(err)
	}
	logger.Info("toolpulse started", "config", cfg.Path, "store", storeName(cfg.Storage),
		"probes", len(cfg.Probes), "slack", cfg.Notify.Slack.Enabled(), "routes", len(cfg.Notify.Routes))

	state := newConfigState(root.configPath(e), cfg, nil)
	load := func() (*checks.Config, error) { return root.loadConfig(e) }

	ctx, stop := context.WithCancel(prof.heapBeforeStop(e.ctx))
	defer stop()
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		reloadOnHangup(ctx, func() { s.reloadFrom(state, load) })
	}()

	// The leader gauge starts as the daemon stands: a single instance
	// leads from its start, a fleet node stands by until it is elected.
	s.metrics.SetLeader(s.daemon.Role().Leading)
	s.metrics.WatchMaintenance(func(now time.Time) map[string]bool { return state.Running().MaintenanceAt(now) })
	fleet, _ := s.store.(fleetReader) // nil for SQLite: no fleet
	if fleet != nil {
		s.metrics.WatchFleet(fleet.Fleet, cfg.Fleet.Lease)
	}

	served := make(chan error, 1)
	if ln != nil {
		h := web.NewServer(web.Deps{
			Logger: logger, Server: cfg.Server, Token: cfg.Server.Token, Healthy: s.healthy, Metrics: s.metricsHandler,
			Store: s.store, Probes: func() []*checks.Probe { return state.Running().Probes },
			Maintenance:  func() []results.MaintenanceWindow { return state.Running().Maintenance },
			ConfigBanner: state.Banner, Role: s.webRole, Fleet: fleet, Lease: cfg.Fleet.Lease, Started: started,
		})
		go func() { served <- web.Serve(ctx, ln, h, logger) }()
	} else {
		served <- nil
	}

	err = s.run(ctx, cfg.Storage.Retention)
	stop()
	<-reloaded
	if serr := <-served; serr != nil {
		logger.Error("HTTP server", "listen", cfg.Server.Listen, "error", serr)
	}
	if err != nil {
		return softwareError(err)
	}
	logger.Info("toolpulse stopped")
	return nil
}

// fleetReader is a store that knows the fleet sharing it (Postgres).
type fleetReader interface {
	Fleet(ctx context.Context) (results.Fleet, error)
}

// webRole is the daemon's role as the HTTP surface shows it.
func (s *stack) webRole() web.Role {
	r := s.daemon.Role()
	return web.Role{Node: r.Node, Location: r.Location, Leading: r.Leading, Epoch: r.Epoch, Idle: r.Idle}
}

// reloadOnHangup calls reload on every SIGHUP until ctx ends.
func reloadOnHangup(ctx context.Context, reload func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reload()
		}
	}
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		opts.ReplaceAttr = durationAsString
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	// The text handler already writes durations as "1.5s".
	return slog.New(slog.NewTextHandler(w, opts))
}

// durationAsString writes a time.Duration as the text handler does
// ("1.5s"): slog's JSON handler writes nanoseconds, a bare number that a
// reader of "wait":1500000000 takes for milliseconds or seconds. Every
// duration any package logs goes through here, so no call site has to
// remember.
func durationAsString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// profiles writes the hidden --cpu-profile and --heap-profile of a run.
type profiles struct {
	cpu, heap *os.File
	once      sync.Once // writes the heap profile
	heapErr   error
	// release ends the wait for a stop signal, and watching is closed
	// once that wait is over (see heapBeforeStop).
	release  context.CancelFunc
	watching chan struct{}
}

// heapProfileRate is the average bytes allocated per heap profile sample
// while a heap profile is asked for.
const heapProfileRate = 64 << 10

// startProfiles creates the profile files, so that a path that cannot be
// written fails the start rather than the shutdown, and starts the CPU
// profile. Empty paths profile nothing.
func startProfiles(cpuPath, heapPath string) (*profiles, error) {
	p := &profiles{}
	if heapPath != "" {
		f, err := os.Create(heapPath)
		if err != nil {
			return nil, fmt.Errorf("--heap-profile: %w", err)
		}
		p.heap = f
		// The default samples one allocation per 512 KiB, a few dozen
		// samples for a daemon's heap; finer costs little next to a run.
		runtime.MemProfileRate = heapProfileRate
	}
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err == nil {
			if err = pprof.StartCPUProfile(f); err != nil {
				f.Close()
			}
		}
		if err != nil {
			if p.heap != nil {
				p.heap.Close()
			}
			return nil, fmt.Errorf("--cpu-profile: %w", err)
		}
		p.cpu = f
	}
	return p, nil
}

// heapBeforeStop returns a context that ends after ctx does, once the heap
// profile is written: the profile then shows the running daemon's heap, not
// what is left of it after the drain tore the schedule down. Without a heap
// profile it returns ctx itself.
func (p *profiles) heapBeforeStop(ctx context.Context) context.Context {
	if p.heap == nil {
		return ctx
	}
	inner, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.watching = make(chan struct{})
	p.release = cancel
	go func() {
		defer close(p.watching)
		defer cancel()
		select {
		case <-ctx.Done():
			p.writeHeap()
		case <-inner.Done():
		}
	}()
	return inner
}

// writeHeap writes the heap profile once, after a GC, so that in-use
// figures are current.
func (p *profiles) writeHeap() {
	p.once.Do(func() {
		runtime.GC()
		if err := pprof.Lookup("heap").WriteTo(p.heap, 0); err != nil {
			p.heapErr = fmt.Errorf("--heap-profile: %w", err)
		}
	})
}

// stop ends the CPU profile and writes the heap profile if no stop signal
// did (the run ended for another reason), then closes both files.
func (p *profiles) stop() error {
	var errs []error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--cpu-profile: %w", err))
		}
	}
	if p.release != nil {
		p.release()
		<-p.watching
	}
	if p.heap != nil {
		p.writeHeap()
		errs = append(errs, p.heapErr)
		if err := p.heap.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--heap-profile: %w", err))
		}
	}
	return errors.Join(errs...)
}
