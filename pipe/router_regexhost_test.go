package pipe

import (
	"net/http"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// Regular expressions are tried in the order of their first route that
// can serve the request's host: a route of an expression for another
// host does not move that expression ahead of a later one (which would
// let a request pass a route that guards it), with or without the host
// index, and whatever unrelated routes the index is built from.
func TestRegexOrderPerHost(t *testing.T) {
	routes := func(extra bool) []Route {
		rs := []Route{
			{Match: []string{"~ \\.php$"}, Host: "a.example", Pipeline: text("php a")},
			{Match: []string{"~ ^/private/"}, Pipeline: text("private")},
			{Match: []string{"~ \\.php$"}, Host: "*.b.example", Pipeline: text("php b")},
		}
		if extra {
			rs = append(rs, Route{Match: []string{"/unrelated"}, Host: "x.b.example", Pipeline: text("unrelated")})
		}
		return rs
	}
	for _, extra := range []bool{false, true} {
		rt, err := NewRouter(routes(extra)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct{ host, path, want string }{
			{"x.b.example", "/private/x.php", "private"},
			{"c.example", "/private/x.php", "private"},
			{"a.example", "/private/x.php", "php a"},
			{"x.b.example", "/x.php", "php b"},
			{"a.example", "/x.php", "php a"},
		} {
			if got := routeBody(t, rt, tt.host, tt.path); got != tt.want {
				t.Errorf("index %v: %s%s went to %q, want %q", extra, tt.host, tt.path, got, tt.want)
			}
		}
	}
}

// For one pattern, a route for an exact host comes before one for a
// wildcard that matches it, whatever their order in the file.
func TestExactHostBeforeWildcard(t *testing.T) {
	rt, err := NewRouter(
		Route{Match: []string{"/"}, Host: "*.example", Pipeline: text("wildcard")},
		Route{Match: []string{"/"}, Host: "x.example", Pipeline: text("exact")},
		Route{Match: []string{"~ ^/r"}, Host: "*.example", Pipeline: text("re wildcard")},
		Route{Match: []string{"~ ^/r"}, Host: "x.example", Pipeline: text("re exact")},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ host, path, want string }{
		{"x.example", "/", "exact"},
		{"y.example", "/", "wildcard"},
		{"x.example", "/r", "re exact"},
		{"y.example", "/r", "re wildcard"},
	} {
		if got := routeBody(t, rt, tt.host, tt.path); got != tt.want {
			t.Errorf("%s%s went to %q, want %q", tt.host, tt.path, got, tt.want)
		}
	}
}

// routeBody sends GET path with Host host to a server of rt and returns
// the body.
func routeBody(t *testing.T, rt *Router, host, path string) string {
	t.Helper()
	url := sluicetest.NewServer(t, Handler(rt)).URL
	req, err := http.NewRequest("GET", url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	_, body := sluicetest.Do(t, req)
	return body
}
