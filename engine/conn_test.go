package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RFC 9112 §9.3.2: pipelined requests are answered in order, and the
// engine batches the responses into one write when all requests arrived
// together.
func TestPipelinedResponsesInOrderInOneWrite(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	addr := serveOn(t, &Server{Handler: echo}, cl)

	var raw strings.Builder
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&raw, "GET /%d HTTP/1.1\r\nHost: a\r\n\r\n", i)
	}
	c := dial(t, addr)
	io.WriteString(c, raw.String())
	br := bufio.NewReader(c)
	for i := 0; i < 16; i++ {
		_, body := readResponse(t, br, "GET")
		if want := fmt.Sprintf("GET /%d ", i); !strings.HasPrefix(body, want) {
			t.Fatalf("response %d = %q, want prefix %q", i, body, want)
		}
	}
	if n := cl.writes.Load(); n != 1 {
		t.Errorf("16 pipelined responses took %d writes, want 1", n)
	}
}

// A body left unread by the handler is drained so the next pipelined
// request is parsed from the right place; the chunked body of the second
// request, with extensions and a trailer, is decoded exactly.
func TestPipelinedBodiesStayFramed(t *testing.T) {
	ignore := HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) == "/ignore" {
			w.WriteString("ignored")
			return
		}
		echo.Serve(w, r)
	})
	addr := startServer(t, &Server{Handler: ignore})
	raw := "POST /ignore HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world" +
		"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"5;name=value;q=\"quoted \\\" str\"\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 42\r\n\r\n" +
		"GET /last HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
	out := exchange(t, addr, raw)
	br := bufio.NewReader(strings.NewReader(out))
	if _, body := readResponse(t, br, "POST"); body != "ignored" {
		t.Errorf("first body = %q", body)
	}
	if _, body := readResponse(t, br, "POST"); body != `POST /echo path=/echo query= host=a minor=1 body="hello world" trailer:X-Sum=42` {
		t.Errorf("second body = %q", body)
	}
	resp, body := readResponse(t, br, "GET")
	if !strings.HasPrefix(body, "GET /last ") || !resp.Close {
		t.Errorf("third = %q close=%v", body, resp.Close)
	}
}

// A pipelined request whose body arrives only after the response before it
// went out: the drain that reads the late body sends that earlier response
// (it flushes before waiting), and it must not be sent again in front of
// the new head. The client reads the first response before sending the
// body, so the body is certainly late. Each case drains at a different
// point: a GET's or HEAD's body when the head is composed, a chunked one,
// and the body of a POST or PUT the handler did not read, at its end; one
// that expects 100-continue gets exactly one.
func TestPipelinedLateBodyAnsweredOnce(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		w.Header().Set("X-Path", string(r.Path))
		if r.Header("Expect") != nil {
			r.Body.Read(make([]byte, 1)) // sends 100 Continue; the rest is drained
		}
		w.WriteString(string(r.Method) + " " + string(r.Path)) // the body is not read
	})
	addr := startServer(t, &Server{Handler: h})
	for _, tt := range []struct {
		name, method, head, late string
		interim                  bool // 100 Continue comes before the late body
	}{
		{"GET with a length", "GET", "GET /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", "abcde", false},
		{"HEAD with a length", "HEAD", "HEAD /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", "abcde", false},
		{"chunked GET", "GET", "GET /b HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", "5\r\nabcde\r\n0\r\n\r\n", false},
		{"POST, body unread", "POST", "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", "abcde", false},
		{"PUT, chunked body unread", "PUT", "PUT /b HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", "5\r\nabcde\r\n0\r\n\r\n", false},
		{"PUT expecting 100-continue, body partly read", "PUT", "PUT /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", "abcde", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			br := bufio.NewReader(c)
			io.WriteString(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"+tt.head)
			if resp, body := readResponse(t, br, "GET"); resp.Header.Get("X-Path") != "/a" || body != "GET /a" {
				t.Fatalf("first response: %s %q", resp.Header.Get("X-Path"), body)
			}
			if tt.interim {
				line, err := br.ReadString('\n')
				end, _ := br.ReadString('\n')
				if err != nil || line != "HTTP/1.1 100 Continue\r\n" || end != "\r\n" {
					t.Fatalf("got %q %q, %v; want 100 Continue", line, end, err)
				}
			}
			io.WriteString(c, tt.late+"GET /c HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
			for _, want := range []struct{ method, path string }{{tt.method, "/b"}, {"GET", "/c"}} {
				resp, _ := readResponse(t, br, want.method)
				if got := resp.Header.Get("X-Path"); got != want.path || resp.StatusCode != 200 {
					t.Fatalf("response to %s %s: %d for %q", want.method, want.path, resp.StatusCode, got)
				}
			}
			if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
				t.Errorf("after the last response: %q, %v; want EOF", rest, err)
			}
		})
	}
}

func TestKeepAliveAndClose(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo})
	tests := []struct {
		name      string
		req       string
		wantClose bool
		wantField string
	}{
		{"1.1 default keep-alive", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", false, ""},
		{"1.1 Connection: close", "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", true, "Connection: close\r\n"},
		{"1.0 default close", "GET / HTTP/1.0\r\n\r\n", true, ""},
		{"1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", false, "Connection: keep-alive\r\n"},
		{"1.1 close among tokens", "GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, Close\r\n\r\n", true, "Connection: close\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			io.WriteString(c, tt.req)
			br := bufio.NewReader(c)
			resp, _ := readResponse(t, br, "GET")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			// A second request shows whether the connection stayed open.
			io.WriteString(c, "GET /again HTTP/1.1\r\nHost: a\r\n\r\n")
			_, err := http.ReadResponse(br, nil)
			if closed := err != nil; closed != tt.wantClose {
				t.Errorf("connection closed = %v (err %v), want %v", closed, err, tt.wantClose)
			}
		})
	}
	out := exchange(t, addr, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
	mustContain(t, out, "Connection: keep-alive\r\n")
}

func TestResponseFraming(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		switch string(r.Path) {
		case "/stream":
			w.WriteString("part1,")
			w.Flush()
			w.WriteString("part2")
		case "/big":
			w.Write(make([]byte, 100000))
		case "/nocontent":
			w.Header().Set("Content-Length", "5")
			w.WriteHeader(204)
		case "/notmodified":
			w.Header().Set("ETag", `"x"`)
			w.WriteHeader(304)
		case "/notmodified-described":
			// The representation a 304 stands for, as a filter may want
			// it: not sent (as net/http).
			w.Header().Set("ETag", `"x"`)
			w.Header().Set("Content-Type", "text/css")
			w.Header().SetContentLength(1234)
			w.WriteHeader(304)
		case "/declared":
			w.Header().SetContentLength(5)
			w.WriteString("hello")
		case "/empty":
		case "/hints":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(103)
			w.Header().Del("Link")
			w.WriteString("final")
		}
	})
	addr := startServer(t, &Server{Handler: h, ServerHeader: "sluice-test"})
	tests := []struct {
		req      string
		want     []string
		notWant  []string
		wantBody string
	}{
		{"GET /stream HTTP/1.1\r\nHost: a\r\n\r\n", []string{"Transfer-Encoding: chunked\r\n", "6\r\npart1,\r\n5\r\npart2\r\n0\r\n\r\n"}, []string{"Content-Length"}, ""},
		{"GET /stream HTTP/1.0\r\n\r\n", []string{"Connection: close\r\n", "\r\n\r\npart1,part2"}, []string{"Transfer-Encoding", "Content-Length"}, ""},
		{"GET /big HTTP/1.1\r\nHost: a\r\n\r\n", []string{"Transfer-Encoding: chunked\r\n"}, nil, ""},
		{"HEAD /declared HTTP/1.1\r\nHost: a\r\n\r\n", []string{"Content-Length: 5\r\n"}, []string{"hello"}, ""},
		{"HEAD /stream HTTP/1.1\r\nHost: a\r\n\r\n", nil, []string{"part1", "0\r\n\r\n"}, ""},
		{"GET /nocontent HTTP/1.1\r\nHost: a\r\n\r\n", []string{"HTTP/1.1 204 No Content\r\n"}, []string{"Content-Length", "Transfer-Encoding"}, ""},
		{"GET /notmodified HTTP/1.1\r\nHost: a\r\n\r\n", []string{"HTTP/1.1 304 Not Modified\r\n", "ETag: \"x\"\r\n"}, []string{"Content-Length", "Transfer-Encoding"}, ""},
		{"GET /notmodified-described HTTP/1.1\r\nHost: a\r\n\r\n", []string{"HTTP/1.1 304 Not Modified\r\n", "ETag: \"x\"\r\n"}, []string{"Content-Length", "Content-Type", "Transfer-Encoding"}, ""},
		{"GET /empty HTTP/1.1\r\nHost: a\r\n\r\n", []string{"HTTP/1.1 200 OK\r\n", "Content-Length: 0\r\n", "Server: sluice-test\r\n", "Date: "}, nil, ""},
		{"GET /hints HTTP/1.1\r\nHost: a\r\n\r\n", []string{"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\n", "Content-Length: 5\r\n"}, nil, ""},
		{"GET /hints HTTP/1.0\r\n\r\n", []string{"HTTP/1.1 200 OK\r\n"}, []string{"103"}, ""},
	}
	for _, tt := range tests {
		out := exchange(t, addr, tt.req)
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: response lacks %q:\n%s", tt.req, w, out)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(out, w) {
				t.Errorf("%q: response has %q:\n%s", tt.req, w, out)
			}
		}
	}
	// The chunked 100000-byte body decodes to exactly that.
	out := exchange(t, addr, "GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
	_, body := readResponse(t, bufio.NewReader(strings.NewReader(out)), "GET")
	if len(body) != 100000 {
		t.Errorf("big body = %d bytes", len(body))
	}
}

// RFC 9110 §10.1.1: the server sends 100 Continue when the handler reads
// the body, and skips it (closing afterwards) when the handler answers
// without reading.
func TestExpectContinue(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) == "/refuse" {
			Error(w, 401, "no")
			return
		}
		echo.Serve(w, r)
	})
	addr := startServer(t, &Server{Handler: h})

	c := dial(t, addr)
	io.WriteString(c, "PUT /up HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("got %q, %v; want 100 Continue", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "hello")
	resp, body := readResponse(t, br, "PUT")
	if resp.StatusCode != 200 || !strings.Contains(body, `body="hello"`) {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}

	c2 := dial(t, addr)
	io.WriteString(c2, "PUT /refuse HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	resp, _ = readResponse(t, bufio.NewReader(c2), "PUT")
	if resp.StatusCode != 401 || !resp.Close {
		t.Errorf("refusal: status %d close %v, want 401 and close", resp.StatusCode, resp.Close)
	}

	out := exchange(t, addr, "PUT /up HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nExpect: something-else\r\n\r\n")
	if statusOf(out) != 417 {
		t.Errorf("unknown expectation: %q, want 417", out)
	}
}

// RFC 9110 §10.1.1: a request with an expectation other than 100-continue
// is answered 417 at once, without waiting for a body the client may be
// holding back (as for an unsent 100 Continue, the connection then
// closes); repeated Expect lines are one list; a request without a body
// keeps its connection.
func TestUnknownExpectationAnsweredAtOnce(t *testing.T) {
	// With a body timeout of an hour, a 417 that waited for the body
	// would not come before the client's deadline.
	addr := startServer(t, &Server{Handler: echo, Limits: Limits{BodyTimeout: time.Hour}})
	for _, expect := range []string{
		"Expect: foo\r\n",
		"Expect: 100-continue, foo\r\n",
		"Expect: foo\r\nExpect: 100-continue\r\n",
		"Expect: 100-continue\r\nExpect: foo\r\n",
	} {
		c := dial(t, addr)
		io.WriteString(c, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"+expect+"\r\n") // body withheld
		br := bufio.NewReader(c)
		resp, _ := readResponse(t, br, "POST")
		if resp.StatusCode != 417 || !resp.Close {
			t.Errorf("%q: %d close=%v, want 417 and close", expect, resp.StatusCode, resp.Close)
		}
		if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
			t.Errorf("%q: after the 417: %q, %v; want EOF", expect, rest, err)
		}
	}

	out := exchange(t, addr, "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nExpect: foo\r\n\r\n"+
		"GET /after HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(strings.NewReader(out))
	if resp, _ := readResponse(t, br, "POST"); resp.StatusCode != 417 || resp.Close {
		t.Errorf("no body: %d close=%v, want 417 keeping the connection", resp.StatusCode, resp.Close)
	}
	if _, body := readResponse(t, br, "GET"); !strings.HasPrefix(body, "GET /after ") {
		t.Errorf("after the 417: %q", body)
	}

	// 100-continue on two lines is still 100-continue.
	c := dial(t, addr)
	io.WriteString(c, "PUT /up HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\nExpect: 100-continue\r\n\r\n")
	br = bufio.NewReader(c)
	if line, err := br.ReadString('\n'); err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("got %q, %v; want 100 Continue", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "hello")
	if resp, body := readResponse(t, br, "PUT"); resp.StatusCode != 200 || !strings.Contains(body, `body="hello"`) {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
}

func TestDrainLimitClosesConnection(t *testing.T) {
	ignore := HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) == "/stream" {
			w.WriteString("ok")
			w.Flush() // committed while the handler could still read
			return
		}
		w.WriteString("ok")
	})
	addr := startServer(t, &Server{Handler: ignore, Limits: Limits{MaxDrainBytes: 1000}})
	next := "GET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
	// A connection that closes after a response says so in it (RFC 9112
	// §9.6): the body too long to drain, or one that turns out malformed.
	for _, tt := range []struct {
		name, head, body string
		responses        int // 2: the body was drained and /next answered
	}{
		{"drainable POST", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 900\r\n\r\n", strings.Repeat("x", 900), 2},
		{"drainable chunked GET", "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", "3\r\nabc\r\n0\r\n\r\n", 2},
		{"drainable streamed POST", "POST /stream HTTP/1.1\r\nHost: a\r\nContent-Length: 900\r\n\r\n", strings.Repeat("x", 900), 2},
		{"long POST", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n", strings.Repeat("x", 100000), 1},
		{"long streamed POST", "POST /stream HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n", strings.Repeat("x", 100000), 1},
		{"long GET", "GET /stream HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n", strings.Repeat("x", 100000), 1},
		{"malformed chunked GET", "GET /stream HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", "zz\r\nabc\r\n0\r\n\r\n", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := exchange(t, addr, tt.head+tt.body+next)
			br := bufio.NewReader(strings.NewReader(out))
			resp, body := readResponse(t, br, "GET")
			if resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("first response %d %q", resp.StatusCode, body)
			}
			if n := strings.Count(out, "HTTP/1.1 200"); n != tt.responses {
				t.Errorf("%d responses, want %d:\n%s", n, tt.responses, out)
			}
			if closed := tt.responses == 1; resp.Close != closed {
				t.Errorf("first response announces close = %v, want %v:\n%s", resp.Close, closed, out)
			}
		})
	}
}

// A response that closes the connection (the handler says so, or the
// client asked) goes out at once, without waiting for the rest of a body
// the handler left unread: a CGI program's 504 waited for a slow upload.
func TestCloseResponseDoesNotDrain(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) == "/close" {
			w.Header().Set("Connection", "close")
		}
		w.WriteString("no")
	})
	addr := startServer(t, &Server{Handler: h, Limits: Limits{BodyTimeout: time.Minute}})
	for _, head := range []string{
		"POST /close HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: 100000\r\n\r\n",
		"POST /close HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
	} {
		c := dial(t, addr) // its deadline fails the test if the response waits for the body
		io.WriteString(c, head+"part of the body")
		resp, body := readResponse(t, bufio.NewReader(c), "POST")
		if resp.StatusCode != 200 || body != "no" || !resp.Close {
			t.Errorf("%q: %d %q close=%v", head, resp.StatusCode, body, resp.Close)
		}
	}
}

func TestBodyLimits(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo, Limits: Limits{MaxBodyBytes: 10}})
	out := exchange(t, addr, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world")
	if statusOf(out) != 413 {
		t.Errorf("Content-Length over limit: %q, want 413", out)
	}
	out = exchange(t, addr, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n")
	if statusOf(out) != 413 {
		t.Errorf("chunked body over limit: %q, want 413", out)
	}
	out = exchange(t, addr, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n")
	if statusOf(out) != 400 {
		t.Errorf("chunk without CRLF: %q, want 400", out)
	}
	out = exchange(t, addr, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nshort")
	if statusOf(out) != 400 {
		t.Errorf("truncated body: %q, want 400", out)
	}
}

func TestUnknownMethodAndRefusals(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo, ExtraMethods: []string{"PROPFIND"}})
	tests := []struct {
		req  string
		want int
	}{
		{"BREW / HTTP/1.1\r\nHost: a\r\n\r\n", 501},
		{"PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n", 200},
		{"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
		{"GET / HTTP/1.1\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
		{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
		{"GET /" + strings.Repeat("a", 9000) + " HTTP/1.1\r\nHost: a\r\n\r\n", 414},
		{"GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("b", 17000) + "\r\n\r\n", 431},
	}
	for _, tt := range tests {
		out := exchange(t, addr, tt.req)
		if got := statusOf(out); got != tt.want {
			t.Errorf("%.60q: status %d, want %d\n%s", tt.req, got, tt.want, out)
		}
		if tt.want >= 400 && !strings.Contains(out, "Content-Type: text/plain") {
			t.Errorf("%.60q: error without a text body:\n%s", tt.req, out)
		}
	}
}

// A 501 for an unknown method keeps the connection: the head was framed.
func TestUnknownMethodKeepsConnection(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo})
	out := exchange(t, addr, "BREW / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /after HTTP/1.1\r\nHost: a\r\n\r\n")
	if !strings.Contains(out, "501 Not Implemented") || !strings.Contains(out, "GET /after") {
		t.Errorf("got:\n%s", out)
	}
}

func TestHandlerPanicAnswers500AndServerSurvives(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) == "/panic" {
			panic("boom")
		}
		w.WriteString("alive")
	})
	addr := startServer(t, &Server{Handler: h, Logger: discardLogger()})
	out := exchange(t, addr, "GET /panic HTTP/1.1\r\nHost: a\r\n\r\n")
	if statusOf(out) != 500 {
		t.Errorf("panic: %q, want 500", out)
	}
	out = exchange(t, addr, "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n")
	mustContain(t, out, "200 OK", "alive")
}

// Header values a handler sets cannot split the response.
func TestResponseHeaderInjection(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		w.Header().Set("X-Evil", "a\r\nSet-Cookie: stolen=1")
		w.WriteString("ok")
	})
	addr := startServer(t, &Server{Handler: h})
	out := exchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if strings.Contains(out, "\r\nSet-Cookie") {
		t.Errorf("header injection got through:\n%s", out)
	}
	mustContain(t, out, "X-Evil: a  Set-Cookie: stolen=1\r\n")
}

// RFC 9112 §3.2.2: with an absolute-form target the received Host field
// is ignored and replaced with the target's authority, for every view of
// the request: Host, the Host field (which CGI's HTTP_HOST comes from), and
// net/http's.
func TestAbsoluteFormUsesTargetAuthority(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo})
	out := exchange(t, addr, "GET http://example.com:8080/x?y=1 HTTP/1.1\r\nHost: other\r\n\r\n")
	mustContain(t, out, "path=/x query=y=1 host=example.com:8080")

	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		fmt.Fprintf(writerOnly{w}, "host=%s field=%s list=%s", r.Host, r.Header("Host"), r.HeaderList("Host"))
		hr, err := NewHTTPRequest(r)
		if err != nil {
			t.Error(err)
			return
		}
		fmt.Fprintf(writerOnly{w}, " http=%s http-field=%q", hr.Host, hr.Header.Get("Host"))
	})
	addr = startServer(t, &Server{Handler: h})
	out = exchange(t, addr, "GET http://victim.example/env HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n")
	mustContain(t, out, `host=victim.example field=victim.example list=victim.example http=victim.example http-field=""`)
	if strings.Contains(out, "attacker") {
		t.Errorf("the received Host reached the handler:\n%s", out)
	}
}

func TestDateHeaderIsCurrent(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo})
	out := exchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, _ := readResponse(t, bufio.NewReader(strings.NewReader(out)), "GET")
	d, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		t.Fatalf("Date %q: %v", resp.Header.Get("Date"), err)
	}
	if diff := time.Since(d); diff < -2*time.Second || diff > time.Minute {
		t.Errorf("Date %v is %v away from now", d, diff)
	}
	if resp.Header.Get("Server") != "" {
		t.Errorf("zero Server.ServerHeader sent Server: %q", resp.Header.Get("Server"))
	}
}

// RFC 9110 §9.3.6: bytes after a CONNECT are not requests; the engine
// does not tunnel, so the connection ends with the CONNECT's response. A
// 2xx to CONNECT carries neither Content-Length nor Transfer-Encoding
// (RFC 9110 §8.6, §9.3.6: MUST NOT): its body ends with the connection.
func TestConnectEndsConnection(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		switch string(r.Host) {
		case "flush.example:443": // would be chunked
			w.WriteString("tunnel? ")
			w.Flush()
			w.WriteString("no")
		case "length.example:443":
			w.Header().SetContentLength(10)
			w.WriteString("tunnel? no")
		case "deny.example:443":
			Error(w, 403, "no tunnels")
		default:
			w.WriteString("tunnel? no")
		}
	})
	addr := startServer(t, &Server{Handler: h})
	for _, host := range []string{"example.com:443", "flush.example:443", "length.example:443"} {
		out := exchange(t, addr, "CONNECT "+host+" HTTP/1.1\r\nHost: "+host+"\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n")
		if strings.Count(out, "HTTP/1.1 ") != 1 || !strings.Contains(out, "Connection: close") {
			t.Errorf("%s: got:\n%s", host, out)
		}
		if statusOf(out) != 200 || strings.Contains(out, "Content-Length") || strings.Contains(out, "Transfer-Encoding") ||
			!strings.HasSuffix(out, "\r\n\r\ntunnel? no") {
			t.Errorf("%s: a 2xx to CONNECT is not close-delimited:\n%s", host, out)
		}
	}
	// Other statuses are framed as usual.
	out := exchange(t, addr, "CONNECT deny.example:443 HTTP/1.1\r\nHost: deny.example:443\r\n\r\n")
	resp, body := readResponse(t, bufio.NewReader(strings.NewReader(out)), "CONNECT")
	if resp.StatusCode != 403 || resp.ContentLength != int64(len(body)) || !resp.Close {
		t.Errorf("403 to CONNECT:\n%s", out)
	}
}

// A flood of empty lines before the request line is refused, not dropped.
func TestEmptyLineFloodRefused(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo})
	out := exchange(t, addr, strings.Repeat("\r\n", 20000)+"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if got := statusOf(out); got != 431 {
		t.Errorf("status %d, want 431:\n%.300s", got, out)
	}
}

// A bare CR in a head is refused with 400 as soon as it is seen, not once
// the rest of the head arrives or the header timeout passes (an hour
// here, well past the client's deadline).
func TestBareCRRefusedAtOnce(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo, Limits: Limits{HeaderTimeout: time.Hour}})
	for _, partial := range []string{"GET / HTTP/1.1\rHost: a", "GET / HTTP/1.1\r\nHost: a\rX: b"} {
		c := dial(t, addr)
		io.WriteString(c, partial) // the rest of the head is never sent
		out, err := io.ReadAll(c)
		if err != nil || statusOf(string(out)) != 400 || !strings.Contains(string(out), "bare CR") {
			t.Errorf("%q: %v\n%s", partial, err, out)
		}
	}
}

// A bare LF in chunked framing is refused with a message that says so.
func TestChunkedBareLF(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo})
	out := exchange(t, addr, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n")
	if statusOf(out) != 400 || !strings.Contains(out, "not ended by CRLF") {
		t.Errorf("got:\n%.300s", out)
	}
}

// A handler that panics mid-body (http.ErrAbortHandler, as pipe does when
// content fails) leaves a response that cannot be mistaken for complete.
func TestAbortAfterCommitTruncates(t *testing.T) {
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		w.WriteString("partial")
		w.Flush()
		panic(http.ErrAbortHandler)
	})
	addr := startServer(t, &Server{Handler: h})
	out := exchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if !strings.Contains(out, "partial") || strings.HasSuffix(out, "0\r\n\r\n") {
		t.Errorf("aborted chunked response ends like a complete one:\n%q", out)
	}
	_, err := http.ReadResponse(bufio.NewReader(strings.NewReader(out)), nil)
	if err != nil {
		t.Fatal(err)
	}
}

func TestServerStats(t *testing.T) {
	s := &Server{Handler: echo}
	addr := startServer(t, s)
	exchange(t, addr, "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	exchange(t, addr, "GET / HTTP/1.1\r\n\r\n") // no Host: refused
	waitFor(t, "connections to close", func() bool { return s.OpenConns() == 0 })
	st := s.Stats()
	if st.Accepted != 2 || st.Requests != 2 || st.Refused != 1 || st.BytesWritten == 0 || st.Open != 0 {
		t.Errorf("stats = %+v", st)
	}
}

// The cached Date line follows the clock: a server whose coarse clock is
// a second behind another's reuses the newer line, and a clock stepped
// back further gets its own.
func TestDateLineFollowsClock(t *testing.T) {
	saved := cachedDate.Load()
	defer cachedDate.Store(saved)
	cachedDate.Store(nil)
	const sec = int64(time.Second)
	date := func(unix int64) string { return string(appendDate(nil, unix*sec)) }
	if got, want := date(1_700_000_000), "Date: Tue, 14 Nov 2023 22:13:20 GMT\r\n"; got != want {
		t.Fatalf("appendDate = %q, want %q", got, want)
	}
	if got := date(1_699_999_999); got != "Date: Tue, 14 Nov 2023 22:13:20 GMT\r\n" {
		t.Errorf("a clock one second behind got %q, want the newer line", got)
	}
	if got := date(1_600_000_000); got != "Date: Sun, 13 Sep 2020 12:26:40 GMT\r\n" {
		t.Errorf("a clock stepped back got %q", got)
	}
}

// Requests on one connection, each sent after the previous response (the
// session is kept across the wait when the next request is in, returned
// to the pool when it is not), one with a head larger than the pooled
// read buffer in the middle: each is parsed from its own bytes.
func TestKeepAliveSessionAcrossWaits(t *testing.T) {
	s := &Server{Handler: echo}
	addr := startServer(t, s)
	c := dial(t, addr)
	br := bufio.NewReader(c)
	big := strings.Repeat("v", 3*readBufSize)
	for i, req := range []string{
		"GET /1 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /3 HTTP/1.1\r\nHost: a\r\nX-Big: " + big + "\r\n\r\n",
		"GET /4 HTTP/1.1\r\nHost: b\r\n\r\n",
		"POST /5 HTTP/1.1\r\nHost: c\r\nContent-Length: 3\r\n\r\nxyz",
		"GET /6 HTTP/1.1\r\nHost: d\r\n\r\n",
	} {
		if i%2 == 1 {
			waitForIdle(t, s, 1) // the server waits for it
		}
		io.WriteString(c, req)
		resp, body := readResponse(t, br, "GET")
		want := strings.Fields(req)[0] + " " + strings.Fields(req)[1]
		if resp.StatusCode != 200 || !strings.HasPrefix(body, want) {
			t.Fatalf("request %d: %d %q, want %q...", i+1, resp.StatusCode, body, want)
		}
		if i == 4 && !strings.Contains(body, `body="xyz"`) {
			t.Errorf("request 5: %q lacks its body", body)
		}
	}
}

// A request that arrives while the one before it is in its handler is
// served at once: the notice of its arrival, which came while the handler
// ran, is kept for the wait that follows. A wait that dropped it would sit
// until something else woke it; over a Unix socket whose client reads
// nothing, nothing does until the idle notice moves the wait: the test
// turns idle notices off, so such a request is never served, and asserts
// that no wait moved. On TCP, the engine's own listener, acknowledgements
// may wake such a wait by chance.
func TestRequestArrivingDuringHandlerIsServed(t *testing.T) {
	skipUnlessLinux(t, "reads a socket's queue (SIOCINQ)")
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			var ln net.Listener
			var err error
			if network == "tcp" {
				ln, err = Listen("tcp", "127.0.0.1:0")
			} else {
				ln, err = net.Listen("unix", filepath.Join(t.TempDir(), "s"))
			}
			if err != nil {
				t.Fatal(err)
			}
			al := &acceptedListener{Listener: ln, conns: make(chan net.Conn, 1)}
			started, next := make(chan struct{}), make(chan struct{})
			served := make(chan string, 8)
			h := HandlerFunc(func(w ResponseWriter, r *Request) {
				if string(r.Path) == "/hold" {
					started <- struct{}{}
					<-next
				}
				w.WriteString("ok")
				served <- string(r.Path)
			})
			s := &Server{Handler: h, Limits: Limits{IdleTimeout: time.Hour, BusyIdleTimeout: time.Hour}}
			s.init()
			s.tm.SetIdleNotice(0) // nothing but the request may end a wait
			// Every wake counts as soon, however slow a loaded machine
			// makes the test: a late one would park the connection again
			// after its answer (a sparse client), a move of its own.
			s.sparseAfter.Store(int64(time.Hour))
			addr := serveOn(t, s, al)
			c, err := net.Dial(network, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			receive := func(ch <-chan struct{}, what string) {
				t.Helper()
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s never happened", what)
				}
			}
			wait := func(want string) {
				t.Helper()
				select {
				case got := <-served:
					if got != want {
						t.Fatalf("served %s, want %s", got, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s was never served", want)
				}
			}
			get := func(path string) { io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n") }
			moves := idleMoves.Load()
			get("/first")
			wait("/first")
			sc := <-al.conns // the server's end, accepted once the request came in
			// After its first exchange a connection's wait moves at once.
			waitFor(t, "the first wait to move", func() bool { return idleMoves.Load() > moves })
			for i := 0; i < 3; i++ {
				moves = idleMoves.Load()
				get("/hold")
				receive(started, "reading /hold")
				get("/next") // while /hold is in its handler
				waitReceived(t, sc, len("GET /next HTTP/1.1\r\nHost: a\r\n\r\n"))
				next <- struct{}{}
				wait("/hold")
				wait("/next")
				if n := idleMoves.Load() - moves; n != 0 {
					t.Fatalf("round %d: the wait moved %d times, want none", i, n)
				}
			}
		})
	}
}

// Once a connection has served a request, the next ones are served from
// the wait itself; requests there that need more than the bytes in hand
// (a body, chunked or not; a head split across packets; a refused head)
// are handed back and served in full, pipelined bodiless requests are
// answered in order in one write, and Connection: close still closes.
func TestKeepAliveRequestsAfterTheFirst(t *testing.T) {
	skipUnlessLinux(t, "reads sockets' queues (SIOCINQ, SIOCOUTQ)")
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	al := &acceptedListener{Listener: ln, conns: make(chan net.Conn, 2)}
	cl := &countingListener{Listener: al}
	s := &Server{Handler: echo}
	addr := serveOn(t, s, cl)
	c := dial(t, addr)
	var sc net.Conn // the server's end, accepted once the first request came in
	br := bufio.NewReader(c)
	send := func(parts ...string) {
		t.Helper()
		for i, p := range parts {
			if i > 0 {
				waitConsumed(t, c, sc) // the server read the part before on its own
			}
			if _, err := io.WriteString(c, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	expect := func(method, want string) *http.Response {
		t.Helper()
		resp, body := readResponse(t, br, method)
		if !strings.HasPrefix(body, want) {
			t.Fatalf("got %d %q, want %q...", resp.StatusCode, body, want)
		}
		return resp
	}
	send("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n")
	expect("GET", "GET /1 ")
	sc = <-al.conns

	var batch strings.Builder
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&batch, "GET /p%d HTTP/1.1\r\nHost: a\r\n\r\n", i)
	}
	waitForIdle(t, s, 1) // the server is waiting
	before := cl.writes.Load()
	send(batch.String())
	for i := 0; i < 16; i++ {
		expect("GET", fmt.Sprintf("GET /p%d ", i))
	}
	if n := cl.writes.Load() - before; n != 1 {
		t.Errorf("16 pipelined responses took %d writes, want 1", n)
	}

	send("POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
	if resp := expect("POST", "POST /2 "); resp.Close {
		t.Error("closed after a body")
	}
	send("GET /3 HTTP/1.1\r\nHost: a\r\n\r\nPOST /4 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	expect("GET", "GET /3 ")
	expect("POST", `POST /4 path=/4 query= host=a minor=1 body="abc"`)
	send("GET /5 HTTP/1.1\r\nHo", "st: a\r\n\r\n")
	expect("GET", "GET /5 ")
	send("GET /6 HTTP/1.1\r\nHost: a\r\n\r\nGET /7 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n", "ok")
	expect("GET", "GET /6 ")
	expect("GET", `GET /7 path=/7 query= host=a minor=1 body="ok"`)
	send("GET /8 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	if resp := expect("GET", "GET /8 "); !resp.Close {
		t.Error("Connection: close not honoured")
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after close: %q, %v; want EOF", rest, err)
	}

	// A head the parser refuses, after a request served from the wait.
	c2 := dial(t, addr)
	io.WriteString(c2, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n")
	br2 := bufio.NewReader(c2)
	readResponse(t, br2, "GET")
	waitForIdle(t, s, 1)
	io.WriteString(c2, "GET /2 HTTP/1.1\r\nHost: a\r\n\r\n")
	readResponse(t, br2, "GET")
	waitForIdle(t, s, 1)
	io.WriteString(c2, "GET /3 HTTP/1.1\r\nHost : a\r\n\r\n")
	if resp, _ := readResponse(t, br2, "GET"); resp.StatusCode != 400 || !resp.Close {
		t.Errorf("refused head: %d close=%v, want 400 and close", resp.StatusCode, resp.Close)
	}
}
