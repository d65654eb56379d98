package admin

import (
	"context"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

type callerKey struct{}

// connContext puts the caller a Unix connection's peer credentials name
// in the connection's context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if uc, ok := c.(*net.UnixConn); ok {
		return context.WithValue(ctx, callerKey{}, peerOf(uc))
	}
	return ctx
}

// caller returns who made r, for the log: "uid=1000(alice) pid=4242"
// on the Unix socket, "token=NAME" on TCP.
func caller(r *http.Request) string {
	if s, ok := r.Context().Value(callerKey{}).(string); ok {
		return s
	}
	return "unknown"
}

// auth lets through the requests of callers allowed in: any on the Unix
// socket (its mode keeps others out), and on TCP those with one of the
// tokens as their bearer token, whose name it puts in the context. Others
// get 401.
func (s *Server) auth(next http.Handler) http.Handler {
	if s.Config.Listen == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := s.tokenName(r.Header.Get("Authorization"))
		if name == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice admin"`)
			fail(w, http.StatusUnauthorized, "a bearer token is required: Authorization: Bearer TOKEN, with a token of the admin section")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, "token="+name)))
	})
}

// tokenName returns the name of the token an Authorization field value
// carries, or "". Every token is compared, in constant time, so that the
// time taken tells nothing of which, or how much of one, matched.
func (s *Server) tokenName(field string) string {
	scheme, tok, ok := strings.Cut(field, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	tok = strings.TrimSpace(tok)
	found := ""
	for name, t := range s.Config.Tokens {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(t)) == 1 {
			found = name
		}
	}
	return found
}
