package sock

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Accepted connections inherit TCP_NODELAY from the listener (Listen sets
// it there instead of once per connection).
func TestAcceptedConnectionsHaveNoDelay(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client := dial(t, ln.Addr().String()) // closed when the test ends
	client.Write([]byte("x"))             // so the deferred accept completes
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*Conn); !ok {
		t.Fatalf("Accept returned %T, want *Conn", c)
	}
	rc, err := c.(interface {
		SyscallConn() (syscall.RawConn, error)
	}).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY) })
	if gerr != nil || v == 0 {
		t.Errorf("TCP_NODELAY on the accepted socket = %d (%v), want set", v, gerr)
	}
}

// A Read that would block makes the connection join the runtime's poller
// (and wait there, under its deadline); Unpoll takes it out again, and it
// keeps reading and writing.
func TestConnJoinsPollerAndLeaves(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client := dial(t, ln.Addr().String())
	client.Write([]byte("a"))
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := nc.(*Conn)
	b := make([]byte, 8)
	if n, err := c.Read(b); err != nil || string(b[:n]) != "a" {
		t.Fatalf("first Read: %q, %v", b[:n], err)
	}
	if c.Polled() {
		t.Fatal("a Read that found bytes joined the poller")
	}
	before := PolledConns()
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Read(b); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read with nothing to read: %v, want the deadline's error", err)
	}
	if !c.Polled() || PolledConns() != before+1 {
		t.Fatalf("after a Read that waited: Polled %v, PolledConns %d (was %d)", c.Polled(), PolledConns(), before)
	}
	c.Unpoll()
	if c.Polled() {
		t.Fatal("Polled after Unpoll")
	}
	c.SetReadDeadline(time.Time{}) // dropped by Unpoll anyway
	got := make(chan string, 1)
	go func() {
		n, err := c.Read(b)
		if err != nil {
			t.Error(err)
		}
		got <- string(b[:n])
	}()
	waitFor(t, "the Read to join the poller again", c.Polled)
	client.Write([]byte("b"))
	if s := <-got; s != "b" {
		t.Errorf("Read after Unpoll: %q, want b", s)
	}
	if _, err := c.Write([]byte("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(client, b[:1]); err != nil || b[0] != 'c' {
		t.Errorf("client read %q, %v; want c", b[:1], err)
	}
}

// socketPair returns two connected non-blocking stream sockets, closed
// when the test ends.
func socketPair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// Send writes two buffers as one stream; Peek sees bytes without taking
// them and reports EAGAIN for none and 0 for the peer's FIN; Recv takes
// them, and reports EAGAIN and 0 likewise.
func TestSendPeekRecv(t *testing.T) {
	a, b := socketPair(t)
	buf := make([]byte, 16)
	if _, err := Peek(b, buf[:1]); err != syscall.EAGAIN {
		t.Fatalf("Peek with nothing sent: %v, want EAGAIN", err)
	}
	if _, err := Recv(b, buf, true); err != syscall.EAGAIN {
		t.Fatalf("Recv with nothing sent: %v, want EAGAIN", err)
	}
	if n, err := Send(a, []byte("hello, "), []byte("world"), 0, true); err != nil || n != 12 {
		t.Fatalf("Send: %d, %v; want 12", n, err)
	}
	if n, err := Send(a, nil, nil, 0, true); err != nil || n != 0 {
		t.Fatalf("Send of nothing: %d, %v", n, err)
	}
	for range 2 { // a peek leaves the bytes
		if n, err := Peek(b, buf[:5]); err != nil || string(buf[:n]) != "hello" {
			t.Fatalf("Peek: %q, %v", buf[:n], err)
		}
	}
	if n, err := Recv(b, buf, true); err != nil || string(buf[:n]) != "hello, world" {
		t.Fatalf("Recv: %q, %v", buf[:n], err)
	}
	unix.Shutdown(a, unix.SHUT_WR)
	if n, err := Peek(b, buf[:1]); n != 0 || err != nil {
		t.Errorf("Peek after the FIN: %d, %v; want 0, nil", n, err)
	}
	if n, err := Recv(b, buf, false); n != 0 || err != nil {
		t.Errorf("Recv after the FIN: %d, %v; want 0, nil", n, err)
	}
}

// SendVec writes its head and buffers in order, skipping empty ones,
// offers at most maxSendVec buffers a call, and leaves its arguments as
// they were.
func TestSendVec(t *testing.T) {
	a, b := socketPair(t)
	buf := make([]byte, 256)
	cases := []struct {
		head string
		bufs []string
		want string
	}{
		{"", nil, ""},
		{"", []string{"", ""}, ""},
		{"head", nil, "head"},
		{"", []string{"one"}, "one"},
		{"", []string{"", "one", ""}, "one"},
		{"H:", []string{"a", "", "bc", "def"}, "H:abcdef"},
		{"", strings.Split("abcdefghijklmnopqrstuvwxyz", ""), "abcdefghijklmnop"},
		{"0", strings.Split("abcdefghijklmnopqrstuvwxyz", ""), "0abcdefghijklmno"},
	}
	for _, tc := range cases {
		var bufs [][]byte
		for _, s := range tc.bufs {
			bufs = append(bufs, []byte(s))
		}
		n, err := SendVec(a, []byte(tc.head), bufs, 0, true)
		if err != nil || n != len(tc.want) {
			t.Errorf("SendVec(%q, %q): %d, %v; want %d", tc.head, tc.bufs, n, err, len(tc.want))
			continue
		}
		for i, s := range tc.bufs {
			if string(bufs[i]) != s {
				t.Errorf("SendVec changed buffer %d to %q", i, bufs[i])
			}
		}
		if n == 0 {
			continue
		}
		if m, err := Recv(b, buf, true); err != nil || string(buf[:m]) != tc.want {
			t.Errorf("SendVec(%q, %q) sent %q, %v; want %q", tc.head, tc.bufs, buf[:m], err, tc.want)
		}
	}
	// A full socket takes part of what is offered, then nothing.
	big := bytes.Repeat([]byte("x"), 1<<20)
	total := 0
	for {
		n, err := SendVec(a, nil, [][]byte{big, big}, 0, true)
		if err == syscall.EAGAIN {
			break
		}
		if err != nil || n <= 0 || n > 2<<20 {
			t.Fatalf("SendVec into a filling socket: %d, %v", n, err)
		}
		if total += n; total > 64<<20 {
			t.Fatal("the socket never filled")
		}
	}
}

// Sendfile sends a file's bytes from the offset given, advancing it, and
// sends nothing at the end of the file; SetCork holds and releases a TCP
// socket's partial segments (here: sets and clears the option).
func TestSendfileAndCork(t *testing.T) {
	a, b := socketPair(t)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	off := int64(3)
	if n, err := Sendfile(a, int(f.Fd()), &off, 100, false); err != nil || n != 7 || off != 10 {
		t.Fatalf("Sendfile: %d, %v, offset %d; want 7, nil, 10", n, err, off)
	}
	if n, err := Sendfile(a, int(f.Fd()), &off, 100, false); err != nil || n != 0 {
		t.Fatalf("Sendfile at the end: %d, %v; want 0, nil", n, err)
	}
	buf := make([]byte, 16)
	if n, err := Recv(b, buf, true); err != nil || string(buf[:n]) != "3456789" {
		t.Fatalf("received %q, %v", buf[:n], err)
	}

	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial(t, ln.Addr().String())
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, _ := c.(*Conn).SyscallConn()
	for _, on := range []bool{true, false} {
		v := -1
		rc.Control(func(fd uintptr) {
			SetCork(int(fd), on, true)
			v, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK)
		})
		if (v != 0) != on {
			t.Errorf("SetCork(%v): TCP_CORK is %d", on, v)
		}
	}
}
