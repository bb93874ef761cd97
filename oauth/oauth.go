// Package oauth gets the access tokens of probes with OAuth client
// credentials (SPEC §10.1, the MCP machine-to-machine extension SEP-1046):
// a client_credentials grant through golang.org/x/oauth2/clientcredentials
// at a configured token endpoint, or at one discovered from the protected
// resource's metadata (RFC 9728) and its authorization server's (RFC 8414,
// OpenID Connect Discovery as the fallback). A Source keeps one probe's
// token until shortly before it expires, and forgets it when the resource
// refuses it. Every request it makes is reported as an Exchange, so that
// a run shows where its time went; none carries the token or the secret.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/toolpulse/toolpulse/results"
)

// Credentials are a probe's client credentials, as the config gives them.
type Credentials struct {
	ClientID     string
	ClientSecret string
	Scopes       []string
	// Audience is sent as the token request's audience parameter (Auth0,
	// Okta and others name the API so); "" sends none.
	Audience string
	// Resource is sent as the token request's resource parameter (RFC
	// 8707). "" sends the resource the protected resource metadata names,
	// when the token endpoint was discovered, and none otherwise.
	Resource string
	// TokenURL is the token endpoint; "" discovers it.
	TokenURL string
}

// Exchange is one HTTP request a Source made: a metadata document or the
// token, for a row of the attempt that needed it.
type Exchange struct {
	// Method names the request: "GET oauth-protected-resource",
	// "GET oauth-authorization-server", "GET openid-configuration" or
	// "POST token".
	Method    string
	StartedAt time.Time
	Duration  time.Duration
	Status    int // 0 when no response arrived
}

// Error is why a Source has no token. Code is the run's code when the
// token endpoint or the metadata answered (auth_rejected, auth_discovery,
// or a transient status's unavailable code); it is "" when no answer came,
// and Err is then the transport's error, for the caller's classifier.
type Error struct {
	Code    results.Code
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Lifetimes: a token is used until margin before it expires, so that it
// never expires in flight; margin is a quarter of its lifetime, at most
// maxMargin. A token that says nothing of its lifetime is kept until the
// resource refuses it.
const maxMargin = 30 * time.Second

// Source is one probe's token: it fetches one when it has none or the
// one it has is about to expire. A Source serves one run at a time; runs
// of one probe that overlap wait for each other's fetch. It is safe for
// concurrent use.
type Source struct {
	creds    Credentials
	resource string // the protected resource's URL: the probe's
	now      func() time.Time
	sem      chan struct{} // held while the Source's state changes

	token   string
	expires time.Time // zero: no known expiry
	// What discovery found, kept for the next token; hint is the
	// resource_metadata a 401 named, which discovery prefers.
	tokenURL   string
	discovered string // the resource the metadata names
	style      oauth2.AuthStyle
	hint       string
	metaFrom   string // the protected resource metadata URL discovery read
	noMetadata bool   // discovery found no protected resource metadata at the well-known places
	cc         *clientcredentials.Config
	ccFor      string // the token URL cc was made for
	refused    string // the token the resource refused last, so that it is never used again
}

// NewSource returns the Source of a probe whose protected resource is
// resourceURL. now is the clock of its expiries.
func NewSource(c Credentials, resourceURL string, now func() time.Time) *Source {
	return &Source{creds: c, resource: resourceURL, now: now, sem: make(chan struct{}, 1), tokenURL: c.TokenURL}
}

// ErrNoMetadata is a Token that found no protected resource metadata at
// the well-known places and has no 401 that names it yet: the caller
// sends its request without a token, and the 401 it gets back
// (Unauthorized) tells the next Token where to look.
var ErrNoMetadata = errors.New("no protected resource metadata at the well-known places")

// Token returns an access token for one request to the resource, and
// whether it is one the Source had already (a fresh one is never
// refused twice), with the requests it made to get it, in order. client
// carries those requests; it must not follow redirects. An error is an
// *Error, or ErrNoMetadata.
func (s *Source) Token(ctx context.Context, client *http.Client) (token string, cached bool, xs []Exchange, err error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return "", false, nil, &Error{Message: "waiting for the probe's OAuth token", Err: ctx.Err()}
	}
	defer func() { <-s.sem }()
	if s.token != "" && (s.expires.IsZero() || s.now().Before(s.expires)) {
		return s.token, true, nil, nil
	}
	s.token = ""
	rec := &recorder{next: client.Transport, now: s.now}
	c := &http.Client{Transport: rec, CheckRedirect: client.CheckRedirect, Timeout: client.Timeout}
	if s.tokenURL == "" {
		if err := s.discover(ctx, c, rec); err != nil {
			return "", false, rec.xs, err
		}
	}
	err = s.fetch(ctx, c, rec)
	return s.token, false, rec.xs, err
}

// fetch asks the token endpoint for a token.
func (s *Source) fetch(ctx context.Context, c *http.Client, rec *recorder) error {
	if s.cc == nil || s.ccFor != s.tokenURL {
		params := url.Values{}
		if s.creds.Audience != "" {
			params.Set("audience", s.creds.Audience)
		}
		switch {
		case s.creds.Resource != "":
			params.Set("resource", s.creds.Resource)
		case s.discovered != "":
			params.Set("resource", s.discovered)
		}
		s.cc = &clientcredentials.Config{ClientID: s.creds.ClientID, ClientSecret: s.creds.ClientSecret,
			TokenURL: s.tokenURL, Scopes: s.creds.Scopes, EndpointParams: params, AuthStyle: s.style}
		s.ccFor = s.tokenURL
	}
	rec.label = "POST token"
	started := s.now()
	tok, err := s.cc.Token(context.WithValue(ctx, oauth2.HTTPClient, c))
	if err != nil {
		return tokenError(err)
	}
	if tok.AccessToken == "" || tok.AccessToken == s.refused {
		return &Error{Code: results.CodeAuthDiscovery, Message: "the token endpoint answered without a new access token"}
	}
	s.token, s.expires = tok.AccessToken, time.Time{}
	if !tok.Expiry.IsZero() {
		// x/oauth2 stamps Expiry by the real clock; the lifetime is the
		// endpoint's own word, measured from when it was asked.
		lifetime := time.Until(tok.Expiry)
		s.expires = started.Add(lifetime - min(lifetime/4, maxMargin))
	}
	return nil
}

// tokenError classifies a token request's failure: a refusal of the
// credentials, a transient answer, any other answer, or none.
func tokenError(err error) *Error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || isTransport(err) {
			return &Error{Message: "requesting the OAuth token", Err: err}
		}
		// x/oauth2's own complaints about the answer: no access_token, a
		// body it cannot parse.
		return &Error{Code: results.CodeAuthDiscovery, Message: "the token endpoint's answer has no usable token: " + clean(err.Error())}
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	what := fmt.Sprintf("HTTP %d", status)
	if re.ErrorCode != "" {
		what += " " + clean(re.ErrorCode)
	}
	if re.ErrorDescription != "" {
		what += ": " + clean(re.ErrorDescription)
	}
	switch code := results.TransientStatusCode(status); {
	case status == http.StatusBadRequest || status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &Error{Code: results.CodeAuthRejected, Message: "the token endpoint refused the client credentials: " + what}
	case code != "":
		return &Error{Code: code, Message: "the token endpoint answered " + what}
	default:
		return &Error{Code: results.CodeAuthRejected, Message: "the token endpoint did not issue a token: " + what}
	}
}

// isTransport reports whether err is the transport's: no answer came.
func isTransport(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// clean bounds an endpoint's own words for a message: one line, at most
// 200 bytes.
func clean(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return results.Shorten(s, 200)
}

// Unauthorized tells the Source that the resource answered 401 to a
// request that carried token ("" for none), with these WWW-Authenticate
// values. It forgets the token and, when the answer names protected
// resource metadata, where the token endpoint is to be found. It reports
// whether another request may do better: one with a token fetched anew,
// or from metadata it did not know.
func (s *Source) Unauthorized(token string, wwwAuthenticate []string) bool {
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	better := false
	if hint := resourceMetadata(wwwAuthenticate); hint != "" && hint != s.hint && hint != s.metaFrom && s.creds.TokenURL == "" {
		s.hint, s.tokenURL, s.noMetadata = hint, "", false
		better = true
	}
	if token != "" && token == s.token {
		s.token, s.refused = "", token
		better = true
	}
	if token == "" && !better {
		// Nothing names the metadata yet: the next run looks in the
		// well-known places again, which a server may have filled since.
		s.noMetadata = false
	}
	return better
}

// recorder is the transport of a Source's requests: it records each as an
// Exchange under the label of the request in flight.
type recorder struct {
	next  http.RoundTripper
	now   func() time.Time
	label string
	xs    []Exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	x := Exchange{Method: r.label, StartedAt: r.now()}
	if x.Method == "" {
		x.Method = req.Method
	}
	next := r.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	x.Duration = r.now().Sub(x.StartedAt)
	if resp != nil {
		x.Status = resp.StatusCode
	}
	r.xs = append(r.xs, x)
	if resp != nil && resp.Body != nil {
		// The exchange lasts until its body is read.
		resp.Body = &timedBody{ReadCloser: resp.Body, r: r, i: len(r.xs) - 1}
	}
	return resp, err
}

// timedBody ends its exchange's Duration when it is closed.
type timedBody struct {
	io.ReadCloser
	r *recorder
	i int // the exchange's index in r.xs
}

func (b *timedBody) Close() error {
	x := &b.r.xs[b.i]
	x.Duration = b.r.now().Sub(x.StartedAt)
	return b.ReadCloser.Close()
}
