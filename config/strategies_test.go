package config

import (
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/fcgi"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// The two strategies of package pipe must run the same components with the
// same result (issue 15): a pipe.Middleware inside a ProcNetwork once
// answered 200 with an empty body where a Chain sent the source's body.
// TestStrategiesAgree builds every built-in component as a config file
// builds it and serves each case's pipeline as a Chain and as a
// ProcNetwork, alone and with net/http middleware first or second, over a
// real socket; the responses (status, header and body) must be the same.

// strategyCase is a pipeline and the requests it is asked, as raw wire
// bytes without the Host field and the final CRLF.
type strategyCase struct {
	name     string
	pipeline string // YAML flow list; {site} stands for the site's directory
	requests []strategyRequest
	ignore   []string // header fields that differ by time (Retry-After)
	masked   bool     // the body and its length vary by counters and time: digits are masked
}

type strategyRequest struct {
	wire   string // request line and fields, each ending in CRLF
	status int    // what a Chain answers, to check the case tests something
}

func strategyGet(target string, fields ...string) string {
	return "GET " + target + " HTTP/1.1\r\n" + strings.Join(fields, "")
}

var strategyCases = []strategyCase{
	{name: "files", pipeline: `[files: {root: "{site}/public", browse: true}]`, requests: []strategyRequest{
		{strategyGet("/a.txt"), 200},
		{strategyGet("/a.txt", "Range: bytes=2-5\r\n"), 206},
		{strategyGet("/"), 200},
		{strategyGet("/missing"), 404},
		{"HEAD /a.txt HTTP/1.1\r\n", 200},
	}},
	{name: "text", pipeline: `[text: "hello\n"]`, requests: []strategyRequest{{strategyGet("/"), 200}}},
	{name: "echo", pipeline: `[echo]`, requests: []strategyRequest{
		{"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nping", 200},
	}},
	{name: "status", pipeline: `[count, status: json]`, masked: true, requests: []strategyRequest{{strategyGet("/"), 200}}},
	// The relay streams the program's output: whether the engine learns its
	// length before sending the header depends on when the program exits.
	{name: "cgi", pipeline: `[cgi: "{site}/cgi-bin/show.cgi"]`, ignore: []string{"Content-Length"}, requests: []strategyRequest{{strategyGet("/?q=1"), 200}}},
	{name: "template", pipeline: `[template: {root: "{site}/templates", data: {site: Sluice}}]`, requests: []strategyRequest{
		{strategyGet("/page.html?q=<b>"), 200},
	}},
	{name: "compress", pipeline: `[files: "{site}/public", compress: [gzip]]`, requests: []strategyRequest{
		{strategyGet("/a.txt", "Accept-Encoding: gzip\r\n"), 200},
		{strategyGet("/a.txt"), 200},
	}},
	// A cache may be built once for both strategies: the same request is
	// then a miss in one and a hit in the other, with the same bytes.
	{name: "cache", pipeline: `[cache: {size: 1MB}, headers: {set: {Cache-Control: max-age=60}}, text: cached]`,
		ignore: []string{"Age", "Cache-Status"}, requests: []strategyRequest{
			{strategyGet("/"), 200},
			{strategyGet("/"), 200},
			{"HEAD / HTTP/1.1\r\n", 200},
		}},
	{name: "cache_purge", pipeline: `[cache_purge: {path: /.purge}, cache: {size: 1MB}, headers: {set: {Cache-Control: max-age=60}}, text: cached]`,
		ignore: []string{"Age", "Cache-Status"}, requests: []strategyRequest{
			{strategyGet("/"), 200},
			{"POST /.purge HTTP/1.1\r\nContent-Length: 15\r\n\r\n{\"urls\": [\"/\"]}", 200},
			{strategyGet("/.purge"), 405},
		}},
	{name: "rot13", pipeline: `[text: "Hello", rot13]`, requests: []strategyRequest{{strategyGet("/"), 200}}},
	{name: "log", pipeline: `[log: "{site}/access.log", text: logged]`, requests: []strategyRequest{{strategyGet("/"), 200}}},
	{name: "redirect", pipeline: `[redirect: {to: "https://example.com$path$query", status: 308}]`, requests: []strategyRequest{
		{strategyGet("/x?y=1"), 308},
	}},
	{name: "rewrite", pipeline: `[rewrite: "/a.txt$query", files: {root: "{site}/public"}]`, requests: []strategyRequest{
		{strategyGet("/x"), 200},
		{strategyGet("/y/z?q=1"), 200},
	}},
	{name: "headers", pipeline: `[headers: {set: {Cache-Control: max-age=60}, remove: [X-Powered-By]}, text: hi]`, requests: []strategyRequest{
		{strategyGet("/"), 200},
	}},
	{name: "basic_auth", pipeline: `[basic_auth: {realm: private, htpasswd: "{site}/users.htpasswd"}, text: secret]`, requests: []strategyRequest{
		{strategyGet("/"), 401},
		{strategyGet("/", strategyAuth("alice", "wrong")), 401},
		{strategyGet("/", strategyAuth("alice", "secret")), 200},
	}},
	{name: "ipfilter", pipeline: `[ipfilter: {deny: [127.0.0.0/8]}, text: hi]`, requests: []strategyRequest{{strategyGet("/"), 403}}},
	{name: "ipfilter-allow", pipeline: `[ipfilter: {allow: [127.0.0.0/8]}, text: hi]`, requests: []strategyRequest{{strategyGet("/"), 200}}},
	{name: "htaccess", pipeline: `[htaccess: "{site}/public", files: "{site}/public"]`, requests: []strategyRequest{
		{strategyGet("/a.txt"), 200},
		{strategyGet("/private/x.txt"), 403},
	}},
	{name: "proxy", pipeline: `[proxy: "unix:{site}/app.sock", headers: {set: {X-Via-Proxy: "yes"}}]`, requests: []strategyRequest{
		{strategyGet("/x?q=1"), 200},
		{"POST /p HTTP/1.1\r\nContent-Length: 4\r\n\r\nping", 201},
	}},
	{name: "fastcgi", pipeline: `[fastcgi: {upstreams: ["unix:{site}/fcgi.sock"], root: "{site}/public", max_conns: 4}]`, ignore: []string{"Content-Length"}, requests: []strategyRequest{
		{strategyGet("/x.php?q=1"), 200},
		{"POST /x.php HTTP/1.1\r\nContent-Length: 4\r\n\r\nping", 201},
		{strategyGet("/missing.php"), 404},
	}},
	{name: "php", pipeline: `[php: {upstreams: ["unix:{site}/fcgi.sock"], root: "{site}/public", max_conns: 4}]`, requests: []strategyRequest{
		{strategyGet("/a.txt"), 200},
		{strategyGet("/a.txt", "Range: bytes=1-2\r\n"), 206},
		{strategyGet("/missing.php"), 404},
		{strategyGet("/.htaccess"), 404},
	}},
	{name: "accel_redirect", pipeline: `[text: app, headers: {set: {X-Accel-Redirect: /protected/a.txt}}, accel_redirect: {locations: {/protected/: "{site}/public"}}]`, requests: []strategyRequest{
		{strategyGet("/download"), 200},
		{strategyGet("/download", "Range: bytes=1-2\r\n"), 206},
	}},
	{name: "ratelimit", pipeline: `[ratelimit: {rate: 0.01, burst: 2}, text: hi]`, ignore: []string{"Retry-After"}, requests: []strategyRequest{
		{strategyGet("/"), 200},
		{strategyGet("/"), 200},
		{strategyGet("/"), 429},
	}},
}

// strategyAuth is an Authorization field for user and password.
func strategyAuth(user, pw string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw)) + "\r\n"
}

// strategySite writes the files the cases serve and returns its directory.
func strategySite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"public/a.txt":             strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 20),
		"public/index.html":        "<h1>index</h1>\n",
		"public/x.php":             "<?php echo 'x';\n",
		"public/private/x.txt":     "private\n",
		"public/private/.htaccess": "Deny from all\n",
		"templates/page.html":      "<p>{{.Data.site}} {{.Query.Get \"q\"}} {{.Path}}</p>\n",
		"cgi-bin/show.cgi":         "#!/bin/sh\nprintf 'Content-Type: text/plain\\nX-Script: show\\n\\nran %s\\n' \"$QUERY_STRING\"\n",
		"users.htpasswd":           "alice:" + string(hash) + "\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A deployed site: its files' Last-Modified does not appear between
	// one strategy's request and the other's as the second of writing
	// ends.
	sluicetest.Backdate(t, dir, time.Hour)
	// The proxy's upstream, on a Unix socket in the site.
	ln, err := net.Listen("unix", filepath.Join(dir, "app.sock"))
	if err != nil {
		t.Fatal(err)
	}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.Header()["Date"] = nil
		if r.Method == "POST" {
			w.WriteHeader(http.StatusCreated)
		}
		fmt.Fprintf(w, "app: %s %s %q\n", r.Method, r.RequestURI, b)
	})}
	go app.Serve(ln)
	t.Cleanup(func() { app.Close() })
	// The fastcgi component's upstream: the same application, served by
	// net/http/fcgi.
	fln, err := net.Listen("unix", filepath.Join(dir, "fcgi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go fcgi.Serve(fln, app.Handler)
	t.Cleanup(func() { fln.Close() })
	return dir
}

// strategyLayouts place a net/http middleware in a case's pipeline: not at
// all, first, or after the first component.
var strategyLayouts = []struct {
	name  string
	place func(comps []pipe.Component, mw pipe.Component) []pipe.Component
}{
	{"alone", func(comps []pipe.Component, _ pipe.Component) []pipe.Component { return comps }},
	{"middleware-first", func(comps []pipe.Component, mw pipe.Component) []pipe.Component {
		return append([]pipe.Component{mw}, comps...)
	}},
	{"middleware-second", func(comps []pipe.Component, mw pipe.Component) []pipe.Component {
		return slices.Concat(comps[:1], []pipe.Component{mw}, comps[1:])
	}},
}

// strategyMiddleware marks the response and passes the request on.
func strategyMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Middleware", "passed")
		next.ServeHTTP(w, r)
	})
}

func TestStrategiesAgree(t *testing.T) {
	site := strategySite(t)
	for _, tc := range strategyCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, layout := range strategyLayouts {
				var got [2][]string
				for i, network := range []bool{false, true} {
					comps := strategyComponents(t, site, tc)
					b := &pipe.Builder{Network: network}
					t.Cleanup(b.Stop)
					addr := sluicetest.NewServer(t, pipe.Handler(b.Pipeline(layout.place(comps, pipe.Middleware(strategyMiddleware))...))).Addr
					for _, req := range tc.requests {
						status, resp := strategyDo(t, addr, req.wire, tc)
						if !network && status != req.status {
							t.Errorf("%s: Chain answered %q with %d, want %d:\n%s", layout.name, req.wire, status, req.status, resp)
						}
						got[i] = append(got[i], resp)
					}
				}
				for j, req := range tc.requests {
					if got[0][j] != got[1][j] {
						t.Errorf("%s: %q:\nChain:\n%s\nProcNetwork:\n%s", layout.name, req.wire, got[0][j], got[1][j])
					}
				}
			}
		})
	}
}

// TestStrategyCasesCoverRegistry: every registered component has a case in
// TestStrategiesAgree, so a component added later cannot be left out.
func TestStrategyCasesCoverRegistry(t *testing.T) {
	site := strategySite(t)
	covered := map[string]bool{}
	for _, tc := range strategyCases {
		cfg := strategyConfig(t, site, tc)
		for _, s := range cfg.Routes[0].Stages {
			covered[s.Name] = true
		}
	}
	for _, name := range components.Names() {
		if !covered[name] {
			t.Errorf("component %q has no case in strategyCases", name)
		}
	}
}

// strategyConfig builds tc's pipeline as the one route of a config file.
func strategyConfig(t *testing.T, site string, tc strategyCase) *Config {
	t.Helper()
	text := "routes:\n  - match: /\n    pipeline: " + strings.ReplaceAll(tc.pipeline, "{site}", site) + "\n"
	cfg, err := parseString(t, site, text)
	if err != nil {
		t.Fatalf("%s", err)
	}
	return cfg
}

// strategyComponents builds tc's components, fresh for each server
// (ratelimit and count keep state).
func strategyComponents(t *testing.T, site string, tc strategyCase) []pipe.Component {
	t.Helper()
	var comps []pipe.Component
	for _, s := range strategyConfig(t, site, tc).Routes[0].Stages {
		comps = append(comps, s.Component)
	}
	return comps
}

var strategyDigits = regexp.MustCompile(`[0-9]+`)

// strategyDo sends one request on its own connection and returns the
// status and the response as text to compare: the status line, the
// header fields but Date (and tc.ignore), sorted, and the body.
func strategyDo(t *testing.T, addr, wire string, tc strategyCase) (int, string) {
	t.Helper()
	head, body, found := strings.Cut(wire, "\r\n\r\n")
	if found {
		head += "\r\n"
	}
	resp, text := sluicetest.RoundTrip(t, addr, head+"Host: a\r\nConnection: close\r\n\r\n"+body)
	b := []byte(text)
	resp.Header.Del("Date")
	for _, name := range tc.ignore {
		resp.Header.Del(name)
	}
	if tc.masked {
		resp.Header.Del("Content-Length")
		b = strategyDigits.ReplaceAll(b, []byte("N"))
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%s\n", resp.Status)
	resp.Header.Write(&out) // sorted by name
	fmt.Fprintf(&out, "\n%q\n", b)
	return resp.StatusCode, out.String()
}
