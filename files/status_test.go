package files_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
)

// statusSite is the tree of TestStatuses: a 1000-byte text file with
// precompressed variants, a directory with and without an index, and
// dotfiles.
func statusSite(t *testing.T) (dir string, body string) {
	dir = t.TempDir()
	body = strings.Repeat("0123456789", 100)
	writeFiles(t, dir, map[string]string{
		"f.txt":       body,
		"f.txt.gz":    "gzip bytes",
		"index.html":  indexHTML,
		"d/index.htm": "htm index",
		"list/a.txt":  "a",
		".env":        "SECRET",
	})
	// The variant must not be older than the original.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "f.txt"), old, old)
	return dir, body
}

// Every status the Server answers with, over a real socket, with the
// header fields that go with it.
func TestStatuses(t *testing.T) {
	dir, body := statusSite(t)
	base := serveDir(t, dir, files.Options{Index: []string{"index.html", "index.htm"}, Dotfiles: files.DotfilesDeny, Browse: false})
	resp, _ := get(t, "GET", base+"/f.txt")
	etag, lastMod := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if etag == "" || lastMod == "" {
		t.Fatalf("no validators: %v", resp.Header)
	}
	type want struct {
		status int
		body   string            // exact body, or "" to skip
		fields map[string]string // "" value: the field must be absent
	}
	tests := []struct {
		method, path string
		fields       []string
		want         want
	}{
		{"GET", "/f.txt", nil, want{200, body, map[string]string{
			"Content-Type": "text/plain; charset=utf-8", "Content-Length": "1000", "Accept-Ranges": "bytes",
			"ETag": etag, "Last-Modified": lastMod, "Vary": "Accept-Encoding", "Content-Encoding": ""}}},
		{"HEAD", "/f.txt", nil, want{200, "", map[string]string{"Content-Length": "1000", "ETag": etag}}},
		{"GET", "/f.txt", []string{"Accept-Encoding", "gzip"}, want{200, "gzip bytes", map[string]string{
			"Content-Encoding": "gzip", "Content-Length": "10", "Vary": "Accept-Encoding", "Content-Type": "text/plain; charset=utf-8"}}},
		{"GET", "/d/", nil, want{200, "htm index", nil}},
		{"GET", "/f.txt", []string{"Range", "bytes=10-19"}, want{206, "0123456789", map[string]string{
			"Content-Range": "bytes 10-19/1000", "Content-Length": "10", "ETag": etag}}},
		{"GET", "/d", nil, want{301, "", map[string]string{"Location": "/d/"}}},
		{"GET", "/f.txt", []string{"If-None-Match", etag}, want{304, "", map[string]string{
			"ETag": etag, "Vary": "Accept-Encoding", "Last-Modified": "", "Content-Length": ""}}},
		{"GET", "/f.txt", []string{"If-Modified-Since", lastMod}, want{304, "", nil}},
		{"GET", "/.env", nil, want{403, "", map[string]string{"Content-Type": "text/plain; charset=utf-8"}}},
		{"GET", "/missing", nil, want{404, "404 Not Found: no such file\n", map[string]string{"X-Content-Type-Options": "nosniff"}}},
		{"GET", "/list/", nil, want{404, "", nil}},
		{"GET", "/f.txt/", nil, want{404, "", nil}},
		{"POST", "/f.txt", nil, want{405, "", map[string]string{"Allow": "GET, HEAD, OPTIONS"}}},
		{"DELETE", "/", nil, want{405, "", map[string]string{"Allow": "GET, HEAD, OPTIONS"}}},
		{"OPTIONS", "/f.txt", nil, want{204, "", map[string]string{"Allow": "GET, HEAD, OPTIONS", "Content-Length": ""}}},
		{"GET", "/f.txt", []string{"If-Match", `"other"`}, want{412, "", nil}},
		{"GET", "/f.txt", []string{"If-Unmodified-Since", "Sat, 29 Oct 1994 19:43:31 GMT"}, want{412, "", nil}},
		{"GET", "/f.txt", []string{"Range", "bytes=1000-"}, want{416, "", map[string]string{"Content-Range": "bytes */1000"}}},
	}
	for _, tt := range tests {
		resp, got := get(t, tt.method, base+tt.path, tt.fields...)
		name := tt.method + " " + tt.path + " " + strings.Join(tt.fields, ": ")
		if resp.StatusCode != tt.want.status {
			t.Errorf("%s = %d, want %d", name, resp.StatusCode, tt.want.status)
			continue
		}
		if tt.want.body != "" && got != tt.want.body {
			t.Errorf("%s: body %q, want %q", name, got, tt.want.body)
		}
		if (tt.method == "HEAD" || tt.want.status == 304 || tt.want.status == 204 || tt.want.status == 301) && got != "" {
			t.Errorf("%s: body %q, want none", name, got)
		}
		for k, v := range tt.want.fields {
			var have string
			if vs := resp.Header.Values(k); len(vs) > 0 {
				have = strings.Join(vs, ", ")
			} else if k == "Content-Length" && resp.ContentLength >= 0 && resp.StatusCode != 304 && resp.StatusCode != 204 {
				have = strconv.FormatInt(resp.ContentLength, 10)
			}
			if have != v {
				t.Errorf("%s: %s = %q, want %q", name, k, have, v)
			}
		}
	}
}

// HTTP/1.0 and keep-alive: a 206 and a 304 leave the connection usable.
func TestStatusesKeepAlive(t *testing.T) {
	dir, _ := statusSite(t)
	addr := hostOf(serveDir(t, dir, files.Options{}))
	raw := exchange(t, addr, "GET /f.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=0-1\r\n\r\n"+
		"GET /f.txt HTTP/1.1\r\nHost: a\r\nIf-None-Match: *\r\n\r\n"+
		"GET /f.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=-2\r\nConnection: close\r\n\r\n")
	for _, want := range []string{"HTTP/1.1 206 Partial Content\r\n", "\r\n\r\n01HTTP/1.1 304 Not Modified\r\n", "\r\n\r\n89"} {
		if !strings.Contains(raw, want) {
			t.Errorf("responses lack %q:\n%s", want, raw)
		}
	}
	if !strings.HasSuffix(raw, "\r\n\r\n89") {
		t.Errorf("responses end %q", raw[max(0, len(raw)-20):])
	}
}

// A file the server may not read is 403, not 404 and not 500. The test
// runs the server as an unprivileged user when it runs as root (root
// reads every file).
func TestPermissionDenied(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"secret.txt": "secret", "open.txt": "open", "closed/x.txt": "x"})
	os.Chmod(filepath.Join(dir, "secret.txt"), 0o000)
	os.Chmod(filepath.Join(dir, "closed"), 0o000)
	base := serveAsNobody(t, dir)
	for path, want := range map[string]int{"/secret.txt": 403, "/closed/x.txt": 403, "/open.txt": 200} {
		resp, body := get(t, "GET", base+path)
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d %q, want %d", path, resp.StatusCode, body, want)
		}
	}
}
