//go:build unix

package fastcgi

import (
	"io"
	"net"
	"path/filepath"
	"testing"
)

// TestRawConn checks the raw reads against a peer: a request written by
// the read that awaits its answer, a try that finds nothing, then data,
// then the peer's end of file, and peeks at a clean and a closed
// connection.
func TestRawConn(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	var r rawConn
	r.bind(nc)
	if !r.peekClean() {
		t.Fatal("a fresh connection is not clean")
	}
	go func() {
		b := make([]byte, 5)
		io.ReadFull(peer, b)
		peer.Write(append([]byte("got "), b...))
	}()
	buf := make([]byte, 64)
	n, err := r.writeThenRead([]byte("hello"), buf)
	for err == nil && n < len("got hello") {
		var m int
		m, err = r.read(buf[n:])
		n += m
	}
	if err != nil || string(buf[:n]) != "got hello" {
		t.Fatalf("writeThenRead: %q, %v", buf[:n], err)
	}
	if n, ok, err := r.tryRead(buf); ok || n != 0 || err != nil {
		t.Fatalf("tryRead with nothing sent: %d, %v, %v", n, ok, err)
	}
	peer.Write([]byte("more"))
	peer.Close()
	// The data, then the end of file, each reported once asked.
	var got []byte
	for {
		n, ok, err := r.tryRead(buf)
		if !ok {
			continue // not there yet
		}
		if err == io.EOF {
			break
		}
		if err != nil || n == 0 {
			t.Fatalf("tryRead: %d, %v", n, err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "more" {
		t.Fatalf("tryRead read %q", got)
	}
	if r.peekClean() {
		t.Fatal("a connection the peer closed is clean")
	}
}
