package translate_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-server/sluice/gateway/translate"
)

// A WebSocket upgrade passes through a translated route to the backend,
// and bytes flow both ways after the 101 (HTTPRouteBackendProtocolWebSocket).
func TestTranslateWebSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.60:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "want an upgrade", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		io.Copy(conn, brw) // echo
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	snap := snapshot(t, route("infra", "ws", sameNS, `
  rules: [{backendRefs: [{name: ws, port: 8080}]}]`),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "ws"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080, AppProtocol: ptr("kubernetes.io/ws")}}}},
		endpointSlice("infra", "ws", port, []string{"127.0.0.60"}))
	u, err := url.Parse(serve(t, translate.Translate(snap, opts))["10.245.0.1:80"])
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	for i := range 3 {
		msg := "frame " + strconv.Itoa(i)
		io.WriteString(conn, msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(br, got); err != nil || string(got) != msg {
			t.Fatalf("echo %q, %v; want %q", got, err, msg)
		}
	}
}
