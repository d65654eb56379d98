package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// writeFiles writes files (name: content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Sites are chosen by host before routes, each with its own routes and
// error pages; the top-level routes serve the hosts no site names.
func TestSitesServe(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"404.html":      "server 404\n",
		"a404.html":     "site a 404\n",
		"route404.html": "route 404\n",
	})
	cfg, err := parseString(t, dir, `
error_pages: {404: 404.html}
routes:
  - match: /
    pipeline: [{text: "default site\n"}]
sites:
  - hosts: [a.example, www.a.example]
    error_pages: {404: a404.html}
    routes:
      - match: /only/
        pipeline: [{text: "a only\n"}]
      - match: /own/
        error_pages: {404: route404.html}
        pipeline: [files: .]
  - hosts: "*.b.example"
    error_pages: {}
    routes:
      - match: /
        pipeline: [files: .]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Sites) != 2 || len(cfg.Routes) != 4 || cfg.Routes[1].Site != cfg.Sites[0] || cfg.Routes[0].Site != nil ||
		len(cfg.Sites[0].Routes) != 2 || cfg.Sites[1].String() != "*.b.example" || cfg.Router == nil || cfg.Sites[0].Router == nil {
		t.Fatalf("sites %+v, routes %+v", cfg.Sites, cfg.Routes)
	}
	var graph, explain strings.Builder
	if err := cfg.Graph(&graph); err != nil || !strings.Contains(graph.String(), `[label="/only/\nsite a.example, www.a.example"]`) {
		t.Errorf("graph (%v):\n%s", err, graph.String())
	}
	if err := cfg.Explain(&explain); err != nil || !strings.Contains(explain.String(), "\ntop-level routes: every host no site names\n\nroute 1: / (prefix)\n") ||
		!strings.Contains(explain.String(), "\nsite a.example, www.a.example\n  error pages: 404 a404.html, then the server's\n\nroute 2: /only/ (prefix)\n") ||
		!strings.Contains(explain.String(), "\nsite *.b.example\n  error pages: none\n") {
		t.Errorf("explain (%v):\n%s", err, explain.String())
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	c := sluicetest.Dial(t, srv.Addr)
	for _, tt := range []struct {
		host, path string
		status     int
		body       string
	}{
		{"a.example", "/only/x", 200, "a only\n"},
		{"WWW.A.example:80", "/only/", 200, "a only\n"},
		{"a.example", "/", 404, "site a 404\n"}, // the site's own 404, not the default site's "/"
		{"a.example", "/own/x", 404, "route 404\n"},
		{"x.b.example", "/nothing", 404, "404 Not Found"}, // error_pages: {}: none, not the server's
		{"other.example", "/only/", 200, "default site\n"},
		{"b.example", "/", 200, "default site\n"},
	} {
		resp, body := c.RoundTrip(t, "GET "+tt.path+" HTTP/1.1\r\nHost: "+tt.host+"\r\n\r\n")
		if resp.StatusCode != tt.status || !strings.HasPrefix(body, tt.body) {
			t.Errorf("%s%s: %d %q, want %d %q", tt.host, tt.path, resp.StatusCode, body, tt.status, tt.body)
		}
	}
}

// With sites and no top-level routes, a site may be the default; without
// one, a host no site names gets 404 with the server's error pages.
func TestSitesDefault(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"404.html": "server 404\n"})
	for _, tt := range []struct {
		text   string
		status int
		body   string
	}{
		{`
sites:
  - hosts: a.example
    routes: [{match: /, pipeline: [{text: a}]}]
  - default: true
    routes: [{match: /, pipeline: [{text: fallback}]}]
`, 200, "fallback"},
		{`
sites:
  - hosts: a.example
    routes: [{match: /, pipeline: [{text: a}]}]
  - hosts: c.example
    default: true
    routes: [{match: /, pipeline: [{text: c}]}]
`, 200, "c"},
		{`
error_pages: {404: 404.html}
sites:
  - hosts: a.example
    routes: [{match: /, pipeline: [{text: a}]}]
`, 404, "server 404\n"},
	} {
		cfg, err := parseString(t, dir, tt.text)
		if err != nil {
			t.Fatalf("%s: %v", tt.text, err)
		}
		srv := sluicetest.NewServer(t, cfg.Handler())
		resp, body := srv.RoundTrip(t, "GET / HTTP/1.1\r\nHost: z.example\r\n\r\n")
		if resp.StatusCode != tt.status || body != tt.body {
			t.Errorf("%s: %d %q, want %d %q", tt.text, resp.StatusCode, body, tt.status, tt.body)
		}
		if resp, body := srv.RoundTrip(t, "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"); resp.StatusCode != 200 || body != "a" {
			t.Errorf("%s: a.example: %d %q", tt.text, resp.StatusCode, body)
		}
	}
}

// checkErrors parses the config at dir/test.yaml (with the other files
// given) and compares its errors, without the directory, with want.
func checkErrors(t *testing.T, dir string, files map[string]string, want ...string) {
	t.Helper()
	writeFiles(t, dir, files)
	_, err := parseString(t, dir, files["test.yaml"])
	var got []string
	if err != nil {
		got = strings.Split(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""), "\n")
	}
	if len(got) != len(want) {
		t.Errorf("%s\nerrors:\n%s\nwant:\n%s", files["test.yaml"], strings.Join(got, "\n"), strings.Join(want, "\n"))
		return
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("%s\nerror %d:\n%s\nwant a prefix:\n%s", files["test.yaml"], i, got[i], want[i])
		}
	}
}

func TestSitesErrors(t *testing.T) {
	const r = "routes: [{match: /, pipeline: [echo]}]"
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"sites:\n  - default: true\n    " + r + "\n  - hosts: a\n    default: true\n    " + r + "\n",
			[]string{"test.yaml:5:5: default: the site at 2:5 is the default already: one site serves the hosts no site names; drop one of the two default: true"}},
		{r + "\nsites:\n  - default: true\n    " + r + "\n",
			[]string{"test.yaml:3:5: default: the top-level routes (at 1:9) are the default site already"}},
		{"sites:\n  - hosts: a.example\n    routes:\n      - match: /\n        host: b.example\n        pipeline: [echo]\n",
			[]string{"test.yaml:5:15: host: a route of a site serves the site's hosts (a.example, at 2:5); drop host here, or move the route to a site with hosts: [b.example]"}},
		{"routes:\n  - match: /\n    host: x.a.example\n    pipeline: [echo]\nsites:\n  - hosts: '*.a.example'\n    " + r + "\n",
			[]string{"test.yaml:3:11: host: x.a.example is served by the site at 6:5, whose routes alone see its requests; move this route into that site (without host)"}},
		{"routes:\n  - match: /\n    host: '*.x.a.example'\n    pipeline: [echo]\nsites:\n  - hosts: ['*.a.example']\n    " + r + "\n",
			[]string{"test.yaml:3:11: host: *.x.a.example is served by the site at 6:5"}},
		{"sites:\n  - " + r + "\n",
			[]string{"test.yaml:2:5: site has no hosts: add hosts: [example.com] (the names it serves), or default: true"}},
		{"sites:\n  - hosts: a\n",
			[]string{"test.yaml:2:5: site has no routes: add routes: [a list of routes], as at the top level"}},
		{"sites:\n  - hosts: [a, B]\n    " + r + "\n  - hosts: [c, b.]\n    " + r + "\n",
			[]string{"test.yaml:4:16: hosts: b is already a host of the site at 2:16: a host belongs to one site"}},
		{"sites:\n  - hosts: [a b, '*.', 'x.*.y']\n    " + r + "\n",
			[]string{`test.yaml:2:13: hosts: want a host name such as "example.com" or "*.example.com", got "a b"`,
				`test.yaml:2:18: hosts: want a host name`, `test.yaml:2:24: hosts: want a host name`}},
		{"sites:\n  - hosts: [example.com:8080, '[::1]', '[::1]:80']\n    " + r + "\n",
			[]string{`test.yaml:2:13: hosts: "example.com:8080" has a port, which never matches: a site serves its hosts on every port it listens on; write "example.com"`,
				`test.yaml:2:40: hosts: "[::1]:80" has a port`}},
		{"sites:\n  - hosts: []\n    " + r + "\n",
			[]string{"test.yaml:2:12: hosts: want a host name or a list of them"}},
		{"sites:\n  - hosts: a\n    default: yes\n    " + r + "\n",
			[]string{`test.yaml:3:14: default: want true or false, got "yes"`}},
		{"sites:\n  - hosts: a\n    route: []\n    " + r + "\n",
			[]string{`test.yaml:3:5: unknown site key "route" (did you mean "routes"?)`}},
		{"sites: {hosts: a}\n",
			[]string{"test.yaml:1:8: sites: want a list of sites, each with hosts (the names it serves) and routes"}},
		{"sites:\n  - hosts: a\n    routes:\n      - match: /\n        pipeline: [echo]\n      - match: /\n        pipeline: [echo]\n",
			[]string{"test.yaml:6:16: match \"/\" is already matched at 4:16"}},
	} {
		checkErrors(t, t.TempDir(), map[string]string{"test.yaml": tt.text}, tt.want...)
	}
	// The same match in two sites, or in a site and at the top level, is
	// no duplicate: each site has its own routes.
	if _, err := parseString(t, ".", r+"\nsites:\n  - hosts: a\n    "+r+"\n  - hosts: b\n    "+r+"\n"); err != nil {
		t.Error(err)
	}
}

// A route's host written with a port, or an IPv6 address without its
// brackets, never matches a request (the router compares hosts without
// ports): refused, saying what to write; the forms that match are taken.
func TestRouteHostPort(t *testing.T) {
	const rest = "\n    pipeline: [echo]\n"
	for _, tt := range []struct {
		host string
		want []string
	}{
		{"example.com:8080", []string{`test.yaml:3:11: host: "example.com:8080" has a port, which never matches: a route matches its host on every port the server listens on (the port of a request's Host is ignored); write "example.com"`}},
		{"'*.example.com:443'", []string{`test.yaml:3:11: host: "*.example.com:443" has a port, which never matches: a route matches its host on every port the server listens on (the port of a request's Host is ignored); write "*.example.com"`}},
		{"'[::1]:80'", []string{`test.yaml:3:11: host: "[::1]:80" has a port, which never matches`}},
		{"'example.com.:80'", []string{`test.yaml:3:11: host: "example.com.:80" has a port, which never matches`}},
		{"'::1'", []string{`test.yaml:3:11: host: "::1" never matches: a request's Host brackets an IPv6 address; write "[::1]"`}},
		{"'fe80::1:80'", []string{`test.yaml:3:11: host: "fe80::1:80" never matches: a request's Host brackets an IPv6 address; write "[fe80::1:80]"`}},
		{"example.com", nil},
		{"EXAMPLE.com.", nil},
		{"'*.example.com'", nil},
		{"'[::1]'", nil},
		{"127.0.0.1", nil},
	} {
		checkErrors(t, t.TempDir(), map[string]string{"test.yaml": "routes:\n  - match: /\n    host: " + tt.host + rest}, tt.want...)
	}
}
