// Package examples ships the example configs, consumers and provider that
// the README, docs/ and `toolpulse demo` use. Every file here is loaded by a test,
// so the examples cannot rot.
package examples

import "embed"

// Demo holds examples/demo: the demo's checks.yaml and its consumer files,
// written to a temporary directory when the demo starts.
//
//go:embed demo
var Demo embed.FS
