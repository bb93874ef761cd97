package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/alecthomas/kong"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// Exit codes, in one place. 0/1/2 are the verdict of `check` (SPEC §6);
// the rest follow sysexits.h.
const (
	exitOK                 = 0
	exitContractError      = 1
	exitUnavailable        = 2
	exitUsage              = 64 // EX_USAGE: bad flags or arguments
	exitDataError          = 65 // EX_DATAERR: a server answered, but not in a form toolpulse can use (mcp tools)
	exitNoInput            = 66 // EX_NOINPUT: the database to read does not exist or cannot be read
	exitServiceUnavailable = 69 // EX_UNAVAILABLE: a server could not be reached, refused or failed (mcp tools)
	exitSoftware           = 70 // EX_SOFTWARE: toolpulse itself failed (store, I/O)
	exitConfig             = 78 // EX_CONFIG: the configuration is invalid
)

// exitError carries an exit code out of a command. Its message, when not
// empty, is printed to stderr.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// softwareError is exit 70 for err, unless err carries an exit code of
// its own already (openStore's errors do).
func softwareError(err error) error {
	var xe *exitError
	if errors.As(err, &xe) {
		return err
	}
	return &exitError{code: exitSoftware, err: err}
}

// unknownProbe is the usage error for a --probe that names no probe, with
// the closest known name when one is close.
func unknownProbe(name string, known []string) error {
	if s := checks.Suggest(name, known); s != "" {
		return usageError("unknown probe %q (did you mean %q?)", name, s)
	}
	return usageError("unknown probe %q", name)
}

// exitStatus is a verdict without a message: the command printed what it had
// to say already.
func exitStatus(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// cli is the whole command line. Global flags live here; each subcommand is
// a struct in its own file with a Run(*env, *cli) error method.
type cli struct {
	Config string `short:"c" placeholder:"FILE" help:"Config file (default ./checks.yaml, or $$TOOLPULSE_CONFIG)."`
	DB     string `placeholder:"FILE|URL" help:"SQLite database file, or a postgres:// URL; overrides storage."`
	// ShowVersion is --version; `toolpulse version` prints the same, for
	// those who type the subcommand the way they type the others.
	ShowVersion kong.VersionFlag `name:"version" help:"Print the version and exit."`

	Run      runCmd      `cmd:"" help:"The daemon: schedule, run, record and alert; SIGHUP reloads, SIGTERM drains."`
	Check    checkCmd    `cmd:"" help:"Run the probes once now and print their outcomes."`
	Validate validateCmd `cmd:"" help:"Load the config and compile every rule; no network."`
	History  historyCmd  `cmd:"" help:"Query recorded results, newest first."`
	Stats    statsCmd    `cmd:"" help:"Per probe: runs, outcome rates, retries, latency percentiles, drift."`
	Silence  silenceCmd  `cmd:"" help:"Mute alerts for a while: silence add, list, expire."`
	Baseline baselineCmd `cmd:"" help:"Learned response shapes: baseline reset --probe NAME after an intended change."`
	Store    storeCmd    `cmd:"" help:"The store as a whole: store copy --from FILE.db --to postgres://... moves a history to Postgres."`
	Test     testCmd     `cmd:"" help:"Run every consumer's fixtures; --mutate also finds the contract changes a rule would miss."`
	MCP      mcpCmd      `cmd:"" name:"mcp" help:"Look at an MCP server: mcp tools --url URL lists its tools."`
	Demo     demoCmd     `cmd:"" help:"Offline demo: a bundled provider that drifts, checked live."`
	Version  versionCmd  `cmd:"" help:"Print the version: release or dev, commit, commit time, Go version."`
}

type versionCmd struct{}

// Run prints the same line as --version.
func (versionCmd) Run(e *env) error {
	_, err := fmt.Fprintln(e.stdout, results.ReadBuild())
	return err
}

// configPath resolves the config file: the flag, then $TOOLPULSE_CONFIG,
// then ./checks.yaml.
func (c *cli) configPath(e *env) string {
	if c.Config != "" {
		return c.Config
	}
	if p, ok := e.lookupEnv("TOOLPULSE_CONFIG"); ok && p != "" {
		return p
	}
	return "checks.yaml"
}

// loadConfig loads and validates the config, mapping any error to exit 78
// with the positioned error list on stderr.
func (c *cli) loadConfig(e *env) (*checks.Config, error) {
	var cfg *checks.Config
	var err error
	e.withTightGC(func() { cfg, err = checks.Load(c.configPath(e), e.lookupEnv) })
	if err != nil {
		return nil, &exitError{code: exitConfig, err: err}
	}
	if c.DB != "" {
		cfg.Storage = dbStorage(c.DB, cfg.Storage)
	}
	return cfg, nil
}

// helpExit is how kong's --help unwinds out of parsing.
type helpExit struct{ code int }

// run parses args, runs the chosen command and returns the process exit
// code. It is main without the process: tests call it directly.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (code int) {
	e := &env{ctx: ctx, lookupEnv: lookupEnv, stdout: stdout, stderr: stderr}
	return e.run(args)
}

// run parses args, runs the chosen command in e and returns the exit code.
func (e *env) run(args []string) (code int) {
	stdout, stderr := e.stdout, e.stderr
	var c cli
	parser, err := kong.New(&c,
		kong.Name("toolpulse"),
		kong.Description("Synthetic checks that run the caller's own selection logic on every answer."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(helpExit{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Vars{"version": results.ReadBuild().String()},
	)
	if err != nil {
		fmt.Fprintf(stderr, "toolpulse: %v\n", err)
		return exitSoftware
	}
	defer func() {
		if p := recover(); p != nil {
			h, ok := p.(helpExit)
			if !ok {
				panic(p)
			}
			code = h.code
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "toolpulse: %v\n", err)
		if kctx != nil {
			fmt.Fprintln(stderr, "Run 'toolpulse --help' for usage.")
		}
		return exitUsage
	}
	return exitCode(kctx.Run(e, &c), stderr)
}

// exitCode maps a command's error to the process exit code, printing its
// message; this is the only place that decides exit codes.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var xe *exitError
	if !errors.As(err, &xe) {
		xe = &exitError{code: exitSoftware, err: err}
	}
	if xe.err != nil {
		var list checks.ErrorList
		if errors.As(xe.err, &list) {
			fmt.Fprintln(stderr, list.Error())
		} else {
			fmt.Fprintf(stderr, "toolpulse: %v\n", xe.err)
		}
	}
	return xe.code
}
