package config

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// errorSite serves a config with server-wide error pages (404 exact, 4xx
// and 5xx classes) and routes that answer errors every way a pipeline can:
// the router's own 404 and 405, basic_auth's 401, ratelimit's 429, files'
// 404 and 416, a text source's 503; one route with its own 404 page, one
// that turns the pages off. It returns the server's address.
func errorSite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	pad := "<p>" + strings.Repeat(" padding so compress takes the page", 40) + "</p>\n"
	for name, content := range map[string]string{
		"errors/404.html":     "<h1>{{.Status}} {{.StatusText}}</h1>\n<p>server 404 {{.Method}} {{.Path}} on {{.Host}}: {{.Message}}</p>\n" + pad,
		"errors/4xx.html":     "<h1>server 4xx {{.Status}} {{.Method}}</h1>\n",
		"errors/5xx.html":     "<h1>server 5xx {{.Status}}</h1>\n",
		"errors/route.html":   "<h1>route 404 {{.Path}}</h1>\n",
		"www/app/a.txt":       "0123456789",
		"www/z/a.txt":         "0123456789",
		"www/site/about.html": "ABOUT",
		"errors/param.html":   "<h1>route {{.Status}}: {{.Message}}</h1>\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	htpasswd, err := filepath.Abs(filepath.Join("testdata", "users.htpasswd"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseString(t, dir, fmt.Sprintf(`
error_pages:
  404: errors/404.html
  4xx: errors/4xx.html
  5xx: errors/5xx.html
routes:
  - match: /admin/
    pipeline:
      - basic_auth: {realm: admin, htpasswd: %q}
      - text: admin
  - match: /get-only
    methods: [GET]
    pipeline: [text: only GET]
  - match: /limited
    pipeline: [ratelimit: {rate: 0.001, burst: 1}, text: limited]
  - match: /busy
    pipeline: [text: {status: 503, body: busy}]
  - match: /app/
    error_pages: {404: errors/route.html}
    pipeline: [files: www]
  - match: /plain/
    error_pages: {}
    pipeline: [files: www]
  - match: /z/
    pipeline: [files: www, compress: [gzip]]
  - match: /article/{id:int}
    error_pages: {4xx: errors/param.html}
    pipeline: [text: article]
  - match: /n/{id:int}
    pipeline: [text: n]
  - match: /site/
    pipeline: [files: {root: www, try: [$path, $path.html]}]
`, htpasswd))
	if err != nil {
		t.Fatal(err)
	}
	return sluicetest.NewServer(t, cfg.Handler()).Addr
}

func TestErrorPages(t *testing.T) {
	addr := errorSite(t)
	for _, tc := range []struct {
		name, raw string
		status    int
		body      string            // a substring of the body
		fields    map[string]string // header fields the response must have
	}{
		{"router 404, exact page", "GET /nowhere HTTP/1.1\r\nHost: ex.org\r\n\r\n", 404,
			"<p>server 404 GET /nowhere on ex.org: no route for this path</p>", nil},
		{"path escaped", "GET /%3Cscript%3Ealert(1)%3C/script%3E HTTP/1.1\r\nHost: a\r\n\r\n", 404,
			"server 404 GET /&lt;script&gt;alert(1)&lt;/script&gt; on a", nil},
		{"router 405 keeps Allow", "POST /get-only HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 405,
			"<h1>server 4xx 405 POST</h1>", map[string]string{"Allow": "GET, HEAD"}},
		{"401 keeps WWW-Authenticate", "GET /admin/ HTTP/1.1\r\nHost: a\r\n\r\n", 401,
			"<h1>server 4xx 401 GET</h1>", map[string]string{"WWW-Authenticate": `Basic realm="admin", charset="UTF-8"`}},
		{"a source's 503, class page", "GET /busy HTTP/1.1\r\nHost: a\r\n\r\n", 503,
			"<h1>server 5xx 503</h1>", nil},
		{"files 404, the route's page", "GET /app/missing HTTP/1.1\r\nHost: a\r\n\r\n", 404,
			"<h1>route 404 /app/missing</h1>", map[string]string{"Content-Type": "text/html; charset=utf-8"}},
		{"route page over server class", "POST /app/a.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 405,
			"<h1>server 4xx 405 POST</h1>", map[string]string{"Allow": "GET, HEAD, OPTIONS"}},
		{"416 keeps Content-Range", "GET /app/a.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=50-\r\n\r\n", 416,
			"<h1>server 4xx 416 GET</h1>", map[string]string{"Content-Range": "bytes */10", "ETag": "", "Last-Modified": ""}},
		{"try: a candidate found", "GET /site/about HTTP/1.1\r\nHost: a\r\n\r\n", 200,
			"ABOUT", map[string]string{"Content-Type": "text/html; charset=utf-8"}},
		{"try: none found, the 404 page", "GET /site/nope HTTP/1.1\r\nHost: a\r\n\r\n", 404,
			"<p>server 404 GET /site/nope on a: </p>", nil},
		{"a bad path parameter: the route's page", "GET /article/x HTTP/1.1\r\nHost: a\r\n\r\n", 400,
			"<h1>route 400: path parameter id: not an integer</h1>\n", nil},
		{"a bad path parameter: the server's page", "GET /n/x HTTP/1.1\r\nHost: a\r\n\r\n", 400,
			"<h1>server 4xx 400 GET</h1>\n", nil},
		{"route turns pages off", "GET /plain/missing HTTP/1.1\r\nHost: a\r\n\r\n", 404,
			"404 Not Found: no such file\n", map[string]string{"Content-Type": "text/plain; charset=utf-8"}},
		{"protocol error stays short text", "GET /nowhere HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400,
			"400 Bad Request", map[string]string{"Content-Type": "text/plain; charset=utf-8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := sluicetest.RoundTrip(t, addr, tc.raw)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.body) {
				t.Errorf("%d %q, want %d with %q", resp.StatusCode, body, tc.status, tc.body)
			}
			if tc.status != 400 && resp.Header.Get("Content-Type") == "text/html; charset=utf-8" {
				if n := fmt.Sprint(len(body)); resp.Header.Get("Content-Length") != n {
					t.Errorf("Content-Length %q, want %s", resp.Header.Get("Content-Length"), n)
				}
			}
			for name, want := range tc.fields {
				if got := resp.Header.Get(name); got != want {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
			if strings.Contains(body, "<script>") {
				t.Errorf("the request's <script> reached the page unescaped: %q", body)
			}
		})
	}
}

func TestErrorPagesRetryAfter(t *testing.T) {
	addr := errorSite(t)
	sluicetest.RoundTrip(t, addr, "GET /limited HTTP/1.1\r\nHost: a\r\n\r\n") // takes the one token
	resp, body := sluicetest.RoundTrip(t, addr, "GET /limited HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp.StatusCode != 429 || body != "<h1>server 4xx 429 GET</h1>\n" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("%d %q Retry-After %q, want 429, the 4xx page and Retry-After", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
}

// A HEAD gets the page's header fields, its length included, and no body:
// the GET pipelined after it is read intact.
func TestErrorPagesHead(t *testing.T) {
	addr := errorSite(t)
	_, page := sluicetest.RoundTrip(t, addr, "GET /nowhere HTTP/1.1\r\nHost: a\r\n\r\n")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "HEAD /nowhere HTTP/1.1\r\nHost: a\r\n\r\nGET /nowhere HTTP/1.1\r\nHost: a\r\n\r\n")
	br := bufio.NewReader(c)
	head, err := http.ReadResponse(br, &http.Request{Method: "HEAD"})
	if err != nil {
		t.Fatal(err)
	}
	// The page shows the method: HEAD's is one byte longer than GET's.
	headPage := strings.Replace(page, "GET", "HEAD", 1)
	if head.StatusCode != 404 || head.Header.Get("Content-Length") != fmt.Sprint(len(headPage)) || head.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("HEAD: %d %v, want 404, the page's type and length %d", head.StatusCode, head.Header, len(headPage))
	}
	get, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatalf("the GET after the HEAD: %v (the HEAD sent a body?)", err)
	}
	b, _ := io.ReadAll(get.Body)
	if get.StatusCode != 404 || string(b) != page {
		t.Errorf("GET after HEAD: %d %q, want 404 %q", get.StatusCode, b, page)
	}
}

// Filters run over the page: compress encodes it.
func TestErrorPagesCompressed(t *testing.T) {
	addr := errorSite(t)
	_, page := sluicetest.RoundTrip(t, addr, "GET /z/missing HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, body := sluicetest.RoundTrip(t, addr, "GET /z/missing HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n\r\n")
	if resp.StatusCode != 404 || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("%d Content-Encoding %q, want 404 gzip", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil || string(b) != page || !strings.Contains(page, "server 404 GET /z/missing") {
		t.Errorf("decoded %q, %v; want the page %q", b, err, page)
	}
}

func TestErrorPagesConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"unclosed.html": "<p>{{.Status</p>",
		"nofield.html":  "<p>{{.Nope}}</p>",
		"ok.html":       "<p>fine</p>",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ text, want string }{
		{"error_pages: {404: unclosed.html}\nroutes: [{match: /, pipeline: [text: x]}]",
			"test.yaml:1:20: error_pages.404: template: unclosed.html:1: "},
		{"error_pages: {5xx: nofield.html}\nroutes: [{match: /, pipeline: [text: x]}]",
			"test.yaml:1:20: error_pages.5xx: template: nofield.html:1:5: executing \"nofield.html\" at <.Nope>: can't evaluate field Nope"},
		{"error_pages: {404: missing.html}\nroutes: [{match: /, pipeline: [text: x]}]",
			"test.yaml:1:20: error_pages.404: open "},
		{"error_pages: {600: ok.html}\nroutes: [{match: /, pipeline: [text: x]}]",
			`test.yaml:1:15: error_pages: "600" is not an error status`},
		{"error_pages: {3xx: ok.html}\nroutes: [{match: /, pipeline: [text: x]}]",
			`test.yaml:1:15: error_pages: "3xx" is not an error status`},
		{"error_pages: ok.html\nroutes: [{match: /, pipeline: [text: x]}]",
			"test.yaml:1:14: error_pages: want a map from a status"},
		{"routes: [{match: /, error_pages: {404: unclosed.html}, pipeline: [text: x]}]",
			"test.yaml:1:40: error_pages.404: template: unclosed.html:1: "},
	} {
		_, err := parseString(t, dir, tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %s", tc.text, err, tc.want)
		}
	}
}

func TestErrorPagesExplained(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"404.html", "4xx.html"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("<p>{{.Status}}</p>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := parseString(t, dir, `
error_pages: {404: 404.html}
routes:
  - {match: /a/, error_pages: {4xx: 4xx.html}, pipeline: [text: a]}
  - {match: /b/, error_pages: {}, pipeline: [text: b]}
`)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	cfg.Explain(&b)
	for _, want := range []string{
		"error_pages    404 404.html\n",
		"route 1: /a/ (prefix)\n  error pages: 4xx 4xx.html, then the server's\n",
		"route 2: /b/ (prefix)\n  error pages: none\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Explain lacks %q:\n%s", want, b.String())
		}
	}
}
