package fastcgi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// TestBodyOutlastsHeadDeadline sends a response whose body takes longer
// to pass on than the wait for its head may last, to a client slow to
// read, from a server whose socket holds the whole answer, so that no
// read after the head finds the socket empty (as PHP-FPM's socket stays
// full behind a slow client or a busy server). The short wait armed for
// the head must not cut the body short: read_timeout bounds the body.
func TestBodyOutlastsHeadDeadline(t *testing.T) {
	const chunks, size = 140, 140 * 60000
	chunk := rec(6, 1, strings.Repeat("x", 60000), 0)
	answer := rec(6, 1, "Content-Type: text/plain\r\n\r\n", 0) + strings.Repeat(chunk, chunks) + rec(6, 1, "", 0) + end(0, 0)
	path := filepath.Join(t.TempDir(), "big.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c0, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c0.Close()
	probe, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if !holdsAll(probe, len(answer)) {
		probe.Close()
		t.Skip("cannot set SO_SNDBUFFORCE (needs CAP_NET_ADMIN): the FastCGI socket would run dry, which moves the deadline")
	}
	probe.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				holdsAll(c, len(answer))
				if readRequest(c) {
					io.WriteString(c, answer) // in one write: the first read finds head and body
				}
			}()
		}
	}()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "big.php"))
	logger, log := sluicetest.Logger()
	cl, err := New(Options{Options: upstream.Options{Upstreams: []string{"unix:" + path}, MaxConns: 1},
		Root: root, Logger: logger, ResponseHeaderTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	front := sluicetest.NewServer(t, pipe.Handler(cl))

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", front.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /big.php HTTP/1.1\r\nHost: x\r\n\r\n")
	// Nothing is read for a while: Sluice's writes to the client block
	// with the FastCGI socket full behind them, past the head's wait.
	time.Sleep(300 * time.Millisecond)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if n != size || err != nil {
		t.Errorf("got %d body bytes of %d (%v): the response was cut short; log:\n%s", n, size, err, log)
	}
}

// holdsAll sets c's send buffer to hold n bytes, past
// net.core.wmem_max, and reports whether it does.
func holdsAll(c net.Conn, n int) bool {
	rc, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return false
	}
	var got int
	rc.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, 2*n)
		got, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	})
	return got >= n+n/4
}
