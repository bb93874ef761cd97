package checks

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
)

// MinLease is the shortest fleet.lease the loader accepts.
const MinLease = 2 * time.Second

// MaxNodeLength bounds fleet.node, in characters: every result records it.
const MaxNodeLength = 128

func (l *loader) storage(e entry, s *Storage) {
	d := l.d
	var driverN, pathN, dsnN ast.Node
	driverOK := true
	d.object(e.value, e.path, storageKey, func(x entry) {
		switch x.key {
		case "driver":
			driverN = x.value
			v, ok := d.str(x.value, x.path)
			if !ok {
				driverOK = false
				return
			}
			switch v {
			case DriverSQLite, DriverPostgres:
				s.Driver = v
			default:
				driverOK = false
				d.errorf(x.value, "%s: unknown driver %q; expected %s (the default: one file) or %s (a fleet's shared database)", x.path, v, DriverSQLite, DriverPostgres)
			}
		case "path":
			pathN = x.value
			p, ok := d.str(x.value, x.path)
			if ok && strings.TrimSpace(p) == "" {
				d.errorf(x.value, "%s: expected the path of the SQLite file, got an empty string", x.path)
			}
			s.Path = l.abs(p)
		case "dsn":
			dsnN = x.value
			v, ok := d.str(x.value, x.path)
			if !ok {
				return
			}
			s.DSN = Secret(v)
			if problem := dsnProblem(v); v != "" && problem != "" {
				// The DSN holds the password: say what is wrong, never what it is.
				d.errorf(x.value, "%s: expected a postgres:// URL or key=value settings such as host=127.0.0.1 dbname=toolpulse: %s", x.path, problem)
			}
		case "retention":
			v, ok := d.duration(x.value, x.path)
			if ok && v < 0 {
				d.errorf(x.value, "%s: must not be negative (0 keeps everything), got %s", x.path, fmtDuration(v))
			}
			s.Retention = v
		}
	})
	if !driverOK {
		return
	}
	switch s.Driver {
	case DriverPostgres:
		if pathN != nil {
			d.errorf(pathN, "%s.path: the postgres driver keeps results in the database storage.dsn names, not in a file; remove path", e.path)
		}
		if dsnN == nil {
			d.errorf(driverN, "%s.driver: postgres needs storage.dsn, the database's connection string, such as ${TOOLPULSE_PG_DSN}", e.path)
		} else if s.DSN == "" {
			d.errorf(dsnN, "%s.dsn: the postgres driver needs a connection string, got an empty one", e.path)
		}
		s.Path = ""
	default:
		// An empty dsn is allowed, so that one config can take
		// dsn: ${TOOLPULSE_PG_DSN:-} whichever driver it runs with.
		if s.DSN != "" {
			d.errorf(dsnN, "%s.dsn: a connection string goes with driver: postgres; the %s driver keeps results in the file storage.path names", e.path, DriverSQLite)
		}
		s.DSN = ""
	}
}

// dsnProblem says why s is not a Postgres connection string, or "". It
// never repeats s: it holds the password.
func dsnProblem(s string) string {
	if !strings.Contains(s, "://") {
		if !strings.Contains(s, "=") {
			return "neither a URL nor key=value settings"
		}
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return "not a valid URL"
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return fmt.Sprintf("scheme %q; expected postgres or postgresql", u.Scheme)
	}
	return ""
}

// dsnPassword returns the password in a Postgres connection string, URL
// (user:pass@, or ?password=) or key=value (password=pass, or
// password='pass word'), or "".
func dsnPassword(dsn string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return ""
		}
		if u.User != nil {
			if p, ok := u.User.Password(); ok {
				return p
			}
		}
		return u.Query().Get("password")
	}
	rest := dsn
	for rest != "" {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		key, after, ok := strings.Cut(rest, "=")
		if !ok {
			return ""
		}
		key = strings.TrimSpace(key)
		after = strings.TrimLeftFunc(after, unicode.IsSpace)
		var value string
		value, rest = dsnValue(after)
		if key == "password" {
			return value
		}
	}
	return ""
}

// dsnValue reads one value of key=value settings, quoted ('a b', with \'
// and \\) or bare, and returns it with what follows it.
func dsnValue(s string) (value, rest string) {
	if !strings.HasPrefix(s, "'") {
		end := strings.IndexFunc(s, unicode.IsSpace)
		if end < 0 {
			return s, ""
		}
		return s[:end], s[end:]
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == '\'':
			return b.String(), s[i+1:]
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), ""
}

func (l *loader) fleet(e entry, f *Fleet) {
	d := l.d
	d.object(e.value, e.path, fleetKeys, func(x entry) {
		switch x.key {
		case "node":
			v, ok := d.str(x.value, x.path)
			if !ok || v == "" {
				return // "" is the default, as ${TOOLPULSE_NODE:-} gives it
			}
			switch {
			case strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
				d.errorf(x.value, "%s: %q must not contain whitespace or control characters", x.path, v)
			case utf8.RuneCountInString(v) > MaxNodeLength:
				d.errorf(x.value, "%s: must be at most %d characters, got %d", x.path, MaxNodeLength, utf8.RuneCountInString(v))
			default:
				f.Node = v
			}
		case "lease":
			v, ok := d.duration(x.value, x.path)
			if !ok {
				return
			}
			if v < MinLease {
				d.errorf(x.value, "%s: must be at least %s, got %s", x.path, fmtDuration(MinLease), fmtDuration(v))
			}
			f.Lease = v
		case "location":
			l.fleetLocation(x, f)
		}
	})
}

// defaultNode is fleet.node when the config gives none: the host name and
// the process id, unique among the instances of one host and, with
// distinct host names, of a fleet.
func defaultNode() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "toolpulse"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}
