//go:build unix

package sock

import (
	"net"
	"testing"
)

// Two sockets from ListenPacketShared bind one UDP address; a socket
// without SO_REUSEPORT cannot join them.
func TestListenPacketShared(t *testing.T) {
	a, err := ListenPacketShared("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	addr := a.LocalAddr().String()
	b, err := ListenPacketShared("udp", addr)
	if err != nil {
		t.Fatalf("a second shared socket on %s: %v", addr, err)
	}
	defer b.Close()
	if c, err := net.ListenPacket("udp", addr); err == nil {
		c.Close()
		t.Fatalf("a socket without SO_REUSEPORT bound %s too", addr)
	}
}
