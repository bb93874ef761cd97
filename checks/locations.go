package checks

import (
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/toolpulse/toolpulse/results"
)

// Named locations (SPEC §13, docs/locations.md).
//
// An instance runs in one location, fleet.location (default
// results.DefaultLocation), and a probe runs from the locations it lists
// in locations:. The set of a probe's locations is decided by the config
// alone, never by the instance reading it, so that every instance sharing
// one config (their fleet.location apart, typically through
// ${TOOLPULSE_LOCATION}) agrees on where each probe runs and on how many
// locations a K-of-N alert counts:
//
//  1. a probe's own locations: list is its locations;
//  2. otherwise defaults.locations, when written;
//  3. otherwise every location that some probe's own list names, in the
//     order the file first names them;
//  4. and when no probe and no defaults name any, the single location
//     "default": a config without locations runs every probe where every
//     instance runs when it names no fleet.location either, as before.
//
// fleet.location does not count: an instance knows only its own, so
// letting it in would give each location a different set. An instance
// whose fleet.location no probe runs from runs nothing (the daemon says
// so at start and on /healthz).

// MaxLocationLength bounds a location's name, a DNS label's length: it
// names lease rows, results and metric labels.
const MaxLocationLength = 63

// locationName is a location's syntax: lower-case letters, digits and '-'.
var locationName = regexp.MustCompile(`^[a-z0-9-]+$`)

var alertWhenKeys = []string{"locations"}

// AlertWhen is a probe's alert_when: how many of its locations must be
// failing before the fleet alerts on it (SPEC §13).
type AlertWhen struct {
	// Locations is alert_when.locations, between 1 and the number of the
	// probe's locations; 0: not written, see Probe.AlertLocations.
	Locations int
}

// RunsFrom reports whether p runs from location. A probe without
// Locations, which only a probe not built by the loader has, runs from
// results.DefaultLocation.
func (p *Probe) RunsFrom(location string) bool {
	if len(p.Locations) == 0 {
		return location == results.DefaultLocation
	}
	return slices.Contains(p.Locations, location)
}

// AlertLocations is K of the K-of-N decision: how many of p's locations
// must be failing, each by its own threshold, before the fleet alerts on
// p. alert_when.locations when written; otherwise every location when p
// has one or two, and a majority (more than half) when it has three or
// more. With one or two locations a majority would be all of them anyway
// for one, and for two "one of two" pages on any single network's
// routing trouble, which is what locations exist to filter out. With
// three or more a majority tolerates a minority of locations failing on
// their own, and still pages when most of the world cannot reach the
// provider; requiring all of them would let one healthy-looking location
// hide an outage everywhere else.
func (p *Probe) AlertLocations() int {
	n := len(p.Locations)
	switch {
	case p.AlertWhen.Locations > 0:
		return p.AlertWhen.Locations
	case n <= 2:
		return max(n, 1)
	}
	return n/2 + 1
}

// Locations returns every location some probe of c runs from, in the
// order the probes first name them: the locations whose instances run
// something.
func (c *Config) Locations() []string {
	var out []string
	for _, p := range c.Probes {
		for _, l := range p.Locations {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	return out
}

// probeLocations is what the loader saw of one probe's locations and
// alert_when, resolved once every probe is read (resolveLocations).
type probeLocations struct {
	probe     *Probe
	path      string
	own       bool     // the probe wrote locations:
	alertN    ast.Node // alert_when.locations; nil: not written
	alertPath string
}

// ValidLocation reports whether s is a location's name: 1 to
// MaxLocationLength lower-case letters, digits and '-'.
func ValidLocation(s string) bool { return len(s) <= MaxLocationLength && locationName.MatchString(s) }

// location decodes one location name, reporting a bad one at n.
func (d *decoder) location(n ast.Node, path string) (string, bool) {
	v, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	switch {
	case v == "":
		d.errorf(n, "%s: must not be empty; expected a location name such as eu-west", path)
	case len(v) > MaxLocationLength:
		d.errorf(n, "%s: must be at most %d characters, got %d", path, MaxLocationLength, len(v))
	case !locationName.MatchString(v):
		d.errorf(n, "%s: %q is not a valid location name; use lower-case letters, digits and -", path, v)
	default:
		return v, true
	}
	return "", false
}

// locationList decodes a locations: list (a probe's or defaults'): at
// least one valid name, none twice. ok is false when it was not usable.
func (d *decoder) locationList(e entry) (locs []string, ok bool) {
	items, ok := d.list(e.value, e.path)
	if !ok {
		return nil, false
	}
	if len(items) == 0 {
		d.errorf(e.value, "%s: must name at least one location; leave it out to run from the default locations", e.path)
		return nil, false
	}
	ok = true
	seen := map[string]ast.Node{}
	for i, item := range items {
		p := index(e.path, i)
		v, good := d.location(item, p)
		if !good {
			ok = false
			continue
		}
		if first, dup := seen[v]; dup {
			line, col := d.pos(first)
			d.errorf(item, "%s: location %q is listed twice; first at line %d, column %d", p, v, line, col)
			ok = false
			continue
		}
		seen[v] = item
		locs = append(locs, v)
	}
	return locs, ok
}

// probeLocationKey decodes a probe's locations or alert_when into p and
// pl; it reports whether key was one of them.
func (l *loader) probeLocationKey(e entry, p *Probe, pl *probeLocations) bool {
	d := l.d
	switch e.key {
	case "locations":
		pl.own = true
		p.Locations, _ = d.locationList(e)
	case "alert_when":
		d.object(e.value, e.path, alertWhenKeys, func(x entry) {
			v, ok := d.integer(x.value, x.path)
			if !ok {
				return
			}
			if v < 1 {
				d.errorf(x.value, "%s: must be at least 1 (locations failing before the probe alerts), got %d", x.path, v)
				return
			}
			p.AlertWhen.Locations = int(min(v, 1<<20))
			pl.alertN, pl.alertPath = x.value, x.path
		})
	default:
		return false
	}
	return true
}

// resolveLocations gives every probe its locations by the rule at the top
// of this file, then checks each alert_when against them. defaults is
// defaults.locations; nil when not written.
func (l *loader) resolveLocations(probes []probeLocations, defaults []string) {
	named := slices.Clone(defaults)
	for _, pl := range probes {
		if !pl.own {
			continue
		}
		for _, loc := range pl.probe.Locations {
			if !slices.Contains(named, loc) {
				named = append(named, loc)
			}
		}
	}
	if len(named) == 0 {
		named = []string{results.DefaultLocation}
	}
	fallback := named
	if defaults != nil {
		fallback = defaults
	}
	for _, pl := range probes {
		p := pl.probe
		if !pl.own || len(p.Locations) == 0 {
			p.Locations = slices.Clone(fallback)
		}
		if pl.alertN != nil && p.AlertWhen.Locations > len(p.Locations) {
			l.d.errorf(pl.alertN, "%s: must be at most %d, the number of the probe's locations (%s), got %d",
				pl.alertPath, len(p.Locations), strings.Join(p.Locations, ", "), p.AlertWhen.Locations)
		}
	}
}

// fleetLocation decodes fleet.location; "" (as ${TOOLPULSE_LOCATION:-}
// gives it) is the default.
func (l *loader) fleetLocation(x entry, f *Fleet) {
	if v, ok := l.d.str(x.value, x.path); !ok || v == "" {
		return
	}
	if v, ok := l.d.location(x.value, x.path); ok {
		f.Location = v
	}
}
