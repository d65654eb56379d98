//lint:file-ignore SA1019 the test drives x/net/http2's client on purpose.

package daemon

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"
)

// A route's local condition sees the address a request arrived on over
// HTTP/1.1, HTTP/2 and HTTP/3, on a listener of one address and on one of
// the wildcard address (where the connection's own address counts).
func TestLocalCondition(t *testing.T) {
	site := newTLSSite(t)
	writeFile(t, site.file, `listen:
  - {address: "127.0.0.1:0", tls: {cert: a.example.crt, key: a.example.key}, http3: true}
  - {address: "0.0.0.0:0", tls: {cert: a.example.crt, key: a.example.key}, http3: true}
routes:
  - match: /who
    local: 127.0.0.2
    pipeline: [{text: two}]
  - match: /who
    local: [127.0.0.1]
    pipeline: [{text: one}]
  - match: /who
    pipeline: [{text: none}]
`)
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	var one, wild string
	for _, a := range s.Addrs() {
		ap := a.(*net.TCPAddr).AddrPort()
		if ap.Addr().IsUnspecified() {
			wild = strconv.Itoa(int(ap.Port()))
		} else {
			one = ap.String()
		}
	}
	if one == "" || wild == "" {
		t.Fatalf("Addrs() = %v, want 127.0.0.1 and 0.0.0.0", s.Addrs())
	}
	h1 := &http.Transport{TLSClientConfig: site.ca.ClientConfig("a.example"), TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	h2 := &http2.Transport{TLSClientConfig: site.ca.ClientConfig("a.example")}
	h3 := &http3.Transport{TLSClientConfig: site.ca.ClientConfig("a.example")}
	t.Cleanup(func() {
		h1.CloseIdleConnections()
		h2.CloseIdleConnections()
		h3.Close()
	})
	for _, tr := range []struct {
		proto string
		rt    http.RoundTripper
	}{{"HTTP/1.1", h1}, {"HTTP/2.0", h2}, {"HTTP/3.0", h3}} {
		for _, tt := range []struct{ addr, want string }{
			{one, "one"},
			{"127.0.0.2:" + wild, "two"},
			{"127.0.0.1:" + wild, "one"},
			{"127.0.0.3:" + wild, "none"},
		} {
			resp, err := (&http.Client{Transport: tr.rt}).Get("https://" + tt.addr + "/who")
			if err != nil {
				t.Fatalf("%s to %s: %v", tr.proto, tt.addr, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.Proto != tr.proto || string(b) != tt.want {
				t.Errorf("%s to %s: %s %q, want %q", tr.proto, tt.addr, resp.Proto, b, tt.want)
			}
		}
	}
}
