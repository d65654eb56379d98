package files_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
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
		"wed.txt":     body,
	})
	// The variant must not be older than the original.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "f.txt"), old, old)
	// Modified on a Wednesday: its Last-Modified starts with a W, as a
	// weak entity tag does.
	os.Chtimes(filepath.Join(dir, "wed.txt"), wednesday, wednesday)
	return dir, body
}

var wednesday = time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)

// Every status the Server answers with, over a real socket, with the
// header fields that go with it.
func TestStatuses(t *testing.T) {
	dir, body := statusSite(t)
	base := serveDir(t, dir, files.Options{Index: []string{"index.html", "index.htm"}, Dotfiles: files.DotfilesDeny, Browse: false})
	resp, _ := sluicetest.Get(t, base+"/f.txt")
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
		// An error about the gzip variant is plain text, not gzip.
		{"GET", "/f.txt", []string{"Accept-Encoding", "gzip", "If-Match", `"other"`}, want{412, "412 Precondition Failed: precondition failed\n", map[string]string{
			"Content-Encoding": "", "Vary": "Accept-Encoding"}}},
		{"GET", "/f.txt", []string{"Accept-Encoding", "gzip", "Range", "bytes=99-"}, want{416, "", map[string]string{
			"Content-Encoding": "", "Content-Range": "bytes */10"}}},
		// If-Range with a date on a Wednesday is a date, not a weak tag.
		{"GET", "/wed.txt", []string{"Range", "bytes=0-1", "If-Range", "Wed, 21 Oct 2015 07:28:00 GMT"}, want{206, "01", nil}},
		{"GET", "/wed.txt", []string{"Range", "bytes=0-1", "If-Range", "Wednesday, 21-Oct-15 07:28:00 GMT"}, want{206, "01", nil}},
		{"GET", "/wed.txt", []string{"Range", "bytes=0-1", "If-Range", "Wed, 21 Oct 2015 07:28:01 GMT"}, want{200, body, nil}},
		{"GET", "/wed.txt", []string{"Range", "bytes=0-1", "If-Range", `W/"weak"`}, want{200, body, nil}},
		// HEAD has the GET's fields, Content-Length: 0 of a redirect too.
		{"HEAD", "/d", nil, want{301, "", map[string]string{"Location": "/d/", "Content-Length": "0"}}},
		// A final "." segment leaves a slash (RFC 3986 §5.2.4): no file.
		{"GET", "/f.txt/.", nil, want{404, "", nil}},
	}
	for _, tt := range tests {
		resp, got := sluicetest.Send(t, tt.method, base+tt.path, tt.fields...)
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
	raw := sluicetest.Exchange(t, addr, "GET /f.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=0-1\r\n\r\n"+
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
		resp, body := sluicetest.Get(t, base+path)
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d %q, want %d", path, resp.StatusCode, body, want)
		}
	}
}

// A file too large to hold in memory that the server may not read is 403
// for HEAD and conditional requests too, as for GET; an unreadable
// precompressed variant is not offered, and the readable original is
// served instead.
func TestPermissionDeniedLargeFiles(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", 100<<10) // over MaxMemFile
	writeFiles(t, dir, map[string]string{"big.bin": big, "open.txt": big, "open.txt.gz": big})
	os.Chmod(filepath.Join(dir, "big.bin"), 0o000)
	os.Chmod(filepath.Join(dir, "open.txt.gz"), 0o000)
	base := serveAsNobody(t, dir)
	for _, tt := range []struct {
		method, path string
		fields       []string
		want         int
	}{
		{"GET", "/big.bin", nil, 403},
		{"HEAD", "/big.bin", nil, 403},
		{"GET", "/big.bin", []string{"If-None-Match", "*"}, 403},
		{"GET", "/big.bin", []string{"Range", "bytes=0-1"}, 403},
		{"GET", "/open.txt", []string{"Accept-Encoding", "gzip"}, 200},
		{"HEAD", "/open.txt", []string{"Accept-Encoding", "gzip"}, 200},
	} {
		resp, body := sluicetest.Send(t, tt.method, base+tt.path, tt.fields...)
		if resp.StatusCode != tt.want || resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s %s %v = %d (Content-Encoding %q), want %d", tt.method, tt.path, tt.fields, resp.StatusCode, resp.Header.Get("Content-Encoding"), tt.want)
		}
		if tt.method == "GET" && tt.want == 200 && body != big {
			t.Errorf("%s %s: %d bytes, want the file's %d", tt.method, tt.path, len(body), len(big))
		}
	}
}

// Repeated field lines of a list-valued field are one list (RFC 9110
// §5.3); a singleton field sent twice is invalid and ignored (§13.1.3).
func TestRepeatedFieldLines(t *testing.T) {
	dir, _ := statusSite(t)
	base := serveDir(t, dir, files.Options{})
	resp, _ := sluicetest.Get(t, base+"/f.txt")
	etag, lastMod := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	addr := hostOf(base)
	tests := []struct {
		fields string
		want   string // the start of the response
	}{
		{"If-None-Match: \"x\"\r\nIf-None-Match: " + etag + "\r\n", "HTTP/1.1 304 "},
		{"If-Match: \"x\"\r\nIf-Match: " + etag + "\r\n", "HTTP/1.1 200 "},
		{"If-Match: \"x\"\r\nIf-Match: \"y\"\r\n", "HTTP/1.1 412 "},
		{"If-Modified-Since: " + lastMod + "\r\nIf-Modified-Since: " + lastMod + "\r\n", "HTTP/1.1 200 "},
		{"Range: bytes=0-1\r\nRange: bytes=2-3\r\n", "HTTP/1.1 200 "},
	}
	for _, tt := range tests {
		raw := sluicetest.Exchange(t, addr, "GET /f.txt HTTP/1.1\r\nHost: a\r\n"+tt.fields+"Connection: close\r\n\r\n")
		if !strings.HasPrefix(raw, tt.want) {
			t.Errorf("%q: got %q, want %q...", tt.fields, raw[:min(len(raw), 40)], tt.want)
		}
	}
	raw := sluicetest.Exchange(t, addr, "GET /f.txt HTTP/1.1\r\nHost: a\r\nAccept-Encoding: identity;q=0.1\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n")
	if !strings.Contains(raw, "\r\nContent-Encoding: gzip\r\n") {
		t.Errorf("Accept-Encoding on two lines: got\n%s", raw)
	}
}

// A file changed in the current second is sent without Last-Modified
// until that second is over: the engine's Date may still show the second
// before, and Last-Modified must not be later than Date (RFC 9110
// §8.8.2.1); nor would the date tell this version from a second change
// in the same second (§8.8.2.2).
func TestJustModifiedFile(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"new.txt": "just written"})
	base := serveDir(t, dir, files.Options{Expiry: time.Millisecond})
	lastModNotAfterDate := func(resp *http.Response) {
		t.Helper()
		date, err1 := http.ParseTime(resp.Header.Get("Date"))
		lm, err2 := http.ParseTime(resp.Header.Get("Last-Modified"))
		if err1 == nil && err2 == nil && lm.After(date) {
			t.Errorf("Last-Modified %s is later than Date %s", resp.Header.Get("Last-Modified"), resp.Header.Get("Date"))
		}
	}
	// Change the file and ask for it until one answer comes within the
	// second of the change, which is the case under test: a slow machine
	// retries, and one too slow ever to manage it fails rather than
	// skipping the check.
	var now time.Time
	var resp *http.Response
	sluicetest.WaitFor(t, "a request answered within the second its file changed", func() bool {
		now = time.Now()
		os.Chtimes(filepath.Join(dir, "new.txt"), now, now)
		resp, _ = sluicetest.Get(t, base+"/new.txt")
		return time.Now().Unix() == now.Unix()
	})
	lastModNotAfterDate(resp)
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		t.Errorf("Last-Modified %q in the second the file changed", lm)
	}
	if resp.Header.Get("ETag") == "" {
		t.Error("no ETag")
	}
	want := now.UTC().Format(http.TimeFormat)
	sluicetest.WaitFor(t, "Last-Modified "+want, func() bool {
		resp, _ := sluicetest.Get(t, base+"/new.txt")
		lastModNotAfterDate(resp)
		return resp.Header.Get("Last-Modified") == want
	})
}

// A file dated in the future is sent without Last-Modified, which must
// not be later than Date (RFC 9110 §8.8.2.1) and is not invented either;
// its ETag still validates, and date conditions are ignored.
func TestFutureModificationTime(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"future.txt": "from the future"})
	future := time.Now().Add(365 * 24 * time.Hour)
	os.Chtimes(filepath.Join(dir, "future.txt"), future, future)
	base := serveDir(t, dir, files.Options{})
	resp, _ := sluicetest.Get(t, base+"/future.txt")
	etag := resp.Header.Get("ETag")
	if lm := resp.Header.Get("Last-Modified"); lm != "" || etag == "" {
		t.Fatalf("Last-Modified %q, ETag %q; want none and one", lm, etag)
	}
	date := resp.Header.Get("Date")
	for _, tt := range []struct {
		fields []string
		want   int
	}{
		{[]string{"If-None-Match", etag}, 304},
		{[]string{"If-Modified-Since", date}, 200},
		{[]string{"If-Unmodified-Since", date}, 200},
		{[]string{"Range", "bytes=0-3", "If-Range", date}, 200},
	} {
		if resp, _ := sluicetest.Get(t, base+"/future.txt", tt.fields...); resp.StatusCode != tt.want {
			t.Errorf("%q = %d, want %d", tt.fields, resp.StatusCode, tt.want)
		}
	}
	// Once its time has come, the cached entry makes way for one with the
	// date.
	soon := time.Now().Add(300 * time.Millisecond)
	os.Chtimes(filepath.Join(dir, "future.txt"), soon, soon)
	base = serveDir(t, dir, files.Options{Expiry: time.Millisecond})
	if resp, _ := sluicetest.Get(t, base+"/future.txt"); resp.Header.Get("Last-Modified") != "" && time.Now().Before(soon) {
		t.Errorf("Last-Modified %q before the file's time", resp.Header.Get("Last-Modified"))
	}
	want := soon.UTC().Format(http.TimeFormat)
	sluicetest.WaitFor(t, "Last-Modified "+want, func() bool {
		resp, _ := sluicetest.Get(t, base+"/future.txt")
		return resp.Header.Get("Last-Modified") == want
	})
}
