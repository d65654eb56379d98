package pipe

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// Routes with the same match and host but disjoint method sets are
// different routes: NewRouter accepts them and each method is served by
// its own route; another method gets 405 with every method the path
// allows. Method sets that overlap (a route without Methods has them all)
// are refused as duplicates.
func TestRouterSameMatchDisjointMethods(t *testing.T) {
	rt, err := NewRouter(
		Route{Match: []string{"/form"}, Methods: []string{"GET", "HEAD"}, Pipeline: text("form-get")},
		Route{Match: []string{"/form"}, Methods: []string{"POST"}, Pipeline: text("form-post")},
		Route{Match: []string{"/api/"}, Methods: []string{"PUT"}, Pipeline: text("api-put")},
		Route{Match: []string{"/api/"}, Methods: []string{"DELETE", "PATCH"}, Pipeline: text("api-delete-patch")},
		Route{Match: []string{"/api/"}, Host: "example.com", Methods: []string{"PUT"}, Pipeline: text("host-api-put")},
	)
	if err != nil {
		t.Fatalf("routes with disjoint methods refused: %v", err)
	}
	url := sluicetest.NewServer(t, Handler(rt)).URL
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for _, tt := range []struct {
		raw    string // the request head
		status int
		body   string // a prefix of the body
		allow  string
	}{
		{"GET /form HTTP/1.1\r\nHost: a\r\n\r\n", 200, "form-get", ""},
		{"POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 200, "form-post", ""},
		{"PUT /form HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 405, "", "GET, HEAD, POST"},
		{"PUT /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 200, "api-put", ""},
		{"DELETE /api/x HTTP/1.1\r\nHost: a\r\n\r\n", 200, "api-delete-patch", ""},
		{"PATCH /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 200, "api-delete-patch", ""},
		{"GET /api/x HTTP/1.1\r\nHost: a\r\n\r\n", 405, "", "DELETE, PATCH, PUT"},
		{"PUT /api/x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 0\r\n\r\n", 200, "host-api-put", ""},
		{"DELETE /api/x HTTP/1.1\r\nHost: example.com\r\n\r\n", 200, "api-delete-patch", ""},
	} {
		if _, err := c.Write([]byte(tt.raw)); err != nil {
			t.Fatal(err)
		}
		method, _, _ := strings.Cut(tt.raw, " ")
		resp, b := sluicetest.ReadResponse(t, br, method)
		if resp.StatusCode != tt.status || !strings.HasPrefix(b, tt.body) || resp.Header.Get("Allow") != tt.allow {
			t.Errorf("%.30q: %d %q Allow %q, want %d %q Allow %q",
				tt.raw, resp.StatusCode, b, resp.Header.Get("Allow"), tt.status, tt.body, tt.allow)
		}
	}

	for _, routes := range [][]Route{
		{
			{Match: []string{"/form"}, Methods: []string{"GET", "POST"}, Pipeline: text("1")},
			{Match: []string{"/form"}, Methods: []string{"POST"}, Pipeline: text("2")},
		},
		{
			{Match: []string{"/api/"}, Methods: []string{"PUT"}, Pipeline: text("1")},
			{Match: []string{"/api/"}, Pipeline: text("2")},
		},
	} {
		if _, err := NewRouter(routes...); err == nil || !strings.Contains(err.Error(), "matched twice") {
			t.Errorf("overlapping methods on %s: %v, want refused as matched twice", routes[0].Match[0], err)
		}
	}
}

// params is a test Source that answers its tag and the route's path
// parameters, "tag name=value ...".
func params(tag string) Source {
	return func(c *Conn) Content {
		s := tag
		for k, v := range c.Params() {
			s += " " + k + "=" + v
		}
		return func(w Writer) error {
			_, err := io.WriteString(w, s)
			return err
		}
	}
}

// Patterns with captures: which route each path takes (exact paths
// first, then segment by segment: a literal beats a capture, which beats
// the rest of the path a prefix takes), the values captured, 400 for a segment an int capture
// refuses, and methods and hosts as for other patterns; over a real
// socket, so the paths are the engine's canonical ones.
func TestRouterCaptures(t *testing.T) {
	rt, err := NewRouter(
		Route{Match: []string{"/article/new"}, Pipeline: params("new")},
		Route{Match: []string{"/article/{id:int}"}, Methods: []string{"GET"}, Pipeline: params("article")},
		Route{Match: []string{"/article/{id:int}"}, Methods: []string{"DELETE"}, Pipeline: params("delete")},
		Route{Match: []string{"/article/{id}/comments/{n:int}"}, Pipeline: params("comment")},
		Route{Match: []string{"/{section}/{id}/comments/latest"}, Pipeline: params("latest")},
		Route{Match: []string{"/{a}/{b}"}, Pipeline: params("two")},
		Route{Match: []string{"/{a}/{b}"}, Host: "example.com", Pipeline: params("host-two")},
		Route{Match: []string{"/user/{name}"}, Host: "example.com", Pipeline: params("host-user")},
		Route{Match: []string{"/static/"}, Pipeline: params("static")},
		Route{Match: []string{"/article/"}, Pipeline: params("articles")},
		Route{Match: []string{"/"}, Pipeline: params("root")},
	)
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, Handler(rt)).URL
	for _, tt := range []struct {
		method, host, path string
		status             int
		body               string // a prefix of the body
	}{
		{"GET", "", "/article/new", 200, "new"},
		{"GET", "", "/article/42", 200, "article id=42"},
		{"HEAD", "", "/article/42", 200, ""},
		{"GET", "", "/article/-7", 200, "article id=-7"},
		{"GET", "", "/article/9223372036854775807", 200, "article id=9223372036854775807"},
		{"GET", "", "/article/-9223372036854775808", 200, "article id=-9223372036854775808"},
		{"GET", "", "/article/9223372036854775808", 400, "400 Bad Request: path parameter id: integer out of range"},
		{"GET", "", "/article/abc", 400, "400 Bad Request: path parameter id: not an integer"},
		{"GET", "", "/article/4x", 400, "400 Bad Request: path parameter id: not an integer"},
		{"GET", "", "/article/+4", 400, "400 Bad Request: path parameter id: not an integer"},
		{"GET", "", "/article/-", 400, "400 Bad Request: path parameter id: not an integer"},
		{"GET", "", "/article/%34%32", 200, "article id=42"}, // decoded
		{"GET", "", "/article/x/../42", 200, "article id=42"},
		{"DELETE", "", "/article/42", 200, "delete id=42"},
		{"DELETE", "", "/article/abc", 400, "400 Bad Request: path parameter id: not an integer"},
		{"POST", "", "/article/42", 405, ""},         // the shape is the request's: no falling to /{a}/{b}
		{"POST", "", "/article/abc", 405, ""},        // 405 before the parameter is looked at
		{"GET", "", "/article/42/", 200, "articles"}, // a capture never matches an empty segment
		{"GET", "", "/article/42/x", 200, "articles"},
		{"GET", "", "/article/4%2F2", 400, "400"}, // the engine refuses an encoded slash
		{"GET", "", "/article/4%2f2", 400, "400"}, //
		{"GET", "", "/article/4%002", 400, "400"}, // and a NUL
		{"GET", "", "/tag/a%20b", 200, "two a=tag b=a b"},
		{"GET", "", "/article/7/comments/3", 200, "comment id=7 n=3"},
		{"GET", "", "/article/7/comments/latest", 400, "400 Bad Request: path parameter n: not an integer"}, // the earlier literal wins
		{"GET", "", "/blog/7/comments/latest", 200, "latest section=blog id=7"},
		{"GET", "", "/static/x", 200, "static"},       // a prefix's literal segment beats a capture
		{"GET", "", "/stat/x", 200, "two a=stat b=x"}, // a capture beats the rest a prefix takes
		{"GET", "", "/static/x/y", 200, "static"},
		{"GET", "", "/a", 200, "root"},
		{"GET", "", "/a/b/c", 200, "root"},
		{"GET", "example.com", "/a/b", 200, "host-two a=a b=b"},
		{"GET", "EXAMPLE.com.:80", "/a/b", 200, "host-two a=a b=b"},
		{"GET", "example.com", "/user/bob", 200, "host-user name=bob"},
		{"GET", "example.org", "/user/bob", 200, "two a=user b=bob"},
	} {
		req, err := http.NewRequest(tt.method, url+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tt.host != "" {
			req.Host = tt.host
		}
		resp, body := sluicetest.Do(t, req)
		if resp.StatusCode != tt.status || !strings.HasPrefix(body, tt.body) {
			t.Errorf("%s %s (host %q) = %d %q, want %d %q", tt.method, tt.path, tt.host, resp.StatusCode, body, tt.status, tt.body)
		}
		if resp.StatusCode == 405 && resp.Header.Get("Allow") != "DELETE, GET, HEAD" {
			t.Errorf("%s %s: Allow %q, want DELETE, GET, HEAD", tt.method, tt.path, resp.Header.Get("Allow"))
		}
	}
}

// NewRouter refuses captures it cannot match as written.
func TestRouterCaptureErrors(t *testing.T) {
	for _, tt := range []struct {
		patterns []string
		err      string
	}{
		{[]string{"/a/{id}/{id}"}, `capture "id" is named twice`},
		{[]string{"/a/{id:uuid}"}, `unknown type "uuid"`},
		{[]string{"/a/{id:}"}, `unknown type ""`},
		{[]string{"/a/x{id}"}, "a capture is a whole segment"},
		{[]string{"/a/{id}x"}, "a capture is a whole segment"},
		{[]string{"/a/{{id}}"}, "a capture is a whole segment"},
		{[]string{"/a/{id"}, "a capture is a whole segment"},
		{[]string{"/a/id}"}, "a capture is a whole segment"},
		{[]string{"/a/{}"}, `capture name ""`},
		{[]string{"/a/{1d}"}, `capture name "1d"`},
		{[]string{"/a/{i-d}"}, `capture name "i-d"`},
		{[]string{"/a/{id}/"}, "cannot be a prefix"},
		{[]string{"/a/{id}", "/a/{name:int}"}, `matches the paths "/a/{id}" matches`},
	} {
		var routes []Route
		for _, p := range tt.patterns {
			routes = append(routes, Route{Match: []string{p}, Pipeline: text("x")})
		}
		_, err := NewRouter(routes...)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: %v, want an error with %q", tt.patterns, err, tt.err)
		}
	}
	// The same shape for another host, or for other methods, is no duplicate.
	if _, err := NewRouter(
		Route{Match: []string{"/a/{id}"}, Pipeline: text("1")},
		Route{Match: []string{"/a/{n}"}, Host: "example.com", Methods: []string{"GET"}, Pipeline: text("2")},
		Route{Match: []string{"/a/{n:int}"}, Methods: []string{"POST"}, Host: "example.com", Pipeline: text("2")},
	); err != nil {
		t.Errorf("distinct routes refused: %v", err)
	}
}

// Released Conns keep no parameter: a Conn from the pool has none.
func TestReleaseClearsParams(t *testing.T) {
	c := acquireConn(&discard{}, &engine.Request{Path: []byte("/a/b")})
	c.capture([]segment{{name: "x"}, {name: "y"}})
	if c.Param("y") != "b" {
		t.Fatalf("capture: %v", c.params)
	}
	releaseConn(c)
	if len(c.params) != 0 || cap(c.params) == 0 {
		t.Errorf("released Conn keeps params %v (cap %d)", c.params, cap(c.params))
	}
}

// FuzzRouter builds each raw path's canonical form as the engine does and
// routes it: a captured value never contains '/' (nor is empty), an int
// capture always parses as an int64, and a 400 is only for one that does
// not.
func FuzzRouter(f *testing.F) {
	for _, s := range []string{"/a/1", "/a/%2F", "/a/b/1", "/a/-1/x", "/a/x/..", "/a/%2e%2e/1", "/a/9223372036854775808", "/a/%31"} {
		f.Add(s)
	}
	var got []keyValue
	record := Pipe(func(c *Conn) bool {
		got = append(got[:0], c.params...)
		return false
	})
	rt, err := NewRouter(
		Route{Match: []string{"/a/{n:int}"}, Pipeline: record},
		Route{Match: []string{"/a/{s}/{n:int}"}, Pipeline: record},
		Route{Match: []string{"/{s}/{n:int}/x"}, Pipeline: record},
		Route{Match: []string{"/{s}"}, Pipeline: record},
	)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.ParseRequestURI(raw)
		if err != nil {
			return
		}
		req, err := engine.NewRequest(&http.Request{Method: "GET", URL: u, Host: "h"})
		if err != nil {
			return // refused by the engine, as the parser refuses it
		}
		got = got[:0]
		c := acquireConn(&discard{}, req)
		defer releaseConn(c)
		rt.Handle(c)
		for _, kv := range got {
			if kv.value == "" || strings.Contains(kv.value, "/") || strings.Contains(kv.value, "\x00") {
				t.Errorf("%q (path %q): capture %s = %q", raw, req.Path, kv.key, kv.value)
			}
			if kv.key == "n" {
				if _, err := strconv.ParseInt(kv.value, 10, 64); err != nil {
					t.Errorf("%q (path %q): int capture %q: %v", raw, req.Path, kv.value, err)
				}
			}
		}
		if c.Status() == 400 && len(got) != 0 {
			t.Errorf("%q: 400 after the pipeline ran", raw)
		}
	})
}

// bodyRecorder is an engine.ResponseWriter that keeps the body, for a
// component's own request served by Conn.Handler.
type bodyRecorder struct {
	h    engine.Header
	body []byte
}

func (r *bodyRecorder) Header() *engine.Header { return &r.h }
func (r *bodyRecorder) WriteHeader(int)        {}
func (r *bodyRecorder) Write(p []byte) (int, error) {
	r.body = append(r.body, p...)
	return len(p), nil
}
func (r *bodyRecorder) WriteString(s string) (int, error) { return r.Write([]byte(s)) }
func (r *bodyRecorder) Flush() error                      { return nil }

// Conn.Handler serves a component on Conns that carry the route's
// captures and the values set so far, copied when it is called: after
// the request has ended too, on another goroutine.
func TestConnHandlerCarries(t *testing.T) {
	src := Source(func(c *Conn) Content {
		body := "id=" + c.Param("id") + " user=" + c.Value("user")
		return func(w Writer) error { _, err := io.WriteString(w, body); return err }
	})
	handlers := make(chan engine.Handler, 1)
	fork := Pipe(func(c *Conn) bool {
		c.SetValue("user", "ann")
		handlers <- c.Handler(src)
		c.SetValue("user", "changed after")
		return true
	})
	rt, err := NewRouter(Route{Match: []string{"/a/{id}"}, Pipeline: Chain{fork, src}})
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, Handler(rt)).URL
	if _, body := sluicetest.Get(t, url+"/a/7"); body != "id=7 user=changed after" {
		t.Errorf("the request itself: %q", body)
	}
	h := <-handlers
	done := make(chan string)
	go func() {
		w := &bodyRecorder{}
		h.Serve(w, &engine.Request{Method: []byte("GET"), Path: []byte("/other"), Body: strings.NewReader("")})
		done <- string(w.body)
	}()
	if got := <-done; got != "id=7 user=ann" {
		t.Errorf("served by Conn.Handler after the request: %q", got)
	}
}
