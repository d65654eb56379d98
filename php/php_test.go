//go:build unix

package php_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/fastcgi/fpmtest"
	"github.com/sluice-server/sluice/php"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// show is a script that records that it ran (a file named after it in
// the marker directory) and answers with what it was run as.
const show = `<?php
file_put_contents(getenv('MARKERS') . '/' . basename(__FILE__), '1', FILE_APPEND);
header('Content-Type: application/json');
echo json_encode([
	'script' => $_SERVER['SCRIPT_NAME'],
	'filename' => $_SERVER['SCRIPT_FILENAME'],
	'uri' => $_SERVER['REQUEST_URI'],
	'query' => $_SERVER['QUERY_STRING'],
	'path_info' => $_SERVER['PATH_INFO'] ?? '',
	'method' => $_SERVER['REQUEST_METHOD'],
	'get' => (object)$_GET,
]);
`

// download authorises a download and hands the file over to the server
// with the X-Accel-Redirect or X-Sendfile field its query names.
const download = `<?php
header('Content-Type: text/html');
header('Content-Disposition: attachment; filename="report.zip"');
header('Cache-Control: private, max-age=60');
if (isset($_GET['accel'])) header('X-Accel-Redirect: ' . $_GET['accel']);
if (isset($_GET['sendfile'])) header('X-Sendfile: ' . $_GET['sendfile']);
echo "the script's own body\n";
`

// ran is what show answers.
type ran struct {
	Script   string            `json:"script"`
	Filename string            `json:"filename"`
	URI      string            `json:"uri"`
	Query    string            `json:"query"`
	PathInfo string            `json:"path_info"`
	Method   string            `json:"method"`
	Get      map[string]string `json:"get"`
}

// site is a test site: its root, the marker directory its scripts
// write to, and the server.
type site struct {
	root, markers, outside, private string
	url, addr                       string
	big                             []byte
	log                             *sluicetest.Buffer // accel_redirect's
}

// writeTree writes files (name → content) under dir.
func writeTree(t *testing.T, dir string, tree map[string]string) {
	t.Helper()
	for name, content := range tree {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newSite writes the test site, starts a private PHP-FPM and serves the
// php shortcut over it (with opts' root, upstreams and no_exec filled
// in), followed by accel_redirect with the private directory as
// /protected/ and a sendfile directory when accel is set.
func newSite(t *testing.T, opts php.Options, accel bool) *site {
	t.Helper()
	base := t.TempDir()
	s := &site{root: filepath.Join(base, "www"), markers: filepath.Join(base, "markers"), outside: filepath.Join(base, "outside"),
		private: filepath.Join(base, "private")}
	s.big = bytes.Repeat([]byte("0123456789abcdef"), 10000) // 160 KB: sendfile
	writeTree(t, s.root, map[string]string{
		"index.php":                show,
		"info.php":                 show,
		"blog/index.php":           show,
		"docs/index.html":          "<p>docs</p>\n",
		"empty/keep.txt":           "kept\n",
		"static.txt":               "static text\n",
		"big.bin":                  string(s.big),
		".htaccess":                "Deny from all\n",
		".env":                     "DB_PASSWORD=secret\n",
		".git/config":              "[core]\n",
		".hidden/x.php":            show,
		"uploads/.htaccess":        "php_flag engine off\n",
		"uploads/evil.jpg":         show, // an image upload carrying PHP
		"uploads/shell.php":        show,
		"uploads/pic.png":          "\x89PNG\r\n",
		"download.php":             download,
		"SOURCE.PHP":               show,
		"page.phtml":               show,
		"lib/config.inc":           show,
		"uploads/evil.jpg.d/x.txt": "x\n",
	})
	writeTree(t, s.outside, map[string]string{"out.php": show, "secret.txt": "outside secret\n"})
	writeTree(t, s.private, map[string]string{"file.zip": string(s.big), "exports/e.csv": "a,b\n"})
	sluicetest.Backdate(t, s.private, time.Hour)
	if err := os.Mkdir(s.markers, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"link.php": "out.php", "secret.txt": "secret.txt", "outdir": ""} {
		if err := os.Symlink(filepath.Join(s.outside, target), filepath.Join(s.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	sluicetest.Backdate(t, s.root, time.Hour)
	fpm := fpmtest.Start(t, fpmtest.Options{Children: 2, Pool: map[string]string{"env[MARKERS]": s.markers}})
	opts.Root, opts.Upstreams, opts.MaxConns = s.root, []string{fpm.Addr()}, 2
	if opts.NoExec == nil {
		opts.NoExec = []string{"/uploads/"}
	}
	site, err := php.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })
	chain := pipe.Chain{site}
	if accel {
		var logger *slog.Logger
		logger, s.log = sluicetest.Logger()
		a, err := components.NewAccelRedirect(components.AccelRedirectOptions{
			Locations: map[string]string{"/protected/": s.private},
			Sendfile:  []string{filepath.Join(s.private, "exports")},
			Logger:    logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.(io.Closer).Close() })
		chain = append(chain, a)
	}
	srv := sluicetest.NewServer(t, pipe.Handler(chain))
	s.url, s.addr = srv.URL, srv.URL
	return s
}

// ran returns the scripts that ran so far, by marker name.
func (s *site) ran(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(s.markers)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		os.Remove(filepath.Join(s.markers, e.Name()))
	}
	return names
}

// get sends a raw request for target with method and returns the
// response and body.
func (s *site) do(t *testing.T, method, target string, fields ...string) (*http.Response, string) {
	t.Helper()
	raw := method + " " + target + " HTTP/1.1\r\nHost: example.com\r\n" + strings.Join(fields, "")
	if method == "POST" || method == "PUT" {
		raw += "Content-Length: 3\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\na=1"
	} else {
		raw += "\r\n"
	}
	return sluicetest.RoundTrip(t, s.addr, raw)
}

func decodeRan(t *testing.T, what, body string) ran {
	t.Helper()
	var r ran
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%s: not a script's answer: %v\n%s", what, err, body)
	}
	return r
}

// The three steps of the front-controller pattern, the split of
// PATH_INFO, the query kept.
func TestTrySteps(t *testing.T) {
	s := newSite(t, php.Options{}, false)
	scripts := []struct {
		method, target string
		want           ran
	}{
		// $path: a script.
		{"GET", "/info.php?x=1", ran{Script: "/info.php", URI: "/info.php?x=1", Query: "x=1", Method: "GET", Get: map[string]string{"x": "1"}}},
		// A script with PATH_INFO.
		{"GET", "/info.php/a/b%20c?y=2", ran{Script: "/info.php", URI: "/info.php/a/b%20c?y=2", Query: "y=2", PathInfo: "/a/b c", Method: "GET", Get: map[string]string{"y": "2"}}},
		// $path/: a directory's index script.
		{"GET", "/blog/", ran{Script: "/blog/index.php", URI: "/blog/", Method: "GET"}},
		{"GET", "/", ran{Script: "/index.php", URI: "/", Method: "GET"}},
		// /index.php: the front controller, the URI and query kept.
		{"GET", "/2024/05/hello-world/?replytocom=7", ran{Script: "/index.php", URI: "/2024/05/hello-world/?replytocom=7", Query: "replytocom=7", Method: "GET", Get: map[string]string{"replytocom": "7"}}},
		{"GET", "/pretty/permalink", ran{Script: "/index.php", URI: "/pretty/permalink", Method: "GET"}},
		{"POST", "/api/items?z=3", ran{Script: "/index.php", URI: "/api/items?z=3", Query: "z=3", Method: "POST", Get: map[string]string{"z": "3"}}},
		{"OPTIONS", "/api/items", ran{Script: "/index.php", URI: "/api/items", Method: "OPTIONS"}},
		// A missing file in the uploads goes to the front controller
		// (WordPress answers its own 404 page).
		{"GET", "/uploads/missing.jpg", ran{Script: "/index.php", URI: "/uploads/missing.jpg", Method: "GET"}},
		// A directory without an index: the front controller.
		{"GET", "/empty/", ran{Script: "/index.php", URI: "/empty/", Method: "GET"}},
		{"GET", "/empty", ran{Script: "/index.php", URI: "/empty", Method: "GET"}},
	}
	for _, tc := range scripts {
		resp, body := s.do(t, tc.method, tc.target)
		if resp.StatusCode != 200 {
			t.Errorf("%s %s: %d %q", tc.method, tc.target, resp.StatusCode, body)
			continue
		}
		got := decodeRan(t, tc.target, body)
		tc.want.Filename = filepath.Join(s.root, tc.want.Script)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", tc.method, tc.target, got, tc.want)
		}
	}
	s.ran(t)

	// Static files and directories, and what is not found: no script runs.
	for _, tc := range []struct {
		method, target string
		status         int
		body, location string
	}{
		{"GET", "/static.txt", 200, "static text\n", ""},
		{"HEAD", "/static.txt", 200, "", ""},
		{"POST", "/static.txt", 405, "", ""},
		{"GET", "/docs/", 200, "<p>docs</p>\n", ""},
		{"GET", "/docs", 301, "", "/docs/"},
		{"GET", "/blog", 301, "", "/blog/"},
		{"GET", "/blog?p=1", 301, "", "/blog/?p=1"},
		{"HEAD", "/blog", 301, "", "/blog/"},
		{"POST", "/blog", 308, "", "/blog/"},
		{"GET", "/missing.php", 404, "", ""},
		{"GET", "/missing.php/x", 404, "", ""},
		{"GET", "/blog/missing.php", 404, "", ""},
		{"POST", "/missing.php", 404, "", ""},
	} {
		resp, body := s.do(t, tc.method, tc.target)
		if resp.StatusCode != tc.status || tc.body != "" && body != tc.body || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s %s: %d %q Location %q; want %d %q %q", tc.method, tc.target, resp.StatusCode, body, resp.Header.Get("Location"), tc.status, tc.body, tc.location)
		}
	}
	if r := s.ran(t); len(r) != 0 {
		t.Errorf("scripts ran for static files and missing scripts: %v", r)
	}
}

// Without a front controller, a missing path is 404.
func TestTryWithoutFrontController(t *testing.T) {
	s := newSite(t, php.Options{Try: []string{"$path", "$path/"}}, false)
	if resp, body := s.do(t, "GET", "/pretty/permalink"); resp.StatusCode != 404 {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	if resp, body := s.do(t, "GET", "/blog/"); resp.StatusCode != 200 || decodeRan(t, "/blog/", body).Script != "/blog/index.php" {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	if r := s.ran(t); len(r) != 1 {
		t.Errorf("ran %v, want index.php once", r)
	}
}

// Static files are files': validators, ranges, conditional requests.
func TestStaticFile(t *testing.T) {
	s := newSite(t, php.Options{}, false)
	resp, body := s.do(t, "GET", "/big.bin")
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || body != string(s.big) || etag == "" || resp.Header.Get("Last-Modified") == "" || resp.Header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("%d, %d bytes, %v", resp.StatusCode, len(body), resp.Header)
	}
	resp, body = s.do(t, "GET", "/big.bin", "Range: bytes=10-19\r\n")
	if resp.StatusCode != 206 || body != string(s.big[10:20]) || resp.Header.Get("Content-Range") != "bytes 10-19/160000" {
		t.Errorf("range: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Range"), body)
	}
	resp, body = s.do(t, "GET", "/big.bin", "If-None-Match: "+etag+"\r\n")
	if resp.StatusCode != 304 || body != "" {
		t.Errorf("If-None-Match: %d %q", resp.StatusCode, body)
	}
	// A file in the uploads is served, not run.
	resp, body = s.do(t, "GET", "/uploads/pic.png")
	if resp.StatusCode != 200 || body != "\x89PNG\r\n" || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("upload: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if r := s.ran(t); len(r) != 0 {
		t.Errorf("scripts ran: %v", r)
	}
}

// Dotfiles are refused, 404 by default and 403 with dotfiles: deny;
// .well-known is not a dotfile.
func TestDotfiles(t *testing.T) {
	paths := []string{"/.htaccess", "/.env", "/.git/config", "/.git/", "/.git", "/uploads/.htaccess", "/.hidden/x.php", "/.hidden/x.php/y", "/.missing", "/blog/.missing.php"}
	for _, deny := range []bool{false, true} {
		opts, want := php.Options{}, 404
		if deny {
			opts.Dotfiles, want = "deny", 403
		}
		s := newSite(t, opts, false)
		writeTree(t, s.root, map[string]string{".well-known/acme-challenge/tok": "token\n"})
		for _, p := range paths {
			for _, method := range []string{"GET", "POST"} {
				resp, body := s.do(t, method, p)
				if resp.StatusCode != want || strings.Contains(body, "secret") || strings.Contains(body, "Deny") || strings.Contains(body, "<?php") {
					t.Errorf("dotfiles deny=%v: %s %s: %d %q, want %d", deny, method, p, resp.StatusCode, body, want)
				}
			}
		}
		if resp, body := s.do(t, "GET", "/.well-known/acme-challenge/tok"); resp.StatusCode != 200 || body != "token\n" {
			t.Errorf(".well-known: %d %q", resp.StatusCode, body)
		}
		if r := s.ran(t); len(r) != 0 {
			t.Errorf("scripts ran: %v", r)
		}
	}
}

// A PHP file is never sent as text, and the uploads never run a script.
func TestSourceNeverServed(t *testing.T) {
	s := newSite(t, php.Options{}, false)
	for _, tc := range []struct {
		target string
		status int
	}{
		{"/SOURCE.PHP", 404}, // not a .php script name, and PHP source
		{"/page.phtml", 404},
		{"/lib/config.inc", 404},
		{"/uploads/shell.php", 403},
		{"/uploads/shell.php/x", 403},
		{"/uploads/sub/../shell.php", 403},
	} {
		for _, method := range []string{"GET", "HEAD", "POST"} {
			resp, body := s.do(t, method, tc.target)
			if resp.StatusCode != tc.status || strings.Contains(body, "<?php") {
				t.Errorf("%s %s: %d %q, want %d", method, tc.target, resp.StatusCode, body, tc.status)
			}
		}
	}
	if r := s.ran(t); len(r) != 0 {
		t.Errorf("scripts ran: %v", r)
	}
}

// Every spelling of a path that should run nothing runs nothing: an
// image with a .php path after it, encoded newlines and NULs, PATH_INFO
// with a newline (CVE-2019-11043), climbing out of the root, symbolic
// links out of it.
func TestNothingRuns(t *testing.T) {
	// Each spelling runs nothing whether or not the uploads are no_exec:
	// the script checks alone refuse them.
	spellings := []string{
		"/uploads/evil.jpg/x.php",
		"/uploads/evil.jpg/.php",
		"/uploads/evil.jpg/index.php",
		"/uploads/evil.jpg%0a.php",
		"/uploads/evil.jpg%0A.php",
		"/uploads/evil.jpg%0d.php",
		"/uploads/evil.jpg%20.php",
		"/uploads/evil.jpg%00.php",
		"/uploads/evil.jpg%5c.php",
		"/uploads/evil.jpg;.php",
		"/uploads/evil.jpg.php",
		"/uploads/evil.jpg.d/x.php",
		"/x.php%00.jpg",
		"/info.php%00.jpg",
		"/info.php%0a",
		"/index.php/%0a",
		"/index.php/a%0ab",
		"/index.php/a%0d%0aX-Injected:%201",
		"/index.php%0a/x",
		"/blog/index.php/%0a?a=%0a",
		"/%2e%2e/outside/out.php",
		"/..%2f..%2foutside/out.php",
		"/uploads/%2e%2e/%2e%2e/outside/out.php",
		"/link.php",
		"/link.php/x",
		"/outdir/out.php",
		"/SOURCE.PHP",
		"/page.phtml",
		"/.hidden/x.php",
	}
	// These name a real script that no_exec forbids.
	noExec := []string{
		"/uploads/shell.php",
		"/uploads/shell.php/x.php",
		"/uploads//shell.php",
		"/uploads/./shell.php",
		"/x/../uploads/shell.php",
		"/uploads%2fshell.php",
	}
	for _, uploadsNoExec := range []bool{true, false} {
		opts, targets := php.Options{Options: fastcgi.Options{NoExec: []string{}}}, spellings
		if uploadsNoExec {
			opts.NoExec, targets = []string{"/uploads/"}, append(noExec, spellings...)
		}
		s := newSite(t, opts, false)
		for _, target := range targets {
			for _, method := range []string{"GET", "POST"} {
				resp, body := s.do(t, method, target)
				if resp.StatusCode < 400 || strings.Contains(body, "<?php") {
					t.Errorf("no_exec %v: %s %s: %d %q", uploadsNoExec, method, target, resp.StatusCode, body)
				}
			}
		}
		if r := s.ran(t); len(r) != 0 {
			t.Errorf("no_exec %v: scripts ran: %v", uploadsNoExec, r)
		}
		if uploadsNoExec {
			continue
		}
		// Without no_exec the real script in the uploads runs: the test
		// could fail.
		if resp, body := s.do(t, "GET", "/uploads/shell.php"); resp.StatusCode != 200 {
			t.Fatalf("/uploads/shell.php without no_exec: %d %q", resp.StatusCode, body)
		}
		if r := s.ran(t); len(r) != 1 || r[0] != "shell.php" {
			t.Errorf("without no_exec, /uploads/shell.php ran %v", r)
		}
	}
	s := newSite(t, php.Options{}, false)
	// The static symbolic link out of the root is not followed either:
	// the path is missing, so the front controller answers it.
	if resp, body := s.do(t, "GET", "/secret.txt"); strings.Contains(body, "outside secret") || decodeRan(t, "/secret.txt", body).Script != "/index.php" {
		t.Errorf("/secret.txt: %d %q", resp.StatusCode, body)
	}
	s.ran(t)
	// The markers work: the test could fail.
	if resp, body := s.do(t, "GET", "/info.php"); resp.StatusCode != 200 {
		t.Fatalf("/info.php: %d %q", resp.StatusCode, body)
	}
	if r := s.ran(t); len(r) != 1 || r[0] != "info.php" {
		t.Errorf("after /info.php, ran %v", r)
	}
}

func TestOptions(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		opts php.Options
		want string
	}{
		{php.Options{Dotfiles: "allow"}, `dotfiles "allow"`},
		{php.Options{Try: []string{}}, "empty list"},
		{php.Options{Try: []string{"$path", "/index.html"}}, `try "/index.html"`},
		{php.Options{Try: []string{"$uri"}}, `try "$uri"`},
		{php.Options{Try: []string{"/../index.php"}}, `try "/../index.php"`},
		{php.Options{Try: []string{"/index.php?q=$path"}}, "try"},
		{php.Options{Options: fastcgi.Options{Script: "index.php"}}, "script"},
		{php.Options{Static: php.StaticOptions{Index: []string{"index.PHP"}}}, "PHP source"},
		{php.Options{Static: php.StaticOptions{Immutable: true}}, "immutable needs max_age"},
	} {
		tc.opts.Root, tc.opts.Upstreams = root, []string{"unix:/nonexistent.sock"}
		_, err := php.New(tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// A script hands a download over with X-Accel-Redirect or X-Sendfile:
// the file is served with its validators, ranges and the client's
// conditionals; anything outside the roots is refused and logged.
func TestAccelRedirect(t *testing.T) {
	s := newSite(t, php.Options{}, true)
	q := func(field, v string) string { return "/download.php?" + field + "=" + url.QueryEscape(v) }
	resp, body := s.do(t, "GET", q("accel", "/protected/file.zip"))
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || body != string(s.big) || etag == "" {
		t.Fatalf("%d, %d bytes, %v", resp.StatusCode, len(body), resp.Header)
	}
	for name, want := range map[string]string{
		"Content-Type":        "application/zip",
		"Content-Disposition": `attachment; filename="report.zip"`,
		"Cache-Control":       "private, max-age=60",
		"X-Accel-Redirect":    "",
		"X-Sendfile":          "",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	resp, body = s.do(t, "GET", q("accel", "/protected/file.zip"), "Range: bytes=1000-1009\r\n")
	if resp.StatusCode != 206 || body != string(s.big[1000:1010]) || resp.Header.Get("Content-Range") != "bytes 1000-1009/160000" {
		t.Errorf("range: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Range"), body)
	}
	resp, body = s.do(t, "GET", q("accel", "/protected/file.zip"), "If-None-Match: "+etag+"\r\n")
	if resp.StatusCode != 304 || body != "" {
		t.Errorf("If-None-Match: %d %q", resp.StatusCode, body)
	}
	resp, body = s.do(t, "GET", q("sendfile", filepath.Join(s.private, "exports", "e.csv")))
	if resp.StatusCode != 200 || body != "a,b\n" {
		t.Errorf("X-Sendfile: %d %q", resp.StatusCode, body)
	}
	if s.log.String() != "" {
		t.Errorf("logged: %s", s.log)
	}

	refused := []struct{ field, value string }{
		{"accel", "/elsewhere/file.zip"},
		{"accel", "/protected/../www/index.php"},
		{"accel", "/protected/%2e%2e/www/index.php"},
		{"accel", "/protected/..%2fwww%2findex.php"},
		{"accel", "/protected/exports/../../outside/secret.txt"},
		{"accel", "/protected//file.zip"},
		{"accel", "/protected/./file.zip"},
		{"accel", "/protected/file.zip%00"},
		{"accel", "/protected/"},
		{"sendfile", filepath.Join(s.outside, "secret.txt")},
		{"sendfile", filepath.Join(s.private, "file.zip")}, // not under the sendfile directory
		{"sendfile", s.private + "/exports/../file.zip"},
		{"sendfile", "/etc/passwd"},
	}
	for _, tc := range refused {
		resp, body := s.do(t, "GET", q(tc.field, tc.value))
		if resp.StatusCode != 404 || strings.Contains(body, "secret") || strings.Contains(body, "script's own") || strings.Contains(body, "<?php") ||
			resp.Header.Get("X-Accel-Redirect") != "" || resp.Header.Get("X-Sendfile") != "" {
			t.Errorf("%s %q: %d %q %v", tc.field, tc.value, resp.StatusCode, body, resp.Header)
		}
	}
	if n := strings.Count(s.log.String(), "accel_redirect: refused"); n != len(refused) {
		t.Errorf("%d refusals logged, want %d:\n%s", n, len(refused), s.log)
	}
	// Without the field the script's answer is its own.
	resp, body = s.do(t, "GET", "/download.php")
	if resp.StatusCode != 200 || body != "the script's own body\n" {
		t.Errorf("no field: %d %q", resp.StatusCode, body)
	}
}

// TestLocalRedirect: a script's local redirect (a Location path without
// Status) runs the php shortcut's try logic again for the new path: a
// static file is served, a pretty permalink goes to the front
// controller, a dotfile stays refused.
func TestLocalRedirect(t *testing.T) {
	s := newSite(t, php.Options{}, false)
	writeTree(t, s.root, map[string]string{"go.php": `<?php header('Location: ' . $_GET['to'], true, 200); echo "dropped";`})
	if resp, body := sluicetest.Get(t, s.url+"/go.php?to=/static.txt"); resp.StatusCode != 200 || body != "static text\n" {
		t.Errorf("to a static file: got %d %q", resp.StatusCode, body)
	}
	resp, body := sluicetest.Get(t, s.url+"/go.php?to=/pretty/permalink%3Fp=1")
	var got ran
	if err := json.Unmarshal([]byte(body), &got); resp.StatusCode != 200 || err != nil || got.Script != "/index.php" || got.URI != "/pretty/permalink?p=1" || got.Get["p"] != "1" {
		t.Errorf("to a permalink: got %d %q", resp.StatusCode, body)
	}
	if resp, body := sluicetest.Get(t, s.url+"/go.php?to=/.env"); resp.StatusCode != 404 || strings.Contains(body, "secret") {
		t.Errorf("to a dotfile: got %d %q", resp.StatusCode, body)
	}
}
