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
// any local address, none of them returned before in this process
// (though the server one was for may not have bound it yet). It is safe
// for concurrent use. Where the ephemeral range cannot be read (no
// /proc) or leaves too little below it, the ports are ones the kernel
// picks on 127.0.0.1.
func Ports(n int) ([]int, error) {
	low := ephemeralLow()
	given.Lock()
	defer given.Unlock()
	ports := make([]int, 0, n)
	for range n {
		port, err := pick(low)
		if err != nil {
			return nil, err
		}
		given.m[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// pick returns a port free now and not given before: one below low, the
// ephemeral range's start, tried at random and bound on every address;
// the kernel's choice on 127.0.0.1 where there is too little room below
// low. Called with given held.
func pick(low int) (int, error) {
	span := low - first
	below := span >= 1000
	start := 0
	if below {
		start = rand.IntN(span)
	}
	for i := range 500 {
		addr := "127.0.0.1:0"
		if below {
			// A step by a prime larger than any span visits distinct
			// ports.
			port := first + (start+i*65521)%span
			if given.m[port] {
				continue
			}
			addr = ":" + strconv.Itoa(port)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if !below {
				return 0, err
			}
			continue
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !given.m[port] {
			return port, nil
		}
	}
	return 0, fmt.Errorf("freeport: no free port among 500 tried (below %d)", low)
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
