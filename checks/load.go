package checks

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"

	"github.com/toolpulse/toolpulse/consumers"
	"github.com/toolpulse/toolpulse/results"
)

// maxConfigBytes bounds checks.yaml; a config is a few kilobytes.
const maxConfigBytes = 16 << 20

var (
	topKeys    = []string{"version", "storage", "fleet", "server", "max_concurrency", "defaults", "notify", "consumers", "probes", "maintenance"}
	storageKey = []string{"driver", "path", "dsn", "retention"}
	fleetKeys  = []string{"node", "lease", "location"}
	serverKeys = []string{"listen", "token", "public_url"}
	notifyKeys = append(append([]string{"slack", "routes", "on", "failure_threshold", "repeat_interval", "send_resolved", "update_on_code_change"}, hysteresisKeys...), groupingKeys...)
	slackKeys  = []string{"webhook_url", "token", "channel", "api_url"}
	alertOn    = []string{"contract_error", "unavailable", "shape_drift"}
)

// Load reads the config file at path and returns it fully resolved: every
// default applied, every rule compiled, every CA file read. Otherwise it
// returns an ErrorList with every error found, each naming file:line:col;
// file names are path as given and, for files the config names (consumer
// files, CA files), path's directory joined with their relative name.
// A file that cannot be read at all gives one Error with Line 0.
//
// lookupEnv resolves ${VAR} references; pass os.LookupEnv, or a map lookup
// in tests. nil means an empty environment.
func Load(path string, lookupEnv func(string) (string, bool)) (*Config, error) {
	data, err := readSmallConfig(path)
	if err != nil {
		return nil, ErrorList{{File: path, Message: "cannot read config: " + err.Error()}}
	}
	return Parse(path, data, filepath.Dir(path), lookupEnv)
}

func readSmallConfig(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, pathErr(err)
	}
	if fi.Size() > maxConfigBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxConfigBytes)
	}
	data, err := os.ReadFile(path)
	return data, pathErr(err)
}

// Parse is Load on data already read: filename names the file in errors
// and dir is the directory the config lives in, against which its relative
// paths (storage, consumer files, CA files) are resolved. Config.Path is
// filename's base name in dir, made absolute.
func Parse(filename string, data []byte, dir string, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	l := &loader{
		dir:        dir,
		errs:       &ErrorList{},
		consumers:  map[string]*consumers.Consumer{},
		consumerAt: map[string]place{},
	}
	cfg := l.load(filename, data, lookupEnv)
	if err := l.errs.Err(); err != nil {
		return nil, err
	}
	cfg.Digest = digest(data)
	return cfg, nil
}

// FileDigest reads the config file at path, as Load would, and returns
// the digest Load records in Config.Digest: equal digests mean the same
// bytes.
func FileDigest(path string) (string, error) {
	data, err := readSmallConfig(path)
	if err != nil {
		return "", err
	}
	return digest(data), nil
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// loader holds what decoding one config needs across its sections.
type loader struct {
	d          *decoder // checks.yaml
	dir        string
	errs       *ErrorList
	consumers  map[string]*consumers.Consumer // compiled, by name
	consumerAt map[string]place               // defined (compiled or not), by name
	probeAt    map[string]ast.Node
	scope      *scope // what the probe being decoded may name in templates and rules
	// urlSecrets are the secrets of the probe being decoded's URLs.
	urlSecrets []Secret
	// probeLocs are the probes' locations as written, resolved once all
	// are read (resolveLocations).
	probeLocs []probeLocations
}

func (l *loader) load(filename string, data []byte, lookupEnv func(string) (string, bool)) *Config {
	d, root := parseYAML(filename, data, l.errs, lookupEnv)
	l.d = d
	if root == nil {
		return nil
	}
	cfg := &Config{
		Path:           l.abs(filepath.Base(filename)),
		Storage:        Storage{Driver: DefaultStorageDriver, Path: l.abs(DefaultStoragePath), Retention: DefaultRetention},
		Fleet:          Fleet{Lease: DefaultLease, Location: results.DefaultLocation},
		Server:         Server{Listen: DefaultListen},
		MaxConcurrency: DefaultMaxConcurrency,
		Notify: Notify{
			On:                 slices.Clone(DefaultNotifyOn),
			FailureThreshold:   DefaultFailureThreshold,
			RepeatInterval:     DefaultRepeatInterval,
			SendResolved:       DefaultSendResolved,
			UpdateOnCodeChange: DefaultUpdateOnCodeChange,
			Grouping:           Grouping{GroupWait: DefaultGroupWait, GroupInterval: DefaultGroupInterval},
		},
		Consumers: l.consumers,
	}
	// Sections are collected first and decoded in dependency order below:
	// probes refer to consumers and inherit defaults wherever they appear.
	sections, ok := d.object(root, "", topKeys, func(entry) {})
	if !ok {
		return nil
	}

	if e, ok := sections["version"]; !ok {
		d.errorf(root, "version is required; expected version: 1")
	} else if v, ok := d.integer(e.value, e.path); ok {
		if v != 1 {
			d.errorf(e.value, "version: unsupported version %d; expected 1", v)
		}
		cfg.Version = int(v)
	}
	if e, ok := sections["storage"]; ok {
		l.storage(e, &cfg.Storage)
	}
	if e, ok := sections["fleet"]; ok {
		l.fleet(e, &cfg.Fleet)
	}
	if cfg.Fleet.Node == "" {
		cfg.Fleet.Node = defaultNode()
	}
	if e, ok := sections["server"]; ok {
		l.server(e, &cfg.Server)
	}
	if e, ok := sections["max_concurrency"]; ok {
		if v, ok := d.integer(e.value, e.path); ok {
			if v < 1 {
				d.errorf(e.value, "max_concurrency: must be at least 1, got %d", v)
			}
			cfg.MaxConcurrency = int(v)
		}
	}
	defaults := builtinTuning()
	var defaultLocations []string // nil: defaults.locations not written
	if e, ok := sections["defaults"]; ok {
		var t tuning
		d.object(e.value, e.path, defaultsKeys, func(x entry) {
			if x.key == "locations" {
				defaultLocations, _ = d.locationList(x)
				return
			}
			d.tuningKey(x, fromDefaults, &t)
		})
		defaults = fitJitter(defaults.over(t))
		d.check(defaults)
	}
	if e, ok := sections["notify"]; ok {
		l.notify(e, &cfg.Notify)
	}
	if e, ok := sections["consumers"]; ok {
		items, _ := d.list(e.value, e.path)
		for i, item := range items {
			l.consumerEntry(item, index(e.path, i))
		}
	}
	if e, ok := sections["probes"]; ok {
		items, _ := d.list(e.value, e.path)
		l.probeAt = map[string]ast.Node{}
		for i, item := range items {
			if p := l.probe(item, index(e.path, i), defaults); p != nil {
				cfg.Probes = append(cfg.Probes, p)
			}
		}
	}
	l.resolveLocations(l.probeLocs, defaultLocations)
	if e, ok := sections["maintenance"]; ok {
		cfg.Maintenance = l.maintenance(e, cfg.Probes)
	}
	return cfg
}

// rel names a file the config refers to: joined with the config's
// directory unless absolute. It is both the path read and the name errors
// give, so that a relative config path keeps every name relative to the
// working directory.
func (l *loader) rel(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(l.dir, p)
}

// abs resolves a path from the config against the config's directory.
func (l *loader) abs(p string) string {
	p = l.rel(p)
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func (l *loader) server(e entry, s *Server) {
	d := l.d
	var listenN, tokenN ast.Node
	listenOK := true
	d.object(e.value, e.path, serverKeys, func(x entry) {
		switch x.key {
		case "listen":
			s.Listen, listenOK = d.str(x.value, x.path)
			listenN = x.value
		case "token":
			v, _ := d.str(x.value, x.path)
			s.Token = Secret(v)
			tokenN = x.value
		case "public_url":
			v, ok := d.str(x.value, x.path)
			if !ok || v == "" {
				return
			}
			if problem := publicURLProblem(v); problem != "" {
				d.errorf(x.value, "%s: expected an absolute http:// or https:// URL such as https://toolpulse.example.com: %s", x.path, problem)
				return
			}
			s.PublicURL = strings.TrimRight(v, "/")
		}
	})
	if listenN == nil || !listenOK || s.Listen == "" {
		return
	}
	host, port, err := net.SplitHostPort(s.Listen)
	if n, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil || n > 65535 {
		d.errorf(listenN, "server.listen: expected host:port such as 127.0.0.1:9321, or \"\" to disable the server, got %q", s.Listen)
		return
	}
	if isLoopback(host) {
		return
	}
	if s.Token == "" {
		d.errorf(listenN, "server.listen: %s is not a loopback address, so server.token is required (clients send it as a bearer token)", s.Listen)
		return
	}
	if problem := weakToken(s.Token.Reveal()); problem != "" {
		d.errorf(tokenN, "server.token: %s is not a loopback address, so the token is all that stands between the network and the server: %s", s.Listen, problem)
	}
}

// MinTokenLength is the fewest characters server.token may have when the
// server listens beyond loopback.
const MinTokenLength = 16

// weakToken says why token is too weak to guard a server other hosts can
// reach, or "". It never quotes the token.
func weakToken(token string) string {
	if n := utf8.RuneCountInString(token); n < MinTokenLength {
		return fmt.Sprintf("it must be at least %d characters, got %d (generate one with: openssl rand -hex 32)", MinTokenLength, n)
	}
	if strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return "it must not contain whitespace or control characters"
	}
	return ""
}

// isLoopback reports whether a listen host only accepts local clients. An
// empty host listens on every interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (l *loader) notify(e entry, n *Notify) {
	d := l.d
	var routes *entry
	present, _ := d.object(e.value, e.path, notifyKeys, func(x entry) {
		switch {
		case x.key == "slack":
			l.slack(x, &n.Slack)
		case x.key == "routes":
			// Routes start from the top-level policy, which may come later.
			routes = &x
		default:
			l.policyKey(x, n)
		}
	})
	l.exclusiveWindow(present)
	if routes != nil {
		n.Routes = l.routes(*routes, n.Default().Notify)
	}
}

func (l *loader) slack(e entry, s *Slack) {
	d := l.d
	at := map[string]ast.Node{}
	d.object(e.value, e.path, slackKeys, func(x entry) {
		v, ok := d.str(x.value, x.path)
		if !ok {
			return
		}
		at[x.key] = x.value
		switch x.key {
		case "webhook_url":
			s.WebhookURL = Secret(v)
			if v != "" {
				if problem := httpURLProblem(v); problem != "" {
					// The URL is the credential: say what is wrong, never what it is.
					d.errorf(x.value, "%s: expected an absolute http:// or https:// URL: %s", x.path, problem)
				}
			}
		case "token":
			s.Token = Secret(v)
		case "channel":
			s.Channel = v
		case "api_url":
			s.APIURL = v
			if v != "" {
				if problem := httpURLProblem(v); problem != "" {
					d.errorf(x.value, "%s: expected an absolute http:// or https:// URL: %s", x.path, problem)
				}
			}
		}
	})
	switch {
	case s.WebhookURL != "" && s.Token != "":
		d.errorf(at["token"], "%s.token: give either webhook_url, or token with channel, not both", e.path)
	case s.Token != "" && s.Channel == "":
		d.errorf(at["token"], "%s.token: a bot token needs channel: the channel to post to", e.path)
	case s.Channel != "" && s.WebhookURL != "":
		d.errorf(at["channel"], "%s.channel: a webhook posts to its own channel; channel goes with token", e.path)
	case s.Channel != "" && at["token"] == nil:
		d.errorf(at["channel"], "%s.channel: channel needs token (a Slack bot token)", e.path)
	}
}

// publicURLProblem says why s cannot prefix the links in messages, or "".
func publicURLProblem(s string) string {
	if p := httpURLProblem(s); p != "" {
		return p
	}
	u, _ := url.Parse(s)
	switch {
	case u.User != nil:
		return "it must not carry credentials: it is shown in every message"
	case u.RawQuery != "" || u.Fragment != "":
		return "it must not have a query or fragment"
	}
	return ""
}

// httpURLProblem says why s is not an absolute http(s) URL, or "". It never
// repeats the URL: it may carry credentials.
func httpURLProblem(s string) string {
	if !strings.Contains(s, "://") {
		return "no scheme"
	}
	u, err := url.Parse(s)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return err.Error()
	}
	switch {
	case u.Scheme == "":
		return "no scheme"
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("scheme %q", u.Scheme)
	case u.Host == "":
		return "no host"
	}
	return ""
}

// Loopback reports whether the server listens on a loopback address only,
// where only local clients reach it; false when it is disabled.
func (s Server) Loopback() bool {
	host, _, err := net.SplitHostPort(s.Listen)
	return s.Listen != "" && err == nil && isLoopback(host)
}
