// Package oauthtest runs a real OAuth 2.0 authorization server on
// loopback for toolpulse's tests: github.com/go-oauth2/oauth2's server,
// which nobody here wrote, issuing tokens by the client credentials grant
// at /token and publishing its metadata (RFC 8414) at
// /.well-known/oauth-authorization-server. Protect puts an HTTP handler
// behind its tokens the way a protected resource does (RFC 9728): 401 with
// WWW-Authenticate naming its metadata, which it serves too. Every token
// request is recorded, so a test can count them and read what they asked
// for.
//
// Only tests import it.
package oauthtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	"github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/manage"
	"github.com/go-oauth2/oauth2/v4/models"
	"github.com/go-oauth2/oauth2/v4/server"
)

// Config is an authorization server's clients and tokens.
type Config struct {
	ClientID, ClientSecret string
	// Scopes are the scopes the client may ask for; a request for another
	// is refused with invalid_scope. nil allows any.
	Scopes []string
	// Lifetime is a token's expires_in; 0: an hour.
	Lifetime time.Duration
	// AuthMethods is token_endpoint_auth_methods_supported in the
	// metadata; nil leaves it out (client_secret_basic, RFC 8414). The
	// token endpoint takes the credentials either way.
	AuthMethods []string
}

// TokenRequest is one request to the token endpoint, as it came.
type TokenRequest struct {
	Basic bool       // the credentials came in the Authorization header
	Form  url.Values // the form, client_secret removed
}

// Server is a running authorization server.
type Server struct {
	URL string // the issuer: http://127.0.0.1:port

	srv     *server.Server
	manager *manage.Manager
	cfg     Config

	mu       sync.Mutex
	requests []TokenRequest
	accepted []string
	issued   []string
	down     bool
}

// Start starts an authorization server of cfg on loopback, stopped when
// the test ends.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Lifetime == 0 {
		cfg.Lifetime = time.Hour
	}
	manager := manage.NewDefaultManager()
	manager.SetClientTokenCfg(&manage.Config{AccessTokenExp: cfg.Lifetime})
	manager.MapTokenStorage(&tokens{byAccess: map[string]oauth2.TokenInfo{}})
	manager.MapClientStorage(clients{cfg.ClientID: &models.Client{ID: cfg.ClientID, Secret: cfg.ClientSecret}})
	srv := server.NewDefaultServer(manager)
	srv.SetAllowedGrantType(oauth2.ClientCredentials)
	srv.SetClientInfoHandler(func(r *http.Request) (string, string, error) {
		if _, _, ok := r.BasicAuth(); ok {
			return server.ClientBasicHandler(r)
		}
		return server.ClientFormHandler(r)
	})
	srv.SetClientScopeHandler(func(tgr *oauth2.TokenGenerateRequest) (bool, error) {
		if cfg.Scopes == nil {
			return true, nil
		}
		for _, s := range strings.Fields(tgr.Scope) {
			if !slices.Contains(cfg.Scopes, s) {
				return false, errors.ErrInvalidScope
			}
		}
		return true, nil
	})
	s := &Server{srv: srv, manager: manager, cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	form := url.Values{}
	for k, v := range r.PostForm {
		if k != "client_secret" {
			form[k] = slices.Clone(v)
		}
	}
	_, _, basic := r.BasicAuth()
	s.mu.Lock()
	s.requests = append(s.requests, TokenRequest{Basic: basic, Form: form})
	s.mu.Unlock()
	rec := httptest.NewRecorder()
	_ = s.srv.HandleTokenRequest(rec, r)
	var answer struct {
		AccessToken string `json:"access_token"`
	}
	if json.Unmarshal(rec.Body.Bytes(), &answer) == nil && answer.AccessToken != "" {
		s.mu.Lock()
		s.issued = append(s.issued, answer.AccessToken)
		s.mu.Unlock()
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// Issued returns the access tokens the server issued, in order.
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	m := map[string]any{
		"issuer":                s.URL,
		"token_endpoint":        s.URL + "/token",
		"grant_types_supported": []string{"client_credentials"},
	}
	if s.cfg.AuthMethods != nil {
		m["token_endpoint_auth_methods_supported"] = s.cfg.AuthMethods
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}

// TokenURL is the server's token endpoint.
func (s *Server) TokenURL() string { return s.URL + "/token" }

// Requests returns the token requests so far.
func (s *Server) Requests() []TokenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// SetDown makes the token endpoint answer 503 (down) or work again.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// Verify reports whether token is one the server issued and has not
// expired or revoked, and returns its scopes.
func (s *Server) Verify(ctx context.Context, token string) (scopes []string, expires time.Time, ok bool) {
	ti, err := s.manager.LoadAccessToken(ctx, token)
	if err != nil || ti == nil {
		return nil, time.Time{}, false
	}
	return strings.Fields(ti.GetScope()), ti.GetAccessCreateAt().Add(ti.GetAccessExpiresIn()), true
}

// Revoke forgets token: a resource that asks after it is told it is not
// valid.
func (s *Server) Revoke(ctx context.Context, token string) error {
	return s.manager.RemoveAccessToken(ctx, token)
}

// Protect serves a protected resource at path on a loopback server of
// its own, stopped when the test ends, and its protected resource
// metadata (RFC 9728), which names s as its authorization server, at
// /.well-known/oauth-protected-resource<path>, or, with hideMetadata, at
// /meta/resource, where only a 401 that names it leads. handler makes the
// resource's handler from the metadata's URL: Require's, or an MCP
// server's behind the SDK's own middleware. It returns the resource's
// URL.
func (s *Server) Protect(t testing.TB, path string, hideMetadata bool, handler func(metadataURL string) http.Handler) string {
	t.Helper()
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	resource := hs.URL + path
	metaPath := "/.well-known/oauth-protected-resource" + path
	if hideMetadata {
		metaPath = "/meta/resource"
	}
	mux.HandleFunc("GET "+metaPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": resource, "authorization_servers": []string{s.URL}})
	})
	mux.Handle(path, handler(hs.URL+metaPath))
	return resource
}

// Require serves next only to requests with a bearer token s issued and
// has not revoked; others get 401 with WWW-Authenticate: Bearer
// resource_metadata=metadataURL. Accepted lists the tokens it let
// through.
func (s *Server) Require(next http.Handler, metadataURL string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if _, _, valid := s.Verify(r.Context(), token); !ok || !valid {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+metadataURL+`"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		s.mu.Lock()
		s.accepted = append(s.accepted, token)
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// Accepted returns the tokens Require let through, in order.
func (s *Server) Accepted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.accepted)
}

// clients is the server's one client. The library's own store says
// "not found" of an unknown client, which its server answers with 500;
// an authorization server answers 401 invalid_client.
type clients map[string]*models.Client

func (c clients) GetByID(_ context.Context, id string) (oauth2.ClientInfo, error) {
	if cl, ok := c[id]; ok {
		return cl, nil
	}
	return nil, errors.ErrInvalidClient
}

// tokens keeps the issued tokens in memory. The library's memory store
// starts a goroutine per store that nothing can stop.
type tokens struct {
	mu       sync.Mutex
	byAccess map[string]oauth2.TokenInfo
}

func (ts *tokens) Create(_ context.Context, info oauth2.TokenInfo) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.byAccess[info.GetAccess()] = info
	return nil
}

func (ts *tokens) RemoveByAccess(_ context.Context, access string) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.byAccess, access)
	return nil
}

func (ts *tokens) GetByAccess(_ context.Context, access string) (oauth2.TokenInfo, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.byAccess[access], nil
}

// The client credentials grant issues neither codes nor refresh tokens.

func (ts *tokens) RemoveByCode(context.Context, string) error                     { return nil }
func (ts *tokens) RemoveByRefresh(context.Context, string) error                  { return nil }
func (ts *tokens) GetByCode(context.Context, string) (oauth2.TokenInfo, error)    { return nil, nil }
func (ts *tokens) GetByRefresh(context.Context, string) (oauth2.TokenInfo, error) { return nil, nil }
