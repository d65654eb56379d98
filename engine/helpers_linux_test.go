package engine

import (
	"fmt"
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// queued returns how many bytes c's socket holds for the given ioctl:
// unix.SIOCINQ, received and not yet read; unix.SIOCOUTQ, sent and not
// yet acknowledged (TCP) or read (Unix) by the peer.
func queued(t testing.TB, c net.Conn, req uint) int {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if cerr := rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), req) }); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatalf("ioctl %#x: %v", req, err)
	}
	return n
}

// waitReceived waits until the server's end of a connection holds n
// bytes that nobody has read.
func waitReceived(t testing.TB, server net.Conn, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d bytes in the server's socket", n), func() bool { return queued(t, server, unix.SIOCINQ) == n })
}

// waitConsumed waits until the server has read everything client sent
// over TCP, server being the server's end of the connection.
func waitConsumed(t testing.TB, client, server net.Conn) {
	t.Helper()
	waitFor(t, "the server to read what was sent", func() bool {
		return queued(t, client, unix.SIOCOUTQ) == 0 && queued(t, server, unix.SIOCINQ) == 0
	})
}

// skipUnlessLinux skips a test of what the engine does on Linux only; it
// does nothing here.
func skipUnlessLinux(testing.TB, string) {}
