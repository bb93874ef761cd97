package web

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/toolpulse/toolpulse/checks"
)

// requireToken guards next with the token, compared in constant time;
// with no token configured it lets everything through. Scripts send it as
// a bearer token; a browser, which cannot, is asked for it by its own
// password prompt (HTTP Basic, any user name), so the status page needs
// no login form and no script.
func requireToken(token checks.Secret, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r, token) {
			w.Header().Add("WWW-Authenticate", `Bearer realm="toolpulse"`)
			w.Header().Add("WWW-Authenticate", `Basic realm="toolpulse", charset="UTF-8"`)
			writeAPIError(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries token, as a bearer token (the
// scheme in any case, RFC 7235) or as a Basic password. The token is
// compared in constant time.
func authorized(r *http.Request, token checks.Secret) bool {
	want := []byte(token.Reveal())
	if _, pass, ok := r.BasicAuth(); ok {
		return subtle.ConstantTimeCompare([]byte(pass), want) == 1
	}
	scheme, credentials, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimLeft(credentials, " ")), want) == 1
}
