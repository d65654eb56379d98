package pipe

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// Sites chooses the site by host before any route: an exact name, then
// the longest wildcard, then the default; a site's routes never serve
// another site's host, even where that site has no route for the path.
func TestSites(t *testing.T) {
	site := func(name string, routes ...Route) Component {
		rt, err := NewRouter(routes...)
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	s, err := NewSites(
		Site{Hosts: []string{"example.com", "www.example.com"}, Handler: site("a",
			Route{Match: []string{"/"}, Pipeline: text("a /")},
			Route{Match: []string{"/api/"}, Pipeline: text("a api")})},
		Site{Hosts: []string{"*.example.com"}, Handler: site("wild",
			Route{Match: []string{"/only/"}, Pipeline: text("wild only")})},
		Site{Hosts: []string{"*.deep.example.com", "[::1]"}, Handler: site("deep",
			Route{Match: []string{"/"}, Pipeline: text("deep /")})},
		Site{Default: true, Handler: site("default",
			Route{Match: []string{"/"}, Pipeline: text("default /")})},
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, Handler(s))
	c := sluicetest.Dial(t, srv.Addr)
	for _, tt := range []struct {
		host   string
		path   string
		status int
		body   string
	}{
		{"example.com", "/", 200, "a /"},
		{"EXAMPLE.com:8080", "/api/x", 200, "a api"},
		{"www.example.com.", "/x", 200, "a /"},
		{"x.example.com", "/only/y", 200, "wild only"},
		{"x.example.com", "/other", 404, ""}, // not the default site's "/"
		{"a.b.example.com", "/only/", 200, "wild only"},
		{"x.deep.example.com", "/only/", 200, "deep /"}, // the longest wildcard
		{"deep.example.com", "/only/", 200, "wild only"},
		{"[::1]:80", "/", 200, "deep /"},
		{"example.org", "/", 200, "default /"},
		{"xexample.com", "/", 200, "default /"},
		{"127.0.0.1", "/", 200, "default /"},
	} {
		resp, body := c.RoundTrip(t, "GET "+tt.path+" HTTP/1.1\r\nHost: "+tt.host+"\r\n\r\n")
		if resp.StatusCode != tt.status || tt.body != "" && body != tt.body {
			t.Errorf("%s%s: %d %q, want %d %q", tt.host, tt.path, resp.StatusCode, body, tt.status, tt.body)
		}
	}

	// Without a default, a host no site names gets 404.
	s, err = NewSites(Site{Hosts: []string{"a.example"}, Handler: text("a")})
	if err != nil {
		t.Fatal(err)
	}
	srv = sluicetest.NewServer(t, Handler(s))
	if resp, body := srv.RoundTrip(t, "GET / HTTP/1.1\r\nHost: b.example\r\n\r\n"); resp.StatusCode != 404 || !strings.Contains(body, "no site for this host") {
		t.Errorf("no site: %d %q", resp.StatusCode, body)
	}
	if resp, body := srv.RoundTrip(t, "GET / HTTP/1.1\r\nHost: A.Example\r\n\r\n"); resp.StatusCode != 200 || body != "a" {
		t.Errorf("a.example: %d %q", resp.StatusCode, body)
	}
}

func TestNewSitesRefuses(t *testing.T) {
	h := text("x")
	for _, tt := range []struct {
		sites []Site
		err   string
	}{
		{[]Site{{Hosts: []string{"a"}}}, "no handler"},
		{[]Site{{Handler: h}}, "no hosts and not the default"},
		{[]Site{{Default: true, Handler: h}, {Default: true, Handler: h}}, "a second default site"},
		{[]Site{{Hosts: []string{"a", "b"}, Handler: h}, {Hosts: []string{"B."}, Handler: h}}, `host "B." is already site 0's`},
		{[]Site{{Hosts: []string{"*.a", "*.a"}, Handler: h}}, `host "*.a" is already site 0's`},
		{[]Site{{Hosts: []string{"*."}, Handler: h}}, "want a name"},
		{[]Site{{Hosts: []string{""}, Handler: h}}, "want a name"},
		{[]Site{{Hosts: []string{"a.*.b"}, Handler: h}}, "want a name"},
	} {
		if _, err := NewSites(tt.sites...); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%+v: %v, want %q", tt.sites, err, tt.err)
		}
	}
	// "a" and "*.a" are different names.
	if _, err := NewSites(Site{Hosts: []string{"a", "*.a"}, Handler: h}); err != nil {
		t.Error(err)
	}
}

// FuzzSites checks the lookup against the plain reading of its rules,
// with hostMatches (the router's own host comparison): the exact name,
// else the wildcard with the longest suffix that matches, else the
// default.
func FuzzSites(f *testing.F) {
	for _, s := range []string{"a.example.com", "EXAMPLE.COM.", "x.y.example.com:80", "[::1]:1", ".example.com", "example.com.:", "b.a.example.com"} {
		f.Add(s)
	}
	hosts := []string{"example.com", "*.example.com", "*.a.example.com", "a.example.com", "[::1]", "*.com"}
	var sites []Site
	for i, h := range hosts {
		sites = append(sites, Site{Hosts: []string{h}, Handler: &numbered{text(h), i}})
	}
	sites = append(sites, Site{Default: true, Handler: &numbered{text("default"), len(hosts)}})
	s, err := NewSites(sites...)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		req, err := engine.NewRequest(&http.Request{Method: "GET", URL: &url.URL{Path: "/"}, Host: raw})
		if err != nil {
			return
		}
		host := hostOnly(req.Host)
		want := len(hosts)
		for i, h := range hosts { // exact names first
			if !strings.HasPrefix(h, "*.") && hostMatches(h, host) {
				want = i
			}
		}
		if want == len(hosts) {
			best := -1
			for i, h := range hosts {
				if strings.HasPrefix(h, "*.") && hostMatches(h, host) && (best < 0 || len(h) > len(hosts[best])) {
					best = i
				}
			}
			if best >= 0 {
				want = best
			}
		}
		if got := s.site(host).(*numbered).n; got != want {
			t.Errorf("host %q: site %d, want %d", raw, got, want)
		}
	})
}

// numbered is a component that tells which of FuzzSites' sites it is.
type numbered struct {
	Component
	n int
}

func TestLowerHost(t *testing.T) {
	long := strings.Repeat("a", 300)
	var buf [255]byte
	for _, tt := range []struct {
		in, want string
		copied   bool
	}{
		{"example.com", "example.com", false},
		{"Example.COM", "example.com", true},
		{"[::1]", "[::1]", false},
		{long, long, false},
	} {
		got := lowerHost(buf[:0], []byte(tt.in))
		if string(got) != tt.want || (len(got) > 0 && &got[0] == &buf[0]) != tt.copied {
			t.Errorf("%q: %q (copied: %v)", tt.in, got, !tt.copied)
		}
	}
	if got := lowerHost(buf[:0], []byte("A"+long)); got != nil {
		t.Errorf("a long host with capitals: %q, want nil (too long for the buffer)", got)
	}
	// Sites still finds a long host with capitals, the slow way.
	host := strings.Repeat("x", 250) + ".Example.com"
	s, err := NewSites(Site{Hosts: []string{"*.example.com"}, Handler: text("wild")})
	if err != nil {
		t.Fatal(err)
	}
	if s.site([]byte(host)) == nil {
		t.Errorf("%s: no site", host)
	}
}
