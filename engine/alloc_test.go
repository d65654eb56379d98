//go:build !race

package engine

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// A typical GET is parsed without allocating; so is one whose path is
// made canonical, once the connection's path buffer has grown.
func TestParseHeadAllocatesNothing(t *testing.T) {
	for _, target := range []string{"/static/index.html?v=3", "//static/./a/../index%2Ehtml?v=3"} {
		req := []byte("GET " + target + " HTTP/1.1\r\nHost: example.com\r\n" +
			"User-Agent: Mozilla/5.0\r\nAccept: text/html,*/*;q=0.8\r\nAccept-Encoding: gzip, br\r\n" +
			"Accept-Language: en-GB,en;q=0.9\r\nConnection: keep-alive\r\nCookie: a=b; c=d\r\n\r\n")
		var r Request
		r.Fields = make([]Field, 0, 16)
		lim := Limits{}.withDefaults()
		var pathBuf []byte
		allocs := testing.AllocsPerRun(1000, func() {
			r.reset()
			if _, err := parseHead(req, &r, &lim, &pathBuf); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("parseHead allocates %v times per GET %s, want 0", allocs, target)
		}
		if string(r.Path) != "/static/index.html" {
			t.Errorf("GET %s: Path %q, want /static/index.html", target, r.Path)
		}
	}
}

// A keep-alive GET costs no allocation end to end: parsing, the handler's
// response, the write, and the idle wait for the next request.
func TestKeepAliveGETAllocatesNothing(t *testing.T) {
	body := []byte("<!doctype html><title>hello</title><p>Hello from the engine.</p>\n")
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(body)
	})
	addr := startServer(t, &Server{Handler: h, ServerHeader: "sluice"})
	c := dial(t, addr)
	req := []byte("GET /index.html HTTP/1.1\r\nHost: a\r\nUser-Agent: test\r\nAccept: */*\r\n\r\n")
	c.Write(req)
	br := bufio.NewReader(c)
	resp, got := readResponse(t, br, "GET")
	if resp.StatusCode != 200 || got != string(body) {
		t.Fatalf("got %d %q", resp.StatusCode, got)
	}
	// Every response has the same length (the Date field is fixed-width).
	c.Write(req)
	var raw []byte
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, line...)
		if string(line) == "\r\n" {
			break
		}
	}
	buf := make([]byte, len(raw)+len(body))
	io.ReadFull(br, buf[len(raw):])
	allocs := testing.AllocsPerRun(500, func() {
		c.Write(req)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("keep-alive GET allocates %v times per request, want 0", allocs)
	}
}

// Sending a large file (header with MSG_MORE, then sendfile) allocates
// nothing per response, corked (above corkAbove) or not.
func TestSendFileAllocatesNothing(t *testing.T) {
	for _, size := range []int{64 << 10, 80 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) { sendFileAllocatesNothing(t, size) })
	}
}

func sendFileAllocatesNothing(t *testing.T, size int) {
	path := t.TempDir() + "/big"
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		w.(FileSender).SendFile(f, 0, int64(size))
	})
	addr := startServer(t, &Server{Handler: h})
	c := dial(t, addr)
	req := []byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	allocs := responseAllocs(t, c, req, size)
	if allocs != 0 {
		t.Errorf("a sendfile response allocates %v times per request, want 0", allocs)
	}
}

var (
	requestIDName  = []byte("X-Request-Id")
	requestIDValue = []byte("0123456789abcdef0123456789abcdef")
)

// A request through Bridge (HTTP/3's way in) allocates the request's
// three parts, the response fields' values, the Content-Length's digits
// and the remote address; adding a field to the request (a request ID) and
// setting a file's response fields allocate nothing more: the request's
// fields have room for two more, and the pooled response writer's header
// keeps the room it grew.
func TestBridgeAllocs(t *testing.T) {
	srv := &Server{}
	page := []byte(strings.Repeat("x", 150) + "\n")
	h := srv.Bridge(HandlerFunc(func(w ResponseWriter, r *Request) {
		r.Fields = append(r.Fields, Field{Name: requestIDName, Value: requestIDValue})
		hdr := w.Header()
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		hdr.Set("Last-Modified", "Mon, 07 Dec 2026 00:00:00 GMT")
		hdr.Set("Etag", `"5f-97"`)
		hdr.Set("Accept-Ranges", "bytes")
		hdr.Set("X-Request-Id", "0123456789abcdef0123456789abcdef")
		hdr.Set("Alt-Svc", `h3=":443"; ma=86400`)
		hdr.SetContentLength(int64(len(page)))
		w.Write(page)
	}))
	req, w := bridgedGET()
	allocs := testing.AllocsPerRun(1000, func() {
		clear(w.h)
		h.ServeHTTP(w, req)
	})
	// Request, its buffer and fields (3), the response fields' values
	// (1), the Content-Length's digits (1), the remote address (2).
	if allocs > 7 {
		t.Errorf("a bridged request allocates %v times, want at most 7", allocs)
	}
	if got := w.h.Get("Etag"); got != `"5f-97"` {
		t.Errorf("Etag %q, want \"5f-97\"", got)
	}
}

// A body of several buffers sent with WriteBuffers (header and buffers in
// one writev) allocates nothing per response.
func TestWriteBuffersAllocatesNothing(t *testing.T) {
	const size = 100 << 10
	bufs := [][]byte{make([]byte, 32<<10), make([]byte, 32<<10), make([]byte, 32<<10), make([]byte, 4<<10)}
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		w.Header().SetContentLength(size)
		w.(BuffersWriter).WriteBuffers(bufs)
	})
	addr := startServer(t, &Server{Handler: h})
	c := dial(t, addr)
	req := []byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	allocs := responseAllocs(t, c, req, size)
	if allocs != 0 {
		t.Errorf("%v allocations per response, want 0", allocs)
	}
}

// responseAllocs returns the allocations per response to req on c, a
// keep-alive connection, whose responses have bodies of size bytes.
func responseAllocs(t *testing.T, c io.ReadWriter, req []byte, size int) float64 {
	t.Helper()
	buf := firstResponse(t, c, req, size)
	return testing.AllocsPerRun(200, func() {
		c.Write(req)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	})
}

// firstResponse sends req on c, reads its response, whose body has size
// bytes, and returns a buffer of the response's length: every response
// to req has it (the Date field's length does not change).
func firstResponse(t *testing.T, c io.ReadWriter, req []byte, size int) []byte {
	t.Helper()
	c.Write(req)
	br := bufio.NewReader(c)
	var head []byte
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			t.Fatal(err)
		}
		head = append(head, line...)
		if string(line) == "\r\n" {
			break
		}
	}
	buf := make([]byte, len(head)+size)
	if _, err := io.ReadFull(br, buf[len(head):]); err != nil {
		t.Fatal(err)
	}
	if br.Buffered() > 0 {
		t.Fatalf("%d bytes after the first response", br.Buffered())
	}
	return buf
}
