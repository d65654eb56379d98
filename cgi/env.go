package cgi

import (
	"strconv"
	"strings"

	"github.com/sluice-server/sluice/engine"
)

// environ builds the program's environment.
// user is the name an authentication component admitted (REMOTE_USER),
// or "".
func (g *Gateway) environ(r *engine.Request, user string, t target, length int64) []string {
	env := make([]string, 0, len(g.env)+24+len(r.Fields))
	env = append(env, g.env...)
	set := func(k, v string) { env = append(env, k+"="+v) }

	set("GATEWAY_INTERFACE", "CGI/1.1")
	set("SERVER_SOFTWARE", "sluice")
	set("SERVER_PROTOCOL", r.Proto())
	set("REQUEST_METHOD", string(r.Method))
	set("REQUEST_URI", string(r.Target))
	set("QUERY_STRING", string(r.Query))
	set("SCRIPT_NAME", t.scriptName)
	set("SCRIPT_FILENAME", t.script)
	set("DOCUMENT_ROOT", g.docRoot)
	if t.pathInfo != "" {
		set("PATH_INFO", t.pathInfo)
		set("PATH_TRANSLATED", t.translated)
	}
	name, port := splitHostPort(string(r.Host))
	if name == "" {
		name = g.host
	}
	if port == "" {
		port = "80"
		if r.TLS != nil {
			port = "443"
		}
	}
	set("SERVER_NAME", name)
	set("SERVER_PORT", port)
	if r.TLS != nil { // not RFC 3875's; Apache's and nginx's, which programs read
		set("HTTPS", "on")
		set("REQUEST_SCHEME", "https")
	}
	if r.RemoteAddr != nil {
		addr, rport := splitHostPort(r.RemoteAddr.String())
		addr = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
		set("REMOTE_ADDR", addr)
		set("REMOTE_HOST", addr)
		if rport != "" {
			set("REMOTE_PORT", rport)
		}
	}
	if length > 0 {
		set("CONTENT_LENGTH", strconv.FormatInt(length, 10))
	}
	if ct := r.Header("Content-Type"); ct != nil {
		set("CONTENT_TYPE", string(ct))
	}
	// AUTH_TYPE names the scheme the server authenticated the user with
	// (RFC 3875 §4.1.1), so only a user an authentication component
	// admitted has one; a client's Authorization alone sets neither.
	if user != "" {
		if auth := r.Header("Authorization"); len(auth) > 0 {
			scheme, _, _ := strings.Cut(string(auth), " ")
			set("AUTH_TYPE", scheme)
		}
		set("REMOTE_USER", user)
	}

	// HTTP_* variables, repeated fields joined.
	type kv struct{ k, v string }
	var hs []kv
fields:
	for _, f := range r.Fields {
		k, ok := headerVar(f.Name)
		if !ok {
			continue
		}
		for i := range hs {
			if hs[i].k == k {
				sep := ", "
				if k == "HTTP_COOKIE" {
					sep = "; "
				}
				hs[i].v += sep + string(f.Value)
				continue fields
			}
		}
		hs = append(hs, kv{k, string(f.Value)})
	}
	for _, h := range hs {
		set(h.k, h.v)
	}
	return env
}

// headerVar returns the HTTP_* variable for a request field name, or
// false for fields that get none.
func headerVar(name []byte) (string, bool) {
	b := make([]byte, 0, 5+len(name))
	b = append(b, "HTTP_"...)
	for _, ch := range name {
		switch {
		case 'a' <= ch && ch <= 'z':
			b = append(b, ch-'a'+'A')
		case 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9':
			b = append(b, ch)
		case ch == '-':
			b = append(b, '_')
		default:
			return "", false
		}
	}
	switch k := string(b); k {
	case "HTTP_PROXY", "HTTP_AUTHORIZATION", "HTTP_PROXY_AUTHORIZATION",
		"HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH", "HTTP_TRANSFER_ENCODING", "HTTP_":
		return "", false
	default:
		return k, true
	}
}

// splitHostPort splits "host:port", "[v6]:port", "host" or "[v6]".
func splitHostPort(s string) (host, port string) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 || strings.IndexByte(s[i:], ']') >= 0 {
		return s, ""
	}
	if strings.IndexByte(s[:i], ':') >= 0 && !strings.HasPrefix(s, "[") {
		return s, "" // a bare IPv6 address
	}
	return s[:i], s[i+1:]
}
