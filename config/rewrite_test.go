package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// Rewrites with captures in front of files, on the wire: the file the
// rewritten path names is served, and no spelling of a request reaches a
// file outside the tree the rewrite names, a dotfile, or a path the
// rewrite would make non-canonical.
func TestConfigRewriteFiles(t *testing.T) {
	root := t.TempDir()
	for name, content := range map[string]string{
		"pub/a.txt":     "public a",
		"pub/.env":      "DOTENV",
		"secret.txt":    "SECRET",
		"users/ann.txt": "ann",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := parseString(t, t.TempDir(), fmt.Sprintf(`
routes:
  - match: "~ ^/u/(?P<name>[^/]+)$"
    pipeline: [{rewrite: "/users/$name.txt"}, {files: %[1]q}]
  - match: "~ ^/p/(.*)$"
    pipeline: [{rewrite: "/pub/$1"}, {files: %[1]q}]
  - match: '~ ^/d/(.*)\.html$'
    pipeline: [{rewrite: "/pub/$1"}, {files: %[1]q}]
  - match: /old/{name}
    pipeline: [{redirect: {to: "/new/$name?from=$1&$args", status: 301}}]
  - match: /
    pipeline: [{text: root}]
`, root))
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	for _, tt := range []struct {
		target   string
		status   int
		body     string
		location string
	}{
		{"/u/ann", 200, "ann", ""},
		{"/p/a.txt", 200, "public a", ""},
		{"/p/..%2fsecret.txt", 400, "", ""},
		{"/p/..%2Fsecret.txt", 400, "", ""},
		{"/p/%2e%2e/secret.txt", 200, "root", ""},
		{"/p/.%2e/secret.txt", 200, "root", ""},
		{"/p/.env", 404, "", ""},
		{"/p/%2eenv", 404, "", ""},
		{"/p/x%00", 400, "", ""},
		{"/p/..%5csecret.txt", 404, "", ""},
		{"/p/..\\secret.txt", 404, "", ""},
		{"/d/...html", 400, "", ""},
		{"/d/..html", 400, "", ""},
		{"/u/..%2e", 404, "", ""},
		{"/old/a%20b?x=1", 301, "", "/new/a%20b?from=a%20b&x=1"},
		{"/old/%2F%2Fevil.com", 400, "", ""},
		{"/old/a:b?", 301, "", "/new/a%3Ab?from=a%3Ab&"},
	} {
		t.Run(tt.target, func(t *testing.T) {
			resp, body := srv.RoundTrip(t, "GET "+tt.target+" HTTP/1.1\r\nHost: h\r\n\r\n")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tt.status, body)
			}
			if tt.body != "" && body != tt.body {
				t.Errorf("body %q, want %q", body, tt.body)
			}
			if strings.Contains(body, "SECRET") || strings.Contains(body, "DOTENV") {
				t.Errorf("body %q serves what the rewrite must not reach", body)
			}
			if got := resp.Header.Get("Location"); got != tt.location {
				t.Errorf("Location %q, want %q", got, tt.location)
			}
		})
	}
}

// A template's path parameters must be captured by every pattern of its
// route.
func TestConfigPlaceholderErrors(t *testing.T) {
	for _, tt := range []struct{ routes, want string }{
		{`
  - match: ["/a/{id}", /b/]
    pipeline: [{rewrite: "/x/$id"}, {text: x}]`, `3:17: rewrite: to "/x/$id" uses $id, but match "/b/" captures no path parameter id`},
		{`
  - match: /
    pipeline: [{redirect: "/x/$file"}]`, `3:17: redirect: to "/x/$file" uses $file, but match "/" captures no path parameter file`},
		{`
  - match: "~ ^/(a)$"
    pipeline: [{redirect: "/x/$2"}]`, `3:17: redirect: to "/x/$2" uses $2, but match "~ ^/(a)$" captures no path parameter $2`},
		{`
  - match: /
    pipeline: [{rewrite: "/sites/$host$path"}, {text: x}]`, `3:17: rewrite: to "/sites/$host$path" uses $host, but match "/" captures no path parameter host (capture it with {host} or a group (?P<host>...)); $host is the request's host in a redirect's URL only: a rewrite keeps the host`},
		{`
  - match: /
    pipeline: [{rewrite: "/sites/$hostname$path"}, {text: x}]`, `uses $hostname, but match "/" captures no path parameter hostname (capture it with {hostname} or a group (?P<hostname>...)); $hostname is the request's host in a redirect's URL only`},
		{`
  - match: "~ ^/(?P<n>a)$"
    pipeline: [{rewrite: "/x/../$1"}, {text: x}]`, `3:17: rewrite: target "/x/../$1" is not a canonical path`},
	} {
		_, err := parseString(t, t.TempDir(), "routes:"+tt.routes+"\n")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s\nerror %v\nwant one with %q", tt.routes, err, tt.want)
		}
	}
	// Captured, by name and by number, it is no error.
	if _, err := parseString(t, t.TempDir(), `routes:
  - match: ["~ ^/(?P<id>[0-9]+)/(x)$", "/a/{id}/{y}"]
    pipeline: [{rewrite: "/x/$${id}/$2"}, {text: x}]
  - match: /h/{host}
    pipeline: [{rewrite: "/x/$host"}, {text: x}]
  - match: /r/
    pipeline: [{redirect: "https://$host$path"}]
`); err != nil {
		t.Error(err)
	}
}

// A rewrite in front of proxy: the upstream is sent the rewritten path
// and query, escaped, never the request's own spelling.
func TestConfigRewriteProxy(t *testing.T) {
	upstream := sluicetest.NewServer(t, pipe.Handler(pipe.Source(func(c *pipe.Conn) pipe.Content {
		target := string(c.Request.Target)
		return func(w pipe.Writer) error { _, err := io.WriteString(w, target); return err }
	})))
	cfg, err := parseString(t, t.TempDir(), fmt.Sprintf(`
routes:
  - match: "~ ^/shop/(.*)$"
    pipeline:
      - rewrite: "/index.php?route=$1&$args"
      - proxy: %q
  - match: /p/{name}
    pipeline:
      - rewrite: /users/$name
      - proxy: %[1]q
`, upstream.URL))
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	for _, tt := range []struct {
		target string
		status int
		sent   string
	}{
		{"/shop/a%20b/c?x=1", 200, "/index.php?route=a%20b%2Fc&x=1"},
		{"/shop/./x/../a&b=c", 200, "/index.php?route=a%26b%3Dc&"},
		{"/shop/..%2f..%2fetc", 400, ""},
		{"/p/a%3Fb?q=1", 200, "/users/a%3Fb?q=1"},
		{"/p/%2e%2e", 404, ""},
	} {
		t.Run(tt.target, func(t *testing.T) {
			resp, body := srv.RoundTrip(t, "GET "+tt.target+" HTTP/1.1\r\nHost: h\r\n\r\n")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tt.status, body)
			}
			if tt.sent != "" && body != tt.sent {
				t.Errorf("upstream was sent %q, want %q", body, tt.sent)
			}
		})
	}
}
