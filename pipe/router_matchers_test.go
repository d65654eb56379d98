package pipe

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// hasHeader is a Matcher: the request carries the field name.
func hasHeader(name string) Matcher {
	return MatcherFunc(func(r *engine.Request) bool { return r.Header(name) != nil })
}

// routeParams is a source that answers the route's name and its captures,
// by name and by number.
func routeParams(route string) Source {
	return func(c *Conn) Content {
		var b strings.Builder
		b.WriteString(route)
		for k, v := range c.Params() {
			b.WriteString(" " + k + "=" + v)
		}
		for _, n := range []string{"1", "2", "3"} {
			if v := c.Param(n); v != "" {
				b.WriteString(" $" + n + "=" + v)
			}
		}
		body := b.String()
		return func(w Writer) error { _, err := io.WriteString(w, body); return err }
	}
}

// Routes with conditions (When) and regular-expression patterns, through
// a real server on the wire: which route takes each request, which
// captures it gets, and when the answer is 404 or 405 rather than a less
// specific route.
func TestRouterMatchersAndRegex(t *testing.T) {
	rt, err := NewRouter(
		// One pattern, three routes: two with conditions, then the fallback.
		Route{Match: []string{"/api/"}, When: []Matcher{hasHeader("X-Beta")}, Pipeline: routeParams("api-beta")},
		Route{Match: []string{"/api/"}, When: []Matcher{hasHeader("X-Old")}, Methods: []string{"GET"}, Pipeline: routeParams("api-old")},
		Route{Match: []string{"/api/"}, Pipeline: routeParams("api")},
		// A pattern whose only route has a condition: no fallback.
		Route{Match: []string{"/admin/"}, When: []Matcher{hasHeader("X-Admin")}, Methods: []string{"GET"}, Pipeline: routeParams("admin")},
		// Regular expressions, in order; the first beats the second.
		Route{Match: []string{`~ ^/user/(?P<id>[0-9]+)$`}, Pipeline: routeParams("user")},
		Route{Match: []string{`~ ^/user/`}, Pipeline: routeParams("user-any")},
		Route{Match: []string{`~ \.php$`}, Methods: []string{"POST"}, Pipeline: routeParams("php")},
		Route{Match: []string{`~ index`}, Pipeline: routeParams("index")},
		Route{Match: []string{`~ ^/(a)/(?P<rest>.*)/(z)?$`}, Host: "re.example", Pipeline: routeParams("host-re")},
		Route{Match: []string{"/exact.php"}, Pipeline: routeParams("exact")},
		Route{Match: []string{"/user/{name}"}, Pipeline: routeParams("user-capture")},
		Route{Match: []string{"/docs/{page}"}, Pipeline: routeParams("docs")},
		Route{Match: []string{"/"}, Pipeline: routeParams("root")},
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, Handler(rt))
	for _, tt := range []struct {
		name   string
		raw    string // request line and fields, without the final CRLF
		status int
		body   string
		allow  string
	}{
		{"fallback without the field", "GET /api/x HTTP/1.1\r\nHost: h", 200, "api", ""},
		{"first condition", "GET /api/x HTTP/1.1\r\nHost: h\r\nX-Beta: 1", 200, "api-beta", ""},
		{"first of two that hold", "GET /api/x HTTP/1.1\r\nHost: h\r\nX-Old: 1\r\nX-Beta: 1", 200, "api-beta", ""},
		{"second condition", "GET /api/x HTTP/1.1\r\nHost: h\r\nX-Old: 1", 200, "api-old", ""},
		{"condition holds, method does not: fallback", "POST /api/x HTTP/1.1\r\nHost: h\r\nX-Old: 1\r\nContent-Length: 0", 200, "api", ""},
		{"condition fails: 404, not the root", "GET /admin/x HTTP/1.1\r\nHost: h", 404, "", ""},
		{"condition holds", "GET /admin/x HTTP/1.1\r\nHost: h\r\nX-Admin: 1", 200, "admin", ""},
		{"condition holds, method not: 405", "DELETE /admin/x HTTP/1.1\r\nHost: h\r\nX-Admin: 1", 405, "", "GET, HEAD"},
		{"condition fails, method not: 404", "DELETE /admin/x HTTP/1.1\r\nHost: h", 404, "", ""},
		{"regex with a named group", "GET /user/42 HTTP/1.1\r\nHost: h", 200, "user id=42 $1=42", ""},
		{"regex beats a capture pattern", "GET /user/ann HTTP/1.1\r\nHost: h", 200, "user-any", ""},
		{"regex on the canonical path", "GET /x/..//user/%34%32 HTTP/1.1\r\nHost: h", 200, "user id=42 $1=42", ""},
		{"regex anywhere in the path", "POST /b/c/index.php HTTP/1.1\r\nHost: h\r\nContent-Length: 0", 200, "php", ""},
		{"regex method: 405, not a later regex or the root", "GET /index.php HTTP/1.1\r\nHost: h", 405, "", "POST"},
		{"a later regex", "GET /index.html HTTP/1.1\r\nHost: h", 200, "index", ""},
		{"exact beats a regex", "GET /exact.php HTTP/1.1\r\nHost: h", 200, "exact", ""},
		{"groups across segments, numbered", "GET /a/b/c/z HTTP/1.1\r\nHost: re.example", 200, "host-re rest=b/c $1=a $2=b/c $3=z", ""},
		{"an optional group that took no part", "GET /a/b/ HTTP/1.1\r\nHost: re.example", 200, "host-re rest=b $1=a $2=b", ""},
		{"regex for another host", "GET /a/b/c/z HTTP/1.1\r\nHost: other", 200, "root", ""},
		{"capture numbered", "GET /docs/intro HTTP/1.1\r\nHost: h", 200, "docs page=intro $1=intro", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := srv.RoundTrip(t, tt.raw+"\r\n\r\n")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tt.status, body)
			}
			if tt.body != "" && body != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
}

// NewRouter lets routes share a pattern, host and methods when all but
// one have conditions, and refuses what cannot work.
func TestRouterMatchersErrors(t *testing.T) {
	src := routeParams("x")
	when := []Matcher{hasHeader("A")}
	for _, tt := range []struct {
		name   string
		routes []Route
		err    string // "" for none
	}{
		{"conditions share a pattern", []Route{{Match: []string{"/a"}, When: when, Pipeline: src}, {Match: []string{"/a"}, When: when, Pipeline: src}, {Match: []string{"/a"}, Pipeline: src}}, ""},
		{"two fallbacks", []Route{{Match: []string{"/a"}, When: when, Pipeline: src}, {Match: []string{"/a"}, Pipeline: src}, {Match: []string{"/a"}, Pipeline: src}}, "matched twice"},
		{"a regex twice", []Route{{Match: []string{"~ ^/a"}, Pipeline: src}, {Match: []string{"~ ^/a"}, Pipeline: src}}, "matched twice"},
		{"a regex that does not compile", []Route{{Match: []string{"~ ^/a("}, Pipeline: src}}, "missing closing )"},
		{"an empty regex", []Route{{Match: []string{"~ "}, Pipeline: src}}, "is empty"},
		{"a group named twice", []Route{{Match: []string{"~ (?P<a>x)(?P<a>y)"}, Pipeline: src}}, "used twice"},
		{"a group named by a number", []Route{{Match: []string{"~ (?P<1>x)"}, Pipeline: src}}, "starts with a digit"},
		{"a nil matcher", []Route{{Match: []string{"/a"}, When: []Matcher{nil}, Pipeline: src}}, "nil matcher"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRouter(tt.routes...)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v, want one with %q", err, tt.err)
			}
		})
	}
}

// FuzzRouterRegex routes each raw path's canonical form, as the engine
// makes it, to regular-expression routes: a group's value is a part of
// the canonical path (no NUL), the same by name and by number, and a
// route with a condition never takes a request its condition refuses.
func FuzzRouterRegex(f *testing.F) {
	for _, s := range []string{"/u/42", "/u/%2e%2e/1", "/a/b/c.php", "/x%00", "/f/a/b/", "/A.PHP"} {
		f.Add(s, true)
	}
	var route string
	var params []keyValue
	record := func(name string) Component {
		return Pipe(func(c *Conn) bool {
			route = name
			params = append(params[:0], c.params...)
			return false
		})
	}
	rt, err := NewRouter(
		Route{Match: []string{`~ ^/u/(?P<id>[0-9]+)$`}, Pipeline: record("u")},
		Route{Match: []string{`~ (?i)^/(.*)\.php$`}, When: []Matcher{hasHeader("X-C")}, Pipeline: record("php-c")},
		Route{Match: []string{`~ (?i)^/(.*)\.php$`}, Pipeline: record("php")},
		Route{Match: []string{`~ ^/f/(?P<a>[^/]*)/(.*)$`}, Pipeline: record("f")},
		Route{Match: []string{"/"}, Pipeline: record("root")},
	)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string, cond bool) {
		u, err := url.ParseRequestURI(raw)
		if err != nil {
			return
		}
		hr := &http.Request{Method: "GET", URL: u, Host: "h", Header: http.Header{}}
		if cond {
			hr.Header.Set("X-C", "1")
		}
		req, err := engine.NewRequest(hr)
		if err != nil {
			return
		}
		route, params = "", params[:0]
		c := acquireConn(&discard{}, req)
		defer releaseConn(c)
		rt.Handle(c)
		if route == "php-c" && !cond || route == "php" && cond {
			t.Fatalf("%q (cond %v): route %s", raw, cond, route)
		}
		for i, kv := range params {
			if !strings.Contains(string(req.Path), kv.value) || strings.Contains(kv.value, "\x00") {
				t.Fatalf("%q (path %q): group %d = %q", raw, req.Path, i+1, kv.value)
			}
			if got := c.Param(strconv.Itoa(i + 1)); got != kv.value {
				t.Fatalf("%q: Param(%d) = %q, want %q", raw, i+1, got, kv.value)
			}
			if kv.key != "" && c.Param(kv.key) != kv.value {
				t.Fatalf("%q: Param(%q) = %q, want %q", raw, kv.key, c.Param(kv.key), kv.value)
			}
		}
	})
}
