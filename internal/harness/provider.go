package harness

import (
	"fmt"
	"net/http"
	"sync/atomic"
)

// Provider is a fake tool provider for what examples/provider, the demo
// provider with its healthy, drifted and down modes, does not do: it
// answers the n-th request (counting from 1) with whatever Answer returns,
// as JSON. It is an http.Handler, safe for concurrent use.
type Provider struct {
	Answer   func(n int64, r *http.Request) (status int, body []byte)
	requests atomic.Int64
}

func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, body := p.Answer(p.requests.Add(1), r)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// MintedToken is the access token EchoCredentials' /token hands out: a
// secret toolpulse learns only at run time, when a step captures it.
const MintedToken = "minted-token-2c7d5e"

// Requests returns how many requests the provider has answered.
func (p *Provider) Requests() int64 { return p.requests.Load() }

// Bodies is a provider answering 200 with body(n) to the n-th request.
func Bodies(body func(n int64) []byte) *Provider {
	return &Provider{Answer: func(n int64, _ *http.Request) (int, []byte) { return http.StatusOK, body(n) }}
}

// EchoCredentials is a provider that gives back every credential it is
// sent, the way a careless upstream does, for the tests that a secret
// never shows: /ok and /search echo the Authorization header and the URL
// inside JSON whose results are an object; /key echoes the header as an
// object key; /token hands out MintedToken, for a step to capture; any
// other path answers 500 with the header in the error.
func EchoCredentials() *Provider {
	return &Provider{Answer: func(_ int64, r *http.Request) (int, []byte) {
		auth := r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/ok", "/search":
			return http.StatusOK, fmt.Appendf(nil, `{"results": {"echo": %q, "url": %q}}`, auth, r.URL.String())
		case "/key":
			return http.StatusOK, fmt.Appendf(nil, `{%q: [1]}`, auth)
		case "/token":
			return http.StatusOK, fmt.Appendf(nil, `{"access_token": %q, "token_type": "bearer"}`, MintedToken)
		}
		return http.StatusInternalServerError, fmt.Appendf(nil, "upstream rejected %s", auth)
	}}
}
