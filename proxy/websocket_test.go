package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// A WebSocket echo through the proxy, with a real WebSocket library on
// both ends: the handshake is passed on, then frames both ways byte for
// byte, text and a 1 MB binary message alike, until the close handshake.
func TestWebSocketEcho(t *testing.T) {
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"echo"}})
			if err != nil {
				return
			}
			defer ws.CloseNow()
			ws.SetReadLimit(2 << 20)
			for {
				typ, msg, err := ws.Read(r.Context())
				if err != nil {
					return
				}
				if err := ws.Write(r.Context(), typ, msg); err != nil {
					return
				}
			}
		})
	})
	t.Run("ws", func(t *testing.T) {
		srv, _ := front(t, Options{Upstreams: urls})
		echo(t, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	})
	t.Run("wss", func(t *testing.T) {
		// The client speaks TLS to the proxy, which tunnels the
		// decrypted bytes to a plain upstream.
		p := mustNew(t, Options{Upstreams: urls})
		t.Cleanup(func() { p.Close() })
		srv := sluicetest.NewTLSServer(t, pipe.Handler(p))
		echo(t, "wss://"+srv.Addr, srv.Client())
	})
}

// echo dials the WebSocket server at base+"/chat" and has text, a 1 MB
// binary message and text again echoed, then closes.
func echo(t *testing.T, base string, client *http.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sluicetest.WaitTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, base+"/chat", &websocket.DialOptions{Subprotocols: []string{"echo"}, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if resp.Header.Get("Via") != "1.1 sluice" || ws.Subprotocol() != "echo" {
		t.Fatalf("handshake: Via %q, subprotocol %q", resp.Header.Get("Via"), ws.Subprotocol())
	}
	ws.SetReadLimit(2 << 20)
	big := []byte(strings.Repeat("0123456789abcdef", 1<<16))
	for _, m := range []struct {
		typ websocket.MessageType
		msg []byte
	}{{websocket.MessageText, []byte("hello")}, {websocket.MessageBinary, big}, {websocket.MessageText, []byte("again")}} {
		if err := ws.Write(ctx, m.typ, m.msg); err != nil {
			t.Fatal(err)
		}
		typ, got, err := ws.Read(ctx)
		if err != nil || typ != m.typ || string(got) != string(m.msg) {
			t.Fatalf("echo of %d bytes: type %v, %d bytes, %v", len(m.msg), typ, len(got), err)
		}
	}
	if err := ws.Close(websocket.StatusNormalClosure, "bye"); err != nil {
		t.Fatalf("close handshake: %v", err)
	}
}

// tunnelEnd is one end of a tunnel: the connection, read through r.
type tunnelEnd struct {
	c net.Conn
	r *bufio.Reader
}

// tunnelUpstream starts an upstream that answers every request with 101
// and hands its end of the switched connection to ends.
func tunnelUpstream(t *testing.T, ends chan<- tunnelEnd) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var accepted []net.Conn // closed at the end; only the accepting goroutine appends
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range accepted {
			c.Close()
		}
	})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted = append(accepted, c)
			br := bufio.NewReader(c)
			if _, err := readHead(br); err != nil {
				continue
			}
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n")
			ends <- tunnelEnd{c, br}
		}
	}()
	return "http://" + ln.Addr().String()
}

// dialTunnel asks srv to switch to the upstream's test protocol and
// returns the client's end of the tunnel and the upstream's.
func dialTunnel(t *testing.T, srv *sluicetest.Server, ends <-chan tunnelEnd) (client, up tunnelEnd) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET /t HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	br := bufio.NewReader(c)
	head, err := readHead(br)
	if err != nil || !strings.HasPrefix(head, "HTTP/1.1 101 ") {
		t.Fatalf("switching: %q, %v", head, err)
	}
	return tunnelEnd{c, br}, <-ends
}

// send sends line from one end of a tunnel and reads it at the other.
func (e tunnelEnd) send(t *testing.T, to tunnelEnd, line string) {
	t.Helper()
	if _, err := io.WriteString(e.c, line); err != nil {
		t.Fatal(err)
	}
	to.c.SetReadDeadline(time.Now().Add(sluicetest.WaitTimeout))
	if got, err := to.r.ReadString('\n'); got != line {
		t.Fatalf("sent %q through the tunnel, read %q, %v", line, got, err)
	}
}

// waitClosed waits, within sluicetest.WaitTimeout, for the other side
// to close the tunnel at e, reading and dropping what comes before.
func (e tunnelEnd) waitClosed(t *testing.T, name string) {
	t.Helper()
	e.c.SetReadDeadline(time.Now().Add(sluicetest.WaitTimeout))
	_, err := io.Copy(io.Discard, e.r)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the %s's end of the tunnel is still open after %v", name, sluicetest.WaitTimeout)
	}
}

// A tunnel across which nothing passes for tunnel_idle_timeout is closed
// both ways; traffic one way alone keeps it open.
func TestTunnelIdleTimeout(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		ends := make(chan tunnelEnd, 1)
		srv, _ := front(t, Options{Upstreams: []string{tunnelUpstream(t, ends)}, TunnelIdleTimeout: 100 * time.Millisecond})
		client, up := dialTunnel(t, srv, ends)
		client.send(t, up, "ping\n")
		up.send(t, client, "pong\n")
		client.waitClosed(t, "client")
		up.waitClosed(t, "upstream")
	})
	t.Run("one way busy", func(t *testing.T) {
		// The upstream stays silent past its read's idle deadline while
		// the client talks; then it can still answer. The client talks
		// until the relay reports that the upstream's read outlived its
		// deadline and read on: each tick is read at the upstream before
		// the next is sent, so only a stall of the whole process for
		// the idle bound would close the tunnel.
		const idle = 2 * time.Second
		ends := make(chan tunnelEnd, 1)
		srv, p := front(t, Options{Upstreams: []string{tunnelUpstream(t, ends)}, TunnelIdleTimeout: idle})
		readOn := make(chan net.Addr, 4) // the local address of each read that went on
		p.tunnelReadOn = func(src net.Conn) {
			select {
			case readOn <- src.LocalAddr():
			default:
			}
		}
		client, up := dialTunnel(t, srv, ends)
		upstreamRead := up.c.RemoteAddr().String() // the proxy's end of the upstream connection
		deadline := time.Now().Add(sluicetest.WaitTimeout)
	ticking:
		for {
			client.send(t, up, "tick\n")
			select {
			case a := <-readOn:
				if a.String() == upstreamRead {
					break ticking
				}
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("the upstream's read did not outlive its deadline within %v", sluicetest.WaitTimeout)
			}
		}
		up.send(t, client, "still here\n")
		client.waitClosed(t, "client")
		up.waitClosed(t, "upstream")
	})
}

// A 101 must name in Upgrade the protocol it switches to, one the client
// asked for (RFC 9110 §7.8); one that names another, or none, is no
// tunnel the client asked for and is answered 502, nothing of it passed
// on. Listing the asked protocol under another case is fine.
func TestSwitchToAnotherProtocol(t *testing.T) {
	for _, c := range []struct{ upgrade, want string }{
		{"Upgrade: foo\r\n", "HTTP/1.1 502 "},
		{"", "HTTP/1.1 502 "},
		{"Upgrade: test, foo\r\n", "HTTP/1.1 502 "},
		{"Upgrade: TEST\r\n", "HTTP/1.1 101 "},
	} {
		up := rawServer(t, func(c2 net.Conn, br *bufio.Reader) {
			if _, err := readHead(br); err == nil {
				io.WriteString(c2, "HTTP/1.1 101 Switching Protocols\r\n"+c.upgrade+"Connection: Upgrade\r\n\r\n")
			}
		})
		srv, _ := front(t, Options{Upstreams: []string{up}})
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(sluicetest.WaitTimeout))
		io.WriteString(conn, "GET /t HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
		head, err := readHead(bufio.NewReader(conn))
		conn.Close()
		if err != nil || !strings.HasPrefix(head, c.want) {
			t.Errorf("upstream's 101 with %q: client got %q, %v; want %q", c.upgrade, head, err, c.want)
		}
	}
}

// Upgrade's h2c is never passed upstream (RFC 9113 §3.1 deprecates it; a
// tunnel to an upstream that still switches would carry HTTP/2 requests
// past the proxy's routing and filters); the protocols beside it are.
func TestH2CUpgradeNotForwarded(t *testing.T) {
	up := echoFields(t, "Upgrade", "Connection", "Http2-Settings")
	srv, _ := front(t, Options{Upstreams: []string{up}})
	for _, c := range []struct{ upgrade, want string }{
		{"h2c", "Upgrade=\nConnection=\nHttp2-Settings=\n"},
		{"H2C, test", "Upgrade=test\nConnection=Upgrade\nHttp2-Settings=\n"},
		{"test", "Upgrade=test\nConnection=Upgrade\nHttp2-Settings=\n"},
	} {
		_, body := srv.RoundTrip(t, "GET /t HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: "+c.upgrade+
			"\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
		if want := "GET /t\nhost=x\n" + c.want; body != want {
			t.Errorf("Upgrade: %s: upstream saw %q; want %q", c.upgrade, body, want)
		}
	}
}
