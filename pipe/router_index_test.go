package pipe

import (
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// indexSegments are the literal segments of generated patterns and
// paths: few, so that patterns overlap and paths match them.
var indexSegments = []string{"a", "b", "ab", "7", "-1"}

// indexRoutes generates a route set from seed: exact paths, prefixes,
// patterns with captures of every arrangement, a few regular
// expressions, hosts, methods and conditions, in a random order. Each
// route's pipeline records its index in *got. Routes NewRouter refuses
// (duplicates) are left out.
func indexRoutes(seed int64, got *int) []Route {
	rng := rand.New(rand.NewSource(seed))
	hosts := []string{"", "", "", "a.example", "*.example", "B.example."}
	methods := [][]string{nil, nil, nil, {"GET"}, {"POST"}, {"PUT", "DELETE"}}
	regexes := []string{`~ ^/a/`, `~ b$`, `~ ^/(?P<s>ab?)/7`, `~ ^/(-1|7)$`}
	pattern := func() string {
		switch rng.Intn(8) {
		case 0:
			return "/"
		case 1:
			if rng.Intn(3) == 0 {
				return regexes[rng.Intn(len(regexes))]
			}
		}
		n := 1 + rng.Intn(4)
		var b strings.Builder
		captures := false
		for i := range n {
			b.WriteByte('/')
			switch rng.Intn(3) {
			case 0:
				captures = true
				if rng.Intn(3) == 0 {
					fmt.Fprintf(&b, "{n%d:int}", i)
				} else {
					fmt.Fprintf(&b, "{s%d}", i)
				}
			default:
				b.WriteString(indexSegments[rng.Intn(len(indexSegments))])
			}
		}
		if !captures && rng.Intn(2) == 0 {
			b.WriteByte('/') // a prefix
		}
		return b.String()
	}
	var routes []Route
	for range 1 + rng.Intn(40) {
		i := len(routes)
		r := Route{
			Host:     hosts[rng.Intn(len(hosts))],
			Methods:  methods[rng.Intn(len(methods))],
			Pipeline: Pipe(func(*Conn) bool { *got = i; return false }),
		}
		for range 1 + rng.Intn(2) {
			r.Match = append(r.Match, pattern())
		}
		switch rng.Intn(6) {
		case 0:
			r.When = []Matcher{hasHeader("X-A")}
		case 1:
			r.When = []Matcher{hasHeader("X-B")}
		}
		if _, err := newLinearRouter(append(routes, r)); err != nil {
			continue
		}
		routes = append(routes, r)
	}
	return routes
}

// indexRequest generates a request for indexRoutes' routes from rng.
func indexRequest(rng *rand.Rand) (method, host, path string, header http.Header) {
	var b strings.Builder
	for range rng.Intn(6) {
		b.WriteByte('/')
		b.WriteString(indexSegments[rng.Intn(len(indexSegments))])
	}
	if b.Len() == 0 || rng.Intn(4) == 0 {
		b.WriteByte('/')
	}
	header = http.Header{}
	if rng.Intn(2) == 0 {
		header.Set("X-A", "1")
	}
	if rng.Intn(3) == 0 {
		header.Set("X-B", "1")
	}
	return []string{"GET", "HEAD", "POST", "PUT", "OPTIONS"}[rng.Intn(5)],
		[]string{"a.example", "A.EXAMPLE:80", "b.example", "x.example", "other", ""}[rng.Intn(6)],
		b.String(), header
}

// routeBoth routes one request through the router and the oracle, and
// returns what each chose: the route, status, Allow and parameters.
func routeBoth(t *testing.T, rt *Router, oracle *linearRouter, got *int, method, host, path string, header http.Header) (indexed, linear string, ok bool) {
	req, err := engine.NewRequest(&http.Request{Method: method, URL: &url.URL{Path: path}, Host: host, Header: header})
	if err != nil {
		return "", "", false
	}
	run := func(h Component) string {
		*got = -1
		c := acquireConn(&discard{}, req)
		defer releaseConn(c)
		h.Handle(c)
		var ps []string
		for i := 1; i <= len(c.params); i++ {
			ps = append(ps, fmt.Sprintf("%s=%q", c.params[i-1].key, c.Param(fmt.Sprint(i))))
		}
		return fmt.Sprintf("route %d, status %d, Allow %q, params %v", *got, c.Status(), c.Header().Get("Allow"), ps)
	}
	return run(rt), run(oracle), true
}

// The indexed router chooses as the linear one did (the oracle, which
// tries every prefix and pattern with captures in turn): the same route,
// status, Allow and parameters, for route sets and requests generated
// from the seed and for the fuzzer's path on every host and method.
func FuzzRouterIndex(f *testing.F) {
	for i, p := range []string{"/", "/a/b", "/a/7", "/ab/7/a", "/a/b/", "/-1", "/a/ab/7/b", "/7/7/7/7"} {
		f.Add(int64(i), p)
	}
	f.Fuzz(func(t *testing.T, seed int64, path string) {
		var got int
		routes := indexRoutes(seed, &got)
		rt, err := NewRouter(routes...)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		oracle, err := newLinearRouter(routes)
		if err != nil {
			t.Fatalf("seed %d: oracle: %v", seed, err)
		}
		rng := rand.New(rand.NewSource(seed))
		for i := range 40 {
			method, host, p, header := indexRequest(rng)
			if i < 12 {
				p = path
			}
			a, b, ok := routeBoth(t, rt, oracle, &got, method, host, p, header)
			if ok && a != b {
				t.Errorf("seed %d, %s %s%s %v: indexed: %s; linear: %s", seed, method, host, p, header, a, b)
			}
		}
	})
}

// Over many generated route sets the indexed router and the oracle agree
// on every request tried, and those requests reach every way a choice
// ends (a prefix, a capture, a regular expression, 400, 404, 405), so
// the agreement says something.
func TestRouterIndex(t *testing.T) {
	seen := map[string]int{}
	for seed := range int64(2000) {
		var got int
		routes := indexRoutes(seed, &got)
		rt, err := NewRouter(routes...)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		oracle, _ := newLinearRouter(routes)
		rng := rand.New(rand.NewSource(^seed))
		for range 60 {
			method, host, p, header := indexRequest(rng)
			a, b, ok := routeBoth(t, rt, oracle, &got, method, host, p, header)
			if !ok {
				continue
			}
			if a != b {
				t.Fatalf("seed %d, %s %s%s %v: indexed: %s; linear: %s", seed, method, host, p, header, a, b)
			}
			var route, status int
			fmt.Sscanf(a, "route %d, status %d", &route, &status)
			kind := fmt.Sprint(status)
			if route >= 0 {
				kind = "route"
				for _, m := range routes[route].Match {
					switch {
					case strings.HasPrefix(m, RegexPrefix):
						kind += " regex"
					case strings.Contains(m, "{"):
						kind += " capture"
					case strings.HasSuffix(m, "/"):
						kind += " prefix"
					}
				}
			}
			seen[kind]++
		}
	}
	for _, kind := range []string{"route prefix", "route capture", "route regex", "route", "400", "404", "405"} {
		if seen[kind] < 100 {
			t.Errorf("only %d requests ended %q: %v", seen[kind], kind, seen)
		}
	}
}

// Prefixes of every length are found, those past the 255 bytes the
// router keeps a bit for each included, as the oracle finds them.
func TestRouterLongPrefixes(t *testing.T) {
	var got int
	var routes []Route
	for i, n := range []int{1, 62, 63, 64, 254, 255, 256, 300} {
		p := "/"
		if n > 1 {
			p = "/" + strings.Repeat("a", n-2) + "/"
		}
		routes = append(routes, Route{Match: []string{p}, Pipeline: Pipe(func(*Conn) bool { got = i; return false })})
	}
	rt, err := NewRouter(routes...)
	if err != nil {
		t.Fatal(err)
	}
	oracle, _ := newLinearRouter(routes)
	for i, r := range routes {
		for _, p := range []string{r.Match[0], r.Match[0] + "x", r.Match[0] + "x/y", strings.TrimSuffix(r.Match[0], "/")} {
			a, b, _ := routeBoth(t, rt, oracle, &got, "GET", "h", p, nil)
			if a != b {
				t.Errorf("%d bytes (%d): %.60s: indexed: %s; linear: %s", len(r.Match[0]), i, p, a, b)
			}
			if want := fmt.Sprintf("route %d,", i); p != strings.TrimSuffix(r.Match[0], "/") && !strings.HasPrefix(a, want) {
				t.Errorf("%d bytes: %.60s: %s, want %s", len(r.Match[0]), p, a, want)
			}
		}
	}
}
