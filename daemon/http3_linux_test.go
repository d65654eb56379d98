package daemon

import "testing"

// On Linux quic-go sends with UDP GSO (several packets in one system
// call) and receives with recvmmsg: the server's connections use it.
func TestHTTP3GSO(t *testing.T) {
	site := newH3Site(t, "true")
	_, cc := h3Dial(t, site.tcp.String(), site.ca.ClientConfig("a.example"))
	if status, body := h3Get(t, cc, site, "GET", "/huge.bin"); status != 200 || len(body) != len(site.huge) {
		t.Fatalf("%d, %d bytes", status, len(body))
	}
	site.srv.lnMu.Lock()
	gso := site.srv.lns[0].h3.gso.Load()
	site.srv.lnMu.Unlock()
	if !gso {
		t.Error("the server's connection does not send with GSO")
	}
}
