package config

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// Routes with the same match and disjoint methods are different routes: the
// config accepts them and serves each method with its own pipeline; routes
// whose methods overlap are refused.
func TestRoutesSameMatchDisjointMethods(t *testing.T) {
	cfg, err := parseString(t, ".", `
routes:
  - {match: /form, methods: [GET, HEAD], pipeline: [{text: form-get}]}
  - {match: /form, methods: [POST], pipeline: [{text: form-post}]}
  - {match: /, methods: [PUT], pipeline: [{text: root-put}]}
  - {match: /, methods: [DELETE], pipeline: [{text: root-delete}]}
`)
	if err != nil {
		t.Fatalf("routes with disjoint methods refused: %v", err)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	c, err := srv.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for _, tt := range []struct{ method, path, want string }{
		{"GET", "/form", "form-get"},
		{"POST", "/form", "form-post"},
		{"PUT", "/x", "root-put"},
		{"DELETE", "/x", "root-delete"},
	} {
		io.WriteString(c, tt.method+" "+tt.path+" HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n")
		resp, b := sluicetest.ReadResponse(t, br, tt.method)
		if resp.StatusCode != 200 || b != tt.want {
			t.Errorf("%s %s: %d %q, want 200 %q", tt.method, tt.path, resp.StatusCode, b, tt.want)
		}
	}

	_, err = parseString(t, ".", `
routes:
  - {match: /form, methods: [GET, POST], pipeline: [{text: a}]}
  - {match: /form, methods: [POST], pipeline: [{text: b}]}
`)
	if err == nil || !strings.Contains(err.Error(), "already matched") {
		t.Errorf("overlapping methods: %v, want refused as already matched", err)
	}
}
