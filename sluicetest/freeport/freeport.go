// Package freeport chooses TCP ports for servers a test or a benchmark
// starts in another process, which must be told a port before they
// bind it.
//
// A port the kernel hands out for 127.0.0.1:0 comes from its ephemeral
// range (net.ipv4.ip_local_port_range), the range every outgoing
// connection also takes its local port from. Between the moment such a
// port is found free and the moment the other process binds it, any
// process on the machine may connect from it, and the bind then fails
// with "address already in use" (a wildcard bind even when the
// connection is on another address). Ports below the ephemeral range
// are taken only by explicit binds, so Ports chooses there, at random;
// only another chooser picking the same port in between can take it.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// first is the lowest port Ports chooses: well clear of the registered
// services most machines run below it.
const first = 20000

// Ports returns n TCP ports nobody listens on or connects from now, on
// any local address (each is bound on the wildcard address while the
// others are chosen), none of them returned before in this process. It
// is safe for concurrent use. Where
// the ephemeral range cannot be read (no /proc) or leaves too little
// below it, the ports are ones the kernel picks on 127.0.0.1.
func Ports(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	low := ephemeralLow()
	if low-first < 1000 {
		for range n {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			held = append(held, ln)
			ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		}
		return ports, nil
	}
	span := low - first
	given.Lock()
	defer given.Unlock()
	for range n {
		start := rand.IntN(span)
		found := false
		// Step by a prime larger than any span, so the tries visit
		// distinct ports.
		for i := range 500 {
			port := first + (start+i*65521)%span
			if given.m[port] {
				continue // handed out before, perhaps not bound yet
			}
			ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
			if err != nil {
				continue
			}
			held = append(held, ln)
			ports = append(ports, port)
			given.m[port] = true
			found = true
			break
		}
		if !found {
			return nil, fmt.Errorf("freeport: no free port among 500 tried in %d-%d", first, low-1)
		}
	}
	return ports, nil
}

// Port returns one port as Ports does.
func Port() (int, error) {
	p, err := Ports(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

// given are the ports Ports returned in this process: none is returned
// twice, though the server it was for may not have bound it yet.
var given = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

// ephemeralLow returns the first port of the kernel's ephemeral range,
// or 0 if it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return low
}
