package checks

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// Built-in defaults (SPEC §3). A `defaults:` block overrides them, and each
// probe overrides that, field by field.
const (
	DefaultStoragePath      = "toolpulse.db"
	DefaultStorageDriver    = DriverSQLite
	DefaultLease            = 10 * time.Second
	DefaultRetention        = 720 * time.Hour
	DefaultListen           = "127.0.0.1:9321"
	DefaultMaxConcurrency   = 64
	DefaultInterval         = time.Minute
	DefaultJitter           = 5 * time.Second // at most a tenth of the interval when no config writes a jitter (fitJitter)
	DefaultTimeout          = 5 * time.Second
	DefaultMaxBodyBytes     = 1 << 20
	DefaultMaxAttempts      = 3
	DefaultBaseDelay        = 200 * time.Millisecond
	DefaultMaxDelay         = 2 * time.Second
	DefaultBudget           = 15 * time.Second
	DefaultMinResults       = 1
	DefaultFailureThreshold = 1
	DefaultRepeatInterval   = time.Hour
	DefaultSendResolved     = true
	// DefaultUpdateOnCodeChange: a firing alert whose code changes (timeout
	// to server_error) sends an update, as a change of outcome always does.
	DefaultUpdateOnCodeChange = true
)

// DefaultStatus and DefaultNotifyOn are the built-in expect.status and
// notify.on. Callers must not modify them.
var (
	DefaultStatus   = []int{200}
	DefaultNotifyOn = []string{"contract_error", "unavailable", "shape_drift"}
)

// Where a setting came from: the more specific origin is blamed when two
// settings conflict, because that is the one the user last wrote.
const (
	fromBuiltin = iota
	fromDefaults
	fromProbe
)

// setting is one inheritable probe setting with where it was written.
type setting[T any] struct {
	v      T
	node   ast.Node // nil for a built-in default
	path   string
	origin int
	set    bool
	bad    bool // invalid on its own; cross-field checks skip it
}

func builtin[T any](v T) setting[T] { return setting[T]{v: v, set: true} }

// over returns o when it was written, s otherwise.
func (s setting[T]) over(o setting[T]) setting[T] {
	if o.set {
		return o
	}
	return s
}

// tuning is every setting a probe inherits from defaults:.
type tuning struct {
	interval, jitter, timeout   setting[time.Duration]
	maxBodyBytes                setting[int64]
	maxAttempts                 setting[int]
	baseDelay, maxDelay, budget setting[time.Duration]
	status                      setting[[]int]
	minResults                  setting[int]
	trace                       setting[bool]
	probe                       string // the probe's name; "" for defaults:
}

func builtinTuning() tuning {
	return tuning{
		interval:     builtin(DefaultInterval),
		jitter:       builtin(DefaultJitter),
		timeout:      builtin(DefaultTimeout),
		maxBodyBytes: builtin(int64(DefaultMaxBodyBytes)),
		maxAttempts:  builtin(DefaultMaxAttempts),
		baseDelay:    builtin(DefaultBaseDelay),
		maxDelay:     builtin(DefaultMaxDelay),
		budget:       builtin(DefaultBudget),
		status:       builtin(DefaultStatus),
		minResults:   builtin(DefaultMinResults),
		trace:        builtin(true),
	}
}

// over applies o's written fields on top of t.
func (t tuning) over(o tuning) tuning {
	t.interval = t.interval.over(o.interval)
	t.jitter = t.jitter.over(o.jitter)
	t.timeout = t.timeout.over(o.timeout)
	t.maxBodyBytes = t.maxBodyBytes.over(o.maxBodyBytes)
	t.maxAttempts = t.maxAttempts.over(o.maxAttempts)
	t.baseDelay = t.baseDelay.over(o.baseDelay)
	t.maxDelay = t.maxDelay.over(o.maxDelay)
	t.budget = t.budget.over(o.budget)
	t.status = t.status.over(o.status)
	t.minResults = t.minResults.over(o.minResults)
	t.trace = t.trace.over(o.trace)
	return t
}

var (
	tuningKeys = []string{"interval", "jitter", "timeout", "max_body_bytes", "retries", "expect"}
	// defaultsKeys are those of defaults:, tuningKeys, trace and the probes'
	// default locations (locations.go).
	defaultsKeys = append(slices.Clone(tuningKeys), "locations", "trace")
	retriesKeys  = []string{"max_attempts", "base_delay", "max_delay", "budget"}
	expectKeys   = []string{"status", "min_results"}
)

// tuningKey decodes one of tuningKeys into t, validating the value on its
// own; it reports whether key was one of them.
func (d *decoder) tuningKey(e entry, origin int, t *tuning) bool {
	switch e.key {
	case "interval":
		t.interval = positiveDuration(d, e.value, e.path, origin)
	case "jitter":
		s := durationSetting(d, e.value, e.path, origin)
		if s.set && !s.bad && s.v < 0 {
			d.errorf(e.value, "%s: must not be negative, got %s", e.path, fmtDuration(s.v))
			s.bad = true
		}
		t.jitter = s
	case "timeout":
		t.timeout = positiveDuration(d, e.value, e.path, origin)
	case "max_body_bytes":
		v, ok := d.integer(e.value, e.path)
		s := setting[int64]{v: v, node: e.value, path: e.path, origin: origin, set: true, bad: !ok}
		if ok && v <= 0 {
			d.errorf(e.value, "%s: must be positive, got %d", e.path, v)
			s.bad = true
		}
		t.maxBodyBytes = s
	case "retries":
		d.object(e.value, e.path, retriesKeys, func(r entry) {
			switch r.key {
			case "max_attempts":
				v, ok := d.integer(r.value, r.path)
				s := setting[int]{v: int(v), node: r.value, path: r.path, origin: origin, set: true, bad: !ok}
				if ok && (v < 1 || v > 10) {
					d.errorf(r.value, "%s: must be between 1 and 10 (attempts in total, the first included), got %d", r.path, v)
					s.bad = true
				}
				t.maxAttempts = s
			case "base_delay":
				t.baseDelay = positiveDuration(d, r.value, r.path, origin)
			case "max_delay":
				t.maxDelay = positiveDuration(d, r.value, r.path, origin)
			case "budget":
				t.budget = positiveDuration(d, r.value, r.path, origin)
			}
		})
	case "expect":
		d.object(e.value, e.path, expectKeys, func(x entry) {
			switch x.key {
			case "status":
				t.status = d.statusList(x, origin)
			case "min_results":
				v, ok := d.integer(x.value, x.path)
				s := setting[int]{v: int(v), node: x.value, path: x.path, origin: origin, set: true, bad: !ok}
				if ok && v < 0 {
					d.errorf(x.value, "%s: must not be negative, got %d", x.path, v)
					s.bad = true
				}
				t.minResults = s
			}
		})
	case "trace":
		v, ok := d.boolean(e.value, e.path)
		t.trace = setting[bool]{v: v, node: e.value, path: e.path, origin: origin, set: true, bad: !ok}
	default:
		return false
	}
	return true
}

func (d *decoder) statusList(x entry, origin int) setting[[]int] {
	s := setting[[]int]{node: x.value, path: x.path, origin: origin, set: true}
	items, ok := d.list(x.value, x.path)
	if !ok {
		s.bad = true
		return s
	}
	if len(items) == 0 {
		d.errorf(x.value, "%s: must list at least one status code, such as [200]", x.path)
		s.bad = true
		return s
	}
	for i, item := range items {
		p := index(x.path, i)
		v, ok := d.integer(item, p)
		if !ok {
			s.bad = true
			continue
		}
		if v < 100 || v > 599 {
			d.errorf(item, "%s: %d is not an HTTP status code; expected 100 to 599", p, v)
			s.bad = true
			continue
		}
		s.v = append(s.v, int(v))
	}
	return s
}

func durationSetting(d *decoder, n ast.Node, path string, origin int) setting[time.Duration] {
	v, ok := d.duration(n, path)
	return setting[time.Duration]{v: v, node: n, path: path, origin: origin, set: true, bad: !ok}
}

func positiveDuration(d *decoder, n ast.Node, path string, origin int) setting[time.Duration] {
	s := durationSetting(d, n, path, origin)
	if !s.bad && s.v <= 0 {
		d.errorf(n, "%s: must be positive, got %s", path, fmtDuration(s.v))
		s.bad = true
	}
	return s
}

// fitJitter gives a jitter nobody wrote the smaller of DefaultJitter and a
// tenth of the interval, so that a default never makes a short interval
// invalid: interval 5s gets 500ms, 1s gets 100ms, 1m and longer keep 5s.
// A jitter the user wrote is kept as written, and check judges it.
func fitJitter(t tuning) tuning {
	if t.jitter.origin == fromBuiltin && !t.interval.bad {
		t.jitter.v = min(DefaultJitter, t.interval.v/10)
	}
	return t
}

// check reports the rules that relate two settings. It runs on the
// resolved defaults and on every probe; a conflict that a probe inherits
// unchanged is reported once, at the defaults, because the identical error
// is removed from the list.
func (d *decoder) check(t tuning) {
	if ok2(t.jitter, t.interval) && t.jitter.v >= t.interval.v {
		j, i := fmtDuration(t.jitter.v), fmtDuration(t.interval.v)
		if t.jitter.origin != t.interval.origin {
			// Written in two places: say where each value came from, as
			// the error can point at only one of them.
			j += ", " + t.origin(t.jitter)
			i += ", " + t.origin(t.interval)
		}
		d.blame(t.jitter, t.interval, "jitter (%s) must be less than interval (%s)", j, i)
	}
	if ok2(t.maxDelay, t.baseDelay) && t.maxDelay.v < t.baseDelay.v {
		d.blame(t.maxDelay, t.baseDelay, "retries.max_delay (%s) must be at least retries.base_delay (%s)", fmtDuration(t.maxDelay.v), fmtDuration(t.baseDelay.v))
	}
	if ok2(t.budget, t.timeout) && t.budget.v < t.timeout.v {
		d.blame(t.budget, t.timeout, "retries.budget (%s) must be at least timeout (%s), so that one attempt fits in it", fmtDuration(t.budget.v), fmtDuration(t.timeout.v))
	}
}

// origin says where a setting of t was written, for an error that relates
// two settings written in different places.
func (t tuning) origin(s setting[time.Duration]) string {
	switch {
	case s.origin == fromBuiltin:
		return "the built-in default"
	case s.origin == fromDefaults:
		return "from defaults"
	case t.probe != "":
		return "probe " + t.probe
	}
	return "from the probe"
}

func ok2[A, B any](a setting[A], b setting[B]) bool { return !a.bad && !b.bad }

// blame reports a conflict at the more specific of the two settings, or at
// the first when both come from the same place.
func (d *decoder) blame(a, b interface {
	where() (ast.Node, string, int)
}, format string, args ...any) {
	n, path, origin := a.where()
	if bn, bpath, borigin := b.where(); borigin > origin {
		n, path = bn, bpath
	}
	if n == nil {
		return
	}
	d.errorf(n, "%s: %s", path, fmt.Sprintf(format, args...))
}

func (s setting[T]) where() (ast.Node, string, int) { return s.node, s.path, s.origin }

// fmtDuration prints a duration the way users write it: 1m, not 1m0s.
func fmtDuration(v time.Duration) string {
	s := v.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
