package sluicetest_test

import (
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// whoAsks answers with the path and the client's address, so a test
// sees which connection a request came on.
var whoAsks = engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
	fmt.Fprintf(w, "%s from %s", r.Path, r.RemoteAddr)
})

// A Conn from Dial or DialTLS carries request after request on one
// connection, a HEAD's response without a body; a response can be left
// unread and read later through R.
func TestConn(t *testing.T) {
	plain := sluicetest.NewServer(t, whoAsks)
	unix := sluicetest.NewServer(t, whoAsks, sluicetest.Listen("unix", filepath.Join(t.TempDir(), "s")))
	secure := sluicetest.NewTLSServer(t, whoAsks)
	for name, c := range map[string]*sluicetest.Conn{
		"tcp":  sluicetest.Dial(t, plain.URL),
		"unix": sluicetest.Dial(t, "unix:"+unix.Addr),
		"tls":  sluicetest.DialTLS(t, secure.URL, secure.ClientConfig()),
	} {
		_, first := c.RoundTrip(t, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
		if want := "/a from " + c.LocalAddr().String(); name != "unix" && first != want {
			t.Errorf("%s: GET /a: %q, want %q", name, first, want)
		}
		if resp, body := c.RoundTrip(t, "HEAD /b HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "" || resp.ContentLength <= 0 {
			t.Errorf("%s: HEAD /b: %d %q (Content-Length %d), want 200, no body", name, resp.StatusCode, body, resp.ContentLength)
		}
		fmt.Fprintf(c, "GET /c HTTP/1.1\r\nHost: x\r\n\r\n")
		if _, body := sluicetest.ReadResponse(t, c.R, "GET"); body != "/c"+strings.TrimPrefix(first, "/a") {
			t.Errorf("%s: GET /c, read later: %q, want it on the connection of %q", name, body, first)
		}
		if st := c.ConnectionState(); st.HandshakeComplete != (name == "tls") {
			t.Errorf("%s: ConnectionState().HandshakeComplete = %v", name, st.HandshakeComplete)
		}
	}
}

// Handshake reports the certificate the server presented and the
// protocol agreed.
func TestHandshake(t *testing.T) {
	s := sluicetest.NewTLSServer(t, whoAsks, sluicetest.HTTP2())
	cfg := s.ClientConfig()
	cfg.NextProtos = []string{"h2", "http/1.1"}
	st := sluicetest.Handshake(t, s.Addr, cfg)
	if st.NegotiatedProtocol != "h2" || st.PeerCertificates[0].CheckSignatureFrom(s.CA.Cert) != nil {
		t.Errorf("Handshake: ALPN %q, certificate from %s; want h2 and the server's CA", st.NegotiatedProtocol, st.PeerCertificates[0].Issuer)
	}
	if c, err := tls.Dial("tcp", s.Addr, sluicetest.NewCA(t).ClientConfig("localhost")); err == nil {
		c.Close()
		t.Errorf("a client trusting another CA completed the handshake")
	}
}
