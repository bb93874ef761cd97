package web

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/results"
)

// state is a probe's or a run's outcome as the page shows it: a class for
// the colour, and always the word and a symbol, so colour is never the
// only signal.
type state struct {
	Class, Word, Symbol string
}

var noData = state{Class: "none", Word: "no data", Symbol: "·"}

func stateOf(o results.Outcome) state {
	switch o {
	case results.Pass:
		return state{Class: "pass", Word: "pass", Symbol: "✓"}
	case results.ContractError:
		return state{Class: "contract_error", Word: "contract_error", Symbol: "✗"}
	case results.Unavailable:
		return state{Class: "unavailable", Word: "unavailable", Symbol: "!"}
	}
	return noData
}

// severity orders the overview: what needs a person first.
func severity(s state) int {
	switch s.Class {
	case "unavailable":
		return 0
	case "contract_error":
		return 1
	case "none":
		return 2
	}
	return 3
}

// moment is an instant as the page shows it: relative, with the exact UTC
// time on hover.
type moment struct {
	Ago, At string
}

func momentOf(now, t time.Time) moment {
	return moment{Ago: ago(now.Sub(t)), At: results.FormatTime(t)}
}

// ago is a duration in the largest unit that keeps it short: "12s ago",
// "5m ago", "3h ago", "2d ago".
func ago(d time.Duration) string {
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// since says how long the last outcome of runs (oldest first) has held:
// from the start of its unbroken streak, or "for 50+ runs" when the streak
// fills the whole window and its start is not known.
func since(now time.Time, runs []results.RecentRun) string {
	if len(runs) == 0 {
		return ""
	}
	last := runs[len(runs)-1].Outcome
	start := len(runs) - 1
	for start > 0 && runs[start-1].Outcome == last {
		start--
	}
	if start == 0 && len(runs) >= stripRuns {
		return fmt.Sprintf("for %d+ runs", len(runs))
	}
	return "for " + strings.TrimSuffix(ago(now.Sub(runs[start].StartedAt)), " ago")
}

// driftView is a drift event with its diff, cut to max lines when max > 0.
type driftView struct {
	When moment
	// Kind is "definition" for a change of an MCP tool's definition, with
	// its old and new description when that changed; "" for a change of
	// the response's shape.
	Kind              string
	Before, After     string
	Baseline, Current string
	Lines             []string
	More              int
	// Now says whether the probe's latest run is drifted and where it
	// stands against this drift (see driftNow); "" when the probe has no
	// run.
	Now string
	// Step is the step of a steps probe whose answer drifted; "" for a
	// single probe's drift.
	Step string
}

func newDriftView(now time.Time, d results.Drift, max int, latest *results.Result) *driftView {
	v := &driftView{When: momentOf(now, d.DetectedAt), Baseline: d.Baseline, Current: d.Current, Lines: d.Diff, Step: d.Step}
	if d.Step != "" && latest != nil {
		// A step's drift is judged against the latest run's answer of
		// that step, not the run's own (a steps run has none).
		step := &results.Result{}
		for _, st := range latest.Steps {
			if st.Name == d.Step {
				step.Shape = st.Shape
			}
		}
		latest = step
	}
	if d.Kind == results.DriftDefinition {
		// The latest run's shape says nothing about the tool's definition.
		v.Kind, v.Before, v.After = string(d.Kind), d.Before, d.After
	} else {
		v.Now = driftNow(d, latest)
	}
	if max > 0 && len(v.Lines) > max {
		v.Lines, v.More = v.Lines[:max], len(v.Lines)-max
	}
	return v
}

// driftNow says whether the latest run is drifted, as the daemon recorded
// it (against the probe's learned profile), and how it stands against the
// drift d reported: still in that shape, in a shape now learned, back to
// the baseline, or elsewhere.
func driftNow(d results.Drift, latest *results.Result) string {
	switch {
	case latest == nil:
		return ""
	case latest.Shape == nil:
		return "the latest run has no shape (no JSON answer)"
	case len(latest.Shape.Drift) > 0 && latest.Shape.Fingerprint == d.Current:
		return "the latest run is in this drifted shape"
	case len(latest.Shape.Drift) > 0:
		return "the latest run is drifted too, in another shape, " + latest.Shape.Fingerprint
	case latest.Shape.Fingerprint == d.Baseline:
		return "the latest run is back to the baseline shape"
	case latest.Shape.Fingerprint == d.Current:
		return "the latest run is in this shape, now learned: it no longer drifts"
	}
	return "the latest run fits the learned shape, in " + latest.Shape.Fingerprint
}

// requestView is what a probe's page shows of an HTTP probe's request:
// the method, host and path, never the query or headers, which may carry
// secrets. An MCP probe shows row.MCP instead.
type requestView struct {
	Method, Host, Path string
}

// newRequestView is what the probe page shows of p's request, or nil for
// an MCP probe and for a URL without a host.
func newRequestView(p *checks.Probe) *requestView {
	c := p.Call()
	if c == nil || c.MCP != nil {
		return nil
	}
	u, err := url.Parse(c.Request.URL)
	if err != nil || u.Host == "" {
		return nil
	}
	return &requestView{Method: cmp.Or(c.Request.Method, http.MethodGet), Host: u.Host, Path: p.ScrubURL(cmp.Or(u.EscapedPath(), "/"))}
}

// stepConfigView is one configured step of a steps probe as its page
// lists it: its name, kind and target (an HTTP step's method, host and
// path, never its query or headers; an MCP step's tool and server).
type stepConfigView struct {
	Name, Target string
	Kind         results.ProbeKind
	// Verify marks a step polled until its claim holds; Always one that
	// runs whatever happened.
	Verify, Always bool
}

// newStepConfigViews lists the steps of multi-step probe p.
func newStepConfigViews(p *checks.Probe) []stepConfigView {
	var out []stepConfigView
	for i := range p.Steps {
		st := &p.Steps[i]
		v := stepConfigView{Name: st.Name, Kind: st.Kind(), Verify: st.Until != nil, Always: st.Always}
		if st.MCP != nil {
			v.Target = "tool " + st.MCP.Tool + " at " + st.MCP.Server()
		} else {
			method := cmp.Or(st.Request.Method, http.MethodGet)
			if u, err := url.Parse(st.Request.URL); err == nil && u.Host != "" {
				v.Target = method + " " + u.Host + cmp.Or(u.Path, "/")
			} else {
				v.Target = method + " (URL not shown)"
			}
		}
		v.Target = p.ScrubURL(v.Target)
		out = append(out, v)
	}
	return out
}
