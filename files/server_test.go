package files_test

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

const indexHTML = "<!doctype html><title>t</title><p>index</p>\n"

func site(t *testing.T) string {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"index.html":               indexHTML,
		"hello.txt":                "hello\n",
		"sub/index.html":           "sub index\n",
		"noindex/a.txt":            "a\n",
		".env":                     "SECRET=1\n",
		".git/config":              "[core]\n",
		"a/.hidden":                "hidden\n",
		".well-known/security.txt": "Contact: mailto:x@example.com\n",
		".well-known/.private":     "private\n",
		"space dir/x.txt":          "x\n",
		"UPPER.HTML":               "<p>upper</p>",
		"data.json":                "{}",
		"style.css":                "p{}",
		"app.js":                   "1",
		"img.svg":                  "<svg/>",
		"feed.xml":                 "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><feed/>",
		"img.png":                  "\x89PNG",
		"font.woff2":               "w",
		"blob.unknownext":          "?",
		"noext":                    "n",
	})
	sluicetest.Backdate(t, dir, time.Minute)
	return dir
}

func TestIndexAndHeaders(t *testing.T) {
	base := serveDir(t, site(t), files.Options{})
	for _, path := range []string{"/", "/index.html", "//", "/./", "/?q=1"} {
		resp, body := sluicetest.Get(t, base+path)
		if resp.StatusCode != 200 || body != indexHTML {
			t.Errorf("GET %s = %d %q, want 200 %q", path, resp.StatusCode, body, indexHTML)
		}
		if got := resp.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", path, got)
		}
		if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(indexHTML)) {
			t.Errorf("GET %s: Content-Length %q", path, got)
		}
		if resp.Header.Get("ETag") == "" || resp.Header.Get("Last-Modified") == "" {
			t.Errorf("GET %s: no validators: %v", path, resp.Header)
		}
		if got := resp.Header.Get("Server"); got != "sluice" {
			t.Errorf("GET %s: Server %q", path, got)
		}
	}
	resp, body := sluicetest.Get(t, base+"/sub/")
	if resp.StatusCode != 200 || body != "sub index\n" {
		t.Errorf("GET /sub/ = %d %q", resp.StatusCode, body)
	}
	resp, body = sluicetest.Get(t, base+"/space%20dir/x.txt")
	if resp.StatusCode != 200 || body != "x\n" {
		t.Errorf("GET /space%%20dir/x.txt = %d %q", resp.StatusCode, body)
	}
}

func TestDirectoryRedirectKeepsQuery(t *testing.T) {
	base := serveDir(t, site(t), files.Options{})
	for path, want := range map[string]string{
		"/sub":             "/sub/",
		"/sub?x=1&y=%2F":   "/sub/?x=1&y=%2F",
		"/noindex":         "/noindex/",
		"/space%20dir?q":   "/space%20dir/?q",
		"/./sub":           "/sub/",
		"//sub":            "/sub/", // never a scheme-relative "//sub/"
		"/.well-known?a=b": "/.well-known/?a=b",
	} {
		resp, _ := sluicetest.Get(t, base+path)
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != want {
			t.Errorf("GET %s = %d Location %q, want 301 %q", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
}

func TestNotFound(t *testing.T) {
	base := serveDir(t, site(t), files.Options{})
	for _, path := range []string{"/missing", "/missing/", "/hello.txt/", "/hello.txt/x", "/noindex/", "/sub/missing.html"} {
		resp, _ := sluicetest.Get(t, base+path)
		if resp.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
	}
}

func TestMethods(t *testing.T) {
	base := serveDir(t, site(t), files.Options{})
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "TRACE"} {
		resp, _ := sluicetest.Send(t, m, base+"/hello.txt")
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
			t.Errorf("%s = %d Allow %q, want 405 %q", m, resp.StatusCode, resp.Header.Get("Allow"), "GET, HEAD, OPTIONS")
		}
	}
	resp, body := sluicetest.Send(t, "OPTIONS", base+"/hello.txt")
	if resp.StatusCode != 204 || resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" || body != "" {
		t.Errorf("OPTIONS = %d Allow %q body %q, want 204 with Allow", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
	raw := sluicetest.Exchange(t, hostOf(base), "OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	if !strings.HasPrefix(raw, "HTTP/1.1 204") || !strings.Contains(raw, "\r\nAllow: GET, HEAD, OPTIONS\r\n") {
		t.Errorf("OPTIONS * =\n%s", raw)
	}
}

// HEAD sends the GET's header fields and no body, for files held in
// memory and files sent from disk; the connection stays usable.
func TestHead(t *testing.T) {
	dir := site(t)
	big := strings.Repeat("0123456789abcdef", 10000)
	writeFiles(t, dir, map[string]string{"big.txt": big})
	base := serveDir(t, dir, files.Options{})
	c, err := net.Dial("tcp", hostOf(base))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for _, path := range []string{"/hello.txt", "/big.txt", "/"} {
		var hdr [2]http.Header
		for i, m := range []string{"GET", "HEAD"} {
			c.Write([]byte(m + " " + path + " HTTP/1.1\r\nHost: a\r\n\r\n"))
			resp, body := sluicetest.ReadResponse(t, br, m)
			if resp.StatusCode != 200 {
				t.Fatalf("%s %s = %d", m, path, resp.StatusCode)
			}
			if m == "HEAD" && body != "" {
				t.Errorf("HEAD %s has a body %q", path, body)
			}
			resp.Header.Del("Date")
			hdr[i] = resp.Header
			if resp.ContentLength <= 0 {
				t.Errorf("%s %s: Content-Length %d", m, path, resp.ContentLength)
			}
		}
		if !equalHeaders(hdr[0], hdr[1]) {
			t.Errorf("%s: GET header %v, HEAD header %v", path, hdr[0], hdr[1])
		}
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if strings.Join(a[k], ",") != strings.Join(b[k], ",") {
			return false
		}
	}
	return true
}

func TestContentTypes(t *testing.T) {
	base := serveDir(t, site(t), files.Options{})
	for path, want := range map[string]string{
		"/hello.txt":       "text/plain; charset=utf-8",
		"/UPPER.HTML":      "text/html; charset=utf-8",
		"/data.json":       "application/json",
		"/style.css":       "text/css; charset=utf-8",
		"/app.js":          "text/javascript; charset=utf-8",
		"/img.svg":         "image/svg+xml",
		"/feed.xml":        "application/xml", // no charset over the XML declaration's
		"/img.png":         "image/png",
		"/font.woff2":      "font/woff2",
		"/blob.unknownext": "application/octet-stream",
		"/noext":           "application/octet-stream",
	} {
		resp, _ := sluicetest.Get(t, base+path)
		if got := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || got != want {
			t.Errorf("GET %s = %d Content-Type %q, want %q", path, resp.StatusCode, got, want)
		}
	}
}

func TestDotfiles(t *testing.T) {
	base := serveDir(t, site(t), files.Options{})
	for path, want := range map[string]int{
		"/.env":                     404,
		"/.git/config":              404,
		"/.git/":                    404,
		"/a/.hidden":                404,
		"/%2eenv":                   404,
		"/.well-known/security.txt": 200,
		"/.well-known/.private":     404,
		"/a/.well-known/x":          404,
		"/./.env":                   404,
	} {
		resp, body := sluicetest.Get(t, base+path)
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d %q, want %d", path, resp.StatusCode, body, want)
		}
	}
}

// No request, however encoded, reaches a file outside the root.
func TestTraversal(t *testing.T) {
	outer := t.TempDir()
	const canary = "CANARY-7d1f0e"
	writeFiles(t, outer, map[string]string{
		"canary.txt":        canary,
		"root/index.html":   indexHTML,
		"root/sub/file.txt": "file\n",
		"rootx/canary2.txt": canary, // shares the root's name as a prefix
	})
	addr := hostOf(serveDir(t, filepath.Join(outer, "root"), files.Options{}))
	targets := []string{
		"/../canary.txt",
		"/../../etc/passwd",
		"/../../../../../../../../../../etc/passwd",
		"/%2e%2e/canary.txt",
		"/%2E%2E/canary.txt",
		"/.%2e/canary.txt",
		"/sub/..%2f..%2fcanary.txt",
		"/sub/%2e%2e%2f%2e%2e%2fcanary.txt",
		"/a/..%2f..%2fcanary.txt",
		"/..%5ccanary.txt",
		"/sub/..%5c..%5ccanary.txt",
		"/%5c..%5ccanary.txt",
		"/sub/../../canary.txt",
		"/./../canary.txt",
		"//../canary.txt",
		"/sub/./../../canary.txt",
		"/../rootx/canary2.txt",
		"/..%00/canary.txt",
		"/%00",
		"http://a/../canary.txt",
		"/..",
		"/sub/../..",
	}
	for _, target := range targets {
		raw := sluicetest.Exchange(t, addr, "GET "+target+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		if strings.Contains(raw, canary) || strings.Contains(raw, "root:") {
			t.Errorf("GET %s served a file outside the root:\n%s", target, raw)
		}
		if !strings.HasPrefix(raw, "HTTP/1.1 400") && !strings.HasPrefix(raw, "HTTP/1.1 404") {
			t.Errorf("GET %s = %.40q, want 400 or 404", target, raw)
		}
	}
}

// An encoded slash is refused: by the engine (400) before files sees it,
// and by files itself (404) in a Request built by other code.
func TestEncodedSlashRefused(t *testing.T) {
	dir := site(t)
	base := serveDir(t, dir, files.Options{})
	fsrv, err := files.New(dir, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fsrv.Close()
	for _, path := range []string{"/sub%2findex.html", "/sub%2Findex.html", "/%2fhello.txt"} {
		if resp, _ := sluicetest.Get(t, base+path); resp.StatusCode != 400 {
			t.Errorf("GET %s = %d, want 400", path, resp.StatusCode)
		}
		decoded, _ := url.PathUnescape(path)
		w := &discardWriter{}
		fsrv.Serve(w, getRequest(path, decoded))
		if w.status != 404 {
			t.Errorf("Serve(RawPath %q, Path %q) = %d, want 404", path, decoded, w.status)
		}
	}
}

// getRequest is a GET as code other than the engine may build it, with
// any RawPath and Path.
func getRequest(rawPath, path string) *engine.Request {
	return &engine.Request{
		Method: []byte("GET"), Target: []byte(rawPath), RawPath: []byte(rawPath), Path: []byte(path),
		ProtoMinor: 1, Fields: []engine.Field{{Name: []byte("Host"), Value: []byte("a")}},
	}
}

// files agrees with the canonical path: given a Path the engine would
// have made canonical (a Request built by other code), it serves what the
// canonical spelling names, or refuses a ".." segment with 404 — never
// another file.
func TestNonCanonicalPathAgrees(t *testing.T) {
	fsrv, err := files.New(site(t), files.Options{Dotfiles: files.DotfilesAllow})
	if err != nil {
		t.Fatal(err)
	}
	defer fsrv.Close()
	serve := func(p string) (int, int) {
		w := &discardWriter{}
		fsrv.Serve(w, getRequest(p, p))
		return w.status, w.n
	}
	for _, tt := range []struct {
		path, canonical string // canonical "": files refuses it
	}{
		{"//hello.txt", "/hello.txt"},
		{"/./sub/./index.html", "/sub/index.html"},
		{"/sub//", "/sub/"},
		{"/sub/.", "/sub/"},
		{"/hello.txt/.", "/hello.txt/"},
		{"//.well-known/./", "/.well-known/"},
		{"/.well-known/../.env", ""},
		{"/sub/../hello.txt", ""},
		{"/sub/..", ""},
		{"/a/../../hello.txt", ""},
	} {
		status, n := serve(tt.path)
		if tt.canonical == "" {
			if status != 404 {
				t.Errorf("Serve(%q) = %d, want 404", tt.path, status)
			}
			continue
		}
		if ws, wn := serve(tt.canonical); status != ws || n != wn {
			t.Errorf("Serve(%q) = %d (%d bytes), but its canonical spelling %q = %d (%d bytes)", tt.path, status, n, tt.canonical, ws, wn)
		}
	}
}

func TestSymlinks(t *testing.T) {
	outer := t.TempDir()
	const canary = "CANARY-symlink"
	writeFiles(t, outer, map[string]string{
		"canary.txt":        canary,
		"outdir/secret.txt": canary,
		"root/index.html":   indexHTML,
		"root/in/real.txt":  "real\n",
	})
	root := filepath.Join(outer, "root")
	links := map[string]string{
		"up.txt":     "../canary.txt",
		"abs.txt":    filepath.Join(outer, "canary.txt"),
		"absin.txt":  filepath.Join(root, "in/real.txt"), // absolute links are refused too
		"outdir":     "../outdir",
		"rel.txt":    "in/real.txt",
		"in/up2.txt": "../../canary.txt",
		"indir":      "in",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	base := serveDir(t, root, files.Options{})
	for path, want := range map[string]int{
		"/up.txt":            404,
		"/abs.txt":           404,
		"/absin.txt":         404,
		"/outdir/secret.txt": 404,
		"/outdir/":           404,
		"/in/up2.txt":        404,
		"/rel.txt":           200,
		"/indir/real.txt":    200,
	} {
		resp, body := sluicetest.Get(t, base+path)
		if resp.StatusCode != want || strings.Contains(body, canary) {
			t.Errorf("GET %s = %d %q, want %d", path, resp.StatusCode, body, want)
		}
	}
}

// A file replaced on disk is served within the expiry: by rename (a new
// inode), rewritten in place with the same size, deleted, and created.
func TestChangedFileSeenAfterExpiry(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"f.txt": "one", "big.bin": strings.Repeat("a", 100<<10)})
	base := serveDir(t, dir, files.Options{Expiry: 50 * time.Millisecond})
	body := func(path string) string {
		resp, b := sluicetest.Get(t, base+path)
		return strconv.Itoa(resp.StatusCode) + " " + b
	}
	if got := body("/f.txt"); got != "200 one" {
		t.Fatalf("GET /f.txt = %q", got)
	}
	// Replace by rename.
	tmp := filepath.Join(dir, "f.tmp")
	os.WriteFile(tmp, []byte("two, longer"), 0o644)
	if err := os.Rename(tmp, filepath.Join(dir, "f.txt")); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, "renamed file", func() bool { return body("/f.txt") == "200 two, longer" })
	// Rewrite in place, same size and inode, later mtime.
	p := filepath.Join(dir, "f.txt")
	os.WriteFile(p, []byte("TWO, LONGER"), 0o644)
	future := time.Now().Add(time.Hour)
	os.Chtimes(p, future, future)
	sluicetest.WaitFor(t, "rewritten file", func() bool { return body("/f.txt") == "200 TWO, LONGER" })
	// Delete; create.
	os.Remove(p)
	sluicetest.WaitFor(t, "deleted file", func() bool { return strings.HasPrefix(body("/f.txt"), "404 ") })
	writeFiles(t, dir, map[string]string{"new.txt": "new"})
	sluicetest.WaitFor(t, "created file", func() bool { return body("/new.txt") == "200 new" })
	// A large file, sent from disk, replaced.
	if got := body("/big.bin"); len(got) != 4+100<<10 {
		t.Fatalf("GET /big.bin: %d bytes", len(got))
	}
	writeFiles(t, dir, map[string]string{"big.bin": strings.Repeat("b", 200<<10)})
	sluicetest.WaitFor(t, "replaced large file", func() bool { return body("/big.bin") == "200 "+strings.Repeat("b", 200<<10) })
}

func TestConditionalGET(t *testing.T) {
	base := serveDir(t, site(t), files.Options{})
	resp, _ := sluicetest.Get(t, base+"/hello.txt")
	etag, lastMod := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if !strings.HasPrefix(etag, `"`) {
		t.Fatalf("ETag %q is not a strong tag", etag)
	}
	mod, err := http.ParseTime(lastMod)
	if err != nil {
		t.Fatalf("Last-Modified %q: %v", lastMod, err)
	}
	tests := []struct {
		fields []string
		want   int
	}{
		{[]string{"If-None-Match", etag}, 304},
		{[]string{"If-None-Match", "W/" + etag}, 304},
		{[]string{"If-None-Match", `"x", ` + etag}, 304},
		{[]string{"If-None-Match", "*"}, 304},
		{[]string{"If-None-Match", `"other"`}, 200},
		{[]string{"If-Modified-Since", lastMod}, 304},
		{[]string{"If-Modified-Since", mod.Add(time.Hour).Format(http.TimeFormat)}, 304},
		{[]string{"If-Modified-Since", mod.Add(-time.Second).Format(http.TimeFormat)}, 200},
		{[]string{"If-Modified-Since", "not a date"}, 200},
		// If-None-Match wins over If-Modified-Since (RFC 9110 §13.1.3).
		{[]string{"If-None-Match", `"other"`, "If-Modified-Since", lastMod}, 200},
	}
	for _, tt := range tests {
		resp, body := sluicetest.Get(t, base+"/hello.txt", tt.fields...)
		if resp.StatusCode != tt.want {
			t.Errorf("GET with %q = %d, want %d", tt.fields, resp.StatusCode, tt.want)
		}
		if tt.want == 304 && (body != "" || resp.Header.Get("ETag") != etag) {
			t.Errorf("304 with %q: body %q ETag %q", tt.fields, body, resp.Header.Get("ETag"))
		}
	}
	resp, _ = sluicetest.Get(t, base+"/missing", "If-None-Match", "*")
	if resp.StatusCode != 404 {
		t.Errorf("If-None-Match: * on a missing file = %d, want 404", resp.StatusCode)
	}
}

// A file larger than MaxMemFile goes out through sendfile, intact, and
// keep-alive continues after it.
func TestLargeFile(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 3<<20+17)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"small.txt": "small"})
	base := serveDir(t, dir, files.Options{})
	c, err := net.Dial("tcp", hostOf(base))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for range 2 {
		c.Write([]byte("GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\nGET /small.txt HTTP/1.1\r\nHost: a\r\n\r\n"))
		resp, body := sluicetest.ReadResponse(t, br, "GET")
		if resp.StatusCode != 200 || !bytes.Equal([]byte(body), big) {
			t.Fatalf("GET /big.bin = %d, %d bytes, want %d", resp.StatusCode, len(body), len(big))
		}
		if _, body = sluicetest.ReadResponse(t, br, "GET"); body != "small" {
			t.Fatalf("GET /small.txt after /big.bin = %q", body)
		}
	}
}

// NewFS serves an fs.FS; content without a modification time gets an
// ETag from its content and no Last-Modified.
func TestNewFS(t *testing.T) {
	fsys := fstest.MapFS{
		"index.html":       {Data: []byte(indexHTML)},
		"about/index.html": {Data: []byte("about")},
		"big.txt":          {Data: bytes.Repeat([]byte("z"), 100<<10)},
		"dated.txt":        {Data: []byte("d"), ModTime: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
		".secret":          {Data: []byte("s")},
	}
	base := "http://" + serve(t, files.NewFS(fsys, files.Options{}))
	resp, body := sluicetest.Get(t, base+"/")
	if resp.StatusCode != 200 || body != indexHTML || resp.Header.Get("Last-Modified") != "" {
		t.Errorf("GET / = %d %q Last-Modified %q", resp.StatusCode, body, resp.Header.Get("Last-Modified"))
	}
	etag := resp.Header.Get("ETag")
	if resp, _ := sluicetest.Get(t, base+"/", "If-None-Match", etag); etag == "" || resp.StatusCode != 304 {
		t.Errorf("ETag %q: revalidation = %d, want 304", etag, resp.StatusCode)
	}
	if resp, _ := sluicetest.Get(t, base+"/about"); resp.StatusCode != 301 || resp.Header.Get("Location") != "/about/" {
		t.Errorf("GET /about = %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := sluicetest.Get(t, base+"/about/"); resp.StatusCode != 200 || body != "about" {
		t.Errorf("GET /about/ = %d %q", resp.StatusCode, body)
	}
	if resp, body := sluicetest.Get(t, base+"/big.txt"); resp.StatusCode != 200 || len(body) != 100<<10 {
		t.Errorf("GET /big.txt = %d, %d bytes", resp.StatusCode, len(body))
	}
	if resp, _ := sluicetest.Get(t, base+"/dated.txt"); resp.Header.Get("Last-Modified") != "Tue, 02 Jan 2024 03:04:05 GMT" {
		t.Errorf("GET /dated.txt: Last-Modified %q", resp.Header.Get("Last-Modified"))
	}
	if resp, _ := sluicetest.Get(t, base+"/.secret"); resp.StatusCode != 404 {
		t.Errorf("GET /.secret = %d, want 404", resp.StatusCode)
	}
}

func TestNewRefusesNonDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"file": "x"})
	for _, root := range []string{filepath.Join(dir, "missing"), filepath.Join(dir, "file")} {
		if s, err := files.New(root, files.Options{}); err == nil {
			s.Close()
			t.Errorf("New(%q) succeeded, want an error", root)
		}
	}
}

// Many connections read files that keep changing, under the race
// detector; every response is one of the versions written.
func TestConcurrentRequestsWhileFilesChange(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"f.txt": "v0", "g.txt": "g"})
	base := serveDir(t, dir, files.Options{Expiry: time.Millisecond})
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := filepath.Join(dir, "f.tmp")
			os.WriteFile(tmp, []byte("v"+strconv.Itoa(i%10)), 0o644)
			os.Rename(tmp, filepath.Join(dir, "f.txt"))
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				resp, body := sluicetest.Get(t, base+"/f.txt")
				if resp.StatusCode != 200 || len(body) != 2 || body[0] != 'v' {
					t.Errorf("GET /f.txt = %d %q", resp.StatusCode, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	writer.Wait()
}
