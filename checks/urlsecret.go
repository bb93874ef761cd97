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

// queryValues returns the values of the credential parameters in raw's
// query (credentialParam), as written and decoded; a value with a
// {{template}} is the capture's, which the run scrubs.
func queryValues(raw string) []Secret {
	_, query, ok := strings.Cut(raw, "?")
	if !ok {
		return nil
	}
	query, _, _ = strings.Cut(query, "#")
	var out []Secret
	for _, pair := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(pair, "=")
		if name, err := url.QueryUnescape(k); err == nil {
			k = name
		}
		if v == "" || HasTemplate(v) || !credentialParam(k) {
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

// credentialParam reports whether a query parameter's name says its value
// is a credential: api_key, access_token, client_secret, sig, X-Api-Key...
// (case, '-' and '_' aside), or a name ending in key, token, secret,
// password or signature. Other literal values (?q=search, ?format=json)
// are not secrets: scrubbed from every sample, a common word would take
// the answer's keys and text with it. A value a ${VAR} puts in a URL is a
// secret whatever its name (urlSecrets).
func credentialParam(name string) bool {
	n := strings.NewReplacer("-", "", "_", "", ".", "").Replace(strings.ToLower(name))
	switch n {
	case "key", "auth", "authorization", "sig", "pass", "pwd", "passwd", "code", "session", "sessionid",
		"sid", "jwt", "bearer", "credential", "credentials":
		return true
	}
	for _, suffix := range []string{"key", "token", "secret", "password", "signature"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}
