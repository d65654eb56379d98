package pipe

import (
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// hostRoutes generates a route set from seed: patterns of every kind
// (regular expressions included) for exact hosts, wildcards and any
// host, some restricted to methods, some with a condition. Each route's
// pipeline records its index in *got.
func hostRoutes(seed int64, got *int) []Route {
	rng := rand.New(rand.NewSource(seed))
	hosts := []string{"", "", "a.example", "B.example.", "*.example", "*.b.example", "x.b.example"}
	patterns := []string{"/", "/a/", "/a/b", "/a/{x}", "/{x}/b", "/a/b/", "/c", "/{x}", "~ ^/a/", "~ b$", "~ ^/(?P<x>[a-c])/"}
	conds := [][]Matcher{nil, nil, nil, {MatcherFunc(func(r *engine.Request) bool { return r.IsMethod("GET") })}}
	methods := [][]string{nil, nil, {"GET"}, {"POST"}}
	type key struct{ p, h string }
	used := map[key]bool{}
	var routes []Route
	for range 4 + rng.Intn(20) {
		p, h := patterns[rng.Intn(len(patterns))], hosts[rng.Intn(len(hosts))]
		when := conds[rng.Intn(len(conds))]
		k := key{PatternKey(p), h}
		if used[k] && when == nil {
			continue
		}
		used[k] = used[k] || when == nil
		i := len(routes)
		routes = append(routes, Route{Match: []string{p}, Host: h, Methods: methods[rng.Intn(len(methods))], When: when,
			Pipeline: Pipe(func(*Conn) bool { *got = i; return false })})
	}
	return routes
}

// The host index changes no choice: a router routes every request as one
// built without it (which tries every route's host in turn).
func FuzzRouterHostIndex(f *testing.F) {
	for i, h := range []string{"a.example", "A.EXAMPLE:80", "b.example", "x.b.example", "y.b.example", "c.example", "example", ""} {
		f.Add(int64(i), h, "/a/b", "GET")
		f.Add(int64(i*7), h, "/a/z", "POST")
		f.Add(int64(i*13), h, "/q/b", "HEAD")
	}
	f.Fuzz(func(t *testing.T, seed int64, host, path, method string) {
		var got int
		routes := hostRoutes(seed, &got)
		indexed, err := NewRouter(routes...)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := newRouter(routes, map[string]*regexp.Regexp{})
		if err != nil {
			t.Fatal(err)
		}
		req, err := engine.NewRequest(&http.Request{Method: method, URL: &url.URL{Path: path}, Host: host})
		if err != nil {
			return
		}
		run := func(rt *Router) string {
			got = -1
			c := acquireConn(&discard{}, req)
			defer releaseConn(c)
			rt.Handle(c)
			return fmt.Sprintf("route %d, status %d, Allow %q", got, c.Status(), c.Header().Get("Allow"))
		}
		if a, b := run(indexed), run(plain); a != b {
			t.Errorf("seed %d, %s %q host %q: indexed: %s; without the index: %s", seed, method, path, host, a, b)
		}
	})
}

// Over many route sets, the index is built for the exact hosts and the
// two routers agree on every host and path tried.
func TestRouterHostIndex(t *testing.T) {
	indexed := 0
	for seed := range int64(300) {
		var got int
		routes := hostRoutes(seed, &got)
		rt, err := NewRouter(routes...)
		if err != nil {
			t.Fatal(err)
		}
		if rt.byHost != nil {
			indexed++
		}
		plain, _ := newRouter(routes, map[string]*regexp.Regexp{})
		for _, host := range []string{"a.example", "b.example", "x.b.example", "z.b.example", "q.example", "other"} {
			for _, path := range []string{"/", "/a/b", "/a/q", "/q/b", "/a/b/c", "/c", "/c/d"} {
				for _, method := range []string{"GET", "POST"} {
					req := &engine.Request{Method: []byte(method), Path: []byte(path), Host: []byte(host)}
					var res [2]string
					for i, r := range []*Router{rt, plain} {
						got = -1
						c := acquireConn(&discard{}, req)
						r.Handle(c)
						res[i] = fmt.Sprintf("route %d, status %d, Allow %q", got, c.Status(), c.Header().Get("Allow"))
						releaseConn(c)
					}
					if res[0] != res[1] {
						t.Fatalf("seed %d, %s %s%s: indexed %s; without %s", seed, method, host, path, res[0], res[1])
					}
				}
			}
		}
	}
	if indexed < 100 {
		t.Errorf("only %d of 300 route sets indexed", indexed)
	}
}
