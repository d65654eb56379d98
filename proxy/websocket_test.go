package proxy

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
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
	srv, _ := front(t, Options{Upstreams: urls})
	ctx, cancel := context.WithTimeout(context.Background(), sluicetest.WaitTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/chat", &websocket.DialOptions{Subprotocols: []string{"echo"}})
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

// An upstream that switches protocols for a request that did not ask is
// answered 502; a request whose Upgrade the upstream ignores gets the
// upstream's ordinary response.
func TestUpgradeUnasked(t *testing.T) {
	up := newRawUpstream(t, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	srv, _ := front(t, Options{Upstreams: []string{up.URL}, Retries: -1})
	if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("101 to a plain GET: %d %q, want 502", resp.StatusCode, body)
	}
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("plain")) })
	})
	srv2, _ := front(t, Options{Upstreams: urls})
	resp, body := sluicetest.Get(t, srv2.URL+"/", "Connection", "Upgrade", "Upgrade", "websocket")
	if resp.StatusCode != 200 || body != "plain" {
		t.Fatalf("ignored Upgrade: %d %q", resp.StatusCode, body)
	}
}
