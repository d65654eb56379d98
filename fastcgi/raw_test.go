package fastcgi

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// rawServer is a FastCGI server that reads a request's records up to
// the empty STDIN record, answers with fixed bytes and waits for the
// next request on the connection (or, closing, closes it). It counts
// the connections it accepted.
type rawServer struct {
	addr     string
	conns    atomic.Int64
	closed   atomic.Int64 // connections the server closed
	requests atomic.Int64 // requests read
}

func newRawServer(t *testing.T, answer string, closing bool) *rawServer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raw.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &rawServer{addr: "unix:" + path}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go func() {
				defer s.closed.Add(1)
				defer c.Close()
				for readRequest(c) {
					s.requests.Add(1)
					if _, err := io.WriteString(c, answer); err != nil || closing {
						return
					}
				}
			}()
		}
	}()
	return s
}

// readRequest reads records until the empty STDIN record.
func readRequest(c net.Conn) bool {
	var h [headerLen]byte
	for {
		if _, err := io.ReadFull(c, h[:]); err != nil {
			return false
		}
		n := int(h[4])<<8 | int(h[5]) + int(h[6])
		if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			return false
		}
		if h[1] == typeStdin && n == 0 {
			return true
		}
	}
}

// TestRawResponses sends requests to a server answering fixed bytes:
// what the client gets, and whether the connection is kept.
func TestRawResponses(t *testing.T) {
	ok := rec(6, 1, "Content-Type: text/plain\r\n\r\nhi", 0) + end(0, 0)
	for _, tc := range []struct {
		name    string
		answer  string
		status  int    // 0: the response is cut short (or, if nothing reached the client yet, replaced by a 500)
		body    string // when status != 0
		reuse   bool   // the connection served the next request
		closing bool   // the server closes the connection after answering
	}{
		{"ok", ok, 200, "hi", true, false},
		{"padding and stderr", rec(7, 1, "warn\n", 3) + rec(6, 1, "Status: 201 Created\nContent-Type: a/b\n\nx", 6) + rec(6, 1, "", 0) + rec(3, 1, "\x00\x00\x00\x00\x00\x00\x00\x00", 4), 201, "x", true, false},
		{"head over records", rec(6, 1, "Content-Ty", 0) + rec(6, 1, "pe: a/b\r", 0) + rec(6, 1, "\n\r\nbody", 0) + end(0, 0), 200, "body", true, false},
		{"management record first", rec(11, 0, "\x09\x00\x00\x00\x00\x00\x00\x00", 0) + ok, 200, "hi", true, false},
		{"bytes after END_REQUEST", ok + "junk", 200, "hi", false, false},
		{"closed without END_REQUEST", rec(6, 1, "Content-Type: text/plain\r\n\r\npart", 0), 0, "", false, true},
		{"closed before the head", rec(6, 1, "Content-Type: te", 0), 502, "", false, true},
		{"closed at once", "", 502, "", false, true},
		{"head, then silence", rec(6, 1, "Content-Type: text/plain\r\n\r\npart", 0), 0, "", false, false},
		{"silence", "", 504, "", false, false},
		{"no head at all", end(0, 0), 502, "", true, false},
		{"bad head", rec(6, 1, "Content-Type: a\r\nBad Line\r\n\r\n", 0) + end(0, 0), 502, "", false, false},
		{"version 2", "\x02" + ok[1:], 502, "", false, false},
		{"wrong request id", rec(6, 2, "Content-Type: a\r\n\r\n", 0), 502, "", false, false},
		{"overloaded", end(0, statusOverloaded), 503, "", false, false},
		{"unknown role", end(0, statusUnknownRole), 502, "", false, false},
		{"error after the head", rec(6, 1, "Content-Type: a\r\n\r\nx", 0) + rec(4, 1, "", 0), 0, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRawServer(t, tc.answer, tc.closing)
			root := t.TempDir()
			writeFile(t, filepath.Join(root, "a.php"))
			logger, _ := sluicetest.Logger()
			cl, err := New(Options{Options: upstream.Options{Upstreams: []string{srv.addr}, MaxConns: 1, Retries: -1, Passive: upstream.PassiveHealth{Failures: -1}},
				Root: root, Logger: logger, ResponseHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			front := sluicetest.NewServer(t, pipe.Handler(cl))
			for i := range 2 {
				resp, err := sluicetest.Client.Get(front.URL + "/a.php")
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case tc.status == 0:
					if err == nil && resp.StatusCode < 500 {
						t.Errorf("request %d: response not cut short: %d %q", i, resp.StatusCode, b)
					}
				case resp.StatusCode != tc.status || err != nil:
					t.Errorf("request %d: got %d %q %v, want %d", i, resp.StatusCode, b, err, tc.status)
				case tc.body != "" && string(b) != tc.body:
					t.Errorf("request %d: body %q, want %q", i, b, tc.body)
				case tc.status >= 500 && !strings.Contains(string(b), http.StatusText(tc.status)):
					t.Errorf("request %d: body %q", i, b)
				}
			}
			if want := map[bool]int64{true: 1, false: 2}[tc.reuse]; srv.conns.Load() != want {
				t.Errorf("%d connections for 2 requests, want %d", srv.conns.Load(), want)
			}
		})
	}
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := writeBytes(path, "<?php"); err != nil {
		t.Fatal(err)
	}
}

// TestStaleConnection sends requests on a kept-alive connection the
// server has closed, as when it closes one just after the peek: the
// write fails with nothing sent, and the request is sent again on a new
// connection, and answered.
func TestStaleConnection(t *testing.T) {
	noPeek = true
	defer func() { noPeek = false }()
	ok := rec(6, 1, "Content-Type: text/plain\r\n\r\nhi", 0) + end(0, 0)
	srv := newRawServer(t, ok, true) // closes after each answer
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.php"))
	logger, log := sluicetest.Logger()
	cl, err := New(Options{Options: upstream.Options{Upstreams: []string{srv.addr}, MaxConns: 1, Retries: -1}, Root: root, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	front := sluicetest.NewServer(t, pipe.Handler(cl))
	for i := range 3 {
		sluicetest.WaitFor(t, "the server's close", func() bool { return srv.closed.Load() == srv.conns.Load() })
		if resp, body := sluicetest.Get(t, front.URL+"/a.php"); resp.StatusCode != 200 || body != "hi" {
			t.Fatalf("request %d: got %d %q", i, resp.StatusCode, body)
		}
	}
	// Each request after the first found its pooled connection closed
	// (with Retries -1, only the stale connection's retry can have saved
	// it) and dialled one.
	if srv.conns.Load() != 3 {
		t.Errorf("%d connections, want 3", srv.conns.Load())
	}
	// A POST is sent again too: the socket took none of it (the server
	// had closed the connection), so no script can have read it.
	sluicetest.WaitFor(t, "the server's close", func() bool { return srv.closed.Load() == srv.conns.Load() })
	resp, _ := sluicetest.RoundTrip(t, front.Addr, "POST /a.php HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi")
	if resp.StatusCode != 200 || srv.conns.Load() != 4 {
		t.Errorf("POST on a closed connection: got %d after %d connections, want 200 after 4; log:\n%s", resp.StatusCode, srv.conns.Load(), log)
	}
}

func TestStaleConnectionQueued(t *testing.T) {
	noPeek = true
	defer func() { noPeek = false }()
	ok := rec(6, 1, "Content-Type: text/plain\r\n\r\nhi", 0) + end(0, 0)
	srv := newRawServer(t, ok, true) // closes after each answer (pm.max_requests)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.php"))
	logger, log := sluicetest.Logger()
	cl, err := New(Options{Options: upstream.Options{Upstreams: []string{srv.addr}, MaxConns: 1, Retries: -1}, Root: root, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	front := sluicetest.NewServer(t, pipe.Handler(cl))
	var bad atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				resp, err := sluicetest.Client.Get(front.URL + "/a.php")
				if err != nil {
					bad.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Errorf("%d of 160 requests failed; log:\n%s", bad.Load(), log)
	}
}

// TestParamsNoDuplicate: buildRequest sends each name once, a configured
// env variable instead of the request's of the same name.
func TestParamsNoDuplicate(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.php"))
	cl, err := New(Options{Options: upstream.Options{Upstreams: []string{"unix:/nonexistent"}, MaxConns: 1}, Root: root,
		Env: map[string]string{"HTTP_X_A": "conf", "REQUEST_METHOD": "POST", "REDIRECT_STATUS": "201"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var params []byte
	front := sluicetest.NewServer(t, pipe.Handler(pipe.Pipe(func(c *pipe.Conn) bool {
		x := getExchange()
		cl.buildRequest(x, c, &Script{Filename: filepath.Join(root, "a.php"), Name: "/a.php"}, 0, true)
		params = append([]byte(nil), x.params...)
		putExchange(x)
		return c.Error(http.StatusNoContent, "")
	})))
	sluicetest.Get(t, front.URL+"/a.php", "X-A", "client")
	seen := map[string]string{}
	for p := params; len(p) > 0; {
		nl, k := pairLen(p)
		vl, k2 := pairLen(p[k:])
		p = p[k+k2:]
		name, value := string(p[:nl]), string(p[nl:nl+vl])
		p = p[nl+vl:]
		if _, dup := seen[name]; dup {
			t.Errorf("%s sent twice", name)
		}
		seen[name] = value
	}
	if seen["HTTP_X_A"] != "conf" || seen["REQUEST_METHOD"] != "POST" || seen["REDIRECT_STATUS"] != "201" {
		t.Errorf("params: %v", seen)
	}
}

// pairLen reads a name-value pair's length (1 or 4 bytes).
func pairLen(p []byte) (n, k int) {
	if p[0]&0x80 == 0 {
		return int(p[0]), 1
	}
	return int(p[0]&0x7f)<<24 | int(p[1])<<16 | int(p[2])<<8 | int(p[3]), 4
}

// TestHealthCheckHead: the active check reads the response head as the
// data path does (cgi.ParseHead): a Status field in any case counts,
// and a malformed head fails.
func TestHealthCheckHead(t *testing.T) {
	for _, tc := range []struct {
		head string
		want bool
	}{
		{"Content-Type: text/plain\r\n\r\npong", true},
		{"Status: 204\r\n\r\n", true},
		{"STATUS: 500\r\nContent-Type: text/plain\r\n\r\n", false},
		{"status: 503 Unavailable\r\nContent-Type: text/plain\r\n\r\n", false},
		{"Content-Type: text/plain\r\nBad Field\r\n\r\n", false},
		{"Content-Type: text/plain\r\n", false}, // no end of head
	} {
		srv := newRawServer(t, rec(6, 1, tc.head, 0)+end(0, 0), true)
		root := t.TempDir()
		cl, err := New(Options{Options: upstream.Options{Upstreams: []string{srv.addr}, MaxConns: 1,
			Health: upstream.Health{Path: "/ping", Interval: time.Hour}}, Root: root})
		if err != nil {
			t.Fatal(err)
		}
		if got := cl.check(cl.grp.Hosts()[0]); got != tc.want {
			t.Errorf("%q: check %v, want %v", tc.head, got, tc.want)
		}
		cl.Close()
	}
}

// The body's bytes of the STDOUT records that come in one read go to the
// client in one write: a script that prints faster than it is read is
// sent on in a chunk per read, not a chunk (and a system call) per
// record.
func TestRecordsWrittenTogether(t *testing.T) {
	const records, size = 6, 4000
	answer := rec(6, 1, "Content-Type: text/plain\r\n\r\n", 0)
	var want strings.Builder
	for i := range records {
		piece := strings.Repeat(string(rune('a'+i)), size)
		answer += rec(6, 1, piece, 0)
		want.WriteString(piece)
	}
	answer += end(0, 0)
	srv := newRawServer(t, answer, false)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.php"))
	cl, err := New(Options{Options: upstream.Options{Upstreams: []string{srv.addr}, MaxConns: 1}, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	front := sluicetest.NewServer(t, pipe.Handler(cl))
	c, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /a.php HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := strings.Cut(string(out), "\r\n\r\n")
	if !strings.Contains(head, "Transfer-Encoding: chunked") {
		t.Fatalf("not chunked: %q", head)
	}
	var got strings.Builder
	chunks := 0
	for {
		line, rest, ok := strings.Cut(body, "\r\n")
		n, err := strconv.ParseInt(line, 16, 64)
		if !ok || err != nil || int64(len(rest)) < n+2 {
			t.Fatalf("bad chunk at %q", body[:min(len(body), 20)])
		}
		if n == 0 {
			break
		}
		chunks++
		got.WriteString(rest[:n])
		body = rest[n+2:]
	}
	if got.String() != want.String() {
		t.Fatalf("body of %d bytes, want %d", got.Len(), want.Len())
	}
	// One read takes the six records, unless the server's write reached
	// the socket in parts: a chunk per part then, never one per record.
	if chunks > 2 {
		t.Errorf("%d records sent on in %d chunks, want 1 (2 at most)", records, chunks)
	}
}
