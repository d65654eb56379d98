package proxy

import (
	"net"
	"testing"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/engine"
)

// TestPeerCacheFollowsAddressAndResolver: the cached client address is
// reused only for the same address under the same resolver; another
// address, or a resolver trusting otherwise, is looked up afresh.
func TestPeerCacheFollowsAddressAndResolver(t *testing.T) {
	trustA, err := clientaddr.New([]string{"10.0.0.1/32"}, "")
	if err != nil {
		t.Fatal(err)
	}
	trustNone, err := clientaddr.New(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	req := func(ip string) *engine.Request {
		return &engine.Request{RemoteAddr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 1234}}
	}
	var pc peerCache
	for _, tt := range []struct {
		res     *clientaddr.Resolver
		ip      string
		trusted bool
		text    string
	}{
		{trustA, "10.0.0.1", true, "10.0.0.1"},
		{trustA, "10.0.0.1", true, "10.0.0.1"},
		{trustNone, "10.0.0.1", false, "10.0.0.1"},
		{trustA, "10.0.0.1", true, "10.0.0.1"},
		{trustA, "10.0.0.2", false, "10.0.0.2"},
		{trustA, "2001:db8::1", false, "2001:db8::1"},
	} {
		r := req(tt.ip)
		trusted, text := pc.lookup(tt.res, r, clientaddr.Peer(r))
		if trusted != tt.trusted || string(text) != tt.text {
			t.Errorf("%s: trusted %v, text %q; want %v, %q", tt.ip, trusted, text, tt.trusted, tt.text)
		}
	}
	// A peer without an IP address (a Unix socket's) is not cached.
	r := &engine.Request{RemoteAddr: &net.UnixAddr{Name: "@", Net: "unix"}}
	if trusted, text := pc.lookup(trustA, r, clientaddr.Peer(r)); trusted || text != nil {
		t.Errorf("unix peer: trusted %v, text %q; want false, nil", trusted, text)
	}
}
