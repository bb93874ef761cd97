package runner

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolpulse/toolpulse/checks"
)

// maxRedirects is how many redirects one attempt follows. The response
// that would be the next one is kept as the attempt's answer, so a loop
// ends as that 3xx status, judged by expect.status (an unexpected_status
// contract error, never retried: a loop is not transient). net/http's
// default instead fails with an error, which would read as a retried
// network_error and repeat the whole loop on every attempt.
const maxRedirects = 10

// redirectPolicy is the CheckRedirect of p's client. Every header a probe
// configures is a secret (checks.Secret), so on a redirect to another
// origin (scheme, host or port) all of them are dropped: net/http drops
// only Authorization and cookies, and only when the host name changes,
// so it would send an API key header anywhere, and Authorization to
// another port of the same host. Headers toolpulse sets itself
// (User-Agent, Content-Type) go on. A redirect back to the probe's own
// origin gets the configured headers again.
func redirectPolicy(p *checks.Probe) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return http.ErrUseLastResponse
		}
		if !sameOrigin(req.URL, via[0].URL) {
			for k := range p.Request.Headers {
				req.Header.Del(k)
			}
		}
		return nil
	}
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// redirectNote says how an attempt's response was reached, for messages:
// "" without redirects.
func redirectNote(resp *http.Response) string {
	if resp == nil || resp.Request == nil {
		return ""
	}
	n := 0
	for r := resp.Request; r.Response != nil && r.Response.Request != nil; r = r.Response.Request {
		n++
	}
	note := ""
	if n > 0 {
		note = fmt.Sprintf(" after %d redirect(s), at %s", n, safeURL(resp.Request.URL))
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 && resp.Header.Get("Location") != "" && n >= maxRedirects {
		note += fmt.Sprintf("; redirect limit of %d reached, Location not followed", maxRedirects)
	}
	return note
}

// safeURL is u without user info and query, which may carry credentials,
// bounded for a message.
func safeURL(u *url.URL) string {
	v := *u
	v.User, v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = nil, "", false, "", ""
	s := v.String()
	if len(s) > 120 {
		s = strings.ToValidUTF8(s[:120], "") + "…"
	}
	return s
}
