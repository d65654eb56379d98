package sluicetest

import (
	"net"
	"sync"
	"testing"
)

// ServeConns accepts connections on ln until ln is closed, and runs
// serve on a goroutine of its own for each, closing the connection when
// serve returns: the accept loop of a fake server a test writes by hand.
// It returns at once. The test's cleanup closes ln and waits for the
// accept loop and for every serve to return (so serve must return once
// its peer has gone).
func ServeConns(t testing.TB, ln net.Listener, serve func(net.Conn)) {
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
}
