package components

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// filesServe serves comp behind the engine on a loopback port and returns
// its base URL; server and component are closed when the test ends.
func filesServe(t testing.TB, comp pipe.Component) string {
	t.Helper()
	srv := sluicetest.NewServer(t, pipe.Handler(comp))
	return srv.URL
}

// filesNew builds a files component and closes it after the test.
func filesNew(t testing.TB, opts FilesOptions) pipe.Component {
	t.Helper()
	c, err := NewFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.(*Files).Close() })
	return c
}

// filesTree writes files (slash-separated names) under a new directory.
func filesTree(t testing.TB, m map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range m {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func filesGzip(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	io.WriteString(zw, s)
	zw.Close()
	return b.String()
}

// filesSite: a small and a large file, a precompressed stylesheet (older
// original), a directory.
func filesSite(t testing.TB) (dir, small, big, css string) {
	small = "<!doctype html><p>hello</p>\n"
	big = strings.Repeat("0123456789abcdef", 20000) // 320 kB: sent with sendfile
	css = strings.Repeat("p { color: red }\n", 500)
	dir = filesTree(t, map[string]string{
		"index.html": small, "big.txt": big, "style.css": css, "style.css.gz": filesGzip(css),
		"docs/index.html": "docs", ".env": "secret",
	})
	sluicetest.Backdate(t, dir, time.Minute)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "style.css"), old, old)
	return dir, small, big, css
}

// The component answers every status over a real socket, as the files
// package does behind the engine directly.
func TestFilesComponentStatuses(t *testing.T) {
	dir, small, big, _ := filesSite(t)
	base := filesServe(t, pipe.Chain{filesNew(t, FilesOptions{Root: dir, Options: files.Options{MaxAge: time.Hour}})})
	resp, _ := sluicetest.Get(t, base+"/big.txt")
	etag := resp.Header.Get("ETag")
	tests := []struct {
		method, path string
		hdr          []string
		status       int
		body         string
	}{
		{"GET", "/", nil, 200, small},
		{"GET", "/big.txt", nil, 200, big},
		{"HEAD", "/big.txt", nil, 200, ""},
		{"GET", "/big.txt", []string{"Range", "bytes=16-31"}, 206, "0123456789abcdef"},
		{"GET", "/big.txt", []string{"Range", "bytes=-4"}, 206, "cdef"},
		{"GET", "/big.txt", []string{"If-None-Match", etag}, 304, ""},
		{"GET", "/big.txt", []string{"If-Match", `"nope"`}, 412, "412 Precondition Failed: precondition failed\n"},
		{"GET", "/big.txt", []string{"Range", "bytes=999999-"}, 416, ""},
		{"GET", "/docs", nil, 301, ""},
		{"GET", "/.env", nil, 404, ""},
		{"GET", "/missing", nil, 404, "404 Not Found: no such file\n"},
		{"OPTIONS", "/", nil, 204, ""},
		{"PUT", "/", nil, 405, ""},
	}
	for _, tt := range tests {
		resp, body := sluicetest.Send(t, tt.method, base+tt.path, tt.hdr...)
		if resp.StatusCode != tt.status || tt.body != "" && body != tt.body {
			t.Errorf("%s %s %q = %d, %d bytes; want %d, %d bytes", tt.method, tt.path, tt.hdr, resp.StatusCode, len(body), tt.status, len(tt.body))
		}
		if tt.status == 200 || tt.status == 206 || tt.status == 304 {
			if resp.Header.Get("Cache-Control") != "max-age=3600" || resp.Header.Get("Expires") == "" {
				t.Errorf("%s %s: Cache-Control %q, Expires %q", tt.method, tt.path, resp.Header.Get("Cache-Control"), resp.Header.Get("Expires"))
			}
		}
	}
	if resp, _ := sluicetest.Send(t, "HEAD", base+"/big.txt"); resp.ContentLength != int64(len(big)) {
		t.Errorf("HEAD: Content-Length %d, want %d", resp.ContentLength, len(big))
	}
	if resp, _ := sluicetest.Get(t, base+"/docs?x=1"); resp.Header.Get("Location") != "/docs/?x=1" {
		t.Errorf("redirect Location %q", resp.Header.Get("Location"))
	}
	if resp, _ := sluicetest.Send(t, "PUT", base+"/"); resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Errorf("405 Allow %q", resp.Header.Get("Allow"))
	}
	if resp, _ := sluicetest.Get(t, base+"/big.txt", "Range", "bytes=999999-"); resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(big)) {
		t.Errorf("416 Content-Range %q", resp.Header.Get("Content-Range"))
	}
}

// A multipart/byteranges response through the pipeline, with large parts
// sent from the file.
func TestFilesComponentMultipart(t *testing.T) {
	dir, _, big, _ := filesSite(t)
	base := filesServe(t, filesNew(t, FilesOptions{Root: dir}))
	resp, body := sluicetest.Get(t, base+"/big.txt", "Range", "bytes=0-99999,200000-")
	mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != 206 || mt != "multipart/byteranges" || resp.ContentLength != int64(len(body)) {
		t.Fatalf("= %d %q, Content-Length %d for %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength, len(body))
	}
	mr := multipart.NewReader(strings.NewReader(body), params["boundary"])
	for i, want := range []string{big[:100000], big[200000:]} {
		p, err := mr.NextPart()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(p)
		if string(got) != want || p.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("part %d: %d bytes %q, want %d bytes", i, len(got), p.Header.Get("Content-Type"), len(want))
		}
	}
}

// With compress after it: a precompressed variant passes the filter
// untouched (it already has a Content-Encoding), other text is compressed
// by the filter, and partial content is left alone.
func TestFilesComponentWithCompress(t *testing.T) {
	dir, _, big, _ := filesSite(t)
	base := filesServe(t, pipe.Chain{filesNew(t, FilesOptions{Root: dir}), compressNew(t, CompressOptions{Encodings: []string{"gzip"}})})
	gz, _ := os.ReadFile(filepath.Join(dir, "style.css.gz"))
	resp, body := sluicetest.Get(t, base+"/style.css", "Accept-Encoding", "gzip")
	if body != string(gz) || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("precompressed through compress: %d bytes (file %d), Content-Encoding %q, Vary %q",
			len(body), len(gz), resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"))
	}
	resp, body = sluicetest.Get(t, base+"/big.txt", "Accept-Encoding", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("big.txt: Content-Encoding %q, want gzip by the filter", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(zr); string(got) != big {
		t.Errorf("big.txt compressed by the filter decodes to %d bytes, want %d", len(got), len(big))
	}
	resp, body = sluicetest.Get(t, base+"/big.txt", "Accept-Encoding", "gzip", "Range", "bytes=0-9")
	if resp.StatusCode != 206 || body != big[:10] || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("range through compress = %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Encoding"))
	}
}

// Keep-alive and pipelining through the component: responses of every
// kind follow each other on one connection.
func TestFilesComponentPipelined(t *testing.T) {
	dir, small, big, _ := filesSite(t)
	base := filesServe(t, filesNew(t, FilesOptions{Root: dir}))
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	reqs := []struct{ raw, method, body string }{
		{"GET /big.txt HTTP/1.1\r\nHost: a\r\n\r\n", "GET", big},
		{"HEAD /big.txt HTTP/1.1\r\nHost: a\r\n\r\n", "HEAD", ""},
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET", small},
		{"GET /big.txt HTTP/1.1\r\nHost: a\r\nRange: bytes=1-2\r\n\r\n", "GET", "12"},
		{"GET /nope HTTP/1.1\r\nHost: a\r\n\r\n", "GET", "404 Not Found: no such file\n"},
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET", small},
	}
	var all strings.Builder
	for _, r := range reqs {
		all.WriteString(r.raw)
	}
	io.WriteString(c, all.String())
	br := bufio.NewReader(c)
	for i, r := range reqs {
		if _, b := sluicetest.ReadResponse(t, br, r.method); b != r.body {
			t.Errorf("response %d (%q): %d bytes, want %d", i, r.raw, len(b), len(r.body))
		}
	}
}

// A later source that replaces the files content leaves no file open
// beyond the cache's one.
func TestFilesComponentContentReplaced(t *testing.T) {
	dir, _, _, _ := filesSite(t)
	text, err := NewText(TextOptions{Body: "replaced"})
	if err != nil {
		t.Fatal(err)
	}
	base := filesServe(t, pipe.Chain{filesNew(t, FilesOptions{Root: dir}), text})
	for range 20 {
		if _, body := sluicetest.Get(t, base+"/big.txt"); body != "replaced" {
			t.Fatalf("body %q", body)
		}
	}
	big := filepath.Join(dir, "big.txt")
	des, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, de := range des {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", de.Name())); target == big {
			n++
		}
	}
	if n > 1 {
		t.Errorf("%d descriptors open on big.txt, want at most 1", n)
	}
}

func TestFilesOptionErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		opts FilesOptions
		want string
	}{
		{FilesOptions{}, "files: no root directory"},
		{FilesOptions{Root: filepath.Join(dir, "missing")}, "files: root " + filepath.Join(dir, "missing")},
		{FilesOptions{Root: dir, Options: files.Options{Dotfiles: "show"}}, `files: dotfiles "show": want hide, deny or allow`},
		{FilesOptions{Root: dir, Options: files.Options{Precompressed: []string{"lzma"}}}, `files: unknown precompressed coding "lzma"`},
		{FilesOptions{Root: dir, Options: files.Options{Immutable: true}}, "files: immutable needs max_age"},
		{FilesOptions{Root: dir, Options: files.Options{NoCache: true, MaxAge: time.Minute}}, "files: no_cache and max_age exclude each other"},
		{FilesOptions{Root: dir, Options: files.Options{Types: map[string]string{".x": "nonsense"}}}, `files: type "nonsense"`},
		{FilesOptions{Root: dir, Options: files.Options{MaxListing: -5}}, "files: max_listing must not be negative"},
		{FilesOptions{Root: dir, MemFileMax: new(int64(-1))}, "files: max_mem_file must not be negative"},
		{FilesOptions{Root: dir, MemBytesMax: new(int64(-1))}, "files: max_mem_bytes must not be negative"},
	} {
		_, err := NewFiles(tt.opts)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("NewFiles(%+v) = %v, want %q", tt.opts, err, tt.want)
		}
	}
}

// TestFilesMemoryOptions: max_mem_file and max_mem_bytes set the files
// server's MaxMemFile and MaxMemBytes, over what Go code set in
// files.Options; 0 holds no file in memory; left out, Go's (or the
// default, zero) stands.
func TestFilesMemoryOptions(t *testing.T) {
	for _, tt := range []struct {
		file, mem      *int64
		goFile, goMem  int64 // set in files.Options by Go code
		maxFile, bytes int64 // what the files server gets
	}{
		{},
		{goFile: 4096, goMem: 1 << 20, maxFile: 4096, bytes: 1 << 20},
		{file: new(int64(128 << 10)), maxFile: 128 << 10},
		{file: new(int64(8000)), mem: new(int64(1 << 30)), goFile: 4096, goMem: 1 << 20, maxFile: 8000, bytes: 1 << 30},
		{file: new(int64(0)), goFile: 4096, maxFile: -1},
		{mem: new(int64(0)), goMem: 1 << 20, maxFile: -1, bytes: 1 << 20},
	} {
		o := FilesOptions{MemFileMax: tt.file, MemBytesMax: tt.mem}
		o.MaxMemFile, o.MaxMemBytes = tt.goFile, tt.goMem
		fo := o.serverOptions()
		if fo.MaxMemFile != tt.maxFile || fo.MaxMemBytes != tt.bytes {
			t.Errorf("%+v: MaxMemFile %d, MaxMemBytes %d; want %d, %d", tt, fo.MaxMemFile, fo.MaxMemBytes, tt.maxFile, tt.bytes)
		}
	}
}

// BenchmarkFilesComponent measures a keep-alive GET of a small cached
// file through pipe.Handler and the component, over a real socket. The
// client reads responses of a fixed length (learnt from the first), so
// allocations reported are the server's.
func BenchmarkFilesComponent(b *testing.B) {
	dir := filesTree(b, map[string]string{"index.html": strings.Repeat("x", 151)})
	base := filesServe(b, filesNew(b, FilesOptions{Root: dir}))
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	c.Write(req)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	c.Write(req)
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		n += len(line)
		if string(line) == "\r\n" {
			break
		}
	}
	io.CopyN(io.Discard, br, 151)
	buf := make([]byte, n+151)
	b.ReportAllocs()
	for b.Loop() {
		c.Write(req)
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// Serve a directory through a pipeline; the files source decides status
// and header in the setup phase and sends the file in the content phase.
func ExampleNewFiles() {
	dir, _ := os.MkdirTemp("", "files-example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("Hello, files!\n"), 0o644)

	comp, err := NewFiles(FilesOptions{Root: dir, Options: files.Options{MaxAge: time.Hour}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer comp.(*Files).Close()
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{comp}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	req, _ := http.NewRequest("GET", srv.URL+"/hello.txt", nil)
	req.Header.Set("Range", "bytes=7-")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status)
	fmt.Println(resp.Header.Get("Content-Range"), resp.Header.Get("Cache-Control"))
	fmt.Print(string(body))
	// Output:
	// 206 Partial Content
	// bytes 7-13/14 max-age=3600
	// files!
}

// A 304 through compress has the ETag and Vary of the 200 it stands for
// (RFC 9110 §15.4.5): weak where the filter compresses the 200, strong
// for a body under MinSize and for a precompressed variant; and no
// Content-Type or Content-Length on the wire.
func TestFilesComponentCompress304(t *testing.T) {
	dir, _, _, _ := filesSite(t)
	base := filesServe(t, pipe.Chain{filesNew(t, FilesOptions{Root: dir}), compressNew(t, CompressOptions{Encodings: []string{"gzip"}})})
	for _, path := range []string{"/big.txt", "/", "/style.css"} {
		full, _ := sluicetest.Get(t, base+path, "Accept-Encoding", "gzip")
		etag, vary := full.Header.Get("ETag"), full.Header.Get("Vary")
		for _, cond := range [][]string{{"If-None-Match", etag}, {"If-Modified-Since", full.Header.Get("Last-Modified")}} {
			resp, _ := sluicetest.RoundTrip(t, base, "GET "+path+" HTTP/1.1\r\nHost: a\r\nAccept-Encoding: gzip\r\n"+cond[0]+": "+cond[1]+"\r\nConnection: close\r\n\r\n")
			if resp.StatusCode != 304 || resp.Header.Get("ETag") != etag || resp.Header.Get("Vary") != vary {
				t.Errorf("%s with %s: %d ETag %q Vary %q; the 200 had ETag %q Vary %q",
					path, cond[0], resp.StatusCode, resp.Header.Get("ETag"), resp.Header.Get("Vary"), etag, vary)
			}
			for _, f := range []string{"Content-Type", "Content-Length"} {
				if v, ok := resp.Header[f]; ok {
					t.Errorf("%s with %s: a 304 with %s: %q", path, cond[0], f, v)
				}
			}
		}
	}
}
