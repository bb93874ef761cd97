// Package harness stands toolpulse up end to end from the outside: it
// builds and launches the real binary, writes its checks.yaml from typed
// values, and plays the peers it talks to on loopback, a recording Slack
// webhook and fake tool providers.
//
// It is a normal package, not a test file, because toolpulse-bench (a
// command) drives the daemon the same way the end-to-end tests do. Only
// tests and toolpulse-bench import it; toolpulse itself never does. It
// imports neither testing nor internal/testkit: internal/testkit/e2e ties
// it to a *testing.T.
package harness
