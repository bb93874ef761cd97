package prober

import (
	"errors"
	"net/http"
	"slices"
	"sync"

	"github.com/toolpulse/toolpulse/checks"
	"github.com/toolpulse/toolpulse/oauth"
	"github.com/toolpulse/toolpulse/results"
)

// phaseToken is the phase of an attempt that waits for its OAuth token.
const phaseToken = "fetching the OAuth token"

// sourceKey names the call of a probe an OAuth token belongs to: a
// single probe's (step "") or a step's.
type sourceKey struct {
	p    *checks.Probe
	step string
}

// oauthSource is the token source of step s of p, made on its first run
// and kept until CloseIdleConnections (a reload): a token outlives the
// run that fetched it, until shortly before it expires.
func (e *Executor) oauthSource(p *checks.Probe, s *checks.Step, o *checks.OAuth, resource string) *oauth.Source {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := sourceKey{p, s.Name}
	if src, ok := e.sources[k]; ok {
		return src
	}
	src := oauth.NewSource(oauth.Credentials{ClientID: o.ClientID, ClientSecret: o.ClientSecret.Reveal(),
		Scopes: o.Scopes, Audience: o.Audience, Resource: o.Resource, TokenURL: o.TokenURL}, resource, e.now)
	e.sources[k] = src
	return src
}

// bearer is a call's OAuth client credentials: the probe's token source
// and the client of its metadata and token requests, which follows no
// redirect (the secret stays where it was sent).
type bearer struct {
	src    *oauth.Source
	client *http.Client
}

// newBearer returns the bearer of step s of op's probe, nil when it has no
// OAuth, around the shared transport t.
func newBearer(op *operation, s *checks.Step, o *checks.OAuth, resource string, t http.RoundTripper) *bearer {
	if o == nil {
		return nil
	}
	return &bearer{src: op.e.oauthSource(op.p, s, o, resource), client: &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// sent is what one request (or MCP session) with a token got, for
// bearer.attempt: the attempt's result as the exchange judged it, and
// whether the resource answered 401, with its WWW-Authenticate values.
type sent struct {
	// method names the call's row when it is one (an HTTP request): its
	// HTTP method, so that it reads apart from the token's rows.
	method       string
	res          attemptResult
	unauthorized bool
	challenges   []string
}

// attempt makes one attempt of a call with a bearer token: it gets the
// token (from the cache, or from the token endpoint, discovering it when
// the probe names none) and sends the call with it. When the resource
// answers 401 to a token that was cached, or names protected resource
// metadata the source did not know, it forgets the token and sends the
// call once more with a fresh one. The metadata and token requests are
// rows of their own, before the call's, so that a run shows where its
// time went; a token request that fails is the attempt's verdict.
func (b *bearer) attempt(a *attempt, send func(token string) sent) attemptResult {
	var rows []results.Attempt
	for again := true; ; again = false {
		started := a.loop.e.now()
		token, _, xs, err := b.src.Token(a.ctx, b.client)
		for _, x := range xs {
			rows = append(rows, results.Attempt{Method: x.Method, StartedAt: x.StartedAt, Duration: x.Duration, HTTPStatus: x.Status})
		}
		if err != nil && !errors.Is(err, oauth.ErrNoMetadata) {
			res := tokenFailure(a, err)
			res.exchanges, res.blamed = rows, len(rows)-1
			return res
		}
		if token != "" {
			a.loop.op.addSecret(token)
		}
		if len(rows) == 0 {
			started = a.loop.e.now()
		}
		out := send(token)
		res := out.res
		if len(rows) > 0 {
			// The call's own row, or rows, after the token's.
			own := res.exchanges
			blamed := res.blamed
			if len(own) == 0 {
				own = []results.Attempt{{Method: out.method, StartedAt: started, Duration: a.loop.e.now().Sub(started), HTTPStatus: res.httpStatus}}
				blamed = 0
			}
			if blamed < 0 || blamed >= len(own) {
				blamed = len(own) - 1
			}
			res.exchanges, res.blamed = append(slices.Clip(rows), own...), len(rows)+blamed
		}
		if !out.unauthorized {
			return res
		}
		if again && b.src.Unauthorized(token, out.challenges) && a.ctx.Err() == nil {
			rows = res.exchanges
			if len(rows) == 0 {
				rows = []results.Attempt{{Method: out.method, StartedAt: started, Duration: a.loop.e.now().Sub(started), HTTPStatus: res.httpStatus}}
			}
			continue
		}
		if token == "" {
			res.code, res.message = results.CodeAuthDiscovery, "the server answered 401 without naming its protected resource metadata (WWW-Authenticate: Bearer resource_metadata=...), "+
				"and has none at /.well-known/oauth-protected-resource (RFC 9728); set auth.oauth_client_credentials.token_url"
		} else if res.code != "" {
			res.message = "the server refused a fresh OAuth token: " + res.message
		}
		return res
	}
}

// tokenFailure is the attempt's verdict when it got no token: the
// endpoint's refusal, its transient answer, or the transport's failure
// to reach it.
func tokenFailure(a *attempt, err error) attemptResult {
	var oe *oauth.Error
	if !errors.As(err, &oe) {
		return attemptResult{code: results.CodeInternalError, message: "OAuth: " + err.Error()}
	}
	if oe.Code != "" {
		return attemptResult{code: oe.Code, message: oe.Message}
	}
	code, msg := a.failure(oe.Err, phaseToken)
	if code != results.CodeTimeout && code != results.CodeCanceled {
		msg = oe.Message + ": " + msg
	}
	return attemptResult{code: code, message: msg}
}

// challengeRecorder is the transport of an MCP session with OAuth: it
// notes whether any answer was 401 and keeps that answer's
// WWW-Authenticate values, which mcpsdk does not report.
type challengeRecorder struct {
	next http.RoundTripper

	mu         sync.Mutex
	got        bool
	challenges []string
}

func (c *challengeRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if resp != nil && resp.StatusCode == http.StatusUnauthorized {
		c.mu.Lock()
		c.got, c.challenges = true, resp.Header.Values("WWW-Authenticate")
		c.mu.Unlock()
	}
	return resp, err
}

// take returns what the session since the last take met, and forgets it.
func (c *challengeRecorder) take() (bool, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got, ch := c.got, c.challenges
	c.got, c.challenges = false, nil
	return got, ch
}
