package prober

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/internal/mcptest"
	"github.com/toolpulse/toolpulse/internal/probetest"
	"github.com/toolpulse/toolpulse/internal/testkit"
	"github.com/toolpulse/toolpulse/results"
)

// memoryProbe is a stdio probe of server-memory's read_graph, the canary
// of SPEC §10.1, run with node directly.
func memoryProbe(srv mcptest.NPMServer, argv []string, env map[string]checks.Secret) *checks.Probe {
	return &checks.Probe{
		Name: "memory_canary",
		Steps: []checks.Step{{
			MCP:      &checks.MCP{Command: argv, Env: env, Tool: "read_graph", Arguments: map[string]any{}, IsError: results.ContractError},
			Consumer: probetest.MustConsumer("graph", "response.entities", "true"),
			Timeout:  20 * time.Second,
			Retries:  checks.Retries{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, Budget: 60 * time.Second},
			Expect:   checks.Expect{Status: []int{200}},
		}},
		MaxBodyBytes: 1 << 20,
	}
}

// TestStdioProbeRuns: a stdio probe of a real npm server passes through the
// attempt loop with expect.status left out of it (there is no HTTP status),
// its rows name the server's start and stop; one whose server cannot start
// is server_exited, unavailable and retried, with node's complaint, its env
// redacted, in the message.
func TestStdioProbeRuns(t *testing.T) {
	srv := mcptest.FindNPMServer(t, mcptest.MemoryPackage)
	mcptest.InPrivateNetwork(t, func(t *testing.T) {
		defer testkit.NoLeaks(t)()
		dir := t.TempDir()
		env := map[string]checks.Secret{"MEMORY_FILE_PATH": checks.Secret(filepath.Join(dir, "memory-secret-path.jsonl"))}

		res := NewExecutor(Options{}).Run(context.Background(), memoryProbe(srv, []string{srv.Node, srv.Entry}, env))
		if res.Outcome != results.Pass || res.HTTPStatus != 0 || res.AttemptCount() != 1 {
			t.Fatalf("run: %s; want a pass in one attempt without an HTTP status", probetest.Dump(res))
		}
		var methods []string
		for _, a := range res.Attempts {
			methods = append(methods, a.Method)
			if a.HTTPStatus != 0 {
				t.Errorf("row %s has HTTP status %d", a.Method, a.HTTPStatus)
			}
		}
		if got := strings.Join(methods, ","); !strings.HasPrefix(got, "start server,") || !strings.HasSuffix(got, ",tools/call,stop server") {
			t.Errorf("rows %s: want start server first, then the session, stop server last", got)
		}

		missing := filepath.Join(dir, "memory-secret-path.jsonl") // not a script: node fails on it
		res = NewExecutor(Options{}).Run(context.Background(), memoryProbe(srv, []string{srv.Node, missing + ".js"}, env))
		if res.Outcome != results.Unavailable || res.Code() != results.CodeServerExited || res.AttemptCount() != 2 {
			t.Fatalf("run: %s; want server_exited in both attempts", probetest.Dump(res))
		}
		if msg := res.Error.Message; !strings.Contains(msg, "Error: Cannot find module") || strings.Contains(msg, "memory-secret-path") {
			t.Errorf("message %q: want node's error, the env's value redacted", msg)
		}
	})
}
