package engine

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pieces cuts data into n buffers of uneven sizes, some of them empty.
func pieces(data []byte, n int) [][]byte {
	var p [][]byte
	for i := range n {
		k := len(data) / (n - i)
		if i%3 == 1 {
			k /= 2
		}
		if i == n-1 {
			k = len(data)
		}
		p = append(p, data[:k])
		if i%4 == 2 {
			p = append(p, nil)
		}
		data = data[k:]
	}
	return p
}

// WriteBuffers sends the concatenation of its buffers as the body,
// whichever way it takes: at once with the header when the length is
// known and the buffers are large, a Write each when they are small or
// the length is unknown (chunked), nothing for HEAD; pipelined responses
// before it keep their order. A handler that writes more than it declared
// gets ErrContentLength, and the connection closes after the response.
func TestWriteBuffers(t *testing.T) {
	large := make([]byte, 200<<10+17)
	rand.Read(large)
	small := []byte("abcdefghijklmnopqrstuvwxyz")
	errs := make(chan error, 16)
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		path := string(r.Path)
		data := large
		if strings.Contains(path, "small") {
			data = small
		}
		if !strings.Contains(path, "unknown") {
			w.Header().SetContentLength(int64(len(data)))
		}
		if strings.Contains(path, "over") {
			w.Header().SetContentLength(int64(len(data) - 1))
		}
		if strings.Contains(path, "first") {
			w.Write(data[:5])
			data = data[5:]
		}
		n, err := w.(BuffersWriter).WriteBuffers(pieces(data, 7))
		if strings.Contains(path, "over") {
			if err != ErrContentLength {
				errs <- fmt.Errorf("%s: WriteBuffers past the declared length: %d, %v", path, n, err)
			}
			return
		}
		if err != nil || n != int64(len(data)) {
			errs <- fmt.Errorf("%s: WriteBuffers: %d, %v; want %d", path, n, err, len(data))
		}
	})
	addr := startServer(t, &Server{Handler: h})
	cases := []struct {
		path, method string
		want         []byte
		chunked      bool
	}{
		{"/large", "GET", large, false},
		{"/small", "GET", small, false},
		{"/large-unknown", "GET", large, true},
		{"/small-unknown", "GET", small, false}, // short enough to be measured
		{"/large-first", "GET", large, false},
		{"/large", "HEAD", nil, false},
	}
	c := dial(t, addr)
	br := bufio.NewReader(c)
	// All at once: each response is composed behind the ones before it.
	var reqs strings.Builder
	for _, tc := range cases {
		fmt.Fprintf(&reqs, "%s %s HTTP/1.1\r\nHost: a\r\n\r\n", tc.method, tc.path)
	}
	if _, err := io.WriteString(c, reqs.String()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		resp, body := readResponse(t, br, tc.method)
		if resp.StatusCode != 200 || !bytes.Equal([]byte(body), tc.want) {
			t.Errorf("%s %s: %d, %d bytes; want 200, %d bytes", tc.method, tc.path, resp.StatusCode, len(body), len(tc.want))
		}
		if chunked := len(resp.TransferEncoding) > 0; chunked != tc.chunked {
			t.Errorf("%s %s: chunked %v, want %v", tc.method, tc.path, chunked, tc.chunked)
		}
		if tc.method == "HEAD" && resp.ContentLength != int64(len(large)) {
			t.Errorf("HEAD %s: Content-Length %d, want %d", tc.path, resp.ContentLength, len(large))
		}
	}
	out := exchange(t, addr, "GET /large-over HTTP/1.1\r\nHost: a\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n")
	if n := strings.Count(out, "HTTP/1.1 200"); n != 1 {
		t.Errorf("a body longer than declared: %d responses, want the one, then the connection closed", n)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A body of many buffers (more than one system call offers) to a client
// that reads nothing at first fills the socket: the send waits for room
// and goes on where it stopped, and the next response follows it.
func TestWriteBuffersStalled(t *testing.T) {
	data := make([]byte, 8<<20)
	rand.Read(data)
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) == "/next" {
			w.WriteString("next")
			return
		}
		w.Header().SetContentLength(int64(len(data)))
		w.(BuffersWriter).WriteBuffers(pieces(data, 61))
	})
	addr := startServer(t, &Server{Handler: h})
	c := dial(t, addr)
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	time.Sleep(100 * time.Millisecond) // the server's socket fills
	br := bufio.NewReader(c)
	if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || !bytes.Equal([]byte(body), data) {
		t.Fatalf("GET /big: %d, %d bytes; want 200, %d bytes", resp.StatusCode, len(body), len(data))
	}
	if resp, body := readResponse(t, br, "GET"); resp.StatusCode != http.StatusOK || body != "next" {
		t.Fatalf("GET /next: %d %q", resp.StatusCode, body)
	}
}

// On a response committed chunked, or one of unknown length that the
// buffers make too long to measure, WriteBuffers of enough bytes sends
// its buffers as one chunk (in one writev with what is pending), not a
// chunk per buffer; a few bytes go as Writes would.
func TestWriteBuffersChunked(t *testing.T) {
	data := make([]byte, 30000)
	rand.Read(data)
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		if strings.Contains(string(r.Path), "fresh") {
			// Too long for a Write to measure: chunked at once.
			w.(BuffersWriter).WriteBuffers(pieces(data, 5))
			return
		}
		io.WriteString(w, "hello")
		w.Flush() // committed, chunked
		if strings.Contains(string(r.Path), "small") {
			w.(BuffersWriter).WriteBuffers([][]byte{[]byte("ab"), nil, []byte("cd")})
			return
		}
		w.(BuffersWriter).WriteBuffers(pieces(data, 5))
	})
	addr := startServer(t, &Server{Handler: h})
	for _, tc := range []struct{ path, body string }{
		{"/large", "5\r\nhello\r\n" + strconv.FormatInt(int64(len(data)), 16) + "\r\n" + string(data) + "\r\n0\r\n\r\n"},
		{"/small", "5\r\nhello\r\n2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n"},
		{"/fresh", strconv.FormatInt(int64(len(data)), 16) + "\r\n" + string(data) + "\r\n0\r\n\r\n"},
	} {
		out := exchange(t, addr, "GET "+tc.path+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		_, body, ok := strings.Cut(out, "\r\n\r\n")
		if !ok || !strings.Contains(out, "Transfer-Encoding: chunked\r\n") || body != tc.body {
			t.Errorf("GET %s: %d bytes of body, want %d, chunked %v; starts %q", tc.path, len(body), len(tc.body),
				strings.Contains(out, "Transfer-Encoding: chunked\r\n"), body[:min(len(body), 40)])
		}
	}
}
