package upstream

import (
	"errors"
	"net"
	"os"
	"testing"
)

// TestGoneWatch blocks a read on a real loopback connection: the
// client's going ends it with a deadline error, and Stop reports it, a
// second time too; a watch stopped before the client goes leaves the
// connection alone.
func TestGoneWatch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial := func() (net.Conn, net.Conn) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		peer, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); peer.Close() })
		return c, peer
	}

	c, _ := dial()
	gone := make(chan struct{})
	w := WatchGone(gone, c)
	close(gone)
	_, err = c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the client went: %v, want a deadline error", err)
	}
	if !w.Stop() {
		t.Error("Stop does not report the client gone")
	}
	if !w.Stop() {
		t.Error("a second Stop does not report the client gone")
	}

	c, peer := dial()
	w = WatchGone(make(chan struct{}), c)
	if w.Stop() {
		t.Error("Stop reports a client gone that stayed")
	}
	// No deadline was put on it: a read gets what the peer sends.
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Errorf("read after a watch stopped: %v", err)
	}

	if WatchGone(nil, c) != nil || (*GoneWatch)(nil).Stop() {
		t.Error("a watch of nil gone is not the nil watch that never fires")
	}
}
