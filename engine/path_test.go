package engine

import (
	"bytes"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/httpgrammar"
)

// canonicalCases are request-targets as received and the canonical Path a
// handler sees, or the refusal. Each regression cites its cause.
var canonicalCases = []struct {
	name, method, target string
	path                 string         // want, when err is nil
	err                  *ProtocolError // want a refusal
}{
	{name: "root", target: "/", path: "/"},
	{name: "plain path is kept", target: "/a/b.html?x=1", path: "/a/b.html"},
	{name: "trailing slash is kept", target: "/a/", path: "/a/"},
	// Issue 14, finding 1: each spelling took the "/" route to the files
	// that "/admin/" protects.
	{name: "leading double slash (issue 14)", target: "//admin/secret.html", path: "/admin/secret.html"},
	{name: "dot segment (issue 14)", target: "/./admin/secret.html", path: "/admin/secret.html"},
	{name: "encoded dot segment (issue 14)", target: "/%2e/admin/secret.html", path: "/admin/secret.html"},
	{name: "dot-dot back into a route", target: "/pub/../admin/secret.html", path: "/admin/secret.html"},
	{name: "encoded dot-dot, mixed case (RFC 3986 §2.1)", target: "/pub/%2E%2e/admin/", path: "/admin/"},
	{name: "half-encoded dot-dot", target: "/pub/.%2E/admin", path: "/admin"},
	{name: "repeated slashes merged", target: "/a//b///c", path: "/a/b/c"},
	{name: "only slashes", target: "///", path: "/"},
	{name: "unreserved escapes decoded (RFC 3986 §6.2.2.2)", target: "/%61dmin/%7Euser/%41", path: "/admin/~user/A"},
	{name: "other escapes decoded", target: "/a%20b/%25", path: "/a b/%"},
	{name: "decoded once: %252e%252e stays data", target: "/%252e%252e/x", path: "/%2e%2e/x"},
	// RFC 3986 §5.2.4: a final "." or ".." leaves the slash after it.
	{name: "final dot leaves a slash", target: "/admin/.", path: "/admin/"},
	{name: "final dot-dot leaves a slash", target: "/admin/x/..", path: "/admin/"},
	{name: "final dot-dot to the root", target: "/admin/..", path: "/"},
	{name: "lone dot", target: "/.", path: "/"},
	{name: "final empty segment after dot-dot", target: "/a/b/..//", path: "/a/"},
	{name: "file then dot is a directory path", target: "/a.txt/.", path: "/a.txt/"},
	// Segments that only look like dot segments.
	{name: "three dots is a name", target: "/.../x", path: "/.../x"},
	{name: "dot-dot prefix is a name", target: "/..a/b..", path: "/..a/b.."},
	{name: "dotfile is a name", target: "/.env", path: "/.env"},
	{name: "well-known", target: "/.well-known/x", path: "/.well-known/x"},
	{name: "query is not part of the path", target: "/a?/../b//", path: "/a"},
	// absolute-form (RFC 9112 §3.2.2): its path is made canonical alike.
	{name: "absolute-form dot-dot", target: "http://h/a/../b", path: "/b"},
	{name: "absolute-form double slash", target: "https://h//admin/", path: "/admin/"},
	{name: "absolute-form without a path", target: "http://h?x", path: "/"},
	{name: "absolute-form above the root", target: "http://h/../x", err: errPathAboveRoot},
	// asterisk-form and authority-form have no path to make canonical.
	{name: "asterisk-form", method: "OPTIONS", target: "*", path: "*"},
	{name: "authority-form", method: "CONNECT", target: "h:443", path: ""},
	// Refused: what cannot be made canonical safely.
	{name: "encoded slash (RFC 3986 §2.2)", target: "/a%2fb", err: errPathSlash},
	{name: "encoded slash, upper case", target: "/admin%2Fsecret.html", err: errPathSlash},
	{name: "encoded slash after dot-dot", target: "/a/..%2f..%2fetc/passwd", err: errPathSlash},
	{name: "decoded NUL", target: "/a%00.html", err: errPathNUL},
	{name: "dot-dot above the root", target: "/..", err: errPathAboveRoot},
	{name: "dot-dot above the root, then a name", target: "/../etc/passwd", err: errPathAboveRoot},
	{name: "encoded dot-dot above the root", target: "/%2e%2e/etc/passwd", err: errPathAboveRoot},
	{name: "climbs after descending", target: "/a/b/../../../x", err: errPathAboveRoot},
	{name: "empty segments do not count as depth", target: "//a//../../x", err: errPathAboveRoot},
	{name: "malformed escape", target: "/a%2", err: errPathEncoding},
}

// TestCanonicalPath parses each target from raw wire bytes, checking Path
// and that Target and RawPath stay as received, and sends it to a real
// server, whose handler sees that Path, or which answers 400 with the
// refusal's message.
func TestCanonicalPath(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(r.Path)
	})
	addr := startServer(t, &Server{Handler: h})
	for _, c := range canonicalCases {
		t.Run(c.name, func(t *testing.T) {
			method := c.method
			if method == "" {
				method = "GET"
			}
			in := wire(method+" "+c.target+" HTTP/1.1", "Host: h:443", "Connection: close")
			req, n, err := runParseHead([]byte(in), nil)
			switch {
			case c.err != nil && err != c.err:
				t.Errorf("parseHead(%q) = %s, want %v", in, describeHead(req, n, err), c.err)
			case c.err == nil && (err != nil || string(req.Path) != c.path || string(req.Target) != c.target):
				t.Errorf("parseHead(%q) = %s, want path %q", in, describeHead(req, n, err), c.path)
			case c.err == nil && !bytes.HasSuffix(req.Target, req.RawPath) && !bytes.Contains(req.Target, append(req.RawPath, '?')):
				t.Errorf("parseHead(%q): RawPath %q is not the target's path as received", in, req.RawPath)
			}

			resp := exchange(t, addr, in)
			if c.err != nil {
				if statusOf(resp) != 400 || !strings.HasSuffix(resp, c.err.Msg+"\n") {
					t.Errorf("GET %s: got %q, want 400 %q", c.target, resp, c.err.Msg)
				}
				return
			}
			if c.method == "" && (statusOf(resp) != 200 || !strings.HasSuffix(resp, "\r\n\r\n"+c.path)) {
				t.Errorf("GET %s: got %q, want 200 and the handler seeing %q", c.target, resp, c.path)
			}
		})
	}
}

// refCanonical is the reference model of the canonical path, for
// FuzzCanonicalPath and the differential test: decoded, a path starting
// with '/', is cleaned by path.Clean, which merges slashes and removes dot
// segments, and keeps a trailing slash as RFC 3986 §5.2.4 does. ok is
// false when a ".." climbs above the root, which path.Clean would clamp:
// cleaned as a relative path, such a path starts with "..".
func refCanonical(decoded string) (canon string, ok bool) {
	if rel := path.Clean(strings.TrimLeft(decoded, "/")); rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	canon = path.Clean(decoded)
	if canon != "/" && (strings.HasSuffix(decoded, "/") || strings.HasSuffix(decoded, "/.") || strings.HasSuffix(decoded, "/..")) {
		canon += "/"
	}
	return canon, true
}

// refCanonicalRaw is refCanonical for a raw path: decoded by net/url,
// refused for a malformed escape, an encoded slash or a NUL.
func refCanonicalRaw(raw string) (string, bool) {
	if strings.Contains(strings.ToLower(raw), "%2f") {
		return "", false
	}
	decoded, err := url.PathUnescape(raw)
	if err != nil || strings.IndexByte(decoded, 0) >= 0 {
		return "", false
	}
	return refCanonical(decoded)
}

func FuzzCanonicalPath(f *testing.F) {
	for _, c := range canonicalCases {
		if c.target[0] == '/' {
			f.Add(c.target)
		}
	}
	for _, s := range []string{"/a/./b/../../c/", "/%2e%2E%2f", "/.%2e/.%2e/", "/a/.%00", "/%", "/a%zz", "/a/b/c/../../..", "/./.well-known/../.env"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// A path as parseTarget passes it: '/', then request-target
		// characters up to the query.
		if !strings.HasPrefix(raw, "/") {
			raw = "/" + raw
		}
		if strings.ContainsFunc(raw, func(r rune) bool { return r >= 0x80 || !httpgrammar.IsTargetChar(byte(r)) || r == '?' }) {
			return
		}
		got, err := canonicalPath(nil, []byte(raw))
		want, ok := refCanonicalRaw(raw)
		if (err == nil) != ok || ok && string(got) != want {
			t.Fatalf("canonicalPath(%q) = %q, %v; the reference model says %q, %v", raw, got, err, want, ok)
		}
		if err != nil {
			if _, isPE := err.(*ProtocolError); !isPE {
				t.Fatalf("canonicalPath(%q): error %v is not a *ProtocolError", raw, err)
			}
			return
		}
		s := string(got)
		if !strings.HasPrefix(s, "/") || strings.Contains(s, "//") || strings.Contains(s, "/./") || strings.Contains(s, "/../") ||
			strings.HasSuffix(s, "/.") || strings.HasSuffix(s, "/..") {
			t.Fatalf("canonicalPath(%q) = %q: not canonical", raw, s)
		}
		// The fast path skips exactly the paths that are their own
		// canonical form.
		if !needsCanonical([]byte(raw)) && s != raw {
			t.Fatalf("needsCanonical(%q) = false, but its canonical form is %q", raw, s)
		}
		// Idempotent: the canonical path, re-encoded, is its own canonical
		// form; without a '%' it needs no work at all.
		again, err := canonicalPath(nil, []byte(strings.ReplaceAll(s, "%", "%25")))
		if err != nil || string(again) != s {
			t.Fatalf("canonicalPath(%q) = %q, but that path re-encoded gives %q, %v", raw, s, again, err)
		}
		if !strings.Contains(s, "%") && needsCanonical(got) {
			t.Fatalf("needsCanonical(%q) = true for a canonical path", s)
		}
		// Appending to a non-empty dst leaves its prefix alone.
		if withPrefix, _ := canonicalPath([]byte("prefix"), []byte(raw)); string(withPrefix) != "prefix"+s {
			t.Fatalf("canonicalPath(\"prefix\", %q) = %q", raw, withPrefix)
		}
	})
}

// BenchmarkCanonicalPath measures the scan every request pays and the
// rewrite only some do.
func BenchmarkCanonicalPath(b *testing.B) {
	for _, p := range []string{"/static/css/site.min.css", "/a/./b/../c//d%20e.html"} {
		b.Run(p, func(b *testing.B) {
			raw := []byte(p)
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				if needsCanonical(raw) {
					buf, _ = canonicalPath(buf[:0], raw)
				}
			}
		})
	}
}

// TestCanonicalPathExported: CanonicalPath holds a path from elsewhere
// (a CGI local redirect) to the request line's rules.
func TestCanonicalPathExported(t *testing.T) {
	for raw, want := range map[string]string{
		"/a/../b":   "/b",
		"/a//b/./c": "/a/b/c",
		"/a%20b/":   "/a b/",
		"/%2e%2e/x": "", // above the root
		"/a%2Fb":    "", // an encoded slash
		"/a%00":     "", // NUL
		"a/b":       "", // not absolute
		"":          "",
	} {
		got, err := CanonicalPath([]byte(raw))
		if want == "" && err == nil || want != "" && (err != nil || string(got) != want) {
			t.Errorf("%q: got %q, %v; want %q", raw, got, err, want)
		}
	}
}
