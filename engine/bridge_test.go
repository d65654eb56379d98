package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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

// Bridge serves a handler under the Server's limits, methods and Server
// field, counting its requests and refusals; the trailer fields the
// handler adds reach the client when announced, through ToHTTP too.
func TestBridge(t *testing.T) {
	srv := &Server{ServerHeader: "bridged", Limits: Limits{MaxTargetBytes: 64, MaxBodyBytes: 10}, ExtraMethods: []string{"PURGE"}}
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return // the 413 is the engine's
		}
		w.Header().Set("Trailer", "X-Sum")
		fmt.Fprintf(w, "%s %s %s", r.Method, r.Proto(), b)
		w.Header().AddTrailer("X-Sum", "abc")
	})
	for _, c := range []struct {
		name    string
		handler http.Handler
		server  string
		limits  bool
	}{
		{"Bridge", srv.Bridge(h), "bridged", true},
		{"ToHTTP", ToHTTP(h), "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(c.handler)
			defer ts.Close()
			for _, tc := range []struct {
				method, path, body string
				status             int
				want               string
			}{
				{"GET", "/", "", 200, "GET HTTP/1.1 "},
				{"POST", "/", "0123456789abc", 413, ""},
				{"PURGE", "/", "", 200, "PURGE HTTP/1.1 "},
				{"GET", "/" + strings.Repeat("a", 70), "", 414, ""},
			} {
				req, _ := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				status, want := tc.status, tc.want
				if !c.limits {
					status, want = 200, tc.method+" HTTP/1.1 "+tc.body
				}
				if resp.StatusCode != status || status == 200 && (string(b) != want || resp.Trailer.Get("X-Sum") != "abc") {
					t.Errorf("%s %s: %d %q, trailer %q; want %d %q", tc.method, tc.path[:min(len(tc.path), 10)], resp.StatusCode, b, resp.Trailer, status, want)
				}
				if got := resp.Header.Get("Server"); got != c.server {
					t.Errorf("%s %s: Server %q, want %q", tc.method, tc.path[:min(len(tc.path), 10)], got, c.server)
				}
			}
		})
	}
	if st := srv.Stats(); st.Requests != 4 || st.Refused != 2 {
		t.Errorf("Bridge's server counted %d requests, %d refused; want 4, 2 (the 413 and the 414)", st.Requests, st.Refused)
	}
}

// Bridge serves its requests on the server's task runners, reused from
// one request to the next (their stacks grown once), and a handler's
// panic reaches the caller's goroutine as it would without them: before
// the response is committed a 500, after it http.ErrAbortHandler, and the
// runner serves on.
func TestBridgeRunners(t *testing.T) {
	srv := &Server{Logger: slog.New(slog.DiscardHandler)}
	defer srv.taskRunners.reap(0, true)
	var stack [4096]byte // a handler that grows its goroutine's stack
	h := srv.Bridge(HandlerFunc(func(w ResponseWriter, r *Request) {
		switch string(r.Path) {
		case "/panic":
			panic("before the response")
		case "/abort":
			w.Write([]byte("committed"))
			w.Flush()
			panic("after the response")
		}
		deep(len(stack))
		w.Write([]byte("ok"))
	}))
	serve := func(path string) (w *httptest.ResponseRecorder, p any) {
		defer func() { p = recover() }()
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "https://example.com"+path, nil))
		return w, nil
	}
	idle := func() bool { return srv.taskRunners.count() == 1 }
	if w, p := serve("/"); p != nil || w.Body.String() != "ok" {
		t.Fatalf("GET /: %q, panic %v", w.Body, p)
	}
	waitFor(t, "the first request's runner idle", idle)
	before := taskRunnersStarted.Load()
	for _, tc := range []struct {
		path   string
		status int
		abort  bool
	}{
		{"/", 200, false},
		{"/panic", 500, false},
		{"/abort", 200, true},
		{"/", 200, false},
	} {
		w, p := serve(tc.path)
		if tc.abort != (p == http.ErrAbortHandler) || p != nil && !tc.abort {
			t.Errorf("GET %s: panic %v, want http.ErrAbortHandler: %v", tc.path, p, tc.abort)
		}
		if !tc.abort && w.Code != tc.status {
			t.Errorf("GET %s: %d, want %d", tc.path, w.Code, tc.status)
		}
		waitFor(t, "the runner idle again", idle)
	}
	if n := taskRunnersStarted.Load() - before; n != 0 {
		t.Errorf("requests one after another started %d runners, want 0 (the first one's, reused)", n)
	}
	if st := srv.Stats(); st.Panics != 2 {
		t.Errorf("%d panics counted, want 2", st.Panics)
	}
}

// deep uses n bytes of its goroutine's stack.
//
//go:noinline
func deep(n int) byte {
	var b [512]byte
	if n <= len(b) {
		return b[n%len(b)]
	}
	return deep(n-len(b)) + b[0]
}

// BenchmarkBridge is what the bridge costs an HTTP/3 request over the
// handler's own work: an engine Request built from the *http.Request,
// its header copied, the response's copied back.
func BenchmarkBridge(b *testing.B) {
	srv := &Server{}
	page := []byte(strings.Repeat("x", 150) + "\n")
	h := srv.Bridge(HandlerFunc(func(w ResponseWriter, r *Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(page)
	}))
	req, w := bridgedGET()
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}

// bridgedGET returns a browser's GET of /index.html with three fields,
// as a net/http server hands it to a handler, and a writer that keeps
// nothing but its header map, for measuring what Bridge costs.
func bridgedGET() (*http.Request, *discardWriter) {
	req := httptest.NewRequest("GET", "https://example.com/index.html", nil)
	req.Header.Set("User-Agent", "bench")
	req.Header.Set("Accept", "*/*")
	req.Header.Set("Accept-Encoding", "gzip, br")
	return req, &discardWriter{h: http.Header{}}
}

// discardWriter is an http.ResponseWriter that keeps nothing but its
// header map.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// A response without a Content-Type gets none through the bridge, as
// from the engine: net/http (and quic-go's HTTP/3) would otherwise guess
// one from the body, and a guess of text/html makes a browser run it.
func TestToHTTPNoSniffing(t *testing.T) {
	ts := httptest.NewServer(ToHTTP(HandlerFunc(func(w ResponseWriter, r *Request) {
		w.Write([]byte("<html><script>alert(1)</script>"))
	})))
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct, ok := resp.Header["Content-Type"]; ok {
		t.Errorf("Content-Type %q: guessed from the body", ct)
	}
}

// NewRequest copies a net/http request into one buffer: every field in
// name order (a name's values in theirs), Host last, the peer's address
// parsed, and no slice's append reaching into the next.
func TestNewRequestFields(t *testing.T) {
	hr := httptest.NewRequest("GET", "https://example.com/x/%41b/../c?q=1", nil)
	hr.Header = http.Header{"X-B": {"2", "1"}, "Accept": {"*/*"}, "X-A": {"z"}}
	for _, c := range []struct{ remote, want string }{
		{"192.0.2.1:1234", "192.0.2.1:1234"},
		{"[2001:db8::1%eth0]:443", "[2001:db8::1%eth0]:443"},
	} {
		hr.RemoteAddr = c.remote
		r, err := NewRequest(hr)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range r.Fields {
			got = append(got, string(f.Name)+": "+string(f.Value))
		}
		want := []string{"Accept: */*", "X-A: z", "X-B: 2", "X-B: 1", "Host: example.com"}
		if !slices.Equal(got, want) {
			t.Errorf("fields %q, want %q", got, want)
		}
		if r.RemoteAddr == nil || r.RemoteAddr.String() != c.want {
			t.Errorf("RemoteAddr %v, want %s", r.RemoteAddr, c.want)
		}
		if string(r.Path) != "/x/c" || string(r.RawPath) != "/x/%41b/../c" || string(r.Query) != "q=1" {
			t.Errorf("Path %q, RawPath %q, Query %q", r.Path, r.RawPath, r.Query)
		}
		target, query := string(r.Target), string(r.Query)
		r.Method = append(r.Method, "XXXXXXXX"...)
		r.Path = append(r.Path, "XXXXXXXX"...)
		if string(r.Target) != target || string(r.Query) != query || string(r.Fields[0].Name) != "Accept" {
			t.Errorf("an append to Method or Path changed another slice: target %q query %q", r.Target, r.Query)
		}
	}
}
