package pipe

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

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
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%.30q: %v", tt.raw, err)
		}
		var b strings.Builder
		_, err = bufio.NewReader(resp.Body).WriteTo(&b)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%.30q: body: %v", tt.raw, err)
		}
		if resp.StatusCode != tt.status || !strings.HasPrefix(b.String(), tt.body) || resp.Header.Get("Allow") != tt.allow {
			t.Errorf("%.30q: %d %q Allow %q, want %d %q Allow %q",
				tt.raw, resp.StatusCode, b.String(), resp.Header.Get("Allow"), tt.status, tt.body, tt.allow)
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
