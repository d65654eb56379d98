package files_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

func TestCacheControl(t *testing.T) {
	dir := site(t)
	for _, tt := range []struct {
		opts         files.Options
		cc           string
		expiresAfter time.Duration // 0: no Expires
	}{
		{files.Options{}, "", 0},
		{files.Options{MaxAge: time.Hour}, "max-age=3600", time.Hour},
		{files.Options{MaxAge: 365 * 24 * time.Hour, Immutable: true}, "max-age=31536000, immutable", 365 * 24 * time.Hour},
		{files.Options{NoCache: true}, "no-cache", 0},
	} {
		base := serveDir(t, dir, tt.opts)
		for _, fields := range [][]string{nil, {"If-None-Match", "*"}, {"Range", "bytes=0-1"}} {
			resp, _ := sluicetest.Get(t, base+"/hello.txt", fields...)
			if got := resp.Header.Get("Cache-Control"); got != tt.cc {
				t.Errorf("%+v, %q: Cache-Control %q, want %q", tt.opts, fields, got, tt.cc)
			}
			exp := resp.Header.Get("Expires")
			if tt.expiresAfter == 0 {
				if exp != "" {
					t.Errorf("%+v: Expires %q, want none", tt.opts, exp)
				}
				continue
			}
			et, err := http.ParseTime(exp)
			date, _ := http.ParseTime(resp.Header.Get("Date"))
			if d := et.Sub(date) - tt.expiresAfter; err != nil || d < -2*time.Second || d > 2*time.Second {
				t.Errorf("%+v: Expires %q with Date %q", tt.opts, exp, resp.Header.Get("Date"))
			}
		}
		// Errors are not cached for long.
		if resp, _ := sluicetest.Get(t, base+"/missing"); resp.Header.Get("Cache-Control") != "" {
			t.Errorf("%+v: 404 has Cache-Control %q", tt.opts, resp.Header.Get("Cache-Control"))
		}
	}
}

func TestOptionErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		opts files.Options
		want string
	}{
		{files.Options{Dotfiles: "show"}, `dotfiles "show"`},
		{files.Options{Precompressed: []string{"lzma"}}, `unknown precompressed coding "lzma"`},
		{files.Options{Precompressed: []string{"br", "br"}}, "listed twice"},
		{files.Options{Index: []string{"../x"}}, "plain file name"},
		{files.Options{Types: map[string]string{"md": "text/markdown"}}, `".ext"`},
		{files.Options{Types: map[string]string{".md": "markdown"}}, "not a media type"},
		{files.Options{NoCache: true, MaxAge: time.Hour}, "exclude each other"},
		{files.Options{Immutable: true}, "immutable needs max_age"},
		{files.Options{MaxAge: -time.Second}, "negative"},
		{files.Options{MaxAge: 1500 * time.Millisecond}, "max_age 1.5s is not a whole number of seconds"},
		{files.Options{StripPrefix: "static"}, "strip_prefix"},
		{files.Options{StripPrefix: "/static/"}, "strip_prefix"},
		{files.Options{MaxRanges: -1}, "max_ranges"},
	} {
		s, err := files.New(dir, tt.opts)
		if err == nil {
			s.Close()
			t.Errorf("New(%+v) succeeded", tt.opts)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "files: ") {
			t.Errorf("New(%+v) = %q, want an error with %q", tt.opts, err, tt.want)
		}
	}
}

func TestTypesAndNoSniff(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.md": "# a", "b.csv": "1,2", "c.odt": "odt", "d.weird": "w", "e.HTML": "<p>"})
	base := serveDir(t, dir, files.Options{
		Types:   map[string]string{".md": "text/x-markdown", ".WEIRD": "application/x-weird", ".csv": "text/csv; charset=iso-8859-1"},
		NoSniff: true,
	})
	want := map[string]string{
		"/a.md":    "text/x-markdown; charset=utf-8", // overridden, charset added
		"/b.csv":   "text/csv; charset=iso-8859-1",   // a charset given is kept
		"/d.weird": "application/x-weird",            // extensions case-insensitive
		"/e.HTML":  "text/html; charset=utf-8",
	}
	if _, err := os.Stat("/etc/mime.types"); err == nil {
		want["/c.odt"] = "application/vnd.oasis.opendocument.text" // from /etc/mime.types
	}
	for path, ctype := range want {
		resp, _ := sluicetest.Get(t, base+path)
		if resp.Header.Get("Content-Type") != ctype || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: Content-Type %q, X-Content-Type-Options %q; want %q, nosniff",
				path, resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"), ctype)
		}
	}
}

func TestIndexList(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a/index.htm": "htm", "a/default.txt": "txt", "b/default.txt": "b txt", "c/x": "x"})
	os.Mkdir(filepath.Join(dir, "a", "index.html"), 0o755) // a directory is not an index file
	base := serveDir(t, dir, files.Options{Index: []string{"index.html", "index.htm", "default.txt"}})
	for path, want := range map[string]string{"/a/": "200 htm", "/b/": "200 b txt", "/c/": "404 "} {
		resp, body := sluicetest.Get(t, base+path)
		if got := strings.SplitN(resp.Status, " ", 2)[0] + " " + strings.TrimPrefix(body, "404 Not Found: no such file\n"); got != want {
			t.Errorf("GET %s = %q, want %q", path, got, want)
		}
	}
	base = serveDir(t, dir, files.Options{Index: []string{}})
	if resp, _ := sluicetest.Get(t, base+"/a/"); resp.StatusCode != 404 {
		t.Errorf("no index files: GET /a/ = %d", resp.StatusCode)
	}
}

func TestStripPrefix(t *testing.T) {
	dir := site(t)
	base := serveDir(t, dir, files.Options{StripPrefix: "/static"})
	for path, want := range map[string]int{
		"/static/hello.txt": 200, "/static/": 200, "/static/sub/": 200,
		"/hello.txt": 404, "/staticx/hello.txt": 404, "/static.txt": 404,
	} {
		if resp, _ := sluicetest.Get(t, base+path); resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
	for path, loc := range map[string]string{"/static": "/static/", "/static/sub?q=1": "/static/sub/?q=1"} {
		if resp, _ := sluicetest.Get(t, base+path); resp.StatusCode != 301 || resp.Header.Get("Location") != loc {
			t.Errorf("GET %s = %d Location %q, want 301 %q", path, resp.StatusCode, resp.Header.Get("Location"), loc)
		}
	}
}

func TestDotfilesPolicies(t *testing.T) {
	dir := site(t)
	for policy, want := range map[string][3]int{
		"":                  {404, 404, 200},
		files.DotfilesHide:  {404, 404, 200},
		files.DotfilesDeny:  {403, 403, 200},
		files.DotfilesAllow: {200, 200, 200},
	} {
		base := serveDir(t, dir, files.Options{Dotfiles: policy})
		for i, path := range []string{"/.env", "/.git/config", "/.well-known/security.txt"} {
			if resp, _ := sluicetest.Get(t, base+path); resp.StatusCode != want[i] {
				t.Errorf("Dotfiles %q: GET %s = %d, want %d", policy, path, resp.StatusCode, want[i])
			}
		}
		// The engine makes the path canonical before files sees it:
		// /.well-known/../.env is /.env, answered by the policy for /.env,
		// never let through as if it were under /.well-known/.
		raw := sluicetest.Exchange(t, hostOf(base), "GET /.well-known/../.env HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		if want := fmt.Sprintf("HTTP/1.1 %d ", want[0]); !strings.HasPrefix(raw, want) {
			t.Errorf("Dotfiles %q: GET /.well-known/../.env = %.40q, want %q as for /.env", policy, raw, want)
		}
	}
}

// FollowSymlinks serves links that leave the root; without it they are
// 404.
func TestFollowSymlinks(t *testing.T) {
	outer := t.TempDir()
	writeFiles(t, outer, map[string]string{"outside/shared.txt": "shared", "root/in.txt": "in"})
	root := filepath.Join(outer, "root")
	os.Symlink("../outside/shared.txt", filepath.Join(root, "rel.txt"))
	os.Symlink(filepath.Join(outer, "outside"), filepath.Join(root, "absdir"))
	for _, follow := range []bool{false, true} {
		base := serveDir(t, root, files.Options{FollowSymlinks: follow})
		for _, path := range []string{"/rel.txt", "/absdir/shared.txt"} {
			resp, body := sluicetest.Get(t, base+path)
			if follow && (resp.StatusCode != 200 || body != "shared") || !follow && resp.StatusCode != 404 {
				t.Errorf("FollowSymlinks %v: GET %s = %d %q", follow, path, resp.StatusCode, body)
			}
		}
		// Path checks still apply.
		raw := sluicetest.Exchange(t, hostOf(base), "GET /../outside/shared.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		if strings.Contains(raw, "\r\n\r\nshared") {
			t.Errorf("FollowSymlinks %v: .. served a file outside the root", follow)
		}
	}
}

// SharedBy divides the cache budgets left to their defaults among n
// processes, and leaves those set alone.
func TestOptionsSharedBy(t *testing.T) {
	got := files.Options{MaxEntries: 7}.SharedBy(4)
	want := files.Options{MaxMemBytes: files.DefaultMaxMemBytes / 4, MaxOpenFiles: files.DefaultMaxOpenFiles / 4, MaxEntries: 7}
	if got.MaxMemBytes != want.MaxMemBytes || got.MaxOpenFiles != want.MaxOpenFiles || got.MaxEntries != want.MaxEntries {
		t.Errorf("SharedBy(4) = %d, %d, %d; want %d, %d, %d", got.MaxMemBytes, got.MaxOpenFiles, got.MaxEntries,
			want.MaxMemBytes, want.MaxOpenFiles, want.MaxEntries)
	}
	if got := (files.Options{}).SharedBy(1); got.MaxMemBytes != 0 || got.MaxOpenFiles != 0 || got.MaxEntries != 0 {
		t.Errorf("SharedBy(1) changed the zero budgets: %+v", got)
	}
	if got := (files.Options{}).SharedBy(1 << 20); got.MaxOpenFiles != 1 || got.MaxEntries != 1 {
		t.Errorf("SharedBy(1<<20): %d open files, %d entries; want at least 1 each", got.MaxOpenFiles, got.MaxEntries)
	}
}
