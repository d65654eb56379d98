package files_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

// trySite is a single-page app's root, a file beside the root that must
// never be served, and a link to it inside the root.
func trySite(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	dir := filepath.Join(parent, "www")
	writeFiles(t, dir, map[string]string{
		"index.html":      "SPA INDEX\n",
		"app.js":          "JS\n",
		"about.html":      "ABOUT\n",
		"docs/index.html": "DOCS INDEX\n",
		".env":            "DOTENV SECRET\n",
		".env.html":       "DOTENV HTML SECRET\n",
	})
	writeFiles(t, parent, map[string]string{"outside.txt": "OUTSIDE SECRET\n", "outside.txt.html": "OUTSIDE SECRET\n"})
	if err := os.Symlink("../outside.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTry(t *testing.T) {
	dir := trySite(t)
	spa := hostOf(serveDir(t, dir, files.Options{Try: []string{"$path", "$path.html", "/index.html"}}))
	index, _ := sluicetest.RoundTrip(t, spa, "GET /index.html HTTP/1.1\r\nHost: a\r\n\r\n")
	etag := index.Header.Get("ETag")
	if etag == "" {
		t.Fatal("index.html has no ETag")
	}
	for _, tc := range []struct {
		name, raw string
		status    int
		body      string
	}{
		{"the path itself", "GET /app.js HTTP/1.1\r\nHost: a\r\n\r\n", 200, "JS\n"},
		{"a client-side route", "GET /users/42/edit?tab=2 HTTP/1.1\r\nHost: a\r\n\r\n", 200, "SPA INDEX\n"},
		{"the path with .html", "GET /about HTTP/1.1\r\nHost: a\r\n\r\n", 200, "ABOUT\n"},
		{"a directory redirects as without try", "GET /docs HTTP/1.1\r\nHost: a\r\n\r\n", 301, ""},
		{"a directory's index", "GET /docs/ HTTP/1.1\r\nHost: a\r\n\r\n", 200, "DOCS INDEX\n"},
		{"a dotfile is never a candidate", "GET /.env HTTP/1.1\r\nHost: a\r\n\r\n", 200, "SPA INDEX\n"},
		{"nor a dotfile spelled encoded", "GET /%2Eenv HTTP/1.1\r\nHost: a\r\n\r\n", 200, "SPA INDEX\n"},
		{"a link out of the root", "GET /link.txt HTTP/1.1\r\nHost: a\r\n\r\n", 200, "SPA INDEX\n"},
		{"dot segments", "GET /docs/%2E%2E/outside.txt HTTP/1.1\r\nHost: a\r\n\r\n", 200, "SPA INDEX\n"},
		{"above the root: the engine's 400", "GET /../outside.txt HTTP/1.1\r\nHost: a\r\n\r\n", 400, "400 Bad Request: path climbs above the root\n"},
		{"the fallback's validators", "GET /x/y HTTP/1.1\r\nHost: a\r\nIf-None-Match: " + etag + "\r\n\r\n", 304, ""},
		{"the fallback's ranges", "GET /x/y HTTP/1.1\r\nHost: a\r\nRange: bytes=0-2\r\n\r\n", 206, "SPA"},
		{"HEAD", "HEAD /x/y HTTP/1.1\r\nHost: a\r\n\r\n", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := sluicetest.RoundTrip(t, spa, tc.raw)
			if resp.StatusCode != tc.status || body != tc.body {
				t.Errorf("%d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
			if strings.Contains(body, "SECRET") {
				t.Errorf("a candidate reached a file the route does not serve: %q", body)
			}
			if tc.status == 200 && tc.body == "SPA INDEX\n" && resp.Header.Get("ETag") != etag {
				t.Errorf("ETag %q, want index.html's %q", resp.Header.Get("ETag"), etag)
			}
		})
	}
	if resp, _ := sluicetest.RoundTrip(t, spa, "GET /docs HTTP/1.1\r\nHost: a\r\n\r\n"); resp.Header.Get("Location") != "/docs/" {
		t.Errorf("GET /docs: Location %q, want /docs/", resp.Header.Get("Location"))
	}
}

// A candidate ending in / serves its directory's index at the URL asked
// for; with no candidate found the answer is 404; dotfiles: deny ends the
// search with 403, as for the path itself.
func TestTryDirectoryAndNone(t *testing.T) {
	dir := trySite(t)
	dirs := hostOf(serveDir(t, dir, files.Options{Try: []string{"$path/", "$path"}}))
	for _, tc := range []struct {
		raw    string
		status int
		body   string
	}{
		{"GET /docs HTTP/1.1\r\nHost: a\r\n\r\n", 200, "DOCS INDEX\n"},
		{"GET /app.js HTTP/1.1\r\nHost: a\r\n\r\n", 200, "JS\n"},
		{"GET /nothing HTTP/1.1\r\nHost: a\r\n\r\n", 404, "404 Not Found: no such file\n"},
	} {
		if resp, body := sluicetest.RoundTrip(t, dirs, tc.raw); resp.StatusCode != tc.status || body != tc.body {
			t.Errorf("%q: %d %q, want %d %q", tc.raw, resp.StatusCode, body, tc.status, tc.body)
		}
	}
	deny := hostOf(serveDir(t, dir, files.Options{Dotfiles: files.DotfilesDeny, Try: []string{"$path", "/index.html"}}))
	if resp, body := sluicetest.RoundTrip(t, deny, "GET /.env HTTP/1.1\r\nHost: a\r\n\r\n"); resp.StatusCode != 403 || strings.Contains(body, "SECRET") {
		t.Errorf("dotfiles deny: %d %q, want 403 without the file", resp.StatusCode, body)
	}
	prefix := hostOf(serveDir(t, dir, files.Options{StripPrefix: "/app", Try: []string{"$path", "/app/index.html"}}))
	for raw, want := range map[string]string{
		"GET /app/app.js HTTP/1.1\r\nHost: a\r\n\r\n":  "JS\n",
		"GET /app/a/route HTTP/1.1\r\nHost: a\r\n\r\n": "SPA INDEX\n",
	} {
		if resp, body := sluicetest.RoundTrip(t, prefix, raw); resp.StatusCode != 200 || body != want {
			t.Errorf("strip_prefix %q: %d %q, want 200 %q", raw, resp.StatusCode, body, want)
		}
	}
}

func TestTryValidate(t *testing.T) {
	for _, tc := range []struct {
		opts files.Options
		want string
	}{
		{files.Options{Try: []string{"index.html"}}, `try "index.html": want a path starting with / or with $path`},
		{files.Options{Try: []string{"/a/$path"}}, `$path is the only placeholder, and only at the start`},
		{files.Options{Try: []string{"$path/../x"}}, `is not a canonical path`},
		{files.Options{Try: []string{"/a//b"}}, `is not a canonical path`},
		{files.Options{Try: []string{"/index.html?x"}}, `without a query`},
		{files.Options{Try: []string{"/.fallback.html"}}, `names a dotfile, which dotfiles: hide never serves`},
		{files.Options{StripPrefix: "/app", Try: []string{"/index.html"}}, `outside strip_prefix "/app"`},
	} {
		if err := tc.opts.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Try %q: %v, want %q", tc.opts.Try, err, tc.want)
		}
	}
	ok := files.Options{Dotfiles: files.DotfilesAllow, Try: []string{"$path", "$path/", "$path.html", "/.fallback.html"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid candidates refused: %v", err)
	}
}
