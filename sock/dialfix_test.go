package sock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DialFix names the fix for what dialing a server gives: real dials for
// a port nothing listens on, a missing Unix socket, a socket file nothing
// accepts on; built errors for the rest.
func TestDialFix(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, nothing accepts
	dial := func(network, addr string) error {
		c, err := net.DialTimeout(network, addr, 5*time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("dial %s %s succeeded", network, addr)
		}
		return err
	}
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		name string
		err  error
		want string // "" for none
	}{
		{"refused", dial("tcp", refused), "nothing listens at that address: start the upstream, or correct the host and port in proxy"},
		{"refused, wrapped", fmt.Errorf("database d: query q: %w", dial("tcp", refused)), "nothing listens at that address"},
		{"no socket", dial("unix", filepath.Join(dir, "missing.sock")), "no socket at that path: start the upstream, or correct the path in proxy"},
		{"stale socket", dial("unix", stale), "the socket file is there but nothing accepts on it"},
		{"socket permission", &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}, "this process's user may not connect to the socket"},
		{"no such host", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}, "the host name does not resolve: correct it in proxy"},
		{"unreachable", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, "no route to that host"},
		{"timeout", timeout, "the upstream did not take the connection in time"},
		{"read timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, ""},
		{"other", errors.New("bad gateway"), ""},
		{"nil", nil, ""},
	} {
		got := DialFix(c.err, "the upstream", "proxy")
		if c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: DialFix(%v) = %q, want %q", c.name, c.err, got, c.want)
		}
	}
}
