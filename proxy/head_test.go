package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// badResponses are upstream responses that must never be passed on: each
// is ambiguous or malformed by RFC 9112, and answered 502.
var badResponses = []struct{ name, resp string }{
	{"CL and TE", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
	{"TE and CL", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"},
	{"differing CL", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"},
	{"CL list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello"},
	{"CL sign", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello"},
	{"CL hex", "HTTP/1.1 200 OK\r\nContent-Length: 0x5\r\n\r\nhello"},
	{"TE not ending in chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nhello"},
	{"TE gzip only", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nhello"},
	{"TE unknown coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"},
	{"TE chunked twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
	{"TE in HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
	{"TE empty", "HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\n"},
	{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n"},
	{"space before first field", "HTTP/1.1 200 OK\r\n X-A: a\r\nContent-Length: 0\r\n\r\n"},
	{"bare CR in value", "HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n"},
	{"bare CR line end", "HTTP/1.1 200 OK\r\nX-A: a\r\r\nContent-Length: 0\r\n\r\n"},
	{"bare CR in status line", "HTTP/1.1 200 O\rK\r\nContent-Length: 0\r\n\r\n"},
	{"mixed line ends", "HTTP/1.1 200 OK\r\nX-A: a\nContent-Length: 0\r\n\r\n"},
	{"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello"},
	{"invalid field name", "HTTP/1.1 200 OK\r\nX(A): a\r\nContent-Length: 0\r\n\r\n"},
	{"no colon", "HTTP/1.1 200 OK\r\nX-A\r\nContent-Length: 0\r\n\r\n"},
	{"NUL in value", "HTTP/1.1 200 OK\r\nX-A: a\x00\r\nContent-Length: 0\r\n\r\n"},
	{"status two digits", "HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n"},
	{"status above 599", "HTTP/1.1 600 \r\nContent-Length: 0\r\n\r\n"},
	{"status below 100", "HTTP/1.1 099 \r\nContent-Length: 0\r\n\r\n"},
	{"status letters", "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n"},
	{"status no space", "HTTP/1.1 200OK\r\nContent-Length: 0\r\n\r\n"},
	{"HTTP/2", "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n"},
	{"lower-case version", "http/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
	{"not HTTP", "SSH-2.0-OpenSSH_9.2\r\n\r\n"},
	{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"},
	{"chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nhello\r\n0\r\n\r\n"},
	{"bad chunk extension", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;\r\nhello\r\n0\r\n\r\n"},
	{"chunk bare LF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n"},
	{"chunk data too long", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello!\r\n0\r\n\r\n"},
	{"over-large head", "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", DefaultMaxHeaderBytes) + "\r\nContent-Length: 0\r\n\r\n"},
}

// Every malformed or ambiguous upstream response is answered 502, and
// nothing of it reaches the client. (Those whose fault is in the body —
// bad chunking — are found after the head has gone, so the client's
// connection is cut instead: it never sees a complete response.)
func TestBadUpstreamResponses(t *testing.T) {
	for _, c := range badResponses {
		t.Run(c.name, func(t *testing.T) {
			up := newRawUpstream(t, c.resp)
			srv, _ := front(t, Options{Upstreams: []string{up.URL}, Retries: -1})
			resp, err := sluicetest.Client.Get(srv.URL + "/")
			if err != nil {
				return // cut mid-body: the client saw no complete response
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return // cut mid-body
			}
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "malformed") {
				t.Fatalf("got %d %q, want 502 saying malformed", resp.StatusCode, body)
			}
		})
	}
}

// goodResponses parse, and net/http reads them alike.
var goodResponses = []string{
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.0 200 OK\r\n\r\nuntil close",
	"HTTP/1.1 200 OK\nContent-Length: 2\n\nhi",
	"HTTP/1.1 299 Whatever Reason\r\nX-Obs: caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n",
}

func TestParseResponseHeadGood(t *testing.T) {
	for _, resp := range goodResponses {
		var h responseHead
		if _, err := parseResponseHead([]byte(resp), &h, DefaultMaxHeaderBytes, DefaultMaxHeaderCount); err != nil {
			t.Errorf("parseResponseHead(%q) = %v, want success", resp, err)
		}
		differential(t, []byte(resp))
	}
}

// readOurs reads data as the proxy reads an upstream response to a GET:
// the head, then the body decoded. ok is false for a refused response.
func readOurs(data []byte) (h *responseHead, body []byte, trailer []field, err error) {
	uc := &upConn{nc: &bytesConn{Reader: bytes.NewReader(data)}, buf: make([]byte, 512)}
	h = &responseHead{}
	if err := uc.readHead(h, 4096, 64); err != nil {
		return nil, nil, nil, err
	}
	if h.status < 200 {
		return h, nil, nil, nil
	}
	var b bodyReader
	mode := bodyClose
	switch {
	case h.status == 204 || h.status == 304:
		mode = bodyNone
	case h.chunked:
		mode = bodyChunked
	case h.contentLength >= 0:
		mode = bodyLength
	}
	b.start(uc, mode, h.contentLength, 4096, 64)
	body, err = io.ReadAll(&b)
	return h, body, b.trailer, err
}

// differential checks one input against net/http's http.ReadResponse: a
// response we accept must be one net/http accepts, with the same status,
// the same fields and the same body.
func differential(t *testing.T, data []byte) {
	t.Helper()
	h, body, _, err := readOurs(data)
	if err != nil || h.status < 200 {
		return // we refuse (net/http may be laxer) or it is interim
	}
	resp, herr := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), &http.Request{Method: "GET"})
	if herr != nil {
		t.Fatalf("we accept %q (status %d), net/http refuses: %v", data, h.status, herr)
	}
	hbody, herr := io.ReadAll(resp.Body)
	if herr != nil {
		t.Fatalf("we read the body of %q, net/http fails: %v", data, herr)
	}
	if resp.StatusCode != h.status {
		t.Fatalf("%q: status %d, net/http %d", data, h.status, resp.StatusCode)
	}
	if !bytes.Equal(hbody, body) {
		t.Fatalf("%q: body %q, net/http %q", data, body, hbody)
	}
	for _, f := range h.fields {
		name := http.CanonicalHeaderKey(string(f.name))
		if name == "Transfer-Encoding" || name == "Content-Length" && h.chunked {
			continue // net/http moves these out of Header
		}
		found := false
		for _, v := range resp.Header.Values(name) {
			found = found || v == string(f.value)
		}
		if !found && name != "Content-Length" {
			t.Fatalf("%q: field %s: %q not in net/http's %q", data, name, f.value, resp.Header.Values(name))
		}
	}
}

// bytesConn is a net.Conn reading from a Reader, for the parser alone.
type bytesConn struct {
	io.Reader
	nopConn
}

// A trailer section is bounded as the head is, by bytes and by fields:
// 64 fields (readOurs' bound) pass, 65 are refused.
func TestTrailerFieldCount(t *testing.T) {
	for _, c := range []struct {
		fields int
		err    error
	}{{64, nil}, {65, errHeadTooLarge}} {
		var tr strings.Builder
		for i := range c.fields {
			fmt.Fprintf(&tr, "X-T%d: %d\r\n", i, i)
		}
		resp := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n" + tr.String() + "\r\n"
		_, body, trailer, err := readOurs([]byte(resp))
		if !errors.Is(err, c.err) {
			t.Errorf("%d trailer fields: %v, want %v", c.fields, err, c.err)
		}
		if c.err == nil && (string(body) != "hello" || len(trailer) != c.fields) {
			t.Errorf("%d trailer fields: body %q and %d fields, want hello and %d", c.fields, body, len(trailer), c.fields)
		}
	}
}

func TestParseResponseHeadBad(t *testing.T) {
	for _, c := range badResponses {
		_, _, _, err := readOurs([]byte(c.resp))
		var bad *BadResponseError
		if c.name == "over-large head" {
			if !errors.Is(err, errHeadTooLarge) {
				t.Errorf("%s: %v, want %v", c.name, err, errHeadTooLarge)
			}
			continue
		}
		if !errors.As(err, &bad) {
			t.Errorf("%s: read %q: %v, want a *BadResponseError", c.name, c.resp, err)
		}
	}
}
