package main

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/toolpulse/toolpulse/oauth"
	"github.com/toolpulse/toolpulse/results"
)

// oauthFlags are the OAuth client credentials of `mcp tools` and `mcp
// call` (SPEC §10.1, SEP-1046), got through the oauth package as a probe's
// auth.oauth_client_credentials are. The secret is named by an
// environment variable, never given on the command line, where `ps` and
// shell histories would show it.
type oauthFlags struct {
	OAuthClientID        string   `name:"oauth-client-id" placeholder:"ID" help:"Get a bearer token by the OAuth client credentials grant as this client (SEP-1046), as a probe's auth.oauth_client_credentials does."`
	OAuthClientSecretEnv string   `name:"oauth-client-secret-env" placeholder:"NAME" help:"With --oauth-client-id: the environment variable that holds the client secret (never the secret itself)."`
	OAuthScope           []string `name:"oauth-scope" placeholder:"SCOPE" sep:"none" help:"With --oauth-client-id: a scope to ask for (repeatable)."`
	OAuthAudience        string   `name:"oauth-audience" placeholder:"API" help:"With --oauth-client-id: the token request's audience parameter."`
	OAuthResource        string   `name:"oauth-resource" placeholder:"URI" help:"With --oauth-client-id: the token request's resource parameter (RFC 8707); by default the one the server's metadata names."`
	OAuthTokenURL        string   `name:"oauth-token-url" placeholder:"URL" help:"With --oauth-client-id: the token endpoint; by default discovered from the server's protected resource metadata (RFC 9728) and its authorization server's (RFC 8414)."`
}

// source is the token source the flags describe, for the resource at
// endpoint; nil without --oauth-client-id.
func (f *oauthFlags) source(e *env, endpoint string) (*oauth.Source, error) {
	if f.OAuthClientID == "" {
		if f.OAuthClientSecretEnv != "" || len(f.OAuthScope) > 0 || f.OAuthAudience != "" || f.OAuthResource != "" || f.OAuthTokenURL != "" {
			return nil, usageError("the --oauth-* flags need --oauth-client-id")
		}
		return nil, nil
	}
	if f.OAuthClientSecretEnv == "" {
		return nil, usageError("--oauth-client-id: name the variable that holds the client secret with --oauth-client-secret-env")
	}
	secret, ok := e.lookupEnv(f.OAuthClientSecretEnv)
	if !ok || secret == "" {
		return nil, usageError("--oauth-client-secret-env %s: the variable is not set", f.OAuthClientSecretEnv)
	}
	if f.OAuthTokenURL != "" {
		if _, err := parseMCPURL(f.OAuthTokenURL); err != nil {
			return nil, usageError("--oauth-token-url: want an http:// or https:// URL")
		}
	}
	creds := oauth.Credentials{ClientID: f.OAuthClientID, ClientSecret: secret, Scopes: f.OAuthScope,
		Audience: f.OAuthAudience, Resource: f.OAuthResource, TokenURL: f.OAuthTokenURL}
	return oauth.NewSource(creds, endpoint, time.Now), nil
}

// withBearer runs send, one session to the server, with a bearer token
// from src in the Authorization header, as a probe's attempt does: the
// token comes from the token endpoint, discovered when no token URL was
// given; a session that meets a 401 naming metadata it did not know, or
// refusing the token, is run once more with a fresh one. rt is the
// session's transport: withBearer wraps it to see the 401s, and sends the
// metadata and token requests through it, never following a redirect.
// xs are the metadata and token requests, in order. A token that cannot
// be had is the failure, with the code a probe's attempt would record.
func withBearer[T any](ctx context.Context, src *oauth.Source, header http.Header, rt http.RoundTripper, send func(http.Header, http.RoundTripper) T) (out T, xs []oauth.Exchange, failed *results.Error) {
	ch := &challenges{next: rt}
	client := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for again := true; ; again = false {
		token, _, got, err := src.Token(ctx, client)
		xs = append(xs, got...)
		if err != nil && !errors.Is(err, oauth.ErrNoMetadata) {
			return out, xs, tokenFailure(err)
		}
		h := header.Clone()
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		out = send(h, ch)
		refused, www := ch.take()
		if !refused || !again || ctx.Err() != nil || !src.Unauthorized(token, www) {
			return out, xs, nil
		}
	}
}

// tokenFailure is why no token came, as a run's code: the endpoint's
// refusal (auth_rejected, contract_error) or its transient answer, or the
// transport's failure to reach it (unavailable).
func tokenFailure(err error) *results.Error {
	var oe *oauth.Error
	if !errors.As(err, &oe) {
		return results.NewError(results.CodeInternalError, "OAuth: %s", err)
	}
	if oe.Code != "" {
		return results.NewError(oe.Code, "%s", oe.Message)
	}
	return results.NewError(results.TransportCode(oe.Err), "%s: %s", oe.Message, oe.Err)
}

// challenges is a session's transport that notes whether an answer was
// 401, with that answer's WWW-Authenticate values, which mcpsdk does not
// report.
type challenges struct {
	next http.RoundTripper

	mu  sync.Mutex
	got bool
	www []string
}

func (c *challenges) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if resp != nil && resp.StatusCode == http.StatusUnauthorized {
		c.mu.Lock()
		c.got, c.www = true, resp.Header.Values("WWW-Authenticate")
		c.mu.Unlock()
	}
	return resp, err
}

// take returns what the session since the last take met, and forgets it.
func (c *challenges) take() (bool, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got, www := c.got, c.www
	c.got, c.www = false, nil
	return got, www
}
