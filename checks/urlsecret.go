package checks

import (
	"net/url"
	"strings"

	"github.com/toolpulse/toolpulse/results"
)

// urlSecrets returns what the environment put into the path, query or
// fragment of raw, a URL as expanded: the value of each reference written
// there (spans say where each ${...} value landed). The scheme and host
// are not secret: they name the provider on every surface. Nor is a
// reference that starts before the path, url: ${MCP_URL} or
// ${BASE}/search: its path is the endpoint's ("/mcp"), and scrubbing it
// would scrub that word from every sample.
func urlSecrets(raw string, spans []envSpan) []Secret {
	if len(spans) == 0 {
		return nil
	}
	from := pathStart(raw)
	var out []Secret
	for _, s := range spans {
		if s.Start >= from && s.Start < s.End {
			out = append(out, Secret(raw[s.Start:s.End]))
		}
	}
	return out
}

// pathStart is the offset in raw where its path (or query, or fragment)
// begins: after "scheme://host".
func pathStart(raw string) int {
	i := strings.Index(raw, "://")
	if i < 0 {
		return 0
	}
	i += len("://")
	if j := strings.IndexAny(raw[i:], "/?#"); j >= 0 {
		return i + j
	}
	return len(raw)
}

// queryValues returns the values in raw's query, as written and decoded;
// a value with a {{template}} is the capture's, which the run scrubs.
func queryValues(raw string) []Secret {
	_, query, ok := strings.Cut(raw, "?")
	if !ok {
		return nil
	}
	query, _, _ = strings.Cut(query, "#")
	var out []Secret
	for _, pair := range strings.Split(query, "&") {
		_, v, _ := strings.Cut(pair, "=")
		if v == "" || HasTemplate(v) {
			continue
		}
		out = append(out, Secret(v))
		if dec, err := url.QueryUnescape(v); err == nil && dec != v {
			out = append(out, Secret(dec))
		}
	}
	return out
}

// ScrubURL returns s, a URL of p or a part of one as a surface shows it,
// with every secret that ${VAR} put into p's URLs replaced by
// results.Redacted, in any escaping.
func (p *Probe) ScrubURL(s string) string {
	if len(p.URLSecrets) == 0 {
		return s
	}
	values := make([]string, len(p.URLSecrets))
	for i, v := range p.URLSecrets {
		values[i] = v.Reveal()
	}
	return results.NewRedactor(values...).Redact(s)
}
