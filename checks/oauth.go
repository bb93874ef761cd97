package checks

import (
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// OAuth is auth.oauth_client_credentials of an HTTP request or an MCP
// call (SPEC §10.1): the client credentials grant that gets the bearer
// token every request of the call carries.
type OAuth struct {
	ClientID     string
	ClientSecret Secret
	Scopes       []string
	// Audience and Resource are sent to the token endpoint as its audience
	// and resource (RFC 8707) parameters; "" sends none (but a discovered
	// resource).
	Audience, Resource string
	// TokenURL is the token endpoint; "" discovers it from the server's
	// protected resource metadata (RFC 9728) and its authorization
	// server's metadata (RFC 8414).
	TokenURL string
}

var (
	authKeys  = []string{"oauth_client_credentials"}
	oauthKeys = []string{"client_id", "client_secret", "scopes", "audience", "resource", "token_url"}
)

// auth decodes the auth: of a request or an MCP call. headers are the
// call's own: an Authorization header there would fight the token.
func (l *loader) auth(e entry, headers map[string]Secret, headersN ast.Node) *OAuth {
	d := l.d
	var o *OAuth
	present, ok := d.object(e.value, e.path, authKeys, func(x entry) {
		o = l.oauth(x)
	})
	if !ok {
		return nil
	}
	if _, set := present["oauth_client_credentials"]; !set {
		d.errorf(e.value, "%s: expected oauth_client_credentials", e.path)
		return nil
	}
	for k := range headers {
		if strings.EqualFold(k, "Authorization") && headersN != nil {
			d.errorf(headersN, "%s.headers: %s conflicts with auth: the OAuth token is sent as the Authorization header", strings.TrimSuffix(e.path, ".auth"), k)
		}
	}
	return o
}

// oauth decodes oauth_client_credentials.
func (l *loader) oauth(e entry) *OAuth {
	d := l.d
	o := &OAuth{}
	present, ok := d.object(e.value, e.path, oauthKeys, func(x entry) {
		switch x.key {
		case "client_id":
			o.ClientID, _ = d.str(x.value, x.path)
		case "client_secret":
			v, _ := d.str(x.value, x.path)
			o.ClientSecret = Secret(v)
		case "scopes":
			items, ok := d.list(x.value, x.path)
			if !ok {
				return
			}
			for i, n := range items {
				v, ok := colonScope(n)
				if !ok {
					v, ok = d.str(n, x.path)
				}
				if !ok {
					continue
				}
				if v == "" || strings.ContainsAny(v, " \t\r\n\"\\") {
					d.errorf(n, "%s[%d]: a scope is a non-empty word without spaces, quotes or backslashes (RFC 6749 §3.3)", x.path, i)
					continue
				}
				o.Scopes = append(o.Scopes, v)
			}
		case "audience":
			o.Audience, _ = d.str(x.value, x.path)
		case "resource":
			o.Resource, _ = d.str(x.value, x.path)
			if o.Resource != "" {
				if problem := httpURLProblem(o.Resource); problem != "" {
					d.errorf(x.value, "%s: expected an absolute http:// or https:// URL (RFC 8707): %s", x.path, problem)
				}
			}
		case "token_url":
			o.TokenURL, _ = d.str(x.value, x.path)
			if problem := httpURLProblem(o.TokenURL); problem != "" {
				d.errorf(x.value, "%s: expected an absolute http:// or https:// URL: %s", x.path, problem)
			}
		}
	})
	if !ok {
		return o
	}
	if _, set := present["client_id"]; !set || o.ClientID == "" {
		d.errorf(e.value, "%s: client_id is required", e.path)
	}
	if _, set := present["client_secret"]; !set || o.ClientSecret == "" {
		d.errorf(e.value, "%s: client_secret is required (use ${VAR} to keep it out of the file)", e.path)
	}
	return o
}

// colonScope reads a scope written as [search:read]: the YAML parser
// takes a colon in a flow sequence for a one-pair mapping, but the
// scope's text has no space after it, where a mapping's would.
func colonScope(n ast.Node) (string, bool) {
	m, ok := n.(*ast.MappingNode)
	if !ok || len(m.Values) != 1 {
		return "", false
	}
	kv := m.Values[0]
	k, kok := kv.Key.(*ast.StringNode)
	v, vok := kv.Value.(*ast.StringNode)
	if !kok || !vok {
		return "", false
	}
	colon, kp, vp := kv.GetToken().Position, k.GetToken().Position, v.GetToken().Position
	if kp.Line != colon.Line || vp.Line != colon.Line || kp.Column+len(k.Value) != colon.Column || vp.Column != colon.Column+1 {
		return "", false
	}
	return k.Value + ":" + v.Value, true
}
