package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fileSendCounter passes a ResponseWriter on and counts the bytes sent
// through its SendFile (sendfile(2)), so a test can tell them from bytes
// copied through Write.
type fileSendCounter struct {
	ResponseWriter
	sent int64
}

func (w *fileSendCounter) SendFile(f *os.File, offset, n int64) error {
	w.sent += n
	return w.ResponseWriter.(FileSender).SendFile(f, offset, n)
}

// http.FileServer runs on the engine through FromHTTP, including ranges,
// and its files go out with sendfile (the bridge's io.ReaderFrom hands an
// *os.File to the engine's SendFile) rather than through Write.
func TestFromHTTPFileServer(t *testing.T) {
	dir := t.TempDir()
	content := bytes.Repeat([]byte("0123456789"), 20000) // 200 KB: sendfile path
	os.WriteFile(filepath.Join(dir, "big.bin"), content, 0o644)
	bridge := FromHTTP(http.FileServer(http.Dir(dir)))
	sent := make(chan int64, 1)
	addr := startServer(t, &Server{Handler: HandlerFunc(func(w ResponseWriter, r *Request) {
		fs := &fileSendCounter{ResponseWriter: w}
		bridge.Serve(fs, r)
		sent <- fs.sent
	})})

	resp, err := http.Get("http://" + addr + "/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, content) {
		t.Fatalf("GET big.bin: %d, %d bytes", resp.StatusCode, len(got))
	}
	if n := <-sent; n != int64(len(content)) {
		t.Errorf("GET big.bin: %d bytes sent with sendfile, want all %d", n, len(content))
	}

	req, _ := http.NewRequest("GET", "http://"+addr+"/big.bin", nil)
	req.Header.Set("Range", "bytes=100000-100009")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 206 || string(got) != "0123456789" || resp.Header.Get("Content-Range") != "bytes 100000-100009/200000" {
		t.Errorf("range: %d %q %q", resp.StatusCode, got, resp.Header.Get("Content-Range"))
	}
	if n := <-sent; n != 10 {
		t.Errorf("range: %d bytes sent with sendfile, want 10", n)
	}
}

// A net/http handler sees the request as net/http would show it, trailers
// included, and its streamed response is chunked.
func TestFromHTTPRequestAndStreaming(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.Header().Set("X-URI", r.RequestURI)
		w.Header().Set("X-Host", r.Host)
		w.Header().Set("X-Agent", r.Header.Get("User-Agent"))
		w.Header().Set("X-Trailer", r.Trailer.Get("X-Sum"))
		w.WriteHeader(201)
		w.Write(body)
		w.(http.Flusher).Flush()
		io.WriteString(w, "!")
	})
	addr := startServer(t, &Server{Handler: FromHTTP(h)})
	out := exchange(t, addr, "POST /p?q=1 HTTP/1.1\r\nHost: example.org\r\nUser-Agent: ua/1\r\n"+
		"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 7\r\n\r\n")
	resp, body := readResponse(t, bufio.NewReader(strings.NewReader(out)), "POST")
	if resp.StatusCode != 201 || body != "abc!" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	for k, want := range map[string]string{"X-Method": "POST", "X-Uri": "/p?q=1", "X-Host": "example.org", "X-Agent": "ua/1", "X-Trailer": "7"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
		t.Errorf("flushed response not chunked: %v", resp.TransferEncoding)
	}
}

// A native handler runs inside net/http's server through ToHTTP.
func TestToHTTP(t *testing.T) {
	ts := httptest.NewServer(ToHTTP(echo))
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/x?y=2", "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `POST /x?y=2 path=/x query=y=2 host=` + strings.TrimPrefix(ts.URL, "http://") + ` minor=1 body="payload"`; string(body) != want {
		t.Errorf("got  %q\nwant %q", body, want)
	}
	if resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
}

// A net/http handler sees the canonical path the router routed on in
// URL.Path (issue 14, finding 1: it saw the spelling received), with no
// RawPath hint of another spelling; RequestURI stays as received.
func TestFromHTTPCanonicalPath(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "path=%s raw=%s escaped=%s uri=%s", r.URL.Path, r.URL.RawPath, r.URL.EscapedPath(), r.RequestURI)
	})
	addr := startServer(t, &Server{Handler: FromHTTP(h)})
	for target, want := range map[string]string{
		"//admin/./x/../secret%2Ehtml?q": "path=/admin/secret.html raw= escaped=/admin/secret.html uri=//admin/./x/../secret%2Ehtml?q",
		"/a%20b/%41":                     "path=/a b/A raw=/a%20b/%41 escaped=/a%20b/%41 uri=/a%20b/%41",
		"/x/%2e%2e/a%3fb/.":              "path=/a?b/ raw= escaped=/a%3Fb/ uri=/x/%2e%2e/a%3fb/.",
		"http://h//admin/..":             "path=/ raw= escaped=/ uri=http://h//admin/..",
	} {
		out := exchange(t, addr, "GET "+target+" HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
		if _, body := readResponse(t, bufio.NewReader(strings.NewReader(out)), "GET"); body != want {
			t.Errorf("GET %s: handler saw %q, want %q", target, body, want)
		}
	}
}

// A native handler inside net/http's server sees the canonical path too,
// and a path the engine refuses is refused there alike, with 400.
func TestToHTTPCanonicalPath(t *testing.T) {
	ts := httptest.NewServer(ToHTTP(echo))
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	for target, want := range map[string]string{
		"//a/./b/../c%2Ehtml?q=1": "path=/a/c.html query=q=1",
		"/a/..":                   "path=/ query=",
		"/a%2Fb":                  "400 Bad Request: encoded slash in path",
		"/a/../../etc/passwd":     "400 Bad Request: path climbs above the root",
	} {
		out := exchange(t, addr, "GET "+target+" HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
		resp, body := readResponse(t, bufio.NewReader(strings.NewReader(out)), "GET")
		if got := strconv.Itoa(resp.StatusCode) + " " + body; !strings.Contains(got, want) {
			t.Errorf("GET %s through ToHTTP: %q, want %q", target, got, want)
		}
	}
}

func ExampleFromHTTP() {
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from net/http\n")
	})
	s := &Server{Handler: FromHTTP(mux)}
	_ = s // s.ListenAndServe(":8080")
}
