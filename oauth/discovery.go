package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/oauth2"

	"github.com/toolpulse/toolpulse/results"
)

// maxMetadata bounds a metadata document read.
const maxMetadata = 1 << 20

// resourceMeta is what a probe reads of protected resource metadata (RFC
// 9728 §2).
type resourceMeta struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
}

// serverMeta is what a probe reads of authorization server metadata (RFC
// 8414 §2; OpenID Connect Discovery has the same names).
type serverMeta struct {
	Issuer            string   `json:"issuer"`
	TokenEndpoint     string   `json:"token_endpoint"`
	TokenAuthMethods  []string `json:"token_endpoint_auth_methods_supported"`
	GrantTypesAllowed []string `json:"grant_types_supported"`
}

// discover finds the token endpoint: the protected resource metadata a
// 401 named, or the one at the resource's well-known places (RFC 9728
// §3.1: the path inserted, then the root), then the metadata of its first
// authorization server.
func (s *Source) discover(ctx context.Context, c *http.Client, rec *recorder) error {
	var rm resourceMeta
	found := false
	if s.hint != "" {
		if err := getJSON(ctx, c, rec, "GET oauth-protected-resource", s.hint, &rm); err != nil {
			return err.describe("the protected resource metadata the server's 401 names")
		}
		found, s.metaFrom = true, s.hint
	} else if !s.noMetadata {
		for _, u := range wellKnown(s.resource, "oauth-protected-resource", false) {
			err := getJSON(ctx, c, rec, "GET oauth-protected-resource", u, &rm)
			if err == nil {
				found, s.metaFrom = true, u
				break
			}
			if !err.missing {
				return err.describe("the protected resource metadata")
			}
		}
	}
	if !found {
		s.noMetadata = true
		return ErrNoMetadata
	}
	if !covers(rm.Resource, s.resource) {
		// RFC 9728 §3.3: metadata for another resource could send the
		// client secret to an authorization server the probe's server
		// does not trust.
		return &Error{Code: results.CodeAuthDiscovery, Message: fmt.Sprintf(
			"the protected resource metadata is for resource %q, which does not cover %s (RFC 9728 §3.3)", clean(rm.Resource), clean(s.resource))}
	}
	if len(rm.AuthorizationServers) == 0 {
		return &Error{Code: results.CodeAuthDiscovery, Message: "the protected resource metadata names no authorization_servers"}
	}
	issuer := rm.AuthorizationServers[0]
	var sm serverMeta
	var last *fetchError
	for _, c2 := range asCandidates(issuer) {
		err := getJSON(ctx, c, rec, c2.label, c2.url, &sm)
		if err == nil {
			last = nil
			break
		}
		last = err
		if !err.missing {
			break
		}
	}
	if last != nil {
		return last.describe(fmt.Sprintf("the metadata of authorization server %s", clean(issuer)))
	}
	if strings.TrimSuffix(sm.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return &Error{Code: results.CodeAuthDiscovery, Message: fmt.Sprintf(
			"the authorization server's metadata names issuer %q, not %q (RFC 8414 §3.3)", clean(sm.Issuer), clean(issuer))}
	}
	if sm.TokenEndpoint == "" {
		return &Error{Code: results.CodeAuthDiscovery, Message: fmt.Sprintf("authorization server %s publishes no token_endpoint", clean(issuer))}
	}
	if u, err := url.Parse(sm.TokenEndpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return &Error{Code: results.CodeAuthDiscovery, Message: fmt.Sprintf("authorization server %s names a token_endpoint that is not an http(s) URL", clean(issuer))}
	}
	if len(sm.GrantTypesAllowed) > 0 && !slices.Contains(sm.GrantTypesAllowed, "client_credentials") {
		return &Error{Code: results.CodeAuthDiscovery, Message: fmt.Sprintf("authorization server %s does not offer the client_credentials grant (grant_types_supported)", clean(issuer))}
	}
	s.tokenURL, s.discovered = sm.TokenEndpoint, rm.Resource
	// RFC 8414: no list means client_secret_basic only.
	s.style = oauth2.AuthStyleInHeader
	if len(sm.TokenAuthMethods) > 0 && !slices.Contains(sm.TokenAuthMethods, "client_secret_basic") && slices.Contains(sm.TokenAuthMethods, "client_secret_post") {
		s.style = oauth2.AuthStyleInParams
	}
	return nil
}

// covers reports whether the metadata's resource names the probe's URL:
// the same origin, and a path that is the URL's or a parent of it.
func covers(resource, target string) bool {
	r, err1 := url.Parse(resource)
	u, err2 := url.Parse(target)
	if err1 != nil || err2 != nil || resource == "" {
		return false
	}
	if !strings.EqualFold(r.Scheme, u.Scheme) || !strings.EqualFold(r.Host, u.Host) {
		return false
	}
	rp, up := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(u.Path, "/")
	return rp == "" || rp == up || strings.HasPrefix(up, rp+"/")
}

// candidate is one place authorization server metadata may be.
type candidate struct{ label, url string }

// asCandidates are the places of issuer's metadata, in the order the MCP
// authorization spec tries them: RFC 8414's, then OpenID Connect's with
// the path inserted and appended.
func asCandidates(issuer string) []candidate {
	var out []candidate
	for _, u := range wellKnown(issuer, "oauth-authorization-server", true) {
		out = append(out, candidate{"GET oauth-authorization-server", u})
	}
	for _, u := range wellKnown(issuer, "openid-configuration", true) {
		out = append(out, candidate{"GET openid-configuration", u})
	}
	if u, err := url.Parse(issuer); err == nil && strings.Trim(u.Path, "/") != "" {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/.well-known/openid-configuration"
		u.RawQuery, u.Fragment = "", ""
		out = append(out, candidate{"GET openid-configuration", u.String()})
	}
	return out
}

// wellKnown is where the well-known document name of base is: with
// base's path inserted after it (RFC 8414 §3.1, RFC 9728 §3.1), then,
// unless pathOnly or the path is empty, at the root.
func wellKnown(base, name string, pathOnly bool) []string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil
	}
	path := strings.TrimSuffix(u.Path, "/")
	root := url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/.well-known/" + name}
	if path == "" {
		return []string{root.String()}
	}
	inserted := root
	inserted.Path += path
	if pathOnly {
		return []string{inserted.String()}
	}
	return []string{inserted.String(), root.String()}
}

// fetchError is a metadata document that could not be read; missing is a
// 404 or 410, where another place may have it.
type fetchError struct {
	status  int
	err     error // the transport's, or the decoder's
	missing bool
}

// describe is the run's error for a document, what, that could not be
// read.
func (f *fetchError) describe(what string) *Error {
	switch {
	case f.status == 0:
		return &Error{Message: "fetching " + what, Err: f.err}
	case f.status < 0:
		return &Error{Code: results.CodeAuthDiscovery, Message: what + " has no valid URL"}
	case f.err != nil:
		return &Error{Code: results.CodeAuthDiscovery, Message: what + " is not a JSON object: " + clean(f.err.Error())}
	case results.TransientStatusCode(f.status) != "":
		return &Error{Code: results.TransientStatusCode(f.status), Message: fmt.Sprintf("%s: HTTP %d", what, f.status)}
	}
	return &Error{Code: results.CodeAuthDiscovery, Message: fmt.Sprintf("%s: HTTP %d", what, f.status)}
}

// getJSON reads the JSON object at u into v.
func getJSON(ctx context.Context, c *http.Client, rec *recorder, label, u string, v any) *fetchError {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return &fetchError{status: -1, err: err}
	}
	req.Header.Set("Accept", "application/json")
	rec.label = label
	resp, err := c.Do(req)
	if err != nil {
		return &fetchError{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxMetadata))
		return &fetchError{status: resp.StatusCode, missing: resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return &fetchError{err: err}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &fetchError{status: resp.StatusCode, err: err}
	}
	return nil
}

// resourceMetadata is the resource_metadata parameter of a Bearer
// challenge among WWW-Authenticate values (RFC 9728 §5.1); "" when none
// names an http(s) URL.
func resourceMetadata(values []string) string {
	for _, ch := range results.ParseChallenges(values) {
		if !ch.Is("Bearer") {
			continue
		}
		val := ch.Params["resource_metadata"]
		if u, err := url.Parse(val); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
			return val
		}
	}
	return ""
}
