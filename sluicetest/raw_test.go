package sluicetest_test

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// Exchange returns every byte the server sends until it closes; RoundTrip
// reads one response, with no body for a HEAD; both take an address, a
// base URL or a Unix socket.
func TestExchangeAndRoundTrip(t *testing.T) {
	tcp := sluicetest.NewServer(t, hello)
	unix := sluicetest.NewServer(t, hello, sluicetest.Listen("unix", filepath.Join(t.TempDir(), "s")))
	two := "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
	for _, addr := range []string{tcp.Addr, tcp.URL, "unix:" + unix.Addr} {
		got := sluicetest.Exchange(t, addr, two)
		if n := strings.Count(got, "HTTP/1.1 200 OK\r\n"); n != 2 || !strings.HasSuffix(got, "\r\n\r\nhello") {
			t.Errorf("Exchange(%s): %d responses in %q, want 2", addr, n, got)
		}
		for _, tt := range []struct{ method, body string }{{"GET", "hello"}, {"HEAD", ""}} {
			resp, body := sluicetest.RoundTrip(t, addr, tt.method+" / HTTP/1.1\r\nHost: a\r\n\r\n")
			if resp.StatusCode != 200 || body != tt.body || resp.ContentLength != 5 {
				t.Errorf("RoundTrip(%s, %s): %d %q (Content-Length %d), want 200 %q", addr, tt.method, resp.StatusCode, body, resp.ContentLength, tt.body)
			}
		}
	}
}

// A Server's Exchange and RoundTrip speak over the connection its Dial
// makes: TLS to a TLS server.
func TestServerExchangeAndRoundTrip(t *testing.T) {
	for _, s := range []*sluicetest.Server{sluicetest.NewServer(t, hello), sluicetest.NewTLSServer(t, hello)} {
		got := s.Exchange(t, "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		if n := strings.Count(got, "HTTP/1.1 200 OK\r\n"); n != 2 || !strings.HasSuffix(got, "\r\n\r\nhello") {
			t.Errorf("%s: Exchange: %d responses in %q, want 2", s.URL, n, got)
		}
		if resp, body := s.RoundTrip(t, "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n"); resp.StatusCode != 200 || body != "" || resp.ContentLength != 5 {
			t.Errorf("%s: RoundTrip: %d %q (Content-Length %d)", s.URL, resp.StatusCode, body, resp.ContentLength)
		}
	}
}

// RoundTrip leaves the connection open for writing, so a server that
// waits for more of a request sees no EOF: this one answers 500 if it
// reads EOF after the request's head, 200 if its read times out.
func TestRoundTripDoesNotHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
		}
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := br.ReadByte(); err == io.EOF {
			io.WriteString(c, "HTTP/1.1 500 Half-Closed\r\nContent-Length: 0\r\n\r\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}()
	resp, body := sluicetest.RoundTrip(t, ln.Addr().String(), "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp.StatusCode != 200 || body != "ok" {
		t.Errorf("got %d %q, want 200 ok", resp.StatusCode, body)
	}
}

// Send sends the method it is given, with the fields, repeated ones
// included; Get sends GET.
func TestSend(t *testing.T) {
	s := sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Write(r.Method)
		for _, f := range r.Fields {
			if string(f.Name) == "X-A" {
				io.WriteString(w, " "+string(f.Value))
			}
		}
	}))
	if _, body := sluicetest.Send(t, "OPTIONS", s.URL, "X-A", "1", "X-A", "2"); body != "OPTIONS 1 2" {
		t.Errorf("Send: %q", body)
	}
	if _, body := sluicetest.Get(t, s.URL, "X-A", "3"); body != "GET 3" {
		t.Errorf("Get: %q", body)
	}
}
