package daemon

import (
	"net"
	"testing"

	"github.com/sluice-server/sluice/config"
)

// A socket passed by socket activation serves the config addresses it is
// bound to.
func TestBoundTo(t *testing.T) {
	tcp := func(ip string, port int) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: port} }
	unixAddr := &net.UnixAddr{Name: "/run/sluice.sock", Net: "unix"}
	tests := []struct {
		bound net.Addr
		addr  string
		want  bool
	}{
		{tcp("::", 80), ":80", true},
		{tcp("0.0.0.0", 80), ":80", true},
		{tcp("::", 80), "0.0.0.0:80", true},
		{tcp("::", 80), "[::]:80", true},
		{tcp("::", 80), ":8080", false},
		{tcp("::", 80), "127.0.0.1:80", false},
		{tcp("127.0.0.1", 80), ":80", false},
		{tcp("127.0.0.1", 80), "127.0.0.1:80", true},
		{tcp("127.0.0.1", 80), "localhost:80", true},
		{tcp("127.0.0.1", 8123), "127.0.0.1:0", true},
		{tcp("127.0.0.1", 8123), "127.0.0.2:0", false},
		{tcp("::1", 80), "[::1]:80", true},
		{tcp("::1", 80), "unix:/run/sluice.sock", false},
		{unixAddr, "unix:/run/sluice.sock", true},
		{unixAddr, "unix:/run/other.sock", false},
		{unixAddr, ":80", false},
	}
	for _, tt := range tests {
		a, err := config.ParseAddress(tt.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := boundTo(tt.bound, a); got != tt.want {
			t.Errorf("boundTo(%v, %q) = %v, want %v", tt.bound, tt.addr, got, tt.want)
		}
	}
}
