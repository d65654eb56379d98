package proxy

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/sluice-server/sluice/engine"
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
		ca := sluicetest.NewCA(t)
		p := mustNew(t, Options{Upstreams: urls})
		t.Cleanup(func() { p.Close() })
		ln, err := engine.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &engine.Server{Handler: pipe.Handler(p)}
		cfg := &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "127.0.0.1")}, NextProtos: []string{"http/1.1"}}
		go srv.ServeWith(ln, engine.ListenerOptions{TLS: cfg})
		t.Cleanup(func() { srv.Close() })
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.ClientConfig("127.0.0.1")}}
		echo(t, "wss://"+ln.Addr().String(), client)
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
