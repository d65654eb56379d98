package components

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// seenPath is a source that answers the path, raw path and query the
// request has when it reaches it, separated by '|'.
var seenPath = pipe.Source(func(c *pipe.Conn) pipe.Content {
	r := c.Request
	body := string(r.Path) + "|" + string(r.RawPath) + "|" + string(r.Query)
	return func(w pipe.Writer) error { _, err := io.WriteString(w, body); return err }
})

// rewriteRoute is a route whose pipeline rewrites to to, then answers
// with seenPath.
func rewriteRoute(t testing.TB, match, to string) pipe.Route {
	t.Helper()
	return rewriteStripRoute(t, match, to, "")
}

// rewriteStripRoute is rewriteRoute with a strip_prefix.
func rewriteStripRoute(t testing.TB, match, to, strip string) pipe.Route {
	t.Helper()
	rw, err := NewRewrite(RewriteOptions{To: to, StripPrefix: strip})
	if err != nil {
		t.Fatalf("rewrite %q: %v", to, err)
	}
	return pipe.Route{Match: []string{match}, Pipeline: pipe.Chain{rw, seenPath}}
}

// The rewrite pipe on the wire: the path, raw path and query the rest of
// the pipeline sees, parameters escaped for where they land, and 400 for
// a path a parameter would make non-canonical (traversal attempts
// included).
func TestRewrite(t *testing.T) {
	rt, err := pipe.NewRouter(
		rewriteRoute(t, "/user/{name}", "/users/${name}.html"),
		rewriteRoute(t, `~ ^/re/(?P<rest>.*)$`, "/pub/${rest}"),
		rewriteRoute(t, `~ ^/d/(.*)\.html$`, "/pub/$1"),
		rewriteRoute(t, `~ ^/q/([^/]*)/(.*)$`, "/search?q=$1&page=$2&$args"),
		rewriteRoute(t, "/old/", "/new$path"),
		rewriteRoute(t, "/empty/", "/e?"),
		rewriteRoute(t, "/keep/", "/k$query"),
		rewriteRoute(t, "/front/", "/index.php?route=$path&$args"),
		rewriteStripRoute(t, "/move/", "/moved$path$query", "/move/a"),
		rewriteStripRoute(t, "/slash/", "/to/$path", "/slash/a"),
		rewriteStripRoute(t, "/bare/", "$path", "/bare/a"),
		rewriteStripRoute(t, "/qs/", "/s?from=$path", "/qs/a"),
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, pipe.Handler(rt))
	for _, tt := range []struct {
		name, target string
		status       int
		seen         string // path|raw path|query
	}{
		{"capture", "/user/ann?x=1", 200, "/users/ann.html|/users/ann.html|x=1"},
		{"capture escaped", "/user/a%20b%3Fc%23d%25?x", 200, "/users/a b?c#d%.html|/users/a%20b%3Fc%23d%25.html|x"},
		{"capture colon and backslash", "/user/a:b%5C", 200, "/users/a:b\\.html|/users/a%3Ab%5C.html|"},
		{"group spans segments", "/re/a/b/c.txt", 200, "/pub/a/b/c.txt|/pub/a/b/c.txt|"},
		{"encoded dots resolved first", "/re/a/%2e%2e/b", 200, "/pub/b|/pub/b|"},
		{"dots never leave the group's tree", "/re/%2e%2e/%2e%2e/etc/passwd", 400, ""},
		{"a group that makes ..", "/d/...html", 400, ""},
		{"a group that makes .", "/d/..html", 400, ""},
		{"a group that makes an empty segment", "/d/x/.html", 200, "/pub/x/|/pub/x/|"},
		{"a dotfile stays a dotfile", "/re/.env", 200, "/pub/.env|/pub/.env|"},
		{"query from groups and args", "/q/a&b=c/2?x=1&y", 200, "/search|/search|q=a%26b%3Dc&page=2&x=1&y"},
		{"query value with + and #", "/q/a+b%23/%3F?", 200, "/search|/search|q=a%2Bb%23&page=%3F&"},
		{"path kept", "/old/a%20b/c", 200, "/new/old/a b/c|/new/old/a%20b/c|"},
		{"query emptied", "/empty/x?a=1", 200, "/e|/e|"},
		{"query kept", "/keep/x?a=1", 200, "/k|/k|a=1"},
		{"path in the query", "/front/a%20b/c&d?x=1", 200, "/index.php|/index.php|route=%2Ffront%2Fa%20b%2Fc%26d&x=1"},
		{"prefix stripped", "/move/a/b%20c?x=1", 200, "/moved/b c|/moved/b%20c|x=1"},
		{"prefix stripped whole", "/move/a", 200, "/moved|/moved|"},
		{"prefix stripped whole, slash", "/move/a/", 200, "/moved/|/moved/|"},
		{"a longer segment is no prefix", "/move/ab", 200, "/moved/move/ab|/moved/move/ab|"},
		{"prefix stripped beside a slash", "/slash/a/x", 200, "/to/x|/to/x|"},
		{"prefix stripped, to a slash", "/slash/a", 200, "/to/|/to/|"},
		{"prefix stripped, $path alone", "/bare/a", 200, "/|/|"},
		{"prefix stripped, $path alone, more", "/bare/a/b", 200, "/b|/b|"},
		{"prefix stripped in the query", "/qs/a/b", 200, "/s|/s|from=%2Fb"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := srv.RoundTrip(t, "GET "+tt.target+" HTTP/1.1\r\nHost: h\r\n\r\n")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tt.status, body)
			}
			if tt.seen != "" && body != tt.seen {
				t.Errorf("seen %q, want %q", body, tt.seen)
			}
		})
	}
}

// NewRewrite refuses a target that is no canonical path on this server.
func TestRewriteErrors(t *testing.T) {
	for _, tt := range []struct{ to, want string }{
		{"", "rewrite: no target"},
		{"x/$1", "must start with / or $path"},
		{"${1}/x", "must start with / or $path"},
		{"https://example.com/", "must start with / or $path"},
		{"/a/../b$1", "is not a canonical path"},
		{"/a//b", "is not a canonical path"},
		{"/a/./b", "is not a canonical path"},
		{"/a%2Fb", "is not a canonical path"},
		{"/a%00", "is not a canonical path"},
		{"/a%zz", "is not a canonical path"},
		{"/a b", "contains a space"},
		{"/a\x00", "control character"},
		{"/a#b", "contains a '#'"},
		{`/a\b`, "backslash"},
		{"/a$query/b", "$query in"},
		{"/x?a=1$query", `$query in "/x?a=1$query" comes after the "?"`},
		{"/x?$query", `$query in "/x?$query" comes after the "?"`},
		{"$path./x", `is not a canonical path (it makes a "." segment for the request path /x/)`},
		{"/a/.$path", `is not a canonical path (it makes a "." segment for the request path /x)`},
		{"/a$args", "$args in"},
		{"/a?x=%", "starts no escape"},
		{"/a$", "starts no placeholder"},
		{"/a/${x", "unclosed ${"},
	} {
		if _, err := NewRewrite(RewriteOptions{To: tt.to}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewRewrite(%q): %v, want an error with %q", tt.to, err, tt.want)
		}
	}
	for _, strip := range []string{"a", "/a/", "/"} {
		if _, err := NewRewrite(RewriteOptions{To: "/x$path", StripPrefix: strip}); err == nil || !strings.Contains(err.Error(), "must start with / and not end with /") {
			t.Errorf("strip_prefix %q: %v, want an error", strip, err)
		}
	}
}

// canonicalResult checks what a rewrite left: its path is canonical (as
// the engine makes a request's) and its raw path spells exactly it.
func canonicalResult(t *testing.T, what string, r *engine.Request) {
	t.Helper()
	canon, err := engine.CanonicalPath(r.RawPath)
	if err != nil || string(canon) != string(r.Path) || !decodesTo(r.RawPath, r.Path) {
		t.Fatalf("%s: path %q, raw %q: canonical %q, %v", what, r.Path, r.RawPath, canon, err)
	}
	for _, bad := range []string{"//", "/./", "/../", "\x00"} {
		if strings.Contains(string(r.Path), bad) {
			t.Fatalf("%s: path %q holds %q", what, r.Path, bad)
		}
	}
	if strings.HasSuffix(string(r.Path), "/.") || strings.HasSuffix(string(r.Path), "/..") {
		t.Fatalf("%s: path %q ends in a dot segment", what, r.Path)
	}
}

// FuzzRewrite routes fuzzed paths, made canonical as the engine makes
// them, to routes that rewrite with their captures: the result is always
// a canonical path spelled exactly by its raw form, or refused with 400.
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{"/p/a", "/p/a/", "/t", "/t/x/", "/i/", "/s/a/", "/j/./", "/d/...html", "/re/a/b", "/re/%2e%2e", "/u/a%20b", "/d/.html", "/re/..%2f", "/q/%5C/x", "/re/%00"} {
		f.Add(s)
	}
	var got *engine.Request
	var status int
	record := pipe.Pipe(func(c *pipe.Conn) bool { got = c.Request; return false })
	var routes []pipe.Route
	for _, r := range []struct{ match, to, strip string }{
		{"/u/{name}", "/users/${name}", ""},
		{`~ ^/re/(.*)$`, "/pub/$1", ""},
		{`~ ^/d/(.*)\.html$`, "/pub/$1/index", ""},
		{`~ ^/q/(.*)/(.*)$`, "$path/$2/$1?a=$1&$args", ""},
		{"/i/", "$path/index.html", ""},
		{"/s/", "/static/$path/x", ""},
		{`~ ^/j/(.*)$`, "/j/$1$path", ""},
		{"/p/", "$path", "/p/a"},
		{"/t/", "/t2/$path", "/t"},
	} {
		rw, err := NewRewrite(RewriteOptions{To: r.to, StripPrefix: r.strip})
		if err != nil {
			f.Fatal(err)
		}
		routes = append(routes, pipe.Route{Match: []string{r.match}, Pipeline: pipe.Chain{rw, record}})
	}
	rt, err := pipe.NewRouter(routes...)
	if err != nil {
		f.Fatal(err)
	}
	h := pipe.Handler(rt)
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.ParseRequestURI(raw)
		if err != nil {
			return
		}
		req, err := engine.NewRequest(&http.Request{Method: "GET", URL: u, Host: "h"})
		if err != nil {
			return // refused by the engine, as the parser refuses it
		}
		got, status = nil, 0
		w := &statusRecorder{}
		h.Serve(w, req)
		status = w.status
		if got == nil {
			if status != 400 && status != 404 {
				t.Fatalf("%q (path %q): status %d without reaching the source", raw, req.Path, status)
			}
			return
		}
		canonicalResult(t, raw, got)
	})
}

// statusRecorder is an engine.ResponseWriter that keeps the status.
type statusRecorder struct {
	h      engine.Header
	status int
}

func (r *statusRecorder) Header() *engine.Header            { return &r.h }
func (r *statusRecorder) WriteHeader(code int)              { r.status = code }
func (r *statusRecorder) Write(p []byte) (int, error)       { return len(p), nil }
func (r *statusRecorder) WriteString(s string) (int, error) { return len(s), nil }
func (r *statusRecorder) Flush() error                      { return nil }

// FuzzPlaceholders parses fuzzed templates and expands them with a
// fuzzed parameter value: a redirect's Location is plain ASCII without
// spaces or controls, and a relative one never names a scheme or host; a
// rewrite's path is canonical and spelled exactly by its raw form, or
// refused, and its query is printable ASCII without '#' or spaces.
func FuzzPlaceholders(f *testing.F) {
	for _, s := range [][2]string{
		{"/a/$1", "../x"}, {"$path/${id}?q=$1&$args", "a&b=c"}, {"/${id}", "//evil.com"},
		{"/x$1", "javascript:alert(1)"}, {"/$1/$1", ""}, {"/p?$1", "a b#c"}, {"${1}", "https://evil.com"},
		{"https://example.com/$1", "@evil.com"}, {"/a$$1", "x"}, {"$1", "/\\evil.com"}, {"/a/${n}", ".."},
		{"$path/$1/index.html", "a/"}, {"/x/$1$path/$1", "%2e"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, to, value string) {
		if strings.ContainsRune(value, 0) {
			return // no path parameter holds a NUL
		}
		if strings.IndexFunc(to, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0 {
			return // the configuration's own text, which redirect sends as written
		}
		param := func(string) string { return value }
		req := &engine.Request{Path: []byte("/p/a b"), RawPath: []byte("/p/a%20b"), Query: []byte("x=1"), Host: []byte("example.org")}
		if _, err := NewRedirect(RedirectOptions{To: to}); err == nil {
			parts, _ := redirectParse(to)
			absolute, _ := redirectAbsolute(to, parts)
			rd := &redirect{parts: parts, absolute: absolute}
			if b, ok := rd.expand(req, param); ok {
				loc := string(b)
				if i := strings.IndexFunc(loc, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '\\' }); i >= 0 {
					t.Fatalf("To %q, value %q: Location %q has %q", to, value, loc, loc[i])
				}
				if u, err := url.Parse(loc); !absolute && err == nil && (u.Scheme != "" || u.Host != "") {
					t.Fatalf("To %q, value %q: relative Location %q names scheme %q, host %q", to, value, loc, u.Scheme, u.Host)
				}
			}
		}
		rw, err := newRewrite(RewriteOptions{To: to})
		if err != nil {
			return
		}
		raw, canon, err := rw.rewritePath(req.Path, param)
		if err != nil {
			return // answered 400
		}
		canonicalResult(t, to, &engine.Request{Path: canon, RawPath: raw})
		if rw.newQuery {
			q := string(rw.rewriteQuery(req.Path, req.Query, param))
			if i := strings.IndexFunc(q, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '#' }); i >= 0 {
				t.Fatalf("To %q, value %q: query %q has %q", to, value, q, q[i])
			}
		}
	})
}

// $path beside a "/" of the template's text makes one slash, never an
// empty segment: "$path/index.html" serves a directory's index for every
// path, "/" included (nginx's rewrite ^(.*)/$ $1/index.html), and
// "/files/$path" moves a tree.
func TestRewritePathJoin(t *testing.T) {
	rt, err := pipe.NewRouter(
		rewriteRoute(t, "/", "$path/index.html"),
		rewriteRoute(t, "/f/", "/files/$path"),
		rewriteRoute(t, "/b/", "/x/$path/y"),
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, pipe.Handler(rt))
	for _, tt := range []struct{ target, seen string }{
		{"/", "/index.html|/index.html|"},
		{"/a/", "/a/index.html|/a/index.html|"},
		{"/a", "/a/index.html|/a/index.html|"},
		{"/a//b/?q=1", "/a/b/index.html|/a/b/index.html|q=1"},
		{"/a%20b/", "/a b/index.html|/a%20b/index.html|"},
		{"/f/", "/files/f/|/files/f/|"},
		{"/f/x", "/files/f/x|/files/f/x|"},
		{"/b/", "/x/b/y|/x/b/y|"},
		{"/b/c", "/x/b/c/y|/x/b/c/y|"},
	} {
		resp, body := srv.RoundTrip(t, "GET "+tt.target+" HTTP/1.1\r\nHost: h\r\n\r\n")
		if resp.StatusCode != 200 || body != tt.seen {
			t.Errorf("%s: %d %q, want 200 %q", tt.target, resp.StatusCode, body, tt.seen)
		}
	}
	// The path "/" between two slashes, which no route above can give.
	for _, tt := range []struct{ to, path, want string }{
		{"/x/$path/y", "/", "/x/y"},
		{"/x/$path", "/", "/x/"},
		{"$path/", "/", "/"},
		{"$path", "/", "/"},
		{"$path/$path", "/a/", "/a/a/"},
	} {
		rw, err := newRewrite(RewriteOptions{To: tt.to})
		if err != nil {
			t.Fatalf("%s: %v", tt.to, err)
		}
		raw, canon, err := rw.rewritePath([]byte(tt.path), func(string) string { return "" })
		if err != nil || string(raw) != tt.want || string(canon) != tt.want {
			t.Errorf("%s for %s: %q, %q, %v; want %q", tt.to, tt.path, raw, canon, err, tt.want)
		}
	}
}

// A rewritten path refused with 400 says which placeholder made what.
func TestRewriteRefusalNamesCause(t *testing.T) {
	rt, err := pipe.NewRouter(
		rewriteRoute(t, `~ ^/d/(.*)\.html$`, "/pub/$1"),
		rewriteRoute(t, `~ ^/e/(.*)$`, "/pub/$1/x"),
		rewriteRoute(t, `~ ^/p/(?P<a>.*)x$`, "/pub/${a}$path"),
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, pipe.Handler(rt))
	for _, tt := range []struct{ target, want string }{
		{"/d/...html", `400 Bad Request: the rewritten path is refused: $1 made a ".." segment`},
		{"/d/..html", `400 Bad Request: the rewritten path is refused: $1 made a "." segment`},
		{"/e/", `400 Bad Request: the rewritten path is refused: $1 made an empty segment`},
		{"/p/a/x", `400 Bad Request: the rewritten path is refused: $a and $path made an empty segment`},
	} {
		resp, body := srv.RoundTrip(t, "GET "+tt.target+" HTTP/1.1\r\nHost: h\r\n\r\n")
		if resp.StatusCode != 400 || strings.TrimSpace(body) != tt.want {
			t.Errorf("%s: %d %q, want 400 %q", tt.target, resp.StatusCode, body, tt.want)
		}
	}
}

// PlaceholderParams reads a template with its own component's variables:
// $host is redirect's variable and, in a rewrite, a path parameter the
// route must capture.
func TestPlaceholderParams(t *testing.T) {
	for _, tt := range []struct {
		component, to string
		want          []string
	}{
		{"rewrite", "/sites/$host$path", []string{"host"}},
		{"redirect", "https://$host/$id$path", []string{"id"}},
		{"rewrite", "/a/$2/${id}/$2?q=$args", []string{"2", "id"}},
		{"redirect", "/a/$", nil},
		{"files", "/a/$id", nil},
	} {
		if got := PlaceholderParams(tt.component, tt.to); !slices.Equal(got, tt.want) {
			t.Errorf("PlaceholderParams(%q, %q) = %q, want %q", tt.component, tt.to, got, tt.want)
		}
	}
}
