package engine

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/sock"
	"golang.org/x/sys/unix"
)

// A file larger than corkAbove is sent with the socket corked, so that
// only full segments leave while sendfile moves it round by round; the
// cork is removed when the file is sent, and the next response leaves at
// once. The client reads nothing at first, so the transfer stalls with
// the socket full and the test can look at the server's socket meanwhile.
func TestLargeFileSentCorked(t *testing.T) {
	const size = 8 << 20
	file := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(file, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		if r.Path[len(r.Path)-1] != 'g' { // not /big
			w.WriteString("small")
			return
		}
		f, err := os.Open(file)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		w.(FileSender).SendFile(f, 0, size)
	})
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	al := &acceptedListener{Listener: ln, conns: make(chan net.Conn, 1)}
	addr := serveOn(t, &Server{Handler: h}, al)
	c := dial(t, addr)
	if _, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	sc := recvWithin(t, "the connection to be accepted", al.conns).(*sock.Conn)
	corked := func() bool {
		v := -1
		rc, _ := sc.SyscallConn()
		rc.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK) })
		return v > 0
	}
	waitFor(t, "the socket to be corked while the file is sent", corked)
	br := bufio.NewReader(c)
	if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || len(body) != size {
		t.Fatalf("GET /big: %d, %d bytes", resp.StatusCode, len(body))
	}
	waitFor(t, "the cork to be removed", func() bool { return !corked() })
	io.WriteString(c, "GET /small HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != "small" {
		t.Fatalf("GET /small: %d %q", resp.StatusCode, body)
	}
}

// Files in and out of the page cache are sent whole, by the raw and the
// blocking sendfile alike (see sock.Resident), on the same connection.
func TestSendFileColdAndWarm(t *testing.T) {
	data := make([]byte, 1<<20+12345)
	rand.Read(data)
	f := openTemp(t, data)
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		w.(FileSender).SendFile(f, 0, int64(len(data)))
	})
	addr := startServer(t, &Server{Handler: h})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	for i, cold := range []bool{true, false, true} {
		if cold { // drop the file's pages from the page cache
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				t.Fatal(err)
			}
			if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(c, "GET /%d HTTP/1.1\r\nHost: a\r\n\r\n", i)
		resp, body := readResponse(t, br, "GET")
		if resp.StatusCode != 200 || !bytes.Equal([]byte(body), data) {
			t.Fatalf("request %d (cold %v): status %d, %d bytes, want %d", i, cold, resp.StatusCode, len(body), len(data))
		}
	}
}

// openTemp writes data to a new file and returns it opened for reading,
// its bytes in the page cache; the test's end closes it.
func openTemp(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
