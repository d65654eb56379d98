package engine_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// A handler takes an Upgrade request's connection over with Tunnel: the
// client gets the 101 head, then the handler's bytes; the bytes the
// client sent with the request head come first in buffered. A keep-alive
// connection's second request may be the Upgrade one (it is not served
// from the poller callback, where the connection cannot be read). A
// request without Upgrade cannot tunnel.
func TestTunnel(t *testing.T) {
	srv := sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		tun, ok := w.(engine.Tunneler)
		if !ok {
			t.Error("the engine's ResponseWriter is no Tunneler")
			return
		}
		if r.Header("Upgrade") == nil {
			if _, _, err := tun.Tunnel(); !errors.Is(err, engine.ErrNoTunnel) {
				t.Errorf("Tunnel without Upgrade: %v", err)
			}
			w.WriteString("plain")
			return
		}
		w.Header().Set("Upgrade", "echo")
		nc, buffered, err := tun.Tunnel()
		if err != nil {
			t.Error(err)
			return
		}
		nc.Write([]byte("early:" + string(buffered) + ";"))
		io.Copy(nc, nc) // echo until the client closes
	}))
	c, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, body := sluicetest.ReadResponse(t, br, "GET"); resp.Proto != "HTTP/1.1" || resp.StatusCode != 200 || body != "plain" {
		t.Fatalf("plain request: %s %s, body %q", resp.Proto, resp.Status, body)
	}
	io.WriteString(c, "GET /chat HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nhi")
	head := ""
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("101 head: %q, %v", head, err)
		}
		head += line
		if line == "\r\n" {
			break
		}
	}
	if !strings.HasPrefix(head, "HTTP/1.1 101 Switching Protocols\r\n") || !strings.Contains(head, "Upgrade: echo\r\n") ||
		!strings.Contains(head, "Connection: Upgrade\r\n") || strings.Contains(head, "Content-Length") || strings.Contains(head, "Transfer-Encoding") {
		t.Fatalf("101 head:\n%s", head)
	}
	want := "early:hi;"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != want {
		t.Fatalf("after the head: %q, %v; want %q", got, err, want)
	}
	io.WriteString(c, "ping")
	got = make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo: %q, %v", got, err)
	}
}
