package mcpsdk

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// VerifyToken reports whether a bearer token is valid, with its scopes
// and expiry.
type VerifyToken func(ctx context.Context, token string) (scopes []string, expires time.Time, ok bool)

// RequireBearer serves h, an MCP endpoint, behind the SDK's bearer token
// middleware: a request whose token verify does not accept gets 401 with
// WWW-Authenticate: Bearer resource_metadata=resourceMetadataURL (RFC
// 9728), as an MCP server that wants OAuth answers.
func RequireBearer(h http.Handler, resourceMetadataURL string, verify VerifyToken) http.Handler {
	verifier := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		scopes, expires, ok := verify(ctx, token)
		if !ok {
			return nil, fmt.Errorf("%w: unknown or expired token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{Scopes: scopes, Expiration: expires}, nil
	}
	return auth.RequireBearerToken(verifier, &auth.RequireBearerTokenOptions{ResourceMetadataURL: resourceMetadataURL})(h)
}
