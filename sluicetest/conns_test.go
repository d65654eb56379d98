package sluicetest_test

import (
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// ServeConns serves each connection on its own goroutine and closes it
// when serve returns; once the test is over, its listener is closed and
// no serve is running.
func TestServeConns(t *testing.T) {
	var running, served atomic.Int64
	var addr string
	t.Run("serve", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr = ln.Addr().String()
		sluicetest.ServeConns(t, ln, func(c net.Conn) {
			running.Add(1)
			defer running.Add(-1)
			var b [3]byte
			if _, err := io.ReadFull(c, b[:]); err == nil {
				c.Write(append(b[:], '!'))
				served.Add(1)
			}
		})
		for _, in := range []string{"abc", "xyz", "123"} {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, in)
			got, err := io.ReadAll(c) // to the end: serve's return closed it
			c.Close()
			if err != nil || string(got) != in+"!" {
				t.Errorf("%q: got %q, %v", in, got, err)
			}
		}
		// A connection whose serve is still reading when the test ends.
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		sluicetest.WaitFor(t, "the last serve to start", func() bool { return running.Load() == 1 })
		c.Close()
	})
	if n := running.Load(); n != 0 {
		t.Errorf("%d serves still running after the cleanup", n)
	}
	if n := served.Load(); n != 3 {
		t.Errorf("served %d, want 3", n)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("the listener still accepts after the cleanup")
	}
}
