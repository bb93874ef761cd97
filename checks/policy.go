package checks

import (
	"time"

	"github.com/toolpulse/toolpulse/results"
)

// The alert policy's hysteresis keys (SPEC §13), in notify and in each
// route, beside failure_threshold.
var (
	hysteresisKeys    = []string{"success_threshold", "failure_window", "flapping"}
	failureWindowKeys = []string{"failures", "runs"}
	flappingKeys      = []string{"changes", "window", "stable_for"}
)

// DefaultSuccessThreshold resolves a failing probe on its first pass, as
// toolpulse always has.
const DefaultSuccessThreshold = 1

// FailureWindow is notify.failure_window: the probe is failing once
// Failures of its last Runs runs did not pass, whether or not they were
// consecutive. The zero FailureWindow is off: failure_threshold counts
// consecutive failures instead.
type FailureWindow struct {
	Failures, Runs int
}

// Successes is how many consecutive passes resolve a failing probe:
// success_threshold, DefaultSuccessThreshold when unset.
func (n Notify) Successes() int {
	if n.SuccessThreshold < 1 {
		return DefaultSuccessThreshold
	}
	return n.SuccessThreshold
}

// Enabled reports whether the window replaces failure_threshold.
func (w FailureWindow) Enabled() bool { return w.Runs > 0 }

// Flapping is notify.flapping: a probe whose failing/passing verdict
// changed more than Changes times within Window is flapping; it is quiet
// (one flapping alert) until the verdict has not changed for StableFor.
// The zero Flapping is off.
type Flapping struct {
	Changes   int
	Window    time.Duration
	StableFor time.Duration
}

// Enabled reports whether flap detection is on.
func (f Flapping) Enabled() bool { return f.Changes > 0 }

// hysteresisKey decodes success_threshold, failure_window or flapping
// into n; it reports whether x was one of them.
func (l *loader) hysteresisKey(x entry, n *Notify) bool {
	d := l.d
	switch x.key {
	case "success_threshold":
		v, ok := d.integer(x.value, x.path)
		if ok && v < 1 {
			d.errorf(x.value, "%s: must be at least 1 (consecutive passes before a failing probe is resolved), got %d", x.path, v)
		}
		n.SuccessThreshold = int(v)
	case "failure_window":
		n.FailureWindow = l.failureWindow(x)
	case "flapping":
		n.Flapping = l.flapping(x)
	default:
		return false
	}
	return true
}

// exclusiveWindow reports failure_threshold and failure_window set in
// the same block (notify, or one route): they are two answers to the same
// question. A route that sets one of them replaces the other it inherits.
func (l *loader) exclusiveWindow(present map[string]entry) {
	w, hasWindow := present["failure_window"]
	t, hasThreshold := present["failure_threshold"]
	if hasWindow && hasThreshold {
		line, col := l.d.pos(t.keyN)
		l.d.errorf(w.keyN, "%s: cannot be set with failure_threshold (line %d:%d): a window of runs replaces consecutive failures; keep one", w.path, line, col)
	}
}

func (l *loader) failureWindow(e entry) FailureWindow {
	d := l.d
	var w FailureWindow
	present, ok := d.object(e.value, e.path, failureWindowKeys, func(x entry) {
		v, ok := d.integer(x.value, x.path)
		if !ok {
			return
		}
		if v < 1 || v > results.MaxWindowRuns {
			d.errorf(x.value, "%s: must be from 1 to %d, got %d", x.path, results.MaxWindowRuns, v)
			return
		}
		if x.key == "failures" {
			w.Failures = int(v)
		} else {
			w.Runs = int(v)
		}
	})
	if !ok {
		return FailureWindow{}
	}
	for _, k := range failureWindowKeys {
		if _, has := present[k]; !has {
			d.errorf(e.value, "%s: %s is required, as in failure_window: {failures: 3, runs: 5}", e.path, k)
			return FailureWindow{}
		}
	}
	if w.Failures > w.Runs && w.Runs > 0 {
		d.errorf(present["failures"].value, "%s.failures: %d failures cannot happen in %d runs; expected at most runs", e.path, w.Failures, w.Runs)
	}
	return w
}

func (l *loader) flapping(e entry) Flapping {
	d := l.d
	var f Flapping
	present, ok := d.object(e.value, e.path, flappingKeys, func(x entry) {
		switch x.key {
		case "changes":
			v, ok := d.integer(x.value, x.path)
			if ok && (v < 1 || v > results.MaxFlapChanges) {
				d.errorf(x.value, "%s: must be from 1 to %d, got %d", x.path, results.MaxFlapChanges, v)
				return
			}
			f.Changes = int(v)
		case "window", "stable_for":
			v, ok := d.duration(x.value, x.path)
			if ok && v <= 0 {
				d.errorf(x.value, "%s: must be positive, got %s", x.path, fmtDuration(v))
				return
			}
			if x.key == "window" {
				f.Window = v
			} else {
				f.StableFor = v
			}
		}
	})
	if !ok {
		return Flapping{}
	}
	for _, k := range []string{"changes", "window"} {
		if _, has := present[k]; !has {
			d.errorf(e.value, "%s: %s is required, as in flapping: {changes: 4, window: 30m, stable_for: 30m}", e.path, k)
			return Flapping{}
		}
	}
	if f.StableFor == 0 {
		f.StableFor = f.Window
	}
	return f
}

// hysteresisSchema returns the schema of the hysteresis keys, for notify
// and each route alike.
func (b *schemaBuilder) hysteresisSchema() map[string]any {
	count := func(most int) map[string]any { return intSchema(ptr(int64(1)), ptr(int64(most))) }
	return map[string]any{
		"success_threshold": withDoc(intSchema(ptr(int64(1)), nil), "consecutive passes before a failing probe is resolved; default 1"),
		"failure_window": withDoc(b.object("failure_window", failureWindowKeys, failureWindowKeys, map[string]any{
			"failures": withDoc(count(results.MaxWindowRuns), "failed runs among the last runs that make the probe failing; at most runs"),
			"runs":     withDoc(count(results.MaxWindowRuns), "how many of the latest runs are counted"),
		}), "instead of failure_threshold: fail when failures of the last runs did not pass"),
		"flapping": withDoc(b.object("flapping", flappingKeys, []string{"changes", "window"}, map[string]any{
			"changes":    withDoc(count(results.MaxFlapChanges), "a probe whose verdict changed more than this often within window is flapping"),
			"window":     durationSchema("the span the changes are counted in", true),
			"stable_for": durationSchema("a flapping probe is quiet until its verdict has not changed for this long; default: window", true),
		}), "off unless set"),
	}
}

// withHysteresis adds the hysteresis keys to props, the properties of
// notify or a route.
func (b *schemaBuilder) withHysteresis(props map[string]any) map[string]any {
	for k, v := range b.hysteresisSchema() {
		props[k] = v
	}
	return props
}

// exclusiveWindowSchema makes o, notify or a route, refuse
// failure_threshold beside failure_window.
func exclusiveWindowSchema(o map[string]any) map[string]any {
	o["not"] = map[string]any{"required": []string{"failure_threshold", "failure_window"}}
	return o
}
