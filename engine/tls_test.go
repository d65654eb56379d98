package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// withLimits sets a test server's engine.Limits.
func withLimits(lim engine.Limits) sluicetest.Option {
	return sluicetest.Configure(func(srv *engine.Server) { srv.Limits = lim })
}

// tlsHello answers with the connection's TLS version, server name and
// protocol, and the path.
var tlsHello = engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
	if r.TLS == nil {
		w.WriteString("plain\n")
		return
	}
	fmt.Fprintf(w, "%s sni=%q alpn=%s %s\n", tls.VersionName(r.TLS.Version), r.TLS.ServerName, r.TLS.NegotiatedProtocol, r.Path)
})

// Keep-alive and pipelining work over TLS: two pipelined requests are
// answered in order on one connection, and a third sent once those are
// read; each request carries the connection's TLS state. (A connection
// that speaks again after the idle notice, parked or not, is
// TestTLSConnectionsPark's, which counts the parked connections rather
// than waiting for the notice to have passed.)
func TestTLSKeepAlivePipelining(t *testing.T) {
	s := sluicetest.NewTLSServer(t, tlsHello)
	cfg := s.ClientConfig()
	cfg.NextProtos = []string{"http/1.1"}
	c, err := tls.Dial("tcp", s.Addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for _, path := range []string{"/a", "/b", "/c"} {
		if path == "/c" {
			if _, err := io.WriteString(c, "GET /c HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
		}
		_, body := sluicetest.ReadResponse(t, br, "GET")
		want := fmt.Sprintf("TLS 1.3 sni=\"\" alpn=http/1.1 %s\n", path)
		if body != want {
			t.Errorf("%s: got %q, want %q", path, body, want)
		}
	}
}

// A client that opens a connection to a TLS listener and never finishes
// the handshake is closed once HeaderTimeout passes.
func TestTLSHandshakeTimeout(t *testing.T) {
	s := sluicetest.NewTLSServer(t, tlsHello, withLimits(engine.Limits{HeaderTimeout: 200 * time.Millisecond}))
	srv, addr := s.Engine, s.Addr
	for _, send := range []string{"", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"} { // nothing; the start of a ClientHello
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, send)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(make([]byte, 1))
		if n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("sent %q: read %d bytes, %v; want the server to close the connection", send, n, err)
		}
		c.Close()
	}
	sluicetest.WaitFor(t, "connections closed", func() bool { return srv.OpenConns() == 0 })
}

// A file larger than the output buffer is copied through TLS, not sent
// with sendfile(2) under it (which would put its plaintext on the wire).
func TestTLSSendFile(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	name := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := sluicetest.NewTLSServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		if err := w.(engine.FileSender).SendFile(f, 16, int64(len(data))-32); err != nil {
			t.Error(err)
		}
	}))
	client := s.Client()
	for range 2 { // the second on the kept-alive connection
		resp, err := client.Get(s.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, data[16:len(data)-16]) {
			t.Fatalf("got %d bytes, not the file's %d", len(body), len(data)-32)
		}
	}
}

// A handler's Gone channel closes when the client of a TLS connection
// goes away, as on a plain one.
func TestTLSGone(t *testing.T) {
	entered, result := make(chan struct{}), make(chan bool, 1)
	s := sluicetest.NewTLSServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		gone := w.(engine.GoneNotifier).Gone()
		close(entered)
		select {
		case <-gone:
			result <- true
		case <-time.After(10 * time.Second):
			result <- false
		}
	}))
	c, err := s.Dial()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	c.Close()
	if !<-result {
		t.Error("Gone did not close when the TLS client went away")
	}
}

// Idle TLS keep-alive connections are closed by the idle timeout, and by
// Shutdown at once; a request in flight finishes with Connection: close.
// The idle timeout is a second, not less: on a loaded machine the slow
// request's connection could otherwise wait that long between its
// handshake and its request, and be closed as idle.
func TestTLSIdleAndShutdown(t *testing.T) {
	release := make(chan struct{})
	s := sluicetest.NewTLSServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		if string(r.Path) == "/slow" {
			<-release
		}
		w.WriteString("ok\n")
	}), withLimits(engine.Limits{IdleTimeout: time.Second}))
	srv, addr := s.Engine, s.Addr

	idle, err := s.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := sluicetest.ReadResponse(t, bufio.NewReader(idle), "GET"); resp.StatusCode != 200 {
		t.Fatalf("first request: %s", resp.Status)
	}
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := idle.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle connection: read %d, %v; want it closed by the idle timeout", n, err)
	}

	busy, err := s.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	sluicetest.WaitFor(t, "the slow request", func() bool { return srv.Stats().Requests == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	sluicetest.WaitFor(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(release)
	if resp, _ := sluicetest.ReadResponse(t, bufio.NewReader(busy), "GET"); !resp.Close {
		t.Error("response during shutdown: no Connection: close")
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
