package cgi

import (
	"bytes"
	"net"
	"strconv"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// Meta is what a gateway adds to a request for its meta-variables (RFC
// 3875 §4.1): the script the request runs and how the URL named it, and
// what the server knows of the request beyond its head.
type Meta struct {
	ScriptName     string // SCRIPT_NAME: the URL path of the script
	ScriptFilename string // SCRIPT_FILENAME: the script's file
	PathInfo       string // PATH_INFO, "" for none
	PathTranslated string // PATH_TRANSLATED, set with PathInfo
	DocumentRoot   string // DOCUMENT_ROOT
	ServerName     string // SERVER_NAME for a request without a Host
	// User is the name an authentication component admitted
	// (REMOTE_USER, with AUTH_TYPE the Authorization field's scheme), or
	// "": a client's Authorization alone sets neither.
	User string
	// ContentLength is the body's length, 0 for none: CONTENT_LENGTH.
	ContentLength int64
	// Authorization passes the client's Authorization field on as
	// HTTP_AUTHORIZATION, which RFC 3875 leaves out and CGI programs do
	// not get: an application that checks its own credentials (PHP's
	// PHP_AUTH_USER, a bearer token) reads it there. A gateway sets it
	// only when no authentication component admitted the request (User
	// is ""), whose credentials were the server's, not the
	// application's.
	Authorization bool
}

// Vars calls add for each meta-variable of r, m completing it: those of
// RFC 3875 (GATEWAY_INTERFACE, SERVER_*, REQUEST_METHOD, QUERY_STRING,
// SCRIPT_NAME, PATH_INFO, PATH_TRANSLATED, REMOTE_ADDR, REMOTE_PORT,
// CONTENT_LENGTH, CONTENT_TYPE, AUTH_TYPE, REMOTE_USER), those programs
// read from Apache and nginx (REQUEST_URI, SCRIPT_FILENAME,
// DOCUMENT_ROOT, HTTPS, REQUEST_SCHEME), and an HTTP_* variable per
// request field, repeated fields joined (by "; " for Cookie, else ", ").
// Fields whose name holds a byte other than a letter, digit or '-' get
// none (X_Forwarded_For would pass for X-Forwarded-For), nor do Proxy
// (httpoxy: HTTP_PROXY is read by programs as their proxy),
// Authorization (but see Meta.Authorization), Proxy-Authorization, Content-Type, Content-Length and
// Transfer-Encoding. Values are passed as they are in the request: the
// engine has refused control bytes in field values but HTAB.
//
// value is valid only during the call (it may be scratch, which Vars
// reuses); add must copy it. scratch is a buffer Vars may use, and
// returns (grown), so that a caller can keep it for the next request.
// Vars does not allocate for the usual request fields.
func Vars(r *engine.Request, m *Meta, scratch []byte, add func(name string, value []byte)) []byte {
	b := scratch[:0]
	str := func(name, v string) {
		b = append(b[:0], v...)
		add(name, b)
	}
	str("GATEWAY_INTERFACE", "CGI/1.1")
	str("SERVER_SOFTWARE", "sluice")
	str("SERVER_PROTOCOL", r.Proto())
	add("REQUEST_METHOD", r.Method)
	add("REQUEST_URI", r.Target)
	add("QUERY_STRING", r.Query)
	str("SCRIPT_NAME", m.ScriptName)
	str("SCRIPT_FILENAME", m.ScriptFilename)
	str("DOCUMENT_ROOT", m.DocumentRoot)
	if m.PathInfo != "" {
		str("PATH_INFO", m.PathInfo)
		str("PATH_TRANSLATED", m.PathTranslated)
	}
	name, port := splitHostPortBytes(r.Host)
	if len(name) == 0 {
		str("SERVER_NAME", m.ServerName)
	} else {
		add("SERVER_NAME", name)
	}
	switch {
	case len(port) > 0:
		add("SERVER_PORT", port)
	case r.TLS != nil:
		str("SERVER_PORT", "443")
	default:
		str("SERVER_PORT", "80")
	}
	if r.TLS != nil { // not RFC 3875's; Apache's and nginx's, which programs read
		str("HTTPS", "on")
		str("REQUEST_SCHEME", "https")
	} else {
		str("REQUEST_SCHEME", "http")
	}
	switch a := r.RemoteAddr.(type) {
	case nil:
	case *net.TCPAddr:
		ap := a.AddrPort()
		b = ap.Addr().Unmap().AppendTo(b[:0])
		add("REMOTE_ADDR", b)
		add("REMOTE_HOST", b)
		b = strconv.AppendUint(b[:0], uint64(ap.Port()), 10)
		add("REMOTE_PORT", b)
	default:
		addr, rport := splitHostPort(a.String())
		addr = trimBrackets(addr)
		str("REMOTE_ADDR", addr)
		str("REMOTE_HOST", addr)
		if rport != "" {
			str("REMOTE_PORT", rport)
		}
	}
	if m.ContentLength > 0 {
		b = strconv.AppendInt(b[:0], m.ContentLength, 10)
		add("CONTENT_LENGTH", b)
	}
	if ct := r.Header("Content-Type"); ct != nil {
		add("CONTENT_TYPE", ct)
	}
	if m.User != "" {
		if auth := r.Header("Authorization"); len(auth) > 0 {
			scheme, _, _ := bytes.Cut(auth, []byte(" "))
			add("AUTH_TYPE", scheme)
		}
		str("REMOTE_USER", m.User)
	}

	// HTTP_* variables, repeated fields joined.
fields:
	for i := range r.Fields {
		f := &r.Fields[i]
		k, ok := headerVar(f.Name)
		if !ok {
			if !m.Authorization || m.User != "" || !httpgrammar.EqualFold(f.Name, "Authorization") {
				continue
			}
			k = "HTTP_AUTHORIZATION"
		}
		for j := range i {
			if httpgrammar.EqualFold(r.Fields[j].Name, string(f.Name)) {
				continue fields // joined with the first
			}
		}
		v := f.Value
		joined := false
		for j := i + 1; j < len(r.Fields); j++ {
			if !httpgrammar.EqualFold(r.Fields[j].Name, string(f.Name)) {
				continue
			}
			if !joined {
				b = append(b[:0], v...)
				joined = true
			}
			if k == "HTTP_COOKIE" {
				b = append(b, "; "...)
			} else {
				b = append(b, ", "...)
			}
			b = append(b, r.Fields[j].Value...)
		}
		if joined {
			v = b
		}
		add(k, v)
	}
	return b
}

// commonVars are the HTTP_* variables of the usual request fields, so
// that they cost no allocation.
var commonVars = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"HOST", "USER_AGENT", "ACCEPT", "ACCEPT_ENCODING", "ACCEPT_LANGUAGE",
		"CONNECTION", "COOKIE", "REFERER", "CACHE_CONTROL", "ORIGIN", "UPGRADE_INSECURE_REQUESTS",
		"IF_MODIFIED_SINCE", "IF_NONE_MATCH", "X_FORWARDED_FOR", "X_FORWARDED_PROTO", "X_REQUESTED_WITH",
		"SEC_FETCH_SITE", "SEC_FETCH_MODE", "SEC_FETCH_DEST", "SEC_FETCH_USER", "PRAGMA", "DNT", "RANGE"} {
		m[n] = "HTTP_" + n
	}
	return m
}()

// headerVar returns the HTTP_* variable for a request field name, or
// false for fields that get none.
func headerVar(name []byte) (string, bool) {
	var buf [64]byte
	b := buf[:0]
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
	switch string(b) {
	case "PROXY", "AUTHORIZATION", "PROXY_AUTHORIZATION",
		"CONTENT_TYPE", "CONTENT_LENGTH", "TRANSFER_ENCODING", "":
		return "", false
	}
	if k, ok := commonVars[string(b)]; ok {
		return k, true
	}
	return "HTTP_" + string(b), true
}

// splitHostPortBytes is splitHostPort of a Host field.
func splitHostPortBytes(s []byte) (host, port []byte) {
	i := bytes.LastIndexByte(s, ':')
	if i < 0 || bytes.IndexByte(s[i:], ']') >= 0 {
		return s, nil
	}
	if bytes.IndexByte(s[:i], ':') >= 0 && (len(s) == 0 || s[0] != '[') {
		return s, nil // a bare IPv6 address
	}
	return s[:i], s[i+1:]
}

func trimBrackets(s string) string {
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1]
	}
	return s
}
