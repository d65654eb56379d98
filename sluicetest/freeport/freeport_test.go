package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPorts checks that the ports are distinct, below the ephemeral
// range, and free to bind both on loopback and on every address (the
// way Caddy and nginx bind ":port").
func TestPorts(t *testing.T) {
	ports, err := Ports(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	low := ephemeralLow()
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
		if low > 0 && p >= low {
			t.Errorf("port %d is in the ephemeral range, which starts at %d", p, low)
		}
		for _, addr := range []string{"127.0.0.1:", ":"} {
			ln, err := net.Listen("tcp", addr+strconv.Itoa(p))
			if err != nil {
				t.Fatalf("port %d is not free: %v", p, err)
			}
			ln.Close()
		}
	}
}

// Ports never returns a port twice in one process, though its server may
// not have bound it yet.
func TestPortsNeverRepeat(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d returned twice", p)
		}
		seen[p] = true
	}
}
